//! `GET /v1/events` over a real socket: what subscribers see, in which scope, from which writer,
//! and how they resume.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::common::{Home, SKILL};
use lore_core::id::{EpisodeId, LessonId};
use lore_core::{Scope, SkillPath};
use lore_engine::Attribution;
use lore_server::auth::{Access, Role, TokenFile, parse_scope};
use lore_server::{Limits, app, serve};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const HR: &str = "hr/screen";
const FIN: &str = "finance/audit";
const WAIT: Duration = Duration::from_secs(10);

/// A server on a loopback port, with tokens.
struct Running {
    home: Home,
    addr: SocketAddr,
    tokens: std::path::PathBuf,
    admin: String,
    shutdown: CancellationToken,
    stopped: Receiver<()>,
    _runtime: tokio::runtime::Runtime,
}

fn start() -> Running {
    let home = Home::new();
    let tokens = home.lore_home().join("tokens.json");
    let (_, admin) = TokenFile::load(&tokens)
        .unwrap()
        .create(Role::Admin, Scope::unrestricted())
        .unwrap();
    let access = Access::from_file(&TokenFile::load(&tokens).unwrap());
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
        Arc::clone(&home.engine),
        Limits::default(),
        access,
        shutdown.clone(),
    );
    let (done, stopped) = std::sync::mpsc::channel();
    let token = shutdown.clone();
    runtime.spawn(async move {
        serve(listener, router, token).await.unwrap();
        let _ = done.send(());
    });
    Running {
        home,
        addr,
        tokens,
        admin,
        shutdown,
        stopped,
        _runtime: runtime,
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// One parsed server-sent event.
#[derive(Debug)]
struct Sse {
    id: String,
    name: String,
    data: Value,
}

impl Sse {
    /// The names of the data's fields, in order.
    fn keys(&self) -> Vec<&str> {
        self.data
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect()
    }
}

/// An open event stream, read on its own thread.
struct Subscription {
    events: Receiver<Sse>,
}

impl Subscription {
    fn next(&self) -> Sse {
        self.events
            .recv_timeout(WAIT)
            .unwrap_or_else(|e| panic!("no event within {WAIT:?}: {e}"))
    }

    /// Reads `n` events, none of which may mention `erased`, each also checked by `check`.
    fn replay_without(&self, n: usize, erased: &str, check: impl Fn(&Sse)) {
        for _ in 0..n {
            let event = self.next();
            assert!(!event.data.to_string().contains(erased), "{event:?}");
            check(&event);
        }
    }

    /// Asserts that nothing arrives for a while.
    fn quiet(&self, for_: Duration) {
        match self.events.recv_timeout(for_) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("expected no event, got {other:?}"),
        }
    }
}

impl Running {
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn token(&self, role: Role, scope: &str) -> String {
        let mut file = TokenFile::load(&self.tokens).unwrap();
        file.create(role, parse_scope(scope).unwrap()).unwrap().1
    }

    fn subscribe(&self, token: &str, query: &str, last_id: Option<&str>) -> Subscription {
        let mut request = agent()
            .get(self.url(&format!("/v1/events{query}")))
            .header("Authorization", format!("Bearer {token}"));
        if let Some(id) = last_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request.call().unwrap();
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert_eq!(content_type, "text/event-stream");
        let reader = BufReader::new(response.into_body().into_reader());
        let (tx, events) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut id, mut name, mut data) = (String::new(), String::new(), String::new());
            for line in reader.lines() {
                let Ok(line) = line else { return };
                if line.is_empty() {
                    if !data.is_empty() {
                        let event = Sse {
                            id: std::mem::take(&mut id),
                            name: std::mem::take(&mut name),
                            data: serde_json::from_str(&std::mem::take(&mut data)).unwrap(),
                        };
                        if tx.send(event).is_err() {
                            return;
                        }
                    }
                } else if let Some(v) = line.strip_prefix("id: ") {
                    id = v.to_owned();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    name = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
        });
        // The stream's cursor is taken when the response starts; a short pause lets the first
        // (empty) read finish, so what the test writes next is new to it.
        std::thread::sleep(Duration::from_millis(100));
        Subscription { events }
    }

    fn post(&self, token: &str, path: &str, body: Value) -> Value {
        let mut response = agent()
            .post(self.url(path))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        let status = response.status();
        let text = response.body_mut().read_to_string().unwrap();
        assert!(status.is_success(), "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap()
    }

    fn record(&self, token: &str, skill: &str) -> String {
        let body = json!({"skill": skill, "input": {"q": skill}, "output": {"a": "x"}});
        let execution = self.post(token, "/v1/executions", body);
        execution["id"].as_str().unwrap().to_owned()
    }
}

