//! `lore ingest` and `lore knowledge` end to end: the project's own docs folder ingested into a
//! real SQLite file, a file changed, one deleted and one added, ingested again; recall quotes
//! the right section with its provenance; refused input exits non-zero and changes nothing.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::common::Project;

fn copy_docs(to: &Path) {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(docs).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    }
}

fn sources(p: &Project) -> Vec<(String, u64, String)> {
    let list = p.json(&["knowledge", "list"]);
    list.as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_owned(),
                d["chunks"].as_u64().unwrap(),
                d["hash"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn change<'a>(report: &'a Value, source: &str) -> &'a str {
    report["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source"] == source)
        .unwrap_or_else(|| panic!("{source} not in {report}"))["change"]
        .as_str()
        .unwrap()
}

#[test]
fn the_projects_docs_are_ingested_kept_in_step_and_recalled() {
    let p = Project::new().initialized();
    copy_docs(&p.path().join("docs"));
    fs::write(
        p.path().join("docs/rollback.txt"),
        "Rolling back a release\n\nRun `lore-deploy rollback --to previous` when the error rate \
         climbs after a release, then open an incident.\n",
    )
    .unwrap();
    let first = p.json(&["ingest", "docs", "--skill", "lore/dev"]);
    let files = fs::read_dir(p.path().join("docs")).unwrap().count() as u64;
    assert_eq!(first["added"].as_u64(), Some(files), "{first}");
    assert!(first["chunks_written"].as_u64().unwrap() > files);
    let before = sources(&p);
    assert!(before.iter().any(|(s, ..)| s == "docs/ARCHITECTURE.md"));

    let again = p.json(&["ingest", "docs", "--skill", "lore/dev"]);
    assert_eq!(again["unchanged"].as_u64(), Some(files));
    assert_eq!(again["chunks_written"].as_u64(), Some(0));

    fs::write(
        p.path().join("docs/rollback.txt"),
        "Rolling back a release\n\nRun `lore-deploy revert --last-good` when the error rate \
         climbs after a release, then open an incident.\n",
    )
    .unwrap();
    fs::remove_file(p.path().join("docs/BENCHMARKS.md")).unwrap();
    fs::write(
        p.path().join("docs/new.md"),
        "# New\n\nA page written today.\n",
    )
    .unwrap();
    let third = p.json(&["ingest", "docs", "--skill", "lore/dev"]);
    assert_eq!(change(&third, "docs/rollback.txt"), "updated");
    assert_eq!(change(&third, "docs/BENCHMARKS.md"), "removed");
    assert_eq!(change(&third, "docs/new.md"), "added");
    assert_eq!(change(&third, "docs/ARCHITECTURE.md"), "unchanged");
    let after = sources(&p);
    assert!(!after.iter().any(|(s, ..)| s == "docs/BENCHMARKS.md"));
    assert_eq!(after.len(), before.len());

    let recall = p.json(&[
        "knowledge",
        "recall",
        "roll back a release when the error rate climbs",
        "-n",
        "3",
    ]);
    let chunks = recall["chunks"].as_array().unwrap();
    assert!(!chunks.is_empty() && chunks.len() <= 3, "{recall}");
    assert_eq!(chunks[0]["source"], "docs/rollback.txt", "{recall}");
    let text = recall["text"].as_str().unwrap();
    assert!(
        text.contains("> Run `lore-deploy revert --last-good`"),
        "{text}"
    );
    assert!(!text.contains("--to previous"), "{text}");
    assert!(text.contains("docs/rollback.txt, lines 1–3"), "{text}");
    assert!(recall["tokens"].as_u64().unwrap() <= 2000);

    // The human output names what changed and the totals.
    fs::remove_file(p.path().join("docs/new.md")).unwrap();
    let shown = p.ok(&["ingest", "docs", "--skill", "lore/dev"]);
    assert!(shown.contains("removed  docs/new.md"), "{shown}");
    assert!(shown.contains("1 removed"), "{shown}");
}

