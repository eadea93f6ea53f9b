//! `lore export --jsonl` and `lore import --jsonl` carry seed 004's layers with the records:
//! knowledge documents and their chunks, decisions, digests, evaluation sets and runs, made
//! through the commands a team uses, restored into a new store and exported again unchanged.

use std::fs;

use serde_json::Value;

use crate::common::Project;

pub(crate) const LAYER_SKILL: &str = "support/triage";

/// Fills `p` with one of each layer through the commands: two ingested documents, an approved
/// decision, its digest, an evaluation set and a graded run.
pub(crate) fn with_layers(p: &Project) {
    let docs = p.path().join("runbooks");
    fs::create_dir_all(&docs).unwrap();
    fs::write(
        docs.join("refunds.md"),
        "# Refunds\n\n## Late cancellations\n\nCancel without a fee once per customer.\n\n\
         ## Double refunds\n\nRefuse the second refund and open a ticket.\n",
    )
    .unwrap();
    fs::write(
        docs.join("rollback.txt"),
        "Rolling back a release\n\nRun the rollback job when errors climb.\n",
    )
    .unwrap();
    let ingested = p.json(&["ingest", "runbooks", "--skill", LAYER_SKILL]);
    assert_eq!(ingested["added"], 2, "{ingested}");
    let made = p.json(&[
        "decision",
        "record",
        "--skill",
        LAYER_SKILL,
        "--situation",
        "A customer asked to cancel after the deadline",
        "--action",
        "Cancel without a fee",
        "--rationale",
        "First order, polite request",
        "--by",
        "alice",
    ]);
    let id = made["id"].as_str().unwrap();
    p.ok(&[
        "decision", "review", id, "--to", "approved", "--reason", "fair", "--by", "bob",
    ]);
    p.json(&["digest", "build", "--by", "carol"]);
    let questions = p.path().join("questions.jsonl");
    fs::write(
        &questions,
        "{\"question\": \"Can a customer cancel after the deadline?\", \"expected\": \"cancel without a fee\"}\n",
    )
    .unwrap();
    p.ok(&[
        "eval",
        "define",
        "--skill",
        LAYER_SKILL,
        "--name",
        "basics",
        "--file",
        questions.to_str().unwrap(),
    ]);
    p.ok(&["eval", "run", "--skill", LAYER_SKILL]);
}

