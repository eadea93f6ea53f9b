//! `lore bench knowledge`: ingest throughput and layered-context latency over knowledge chunks.
//!
//! The corpus is generated: runbook-like markdown documents of twenty sections each, every
//! section a few sentences drawn from an operations vocabulary, so headings, BM25 and vectors
//! all have something to work with and no two sections are the same. Ingest is timed end to
//! end through `Engine::ingest` on a real SQLite file (chunking, redaction, embedding, writes);
//! the layered context through `Engine::context` on a fresh Engine, its first call (which builds
//! the index from the store, or loads the one a previous run saved beside it) reported apart
//! from the steady-state latencies, and the first call of a second fresh Engine, which loads
//! the index the first one saved.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use lore_core::ports::knowledge::KnowledgeStore;
use lore_core::{Scope, SkillPath};
use lore_engine::knowledge::{Chunking, IngestDocument, IngestRequest, ItemIndexInfo, ItemOrigin};
use lore_engine::{ContextQuery, Engine, EngineConfig};
use lore_recall::Embedder;
use lore_sqlite::{OpenMode, SqliteStore};
use serde::Serialize;

use crate::Out;

/// Sections in each generated document.
const SECTIONS: usize = 20;

const SYSTEMS: [&str; 12] = [
    "checkout",
    "payments",
    "search",
    "inventory",
    "billing",
    "auth",
    "exports",
    "email",
    "catalog",
    "shipping",
    "reports",
    "webhooks",
];
const ACTIONS: [&str; 10] = [
    "roll back the release",
    "restart the worker pool",
    "drain the queue",
    "rotate the credentials",
    "scale the replicas",
    "rebuild the search index",
    "replay the failed events",
    "page the on-call engineer",
    "freeze deploys",
    "run the database migration",
];
const SIGNS: [&str; 8] = [
    "the error rate climbs",
    "latency doubles",
    "the queue grows for ten minutes",
    "disk usage passes 90%",
    "a certificate is about to expire",
    "customers report timeouts",
    "the canary fails its checks",
    "memory keeps rising",
];

#[derive(Serialize)]
struct Report {
    embedder: String,
    documents: usize,
    chunks: usize,
    /// Documents a kept store already held, skipped by the ingest.
    unchanged_documents: usize,
    ingest_seconds: f64,
    chunks_per_second: f64,
    first_context_ms: f64,
    /// How the first reader's knowledge index came to be (built, or loaded from a file).
    first_index: Option<ItemIndexInfo>,
    /// The first context of a second new process, after the first saved its index.
    later_first_context_ms: f64,
    later_index: Option<ItemIndexInfo>,
    /// Reading every chunk with its vector from a freshly opened store.
    store_read_ms: f64,
    /// The reader's next context after another process changed one document.
    after_write_ms: f64,
    after_write_index: Option<ItemIndexInfo>,
    queries: usize,
    context_p50_ms: f64,
    context_p99_ms: f64,
    context_mean_ms: f64,
}

/// Ingests about `chunks` generated chunks with `embedder` into a temporary store, then times
/// `queries` layered contexts.
///
/// # Errors
/// Store or embedder failures, or a failed write to `out`.
pub fn run(
    chunks: usize,
    queries: usize,
    embedder: Arc<dyn Embedder>,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    run_at(None, chunks, queries, embedder, json, out)
}

