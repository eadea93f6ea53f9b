//! The web console in a real headless Chromium, against a real server on loopback.
//!
//! Each test starts a server over a store filled through the Engine (two weeks of executions,
//! corrections, failures, decisions and episodes, written with a clock set back), then runs
//! `tests/console/drive.mjs` (playwright-core driving Debian's `chromium`) for one scenario and
//! checks what it saw against the store. Screenshots go to `target/console-screenshots/`.
//! `scripts/ci/browser` installs both tools and names them in `LORE_CHROMIUM` and
//! `LORE_PLAYWRIGHT_DIR`; without them the tests skip, except under `CI=true`, where they fail.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use lore_core::model::{AuthorKind, CurationMode, LessonStatus, Outcome, SignalChannel};
use lore_core::ports::clock::Clock;
use lore_core::{Scope, SkillPath};
use lore_engine::{
    Attribution, Engine, EngineConfig, HumanCorrections, NewCorrection, NewExecution, NewSignal,
};
use lore_server::auth::{Access, Role, TokenFile};
use lore_server::{Limits, app, serve};
use lore_sqlite::{OpenMode, SqliteStore};
use lore_workspace::skills::SkillLibrary;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::SKILL;

/// One browser at a time: two cores are shared by every test.
static BROWSER: Mutex<()> = Mutex::new(());

/// The system clock moved back by a settable number of seconds, so the seed writes history.
#[derive(Default)]
struct BackClock(AtomicI64);

impl Clock for BackClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() - Duration::seconds(self.0.load(Ordering::SeqCst))
    }
}

impl BackClock {
    fn days_ago(&self, days: i64, hour: i64) {
        self.0.store(days * 86_400 - hour * 3_600, Ordering::SeqCst);
    }
}

struct Console {
    _dir: tempfile::TempDir,
    engine: Arc<Engine>,
    addr: SocketAddr,
    admin: String,
    reviewer: String,
    reviewer_id: String,
    agent: String,
    shutdown: CancellationToken,
    _runtime: tokio::runtime::Runtime,
}

impl Drop for Console {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The browser tools, or `None` (and a note) when they are missing outside CI.
fn tools() -> Option<(String, String)> {
    let chromium = std::env::var("LORE_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty());
    let playwright = std::env::var("LORE_PLAYWRIGHT_DIR").ok().filter(|p| {
        PathBuf::from(p)
            .join("node_modules/playwright-core/package.json")
            .exists()
    });
    match (chromium, playwright) {
        (Some(c), Some(p)) => Some((c, p)),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "LORE_CHROMIUM and LORE_PLAYWRIGHT_DIR must name chromium and playwright-core under CI: run scripts/ci/browser"
            )
        }
        _ => {
            eprintln!("skipped: no browser (run `. scripts/ci/browser` first)");
            None
        }
    }
}

fn shots() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn skill() -> SkillPath {
    SkillPath::parse(SKILL).unwrap()
}

/// A second skill, so the queue can be narrowed to one.
const BILLING: &str = "billing/refunds";

/// Corrections that become lessons waiting for review.
const PROPOSALS: [&str; 3] = [
    "When a ticket reports errors for many customers, priority must be urgent.",
    "Always name the failing service in the summary's first sentence.",
    "Never promise a fix date in the summary of an outage ticket.",
];

fn start(history: bool) -> Console {
    start_with(history, false)
}

