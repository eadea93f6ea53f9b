//! The reliability suite's role-and-scope matrix (docs/reliability.md).
//!
//! Every REST operation in the OpenAPI document and every MCP tool the server lists is called
//! with an agent, a reviewer and an admin token, each once scoped to the domain that holds the
//! data (`support`) and once to a domain that holds nothing (`finance`). The expectations are a
//! table below; an operation or tool with no row fails the test, so a new route or tool is
//! covered the day it is added. For each call:
//!
//! - a role below the row's minimum is refused (403, or an MCP tool error) and the store is
//!   unchanged;
//! - out of scope, nothing of `support` is read (no answer carries the seed's marker text) and
//!   nothing is written (the store is unchanged);
//! - in scope, with the role needed, the call succeeds, and reads that should show the seed do.
//!
//! Each call runs against a fresh, identically seeded server, so no call sees another's writes.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use lore_core::model::CurationMode;
use lore_engine::{EngineConfig, HumanCorrections};
use lore_server::auth::Role;
use serde_json::{Value, json};

use crate::common::SKILL;
use crate::common::server::Server;

/// Text only the seed holds: an answer that carries it read `support` data.
const MARKER: &str = "Zanzibar-7Q-marker";

/// The word queries use to find the seed; never the whole marker, which a query's echo would
/// carry back.
const WORD: &str = "Zanzibar";

/// What the seed made, for filling in paths and bodies.
struct Seed {
    execution: String,
    lesson: String,
    other_lesson: String,
    /// A lesson linked to `lesson` as a conflict.
    conflicting_lesson: String,
    /// A decision waiting for review.
    decision: String,
    /// An approved decision whose situation holds the marker.
    marked_decision: String,
    /// A lesson an organization member learned: its own until propagated.
    member_lesson: String,
}

