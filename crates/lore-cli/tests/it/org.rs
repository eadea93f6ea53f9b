//! Organization memory from the command line, over a real SQLite file, and the org pool's
//! approval rule from every door: the CLI, REST over loopback, and MCP through the official
//! client over stdio and HTTP. No flag, setting, body or argument approves an org proposal; a
//! person's review does.

use serde_json::{Value, json};

use crate::common::Project;
use crate::serve::{Server, python_module_available};
use crate::settings::mcp_checks;

const SKILL: &str = "support/summarize-ticket";
const RULE: &str = "Always quote the customer's own words when the ticket reports an outage.";

fn member(agent: &str) -> String {
    format!("agent:{agent},role:triage,department:support")
}

/// `agent` records a run and corrects it with `text`, as a member; the lesson's ID.
fn learn(p: &Project, agent: &str, text: &str) -> String {
    let who = member(agent);
    let exec = p.ok(&[
        "--as",
        &who,
        "record",
        SKILL,
        "--input",
        r#"{"t": 1}"#,
        "--output",
        "{}",
    ]);
    let made = p.json(&[
        "--as",
        &who,
        "correct",
        SKILL,
        "--execution-id",
        exec.trim(),
        "--correction",
        text,
    ]);
    made["lesson"]["id"].as_str().unwrap().to_owned()
}

fn status(p: &Project, id: &str) -> Value {
    p.json(&["lessons", "show", id])["lesson"]["status"].clone()
}