#[test]
fn subscribers_see_executions_from_rest_and_from_another_writer_in_their_scope_only() {
    let s = start();
    let hr = s.token(Role::Agent, "domain:hr");
    let all = s.subscribe(&s.admin, "", None);
    let hr_only = s.subscribe(&hr, "", None);

    let fin_id = s.record(&s.admin, FIN);
    let hr_id = s.record(&hr, HR);
    // Another writer on the same store file, not through this server.
    let other = SqliteStore::open(s.home.lore_home().join("lore.db"), OpenMode::Existing).unwrap();
    let other = lore_engine::Engine::new(Arc::new(other), Default::default());
    let outside = other
        .record_execution(lore_engine::NewExecution {
            skill: SkillPath::parse(HR).unwrap(),
            input: json!({"from": "another process"}),
            output: json!({}),
            outcome: lore_core::model::Outcome::Accepted,
            cost_usd: Some(0.001),
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })
        .unwrap();

    let seen: Vec<Sse> = (0..3).map(|_| all.next()).collect();
    let ids: Vec<&str> = seen
        .iter()
        .map(|e| e.data["execution"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [fin_id.as_str(), hr_id.as_str(), outside.id.as_str()]);
    assert!(seen.iter().all(|e| e.name == "execution.recorded"));
    assert_eq!(
        seen[2].data["execution"]["input"]["from"],
        "another process"
    );

    let first = hr_only.next();
    assert_eq!(first.data["execution"]["id"], hr_id.as_str());
    assert_eq!(hr_only.next().data["execution"]["id"], outside.id.as_str());
    hr_only.quiet(Duration::from_millis(800));

    // A skill filter narrows further.
    let one_skill = s.subscribe(&s.admin, &format!("?skill={SKILL}"), None);
    s.record(&s.admin, HR);
    let wanted = s.record(&s.admin, SKILL);
    assert_eq!(one_skill.next().data["execution"]["id"], wanted.as_str());
}

#[test]
fn lesson_changes_are_events_and_a_purge_carries_no_content() {
    let s = start();
    let hr = s.token(Role::Reviewer, "domain:hr");
    let events = s.subscribe(&hr, "", None);
    let fin_events = s.subscribe(&s.token(Role::Agent, "domain:finance"), "", None);
    let exec = s.record(&hr, HR);
    let rule = "Always read the candidate's whole letter before scoring.";
    let corrected = s.post(
        &hr,
        "/v1/corrections",
        json!({"skill": HR, "execution_id": exec, "text": rule}),
    );
    let lesson_id = corrected["lesson"]["id"].as_str().unwrap().to_owned();
    assert_eq!(events.next().name, "execution.recorded");
    let next_about_lesson = |name: &str| {
        let event = events.next();
        assert_eq!(event.name, name, "{event:?}");
        assert_eq!(event.data["type"], name);
        assert_eq!(event.data["lesson_id"], lesson_id.as_str(), "{event:?}");
        assert_eq!(event.data["skill"], HR);
        event
    };
    let created = next_about_lesson("lesson.created");
    assert_eq!(created.data["lesson"]["rule"], rule);

    s.post(
        &hr,
        &format!("/v1/lessons/{lesson_id}/retire"),
        json!({"reason": "outdated"}),
    );
    let retired = next_about_lesson("lesson.status_changed");
    assert_eq!(retired.data["to"], "archived", "{retired:?}");
    assert_eq!(retired.data["reason"], "outdated");

    let uri = s.url(&format!("/v1/lessons/{lesson_id}"));
    let response = agent()
        .patch(&uri)
        .header("Authorization", format!("Bearer {hr}"))
        .header("Content-Type", "application/json")
        .send(json!({"confidence": 0.5, "reason": "less sure"}).to_string())
        .unwrap();
    assert_eq!(response.status(), 200);
    let edited = next_about_lesson("lesson.edited");
    assert_eq!(edited.data["lesson"]["confidence"], 0.5);

    let why = Attribution {
        actor: Some("dpo".into()),
        reason: "erasure request".into(),
        evidence: Value::Null,
    };
    s.home
        .engine
        .purge_lesson(&LessonId::parse(&lesson_id).unwrap(), &why)
        .unwrap();
    let purged = next_about_lesson("lesson.purged");
    assert_eq!(purged.keys(), ["type", "lesson_id", "skill", "at"]);

    // Replayed from the start, the lesson's earlier events no longer carry its erased text.
    s.subscribe(&hr, "", Some("0-0"))
        .replay_without(5, "whole letter", |_| {});
    fin_events.quiet(Duration::from_millis(500));
}

#[test]
fn a_stream_resumes_after_its_last_event_id_and_a_bad_id_is_refused() {
    let s = start();
    let first_sub = s.subscribe(&s.admin, "", None);
    let ids: Vec<String> = (0..3).map(|_| s.record(&s.admin, HR)).collect();
    let first = first_sub.next();
    assert_eq!(first.data["execution"]["id"], ids[0].as_str());

    let resumed = s.subscribe(&s.admin, "", Some(&first.id));
    for id in &ids[1..] {
        assert_eq!(resumed.next().data["execution"]["id"], id.as_str());
    }
    resumed.quiet(Duration::from_millis(500));

    for bad in ["yesterday", "12", "1-x", "-1-2"] {
        let mut response = agent()
            .get(s.url("/v1/events"))
            .header("Authorization", format!("Bearer {}", s.admin))
            .header("Last-Event-ID", bad)
            .call()
            .unwrap();
        assert_eq!(response.status(), 422, "{bad}");
        let body: Value =
            serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
        assert_eq!(body["error"]["code"], "invalid");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Last-Event-ID")
        );
    }
    let response = agent().get(s.url("/v1/events")).call().unwrap();
    assert_eq!(response.status(), 401, "a stream without a token");
}

