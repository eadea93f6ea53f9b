//! Several `lore serve` processes on one PostgreSQL database (the `postgres` feature): what one
//! server writes, another recalls and follows. Each test has a schema of its own on the test
//! server that `scripts/ci/postgres` starts; without it the tests skip, and under CI they fail.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use lore_postgres::testing::{fresh_schema, test_url, with_schema};
use serde_json::{Value, json};

/// A schema of the test server, dropped with its tables when the guard drops.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    fn new(server: &str) -> Self {
        let name = fresh_schema();
        Self {
            url: with_schema(server, &name),
            name,
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let server = self.url.split('?').next().unwrap_or_default().to_owned();
        let _ = Command::new("psql")
            .args([
                &server,
                "-qc",
                &format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name),
            ])
            .output();
    }
}

/// A running `lore serve --store URL`, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    banner: String,
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(dir: &Path, store: &str, extra: &[&str]) -> Self {
        let mut child = crate::common::lore_command()
            .current_dir(dir)
            .env_remove("LORE_HOME")
            .env_remove("DATABASE_URL")
            .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        for _ in 0..2 {
            stdout.read_line(&mut banner).unwrap();
        }
        let addr = banner
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {banner:?}"))
            .parse()
            .unwrap();
        Self {
            child,
            addr,
            banner,
            _stdout: stdout,
        }
    }

    fn post(&self, path: &str, body: &Value) -> Value {
        let (status, value) = try_post(self.addr, path, body);
        assert!(status < 300, "POST {path} {body}: {status} {value}");
        value
    }

    /// The status of `GET path`, with no token.
    fn probe(&self, path: &str) -> u16 {
        probe(self.addr, path)
    }

    fn recall(&self, query: &str, skill: &str) -> Vec<String> {
        let answer = self.post("/v1/recall", &json!({"query": query, "skill": skill}));
        answer["lessons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /v1/events` on a server, read as it arrives.
struct Events {
    stream: BufReader<std::net::TcpStream>,
    seen: String,
}

impl Events {
    fn open(server: &Server) -> Self {
        Self::open_at(server.addr)
    }

    fn open_at(addr: SocketAddr) -> Self {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let request =
            format!("GET /v1/events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut events = Self {
            stream: BufReader::new(stream),
            seen: String::new(),
        };
        // The stream starts at the newest write once its headers are out.
        events.wait_for("text/event-stream", Duration::from_secs(5));
        events
    }

    /// Reads until `text` has arrived; returns how long that took.
    fn wait_for(&mut self, text: &str, most: Duration) -> Duration {
        let started = Instant::now();
        while !self.seen.contains(text) {
            assert!(
                started.elapsed() < most,
                "{text} did not arrive within {most:?}: {}",
                self.seen
            );
            let mut line = String::new();
            match self.stream.read_line(&mut line) {
                Ok(_) => self.seen.push_str(&line),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => panic!("{e}"),
            }
        }
        started.elapsed()
    }
}

/// A lesson approved through server A is recalled through server B, whose recall index was
/// built before the lesson existed, on B's first recall after the approval; B's event stream
/// shows the execution recorded and the lesson approved through A.
#[test]
fn a_lesson_approved_through_one_server_is_recalled_through_another() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let review = ["--curation", "review", "--human-corrections", "review"];
    let a = Server::start(dir.path(), &schema.url, &review);
    let b = Server::start(dir.path(), &schema.url, &review);
    let password = password_of(&server);
    for s in [&a, &b] {
        assert_eq!((s.probe("/healthz"), s.probe("/readyz")), (200, 200));
        assert!(s.banner.contains("Store: postgres://"), "{}", s.banner);
        assert!(!s.banner.contains(&password), "{}", s.banner);
    }

    let skill = "support/triage";
    let query = "refund invoices currency";
    assert!(b.recall(query, skill).is_empty(), "B's index starts empty");
    let mut events = Events::open(&b);
    let recorded = Instant::now();
    let execution = a.post(
        "/v1/executions",
        &json!({"skill": skill, "input": {"ticket": "refund"}, "output": {"total": "12"},
                "outcome": "rejected"}),
    );
    let corrected = a.post(
        "/v1/corrections",
        &json!({"skill": skill, "execution_id": execution["id"],
                "text": "Always state the currency of refund invoices."}),
    );
    let lesson = corrected["lesson"]["id"].as_str().unwrap().to_owned();
    let id = execution["id"].as_str().unwrap();
    events.wait_for(id, Duration::from_secs(5));
    eprintln!(
        "B's events showed the execution recorded through A {:?} after the request",
        recorded.elapsed()
    );
    assert_eq!(corrected["lesson"]["status"], "needs_review", "{corrected}");
    assert!(
        !b.recall(query, skill).contains(&lesson),
        "a lesson waiting for review is not recalled"
    );

    a.post("/v1/review/approve", &json!({"ids": [lesson]}));
    let approved = Instant::now();
    let mut polls = 0;
    let delay = loop {
        polls += 1;
        if b.recall(query, skill).contains(&lesson) {
            break approved.elapsed();
        }
        assert!(
            approved.elapsed() < Duration::from_secs(5),
            "B never recalled {lesson}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    eprintln!("recalled through B {delay:?} after the approval through A ({polls} recalls)");
    assert_eq!(polls, 1, "B's very next recall sees A's approval");
    events.wait_for("\"approved\"", Duration::from_secs(5));
    assert!(events.seen.contains(&lesson), "{}", events.seen);
}

/// One client's request and how it ended.
#[derive(Debug)]
enum Outcome {
    Recorded(String),
    Corrected(Option<String>),
    CorrectionRefused,
    Decided { lesson: String, to: String },
    Refused { status: u16 },
}

/// The status of `GET path`, with no token.
fn probe(addr: SocketAddr, path: &str) -> u16 {
    ureq::get(&format!("http://{addr}{path}"))
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .unwrap()
        .status()
        .as_u16()
}

/// Sends a POST and returns the status with the answer.
fn try_post(addr: SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let mut answer = ureq::post(&format!("http://{addr}{path}"))
        .config()
        .http_status_as_error(false)
        .build()
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Four servers on one database, two clients each, recording, correcting the same executions
/// and deciding on the same lessons at once: every ID is unique, every write that was answered
/// is stored and every refused one is not, each lesson's audit entries chain from its first
/// status to its current one, and the audit log's numbers have no gap.
#[test]
fn four_servers_writing_at_once_lose_nothing_and_keep_the_audit_chain() {
    use lore_core::Store;
    use lore_core::model::AuditAction;
    use lore_core::ports::store::{ChangeCursor, ListFilter};
    use std::collections::{BTreeMap, BTreeSet};

    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let review = ["--curation", "review", "--human-corrections", "review"];
    let servers: Vec<Server> = (0..4)
        .map(|_| Server::start(dir.path(), &schema.url, &review))
        .collect();
    let skill = "billing/refunds";
    let topics = [
        "currency",
        "vat",
        "iban",
        "deadline",
        "approver",
        "receipt",
        "discount",
        "shipping",
        "duplicate",
        "signature",
        "language",
        "rounding",
    ];
    let mut executions = Vec::new();
    for e in 0..3 {
        let x = servers[0].post(
            "/v1/executions",
            &json!({"skill": skill, "input": {"n": e}, "output": {"ok": false},
                    "outcome": "rejected"}),
        );
        executions.push(x["id"].as_str().unwrap().to_owned());
    }
    let mut shared = Vec::new();
    for (i, topic) in topics.iter().enumerate() {
        let c = servers[0].post(
            "/v1/corrections",
            &json!({"skill": skill, "execution_id": executions[i % 3],
                    "text": format!("Always check the {topic} field {i} before a refund.")}),
        );
        shared.push(c["lesson"]["id"].as_str().unwrap().to_owned());
    }

    let decisions = ["approve", "reject", "exception"];
    let outcomes: Vec<Outcome> =
        std::thread::scope(|s| {
            let mut clients = Vec::new();
            for (n, server) in servers.iter().enumerate() {
                for client in 0..2 {
                    let (addr, shared, executions) = (server.addr, &shared, &executions);
                    clients.push(s.spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..12_usize {
                        let pick = n * 7 + client * 5 + i * 3;
                        match i % 3 {
                            0 => {
                                let (status, body) = try_post(
                                    addr,
                                    "/v1/executions",
                                    &json!({"skill": skill, "input": {"c": pick},
                                            "output": {"i": i}, "outcome": "accepted"}),
                                );
                                assert_eq!(status, 201, "{body}");
                                out.push(Outcome::Recorded(body["id"].as_str().unwrap().into()));
                            }
                            1 => {
                                let text = format!(
                                    "Never refund order batch {n}x{client}x{i} without a ticket."
                                );
                                let (status, body) = try_post(
                                    addr,
                                    "/v1/corrections",
                                    &json!({"skill": skill,
                                            "execution_id": executions[pick % 3],
                                            "text": text}),
                                );
                                // A correction whose older lessons kept changing under it is
                                // refused whole after its tries (checked below).
                                assert!(status < 300 || status == 409, "{status} {body}");
                                if status == 409 {
                                    out.push(Outcome::CorrectionRefused);
                                } else {
                                    let lesson = body["lesson"]["id"].as_str().map(str::to_owned);
                                    out.push(Outcome::Corrected(lesson));
                                }
                            }
                            _ => {
                                let lesson = shared[pick % shared.len()].clone();
                                let decision = decisions[(pick / 3) % decisions.len()];
                                let (status, body) = try_post(
                                    addr,
                                    &format!("/v1/review/{decision}"),
                                    &json!({"ids": [lesson]}),
                                );
                                assert!(status < 500, "{status} {body}");
                                if status < 300 {
                                    let to = body["lessons"][0]["status"].as_str().unwrap();
                                    out.push(Outcome::Decided { lesson, to: to.into() });
                                } else {
                                    out.push(Outcome::Refused { status });
                                }
                            }
                        }
                    }
                    out
                }));
                }
            }
            clients
                .into_iter()
                .flat_map(|c| c.join().unwrap())
                .collect()
        });
    drop(servers);

    let store = lore_postgres::PostgresStore::connect(&schema.url).unwrap();
    let all = ListFilter::default();
    let recorded: Vec<&String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Recorded(id) => Some(id),
            _ => None,
        })
        .collect();
    let stored_executions = store.executions(&all).unwrap();
    let ids: BTreeSet<&str> = stored_executions.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids.len(),
        stored_executions.len(),
        "no duplicate execution ID"
    );
    assert_eq!(
        stored_executions.len(),
        3 + recorded.len(),
        "every record landed once"
    );
    assert!(recorded.iter().all(|id| ids.contains(id.as_str())));

    let lessons = store.lessons(&all).unwrap();
    let lesson_ids: BTreeSet<&str> = lessons.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(lesson_ids.len(), lessons.len(), "no duplicate lesson ID");
    let mut corrected = 0;
    for o in &outcomes {
        if let Outcome::Corrected(lesson) = o {
            corrected += 1;
            if let Some(id) = lesson {
                assert!(
                    lesson_ids.contains(id.as_str()),
                    "correction's lesson {id} is stored"
                );
            }
        }
    }
    let corrections_refused = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::CorrectionRefused))
        .count();
    assert_eq!(
        store.corrections(&all).unwrap().len(),
        topics.len() + corrected,
        "answered corrections are stored, refused ones are not"
    );

    // Audit numbers run 1..=n with no gap and no repeat.
    let changes = store.changes(ChangeCursor::default(), 1_000_000).unwrap();
    let seqs: Vec<u64> = changes.audit.iter().map(|(s, _)| *s).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let audit_ids: BTreeSet<&str> = changes.audit.iter().map(|(_, a)| a.id.as_str()).collect();
    assert_eq!(audit_ids.len(), seqs.len(), "no duplicate audit ID");

    // Every answered decision is one transition in the audit log, every refused one none, and
    // each lesson's transitions chain from its first status to its current one.
    let mut decided: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut refused = 0;
    for o in &outcomes {
        match o {
            Outcome::Decided { lesson, to } => {
                decided
                    .entry(lesson.as_str())
                    .or_default()
                    .push(to.as_str());
            }
            Outcome::Refused { status, .. } => {
                assert!(matches!(status, 400 | 409 | 422), "refused with {status}");
                refused += 1;
            }
            _ => {}
        }
    }
    for lesson in &lessons {
        let id = lesson.id.as_str();
        let entries: Vec<_> = changes
            .audit
            .iter()
            .map(|(_, a)| a)
            .filter(|a| a.subject == id)
            .collect();
        let transitions: Vec<_> = entries
            .iter()
            .filter(|a| a.action == AuditAction::Transition)
            .collect();
        let mut status = entries
            .iter()
            .find(|a| a.action == AuditAction::Created)
            .and_then(|a| a.to)
            .unwrap_or_else(|| panic!("{id} has a creation entry: {entries:?}"));
        for t in &transitions {
            assert_eq!(
                t.from,
                Some(status),
                "{id}: the chain is unbroken: {entries:?}"
            );
            status = t.to.unwrap();
        }
        assert_eq!(
            status, lesson.status,
            "{id}: the chain ends at the stored status"
        );
        if shared.iter().any(|s| s == id) {
            let answered: Vec<&str> = decided.get(id).cloned().unwrap_or_default();
            let logged: Vec<String> = transitions
                .iter()
                .map(|t| t.to.unwrap().as_str().to_owned())
                .collect();
            assert_eq!(
                answered.len(),
                logged.len(),
                "{id}: each answered decision is logged once, each refused one not at all"
            );
            let (mut a, mut l) = (answered.clone(), logged.clone());
            a.sort_unstable();
            l.sort_unstable();
            assert_eq!(a, l.iter().map(String::as_str).collect::<Vec<_>>(), "{id}");
        }
    }
    let moved: usize = decided.values().map(Vec::len).sum();
    eprintln!(
        "{} requests: {} records, {corrected} corrections stored and {corrections_refused} \
         refused, {moved} decisions answered and {refused} refused",
        outcomes.len(),
        recorded.len()
    );
    assert!(moved > 0 && refused > 0, "the race had winners and losers");
}

