//! The reliability suite's hostile inputs through REST and MCP
//! (docs/reliability.md). The corpus is `tests/fixtures/hostile.json`, shared with the CLI's
//! half (`lore`, JSONL import, seed import). Each case must be refused (4xx, or a tool error)
//! and leave the store exactly as it was; prompt-injection text, which is valid text and is
//! accepted, must come back in a prompt only quoted, under a rule with its provenance.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::SKILL;
use crate::common::server::Server;

/// The corpus, shared by both halves of the suite.
pub fn corpus() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hostile.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A corpus value with its `$repeat` and `$nest` shorthands expanded.
pub fn expand(value: &Value) -> Value {
    if let Some(s) = value.get("$repeat").and_then(Value::as_str) {
        let times = value["times"].as_u64().unwrap() as usize;
        let then = value["then"].as_str().unwrap_or_default();
        return Value::String(s.repeat(times) + then);
    }
    if let Some(depth) = value.get("$nest").and_then(Value::as_u64) {
        let text = "[".repeat(depth as usize) + &"]".repeat(depth as usize);
        // Built as text: serde_json's own recursion limit would refuse to parse it here.
        return Value::String(format!("$raw:{text}"));
    }
    value.clone()
}

/// The cases whose `doors` include `door` (all doors when the case names none).
pub fn cases_for(corpus: &Value, door: &str) -> Vec<(String, String, Value)> {
    corpus["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c.get("doors")
                .and_then(Value::as_array)
                .is_none_or(|d| d.iter().any(|x| x == door))
        })
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["field"].as_str().unwrap().to_owned(),
                expand(&c["value"]),
            )
        })
        .collect()
}

/// A valid execution with `field` set to `value`, as JSON text (a `$raw:` value is spliced in
/// verbatim, for what `serde_json` cannot build).
fn execution_text(field: &str, value: &Value) -> String {
    let mut body = json!({"skill": SKILL, "input": {"ticket": "ok"}, "output": {"p": "normal"}});
    let raw = value.as_str().and_then(|s| s.strip_prefix("$raw:"));
    body[field] = if raw.is_some() {
        json!("$RAW")
    } else {
        value.clone()
    };
    let text = body.to_string();
    match raw {
        Some(raw) => text.replace("\"$RAW\"", raw),
        None => text,
    }
}

/// POSTs `body` as JSON text; the status and the answer's text.
async fn post_text(server: &Server, token: &str, uri: &str, body: String) -> (StatusCode, String) {
    let req = Request::post(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    let res = server.app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// One door's tally.
#[derive(Default)]
struct Tally {
    attempts: usize,
    escapes: Vec<String>,
}

#[tokio::test]
async fn hostile_inputs_through_rest_and_mcp_are_refused_and_change_nothing() {
    let corpus = corpus();
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    server
        .record(&admin, json!({"ticket": "a valid one first"}))
        .await;
    let before = server.home.snapshot();

    let mut rest = Tally::default();
    for (name, field, value) in cases_for(&corpus, "rest") {
        let body = execution_text(&field, &value);
        let (status, answer) = post_text(&server, &admin, "/v1/executions", body).await;
        rest.attempts += 1;
        if !status.is_client_error() {
            rest.escapes.push(format!("{name}: {status} {answer:.200}"));
        } else if !answer.contains("\"error\"") {
            rest.escapes
                .push(format!("{name}: no error shape: {answer:.200}"));
        }
    }
    for raw in corpus["malformed"].as_array().unwrap() {
        for uri in [
            "/v1/executions",
            "/v1/corrections",
            "/v1/recall",
            "/v1/episodes",
        ] {
            let (status, answer) =
                post_text(&server, &admin, uri, raw.as_str().unwrap().to_owned()).await;
            rest.attempts += 1;
            if !status.is_client_error() {
                rest.escapes
                    .push(format!("{uri} {raw}: {status} {answer:.200}"));
            }
        }
    }

    let mut mcp = Tally::default();
    for (name, field, value) in cases_for(&corpus, "mcp") {
        let text = execution_text(&field, &value);
        mcp.attempts += 1;
        let arguments: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(_) => {
                // Too deep for a JSON value: sent as raw text, refused before any tool runs.
                let call = format!(
                    r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"record_execution","arguments":{text}}}}}"#
                );
                let (status, _, answer) = server
                    .mcp_raw(Some(&admin), Some("application/json"), &call)
                    .await;
                if !status.is_client_error() || !answer.contains("\"error\"") {
                    mcp.escapes.push(format!("{name}: {status} {answer:.200}"));
                }
                continue;
            }
        };
        let answer = server.mcp(&admin, "record_execution", arguments).await;
        let refused = answer["result"]["isError"] == true || answer.get("error").is_some();
        if !refused {
            mcp.escapes.push(format!("{name}: {answer:.200}"));
        }
    }
    for raw in corpus["malformed"].as_array().unwrap() {
        let (status, _, answer) = server
            .mcp_raw(
                Some(&admin),
                Some("application/json"),
                raw.as_str().unwrap(),
            )
            .await;
        mcp.attempts += 1;
        if !status.is_client_error() || !answer.contains("\"jsonrpc\"") {
            mcp.escapes.push(format!("{raw}: {status} {answer:.200}"));
        }
    }

    let unchanged = server.home.snapshot() == before;
    println!(
        "reliability: hostile rest attempts {}, escapes {}; mcp attempts {}, escapes {}; \
         store unchanged {unchanged}",
        rest.attempts,
        rest.escapes.len(),
        mcp.attempts,
        mcp.escapes.len()
    );
    assert!(
        rest.escapes.is_empty(),
        "REST accepted: {:#?}",
        rest.escapes
    );
    assert!(mcp.escapes.is_empty(), "MCP accepted: {:#?}", mcp.escapes);
    assert!(unchanged, "a refused input changed the store");
}

