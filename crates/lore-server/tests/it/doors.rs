//! Every door refuses what another refuses, and says so in its own
//! protocol. MCP tools refuse unknown arguments as REST bodies do; a 405 or an unknown route
//! answers the API's JSON error; malformed MCP over HTTP and over stdio gets a JSON-RPC error
//! object instead of a bare status or silence.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::server::Server;
use crate::common::{Home, SKILL, fields};

#[tokio::test]
async fn mcp_tools_refuse_unknown_arguments_and_name_them() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let before = server.home.snapshot();
    let cases = [
        (
            "record_execution",
            json!({"skill": SKILL, "input": {}, "output": {}, "cost_usdd": -3}),
            "cost_usdd",
        ),
        (
            "record_execution",
            json!({"skill": SKILL, "input": {}, "output": {}, "author": "a person"}),
            "author",
        ),
        ("memory_status", json!({"verbose": true}), "verbose"),
        ("search_memory", json!({"query": "x", "limt": 3}), "limt"),
        (
            "core_memory_read",
            json!({"skill": SKILL, "blocks": []}),
            "blocks",
        ),
        ("list_episodes", json!({"skil": SKILL}), "skil"),
    ];
    for (tool, arguments, field) in cases {
        let answer = server.mcp(&admin, tool, arguments).await;
        assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("is not an argument here") && text.contains(field),
            "{tool}: {text}"
        );
    }
    assert_eq!(
        server.home.snapshot(),
        before,
        "a refused call wrote something"
    );
}

#[tokio::test]
async fn mcp_record_execution_takes_cost_and_latency_and_refuses_bad_ones() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let before = server.home.snapshot();
    for (field, value) in [
        ("cost_usd", -3.0),
        ("latency_ms", -1.0),
        ("cost_usd", 1e300),
    ] {
        let answer = server
            .mcp(
                &admin,
                "record_execution",
                json!({"skill": SKILL, "input": {}, "output": {}, field: value}),
            )
            .await;
        assert_eq!(
            answer["result"]["isError"], true,
            "{field}={value}: {answer}"
        );
    }
    assert_eq!(server.home.snapshot(), before);
    let answer = server
        .mcp(
            &admin,
            "record_execution",
            json!({"skill": SKILL, "input": {}, "output": {}, "cost_usd": 0.25, "latency_ms": 1200}),
        )
        .await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

