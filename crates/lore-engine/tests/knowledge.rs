//! Knowledge chunks through the Engine on a real SQLite file: a folder of real documents is
//! ingested, re-ingested unchanged, changed and pruned; chunks keep their provenance; recall
//! finds the right section, quoted, within its budget and scope; bad input changes nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lore_core::ports::knowledge::KnowledgeStore;
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::knowledge::{
    Chunking, DocumentChange, IngestDocument, IngestReport, IngestRequest, ItemOrigin,
    KnowledgeQuery,
};
use lore_engine::{Engine, EngineConfig};
use lore_recall::{ApproxTokenizer, Tokenizer};
use lore_sqlite::{OpenMode, SqliteStore};

const SKILL: &str = "payments/checkout";

struct Folder {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Arc<SqliteStore>,
    engine: Engine,
}

fn folder() -> Folder {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/knowledge"),
        &root,
    );
    let store = Arc::new(SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap());
    let engine = Engine::new(store.clone(), EngineConfig::default());
    Folder {
        _dir: dir,
        root,
        store,
        engine,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The folder's documents, named relative to its parent as the CLI names them.
fn documents(root: &Path) -> Vec<IngestDocument> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root.parent().unwrap()).unwrap();
                out.push(IngestDocument {
                    source: rel.to_string_lossy().replace('\\', "/"),
                    text: std::fs::read_to_string(&path).unwrap(),
                });
            }
        }
    }
    out
}

fn ingest(f: &Folder) -> IngestReport {
    let request = IngestRequest {
        skill: SkillPath::parse(SKILL).unwrap(),
        roots: vec!["docs".to_owned()],
        documents: documents(&f.root),
        chunking: Chunking::default(),
    };
    let mut calls = Vec::new();
    let report = f
        .engine
        .ingest(&request, &mut |done, all| calls.push((done, all)))
        .unwrap();
    assert_eq!(calls.first(), Some(&(0, request.documents.len())));
    assert_eq!(
        calls.last(),
        Some(&(request.documents.len(), request.documents.len()))
    );
    report
}

fn change_of(report: &IngestReport, source: &str) -> DocumentChange {
    report
        .documents
        .iter()
        .find(|d| d.source == source)
        .unwrap_or_else(|| panic!("{source} not in {report:?}"))
        .change
}

#[test]
fn a_folder_is_ingested_with_provenance_then_kept_in_step_with_its_files() {
    let f = folder();
    let first = ingest(&f);
    assert_eq!((first.added, first.updated, first.removed), (3, 0, 0));
    let chunks = f
        .store
        .knowledge_chunks(&Scope::unrestricted(), None)
        .unwrap();
    assert_eq!(chunks.len(), first.chunks_written);
    // Every chunk's line range points at its own text in the file.
    for chunk in &chunks {
        let file = std::fs::read_to_string(f.root.parent().unwrap().join(&chunk.source)).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let span = lines[chunk.line_start as usize - 1..chunk.line_end as usize].join("\n");
        let first_line = chunk.text.lines().next().unwrap();
        assert!(
            span.contains(first_line.split("[redacted").next().unwrap()),
            "{chunk:?}"
        );
        assert!(chunk.vector.is_some(), "{} has no vector", chunk.id);
    }
    let rollback = chunks
        .iter()
        .find(|c| c.heading == "Checkout service runbook › Deploy › Rollback")
        .expect("the rollback section is its own chunk");
    assert_eq!(rollback.source, "docs/runbook.md");
    assert_eq!((rollback.line_start, rollback.line_end), (19, 23));
    // The shell comment inside the fence did not start a section.
    assert!(!chunks.iter().any(|c| c.heading.contains("a comment")));
    // Personal data was redacted before it was stored.
    let contacts = chunks
        .iter()
        .find(|c| c.heading.ends_with("On-call contacts"))
        .unwrap();
    assert!(contacts.redacted && !contacts.text.contains("oncall-lead@example.com"));

    // Unchanged: nothing is written, not even the revision.
    let revision = f.store.knowledge_revision().unwrap();
    let again = ingest(&f);
    assert_eq!((again.unchanged, again.chunks_written), (3, 0));
    assert_eq!(f.store.knowledge_revision().unwrap(), revision);

    // One file changes, one vanishes.
    let runbook = f.root.join("runbook.md");
    let text = std::fs::read_to_string(&runbook)
        .unwrap()
        .replace("--to previous", "--to last-good --confirm");
    std::fs::write(&runbook, text).unwrap();
    std::fs::remove_file(f.root.join("glossary.txt")).unwrap();
    let third = ingest(&f);
    assert_eq!(
        change_of(&third, "docs/runbook.md"),
        DocumentChange::Updated
    );
    assert_eq!(
        change_of(&third, "docs/glossary.txt"),
        DocumentChange::Removed
    );
    assert_eq!(
        change_of(&third, "docs/adr/0007-idempotency-keys.md"),
        DocumentChange::Unchanged
    );
    let chunks = f
        .store
        .knowledge_chunks(&Scope::unrestricted(), None)
        .unwrap();
    assert!(!chunks.iter().any(|c| c.source == "docs/glossary.txt"));
    assert!(
        chunks
            .iter()
            .any(|c| c.text.contains("--to last-good --confirm"))
    );
    assert!(!chunks.iter().any(|c| c.text.contains("--to previous")));
    let docs = f.engine.knowledge_documents(None).unwrap();
    assert_eq!(docs.len(), 2);
}