/// A server in review curation, seeded by an unrestricted admin: an execution, a signal, three
/// lessons waiting for review (two of them in conflict), an episode, and agent memory, all in `support`, all holding
/// [`MARKER`].
async fn seeded() -> (Server, Seed) {
    let server = Server::with_tokens(EngineConfig {
        curation: CurationMode::Review,
        human_corrections: HumanCorrections::Review,
        ..EngineConfig::default()
    });
    let (admin, _) = server.token(Role::Admin);
    let execution = server
        .record(
            &admin,
            json!({"ticket": format!("{MARKER}: checkout fails")}),
        )
        .await;
    let mut lessons = Vec::new();
    for text in [
        format!("When {MARKER} tickets report outages, priority must be urgent."),
        "Summaries must name the failing page and the region affected.".to_owned(),
        format!("When {MARKER} tickets report outages, priority must never be urgent."),
    ] {
        let (status, body) = server
            .send(
                Some(&admin),
                Method::POST,
                "/v1/corrections",
                Some(json!({"skill": SKILL, "execution_id": execution, "text": text})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        lessons.push(body["lesson"]["id"].as_str().unwrap().to_owned());
    }
    let writes = [
        (
            Method::POST,
            format!("/v1/executions/{execution}/signals"),
            json!({"channel": "hard_failure", "message": format!("{MARKER} timeout")}),
        ),
        (
            Method::POST,
            "/v1/episodes".to_owned(),
            episode("EPI-SEED", &format!("{MARKER} choosing an export format")),
        ),
        (
            Method::PUT,
            "/v1/memory/core".to_owned(),
            json!({"skill": SKILL, "block": "persona", "text": format!("{MARKER} persona")}),
        ),
        (
            Method::POST,
            "/v1/memory/archival".to_owned(),
            json!({"skill": SKILL, "text": format!("{MARKER} archived fact")}),
        ),
        (
            Method::POST,
            "/v1/memory/recall".to_owned(),
            json!({"skill": SKILL, "session": "s1", "text": format!("{MARKER} said hello")}),
        ),
        (
            Method::POST,
            "/v1/knowledge/documents".to_owned(),
            json!({"skill": SKILL, "documents": [{
                "source": format!("docs/{MARKER}.md"),
                "text": format!("# Runbook\n\n{MARKER}: restart the export worker.\n"),
            }]}),
        ),
    ];
    for (method, uri, body) in writes {
        let (status, answer) = server.send(Some(&admin), method, &uri, Some(body)).await;
        assert!(status.is_success(), "seeding {uri}: {status} {answer}");
    }
    let decision = server
        .home
        .engine
        .record_decision(lore_engine::NewDecision {
            skill: Some(lore_core::SkillPath::parse(SKILL).unwrap()),
            situation: format!("{MARKER}: a customer asked for an export refund"),
            action: "Refund it".to_owned(),
            rationale: "Policy".to_owned(),
            ..lore_engine::NewDecision::default()
        })
        .unwrap();
    server
        .home
        .engine
        .review_decisions(
            std::slice::from_ref(&decision.id),
            lore_core::model::LessonStatus::Approved,
            "ok",
        )
        .unwrap();
    let waiting = server
        .home
        .engine
        .record_decision(lore_engine::NewDecision {
            skill: Some(lore_core::SkillPath::parse(SKILL).unwrap()),
            situation: "A second situation".to_owned(),
            action: "Act".to_owned(),
            rationale: "Why".to_owned(),
            ..lore_engine::NewDecision::default()
        })
        .unwrap();
    // A digest of the approved decision (which holds the marker), and a set named after the
    // marker, run once.
    server.home.engine.build_digests(None, false).unwrap();
    server
        .home
        .engine
        .define_eval_set(lore_engine::NewEvalSet {
            skill: Some(lore_core::SkillPath::parse(SKILL).unwrap()),
            name: format!("{MARKER} basics"),
            questions: vec![lore_core::model::EvalQuestion {
                question: "What about an export refund?".to_owned(),
                expected: "Refund it".to_owned(),
                grader: lore_core::model::Grader::Contains,
            }],
        })
        .unwrap();
    server
        .home
        .engine
        .run_evals(&lore_engine::EvalRunRequest::default())
        .unwrap();
    server
        .home
        .engine
        .save_report("learning", &json!({"seeds": 1, "with_memory": [1.0, 0.0]}))
        .unwrap();
    let (member, _) = server.scoped_token(Role::Agent, "domain:support,agent:m1,role:screener");
    let run = server.record(&member, json!({"ticket": "refund"})).await;
    let (status, body) = server
        .send(
            Some(&member),
            Method::POST,
            "/v1/corrections",
            Some(json!({"skill": SKILL, "execution_id": run,
                        "text": "Always state the refund amount in the summary."})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let member_lesson = body["lesson"]["id"].as_str().unwrap().to_owned();
    let seed = Seed {
        member_lesson,
        execution,
        lesson: lessons[0].clone(),
        other_lesson: lessons[1].clone(),
        conflicting_lesson: lessons[2].clone(),
        decision: waiting.id.to_string(),
        marked_decision: decision.id.to_string(),
    };
    (server, seed)
}

fn episode(id: &str, context: &str) -> Value {
    json!({
        "id": id, "session": "s-seed", "skill": SKILL, "timestamp": "2026-01-01T17:00:00Z",
        "outcome": "failure",
        "task": format!("Export the ledger ({MARKER})"),
        "decisions": [{"id": "d1", "type": "design", "context": context,
                       "options": ["parquet", "csv"], "chosen": "parquet"}]
    })
}

/// Whether an operation's data is scoped (most) or the same for every caller.
#[derive(Clone, Copy, PartialEq)]
enum Reach {
    Scoped,
    /// The OpenAPI document and `/metrics`: no memory in them.
    Global,
    /// The embedder serves every scope: only an unrestricted credential may tune it, so every
    /// scoped token is refused whatever its role, and nothing changes.
    Unrestricted,
}

/// One row: the role needed, the reach, whether an in-scope answer must show the seed, and
/// the call.
struct Row {
    min: Role,
    reach: Reach,
    shows_seed: bool,
    call: fn(&Seed) -> Call,
}

struct Call {
    uri: String,
    body: Option<Value>,
}

fn get(uri: impl Into<String>) -> Call {
    Call {
        uri: uri.into(),
        body: None,
    }
}

fn with(uri: impl Into<String>, body: Value) -> Call {
    Call {
        uri: uri.into(),
        body: Some(body),
    }
}

const fn row(min: Role, shows_seed: bool, call: fn(&Seed) -> Call) -> Row {
    Row {
        min,
        reach: Reach::Scoped,
        shows_seed,
        call,
    }
}

const fn tuning(min: Role, call: fn(&Seed) -> Call) -> Row {
    Row {
        min,
        reach: Reach::Unrestricted,
        shows_seed: false,
        call,
    }
}

/// The expectation for each `(METHOD, path template)` of the OpenAPI document.
fn rest_row(method: &str, path: &str) -> Option<Row> {
    use Role::{Admin, Agent, Reviewer};
    Some(match (method, path) {
        ("GET", "/v1/openapi.json") => Row {
            reach: Reach::Global,
            ..row(Agent, false, |_| get("/v1/openapi.json"))
        },
        // Counts of the whole store: an admin without a scope only.
        ("GET", "/metrics") => tuning(Admin, |_| get("/metrics")),
        ("GET", "/v1/status") => row(Agent, false, |_| get("/v1/status")),
        // Who the caller is, whatever its scope.
        ("GET", "/v1/whoami") => Row {
            reach: Reach::Global,
            ..row(Agent, false, |_| get("/v1/whoami"))
        },
        ("GET", "/v1/stats") => row(Agent, false, |_| get("/v1/stats")),
        // Figures of simulated tools, kept by the command line: the same for every caller.
        ("GET", "/v1/reports/{name}") => Row {
            reach: Reach::Global,
            ..row(Agent, false, |_| get("/v1/reports/learning"))
        },
        ("GET", "/v1/lessons/{id}/activations") => row(Agent, false, |s| {
            get(format!("/v1/lessons/{}/activations", s.lesson))
        }),
        ("GET", "/v1/search") => row(Agent, true, |_| get(format!("/v1/search?q={WORD}"))),
        ("GET", "/v1/skills/{domain}/{skill}/prompt") => {
            row(Agent, false, |_| get(format!("/v1/skills/{SKILL}/prompt")))
        }
        ("POST", "/v1/executions") => row(Agent, false, |_| {
            with(
                "/v1/executions",
                json!({"skill": SKILL, "input": {}, "output": {}}),
            )
        }),
        ("GET", "/v1/executions") => row(Agent, true, |_| get("/v1/executions")),
        ("GET", "/v1/executions/{id}") => row(Agent, true, |s| {
            get(format!("/v1/executions/{}", s.execution))
        }),
        ("POST", "/v1/executions/{id}/signals") => row(Agent, false, |s| {
            with(
                format!("/v1/executions/{}/signals", s.execution),
                json!({"channel": "progress", "value": 0.5}),
            )
        }),
        ("GET", "/v1/executions/{id}/signals") => row(Agent, true, |s| {
            get(format!("/v1/executions/{}/signals", s.execution))
        }),
        ("POST", "/v1/corrections") => row(Agent, false, |s| {
            with(
                "/v1/corrections",
                json!({"skill": SKILL, "execution_id": s.execution,
                       "text": "Always quote the customer's own words in the summary."}),
            )
        }),
        ("POST", "/v1/lessons/import") => row(Agent, false, |_| {
            with(
                "/v1/lessons/import",
                json!([{"skill": SKILL, "task": "Summarize a refund ticket",
                        "lesson": "Mention the refund amount when there is one."}]),
            )
        }),
        ("GET", "/v1/lessons") => row(Agent, true, |_| get("/v1/lessons")),
        ("GET", "/v1/lessons/{id}") => {
            row(Agent, true, |s| get(format!("/v1/lessons/{}", s.lesson)))
        }
        ("PATCH", "/v1/lessons/{id}") => row(Reviewer, false, |s| {
            with(
                format!("/v1/lessons/{}", s.lesson),
                json!({"rule": "Outages are urgent.", "reason": "shorter"}),
            )
        }),
        ("POST", "/v1/lessons/{id}/retire") => row(Reviewer, false, |s| {
            with(
                format!("/v1/lessons/{}/retire", s.lesson),
                json!({"reason": "obsolete"}),
            )
        }),
        ("POST", "/v1/lessons/{id}/purge") => row(Admin, false, |s| {
            with(
                format!("/v1/lessons/{}/purge", s.lesson),
                json!({"reason": "holds a customer's name"}),
            )
        }),
        // The owner or a person propagates; the matrix's agent tokens are neither.
        ("POST", "/v1/lessons/{id}/propagate") => row(Reviewer, false, |s| {
            with(
                format!("/v1/lessons/{}/propagate", s.member_lesson),
                json!({"strategy": "role"}),
            )
        }),
        ("GET", "/v1/org/members") => row(Reviewer, false, |_| get("/v1/org/members")),
        ("POST", "/v1/org/pool") => row(Reviewer, false, |_| with("/v1/org/pool", json!({}))),
        ("POST", "/v1/recall") => row(Agent, false, |_| {
            with("/v1/recall", json!({"query": "ticket outage priority"}))
        }),
        ("GET", "/v1/events") => row(Agent, false, |_| get("/v1/events")),
        ("GET", "/v1/memory/core") => row(Agent, true, |_| {
            get(format!("/v1/memory/core?skill={SKILL}"))
        }),
        ("PUT", "/v1/memory/core") => row(Agent, false, |_| {
            with(
                "/v1/memory/core",
                json!({"skill": SKILL, "block": "human", "text": "Prefers short answers."}),
            )
        }),
        ("GET", "/v1/memory/archival") => row(Agent, true, |_| {
            get(format!("/v1/memory/archival?query={WORD}&skill={SKILL}"))
        }),
        ("POST", "/v1/memory/archival") => row(Agent, false, |_| {
            with(
                "/v1/memory/archival",
                json!({"skill": SKILL, "text": "The EU region fails over to Dublin."}),
            )
        }),
        ("GET", "/v1/memory/recall") => row(Agent, true, |_| {
            get(format!("/v1/memory/recall?skill={SKILL}&session=s1"))
        }),
        ("POST", "/v1/memory/recall") => row(Agent, false, |_| {
            with(
                "/v1/memory/recall",
                json!({"skill": SKILL, "session": "s2", "text": "Hello again."}),
            )
        }),
        ("POST", "/v1/episodes") => row(Agent, false, |_| {
            with("/v1/episodes", episode("EPI-NEW", "choosing a queue"))
        }),
        ("POST", "/v1/episodes/extract") => row(Agent, false, |_| {
            let log = format!(
                "# Session s-1\nSkill: {SKILL}\nDate: 2026-01-01T17:00:00Z\nOutcome: failure\n\
                 Task: Export the ledger ({MARKER})\n\n## Decisions\n\
                 ### d1 [design] choosing a format\n- Options: parquet | csv\n- Chosen: parquet\n"
            );
            with("/v1/episodes/extract", json!({ "log": log }))
        }),
        ("GET", "/v1/episodes") => row(Agent, true, |_| get("/v1/episodes")),
        ("GET", "/v1/episodes/{id}") => row(Agent, true, |_| get("/v1/episodes/EPI-SEED")),
        ("GET", "/v1/sessions/{session}/episodes") => {
            row(Agent, true, |_| get("/v1/sessions/s-seed/episodes"))
        }
        ("GET", "/v1/episodes/{id}/decisions") => {
            row(Agent, true, |_| get("/v1/episodes/EPI-SEED/decisions"))
        }
        ("POST", "/v1/episodes/{id}/purge") => row(Reviewer, false, |_| {
            with("/v1/episodes/EPI-SEED/purge", json!({"reason": "test"}))
        }),
        ("GET", "/v1/graph/export") => row(Agent, false, |_| get("/v1/graph/export?format=dot")),
        ("GET", "/v1/graph/path") => row(Agent, false, |_| {
            get("/v1/graph/path?from=decision:parquet&to=outcome:failure")
        }),
        ("GET", "/v1/graph/what-if") => row(Agent, false, |_| {
            get("/v1/graph/what-if?episode=EPI-SEED&decision=d1&alternative=csv")
        }),
        ("GET", "/v1/graph/similar") => row(Agent, true, |_| {
            get(format!("/v1/graph/similar?context={WORD}%20export"))
        }),
        ("GET", "/v1/graph/patterns") => row(Agent, false, |_| {
            get("/v1/graph/patterns?min_occurrences=1&min_success_rate=0")
        }),
        ("GET", "/v1/graph/anti-patterns") => row(Agent, false, |_| {
            get("/v1/graph/anti-patterns?min_occurrences=1")
        }),
        ("POST", "/v1/knowledge/documents") => row(Reviewer, false, |_| {
            with(
                "/v1/knowledge/documents",
                json!({"skill": SKILL, "documents": [{"source": "docs/new.md", "text": "New."}]}),
            )
        }),
        ("GET", "/v1/knowledge/documents") => row(Agent, true, |_| get("/v1/knowledge/documents")),
        ("GET", "/v1/knowledge/chunks") => row(Agent, true, |_| {
            get(format!(
                "/v1/knowledge/chunks?skill={SKILL}&source=docs/{MARKER}.md"
            ))
        }),
        ("POST", "/v1/knowledge/recall") => row(Agent, true, |_| {
            with(
                "/v1/knowledge/recall",
                json!({"query": format!("{WORD} export worker")}),
            )
        }),
        ("POST", "/v1/context") => row(Agent, true, |_| {
            with(
                "/v1/context",
                json!({"query": format!("{WORD} export worker")}),
            )
        }),
        ("GET", "/v1/embedder") => tuning(Reviewer, |_| get("/v1/embedder")),
        ("POST", "/v1/embedder/preflight") => {
            tuning(Reviewer, |_| with("/v1/embedder/preflight", json!({})))
        }
        ("POST", "/v1/embedder/runs") => tuning(Admin, |_| with("/v1/embedder/runs", json!({}))),
        ("GET", "/v1/embedder/runs") => tuning(Reviewer, |_| get("/v1/embedder/runs")),
        ("GET", "/v1/embedder/runs/{id}") => tuning(Reviewer, |_| get("/v1/embedder/runs/TUNE-1")),
        ("POST", "/v1/embedder/runs/{id}/resume") => tuning(Admin, |_| {
            with("/v1/embedder/runs/TUNE-1/resume", json!({}))
        }),
        ("POST", "/v1/embedder/cancel") => tuning(Admin, |_| {
            with(
                "/v1/embedder/cancel",
                json!({"actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        ("GET", "/v1/embedder/checkpoints") => {
            tuning(Reviewer, |_| get("/v1/embedder/checkpoints"))
        }
        ("POST", "/v1/embedder/checkpoints/{id}/activate") => tuning(Admin, |_| {
            with(
                "/v1/embedder/checkpoints/CKPT-1/activate",
                json!({"actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        ("POST", "/v1/embedder/checkpoints/{id}/delete") => tuning(Admin, |_| {
            with(
                "/v1/embedder/checkpoints/CKPT-1/delete",
                json!({"actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        ("POST", "/v1/embedder/rollback") => tuning(Admin, |_| {
            with(
                "/v1/embedder/rollback",
                json!({"to": "base", "actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        ("POST", "/v1/decisions") => row(Reviewer, false, |_| {
            with(
                "/v1/decisions",
                json!({"skill": SKILL, "situation": "s", "action": "a", "rationale": "r"}),
            )
        }),
        ("GET", "/v1/decisions") => row(Agent, true, |_| get("/v1/decisions")),
        ("GET", "/v1/decisions/{id}") => row(Agent, true, |s| {
            get(format!("/v1/decisions/{}", s.marked_decision))
        }),
        ("POST", "/v1/decisions/review") => row(Reviewer, false, |s| {
            with(
                "/v1/decisions/review",
                json!({"ids": [s.decision], "status": "approved", "reason": "r"}),
            )
        }),
        ("POST", "/v1/decisions/recall") => row(Agent, true, |_| {
            with(
                "/v1/decisions/recall",
                json!({"query": format!("{WORD} export refund")}),
            )
        }),
        ("POST", "/v1/digests/build") => row(Reviewer, false, |_| {
            with("/v1/digests/build", json!({"force": true}))
        }),
        ("GET", "/v1/digests") => row(Agent, true, |_| get("/v1/digests")),
        ("GET", "/v1/digests/history") => row(Agent, true, |_| {
            get(format!("/v1/digests/history?skill={SKILL}"))
        }),
        ("POST", "/v1/evals/sets") => row(Reviewer, false, |_| {
            with(
                "/v1/evals/sets",
                json!({"skill": SKILL, "name": "new", "questions": [{"question": "q", "expected": "a"}]}),
            )
        }),
        ("GET", "/v1/evals/sets") => row(Agent, true, |_| get("/v1/evals/sets")),
        ("POST", "/v1/evals/runs") => row(Reviewer, false, |_| with("/v1/evals/runs", json!({}))),
        ("GET", "/v1/evals/runs") => row(Agent, true, |_| get("/v1/evals/runs")),
        ("GET", "/v1/evals/trends") => row(Agent, true, |_| get("/v1/evals/trends")),
        ("GET", "/v1/review") => row(Reviewer, true, |_| get("/v1/review")),
        ("POST", "/v1/review/{decision}") => row(Reviewer, false, |s| {
            with(
                "/v1/review/approve",
                json!({"ids": [s.lesson], "reason": "right"}),
            )
        }),
        ("POST", "/v1/review/unlink") => row(Reviewer, false, |s| {
            with(
                "/v1/review/unlink",
                json!({"ids": [s.lesson, s.conflicting_lesson], "reason": "both hold"}),
            )
        }),
        ("POST", "/v1/review/supersede") => row(Reviewer, false, |s| {
            with(
                "/v1/review/supersede",
                json!({"ids": [s.lesson], "superseded_by": s.other_lesson, "reason": "better"}),
            )
        }),
        _ => return None,
    })
}

/// The expectation for each MCP tool.
fn tool_row(name: &str) -> Option<Row> {
    use Role::{Agent, Reviewer};
    Some(match name {
        "record_execution" => row(Agent, false, |_| {
            with("", json!({"skill": SKILL, "input": {}, "output": {}}))
        }),
        "report_signal" => row(Agent, false, |s| {
            with(
                "",
                json!({"execution_id": s.execution, "channel": "progress", "value": 1.0}),
            )
        }),
        "correct" => row(Agent, false, |s| {
            with(
                "",
                json!({"skill": SKILL, "execution_id": s.execution,
                       "correction": "Always quote the customer's own words."}),
            )
        }),
        "learn_lessons" => row(Agent, false, |_| {
            with(
                "",
                json!({"lessons": [{"skill": SKILL, "task": "Summarize a refund ticket",
                                    "lesson": "Mention the refund amount when there is one."}]}),
            )
        }),
        "search_memory" => row(Agent, true, |_| with("", json!({"query": WORD}))),
        "list_lessons" => row(Agent, true, |_| with("", json!({}))),
        "get_lesson" => row(Agent, true, |s| with("", json!({"id": s.lesson}))),
        "memory_prompt" => row(Agent, false, |_| with("", json!({"skill": SKILL}))),
        "memory_status" => row(Agent, false, |_| with("", json!({}))),
        "recall_memory" => row(Agent, false, |_| {
            with("", json!({"query": "ticket outage priority"}))
        }),
        "review_queue" => row(Reviewer, true, |_| with("", json!({}))),
        "org_pool" => row(Reviewer, false, |_| with("", json!({}))),
        "propagate_lesson" => row(Reviewer, false, |s| {
            with("", json!({"id": s.member_lesson, "strategy": "role"}))
        }),
        "unlink_lessons" => row(Reviewer, false, |s| {
            with(
                "",
                json!({"ids": [s.lesson, s.conflicting_lesson], "reason": "both hold"}),
            )
        }),
        "review_lessons" => row(Reviewer, false, |s| {
            with(
                "",
                json!({"decision": "approve", "ids": [s.lesson], "reason": "right"}),
            )
        }),
        "record_episode" => row(Agent, false, |_| {
            with(
                "",
                json!({"episode": episode("EPI-NEW", "choosing a queue")}),
            )
        }),
        "get_episode" => row(Agent, true, |_| with("", json!({"id": "EPI-SEED"}))),
        "session_episodes" => row(Agent, true, |_| with("", json!({"session": "s-seed"}))),
        "decision_sequence" => row(Agent, true, |_| with("", json!({"id": "EPI-SEED"}))),
        "list_episodes" => row(Agent, true, |_| with("", json!({}))),
        "export_causal_graph" => row(Agent, false, |_| with("", json!({"format": "dot"}))),
        "causal_path" => row(Agent, false, |_| {
            with(
                "",
                json!({"from": "decision:parquet", "to": "outcome:failure"}),
            )
        }),
        "what_if" => row(Agent, false, |_| {
            with(
                "",
                json!({"episode": "EPI-SEED", "decision": "d1", "alternative": "csv"}),
            )
        }),
        "similar_decisions" => row(Agent, true, |_| {
            with("", json!({"context": format!("{WORD} export")}))
        }),
        "find_patterns" => row(Agent, false, |_| with("", json!({"min_occurrences": 1}))),
        "find_anti_patterns" => row(Agent, false, |_| with("", json!({"min_occurrences": 1}))),
        "core_memory_read" => row(Agent, true, |_| with("", json!({"skill": SKILL}))),
        "core_memory_write" => row(Agent, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "block": "human", "text": "Prefers short answers."}),
            )
        }),
        "archival_memory_search" => row(Agent, true, |_| {
            with("", json!({"query": WORD, "skill": SKILL}))
        }),
        "archival_memory_write" => row(Agent, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "text": "EU fails over to Dublin."}),
            )
        }),
        "recall_knowledge" => row(Agent, true, |_| {
            with("", json!({"query": format!("{WORD} export worker")}))
        }),
        "list_knowledge" => row(Agent, true, |_| with("", json!({}))),
        "knowledge_chunks" => row(Agent, true, |_| {
            with(
                "",
                json!({"skill": SKILL, "source": format!("docs/{MARKER}.md")}),
            )
        }),
        "get_decision" => row(Agent, true, |s| with("", json!({"id": s.marked_decision}))),
        "embedder_status" | "embedder_runs" | "embedder_checkpoints" | "embedder_preflight" => {
            tuning(Reviewer, |_| with("", json!({})))
        }
        "embedder_run" => tuning(Reviewer, |_| with("", json!({"id": "TUNE-1"}))),
        "embedder_train" => tuning(Role::Admin, |_| with("", json!({}))),
        "embedder_resume" => tuning(Role::Admin, |_| with("", json!({"id": "TUNE-1"}))),
        "embedder_rollback" => tuning(Role::Admin, |_| {
            with(
                "",
                json!({"to": "base", "actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        "embedder_cancel" => tuning(Role::Admin, |_| {
            with("", json!({"actor": "a", "confirm": true, "reason": "r"}))
        }),
        "embedder_activate" | "embedder_delete_checkpoint" => tuning(Role::Admin, |_| {
            with(
                "",
                json!({"id": "CKPT-1", "actor": "a", "confirm": true, "reason": "r"}),
            )
        }),
        "recall_decisions" => row(Agent, true, |_| {
            with("", json!({"query": format!("{WORD} export refund")}))
        }),
        "review_decisions" => row(Reviewer, false, |s| {
            with(
                "",
                json!({"ids": [s.decision], "status": "approved", "reason": "r"}),
            )
        }),
        "record_decision" => row(Reviewer, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "situation": "s", "action": "a", "rationale": "r"}),
            )
        }),
        "read_digest" => row(Agent, true, |_| with("", json!({}))),
        "build_digests" => row(Reviewer, false, |_| with("", json!({"force": true}))),
        "define_eval_set" => row(Reviewer, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "name": "new", "questions": [{"question": "q", "expected": "a"}]}),
            )
        }),
        "run_evals" => row(Reviewer, false, |_| with("", json!({}))),
        "eval_trends" => row(Agent, true, |_| with("", json!({}))),
        "layered_context" => row(Agent, true, |_| {
            with("", json!({"query": format!("{WORD} export worker")}))
        }),
        "ingest_knowledge" => row(Reviewer, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "documents": [{"source": "docs/new.md", "text": "New."}]}),
            )
        }),
        "conversation_log_read" => row(Agent, true, |_| {
            with("", json!({"skill": SKILL, "session": "s1"}))
        }),
        "conversation_log_write" => row(Agent, false, |_| {
            with(
                "",
                json!({"skill": SKILL, "session": "s2", "text": "Hello again."}),
            )
        }),
        _ => return None,
    })
}

