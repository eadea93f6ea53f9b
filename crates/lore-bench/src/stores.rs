//! `lore bench stores`: SQLite beside PostgreSQL through the same Engine. Recording throughput
//! with one writer and with several at once (`--writers`), writing approved lessons in batches, and recall latency over
//! them (the first recall builds the index from the store and is reported apart), and a new
//! Engine's first answers over them, with and without the saved index, waiting for it or
//! answering while it builds as a server does.
//!
//! Each store is fresh (a temporary SQLite file; a PostgreSQL schema of its own that the caller
//! drops afterwards), so the figures do not depend on what a store already held.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use chrono::{TimeDelta, Utc};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, LessonStatus, Outcome};
use lore_core::ports::embed::Embedder;
use lore_core::ports::store::{ListFilter, OnDuplicate, Record, Store};
use lore_engine::{Engine, EngineConfig, IndexState, NewCorrection, NewExecution, RecallQuery};
use lore_recall::BuiltinEmbedder;
use lore_sqlite::{OpenMode, SqliteStore};
use serde::Serialize;
use serde_json::json;

use crate::Out;

/// Words the synthetic lessons and queries are made of.
const WORDS: &[&str] = &[
    "invoice",
    "currency",
    "refund",
    "ticket",
    "deadline",
    "approver",
    "receipt",
    "discount",
    "shipping",
    "signature",
    "language",
    "rounding",
    "vendor",
    "contract",
    "budget",
    "audit",
    "tax",
    "ledger",
    "payment",
    "customer",
    "order",
    "warehouse",
    "schema",
    "timezone",
];

/// Executions recorded for each throughput figure, shared among its writers.
const RECORDS: usize = 2000;
/// Recalls timed after the first.
const RECALLS: usize = 200;
/// Lessons per write.
const BATCH: usize = 1000;

/// One store's figures.
#[derive(Debug, Serialize)]
pub struct StoreFigures {
    /// `sqlite` or `postgres`.
    pub store: &'static str,
    /// Recording executions, by the number of threads writing at once.
    pub records: Vec<RecordFigures>,
    /// Lessons written.
    pub lessons: usize,
    /// Lessons written a second.
    pub lessons_per_s: f64,
    /// The first recall, which builds the index from the store.
    pub recall_first_ms: f64,
    /// Median recall after it.
    pub recall_p50_ms: f64,
    /// 99th percentile recall after it.
    pub recall_p99_ms: f64,
    /// The store's own search paths, for a store that has them.
    pub store_side: Option<StoreSide>,
    /// A new Engine over the same lessons, as a new process opens one.
    pub cold_start: ColdStart,
}

/// Executions recorded through the Engine by `writers` threads at once.
#[derive(Debug, Serialize)]
pub struct RecordFigures {
    /// Threads recording at once.
    pub writers: usize,
    /// Executions recorded a second, all threads together.
    pub per_s: f64,
    /// Median time of one record, in milliseconds.
    pub p50_ms: f64,
    /// Its 99th percentile.
    pub p99_ms: f64,
    /// Its 99.9th percentile.
    pub p999_ms: f64,
}

/// A new Engine's first answers over the lessons already written, as `lore serve` makes one
/// at start: milliseconds from making the Engine. Each is one run.
#[derive(Debug, Serialize)]
pub struct ColdStart {
    /// With the saved index beside the store, the first recall when it waits for the load
    /// (as a command does); absent for a store without a place for the file.
    pub saved_first_ms: Option<f64>,
    /// With no saved index, the first recall of an Engine that builds in the background (as
    /// the server's does): answered from the store's own search.
    pub unsaved_first_ms: f64,
    /// Whether that first answer said `warming`.
    pub unsaved_first_warming: bool,
    /// When its index was ready.
    pub unsaved_ready_ms: f64,
    /// With the saved index, the first recall of an Engine that loads it in the background.
    pub saved_background_first_ms: Option<f64>,
    /// When its index was ready.
    pub saved_ready_ms: Option<f64>,
    /// What the Engine that waited for the load held then, per lesson.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_memory: Option<LoadedMemory>,
}

