//! `lore bench episodes`: recording episodes and querying the causal graph, on this machine.
//!
//! Synthetic episodes over a small vocabulary (so nodes, edges and patterns repeat, as real
//! sessions' do) are recorded one by one through the Engine on a real store file, and each
//! query is then timed over them. Medians of a few runs each; the machine may be shared, so
//! run it more than once.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use lore_core::graph::PathMode;
use lore_core::model::Episode;
use lore_engine::PatternQuery;
use lore_engine::{Engine, EngineConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use serde::Serialize;
use serde_json::json;

use crate::Out;

/// Runs per query, for its median.
const RUNS: usize = 7;

#[derive(Serialize)]
struct SizeReport {
    episodes: usize,
    record_p50_ms: f64,
    record_p99_ms: f64,
    episode_p50_ms: f64,
    causal_path_p50_ms: f64,
    what_if_p50_ms: f64,
    similar_p50_ms: f64,
    patterns_p50_ms: f64,
    /// A causal path right after an episode is recorded: the scope's graph is read again.
    path_after_write_p50_ms: f64,
}

const CHOICES: [&str; 6] = [
    "Redis",
    "Memcached",
    "retry with backoff",
    "fail fast",
    "stream",
    "batch",
];
const CONTEXTS: [&str; 4] = [
    "Choosing a cache for candidate lookups",
    "Recovering from the export timeout",
    "Choosing how to ship the ledger",
    "Picking the retry policy for the API client",
];

fn synthetic(i: usize) -> Result<Episode> {
    let pick = |salt: usize| (i.wrapping_mul(2654435761).wrapping_add(salt * 40503)) % 1000;
    let outcome = ["success", "partial", "failure"][pick(1) % 3];
    let decisions: Vec<_> = (0..3)
        .map(|d| {
            json!({"id": format!("d{d}"), "type": "design",
                   "context": CONTEXTS[(pick(d + 2)) % CONTEXTS.len()],
                   "options": CHOICES, "chosen": CHOICES[pick(d + 7) % CHOICES.len()],
                   "effects": [format!("e{d}")]})
        })
        .collect();
    let events: Vec<_> = (0..3)
        .map(|e| {
            let kind = if pick(e + 11) % 4 == 0 {
                "error"
            } else {
                "milestone"
            };
            json!({"id": format!("e{e}"), "type": kind,
                   "content": format!("step {} done", pick(e + 13) % 12)})
        })
        .collect();
    Ok(Episode::from_json(
        json!({
            "id": format!("bench-{i}"), "skill": format!("bench/s{}", i % 4),
            "timestamp": "2026-01-01T00:00:00Z", "outcome": outcome,
            "task": format!("Synthetic task {i}"), "decisions": decisions, "events": events,
        }),
        None,
    )?)
}

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn time<T>(f: impl Fn() -> lore_core::Result<T>) -> Result<f64> {
    let mut ms = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        f()?;
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(median(ms))
}

fn measure(n: usize) -> Result<SizeReport> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
    let engine = Engine::new(Arc::new(store), EngineConfig::default());
    let mut record = Vec::with_capacity(n);
    for i in 0..n {
        let episode = synthetic(i)?;
        let started = Instant::now();
        engine.add_episode(episode, false)?;
        record.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    record.sort_by(f64::total_cmp);
    let p99 = record[(record.len() * 99 / 100).min(record.len() - 1)];
    let middle = synthetic(n / 2)?;
    let id = middle.id.clone();
    let alternative = CHOICES
        .into_iter()
        .find(|c| *c != middle.decisions[0].chosen)
        .expect("six choices");
    let path = || {
        engine.causal_path(
            "decision:redis",
            "outcome:failure",
            PathMode::Strongest,
            None,
        )
    };
    let mut report = SizeReport {
        episodes: n,
        record_p50_ms: median(record),
        record_p99_ms: p99,
        episode_p50_ms: time(|| engine.episode_view(&id, None))?,
        causal_path_p50_ms: time(path)?,
        what_if_p50_ms: time(|| engine.what_if(&id, "d0", alternative, None, None))?,
        similar_p50_ms: time(|| engine.similar_decisions("cache for lookups", 5, None))?,
        patterns_p50_ms: time(|| {
            engine.patterns(
                PatternQuery {
                    min_success_rate: Some(0.0),
                    ..PatternQuery::patterns()
                },
                None,
            )
        })?,
        path_after_write_p50_ms: 0.0,
    };
    let mut after_write = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        engine.add_episode(synthetic(n + run)?, false)?;
        let started = Instant::now();
        path()?;
        after_write.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    report.path_after_write_p50_ms = median(after_write);
    Ok(report)
}

/// Times episodes and graph queries at each size.
///
/// # Errors
/// Store failures, or a failed write to `out`.
pub fn run(sizes: Vec<usize>, json: bool, out: &mut Out<'_>) -> Result<()> {
    let reports = sizes
        .into_iter()
        .map(|n| measure(n.max(1)))
        .collect::<Result<Vec<_>>>()?;
    if json {
        return out.json(&reports);
    }
    for r in &reports {
        out.line(format!(
            "{} episodes: record p50 {:.2} ms p99 {:.2} ms | episode {:.2} ms | causal path \
             {:.2} ms | what-if {:.2} ms | similar {:.2} ms | patterns {:.2} ms | causal path \
             after a write {:.2} ms (medians)",
            r.episodes,
            r.record_p50_ms,
            r.record_p99_ms,
            r.episode_p50_ms,
            r.causal_path_p50_ms,
            r.what_if_p50_ms,
            r.similar_p50_ms,
            r.patterns_p50_ms,
            r.path_after_write_p50_ms
        ))?;
    }
    Ok(())
}