/// `lore migrate` copies an SQLite store into PostgreSQL and back: counts and checksums match
/// at each step, a second run copies nothing more, recall answers alike on both, and the copy
/// back is a third store with the same checksums.
#[test]
fn migration_to_postgres_and_back_keeps_every_record() {
    use crate::common::Project;

    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let p = Project::new().initialized();
    let skill = "finance/invoices";
    let mut lessons = Vec::new();
    for (i, text) in [
        "Always state the currency of every invoice total.",
        "Never round tax amounts before summing the lines.",
        "Always quote the purchase order number in the subject.",
    ]
    .iter()
    .enumerate()
    {
        let input = format!("{{\"invoice\": {i}}}");
        let id = p.json(&[
            "record",
            skill,
            "--input",
            &input,
            "--output",
            "{\"total\": 1}",
        ])["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let made = p.correct(skill, &id, text);
        lessons.push(made["lesson"]["id"].as_str().unwrap().to_owned());
    }
    p.ok(&["review", "reject", &lessons[2]]);
    crate::transfer::with_layers(&p);
    let pg = format!("postgres:{}", schema.url);
    let sqlite = "sqlite:.lore/lore.db";
    let query = "currency of the invoice total";
    // Recall embeds the lessons and freezes the embedder's fit: both travel with the copy.
    p.ok(&["recall", query, "--skill", skill]);

    let there = p.json(&["migrate", "--from", sqlite, "--to", &pg]);
    assert!(there["copied"].as_u64().unwrap() > 9, "{there}");
    assert_eq!(there["counts"]["lessons"], 3, "{there}");
    assert!(there["vectors"].as_u64().unwrap() >= 2, "{there}");
    for (kind, count) in [
        ("knowledge_document", 2),
        ("decision", 1),
        // One per skill: the decision's and the approved lessons'.
        ("digest", 2),
        ("eval_set", 1),
        ("eval_run", 1),
    ] {
        assert_eq!(there["layers"][kind], count, "{kind}: {there}");
        assert!(there["checksums"][kind].is_string(), "{kind}: {there}");
    }
    let again = p.json(&["migrate", "--from", sqlite, "--to", &pg]);
    assert_eq!(again["copied"], 0, "a second run copies nothing: {again}");
    // The first run stored each decision's audit entry with its decision and then skipped the
    // records' copy of it; the second skips everything.
    assert_eq!(
        again["skipped"].as_u64(),
        Some(there["copied"].as_u64().unwrap() + there["skipped"].as_u64().unwrap()),
        "{again}"
    );
    assert_eq!(again["checksums"], there["checksums"]);

    let back = p.json(&["migrate", "--from", &pg, "--to", "sqlite:back/lore.db"]);
    assert_eq!(back["checksums"], there["checksums"], "{back}");
    assert_eq!(back["counts"], there["counts"], "{back}");

    let recall = |store: &str| -> Vec<String> {
        let out = p.json(&["recall", query, "--skill", skill, "--store", store]);
        out["lessons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let on_sqlite = recall(sqlite);
    assert!(on_sqlite.contains(&lessons[0]), "{on_sqlite:?}");
    assert_eq!(recall(&pg), on_sqlite);
    assert_eq!(recall("sqlite:back/lore.db"), on_sqlite);
    let context = |store: &str| -> Value {
        let out = p.json(&[
            "context",
            "cancel after the deadline",
            "--skill",
            crate::transfer::LAYER_SKILL,
            "--store",
            store,
        ]);
        out["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| json!([l["layer"], l["status"], l["items"]]))
            .collect()
    };
    let on_sqlite = context(sqlite);
    assert!(on_sqlite.to_string().contains("filled"), "{on_sqlite}");
    assert_eq!(
        context(&pg),
        on_sqlite,
        "the layers answer alike on the copy"
    );
    assert_eq!(context("sqlite:back/lore.db"), on_sqlite);

    // A destination that holds other records is not a copy of the source: refused.
    let other = Project::new().initialized();
    other.ok(&["record", skill, "--input", "{}", "--output", "{}"]);
    let err = other.fails(&["migrate", "--from", "sqlite:missing.db", "--to", &pg]);
    assert!(err.contains("no Lore store"), "{err}");
    let err = other.fails(&["migrate", "--from", "sqlite:.lore/lore.db", "--to", &pg]);
    assert!(err.contains("holds records the source lacks"), "{err}");
    assert!(!err.contains(&password_of(&server)), "{err}");
    let after = p.json(&["migrate", "--from", sqlite, "--to", &pg]);
    assert_eq!(
        after["copied"], 0,
        "the refused migration wrote nothing: {after}"
    );
    assert_eq!(after["counts"], there["counts"]);

    // A destination holding a layer item the source lacks is refused the same way.
    let questions = p.path().join("more.jsonl");
    std::fs::write(&questions, "{\"question\": \"q\", \"expected\": \"a\"}\n").unwrap();
    p.ok(&[
        "eval",
        "define",
        "--skill",
        crate::transfer::LAYER_SKILL,
        "--name",
        "only-there",
        "--file",
        questions.to_str().unwrap(),
        "--store",
        &pg,
    ]);
    let err = p.fails(&["migrate", "--from", sqlite, "--to", &pg]);
    assert!(err.contains("an item of kind eval set"), "{err}");
}

/// The embedder's tuning moves with the store: a trained and activated adapter copied into
/// PostgreSQL is the active one there, with its runs, checkpoint and audit trail, and the copy
/// back holds the same checksums.
#[test]
fn an_active_adapter_migrates_to_postgres_and_back() {
    use crate::common::Project;

    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let p = Project::new().initialized();
    crate::embedder::with_feedback(&p);
    let run = p.json(&["embedder", "train", "--by", "ops"]);
    assert_eq!(run["evaluation"]["better"], true, "{run}");
    let checkpoint = run["checkpoint"].as_str().unwrap().to_owned();
    p.ok(&[
        "embedder",
        "activate",
        &checkpoint,
        "--by",
        "ops",
        "--confirm",
        "--reason",
        "it helps",
    ]);
    let pg = format!("postgres:{}", schema.url);
    let there = p.json(&["migrate", "--from", "sqlite:.lore/lore.db", "--to", &pg]);
    for kind in ["tune_run", "checkpoint", "active_checkpoint"] {
        assert_eq!(there["layers"][kind], 1, "{kind}: {there}");
    }
    let active = p.json(&["embedder", "active", "--store", &pg]);
    assert_eq!(active["checkpoint"], checkpoint.as_str(), "{active}");
    let back = p.json(&["migrate", "--from", &pg, "--to", "sqlite:back/lore.db"]);
    assert_eq!(back["checksums"], there["checksums"], "{back}");
    let active = p.json(&["embedder", "active", "--store", "sqlite:back/lore.db"]);
    assert_eq!(active["checkpoint"], checkpoint.as_str(), "{active}");
}

/// The password of a `postgres://user:password@…` URL.
fn password_of(url: &str) -> String {
    url.split_once("://")
        .and_then(|(_, rest)| rest.rsplit_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, p)| p.to_owned())
        .unwrap()
}

/// The store's password shows nowhere: not in output, not in a trace-level log, not in the
/// error of a wrong password or an unreachable server.
#[test]
fn the_store_password_never_shows() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let password = password_of(&server);
    let dir = tempfile::tempdir().unwrap();
    let run = |store: &str, args: &[&str]| {
        let out = crate::common::lore_command()
            .current_dir(dir.path())
            .env_remove("LORE_HOME")
            .env("LORE_LOG", "trace")
            .env("DATABASE_URL", store)
            .args(args)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), all)
    };
    let (ok, all) = run(
        &schema.url,
        &["record", "a/b", "--input", "{}", "--output", "{}"],
    );
    assert!(ok, "{all}");
    let (ok, all) = run(&schema.url, &["memory", "status"]);
    assert!(ok && all.contains("postgres"), "{all}");
    assert!(!all.contains(&password), "{all}");
    let (ok, all) = run(&schema.url, &["--json", "init"]);
    assert!(ok, "{all}");
    assert!(!all.contains(&password), "{all}");

    let wrong = schema.url.replace(&password, "wrong-password-7f3a");
    let (ok, all) = run(&wrong, &["memory", "status"]);
    assert!(
        !ok && all.contains("password authentication failed"),
        "{all}"
    );
    assert!(!all.contains("wrong-password-7f3a"), "{all}");
    let (head, tail) = schema.url.rsplit_once('@').unwrap();
    let closed = format!("{head}@127.0.0.1:1/{}", tail.split_once('/').unwrap().1);
    let (ok, all) = run(&closed, &["memory", "status"]);
    assert!(!ok, "{all}");
    assert!(!all.contains(&password), "{all}");
    // The backend's reason is said once, not once as the message and again as its cause.
    let reason = "Connection refused";
    assert_eq!(all.matches(reason).count(), 1, "{all}");
}

