//! The `lore` commands that call a model, against a fake provider on loopback.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::Project;
use lore_providers::fake::{Captured, FakeServer, Protocol, Reply};
use serde_json::{Value, json};

const SKILL: &str = "hr/resume-screen";

const SKILL_MD: &str = "---\nname: hr/resume-screen\noutput_schema: |\n  {\"type\": \"object\",\n   \
    \"required\": [\"overall_score\", \"recommendation\"],\n   \"properties\": {\n    \
    \"overall_score\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 100},\n    \
    \"recommendation\": {\"enum\": [\"reject\", \"proceed_to_interview\"]}}}\n---\n\
    # Skill: resume screen\n\nScore the candidate from 0 to 100 for the role.\n";

/// A project with a store, a skill with an output schema, and a model at `server`.
fn project(server: Option<&FakeServer>, protocol: Protocol) -> Project {
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
    let project = Project::with_env(env);
    let skill_dir = project.path().join("skills").join(SKILL);
    fs::create_dir_all(&skill_dir).unwrap();
    fs::write(skill_dir.join("SKILL.md"), SKILL_MD).unwrap();
    fs::write(
        project.path().join("input.json"),
        r#"{"candidate": "Jane Smith", "role": "Senior Backend Engineer", "resume": "5 years Python"}"#,
    )
    .unwrap();
    project.initialized()
}

/// What only these tests need from a project.
impl Project {
    fn executions(&self) -> u64 {
        self.json(&["memory", "status"])["counts"]["executions"]
            .as_u64()
            .unwrap()
    }