fn sorted_lines(p: &Project, file: &str) -> Vec<String> {
    let mut lines: Vec<String> = fs::read_to_string(p.path().join(file))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

fn kinds(lines: &[String]) -> Vec<String> {
    let mut kinds: Vec<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

#[test]
fn a_jsonl_export_restores_the_layers_into_a_new_store() {
    let p = Project::new().initialized();
    with_layers(&p);
    p.ok(&["export", "--jsonl", "all.jsonl"]);
    let exported = sorted_lines(&p, "all.jsonl");
    let found = kinds(&exported);
    for kind in [
        "knowledge_document",
        "decision",
        "digest",
        "eval_set",
        "eval_run",
    ] {
        assert!(found.iter().any(|k| k == kind), "{kind} not in {found:?}");
    }

    let q = Project::new().initialized();
    let file = p.path().join("all.jsonl");
    let report = q.json(&["import", "--jsonl", file.to_str().unwrap()]);
    assert_eq!(report["layers"]["knowledge_document"], 2, "{report}");
    assert_eq!(report["layers"]["decision"], 1, "{report}");
    // Six layer items and two audit entries; the decision's first entry is stored with the
    // decision, so the records' copy of it is skipped as identical.
    assert_eq!(
        (&report["write"]["written"], &report["write"]["skipped"]),
        (&Value::from(7), &Value::from(1)),
        "{report}"
    );
    q.ok(&["export", "--jsonl", "again.jsonl"]);
    assert_eq!(sorted_lines(&q, "again.jsonl"), exported);
    let again = q.json(&["import", "--jsonl", file.to_str().unwrap()]);
    assert_eq!(
        again["write"]["written"], 0,
        "a second import changes nothing: {again}"
    );

    // The restored store answers from its layers as the original does.
    let context = |p: &Project| {
        let out = p.json(&[
            "context",
            "cancel after the deadline",
            "--skill",
            LAYER_SKILL,
        ]);
        out["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| (l["layer"].clone(), l["status"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(context(&q), context(&p));

    // A file whose decision differs from the stored one is refused, and nothing changes.
    let changed = fs::read_to_string(&file)
        .unwrap()
        .replace("Cancel without a fee", "Refuse politely");
    fs::write(q.path().join("changed.jsonl"), changed).unwrap();
    let err = q.fails(&["import", "--jsonl", "changed.jsonl"]);
    assert!(err.contains("stored with other content"), "{err}");
    q.ok(&["export", "--jsonl", "after.jsonl"]);
    assert_eq!(sorted_lines(&q, "after.jsonl"), exported);
}

/// Rewrites the first line of `kind` in an export with `change`.
fn altered(lines: &[String], kind: &str, change: impl Fn(&mut Value)) -> String {
    let mut done = false;
    let mut out = String::new();
    for line in lines {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if !done && v["type"] == kind {
            change(&mut v["record"]);
            done = true;
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    assert!(done, "no {kind} line");
    out
}

#[test]
fn imported_layers_are_held_to_their_own_doors_rules() {
    let p = Project::new().initialized();
    with_layers(&p);
    p.ok(&["export", "--jsonl", "all.jsonl"]);
    let lines = sorted_lines(&p, "all.jsonl");
    let q = Project::new().initialized();
    for (kind, change, says) in [
        (
            "decision",
            (|r: &mut Value| r["situation"] = "  ".into()) as fn(&mut Value),
            "situation",
        ),
        (
            "eval_set",
            |r: &mut Value| r["questions"][0]["expected"] = "".into(),
            "questions[0].expected",
        ),
        (
            "knowledge_document",
            |r: &mut Value| {
                r["chunks"][0]["chunk"]["text"] = "mail ana.lopez@example.com for the key".into()
            },
            "personal or secret data",
        ),
    ] {
        fs::write(q.path().join("bad.jsonl"), altered(&lines, kind, change)).unwrap();
        let err = q.fails(&["import", "--jsonl", "bad.jsonl"]);
        assert!(err.contains(says), "{kind}: {err}");
        assert!(
            err.contains(&kind.replace('_', " ")),
            "the item is named: {err}"
        );
        let stored = q.json(&["decision", "list"]);
        assert_eq!(
            stored,
            serde_json::json!([]),
            "nothing was stored: {stored}"
        );
    }

    let secret = altered(&lines, "decision", |r| {
        r["rationale"] = "the customer, ana.lopez@example.com, asked twice".into()
    });
    fs::write(q.path().join("secret.jsonl"), secret).unwrap();
    q.ok(&["import", "--jsonl", "secret.jsonl"]);
    let stored = q.json(&["decision", "list"]);
    assert_eq!(stored[0]["status"], "sensitive", "{stored}");
}

/// 100,000 executions took seconds of silence; a large transfer now says what it is doing on
/// stderr, leaving stdout to the result, and a small one stays quiet.
#[test]
fn a_large_import_and_export_say_on_stderr_what_they_are_doing() {
    let p = Project::new().initialized();
    let line = |n: usize| {
        format!(
            "{{\"type\":\"execution\",\"record\":{{\"id\":\"EXEC-20260101000000-{n:08}\",\
             \"skill\":\"support/summarize-ticket\",\"timestamp\":\"2026-01-01T00:00:00Z\",\
             \"input\":{{\"n\":{n}}},\"output\":{{}},\"outcome\":\"pending_review\"}}}}\n"
        )
    };
    std::fs::write(
        p.path().join("big.jsonl"),
        (0..10_000).map(line).collect::<String>(),
    )
    .unwrap();
    std::fs::write(p.path().join("small.jsonl"), line(10_001)).unwrap();
    let quiet = p.run(&["import", "--jsonl", "small.jsonl"]);
    assert!(quiet.status.success());
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");

    let out = p.run(&["import", "--jsonl", "big.jsonl"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("storing 10000 records"), "{stderr}");
    assert!(stderr.contains("imported 10000 records in "), "{stderr}");
    assert!(stdout.contains("stored 10000"), "{stdout}");
    assert!(!stdout.contains("storing"), "{stdout}");

    let out = p.run(&["export", "--jsonl", "-"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("writing 10001 records"), "{stderr}");
    assert!(stderr.contains("exported 10001 records in "), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10_001);
}