/// What one call did: whether it succeeded, its answer, and whether the store is as it was.
struct Seen<'a> {
    ok: bool,
    text: &'a str,
    unchanged: bool,
}

/// One outcome of the matrix, for the failure message and the figures.
#[derive(Default)]
struct Tally {
    calls: usize,
    refused: usize,
    escapes: Vec<String>,
}

impl Tally {
    /// Checks one answer against its row; `ok` is whether the call succeeded, `text` the answer.
    fn check(&mut self, what: &str, row: &Row, (role, in_scope): (Role, bool), seen: Seen<'_>) {
        let Seen {
            ok,
            text,
            unchanged,
        } = seen;
        self.calls += 1;
        if !ok {
            self.refused += 1;
        }
        let allowed_role = role >= row.min;
        let fail = |why: &str| {
            format!(
                "{what} as {role:?} {}: {why}",
                if in_scope { "in scope" } else { "out of scope" }
            )
        };
        if row.reach == Reach::Unrestricted {
            if ok || !unchanged {
                self.escapes.push(fail(
                    "a scoped token was served or wrote the embedder's tuning",
                ));
            }
            return;
        }
        if !allowed_role && (ok || !unchanged) {
            self.escapes
                .push(fail("a role below the minimum was served or wrote"));
        }
        if row.reach == Reach::Scoped && !in_scope {
            if text.contains(MARKER) {
                self.escapes.push(fail("read the other domain's data"));
            }
            if !unchanged {
                self.escapes.push(fail("changed the store"));
            }
        }
        if allowed_role && in_scope && !ok {
            self.escapes
                .push(fail(&format!("refused: {}", truncate(text))));
        }
        if allowed_role && in_scope && row.shows_seed && !text.contains(MARKER) {
            self.escapes
                .push(fail(&format!("did not show the seed: {}", truncate(text))));
        }
        if allowed_role && row.reach == Reach::Global && !ok {
            self.escapes
                .push(fail(&format!("refused: {}", truncate(text))));
        }
    }
}

