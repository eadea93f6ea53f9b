//! `lore.toml`, `--set` and the environment, seen from every door: the CLI's commands, `lore
//! serve`'s REST API and `lore mcp` through the official MCP client, each over a real store.

use std::process::Command;

use serde_json::Value;

use crate::common::Project;
use crate::serve::{Server, python_module_available};

const SKILL: &str = "support/summarize-ticket";

/// Three lessons about checkout tickets, learned as a person would teach them.
const LESSONS: &str = r#"{"skill":"support/summarize-ticket","task":"summarize a checkout ticket","lesson":"Name the failing checkout page in the first line."}
{"skill":"support/summarize-ticket","task":"summarize a checkout ticket","lesson":"Quote the checkout error code exactly as the customer wrote it."}
{"skill":"support/summarize-ticket","task":"summarize a checkout ticket","lesson":"Say whether the checkout charge went through before anything else."}
"#;

fn taught() -> Project {
    let p = Project::new().initialized();
    let file = p.path().join("lessons.jsonl");
    std::fs::write(&file, LESSONS).unwrap();
    p.ok(&["learn", "--jsonl", file.to_str().unwrap()]);
    p
}

fn settings(p: &Project, text: &str) {
    std::fs::write(p.path().join(".lore/lore.toml"), text).unwrap();
}

fn recalled(p: &Project, extra: &[&str]) -> usize {
    let mut args = vec!["recall", "checkout ticket", "--skill", SKILL];
    args.extend_from_slice(extra);
    p.json(&args)["lessons"].as_array().unwrap().len()
}

#[test]
fn the_file_and_set_reach_the_cli_and_a_flag_wins() {
    let p = taught();
    assert_eq!(recalled(&p, &[]), 3);
    settings(&p, "[recall]\nlimit = 1\n");
    assert_eq!(recalled(&p, &[]), 1);
    assert_eq!(recalled(&p, &["--set", "recall.limit=2"]), 2);
    // The caps count per tag; with none given the three lessons share no tag, so 0 (no cap)
    // and the defaults agree.
    assert_eq!(
        recalled(
            &p,
            &["--set", "recall.limit=3", "--set", "recall.max_per_tag=0"]
        ),
        3
    );

    let shown = p.json(&["config", "--set", "recall.fusion=rrf"]);
    assert_eq!(shown["recall"]["limit"], 1, "{shown}");
    assert_eq!(shown["recall"]["fusion"]["kind"], "rrf", "{shown}");
    let given = shown["given"].as_array().unwrap();
    let from = |key: &str| {
        given
            .iter()
            .find(|g| g["key"] == key)
            .map(|g| g["from"].as_str().unwrap().to_owned())
    };
    assert!(
        from("recall.limit").unwrap().ends_with("lore.toml"),
        "{shown}"
    );
    assert_eq!(from("recall.fusion").as_deref(), Some("--set"));

    // A named file that is missing is an error, not the defaults.
    let err = p.fails(&["--config", "elsewhere.toml", "recall", "checkout"]);
    assert!(err.contains("elsewhere.toml"), "{err}");
}

#[test]
fn a_bad_setting_is_refused_by_every_command_before_anything_is_stored() {
    let p = taught();
    let before = p.json(&["lessons", "list"]);
    settings(&p, "[recall]\nmmr_lambda = 2.5\n");
    let file = p.path().join("more.jsonl");
    std::fs::write(
        &file,
        r#"{"skill":"support/summarize-ticket","task":"t","lesson":"Mention the refund amount."}"#,
    )
    .unwrap();
    for args in [
        vec!["learn", "--jsonl", file.to_str().unwrap()],
        vec!["recall", "checkout"],
        vec!["serve", "--addr", "127.0.0.1:0"],
        vec!["mcp"],
        vec!["config"],
    ] {
        let err = p.fails(&args);
        assert!(
            err.contains("lore.toml: recall.mmr_lambda: 2.5 is outside 0 to 1"),
            "lore {args:?}: {err}"
        );
    }
    settings(&p, "[memory]\ninjection = \"prompt\"\n");
    let err = p.fails(&["recall", "checkout"]);
    assert!(
        err.contains("memory.injection") && err.contains("self_editing"),
        "{err}"
    );
    std::fs::remove_file(p.path().join(".lore/lore.toml")).unwrap();
    let err = p.fails(&["--set", "recall.mmr_lamda=0.5", "recall", "checkout"]);
    assert!(
        err.contains("--set: recall.mmr_lamda") && err.contains("unknown field"),
        "{err}"
    );
    assert_eq!(p.json(&["lessons", "list"]), before);
}

#[test]
fn the_environment_reaches_the_cli_below_a_flag() {
    let p = taught();
    let run = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = crate::common::lore_command();
        cmd.current_dir(p.path())
            .args(["recall", "checkout ticket", "--skill", SKILL, "--json"])
            .args(extra)
            .env_remove("LORE_HOME")
            .envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["lessons"].as_array().unwrap().len()
    };
    assert_eq!(run(&[("LORE_RECALL_LIMIT", "2")], &[]), 2);
    assert_eq!(
        run(&[("LORE_RECALL_LIMIT", "2")], &["--set", "recall.limit=1"]),
        1
    );
}

