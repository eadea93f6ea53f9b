//! Through REST and MCP alike: a failed step without error text, taken with its transition and
//! given the same fingerprint and tags by both doors, and an episode read by its session.

use axum::http::{Method, StatusCode};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::json;

use crate::common::server::Server;

#[tokio::test]
async fn a_failed_transition_is_fingerprinted_alike_through_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let id = server
        .record(&admin, json!({"task": "reach the kitchen"}))
        .await;
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
        .send(
            Some(&admin),
            Method::POST,
            &uri,
            Some(step("hall at (4, 5)")),
        )
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
    assert!(
        rest["tags"]
            .as_array()
            .unwrap()
            .contains(&json!("state_stall"))
    );

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

#[tokio::test]
async fn an_episode_is_read_by_its_session_through_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let episode = json!({
        "id": "EPI-S1", "session": "2026-01-01-session-126", "skill": crate::common::SKILL,
        "timestamp": "2026-01-01T17:00:00Z", "outcome": "success",
        "task": "Implement the MemoryRouter module", "decisions": [], "events": [], "lessons": []
    });
    let (status, made) = server
        .send(Some(&admin), Method::POST, "/v1/episodes", Some(episode))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let (status, read) = server
        .send(
            Some(&admin),
            Method::GET,
            "/v1/sessions/2026-01-01-session-126/episodes?budget=300",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["session"], "2026-01-01-session-126");
    assert_eq!(read["items"][0]["episode"]["id"], "EPI-S1");
    let text = read["items"][0]["text"].as_str().unwrap();
    assert!(text.contains("MemoryRouter"), "{read}");

    let answer = server
        .mcp(
            &admin,
            "session_episodes",
            json!({"session": "2026-01-01-session-126", "budget": 300}),
        )
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["items"][0]["text"], text,
        "{answer}"
    );

    let (status, _) = server
        .send(
            Some(&admin),
            Method::GET,
            "/v1/sessions/unknown/episodes",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for (arguments, named) in [
        (json!({}), "`id`"),
        (json!({"id": "EPI-S1", "session": "x"}), "`session`"),
    ] {
        let answer = server.mcp(&admin, "get_episode", arguments).await;
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(answer.to_string().contains(named), "{answer}");
    }
}

/// Recall after an error reads the error's kind of failure on every door: a lesson tagged
/// `sort_direction` is found from an error whose fingerprint it never saw, over REST and MCP
/// alike, and both say which tags they read.
#[tokio::test]
async fn recall_after_an_error_infers_its_tags_alike_through_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let lessons = json!([
        {"skill": crate::common::SKILL, "task": "Sort the report",
         "lesson": "Sort rows with --order asc; the tool has no --asc flag.", "tags": ["sort_direction"]},
        {"skill": crate::common::SKILL, "task": "Fetch the report",
         "lesson": "Retry the fetch once when the gateway times out.", "tags": ["timeout"]},
    ]);
    let (status, body) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/lessons/import",
            Some(lessons),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let error = "gridtool: unknown option '--asc' for sort";

    let (status, rest) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/recall",
            Some(json!({"query": "", "skill": crate::common::SKILL, "fingerprint": error})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let answer = server
        .mcp(
            &admin,
            "recall_memory",
            json!({"query": "", "skill": crate::common::SKILL, "error": error}),
        )
        .await;
    let mcp = &answer["result"]["structuredContent"];
    for found in [&rest, mcp] {
        let tags = found["inferred_tags"].as_array().unwrap();
        assert!(tags.contains(&json!("sort_direction")), "{found}");
        let lessons = found["lessons"].as_array().unwrap();
        assert_eq!(lessons.len(), 1, "{found}");
        assert!(
            found.to_string().contains("--order asc"),
            "the sort lesson is the one found: {found}"
        );
    }
    assert_eq!(rest["inferred_tags"], mcp["inferred_tags"]);
    assert_eq!(rest["lessons"][0]["id"], mcp["lessons"][0]["id"]);

    // Tags the caller named are not reported again as read from the error.
    let (_, named) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/recall",
            Some(
                json!({"query": "", "skill": crate::common::SKILL, "fingerprint": error,
                        "tags": ["sort_direction"]}),
            ),
        )
        .await;
    let tags = named["inferred_tags"].as_array().unwrap();
    assert!(!tags.contains(&json!("sort_direction")), "{named}");
}
