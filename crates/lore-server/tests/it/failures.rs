//! A failed step without error text, reported through REST and MCP: both doors take its
//! transition and give it the same fingerprint and tags.

use axum::http::{Method, StatusCode};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::json;

use crate::common::server::Server;

#[tokio::test]
async fn a_failed_transition_is_fingerprinted_alike_through_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let id = server.record(&admin, json!({"task": "reach the kitchen"})).await;
    let step = |position: &str| {
        json!({
            "channel": "hard_failure",
            "action": "move north",
            "state_before": position,
            "state_after": position,
            "failure_reason": "collision",
        })
    };
    let uri = format!("/v1/executions/{id}/signals");
    let (status, rest) = server
        .send(Some(&admin), Method::POST, &uri, Some(step("hall at (4, 5)")))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{rest}");
    let mut arguments = step("hall at (9, 1)");
    arguments["execution_id"] = json!(id);
    let answer = server.mcp(&admin, "report_signal", arguments).await;
    let mcp = &answer["result"]["structuredContent"];
    assert_eq!(
        rest["fingerprint"],
        "transition hall at <num> > move north > hall at <num> : collision"
    );
    assert_eq!(mcp["fingerprint"], rest["fingerprint"], "{answer}");
    assert_eq!(mcp["tags"], rest["tags"]);
    assert!(rest["tags"].as_array().unwrap().contains(&json!("state_stall")));

    // Neither door takes a failure with nothing to go on, and they say why alike.
    let before = server.home.snapshot();
    let (status, refused) = server
        .send(
            Some(&admin),
            Method::POST,
            &uri,
            Some(json!({"channel": "hard_failure"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    assert!(refused.to_string().contains("states before"), "{refused}");
    let answer = server
        .mcp(
            &admin,
            "report_signal",
            json!({"execution_id": id, "channel": "hard_failure"}),
        )
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(answer.to_string().contains("states before"), "{answer}");
    assert_eq!(server.home.snapshot(), before);
}
