//! Organization memory through REST and MCP: members' tokens carry role and department, a
//! member's lesson is its own until propagated, and the org pool's proposals are approved by a
//! person's credential only — no body field, tool argument or setting gets around it.

use axum::http::{Method, StatusCode};
use lore_core::model::CurationMode;
use lore_engine::{EngineConfig, HumanCorrections, OrgConfig};
use lore_server::auth::Role;
use serde_json::{Value, json};

use crate::common::SKILL;
use crate::common::server::Server;

const RULE: &str = "Always quote the customer's own words when the ticket reports an outage.";

/// A server in the most permissive curation there is: auto, people's corrections approved.
fn server() -> Server {
    Server::with_tokens(EngineConfig {
        curation: CurationMode::Auto,
        human_corrections: HumanCorrections::Approve,
        org: OrgConfig {
            min_confidence: 0.0,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    })
}

fn member(server: &Server, agent: &str) -> String {
    let scope = format!("domain:support,agent:{agent},role:triage,department:support");
    server.scoped_token(Role::Agent, &scope).0
}

/// `token` records a run and corrects it with `text`; the lesson's ID.
async fn learn(server: &Server, token: &str, text: &str) -> String {
    let run = server.record(token, json!({"ticket": "outage"})).await;
    let (status, body) = server
        .send(
            Some(token),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": run, "text": text})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["lesson"]["id"].as_str().unwrap().to_owned()
}

async fn status_of(server: &Server, token: &str, id: &str) -> Value {
    let (status, body) = server
        .send(Some(token), Method::GET, &format!("/v1/lessons/{id}"), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["lesson"]["status"].clone()
}

/// Three members learn one rule and a reviewer runs the pool; the proposal's ID.
async fn proposal(server: &Server, reviewer: &str) -> String {
    for agent in ["a", "b", "c"] {
        learn(server, &member(server, agent), RULE).await;
    }
    let (status, body) = server
        .send(
            Some(reviewer),
            Method::POST,
            "/v1/org/pool",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["proposed"], 1, "{body}");
    body["patterns"][0]["proposal"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_members_lesson_is_its_own_until_it_propagates_it_over_rest() {
    let server = server();
    let (a, b) = (member(&server, "a"), member(&server, "b"));
    learn(&server, &b, "Never guess the customer's region.").await;
    let lesson = learn(&server, &a, RULE).await;
    let uri = format!("/v1/lessons/{lesson}");
    assert_eq!(
        server.send(Some(&b), Method::GET, &uri, None).await.0,
        StatusCode::NOT_FOUND
    );
    let (_, listed) = server
        .send(Some(&b), Method::GET, "/v1/lessons", None)
        .await;
    assert!(!listed.to_string().contains(&lesson), "{listed}");

    // Another agent may not propagate it; a bad strategy is named; the owner propagates it.
    let propagate = format!("/v1/lessons/{lesson}/propagate");
    let (status, _) = server
        .send(
            Some(&b),
            Method::POST,
            &propagate,
            Some(json!({"strategy": "role"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = server
        .send(
            Some(&a),
            Method::POST,
            &propagate,
            Some(json!({"strategy": "everyone"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.to_string().contains("role or department"), "{body}");
    let (status, body) = server
        .send(
            Some(&a),
            Method::POST,
            &propagate,
            Some(json!({"strategy": "role"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["targets"], json!(["b"]), "never back to a: {body}");
    assert_eq!(
        server.send(Some(&b), Method::GET, &uri, None).await.0,
        StatusCode::OK
    );

    let (_, me) = server.send(Some(&a), Method::GET, "/v1/whoami", None).await;
    assert_eq!(
        (
            &me["agent"],
            &me["org_role"],
            &me["department"],
            &me["role"]
        ),
        (
            &json!("a"),
            &json!("triage"),
            &json!("support"),
            &json!("agent")
        ),
        "{me}"
    );

    let (admin, _) = server.token(Role::Admin);
    let (status, body) = server
        .send(Some(&admin), Method::GET, "/v1/org/members", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["members"][0]["role"], "triage", "{body}");
}

/// The lesson count `GET /v1/status` answers `token`.
async fn counted(server: &Server, token: &str) -> Value {
    let (status, body) = server
        .send(Some(token), Method::GET, "/v1/status", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["counts"].clone()
}

#[tokio::test]
async fn a_members_status_counts_what_it_can_list_over_rest() {
    let server = server();
    let (a, b) = (member(&server, "a"), member(&server, "b"));
    let (reviewer, _) = server.token(Role::Reviewer);
    let lesson = learn(&server, &a, RULE).await;
    learn(&server, &b, "Never guess the customer's region.").await;
    assert_eq!(counted(&server, &reviewer).await["lessons"], 2);
    for token in [&a, &b] {
        let counts = counted(&server, token).await;
        let (_, listed) = server
            .send(Some(token), Method::GET, "/v1/lessons", None)
            .await;
        let listed = listed["items"].as_array().map_or(0, Vec::len);
        assert_eq!(counts["lessons"], 1, "{counts}");
        assert_eq!(counts["lessons"], listed, "{counts}");
    }
    let propagate = format!("/v1/lessons/{lesson}/propagate");
    let body = json!({"strategy": "role"});
    let (status, _) = server
        .send(Some(&a), Method::POST, &propagate, Some(body))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(counted(&server, &b).await["lessons"], 2);
    let stranger = server
        .scoped_token(Role::Agent, "domain:support,agent:z,role:billing")
        .0;
    assert_eq!(counted(&server, &stranger).await["lessons"], 0);
}

#[tokio::test]
async fn no_request_approves_an_org_proposal_but_a_persons_review_over_rest() {
    let server = server();
    let (reviewer, _) = server.scoped_token(Role::Reviewer, "domain:support");
    let a = member(&server, "a");

    // An agent cannot run the pool; a request cannot ask it to approve what it proposes.
    let (status, _) = server
        .send(Some(&a), Method::POST, "/v1/org/pool", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    for body in [
        json!({"auto_approve": true}),
        json!({"requires_human_approval": false}),
        json!({"status": "approved"}),
    ] {
        let (status, answer) = server
            .send(Some(&reviewer), Method::POST, "/v1/org/pool", Some(body))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    }

    let id = proposal(&server, &reviewer).await;
    assert_eq!(status_of(&server, &reviewer, &id).await, "needs_review");

    // An agent's approval, an edit that names a status, and a member's own review: refused.
    let approve = json!({"ids": [id], "reason": "mine"});
    let (status, _) = server
        .send(
            Some(&a),
            Method::POST,
            "/v1/review/approve",
            Some(approve.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = server
        .send(
            Some(&reviewer),
            Method::PATCH,
            &format!("/v1/lessons/{id}"),
            Some(json!({"status": "approved"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(status_of(&server, &reviewer, &id).await, "needs_review");

    // The reviewer's token is a person's: approved, and every member recalls it.
    let (status, body) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/review/approve",
            Some(approve),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(status_of(&server, &reviewer, &id).await, "approved");
    let stranger = member(&server, "z");
    let (_, recalled) = server
        .send(
            Some(&stranger),
            Method::POST,
            "/v1/recall",
            Some(json!({"query": "quote the customer's words outage"})),
        )
        .await;
    assert!(recalled.to_string().contains(&id), "{recalled}");
}

fn tool_text(answer: &Value) -> String {
    answer.to_string()
}

fn is_tool_error(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(true) || answer.get("error").is_some()
}

#[tokio::test]
async fn no_tool_call_approves_an_org_proposal_but_a_persons_token_over_mcp() {
    let server = server();
    let (reviewer, _) = server.scoped_token(Role::Reviewer, "domain:support");
    let a = member(&server, "a");
    let answer = server.mcp(&a, "org_pool", json!({})).await;
    assert!(is_tool_error(&answer), "{answer}");
    let answer = server
        .mcp(&reviewer, "org_pool", json!({"auto_approve": true}))
        .await;
    assert!(is_tool_error(&answer), "{answer}");

    let answer = server.mcp(&reviewer, "org_pool", json!({})).await;
    assert!(!is_tool_error(&answer), "{answer}");
    let id = proposal(&server, &reviewer).await;

    let approve = json!({"decision": "approve", "ids": [id], "reason": "mine"});
    let answer = server.mcp(&a, "review_lessons", approve.clone()).await;
    assert!(is_tool_error(&answer), "{answer}");
    assert_eq!(status_of(&server, &reviewer, &id).await, "needs_review");

    let answer = server.mcp(&reviewer, "review_lessons", approve).await;
    assert!(!is_tool_error(&answer), "{}", tool_text(&answer));
    assert_eq!(status_of(&server, &reviewer, &id).await, "approved");
}

#[tokio::test]
async fn without_a_credential_mcp_is_a_model_and_never_approves_an_org_lesson() {
    // A server with no tokens: REST's anonymous caller is the machine's user, a person, but an
    // MCP client without a credential is a model.
    let server = Server::open();
    {
        let engine = &server.home.engine;
        let scoped = |agent: &str| {
            engine.scoped(lore_core::Scope {
                agent: Some(agent.into()),
                role: Some("triage".into()),
                ..lore_core::Scope::default()
            })
        };
        for agent in ["a", "b", "c"] {
            let who = scoped(agent);
            let run = who
                .record_execution(lore_engine::NewExecution {
                    skill: lore_core::SkillPath::parse(SKILL).unwrap(),
                    input: json!({}),
                    output: json!({}),
                    outcome: lore_core::model::Outcome::Rejected,
                    cost_usd: None,
                    latency_ms: None,
                    model: None,
                    session: None,
                    lessons_shown: Vec::new(),
                })
                .unwrap();
            who.correct(lore_engine::NewCorrection {
                skill: lore_core::SkillPath::parse(SKILL).unwrap(),
                execution_id: run.id,
                text: RULE.into(),
                author_kind: lore_core::model::AuthorKind::Agent,
                author: None,
            })
            .unwrap();
        }
    }
    let answer = server.mcp("none", "org_pool", json!({})).await;
    assert!(
        is_tool_error(&answer),
        "a model does not run the pool: {answer}"
    );
    let (status, body) = server
        .send(None, Method::POST, "/v1/org/pool", Some(json!({})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["patterns"][0]["proposal"].as_str().unwrap().to_owned();
    let approve = json!({"decision": "approve", "ids": [id], "reason": "mine"});
    let answer = server.mcp("none", "review_lessons", approve).await;
    assert!(is_tool_error(&answer), "{answer}");
    assert!(answer.to_string().contains("person"), "{answer}");
    let (_, body) = server
        .send(None, Method::GET, &format!("/v1/lessons/{id}"), None)
        .await;
    assert_eq!(body["lesson"]["status"], "needs_review");
}