/// A console server; `open` serves it without authentication, as `lore serve` does on
/// loopback before any token exists.
fn start_with(history: bool, open: bool) -> Console {
    let dir = tempfile::tempdir().unwrap();
    let lore = dir.path().join(".lore");
    std::fs::create_dir_all(&lore).unwrap();
    let store = SqliteStore::open(lore.join("lore.db"), OpenMode::Create).unwrap();
    let skills = SkillLibrary::new(dir.path().join("skills"), dir.path());
    skills.write_example(&skill()).unwrap();
    skills
        .write_example(&SkillPath::parse(BILLING).unwrap())
        .unwrap();
    let clock = Arc::new(BackClock::default());
    let config = EngineConfig {
        curation: CurationMode::Review,
        human_corrections: HumanCorrections::Review,
        ..EngineConfig::default()
    };
    let engine = Arc::new(
        Engine::new(Arc::new(store), config)
            .with_skills(skills)
            .with_clock(Arc::clone(&clock) as Arc<dyn Clock>)
            .acting_as("seed"),
    );
    if history {
        seed_history(&engine, &clock);
    }
    clock.days_ago(0, 0);
    for text in PROPOSALS {
        propose(&engine, text).expect("a new lesson waiting for review");
    }

    let tokens = lore.join("tokens.json");
    let mut file = TokenFile::load(&tokens).unwrap();
    let (_, admin) = file.create(Role::Admin, Scope::unrestricted()).unwrap();
    let (reviewer_record, reviewer) = file.create(Role::Reviewer, Scope::unrestricted()).unwrap();
    let (_, agent) = file.create(Role::Agent, Scope::unrestricted()).unwrap();
    let access = if open {
        Access::Open
    } else {
        Access::from_file(&TokenFile::load(&tokens).unwrap())
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let router = app(
        Arc::clone(&engine),
        Limits::default(),
        access,
        shutdown.clone(),
    );
    let token = shutdown.clone();
    runtime.spawn(async move { serve(listener, router, token).await.unwrap() });
    Console {
        _dir: dir,
        engine,
        addr,
        admin,
        reviewer,
        reviewer_id: reviewer_record.id,
        agent,
        shutdown,
        _runtime: runtime,
    }
}

fn record(engine: &Engine, outcome: Outcome, shown: Vec<lore_core::id::LessonId>) -> String {
    let execution = engine
        .record_execution(NewExecution {
            skill: skill(),
            input: json!({"ticket": "Checkout fails for many customers since the deploy"}),
            output: json!({"priority": "normal", "summary": "Checkout errors"}),
            outcome,
            cost_usd: None,
            latency_ms: Some(850.0),
            model: Some("gpt-4o-mini".into()),
            session: None,
            lessons_shown: shown,
        })
        .unwrap();
    execution.id.to_string()
}

/// The lesson a correction proposed, or `None` when it was merged into one already decided.
fn propose(engine: &Engine, text: &str) -> Option<lore_core::id::LessonId> {
    let execution = record(engine, Outcome::Rejected, Vec::new());
    let outcome = engine
        .correct(NewCorrection {
            skill: skill(),
            execution_id: lore_core::id::ExecutionId::parse(&execution).unwrap(),
            text: text.into(),
            author_kind: AuthorKind::Human,
            author: None,
        })
        .unwrap();
    let lesson = outcome.lesson.expect("a lesson from the correction");
    (lesson.status == LessonStatus::NeedsReview).then_some(lesson.id)
}

/// Two weeks of work: lessons proposed and decided, executions that show the approved ones,
/// failures that recur until a lesson exists, and two episodes.
fn seed_history(engine: &Engine, clock: &BackClock) {
    let why = |r: &str| Attribution::new(None, r);
    let mut approved = Vec::new();
    let topics = [
        "Escalate tickets that mention data loss to the on-call engineer.",
        "Set priority to urgent when the ticket reports a security incident.",
        "Summaries of billing tickets must quote the invoice number.",
        "Do not mark a ticket resolved while the customer is still waiting on a refund.",
        "Tag tickets from enterprise customers with the account tier.",
        "Mention the affected region when an outage ticket names one.",
    ];
    for day in (1..=14).rev() {
        clock.days_ago(day, 2);
        if day % 2 == 0 {
            let topic = topics[(day as usize / 2) % topics.len()];
            let Some(id) = propose(engine, &format!("{topic} (day {day})")) else {
                continue;
            };
            clock.days_ago(day, 1);
            match day % 6 {
                0 => {
                    engine
                        .reject(&[id], &why("duplicate of a runbook rule"))
                        .unwrap();
                }
                _ => {
                    engine
                        .approve(std::slice::from_ref(&id), &why("checked"))
                        .unwrap();
                    approved.push(id);
                }
            }
        }
        for run in 0..(3 + day % 4) {
            let shown: Vec<_> = approved
                .iter()
                .rev()
                .take(run as usize % 3)
                .cloned()
                .collect();
            // Timeouts recur daily until a lesson about them exists (day 9), then rarely; a
            // missing field now and then in the second week.
            let ok = match day {
                10.. => run >= 2,
                8..=9 => run != 0 || day % 2 == 1,
                _ => run != 1 || day % 2 == 1,
            };
            let outcome = if ok {
                Outcome::Success
            } else {
                Outcome::Failure
            };
            let execution = record(engine, outcome, shown);
            if !ok {
                let message = if day > 7 && run != 1 {
                    "TimeoutError: upstream billing-api did not answer in 30s"
                } else {
                    "KeyError: 'priority' missing from output"
                };
                engine
                    .report_signal(NewSignal {
                        execution_id: lore_core::id::ExecutionId::parse(&execution).unwrap(),
                        channel: SignalChannel::HardFailure,
                        message: message.into(),
                        value: None,
                        action: Some("summarize".into()),
                        tags: vec!["timeout".into()],
                    })
                    .unwrap();
            }
        }
        if day == 9 {
            learn_from_timeouts(engine);
        }
        if day == 5 {
            let _ = engine.maintain();
        }
    }
    // An agent's lesson for another skill waits too.
    let lines = lore_engine::learn::parse_items(&[json!({
        "skill": BILLING, "task": "Refund a duplicate charge",
        "lesson": "Check for a pending refund before issuing a new one.",
    })])
    .unwrap();
    engine
        .learn_lessons(&lines, AuthorKind::Agent, None)
        .unwrap();
    // A proposal that contradicts an approved lesson waits with the conflict shown beside it.
    clock.days_ago(1, 0);
    propose(
        engine,
        "Never set priority to urgent when the ticket reports a security incident.",
    );
    clock.days_ago(3, 0);
    for (id, chosen, outcome) in [
        ("ep-routing-1", "Serena-first", "success"),
        ("ep-routing-2", "Parallel", "failure"),
    ] {
        let episode = json!({
            "id": id, "session": format!("session-{id}"), "skill": SKILL,
            "timestamp": clock.now(), "outcome": outcome,
            "task": "Route an outage ticket to the right team",
            "decisions": [{"id": "d1", "type": "design", "context": "Choosing routing strategy",
                           "options": ["Serena-first", "Parallel"], "chosen": chosen,
                           "rationale": "Fewer hand-offs", "effects": ["e1"]}],
            "events": [
                {"id": "e1", "type": "tool_call", "content": "Created the router", "leads_to": ["e2"]},
                {"id": "e2", "type": "milestone", "content": format!("Ticket routed: {outcome}")}
            ]
        });
        let episode = serde_json::from_value(episode).unwrap();
        engine.add_episode(episode, false).unwrap();
    }
    let _ = engine.maintain();
}

/// A person's lesson triggered by the recurring timeout's fingerprint, approved at once.
fn learn_from_timeouts(engine: &Engine) {
    let fingerprint = engine
        .export_records()
        .unwrap()
        .into_iter()
        .find_map(|r| match r {
            lore_core::ports::store::Record::ErrorEvent(e) if e.message.contains("Timeout") => {
                Some(e.fingerprint)
            }
            _ => None,
        })
        .expect("a recorded timeout");
    let lines = lore_engine::learn::parse_items(&[json!({
        "skill": SKILL, "task": "Summarize a billing ticket while billing-api is slow",
        "lesson": "Retry billing-api once with a 60 s timeout before summarizing without it.",
        "fingerprint": fingerprint, "tags": ["timeout"],
    })])
    .unwrap();
    engine
        .learn_lessons(&lines, AuthorKind::Human, None)
        .unwrap();
    let learned = engine
        .lessons(None, Some([LessonStatus::NeedsReview].into()))
        .unwrap();
    let ids: Vec<_> = learned.into_iter().map(|l| l.id).collect();
    engine
        .approve(&ids, &Attribution::new(None, "the runbook says so"))
        .unwrap();
}

impl Console {
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Runs one scenario of `drive.mjs` and returns what it printed.
    fn drive(&self, scenario: &str, extra: &[(&str, String)]) -> Option<Value> {
        let (chromium, playwright) = tools()?;
        let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/console/drive.mjs");
        let mut command = Command::new("node");
        command
            .arg(script)
            .arg(scenario)
            .env("LORE_URL", self.url())
            .env("LORE_SHOTS", shots())
            .env("LORE_CHROMIUM", chromium)
            .env("LORE_PLAYWRIGHT_DIR", playwright)
            .env("LORE_ADMIN", &self.admin)
            .env("LORE_REVIEWER", &self.reviewer)
            .env("LORE_AGENT", &self.agent)
            .env("LORE_SKILL", SKILL);
        for (k, v) in extra {
            command.env(k, v);
        }
        let output = command.output().expect("node runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{scenario} failed:\n{stderr}\n{stdout}"
        );
        let last = stdout.lines().last().unwrap_or_default();
        Some(serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}")))
    }

    fn get(&self, token: &str, path: &str) -> Value {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut res = agent
            .get(format!("{}{path}", self.url()))
            .header("Authorization", format!("Bearer {token}"))
            .call()
            .unwrap();
        serde_json::from_str(&res.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// A POST as the given token; panics unless it succeeds, since the test's own setup failed.
    fn post(&self, token: &str, path: &str, body: &Value) -> Value {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut res = agent
            .post(format!("{}{path}", self.url()))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        let status = res.status();
        let text = res.body_mut().read_to_string().unwrap();
        assert!(status.is_success(), "POST {path}: {status} {text}");
        serde_json::from_str(&text).unwrap()
    }

    fn status(&self, id: &str) -> String {
        let shown = self.get(&self.admin, &format!("/v1/lessons/{id}"));
        shown["lesson"]["status"].as_str().unwrap().to_owned()
    }

    fn waiting(&self) -> Vec<String> {
        let page = self.get(&self.admin, "/v1/review");
        crate::common::ids(
            &page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["lesson"].clone())
                .collect::<Value>(),
        )
    }
}

fn no_page_errors(seen: &Value) {
    let errors: Vec<&Value> = seen["page_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            !e.as_str()
                .unwrap_or_default()
                .contains("Failed to load resource")
        })
        .collect();
    assert!(errors.is_empty(), "errors in the page: {errors:?}");
}

#[test]
fn a_reviewer_approves_in_the_queue_and_the_lesson_reaches_the_next_prompt() {
    let console = start(false);
    let Some(seen) = console.drive("approve", &[]) else {
        return;
    };
    no_page_errors(&seen);
    let id = seen["approved"].as_str().unwrap();
    assert_eq!(seen["waiting"], 3, "{seen}");
    assert_eq!(console.status(id), "approved");

    let prompt = console.get(&console.agent, &format!("/v1/skills/{SKILL}/prompt"));
    let text = prompt.to_string();
    assert!(
        text.contains(id),
        "the approved lesson is in the next prompt: {text}"
    );
    let others: Vec<String> = console.waiting();
    for other in &others {
        assert!(
            !text.contains(other.as_str()),
            "{other} is still waiting and must stay out"
        );
    }

    // The decision is audited with the reason typed and the reviewer's token, not a name.
    let shown = console.get(&console.admin, &format!("/v1/lessons/{id}"));
    let last = shown["audit"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["to"], "approved", "{last}");
    assert_eq!(last["reason"], "Checked against the outage runbook");
    assert_eq!(last["actor"], console.reviewer_id.as_str());

    // The lesson proposed while the page was open appeared in it without a reload.
    let live = seen["live"].as_str().unwrap();
    assert!(others.iter().any(|o| o == live), "{seen}");
    assert!(seen["feed"].as_u64().unwrap() >= 1, "{seen}");
}

#[test]
fn a_batch_rejection_in_the_console_is_all_or_none() {
    let console = start(false);
    let Some(seen) = console.drive("batch", &[]) else {
        return;
    };
    let ids: Vec<&str> = seen["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    // Refused whole: the two that could be rejected were not, and the page said why.
    assert_eq!(
        seen["after_refusal"],
        json!(["needs_review", "needs_review", "one_time_exception"]),
        "{seen}"
    );
    let refused = seen["refused"].as_str().unwrap();
    assert!(refused.contains("409"), "{refused}");
    assert!(refused.contains("nothing was changed"), "{refused}");
    // Then the two left were rejected together.
    assert_eq!(console.status(ids[0]), "rejected");
    assert_eq!(console.status(ids[1]), "rejected");
    assert_eq!(console.status(ids[2]), "one_time_exception");
    assert!(console.waiting().is_empty());
}

#[test]
fn an_agent_token_sees_no_reviewer_action_and_is_refused_by_the_api() {
    let console = start(false);
    let before = console.waiting();
    let lesson = before[0].clone();
    let Some(seen) = console.drive("agent", &[("LORE_LESSON", lesson.clone())]) else {
        return;
    };
    assert_eq!(seen["role"], "agent");
    assert_eq!(seen["decision_buttons"], 0, "{seen}");
    assert_eq!(seen["queue_link"], false, "{seen}");
    assert_eq!(seen["edit_forms"], 0, "{seen}");
    assert_eq!(seen["forced"], 403, "{seen}");
    assert_eq!(console.status(&lesson), "needs_review");
    assert_eq!(console.waiting(), before);
}

#[test]
fn the_pages_draw_real_data_and_every_page_is_photographed() {
    let console = start(true);
    let stats = console.get(&console.reviewer, "/v1/stats?days=30");
    let approved = console
        .engine
        .lessons(None, Some([LessonStatus::Approved].into()))
        .unwrap();
    let lesson = approved.last().expect("an approved lesson").id.to_string();
    // The latest `lore bench learning` run, as the command line keeps it.
    let with_memory: Vec<f64> = (0..12).map(|i| if i < 3 { 1.0 } else { 0.2 }).collect();
    console
        .engine
        .save_report(
            "learning",
            &json!({
                "seeds": 2, "with_memory": with_memory, "without_memory": vec![1.2; 12],
                "phases": [["A", 0], ["B", 6]], "recurrence_reduction": 1.0,
                "retention_regression": 0.0, "good_lessons_suppressed": 0,
                "retrieval_precision": 0.87
            }),
        )
        .unwrap();
    let Some(seen) = console.drive(
        "pages",
        &[
            ("LORE_LESSON", lesson),
            ("LORE_QUERY", "outage ticket priority".into()),
            ("LORE_PATH_FROM", "decision:parallel".into()),
            ("LORE_PATH_TO", "outcome:failure".into()),
        ],
    ) else {
        return;
    };
    no_page_errors(&seen);
    assert!(
        seen["related"].as_u64().unwrap() >= 1,
        "a conflict beside its card: {seen}"
    );
    assert_eq!(
        seen["billing_cards"], 1,
        "the queue narrowed to one skill: {seen}"
    );
    assert_eq!(seen["week"], 1, "the health page over 7 days: {seen}");
    let nonzero = |key: &str| {
        stats[key]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.as_u64() != Some(0))
            .count()
    };
    // One bar per day with activity, one line per status, as the store counts them.
    assert!(nonzero("activations_per_day") > 5, "{stats}");
    assert_eq!(
        seen["activation_bars"],
        nonzero("activations_per_day"),
        "{seen}"
    );
    assert_eq!(
        seen["execution_bars"],
        nonzero("executions_per_day"),
        "{seen}"
    );
    assert_eq!(
        seen["state_lines"],
        stats["lessons_by_state"].as_object().unwrap().len(),
        "{seen}"
    );
    let recurrence = stats["recurrence"].as_array().unwrap();
    assert!(!recurrence.is_empty(), "{stats}");
    let drawn = recurrence
        .iter()
        .map(|r| u64::from(r["before"] != 0) + u64::from(r["after"] != 0))
        .sum::<u64>();
    assert_eq!(seen["recurrence_bars"], drawn, "{seen}");
    assert_eq!(seen["bench_lines"], 2, "with and without memory: {seen}");
    assert_eq!(seen["bench_points"], 12, "one point per run: {seen}");
    assert!(seen["history"].as_u64().unwrap() >= 2, "{seen}");
    assert_eq!(
        seen["measured"], 1,
        "the lesson's latest measurement: {seen}"
    );
    assert!(seen["episode_nodes"].as_u64().unwrap() >= 3, "{seen}");
    // Parallel, the router it created, the routing's event, the failure: three steps.
    assert_eq!(seen["path_nodes"], 4, "{seen}");
    for name in [
        "06-health",
        "07-memory-search",
        "08-lesson",
        "09-episodes",
        "10-episode",
    ] {
        assert!(shots().join(format!("{name}.png")).exists(), "{name}");
    }
}

/// `/v1/stats` counts what the store holds, inside the token's scope only, and refuses a bad range.
#[test]
fn stats_count_the_store_inside_the_scope() {
    let console = start(false);
    let stats = console.get(&console.reviewer, "/v1/stats?days=7");
    assert_eq!(stats["days"].as_array().unwrap().len(), 7);
    assert_eq!(stats["lessons_by_state"]["needs_review"][6], 3, "{stats}");
    assert_eq!(stats["executions_per_day"][6], 3, "{stats}");
    assert_eq!(stats["activations_per_day"][6], 0, "{stats}");

    let tokens = console._dir.path().join(".lore/tokens.json");
    let (_, finance) = TokenFile::load(&tokens)
        .unwrap()
        .create(
            Role::Reviewer,
            lore_server::auth::parse_scope("domain:finance").unwrap(),
        )
        .unwrap();
    let elsewhere = console.get(&finance, "/v1/stats?days=7");
    assert_eq!(elsewhere["lessons_by_state"], json!({}), "{elsewhere}");
    assert_eq!(
        elsewhere["executions_per_day"],
        json!([0, 0, 0, 0, 0, 0, 0])
    );
    let lesson = &console.waiting()[0];
    let hidden = console.get(&finance, &format!("/v1/lessons/{lesson}/activations"));
    assert_eq!(hidden["error"]["code"], "not_found", "{hidden}");

    for bad in ["/v1/stats?days=0", "/v1/stats?days=367", "/v1/stats?days=x"] {
        let refused = console.get(&console.reviewer, bad);
        assert!(refused["error"]["code"].is_string(), "{bad}: {refused}");
    }
    let who = console.get(&console.agent, "/v1/whoami");
    assert_eq!(who["role"], "agent");
    assert_eq!(who["authenticated"], true);
    assert!(
        who["token_id"].as_str().unwrap().starts_with("tok_"),
        "{who}"
    );
}

#[test]
fn a_reviewer_supersedes_from_the_queue_and_edits_a_lesson_but_cannot_purge() {
    let console = start(false);
    let waiting = console.waiting();
    let (old, new) = (waiting[0].clone(), waiting[1].clone());
    let id = lore_core::id::LessonId::parse(&new).unwrap();
    console
        .engine
        .approve(&[id], &Attribution::new(None, "checked"))
        .unwrap();
    let Some(seen) = console.drive(
        "curate",
        &[("LORE_OLD", old.clone()), ("LORE_NEW", new.clone())],
    ) else {
        return;
    };
    no_page_errors(&seen);
    assert!(
        seen["evidence"]
            .as_str()
            .unwrap()
            .contains("Checkout fails"),
        "the execution's input is shown: {seen}"
    );
    assert_eq!(console.status(&old), "superseded");
    assert_eq!(seen["purge_buttons"], 0, "{seen}");
    let shown = console.get(&console.admin, &format!("/v1/lessons/{new}"));
    assert_eq!(
        shown["lesson"]["rule"],
        "When many customers report errors, set priority to urgent."
    );
    let actions: Vec<&str> = shown["audit"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"edited"), "{actions:?}");
    // Reading the text as written left its mark.
    assert_eq!(actions.last(), Some(&"disclosed"), "{actions:?}");
}

