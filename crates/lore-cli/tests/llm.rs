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

const CORRECTION: &str = "When screening for senior backend roles, system design experience \
    should be weighted separately from coding skills. A candidate with 5 years Python but no \
    distributed systems should score below 60.";

const PROPOSED_RULE: &str = "ALWAYS score system design separately from coding; without \
    distributed systems experience a senior backend candidate scores below 60.";

/// A provider that plays the skill, the proposer and the judge, as seed 000's walk-through needs:
/// the skill scores 72 until the learned rule is in its prompt, then 55.
fn walkthrough_provider(proposer_answer: &'static str) -> FakeServer {
    FakeServer::start(move |request: &Captured| {
        let text = request.all_text();
        let answer = if text.contains("lesson proposer") {
            proposer_answer.to_owned()
        } else if text.contains("strict test judge") {
            json!({"pass": true, "reason": "meets the rubric"}).to_string()
        } else if text.contains("Learned Rules") && text.contains("below 60") {
            screen(55)
        } else {
            screen(72)
        };
        Protocol::OpenAi.answer(&answer, "gpt-4o-mini")
    })
}

fn proposal() -> &'static str {
    Box::leak(
        json!({
            "mistake": "Scored 72 for a senior backend role without distributed systems.",
            "root_cause": "Coding and system design were weighed as one.",
            "rule": PROPOSED_RULE,
            "applies_when": "Screening senior backend candidates.",
            "confidence": 0.93,
            "summary": "Weigh system design separately",
            "tags": ["scoring"]
        })
        .to_string()
        .into_boxed_str(),
    )
}