#[test]
fn refused_input_exits_non_zero_and_changes_nothing() {
    let p = Project::new().initialized();
    fs::create_dir_all(p.path().join("docs")).unwrap();
    fs::write(
        p.path().join("docs/a.md"),
        "# A\n\nSome text about deploys.\n",
    )
    .unwrap();
    p.ok(&["ingest", "docs", "--skill", "lore/dev"]);
    let before = sources(&p);
    let err = p.fails(&["ingest", "missing", "--skill", "lore/dev"]);
    assert!(err.contains("missing"), "{err}");
    let err = p.fails(&["ingest", "docs", "--skill", "lore/dev", "--max-tokens", "4"]);
    assert!(err.contains("max_tokens"), "{err}");
    fs::write(p.path().join("docs/bin.md"), b"\xff\xfe not utf-8").unwrap();
    let err = p.fails(&["ingest", "docs/bin.md", "--skill", "lore/dev"]);
    assert!(err.contains("not UTF-8"), "{err}");
    let err = p.fails(&["knowledge", "recall", " ", "--skill", "lore/dev"]);
    assert!(err.contains("query"), "{err}");
    assert_eq!(sources(&p), before);
}

#[test]
fn the_layered_context_holds_every_budget_by_a_real_tokenizer() {
    use lore_providers::tokenizer::{Encoding, Tiktoken};

    let p = Project::new().initialized();
    copy_docs(&p.path().join("docs"));
    p.ok(&["ingest", "docs", "--skill", "lore/dev"]);
    let tok = Tiktoken::shared(Encoding::parse("cl100k_base").unwrap()).unwrap();
    for (layer, total) in [(2000, 12000), (700, 900), (150, 2000), (40, 60), (5, 5)] {
        let context = p.json(&[
            "context",
            "how are recall budgets counted and cut",
            "--layer-budget",
            &layer.to_string(),
            "--total-budget",
            &total.to_string(),
        ]);
        let text = context["text"].as_str().unwrap();
        assert!(
            tok.count(text) <= total,
            "{layer}/{total}: {}",
            tok.count(text)
        );
        for l in context["layers"].as_array().unwrap() {
            assert!(l["tokens"].as_u64().unwrap() as usize <= layer, "{l}");
        }
    }
    let shown = p.ok(&[
        "context",
        "how are recall budgets counted",
        "--layer-budget",
        "300",
    ]);
    assert!(
        shown.contains("knowledge") && shown.contains("## Team knowledge"),
        "{shown}"
    );
    let err = p.fails(&["context", "x", "--layer-budget", "0"]);
    assert!(err.contains("layer_budget"), "{err}");
}

#[test]
fn decisions_are_recorded_reviewed_and_recalled_from_the_command_line() {
    let p = Project::new().initialized();
    let made = p.json(&[
        "decision",
        "record",
        "--skill",
        "support/triage",
        "--situation",
        "A customer asked to cancel after the deadline",
        "--action",
        "Cancel without a fee",
        "--rationale",
        "First order, polite request",
        "--by",
        "alice",
    ]);
    assert_eq!(made["status"], "needs_review");
    assert_eq!(made["decided_by"], "alice");
    let id = made["id"].as_str().unwrap();
    let none = p.json(&["decision", "recall", "cancel after the deadline"]);
    assert_eq!(none["decisions"], serde_json::json!([]));
    let err = p.fails(&[
        "decision", "review", id, "--to", "approved", "--reason", " ",
    ]);
    assert!(err.contains("reason"), "{err}");
    p.ok(&[
        "decision", "review", id, "--to", "approved", "--reason", "fair", "--by", "bob",
    ]);
    let found = p.json(&["decision", "recall", "cancel after the deadline"]);
    assert_eq!(found["decisions"][0]["id"], id);
    assert!(found["text"].as_str().unwrap().contains("decided by alice"));
    let err = p.fails(&[
        "decision",
        "review",
        id,
        "--to",
        "needs_review",
        "--reason",
        "x",
    ]);
    assert!(err.contains("approved"), "{err}");
    let listed = p.json(&["decision", "list", "--status", "approved"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let err = p.fails(&[
        "decision",
        "record",
        "--skill",
        "support/triage",
        "--situation",
        " ",
        "--action",
        "a",
        "--rationale",
        "r",
    ]);
    assert!(err.contains("situation"), "{err}");
    assert_eq!(p.json(&["decision", "list"]).as_array().unwrap().len(), 1);
}