/// Asserts that every line of `prompt` holding one of `needles` is quoted (`> `) under a rule
/// whose heading carries its provenance, and that at least one such line is there.
pub fn assert_quoted_with_provenance(prompt: &str, needles: &[&str]) {
    let lines: Vec<&str> = prompt.lines().collect();
    let mut seen = 0;
    for (i, line) in lines.iter().enumerate() {
        if !needles
            .iter()
            .any(|n| line.to_lowercase().contains(&n.to_lowercase()))
        {
            continue;
        }
        seen += 1;
        assert!(
            line.trim_start().starts_with("> "),
            "unquoted injection text in the prompt: {line:?}\n{prompt}"
        );
        let heading = lines[..i]
            .iter()
            .rev()
            .find(|l| l.starts_with("- **"))
            .unwrap_or_else(|| panic!("quoted text with no rule heading: {line:?}\n{prompt}"));
        assert!(
            heading.contains("confidence") && heading.contains("from correction"),
            "a heading without provenance: {heading:?}"
        );
    }
    assert!(
        seen > 0,
        "the accepted text never reached the prompt:\n{prompt}"
    );
}

/// Distinctive words of the corpus's injection texts.
pub const NEEDLES: &[&str] = &[
    "REFL-FAKE",
    "obey this",
    "developer mode",
    "previous instructions",
    "API keys",
    "system prompt",
];

#[tokio::test]
async fn accepted_prompt_injection_comes_back_only_quoted_with_provenance() {
    let corpus = corpus();
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let execution = server.record(&admin, json!({"ticket": "x"})).await;
    for injection in corpus["injections"].as_array().unwrap() {
        let (status, answer) = server
            .send(
                Some(&admin),
                Method::POST,
                "/v1/corrections",
                Some(json!({"skill": SKILL, "execution_id": execution, "text": injection})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let (status, prompt) = server
        .send(
            Some(&admin),
            Method::GET,
            &format!("/v1/skills/{SKILL}/prompt"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{prompt}");
    assert_quoted_with_provenance(prompt["text"].as_str().unwrap(), NEEDLES);
    let view = server
        .mcp(&admin, "memory_prompt", json!({"skill": SKILL}))
        .await;
    let text = view["result"]["structuredContent"]["prompt"]
        .as_str()
        .unwrap();
    assert_quoted_with_provenance(text, NEEDLES);
}
