//! The REST API through `Router::oneshot` (no socket), plus one smoke test over loopback.

use std::time::Duration;

use crate::common::{Home, SKILL};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_server::{Access, Limits, rest_app};
use serde_json::{Value, json};
use tower::ServiceExt;

fn app(home: &Home) -> Router {
    rest_app(home.engine.clone(), Limits::default(), Access::Open)
}

async fn send(app: &Router, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    let body = match body {
        Some(v) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(v.to_string())
        }
        None => Body::empty(),
    };
    raw(app, req.body(body).unwrap()).await
}

async fn raw(app: &Router, req: Request<Body>) -> (StatusCode, Value) {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    (status, value)
}

async fn record(app: &Router, skill: &str, outcome: &str) -> String {
    let (status, body) = send(
        app,
        Method::POST,
        "/v1/executions",
        Some(json!({
            "skill": skill,
            "input": {"ticket": "Checkout returns 500 for every EU customer"},
            "output": {"summary": "A checkout problem.", "priority": "normal"},
            "outcome": outcome,
        })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

const CORRECTION: &str =
    "When a ticket reports errors for many customers, priority must be urgent.";

async fn correct(app: &Router, id: &str) -> Value {
    let (status, body) = send(
        app,
        Method::POST,
        "/v1/corrections",
        Some(json!({"skill": SKILL, "execution_id": id, "text": CORRECTION})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

#[tokio::test]
async fn executions_are_recorded_read_back_and_paged() {
    let home = Home::new();
    let app = app(&home);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(record(&app, SKILL, "rejected").await);
    }
    record(&app, "hr/screen", "success").await;

    let (status, got) = send(
        &app,
        Method::GET,
        &format!("/v1/executions/{}", ids[1]),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["id"], ids[1]);
    assert_eq!(got["outcome"], "rejected");

    let uri = format!("/v1/executions?skill={SKILL}&limit=2");
    let (_, first) = send(&app, Method::GET, &uri, None).await;
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["items"][0]["id"], ids[0]);
    assert_eq!(first["next_offset"], 2);
    let (_, second) = send(&app, Method::GET, &format!("{uri}&offset=2"), None).await;
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["id"], ids[2]);
    assert_eq!(second["next_offset"], Value::Null);

    let (_, all) = send(&app, Method::GET, "/v1/executions", None).await;
    assert_eq!(all["items"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_correction_becomes_a_lesson_that_reaches_the_prompt_and_search() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "rejected").await;
    let outcome = correct(&app, &id).await;
    let lesson = &outcome["lesson"];
    assert_eq!(lesson["status"], "approved");
    assert!(
        outcome["guardrail"]
            .as_str()
            .unwrap()
            .ends_with("GUARDRAILS.md")
    );
    let lesson_id = lesson["id"].as_str().unwrap();

    // The regression test is written beside the skill, as `lore correct` writes it.
    let test = &outcome["regression_test"];
    let test_id = test["id"].as_str().unwrap();
    assert!(test["assertions"].as_u64().unwrap() >= 1, "{test}");
    let tests = home.dir.path().join("skills").join(SKILL).join("tests");
    let cases = std::fs::read_to_string(tests.join("lore.jsonl")).unwrap();
    assert!(
        cases.contains(test_id) && cases.contains(lesson_id),
        "{cases}"
    );
    let promptfoo = std::fs::read_to_string(tests.join("promptfoo.yaml")).unwrap();
    assert!(promptfoo.contains("priority must be urgent"), "{promptfoo}");
    assert!(
        !test
            .to_string()
            .contains(&home.dir.path().display().to_string())
    );

    let uri = format!("/v1/skills/{SKILL}/prompt");
    let (status, prompt) = send(&app, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{prompt}");
    assert!(
        prompt["text"]
            .as_str()
            .unwrap()
            .contains("priority must be urgent")
    );
    assert_eq!(prompt["lessons"], json!([lesson_id]));

    let (status, found) = send(&app, Method::GET, "/v1/search?q=urgent%20priority", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == lesson_id),
        "{found}"
    );
    // The search words are `query` on every door; `q` stays for callers written before.
    let (status, by_query) = send(
        &app,
        Method::GET,
        "/v1/search?query=urgent%20priority",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{by_query}");
    assert_eq!(by_query["hits"], found["hits"]);

    let (status, shown) = send(&app, Method::GET, &format!("/v1/lessons/{lesson_id}"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        shown["lesson"]["correction_id"],
        outcome["correction"]["id"]
    );
    // Created, then linked to the regression test its correction wrote.
    let audit = shown["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 2, "{shown}");
    assert!(
        audit[1]["reason"]
            .as_str()
            .unwrap()
            .contains("regression test")
    );

    let (_, status_body) = send(&app, Method::GET, "/v1/status", None).await;
    assert_eq!(status_body["counts"]["lessons"], 1);
    assert_eq!(status_body["counts"]["corrections"], 1);
}

#[tokio::test]
async fn lessons_are_listed_edited_and_retired_with_an_audit_trail() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "rejected").await;
    let lesson_id = correct(&app, &id).await["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("/v1/lessons/{lesson_id}");

    let (status, edited) = send(
        &app,
        Method::PATCH,
        &uri,
        Some(json!({"rule": "Mark outages that hit many customers as urgent.", "confidence": 0.9, "reason": "clearer"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(
        edited["rule"],
        "Mark outages that hit many customers as urgent."
    );

    let (_, approved) = send(&app, Method::GET, "/v1/lessons?status=approved,trial", None).await;
    assert_eq!(approved["items"].as_array().unwrap().len(), 1);

    let retire = format!("{uri}/retire");
    let (status, retired) = send(
        &app,
        Method::POST,
        &retire,
        Some(json!({"reason": "wrong"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{retired}");
    assert_eq!(retired["status"], "archived");

    let (_, approved) = send(&app, Method::GET, "/v1/lessons?status=approved", None).await;
    assert_eq!(approved["items"], json!([]));
    let (_, prompt) = send(
        &app,
        Method::GET,
        &format!("/v1/skills/{SKILL}/prompt"),
        None,
    )
    .await;
    assert_eq!(
        prompt["lessons"],
        json!([]),
        "a retired lesson reached the prompt"
    );
    assert!(!prompt["text"].as_str().unwrap().contains(&lesson_id));
    let (_, shown) = send(&app, Method::GET, &uri, None).await;
    let audit = shown["audit"].as_array().unwrap();
    // Created, linked to its regression test, edited, retired.
    assert_eq!(audit.len(), 4, "{shown}");
    assert_eq!(
        audit[2]["actor"], "anonymous",
        "the server names its principal"
    );
    assert_eq!(audit[3]["to"], "archived");
}

#[tokio::test]
async fn reads_answer_errors_with_a_stable_code() {
    let home = Home::new();
    let app = app(&home);
    let cases = [
        (
            "/v1/executions/EXEC-20260101000000-AAAAAAAA",
            404,
            "not_found",
        ),
        ("/v1/lessons/REFL-404", 404, "not_found"),
        ("/v1/lessons/bad%20id", 422, "invalid"),
        ("/v1/executions?limit=0", 422, "invalid"),
        ("/v1/executions?limit=501", 422, "invalid"),
        ("/v1/executions?limit=ten", 422, "invalid"),
        ("/v1/executions?skill=../etc", 422, "invalid"),
        ("/v1/executions?colour=red", 422, "invalid"),
        ("/v1/lessons?status=approved,maybe", 422, "invalid"),
        ("/v1/search", 422, "invalid"),
        ("/v1/search?q=x&limit=0", 422, "invalid"),
        ("/v1/skills/support/no-such-skill/prompt", 404, "not_found"),
        ("/v1/skills/support/..hidden/prompt", 422, "invalid"),
        ("/v1/nothing-here", 404, "not_found"),
    ];
    for (uri, status, code) in cases {
        let (got, body) = send(&app, Method::GET, uri, None).await;
        assert_eq!(got.as_u16(), status, "{uri}: {body}");
        assert_eq!(body["error"]["code"], code, "{uri}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{uri}"
        );
    }
}

/// Every write endpoint refuses bad input with a 4xx, and the store is exactly as it was.
#[tokio::test]
async fn bad_writes_are_refused_and_change_nothing() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "rejected").await;
    let other = record(&app, "hr/screen", "rejected").await;
    let lesson = correct(&app, &id).await["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = home.snapshot();
    let tests_file = home
        .dir
        .path()
        .join("skills")
        .join(SKILL)
        .join("tests/lore.jsonl");
    let tests_before = std::fs::read_to_string(&tests_file).unwrap();

    let exec = |v: Value| (Method::POST, "/v1/executions".to_owned(), v);
    let corr = |v: Value| (Method::POST, "/v1/corrections".to_owned(), v);
    let edit = |v: Value| (Method::PATCH, format!("/v1/lessons/{lesson}"), v);
    let good = json!({"skill": SKILL, "input": {}, "output": {}});
    let with = |base: &Value, k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let cases: Vec<((Method, String, Value), u16, &str)> = vec![
        (exec(json!({"skill": SKILL, "input": {}})), 422, "invalid"),
        (
            exec(with(&good, "skill", json!("../etc/passwd"))),
            422,
            "invalid",
        ),
        (
            exec(with(&good, "skill", json!("nodomain"))),
            422,
            "invalid",
        ),
        (exec(with(&good, "outcome", json!("great"))), 422, "invalid"),
        (exec(with(&good, "cost_usd", json!(-1.0))), 422, "invalid"),
        (exec(with(&good, "latency_ms", json!(-5))), 422, "invalid"),
        (exec(with(&good, "colour", json!("red"))), 422, "invalid"),
        (exec(json!([1, 2])), 422, "invalid"),
        (
            corr(json!({"skill": SKILL, "execution_id": id, "text": "   "})),
            422,
            "invalid",
        ),
        (
            corr(json!({"skill": SKILL, "execution_id": other, "text": "x"})),
            422,
            "invalid",
        ),
        (
            corr(json!({"skill": SKILL, "execution_id": "EXEC-1 2", "text": "x"})),
            422,
            "invalid",
        ),
        (
            corr(
                json!({"skill": SKILL, "execution_id": "EXEC-20200101000000-AAAAAAAA", "text": "x"}),
            ),
            404,
            "not_found",
        ),
        (
            corr(json!({"skill": SKILL, "execution_id": id})),
            422,
            "invalid",
        ),
        (edit(json!({})), 422, "invalid"),
        (edit(json!({"reason": "nothing else"})), 422, "invalid"),
        (edit(json!({"rule": "  "})), 422, "invalid"),
        (edit(json!({"confidence": 1.5})), 422, "invalid"),
        (edit(json!({"confidence": "high"})), 422, "invalid"),
        (
            edit(json!({"rules": "typo in the field name"})),
            422,
            "invalid",
        ),
        (
            (
                Method::PATCH,
                "/v1/lessons/REFL-404".into(),
                json!({"rule": "x"}),
            ),
            404,
            "not_found",
        ),
        (
            (
                Method::POST,
                "/v1/lessons/REFL-404/retire".into(),
                json!({}),
            ),
            404,
            "not_found",
        ),
        (
            (
                Method::POST,
                format!("/v1/lessons/{lesson}/retire"),
                json!({"why": "x"}),
            ),
            422,
            "invalid",
        ),
    ];
    for ((method, uri, body), status, code) in cases {
        let shown = format!("{method} {uri} {body}");
        let (got, answer) = send(&app, method, &uri, Some(body)).await;
        assert_eq!(got.as_u16(), status, "{shown}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
    }
    for uri in ["/v1/executions", "/v1/corrections"] {
        let syntax = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{\"skill\": "))
            .unwrap();
        let (got, answer) = raw(&app, syntax).await;
        assert_eq!(
            (got.as_u16(), &answer["error"]["code"]),
            (400, &json!("bad_request"))
        );
        let text = Request::post(uri).body(Body::from("skill=a/b")).unwrap();
        let (got, answer) = raw(&app, text).await;
        assert_eq!(got.as_u16(), 415, "{answer}");
        assert_eq!(answer["error"]["code"], "unsupported_media_type");
    }
    assert_eq!(
        home.snapshot(),
        before,
        "a refused request changed the store"
    );
    assert_eq!(
        std::fs::read_to_string(&tests_file).unwrap(),
        tests_before,
        "a refused correction wrote a regression test"
    );
}

#[tokio::test]
async fn signals_are_fingerprinted_listed_and_bad_ones_refused() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "failure").await;
    let uri = format!("/v1/executions/{id}/signals");
    let (status, made) = send(
        &app,
        Method::POST,
        &uri,
        Some(json!({"channel": "hard_failure", "message": "unknown column 'x' at line 3"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["fingerprint"], "unknown column <str> at line <num>");
    assert_eq!(made["execution_id"], id.as_str());

    let before = home.snapshot();
    let bad = [
        (json!({"channel": "meltdown", "message": "x"}), 422),
        (json!({"channel": "hard_failure"}), 422),
        (json!({"channel": "progress"}), 422),
        (json!({"channel": "efficiency", "value": -1}), 422),
        (
            json!({"channel": "hard_failure", "message": "x", "tags": ["Bad Tag"]}),
            422,
        ),
        (
            json!({"channel": "hard_failure", "message": "x", "extra": 1}),
            422,
        ),
    ];
    for (body, expected) in bad {
        let (status, answer) = send(&app, Method::POST, &uri, Some(body.clone())).await;
        assert_eq!(status.as_u16(), expected, "{body}: {answer}");
        assert!(answer["error"]["code"].is_string(), "{answer}");
    }
    let (status, _) = send(
        &app,
        Method::POST,
        "/v1/executions/EXEC-20260101000000-AAAAAAAA/signals",
        Some(json!({"channel": "hard_failure", "message": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        home.snapshot(),
        before,
        "a refused signal changed the store"
    );

    let (status, listed) = send(&app, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed, json!({"items": [made], "next_offset": null}));

    // Pages, oldest first, holding only this execution's signals.
    let other = record(&app, SKILL, "failure").await;
    let other_uri = format!("/v1/executions/{other}/signals");
    let progress = json!({"channel": "progress", "value": 0.5});
    send(&app, Method::POST, &other_uri, Some(progress.clone())).await;
    let mut ids = vec![made["id"].clone()];
    for _ in 0..2 {
        let (_, more) = send(&app, Method::POST, &uri, Some(progress.clone())).await;
        ids.push(more["id"].clone());
    }
    let (_, first) = send(&app, Method::GET, &format!("{uri}?limit=2"), None).await;
    let (_, rest) = send(&app, Method::GET, &format!("{uri}?limit=2&offset=2"), None).await;
    let page_ids = |page: &Value| -> Vec<Value> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].clone())
            .collect()
    };
    assert_eq!(page_ids(&first), ids[..2]);
    assert_eq!(first["next_offset"], 2);
    assert_eq!(page_ids(&rest), ids[2..]);
    assert_eq!(rest["next_offset"], Value::Null);
    let (status, _) = send(&app, Method::GET, &format!("{uri}?limit=0"), None).await;
    assert_eq!(status.as_u16(), 422);
}

#[tokio::test]
async fn agents_keep_core_archival_and_recall_memory() {
    let home = Home::new();
    let app = app(&home);
    let core = json!({"skill": SKILL, "block": "user", "text": "Ana leads EU checkout."});
    let (status, body) = send(&app, Method::PUT, "/v1/memory/core", Some(core)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let append =
        json!({"skill": SKILL, "block": "user", "text": "Outages are urgent.", "mode": "append"});
    send(&app, Method::PUT, "/v1/memory/core", Some(append)).await;
    let (status, body) = send(
        &app,
        Method::GET,
        &format!("/v1/memory/core?skill={SKILL}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["blocks"][0]["text"],
        "Ana leads EU checkout.\nOutages are urgent."
    );
    assert_eq!(body["blocks"][0]["versions"], 2);

    let passage =
        json!({"skill": SKILL, "text": "Checkout runs on payments-eu.", "tags": ["infra"]});
    let (status, made) = send(&app, Method::POST, "/v1/memory/archival", Some(passage)).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let (_, found) = send(
        &app,
        Method::GET,
        "/v1/memory/archival?query=checkout+cluster",
        None,
    )
    .await;
    assert_eq!(found["hits"][0]["entry"]["id"], made["id"], "{found}");

    let said =
        json!({"skill": SKILL, "session": "chat-1", "speaker": "user", "text": "refund please"});
    let (status, _) = send(&app, Method::POST, "/v1/memory/recall", Some(said)).await;
    assert_eq!(status, StatusCode::CREATED);
    let uri = format!("/v1/memory/recall?skill={SKILL}&session=chat-1");
    let (_, log) = send(&app, Method::GET, &uri, None).await;
    assert_eq!(log["hits"][0]["entry"]["text"], "refund please", "{log}");

    let before = home.snapshot();
    let bad = [
        (
            Method::PUT,
            "/v1/memory/core",
            json!({"skill": SKILL, "block": "Bad Name", "text": "x"}),
        ),
        (
            Method::PUT,
            "/v1/memory/core",
            json!({"skill": SKILL, "block": "user", "text": "x", "mode": "merge"}),
        ),
        (
            Method::PUT,
            "/v1/memory/core",
            json!({"skill": SKILL, "block": "user", "text": "mail ana@example.com"}),
        ),
        (
            Method::PUT,
            "/v1/memory/core",
            json!({"skill": SKILL, "block": "user", "text": "word ".repeat(2000)}),
        ),
        (
            Method::POST,
            "/v1/memory/archival",
            json!({"skill": SKILL, "text": ""}),
        ),
        (
            Method::POST,
            "/v1/memory/archival",
            json!({"skill": "../etc", "text": "x"}),
        ),
        (
            Method::POST,
            "/v1/memory/archival",
            json!({"skill": SKILL, "text": "x", "tags": ["Bad Tag"]}),
        ),
        (
            Method::POST,
            "/v1/memory/recall",
            json!({"skill": SKILL, "session": "", "text": "x"}),
        ),
        (
            Method::POST,
            "/v1/memory/recall",
            json!({"skill": SKILL, "session": "c", "text": "x", "extra": 1}),
        ),
    ];
    for (method, uri, body) in bad {
        let shown = format!("{method} {uri} {body}");
        let (status, answer) = send(&app, method, uri, Some(body)).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{shown}: {answer}"
        );
    }
    for uri in [
        "/v1/memory/archival?query=",
        "/v1/memory/archival?query=x&limit=0",
    ] {
        let (status, answer) = send(&app, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {answer}");
    }
    assert_eq!(
        home.snapshot(),
        before,
        "a refused memory write changed the store"
    );
}

/// The log's search finds an answer by the words of the question before it, and another
/// handle's write on the same file is found at the next query.
#[tokio::test]
async fn the_conversation_log_finds_an_answer_by_the_question_it_answers() {
    let home = Home::new();
    let app = app(&home);
    let said = [
        ("chat-2", "user", "Can you reset my portal password?"),
        ("chat-2", "agent", "Done, a link went to your inbox."),
        ("chat-2", "user", "The printer upstairs is jammed."),
        ("chat-2", "agent", "Facilities will look today."),
        ("chat-1", "user", "Which cluster hosts our payment gateway?"),
        ("chat-1", "agent", "Frankfurt, since March."),
    ];
    for (session, speaker, text) in said {
        let body = json!({"skill": SKILL, "session": session, "speaker": speaker, "text": text});
        let (status, _) = send(&app, Method::POST, "/v1/memory/recall", Some(body)).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let uri = format!("/v1/memory/recall?skill={SKILL}&query=which+cluster+hosts+payment+gateway");
    let (status, found) = send(&app, Method::GET, &format!("{uri}&limit=2"), None).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let mut texts: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["entry"]["text"].as_str())
        .collect();
    texts.sort_unstable();
    assert_eq!(
        texts,
        [
            "Frankfurt, since March.",
            "Which cluster hosts our payment gateway?"
        ],
        "{found}"
    );
    let (_, chatter) = send(&app, Method::GET, &format!("{uri}&session=chat-2"), None).await;
    let hits = chatter["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 4, "{chatter}");
    assert!(hits.iter().all(|h| h["entry"]["session"] == "chat-2"));
    let (status, _) = send(&app, Method::GET, &format!("{uri}&limit=0"), None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Another process on the same file writes; this server's index follows at the next query.
    let other = lore_sqlite::SqliteStore::open(
        home.dir.path().join(".lore/lore.db"),
        lore_sqlite::OpenMode::Existing,
    )
    .unwrap();
    lore_engine::Engine::new(std::sync::Arc::new(other), Default::default())
        .recall_write(
            &lore_core::SkillPath::parse(SKILL).unwrap(),
            "chat-3",
            Some("user"),
            "Is the kestrel rollout done?",
        )
        .unwrap();
    let uri = format!("/v1/memory/recall?skill={SKILL}&query=kestrel&limit=1");
    let (_, found) = send(&app, Method::GET, &uri, None).await;
    assert_eq!(
        found["hits"][0]["entry"]["text"], "Is the kestrel rollout done?",
        "{found}"
    );
}

#[tokio::test]
async fn oversized_bodies_are_refused_before_parsing() {
    let home = Home::new();
    let limits = Limits {
        body_bytes: 1024,
        timeout: Duration::from_secs(5),
    };
    let app = rest_app(home.engine.clone(), limits, Access::Open);
    let big = json!({"skill": SKILL, "input": "x".repeat(4096), "output": {}});
    let (status, body) = send(&app, Method::POST, "/v1/executions", Some(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["error"]["code"], "payload_too_large");
    assert_eq!(home.engine.status().unwrap().counts.executions, 0);
}

/// The OpenAPI document and the router describe the same surface, in both directions.
#[tokio::test]
async fn openapi_document_matches_the_router() {
    let home = Home::new();
    let app = app(&home);
    let (status, doc) = send(&app, Method::GET, "/v1/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&doc, lore_server::openapi::parsed());

    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    let mut served: Vec<(String, String)> = lore_server::rest::routes()
        .table()
        .iter()
        .map(|(m, p)| (m.to_string(), (*p).to_owned()))
        .collect();
    documented.sort();
    served.sort();
    assert_eq!(documented, served, "openapi.json and the router disagree");

    // And each documented operation is really answered by its handler, not the fallback.
    for (method, path) in &documented {
        let uri = path
            .replace("{domain}/{skill}", SKILL)
            .replace("{id}", "REFL-1")
            .replace("{decision}", "approve");
        if uri == "/v1/events" {
            // A stream that stays open: its head is the answer, the body never ends.
            let request = Request::get(&uri).body(Body::empty()).unwrap();
            let response = app.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.headers()[header::CONTENT_TYPE],
                "text/event-stream"
            );
            continue;
        }
        let body = (method != "GET").then(|| json!({}));
        let (status, answer) = send(&app, method.parse().unwrap(), &uri, body).await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            !message.starts_with("no endpoint"),
            "{method} {uri}: {answer}"
        );
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
    }

    // Every `$ref` points at something the document defines.
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"#/").skip(1) {
        let pointer = format!("/{}", &reference[..reference.find('"').unwrap()]);
        assert!(doc.pointer(&pointer).is_some(), "dangling $ref {pointer}");
    }
}

/// One request over a real loopback socket, then a graceful shutdown.
#[tokio::test]
async fn serves_over_loopback_and_shuts_down_gracefully() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let home = Home::new();
    let token = tokio_util::sync::CancellationToken::new();
    let app = lore_server::app(
        home.engine.clone(),
        Limits::default(),
        Access::Open,
        token.clone(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(lore_server::serve(listener, app, token.clone()));

    let body = json!({"skill": SKILL, "input": {}, "output": {}}).to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /v1/executions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answer.contains("\"id\":\"EXEC-"), "{answer}");

    token.cancel();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stops after the shutdown signal")
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert_eq!(home.engine.status().unwrap().counts.executions, 1);
}

#[tokio::test]
async fn recall_packs_the_lesson_and_explains_only_on_request() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "rejected").await;
    let lesson = correct(&app, &id).await["lesson"]["id"].clone();

    let query = json!({"query": "errors for many customers priority", "skill": SKILL});
    let (status, body) = send(&app, Method::POST, "/v1/recall", Some(query)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["lessons"][0]["id"], lesson);
    assert!(body["text"].as_str().unwrap().contains("urgent"), "{body}");
    assert!(
        body.get("explain").is_none(),
        "explain was not asked for: {body}"
    );

    let query = json!({"query": "errors for many customers", "explain": true, "budget": 400});
    let (status, body) = send(&app, Method::POST, "/v1/recall", Some(query)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["budget"], 400);
    let explain = body["explain"].as_array().unwrap();
    assert_eq!(explain[0]["id"], lesson);
    assert_eq!(explain[0]["decision"], "kept");
}

#[tokio::test]
async fn bad_recalls_are_refused() {
    let home = Home::new();
    let app = app(&home);
    for (body, code) in [
        (json!({"query": ""}), 422),
        (json!({"query": "x", "limit": 0}), 422),
        (json!({"query": "x", "limit": 100000}), 422),
        (json!({"query": "x", "budget": usize::MAX}), 422),
        (json!({"query": "x", "skill": "../etc"}), 422),
        (json!({"query": "x", "surprise": 1}), 422),
        (json!({"query": 5}), 422),
    ] {
        let shown = body.to_string();
        let (status, answer) = send(&app, Method::POST, "/v1/recall", Some(body)).await;
        assert_eq!(status.as_u16(), code, "{shown}: {answer}");
        assert!(answer["error"]["code"].is_string(), "{shown}: {answer}");
    }
}

fn review_home() -> Home {
    Home::with_config(lore_engine::EngineConfig {
        curation: lore_core::model::CurationMode::Review,
        human_corrections: lore_engine::HumanCorrections::Review,
        ..lore_engine::EngineConfig::default()
    })
}

/// Three lessons waiting for review in review curation.
async fn waiting(app: &Router) -> Vec<String> {
    let mut ids = Vec::new();
    for text in [
        "When a ticket reports errors for many customers, priority must be urgent.",
        "Always name the failing service in the summary's first sentence.",
        "Never promise a fix date in the summary of an outage ticket.",
    ] {
        let exec = record(app, SKILL, "rejected").await;
        let (status, body) = send(
            app,
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": exec, "text": text})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["lesson"]["status"], "needs_review", "{body}");
        ids.push(body["lesson"]["id"].as_str().unwrap().to_owned());
    }
    ids
}

#[tokio::test]
async fn the_review_queue_pages_and_decisions_move_batches() {
    let home = review_home();
    let app = app(&home);
    let ids = waiting(&app).await;

    let (status, page) = send(&app, Method::GET, "/v1/review?limit=2", None).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["items"][0]["lesson"]["id"], ids[0]);
    assert!(page["items"][0]["correction"].is_string(), "{page}");
    assert_eq!(page["next_offset"], 2);

    let batch = json!({"ids": [ids[0], ids[1]], "reason": "checked"});
    let (status, done) = send(&app, Method::POST, "/v1/review/approve", Some(batch)).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    let statuses: Vec<_> = done["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("approved"), json!("approved")]);

    let supersede = json!({"ids": [ids[2]], "superseded_by": ids[0]});
    let (status, done) = send(&app, Method::POST, "/v1/review/supersede", Some(supersede)).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["lessons"][0]["status"], "superseded");

    let (_, page) = send(&app, Method::GET, "/v1/review", None).await;
    assert_eq!(page["items"], json!([]));
    let (_, audit) = send(&app, Method::GET, &format!("/v1/lessons/{}", ids[1]), None).await;
    let last = audit["audit"].as_array().unwrap().last().unwrap().clone();
    // Without tokens the audit names the server's anonymous principal, never a name sent along.
    assert_eq!(last["actor"], "anonymous", "{last}");
}

#[tokio::test]
async fn bad_review_decisions_are_refused_and_change_nothing() {
    let home = review_home();
    let app = app(&home);
    let ids = waiting(&app).await;
    let before = home.snapshot();
    let cases = [
        ("approve", json!({"ids": []}), 422),
        ("bless", json!({"ids": [ids[0]]}), 422),
        ("approve", json!({"ids": ["not an id"]}), 422),
        ("approve", json!({"ids": [ids[0], ids[0]]}), 422),
        (
            "approve",
            json!({"ids": [ids[0], "REFL-20260101000000-AAAAAAAA"]}),
            404,
        ),
        ("supersede", json!({"ids": [ids[0]]}), 422),
        (
            "reject",
            json!({"ids": [ids[0]], "superseded_by": ids[1]}),
            422,
        ),
        (
            "supersede",
            json!({"ids": [ids[0]], "superseded_by": ids[0]}),
            422,
        ),
        ("approve", json!({"ids": [ids[0]], "extra": true}), 422),
    ];
    for (decision, body, code) in cases {
        let shown = format!("{decision} {body}");
        let uri = format!("/v1/review/{decision}");
        let (status, answer) = send(&app, Method::POST, &uri, Some(body)).await;
        assert_eq!(status.as_u16(), code, "{shown}: {answer}");
        assert!(answer["error"]["code"].is_string(), "{shown}: {answer}");
    }
    assert_eq!(
        home.snapshot(),
        before,
        "a refused decision changed the store"
    );
    // A batch with one move the lifecycle forbids moves nothing.
    let (status, _) = send(
        &app,
        Method::POST,
        "/v1/review/reject",
        Some(json!({"ids": [ids[0]]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let before = home.snapshot();
    let (status, answer) = send(
        &app,
        Method::POST,
        "/v1/review/exception",
        Some(json!({"ids": [ids[1], ids[0]]})),
    )
    .await;
    assert_eq!(status.as_u16(), 409, "{answer}");
    assert_eq!(home.snapshot(), before, "a refused batch changed the store");
    let (status, _) = send(&app, Method::GET, "/v1/review?status=nonsense", None).await;
    assert_eq!(status.as_u16(), 422);
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_time_recalls() {
    let home = Home::new();
    let app = app(&home);
    let id = record(&app, SKILL, "rejected").await;
    correct(&app, &id).await;
    send(&app, Method::GET, &format!("/v1/executions/{id}"), None).await;
    send(&app, Method::GET, "/v1/executions/EXEC-1", None).await;
    send(
        &app,
        Method::POST,
        "/v1/recall",
        Some(json!({"query": "priority"})),
    )
    .await;
    send(&app, Method::GET, "/nowhere", None).await;

    let res = app
        .clone()
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let kind = res.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    for line in [
        "lore_http_requests_total{method=\"POST\",route=\"/v1/executions\",status=\"201\"} 1",
        "lore_http_requests_total{method=\"GET\",route=\"/v1/executions/{id}\",status=\"200\"} 1",
        "lore_http_requests_total{method=\"GET\",route=\"/v1/executions/{id}\",status=\"404\"} 1",
        "lore_http_requests_total{method=\"GET\",route=\"unmatched\",status=\"404\"} 1",
        "lore_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/recall\"} 1",
        "lore_recall_duration_seconds_count 1",
        "lore_store_records{kind=\"execution\"} 1",
        "lore_store_records{kind=\"lesson\"} 1",
        "# TYPE lore_http_request_duration_seconds histogram",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    let bytes: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("lore_store_bytes "))
        .expect("the store's size")
        .parse()
        .unwrap();
    assert!(bytes > 0);
}

fn episode(id: &str, skill: &str, chosen: &str, outcome: &str) -> Value {
    json!({
        "id": id, "skill": skill, "timestamp": "2026-01-01T17:00:00Z", "outcome": outcome,
        "task": "Pick the routing strategy",
        "decisions": [{"id": "d1", "type": "design", "context": "Choosing routing strategy",
                       "options": ["Serena-first", "Parallel"], "chosen": chosen,
                       "effects": ["e1"]}],
        "events": [{"id": "e1", "type": "tool_call", "content": "Created the router"}]
    })
}

#[tokio::test]
async fn episodes_are_recorded_read_and_queried() {
    let home = Home::new();
    let app = app(&home);
    let (status, body) = send(
        &app,
        Method::POST,
        "/v1/episodes",
        Some(episode("ep-1", SKILL, "Serena-first", "success")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["replaced"], false);
    let second = episode("ep-2", SKILL, "Parallel", "failure");
    let (status, _) = send(&app, Method::POST, "/v1/episodes", Some(second.clone())).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = send(&app, Method::POST, "/v1/episodes", Some(second.clone())).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "conflict");
    let (status, body) = send(
        &app,
        Method::POST,
        "/v1/episodes?replace=true",
        Some(second),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["replaced"], true);

    let (status, page) = send(&app, Method::GET, "/v1/episodes?limit=1", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["items"][0]["id"], "ep-1");
    assert_eq!(page["next_offset"], 1);
    let (_, failed) = send(&app, Method::GET, "/v1/episodes?outcome=failure", None).await;
    assert_eq!(crate::common::ids(&failed["items"]), ["ep-2"]);
    let (_, none) = send(
        &app,
        Method::GET,
        "/v1/episodes?since=2026-02-01T00:00:00Z",
        None,
    )
    .await;
    assert_eq!(none["items"], json!([]));

    let (status, view) = send(&app, Method::GET, "/v1/episodes/ep-1?budget=300", None).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["episode"]["decisions"][0]["chosen"], "Serena-first");
    assert_eq!(view["budget"], 300);
    assert!(
        view["text"]
            .as_str()
            .unwrap()
            .contains("> Pick the routing strategy")
    );
    let (_, seq) = send(&app, Method::GET, "/v1/episodes/ep-2/decisions", None).await;
    assert_eq!(seq["decisions"][0]["chosen"], "Parallel");

    let (status, path) = send(
        &app,
        Method::GET,
        "/v1/graph/path?from=decision:parallel&to=outcome:failure&mode=strongest",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{path}");
    assert_eq!(path["steps"].as_array().unwrap().len(), 2);
    // Parallel always led to the router; the router led to failure in one of its two episodes.
    assert_eq!(path["strength"], 0.5);
    let (_, what_if) = send(
        &app,
        Method::GET,
        "/v1/graph/what-if?episode=ep-2&decision=d1&alternative=Serena-first",
        None,
    )
    .await;
    assert_eq!(what_if["evidence"], true, "{what_if}");
    assert_eq!(what_if["alternative_cases"][0]["episode"], "ep-1");
    let (_, similar) = send(&app, Method::GET, "/v1/graph/similar?context=routing", None).await;
    assert_eq!(similar["decisions"].as_array().unwrap().len(), 2);
    let (_, good) = send(
        &app,
        Method::GET,
        "/v1/graph/patterns?min_occurrences=1",
        None,
    )
    .await;
    assert_eq!(good["patterns"][0]["action"], "serena-first");
    assert_eq!(good["budget"], 100);
    let (_, bad) = send(
        &app,
        Method::GET,
        "/v1/graph/anti-patterns?min_occurrences=1",
        None,
    )
    .await;
    assert_eq!(bad["patterns"][0]["action"], "parallel");
}

#[tokio::test]
async fn bad_episodes_and_graph_queries_are_refused_and_change_nothing() {
    let home = Home::new();
    let app = app(&home);
    type Edit = fn(&mut Value);
    let edits: Vec<(Edit, &str)> = vec![
        (
            |v| v["decisions"][0]["chosen"] = json!("Serial"),
            "decisions[0].chosen",
        ),
        (|v| v["outcome"] = json!("meh"), "outcome"),
        (
            |v| v["events"][0]["caused_by"] = json!(["x9"]),
            "events[0].caused_by[0]",
        ),
        (|v| v["skill"] = json!("../etc"), "skill"),
        (|v| v["decisons"] = json!([]), "decisons"),
        (|v| v["task"] = json!(""), "task"),
        (|v| v["timestamp"] = json!("yesterday"), "timestamp"),
    ];
    for (edit, field) in edits {
        let mut body = episode("bad", SKILL, "Parallel", "success");
        edit(&mut body);
        let (status, answer) = send(&app, Method::POST, "/v1/episodes", Some(body)).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field}: {message}");
    }
    let (status, _) = send(&app, Method::POST, "/v1/episodes", Some(json!([1]))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    for uri in [
        "/v1/episodes?outcome=meh",
        "/v1/episodes?since=soon",
        "/v1/episodes?limit=0",
        "/v1/episodes/bad?budget=0",
        "/v1/graph/path?from=a&to=b&mode=longest",
        "/v1/graph/path?from=%3A&to=b",
        "/v1/graph/similar?context=the",
        "/v1/graph/patterns?min_success_rate=2",
        "/v1/graph/patterns?max_success_rate=0.1",
        "/v1/graph/what-if?episode=bad&decision=d1&alternative=x&min_overlap=3",
    ] {
        let (status, body) = send(&app, Method::GET, uri, None).await;
        assert!(
            status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::BAD_REQUEST,
            "{uri}: {status} {body}"
        );
    }
    for uri in [
        "/v1/episodes/bad",
        "/v1/graph/path?from=nothing&to=failure",
        "/v1/graph/what-if?episode=bad&decision=d1&alternative=x",
    ] {
        let (status, body) = send(&app, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {body}");
    }
    let (_, page) = send(&app, Method::GET, "/v1/episodes", None).await;
    assert_eq!(page["items"], json!([]));
}

/// `/healthz` answers while the process runs; `/readyz` while the store answers and the server
/// is not shutting down, so a proxy stops sending before the last requests finish. Neither
/// needs a token.
#[tokio::test]
async fn probes_say_alive_and_ready_until_shutdown() {
    let home = Home::new();
    let token = tokio_util::sync::CancellationToken::new();
    let app = lore_server::app(
        home.engine.clone(),
        Limits::default(),
        Access::Open,
        token.clone(),
    );
    let (status, body) = send(&app, Method::GET, "/healthz", None).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("alive"))
    );
    let (status, body) = send(&app, Method::GET, "/readyz", None).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("ready"))
    );
    token.cancel();
    let (status, body) = send(&app, Method::GET, "/readyz", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let (status, _) = send(&app, Method::GET, "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
}

/// A kept report is served as kept; none kept is a 404; a bad report name or graph format is
/// refused (422, as every invalid value) naming the problem, and nothing stored changes.
#[tokio::test]
async fn reports_and_the_graph_export_refuse_bad_names_and_formats() {
    let home = Home::new();
    let app = app(&home);
    let (status, body) = send(&app, Method::GET, "/v1/reports/learning", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let curve = json!({"seeds": 1, "with_memory": [1.0, 0.0]});
    home.engine.save_report("learning", &curve).unwrap();
    let (status, body) = send(&app, Method::GET, "/v1/reports/learning", None).await;
    assert_eq!((status, body), (StatusCode::OK, curve.clone()));
    let (status, body) = send(&app, Method::GET, "/v1/reports/Not%20a%20name", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.to_string().contains("report"), "{body}");

    let (status, body) = send(&app, Method::GET, "/v1/graph/export?format=svg", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.to_string().contains("json or dot"), "{body}");
    let (status, body) = send(&app, Method::GET, "/v1/graph/export", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["version"], "1.0");
    assert_eq!(home.engine.report("learning").unwrap(), Some(curve));
}

/// `POST /v1/episodes/extract`: a session log in Lore's markdown is recorded as `lore episode
/// extract` records it; a line the parser cannot read is a 422 naming it, and nothing is stored.
#[tokio::test]
async fn a_session_log_is_extracted_into_an_episode() {
    let home = Home::new();
    let app = app(&home);
    let log = "# Session s-9\nID: ep-log\nDate: 2026-01-01T17:00:00Z\nOutcome: failure\n\
               Task: Route the memory calls\n\n## Decisions\n\
               ### d1 [design] Choosing the routing strategy\n- Options: Serena-first | Parallel\n\
               - Chosen: Parallel\n- Effects: e1\n\n## Events\n- e1 [error] Timeouts under load\n";
    let broken = log.replace("[error]", "[oops]");
    let body = json!({"log": broken, "skill": SKILL});
    let (status, answer) = send(&app, Method::POST, "/v1/episodes/extract", Some(body)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(answer.to_string().contains("line 14"), "{answer}");
    let (_, page) = send(&app, Method::GET, "/v1/episodes", None).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 0, "{page}");

    let body = json!({"log": log, "skill": SKILL});
    let (status, answer) = send(
        &app,
        Method::POST,
        "/v1/episodes/extract",
        Some(body.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["episode"]["id"], "ep-log");
    assert_eq!(answer["episode"]["decisions"][0]["chosen"], "Parallel");
    // The hook fired twice: the log's ID keeps the second from storing it again.
    let (status, _) = send(&app, Method::POST, "/v1/episodes/extract", Some(body)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, answer) = send(
        &app,
        Method::POST,
        "/v1/episodes/extract",
        Some(json!({"log": log})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a log with no skill: {answer}"
    );
}
