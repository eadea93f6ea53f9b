//! Measuring lessons from the command line: `lore record --lessons-shown`, `lore signal`, and
//! `lore maintain` promoting a trial lesson that helped, on a real SQLite file.

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

fn record(p: &Project, outcome: &str, shown: Option<&str>) -> String {
    let mut args = vec![
        "record",
        SKILL,
        "--input",
        r#"{"ticket": "Checkout fails for EU customers"}"#,
        "--output",
        r#"{"priority": "urgent"}"#,
        "--outcome",
        outcome,
    ];
    if let Some(ids) = shown {
        args.extend(["--lessons-shown", ids]);
    }
    p.ok(&args).trim().to_owned()
}

#[test]
fn a_trial_lesson_shown_in_good_runs_is_promoted_by_maintain() {
    let p = Project::new().initialized();
    let failed = record(&p, "rejected", None);
    // An automated referee's correction: in auto curation its lesson goes on trial.
    let made = p.json(&[
        "correct",
        SKILL,
        "--execution-id",
        &failed,
        "--author-kind",
        "agent",
        "--correction",
        "When a ticket reports errors for many customers, priority must be urgent.",
    ]);
    let lesson = made["lesson"]["id"].as_str().unwrap().to_owned();
    assert_eq!(made["lesson"]["status"], "trial", "{made}");

    let signal = p.json(&[
        "signal",
        &failed,
        "--channel",
        "hard_failure",
        "--message",
        "unknown column 'Order Date' at line 3",
    ]);
    assert_eq!(signal["fingerprint"], "unknown column <str> at line <num>");
    assert!(
        signal["tags"]
            .as_array()
            .unwrap()
            .contains(&"unknown_symbol".into())
    );

    for _ in 0..3 {
        record(&p, "accepted", Some(&lesson));
    }
    let report = p.json(&["maintain"]);
    assert_eq!(
        report["utility"]["promoted"],
        serde_json::json!([lesson]),
        "{report}"
    );
    let shown = &p.json(&["lessons", "show", &lesson])["lesson"];
    assert_eq!(shown["status"], "approved", "{shown}");
    assert_eq!(shown["utility"]["activations"], 3);
    assert_eq!(
        shown["utility"]["utility"], 0.65,
        "no failures where the baseline failed"
    );
    assert_eq!(shown["utility"]["helped"], 3);
    assert!(
        p.ok(&["maintain"]).contains("promoted: 0"),
        "a second run changes nothing"
    );
}

#[test]
fn bad_activations_and_signals_fail_and_store_nothing() {
    let p = Project::new().initialized();
    let exec = record(&p, "failure", None);
    let count = || p.json(&["memory", "status"])["counts"].clone();
    let before = count();

    let err = p.fails(&[
        "record",
        SKILL,
        "--input",
        "{}",
        "--output",
        "{}",
        "--lessons-shown",
        "REFL-999",
    ]);
    assert!(
        err.contains("REFL-999") && err.contains("not a lesson"),
        "{err}"
    );
    let err = p.fails(&["signal", &exec, "--channel", "meltdown", "--message", "x"]);
    assert!(
        err.contains("meltdown") && err.contains("hard_failure"),
        "{err}"
    );
    let err = p.fails(&["signal", &exec, "--channel", "hard_failure"]);
    assert!(err.contains("message"), "{err}");
    let err = p.fails(&["signal", &exec, "--channel", "progress"]);
    assert!(err.contains("value"), "{err}");
    let err = p.fails(&[
        "signal",
        "EXEC-20260101000000-AAAAAAAA",
        "--channel",
        "hard_failure",
        "--message",
        "boom",
    ]);
    assert!(err.contains("EXEC-20260101000000-AAAAAAAA"), "{err}");
    assert_eq!(count(), before);
}

#[test]
fn maintain_captures_from_well_graded_runs_when_asked() {
    let p = Project::new().initialized();
    let run = p.ok(&[
        "record",
        SKILL,
        "--input",
        r#"{"task": "export the quarterly revenue report as csv"}"#,
        "--output",
        r#"{"command": "report export --format csv --quarter Q3"}"#,
        "--outcome",
        "success",
    ]);
    let run = run.trim();
    p.ok(&["signal", run, "--channel", "referee", "--value", "0.9"]);
    let err = p.fails(&["signal", run, "--channel", "referee", "--value", "1.5"]);
    assert!(err.contains("0 (worst) to 1 (best)"), "{err}");
    // The default captures from failures only.
    let report = p.json(&["maintain"]);
    assert_eq!(report["proposed"], serde_json::json!([]), "{report}");
    let report = p.json(&["maintain", "--capture", "hybrid"]);
    assert_eq!(report["proposed"].as_array().unwrap().len(), 1, "{report}");
    let id = report["proposed"][0].as_str().unwrap();
    let lesson = p.json(&["lessons", "show", id]);
    assert!(lesson.to_string().contains("success_derived"), "{lesson}");
    let err = p.fails(&["maintain", "--capture", "sometimes"]);
    assert!(err.contains("failure, success or hybrid"), "{err}");
}

/// The loop an agent's harness runs, through this build's `lore` alone and with no run key
/// (`scripts/learning-loop --seed 5 --check`): the harmful rule a person wrote beside the first
/// good one is recalled for several kinds of task and breaks only some of them, so over all its
/// runs together its harm is diluted; judged within each kind of task it is found and
/// suppressed, no good lesson is, and failures halve.
#[test]
fn the_unkeyed_loop_suppresses_a_rule_that_harms_other_task_types() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The loop leaves its store in a temporary folder: this one, removed afterwards.
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(root.join("scripts/learning-loop"))
        .args([
            "--seed",
            "5",
            "--check",
            "--lore",
            env!("CARGO_BIN_EXE_lore"),
        ])
        .env("TMPDIR", tmp.path());
    // The same clean environment every other test gives `lore`.
    let clean = crate::common::lore_command();
    for (var, value) in clean.get_envs() {
        match value {
            Some(v) => cmd.env(var, v),
            None => cmd.env_remove(var),
        };
    }
    let started = std::time::Instant::now();
    let out = cmd.output().expect("python3 runs scripts/learning-loop");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "the loop's check failed after {:.0} s:\n{stdout}\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(stdout.contains("harmful lesson: suppressed"), "{stdout}");
}
