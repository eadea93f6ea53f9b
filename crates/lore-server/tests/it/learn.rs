//! Learning from what exists, over REST and MCP: a correction with no rule answers `lesson: null` and why,
//! recall on an empty store answers with no lessons, and lessons that already exist are learned
//! in bulk (`POST /v1/lessons/import`, `learn_lessons`), once.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::SKILL;
use crate::common::server::Server;

fn counts(server: &Server) -> (usize, usize) {
    use lore_core::ports::store::Record;
    let records = server.home.snapshot();
    let corrections = records
        .iter()
        .filter(|r| matches!(r, Record::Correction(_)))
        .count();
    let lessons = records
        .iter()
        .filter(|r| matches!(r, Record::Lesson(_)))
        .count();
    (corrections, lessons)
}

async fn post_text(server: &Server, token: &str, body: &str, kind: &str) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/lessons/import")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, kind)
        .body(Body::from(body.to_owned()))
        .unwrap();
    let res = server.app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn recall_on_an_empty_store_answers_with_no_lessons() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let query = json!({"query": "checkout errors priority", "skill": SKILL});
    let (status, body) = server
        .send(Some(&agent), Method::POST, "/v1/recall", Some(query))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["lessons"], json!([]), "{body}");
    let (status, body) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/recall",
            Some(json!({"query": "anything"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["lessons"], json!([]), "{body}");

    let result = server
        .mcp(
            &agent,
            "recall_memory",
            json!({"query": "checkout errors", "skill": SKILL}),
        )
        .await;
    let answer = &result["result"];
    assert_ne!(answer["isError"], true, "{result}");
    assert_eq!(
        answer["structuredContent"]["lessons"],
        json!([]),
        "{result}"
    );
}

#[tokio::test]
async fn a_correction_with_no_rule_is_kept_as_feedback_and_says_so() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let execution = server.record(&admin, json!({"ticket": "t"})).await;
    let (status, body) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": execution, "text": "This is wrong."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["lesson"], Value::Null, "{body}");
    let why = body["lesson_skipped"].as_str().unwrap();
    assert!(why.contains("say what should be done instead"), "{why}");
    assert_eq!(body["regression_test"], Value::Null, "{body}");
    assert_eq!(counts(&server), (1, 0));

    let (agent, _) = server.token(Role::Agent);
    let result = server
        .mcp(
            &agent,
            "correct",
            json!({"skill": SKILL, "execution_id": execution, "correction": "no"}),
        )
        .await;
    let content = &result["result"]["structuredContent"];
    assert_eq!(content["lesson"], Value::Null, "{result}");
    assert!(
        content["lesson_skipped"]
            .as_str()
            .unwrap()
            .contains("say what should be done instead"),
        "{result}"
    );
    assert_eq!(counts(&server), (2, 0));
}

const LINES: &str = r#"{"skill":"support/summarize-ticket","task":"Summarize a checkout ticket","failed":"no page named","lesson":"Always name the failing page in the summary."}
{"skill":"support/summarize-ticket","task":"Triage an outage","lesson":"When many customers report errors, priority must be urgent.","tags":["priority"]}
"#;

#[tokio::test]
async fn lessons_are_imported_once_as_lines_or_an_array_by_an_agent() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let (status, body) = post_text(&server, &agent, LINES, "application/x-ndjson").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        (body["learned"].as_u64(), body["already"].as_u64()),
        (Some(2), Some(0))
    );
    // An agent's lessons go on trial: the token's role decides, never the body.
    assert_eq!(body["statuses"], json!({"trial": 2}), "{body}");
    assert_eq!(counts(&server), (2, 2));

    let (status, body) = post_text(&server, &agent, LINES, "application/x-ndjson").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["already"], 2, "{body}");
    assert_eq!(counts(&server), (2, 2));

    let array: Vec<Value> = LINES
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (status, body) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/lessons/import",
            Some(json!(array)),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["already"], 2, "{body}");

    let bad = format!(
        "{LINES}{}\n",
        r#"{"skill":"support/summarize-ticket","task":"t","lesson":"wrong"}"#
    );
    let bad = bad.replace("Always name", "Always, always name");
    let (status, body) = post_text(&server, &agent, &bad, "application/x-ndjson").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("line 3: lesson"), "{message}");
    assert_eq!(counts(&server), (2, 2), "a bad file stores nothing");

    let result = server
        .mcp(
            &agent,
            "learn_lessons",
            json!({"lessons": [
                {"skill": SKILL, "task": "Summarize a refund ticket",
                 "lesson": "Mention the refund amount when there is one."},
                array[0].clone(),
            ]}),
        )
        .await;
    let content = &result["result"]["structuredContent"];
    assert_eq!(content["learned"], 1, "{result}");
    assert_eq!(content["already"], 1, "{result}");
    // The answer REST gives, field for field: one operation behind both doors.
    assert_eq!(content["results"][0]["status"], "trial", "{result}");
    assert_eq!(content["results"][1]["outcome"], "already", "{result}");
    let result = server
        .mcp(
            &agent,
            "learn_lessons",
            json!({"lessons": [{"skill": SKILL, "task": "t", "lesson": ""}]}),
        )
        .await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("item 1: lesson"), "{text}");
    assert_eq!(counts(&server), (3, 3));
}