#[test]
fn an_admin_purges_a_lesson_from_its_page() {
    let console = start(false);
    let lesson = console.waiting()[0].clone();
    let Some(seen) = console.drive("purge", &[("LORE_LESSON", lesson.clone())]) else {
        return;
    };
    no_page_errors(&seen);
    let shown = console.get(&console.admin, &format!("/v1/lessons/{lesson}"));
    assert_eq!(shown["lesson"]["rule"], lore_engine::PURGED, "{shown}");
    assert_eq!(shown["lesson"]["status"], "archived");
    let last = shown["audit"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "purged", "{last}");
    assert_eq!(last["reason"], "Holds a customer's name");
    assert_eq!(seen["edit_forms"], 0, "nothing left to edit: {seen}");
}

/// On a loopback server without tokens the console opens straight onto the queue.
#[test]
fn without_tokens_the_console_needs_no_sign_in() {
    let console = start_with(false, true);
    let Some(seen) = console.drive("open", &[]) else {
        return;
    };
    no_page_errors(&seen);
    assert_eq!(seen["role"], "admin", "{seen}");
    assert_eq!(seen["who"], "no token (loopback) admin", "{seen}");
    assert_eq!(seen["cards"], 3, "{seen}");
}

/// Records a decision through the REST API and returns its ID.
fn decide(console: &Console, situation: &str, action: &str) -> String {
    let made = console.post(
        &console.admin,
        "/v1/decisions",
        &json!({"skill": SKILL, "situation": situation, "action": action,
                "rationale": "The refund policy says so"}),
    );
    made["id"].as_str().unwrap().to_owned()
}