    /// `lore run` on `input.json`, then `lore correct` of that execution with [`CORRECTION`];
    /// returns both answers.
    fn run_then_correct(&self) -> (Value, Value) {
        let run = self.json(&["run", SKILL, "--input", "input.json"]);
        let id = run["execution"]["id"].as_str().unwrap().to_owned();
        let corrected = self.correct(SKILL, &id, CORRECTION);
        (run, corrected)
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
    let project = project(Some(&server), Protocol::OpenAi);
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
    let project = project(Some(&server), Protocol::Anthropic);
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
    let err = project.fails(&["run", SKILL, "--input", "input.json"]);
    assert!(err.contains("prices.json"), "{err}");
    assert_eq!(project.executions(), 1);
}

#[test]
fn run_without_a_model_says_how_to_configure_one_and_records_nothing() {
    let project = project(None, Protocol::OpenAi);
    let err = project.fails(&["run", SKILL, "--input", "input.json"]);
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
    let project = project(Some(&server), Protocol::OpenAi);
    let (stdout, err) =
        project.fails_with_output(&["run", SKILL, "--input", "input.json", "--json"]);
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
fn a_failed_run_prints_its_error_and_no_stray_null_output() {
    let server = FakeServer::start(|_: &Captured| Reply::status(500, "model overloaded"));
    let project = project(Some(&server), Protocol::OpenAi);
    let (stdout, err) = project.fails_with_output(&["run", SKILL, "--input", "input.json"]);
    assert!(err.contains("recorded as failed execution EXEC-"), "{err}");
    assert!(stdout.starts_with("execution EXEC-"), "{stdout}");
    assert!(!stdout.lines().any(|l| l.trim() == "null"), "{stdout}");
}

#[test]
fn bad_run_input_is_refused_before_any_model_call() {
    let server = FakeServer::start(|_: &Captured| Reply::status(500, "should not be called"));
    let project = project(Some(&server), Protocol::OpenAi);
    fs::write(project.path().join("bad.json"), "{oops").unwrap();
    let skill_md = project.path().join("skills/hr/broken/SKILL.md");
    fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    fs::write(
        &skill_md,
        "---\noutput_schema: ../../secret.json\n---\nDo it.\n",
    )
    .unwrap();
    let yaml_md = project.path().join("skills/hr/yaml/SKILL.md");
    fs::create_dir_all(yaml_md.parent().unwrap()).unwrap();
    fs::write(
        &yaml_md,
        "---\noutput_schema:\n  type: object\n  required: [score]\n---\nDo it.\n",
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
        (
            vec!["run", "hr/yaml", "--input", "input.json"],
            "written as a YAML map",
        ),
    ] {
        let err = project.fails(&args);
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
        } else if text.contains("below 60") {
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
    let project = project(Some(&server), Protocol::OpenAi);
    let (first, corrected) = project.run_then_correct();
    assert_eq!(first["execution"]["output"]["overall_score"], 72);
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

    // A run's lessons come by recall, which holds a lesson still being measured out of a
    // share of runs (15% for a new one) to learn what it does: the rule is in the next prompt
    // unless held out, and the run records exactly the lessons its prompt carried.
    let mut carried = false;
    for _ in 0..6 {
        let next = project.json(&["run", SKILL, "--input", "input.json"]);
        let prompt = server.requests().last().unwrap().all_text();
        let shown = next["execution"]["lessons_shown"].to_string();
        let in_prompt = prompt.contains(PROPOSED_RULE);
        assert_eq!(
            in_prompt,
            shown.contains(lesson["id"].as_str().unwrap()),
            "{shown}"
        );
        let score = next["execution"]["output"]["overall_score"].clone();
        assert_eq!(score, if in_prompt { 55 } else { 72 }, "{prompt}");
        if in_prompt {
            carried = true;
            break;
        }
    }
    assert!(carried, "the next prompts never carried the rule");

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
    // A second pass changes nothing more, and a replay is a check, not a run of the
    // experiment: recall never holds the tested lesson out of it (it sat out about one run in
    // seven before, which failed the gate at random).
    for _ in 0..20 {
        let again = project.ok(&["test", SKILL]);
        assert!(again.contains(&format!("PASS {test_id}")), "{again}");
        assert!(!again.contains("lesson marked validated"), "{again}");
    }
}

/// The promptfoo CLI `scripts/test` installs (its pinned version lives there), or `LORE_PROMPTFOO`.
fn promptfoo() -> Option<PathBuf> {
    let path = std::env::var_os("LORE_PROMPTFOO")
        .map(PathBuf::from)
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/lore-ci/promptfoo/node_modules/.bin/promptfoo"))
        })?;
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run the promptfoo test, but there is no promptfoo at {}",
        path.display()
    );
    eprintln!(
        "\n*** SKIPPED: promptfoo is not installed at {}; `scripts/test` installs it (or set \
         LORE_PROMPTFOO to a promptfoo binary) ***\n",
        path.display()
    );
    None
}

/// A promptfoo config that replays the generated tests through the skill's current prompt, on the
/// model at `base_url`, grading any rubric with that model too. JSON, which is also YAML.
fn promptfoo_config(base_url: &str, tests: &Path) -> String {
    let provider = json!({
        "id": "openai:chat:gpt-4o-mini",
        "config": {"apiBaseUrl": base_url, "apiKey": "sk-fake"}
    });
    json!({
        "description": "Lore regression tests",
        "prompts": ["{{system}}\n\nInput:\n{{input}}"],
        "providers": [provider],
        "defaultTest": {
            "vars": {"system": "file://prompt.txt"},
            "options": {"provider": provider}
        },
        "tests": format!("file://{}", tests.display())
    })
    .to_string()
}