#[test]
fn an_open_stream_does_not_hold_up_shutdown() {
    let s = start();
    let sub = s.subscribe(&s.admin, "", None);
    s.record(&s.admin, HR);
    sub.next();
    s.shutdown.cancel();
    s.stopped
        .recv_timeout(WAIT)
        .expect("the server did not stop with a subscriber connected");
}

#[test]
fn episodes_are_events_in_their_scope_only_and_a_purge_carries_no_content() {
    let s = start();
    let hr = s.token(Role::Reviewer, "domain:hr");
    let hr_events = s.subscribe(&hr, "", None);
    let all = s.subscribe(&s.admin, "", None);
    let episode = |id: &str, skill: &str, task: &str| {
        json!({"id": id, "skill": skill, "timestamp": "2026-01-01T10:00:00Z",
               "outcome": "failure", "task": task,
               "decisions": [{"id": "d1", "type": "design", "context": "Pick a cache",
                              "chosen": "Redis"}]})
    };
    s.post(
        &s.admin,
        "/v1/episodes",
        episode("EPI-F", FIN, "Ledger cache"),
    );
    s.post(&hr, "/v1/episodes", episode("EPI-H", HR, "Candidate cache"));
    s.post(
        &hr,
        "/v1/episodes?replace=true",
        episode("EPI-H", HR, "Candidate cache, second try"),
    );
    let names = |sub: &Subscription, n: usize| -> Vec<(String, String)> {
        (0..n)
            .map(|_| {
                let e = sub.next();
                assert_eq!(e.data["type"], e.name.as_str());
                (e.name, e.data["episode_id"].as_str().unwrap().to_owned())
            })
            .collect()
    };
    let pair = |n: &str, id: &str| (n.to_owned(), id.to_owned());
    assert_eq!(
        names(&all, 3),
        [
            pair("episode.recorded", "EPI-F"),
            pair("episode.recorded", "EPI-H"),
            pair("episode.replaced", "EPI-H"),
        ]
    );
    let recorded = hr_events.next();
    assert_eq!(recorded.name, "episode.recorded");
    assert_eq!(recorded.data["episode_id"], "EPI-H", "{recorded:?}");
    assert_eq!(recorded.data["skill"], HR);
    let replaced = hr_events.next();
    assert_eq!(replaced.name, "episode.replaced");
    assert_eq!(
        replaced.data["episode"]["task"],
        "Candidate cache, second try"
    );

    s.post(
        &hr,
        "/v1/episodes/EPI-H/purge",
        json!({"reason": "erasure request"}),
    );
    let purged = hr_events.next();
    assert_eq!(purged.name, "episode.purged");
    assert_eq!(purged.keys(), ["type", "episode_id", "skill", "at"]);
    hr_events.quiet(Duration::from_millis(800));

    // Replayed from the start, hr sees only its own episode, and no longer its erased text.
    let replay = s.subscribe(&hr, "", Some("0-0"));
    replay.replay_without(3, "Candidate cache", |event| {
        assert_eq!(event.data["episode_id"], "EPI-H", "{event:?}");
    });
    replay.quiet(Duration::from_millis(500));
}

