//! The reliability suite's integrity cases (docs/reliability.md): writes that are
//! read-modify-writes under concurrency, write amplification, links under `skills/`, and
//! validation that every door shares. Real `lore` processes on real SQLite files (and on the
//! PostgreSQL test server when `LORE_TEST_POSTGRES_URL` is set), real HTTP on loopback.
//!
//! Each test prints its figures (`reliability: ...`); run with `--nocapture` to see them.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const SKILL: &str = "sup/t";

/// Appends each client sends, by form.
/// A core budget the long form's 300 appends fit in: past the default's 500 tokens an append is
/// refused (a 422 naming the budget), which is right but would leave the race untested.
const CORE_ROOM: [&str; 2] = ["--set", "memory.core_budget=20000"];

fn appends_per_client() -> usize {
    if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        100
    } else {
        25
    }
}

/// `lore` in `dir`, a project (its `.lore/` made if missing, as `lore init` would).
fn lore(dir: &Path) -> Command {
    std::fs::create_dir_all(dir.join(".lore")).unwrap();
    let mut cmd = crate::common::lore_command();
    cmd.current_dir(dir);
    cmd
}

/// A running `lore serve`, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Self {
        let mut child = lore(dir)
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr = crate::common::served_address(&mut child);
        Self { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `body` with `method` and returns the status with the answer.
fn send(addr: SocketAddr, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let url = format!("http://{addr}{path}");
    let request = match method {
        "PUT" => agent.put(&url),
        "PATCH" => agent.patch(&url),
        _ => agent.post(&url),
    };
    let mut answer = request
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let mut answer = ureq::get(&format!("http://{addr}{path}"))
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Three clients per server append distinct words to one shared block at once; returns the
/// words acknowledged with a 200 and the block's lines afterwards.
fn append_at_once(servers: &[SocketAddr]) -> (BTreeSet<String>, BTreeSet<String>) {
    let per_client = appends_per_client();
    let clients: Vec<(usize, SocketAddr)> =
        (0..3).map(|c| (c, servers[c % servers.len()])).collect();
    let acknowledged: BTreeSet<String> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .map(|&(c, addr)| {
                s.spawn(move || {
                    let mut acked = Vec::new();
                    for n in 0..per_client {
                        let word = format!("w{c}n{n}");
                        let body = json!({"skill": SKILL, "block": "shared", "text": word,
                                          "mode": "append"});
                        let (status, _) = send(addr, "PUT", "/v1/memory/core", &body);
                        if status == 200 {
                            acked.push(word);
                        }
                    }
                    acked
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let (status, core) = get(servers[0], &format!("/v1/memory/core?skill={SKILL}"));
    assert_eq!(status, 200, "{core}");
    let text = core["blocks"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["name"] == "shared"))
        .and_then(|b| b["text"].as_str())
        .unwrap_or_default();
    let lines = text.lines().map(str::to_owned).collect();
    (acknowledged, lines)
}

fn assert_no_append_lost(form: &str, acknowledged: &BTreeSet<String>, lines: &BTreeSet<String>) {
    let lost: Vec<&String> = acknowledged.difference(lines).collect();
    println!(
        "reliability: core appends ({form}): {} acknowledged, {} in the block, {} lost",
        acknowledged.len(),
        lines.len(),
        lost.len()
    );
    assert_eq!(
        acknowledged.len(),
        3 * appends_per_client(),
        "every append is acknowledged"
    );
    assert!(lost.is_empty(), "acknowledged appends lost: {lost:?}");
}

#[test]
fn concurrent_core_appends_on_one_sqlite_server_lose_no_word() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &CORE_ROOM);
    let (acked, lines) = append_at_once(&[server.addr]);
    assert_no_append_lost("one SQLite server", &acked, &lines);
}

#[test]
fn concurrent_core_appends_through_three_servers_on_one_file_lose_no_word() {
    let dir = tempfile::tempdir().unwrap();
    let running: Vec<Server> = (0..3)
        .map(|_| Server::start(dir.path(), &CORE_ROOM))
        .collect();
    let servers: Vec<SocketAddr> = running.iter().map(|s| s.addr).collect();
    let (acked, lines) = append_at_once(&servers);
    assert_no_append_lost("three SQLite servers", &acked, &lines);
}

#[cfg(feature = "postgres")]
#[test]
fn concurrent_core_appends_through_two_servers_on_postgres_lose_no_word() {
    let Some(server) = lore_postgres::testing::test_url() else {
        return;
    };
    let store = lore_postgres::testing::TestStore::new(&server).unwrap();
    let url = lore_postgres::testing::with_schema(&server, store.schema());
    let dir = tempfile::tempdir().unwrap();
    let running: Vec<Server> = (0..2)
        .map(|_| Server::start(dir.path(), &["--store", &url, CORE_ROOM[0], CORE_ROOM[1]]))
        .collect();
    let servers: Vec<SocketAddr> = running.iter().map(|s| s.addr).collect();
    let (acked, lines) = append_at_once(&servers);
    assert_no_append_lost("two PostgreSQL servers", &acked, &lines);
}

/// Lines on one subject that each relate to many before them, as a bulk import sends them:
/// one rule and its opposite, each with a detail of its own so that no two merge. Every line
/// conflicts with every earlier line of the other side, so each new lesson has hundreds of
/// relations to link and audit.
fn similar_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            let lesson = if i % 2 == 0 {
                format!("When a refund is large, escalate to the supervisor at desk {i}")
            } else {
                format!("When a refund is large, never escalate to a supervisor; log case {i}")
            };
            json!({"skill": SKILL, "task": format!("refund ticket {i}"), "lesson": lesson})
                .to_string()
                + "\n"
        })
        .collect()
}

