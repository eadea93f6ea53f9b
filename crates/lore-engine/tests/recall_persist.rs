//! The recall index saved beside the store (`.lore/index/`): a new process loads it instead of
//! building the HNSW graph, brings it up to date with what changed since, and rebuilds from the
//! store whenever the file is missing, damaged, or another embedder's. Every test uses more
//! lessons than the graph starts at, with a small embedder so the debug build stays quick.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeZone, Utc};
use lore_core::id::LessonId;
use lore_core::model::{CurationMode, Lesson};
use lore_core::ports::clock::Clock;
use lore_core::ports::store::{OnDuplicate, Record, Store};
use lore_engine::{Attribution, IndexOrigin, LessonEdit, RecallQuery};
use lore_engine::{Engine, EngineConfig};
use lore_recall::{BuiltinEmbedder, Embedder, EmbedderId, HNSW_FROM};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

/// Enough lessons for a graph, and more than the index saves after.
const LESSONS: usize = HNSW_FROM + 200;

const VERBS: [&str; 8] = [
    "roll back",
    "page",
    "freeze",
    "cache",
    "drain",
    "rotate",
    "retry",
    "archive",
];
const THINGS: [&str; 9] = [
    "the deploy",
    "checkout",
    "invoices",
    "the queue",
    "tokens",
    "the cluster",
    "refunds",
    "backups",
    "the canary",
];
const WHENS: [&str; 7] = [
    "on Friday",
    "after a failure",
    "before migrations",
    "at night",
    "when load spikes",
    "during audits",
    "for new tenants",
];

struct Fixed(DateTime<Utc>);

impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

fn lesson(n: usize, rule: &str) -> Lesson {
    let skill = ["ops/deploy", "ops/billing", "hr/screen"][n % 3];
    serde_json::from_value(json!({
        "id": LessonId::generate(at()),
        "skill": skill,
        "mistake": format!("mistake {n}"),
        "root_cause": "cause",
        "rule": rule,
        "applies_when": WHENS[n % WHENS.len()],
        "tags": [format!("t{}", n % 4)],
        "tiers": {"summary": rule, "condition": "", "action": "", "rationale": ""},
        "confidence": 0.8,
        "source": "manual",
        "status": "approved",
        "created_at": at(),
        "updated_at": at(),
    }))
    .unwrap()
}

fn rule(n: usize) -> String {
    format!(
        "{} {} {} (code z{n})",
        VERBS[n % VERBS.len()],
        THINGS[(n / 8) % THINGS.len()],
        WHENS[(n / 72) % WHENS.len()]
    )
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("lore.db")
}

fn index_file(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("index").join("lore.recall")
}

/// A store of [`LESSONS`] approved lessons.
fn store_with_lessons(dir: &tempfile::TempDir) -> Vec<Lesson> {
    let store = SqliteStore::open(db(dir), OpenMode::Create).unwrap();
    let lessons: Vec<Lesson> = (0..LESSONS).map(|n| lesson(n, &rule(n))).collect();
    let records: Vec<Record> = lessons.iter().cloned().map(Record::Lesson).collect();
    store.write(&records, OnDuplicate::Fail).unwrap();
    lessons
}

/// A new Engine on the store, as a new process would make it.
fn engine(dir: &tempfile::TempDir, dim: usize) -> Engine {
    let store = SqliteStore::open(db(dir), OpenMode::Existing).unwrap();
    let config = EngineConfig {
        curation: CurationMode::Review,
        ..EngineConfig::default()
    };
    Engine::new(Arc::new(store), config)
        .with_clock(Arc::new(Fixed(at() + chrono::TimeDelta::days(3))))
        .with_embedder(Arc::new(BuiltinEmbedder::with_dim(dim).unwrap()))
}

const QUERIES: [&str; 6] = [
    "roll back the deploy on Friday",
    "drain the queue before migrations",
    "rotate tokens at night",
    "refunds during audits",
    "cache checkout when load spikes",
    "z77 z4100 archive backups",
];

/// The lessons a recall of `text` placed, with their scores.
fn recalled(engine: &Engine, text: &str) -> Vec<(LessonId, f64)> {
    engine
        .recall(&RecallQuery {
            text: text.into(),
            budget: Some(4000),
            ..RecallQuery::default()
        })
        .unwrap()
        .lessons
        .into_iter()
        .map(|l| (l.id, l.score))
        .collect()
}

/// Each of [`QUERIES`]' placed lessons and scores.
fn answers(engine: &Engine) -> Vec<Vec<(LessonId, f64)>> {
    QUERIES.iter().map(|q| recalled(engine, q)).collect()
}