fn http(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string());
    let answer = server.request(method, path, None, body.as_deref());
    let status = answer[9..12].parse().unwrap();
    let json = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn the_server_runs_with_the_file_settings() {
    let p = taught();
    let prompt = http_prompt(&p);
    assert!(prompt.contains("Learned Rules"), "{prompt}");
    settings(&p, "[recall]\nlimit = 1\n[memory]\ninjection = \"tool\"\n");
    let server = Server::start(p.path());
    let query = serde_json::json!({"query": "checkout ticket", "skill": SKILL});
    let (status, recall) = http(&server, "POST", "/v1/recall", Some(query));
    assert_eq!(status, 200, "{recall}");
    assert_eq!(recall["lessons"].as_array().unwrap().len(), 1, "{recall}");
    let (status, prompt) = http(&server, "GET", &format!("/v1/skills/{SKILL}/prompt"), None);
    assert_eq!(status, 200, "{prompt}");
    // With tools, lessons reach the agent when it asks, not in the prompt.
    let text = prompt["text"].as_str().unwrap();
    assert!(!text.contains("Learned Rules"), "{text}");
    assert!(prompt["lessons"].as_array().unwrap().is_empty(), "{prompt}");
}

fn http_prompt(p: &Project) -> String {
    let server = Server::start(p.path());
    let (status, prompt) = http(&server, "GET", &format!("/v1/skills/{SKILL}/prompt"), None);
    assert_eq!(status, 200, "{prompt}");
    prompt["text"].as_str().unwrap().to_owned()
}

#[test]
fn an_mcp_client_gets_the_file_settings() {
    if !python_module_available("mcp", "mcp==2.3.0", "the MCP settings test") {
        return;
    }
    let p = taught();
    settings(
        &p,
        "[recall]\nlimit = 2\n[memory]\ninjection = \"self_editing\"\ncore_writes = false\n",
    );
    let findings = mcp_checks(&p, &[]);
    assert_eq!(findings["recalled"], 2, "{findings}");
    assert_eq!(findings["rules_in_prompt"], false, "{findings}");
    let refusal = findings["core_write_error"].as_str().unwrap();
    assert!(refusal.contains("core"), "{findings}");
    // Archival writes stay allowed: only the key that was set changed.
    assert_eq!(findings["archival_written"], true, "{findings}");
}

/// Runs `tests/mcp_checks.py` against `lore mcp` over stdio in `p`; returns its findings.
pub(crate) fn mcp_checks(p: &Project, extra: &[&str]) -> Value {
    mcp_checks_with(p, extra, &[])
}

/// [`mcp_checks`] with `env` added to the script's environment (a mode that passes its own
/// environment on to `lore mcp` hands it these too).
pub(crate) fn mcp_checks_with(p: &Project, extra: &[&str], env: &[(&str, String)]) -> Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_checks.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_lore"))
        .arg(p.path().join(".lore"))
        .arg(p.path().join("skills"))
        .args(extra)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// The SKILL.md files under `dir`, by the lesson each names.
fn materialized(dir: &std::path::Path) -> Vec<(String, String)> {
    let Ok(folders) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = folders
        .map(|f| f.unwrap().path().join("SKILL.md"))
        .filter(|path| path.is_file())
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let id = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("lore-lesson: "))
                .map(|v| v.trim_matches('"').to_owned())
                .unwrap_or_default();
            (id, text)
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_lesson_approved_at_any_door_becomes_a_skill_md_and_leaves_when_retired() {
    let p = Project::with_env(vec![
        ("LORE_CURATION", "review".to_owned()),
        ("LORE_HUMAN_CORRECTIONS", "review".to_owned()),
    ])
    .initialized();
    let lesson = |text: &str| {
        let exec = p.ok(&["record", SKILL, "--input", r#"{"t": 1}"#, "--output", "{}"]);
        p.correct(SKILL, exec.trim(), text)["lesson"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let by_cli = lesson("Always name the failing checkout page in the summary.");
    let by_rest = lesson("Quote the customer's error code exactly.");
    let by_mcp = lesson("Say whether the card was charged before anything else.");
    settings(&p, "[skills]\nmaterialize_dir = \"learned\"\n");
    let learned = p.path().join("learned");
    assert!(materialized(&learned).is_empty(), "written before approval");

    p.ok(&[
        "review", "approve", &by_cli, "--reason", "real", "--by", "mike",
    ]);
    let files = materialized(&learned);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, by_cli);
    assert!(
        files[0]
            .1
            .contains("> Always name the failing checkout page"),
        "{}",
        files[0].1
    );

    let server = Server::start(p.path());
    let body = serde_json::json!({"ids": [by_rest], "reason": "seen it work"});
    let (status, answer) = http(&server, "POST", "/v1/review/approve", Some(body));
    assert_eq!(status, 200, "{answer}");
    drop(server);
    let ids: Vec<String> = materialized(&learned)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(ids.contains(&by_rest), "{ids:?}");

    if python_module_available("mcp", "mcp==2.3.0", "the MCP materialization check") {
        let answer = mcp_checks(&p, &["approve", &by_mcp]);
        assert_eq!(answer["statuses"][0], "approved", "{answer}");
        let ids: Vec<String> = materialized(&learned)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert!(ids.contains(&by_mcp), "{ids:?}");
    }

    p.ok(&["lessons", "retire", &by_cli, "--reason", "obsolete"]);
    let ids: Vec<String> = materialized(&learned)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(
        !ids.contains(&by_cli),
        "a retired lesson kept its SKILL.md: {ids:?}"
    );

    // Above the bar only: a lesson approved below it gets no file.
    let low = lesson("Use a formal tone with customers.");
    p.ok(&[
        "--set",
        "skills.min_confidence=1",
        "review",
        "approve",
        &low,
        "--by",
        "mike",
    ]);
    let ids: Vec<String> = materialized(&learned)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(!ids.contains(&low), "{ids:?}");
}