/// The repository's root, where `deploy/` is.
fn repository() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The arguments `deploy/compose.postgres.yaml` gives each Lore server, without `serve` and its
/// listening address (a test listens on loopback).
fn compose_server_arguments() -> Vec<String> {
    let compose =
        std::fs::read_to_string(repository().join("deploy/compose.postgres.yaml")).unwrap();
    let line = compose
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("command:"))
        .expect("deploy/compose.postgres.yaml gives the servers a command");
    let args: Vec<String> = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{args:?}");
    let mut out = Vec::new();
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        if arg == "--addr" {
            rest.next();
        } else {
            out.push(arg.clone());
        }
    }
    out
}

/// A free loopback port (free when asked; nothing else here takes ports at random).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// nginx running `deploy/nginx.conf`, its upstream names pointed at local servers; stopped when
/// dropped.
struct Proxy {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Proxy {
    /// `None` (the test skips) when nginx is not installed outside CI; under CI it must be.
    fn start(upstreams: &[SocketAddr]) -> Option<Self> {
        let nginx = ["nginx", "/usr/sbin/nginx"]
            .into_iter()
            .find(|n| Command::new(n).arg("-v").output().is_ok());
        let Some(nginx) = nginx else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "nginx is not installed under CI: scripts/test installs it"
            );
            eprintln!("nginx is not installed; scripts/test installs it");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut site = std::fs::read_to_string(repository().join("deploy/nginx.conf")).unwrap();
        for (n, upstream) in upstreams.iter().enumerate() {
            let name = format!("server lore-{}:7077", n + 1);
            assert!(site.contains(&name), "deploy/nginx.conf has no {name}");
            site = site.replace(&name, &format!("server {upstream}"));
        }
        assert!(site.contains("listen 80;"), "{site}");
        site = site.replace("listen 80;", &format!("listen 127.0.0.1:{port};"));
        std::fs::write(dir.path().join("lore.conf"), site).unwrap();
        let d = dir.path().display();
        let main = format!(
            "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  \
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  \
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             include {d}/lore.conf;\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), main).unwrap();
        let child = Command::new(nginx)
            .args(["-e", &format!("{d}/error.log"), "-p", &d.to_string()])
            .args(["-c", &format!("{d}/nginx.conf")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen: {}",
                std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self {
            child,
            addr,
            _dir: dir,
        })
    }

    fn get(&self, path: &str) -> u16 {
        probe(self.addr, path)
    }

    /// One JSON-RPC message to `/mcp` under the name the compose layout's servers accept, with the
    /// session when there is one: the status, the session header, and the answer's text.
    fn mcp(&self, session: Option<&str>, message: &Value) -> (u16, Option<String>, String) {
        mcp_at(self.addr, Some("lore.internal"), session, message)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The layout `deploy/compose.postgres.yaml` deploys, run without Docker: three servers started
/// with the compose file's own arguments on one database, behind nginx running `deploy/nginx.conf` with
/// the service names pointed at them. Through the proxy the servers are ready, every call of an
/// MCP client is answered whichever server the proxy picks, a write made through one server directly arrives on
/// the proxy's event stream, and when a server dies the proxy's next requests are answered by
/// the others.
#[test]
fn the_compose_layout_serves_through_its_proxy() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let args = compose_server_arguments();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut servers: Vec<Server> = (0..3)
        .map(|_| Server::start(dir.path(), &schema.url, &args))
        .collect();
    let upstreams: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
    let Some(proxy) = Proxy::start(&upstreams) else {
        return;
    };
    assert_eq!((proxy.get("/healthz"), proxy.get("/readyz")), (200, 200));

    // Several MCP clients, a few calls each: with sessions, a call sent to another server than
    // the one that opened its session would be refused.
    for client in 0..4 {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": format!("compose-{client}"), "version": "1"}}});
        let (status, session, text) = proxy.mcp(None, &init);
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("serverInfo"), "{text}");
        let session = session.as_deref();
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, text) = proxy.mcp(session, &ready);
        assert!(status < 300, "session {session:?}: {status} {text}");
        for call in 0..3 {
            let list = json!({"jsonrpc": "2.0", "id": 2 + call, "method": "tools/list"});
            let (status, _, text) = proxy.mcp(session, &list);
            assert_eq!(status, 200, "session {session:?}, call {call}: {text}");
            assert!(text.contains("\"recall_memory\""), "{text}");
        }
    }

