//! The reliability suite's process half (docs/reliability.md): real `lore`
//! processes on a real SQLite file, killed with SIGKILL while they write, and several writing at
//! once. What is checked is the promise to the caller: every write that was acknowledged (an ID
//! printed by the CLI, a 2xx from the server) is in the store afterwards, no ID is handed out
//! twice, and the file passes `PRAGMA integrity_check`.
//!
//! Sizes come from `LORE_RELIABILITY`: unset (CI's short form, a few seconds) or `long` (the
//! local form, a few minutes). Each test prints its figures (`reliability: ...`); run with
//! `--nocapture` to see them. Timings are random, from a seed that is printed, and can be
//! replayed with `LORE_RELIABILITY_SEED`.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use std::collections::{BTreeSet, HashSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

/// How much each test does, by form.
struct Sizes {
    /// Rounds of CLI writers, each round killing some of them.
    cli_rounds: usize,
    /// `lore record` processes started per round.
    cli_writers: usize,
    /// Times `lore serve` is killed under load.
    server_kills: usize,
    /// Concurrent processes writing one store.
    workers: usize,
    /// Record → correct → review cycles per worker.
    cycles: usize,
}

fn sizes() -> Sizes {
    if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        Sizes {
            cli_rounds: 40,
            cli_writers: 8,
            server_kills: 25,
            workers: 6,
            cycles: 25,
        }
    } else {
        Sizes {
            cli_rounds: 4,
            cli_writers: 4,
            server_kills: 3,
            workers: 3,
            cycles: 4,
        }
    }
}

/// A small xorshift generator: timings need to vary, not to be unpredictable.
struct Rng(u64);

