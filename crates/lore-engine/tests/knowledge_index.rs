//! The knowledge index saved beside a real SQLite store. Each Engine over a freshly opened
//! store stands for a new process: the first builds the index and saves it, the next loads it
//! without building, a changed document is caught up by the running Engine and by a new one
//! alike, and a damaged file or another embedder's is set aside for a build from the store.
//! Approved decisions' index is saved the same way, with their vectors.

#[path = "embedders/counting.rs"]
mod counting;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use counting::Counting;
use lore_core::SkillPath;
use lore_core::model::LessonStatus;
use lore_engine::knowledge::{
    Chunking, IngestDocument, IngestRequest, ItemOrigin, KnowledgeQuery, KnowledgeResult,
};
use lore_engine::{DecisionQuery, Engine, EngineConfig, NewDecision};
use lore_recall::{BuiltinEmbedder, HNSW_FROM};
use lore_sqlite::{OpenMode, SqliteStore};

const SKILL: &str = "ops/runbooks";
/// Sections per document: each becomes one chunk.
const SECTIONS: usize = 20;
/// Enough documents for the index to walk an HNSW graph, which is what the file saves.
const DOCUMENTS: usize = HNSW_FROM / SECTIONS + 10;

const SYSTEMS: [&str; 6] = [
    "checkout", "payments", "search", "billing", "auth", "exports",
];
const SIGNS: [&str; 4] = [
    "the error rate climbs",
    "latency doubles",
    "the queue grows",
    "disk usage passes 90%",
];

/// The `n`th runbook; `extra` is said in its third section.
fn runbook(n: usize, extra: &str) -> IngestDocument {
    let system = SYSTEMS[n % SYSTEMS.len()];
    let mut text = format!("# {system} runbook {n}\n\n");
    for s in 0..SECTIONS {
        let k = n * SECTIONS + s;
        let sign = SIGNS[k % SIGNS.len()];
        text.push_str(&format!(
            "## When {sign} (case {k})\n\nIf {sign} on {system} host {k}, page the on-call \
             engineer and write the incident note for host {k}.{}\n\n",
            if s == 2 { extra } else { "" }
        ));
    }
    IngestDocument {
        source: format!("runbooks/{system}/{n}.md"),
        text,
    }
}

fn open(db: &Path) -> Engine {
    let store = SqliteStore::open(db, OpenMode::Create).unwrap();
    Engine::new(Arc::new(store), EngineConfig::default())
}

fn ingest(engine: &Engine, documents: Vec<IngestDocument>) {
    engine
        .ingest(
            &IngestRequest {
                skill: SkillPath::parse(SKILL).unwrap(),
                roots: Vec::new(),
                documents,
                chunking: Chunking::default(),
            },
            &mut |_, _| {},
        )
        .unwrap();
}

fn recall(engine: &Engine, text: &str) -> KnowledgeResult {
    engine
        .recall_knowledge(&KnowledgeQuery {
            text: text.to_owned(),
            ..KnowledgeQuery::default()
        })
        .unwrap()
}

fn ids(result: &KnowledgeResult) -> Vec<String> {
    result.chunks.iter().map(|c| c.id.clone()).collect()
}

fn origin(engine: &Engine) -> ItemOrigin {
    engine
        .knowledge_index_info()
        .expect("a query built it")
        .origin
}

fn saved_file(db: &Path) -> PathBuf {
    db.parent().unwrap().join("index").join("lore.knowledge")
}