fn placed(engine: &Engine, text: &str) -> Vec<LessonId> {
    recalled(engine, text)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// A store of [`LESSONS`] lessons whose index a first process built and saved, with that
/// process's answers.
fn saved_store() -> (tempfile::TempDir, Vec<Vec<(LessonId, f64)>>) {
    let dir = tempfile::tempdir().unwrap();
    store_with_lessons(&dir);
    let first = engine(&dir, 16);
    let built = answers(&first);
    assert_eq!(origin(&first), IndexOrigin::Built);
    assert!(index_file(&dir).is_file(), "the build was saved");
    (dir, built)
}

fn origin(engine: &Engine) -> IndexOrigin {
    engine
        .recall_index_info()
        .expect("a recall made the index")
        .origin
}

#[test]
fn a_new_process_loads_the_saved_index_and_answers_as_the_build_did() {
    let (dir, built) = saved_store();
    assert!(built.iter().all(|a| !a.is_empty()), "{built:?}");

    let second = engine(&dir, 16);
    assert_eq!(answers(&second), built);
    assert_eq!(
        origin(&second),
        IndexOrigin::Loaded {
            kept: LESSONS,
            dropped: 0,
            added: 0
        }
    );
    let info = second.recall_index_info().unwrap();
    assert_eq!(
        (info.lessons, info.slots, info.graph),
        (LESSONS, LESSONS, true)
    );

    // Deleting the file only costs time: the next process builds the same answers.
    std::fs::remove_file(index_file(&dir)).unwrap();
    let third = engine(&dir, 16);
    assert_eq!(answers(&third), built);
    assert_eq!(origin(&third), IndexOrigin::Built);
}

#[test]
fn a_stale_file_is_brought_up_to_date_and_never_returns_what_left() {
    let dir = tempfile::tempdir().unwrap();
    let lessons = store_with_lessons(&dir);
    let first = engine(&dir, 16);
    let (gone, edited, hidden) = (&lessons[10], &lessons[11], &lessons[12]);
    assert!(placed(&first, "z10").contains(&gone.id));
    assert!(placed(&first, "z12").contains(&hidden.id));
    drop(first);

    // Other processes change the store while no index is in memory.
    let other = engine(&dir, 16);
    other.retire_lesson(&gone.id, None, "outdated").unwrap();
    other
        .mark_sensitive(
            std::slice::from_ref(&hidden.id),
            &Attribution::new(Some("mike"), "pii"),
        )
        .unwrap();
    let edit = LessonEdit {
        rule: Some("Warm the kafka partitions before the launch.".into()),
        ..Default::default()
    };
    other
        .edit_lesson(&edited.id, edit, None, "reworded")
        .unwrap();
    let new: Vec<Lesson> = (0..3)
        .map(|i| lesson(LESSONS + i, &format!("Snapshot the ledger zz{i} nightly.")))
        .collect();
    let store = SqliteStore::open(db(&dir), OpenMode::Existing).unwrap();
    let records: Vec<Record> = new.iter().cloned().map(Record::Lesson).collect();
    store.write(&records, OnDuplicate::Fail).unwrap();
    drop(other);

    let second = engine(&dir, 16);
    assert!(!placed(&second, "z10").contains(&gone.id), "retired");
    assert!(!placed(&second, "z12").contains(&hidden.id), "sensitive");
    assert_eq!(placed(&second, "kafka partitions launch")[0], edited.id);
    for (i, l) in new.iter().enumerate() {
        assert_eq!(placed(&second, &format!("zz{i} ledger"))[0], l.id);
    }
    assert_eq!(
        origin(&second),
        IndexOrigin::Loaded {
            kept: LESSONS - 3,
            dropped: 3,
            added: 4
        },
        "updated in place, not rebuilt"
    );
    let loaded = answers(&second);
    drop(second);
    std::fs::remove_file(index_file(&dir)).unwrap();
    let rebuilt = engine(&dir, 16);
    let fresh = answers(&rebuilt);
    assert_eq!(origin(&rebuilt), IndexOrigin::Built);
    let ids = |a: &[Vec<(LessonId, f64)>]| -> Vec<Vec<LessonId>> {
        a.iter()
            .map(|q| q.iter().map(|(id, _)| id.clone()).collect())
            .collect()
    };
    assert_eq!(
        ids(&loaded),
        ids(&fresh),
        "the same lessons as a fresh build"
    );
}

#[test]
fn a_damaged_or_truncated_file_is_rebuilt_with_the_same_answers() {
    let (dir, built) = saved_store();
    let good = std::fs::read(index_file(&dir)).unwrap();
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    for (what, bytes) in [
        ("a flipped byte", flipped),
        ("a truncated file", good[..good.len() - 100].to_vec()),
        ("an empty file", Vec::new()),
        ("another file", b"not an index at all".to_vec()),
    ] {
        std::fs::write(index_file(&dir), &bytes).unwrap();
        let engine = engine(&dir, 16);
        assert_eq!(answers(&engine), built, "{what}");
        assert_eq!(origin(&engine), IndexOrigin::Built, "{what}");
        assert_eq!(
            std::fs::read(index_file(&dir)).unwrap().len(),
            good.len(),
            "{what}: the rebuild saved a whole file again"
        );
    }
}

#[test]
fn a_file_from_another_embedder_is_ignored_and_replaced() {
    let (dir, _) = saved_store();
    let old = std::fs::read(index_file(&dir)).unwrap();
    let other = engine(&dir, 24);
    other.reembed(&mut |_, _| {}).unwrap();
    drop(other);

    let second = engine(&dir, 24);
    let built = answers(&second);
    assert_eq!(origin(&second), IndexOrigin::Built);
    drop(second);
    assert_ne!(std::fs::read(index_file(&dir)).unwrap(), old, "replaced");
    let third = engine(&dir, 24);
    assert_eq!(answers(&third), built);
    assert!(matches!(origin(&third), IndexOrigin::Loaded { .. }));
}

#[test]
fn purging_a_lesson_deletes_the_file_and_the_next_save_leaves_it_out() {
    let dir = tempfile::tempdir().unwrap();
    let lessons = store_with_lessons(&dir);
    let engine = engine(&dir, 16);
    answers(&engine);
    let purged = &lessons[5];
    assert!(contains(
        &std::fs::read(index_file(&dir)).unwrap(),
        purged.id.as_str()
    ));
    engine
        .purge_lesson(
            &purged.id,
            &Attribution::new(Some("dpo"), "erasure request"),
        )
        .unwrap();
    assert!(
        !index_file(&dir).exists(),
        "the file named the purged lesson"
    );
    assert!(placed(&engine, "z5").iter().all(|id| *id != purged.id));
    let saved = std::fs::read(index_file(&dir)).expect("saved again by the next query");
    assert!(!contains(&saved, purged.id.as_str()));
    assert!(contains(&saved, lessons[6].id.as_str()));
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The builtin embedder, recording the size of every call it gets (1 for a single `embed`).
struct Counting {
    inner: Arc<dyn Embedder>,
    calls: Arc<Mutex<Vec<usize>>>,
}

impl Counting {
    fn wrap(&self, inner: Arc<dyn Embedder>) -> Arc<dyn Embedder> {
        Arc::new(Counting {
            inner,
            calls: self.calls.clone(),
        })
    }
}

impl Embedder for Counting {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }

    fn embed(&self, text: &str) -> lore_core::Result<Vec<f32>> {
        self.calls.lock().unwrap().push(1);
        self.inner.embed(text)
    }

    fn embed_batch(&self, texts: &[&str]) -> lore_core::Result<Vec<Vec<f32>>> {
        self.calls.lock().unwrap().push(texts.len());
        self.inner.embed_batch(texts)
    }

    fn fit(&self, corpus: &[&str]) -> Option<Arc<dyn Embedder>> {
        self.inner.fit(corpus).map(|e| self.wrap(e))
    }

    fn fit_state(&self) -> Option<Vec<u8>> {
        self.inner.fit_state()
    }

    fn restore(&self, state: &[u8]) -> lore_core::Result<Arc<dyn Embedder>> {
        self.inner.restore(state).map(|e| self.wrap(e))
    }
}

#[test]
fn imports_builds_and_reembeds_embed_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(db(&dir), OpenMode::Create).unwrap();
    let first: Vec<Record> = (0..300)
        .map(|n| Record::Lesson(lesson(n, &rule(n))))
        .collect();
    store.write(&first, OnDuplicate::Fail).unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let counting = Counting {
        inner: Arc::new(BuiltinEmbedder::with_dim(16).unwrap()),
        calls: calls.clone(),
    };
    let engine = Engine::new(Arc::new(store), EngineConfig::default())
        .with_clock(Arc::new(Fixed(at())))
        .with_embedder(Arc::new(counting));
    let take = || std::mem::take(&mut *calls.lock().unwrap());

    assert!(!placed(&engine, "z7").is_empty());
    assert_eq!(take(), [256, 44, 1], "the first build, then the query");
    // Fewer than would make the fit due again (which re-embeds everything at the next query).
    let more: Vec<Record> = (300..600)
        .map(|n| Record::Lesson(lesson(n, &rule(n))))
        .collect();
    engine.import_jsonl(more).unwrap();
    assert_eq!(take(), [256, 44], "an import of 300 lessons");
    assert!(!placed(&engine, "z500").is_empty());
    assert_eq!(
        take(),
        [1],
        "only the query is embedded: the import stored the vectors"
    );
    engine.reembed(&mut |_, _| {}).unwrap();
    assert_eq!(take(), [256, 256, 88], "re-embedding 600 lessons");
}