/// What a new Engine that loaded the saved index holds, in bytes per lesson: the resident
/// memory it added to the process (Linux's `RssAnon` and `RssFile` before making it and after
/// its first recall; the allocator may hand it pages an earlier phase freed, so the anonymous
/// figure can fall short), and the index's own accounting of its parts.
#[derive(Debug, Serialize)]
pub struct LoadedMemory {
    /// Anonymous memory added: the heap (lessons, BM25, whatever the index keeps in memory).
    pub rss_anon: Option<f64>,
    /// File pages added: the saved index's mapped vectors and codes, read in place.
    pub rss_file: Option<f64>,
    /// The lessons' records and texts.
    pub lessons: f64,
    /// BM25's postings and vocabulary.
    pub sparse: f64,
    /// IDs, skills, triggers and tags to slots.
    pub lookup: f64,
    /// Float vectors in memory.
    pub vectors: f64,
    /// Int8 codes in memory.
    pub codes: f64,
    /// Graph links.
    pub graph: f64,
    /// Vectors and codes read in place from the mapped file.
    pub mapped: f64,
}

impl LoadedMemory {
    fn describe(&self) -> String {
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"));
        format!(
            "RSS added {} anonymous + {} mapped file bytes a lesson; index: lessons {:.0}, \
             BM25 {:.0}, lookups {:.0}, vectors {:.0}, codes {:.0}, graph {:.0} in memory, \
             {:.0} read in place",
            opt(self.rss_anon),
            opt(self.rss_file),
            self.lessons,
            self.sparse,
            self.lookup,
            self.vectors,
            self.codes,
            self.graph,
            self.mapped,
        )
    }
}

/// Searching inside the store instead of in the process: its own vector index and its own
/// full-text search, over the same lessons and the same queries as the recall figures.
#[derive(Debug, Serialize)]
pub struct StoreSide {
    /// Building the store's vector index over the lessons' vectors.
    pub index_build_ms: f64,
    /// Median nearest-10 query through that index (the query's embedding not included).
    pub ann_p50_ms: f64,
    /// Its 99th percentile.
    pub ann_p99_ms: f64,
    /// How much of the store's exact top 10 the index finds, on these synthetic queries.
    pub ann_recall_at_10: f64,
    /// Median exact nearest-10 query (every vector scanned).
    pub exact_p50_ms: f64,
    /// Its 99th percentile.
    pub exact_p99_ms: f64,
    /// Median full-text search for 10 lessons.
    pub text_p50_ms: f64,
    /// Its 99th percentile.
    pub text_p99_ms: f64,
}