    let mut events = Events::open_at(proxy.addr);
    let execution = servers[1].post(
        "/v1/executions",
        &json!({"skill": "ops/deploy", "input": {"step": 1}, "output": {"ok": false},
                "outcome": "rejected"}),
    );
    events.wait_for(execution["id"].as_str().unwrap(), Duration::from_secs(5));

    drop(servers.remove(0));
    for n in 0..6 {
        let (status, body) = try_post(
            proxy.addr,
            "/v1/executions",
            &json!({"skill": "ops/deploy", "input": {"n": n}, "output": {"ok": true},
                    "outcome": "accepted"}),
        );
        assert!(
            status < 300,
            "request {n} after a server died: {status} {body}"
        );
    }
}

/// Organization memory keeps everything in the lessons' and runs' JSON, so PostgreSQL holds it
/// as SQLite does: members' own lessons, the pool's proposal, and the rule that only a person
/// approves it.
#[test]
fn organization_memory_works_on_postgres_without_a_migration() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let p = crate::common::Project::new().initialized();
    let skill = "support/triage";
    let run = |who: Option<&str>, args: &[&str]| -> Value {
        let mut all = vec!["--store", schema.url.as_str(), "--json"];
        if let Some(who) = who {
            all.extend(["--as", who]);
        }
        all.extend_from_slice(args);
        let out = p.ok(&all);
        serde_json::from_str(&out).unwrap_or(Value::String(out))
    };
    let mut own = Vec::new();
    for agent in ["a", "b", "c"] {
        let who = format!("agent:{agent},role:triage");
        let exec = run(
            Some(&who),
            &["record", skill, "--input", "{}", "--output", "{}"],
        );
        let exec = exec["id"]
            .as_str()
            .map_or_else(|| exec.as_str().unwrap().trim().to_owned(), str::to_owned);
        let made = run(
            Some(&who),
            &[
                "correct",
                skill,
                "--execution-id",
                &exec,
                "--correction",
                "Always state the currency of refund invoices.",
            ],
        );
        own.push(made["lesson"]["id"].as_str().unwrap().to_owned());
    }
    let hidden = p.run(&[
        "--store",
        &schema.url,
        "--as",
        "agent:b,role:triage",
        "lessons",
        "show",
        &own[0],
    ]);
    assert!(!hidden.status.success(), "b read a's own lesson");