/// Runs `command` for at most two minutes.
fn output_within_two_minutes(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{command:?} took more than two minutes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn promptfoo_accepts_the_generated_tests_and_they_pass_on_the_fake_provider() {
    let Some(promptfoo) = promptfoo() else {
        return;
    };
    let server = walkthrough_provider(proposal());
    let project = project(Some(&server), Protocol::OpenAi);
    let (_, corrected) = project.run_then_correct();
    let test_id = corrected["regression_test"]["id"].as_str().unwrap();
    let tests = project
        .path()
        .join("skills")
        .join(SKILL)
        .join("tests/promptfoo.yaml");
    fs::write(
        project.path().join("prompt.txt"),
        project.ok(&["memory", "prompt", SKILL]),
    )
    .unwrap();
    let config = project.path().join("promptfooconfig.yaml");
    fs::write(
        &config,
        promptfoo_config(&format!("{}/v1", server.url()), &tests),
    )
    .unwrap();
    let asked_before = server.requests().len();

    let mut command = Command::new(promptfoo);
    command
        .current_dir(project.path())
        .args(["eval", "-c", "promptfooconfig.yaml", "-o", "results.json"])
        .args([
            "--no-cache",
            "--no-write",
            "--no-share",
            "--no-progress-bar",
        ])
        .env("PROMPTFOO_DISABLE_TELEMETRY", "1")
        .env("PROMPTFOO_DISABLE_UPDATE", "1")
        .env("PROMPTFOO_DISABLE_SHARING", "1")
        .env("PROMPTFOO_DISABLE_REMOTE_GENERATION", "1")
        .env("PROMPTFOO_CONFIG_DIR", project.path().join(".promptfoo"))
        .env("OPENAI_API_KEY", "sk-fake")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("NO_COLOR", "1");
    let out = output_within_two_minutes(command);
    let log = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promptfoo eval failed: {log}");
    let results: Value =
        serde_json::from_str(&fs::read_to_string(project.path().join("results.json")).unwrap())
            .unwrap();
    let stats = &results["results"]["stats"];
    assert_eq!(
        (&stats["successes"], &stats["failures"], &stats["errors"]),
        (&json!(1), &json!(0), &json!(0)),
        "{log}"
    );
    // It read the generated file and ran its one assertion, which held.
    let case = &results["config"]["tests"][0];
    assert_eq!(case["metadata"]["lore_test_id"], test_id, "{case}");
    let metrics = &results["results"]["prompts"][0]["metrics"];
    assert_eq!(metrics["assertPassCount"], 1, "{metrics}");
    assert_eq!(metrics["assertFailCount"], 0, "{metrics}");
    // promptfoo asked the fake provider, with the learned rule in the prompt.
    let asked = server.requests();
    assert!(asked.len() > asked_before, "{log}");
    assert!(asked[asked_before].all_text().contains(PROPOSED_RULE));
}

#[test]
fn a_failing_proposer_leaves_the_distilled_lesson_and_records_its_error() {
    let server = walkthrough_provider("I think the rule is: be careful.");
    let project = project(Some(&server), Protocol::OpenAi);
    let (_, corrected) = project.run_then_correct();
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
    let project = project(Some(&server), Protocol::OpenAi);
    let (_, corrected) = project.run_then_correct();
    let (stdout, err) = project.fails_with_output(&["test", SKILL]);
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
    let project = project(None, Protocol::OpenAi);
    let err = project.fails(&["test", SKILL]);
    assert!(err.contains("no regression tests yet"), "{err}");
    let id = project.ok(&[
        "record",
        SKILL,
        "--input",
        "{\"candidate\": \"A\"}",
        "--output",
        "{\"overall_score\": 80}",
    ]);
    project.correct(SKILL, id.trim(), "Should score below 60.");
    let err = project.fails(&["test", SKILL]);
    assert!(err.contains("no model is configured"), "{err}");
}

#[test]
fn watch_once_lists_recorded_executions() {
    let project = project(None, Protocol::OpenAi);
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
    let err = project.fails(&["watch", "--interval-ms", "1"]);
    assert!(err.contains("interval"), "{err}");
}

#[test]
fn watch_in_a_terminal_shows_an_execution_recorded_by_another_process() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed; scripts/test installs it");
        return;
    }
    let project = project(None, Protocol::OpenAi);
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