/// Measures SQLite (a temporary file) and, when given, `postgres` (a fresh, empty store).
///
/// # Errors
/// A store's failure, or a failed write to `out`.
pub fn run(
    lessons: usize,
    writers: &[usize],
    postgres: Option<Arc<dyn Store>>,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    anyhow::ensure!(
        !writers.is_empty() && !writers.contains(&0),
        "--writers takes one or more counts of threads, each at least 1"
    );
    let dir = tempfile::tempdir()?;
    let sqlite = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
    let mut figures = vec![measure("sqlite", Arc::new(sqlite), lessons, writers)?];
    if let Some(store) = postgres {
        figures.push(measure("postgres", store, lessons, writers)?);
    }
    if json {
        return out.json(&figures);
    }
    for f in &figures {
        for r in &f.records {
            out.line(format!(
                "{:<8} record {:>6.0}/s with {:>2} writer{} (p50 {:.2} ms, p99 {:.2} ms, \
                 p999 {:.2} ms)",
                f.store,
                r.per_s,
                r.writers,
                if r.writers == 1 { " " } else { "s" },
                r.p50_ms,
                r.p99_ms,
                r.p999_ms
            ))?;
        }
        out.line(format!(
            "{:<8} {} lessons at {:.0}/s | recall: first {:.0} ms, then p50 {:.2} ms, p99 {:.2} ms",
            f.store,
            f.lessons,
            f.lessons_per_s,
            f.recall_first_ms,
            f.recall_p50_ms,
            f.recall_p99_ms
        ))?;
        let c = &f.cold_start;
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0} ms"));
        out.line(format!(
            "{:<8} a new Engine: without the saved index, first recall {:.0} ms ({}), index \
             ready {:.0} ms; with it, first recall {} waiting for the load, or {} answering \
             while it loads, ready {}",
            f.store,
            c.unsaved_first_ms,
            if c.unsaved_first_warming {
                "warming: the store's search"
            } else {
                "ready"
            },
            c.unsaved_ready_ms,
            opt(c.saved_first_ms),
            opt(c.saved_background_first_ms),
            opt(c.saved_ready_ms),
        ))?;
        if let Some(memory) = &c.saved_memory {
            out.line(format!(
                "{:<8} the Engine that loaded the saved index: {}",
                f.store,
                memory.describe()
            ))?;
        }
        if let Some(side) = &f.store_side {
            out.line(format!(
                "{:<8} in the store: vector index built in {:.0} ms, nearest 10 p50 {:.2} ms, \
                 p99 {:.2} ms, recall@10 vs exact {:.3} | exact scan p50 {:.1} ms, p99 {:.1} ms \
                 | full-text p50 {:.2} ms, p99 {:.2} ms",
                f.store,
                side.index_build_ms,
                side.ann_p50_ms,
                side.ann_p99_ms,
                side.ann_recall_at_10,
                side.exact_p50_ms,
                side.exact_p99_ms,
                side.text_p50_ms,
                side.text_p99_ms
            ))?;
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).map_or(0.0, |d| ms(*d))
}

fn execution(skill: &SkillPath, i: usize) -> NewExecution {
    NewExecution {
        skill: skill.clone(),
        input: json!({"ticket": i, "text": WORDS[i % WORDS.len()]}),
        output: json!({"ok": !i.is_multiple_of(3)}),
        outcome: Outcome::Accepted,
        cost_usd: None,
        latency_ms: None,
        model: None,
        session: None,
        lessons_shown: Vec::new(),
    }
}

