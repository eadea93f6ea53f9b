//! The `lore` commands that call a model, against a fake provider on loopback.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use lore_providers::fake::{Captured, FakeServer, Protocol, Reply};
use serde_json::{Value, json};

const SKILL: &str = "hr/resume-screen";

const SKILL_MD: &str = "---\nname: hr/resume-screen\noutput_schema: |\n  {\"type\": \"object\",\n   \
    \"required\": [\"overall_score\", \"recommendation\"],\n   \"properties\": {\n    \
    \"overall_score\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 100},\n    \
    \"recommendation\": {\"enum\": [\"reject\", \"proceed_to_interview\"]}}}\n---\n\
    # Skill: resume screen\n\nScore the candidate from 0 to 100 for the role.\n";

/// A project with a store, a skill with an output schema, and a model at `url`.
struct Project {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Project {
    fn new(server: Option<&FakeServer>, protocol: Protocol) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let skill_dir = dir.path().join("skills").join(SKILL);
        fs::create_dir_all(&skill_dir).unwrap();
        fs::write(skill_dir.join("SKILL.md"), SKILL_MD).unwrap();
        fs::write(
            dir.path().join("input.json"),
            r#"{"candidate": "Jane Smith", "role": "Senior Backend Engineer", "resume": "5 years Python"}"#,
        )
        .unwrap();
        let env = match (server, protocol) {
            (None, _) => Vec::new(),
            (Some(s), Protocol::OpenAi) => vec![
                ("LORE_LLM_PROVIDER", "openai".to_owned()),
                ("LORE_LLM_BASE_URL", format!("{}/v1", s.url())),
                ("LORE_LLM_MODEL", "gpt-4o-mini".to_owned()),
            ],
            (Some(s), Protocol::Anthropic) => vec![
                ("LORE_LLM_PROVIDER", "anthropic".to_owned()),
                ("LORE_LLM_BASE_URL", s.url()),
                ("LORE_LLM_MODEL", "claude-haiku-4-5".to_owned()),
                ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
            ],
        };
        let project = Self { dir, env };
        project.ok(&["init"]);
        project
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lore"));
        cmd.args(args).current_dir(self.path());
        for var in [
            "LORE_HOME",
            "LORE_SKILLS_DIR",
            "LORE_ACTOR",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENROUTER_API_KEY",
            "LORE_LLM_PROVIDER",
            "LORE_LLM_BASE_URL",
            "LORE_LLM_MODEL",
            "LORE_LLM_API_KEY",
        ] {
            cmd.env_remove(var);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "lore {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        assert!(!out.status.success(), "lore {args:?} should have failed");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    fn executions(&self) -> u64 {
        self.json(&["memory", "status"])["counts"]["executions"]
            .as_u64()
            .unwrap()
    }
}

fn screen(score: u64) -> String {
    let recommendation = if score >= 60 {
        "proceed_to_interview"
    } else {
        "reject"
    };
    json!({"overall_score": score, "recommendation": recommendation}).to_string()
}

#[test]
fn run_records_the_output_cost_latency_and_model() {
    let server = FakeServer::scripted(vec![Protocol::OpenAi.answer(&screen(72), "gpt-4o-mini")]);
    let project = Project::new(Some(&server), Protocol::OpenAi);
    let run = project.json(&["run", SKILL, "--input", "input.json"]);
    let execution = &run["execution"];
    assert_eq!(
        execution["output"],
        json!({"overall_score": 72, "recommendation": "proceed_to_interview"})
    );
    assert_eq!(execution["outcome"], "pending_review");
    assert_eq!(execution["model"], "gpt-4o-mini");
    // 100 prompt tokens at $0.15/M plus 20 answer tokens at $0.60/M.
    let cost = execution["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.000027).abs() < 1e-12, "{cost}");
    assert!(execution["latency_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(
        execution["extra"]["usage"],
        json!({"input_tokens": 100, "output_tokens": 20})
    );
    assert_eq!(execution["input"]["candidate"], "Jane Smith");

    let sent = &server.requests()[0];
    let system = sent.body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Score the candidate from 0 to 100"),
        "{system}"
    );
    assert!(
        system.contains("\"overall_score\""),
        "the schema travels in the prompt: {system}"
    );
    assert!(sent.all_text().contains("Senior Backend Engineer"));
    assert_eq!(project.executions(), 1);
}

#[test]
fn run_prices_come_from_prices_json_when_present() {
    let server = FakeServer::scripted(vec![Protocol::Anthropic.answer(&screen(50), "house-model")]);
    let project = Project::new(Some(&server), Protocol::Anthropic);
    fs::write(
        project.path().join(".lore/prices.json"),
        r#"{"house-model": {"input_per_mtok": 10, "output_per_mtok": 100}}"#,
    )
    .unwrap();
    let run = project.json(&["run", SKILL, "--input", "@input.json"]);
    let cost = run["execution"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.003).abs() < 1e-12, "{cost}");
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some("sk-ant-test")
    );