fn truncate(text: &str) -> &str {
    &text[..text.len().min(300)]
}

const ROLES: [Role; 3] = [Role::Agent, Role::Reviewer, Role::Admin];

/// `(in scope?, scope)`: the domain that holds the seed, and one that holds nothing.
const SCOPES: [(bool, &str); 2] = [(true, "domain:support"), (false, "domain:finance")];

#[tokio::test]
async fn every_rest_operation_keeps_to_its_role_and_scope() {
    let document = lore_server::openapi::parsed();
    let mut operations = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.insert((method.to_uppercase(), path.clone()));
        }
    }
    let missing: Vec<_> = operations
        .iter()
        .filter(|(m, p)| rest_row(m, p).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "operations with no row in the matrix: {missing:?}"
    );
    let mut tally = Tally::default();
    for (method, path) in &operations {
        let row = rest_row(method, path).unwrap();
        for role in ROLES {
            for (in_scope, scope) in SCOPES {
                let (server, seed) = seeded().await;
                let (token, _) = server.scoped_token(role, scope);
                let call = (row.call)(&seed);
                let before = server.home.snapshot();
                let method = Method::from_bytes(method.as_bytes()).unwrap();
                let (status, text) = if path == "/v1/events" {
                    let status = server.status_only(&token, &call.uri).await;
                    (status, String::new())
                } else {
                    let (status, body) = server
                        .send(Some(&token), method.clone(), &call.uri, call.body)
                        .await;
                    (status, body.to_string())
                };
                let unchanged = server.home.snapshot() == before;
                let what = format!("{method} {path}");
                tally.check(
                    &what,
                    &row,
                    (role, in_scope),
                    Seen {
                        ok: status.is_success(),
                        text: &text,
                        unchanged,
                    },
                );
                if !status.is_success() && !matches!(status.as_u16(), 403 | 404) {
                    tally.escapes.push(format!(
                        "{what} as {role:?} {scope}: {status} is neither 403 nor 404: {}",
                        truncate(&text)
                    ));
                }
            }
        }
    }
    println!(
        "reliability: rest matrix operations {}, calls {}, refused {}, escapes {}",
        operations.len(),
        tally.calls,
        tally.refused,
        tally.escapes.len()
    );
    assert!(tally.escapes.is_empty(), "{:#?}", tally.escapes);
}