const SHORT_IMPORT_LINES: usize = 300;

/// Lines per import, by form.
fn import_lines() -> usize {
    if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        2000
    } else {
        SHORT_IMPORT_LINES
    }
}

/// Audit rows and the most links any one lesson holds, read straight from the file.
fn amplification(dir: &Path) -> (usize, usize, usize) {
    let conn = rusqlite::Connection::open(dir.join(".lore/lore.db")).unwrap();
    let audit: i64 = conn
        .query_row("SELECT count(*) FROM audit", [], |r| r.get(0))
        .unwrap();
    let bodies: Vec<String> = conn
        .prepare("SELECT body FROM lessons")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let most_links = bodies
        .iter()
        .map(|b| {
            let v: Value = serde_json::from_str(b).unwrap();
            v["links"].as_array().map_or(0, Vec::len)
        })
        .max()
        .unwrap_or(0);
    (usize::try_from(audit).unwrap(), bodies.len(), most_links)
}

/// Each imported lesson writes a bounded number of links and audit entries, however many
/// lessons on its subject came before it (they were n²/2: 400 lines wrote 80,600 audit rows).
fn assert_bounded(door: &str, dir: &Path, n: usize, started: std::time::Instant) {
    let (audit, lessons, most_links) = amplification(dir);
    println!(
        "reliability: import amplification ({door}): {n} similar lines, {lessons} lessons, \
         {audit} audit rows ({:.1} a line), at most {most_links} links on a lesson, {:.1} s",
        audit as f64 / n as f64,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(lessons, n, "each line is its own lesson");
    assert!(
        most_links >= lore_engine::MAX_RELATED,
        "the lines relate, so the case reaches the linking it bounds: {most_links} links at most"
    );
    let per_line = 2 + lore_engine::MAX_RELATED;
    assert!(
        audit <= per_line * n + 10,
        "{audit} audit rows for {n} lines; at most {per_line} a line"
    );
    assert!(
        most_links <= lore_engine::MAX_LINKS_HELD,
        "a lesson holds {most_links} links"
    );
}

#[test]
fn lore_learn_of_many_similar_lines_writes_bounded_links_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let n = import_lines();
    std::fs::write(dir.path().join("lines.jsonl"), similar_lines(n)).unwrap();
    let started = std::time::Instant::now();
    let out = lore(dir.path())
        .args(["learn", "--jsonl", "lines.jsonl"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_bounded("lore learn", dir.path(), n, started);
}

#[test]
fn rest_import_of_many_similar_lines_writes_bounded_links_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    // One request must finish inside the server's 30 s timeout, which the long form's 2,000
    // lines overran on a loaded debug build (72 s through `lore learn`); the bound per line is
    // what this case checks, and `lore learn` above takes the long form's count.
    let n = import_lines().min(SHORT_IMPORT_LINES);
    let started = std::time::Instant::now();
    let mut answer = ureq::post(&format!("http://{}/v1/lessons/import", server.addr))
        .config()
        .http_status_as_error(false)
        .build()
        .header("content-type", "application/x-ndjson")
        .send(similar_lines(n))
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.body_mut().read_to_string().unwrap_or_default();
    assert_eq!(status, 201, "{text}");
    assert_bounded("POST /v1/lessons/import", dir.path(), n, started);
}

/// Each bad input through each door: a 422 (or a failed command) naming the field, and the
/// store unchanged; afterwards the store exports and imports into a fresh one.
#[test]
fn every_door_refuses_what_an_import_would_refuse_and_the_export_imports_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let addr = server.addr;
    let (status, learned) = send(
        addr,
        "POST",
        "/v1/lessons/import",
        &json!([{"skill": SKILL, "task": "refund a ticket",
                 "lesson": "When a refund exceeds 100 dollars, escalate to a supervisor"}]),
    );
    assert_eq!(status, 201, "{learned}");
    let lesson = learned["results"][0]["lesson"].as_str().unwrap().to_owned();
    let (status, run) = send(
        addr,
        "POST",
        "/v1/executions",
        &json!({"skill": SKILL, "input": {"t": 1}, "output": {"p": "normal"}}),
    );
    assert_eq!(status, 201, "{run}");
    let run = run["id"].as_str().unwrap().to_owned();
    let many: Vec<String> = (0..5000).map(|i| format!("t{i}")).collect();
    let nul = "bad\u{0}text";
    let cases: Vec<(&str, String, Value)> = vec![
        (
            "PATCH",
            format!("/v1/lessons/{lesson}"),
            json!({"tags": many}),
        ),
        (
            "PATCH",
            format!("/v1/lessons/{lesson}"),
            json!({"rule": "x".repeat(70_000)}),
        ),
        (
            "PATCH",
            format!("/v1/lessons/{lesson}"),
            json!({"rule": nul}),
        ),
        (
            "PATCH",
            format!("/v1/lessons/{lesson}"),
            json!({"tags": [nul]}),
        ),
        (
            "PATCH",
            format!("/v1/lessons/{lesson}"),
            json!({"rule": "Escalate.", "reason": nul}),
        ),
        (
            "POST",
            format!("/v1/lessons/{lesson}/retire"),
            json!({"reason": nul}),
        ),
        (
            "PUT",
            "/v1/memory/core".into(),
            json!({"skill": SKILL, "block": "b", "text": nul}),
        ),
        (
            "POST",
            "/v1/memory/archival".into(),
            json!({"skill": SKILL, "text": nul}),
        ),
        (
            "POST",
            "/v1/memory/archival".into(),
            json!({"skill": SKILL, "text": "t", "tags": many}),
        ),
        (
            "POST",
            "/v1/memory/recall".into(),
            json!({"skill": SKILL, "session": nul, "speaker": "user", "text": "hi"}),
        ),
        (
            "POST",
            format!("/v1/executions/{run}/signals"),
            json!({"channel": "hard_failure", "message": nul}),
        ),
        (
            "POST",
            format!("/v1/executions/{run}/signals"),
            json!({"channel": "hard_failure", "message": "m", "tags": many}),
        ),
        (
            "POST",
            "/v1/decisions".into(),
            json!({"skill": SKILL, "situation": "s", "action": "a", "rationale": "r",
                "resolves": "../../x"}),
        ),
        (
            "POST",
            "/v1/episodes".into(),
            json!({"session": "s1", "skill": SKILL, "task": nul, "decisions": [], "events": []}),
        ),
    ];
    let mut refused = 0;
    for (method, path, body) in &cases {
        let (status, answer) = send(addr, method, path, body);
        assert!(
            (400..500).contains(&status),
            "{method} {path} {}: {status} {answer}",
            body.to_string().chars().take(120).collect::<String>()
        );
        refused += 1;
    }
    let (_, stored) = get(addr, &format!("/v1/lessons/{lesson}"));
    assert!(
        stored["tags"].as_array().map_or(0, Vec::len) < 64,
        "{stored}"
    );
    assert!(!stored["rule"].as_str().unwrap_or_default().contains('\0'));
    drop(server);
    let cli = lore(dir.path())
        .args(["lessons", "edit", &lesson, "--tags", &many.join(",")])
        .output()
        .unwrap();
    assert!(
        !cli.status.success(),
        "lore lessons edit --tags took 5000 tags"
    );
    refused += 1;
    let export = lore(dir.path())
        .args(["export", "--jsonl", "all.jsonl"])
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let fresh = tempfile::tempdir().unwrap();
    let import = lore(fresh.path())
        .args(["import", "--jsonl"])
        .arg(dir.path().join("all.jsonl"))
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "{}",
        String::from_utf8_lossy(&import.stderr)
    );
    println!(
        "reliability: validation: {refused} bad inputs refused at every door; the export imports again"
    );
}