impl Rng {
    fn seeded(test: &str) -> Self {
        let seed = std::env::var("LORE_RELIABILITY_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        println!("reliability: {test} seed {seed}");
        Self(seed | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// `lore` in `dir`, a project (its `.lore/` made if missing, as `lore init` would).
fn lore(dir: &Path) -> Command {
    std::fs::create_dir_all(dir.join(".lore")).unwrap();
    let mut cmd = crate::common::lore_command();
    cmd.current_dir(dir)
        .env_remove("LORE_HOME")
        .env_remove("LORE_SKILLS_DIR")
        .env_remove("LORE_CURATION")
        .env_remove("LORE_HUMAN_CORRECTIONS");
    cmd
}

/// `lore` with review curation for everyone, so a correction's lesson waits for approval.
fn lore_reviewing(dir: &Path) -> Command {
    let mut cmd = lore(dir);
    cmd.env("LORE_CURATION", "review")
        .env("LORE_HUMAN_CORRECTIONS", "review");
    cmd
}

/// Every ID in `table`, read straight from the file after the store passes its integrity check.
fn stored_ids(dir: &Path, table: &str) -> HashSet<String> {
    let conn = rusqlite::Connection::open(dir.join(".lore/lore.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok", "integrity_check after the run");
    let mut stmt = conn.prepare(&format!("SELECT id FROM {table}")).unwrap();
    stmt.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Asserts every acknowledged ID is stored; returns how many were lost (always 0 on success).
fn assert_none_lost(dir: &Path, table: &str, acknowledged: &[String]) -> usize {
    let stored = stored_ids(dir, table);
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(lost.is_empty(), "acknowledged but not in {table}: {lost:?}");
    let unique: BTreeSet<_> = acknowledged.iter().collect();
    assert_eq!(
        unique.len(),
        acknowledged.len(),
        "an ID was handed out twice"
    );
    lost.len()
}

/// A `lore record` writer, started but not waited for.
fn start_record(dir: &Path, n: usize) -> Child {
    lore(dir)
        .args(["record", SKILL, "--outcome", "rejected", "--input"])
        .arg(format!(
            r#"{{"ticket": "writer {n}: checkout returns 500"}}"#
        ))
        .args(["--output", r#"{"priority": "normal"}"#])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn killing_the_cli_mid_write_loses_no_acknowledged_write() {
    let sizes = sizes();
    let mut rng = Rng::seeded("cli-kill");
    let project = Project::new().initialized();
    let dir = project.path();
    let (mut kills, mut acknowledged, mut started) = (0, Vec::new(), 0);
    for round in 0..sizes.cli_rounds {
        let mut children: Vec<Child> = (0..sizes.cli_writers)
            .map(|i| start_record(dir, round * 100 + i))
            .collect();
        started += children.len();
        // One writer of each round dies while it starts, so every run kills some on a fast
        // machine too; the others die at a random point of their write, or finish.
        if children[0].try_wait().unwrap().is_none() {
            children[0].kill().unwrap();
            kills += 1;
        }
        std::thread::sleep(Duration::from_millis(rng.below(120)));
        for child in children.iter_mut().skip(1) {
            // Kill about half, whatever they are doing; a finished one cannot be killed.
            if rng.below(2) == 0 && child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                kills += 1;
            }
        }
        for child in children {
            let out = child.wait_with_output().unwrap();
            let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if !id.is_empty() {
                // Printed, so acknowledged, even if the process was killed right after.
                acknowledged.push(id);
            }
        }
    }
    let lost = assert_none_lost(dir, "executions", &acknowledged);
    println!(
        "reliability: cli-kill started {started}, kills {kills}, acknowledged {}, lost {lost}",
        acknowledged.len()
    );
    assert!(kills > 0 || sizes.cli_rounds < 2, "no process was killed");
}

/// A running `lore serve` and its address.
fn start_server(dir: &Path) -> (Child, SocketAddr) {
    let mut child = lore(dir)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = crate::common::served_address(&mut child);
    (child, addr)
}

/// One `POST /v1/executions`; the new ID when the server answered 201.
fn post_execution(addr: SocketAddr, n: usize) -> Option<String> {
    let body = format!(
        r#"{{"skill": "{SKILL}", "input": {{"ticket": "request {n}"}}, "output": {{"p": "normal"}}}}"#
    );
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!(
        "POST /v1/executions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    if !answer.starts_with("HTTP/1.1 201") {
        return None;
    }
    let json = answer.split("\r\n\r\n").nth(1)?;
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value["id"].as_str().map(str::to_owned)
}

#[test]
fn killing_the_server_under_load_loses_no_acknowledged_write() {
    let sizes = sizes();
    let mut rng = Rng::seeded("server-kill");
    let project = Project::new().initialized();
    let dir = project.path();
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut kills = 0;
    for round in 0..sizes.server_kills {
        let (mut server, addr) = start_server(dir);
        // The kill must land under write load, not during start-up: on a loaded machine the
        // first write alone can take most of the kill window, and a round that acknowledged
        // nothing tests nothing.
        let warmed = std::time::Instant::now();
        let first = loop {
            if let Some(id) = post_execution(addr, round * 10_000 + 9_999) {
                break id;
            }
            assert!(
                warmed.elapsed() < Duration::from_secs(30),
                "the server never acknowledged a write"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        acknowledged.lock().unwrap().push(first);
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (stop, acked, attempts) = (
                    Arc::clone(&stop),
                    Arc::clone(&acknowledged),
                    Arc::clone(&attempts),
                );
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        if let Some(id) = post_execution(addr, round * 10_000 + w * 1000 + n) {
                            acked.lock().unwrap().push(id);
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + rng.below(350)));
        server.kill().unwrap();
        server.wait().unwrap();
        kills += 1;
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            writer.join().unwrap();
        }
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(!acknowledged.is_empty(), "the server acknowledged nothing");
    let lost = assert_none_lost(dir, "executions", &acknowledged);
    println!(
        "reliability: server-kill kills {kills}, requests {}, acknowledged {}, lost {lost}",
        attempts.load(Ordering::Relaxed),
        acknowledged.len()
    );
}

/// What one worker's cycles acknowledged, by table.
#[derive(Default)]
struct Acks {
    executions: Vec<String>,
    corrections: Vec<String>,
    lessons: Vec<String>,
    reviews: usize,
    refused: Vec<String>,
}

/// Runs `lore ARGS --json` and parses its answer; the error text when it failed.
fn json(dir: &Path, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = lore_reviewing(dir)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// One worker: record, correct, approve the lesson, `cycles` times.
fn work(dir: &Path, worker: usize, cycles: usize) -> Acks {
    let mut acks = Acks::default();
    for cycle in 0..cycles {
        let out = lore_reviewing(dir)
            .args(["record", SKILL, "--outcome", "rejected", "--input"])
            .arg(format!(r#"{{"ticket": "worker {worker} cycle {cycle}"}}"#))
            .args(["--output", r#"{"priority": "normal"}"#])
            .output()
            .unwrap();
        let execution = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr);
            acks.refused.push(format!("record: {why}"));
            continue;
        }
        acks.executions.push(execution.clone());
        let text = format!(
            "Worker {worker} cycle {cycle}: when a ticket reports errors for many customers, \
             priority must be urgent."
        );
        let corrected = match json(
            dir,
            &[
                "correct",
                SKILL,
                "--execution-id",
                &execution,
                "--correction",
                &text,
            ],
        ) {
            Ok(v) => v,
            Err(e) => {
                acks.refused.push(format!("correct: {e}"));
                continue;
            }
        };
        let lesson = corrected["lesson"]["id"].as_str().unwrap().to_owned();
        if let Some(c) = corrected["correction"]["id"].as_str() {
            acks.corrections.push(c.to_owned());
        }
        // A near-duplicate correction merges into a lesson another worker made: that lesson
        // was acknowledged (and reviewed) once, by the correction that made it.
        if corrected["curation"]["merged_into"].is_string() {
            continue;
        }
        acks.lessons.push(lesson.clone());
        match json(
            dir,
            &[
                "review",
                "approve",
                &lesson,
                "--reason",
                "load test",
                "--by",
                "rel",
            ],
        ) {
            Ok(_) => acks.reviews += 1,
            Err(e) => acks.refused.push(format!("review approve: {e}")),
        }
    }
    acks
}

#[test]
fn several_processes_writing_one_store_lose_nothing_and_share_no_id() {
    let sizes = sizes();
    let project = Project::new().initialized();
    let dir = project.path().to_owned();
    let started = Instant::now();
    let workers: Vec<_> = (0..sizes.workers)
        .map(|w| {
            let dir = dir.clone();
            let cycles = sizes.cycles;
            std::thread::spawn(move || work(&dir, w, cycles))
        })
        .collect();
    let mut all = Acks::default();
    for worker in workers {
        let acks = worker.join().unwrap();
        all.executions.extend(acks.executions);
        all.corrections.extend(acks.corrections);
        all.lessons.extend(acks.lessons);
        all.reviews += acks.reviews;
        all.refused.extend(acks.refused);
    }
    // A write refused with a conflict was not acknowledged, so it is not lost; it is counted.
    // Any other refusal is a failure.
    let (conflicts, other): (Vec<_>, Vec<_>) = all
        .refused
        .iter()
        .partition(|why| why.contains("conflict:"));
    assert!(other.is_empty(), "refused under contention: {other:?}");
    if !conflicts.is_empty() {
        println!("reliability: concurrent refused with a conflict: {conflicts:?}");
    }
    let mut lost = assert_none_lost(&dir, "executions", &all.executions);
    lost += assert_none_lost(&dir, "corrections", &all.corrections);
    lost += assert_none_lost(&dir, "lessons", &all.lessons);
    // Every approval stuck: each lesson is approved.
    let conn = rusqlite::Connection::open(dir.join(".lore/lore.db")).unwrap();
    let approved: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM lessons WHERE status = 'approved'",
            [],
            |r| r.get(0),
        )
        .unwrap_or(-1);
    println!(
        "reliability: concurrent workers {}, executions {}, corrections {}, lessons {}, \
         reviews {}, approved {approved}, refused (conflict) {}, lost {lost}, duplicates 0, in {:.1} s",
        sizes.workers,
        all.executions.len(),
        all.corrections.len(),
        all.lessons.len(),
        all.reviews,
        conflicts.len(),
        started.elapsed().as_secs_f64()
    );
}
