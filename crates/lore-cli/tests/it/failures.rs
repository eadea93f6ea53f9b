//! Seed 003's capture from the command line: a failed step without error text, the candidate a
//! recurring fingerprint makes on its own, and `lore recall --error` reading the error's tags.

use crate::common::Project;
use serde_json::Value;

const SKILL: &str = "robot/navigate";

fn record(p: &Project) -> String {
    let args = [
        "record",
        SKILL,
        "--input",
        r#"{"task": "reach the kitchen"}"#,
        "--output",
        "{}",
        "--outcome",
        "failure",
    ];
    p.ok(&args).trim().to_owned()
}

fn lesson(p: &Project, id: &str) -> Value {
    let shown = p.json(&["lessons", "show", id]);
    if shown.get("lesson").is_some() {
        shown["lesson"].clone()
    } else {
        shown
    }
}

#[test]
fn a_stuck_step_without_a_message_is_captured_and_recurring_becomes_a_candidate() {
    let p = Project::new().initialized();
    let run = record(&p);
    let stuck = |position: &str| {
        p.json(&[
            "signal",
            &run,
            "--channel",
            "hard_failure",
            "--action",
            "move north",
            "--state-before",
            position,
            "--state-after",
            position,
            "--failure-reason",
            "collision",
        ])
    };
    let event = stuck("hall at (4, 5)");
    assert_eq!(
        event["fingerprint"],
        "transition hall at <num> > move north > hall at <num> : collision"
    );
    let tags: Vec<&str> = event["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tags.contains(&"state_stall"), "{tags:?}");
    let report = p.json(&["maintain"]);
    assert!(
        report["proposed"].as_array().unwrap().is_empty(),
        "{report}"
    );

    // Twice in one run: a pattern, with no successful run needed.
    stuck("hall at (9, 1)");
    let report = p.json(&["maintain"]);
    let proposed = report["proposed"].as_array().unwrap();
    assert_eq!(proposed.len(), 1, "{report}");
    let made = lesson(&p, proposed[0].as_str().unwrap());
    assert_eq!(made["source"], "error_events");
    assert_eq!(made["status"], "trial");
    assert_eq!(made["extra"]["scope_hint"], "task");
    assert!(
        made["rule"]
            .as_str()
            .unwrap()
            .starts_with("Do not repeat `move north`"),
        "{made}"
    );

    // Nothing to go on at all is refused, naming what to give.
    let err = p.fails(&["signal", &run, "--channel", "hard_failure"]);
    assert!(
        err.contains("--message") || err.contains("states before"),
        "{err}"
    );
}

#[test]
fn recall_error_infers_the_error_s_tags_and_finds_lessons_by_them() {
    let p = Project::new().initialized();
    for _ in 0..2 {
        let run = record(&p);
        p.ok(&[
            "signal",
            &run,
            "--channel",
            "constraint_failure",
            "--message",
            "rows came out in descending order",
        ]);
    }
    let report = p.json(&["maintain"]);
    let id = report["proposed"][0].as_str().unwrap().to_owned();
    assert!(
        lesson(&p, &id)["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "sort_direction")
    );

    // Another error about the same kind of mistake: its fingerprint differs, its tag does not.
    let error = "gridtool: unknown option '--asc' for sort";
    let found = p.json(&["recall", "", "--skill", SKILL, "--error", error]);
    let inferred = found["inferred_tags"].as_array().unwrap();
    assert!(
        inferred.iter().any(|t| t == "sort_direction")
            && inferred.iter().any(|t| t == "unknown_symbol"),
        "{found}"
    );
    let ids: Vec<&str> = found["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()], "{found}");
    let text = p.ok(&["recall", "", "--skill", SKILL, "--error", error]);
    assert!(text.contains("tags from the error: "), "{text}");
    assert!(text.contains("sort_direction"), "{text}");

    // An error of another kind shares no tag and finds nothing.
    let none = p.json(&[
        "recall",
        "",
        "--skill",
        SKILL,
        "--error",
        "connection reset by peer",
    ]);
    assert!(none["lessons"].as_array().unwrap().is_empty(), "{none}");
}