    fs::write(project.path().join(".lore/prices.json"), "{not json").unwrap();
    let (_, err) = project.fails(&["run", SKILL, "--input", "input.json"]);
    assert!(err.contains("prices.json"), "{err}");
    assert_eq!(project.executions(), 1);
}

#[test]
fn run_without_a_model_says_how_to_configure_one_and_records_nothing() {
    let project = Project::new(None, Protocol::OpenAi);
    let (_, err) = project.fails(&["run", SKILL, "--input", "input.json"]);
    assert!(err.contains("no model is configured"), "{err}");
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    assert_eq!(project.executions(), 0);
}

#[test]
fn an_answer_that_fails_its_schema_twice_is_recorded_as_a_failure() {
    let server = FakeServer::scripted(vec![
        Protocol::OpenAi.answer("I'd say 72/100.", "gpt-4o-mini"),
        Protocol::OpenAi.answer("{\"overall_score\": 720}", "gpt-4o-mini"),
    ]);
    let project = Project::new(Some(&server), Protocol::OpenAi);
    let (stdout, err) = project.fails(&["run", SKILL, "--input", "input.json", "--json"]);
    assert!(err.contains("does not match the schema"), "{err}");
    assert!(err.contains("recorded as failed execution EXEC-"), "{err}");
    let run: Value = serde_json::from_str(&stdout).unwrap();
    let record = &run["execution"];
    assert_eq!(record["outcome"], "failure");
    assert_eq!(record["output"], "{\"overall_score\": 720}");
    let error = record["extra"]["error"].as_str().unwrap();
    assert!(error.contains("above the maximum 100"), "{error}");
    assert_eq!(project.executions(), 1);
    // Both attempts are paid for.
    assert!(record["cost_usd"].as_f64().unwrap() > 0.00005);
}

#[test]
fn bad_run_input_is_refused_before_any_model_call() {
    let server = FakeServer::start(|_: &Captured| Reply::status(500, "should not be called"));
    let project = Project::new(Some(&server), Protocol::OpenAi);
    fs::write(project.path().join("bad.json"), "{oops").unwrap();
    let skill_md = project.path().join("skills/hr/broken/SKILL.md");
    fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    fs::write(
        &skill_md,
        "---\noutput_schema: ../../secret.json\n---\nDo it.\n",
    )
    .unwrap();
    for (args, needle) in [
        (vec!["run", SKILL, "--input", "bad.json"], "malformed JSON"),
        (
            vec!["run", SKILL, "--input", "missing.json"],
            "malformed JSON",
        ),
        (
            vec!["run", "hr/none", "--input", "input.json"],
            "no SKILL.md",
        ),
        (
            vec!["run", "hr/broken", "--input", "input.json"],
            "inside the skill's folder",
        ),
        (vec!["run", "../x", "--input", "input.json"], "invalid"),
    ] {
        let (_, err) = project.fails(&args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    assert!(server.requests().is_empty());
    assert_eq!(project.executions(), 0);
}
