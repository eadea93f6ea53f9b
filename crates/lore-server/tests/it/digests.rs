//! Digests and evaluation runs over REST and MCP on a real SQLite file: reviewers build,
//! define and run, every role reads; who did it is the token; bad bodies are refused with a 4xx
//! naming the problem and store nothing; both doors validate the same way.

use axum::http::{Method, StatusCode};
use lore_core::SkillPath;
use lore_core::model::{CurationMode, LessonStatus};
use lore_engine::{EngineConfig, NewDecision};
use lore_server::auth::Role;
use serde_json::{Value, json};

use crate::common::server::Server;
use crate::common::{SKILL, fields};

fn approved_decision(server: &Server) {
    let engine = &server.home.engine;
    let d = engine
        .record_decision(NewDecision {
            skill: Some(SkillPath::parse(SKILL).unwrap()),
            situation: "Exports stalled for an hour".into(),
            action: "Restart the export worker".into(),
            rationale: "The queue drains after a restart".into(),
            ..NewDecision::default()
        })
        .unwrap();
    engine
        .review_decisions(&[d.id], LessonStatus::Approved, "sound")
        .unwrap();
}

fn set_body(questions: Value) -> Value {
    json!({"skill": SKILL, "name": "exports", "questions": questions})
}

#[tokio::test]
async fn digests_and_evaluations_over_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig {
        curation: CurationMode::Review,
        ..EngineConfig::default()
    });
    let (reviewer, reviewer_id) = server.token(Role::Reviewer);
    let (agent, _) = server.token(Role::Agent);
    approved_decision(&server);

    let build = |token| {
        server.send(
            Some(token),
            Method::POST,
            "/v1/digests/build",
            Some(json!({})),
        )
    };
    let (status, _) = build(&agent).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, report) = build(&reviewer).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["built"][0]["generated_by"], reviewer_id.as_str());
    let (_, again) = build(&reviewer).await;
    assert_eq!(again["built"], json!([]), "nothing changed: {again}");
    let uri = format!("/v1/digests?skill={SKILL}");
    let (status, list) = server.send(Some(&agent), Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK);
    let markdown = list["digests"][0]["markdown"].as_str().unwrap();
    assert!(markdown.contains("Restart the export worker"), "{list}");
    let (status, answer) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/digests/history?skill=nope",
            None,
        )
        .await;
    assert!(status.is_client_error(), "{status} {answer}");

    // Bad sets: refused, naming the problem, nothing stored; the author cannot be forged.
    for (body, says) in [
        (set_body(json!([])), "questions"),
        (
            set_body(json!([{"question": "q", "expected": " "}])),
            "questions[0].expected",
        ),
        (
            set_body(json!([{"question": "q", "expected": "a", "grader": "judge"}])),
            "judge",
        ),
        (
            set_body(json!([{"question": "q", "expected": "a", "grader": "fuzzy"}])),
            "grader",
        ),
        (
            json!({"skill": SKILL, "name": "x", "questions": [], "defined_by": "eve"}),
            "defined_by",
        ),
        (
            json!({"name": "x", "questions": [{"question": "q", "expected": "a"}]}),
            "skill",
        ),
    ] {
        let (status, answer) = server
            .send(
                Some(&reviewer),
                Method::POST,
                "/v1/evals/sets",
                Some(body.clone()),
            )
            .await;
        assert!(status.is_client_error(), "{body}: {status} {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {answer}");
        let mcp = server.mcp(&reviewer, "define_eval_set", body.clone()).await;
        let refused = mcp["result"]["isError"] == true || mcp.get("error").is_some();
        assert!(refused, "{body}: {mcp}");
    }
    let (_, sets) = server
        .send(Some(&agent), Method::GET, "/v1/evals/sets", None)
        .await;
    assert_eq!(sets["sets"], json!([]), "nothing stored");

    let good = set_body(json!([
        {"question": "Exports stalled, what now?", "expected": "restart the export worker"},
        {"question": "Who pays for shipping?", "expected": "the customer pays", "grader": "exact"}
    ]));
    let (status, _) = server
        .send(
            Some(&agent),
            Method::POST,
            "/v1/evals/sets",
            Some(good.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, set) = server
        .send(Some(&reviewer), Method::POST, "/v1/evals/sets", Some(good))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{set}");
    assert_eq!(set["defined_by"], reviewer_id.as_str());

    let (status, runs) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/evals/runs",
            Some(json!({"set": "exports"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{runs}");
    let run = &runs["runs"][0];
    assert_eq!(
        (run["passed"].as_u64(), run["total"].as_u64()),
        (Some(1), Some(2)),
        "{run}"
    );
    assert_eq!(run["run_by"], reviewer_id.as_str());
    let (status, _) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/evals/runs",
            Some(json!({"set": "none"})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Only an object is a body: serde alone would read an array as one.
    for uri in ["/v1/evals/runs", "/v1/digests/build"] {
        let (status, answer) = server
            .send(
                Some(&reviewer),
                Method::POST,
                uri,
                Some(json!([null, null])),
            )
            .await;
        assert!(status.is_client_error(), "{uri}: {status} {answer}");
    }

    // MCP answers what REST answers, field for field.
    let mcp = server
        .mcp(&reviewer, "run_evals", json!({"skill": SKILL}))
        .await;
    let view = &mcp["result"]["structuredContent"]["runs"][0];
    assert_eq!(view["passed"], 1, "{mcp}");
    assert_eq!(view["run_by"], reviewer_id.as_str(), "{mcp}");
    let failed: Vec<&Value> = view["grades"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["passed"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{mcp}");
    assert_eq!(failed[0]["expected"], "the customer pays");
    assert_eq!(fields(view), fields(run), "one shape on both doors");
    let (_, listed) = server
        .send(Some(&agent), Method::GET, "/v1/evals/runs", None)
        .await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2);
    let (_, trends) = server
        .send(Some(&agent), Method::GET, "/v1/evals/trends?recent=1", None)
        .await;
    assert_eq!(trends["trends"][0]["runs"], 2, "{trends}");
    assert_eq!(trends["trends"][0]["points"].as_array().unwrap().len(), 1);
    let (status, _) = server
        .send(Some(&agent), Method::GET, "/v1/evals/trends?recent=0", None)
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // A model reads the digest quoted under its provenance line; a program gets it as
    // stored, in the same field of the same shape.
    let mcp = server
        .mcp(&agent, "read_digest", json!({"skill": SKILL}))
        .await;
    let digest = &mcp["result"]["structuredContent"]["digests"][0];
    let quoted = digest["markdown"].as_str().unwrap();
    assert!(quoted.contains("Restart the export worker"), "{mcp}");
    let (head, body) = quoted.split_once('\n').unwrap();
    assert!(head.contains(digest["id"].as_str().unwrap()), "{quoted}");
    assert!(body.lines().all(|l| l.starts_with('>')), "{quoted}");
    assert!(!markdown.lines().any(|l| l.starts_with('>')), "{markdown}");
    assert_eq!(fields(digest), fields(&list["digests"][0]), "one shape");
    let mcp = server.mcp(&agent, "eval_trends", json!({})).await;
    let trend = &mcp["result"]["structuredContent"]["trends"][0];
    let scores: Vec<&Value> = trend["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["score"])
        .collect();
    assert_eq!(scores, [&json!(0.5), &json!(0.5)], "{mcp}");
    assert_eq!(fields(trend), fields(&trends["trends"][0]));
    let mcp = server
        .mcp(
            &reviewer,
            "define_eval_set",
            set_body(json!([{"question": "q", "expected": "a"}])),
        )
        .await;
    assert_eq!(
        mcp["result"]["structuredContent"]["defined_by"],
        reviewer_id.as_str(),
        "{mcp}"
    );
    let mcp = server.mcp(&agent, "read_digest", json!({"limit": 0})).await;
    assert_eq!(
        mcp["result"]["isError"], true,
        "a page of none is refused: {mcp}"
    );
    let mcp = server.mcp(&agent, "build_digests", json!({})).await;
    assert_eq!(mcp["result"]["isError"], true, "agents do not build: {mcp}");
}

/// The pages of one listing, each with the offset it was read at: `next_offset` leads from
/// one to the next and is absent on the last.
async fn pages(server: &Server, token: &str, uri: &str, key: &str, limit: usize) -> Vec<Value> {
    let mut offset = 0;
    let mut pages = Vec::new();
    loop {
        let (status, page) = server
            .send(
                Some(token),
                Method::GET,
                &format!("{uri}&limit={limit}&offset={offset}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{uri} at {offset}: {page}");
        let n = page[key].as_array().unwrap().len();
        assert!(n <= limit, "{page}");
        pages.push(page.clone());
        match page.get("next_offset") {
            Some(next) => {
                assert_eq!(next.as_u64(), Some((offset + limit) as u64), "{page}");
                assert_eq!(n, limit, "only a full page has a next: {page}");
                offset += limit;
            }
            None => return pages,
        }
        assert!(pages.len() < 20, "{uri} never ends");
    }
}

#[tokio::test]
async fn digest_history_and_eval_trends_page_alike_on_rest_and_mcp() {
    let server = Server::with_tokens(EngineConfig {
        curation: CurationMode::Review,
        ..EngineConfig::default()
    });
    let (reviewer, _) = server.token(Role::Reviewer);
    let (agent, _) = server.token(Role::Agent);
    approved_decision(&server);
    for _ in 0..5 {
        let (status, report) = server
            .send(
                Some(&reviewer),
                Method::POST,
                "/v1/digests/build",
                Some(json!({"force": true})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{report}");
        assert_eq!(report["built"].as_array().unwrap().len(), 1, "{report}");
    }
    for name in ["a", "b", "c", "d", "e"] {
        let set = json!({"skill": SKILL, "name": name,
            "questions": [{"question": "Exports stalled?", "expected": "restart"}]});
        let (status, answer) = server
            .send(Some(&reviewer), Method::POST, "/v1/evals/sets", Some(set))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let (status, runs) = server
        .send(
            Some(&reviewer),
            Method::POST,
            "/v1/evals/runs",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{runs}");

    let history = format!("/v1/digests/history?skill={SKILL}");
    for (uri, key) in [
        (history.as_str(), "digests"),
        ("/v1/evals/trends?recent=5", "trends"),
    ] {
        let (_, whole) = server
            .send(Some(&agent), Method::GET, &format!("{uri}&limit=50"), None)
            .await;
        let whole = whole[key].as_array().unwrap().clone();
        assert_eq!(whole.len(), 5, "{uri}: {whole:?}");
        let read = pages(&server, &agent, uri, key, 2).await;
        assert_eq!(read.len(), 3, "{uri}: 2 + 2 + 1: {read:?}");
        let joined: Vec<Value> = read
            .iter()
            .flat_map(|p| p[key].as_array().unwrap().clone())
            .collect();
        assert_eq!(
            joined, whole,
            "{uri}: the pages are the whole list, in order"
        );
        assert_eq!(
            read[1][key][0], whole[2],
            "{uri}: the second page starts at 2"
        );

        for offset in ["5", "99"] {
            let (status, past) = server
                .send(
                    Some(&agent),
                    Method::GET,
                    &format!("{uri}&offset={offset}"),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{uri} past the end: {past}");
            assert_eq!(past[key], json!([]), "{uri}: {past}");
            assert!(past.get("next_offset").is_none(), "{uri}: {past}");
        }
        for (bad, field) in [
            ("offset=-1", "offset"),
            ("offset=two", "offset"),
            ("limit=0", "limit"),
            ("limit=501", "limit"),
        ] {
            let (status, answer) = server
                .send(Some(&agent), Method::GET, &format!("{uri}&{bad}"), None)
                .await;
            assert_eq!(
                status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{uri}&{bad}: {answer}"
            );
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(field), "{uri}&{bad}: {answer}");
        }
    }

    // MCP reads the same pages of trends, and refuses the same bad offset.
    let (_, rest) = server
        .send(
            Some(&agent),
            Method::GET,
            "/v1/evals/trends?recent=5&limit=2&offset=2",
            None,
        )
        .await;
    let mcp = server
        .mcp(
            &agent,
            "eval_trends",
            json!({"recent": 5, "limit": 2, "offset": 2}),
        )
        .await;
    let page = &mcp["result"]["structuredContent"];
    assert_eq!(page["next_offset"], 4, "{mcp}");
    assert_eq!(
        page["trends"], rest["trends"],
        "one page on both doors: {mcp}"
    );
    let mcp = server
        .mcp(&agent, "eval_trends", json!({"limit": 2, "offset": 4}))
        .await;
    let page = &mcp["result"]["structuredContent"];
    assert_eq!(page["trends"].as_array().unwrap().len(), 1, "{mcp}");
    assert!(page.get("next_offset").is_none(), "the last page: {mcp}");
    let mcp = server
        .mcp(&agent, "eval_trends", json!({"offset": 9}))
        .await;
    assert_eq!(
        mcp["result"]["structuredContent"]["trends"],
        json!([]),
        "{mcp}"
    );
    let mcp = server
        .mcp(&agent, "eval_trends", json!({"offset": -1}))
        .await;
    let refused = mcp["result"]["isError"] == true || mcp.get("error").is_some();
    assert!(refused && mcp.to_string().contains("offset"), "{mcp}");
}
