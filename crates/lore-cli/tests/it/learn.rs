//! `lore learn --jsonl` and a correction with no rule in it, through the binary on real
//! SQLite files.

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

const LINES: &str = r#"{"skill":"support/summarize-ticket","task":"Summarize a checkout ticket","failed":"no page named","lesson":"Always name the failing page in the summary."}
{"skill":"support/summarize-ticket","task":"Triage an outage","lesson":"When many customers report errors, priority must be urgent.","fingerprint":"HTTP 500 on /checkout","tags":["priority"]}

{"skill":"support/summarize-ticket","task":"Summarize a login ticket","lesson":"Always name the failing page in the summary."}
"#;

fn counts(p: &Project) -> serde_json::Value {
    p.json(&["memory", "status"])["counts"].clone()
}

#[test]
fn a_correction_with_no_rule_makes_no_lesson_and_says_why() {
    let p = Project::new().initialized();
    let id = p
        .ok(&[
            "record",
            SKILL,
            "--input",
            "{}",
            "--output",
            "{}",
            "--outcome",
            "rejected",
        ])
        .trim()
        .to_owned();
    let out = p.ok(&[
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        "this is wrong",
    ]);
    assert!(out.contains("correction "), "{out}");
    assert!(
        out.contains("lesson     none made: no rule in the correction"),
        "{out}"
    );
    assert!(!out.contains("guardrail"), "{out}");
    let json = p.correct(SKILL, &id, "no");
    assert!(json["lesson"].is_null(), "{json}");
    assert!(
        json["lesson_skipped"]
            .as_str()
            .unwrap()
            .contains("say what"),
        "{json}"
    );
    assert!(json["regression_test"].is_null(), "{json}");
    let prompt = p.ok(&["memory", "prompt", SKILL]);
    assert!(!prompt.contains("this is wrong"), "{prompt}");
}

#[test]
fn learn_stores_each_line_once_and_a_bad_file_not_at_all() {
    let p = Project::new().initialized();
    let file = p.path().join("lessons.jsonl");
    std::fs::write(&file, LINES).unwrap();
    let file = file.to_str().unwrap();
    let before = counts(&p);

    let out = p.ok(&["learn", "--jsonl", file]);
    assert!(
        out.contains("3 lines: 2 new lessons, 1 merged into existing ones, 0 learned before"),
        "{out}"
    );
    // A person ran it: approved at once, as a person's correction is.
    assert!(out.contains("new lessons: 2 approved"), "{out}");
    let prompt = p.ok(&["memory", "prompt", SKILL]);
    assert!(prompt.contains("name the failing page"), "{prompt}");
    let after = counts(&p);

    let again = p.json(&["learn", "--jsonl", file]);
    assert_eq!(again["already"], 3, "{again}");
    assert_eq!(counts(&p), after);

    let agents = p.path().join("agent.jsonl");
    std::fs::write(
        &agents,
        r#"{"skill":"support/summarize-ticket","task":"t","lesson":"Mention the refund amount when there is one."}"#,
    )
    .unwrap();
    let report = p.json(&[
        "learn",
        "--jsonl",
        agents.to_str().unwrap(),
        "--author-kind",
        "agent",
    ]);
    assert_eq!(report["statuses"]["trial"], 1, "{report}");

    let bad = p.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!(
            "{}\n{}\n",
            r#"{"skill":"support/summarize-ticket","task":"t","lesson":"Always cite the source."}"#,
            r#"{"skill":"support/summarize-ticket","task":"t","lesson":""}"#
        ),
    )
    .unwrap();
    let with_bad = counts(&p);
    let err = p.fails(&["learn", "--jsonl", bad.to_str().unwrap()]);
    assert!(err.contains("line 2: lesson: must not be empty"), "{err}");
    assert!(err.contains("nothing was stored"), "{err}");
    assert_eq!(counts(&p), with_bad);
    assert_ne!(before, with_bad);
}