/// Records a rejected run of the example skill and corrects it; the correction's ID.
fn correct_example(dir: &Path) -> std::process::Output {
    let skill = "support/summarize-ticket";
    let out = lore(dir)
        .args([
            "record",
            skill,
            "--input",
            r#"{"ticket": "EU checkout 500s"}"#,
        ])
        .args([
            "--output",
            r#"{"priority": "normal"}"#,
            "--outcome",
            "rejected",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    lore(dir)
        .args(["correct", skill, "--execution-id", &id, "--correction"])
        .arg("When a ticket reports errors for many customers, priority must be urgent.")
        .output()
        .unwrap()
}

#[test]
fn links_under_skills_that_leave_the_folder_are_never_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim.md");
    std::fs::write(&target, "untouched\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    assert!(lore(dir.path()).arg("init").status().unwrap().success());
    let skill_dir = dir.path().join("skills/support/summarize-ticket");
    let guardrails = skill_dir.join("GUARDRAILS.md");
    let _ = std::fs::remove_file(&guardrails);
    std::os::unix::fs::symlink(&target, &guardrails).unwrap();
    let out = correct_example(dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");

    // A skill folder that is itself a link out of skills/: no tests/ written there.
    let elsewhere = outside.path().join("skill");
    std::fs::remove_file(&guardrails).unwrap();
    std::fs::rename(&skill_dir, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &skill_dir).unwrap();
    let _ = std::fs::remove_dir_all(elsewhere.join("tests"));
    let _ = correct_example(dir.path());
    assert!(
        !elsewhere.join("tests").exists(),
        "tests/ written outside the project"
    );
    assert!(
        !elsewhere.join("GUARDRAILS.md").exists(),
        "guardrail written outside the project"
    );
    println!(
        "reliability: symlinks under skills/: 2 links out of the folder, nothing written through them"
    );
}

#[test]
fn the_decision_list_is_paged_like_every_list() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    for i in 0..3 {
        let body = json!({"skill": SKILL, "situation": format!("s{i}"), "action": "a",
                          "rationale": "r"});
        let (status, answer) = send(server.addr, "POST", "/v1/decisions", &body);
        assert_eq!(status, 201, "{answer}");
    }
    let (status, page) = get(server.addr, "/v1/decisions?limit=2");
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["decisions"].as_array().map(Vec::len), Some(2));
    assert_eq!(page["next_offset"], 2);
    let (status, rest) = get(server.addr, "/v1/decisions?limit=2&offset=2");
    assert_eq!(status, 200, "{rest}");
    assert_eq!(rest["decisions"].as_array().map(Vec::len), Some(1));
    assert_eq!(get(server.addr, "/v1/decisions?limit=0").0, 422);
}

/// Sets the soft file-size limit of process `pid` (`unlimited`, or bytes).
fn limit_file_size(pid: u32, soft: &str) {
    let out = Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--fsize={soft}:")])
        .output()
        .expect("prlimit (util-linux) is installed");
    assert!(
        out.status.success(),
        "prlimit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ready(addr: SocketAddr) -> (u16, Value) {
    get(addr, "/readyz")
}

/// A store that cannot grow (the server's file-size limit lowered to just above its files, as a
/// full disk would leave it): writes answer 507 naming the cause, never a bare 500; `/readyz`
/// answers 503 until a write succeeds again; once room returns, the server recovers without a
/// restart, and every write acknowledged before, during and after is stored in a sound file.
#[test]
fn a_full_store_answers_507_is_not_ready_and_recovers_losing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let addr = server.addr;
    let filler = "x".repeat(16 * 1024);
    let record = |n: usize| {
        send(
            addr,
            "POST",
            "/v1/executions",
            &json!({"skill": SKILL, "input": {"n": n, "pad": filler}, "output": {"ok": true}}),
        )
    };
    let mut acknowledged = Vec::new();
    for n in 0..5 {
        let (status, body) = record(n);
        assert_eq!(status, 201, "{body}");
        acknowledged.push(body["id"].as_str().unwrap().to_owned());
    }
    let db = dir.path().join(".lore/lore.db");
    let largest = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .max()
        .unwrap();
    limit_file_size(server.child.id(), &(largest + 256 * 1024).to_string());
    let mut refusal = None;
    for n in 5..2_000 {
        let (status, body) = record(n);
        match status {
            201 => acknowledged.push(body["id"].as_str().unwrap().to_owned()),
            _ => {
                refusal = Some((status, body));
                break;
            }
        }
    }
    let (status, body) = refusal.expect("the store filled up within 2,000 writes");
    let full_at = acknowledged.len();
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["error"]["code"], "storage_full", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("limit") && message.contains("nothing of this write"),
        "{message}"
    );
    assert!(
        !message.contains(".lore"),
        "the message names no path: {message}"
    );
    let (status, answer) = ready(addr);
    assert_eq!(
        (status, answer["status"].as_str()),
        (503, Some("storage full"))
    );
    let (status, body) = record(9_999);
    assert_eq!(status, 507, "still full: {body}");
    let (status, _) = get(addr, &format!("/v1/executions/{}", acknowledged[0]));
    assert_eq!(status, 200, "reads go on while the store is full");

    limit_file_size(server.child.id(), "unlimited");
    let (status, answer) = ready(addr);
    assert_eq!(
        (status, answer["status"].as_str()),
        (200, Some("ready")),
        "room came back"
    );
    for n in 10_000..10_005 {
        let (status, body) = record(n);
        assert_eq!(status, 201, "after room came back: {body}");
        acknowledged.push(body["id"].as_str().unwrap().to_owned());
    }
    drop(server);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|id| {
            conn.query_row("SELECT 1 FROM executions WHERE id = ?", [id], |_| Ok(()))
                .is_err()
        })
        .collect();
    println!(
        "reliability: storage full: {full_at} writes acknowledged before the store filled, \
         refused with 507 and /readyz 503; ready again when room returned; {} acknowledged in \
         all, {} lost",
        acknowledged.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

/// One tool call over MCP on `addr` (a session opened first); the answer's text. A tool
/// error fails the test: every call here is valid.
fn mcp_call(addr: SocketAddr, tool: &str, arguments: Value) -> String {
    let post = |session: Option<&str>, message: &Value| {
        let mut request = ureq::post(&format!("http://{addr}/mcp?tools=all"))
            .config()
            .http_status_as_error(false)
            .build()
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let mut answer = request.send(message.to_string()).unwrap();
        let session = answer
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = answer.status().as_u16();
        let text = answer.body_mut().read_to_string().unwrap();
        assert!(status < 300, "{message}: {status} {text}");
        (session, text)
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "roundtrip", "version": "1"}}});
    let (session, _) = post(None, &init);
    let session = session.as_deref();
    post(
        session,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}});
    let (_, text) = post(session, &call);
    assert!(!text.contains("\"isError\":true"), "{tool}: {text}");
    text
}