fn review_decision(console: &Console, id: &str) {
    console.post(
        &console.admin,
        "/v1/decisions/review",
        &json!({"ids": [id], "status": "approved", "reason": "policy"}),
    );
}

fn decision_status(console: &Console, id: &str) -> String {
    let listed = console.get(&console.admin, "/v1/decisions");
    listed["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id)
        .map(|d| d["status"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{id} is listed: {listed}"))
}

/// The text the page showed under `key`.
fn shown<'a>(seen: &'a Value, key: &str) -> &'a str {
    seen[key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key}: {seen}"))
}

/// Text an agent could store to attack whoever reads it in a browser.
const HOSTILE: &str = "<img src=x onerror=alert(1)>";

/// The layers beside lessons, written through the API: two approved decisions with a digest
/// built after each (the second holding hostile text), an evaluation set run before and after
/// the second, decisions still waiting (one hostile), and two documents (one hostile). Returns
/// the waiting decisions' IDs and the approved ones', oldest first.
struct Layers {
    first: String,
    later: String,
    waiting: String,
    hostile: String,
}

fn seed_layers(console: &Console) -> Layers {
    let first = decide(console, "A refund asked after 40 days", "Store credit only");
    review_decision(console, &first);
    console.post(&console.admin, "/v1/digests/build", &json!({}));
    console.post(
        &console.admin,
        "/v1/evals/sets",
        &json!({"skill": SKILL, "name": "refunds", "questions": [
            {"question": "A refund asked after 40 days: what do we give?", "expected": "store credit"},
            {"question": "A refund asked twice: what do we do?", "expected": "escalate the second"},
            {"question": format!("A ticket quotes {HOSTILE}: what then?"), "expected": "quote it as text"}]}),
    );
    console.post(&console.admin, "/v1/evals/runs", &json!({"skill": SKILL}));
    let later = decide(
        console,
        "A refund asked twice",
        "Refund once, escalate the second",
    );
    review_decision(console, &later);
    let quoted = decide(
        console,
        &format!("A ticket quotes {HOSTILE}"),
        "Quote it as text",
    );
    review_decision(console, &quoted);
    console.post(&console.admin, "/v1/digests/build", &json!({}));
    console.post(&console.admin, "/v1/evals/runs", &json!({"skill": SKILL}));
    let waiting = decide(
        console,
        "A customer asks for a fix date",
        "Link the status page",
    );
    let hostile = decide(
        console,
        &format!("{HOSTILE} in a ticket"),
        "<script>alert(2)</script>",
    );
    console.post(
        &console.admin,
        "/v1/knowledge/documents",
        &json!({"skill": SKILL, "documents": [
            {"source": "docs/refunds.md",
             "text": "# Refunds\n\nWithin 30 days refunds are paid in cash.\n\n## Late refunds\n\nAfter 30 days, store credit only.\n"},
            {"source": "docs/pasted.md",
             "text": format!("# Pasted {HOSTILE}\n\nA customer pasted <script>alert(2)</script> into the chargeback form.\n")}]}),
    );
    Layers {
        first,
        later,
        waiting,
        hostile,
    }
}

/// The pages of the layers beside lessons, over data written through the API: a reviewer
/// approves a waiting decision with a reason (refused without one) and supersedes another from
/// its own page by keyboard, reads and searches the knowledge documents, reads a skill's digest,
/// what changed since the version before and the older version, and follows an evaluation set's
/// score and each question's grade over its runs. Stored text is shown as text, never markup.
#[test]
fn a_reviewer_reviews_decisions_and_reads_knowledge_digests_and_evaluations() {
    let console = start(false);
    let layers = seed_layers(&console);
    let runs = console.get(&console.admin, "/v1/evals/runs");
    let runs = runs["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 2);

    let Some(seen) = console.drive(
        "layers",
        &[
            ("LORE_DECISION", layers.waiting.clone()),
            ("LORE_SUPERSEDE", layers.first.clone()),
            ("LORE_KNOWLEDGE_QUERY", "late refund after 30 days".into()),
            (
                "LORE_HOSTILE_QUERY",
                "customer pasted chargeback form".into(),
            ),
        ],
    ) else {
        return;
    };
    no_page_errors(&seen);
    assert_eq!(seen["unlabelled"], json!([]), "{seen}");
    for (page, count) in seen["markup"].as_object().unwrap() {
        assert_eq!(count, 0, "stored text became markup on {page}: {seen}");
    }
    assert_eq!(seen["markup"].as_object().unwrap().len(), 5, "{seen}");

    // Decisions: the reviewer's default view is what waits; text stays text.
    assert_eq!(
        seen["waiting_decisions"], 2,
        "the reviewer's default view: {seen}"
    );
    let listed = seen["decisions_text"].as_str().unwrap();
    assert!(
        listed.contains(&format!("{HOSTILE} in a ticket")) && listed.contains("<script>"),
        "{seen}"
    );
    assert_eq!(seen["reason_refused"], 1, "a move without a reason: {seen}");
    assert_eq!(seen["left_waiting"], 1, "{seen}");
    // Approved in the list, then archived by the admin while its page was open (below).
    assert_eq!(decision_status(&console, &layers.waiting), "archived");
    assert_eq!(decision_status(&console, &layers.hostile), "needs_review");
    assert_eq!(seen["approved_decisions"], 4, "{seen}");
    // Its own page: every fact with who decided, and only the moves its state allows.
    let decision = seen["decision_facts"].as_str().unwrap();
    assert!(
        decision.contains("Store credit only") && decision.contains("The refund policy says so"),
        "{seen}"
    );
    let decider = console.get(&console.admin, "/v1/whoami")["token_id"].clone();
    assert!(
        decision.contains(decider.as_str().unwrap()),
        "the credential that decided: {seen}"
    );
    assert_eq!(
        seen["moves_offered"],
        json!([
            "rejected",
            "one_time_exception",
            "superseded",
            "archived",
            "sensitive"
        ]),
        "an approved decision cannot be approved again: {seen}"
    );
    assert_eq!(decision_status(&console, &layers.first), "superseded");
    assert_eq!(
        seen["moves_after"],
        json!(["archived", "sensitive"]),
        "{seen}"
    );
    // The page asked for that one decision, never for the list of all of them.
    assert_eq!(
        seen["decision_requests"],
        json!([format!("/v1/decisions/{}", layers.first)]),
        "{seen}"
    );
    // Its history: recorded, approved, superseded, each with who and why.
    let history: Vec<&str> = seen["decision_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(history.len(), 3, "{seen}");
    assert!(
        history[0].starts_with("created") && history[0].contains(decider.as_str().unwrap()),
        "{seen}"
    );
    assert!(history[1].contains("approved"), "{seen}");
    assert!(
        history[2].contains("superseded")
            && history[2].contains("Replaced by the new refund policy"),
        "{seen}"
    );

    // Knowledge: both documents with who ingested them, the late-refund chunk found, and the
    // hostile document's heading and text shown as typed.
    assert_eq!(seen["documents"], 2, "{seen}");
    assert!(
        seen["documents_text"]
            .as_str()
            .unwrap()
            .contains("docs/pasted.md"),
        "{seen}"
    );
    assert!(seen["chunks"].as_u64().unwrap() >= 1, "{seen}");
    assert!(
        seen["knowledge_text"]
            .as_str()
            .unwrap()
            .contains("store credit only"),
        "{seen}"
    );
    let hostile = seen["hostile_knowledge"].as_str().unwrap();
    assert!(
        hostile.contains(HOSTILE) && hostile.contains("<script>alert(2)</script>"),
        "{seen}"
    );
    // A document's page: its chunks in the document's order, with their text.
    assert_eq!(
        seen["document_chunks"],
        json!(["Refunds", "Refunds › Late refunds"]),
        "{seen}"
    );
    let text = seen["document_text"].as_str().unwrap();
    assert!(
        text.contains("paid in cash") && text.contains("store credit only"),
        "{seen}"
    );
    assert!(
        shown(&seen, "document_facts").contains(decider.as_str().unwrap()),
        "who ingested it: {seen}"
    );
    assert!(
        shown(&seen, "hostile_document").contains("<script>alert(2)</script>"),
        "{seen}"
    );

    // Digests: the newest holds the later decisions (the hostile one as text), says which
    // sources it gained, and the older version lacks them.
    assert_eq!(seen["digests"], 1, "one skill's digest: {seen}");
    assert_eq!(seen["digest_versions"], 2, "{seen}");
    let newest = seen["digest_text"].as_str().unwrap();
    let older = seen["older_text"].as_str().unwrap();
    assert!(newest.contains("escalate the second"), "{seen}");
    assert!(newest.contains(HOSTILE), "{seen}");
    assert!(
        !older.contains("escalate the second") && older.contains("Store credit only"),
        "{seen}"
    );
    let facts = seen["digest_facts"].as_str().unwrap();
    assert!(
        facts.contains(&layers.later) && !facts.contains(&layers.first),
        "gained the later decision, not the first: {seen}"
    );
    assert_eq!(
        seen["digest_sources"].as_array().unwrap().len(),
        3,
        "{seen}"
    );
    assert_eq!(seen["source_opened"], true, "{seen}");
    // Rebuilt after the first decision was superseded: the new current version lost it.
    let rebuilt = seen["rebuilt_facts"].as_str().unwrap();
    assert!(
        rebuilt.contains(&format!("lost {}", layers.first)),
        "{seen}"
    );
    assert_eq!(seen["rebuilt_current"], 1, "{seen}");
    let history = console.get(
        &console.admin,
        &format!("/v1/digests/history?skill={SKILL}&limit=50"),
    );
    let current = &history["digests"][0];
    assert_eq!(history["digests"].as_array().unwrap().len(), 3, "{history}");
    assert!(
        !current["sources"].to_string().contains(&layers.first),
        "{current}"
    );

    // Evaluations: a point per run, and each question's grade per run exactly as the API
    // graded it; the second run passed a question the first failed.
    assert_eq!(seen["trends"], 1, "{seen}");
    assert_eq!(seen["trend_points"], 2, "one point per run: {seen}");
    assert_eq!(seen["eval_runs"], 2, "{seen}");
    assert_eq!(seen["set_points"], 2, "{seen}");
    let passed: Vec<u64> = runs.iter().map(|r| r["passed"].as_u64().unwrap()).collect();
    assert!(
        passed[1] > passed[0],
        "the later decisions helped: {runs:?}"
    );
    let bars = |n: &dyn Fn(&Value) -> u64| runs.iter().filter(|r| n(r) > 0).count();
    assert_eq!(
        seen["passed_bars"],
        bars(&|r| r["passed"].as_u64().unwrap()),
        "{seen}"
    );
    assert_eq!(
        seen["failed_bars"],
        bars(&|r| r["total"].as_u64().unwrap() - r["passed"].as_u64().unwrap()),
        "{seen}"
    );
    let expected: Vec<Value> = runs[0]["grades"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let grade = |run: &Value| {
                if run["grades"][i]["passed"] == true {
                    "passed"
                } else {
                    "failed"
                }
            };
            json!([g["question"], [grade(&runs[0]), grade(&runs[1])]])
        })
        .collect();
    assert_eq!(seen["grid"], json!(expected), "{seen}");
    assert_eq!(seen["latest_answers"], 3, "{seen}");
    // Run from the page: the store holds a third run and the chart a third point.
    let after = console.get(&console.admin, "/v1/evals/runs");
    assert_eq!(after["runs"].as_array().unwrap().len(), 3, "{after}");
    assert_eq!(seen["set_points_after"], 3, "{seen}");

    // Live: the admin's move reached the open decision page's history and the feed, and the
    // admin's new decision the open list.
    let moved = seen["live_history"].as_str().unwrap();
    assert!(
        moved.contains("archived") && moved.contains("Policy retired upstream"),
        "{seen}"
    );
    assert!(
        shown(&seen, "live_feed").contains(&layers.waiting),
        "{seen}"
    );
    let rows = seen["live_rows"].as_array().unwrap();
    assert_eq!(rows[1].as_u64(), rows[0].as_u64().map(|n| n + 1), "{seen}");
    for name in [
        "13-decisions",
        "14-knowledge",
        "15-digest",
        "16-evaluations",
        "17-decision",
        "18-evaluation-set",
        "19-document",
    ] {
        assert!(shots().join(format!("{name}.png")).exists(), "{name}");
    }
}

/// An agent token reads every layer's pages but is offered no review action, and a move sent
/// from the page anyway is refused with 403 and changes nothing. At a phone's width every page
/// fits without scrolling sideways, and stored text stays text there too.
#[test]
fn a_reader_sees_every_layer_without_review_actions_even_at_narrow_width() {
    let console = start(false);
    let layers = seed_layers(&console);
    let Some(seen) = console.drive("reader", &[("LORE_DECISION", layers.hostile.clone())]) else {
        return;
    };
    no_page_errors(&seen);
    assert_eq!(seen["rows"], 5, "an agent's view lists every state: {seen}");
    assert_eq!(seen["moves"], 0, "{seen}");
    assert_eq!(
        seen["writes"], 0,
        "no rebuild, run or move at any width: {seen}"
    );
    assert_eq!(seen["reason_fields"], 0, "{seen}");
    let refused = seen["bad_filter"].as_str().unwrap();
    assert!(
        refused.starts_with("422 ") && refused.contains("expected `domain/skill`"),
        "{seen}"
    );
    assert_eq!(seen["bad_filter_kept"], "not a skill", "{seen}");
    assert_eq!(seen["notice"], 1, "{seen}");
    assert_eq!(seen["forced"], 403, "{seen}");
    assert_eq!(decision_status(&console, &layers.hostile), "needs_review");
    let pages = seen["overflow"].as_object().unwrap();
    assert_eq!(pages.len(), 11, "{seen}");
    for (page, overflow) in pages {
        assert!(
            overflow.as_i64().unwrap() <= 0,
            "{page} scrolls sideways at 390 px: {seen}"
        );
    }
    for (page, count) in seen["markup"].as_object().unwrap() {
        assert_eq!(count, 0, "stored text became markup on {page}: {seen}");
    }
    assert_eq!(seen["unlabelled"], json!([]), "{seen}");
    assert_eq!(
        seen["nav_tab"],
        json!([
            "memory",
            "health",
            "episodes",
            "decisions",
            "knowledge",
            "digests",
            "evals",
            ""
        ]),
        "the navigation in order by keyboard, without the agent's hidden queue: {seen}"
    );
}