#[test]
fn recall_finds_the_section_quoted_with_provenance_within_budget_and_scope() {
    let f = folder();
    ingest(&f);
    let result = f
        .engine
        .recall_knowledge(&KnowledgeQuery {
            text: "how do I roll back a bad deploy of checkout".to_owned(),
            explain: true,
            ..KnowledgeQuery::default()
        })
        .unwrap();
    assert!(!result.chunks.is_empty() && result.chunks.len() <= 8);
    let top = &result.chunks[0];
    assert_eq!(
        top.heading, "Checkout service runbook › Deploy › Rollback",
        "{result:#?}"
    );
    // The heading is the document's words: quoted under the provenance line, not on it.
    assert!(result.text.contains(
        "docs/runbook.md, lines 19–23)\n> § Checkout service runbook › Deploy › Rollback"
    ));
    assert!(result.text.contains("> If the error rate climbs"));
    assert!(!result.text.contains("oncall-lead@example.com"));
    assert!(result.tokens <= result.budget && result.budget == 2_000);
    assert!(result.explain.is_some());

    let tight = f
        .engine
        .recall_knowledge(&KnowledgeQuery {
            text: "payment retries charged twice".to_owned(),
            budget: Some(120),
            ..KnowledgeQuery::default()
        })
        .unwrap();
    assert!(ApproxTokenizer.count(&tight.text) <= 120, "{}", tight.text);
    assert!(
        tight.chunks[0].source.ends_with("0007-idempotency-keys.md"),
        "{tight:#?}"
    );

    let elsewhere = f.engine.scoped(Scope::domains(["support"]));
    let none = elsewhere
        .recall_knowledge(&KnowledgeQuery {
            text: "roll back a deploy".to_owned(),
            ..KnowledgeQuery::default()
        })
        .unwrap();
    assert!(none.chunks.is_empty() && none.text.is_empty(), "{none:#?}");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let f = folder();
    ingest(&f);
    let before = f
        .store
        .knowledge_chunks(&Scope::unrestricted(), None)
        .unwrap();
    let revision = f.store.knowledge_revision().unwrap();
    let doc = |source: &str, text: &str| IngestDocument {
        source: source.to_owned(),
        text: text.to_owned(),
    };
    let request = |documents, chunking| IngestRequest {
        skill: SkillPath::parse(SKILL).unwrap(),
        roots: vec!["docs".to_owned()],
        documents,
        chunking,
    };
    let cases = [
        (
            request(
                vec![doc("docs/a.md", "x"), doc("docs/a.md", "y")],
                Chunking::default(),
            ),
            "listed twice",
        ),
        (
            request(vec![doc(" ", "x")], Chunking::default()),
            "empty source",
        ),
        (
            request(vec![doc("docs/b.bin", "a\0b")], Chunking::default()),
            "NUL",
        ),
        (
            request(
                vec![doc("docs/a.md", "x")],
                Chunking {
                    max_tokens: 100,
                    overlap_tokens: 90,
                },
            ),
            "overlap_tokens",
        ),
    ];
    for (req, expected) in cases {
        let err = f.engine.ingest(&req, &mut |_, _| {}).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err}");
        assert!(err.to_string().contains(expected), "{err}");
    }
    let outside = f.engine.scoped(Scope::domains(["support"]));
    let err = outside
        .ingest(
            &request(vec![doc("docs/a.md", "x")], Chunking::default()),
            &mut |_, _| {},
        )
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    let err = f
        .engine
        .recall_knowledge(&KnowledgeQuery {
            text: "  ".to_owned(),
            ..KnowledgeQuery::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("query"), "{err}");
    let err = f
        .engine
        .recall_knowledge(&KnowledgeQuery {
            text: "deploy".to_owned(),
            limit: Some(0),
            ..KnowledgeQuery::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(
        f.store
            .knowledge_chunks(&Scope::unrestricted(), None)
            .unwrap(),
        before
    );
    assert_eq!(f.store.knowledge_revision().unwrap(), revision);
}

#[test]
fn another_process_ingest_is_seen_by_a_running_engine() {
    let f = folder();
    let warm = f.engine.recall_knowledge(&KnowledgeQuery {
        text: "canary".to_owned(),
        ..KnowledgeQuery::default()
    });
    assert!(warm.unwrap().chunks.is_empty());
    // A second connection, as a second `lore` process would open.
    let other = Arc::new(SqliteStore::open(f.store.path(), OpenMode::Existing).unwrap());
    let writer = Engine::new(other as Arc<dyn Store>, EngineConfig::default());
    writer
        .ingest(
            &IngestRequest {
                skill: SkillPath::parse(SKILL).unwrap(),
                roots: Vec::new(),
                documents: documents(&f.root),
                chunking: Chunking::default(),
            },
            &mut |_, _| {},
        )
        .unwrap();
    let seen = f
        .engine
        .recall_knowledge(&KnowledgeQuery {
            text: "canary".to_owned(),
            ..KnowledgeQuery::default()
        })
        .unwrap();
    assert!(!seen.chunks.is_empty());

    // The writer changes the runbook and the glossary leaves: the running Engine reads only
    // the runbook's chunks to catch up, and recall follows both changes.
    let mut docs = documents(&f.root);
    docs.retain(|d| !d.source.ends_with("glossary.txt"));
    let runbook = docs
        .iter_mut()
        .find(|d| d.source.ends_with("runbook.md"))
        .unwrap();
    runbook.text = runbook.text.replace("canary", "bellwether");
    let report = writer
        .ingest(
            &IngestRequest {
                skill: SkillPath::parse(SKILL).unwrap(),
                roots: vec!["docs".into()],
                documents: docs,
                chunking: Chunking::default(),
            },
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!((report.updated, report.removed), (1, 1), "{report:?}");
    let runbook_chunks = report
        .documents
        .iter()
        .find(|d| d.source.ends_with("runbook.md"))
        .unwrap()
        .chunks;
    let recall = |text: &str| {
        f.engine
            .recall_knowledge(&KnowledgeQuery {
                text: text.to_owned(),
                ..KnowledgeQuery::default()
            })
            .unwrap()
    };
    let found = recall("bellwether replica");
    assert!(found.text.contains("bellwether"), "{}", found.text);
    let info = f.engine.knowledge_index_info().unwrap();
    assert_eq!(info.read, runbook_chunks, "{info:?}");
    assert!(
        matches!(info.origin, ItemOrigin::Updated { dropped, .. } if dropped > 0),
        "{info:?}"
    );
    assert_eq!(info.revision, f.store.knowledge_revision().unwrap());
    let everything = recall("glossary idempotency canary rollback checkout");
    assert!(
        everything
            .chunks
            .iter()
            .all(|c| !c.source.ends_with("glossary.txt")),
        "{:?}",
        everything.chunks
    );
    assert!(!everything.text.contains("canary"), "{}", everything.text);
}