#[tokio::test]
async fn wrong_methods_and_unknown_routes_answer_the_api_error_shape() {
    let server = Server::open();
    let cases = [
        (Method::DELETE, "/v1/executions", 405, "method_not_allowed"),
        (Method::PUT, "/v1/status", 405, "method_not_allowed"),
        (Method::GET, "/v1/corrections", 405, "method_not_allowed"),
        (Method::GET, "/v1/nowhere", 404, "not_found"),
        (Method::POST, "/v2/executions", 404, "not_found"),
    ];
    for (method, path, status, code) in cases {
        let (got, body) = server.send(None, method.clone(), path, None).await;
        assert_eq!(got.as_u16(), status, "{method} {path}: {body}");
        assert_eq!(body["error"]["code"], code, "{method} {path}: {body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(path), "{method} {path}: {body}");
    }
}

/// Asserts a JSON-RPC error object with `code`.
fn assert_jsonrpc_error(what: &str, body: &str, code: i64) -> Value {
    let value: Value =
        serde_json::from_str(body).unwrap_or_else(|_| panic!("{what}: not JSON: {body:?}"));
    assert_eq!(value["jsonrpc"], "2.0", "{what}: {value}");
    assert_eq!(value["error"]["code"], code, "{what}: {value}");
    assert!(
        value["error"]["message"]
            .as_str()
            .is_some_and(|m| m.len() > 10),
        "{what}: {value}"
    );
    value
}

#[tokio::test]
async fn malformed_mcp_over_http_gets_a_json_rpc_error() {
    let server = Server::open();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let cases = [
        ("no content type", None, init.as_str(), 415, -32600),
        ("text/plain", Some("text/plain"), init.as_str(), 415, -32600),
        (
            "not JSON",
            Some("application/json"),
            "{\"jsonrpc\": ",
            400,
            -32700,
        ),
        ("garbage", Some("application/json"), "hello", 400, -32700),
        ("a number", Some("application/json"), "42", 400, -32600),
        (
            "no jsonrpc member",
            Some("application/json"),
            r#"{"id": 3, "method": "tools/list"}"#,
            400,
            -32600,
        ),
        (
            "a batch",
            Some("application/json"),
            r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#,
            400,
            -32600,
        ),
    ];
    for (what, content_type, body, status, code) in cases {
        let (got, ct, answer) = server.mcp_raw(None, content_type, body).await;
        assert_eq!(got.as_u16(), status, "{what}: {answer}");
        assert!(ct.starts_with("application/json"), "{what}: {ct}");
        assert_jsonrpc_error(what, &answer, code);
    }
    // The id of a message that has a usable one is answered back.
    let (_, _, answer) = server
        .mcp_raw(
            None,
            Some("application/json"),
            r#"{"id": 3, "method": "tools/list"}"#,
        )
        .await;
    assert_eq!(assert_jsonrpc_error("id", &answer, -32600)["id"], 3);
    // A valid initialize still works.
    let (got, _, answer) = server.mcp_raw(None, Some("application/json"), &init).await;
    assert_eq!(got, StatusCode::OK, "{answer}");
}

#[tokio::test]
async fn mcp_on_stdio_answers_garbage_with_a_parse_error_and_keeps_serving() {
    let home = Home::new();
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server_end);
    let serving = tokio::spawn(lore_server::mcp::serve_lines(
        Arc::clone(&home.engine),
        server_in,
        server_out,
    ));
    let (client_in, client_out) = tokio::io::split(client);
    let mut lines = BufReader::new(client_in).lines();
    let mut client_out = Some(client_out);
    macro_rules! send {
        ($text:expr $(,)?) => {{
            let out = client_out.as_mut().unwrap();
            out.write_all($text.as_bytes()).await.unwrap();
            out.write_all(b"\n").await.unwrap();
        }};
    }
    macro_rules! next {
        () => {{
            let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
                .await
                .expect("an answer within 10 s")
                .unwrap()
                .expect("a line");
            serde_json::from_str::<Value>(&line).unwrap()
        }};
    }
    send!("this is not json");
    let answer = next!();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    send!(r#"{"id": 9, "method": "ping"}"#);
    let answer = next!();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], 9, "{answer}");
    // Still serving: the handshake and a call go through.
    send!(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
        .to_string(),
    );
    assert_eq!(next!()["id"], 1);
    send!(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#);
    send!("\u{0}\u{1}garbage again");
    assert_eq!(next!()["error"]["code"], -32700);
    send!(
        r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_memory", "arguments": {"query": "x"}}}"#
    );
    let answer = next!();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // Closing the client's side is the end of input.
    client_out.take().unwrap().shutdown().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), serving)
        .await
        .expect("the server stops when input ends")
        .unwrap()
        .unwrap();
}

