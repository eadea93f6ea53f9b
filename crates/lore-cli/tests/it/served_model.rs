//! `lore serve` and `lore mcp` with a model configured as the CLI configures one (LORE_LLM_*):
//! the model writes digests and judges evaluation questions over REST and MCP, against a fake
//! provider on loopback speaking the OpenAI protocol; with none, the same server stays offline.

use lore_providers::fake::{FakeServer, Protocol, Reply};
use serde_json::{Value, json};

use crate::common::Project;
use crate::serve::{Server, answer, project};
use crate::settings::mcp_checks_with;

const SKILL: &str = "support/triage";
const SUMMARY: &str = "Model summary: a first order is refunded without a fee, even late.";

/// A provider that writes digests and judges: its verdict reads the context it is shown, so a
/// context without the decision fails.
fn provider() -> FakeServer {
    FakeServer::start(|request| {
        let text = request.all_text();
        let answer = if text.contains("digest writer") {
            json!({ "markdown": format!("# {SKILL}\n\n{SUMMARY}") })
        } else if text.contains("Lore's grader") {
            let context = text.split("Context (quoted data):").nth(1).unwrap_or("");
            json!({ "passed": context.contains("Refund without a fee"), "why": "read it" })
        } else {
            return Reply::status(400, "unexpected request");
        };
        Protocol::OpenAi.answer(&answer.to_string(), "gpt-4o-mini")
    })
}

fn model_env(provider: &FakeServer) -> Vec<(&'static str, String)> {
    vec![
        ("LORE_LLM_PROVIDER", "openai".to_owned()),
        ("LORE_LLM_BASE_URL", format!("{}/v1", provider.url())),
        ("LORE_LLM_MODEL", "gpt-4o-mini".to_owned()),
    ]
}

/// The requests `provider` received whose text holds `needle`.
fn asked(provider: &FakeServer, needle: &str) -> usize {
    provider
        .requests()
        .iter()
        .filter(|r| r.all_text().contains(needle))
        .count()
}

fn post(server: &Server, path: &str, body: &Value) -> (u16, Value) {
    answer(&server.request("POST", path, None, Some(&body.to_string())))
}

fn approved_decision(server: &Server) {
    let (status, made) = post(
        server,
        "/v1/decisions",
        &json!({"skill": SKILL, "situation": "A refund asked after the deadline",
                "action": "Refund without a fee", "rationale": "It was the first order"}),
    );
    assert_eq!(status, 201, "{made}");
    let (status, _) = post(
        server,
        "/v1/decisions/review",
        &json!({"ids": [made["id"]], "status": "approved", "reason": "fair"}),
    );
    assert_eq!(status, 200);
}

fn judged_set() -> Value {
    json!({"skill": SKILL, "name": "refunds", "questions": [
        {"question": "A refund after the deadline?", "expected": "the money goes back, no fee",
         "grader": "judge"}]})
}

#[test]
fn a_served_model_writes_digests_and_judges_over_rest() {
    let fake = provider();
    let env = model_env(&fake);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = project();
    let mut server = Server::start_with(dir.path(), &["--addr", "127.0.0.1:0"], &env);
    let model_line = server.next_line();
    assert!(
        model_line.contains("Model: openai gpt-4o-mini"),
        "{model_line}"
    );
    approved_decision(&server);

    let (status, built) = post(&server, "/v1/digests/build", &json!({}));
    assert_eq!(status, 200, "{built}");
    let (_, listed) = answer(&server.get("/v1/digests?skill=support/triage"));
    let digest = &listed["digests"][0];
    assert_eq!(digest["method"]["kind"], "model", "{listed}");
    assert_eq!(digest["method"]["model"], "openai/gpt-4o-mini", "{listed}");
    assert!(
        digest["markdown"].as_str().unwrap().contains(SUMMARY),
        "{listed}"
    );
    assert_eq!(asked(&fake, "Refund without a fee"), 1, "the page was sent");

    let (status, defined) = post(&server, "/v1/evals/sets", &judged_set());
    assert_eq!(status, 201, "a judged question is accepted: {defined}");
    let (status, runs) = post(&server, "/v1/evals/runs", &json!({}));
    assert_eq!(status, 201, "{runs}");
    assert_eq!(runs["runs"][0]["passed"], 1, "the judge passed it: {runs}");
    assert_eq!(asked(&fake, "Lore's grader"), 1);
    server.terminate();
}

#[test]
fn a_server_without_a_model_stays_extractive_and_refuses_judged_questions() {
    let fake = provider();
    let dir = project();
    let mut server = Server::start(dir.path());
    assert!(
        server.next_line().contains("Model: none"),
        "the banner says so"
    );
    approved_decision(&server);
    let (status, _) = post(&server, "/v1/digests/build", &json!({}));
    assert_eq!(status, 200);
    let (_, listed) = answer(&server.get("/v1/digests?skill=support/triage"));
    assert_eq!(listed["digests"][0]["method"]["kind"], "extractive");
    let (status, refused) = post(&server, "/v1/evals/sets", &judged_set());
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("judge"),
        "{refused}"
    );
    assert!(fake.requests().is_empty(), "nothing reached a model");
    server.terminate();
}

#[test]
fn lore_mcp_with_a_model_writes_digests_and_judges() {
    if !crate::serve::python_module_available("mcp", "mcp==2.3.0", "the MCP model test") {
        return;
    }
    let fake = provider();
    let p = Project::new().initialized();
    let found = mcp_checks_with(&p, &["layers", SKILL], &model_env(&fake));
    let page = found["digest"]["digests"][0]["markdown"]
        .as_str()
        .unwrap_or_default();
    assert!(
        page.contains(SUMMARY),
        "read_digest shows the model's page: {found}"
    );
    assert!(found["defined"].get("error").is_none(), "{found}");
    assert_eq!(
        found["run"]["runs"][0]["passed"], 1,
        "the judge passed it: {found}"
    );
    assert_eq!(asked(&fake, "digest writer"), 1);
    assert_eq!(asked(&fake, "Lore's grader"), 1);
}
