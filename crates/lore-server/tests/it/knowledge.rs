//! Knowledge over REST and MCP on a real SQLite file: ingest (reviewers only), list, recall
//! with provenance; bad bodies are refused with a 4xx naming the problem and store nothing.

use axum::http::{Method, StatusCode};
use lore_engine::EngineConfig;
use lore_server::auth::Role;
use serde_json::{Value, json};

use crate::common::SKILL;
use crate::common::server::Server;

const RUNBOOK: &str = "# Export worker\n\n## Restart\n\nWhen exports stall for more than five \
minutes, restart the export worker with `svc restart export` and watch the queue drain.\n\n\
## Contacts\n\nWrite to ops-team@example.com when a restart does not help.\n";

#[tokio::test]
async fn documents_are_ingested_listed_and_recalled_through_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (reviewer, _) = server.token(Role::Reviewer);
    let (agent, _) = server.token(Role::Agent);
    let body =
        json!({"skill": SKILL, "documents": [{"source": "docs/export.md", "text": RUNBOOK}]});

    let (status, answer) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/knowledge/documents",
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");

    let (status, report) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/knowledge/documents",
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["added"], 1);
    assert_eq!(report["documents"][0]["redacted"], 1, "{report}");
    let (_, again) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/knowledge/documents",
            Some(body),
        )
        .await;
    assert_eq!(
        (
            again["unchanged"].as_u64(),
            again["chunks_written"].as_u64()
        ),
        (Some(1), Some(0))
    );

    let (status, list) = server
        .send(Some(&agent), Method::GET, "/v1/knowledge/documents", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["documents"][0]["source"], "docs/export.md");
    assert_eq!(
        list["documents"][0]["ingested_by"]
            .as_str()
            .map(|s| s.starts_with("tok_")),
        Some(true),
        "{list}"
    );

    let (status, recall) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/knowledge/recall",
            Some(json!({"query": "exports are stalled, what do I restart?", "explain": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{recall}");
    assert_eq!(
        recall["chunks"][0]["heading"], "Export worker › Restart",
        "{recall}"
    );
    let text = recall["text"].as_str().unwrap();
    assert!(
        text.contains("docs/export.md, lines 3–5)\n> § Export worker › Restart"),
        "{text}"
    );
    assert!(text.contains("> When exports stall"), "{text}");
    assert!(!text.contains("ops-team@example.com"), "{text}");
    assert!(recall["explain"].is_array());

    let answer = server
        .mcp(
            &agent,
            "recall_knowledge",
            json!({"query": "restart the export worker", "limit": 1}),
        )
        .await;
    let structured = &answer["result"]["structuredContent"];
    assert_eq!(
        structured["chunks"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    // The same field names as over REST.
    let chunk = &structured["chunks"][0];
    assert_eq!(
        (&chunk["line_start"], &chunk["line_end"]),
        (&json!(3), &json!(5))
    );
    assert!(
        structured["text"]
            .as_str()
            .unwrap()
            .contains("> When exports stall")
    );
    let answer = server
        .mcp(
            &agent,
            "ingest_knowledge",
            json!({"skill": SKILL, "documents": [{"source": "x.md", "text": "X."}]}),
        )
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let answer = server.mcp(&agent, "list_knowledge", json!({})).await;
    assert_eq!(
        answer["result"]["structuredContent"]["documents"][0]["chunks"], 2,
        "{answer}"
    );
}

#[tokio::test]
async fn bad_bodies_are_refused_with_a_reason_and_store_nothing() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let cases = [
        (
            json!({"skill": SKILL, "documents": [{"source": "a.md", "text": "x"}, {"source": "a.md", "text": "y"}]}),
            "listed twice",
        ),
        (json!({"skill": "nodomain", "documents": []}), "skill"),
        (
            json!({"skill": SKILL, "documents": [{"source": "a.md", "text": "x"}], "max_tokens": 4}),
            "max_tokens",
        ),
        (
            json!({"skill": SKILL, "documents": [{"source": "a.md", "text": "x", "author": "me"}]}),
            "author",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = server
            .send(
                Some(&admin),
                Method::POST,
                "/v1/knowledge/documents",
                Some(body),
            )
            .await;
        assert!(status.is_client_error(), "{status} {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains(expected),
            "{answer}"
        );
    }
    let (status, answer) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/knowledge/recall",
            Some(json!({"query": "x", "limit": 0})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (_, list) = server
        .send(Some(&admin), Method::GET, "/v1/knowledge/documents", None)
        .await;
    assert_eq!(list["documents"], json!([]));
}

#[tokio::test]
async fn the_layered_context_stacks_lessons_then_knowledge_over_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (admin, _) = server.token(Role::Admin);
    let execution = server
        .record(&admin, json!({"ticket": "Exports stalled for an hour"}))
        .await;
    let (status, body) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": execution,
                "text": "When exports stall, restart the export worker before escalating."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let docs =
        json!({"skill": SKILL, "documents": [{"source": "docs/export.md", "text": RUNBOOK}]});
    let (status, _) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/knowledge/documents",
            Some(docs),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let (status, context) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/context",
            Some(json!({"query": "exports stall: restart the export worker", "layer_budget": 300, "total_budget": 500})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{context}");
    let layers = context["layers"].as_array().unwrap();
    let names: Vec<&str> = layers
        .iter()
        .map(|l| l["layer"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lessons", "decisions", "digest", "knowledge"]);
    assert_eq!(
        layers[1]["status"], "empty",
        "no decision was recorded: {context}"
    );
    assert_eq!(
        layers[2]["status"], "empty",
        "no digest was built: {context}"
    );
    for layer in [&layers[0], &layers[3]] {
        assert_eq!(layer["status"], "filled", "{context}");
        assert!(layer["tokens"].as_u64().unwrap() <= 300, "{layer}");
    }
    assert!(context["tokens"].as_u64().unwrap() <= 500);
    let text = context["text"].as_str().unwrap();
    assert!(text.find("## Lessons learned").unwrap() < text.find("## Team knowledge").unwrap());

    let (status, answer) = server
        .send(
            Some(&admin),
            Method::POST,
            "/v1/context",
            Some(json!({"query": "x", "total_budget": 0})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("total_budget")
    );

    let answer = server
        .mcp(
            &admin,
            "layered_context",
            json!({"query": "restart the export worker"}),
        )
        .await;
    let view = &answer["result"]["structuredContent"];
    assert_eq!(view["layers"][3]["layer"], "knowledge", "{answer}");
    assert!(
        view["text"]
            .as_str()
            .unwrap()
            .contains("> When exports stall")
    );
}

#[tokio::test]
async fn decisions_are_recorded_by_the_credential_reviewed_and_recalled_over_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (reviewer, reviewer_id) = server.token(Role::Reviewer);
    let (agent, _) = server.token(Role::Agent);
    let body = json!({"skill": SKILL, "situation": "A customer wants a refund for a late order",
        "action": "Refund in full", "rationale": "Late by a week"});
    let (status, _) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/decisions",
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut forged = body.clone();
    forged["decided_by"] = json!("someone else");
    let (status, answer) = server
        .send(Some(&reviewer), Method::POST, "/v1/decisions", Some(forged))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (status, d) = server
        .send(Some(&reviewer), Method::POST, "/v1/decisions", Some(body))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{d}");
    assert_eq!(d["decided_by"], reviewer_id.as_str());
    assert_eq!(d["status"], "needs_review");
    let recall = json!({"query": "refund for a late order"});
    let (_, before) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/decisions/recall",
            Some(recall.clone()),
        )
        .await;
    assert_eq!(before["decisions"], json!([]), "{before}");
    let answer = server
        .mcp(
            &reviewer,
            "review_decisions",
            json!({"ids": [d["id"]], "status": "approved", "reason": "fair"}),
        )
        .await;
    assert_eq!(
        answer["result"]["structuredContent"]["decisions"][0]["status"], "approved",
        "{answer}"
    );
    let (_, after) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/decisions/recall",
            Some(recall),
        )
        .await;
    assert_eq!(after["decisions"][0]["id"], d["id"], "{after}");
    let answer = server
        .mcp(
            &agent,
            "recall_decisions",
            json!({"query": "late order refund"}),
        )
        .await;
    assert!(
        answer["result"]["structuredContent"]["text"]
            .as_str()
            .unwrap()
            .contains("> Action: Refund in full")
    );
    let (status, answer) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/decisions/review",
            Some(json!({"ids": [d["id"]], "status": "needs_review", "reason": "undo"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    let (_, context) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/context",
            Some(json!({"query": "refund for a late order"})),
        )
        .await;
    assert_eq!(context["layers"][1]["layer"], "decisions");
    assert_eq!(context["layers"][1]["status"], "filled", "{context}");
}

#[tokio::test]
async fn a_prompt_for_a_task_carries_the_layered_context_over_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig::default());
    let (reviewer, _) = server.token(Role::Reviewer);
    let (agent, _) = server.token(Role::Agent);
    let body = json!({"skill": SKILL, "situation": "A customer wants a refund for a late order",
        "action": "Refund in full", "rationale": "Late by a week"});
    let (_, d) = server
        .send(Some(&reviewer), Method::POST, "/v1/decisions", Some(body))
        .await;
    let review = json!({"ids": [d["id"]], "status": "approved", "reason": "fair"});
    let (status, _) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/decisions/review",
            Some(review),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let task = "a refund for a late order";
    let (status, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            &format!("/v1/skills/{SKILL}/prompt?task=a%20refund%20for%20a%20late%20order"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    let decisions = rest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "decisions")
        .unwrap_or_else(|| panic!("{rest}"));
    assert_eq!(decisions["items"], json!([d["id"]]), "{decisions}");
    assert!(
        rest["text"]
            .as_str()
            .unwrap()
            .contains("> Action: Refund in full")
    );
    let view = server
        .mcp(
            &agent,
            "memory_prompt",
            json!({"skill": SKILL, "task": task}),
        )
        .await;
    let mcp = &view["result"]["structuredContent"];
    assert_eq!(mcp["prompt"], rest["text"], "{view}");
    let names = |layers: &Value, key: &str| -> Vec<Value> {
        layers
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l[key].clone())
            .collect()
    };
    assert_eq!(
        names(&mcp["layers"], "name"),
        names(&rest["layers"], "name")
    );
    assert_eq!(
        names(&mcp["layers"], "items"),
        names(&rest["layers"], "items")
    );
    assert_eq!(mcp["warnings"], json!([]));
    // Without a task, both doors answer the same prompt of the skill's own words.
    let view = server
        .mcp(&agent, "memory_prompt", json!({"skill": SKILL}))
        .await;
    let (status, plain) = server
        .send(
            Some(&agent),
            Method::GET,
            &format!("/v1/skills/{SKILL}/prompt"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{plain}");
    assert_eq!(view["result"]["structuredContent"]["prompt"], plain["text"]);
}

#[tokio::test]
async fn one_decision_is_read_with_its_audit_trail_in_scope_only() {
    let server = Server::with_tokens(EngineConfig::default());
    let (reviewer, reviewer_id) = server.token(Role::Reviewer);
    let (reader, _) = server.scoped_token(Role::Agent, "domain:support");
    let (outsider, _) = server.scoped_token(Role::Agent, "domain:finance");
    let body = json!({"skill": SKILL, "situation": "A customer wants a refund for a late order",
        "action": "Refund in full", "rationale": "Late by a week"});
    let (_, d) = server
        .send(Some(&reviewer), Method::POST, "/v1/decisions", Some(body))
        .await;
    let id = d["id"].as_str().unwrap();
    let (status, _) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/decisions/review",
            Some(json!({"ids": [id], "status": "approved",
                        "reason": "fair; confirmed with jane.doe@example.com"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let uri = format!("/v1/decisions/{id}");
    let (status, read) = server.send(Some(&reader), Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["decision"]["id"], id);
    assert_eq!(read["decision"]["status"], "approved");
    assert_eq!(read["decision"]["action"], "Refund in full");
    let audit = read["audit"].as_array().unwrap();
    let moves: Vec<_> = audit
        .iter()
        .map(|e| (e["action"].as_str(), e["to"].as_str(), e["actor"].as_str()))
        .collect();
    assert_eq!(
        moves,
        [
            (
                Some("created"),
                Some("needs_review"),
                Some(reviewer_id.as_str())
            ),
            (
                Some("transition"),
                Some("approved"),
                Some(reviewer_id.as_str())
            ),
        ],
        "{read}"
    );
    let reason = audit[1]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("fair") && !reason.contains("jane.doe"),
        "{reason}"
    );

    // Outside the token's scope it is unknown, exactly like an ID never stored.
    let (status, hidden) = server.send(Some(&outsider), Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{hidden}");
    assert!(!hidden.to_string().contains("Refund"), "{hidden}");
    let unknown = "/v1/decisions/DEC-20260101-000000-0000000000000000";
    let (status, missing) = server.send(Some(&reader), Method::GET, unknown, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    assert_eq!(hidden["error"]["code"], missing["error"]["code"]);
    let (status, bad) = server
        .send(
            Some(&reader),
            Method::GET,
            "/v1/decisions/DEC%20x%3Cscript%3E",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    assert!(bad.to_string().contains("id"), "{bad}");
    let (status, bad) = server
        .send(Some(&reader), Method::GET, &format!("{uri}?id={id}"), None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");

    let answer = server.mcp(&reader, "get_decision", json!({"id": id})).await;
    let structured = &answer["result"]["structuredContent"];
    assert_eq!(structured["decision"]["id"], id, "{answer}");
    assert_eq!(structured["audit"].as_array().map(Vec::len), Some(2));
    let answer = server
        .mcp(&outsider, "get_decision", json!({"id": id}))
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!answer.to_string().contains("Refund"), "{answer}");
}

#[tokio::test]
async fn one_documents_chunks_are_read_in_order_in_scope_only() {
    let server = Server::with_tokens(EngineConfig::default());
    let (reviewer, _) = server.token(Role::Reviewer);
    let (reader, _) = server.scoped_token(Role::Agent, "domain:support");
    let (outsider, _) = server.scoped_token(Role::Agent, "domain:finance");
    let other = "# Other\n\nNothing about exports.\n";
    let body = json!({"skill": SKILL, "documents": [
        {"source": "docs/export.md", "text": RUNBOOK},
        {"source": "docs/other.md", "text": other},
    ]});
    let (status, _) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/knowledge/documents",
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let uri = format!("/v1/knowledge/chunks?skill={SKILL}&source=docs/export.md");
    let (status, read) = server.send(Some(&reader), Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    assert_eq!(read["document"]["source"], "docs/export.md");
    assert_eq!(read["document"]["chunks"], 2);
    let chunks = read["chunks"].as_array().unwrap();
    let headings: Vec<_> = chunks.iter().map(|c| c["heading"].as_str()).collect();
    assert_eq!(
        headings,
        [
            Some("Export worker › Restart"),
            Some("Export worker › Contacts")
        ],
        "{read}"
    );
    assert_eq!(
        chunks
            .iter()
            .map(|c| c["ordinal"].as_u64())
            .collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert!(chunks.iter().all(|c| c["source"] == "docs/export.md"));
    assert!(
        chunks[0]["text"]
            .as_str()
            .unwrap()
            .contains("svc restart export")
    );
    assert!(!read.to_string().contains("ops-team@example.com"), "{read}");
    assert!(read.get("next_offset").is_none());
    let (_, page) = server
        .send(Some(&reader), Method::GET, &format!("{uri}&limit=1"), None)
        .await;
    assert_eq!(page["chunks"].as_array().map(Vec::len), Some(1));
    assert_eq!(page["next_offset"], 1, "{page}");
    let (_, rest) = server
        .send(
            Some(&reader),
            Method::GET,
            &format!("{uri}&limit=1&offset=1"),
            None,
        )
        .await;
    assert_eq!(rest["chunks"][0]["heading"], "Export worker › Contacts");

    let (status, hidden) = server.send(Some(&outsider), Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{hidden}");
    assert!(!hidden.to_string().contains("restart"), "{hidden}");
    let unknown = format!("/v1/knowledge/chunks?skill={SKILL}&source=docs/none.md");
    let (status, missing) = server
        .send(Some(&reader), Method::GET, &unknown, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    for bad in [
        "/v1/knowledge/chunks?skill=nodomain&source=docs/export.md".to_owned(),
        format!("/v1/knowledge/chunks?skill={SKILL}"),
        format!("/v1/knowledge/chunks?skill={SKILL}&source=docs/export.md&limit=0"),
        format!("/v1/knowledge/chunks?skill={SKILL}&source=docs/export.md&page=2"),
    ] {
        let (status, answer) = server.send(Some(&reader), Method::GET, &bad, None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {answer}");
    }

    let answer = server
        .mcp(
            &reader,
            "knowledge_chunks",
            json!({"skill": SKILL, "source": "docs/export.md"}),
        )
        .await;
    let text = answer["result"]["structuredContent"]["chunks"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(
        text.lines().all(|l| l.starts_with('>')) && text.contains("svc restart export"),
        "{text}"
    );
}