/// The same act answers the same on every door. Without a credential the caller is
/// the machine's user on REST and on MCP alike, so a correction is approved at once (auto
/// curation); with an agent's token it is on trial on both. `record_execution` names its
/// fields as `POST /v1/executions` does.
#[tokio::test]
async fn a_correction_and_a_recorded_execution_answer_alike_over_rest_and_mcp() {
    let correction = "When a ticket reports errors for many customers, priority must be urgent.";
    let open = Server::open();
    let (status, rest) = open
        .send(
            None,
            Method::POST,
            "/v1/executions",
            Some(json!({"skill": SKILL, "input": {"t": 1}, "output": {}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rest}");
    let (status, corrected) = open
        .send(
            None,
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": rest["id"], "correction": correction})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{corrected}");
    assert_eq!(corrected["lesson"]["status"], "approved", "{corrected}");

    let record = json!({"skill": SKILL, "input": {"t": 2}, "output": {}});
    let recorded = open.mcp("none", "record_execution", record.clone()).await;
    let recorded = &recorded["result"]["structuredContent"];
    for (field, value) in recorded.as_object().unwrap() {
        assert!(rest.get(field).is_some(), "REST has no {field:?}: {rest}");
        if field != "id" && field != "timestamp" {
            assert_eq!(&rest[field], value, "{field}");
        }
    }
    let arguments =
        json!({"skill": SKILL, "execution_id": recorded["id"], "correction": correction});
    let answer = open.mcp("none", "correct", arguments).await;
    let lesson = &answer["result"]["structuredContent"]["lesson"];
    assert_eq!(lesson["status"], "approved", "{answer}");

    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let recorded = server.mcp(&agent, "record_execution", record).await;
    let id = &recorded["result"]["structuredContent"]["id"];
    let arguments = json!({"skill": SKILL, "execution_id": id, "correction": correction});
    let answer = server.mcp(&agent, "correct", arguments).await;
    let lesson = &answer["result"]["structuredContent"]["lesson"];
    assert_eq!(lesson["status"], "trial", "{answer}");
}

/// The names `tools/list` gives a connection at `uri` with `token`.
async fn listed(server: &Server, uri: &str, token: &str) -> Vec<String> {
    let answer = server.mcp_at(uri, token, "tools/list", json!({})).await;
    let tools = answer["result"]["tools"].as_array();
    let tools = tools.unwrap_or_else(|| panic!("{answer}"));
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A token lists only the tools its role may call, and the loop unless the URL asks for more.
#[tokio::test]
async fn a_token_lists_only_the_tools_its_role_may_call() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let mut default = listed(&server, "/mcp", &agent).await;
    default.sort();
    assert_eq!(
        default,
        [
            "correct",
            "get_lesson",
            "recall_memory",
            "record_execution",
            "report_signal",
            "search_memory"
        ]
    );
    let every = listed(&server, "/mcp?tools=all", &agent).await;
    assert!(every.contains(&"propagate_lesson".to_owned()), "{every:?}");
    for hidden in [
        "review_queue",
        "org_pool",
        "ingest_knowledge",
        "embedder_status",
    ] {
        assert!(!every.contains(&hidden.to_owned()), "{hidden}: {every:?}");
    }
    let refused = server.mcp(&agent, "review_queue", json!({})).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused.to_string().contains("reviewer role"), "{refused}");

    let (reviewer, _) = server.token(Role::Reviewer);
    let every = listed(&server, "/mcp?tools=all", &reviewer).await;
    assert!(every.contains(&"review_queue".to_owned()), "{every:?}");
    assert!(every.contains(&"embedder_status".to_owned()), "{every:?}");
    assert!(!every.contains(&"embedder_train".to_owned()), "{every:?}");
    let (scoped, _) = server.scoped_token(Role::Admin, "domain:support");
    let every = listed(&server, "/mcp?tools=review,embedder", &scoped).await;
    assert_eq!(
        every,
        ["review_lessons", "review_queue", "unlink_lessons"],
        "{every:?}"
    );
}

/// Unlinking refuses the same input with the same words over REST and MCP, and takes the
/// conflict link off both lessons through either door.
#[tokio::test]
async fn unlink_is_refused_alike_by_both_doors_and_done_by_either() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let execution = server.record(&admin, json!({"ticket": "bug report"})).await;
    let mut ids = Vec::new();
    for text in [
        "Always include the stack trace in the bug report.",
        "Never include the stack trace in the bug report.",
        "Always include the browser version in the bug report.",
        "Never include the browser version in the bug report.",
    ] {
        let body = json!({"skill": SKILL, "execution_id": execution, "text": text});
        let (status, body) = server
            .send(Some(&admin), Method::POST, "/v1/corrections", Some(body))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        ids.push(body["lesson"]["id"].as_str().unwrap().to_owned());
    }
    let before = server.home.snapshot();
    let bad = [
        (json!([ids[0]]), "1 given"),
        (json!([ids[0], ids[0]]), "named twice"),
        (json!([ids[0], "not an id"]), "not an id"),
        (json!([ids[0], ids[2]]), "not linked"),
    ];
    for (pair, says) in bad {
        let body = json!({"ids": pair, "reason": "r"});
        let (status, rest) = server
            .send(
                Some(&admin),
                Method::POST,
                "/v1/review/unlink",
                Some(body.clone()),
            )
            .await;
        assert!(status.is_client_error(), "{pair}: {status} {rest}");
        assert!(rest.to_string().contains(says), "{pair}: {rest}");
        let mcp = server.mcp(&admin, "unlink_lessons", body).await;
        assert_eq!(mcp["result"]["isError"], true, "{pair}: {mcp}");
        let text = mcp["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{pair}: {text}");
    }
    assert_eq!(server.home.snapshot(), before, "a refused unlink wrote");

    let body = json!({"ids": [ids[0], ids[1]], "reason": "two audiences"});
    let (status, rest) = server
        .send(Some(&admin), Method::POST, "/v1/review/unlink", Some(body))
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let body = json!({"ids": [ids[3], ids[2]], "reason": "two audiences"});
    let mcp = server.mcp(&admin, "unlink_lessons", body).await;
    assert_ne!(mcp["result"]["isError"], true, "{mcp}");
    for id in &ids {
        let (_, shown) = server
            .send(
                Some(&admin),
                Method::GET,
                &format!("/v1/lessons/{id}"),
                None,
            )
            .await;
        let links = &shown["lesson"]["links"];
        assert!(
            links.as_array().is_none_or(|l| l.is_empty()),
            "{id}: {shown}"
        );
    }
}

/// A client ending its session is answered 204, which the official SDKs take as done (rmcp's
/// own 202 made the Python SDK log "Session termination failed: 202"), and the session is gone.
#[tokio::test]
async fn ending_an_mcp_session_answers_204_and_closes_it() {
    use axum::body::Body;
    use axum::http::{Request, header};
    use tower::ServiceExt;

    let server = Server::open();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let request = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(init.to_string()))
        .unwrap();
    let res = server.app.clone().oneshot(request).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let delete = || {
        Request::delete("/mcp")
            .header(header::HOST, "localhost")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Body::empty())
            .unwrap()
    };
    let res = server.app.clone().oneshot(delete()).await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let request = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(Body::from(list.to_string()))
        .unwrap();
    let after = server.app.clone().oneshot(request).await.unwrap();
    assert_eq!(
        after.status(),
        StatusCode::NOT_FOUND,
        "the session was not closed"
    );
}