    let report = run(None, &["org", "pool"]);
    assert_eq!(report["proposed"], 1, "{report}");
    let id = report["patterns"][0]["proposal"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = p.run(&[
        "--store",
        &schema.url,
        "--as",
        "agent:a,role:triage",
        "review",
        "approve",
        &id,
    ]);
    assert!(!refused.status.success(), "an agent approved an org lesson");
    let show = |id: &str| run(None, &["lessons", "show", id])["lesson"]["status"].clone();
    assert_eq!(show(&id), "needs_review");
    run(None, &["review", "approve", &id, "--reason", "checked"]);
    assert_eq!(show(&id), "approved");
}

/// The embedder's lifecycle answers on PostgreSQL as on SQLite: the active embedder, the runs
/// and checkpoints are listed, a rollback to the base is guarded and audited, and the command
/// line reads the same store.
#[test]
fn the_embedder_lifecycle_answers_on_postgres() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path(), &schema.url, &[]);
    for path in [
        "/v1/embedder",
        "/v1/embedder/runs",
        "/v1/embedder/checkpoints",
    ] {
        assert_eq!(s.probe(path), 200, "{path}");
    }
    let (status, answer) = try_post(
        s.addr,
        "/v1/embedder/rollback",
        &json!({"to": "base", "actor": "ops", "reason": "r"}),
    );
    assert_eq!(status, 422, "no confirmation: {answer}");
    let guard = json!({"to": "base", "actor": "ops", "confirm": true, "reason": "back to base"});
    let (status, answer) = try_post(s.addr, "/v1/embedder/rollback", &guard);
    assert!(status < 300, "{status} {answer}");
    let out = crate::common::lore_command()
        .current_dir(dir.path())
        .env_remove("LORE_HOME")
        .env_remove("DATABASE_URL")
        .args(["embedder", "active", "--json", "--store", &schema.url])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let active: Value = serde_json::from_str(&stdout).unwrap();
    assert!(active["checkpoint"].is_null(), "{active}");
}

