//! The `lore` binary end to end, on real SQLite files in temporary projects.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::Project;
use serde_json::Value;

/// What only these tests need from a project.
impl Project {
    fn db(&self) -> PathBuf {
        self.path().join(".lore/lore.db")
    }

    /// Runs each command, expecting it to fail with a message containing its needle.
    fn fails_with_each(&self, cases: &[(&[&str], &str)]) {
        for (args, needle) in cases {
            let err = self.fails(args);
            assert!(err.contains(needle), "lore {args:?}: {err}");
        }
    }

    fn counts(&self) -> Value {
        self.json(&["memory", "status"])["counts"].clone()
    }

    fn record(&self, skill: &str) -> String {
        self.ok(&[
            "record",
            skill,
            "--input",
            r#"{"ticket": "Checkout returns 500 for EU customers"}"#,
            "--output",
            r#"{"summary": "A checkout problem.", "priority": "normal"}"#,
            "--outcome",
            "rejected",
        ])
        .trim()
        .to_owned()
    }
}

const SKILL: &str = "support/summarize-ticket";
const CORRECTION: &str = "The summary hid the outage. When a ticket reports errors for many \
    customers, priority must be urgent and the summary should name the failing page.";

fn initialized() -> Project {
    Project::new().initialized()
}

#[test]
fn a_prompt_for_a_task_holds_the_layered_context_of_that_task() {
    let p = initialized();
    let exec = p.record(SKILL);
    let lesson = p.correct(SKILL, &exec, CORRECTION)["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let task = "Many customers report errors when paying; summarize the ticket";
    // Recall holds a lesson still being measured out of a share of prompts: asked a few
    // times, the prompt carries it, between DOMAIN and SKILL, and lists it as shown.
    let carried = (0..8).find_map(|_| {
        let prompt: Value =
            serde_json::from_str(&p.ok(&["memory", "prompt", SKILL, "--task", task, "--json"]))
                .unwrap();
        let shown = prompt["lessons"].to_string();
        assert_eq!(
            prompt["text"].as_str().unwrap().contains(&lesson),
            shown.contains(&lesson),
            "{prompt}"
        );
        shown.contains(&lesson).then_some(prompt)
    });
    let prompt = carried.expect("the task's prompts never carried its lesson");
    let names: Vec<&str> = prompt["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["workspace", "domain", "lessons", "skill"],
        "{prompt}"
    );
    let layer = &prompt["layers"][2];
    assert_eq!(layer["items"], serde_json::json!([lesson]), "{layer}");
    assert_eq!(layer["packed"], 1, "{layer}");
    assert_eq!(layer["truncated"], false, "{layer}");
    // A task the lesson is not about gets no memory layer; without a task, every rule.
    let other = p.ok(&[
        "memory",
        "prompt",
        SKILL,
        "--task",
        "Book a room for the team offsite",
    ]);
    assert!(!other.contains(&lesson), "{other}");
    assert!(!other.contains("## Lessons learned"), "{other}");
    let all = p.ok(&["memory", "prompt", SKILL]);
    assert!(
        all.contains(&lesson) && all.contains("Learned Rules"),
        "{all}"
    );
}

#[test]
fn init_creates_the_store_and_an_example_skill() {
    let p = Project::new();
    let out = p.ok(&["init"]);
    assert!(out.contains("lore.db"), "{out}");
    assert!(p.db().is_file());
    assert!(
        p.path()
            .join("skills/support/summarize-ticket/SKILL.md")
            .is_file()
    );
    assert!(p.path().join("skills/WORKSPACE.md").is_file());
    // A second init keeps what is there.
    fs::write(p.path().join("skills/WORKSPACE.md"), "mine").unwrap();
    p.ok(&["init"]);
    assert_eq!(
        fs::read_to_string(p.path().join("skills/WORKSPACE.md")).unwrap(),
        "mine"
    );
}

#[test]
fn the_correction_loop_puts_the_learned_rule_into_the_next_prompt() {
    let p = initialized();
    let before = p.ok(&["memory", "prompt", SKILL]);
    assert!(!before.contains("Learned Rules"), "{before}");

    let exec = p.record(SKILL);
    assert!(exec.starts_with("EXEC-"), "{exec}");
    let out = p.correct(SKILL, &exec, CORRECTION);
    let lesson_id = out["lesson"]["id"].as_str().unwrap().to_owned();
    assert!(
        out["correction"]["id"]
            .as_str()
            .unwrap()
            .starts_with("CORR-")
    );
    assert_eq!(out["lesson"]["status"], "approved");
    let confidence = out["lesson"]["confidence"].as_f64().unwrap();
    assert!((0.8..=1.0).contains(&confidence), "{confidence}");

    let prompt = p.ok(&["memory", "prompt", SKILL]);
    assert!(
        prompt.contains("## Learned Rules (from past corrections)"),
        "{prompt}"
    );
    assert!(prompt.contains(&lesson_id), "{prompt}");
    assert!(
        prompt.contains("> When a ticket reports errors for many customers"),
        "{prompt}"
    );
    // Seed 000's order: workspace, domain, learned rules, skill.
    let order = [
        "Workspace policies",
        "# Domain: support",
        "Learned Rules",
        "# Skill:",
    ]
    .map(|needle| {
        prompt
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} in {prompt}"))
    });
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");

    let guardrails = fs::read_to_string(
        p.path()
            .join("skills/support/summarize-ticket/GUARDRAILS.md"),
    )
    .unwrap();
    assert!(guardrails.contains(&lesson_id), "{guardrails}");
    assert!(
        guardrails.contains("Avoid: The summary hid the outage."),
        "{guardrails}"
    );

    let counts = p.counts();
    assert_eq!(
        (
            counts["executions"].as_u64(),
            counts["corrections"].as_u64(),
            counts["lessons"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
}

#[test]
fn correct_prints_the_ids_it_made() {
    let p = initialized();
    let exec = p.record(SKILL);
    let out = p.ok(&[
        "correct",
        SKILL,
        "--execution-id",
        &exec,
        "--correction",
        CORRECTION,
    ]);
    assert!(out.contains("correction CORR-"), "{out}");
    assert!(out.contains("lesson     REFL-"), "{out}");
    assert!(out.contains("GUARDRAILS.md"), "{out}");
}

#[test]
fn record_reads_json_from_files_and_keeps_every_field() {
    let p = initialized();
    fs::write(p.path().join("in.json"), r#"{"candidate": "Zoë 山田"}"#).unwrap();
    let e = p.json(&[
        "record",
        "hr/screen",
        "--input",
        "@in.json",
        "--output",
        "[1, 2]",
        "--outcome",
        "accepted",
        "--cost-usd",
        "0.0093",
        "--latency-ms",
        "1062",
        "--model",
        "m-1",
        "--session",
        "s-9",
    ]);
    assert_eq!(e["input"]["candidate"], "Zoë 山田");
    assert_eq!(e["output"], serde_json::json!([1, 2]));
    assert_eq!(e["outcome"], "accepted");
    assert_eq!(e["cost_usd"], 0.0093);
    assert_eq!(e["model"], "m-1");
    assert_eq!(e["session"], "s-9");
}

#[test]
fn executions_recorded_in_one_second_get_distinct_ids() {
    let p = initialized();
    let ids: std::collections::HashSet<String> = (0..15).map(|_| p.record(SKILL)).collect();
    assert_eq!(ids.len(), 15);
    assert_eq!(p.counts()["executions"], 15);
}

#[test]
fn bad_record_input_is_refused_and_nothing_is_stored() {
    let p = initialized();
    p.record(SKILL);
    let before = p.counts();
    let cases: &[(&[&str], &str)] = &[
        (
            &["record", SKILL, "--input", "{not json", "--output", "{}"],
            "malformed JSON",
        ),
        (
            &["record", SKILL, "--input", "{}", "--output", "[1,"],
            "--output: malformed JSON",
        ),
        (
            &[
                "record",
                SKILL,
                "--input",
                "@missing.json",
                "--output",
                "{}",
            ],
            "cannot read missing.json",
        ),
        (
            &["record", "../etc", "--input", "{}", "--output", "{}"],
            "relative",
        ),
        (
            &["record", "hr\\x", "--input", "{}", "--output", "{}"],
            "backslash",
        ),
        (
            &["record", "/etc/passwd", "--input", "{}", "--output", "{}"],
            "absolute",
        ),
        (
            &[
                "record",
                SKILL,
                "--input",
                "{}",
                "--output",
                "{}",
                "--outcome",
                "maybe",
            ],
            "pending_review",
        ),
        (
            &[
                "record",
                SKILL,
                "--input",
                "{}",
                "--output",
                "{}",
                "--cost-usd",
                "-1",
            ],
            "non-negative",
        ),
    ];
    p.fails_with_each(cases);
    assert_eq!(p.counts(), before);
}

#[test]
fn bad_corrections_are_refused_and_nothing_is_stored() {
    let p = initialized();
    let exec = p.record(SKILL);
    p.correct(SKILL, &exec, CORRECTION);
    let before = p.counts();
    let lessons_before = p.json(&["lessons", "list"]);
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "correct",
                SKILL,
                "--execution-id",
                "EXEC-20990101000000",
                "--correction",
                "x must y",
            ],
            "execution not found",
        ),
        (
            &[
                "correct",
                SKILL,
                "--execution-id",
                &exec,
                "--correction",
                "   ",
            ],
            "empty",
        ),
        (
            &[
                "correct",
                "hr/other",
                "--execution-id",
                &exec,
                "--correction",
                "x must y",
            ],
            "belongs to",
        ),
        (
            &[
                "correct",
                "hr/..",
                "--execution-id",
                &exec,
                "--correction",
                "x must y",
            ],
            "relative",
        ),
        (
            &[
                "correct",
                SKILL,
                "--execution-id",
                "bad id",
                "--correction",
                "x",
            ],
            "invalid execution ID",
        ),
    ];
    p.fails_with_each(cases);
    assert_eq!(p.counts(), before);
    assert_eq!(p.json(&["lessons", "list"]), lessons_before);
}

#[test]
fn memory_status_and_search() {
    let p = initialized();
    let exec = p.record(SKILL);
    p.correct(SKILL, &exec, CORRECTION);
    let status = p.ok(&["memory", "status"]);
    assert!(status.contains("Store: sqlite"), "{status}");
    assert!(
        status.contains("Executions: 1  |  Corrections: 1  |  Lessons: 1  |  Tests: 1"),
        "{status}"
    );

    let hits = p.json(&["memory", "search", "urgent priority", "-n", "3"]);
    let hits = hits.as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3);
    assert_eq!(hits[0]["kind"], "lesson");
    let none = p.json(&["memory", "search", "zebra xylophone"]);
    assert_eq!(none, serde_json::json!([]));
    // Search text is words, never query syntax.
    p.ok(&["memory", "search", "\"unbalanced* NEAR( -x:"]);
    assert!(
        p.fails(&["memory", "search", "x", "-n", "0"])
            .contains("limit")
    );
}

