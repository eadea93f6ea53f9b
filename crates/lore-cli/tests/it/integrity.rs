//! The reliability suite's integrity cases (issue 31; docs/reliability.md): writes that are
//! read-modify-writes under concurrency, write amplification, links under `skills/`, and
//! validation that every door shares. Real `lore` processes on real SQLite files (and on the
//! PostgreSQL test server when `LORE_TEST_POSTGRES_URL` is set), real HTTP on loopback.
//!
//! Each test prints its figures (`reliability: ...`); run with `--nocapture` to see them.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

const SKILL: &str = "sup/t";

/// Appends each client sends, by form.
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
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        stdout.read_line(&mut banner).unwrap();
        let addr = banner
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {banner:?}"))
            .trim_end_matches('/')
            .parse()
            .unwrap();
        // Keep reading so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
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
    let server = Server::start(dir.path(), &[]);
    let (acked, lines) = append_at_once(&[server.addr]);
    assert_no_append_lost("one SQLite server", &acked, &lines);
}

#[test]
fn concurrent_core_appends_through_three_servers_on_one_file_lose_no_word() {
    let dir = tempfile::tempdir().unwrap();
    let running: Vec<Server> = (0..3).map(|_| Server::start(dir.path(), &[])).collect();
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
        .map(|_| Server::start(dir.path(), &["--store", &url]))
        .collect();
    let servers: Vec<SocketAddr> = running.iter().map(|s| s.addr).collect();
    let (acked, lines) = append_at_once(&servers);
    assert_no_append_lost("two PostgreSQL servers", &acked, &lines);
}

/// Lines on one subject, each a near-duplicate of the others, as a bulk import sends them.
fn similar_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            json!({"skill": SKILL, "task": format!("refund ticket {i}"),
                   "lesson": format!("When a refund exceeds {i} dollars, escalate to a supervisor variant {i}")})
            .to_string()
                + "\n"
        })
        .collect()
}

/// Lines per import, by form.
fn import_lines() -> usize {
    if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        2000
    } else {
        300
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
    let n = import_lines();
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
