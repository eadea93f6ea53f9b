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

/// A PDF made by Chromium from the HTML beside it in `tests/fixtures/pdf`.
fn pdf_fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pdf");
    fs::read(dir.join(name)).unwrap()
}

fn skipped(report: &Value) -> Vec<(String, String)> {
    report["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("no skipped list in {report}"))
        .iter()
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_owned(),
                d["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[cfg(feature = "pdf")]
#[test]
fn pdfs_are_ingested_by_page_kept_in_step_and_unreadable_ones_skipped() {
    let p = Project::new().initialized();
    let dir = p.path().join("manuals");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("deploy.pdf"), pdf_fixture("deploy-runbook.pdf")).unwrap();
    fs::write(dir.join("oncall.pdf"), pdf_fixture("oncall.pdf")).unwrap();
    fs::write(dir.join("scanned.pdf"), pdf_fixture("scanned.pdf")).unwrap();
    let first = p.json(&["ingest", "manuals", "--skill", "ops/deploy"]);
    assert_eq!(change(&first, "manuals/deploy.pdf"), "added");
    assert_eq!(change(&first, "manuals/oncall.pdf"), "added");
    let skips = skipped(&first);
    assert_eq!(skips.len(), 1, "{first}");
    assert_eq!(skips[0].0, "manuals/scanned.pdf");
    assert!(skips[0].1.contains("no text"), "{skips:?}");
    let listed = sources(&p);
    let deploy = listed
        .iter()
        .find(|(s, ..)| s == "manuals/deploy.pdf")
        .unwrap();
    assert_eq!(deploy.1, 3, "one chunk for each of its three pages");

    let recall = |query: &str| {
        p.json(&[
            "knowledge",
            "recall",
            query,
            "--skill",
            "ops/deploy",
            "-n",
            "1",
        ])
    };
    let found = recall("roll back when the error rate climbs after a deploy");
    let chunk = &found["chunks"][0];
    assert_eq!(chunk["source"], "manuals/deploy.pdf", "{found}");
    assert_eq!(chunk["page"], 2, "{found}");
    assert_eq!(
        chunk["line_start"].as_u64(),
        Some(3),
        "lines of the page: {found}"
    );
    let text = found["text"].as_str().unwrap();
    assert!(text.contains("manuals/deploy.pdf p. 2, lines 3–"), "{text}");
    assert!(
        text.contains("> If the error rate climbs after a deploy, roll back at once"),
        "{text}"
    );
    let first_page = recall("freeze the payment schema migrations before the deploy");
    assert_eq!(first_page["chunks"][0]["page"], 1, "{first_page}");

    // One changes, one is deleted, and a damaged file (a PDF cut short) appears.
    fs::write(dir.join("deploy.pdf"), pdf_fixture("deploy-runbook-v2.pdf")).unwrap();
    fs::remove_file(dir.join("oncall.pdf")).unwrap();
    let whole = pdf_fixture("oncall.pdf");
    fs::write(dir.join("broken.pdf"), &whole[..whole.len() / 2]).unwrap();
    let second = p.json(&["ingest", "manuals", "--skill", "ops/deploy"]);
    assert_eq!(change(&second, "manuals/deploy.pdf"), "updated");
    assert_eq!(change(&second, "manuals/oncall.pdf"), "removed");
    let skips = skipped(&second);
    assert_eq!(
        skips.iter().map(|s| s.0.as_str()).collect::<Vec<_>>(),
        ["manuals/broken.pdf", "manuals/scanned.pdf"]
    );
    assert!(skips[0].1.contains("PDF"), "{skips:?}");
    let text = recall("roll back when the error rate climbs after a deploy")["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("> If the error rate climbs after a deploy, drain the checkout queue first"),
        "{text}"
    );
    assert!(!text.contains("roll back at once"), "{text}");
    let listed = sources(&p);
    assert_eq!(
        listed.iter().map(|(s, ..)| s.as_str()).collect::<Vec<_>>(),
        ["manuals/deploy.pdf"]
    );

    // A stored PDF damaged in place is skipped by name, the others still ingest, and what
    // was stored for it stays; the human output says so with a zero exit.
    let v2 = pdf_fixture("deploy-runbook-v2.pdf");
    fs::write(dir.join("deploy.pdf"), &v2[..v2.len() - 200]).unwrap();
    fs::write(
        dir.join("notes.txt"),
        "Drain the queue before a rollback.\n",
    )
    .unwrap();
    let shown = p.ok(&["ingest", "manuals", "--skill", "ops/deploy"]);
    assert!(shown.contains("skipped  manuals/deploy.pdf: "), "{shown}");
    assert!(shown.contains("added    manuals/notes.txt"), "{shown}");
    assert!(
        shown.contains("3 skipped (any stored version kept)"),
        "{shown}"
    );
    let after = sources(&p);
    assert!(after.contains(&listed[0]), "{after:?}");
    assert_eq!(after.len(), 2);

    // Named on the command line, an unreadable PDF is skipped too, never an error.
    let named = p.json(&["ingest", "manuals/broken.pdf", "--skill", "ops/deploy"]);
    assert_eq!(skipped(&named)[0].0, "manuals/broken.pdf");
    assert_eq!(sources(&p), after);
}

#[cfg(not(feature = "pdf"))]
#[test]
fn without_the_pdf_feature_a_pdf_is_skipped_naming_the_feature() {
    let p = Project::new().initialized();
    fs::create_dir_all(p.path().join("manuals")).unwrap();
    fs::write(
        p.path().join("manuals/oncall.pdf"),
        pdf_fixture("oncall.pdf"),
    )
    .unwrap();
    let report = p.json(&["ingest", "manuals", "--skill", "ops/deploy"]);
    let skips = skipped(&report);
    assert_eq!(skips[0].0, "manuals/oncall.pdf");
    assert!(skips[0].1.contains("`pdf` cargo feature"), "{skips:?}");
    assert!(sources(&p).is_empty());
}