#[tokio::test]
async fn every_mcp_tool_keeps_to_its_role_and_scope() {
    let (server, _) = seeded().await;
    let (admin, _) = server.token(Role::Admin);
    let listed = server.mcp_method(&admin, "tools/list", json!({})).await;
    let tools: BTreeSet<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let missing: Vec<_> = tools.iter().filter(|t| tool_row(t).is_none()).collect();
    assert!(
        missing.is_empty(),
        "tools with no row in the matrix: {missing:?}"
    );
    let mut tally = Tally::default();
    for tool in &tools {
        let row = tool_row(tool).unwrap();
        for role in ROLES {
            for (in_scope, scope) in SCOPES {
                let (server, seed) = seeded().await;
                let (token, _) = server.scoped_token(role, scope);
                let arguments = (row.call)(&seed).body.unwrap();
                let before = server.home.snapshot();
                let answer = server.mcp(&token, tool, arguments).await;
                let unchanged = server.home.snapshot() == before;
                let ok = answer["result"]["isError"] == false && answer.get("error").is_none();
                let text = answer.to_string();
                tally.check(
                    tool,
                    &row,
                    (role, in_scope),
                    Seen {
                        ok,
                        text: &text,
                        unchanged,
                    },
                );
            }
        }
    }
    println!(
        "reliability: mcp matrix tools {}, calls {}, refused {}, escapes {}",
        tools.len(),
        tally.calls,
        tally.refused,
        tally.escapes.len()
    );
    assert!(tally.escapes.is_empty(), "{:#?}", tally.escapes);
}
