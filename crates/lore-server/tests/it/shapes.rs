//! Every door answers a refusal the same way: `{"error": {"code", "message"}}` over REST with a
//! 4xx status, the same code and message in an MCP tool error's structured content, and a
//! message that is a sentence naming the field, never the wording of the libraries underneath.

use std::collections::BTreeSet;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::SKILL;
use crate::common::server::Server;

/// Phrases of serde, serde_json, serde_urlencoded and axum that no answer may carry.
const LIBRARY_WORDING: &[&str] = &[
    "Failed to",
    "deserializ",
    "target type",
    "invalid type:",
    "invalid value:",
    "missing field",
    "unknown field",
    "unknown variant",
    "expected one of",
    "EOF while",
    "trailing characters",
    "invalid digit",
    "Cannot parse",
    "Expected request with",
    "struct ",
];

/// One request with a raw body; the answer's status and JSON.
async fn raw(
    server: &Server,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        req = req.header(header::CONTENT_TYPE, ct);
    }
    let res = server
        .app
        .clone()
        .oneshot(req.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// Asserts the API's error shape with a documented code and a message free of library wording;
/// returns the message.
fn assert_refusal(what: &str, status: StatusCode, body: &Value) -> String {
    assert!(status.is_client_error(), "{what}: {status} {body}");
    let error = body["error"].as_object();
    let error = error.unwrap_or_else(|| panic!("{what}: not the error shape: {body}"));
    assert_eq!(error.len(), 2, "{what}: {body}");
    let code = error["code"].as_str().unwrap_or_default();
    assert!(
        lore_server::error::CODES.contains(&code),
        "{what}: code {code:?}"
    );
    let message = error["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.len() > 10, "{what}: {body}");
    for phrase in LIBRARY_WORDING {
        assert!(
            !message.contains(phrase),
            "{what}: {phrase:?} in {message:?}"
        );
    }
    message
}

/// A route's path with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{id}", "EXEC-0000000000")
        .replace("{domain}", "support")
        .replace("{skill}", "summarize-ticket")
        .replace("{name}", "utility")
        .replace("{decision}", "approve")
}

#[tokio::test]
async fn every_route_refuses_bodies_and_queries_that_do_not_parse_in_the_api_error_shape() {
    let server = Server::open();
    let routes = lore_server::rest::routes();
    let mut refused_bodies = 0;
    for (method, path) in routes.table() {
        let uri = concrete(path);
        if *method == Method::GET {
            if *path == "/v1/events" {
                continue; // a stream that does not end
            }
            let with = if uri.contains('?') { '&' } else { '?' };
            for query in ["limit=ten", "offset=-1", "nonsense=1"] {
                let uri = format!("{uri}{with}{query}");
                let (status, body) = raw(&server, Method::GET, &uri, None, "").await;
                if !status.is_success() {
                    assert_refusal(&uri, status, &body);
                }
            }
            continue;
        }
        let json = Some("application/json");
        for (content_type, text) in [
            (json, "{\"skill\": "),
            (json, "[1, 2]"),
            (json, "{\"no_such_field_anywhere\": 1}"),
            (Some("text/plain"), "{}"),
        ] {
            let what = format!("{method} {uri} {content_type:?} {text}");
            let (status, body) = raw(&server, method.clone(), &uri, content_type, text).await;
            if status.is_success() {
                continue; // a route that takes no body ignores one
            }
            assert_refusal(&what, status, &body);
            refused_bodies += 1;
        }
    }
    assert!(refused_bodies > 100, "only {refused_bodies} refusals");
}

#[tokio::test]
async fn a_bad_body_is_refused_with_a_sentence_naming_the_field() {
    let server = Server::open();
    let json = Some("application/json");
    let cases = [
        (
            "/v1/executions",
            r#"{"skill": "support/summarize-ticket", "input": {}, "output": {}, "cost_usd": "cheap"}"#,
            422,
            "invalid",
            "`cost_usd` must be a number, not the string \"cheap\"",
        ),
        (
            "/v1/executions",
            r#"{"input": {}, "output": {}}"#,
            422,
            "invalid",
            "the field `skill` is missing; it is required",
        ),
        (
            "/v1/executions",
            r#"{"skill": "support/summarize-ticket", "input": {}, "output": {}, "outcome": "great"}"#,
            422,
            "invalid",
            "`outcome` cannot be \"great\"; it must be",
        ),
        (
            "/v1/executions",
            r#"{"skill": "support/summarize-ticket", "inputs": {}}"#,
            422,
            "invalid",
            "`inputs` is not a field here; the fields are",
        ),
        (
            "/v1/recall",
            r#"{"query": "x",}"#,
            400,
            "bad_request",
            "the body is not valid JSON: a value is missing or is not JSON",
        ),
        ("/v1/recall", "", 400, "bad_request", "the body is empty"),
    ];
    for (uri, text, status, code, said) in cases {
        let (got, body) = raw(&server, Method::POST, uri, json, text).await;
        let message = assert_refusal(text, got, &body);
        assert_eq!(got.as_u16(), status, "{text}: {body}");
        assert_eq!(body["error"]["code"], code, "{text}: {body}");
        assert!(message.starts_with(said), "{text}: {message}");
    }
    let (got, body) = raw(&server, Method::POST, "/v1/recall", None, "{}").await;
    assert_eq!(got, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(assert_refusal("no content type", got, &body).contains("application/json"));
    assert!(server.home.snapshot().is_empty(), "a refused body wrote");
}

#[tokio::test]
async fn bad_query_values_and_path_segments_are_named_with_the_value_given() {
    let server = Server::open();
    let (status, body) = raw(&server, Method::GET, "/v1/lessons?limit=ten", None, "").await;
    let message = assert_refusal("limit=ten", status, &body);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(message, "`limit` must be a whole number, not \"ten\"");
    let (status, body) = raw(&server, Method::GET, "/v1/search?limit=3", None, "").await;
    let message = assert_refusal("no query", status, &body);
    assert!(
        message.contains("query parameter `query` is missing"),
        "{message}"
    );
    // Percent-encoded bytes that are not UTF-8, where a lesson ID goes.
    let (status, body) = raw(&server, Method::GET, "/v1/lessons/%FF%FE", None, "").await;
    let message = assert_refusal("%FF", status, &body);
    assert!(message.contains("`id` in the path"), "{message}");
}

#[tokio::test]
async fn mcp_tool_errors_carry_the_rest_code_and_message() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let (agent, _) = server.token(Role::Agent);
    let missing = "REFL-0000000000000000";
    let pairs = [
        (
            &admin,
            format!("/v1/lessons/{missing}"),
            Method::GET,
            None,
            "get_lesson",
            json!({"id": missing}),
        ),
        (
            &agent,
            "/v1/review".to_owned(),
            Method::GET,
            None,
            "review_queue",
            json!({}),
        ),
        (
            &admin,
            "/v1/executions".to_owned(),
            Method::POST,
            Some(json!({"skill": "no-slash", "input": {}, "output": {}})),
            "record_execution",
            json!({"skill": "no-slash", "input": {}, "output": {}}),
        ),
    ];
    for (token, uri, method, body, tool, arguments) in pairs {
        let (status, rest) = server.send(Some(token), method, &uri, body).await;
        assert_refusal(&uri, status, &rest);
        let answer = server.mcp(token, tool, arguments).await;
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{tool}: {answer}");
        assert_eq!(result["structuredContent"], rest, "{tool} and {uri} differ");
        let text = result["content"][0]["text"].as_str().unwrap();
        let message = rest["error"]["message"].as_str().unwrap();
        assert!(text.starts_with(message), "{tool}: {text}");
    }
}

#[tokio::test]
async fn mcp_arguments_of_the_wrong_shape_are_refused_like_a_rest_body() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let cases = [
        (
            "search_memory",
            json!({"query": 5}),
            "`query` must be a string, not 5",
        ),
        (
            "list_lessons",
            json!({"limit": "ten"}),
            "`limit` must be a whole number, 0 or more, not the string \"ten\"",
        ),
        (
            "get_lesson",
            json!({}),
            "the argument `id` is missing; it is required",
        ),
        (
            "record_execution",
            json!({"skill": SKILL, "input": {}, "output": {}, "cost_usdd": 1}),
            "`cost_usdd` is not an argument here; the arguments are",
        ),
    ];
    for (tool, arguments, said) in cases {
        let answer = server.mcp(&admin, tool, arguments).await;
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{tool}: {answer}");
        let error = &result["structuredContent"]["error"];
        assert_eq!(error["code"], "invalid", "{tool}: {answer}");
        let message = error["message"].as_str().unwrap();
        assert!(message.starts_with(said), "{tool}: {message}");
        for phrase in LIBRARY_WORDING {
            assert!(!message.contains(phrase), "{tool}: {message}");
        }
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("Fix that argument"), "{tool}: {text}");
    }
}

