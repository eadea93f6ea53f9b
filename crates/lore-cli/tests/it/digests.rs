//! `lore digest`, `lore eval` and their place in `lore maintain` and `lore context`, end to end
//! on a real SQLite file: a digest made from approved decisions, made again only when they
//! change; a question set graded against the recalled context; refused input exits non-zero
//! and stores nothing.

use std::fs;

use serde_json::{Value, json};

use crate::common::Project;

const SKILL: &str = "support/triage";

fn decide(p: &Project, situation: &str, action: &str) -> String {
    let made = p.json(&[
        "decision",
        "record",
        "--skill",
        SKILL,
        "--situation",
        situation,
        "--action",
        action,
        "--rationale",
        "First order, polite request",
        "--by",
        "alice",
    ]);
    let id = made["id"].as_str().unwrap().to_owned();
    p.ok(&[
        "decision", "review", &id, "--to", "approved", "--reason", "fair", "--by", "bob",
    ]);
    id
}

fn count(v: &Value, key: &str) -> usize {
    v[key].as_array().unwrap().len()
}

#[test]
fn digests_and_evaluations_follow_what_memory_learned() {
    let p = Project::new().initialized();
    let first = decide(
        &p,
        "A customer asked to cancel after the deadline",
        "Cancel without a fee",
    );

    let built = p.json(&["digest", "build", "--by", "carol"]);
    assert_eq!(count(&built, "built"), 1, "{built}");
    assert_eq!(built["built"][0]["generated_by"], "carol");
    let again = p.json(&["digest", "build"]);
    assert_eq!(count(&again, "built"), 0, "nothing changed: {again}");
    assert_eq!(count(&again, "unchanged"), 1);
    let shown = p.ok(&["digest", "show", SKILL]);
    assert!(shown.contains("Cancel without a fee"), "{shown}");
    assert!(
        shown.contains(&first),
        "each point names its source: {shown}"
    );
    assert_eq!(p.json(&["digest", "list"]).as_array().unwrap().len(), 1);

    let context = p.json(&["context", "cancel after the deadline", "--skill", SKILL]);
    let layer = context["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "digest")
        .unwrap();
    assert_eq!(layer["status"], "filled", "{context}");

    let questions = p.path().join("questions.jsonl");
    fs::write(
        &questions,
        "{\"question\": \"Can a customer cancel after the deadline?\", \"expected\": \"cancel without a fee\"}\n\
         {\"question\": \"What about a refund twice?\", \"expected\": \"refuse the second refund\", \"grader\": \"exact\"}\n",
    )
    .unwrap();
    let set = p.json(&[
        "eval",
        "define",
        "--skill",
        SKILL,
        "--name",
        "basics",
        "--file",
        questions.to_str().unwrap(),
    ]);
    assert_eq!(count(&set, "questions"), 2);
    let runs = p.json(&["eval", "run", "--skill", SKILL]);
    assert_eq!(
        (runs[0]["passed"].as_u64(), runs[0]["total"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(runs[0]["answerer"], "context");

    // Nothing changed since the run: upkeep makes no digest and runs nothing.
    let quiet = p.json(&["maintain"]);
    assert_eq!(
        (count(&quiet, "digests"), count(&quiet, "evals")),
        (0, 0),
        "{quiet}"
    );

    decide(
        &p,
        "A customer asked for a refund twice",
        "Refuse the second refund",
    );
    let busy = p.json(&["maintain"]);
    assert_eq!(count(&busy, "digests"), 1, "{busy}");
    assert_eq!(count(&busy, "evals"), 1);
    assert_eq!(busy["evals"][0]["passed"], 2);
    assert_eq!(busy["evals"][0]["trigger"], "maintain");
    let history = p.json(&["digest", "history", SKILL]);
    assert_eq!(history.as_array().unwrap().len(), 2, "{history}");
    let older = p.json(&["digest", "history", SKILL, "-n", "1", "--offset", "1"]);
    assert_eq!(older, json!([history[1]]), "the second newest alone");
    let past = p.json(&["digest", "history", SKILL, "--offset", "2"]);
    assert_eq!(past, json!([]), "past the oldest");

    let trend = p.json(&["eval", "trend", "--skill", SKILL]);
    assert_eq!(trend[0]["runs"], 2);
    assert!(
        (trend[0]["change"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{trend}"
    );
    let text = p.ok(&["eval", "trend"]);
    assert!(text.contains("50% → 100%"), "{text}");
}

#[test]
fn bad_sets_exit_non_zero_and_store_nothing() {
    let p = Project::new().initialized();
    let base = ["eval", "define", "--skill", SKILL, "--name", "basics"];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };
    for (extra, says) in [
        (vec!["--question", "q"], "pair up"),
        (vec![], "questions"),
        (vec!["--question", "q", "--expected", " "], "expected"),
        (
            vec!["--question", "q", "--expected", "a", "--grader", "judge"],
            "model",
        ),
        (
            vec!["--question", "q", "--expected", "a", "--grader", "fuzzy"],
            "contains, exact, judge",
        ),
    ] {
        let args = with(&extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = p.fails(&args);
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let bad = p.path().join("bad.jsonl");
    fs::write(&bad, "{\"question\": \"q\", \"answer\": \"a\"}\n").unwrap();
    let err = p.fails(
        &with(&["--file", bad.to_str().unwrap()])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(err.contains("line 1"), "{err}");
    assert!(p.json(&["eval", "list"]).as_array().unwrap().is_empty());
    let err = p.fails(&["eval", "run"]);
    assert!(err.contains("evaluation set"), "{err}");
    let err = p.fails(&["digest", "history", SKILL, "-n", "0"]);
    assert!(err.contains("limit"), "{err}");
}
