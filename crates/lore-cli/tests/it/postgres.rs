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

const LORE: &str = env!("CARGO_BIN_EXE_lore");

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
        let mut child = Command::new(LORE)
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
        let url = format!("http://{}{path}", self.addr);
        let mut answer = ureq::post(&url)
            .config()
            .http_status_as_error(false)
            .build()
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        let status = answer.status();
        let value: Value =
            serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap();
        assert!(status.is_success(), "POST {path} {body}: {status} {value}");
        value
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

/// A lesson approved through server A is recalled through server B, whose recall index was
/// built before the lesson existed, on B's first recall after the approval.
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
    let password = server
        .split_once("://")
        .and_then(|(_, rest)| rest.rsplit_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, p)| p.to_owned())
        .unwrap();
    for s in [&a, &b] {
        assert!(s.banner.contains("Store: postgres://"), "{}", s.banner);
        assert!(!s.banner.contains(&password), "{}", s.banner);
    }

    let skill = "support/triage";
    let query = "refund invoices currency";
    assert!(b.recall(query, skill).is_empty(), "B's index starts empty");
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
}