#[test]
fn an_episode_purge_needs_a_reviewer_in_scope_and_a_reason() {
    let s = start();
    let body = json!({"id": "EPI-F", "skill": FIN, "timestamp": "2026-01-01T10:00:00Z",
                      "outcome": "success", "task": "Ledger cache"});
    s.post(&s.admin, "/v1/episodes", body);
    let purge = |token: &str, id: &str, body: Value| {
        let mut response = agent()
            .post(s.url(&format!("/v1/episodes/{id}/purge")))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap();
        let text = response.body_mut().read_to_string().unwrap();
        (response.status().as_u16(), text)
    };
    let reason = json!({"reason": "erasure request"});
    let agent_fin = s.token(Role::Agent, "domain:finance");
    let reviewer_hr = s.token(Role::Reviewer, "domain:hr");
    let (status, text) = purge(&agent_fin, "EPI-F", reason.clone());
    assert_eq!(status, 403, "{text}");
    let (status, text) = purge(&reviewer_hr, "EPI-F", reason.clone());
    assert_eq!(status, 404, "{text}");
    let (status, text) = purge(&s.admin, "EPI-NONE", reason.clone());
    assert_eq!(status, 404, "{text}");
    let (status, text) = purge(&s.admin, "bad%20id", reason.clone());
    assert_eq!(status, 422, "{text}");
    let (status, text) = purge(&s.admin, "EPI-F", json!({"reason": "  "}));
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("reason"), "{text}");
    let (status, text) = purge(&s.admin, "EPI-F", json!({"reason": "x", "when": "now"}));
    assert_eq!(status, 422, "{text}");
    let stored = s
        .home
        .engine
        .episode(&EpisodeId::parse("EPI-F").unwrap())
        .unwrap();
    assert_eq!(stored.task, "Ledger cache");

    let (status, text) = purge(&s.admin, "EPI-F", reason);
    assert_eq!(status, 200, "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["episode"]["task"], "[purged]");
}

#[test]
fn decisions_recorded_and_moved_are_events_in_their_scope_only() {
    let s = start();
    let hr = s.token(Role::Reviewer, "domain:hr");
    let hr_events = s.subscribe(&hr, "", None);
    let decision = |skill: &str, situation: &str| {
        json!({"skill": skill, "situation": situation, "action": "Refund in full",
               "rationale": "Late by a week"})
    };
    s.post(&s.admin, "/v1/decisions", decision(FIN, "Ledger refund"));
    let made = s.post(
        &hr,
        "/v1/decisions",
        decision(HR, "Candidate travel refund"),
    );
    let id = made["id"].as_str().unwrap();
    s.post(
        &hr,
        "/v1/decisions/review",
        json!({"ids": [id], "status": "approved", "reason": "fair, ask jane.doe@example.com"}),
    );
    let recorded = hr_events.next();
    assert_eq!(recorded.name, "decision.recorded");
    assert_eq!(recorded.data["type"], "decision.recorded");
    assert_eq!(recorded.data["decision_id"], id, "{recorded:?}");
    assert_eq!(recorded.data["skill"], HR);
    assert_eq!(recorded.data["to"], "needs_review");
    let moved = hr_events.next();
    assert_eq!(moved.name, "decision.status_changed", "{moved:?}");
    assert_eq!(
        (&moved.data["from"], &moved.data["to"]),
        (&json!("needs_review"), &json!("approved"))
    );
    assert_eq!(moved.data["decision"]["status"], "approved");
    assert_eq!(moved.data["actor"], made["decided_by"]);
    let reason = moved.data["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("fair") && !reason.contains("jane.doe"),
        "{reason}"
    );
    // The finance decision never reaches the hr subscriber.
    hr_events.quiet(Duration::from_millis(800));
}