#[test]
fn seed_walkthrough_run_correct_test_file_next_prompt_and_lore_test() {
    let server = walkthrough_provider(proposal());
    let project = Project::new(Some(&server), Protocol::OpenAi);
    let first = project.json(&["run", SKILL, "--input", "input.json"]);
    assert_eq!(first["execution"]["output"]["overall_score"], 72);
    let id = first["execution"]["id"].as_str().unwrap().to_owned();

    let corrected = project.json(&[
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        CORRECTION,
    ]);
    let lesson = &corrected["lesson"];
    assert_eq!(lesson["source"], "llm");
    assert_eq!(lesson["rule"], PROPOSED_RULE);
    assert_eq!(lesson["validated_by_test"], false);
    let test_id = corrected["regression_test"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(test_id.starts_with("TEST-"), "{test_id}");

    // The proposer saw the execution and the correction, never the skill's prompt.
    let proposer = server
        .requests()
        .into_iter()
        .find(|r| r.all_text().contains("lesson proposer"))
        .unwrap();
    let seen = proposer.all_text();
    assert!(
        seen.contains("distributed systems") && seen.contains("Jane Smith"),
        "{seen}"
    );
    assert!(
        !seen.contains("Score the candidate from 0 to 100"),
        "{seen}"
    );

    let tests_dir = project.path().join("skills").join(SKILL).join("tests");
    let promptfoo = fs::read_to_string(tests_dir.join("promptfoo.yaml")).unwrap();
    assert!(promptfoo.contains(&test_id), "{promptfoo}");
    assert!(
        promptfoo.contains("return o.overall_score < 60"),
        "{promptfoo}"
    );
    let native = fs::read_to_string(tests_dir.join("lore.jsonl")).unwrap();
    let case: Value = serde_json::from_str(native.lines().next().unwrap()).unwrap();
    assert_eq!(
        case["assertions"][0],
        json!({"type": "json_path", "path": "$.overall_score", "op": "lt", "value": 60.0})
    );
    assert_eq!(case["input"]["candidate"], "Jane Smith");

    let second = project.json(&["run", SKILL, "--input", "input.json"]);
    assert_eq!(second["execution"]["output"]["overall_score"], 55);
    let prompt = server.requests().last().unwrap().all_text();
    assert!(
        prompt.contains(PROPOSED_RULE),
        "the next prompt carries the rule: {prompt}"
    );

    let report = project.ok(&["test", SKILL]);
    assert!(report.contains(&format!("PASS {test_id}")), "{report}");
    assert!(report.contains("lesson marked validated"), "{report}");
    let shown = project.json(&["lessons", "show", lesson["id"].as_str().unwrap()]);
    let shown = if shown.get("lesson").is_some() {
        &shown["lesson"]
    } else {
        &shown
    };
    assert_eq!(shown["validated_by_test"], true, "{shown}");
    assert_eq!(shown["generated_test_ids"], json!([test_id]));
    // A second pass changes nothing more.
    assert!(
        !project
            .ok(&["test", SKILL])
            .contains("lesson marked validated")
    );
}

#[test]
fn a_failing_proposer_leaves_the_distilled_lesson_and_records_its_error() {
    let server = walkthrough_provider("I think the rule is: be careful.");
    let project = Project::new(Some(&server), Protocol::OpenAi);
    let run = project.json(&["run", SKILL, "--input", "input.json"]);
    let id = run["execution"]["id"].as_str().unwrap().to_owned();
    let corrected = project.json(&[
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        CORRECTION,
    ]);
    assert_eq!(corrected["lesson"]["source"], "correction");
    assert!(
        corrected["lesson"]["rule"]
            .as_str()
            .unwrap()
            .contains("below 60")
    );
    let error = corrected["correction"]["extra"]["proposer_error"]["error"]
        .as_str()
        .unwrap();
    assert!(error.contains("does not match the schema"), "{error}");
    let proposer_calls = server
        .requests()
        .iter()
        .filter(|r| r.all_text().contains("lesson proposer"))
        .count();
    assert_eq!(proposer_calls, 2, "one answer and one repair");
}

#[test]
fn a_failing_regression_test_exits_non_zero_and_leaves_the_lesson_alone() {
    // The skill never improves: 72 whatever its prompt says.
    let server = FakeServer::start(|r: &Captured| {
        let answer = if r.all_text().contains("lesson proposer") {
            proposal().to_owned()
        } else {
            screen(72)
        };
        Protocol::OpenAi.answer(&answer, "gpt-4o-mini")
    });
    let project = Project::new(Some(&server), Protocol::OpenAi);
    let run = project.json(&["run", SKILL, "--input", "input.json"]);
    let id = run["execution"]["id"].as_str().unwrap().to_owned();
    let corrected = project.json(&[
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        CORRECTION,
    ]);
    let (stdout, err) = project.fails(&["test", SKILL]);
    assert!(
        stdout.contains("FAIL TEST-") && stdout.contains("expected < 60"),
        "{stdout}"
    );
    assert!(err.contains("1 of 1 tests failed"), "{err}");
    let shown = project.json(&[
        "lessons",
        "show",
        corrected["lesson"]["id"].as_str().unwrap(),
    ]);
    let shown = if shown.get("lesson").is_some() {
        &shown["lesson"]
    } else {
        &shown
    };
    assert_eq!(shown["validated_by_test"], false);
}

#[test]
fn lore_test_without_tests_or_model_says_why() {
    let project = Project::new(None, Protocol::OpenAi);
    let (_, err) = project.fails(&["test", SKILL]);
    assert!(err.contains("no regression tests yet"), "{err}");
    let id = project.ok(&[
        "record",
        SKILL,
        "--input",
        "{\"candidate\": \"A\"}",
        "--output",
        "{\"overall_score\": 80}",
    ]);
    project.ok(&[
        "correct",
        SKILL,
        "--execution-id",
        id.trim(),
        "--correction",
        "Should score below 60.",
    ]);
    let (_, err) = project.fails(&["test", SKILL]);
    assert!(err.contains("no model is configured"), "{err}");
}

#[test]
fn watch_once_lists_recorded_executions() {
    let project = Project::new(None, Protocol::OpenAi);
    let id = project.ok(&[
        "record",
        SKILL,
        "--input",
        "{}",
        "--output",
        "{}",
        "--cost-usd",
        "0.0093",
        "--latency-ms",
        "1062",
        "--model",
        "claude-haiku",
    ]);
    let table = project.ok(&["watch", "--once"]);
    let row = table
        .lines()
        .find(|l| l.contains(id.trim()))
        .unwrap_or_else(|| panic!("{table}"));
    for needle in [
        "pending_review",
        "$0.00930",
        "1062 ms",
        "claude-haiku",
        SKILL,
    ] {
        assert!(row.contains(needle), "{needle} not in {row}");
    }
    assert!(
        project
            .ok(&["watch", "--once", "--skill", "hr/other"])
            .lines()
            .count()
            == 1
    );
    let (_, err) = project.fails(&["watch", "--interval-ms", "1"]);
    assert!(err.contains("interval"), "{err}");
}

#[test]
fn watch_in_a_terminal_shows_an_execution_recorded_by_another_process() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed; .ci/run installs it");
        return;
    }
    let project = Project::new(None, Protocol::OpenAi);
    let session = format!("lore-watch-{}", std::process::id());
    let command = format!(
        "cd {} && {} watch --interval-ms 100",
        project.path().display(),
        env!("CARGO_BIN_EXE_lore")
    );
    let tmux = |args: &[&str]| Command::new("tmux").args(args).output().unwrap();
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "200",
        "-y",
        "30",
        &command,
    ]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let screen =
        || String::from_utf8(tmux(&["capture-pane", "-p", "-t", &session]).stdout).unwrap();
    let wait_for = |needle: &str| {
        for _ in 0..100 {
            if screen().contains(needle) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    };
    let header_shown = wait_for("OUTCOME");
    let id = project.ok(&[
        "record",
        SKILL,
        "--input",
        "{}",
        "--output",
        "{}",
        "--outcome",
        "rejected",
        "--model",
        "other-process",
    ]);
    let row_shown = wait_for(id.trim());
    let last = screen();
    tmux(&["kill-session", "-t", &session]);
    assert!(header_shown && row_shown, "{last}");
    assert!(
        last.lines().any(|l| l.contains(id.trim())
            && l.contains("rejected")
            && l.contains("other-process")),
        "{last}"
    );
}