/// Two approved lessons where the question's words reach only the first; the second shares
/// its vocabulary with the first.
fn import_refund_lessons(project: &Project) {
    let lesson = |n: u32, rule: &str| {
        json!({"type": "lesson", "record": {
            "id": format!("REFL-20260101000000-0000000{n}"), "skill": "finance/refunds",
            "mistake": "m", "root_cause": "c", "rule": rule, "applies_when": "",
            "tags": [], "tiers": {"summary": rule, "condition": "", "action": "", "rationale": ""},
            "confidence": 0.8, "source": "correction", "status": "approved",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}})
        .to_string()
    };
    let jsonl = [
        lesson(1, "Refunds over 500 EUR need finance approval."),
        lesson(2, "Finance approval tickets go to the approvals queue."),
    ]
    .join("\n");
    fs::write(project.path().join("lessons.jsonl"), jsonl).unwrap();
    project.ok(&["import", "--jsonl", "lessons.jsonl"]);
}

fn ids(search: &Value) -> Vec<&str> {
    search["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect()
}

#[test]
fn search_asks_the_model_for_a_better_query_and_merges_the_rounds() {
    let verdict = |v: Value| Protocol::OpenAi.answer(&v.to_string(), "gpt-4o-mini");
    let server = FakeServer::scripted(vec![
        verdict(json!({"sufficient": false, "query": "approval queue"})),
        verdict(json!({"sufficient": true, "query": null})),
    ]);
    let project = project(Some(&server), Protocol::OpenAi);
    import_refund_lessons(&project);
    let args = ["memory", "search", "refund 500", "--reformulate", "model"];
    let search = project.json(&args);
    assert_eq!(search["stopped"], "sufficient", "{search}");
    let queries: Vec<&str> = search["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["query"].as_str().unwrap())
        .collect();
    assert_eq!(queries, ["refund 500", "approval queue"]);
    let found = ids(&search);
    assert!(found.contains(&"REFL-20260101000000-00000001"), "{search}");
    assert!(found.contains(&"REFL-20260101000000-00000002"), "{search}");
    assert_eq!(found.len(), 2, "merged by ID: {search}");
    // The model saw the question, what was tried, and the results as quoted data.
    let asks = server.requests();
    assert_eq!(asks.len(), 2);
    let first = asks[0].all_text();
    assert!(
        first.contains("refund 500") && first.contains("queries_tried"),
        "{first}"
    );
    assert!(first.contains("Refunds over 500 EUR"), "{first}");
}

#[test]
fn a_failing_model_leaves_the_first_results_and_says_why() {
    let server = FakeServer::scripted(vec![
        Protocol::OpenAi
            .answer("not json at all", "gpt-4o-mini");
        4
    ]);
    let project = project(Some(&server), Protocol::OpenAi);
    import_refund_lessons(&project);
    let args = ["memory", "search", "refund 500", "--reformulate", "model"];
    let search = project.json(&args);
    assert_eq!(search["stopped"], "failed", "{search}");
    assert!(
        search["failure"].as_str().unwrap().contains("schema"),
        "{search}"
    );
    assert_eq!(ids(&search), ["REFL-20260101000000-00000001"]);
    assert_eq!(search["rounds"].as_array().unwrap().len(), 1);
}

#[test]
fn the_lexical_loop_needs_no_model_and_bad_settings_are_refused() {
    let project = project(None, Protocol::OpenAi);
    import_refund_lessons(&project);
    let args = ["memory", "search", "refund 500", "--reformulate", "lexical"];
    let search = project.json(&args);
    assert_eq!(ids(&search).len(), 2, "{search}");
    assert_eq!(search["rounds"][1]["new"], 1, "{search}");
    for (args, expected) in [
        (
            vec!["memory", "search", "refund", "--reformulate", "model"],
            "needs a model",
        ),
        (
            vec![
                "memory",
                "search",
                "refund",
                "--reformulate",
                "lexical",
                "--reformulate-rounds",
                "9",
            ],
            "outside 1 to 5",
        ),
        (
            vec!["memory", "search", "refund", "--reformulate-rounds", "2"],
            "--reformulate",
        ),
    ] {
        let err = project.fails(&args);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}