#[test]
fn prompt_for_a_skill_without_skill_md_is_a_clear_error() {
    let p = initialized();
    let err = p.fails(&["memory", "prompt", "hr/none"]);
    assert!(err.contains("no SKILL.md at"), "{err}");
}

#[test]
fn reading_commands_without_a_store_say_how_to_make_one() {
    let p = Project::new();
    let err = p.fails(&["memory", "status"]);
    assert!(err.contains("run `lore init`"), "{err}");
    assert!(!p.db().exists(), "a read must not create a store");
}

#[test]
fn lessons_can_be_listed_shown_edited_and_retired_with_an_audit_trail() {
    let p = initialized();
    let exec = p.record(SKILL);
    let id = p.correct(SKILL, &exec, CORRECTION)["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let list = p.ok(&["lessons", "list", "--skill", SKILL]);
    assert!(list.contains(&id) && list.contains("approved"), "{list}");

    let edited = p.json(&[
        "lessons",
        "edit",
        &id,
        "--rule",
        "Mark multi-customer outages urgent.",
        "--confidence",
        "0.7",
        "--by",
        "ana",
        "--reason",
        "shorter",
    ]);
    assert_eq!(edited["rule"], "Mark multi-customer outages urgent.");
    assert_eq!(edited["confidence"], 0.7);
    let prompt = p.ok(&["memory", "prompt", SKILL]);
    assert!(
        prompt.contains("> Mark multi-customer outages urgent."),
        "{prompt}"
    );

    let shown = p.json(&["lessons", "show", &id]);
    let audit = shown["audit"].as_array().unwrap();
    // Created, linked to the regression test its correction wrote, edited by ana.
    assert_eq!(audit.len(), 3, "{audit:?}");
    assert_eq!(
        audit[1]["evidence"]["test_id"].as_str().unwrap()[..5],
        *"TEST-"
    );
    assert_eq!(audit[2]["action"], "edited");
    assert_eq!(audit[2]["actor"], "ana");
    assert_eq!(audit[2]["evidence"]["confidence"]["after"], 0.7);

    p.ok(&["lessons", "retire", &id, "--reason", "wrong rule"]);
    let prompt = p.ok(&["memory", "prompt", SKILL]);
    assert!(
        !prompt.contains(&id),
        "a retired lesson reached the prompt: {prompt}"
    );
    let archived = p.json(&["lessons", "list", "--status", "archived"]);
    assert_eq!(archived[0]["id"], id.as_str());
    let text = p.ok(&["lessons", "show", &id]);
    assert!(
        text.contains("approved -> archived") && text.contains("wrong rule"),
        "{text}"
    );
}

/// `lore lessons list/show` used to print a sensitive lesson's secrets. They are masked
/// unless `show --raw` asks, and that read is audited with who asked.
#[test]
fn lessons_are_printed_redacted_and_a_raw_read_is_audited() {
    let p = initialized();
    let exec = p.record(SKILL);
    let card = "4111 1111 1111 1111";
    let id = p.correct(
        SKILL,
        &exec,
        &format!("Never echo the card {card}; mail jane.doe@example.com instead."),
    )["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for args in [
        vec!["lessons", "list"],
        vec!["lessons", "list", "--status", "sensitive", "--json"],
        vec!["lessons", "show", &id],
        vec!["lessons", "show", &id, "--json"],
    ] {
        let out = p.ok(&args);
        assert!(
            !out.contains(card) && !out.contains("jane.doe@example.com"),
            "{args:?} printed a secret: {out}"
        );
    }
    let raw = p.json(&["lessons", "show", &id, "--raw", "--by", "ana"]);
    assert!(
        raw["lesson"]["rule"].as_str().unwrap().contains(card),
        "{raw}"
    );
    let shown = p.json(&["lessons", "show", &id]);
    let last = shown["audit"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "disclosed", "{shown}");
    assert_eq!(last["actor"], "ana", "{shown}");
}

#[test]
fn bad_lesson_edits_are_refused_and_change_nothing() {
    let p = initialized();
    let exec = p.record(SKILL);
    let id = p.correct(SKILL, &exec, CORRECTION)["lesson"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = p.json(&["lessons", "show", &id]);
    let cases: &[(&[&str], &str)] = &[
        (
            &["lessons", "edit", &id, "--confidence", "1.5"],
            "outside 0.0 to 1.0",
        ),
        (&["lessons", "edit", &id, "--rule", "  "], "empty"),
        (&["lessons", "edit", &id], "nothing to change"),
        (
            &["lessons", "edit", "REFL-404", "--rule", "x"],
            "lesson not found",
        ),
        (&["lessons", "retire", "REFL-404"], "lesson not found"),
        (&["lessons", "list", "--status", "bogus"], "needs_review"),
    ];
    p.fails_with_each(cases);
    assert_eq!(p.json(&["lessons", "show", &id]), before);
    p.ok(&["lessons", "retire", &id]);
    assert!(
        p.fails(&["lessons", "retire", &id])
            .contains("already archived")
    );
}

#[test]
fn a_file_that_is_not_a_lore_store_is_refused_and_left_alone() {
    let p = Project::new();
    fs::create_dir_all(p.path().join(".lore")).unwrap();
    let garbage = b"this is not a database, just text that happens to be here\n".repeat(100);
    fs::write(p.db(), &garbage).unwrap();
    for args in [
        &["memory", "status"][..],
        &["record", SKILL, "--input", "{}", "--output", "{}"],
    ] {
        let err = p.fails(args);
        assert!(err.contains("not a Lore database"), "{err}");
    }
    assert_eq!(fs::read(p.db()).unwrap(), garbage);
}

#[test]
fn a_store_from_a_newer_lore_is_refused_and_left_alone() {
    let p = initialized();
    p.record(SKILL);
    {
        let conn = rusqlite::Connection::open(p.db()).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let before = fs::read(p.db()).unwrap();
    let err = p.fails(&["memory", "status"]);
    assert!(err.contains("newer Lore"), "{err}");
    let err = p.fails(&["record", SKILL, "--input", "{}", "--output", "{}"]);
    assert!(err.contains("newer Lore"), "{err}");
    assert_eq!(fs::read(p.db()).unwrap(), before);
}

#[test]
fn lore_home_overrides_the_store_location() {
    let p = Project::new();
    let home = p.path().join("elsewhere");
    let out = crate::common::lore_command()
        .args(["record", SKILL, "--input", "{}", "--output", "{}"])
        .current_dir(p.path())
        .env("LORE_HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(home.join("lore.db").is_file());
    assert!(!p.db().exists());
    let out = p.ok(&["--home", home.to_str().unwrap(), "memory", "status"]);
    assert!(out.contains("Executions: 1"), "{out}");
}

fn seed_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lore-engine/tests/fixtures/agentura/seed")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn seed_files_import_and_export_unchanged_and_twice_is_a_no_op() {
    let p = Project::new().initialized();
    let from = seed_fixture();
    let report = p.json(&["import", "--from", from.to_str().unwrap()]);
    assert_eq!(report["write"]["skipped"], 0);
    let again = p.json(&["import", "--from", from.to_str().unwrap()]);
    assert_eq!(again["write"]["written"], 0, "{again}");
    p.ok(&["export", "--to", "out"]);
    for file in [
        "episodic_memory.json",
        "corrections.json",
        "reflexion_entries.json",
    ] {
        assert_eq!(
            read_json(&p.path().join("out").join(file)),
            read_json(&from.join(file)),
            "{file}"
        );
    }
    // Imported reflexions are live: they reach the prompt once the skill exists on disk.
    let skill_dir = p.path().join("skills/hr/resume-screen");
    fs::create_dir_all(&skill_dir).unwrap();
    fs::write(skill_dir.join("SKILL.md"), "Screen the resume.").unwrap();
    assert!(
        p.ok(&["memory", "prompt", "hr/resume-screen"])
            .contains("REFL-003")
    );
}

/// Seed 000's IDs have one-second resolution: a real `episodic_memory.json` can hold two
/// different executions under one ID. Both are kept, and corrections follow the right one.
#[test]
fn seed_files_with_one_execution_id_twice_keep_both_and_import_twice_is_a_no_op() {
    let p = Project::new().initialized();
    let from = p.path().join("agentura");
    fs::create_dir_all(&from).unwrap();
    let execution = |at: &str, candidate: &str, score: u32| {
        serde_json::json!({
            "execution_id": "EXEC-20260220124341", "skill": "hr/resume-screen",
            "timestamp": at, "input_summary": {"candidate": candidate},
            "output_summary": {"overall_score": score}, "outcome": "rejected",
            "cost_usd": null, "latency_ms": 900, "model_used": null,
        })
    };
    let first = execution("2026-02-20T12:43:41.100000+00:00", "Jane", 72);
    let second = execution("2026-02-20T12:43:41.900000+00:00", "John", 55);
    let episodic = serde_json::json!({"entries": [first, second, first]});
    let correction = |id: &str, at: &str, score: u32, text: &str| {
        serde_json::json!({
            "correction_id": id, "execution_id": "EXEC-20260220124341",
            "skill": "hr/resume-screen", "timestamp": at,
            "original_output": {"overall_score": score}, "user_correction": text,
        })
    };
    let corrections = serde_json::json!({"corrections": [
        correction("CORR-001", "2026-02-20T12:43:41.500000+00:00", 72, "Jane scored too high."),
        correction("CORR-002", "2026-02-20T12:50:00+00:00", 55, "John scored too low."),
    ]});
    let reflexions = serde_json::json!({"entries": [{
        "reflexion_id": "REFL-002", "skill": "hr/resume-screen",
        "created_at": "2026-02-20T12:50:01+00:00", "correction_id": "CORR-002",
        "mistake": "Too low.", "root_cause": "scoring", "rule": "Weigh pipelines.",
        "applies_when": "Data roles.", "confidence": 0.9,
        "validated_by_test": false, "generated_test_ids": [],
    }]});
    for (name, value) in [
        ("episodic_memory.json", episodic),
        ("corrections.json", corrections),
        ("reflexion_entries.json", reflexions),
    ] {
        fs::write(from.join(name), value.to_string()).unwrap();
    }

    let said = p.ok(&["import", "--from", from.to_str().unwrap()]);
    assert!(
        said.contains("EXEC-20260220124341 -> EXEC-20260220124341-2"),
        "{said}"
    );
    let export = p.ok(&["export", "--jsonl", "-"]);
    let lines: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let record = |kind: &str, id: &str| {
        lines
            .iter()
            .find(|l| l["type"] == kind && l["record"]["id"] == id)
            .map(|l| l["record"].clone())
            .unwrap_or_else(|| panic!("no {kind} {id}: {export}"))
    };
    let executions = lines.iter().filter(|l| l["type"] == "execution").count();
    assert_eq!(executions, 2, "{export}");
    let renamed = record("execution", "EXEC-20260220124341-2");
    assert_eq!(renamed["input"]["candidate"], "John");
    assert_eq!(
        renamed["extra"]["original_execution_id"],
        "EXEC-20260220124341"
    );
    let kept = record("execution", "EXEC-20260220124341");
    assert_eq!(kept["input"]["candidate"], "Jane");
    assert!(
        kept["extra"].get("original_execution_id").is_none(),
        "{kept}"
    );
    let execution_of = |kind: &str, id: &str| record(kind, id)["execution_id"].clone();
    assert_eq!(
        execution_of("correction", "CORR-001"),
        "EXEC-20260220124341"
    );
    assert_eq!(
        execution_of("correction", "CORR-002"),
        "EXEC-20260220124341-2"
    );
    assert_eq!(execution_of("lesson", "REFL-002"), "EXEC-20260220124341-2");

    let again = p.json(&["import", "--from", from.to_str().unwrap()]);
    assert_eq!(again["write"]["written"], 0, "{again}");
    assert_eq!(
        again["renamed"].as_array().map(Vec::len),
        Some(1),
        "{again}"
    );
}

/// How often each needle occurs in a file (0 when the file is missing).
fn occurrences(path: &Path, needles: &[&str]) -> Vec<usize> {
    let text = fs::read_to_string(path).unwrap_or_default();
    needles.iter().map(|n| text.matches(n).count()).collect()
}

/// A crash between the store's commit and the file writes leaves a live lesson without its
/// guardrail and regression case; `lore maintain` writes what is missing, once.
#[test]
fn maintain_rebuilds_guardrails_and_regression_cases_lost_in_a_crash() {
    let p = initialized();
    let first = p.correct(SKILL, &p.record(SKILL), CORRECTION);
    let second = p.correct(
        SKILL,
        &p.record(SKILL),
        "The summary was vague. Always name the failing page and the error code.",
    );
    let dir = p.path().join("skills/support/summarize-ticket");
    let guardrails = dir.join("GUARDRAILS.md");
    let (native, promptfoo) = (
        dir.join("tests/lore.jsonl"),
        dir.join("tests/promptfoo.yaml"),
    );
    let lessons = [&first, &second].map(|o| o["lesson"]["id"].as_str().unwrap().to_owned());
    let tests = [&first, &second].map(|o| o["regression_test"]["id"].as_str().unwrap().to_owned());
    let lesson_ids = [lessons[0].as_str(), lessons[1].as_str()];
    let test_ids = [tests[0].as_str(), tests[1].as_str()];
    assert_eq!(occurrences(&guardrails, &lesson_ids), [1, 1]);

    // The crash: the store committed the second correction, the files never saw it.
    let keep = |path: &Path, drop: &str| {
        let text = fs::read_to_string(path).unwrap();
        let kept: String = match path.extension().and_then(|e| e.to_str()) {
            Some("yaml") => text
                .split_inclusive("\n- description")
                .filter(|chunk| !chunk.contains(drop))
                .collect(),
            _ => text
                .lines()
                .filter(|l| !l.contains(drop))
                .map(|l| format!("{l}\n"))
                .collect(),
        };
        fs::write(path, kept).unwrap();
    };
    keep(&guardrails, lesson_ids[1]);
    keep(&native, test_ids[1]);
    keep(&promptfoo, test_ids[1]);
    assert_eq!(occurrences(&guardrails, &lesson_ids), [1, 0]);
    assert_eq!(occurrences(&native, &test_ids), [1, 0]);

    let report = p.json(&["maintain"]);
    assert_eq!(
        report["files"]["guardrails"],
        serde_json::json!([lesson_ids[1]]),
        "{report}"
    );
    assert_eq!(
        report["files"]["tests"],
        serde_json::json!([test_ids[1]]),
        "{report}"
    );
    assert_eq!(occurrences(&guardrails, &lesson_ids), [1, 1]);
    assert_eq!(occurrences(&native, &test_ids), [1, 1]);
    assert_eq!(
        occurrences(
            &promptfoo,
            &[
                &format!("lore_test_id: \"{}\"", test_ids[0]),
                &format!("lore_test_id: \"{}\"", test_ids[1])
            ]
        ),
        [1, 1]
    );

    // A second repair changes nothing.
    let before = [&guardrails, &native, &promptfoo].map(|f| fs::read_to_string(f).unwrap());
    let again = p.json(&["maintain"]);
    assert_eq!(
        again["files"]["guardrails"],
        serde_json::json!([]),
        "{again}"
    );
    assert_eq!(again["files"]["tests"], serde_json::json!([]), "{again}");
    let after = [&guardrails, &native, &promptfoo].map(|f| fs::read_to_string(f).unwrap());
    assert_eq!(before, after);

    // Files lost whole are rebuilt too.
    fs::remove_file(&guardrails).unwrap();
    fs::remove_dir_all(dir.join("tests")).unwrap();
    p.ok(&["maintain"]);
    assert_eq!(occurrences(&guardrails, &lesson_ids), [1, 1]);
    assert_eq!(occurrences(&native, &test_ids), [1, 1]);
}

#[test]
fn jsonl_export_restores_everything_into_a_new_store() {
    let p = initialized();
    let exec = p.record(SKILL);
    p.correct(SKILL, &exec, CORRECTION);
    p.ok(&["export", "--jsonl", "all.jsonl"]);
    let q = Project::new().initialized();
    let report = q.json(&[
        "import",
        "--jsonl",
        p.path().join("all.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(report["write"]["written"], 6, "{report}"); // 3 records + 3 audit entries
    q.ok(&["export", "--jsonl", "again.jsonl"]);
    assert_eq!(
        fs::read_to_string(p.path().join("all.jsonl")).unwrap(),
        fs::read_to_string(q.path().join("again.jsonl")).unwrap()
    );
}

#[test]
fn bad_imports_are_refused_and_nothing_is_stored() {
    let p = initialized();
    p.record(SKILL);
    let before = p.counts();
    let bad = p.path().join("bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(bad.join("episodic_memory.json"), "{\"entries\": [").unwrap();
    assert!(
        p.fails(&["import", "--from", "bad"])
            .contains("malformed JSON")
    );
    fs::write(
        bad.join("episodic_memory.json"),
        r#"{"entries": [
            {"execution_id": "EXEC-1", "skill": "hr/a", "timestamp": "2026-02-20T12:43:41+00:00", "outcome": "accepted"},
            {"execution_id": "EXEC-2", "skill": "hr/..", "timestamp": "2026-02-20T12:43:41+00:00", "outcome": "accepted"}
        ]}"#,
    )
    .unwrap();
    let err = p.fails(&["import", "--from", "bad"]);
    assert!(err.contains("entry 1") && err.contains("relative"), "{err}");
    assert!(
        p.fails(&["import", "--from", "nowhere"])
            .contains("holds none of")
    );
    fs::write(
        p.path().join("bad.jsonl"),
        "{\"type\": \"execution\", \"record\": {}}\n",
    )
    .unwrap();
    assert!(
        p.fails(&["import", "--jsonl", "bad.jsonl"])
            .contains("line 1")
    );
    assert_eq!(p.counts(), before);
}

/// `lore bench learning` keeps its curve with the records of the project it runs in, for the
/// console's health page, and makes no store where there is none.
#[test]
fn bench_learning_keeps_its_curve_only_in_a_project_with_a_store() {
    let bare = Project::new();
    bare.json(&["bench", "learning", "--seeds", "1"]);
    assert!(!bare.db().exists(), "no store is made for it");

    let p = Project::new().initialized();
    let report = p.json(&["bench", "learning", "--seeds", "1"]);
    let store = lore_sqlite::SqliteStore::open(p.db(), lore_sqlite::OpenMode::Existing).unwrap();
    let engine = lore_engine::Engine::new(
        std::sync::Arc::new(store),
        lore_engine::EngineConfig::default(),
    );
    let kept = engine
        .report("learning")
        .unwrap()
        .expect("the curve was kept");
    assert_eq!(
        kept["with_memory"].as_array().unwrap().len() as u64,
        report["runs_per_seed"].as_u64().unwrap()
    );
    assert_eq!(kept["retrieval_precision"], report["retrieval_precision"]);
    assert_eq!(kept["phases"][0], serde_json::json!(["A", 0]));

    // A keyed run says so and leaves the kept curve alone.
    let keyed = p.json(&["bench", "learning", "--seeds", "1", "--keyed"]);
    assert_eq!(keyed["keyed"], true);
    assert_eq!(report["keyed"], false);
    assert_ne!(keyed["retrieval_precision"], report["retrieval_precision"]);
    let kept_after = engine.report("learning").unwrap().unwrap();
    assert_eq!(kept_after, kept);
}

#[test]
fn bench_ingest_reports_latency_and_throughput() {
    let p = Project::new();
    let report = p.json(&["bench", "ingest", "--records", "50", "--sizes", "200,500"]);
    let record = &report["record"];
    assert_eq!(record["records"], 50);
    let (p50, p99) = (
        record["p50_us"].as_f64().unwrap(),
        record["p99_us"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{record}");
    let sizes: Vec<_> = report["import"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["records"].clone())
        .collect();
    assert_eq!(sizes, vec![200, 500]);
    assert!(report["import"][1]["records_per_second"].as_f64().unwrap() > 0.0);
    assert!(
        !p.db().exists(),
        "the benchmark works in its own temporary store"
    );
}

#[test]
fn bench_recall_reports_latency_per_size_and_ann_recall() {
    let p = Project::new();
    let report = p.json(&["bench", "recall", "--sizes", "300,600"]);
    assert!(
        report["embedder"]
            .as_str()
            .unwrap()
            .starts_with("builtin-hash-idf-v1"),
        "{report}"
    );
    let sizes = report["sizes"].as_array().unwrap();
    assert_eq!(sizes.len(), 2);
    for (size, want) in sizes.iter().zip([300, 600]) {
        assert_eq!(size["lessons"], want);
        let (p50, p99) = (
            size["p50_ms"].as_f64().unwrap(),
            size["p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{size}");
        assert!(size["embed_s"].as_f64().unwrap() > 0.0, "{size}");
        let embed_p50 = size["stages_p50_ms"]["embed"].as_f64().unwrap();
        assert!(
            size["embed_p99_ms"].as_f64().unwrap() >= embed_p50,
            "{size}"
        );
        // Below the graph's threshold the dense search is the exact scan itself.
        assert_eq!(size["ann"], false);
        assert_eq!(size["ann_recall_at_10"]["synthetic"], 1.0);
        assert!(size["ann_recall_at_10"].get("real").is_none(), "{size}");
        // 256 floats and their codes at least.
        let bytes = size["vector_bytes_per_lesson"].as_f64().unwrap();
        assert!(bytes >= 1024.0 + 256.0, "{size}");
        assert!(
            size["build_cpu_s"].as_f64().is_some_and(|s| s >= 0.0),
            "{size}"
        );
    }
    let err = p.fails(&["bench", "recall", "--sizes", "ten"]);
    assert!(err.contains("ten"), "{err}");

    // A sweep searches one built graph with each effort; a wider beam finds no less.
    let args = [
        "bench",
        "recall",
        "--sizes",
        "5000",
        "--sweep",
        "1:10,64:128",
    ];
    let report = p.json(&args);
    let size = &report["sizes"][0];
    assert_eq!(size["ann"], true, "{size}");
    let sweep = size["sweep"].as_array().unwrap();
    let efforts: Vec<_> = sweep
        .iter()
        .map(|e| (e["ef_entry"].clone(), e["ef_search"].clone()))
        .collect();
    assert_eq!(efforts, [(1.into(), 10.into()), (64.into(), 128.into())]);
    let recall = |e: &serde_json::Value| e["ann_recall_at_10"]["synthetic"].as_f64().unwrap();
    assert!(recall(&sweep[0]) <= recall(&sweep[1]), "{size}");
    assert!(recall(&sweep[1]) > 0.9, "{size}");
    assert!(
        sweep
            .iter()
            .all(|e| e["dense_p50_ms"].as_f64().unwrap() > 0.0)
    );
    for bad in ["0:5", "12", "8:x"] {
        let err = p.fails(&["bench", "recall", "--sizes", "300", "--sweep", bad]);
        assert!(err.contains("ENTRY:SEARCH") && err.contains(bad), "{err}");
    }

    // The peer's copy holds the corpus and questions with the vectors searched.
    let peer = p.path().join("peer");
    let args = ["bench", "recall", "--sizes", "300", "--peer-data"];
    p.json(&[&args[..], &[peer.to_str().unwrap()]].concat());
    let lines = |name: &str| -> Vec<serde_json::Value> {
        fs::read_to_string(peer.join("300").join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (corpus, queries) = (lines("corpus.jsonl"), lines("queries.jsonl"));
    assert_eq!(corpus.len(), 300);
    assert_eq!(corpus[7]["id"], 7);
    assert!(!queries.is_empty() && queries.len() <= 300);
    for row in corpus.iter().chain(&queries) {
        let v: Vec<f64> = serde_json::from_value(row["vector"].clone()).unwrap();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!(v.len() == 256 && (norm - 1.0).abs() < 1e-3, "{row}");
        assert!(row["text"].as_str().is_some_and(|t| !t.is_empty()));
    }

    // A kept corpus is read back by the next run, which measures the same index over it.
    let kept = p.path().join("vectors");
    let args = ["bench", "recall", "--sizes", "300,600", "--vectors"];
    let args = [&args[..], &[kept.to_str().unwrap()]].concat();
    let first = p.json(&args);
    let second = p.json(&args);
    for (a, b) in first["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .zip(second["sizes"].as_array().unwrap())
    {
        assert!(a.get("corpus_kept").is_none(), "{a}");
        assert_eq!(b["corpus_kept"], b["lessons"], "{b}");
        assert_eq!(a["ann_recall_at_10"], b["ann_recall_at_10"]);
        assert_eq!(a["vector_bytes_per_lesson"], b["vector_bytes_per_lesson"]);
    }
    assert_eq!(fs::read_dir(&kept).unwrap().count(), 2, "a file per size");
}

#[test]
fn bench_recall_runs_a_peer_script_on_the_same_data_and_reports_the_ratio() {
    // A stand-in for LanceDB's script: it reads the files it is given, as the real one does,
    // and prints figures in its shape.
    let script = r#"
import json, sys
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
corpus = [json.loads(l) for l in open(args["--corpus"])]
queries = [json.loads(l) for l in open(args["--queries"])]
assert args["--db"]
print(json.dumps({"rows": len(corpus), "queries": len(queries), "hybrid": {"p50_ms": 1000.0}}))
"#;
    let python = ("LORE_PEER_PYTHON", "python3".to_string());
    let p = Project::with_env(vec![python]);
    fs::write(p.path().join("peer.py"), script).unwrap();
    let report = p.json(&["bench", "recall", "--sizes", "300", "--peer", "peer.py"]);
    let size = &report["sizes"][0];
    let peer = &size["peer"];
    assert_eq!(peer["figures"]["rows"], 300, "{peer}");
    assert!(peer["figures"]["queries"].as_u64().unwrap() > 0, "{peer}");
    let ratio = peer["hybrid_p50_ratio"].as_f64().unwrap();
    let p50 = size["p50_ms"].as_f64().unwrap();
    assert!((ratio - 1000.0 / p50).abs() < 1e-6 * ratio, "{ratio} {p50}");

    // A script that fails, or prints something else, is an error naming it.
    fs::write(p.path().join("broken.py"), "import sys; sys.exit(3)").unwrap();
    let err = p.fails(&["bench", "recall", "--sizes", "300", "--peer", "broken.py"]);
    assert!(
        err.contains("broken.py") && err.contains("LORE_PEER_PYTHON"),
        "{err}"
    );
    fs::write(p.path().join("chatty.py"), "print('hello')").unwrap();
    let err = p.fails(&["bench", "recall", "--sizes", "300", "--peer", "chatty.py"]);
    assert!(
        err.contains("chatty.py") && err.contains("no JSON"),
        "{err}"
    );
}

#[test]
fn imported_secrets_never_reach_search_or_the_prompt() {
    let p = initialized();
    let from = p.path().join("leaky");
    fs::create_dir_all(&from).unwrap();
    fs::write(
        from.join("reflexion_entries.json"),
        r#"{"entries": [{
            "reflexion_id": "REFL-900", "skill": "support/summarize-ticket",
            "created_at": "2026-02-20T18:28:36.503554+00:00", "correction_id": "CORR-900",
            "mistake": "Escalation missed.", "root_cause": "guidance",
            "rule": "Escalate outages to ops.lead@example.com with key sk-live_0123456789abcdefgh.",
            "applies_when": "Outage tickets.", "confidence": 0.9,
            "validated_by_test": false, "generated_test_ids": []
        }]}"#,
    )
    .unwrap();
    p.ok(&["import", "--from", "leaky"]);
    let again = p.json(&["import", "--from", "leaky"]);
    assert_eq!(
        again["write"]["written"], 0,
        "re-import changed something: {again}"
    );
    assert_eq!(
        p.json(&["lessons", "show", "REFL-900"])["lesson"]["status"],
        "sensitive"
    );

    p.ok(&[
        "record",
        SKILL,
        "--input",
        r#"{"ticket": "Escalate outage, call ana@example.org"}"#,
        "--output",
        "{}",
    ]);
    let hits = p.ok(&["memory", "search", "escalate outage", "--json"]);
    assert!(
        hits.contains("[redacted:email]"),
        "the execution should be found, redacted: {hits}"
    );
    for secret in [
        "ops.lead@example.com",
        "sk-live_0123456789abcdefgh",
        "ana@example.org",
    ] {
        assert!(!hits.contains(secret), "search leaked {secret}: {hits}");
        let prompt = p.ok(&["memory", "prompt", SKILL]);
        assert!(!prompt.contains(secret), "prompt leaked {secret}");
        let recall = p.ok(&["recall", "escalate outage", "--json"]);
        assert!(!recall.contains(secret), "recall leaked {secret}: {recall}");
    }
}
