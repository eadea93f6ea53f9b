//! The reliability suite's bounded fuzzing of request bodies
//! (docs/reliability.md): every operation of the OpenAPI document that takes a body gets random
//! JSON and mutated valid bodies; every operation with a path parameter gets random IDs; MCP
//! gets random JSON-RPC messages. The property: never a 5xx (a panic in an Engine call is a
//! 500), and every 4xx in the API's error shape (REST) or as a JSON-RPC error (MCP).
//!
//! Bounded: `LORE_RELIABILITY=long` runs 5 000 cases per target, CI's short form 150. A
//! failure is shrunk by proptest and printed; pin it below as a plain test.

use axum::body::Body;
use axum::http::{Method, Request, header};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::SKILL;
use crate::common::server::Server;

fn config() -> Config {
    let cases = if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        5_000
    } else {
        150
    };
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Any JSON value, a few levels deep, with the strings an attacker tries.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z/._\\\\ \u{0}-\u{7f}]{0,20}".prop_map(Value::from),
        Just(Value::from(SKILL)),
        Just(Value::from("../../etc/passwd")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,12}",
                    Just("skill".to_owned()),
                    Just("input".to_owned()),
                    Just("text".to_owned()),
                    Just("ids".to_owned()),
                    Just("episode".to_owned()),
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Valid bodies whose fields the fuzzer keeps and spoils.
fn valid_bodies() -> Vec<Value> {
    vec![
        json!({"skill": SKILL, "input": {"t": 1}, "output": {}, "outcome": "rejected",
               "cost_usd": 0.1, "latency_ms": 10, "model": "m", "session": "s"}),
        json!({"skill": SKILL, "execution_id": "EXEC-20260101000000-AAAAAAAA", "text": "Be brief."}),
        json!({"query": "ticket", "skill": SKILL, "tags": ["a"], "budget": 100, "limit": 5}),
        json!({"id": "EPI-1", "skill": SKILL, "timestamp": "2026-01-01T17:00:00Z",
               "outcome": "failure", "task": "t",
               "decisions": [{"id": "d1", "type": "design", "context": "c",
                              "options": ["a", "b"], "chosen": "a"}]}),
        json!({"skill": SKILL, "block": "persona", "text": "x", "mode": "append"}),
        json!({"ids": ["REFL-1"], "reason": "r", "superseded_by": "REFL-2"}),
        json!({"rule": "r", "reason": "why", "confidence": 0.5, "tags": ["t"]}),
    ]
}

/// A valid body with one field replaced by any JSON, or one removed.
fn spoiled() -> impl Strategy<Value = Value> {
    let bodies = valid_bodies();
    (
        0..bodies.len(),
        any::<prop::sample::Index>(),
        any_json(),
        any::<bool>(),
    )
        .prop_map(move |(i, field, value, remove)| {
            let mut body = bodies[i].clone();
            let object = body.as_object_mut().unwrap();
            let key = object
                .keys()
                .nth(field.index(object.len()))
                .unwrap()
                .clone();
            if remove {
                object.remove(&key);
            } else {
                object.insert(key, value);
            }
            body
        })
}

/// Every operation with a body, and every path, from the OpenAPI document.
fn operations() -> (Vec<(Method, String)>, Vec<String>) {
    let document = lore_server::openapi::parsed();
    let mut with_body = Vec::new();
    let mut paths = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        paths.push(path.clone());
        for (method, operation) in item.as_object().unwrap() {
            if operation.get("requestBody").is_some() {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                with_body.push((method, path.clone()));
            }
        }
    }
    (with_body, paths)
}

/// A path template with its parameters filled by `value`, made safe for a URI.
fn fill(path: &str, value: &str) -> String {
    let safe: String = value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}').unwrap() + start;
        out.push_str(&rest[..start]);
        out.push_str(&safe);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

async fn call(server: &Server, method: Method, uri: &str, body: Option<String>) -> (u16, String) {
    let mut req = Request::builder().method(method).uri(uri);
    let body = match body {
        Some(text) => {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from(text)
        }
        None => Body::empty(),
    };
    let res = server
        .app
        .clone()
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Never a 5xx; a 4xx in the API's error shape.
fn check(what: &str, status: u16, text: &str) -> Result<(), TestCaseError> {
    prop_assert!(status < 500, "{what}: {status} {text}");
    if status >= 400 {
        let value: Value = serde_json::from_str(text).unwrap_or_default();
        prop_assert!(
            value["error"]["code"].is_string(),
            "{what}: {status} {text}"
        );
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn random_request_bodies_never_make_a_5xx() {
    let rt = runtime();
    let server = Server::open();
    let (with_body, _) = operations();
    assert!(with_body.len() > 10, "{with_body:?}");
    let n = with_body.len();
    let body = prop_oneof![any_json(), spoiled()];
    let mut runner = TestRunner::new(config());
    runner
        .run(&(0..n, body, "[a-z0-9-]{0,12}"), |(i, body, id)| {
            let (method, path) = &with_body[i];
            let uri = fill(path, &id);
            let text = body.to_string();
            let (status, answer) = rt.block_on(call(&server, method.clone(), &uri, Some(text)));
            check(&format!("{method} {uri} {body}"), status, &answer)
        })
        .unwrap();
}

#[test]
fn random_ids_and_queries_never_make_a_5xx() {
    let rt = runtime();
    let server = Server::open();
    let (_, paths) = operations();
    let n = paths.len();
    let mut runner = TestRunner::new(config());
    let query = prop::collection::vec(
        (
            prop_oneof![
                Just("skill"),
                Just("limit"),
                Just("offset"),
                Just("q"),
                Just("raw"),
                Just("budget"),
                Just("from"),
                Just("to"),
                Just("since")
            ],
            "[a-zA-Z0-9/%._-]{0,16}",
        ),
        0..4,
    );
    runner
        .run(&(0..n, ".{0,20}", query), |(i, id, query)| {
            if paths[i] == "/v1/events" {
                return Ok(()); // a stream that does not end; its query is checked in events.rs
            }
            let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let uri = format!("{}?{}", fill(&paths[i], &id), query.join("&"));
            let (status, answer) = rt.block_on(call(&server, Method::GET, &uri, None));
            // A path only served for POST answers 405, in the error shape too.
            check(&format!("GET {uri}"), status, &answer)
        })
        .unwrap();
}

#[test]
fn random_mcp_messages_get_a_json_rpc_answer() {
    let rt = runtime();
    let server = Server::open();
    let message = prop_oneof![
        any_json().prop_map(|v| v.to_string()),
        ".{0,60}",
        (
            prop_oneof![
                Just("tools/call"),
                Just("tools/list"),
                Just("initialize"),
                Just("ping"),
                Just("x/y")
            ],
            any_json()
        )
            .prop_map(|(m, p)| {
                json!({"jsonrpc": "2.0", "id": 1, "method": m, "params": p}).to_string()
            }),
    ];
    let mut runner = TestRunner::new(config());
    runner
        .run(&message, |text| {
            let (status, _, answer) =
                rt.block_on(server.mcp_raw(None, Some("application/json"), &text));
            prop_assert!(status.as_u16() < 500, "{text}: {status} {answer}");
            if status.is_client_error() {
                let value: Value = serde_json::from_str(&answer).unwrap_or_default();
                prop_assert!(value["jsonrpc"] == "2.0", "{text}: {status} {answer}");
            }
            Ok(())
        })
        .unwrap();
}
