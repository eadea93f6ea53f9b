//! `lore bench ingest`: the cost of capture, measured on this machine.
//!
//! Recording latency is timed per call through the Engine on a real store file (process start
//! and argument parsing excluded); import throughput covers parsing seed-format JSON and writing
//! it in one transaction. Each figure is a median or a single timed run, so re-run it a few times
//! on a busy machine.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use lore_core::SkillPath;
use lore_core::model::Outcome;
use lore_engine::NewExecution;
use lore_engine::interchange::AgenturaBundle;
use lore_engine::{Engine, EngineConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use serde::Serialize;
use serde_json::json;

use crate::Out;

#[derive(Serialize)]
struct RecordLatency {
    records: usize,
    p50_us: f64,
    p99_us: f64,
    mean_us: f64,
}

#[derive(Serialize)]
struct ImportThroughput {
    records: usize,
    seconds: f64,
    records_per_second: f64,
}

#[derive(Serialize)]
struct IngestReport {
    record: RecordLatency,
    import: Vec<ImportThroughput>,
}

/// Times recording `records` executions and importing each of `sizes`.
///
/// # Errors
/// Store failures, or a failed write to `out`.
pub fn run(records: usize, sizes: Vec<usize>, json: bool, out: &mut Out<'_>) -> Result<()> {
    let report = IngestReport {
        record: record_latency(records.max(1))?,
        import: sizes
            .into_iter()
            .map(import_throughput)
            .collect::<Result<_>>()?,
    };
    if json {
        return out.json(&report);
    }
    let r = &report.record;
    out.line(format!(
        "record one execution ({} runs): p50 {:.0} µs, p99 {:.0} µs, mean {:.0} µs",
        r.records, r.p50_us, r.p99_us, r.mean_us
    ))?;
    for i in &report.import {
        out.line(format!(
            "import {} records: {:.2} s, {:.0} records/s",
            i.records, i.seconds, i.records_per_second
        ))?;
    }
    Ok(())
}

fn fresh_engine(dir: &tempfile::TempDir) -> Result<Engine> {
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
    Ok(Engine::new(Arc::new(store), EngineConfig::default()))
}

fn record_latency(n: usize) -> Result<RecordLatency> {
    let dir = tempfile::tempdir()?;
    let engine = fresh_engine(&dir)?;
    let skill = SkillPath::parse("bench/record")?;
    let mut micros = Vec::with_capacity(n);
    for i in 0..n {
        let new = NewExecution {
            skill: skill.clone(),
            input: json!({"ticket": format!("Printer {i} on floor 3 jams on duplex jobs"), "user": "ana"}),
            output: json!({"summary": "Duplex jam; escalate to facilities.", "priority": "normal"}),
            outcome: Outcome::Accepted,
            cost_usd: Some(0.0012),
            latency_ms: Some(840.0),
            model: Some("bench-model".into()),
            session: None,
            lessons_shown: Vec::new(),
        };
        let start = Instant::now();
        engine.record_execution(new)?;
        micros.push(start.elapsed().as_secs_f64() * 1e6);
    }
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() - 1) as f64 * q).round() as usize];
    Ok(RecordLatency {
        records: n,
        p50_us: at(0.5),
        p99_us: at(0.99),
        mean_us: micros.iter().sum::<f64>() / n as f64,
    })
}

/// Seed-format files with `n` records: 80% executions, 10% corrections, 10% reflexions.
fn synthetic_files(n: usize) -> [String; 3] {
    let executions: Vec<_> = (0..n * 8 / 10)
        .map(|i| {
            json!({
                "execution_id": format!("EXEC-20260220124341-{i:08}"),
                "skill": format!("bench/skill-{}", i % 20),
                "timestamp": "2026-02-20T12:43:41.681444+00:00",
                "input_summary": {"candidate": format!("Candidate {i}"), "role": "Data Engineer"},
                "output_summary": {"overall_score": i % 100, "recommendation": "proceed_to_interview"},
                "outcome": "accepted",
                "cost_usd": 0.0093,
                "latency_ms": 1062,
                "model_used": "anthropic/claude-haiku-4-5"
            })
        })
        .collect();
    let corrections: Vec<_> = (0..n / 10)
        .map(|i| {
            json!({
                "correction_id": format!("CORR-{i:06}"),
                "execution_id": format!("EXEC-20260220124341-{i:08}"),
                "skill": format!("bench/skill-{}", i % 20),
                "timestamp": "2026-02-20T18:28:32.091440+00:00",
                "original_output": {"overall_score": 72},
                "user_correction": format!("Candidate {i} should score below 60 without system design experience.")
            })
        })
        .collect();
    let lessons: Vec<_> = (0..n - n * 8 / 10 - n / 10)
        .map(|i| {
            json!({
                "reflexion_id": format!("REFL-{i:06}"),
                "skill": format!("bench/skill-{}", i % 20),
                "created_at": "2026-02-20T18:28:36.503554+00:00",
                "correction_id": format!("CORR-{i:06}"),
                "mistake": "Scored too high.",
                "root_cause": "Mis-weighted criteria",
                "rule": format!("Rule {i}: ALWAYS check system design experience separately from coding skills."),
                "applies_when": "Senior engineering roles.",
                "confidence": 0.9,
                "validated_by_test": false,
                "generated_test_ids": []
            })
        })
        .collect();
    [
        json!({ "entries": executions }).to_string(),
        json!({ "corrections": corrections }).to_string(),
        json!({ "entries": lessons }).to_string(),
    ]
}

fn import_throughput(n: usize) -> Result<ImportThroughput> {
    let dir = tempfile::tempdir()?;
    let engine = fresh_engine(&dir)?;
    let [episodic, corrections, reflexions] = synthetic_files(n);
    let start = Instant::now();
    let bundle = AgenturaBundle::parse(Some(&episodic), Some(&corrections), Some(&reflexions))?;
    let report = engine.import_agentura(bundle)?;
    let seconds = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        report.write.written >= n,
        "the import stored {} of {n}",
        report.write.written
    );
    Ok(ImportThroughput {
        records: n,
        seconds,
        records_per_second: n as f64 / seconds,
    })
}