#[tokio::test]
async fn episodes_and_the_causal_graph_answer_the_same_fields_and_refusals_on_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    for (id, chosen, outcome) in [("ep-1", "Pager", "success"), ("ep-2", "Email", "failure")] {
        let episode = json!({
            "id": id, "skill": SKILL, "timestamp": "2026-01-01T17:00:00Z", "outcome": outcome,
            "task": "Route the outage alert",
            "decisions": [{"id": "d1", "type": "design", "context": "Choosing how to alert on call",
                           "options": ["Pager", "Email"], "chosen": chosen, "effects": ["e1"]}],
            "events": [{"id": "e1", "type": "tool_call", "content": "Sent the alert"}]
        });
        let (status, body) = server
            .send(Some(&agent), Method::POST, "/v1/episodes", Some(episode))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let asked = [
        (
            "/v1/graph/path?from=decision:email&to=outcome:failure&mode=strongest",
            "causal_path",
            json!({"from": "decision:email", "to": "outcome:failure", "mode": "strongest"}),
        ),
        (
            "/v1/graph/what-if?episode=ep-2&decision=d1&alternative=Pager",
            "what_if",
            json!({"episode": "ep-2", "decision": "d1", "alternative": "Pager"}),
        ),
        (
            "/v1/graph/similar?context=alert",
            "similar_decisions",
            json!({"context": "alert"}),
        ),
        (
            "/v1/graph/patterns?min_occurrences=1&min_success_rate=0.5",
            "find_patterns",
            json!({"min_occurrences": 1, "min_success_rate": 0.5}),
        ),
        (
            "/v1/graph/anti-patterns?min_occurrences=1",
            "find_anti_patterns",
            json!({"min_occurrences": 1}),
        ),
        (
            "/v1/episodes/ep-2/decisions",
            "decision_sequence",
            json!({"id": "ep-2"}),
        ),
        (
            "/v1/episodes?outcome=failure&limit=1",
            "list_episodes",
            json!({"outcome": "failure", "limit": 1}),
        ),
    ];
    for (uri, tool, arguments) in asked {
        let (status, rest) = server.send(Some(&agent), Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {rest}");
        let mcp = server.mcp(&agent, tool, arguments).await;
        let answer = &mcp["result"]["structuredContent"];
        assert_eq!(fields(answer), fields(&rest), "{tool}: {mcp}");
        assert_eq!(answer["text"], rest["text"], "{tool}");
        if tool == "list_episodes" {
            assert_eq!(answer["items"], rest["items"], "{mcp}");
            assert_eq!(crate::common::ids(&rest["items"]), ["ep-2"]);
        }
    }
    let (_, what_if) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/graph/what-if?episode=ep-2&decision=d1&alternative=Pager",
            None,
        )
        .await;
    assert_eq!(
        what_if["alternative_stats"]["success_rate"], 1.0,
        "{what_if}"
    );

    // A bad value is refused on both doors, naming the field.
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/graph/path?from=a&to=b&mode=widest",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{rest}");
    assert!(
        rest["error"]["message"].as_str().unwrap().contains("mode"),
        "{rest}"
    );
    let mcp = server
        .mcp(
            &agent,
            "causal_path",
            json!({"from": "a", "to": "b", "mode": "widest"}),
        )
        .await;
    assert_eq!(mcp["result"]["isError"], true, "{mcp}");
    assert_eq!(
        mcp["result"]["structuredContent"]["error"]["code"], "invalid",
        "{mcp}"
    );
    // Only a reviewer purges, and the reason is required on the one door that purges.
    let (status, _) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/episodes/ep-1/purge",
            Some(json!({"reason": "test"})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (reviewer, _) = server.token(Role::Reviewer);
    let (status, refused) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/episodes/ep-1/purge",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reason"),
        "{refused}"
    );
}