/// One JSON-RPC message to `/mcp?tools=all` at `addr` (under the name `host`, when given), with the
/// session when there is one: the status, the session header, and the answer's text.
fn mcp_at(
    addr: SocketAddr,
    host: Option<&str>,
    session: Option<&str>,
    message: &Value,
) -> (u16, Option<String>, String) {
    let mut request = ureq::post(&format!("http://{addr}/mcp?tools=all"))
        .config()
        .http_status_as_error(false)
        .build()
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(host) = host {
        request = request.header("host", host);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let mut answer = request.send(message.to_string()).unwrap();
    let status = answer.status().as_u16();
    let session = answer
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, session, answer.body_mut().read_to_string().unwrap())
}

/// `mcp_at` on a server directly, expecting success.
fn mcp(addr: SocketAddr, session: Option<&str>, message: &Value) -> (Option<String>, String) {
    let (status, session, text) = mcp_at(addr, None, session, message);
    assert!(status < 300, "{message}: {status} {text}");
    (session, text)
}

/// Seed 004's layers on a PostgreSQL deployment: through server A a team ingests its runbook,
/// records and approves a decision, builds the digest, defines and runs an evaluation; server
/// B, on the same database, stacks all of it into `/v1/context` and the MCP `layered_context`
/// tool, and lists the graded run.
#[test]
fn the_knowledge_layers_work_across_servers_on_postgres() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let a = Server::start(dir.path(), &schema.url, &[]);
    let b = Server::start(dir.path(), &schema.url, &[]);
    let skill = "support/triage";
    let query = "customer wants to cancel after the deadline";
    // B builds its knowledge index before anything is ingested.
    let before = b.post("/v1/context", &json!({"query": query, "skill": skill}));
    assert!(
        before["layers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["status"] != "filled"),
        "{before}"
    );

    let runbook = "# Cancellations\n\n## After the deadline\n\nA customer who cancels after the \
                   deadline pays no fee on a first order.\n\n## Refunds\n\nRefuse a second \
                   refund for the same order.\n";
    let ingested = a.post(
        "/v1/knowledge/documents",
        &json!({"skill": skill, "documents": [{"source": "runbooks/cancel.md", "text": runbook}]}),
    );
    assert!(
        ingested["chunks_written"].as_u64().unwrap() >= 2,
        "{ingested}"
    );
    let decision = a.post(
        "/v1/decisions",
        &json!({"skill": skill, "situation": "A customer asked to cancel after the deadline",
                "action": "Cancel without a fee", "rationale": "First order, polite request"}),
    );
    let id = decision["id"].as_str().unwrap().to_owned();
    assert_eq!(decision["status"], "needs_review", "{decision}");
    a.post(
        "/v1/decisions/review",
        &json!({"ids": [id], "status": "approved", "reason": "fair"}),
    );
    let built = a.post("/v1/digests/build", &json!({}));
    assert_eq!(built["built"].as_array().unwrap().len(), 1, "{built}");
    a.post(
        "/v1/evals/sets",
        &json!({"skill": skill, "name": "basics", "questions": [
            {"question": "Can a customer cancel after the deadline?", "expected": "cancel without a fee"}]}),
    );
    let runs = a.post("/v1/evals/runs", &json!({"skill": skill}));
    assert_eq!(
        runs.to_string().matches("\"passed\":1").count(),
        1,
        "{runs}"
    );

    let context = b.post("/v1/context", &json!({"query": query, "skill": skill}));
    let layer = |name: &str| {
        context["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["layer"] == name)
            .unwrap_or_else(|| panic!("no {name} layer in {context}"))
            .clone()
    };
    for name in ["decisions", "digest", "knowledge"] {
        assert_eq!(layer(name)["status"], "filled", "{name}: {context}");
    }
    assert!(layer("decisions").to_string().contains(&id), "{context}");
    let text = context["text"].as_str().unwrap();
    assert!(text.contains("Cancel without a fee"), "{text}");
    assert!(
        text.contains("runbooks/cancel.md"),
        "the chunk keeps its provenance: {text}"
    );

    let listed = b.probe("/v1/evals/runs");
    assert_eq!(listed, 200);
    let (status, trends) = {
        let mut answer = ureq::get(&format!("http://{}/v1/evals/trends", b.addr))
            .call()
            .unwrap();
        (
            answer.status().as_u16(),
            answer.body_mut().read_to_string().unwrap(),
        )
    };
    assert_eq!(status, 200);
    assert!(trends.contains("basics"), "{trends}");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "layers", "version": "1"}}});
    let (session, _) = mcp(b.addr, None, &init);
    let session = session.as_deref();
    mcp(
        b.addr,
        session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "layered_context", "arguments": {"query": query, "skill": skill}}});
    let (_, answer) = mcp(b.addr, session, &call);
    assert!(answer.contains(&id), "{answer}");
    assert!(answer.contains("runbooks/cancel.md"), "{answer}");
    assert!(!answer.contains("\"isError\":true"), "{answer}");
}