/// The lines of a JSONL export by type, and its lessons by ID.
fn read_export(path: &Path) -> (std::collections::BTreeMap<String, usize>, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut kinds = std::collections::BTreeMap::new();
    let mut lessons = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line).unwrap();
        let kind = value["type"].as_str().unwrap_or("?").to_owned();
        if kind == "lesson" {
            lessons.push(value["record"].clone());
        }
        *kinds.entry(kind).or_insert(0) += 1;
    }
    lessons.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    (kinds, lessons)
}

fn ok(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A store written through every door — REST, MCP and the CLI, records, corrections, lessons
/// learned and edited and reviewed, agent memory of each kind, signals, decisions, knowledge —
/// exports, imports into a fresh store, and exports again with the same lessons and as many
/// records of every kind.
#[test]
fn a_store_written_through_every_door_exports_and_imports_again_with_the_same_lessons() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let addr = server.addr;
    let post = |path: &str, body: Value| {
        let (status, answer) = send(addr, "POST", path, &body);
        assert!((200..300).contains(&status), "{path}: {status} {answer}");
        answer
    };
    // REST.
    let run = post(
        "/v1/executions",
        json!({"skill": SKILL, "input": {"ticket": "refund of 140 dollars"},
               "output": {"action": "refund"}, "outcome": "rejected", "session": "s-rest"}),
    );
    let run = run["id"].as_str().unwrap().to_owned();
    post(
        "/v1/corrections",
        json!({"skill": SKILL, "execution_id": run,
               "correction": "A refund above 100 dollars needs a supervisor's approval first."}),
    );
    post(
        &format!("/v1/executions/{run}/signals"),
        json!({"channel": "hard_failure", "message": "refund refused by the bank"}),
    );
    let learned = post(
        "/v1/lessons/import",
        json!([{"skill": SKILL, "task": "close a ticket",
                "lesson": "Before closing a ticket, confirm the customer's issue is resolved"},
               {"skill": SKILL, "task": "escalate a ticket",
                "lesson": "Escalate a ticket to the on-call engineer after two failed fixes"}]),
    );
    let imported = learned["results"][0]["lesson"].as_str().unwrap().to_owned();
    let retired = learned["results"][1]["lesson"].as_str().unwrap().to_owned();
    let (status, edited) = send(
        addr,
        "PATCH",
        &format!("/v1/lessons/{imported}"),
        &json!({"rule": "Before closing a ticket, confirm with the customer in writing",
                "tags": ["closing", "tickets"], "reason": "sharper"}),
    );
    assert_eq!(status, 200, "{edited}");
    post(
        &format!("/v1/lessons/{retired}/retire"),
        json!({"reason": "the on-call rota changed"}),
    );
    let (status, core) = send(
        addr,
        "PUT",
        "/v1/memory/core",
        &json!({"skill": SKILL, "block": "persona", "text": "Prefers short answers.\r\nUses metric units.",
                "mode": "append"}),
    );
    assert_eq!(status, 200, "{core}");
    post(
        "/v1/memory/archival",
        json!({"skill": SKILL, "text": "The refund desk is open 9 to 5.", "tags": ["desk"]}),
    );
    post(
        "/v1/memory/recall",
        json!({"skill": SKILL, "session": "s-rest", "speaker": "user", "text": "Where is my refund?"}),
    );
    let decision = post(
        "/v1/decisions",
        json!({"skill": SKILL, "situation": "A refund of 140 dollars for a loyal customer",
               "action": "Approve once", "rationale": "Ten years a customer",
               "resolves": run}),
    );
    post(
        "/v1/decisions/review",
        json!({"ids": [decision["id"]], "status": "approved", "reason": "fair"}),
    );
    post(
        "/v1/knowledge/documents",
        json!({"skill": SKILL, "documents": [{"source": "runbooks/refunds.md",
               "text": "# Refunds\n\n## Large refunds\n\nAbove 100 dollars, ask a supervisor.\n"}]}),
    );
    // MCP.
    let recorded = mcp_call(
        addr,
        "record_execution",
        json!({"skill": SKILL, "input": {"ticket": "password reset"}, "output": {"action": "reset"},
               "outcome": "rejected", "session": "s-mcp"}),
    );
    let mcp_run = recorded
        .split("\"structuredContent\":{\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no execution ID in {recorded}"))
        .to_owned();
    mcp_call(
        addr,
        "correct",
        json!({"skill": SKILL, "execution_id": mcp_run,
               "correction": "Verify the account owner's identity before any password reset."}),
    );
    mcp_call(
        addr,
        "core_memory_write",
        json!({"skill": SKILL, "block": "persona", "text": "Works in Lisbon.", "mode": "append"}),
    );
    mcp_call(
        addr,
        "archival_memory_write",
        json!({"skill": SKILL, "text": "Bank refunds take three days.", "tags": ["bank"]}),
    );
    mcp_call(
        addr,
        "conversation_log_write",
        json!({"skill": SKILL, "session": "s-mcp", "speaker": "agent", "text": "Reset sent."}),
    );
    mcp_call(
        addr,
        "record_decision",
        json!({"skill": SKILL, "situation": "A reset asked for by a third party",
               "action": "Refuse", "rationale": "Only the owner may ask"}),
    );
    drop(server);
    // The CLI.
    let cli_run = ok(lore(dir.path())
        .args(["record", SKILL, "--input", r#"{"ticket": "late delivery"}"#])
        .args(["--output", r#"{"action": "wait"}"#, "--outcome", "rejected"])
        .output()
        .unwrap());
    ok(lore(dir.path())
        .args(["correct", SKILL, "--execution-id", &cli_run, "--correction"])
        .arg("When a delivery is over a week late, offer a refund or a resend.")
        .output()
        .unwrap());
    std::fs::write(
        dir.path().join("learn.jsonl"),
        format!(
            "{}\n",
            json!({"skill": SKILL, "task": "answer billing questions",
                   "lesson": "Quote amounts with their currency on every billing answer"})
        ),
    )
    .unwrap();
    ok(lore(dir.path())
        .args(["learn", "--jsonl", "learn.jsonl"])
        .output()
        .unwrap());
    ok(lore(dir.path())
        .args([
            "lessons",
            "edit",
            &imported,
            "--tags",
            "closing,tickets,written",
        ])
        .output()
        .unwrap());

    ok(lore(dir.path())
        .args(["export", "--jsonl", "first.jsonl"])
        .output()
        .unwrap());
    let fresh = tempfile::tempdir().unwrap();
    ok(lore(fresh.path())
        .args(["import", "--jsonl"])
        .arg(dir.path().join("first.jsonl"))
        .output()
        .unwrap());
    ok(lore(fresh.path())
        .args(["export", "--jsonl", "second.jsonl"])
        .output()
        .unwrap());
    let (kinds, lessons) = read_export(&dir.path().join("first.jsonl"));
    let (kinds_again, lessons_again) = read_export(&fresh.path().join("second.jsonl"));
    println!(
        "reliability: round trip: {} lines written through REST, MCP and the CLI ({kinds:?}), \
         {} lessons; imported and exported again: {} lines, {} lessons, {} differ",
        kinds.values().sum::<usize>(),
        lessons.len(),
        kinds_again.values().sum::<usize>(),
        lessons_again.len(),
        lessons
            .iter()
            .zip(&lessons_again)
            .filter(|(a, b)| a != b)
            .count()
    );
    assert!(lessons.len() >= 4, "{lessons:?}");
    for kind in [
        "execution",
        "correction",
        "lesson",
        "error_event",
        "memory",
        "audit",
    ] {
        assert!(
            kinds.contains_key(kind),
            "no {kind} in the export: {kinds:?}"
        );
    }
    assert_eq!(
        lessons_again, lessons,
        "the same lessons after the round trip"
    );
    assert_eq!(kinds_again, kinds, "as many records of every kind");
}
