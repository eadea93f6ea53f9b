//! Security defects, each as an attack that used to work: an agent token passing as a
//! person, secrets read back raw by agents and written into a skill's files, and a server
//! started before any token existed staying open after one was made.

use crate::common::server::Server;
use crate::common::{Home, SKILL};
use axum::http::{Method, StatusCode};
use lore_core::model::CurationMode;
use lore_engine::EngineConfig;
use lore_server::auth::{Role, TokenFile};
use serde_json::{Value, json};

/// Personal data and a key, as an attacker's input and a careless correction carry them.
const EMAIL: &str = "jane.doe@example.com";
const CARD: &str = "4111 1111 1111 1111";
const KEY: &str = "sk-live_0123456789abcdefgh";

fn review_curation() -> EngineConfig {
    EngineConfig {
        curation: CurationMode::Review,
        ..EngineConfig::default()
    }
}

/// The lesson's audit trail, read as the store holds it.
fn audit_of(home: &Home, id: &str) -> Vec<lore_core::model::AuditEntry> {
    let id = lore_core::id::LessonId::parse(id).unwrap();
    home.engine.lesson_audit(&id).unwrap()
}

#[tokio::test]
async fn an_agent_token_cannot_pass_its_correction_off_as_a_persons() {
    let server = Server::with_tokens(review_curation());
    let (agent, agent_id) = server.token(Role::Agent);
    let execution = server
        .record(&agent, json!({"ticket": "EU checkout"}))
        .await;
    let text = "When many customers see errors, priority must be urgent.";

    // Naming the author in the body is refused, whatever it claims, and nothing is stored.
    let before = server.home.snapshot();
    for (field, value) in [("author_kind", json!("human")), ("author", json!("mike"))] {
        let mut body = json!({"skill": SKILL, "execution_id": execution, "text": text});
        body[field] = value;
        let (status, answer) = server
            .send(Some(&agent), Method::POST, "/v1/corrections", Some(body))
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{field}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field}: {message}");
    }
    assert_eq!(
        server.home.snapshot(),
        before,
        "a refused correction was stored"
    );

    // The token says who wrote it: an agent, whose lesson waits for review.
    let (status, answer) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": execution, "text": text})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["correction"]["author_kind"], "agent", "{answer}");
    assert_eq!(answer["correction"]["author"], json!(agent_id), "{answer}");
    assert_eq!(answer["lesson"]["status"], "needs_review", "{answer}");
    let lesson = answer["lesson"]["id"].as_str().unwrap().to_owned();
    let (_, prompt) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/skills/support/summarize-ticket/prompt",
            None,
        )
        .await;
    assert!(
        !prompt.to_string().contains("must be urgent"),
        "an agent's lesson reached the prompt unreviewed: {prompt}"
    );
    let audit = audit_of(&server.home, &lesson);
    assert!(
        audit.iter().all(|a| a.actor == agent_id),
        "the audit does not name the token: {audit:?}"
    );

    // MCP files the same request the same way, and takes no author either.
    let result = server
        .mcp(
            &agent,
            "correct",
            json!({"skill": SKILL, "execution_id": execution,
                   "correction": "Always name the region in the summary."}),
        )
        .await;
    let lesson = &result["result"]["structuredContent"]["lesson"];
    assert_eq!(lesson["status"], "needs_review", "{result}");
    let audit = audit_of(&server.home, lesson["id"].as_str().unwrap());
    assert!(audit.iter().all(|a| a.actor == agent_id), "{audit:?}");

    // Reviewers' decisions and edits are attributed to their token, never to a name sent along.
    let (reviewer, reviewer_id) = server.token(Role::Reviewer);
    let ids = json!([answer["lesson"]["id"]]);
    let (status, refused) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/review/approve",
            Some(json!({"ids": ids, "reason": "checked", "by": "mike"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("by"));
    for (method, uri, body) in [
        (
            Method::PATCH,
            format!("/v1/lessons/{}", answer["lesson"]["id"].as_str().unwrap()),
            json!({"confidence": 0.9, "by": "mike"}),
        ),
        (
            Method::POST,
            format!(
                "/v1/lessons/{}/retire",
                answer["lesson"]["id"].as_str().unwrap()
            ),
            json!({"by": "mike"}),
        ),
    ] {
        let (status, refused) = server.send(Some(&reviewer), method, &uri, Some(body)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {refused}");
    }
    let (status, decided) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/review/approve",
            Some(json!({"ids": ids, "reason": "checked"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let last = audit_of(&server.home, answer["lesson"]["id"].as_str().unwrap())
        .pop()
        .unwrap();
    assert_eq!(last.actor, reviewer_id);
}

#[tokio::test]
async fn an_open_server_records_its_anonymous_principal() {
    let server = Server::open();
    let (status, executed) = server
        .send(
            None,
            Method::POST,
            "/v1/executions",
            Some(json!({"skill": SKILL, "input": {}, "output": {}})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{executed}");
    let (status, answer) = server
        .send(
            None,
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": executed["id"],
                        "text": "Always name the region in the summary."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let audit = audit_of(&server.home, answer["lesson"]["id"].as_str().unwrap());
    assert!(audit.iter().all(|a| a.actor == "anonymous"), "{audit:?}");
}

/// Seeds an execution whose input holds personal data and a key, and a correction that quotes a
/// card number (so its lesson is `sensitive`); returns (execution, lesson).
async fn secrets(server: &Server, token: &str) -> (String, String) {
    let execution = server
        .record(
            token,
            json!({"ticket": format!("Refund for {EMAIL}, card {CARD}, api_key = {KEY}")}),
        )
        .await;
    let (status, answer) = server
        .send(
            Some(token),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": execution,
                        "text": format!("Never echo the card {CARD}; mail {EMAIL} instead.")})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["lesson"]["status"], "sensitive", "{answer}");
    let raw = answer.to_string();
    for secret in [EMAIL, CARD, KEY] {
        assert!(
            !raw.contains(secret),
            "the correction's answer echoed {secret}: {raw}"
        );
    }
    (
        execution,
        answer["lesson"]["id"].as_str().unwrap().to_owned(),
    )
}

fn assert_clean(what: &str, body: &Value) {
    let text = body.to_string();
    for secret in [EMAIL, CARD, KEY] {
        assert!(!text.contains(secret), "{what} leaked {secret}: {text}");
    }
}

#[tokio::test]
async fn agents_read_secrets_redacted_and_raw_reads_are_reviewed_and_audited() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    let (execution, lesson) = secrets(&server, &agent).await;

    for uri in [
        "/v1/lessons?status=sensitive".to_owned(),
        "/v1/lessons".to_owned(),
        format!("/v1/lessons/{lesson}"),
        "/v1/executions".to_owned(),
        format!("/v1/executions/{execution}"),
        "/v1/search?q=card".to_owned(),
    ] {
        let (status, body) = server.send(Some(&agent), Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert_clean(&uri, &body);
    }
    for uri in [
        format!("/v1/lessons/{lesson}?raw=true"),
        "/v1/lessons?raw=true".to_owned(),
        format!("/v1/executions/{execution}?raw=true"),
        "/v1/executions?raw=true".to_owned(),
    ] {
        let (status, body) = server.send(Some(&agent), Method::GET, &uri, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{uri}: {body}");
    }
    for (tool, args) in [
        ("list_lessons", json!({"statuses": ["sensitive"]})),
        ("get_lesson", json!({"id": lesson})),
    ] {
        let result = server.mcp(&agent, tool, args).await;
        assert!(result["result"].is_object(), "{tool}: {result}");
        assert_clean(tool, &result);
    }
    let refused = server
        .mcp(&agent, "get_lesson", json!({"id": lesson, "raw": true}))
        .await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert_clean("get_lesson raw", &refused);

    // A reviewer who asks sees the text as written, and the read is on record.
    let (reviewer, reviewer_id) = server.token(Role::Reviewer);
    let (status, body) = server
        .send(
            Some(&reviewer),
            Method::GET,
            &format!("/v1/lessons/{lesson}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_clean("a reviewer's default read", &body);
    let (status, body) = server
        .send(
            Some(&reviewer),
            Method::GET,
            &format!("/v1/lessons/{lesson}?raw=true"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["lesson"].to_string().contains(CARD), "{body}");
    let disclosed = |subject: &str| {
        server
            .home
            .engine
            .export_records()
            .unwrap()
            .into_iter()
            .filter_map(|r| match r {
                lore_core::ports::store::Record::Audit(a) => Some(a),
                _ => None,
            })
            .filter(|a| {
                a.subject == subject && a.action == lore_core::model::AuditAction::Disclosed
            })
            .map(|a| a.actor)
            .collect::<Vec<_>>()
    };
    assert_eq!(disclosed(&lesson), std::slice::from_ref(&reviewer_id));
    let (status, body) = server
        .send(
            Some(&reviewer),
            Method::GET,
            &format!("/v1/executions/{execution}?raw=true"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.to_string().contains(EMAIL), "{body}");
    assert_eq!(disclosed(&execution), [reviewer_id]);
}

#[tokio::test]
async fn no_secret_reaches_a_skills_files() {
    let server = Server::with_tokens(EngineConfig::default());
    let (agent, _) = server.token(Role::Agent);
    // A sensitive correction: no regression case at all.
    secrets(&server, &agent).await;
    // A clean correction of an execution whose input holds secrets: a case, redacted.
    let execution = server
        .record(
            &agent,
            json!({"ticket": format!("Customer {EMAIL} paid with {CARD}")}),
        )
        .await;
    let (status, answer) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": execution,
                        "text": "When a payment fails, priority must be urgent."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert!(answer["regression_test"].is_object(), "{answer}");

    let dir = server.home.dir.path().join("skills").join(SKILL);
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let tests = std::fs::read_to_string(
        server
            .home
            .dir
            .path()
            .join("skills")
            .join(SKILL)
            .join("tests/lore.jsonl"),
    )
    .unwrap();
    assert_eq!(
        tests.lines().count(),
        1,
        "a sensitive correction wrote a case: {tests}"
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for secret in [EMAIL, CARD, KEY] {
            assert!(
                !text.contains(secret),
                "{} holds {secret}:\n{text}",
                file.display()
            );
        }
    }
}

#[tokio::test]
async fn a_token_made_while_the_server_runs_closes_it() {
    let server = Server::open();
    let write = json!({"skill": SKILL, "input": {}, "output": {}});
    let (status, _) = server
        .send(None, Method::POST, "/v1/executions", Some(write.clone()))
        .await;
    assert_eq!(status, StatusCode::CREATED, "open before any token");

    let (token, _) = server.token(Role::Admin);
    for (method, uri, body) in [
        (Method::POST, "/v1/executions", Some(write.clone())),
        (Method::GET, "/metrics", None),
        (Method::GET, "/v1/review", None),
        (Method::GET, "/v1/lessons", None),
    ] {
        let (status, answer) = server.send(None, method, uri, body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri}: {answer}");
    }
    let (status, _) = server
        .send(None, Method::POST, "/mcp", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "MCP stayed open");
    let (status, _) = server
        .send(Some(&token), Method::POST, "/v1/executions", Some(write))
        .await;
    assert_eq!(status, StatusCode::CREATED);

    // Revoking every token does not open it again: it fails closed.
    let id = TokenFile::load(&server.tokens).unwrap().records()[0]
        .id
        .clone();
    TokenFile::load(&server.tokens)
        .unwrap()
        .revoke(&id)
        .unwrap();
    let (status, _) = server.send(None, Method::GET, "/v1/status", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