/// [`run`] on the store at `store` when given, which is kept: a second run over the same file
/// skips the unchanged documents (an ingest with a model takes an hour at 100k chunks) and
/// times the contexts alone.
///
/// # Errors
/// Store or embedder failures, or a failed write to `out`.
pub fn run_at(
    store: Option<&Path>,
    chunks: usize,
    queries: usize,
    embedder: Arc<dyn Embedder>,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = store.map_or_else(|| dir.path().join("lore.db"), Path::to_path_buf);
    let engine = |store: SqliteStore| {
        Engine::new(Arc::new(store), EngineConfig::default()).with_embedder(Arc::clone(&embedder))
    };
    let writer = engine(SqliteStore::open(&path, OpenMode::Create)?);
    let documents: Vec<IngestDocument> = (0..chunks.div_ceil(SECTIONS).max(1))
        .map(document)
        .collect();
    let request = IngestRequest {
        skill: SkillPath::parse("ops/runbooks")?,
        roots: Vec::new(),
        documents,
        chunking: Chunking::default(),
    };
    let started = Instant::now();
    let ingested = writer.ingest(&request, &mut |_, _| {})?;
    let ingest_seconds = started.elapsed().as_secs_f64();
    drop(writer);

    let reader = engine(SqliteStore::open(&path, OpenMode::Existing)?);
    let started = Instant::now();
    reader.context(&query(0))?;
    let first_context_ms = started.elapsed().as_secs_f64() * 1e3;
    let first_index = reader.knowledge_index_info();
    // Another new process, as the next CLI command or a restarted server: the index the first
    // one saved beside the store is loaded instead of built.
    let later = engine(SqliteStore::open(&path, OpenMode::Existing)?);
    let started = Instant::now();
    later.context(&query(0))?;
    let later_first_context_ms = started.elapsed().as_secs_f64() * 1e3;
    let later_index = later.knowledge_index_info();
    drop(later);
    // What of that is reading the chunks from the store, which every new process does.
    let started = Instant::now();
    SqliteStore::open(&path, OpenMode::Existing)?.knowledge_chunks(&Scope::unrestricted(), None)?;
    let store_read_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut times: Vec<f64> = (1..=queries.max(1))
        .map(|i| {
            let started = Instant::now();
            reader.context(&query(i))?;
            Ok(started.elapsed().as_secs_f64() * 1e3)
        })
        .collect::<Result<_>>()?;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    // Another process changes one document; the reader's next context catches up with it, as
    // a long-running server does after every write.
    let mut changed = document(0);
    changed
        .text
        .push_str("A note added after the last review of this runbook.\n");
    engine(SqliteStore::open(&path, OpenMode::Existing)?).ingest(
        &IngestRequest {
            skill: request.skill.clone(),
            roots: Vec::new(),
            documents: vec![changed],
            chunking: request.chunking,
        },
        &mut |_, _| {},
    )?;
    let started = Instant::now();
    reader.context(&query(1))?;
    let after_write_ms = started.elapsed().as_secs_f64() * 1e3;
    let after_write_index = reader.knowledge_index_info();
    let report = Report {
        embedder: embedder.id().to_string(),
        documents: request.documents.len(),
        chunks: ingested.chunks_written,
        unchanged_documents: ingested.unchanged,
        ingest_seconds,
        chunks_per_second: ingested.chunks_written as f64 / ingest_seconds,
        first_context_ms,
        first_index,
        later_first_context_ms,
        later_index,
        store_read_ms,
        after_write_ms,
        after_write_index,
        queries: times.len(),
        context_p50_ms: at(0.5),
        context_p99_ms: at(0.99),
        context_mean_ms: times.iter().sum::<f64>() / times.len() as f64,
    };
    if json {
        return out.json(&report);
    }
    out.line(format!(
        "ingest: {} documents ({} already stored), {} chunks in {:.1} s = {:.0} chunks/s ({})",
        report.documents,
        report.unchanged_documents,
        report.chunks,
        report.ingest_seconds,
        report.chunks_per_second,
        report.embedder
    ))?;
    let how = |info: &Option<ItemIndexInfo>| {
        let Some(info) = info else {
            return "no knowledge index".to_owned();
        };
        let read = info.read;
        match &info.origin {
            ItemOrigin::Built => format!("index built, {read} chunks read"),
            ItemOrigin::Loaded { kept, added, .. } => {
                format!("saved index loaded: {kept} kept, {added} inserted, {read} chunks read")
            }
            ItemOrigin::Updated {
                kept,
                dropped,
                added,
            } => format!(
                "index updated: {kept} kept, {dropped} dropped, {added} inserted, {read} chunks \
                 read"
            ),
        }
    };
    out.line(format!(
        "layered context: first call of a new process {:.0} ms ({}), of the next new process \
         {:.0} ms ({}; reading the chunks from the store alone {:.0} ms); {} queries p50 {:.2} ms, p99 {:.2} ms, mean {:.2} ms",
        report.first_context_ms,
        how(&report.first_index),
        report.later_first_context_ms,
        how(&report.later_index),
        report.store_read_ms,
        report.queries,
        report.context_p50_ms,
        report.context_p99_ms,
        report.context_mean_ms
    ))?;
    out.line(format!(
        "after another process changed one document, the next context {:.0} ms ({})",
        report.after_write_ms,
        how(&report.after_write_index)
    ))
}

/// The `n`th generated document: a runbook for one system, twenty incident sections.
fn document(n: usize) -> IngestDocument {
    let system = SYSTEMS[n % SYSTEMS.len()];
    let mut text = format!("# {system} runbook {n}\n\n");
    for s in 0..SECTIONS {
        let k = n * SECTIONS + s;
        let sign = SIGNS[k % SIGNS.len()];
        let action = ACTIONS[(k / SIGNS.len()) % ACTIONS.len()];
        let other = ACTIONS[(k * 7 + 3) % ACTIONS.len()];
        text.push_str(&format!(
            "## When {sign} (case {k})\n\nIf {sign} on {system} host {k}, {action} first and \
             watch the dashboards for five minutes. Only then {other}. Write the incident \
             note with the time, the host {k} and what changed since the last deploy, and \
             link the alert that fired.\n\n"
        ));
    }
    IngestDocument {
        source: format!("runbooks/{system}/{n}.md"),
        text,
    }
}

fn query(i: usize) -> ContextQuery {
    ContextQuery {
        text: format!(
            "{} on {}: what should I do?",
            SIGNS[i % SIGNS.len()],
            SYSTEMS[(i / SIGNS.len()) % SYSTEMS.len()]
        ),
        ..ContextQuery::default()
    }
}