/// `lore serve` over PostgreSQL holding thousands of lessons answers recall from its first
/// request while its index builds in the background (from the store's full-text search, saying
/// `warming` in the body and the header), `/readyz` answers 200 throughout and says whether the
/// index is warm, and once it is ready the same query finds the same lesson first.
#[test]
fn a_new_server_on_postgres_answers_while_its_index_builds() {
    let Some(server) = test_url() else {
        return;
    };
    let schema = Schema::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let skill = "ops/exports";
    let at = "2026-03-01T12:00:00Z";
    let lines: String = (0..5000)
        .map(|n| {
            let lesson = json!({
                "id": format!("REFL-20260301120000-{n:08}"),
                "skill": skill,
                "mistake": format!("mistake {n}"),
                "root_cause": "cause",
                "rule": format!("check field f{n} of record r{n} before sending"),
                "applies_when": "always",
                "tiers": {"summary": format!("check f{n}"), "condition": "", "action": "",
                          "rationale": ""},
                "confidence": 0.8,
                "source": "manual",
                "status": "approved",
                "created_at": at,
                "updated_at": at,
            });
            format!("{}\n", json!({"type": "lesson", "record": lesson}))
        })
        .collect();
    let file = dir.path().join("lessons.jsonl");
    std::fs::write(&file, lines).unwrap();
    let import = crate::common::lore_command()
        .current_dir(dir.path())
        .args(["import", "--store", &schema.url, "--jsonl"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );

    let s = Server::start(dir.path(), &schema.url, &[]);
    let index_of = |path: &str, body: Option<&Value>| {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .new_agent();
        let url = format!("http://{}{path}", s.addr);
        let mut res = match body {
            Some(b) => agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(b.to_string()),
            None => agent.get(&url).call(),
        }
        .unwrap();
        let header = res
            .headers()
            .get("lore-recall-index")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let status = res.status().as_u16();
        let text = res.body_mut().read_to_string().unwrap();
        (
            status,
            header,
            serde_json::from_str::<Value>(&text).unwrap(),
        )
    };
    let query = json!({"query": "check field f17 of record r17", "skill": skill});
    let first = |body: &Value| body["lessons"][0]["id"].as_str().map(str::to_owned);

    let (status, header, body) = index_of("/v1/recall", Some(&query));
    assert_eq!(status, 200, "{body}");
    assert_eq!(header, "warming", "a new server's first recall: {body}");
    assert_eq!(body["index"], "warming", "{body}");
    let wanted = Some("REFL-20260301120000-00000017".to_owned());
    assert_eq!(first(&body), wanted, "{body}");

    let started = Instant::now();
    loop {
        let (status, header, body) = index_of("/readyz", None);
        assert_eq!((status, &body["status"]), (200, &json!("ready")), "{body}");
        assert_eq!(
            body["recall_index"].as_str(),
            Some(header.as_str()),
            "{body}"
        );
        if header == "ready" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the index was not ready within 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, header, body) = index_of("/v1/recall", Some(&query));
    assert_eq!((status, header.as_str()), (200, "ready"), "{body}");
    assert_eq!(first(&body), wanted, "{body}");
}