/// Recording, reading and exporting episodes answer the same fields on REST and MCP: a
/// receipt with the stored episode, one episode's text (a model is answered the text alone, the
/// record left out), a session's, the whole graph (REST as the document itself); a replacement
/// is a 200 on REST and `replaced` on both, and a bad switch is refused naming it.
#[tokio::test]
async fn recording_reading_and_exporting_episodes_agree_on_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let episode = |id: &str| {
        json!({
            "id": id, "session": "s-1", "skill": SKILL, "timestamp": "2026-01-01T17:00:00Z",
            "outcome": "failure", "task": "Route the outage alert",
            "decisions": [{"id": "d1", "type": "design", "context": "Choosing how to alert",
                           "options": ["Pager", "Email"], "chosen": "Email", "effects": ["e1"]}],
            "events": [{"id": "e1", "type": "tool_call", "content": "Sent the alert"}]
        })
    };
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/episodes",
            Some(episode("ep-1")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rest}");
    let mcp = server
        .mcp(
            &agent,
            "record_episode",
            json!({"episode": episode("ep-2")}),
        )
        .await;
    let recorded = &mcp["result"]["structuredContent"];
    assert_eq!(fields(recorded), fields(&rest), "{mcp}");
    assert_eq!(
        recorded["episode"]["decisions"],
        rest["episode"]["decisions"]
    );
    let again = server
        .mcp(
            &agent,
            "record_episode",
            json!({"episode": episode("ep-2"), "replace": true}),
        )
        .await;
    assert_eq!(
        again["result"]["structuredContent"]["replaced"], true,
        "{again}"
    );
    let (status, replaced) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/episodes?replace=true",
            Some(episode("ep-1")),
        )
        .await;
    assert_eq!(
        (status, &replaced["replaced"]),
        (StatusCode::OK, &json!(true))
    );
    let before = server.home.snapshot();
    for uri in ["/v1/episodes?replace=maybe", "/v1/episodes?replce=true"] {
        let (status, refused) = server
            .send(Some(&agent), Method::POST, uri, Some(episode("ep-1")))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("repl"), "{uri}: {message}");
    }
    assert_eq!(
        server.home.snapshot(),
        before,
        "a refused recording changed the store"
    );

    let (status, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/episodes/ep-1?budget=200",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let mcp = server
        .mcp(&agent, "get_episode", json!({"id": "ep-1", "budget": 200}))
        .await;
    let shown = &mcp["result"]["structuredContent"];
    let mut without_record = fields(&rest);
    without_record.retain(|f| f != "episode");
    assert_eq!(fields(shown), without_record, "{mcp}");
    assert_eq!(shown["text"], rest["text"]);
    assert!(rest["episode"]["decisions"].is_array(), "{rest}");

    let (status, rest) = server
        .send(Some(&agent), Method::GET, "/v1/sessions/s-1/episodes", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let mcp = server
        .mcp(&agent, "session_episodes", json!({"session": "s-1"}))
        .await;
    let session = &mcp["result"]["structuredContent"];
    assert_eq!(session["session"], "s-1", "{mcp}");
    let texts = |v: &Value| -> Vec<Value> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["text"].clone())
            .collect()
    };
    assert_eq!(texts(session), texts(&rest));
    assert_eq!(texts(&rest).len(), 2, "{rest}");

    let (status, dot) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/graph/export?format=dot",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{dot}");
    let mcp = server
        .mcp(&agent, "export_causal_graph", json!({"format": "dot"}))
        .await;
    let exported = &mcp["result"]["structuredContent"];
    assert_eq!(exported["graph"], dot, "{mcp}");
    assert!(
        dot.as_str().unwrap().starts_with("digraph causal {"),
        "{dot}"
    );
    assert_eq!(exported["truncated"], false);
    let (status, json) = server
        .send(Some(&agent), Method::GET, "/v1/graph/export", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(json["nodes"].is_array(), "{json}");
}