/// Three members learn one rule and a person runs the pool; the proposal's ID.
fn proposed(p: &Project) -> String {
    for agent in ["a", "b", "c"] {
        learn(p, agent, RULE);
    }
    let report = p.json(&["org", "pool"]);
    assert_eq!(report["proposed"], 1, "{report}");
    report["patterns"][0]["proposal"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The counts `lore memory status` shows `who` (none: the person at the terminal).
fn counts(p: &Project, who: Option<&str>) -> Value {
    let mut args = vec!["memory", "status"];
    if let Some(who) = who {
        args.splice(0..0, ["--as", who]);
    }
    p.json(&args)["counts"].clone()
}

/// How many lessons `lore lessons list` shows `who`.
fn listed(p: &Project, who: &str) -> u64 {
    let list = p.json(&["--as", who, "lessons", "list"]);
    list.as_array().map_or(0, Vec::len) as u64
}

#[test]
fn a_members_status_counts_only_the_lessons_it_can_list() {
    let p = Project::new().initialized();
    let own = learn(&p, "a", RULE);
    learn(&p, "b", "Never guess the customer's region.");
    learn(
        &p,
        "b",
        "Never close a ticket the customer has not confirmed.",
    );
    let everyone = counts(&p, None);
    assert_eq!(everyone["lessons"], 3, "{everyone}");
    for (agent, own_lessons) in [("a", 1), ("b", 2)] {
        let seen = counts(&p, Some(&member(agent)));
        assert_eq!(seen["lessons"], own_lessons, "{agent}: {seen}");
        assert_eq!(
            seen["lessons"],
            listed(&p, &member(agent)),
            "{agent}: {seen}"
        );
        // Runs stay shared; the audit of the other member's lessons does not.
        assert_eq!(seen["executions"], everyone["executions"], "{seen}");
        assert!(
            seen["audit_entries"].as_u64() < everyone["audit_entries"].as_u64(),
            "{agent}: {seen} against {everyone}"
        );
    }
    // Once a's lesson reaches its role, b counts it as it lists it; a stranger never does.
    p.ok(&[
        "--as",
        &member("a"),
        "org",
        "propagate",
        &own,
        "--strategy",
        "role",
    ]);
    assert_eq!(counts(&p, Some(&member("b")))["lessons"], 3);
    assert_eq!(listed(&p, &member("b")), 3);
    let stranger = counts(&p, Some("agent:z,role:billing"));
    assert_eq!(stranger["lessons"], 0, "{stranger}");
    assert_eq!(stranger["tests"], 0, "{stranger}");
}

#[test]
fn members_lessons_stay_their_own_and_propagate_capped_never_back() {
    let p = Project::new().initialized();
    let own = learn(&p, "a", RULE);
    for agent in ["b", "c", "d"] {
        learn(&p, agent, "Never guess the customer's region.");
    }
    let err = p.fails(&["--as", &member("b"), "lessons", "show", &own]);
    assert!(
        err.contains("not found") || err.contains("no lesson"),
        "{err}"
    );
    assert!(p.json(&["--as", &member("a"), "lessons", "show", &own])["lesson"]["id"] == own);

    let members = p.json(&["org", "members"]);
    assert_eq!(members.as_array().unwrap().len(), 4, "{members}");
    assert_eq!(members[0]["role"], "triage");

    let err = p.fails(&["org", "propagate", &own, "--strategy", "everyone"]);
    assert!(err.contains("role or department"), "{err}");
    let err = p.fails(&[
        "--as",
        &member("b"),
        "org",
        "propagate",
        &own,
        "--strategy",
        "role",
    ]);
    assert!(
        err.contains("not found") || err.contains("no lesson"),
        "{err}"
    );
    let done = p.json(&[
        "--as",
        &member("a"),
        "--set",
        "org.max_targets=2",
        "org",
        "propagate",
        &own,
        "--strategy",
        "role",
    ]);
    assert_eq!(done["targets"], json!(["b", "c"]), "{done}");
    assert_eq!(done["capped"], 1, "{done}");
    p.ok(&["--as", &member("b"), "lessons", "show", &own]);
    p.fails(&["--as", &member("d"), "lessons", "show", &own]);

    // With `org.pool`, the periodic jobs run a cycle (b, c and d learned one rule); what it
    // proposes waits like any proposal. Without the setting they do not.
    assert!(p.json(&["maintain"]).get("org_pool").is_none());
    let jobs = p.json(&["--set", "org.pool=true", "maintain"]);
    let pattern = &jobs["org_pool"]["patterns"][0];
    assert_eq!(pattern["agents"], json!(["b", "c", "d"]), "{jobs}");
    let from_jobs = pattern["proposal"].as_str().unwrap().to_owned();
    assert_eq!(status(&p, &from_jobs), "needs_review");

    // A bad name in --as is named and nothing runs.
    let err = p.fails(&["--as", "agent:a,role:Triage", "org", "members"]);
    assert!(err.contains("role"), "{err}");
}

#[test]
fn no_flag_or_setting_approves_an_org_proposal_from_the_cli() {
    let p = Project::new().initialized();
    for agent in ["a", "b", "c"] {
        learn(&p, agent, RULE);
    }
    let dry = p.json(&["org", "pool", "--dry-run"]);
    assert_eq!(dry["proposed"], 1, "{dry}");
    assert!(dry["patterns"][0]["proposal"].is_null(), "{dry}");

    // Settings that would skip review do not exist, and are refused before anything runs.
    for key in ["org.auto_approve=true", "org.requires_human_approval=false"] {
        let err = p.fails(&["--set", key, "org", "pool"]);
        assert!(err.contains(key.split('=').next().unwrap()), "{err}");
    }
    let shown = p.json(&[
        "--set",
        "org.propagation=role",
        "--set",
        "org.max_targets=4",
        "config",
    ]);
    assert_eq!(shown["org"]["propagation"], "role", "{shown}");
    assert_eq!(shown["org"]["max_targets"], 4, "{shown}");
    assert_eq!(shown["org"]["min_agents"], 3, "{shown}");
    let err = p.fails(&["--set", "org.min_agents=1", "org", "pool"]);
    assert!(
        err.contains("org.min_agents") && err.contains("below 2"),
        "{err}"
    );
    let err = p.fails(&["--as", &member("a"), "org", "pool"]);
    assert!(err.contains("person"), "{err}");

    let report = p.json(&[
        "--curation",
        "auto",
        "--human-corrections",
        "approve",
        "org",
        "pool",
    ]);
    let id = report["patterns"][0]["proposal"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status(&p, &id), "needs_review");
    p.ok(&["maintain"]);
    assert_eq!(status(&p, &id), "needs_review", "upkeep promoted it");

    let err = p.fails(&[
        "--as",
        &member("a"),
        "review",
        "approve",
        &id,
        "--reason",
        "mine",
    ]);
    assert!(err.contains("person"), "{err}");
    assert_eq!(status(&p, &id), "needs_review");

    p.ok(&[
        "review", "approve", &id, "--reason", "checked", "--by", "mike",
    ]);
    assert_eq!(status(&p, &id), "approved");
    let recalled = p.json(&[
        "--as",
        &member("z"),
        "recall",
        "quote the customer's words outage",
    ]);
    assert!(recalled.to_string().contains(&id), "{recalled}");
}

fn http(server: &Server, method: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
    let body = body.to_string();
    let answer = server.request(method, path, Some(token), Some(&body));
    let status = answer[9..12].parse().unwrap();
    let json = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn only_a_persons_credential_approves_an_org_proposal_over_rest_and_mcp() {
    let p = Project::new().initialized();
    let id = proposed(&p);
    let token = |role: &str, scope: &str| {
        p.ok(&["tokens", "create", "--role", role, "--scope", scope])
            .trim()
            .to_owned()
    };
    let agent = token("agent", &format!("domain:support,{}", member("a")));
    let reviewer = token("reviewer", "domain:support");
    let server = Server::start(p.path());

    // REST over loopback: an agent neither runs the pool nor approves; a body cannot ask.
    let approve = json!({"ids": [id], "reason": "mine"});
    let (code, _) = http(
        &server,
        "POST",
        "/v1/review/approve",
        &agent,
        approve.clone(),
    );
    assert_eq!(code, 403);
    let (code, _) = http(&server, "POST", "/v1/org/pool", &agent, json!({}));
    assert_eq!(code, 403);
    let (code, body) = http(
        &server,
        "POST",
        "/v1/org/pool",
        &reviewer,
        json!({"auto_approve": true}),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(status(&p, &id), "needs_review");

    if python_module_available("mcp", "mcp==2.3.0", "the org approval rule over MCP") {
        // Over stdio there is no credential: the caller is a model.
        let stdio = mcp_checks(&p, &["org", &id]);
        assert_eq!(
            stdio["listed"],
            json!(["org_pool", "propagate_lesson"]),
            "{stdio}"
        );
        assert!(stdio["forged_refused"].is_string(), "{stdio}");
        assert!(
            stdio["pool_refused"]
                .as_str()
                .unwrap_or("")
                .contains("person"),
            "{stdio}"
        );
        assert!(
            stdio["approve_refused"]
                .as_str()
                .unwrap_or("")
                .contains("person"),
            "{stdio}"
        );
        assert_eq!(stdio["status"], "needs_review", "{stdio}");

        let url = format!("http://{}/mcp?tools=all", server.addr);
        let as_agent = mcp_checks(&p, &["org-http", &url, &agent, &id]);
        assert!(as_agent["pool_refused"].is_string(), "{as_agent}");
        assert!(as_agent["approve_refused"].is_string(), "{as_agent}");
        assert_eq!(as_agent["status"], "needs_review", "{as_agent}");

        let as_reviewer = mcp_checks(&p, &["org-http", &url, &reviewer, &id]);
        assert!(as_reviewer["forged_refused"].is_string(), "{as_reviewer}");
        assert!(as_reviewer["pool_refused"].is_null(), "{as_reviewer}");
        assert!(as_reviewer["approve_refused"].is_null(), "{as_reviewer}");
        assert_eq!(as_reviewer["status"], "approved", "{as_reviewer}");
    } else {
        let (code, body) = http(&server, "POST", "/v1/review/approve", &reviewer, approve);
        assert_eq!(code, 200, "{body}");
    }
    assert_eq!(status(&p, &id), "approved");
}

/// The score recall gave `id`, from a `--json` recall answer.
fn score_of(recall: &Value, id: &str) -> f64 {
    recall["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("{id} not recalled: {recall}"))["score"]
        .as_f64()
        .unwrap()
}

#[test]
fn personal_boost_reaches_recall_from_the_cli_mcp_and_rest() {
    let p = Project::new().initialized();
    let exec = p.ok(&["record", SKILL, "--input", "{}", "--output", "{}"]);
    let shared = p.correct(
        SKILL,
        exec.trim(),
        "Always check references for senior candidates, references for senior roles matter.",
    )["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let own = learn(&p, "a", "Always check references before scoring.");
    let query = "check references senior candidates";
    let recall = |extra: &[&str]| {
        let mut args = vec!["--as", "agent:a,role:triage,department:support"];
        args.extend_from_slice(extra);
        args.extend(["recall", query]);
        p.json(&args)
    };
    let plain = recall(&[]);
    let boosted = recall(&["--set", "recall.personal_boost=0.5"]);
    assert!(
        score_of(&plain, &shared) > score_of(&plain, &own),
        "{plain}"
    );
    // The boost adds to the member's own lesson's relevance (up to its cap): it rises, and no
    // longer trails the shared lesson it trailed without the boost.
    let lifted = |answer: &Value| {
        score_of(answer, &own) > score_of(&plain, &own)
            && score_of(answer, &own) >= score_of(answer, &shared) - 1e-9
    };
    assert!(lifted(&boosted), "{plain}\n{boosted}");
    let err = p.fails(&["--set", "recall.personal_boost=2", "recall", query]);
    assert!(err.contains("recall.personal_boost"), "{err}");

    // The server reads the same setting; a member's token gets the boost.
    std::fs::write(
        p.path().join(".lore/lore.toml"),
        "[recall]\npersonal_boost = 0.5\n",
    )
    .unwrap();
    let token = p
        .ok(&[
            "tokens",
            "create",
            "--role",
            "agent",
            "--scope",
            "domain:support,agent:a,role:triage,department:support",
        ])
        .trim()
        .to_owned();
    let server = Server::start(p.path());
    let (code, answer) = http(
        &server,
        "POST",
        "/v1/recall",
        &token,
        json!({"query": query}),
    );
    assert_eq!(code, 200, "{answer}");
    assert!(lifted(&answer), "{plain}\n{answer}");
}

/// The SKILL.md files written under `dir`, as their texts.
fn skill_files(dir: &std::path::Path) -> Vec<String> {
    let Ok(folders) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    folders
        .filter_map(|f| std::fs::read_to_string(f.unwrap().path().join("SKILL.md")).ok())
        .collect()
}

#[test]
fn a_members_own_lesson_is_no_skill_md_but_an_approved_org_lesson_is() {
    let p = Project::new().initialized();
    std::fs::write(
        p.path().join(".lore/lore.toml"),
        "[skills]\nmaterialize_dir = \"learned\"\nmin_confidence = 0.0\n",
    )
    .unwrap();
    let own = learn(&p, "a", RULE);
    assert_eq!(
        status(&p, &own),
        "approved",
        "a person's correction, approved at once"
    );
    let learned = p.path().join("learned");
    assert!(
        skill_files(&learned).is_empty(),
        "a member's own lesson was shared as a file"
    );
    for agent in ["b", "c"] {
        learn(&p, agent, RULE);
    }
    let id = p.json(&["org", "pool"])["patterns"][0]["proposal"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(skill_files(&learned).is_empty(), "written before approval");
    p.ok(&["review", "approve", &id, "--reason", "checked"]);
    let files = skill_files(&learned);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].contains(&id), "{}", files[0]);
}