/// `RECORDS` executions recorded by `writers` threads at once, each timed.
fn record(engine: &Engine, writers: usize, first: usize) -> Result<RecordFigures> {
    let skill = SkillPath::parse("bench/records")?;
    let each = RECORDS.div_ceil(writers);
    let started = Instant::now();
    let mut took = std::thread::scope(|s| -> Result<Vec<Duration>> {
        let threads: Vec<_> = (0..writers)
            .map(|w| {
                let skill = &skill;
                s.spawn(move || -> Result<Vec<Duration>> {
                    let mut took = Vec::with_capacity(each);
                    for i in 0..each {
                        let t = Instant::now();
                        engine.record_execution(execution(skill, first + w * each + i))?;
                        took.push(t.elapsed());
                    }
                    Ok(took)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(each * writers);
        for t in threads {
            all.extend(
                t.join()
                    .map_err(|_| anyhow::anyhow!("a writer panicked"))??,
            );
        }
        Ok(all)
    })?;
    let per_s = took.len() as f64 / started.elapsed().as_secs_f64();
    took.sort();
    Ok(RecordFigures {
        writers,
        per_s,
        p50_ms: quantile(&took, 0.5),
        p99_ms: quantile(&took, 0.99),
        p999_ms: quantile(&took, 0.999),
    })
}

fn measure(
    name: &'static str,
    store: Arc<dyn Store>,
    lessons: usize,
    writers: &[usize],
) -> Result<StoreFigures> {
    let engine = Engine::new(Arc::clone(&store), EngineConfig::default());
    let mut records = Vec::with_capacity(writers.len());
    for (i, &n) in writers.iter().enumerate() {
        records.push(record(&engine, n, (i + 1) * 2 * RECORDS)?);
    }

    // A lesson the correction pipeline made is the template of the synthetic ones.
    let skill = SkillPath::parse("bench/lessons")?;
    let x = engine.record_execution(execution(&skill, 0))?;
    let template = engine
        .correct(NewCorrection {
            skill: skill.clone(),
            execution_id: x.id,
            text: "Always state the currency of the invoice total.".into(),
            author_kind: AuthorKind::Human,
            author: None,
        })?
        .lesson
        .ok_or_else(|| anyhow::anyhow!("the template correction made no lesson"))?;
    let now = Utc::now();
    let started = Instant::now();
    for chunk in (0..lessons).collect::<Vec<_>>().chunks(BATCH) {
        let batch: Vec<Record> = chunk
            .iter()
            .map(|&i| {
                let mut l = template.clone();
                let at = now + TimeDelta::microseconds(i64::try_from(i).unwrap_or(i64::MAX));
                l.id = LessonId::generate(at);
                let (a, b, c) = (
                    WORDS[i % WORDS.len()],
                    WORDS[(i / 7) % WORDS.len()],
                    WORDS[(i / 49) % WORDS.len()],
                );
                l.rule = format!("Always check the {a} and the {b} of each {c} (case {i}).");
                l.applies_when = format!("When a {c} mentions {a}.");
                l.tiers.summary = l.rule.clone();
                l.status = LessonStatus::Approved;
                l.created_at = at;
                l.updated_at = at;
                Record::Lesson(l)
            })
            .collect();
        store.write(&batch, OnDuplicate::Fail)?;
    }
    let lessons_per_s = lessons as f64 / started.elapsed().as_secs_f64();

    let query = |i: usize| RecallQuery {
        text: format!(
            "check the {} of the {}",
            WORDS[(i * 5) % WORDS.len()],
            WORDS[(i * 11) % WORDS.len()]
        ),
        skill: Some(skill.clone()),
        ..RecallQuery::default()
    };
    let started = Instant::now();
    engine.recall(&query(0))?;
    let first = started.elapsed();
    let mut recalls = Vec::with_capacity(RECALLS);
    for i in 0..RECALLS {
        let t = Instant::now();
        let found = engine.recall(&query(i))?;
        recalls.push(t.elapsed());
        anyhow::ensure!(!found.lessons.is_empty(), "recall found nothing");
    }
    recalls.sort();
    let texts: Vec<String> = (0..RECALLS).map(|i| query(i).text).collect();
    let store_side = store_side(store.as_ref(), &texts)?;
    drop(engine);
    let cold_start = cold_start(&store, &query(RECALLS))?;
    Ok(StoreFigures {
        store: name,
        records,
        lessons,
        lessons_per_s,
        recall_first_ms: ms(first),
        recall_p50_ms: quantile(&recalls, 0.5),
        recall_p99_ms: quantile(&recalls, 0.99),
        store_side,
        cold_start,
    })
}

/// A new Engine's first recall and when its index is ready, without the saved index (deleted
/// first) and with it (as the build just left it).
fn cold_start(store: &Arc<dyn Store>, query: &RecallQuery) -> Result<ColdStart> {
    let saved = store.derived_path(lore_recall::saved::NAME);
    let (saved_first_ms, saved_memory) = match &saved {
        Some(_) => {
            let before = crate::recall::resident();
            let started = Instant::now();
            let engine = Engine::new(Arc::clone(store), EngineConfig::default());
            engine.recall(query)?;
            let first = ms(started.elapsed());
            let after = crate::recall::resident();
            (Some(first), loaded_memory(&engine, before, after))
        }
        None => (None, None),
    };
    if let Some(path) = &saved {
        // A small index may not have been saved at all.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    let (unsaved_first_ms, unsaved_first_warming, unsaved_ready_ms) =
        background_start(store, query)?;
    let (saved_background_first_ms, saved_ready_ms) = match saved {
        Some(_) => {
            let (first, _, ready) = background_start(store, query)?;
            (Some(first), Some(ready))
        }
        None => (None, None),
    };
    Ok(ColdStart {
        saved_first_ms,
        unsaved_first_ms,
        unsaved_first_warming,
        unsaved_ready_ms,
        saved_background_first_ms,
        saved_ready_ms,
        saved_memory,
    })
}

/// [`LoadedMemory`] of `engine`, given the process's resident memory (anonymous, file)
/// before it was made and after.
fn loaded_memory(
    engine: &Engine,
    before: Option<(u64, u64)>,
    after: Option<(u64, u64)>,
) -> Option<LoadedMemory> {
    let lessons = engine.recall_index_info()?.lessons.max(1) as f64;
    let m = engine.recall_index_memory()?;
    let per = |bytes: usize| bytes as f64 / lessons;
    let added = before
        .zip(after)
        .map(|(b, a)| (a.0.saturating_sub(b.0), a.1.saturating_sub(b.1)));
    Some(LoadedMemory {
        rss_anon: added.map(|a| a.0 as f64 / lessons),
        rss_file: added.map(|a| a.1 as f64 / lessons),
        lessons: per(m.lessons + m.shown),
        sparse: per(m.sparse),
        lookup: per(m.lookup),
        vectors: per(m.vectors.vectors),
        codes: per(m.vectors.codes),
        graph: per(m.vectors.graph),
        mapped: per(m.vectors.mapped),
    })
}

/// A server's Engine started over `store`: milliseconds to its first recall, whether that
/// said warming, and milliseconds until its index was ready.
fn background_start(store: &Arc<dyn Store>, query: &RecallQuery) -> Result<(f64, bool, f64)> {
    let started = Instant::now();
    let engine = Engine::new(Arc::clone(store), EngineConfig::default()).with_background_index();
    engine.warm_recall_index();
    let first = engine.recall(query)?;
    let first_ms = ms(started.elapsed());
    while engine.recall_index_state() != IndexState::Ready {
        std::thread::sleep(Duration::from_millis(5));
    }
    // The first recall after the swap waits for nothing but the update since the build.
    engine.recall(query)?;
    Ok((
        first_ms,
        first.index == IndexState::Warming,
        ms(started.elapsed()),
    ))
}

/// The store's own search paths over the lessons the recall figures used, or `None` for a
/// store without them.
fn store_side(store: &dyn Store, texts: &[String]) -> Result<Option<StoreSide>> {
    // The embedder the recall index stored its vectors with: the builtin one, fitted to these
    // lessons.
    let configured: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::default());
    let Some((embedder, _)) = lore_recall::lessons::stored_embedder(store, &configured)? else {
        anyhow::bail!("the store holds no vectors after recall");
    };
    let id = embedder.id();
    let started = Instant::now();
    if !store.prepare_nearest(&id)? {
        return Ok(None);
    }
    let index_build_ms = ms(started.elapsed());
    let (mut ann, mut exact, mut text) = (Vec::new(), Vec::new(), Vec::new());
    let (mut found, mut wanted) = (0usize, 0usize);
    let filter = ListFilter {
        statuses: Some([LessonStatus::Approved].into()),
        ..ListFilter::default()
    };
    for q in texts {
        let v = embedder.embed(q)?;
        let t = Instant::now();
        let near = store
            .nearest_stored(&id, &v, 10, false)?
            .unwrap_or_default();
        ann.push(t.elapsed());
        let t = Instant::now();
        let truth = store.nearest_stored(&id, &v, 10, true)?.unwrap_or_default();
        exact.push(t.elapsed());
        anyhow::ensure!(!truth.is_empty(), "the store holds no vectors of {id}");
        wanted += truth.len();
        found += truth.iter().filter(|l| near.contains(l)).count();
        let t = Instant::now();
        store.search(q, &filter, 10)?;
        text.push(t.elapsed());
    }
    for d in [&mut ann, &mut exact, &mut text] {
        d.sort();
    }
    Ok(Some(StoreSide {
        index_build_ms,
        ann_p50_ms: quantile(&ann, 0.5),
        ann_p99_ms: quantile(&ann, 0.99),
        ann_recall_at_10: found as f64 / wanted.max(1) as f64,
        exact_p50_ms: quantile(&exact, 0.5),
        exact_p99_ms: quantile(&exact, 0.99),
        text_p50_ms: quantile(&text, 0.5),
        text_p99_ms: quantile(&text, 0.99),
    }))
}