/// An agent's own memory answers the same fields on REST and MCP: the core blocks, a stored
/// entry, `hits` of entries with their scores; archival search without words lists the newest
/// on both, and a bad mode is refused on both naming it, with nothing stored.
#[tokio::test]
async fn core_archival_and_log_memory_agree_on_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let core = json!({"skill": SKILL, "block": "user", "text": "Ana leads EU checkout."});
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::PUT,
            "/v1/memory/core",
            Some(core.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let mcp = server.mcp(&agent, "core_memory_write", core).await;
    let written = &mcp["result"]["structuredContent"];
    assert_eq!(fields(written), fields(&rest), "{mcp}");
    assert_eq!(fields(&written["blocks"][0]), fields(&rest["blocks"][0]));
    assert_eq!(written["blocks"][0]["versions"], 2, "{mcp}");
    let uri = format!("/v1/memory/core?skill={SKILL}");
    let (_, rest) = server.send(Some(&agent), Method::GET, &uri, None).await;
    let mcp = server
        .mcp(&agent, "core_memory_read", json!({"skill": SKILL}))
        .await;
    assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");

    let passage =
        json!({"skill": SKILL, "text": "Checkout runs on payments-eu.", "tags": ["infra"]});
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/memory/archival",
            Some(passage.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rest}");
    let mcp = server.mcp(&agent, "archival_memory_write", passage).await;
    let stored = &mcp["result"]["structuredContent"];
    assert_eq!(fields(stored), fields(&rest), "{mcp}");
    for (uri, arguments) in [
        (
            "/v1/memory/archival?query=checkout",
            json!({"query": "checkout"}),
        ),
        (
            "/v1/memory/archival?q=checkout",
            json!({"query": "checkout"}),
        ),
        ("/v1/memory/archival?limit=5", json!({"limit": 5})),
    ] {
        let (status, rest) = server.send(Some(&agent), Method::GET, uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {rest}");
        let mcp = server
            .mcp(&agent, "archival_memory_search", arguments)
            .await;
        let found = &mcp["result"]["structuredContent"];
        assert_eq!(found, &rest, "{uri}: {mcp}");
        assert_eq!(rest["hits"].as_array().unwrap().len(), 2, "{uri}: {rest}");
        assert!(rest["hits"][0]["score"].is_number(), "{rest}");
    }

    let said =
        json!({"skill": SKILL, "session": "chat-1", "speaker": "user", "text": "refund please"});
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/memory/recall",
            Some(said.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rest}");
    let mcp = server.mcp(&agent, "conversation_log_write", said).await;
    assert_eq!(
        fields(&mcp["result"]["structuredContent"]),
        fields(&rest),
        "{mcp}"
    );
    let uri = format!("/v1/memory/recall?skill={SKILL}&session=chat-1");
    let (_, rest) = server.send(Some(&agent), Method::GET, &uri, None).await;
    let mcp = server
        .mcp(
            &agent,
            "conversation_log_read",
            json!({"skill": SKILL, "session": "chat-1"}),
        )
        .await;
    assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");
    assert_eq!(rest["hits"].as_array().unwrap().len(), 2, "{rest}");

    let before = server.home.snapshot();
    let merge = json!({"skill": SKILL, "block": "user", "text": "x", "mode": "merge"});
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::PUT,
            "/v1/memory/core",
            Some(merge.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{rest}");
    let mcp = server.mcp(&agent, "core_memory_write", merge).await;
    assert_eq!(mcp["result"]["isError"], true, "{mcp}");
    let refused = &mcp["result"]["structuredContent"]["error"];
    assert_eq!(refused["message"], rest["error"]["message"], "{mcp}");
    assert!(
        rest["error"]["message"].as_str().unwrap().contains("mode"),
        "{rest}"
    );
    assert_eq!(
        server.home.snapshot(),
        before,
        "a refused write changed the store"
    );
}

/// A reviewer's queue and decisions answer the same fields on REST and MCP: a page of the
/// queue (`items`, `next_offset`) read the same way, the moved lessons whole with private data
/// masked, and an unknown decision refused in the same words with nothing moved.
#[tokio::test]
async fn the_review_queue_and_decisions_agree_on_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig {
        curation: lore_core::model::CurationMode::Review,
        human_corrections: lore_engine::HumanCorrections::Review,
        ..EngineConfig::default()
    });
    let (admin, _) = server.token(Role::Admin);
    let (reviewer, _) = server.token(Role::Reviewer);
    let execution = server
        .record(&admin, json!({"ticket": "checkout down"}))
        .await;
    for text in [
        "When tickets report outages, priority must be urgent.",
        "Summaries must name the failing page.",
    ] {
        let body = json!({"skill": SKILL, "execution_id": execution, "text": text});
        let (status, made) = server
            .send(Some(&admin), Method::POST, "/v1/corrections", Some(body))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
    }
    let (status, rest) = server
        .send(Some(&reviewer), Method::GET, "/v1/review?limit=1", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let mcp = server
        .mcp(
            &reviewer,
            "review_queue",
            json!({"limit": 1, "status": "needs_review"}),
        )
        .await;
    let queue = &mcp["result"]["structuredContent"];
    assert_eq!(queue, &rest, "{mcp}");
    assert_eq!(rest["next_offset"], 1, "{rest}");
    let first = rest["items"][0]["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, second) = server
        .send(Some(&reviewer), Method::GET, "/v1/review?offset=1", None)
        .await;
    let second = second["items"][0]["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let before = server.home.snapshot();
    let bad = json!({"ids": [first], "reason": "r"});
    let (status, rest) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/review/bless",
            Some(bad.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{rest}");
    let mut arguments = bad;
    arguments["decision"] = json!("bless");
    let mcp = server.mcp(&reviewer, "review_lessons", arguments).await;
    assert_eq!(mcp["result"]["isError"], true, "{mcp}");
    let refused = &mcp["result"]["structuredContent"]["error"];
    assert_eq!(refused["message"], rest["error"]["message"], "{mcp}");
    assert_eq!(
        server.home.snapshot(),
        before,
        "a refused decision moved a lesson"
    );

    let (status, rest) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/review/approve",
            Some(json!({"ids": [first]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let mcp = server
        .mcp(
            &reviewer,
            "review_lessons",
            json!({"decision": "approve", "ids": [second], "reason": "right"}),
        )
        .await;
    let done = &mcp["result"]["structuredContent"];
    assert_eq!(
        fields(&done["lessons"][0]),
        fields(&rest["lessons"][0]),
        "{mcp}"
    );
    assert_eq!(done["lessons"][0]["status"], "approved", "{mcp}");
    assert_eq!(rest["lessons"][0]["status"], "approved", "{rest}");
}

/// The lesson listing is one operation on both doors: the same filter names (`status` as a
/// list or separated by commas), the same page, and the same refusal of `raw` to an agent.
#[tokio::test]
async fn lessons_are_listed_alike_on_every_door() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let (reviewer, _) = server.token(Role::Reviewer);
    for ticket in ["EU checkout 500s", "US login fails"] {
        let id = server.record(&reviewer, json!({"ticket": ticket})).await;
        let correction = json!({"skill": SKILL, "execution_id": id,
            "correction": format!("When a ticket says {ticket}, priority must be urgent.")});
        let (status, body) = server
            .send(
                Some(&reviewer),
                Method::POST,
                "/v1/corrections",
                Some(correction),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/lessons?status=approved,trial&limit=1",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    assert_eq!(rest["items"].as_array().map(Vec::len), Some(1), "{rest}");
    assert_eq!(rest["next_offset"], 1, "{rest}");
    for status in [json!("approved,trial"), json!(["approved", "trial"])] {
        let mcp = server
            .mcp(
                &agent,
                "list_lessons",
                json!({"status": status, "limit": 1}),
            )
            .await;
        assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");
    }
    // A page as large as REST's is a page over MCP too.
    let mcp = server
        .mcp(&agent, "list_lessons", json!({"limit": 200}))
        .await;
    let items = &mcp["result"]["structuredContent"]["items"];
    assert_eq!(items.as_array().map(Vec::len), Some(2), "{mcp}");

    let (status, refused) = server
        .send(Some(&agent), Method::GET, "/v1/lessons?raw=true", None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    let mcp = server
        .mcp(&agent, "list_lessons", json!({"raw": true}))
        .await;
    assert_eq!(mcp["result"]["isError"], true, "{mcp}");
    let error = &mcp["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], refused["error"]["code"], "{mcp}");
}

/// Search and status are one operation each: the same answer on both doors for the same
/// token, the store's location kept from a non-admin on both, a blank search refused alike.
#[tokio::test]
async fn search_and_status_answer_alike_on_every_door() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let id = server
        .record(&agent, json!({"ticket": "ledger totals are off"}))
        .await;
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/search?query=ledger%20totals&limit=3",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    assert!(
        rest["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["id"] == id.as_str()),
        "{rest}"
    );
    assert_eq!(rest["stopped"], "single", "{rest}");
    let mcp = server
        .mcp(
            &agent,
            "search_memory",
            json!({"query": "ledger totals", "limit": 3}),
        )
        .await;
    assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");

    let (status, refused) = server
        .send(Some(&agent), Method::GET, "/v1/search?query=%20", None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let mcp = server
        .mcp(&agent, "search_memory", json!({"query": " "}))
        .await;
    let error = &mcp["result"]["structuredContent"]["error"];
    assert_eq!(error, &refused["error"], "{mcp}");

    let (status, rest) = server
        .send(Some(&agent), Method::GET, "/v1/status", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    assert_eq!(rest["store"]["location"], "", "{rest}");
    assert_eq!(rest["counts"]["executions"], 1, "{rest}");
    let mcp = server.mcp(&agent, "memory_status", json!({})).await;
    assert_eq!(mcp["result"]["structuredContent"], rest, "{mcp}");
}