#[test]
fn the_openapi_document_lists_every_error_code_the_server_sends() {
    let document = lore_server::openapi::parsed();
    let listed: BTreeSet<&str> = document["components"]["schemas"]["Error"]["properties"]["error"]
        ["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let sent: BTreeSet<&str> = lore_server::error::CODES.iter().copied().collect();
    assert_eq!(listed, sent);
}

/// Every listing, whether the store pages it or the server cuts it.
const LISTINGS: &[&str] = &[
    "/v1/executions",
    "/v1/lessons",
    "/v1/knowledge/documents",
    "/v1/decisions",
    "/v1/digests",
    "/v1/evals/sets",
    "/v1/evals/runs",
    "/v1/embedder/runs",
    "/v1/embedder/checkpoints",
    "/v1/episodes",
    "/v1/review",
    "/v1/org/members",
];

#[tokio::test]
async fn every_listing_takes_limit_and_offset_and_refuses_a_bad_limit() {
    let server = Server::open();
    for listing in LISTINGS {
        let uri = format!("{listing}?limit=1&offset=0");
        let (status, body) = raw(&server, Method::GET, &uri, None, "").await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        let arrays = body.as_object().unwrap().values().filter(|v| v.is_array());
        assert_eq!(arrays.count(), 1, "{uri}: {body}");
        for bad in ["limit=0", "limit=501", "offset=-1", "limit=many"] {
            let uri = format!("{listing}?{bad}");
            let (status, body) = raw(&server, Method::GET, &uri, None, "").await;
            let message = assert_refusal(&uri, status, &body);
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {body}");
            let field = bad.split('=').next().unwrap();
            assert!(message.contains(field), "{uri}: {message}");
        }
    }
}

#[tokio::test]
async fn a_listing_the_server_holds_whole_pages_like_a_stored_one() {
    let server = Server::open();
    for n in 0..3 {
        let decision = json!({"skill": SKILL, "situation": format!("case {n}"),
            "action": "refund", "rationale": "the customer was charged twice"});
        let (status, body) = server
            .send(None, Method::POST, "/v1/decisions", Some(decision))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let server = &server;
    let page = |uri: &'static str| async move {
        let (status, body) = server.send(None, Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        let situations: Vec<String> = body["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["situation"].as_str().unwrap().to_owned())
            .collect();
        (situations, body["next_offset"].clone())
    };
    let (first, next) = page("/v1/decisions?limit=2").await;
    assert_eq!(first, ["case 0", "case 1"]);
    assert_eq!(next, 2);
    let (rest, next) = page("/v1/decisions?limit=2&offset=2").await;
    assert_eq!(rest, ["case 2"]);
    assert_eq!(next, Value::Null);
    let (all, _) = page("/v1/decisions").await;
    assert_eq!(all.len(), 3);
}

/// A field an MCP view shares with REST names the same thing and holds the same value: the
/// views are smaller, never renamed.
#[tokio::test]
async fn an_mcp_view_names_its_fields_as_rest_does() {
    let server = Server::open();
    let id = server
        .record("none", json!({"ticket": "EU checkout 500s"}))
        .await;
    let correction = json!({"skill": SKILL, "execution_id": id,
        "correction": "When a ticket reports errors for many customers, priority must be urgent."});
    let (status, corrected) = server
        .send(None, Method::POST, "/v1/corrections", Some(correction))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{corrected}");
    let lesson_id = corrected["lesson"]["id"].as_str().unwrap().to_owned();

    let uri = format!("/v1/lessons/{lesson_id}");
    let (_, rest) = server.send(None, Method::GET, &uri, None).await;
    let mcp = server
        .mcp("none", "get_lesson", json!({"id": lesson_id}))
        .await;
    // One operation behind both doors: the same lesson and audit trail, field for field.
    assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");
    assert!(
        rest["audit"].as_array().is_some_and(|a| !a.is_empty()),
        "{rest}"
    );

    let lesson = rest["lesson"].clone();
    let mcp = server
        .mcp("none", "list_lessons", json!({"skill": SKILL}))
        .await;
    let items = mcp["result"]["structuredContent"]["items"].as_array();
    let listed = items.and_then(|items| items.iter().find(|l| l["id"] == lesson["id"]));
    assert_eq!(listed, Some(&lesson), "{mcp}");

    let (_, rest) = server
        .send(None, Method::GET, &format!("/v1/executions/{id}"), None)
        .await;
    assert_eq!(rest["id"], id.as_str(), "{rest}");
}