#[test]
fn a_new_process_loads_the_saved_index_catches_up_and_rebuilds_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lore.db");
    let chunks = DOCUMENTS * SECTIONS;
    ingest(&open(&db), (0..DOCUMENTS).map(|n| runbook(n, "")).collect());
    let question = "latency doubles on search host 42";

    let first = open(&db);
    assert!(first.knowledge_index_info().is_none(), "built on first use");
    let built = recall(&first, question);
    let info = first.knowledge_index_info().unwrap();
    assert_eq!(info.origin, ItemOrigin::Built);
    assert_eq!((info.items, info.graph), (chunks, true));
    assert!(saved_file(&db).is_file(), "the build was saved");
    assert!(!built.chunks.is_empty());

    // A new process loads the file: every slot kept, nothing inserted, the same answer.
    let second = open(&db);
    let loaded = recall(&second, question);
    assert_eq!(
        origin(&second),
        ItemOrigin::Loaded {
            kept: chunks,
            dropped: 0,
            added: 0
        }
    );
    assert_eq!(ids(&loaded), ids(&built));
    assert_eq!(loaded.text, built.text);

    // Another process changes one section of one document: that chunk is replaced (the others
    // keep their IDs, which hash their words and place).
    ingest(
        &open(&db),
        vec![runbook(7, " Then fail over to the quasar standby.")],
    );
    let changed = "fail over to the quasar standby";
    let found = recall(&second, changed);
    assert_eq!(
        origin(&second),
        ItemOrigin::Updated {
            kept: chunks - 1,
            dropped: 1,
            added: 1
        },
        "the running process catches up without a rebuild"
    );
    assert_eq!(
        second.knowledge_index_info().unwrap().read,
        SECTIONS,
        "and reads only the changed document's chunks from the store"
    );
    assert!(found.text.contains("quasar standby"), "{}", found.text);
    let third = open(&db);
    let again = recall(&third, changed);
    assert_eq!(
        origin(&third),
        ItemOrigin::Loaded {
            kept: chunks - 1,
            dropped: 1,
            added: 1
        },
        "a new process loads the older file and inserts what it lacks"
    );
    assert_eq!(third.knowledge_index_info().unwrap().read, chunks);
    assert_eq!(ids(&again), ids(&found));

    // A damaged file is set aside: the next process builds from the store, answers the same,
    // and saves a whole file again.
    let path = saved_file(&db);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();
    let fourth = open(&db);
    let rebuilt = recall(&fourth, changed);
    assert_eq!(origin(&fourth), ItemOrigin::Built);
    assert_eq!(ids(&rebuilt), ids(&found));
    let fifth = open(&db);
    recall(&fifth, question);
    assert!(
        matches!(
            origin(&fifth),
            ItemOrigin::Loaded {
                dropped: 0,
                added: 0,
                ..
            }
        ),
        "the rebuild saved a usable file: {:?}",
        origin(&fifth)
    );

    // A file cut short is refused the same way.
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len / 3).unwrap();
    let sixth = open(&db);
    recall(&sixth, question);
    assert_eq!(origin(&sixth), ItemOrigin::Built);
}

#[test]
fn a_file_saved_by_another_embedder_is_never_mixed_in() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lore.db");
    ingest(&open(&db), (0..DOCUMENTS).map(|n| runbook(n, "")).collect());
    let question = "the queue grows on billing host 99";
    let builtin = open(&db);
    let expected = recall(&builtin, question);
    assert_eq!(origin(&builtin), ItemOrigin::Built);

    // Another embedder finds the file made by the default one and does not use it.
    let other = open(&db).with_embedder(Arc::new(BuiltinEmbedder::with_dim(64).unwrap()));
    let answer = recall(&other, question);
    assert_eq!(origin(&other), ItemOrigin::Built);
    assert_eq!(answer.embedder.dim, 64);
    assert!(!answer.chunks.is_empty());

    // It saved its own; the default embedder in turn sets that one aside, and answers as before.
    let back = open(&db);
    assert_eq!(ids(&recall(&back, question)), ids(&expected));
    assert_eq!(origin(&back), ItemOrigin::Built);
}

/// Decisions keep no vector in the store: their saved index carries them, so a new process
/// embeds none of them again (only the question).
#[test]
fn approved_decisions_are_loaded_with_their_vectors_and_not_embedded_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lore.db");
    let reviewer = open(&db).acting_as("tok_reviewer");
    let decisions = 1100;
    let ids: Vec<_> = (0..decisions)
        .map(|i| {
            reviewer
                .record_decision(NewDecision {
                    skill: Some(SkillPath::parse(SKILL).unwrap()),
                    situation: format!("Host {i} of {} ran out of disk", SYSTEMS[i % 6]),
                    action: format!("Rotate the logs of host {i}, then grow its volume"),
                    rationale: "Growing first hides the cause.".to_owned(),
                    outcome: None,
                    resolves: None,
                })
                .unwrap()
                .id
        })
        .collect();
    for batch in ids.chunks(100) {
        reviewer
            .review_decisions(batch, LessonStatus::Approved, "sound")
            .unwrap();
    }
    let query = DecisionQuery {
        text: "host 421 of search is out of disk".to_owned(),
        ..DecisionQuery::default()
    };
    let counted = |db: &Path| {
        let counting = Arc::new(Counting::new());
        (open(db).with_embedder(counting.clone()), counting)
    };

    let (first, embedded) = counted(&db);
    let built = first.recall_decisions(&query).unwrap();
    let info = first.decision_index_info().unwrap();
    assert_eq!((info.origin, info.items), (ItemOrigin::Built, decisions));
    assert_eq!(embedded.texts(), decisions + 1);
    assert!(db.parent().unwrap().join("index/lore.decisions").is_file());

    let (second, embedded) = counted(&db);
    let loaded = second.recall_decisions(&query).unwrap();
    assert_eq!(
        second.decision_index_info().unwrap().origin,
        ItemOrigin::Loaded {
            kept: decisions,
            dropped: 0,
            added: 0
        }
    );
    assert_eq!(embedded.texts(), 1, "the question only");
    assert_eq!(loaded.text, built.text);
    assert!(loaded.text.contains("host 421"), "{}", loaded.text);
}
