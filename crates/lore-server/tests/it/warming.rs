//! A new server over a store of thousands of lessons, whose recall index builds in the
//! background, over a real socket: it answers recall from its first request (from the store's
//! own search, saying `warming`), `/readyz` says whether the index is warm, and a lesson
//! recorded while the index builds is found once it is ready.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{Home, SKILL};
use lore_core::id::LessonId;
use lore_core::model::Lesson;
use lore_core::ports::store::{OnDuplicate, Record, Store};
use lore_engine::{Engine, EngineConfig, IndexOrigin};
use lore_server::auth::Access;
use lore_server::{Limits, app, serve};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Past the size where the index builds an HNSW graph, so the build is the real one: a few
/// seconds in a debug build.
const LESSONS: usize = 5000;

/// How long the build may take before the test gives up; the assertions are on states, this
/// only bounds a hang.
const BUILD_WITHIN: Duration = Duration::from_secs(600);

fn lesson(n: usize) -> Lesson {
    let at = "2026-03-01T12:00:00Z";
    serde_json::from_value(json!({
        "id": LessonId::generate(chrono::Utc::now()),
        "skill": SKILL,
        "mistake": format!("mistake {n}"),
        "root_cause": "cause",
        "rule": format!("check field f{n} of record r{n} before sending"),
        "applies_when": "always",
        "tiers": {"summary": format!("check f{n}"), "condition": "", "action": "", "rationale": ""},
        "confidence": 0.8,
        "source": "manual",
        "status": "approved",
        "created_at": at,
        "updated_at": at,
    }))
    .unwrap()
}

struct Running {
    home: Home,
    store: Arc<SqliteStore>,
    addr: SocketAddr,
    shutdown: CancellationToken,
    _runtime: tokio::runtime::Runtime,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A server over a real SQLite file holding [`LESSONS`] lessons, whose Engine builds its recall
/// index in the background; none is saved beside the store, so it builds from scratch.
fn start() -> (Running, Vec<Lesson>) {
    let home = Home::new();
    let lessons: Vec<Lesson> = (0..LESSONS).map(lesson).collect();
    let records: Vec<Record> = lessons.iter().cloned().map(Record::Lesson).collect();
    let store =
        Arc::new(SqliteStore::open(home.lore_home().join("lore.db"), OpenMode::Existing).unwrap());
    store.write(&records, OnDuplicate::Fail).unwrap();
    let engine = Engine::new(store.clone(), EngineConfig::default()).with_background_index();
    let home = Home {
        engine: Arc::new(engine),
        ..home
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
        Arc::clone(&home.engine),
        Limits::default(),
        Access::Open,
        shutdown.clone(),
    );
    let token = shutdown.clone();
    runtime.spawn(async move { serve(listener, router, token).await.unwrap() });
    let running = Running {
        home,
        store,
        addr,
        shutdown,
        _runtime: runtime,
    };
    (running, lessons)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent()
}

/// Status, the `lore-recall-index` header and the body.
fn call(addr: SocketAddr, method: &str, path: &str, body: Option<Value>) -> (u16, String, Value) {
    let url = format!("http://{addr}{path}");
    let response = match (method, body) {
        ("GET", _) => agent().get(&url).call(),
        (_, Some(body)) => agent()
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string()),
        (_, None) => agent().post(&url).send_empty(),
    };
    let mut response = response.unwrap();
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("lore-recall-index")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let text = response.body_mut().read_to_string().unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, header, body)
}

fn recalled_ids(body: &Value) -> Vec<String> {
    body["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_new_server_answers_while_its_index_builds_and_loses_no_write() {
    let (server, lessons) = start();
    let addr = server.addr;

    // Nothing has started the build yet: the server can serve, the index is not warm.
    let (status, header, body) = call(addr, "GET", "/readyz", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ready", "{body}");
    assert_eq!(body["recall_index"], "warming", "{body}");
    assert_eq!(header, "warming");

    // The first recall starts the build and answers at once from the store's search.
    let wanted = &lessons[17];
    let query = json!({"query": "check field f17 of record r17", "skill": SKILL, "explain": true});
    let (status, header, body) = call(addr, "POST", "/v1/recall", Some(query.clone()));
    assert_eq!(status, 200, "{body}");
    assert_eq!(header, "warming", "{body}");
    assert_eq!(body["index"], "warming", "{body}");
    assert_eq!(
        recalled_ids(&body).first().map(String::as_str),
        Some(wanted.id.as_str()),
        "{body}"
    );
    assert!(!body["explain"].as_array().unwrap().is_empty(), "{body}");

    // A lesson recorded now, while the index builds, is stored at once and indexed later.
    let line = json!({
        "skill": SKILL,
        "task": "sending the quarterly zanzibar export",
        "lesson": "attach the quokka manifest to every zanzibar export",
    });
    let (status, _, report) = call(addr, "POST", "/v1/lessons/import", Some(line));
    assert_eq!(status, 201, "{report}");

    // Ready once the build is done; the server answered every probe meanwhile.
    let started = Instant::now();
    loop {
        let (status, header, body) = call(addr, "GET", "/readyz", None);
        assert_eq!((status, &body["status"]), (200, &json!("ready")), "{body}");
        assert_eq!(body["recall_index"].as_str(), Some(header.as_str()));
        if header == "ready" {
            break;
        }
        assert!(
            started.elapsed() < BUILD_WITHIN,
            "the index was not ready within {BUILD_WITHIN:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let info = server.home.engine.recall_index_info().unwrap();
    assert_eq!(info.origin, IndexOrigin::Built);
    assert!(info.graph, "{info:?}");

    let query = json!({"query": "quokka manifest for the zanzibar export", "skill": SKILL});
    let (status, header, body) = call(addr, "POST", "/v1/recall", Some(query));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (header.as_str(), &body["index"]),
        ("ready", &json!("ready"))
    );
    let found = body["lessons"].as_array().unwrap();
    let first = &found.first().unwrap_or_else(|| panic!("{body}"))["id"];
    let stored = server
        .store
        .lesson(&LessonId::parse(first.as_str().unwrap()).unwrap())
        .unwrap()
        .unwrap();
    assert!(stored.rule.contains("quokka"), "{stored:?}");
    // Every lesson the store had is in the index, and the one recorded during the build.
    let info = server.home.engine.recall_index_info().unwrap();
    assert_eq!(info.lessons, LESSONS + 1, "{info:?}");

    // The full index answers the first query as the store's search did.
    let (_, header, body) = call(addr, "POST", "/v1/recall", Some(query_for(wanted)));
    assert_eq!(header, "ready");
    assert_eq!(recalled_ids(&body).first(), Some(&wanted.id.to_string()));
}

fn query_for(lesson: &Lesson) -> Value {
    json!({"query": lesson.rule, "skill": SKILL})
}
