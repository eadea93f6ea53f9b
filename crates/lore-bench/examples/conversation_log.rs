//! The conversation log's query latency with the builtin embedder, without building the whole
//! `lore` binary: `cargo run --release -p lore-bench --example conversation_log -- LOCOMO_JSON
//! [ENTRIES] [QUERIES]`.
//!
//! LoCoMo's turns are written with `Engine::recall_write` into one skill of a new SQLite store,
//! in order and again from the start until there are ENTRIES (10,000 by default), one session
//! per LoCoMo session and round. Then LoCoMo's questions are asked with `Engine::recall_read`
//! (top 10): the first one builds the index; the next QUERIES (500) are timed on an index that
//! is up to date; then 200 rounds of one write and one question time the question after a
//! write, which indexes the new entry first.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use lore_bench::Out;
use lore_core::SkillPath;
use lore_engine::{Engine, EngineConfig};
use lore_recall::BuiltinEmbedder;
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::Value;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let data = args.next().context("give the LoCoMo JSON file")?;
    let entries: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let queries: usize = args.next().map_or(Ok(500), |a| a.parse())?;
    let samples: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&data)?)?;
    let (turns, questions) = turns_and_questions(&samples);
    anyhow::ensure!(
        !turns.is_empty() && !questions.is_empty(),
        "no turns or questions"
    );

    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
    let engine = Engine::new(Arc::new(store), EngineConfig::default())
        .with_embedder(Arc::new(BuiltinEmbedder::default()));
    let skill = SkillPath::parse("bench/conversation-log")?;
    let started = Instant::now();
    let mut written = 0;
    for (round, cycle) in std::iter::repeat(&turns).enumerate() {
        for (session, speaker, text) in cycle {
            if written == entries {
                break;
            }
            let session = format!("{session}-{round}");
            if engine
                .recall_write(&skill, &session, Some(speaker), text)
                .is_ok()
            {
                written += 1;
            }
        }
        if written == entries {
            break;
        }
    }
    let write_s = started.elapsed().as_secs_f64();
    let mut stdout = std::io::stdout();
    let mut out = Out::new(&mut stdout);
    out.line(format!(
        "written: {written} entries in {write_s:.1} s; load average {}",
        load()
    ))?;

    let ask = |q: &str| -> Result<f64> {
        let start = Instant::now();
        let hits = engine.recall_read(&skill, None, Some(q), 10)?;
        anyhow::ensure!(!hits.is_empty(), "no hit for {q:?}");
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    out.line(format!(
        "first query (builds the index): {:.1} ms",
        ask(&questions[0])?
    ))?;
    let mut warm: Vec<f64> = (0..queries)
        .map(|i| ask(&questions[(i + 1) % questions.len()]))
        .collect::<Result<_>>()?;
    out.line(format!("query, index up to date: {}", summary(&mut warm)))?;
    let mut after_write = Vec::new();
    for i in 0..200 {
        let (session, speaker, text) = &turns[i % turns.len()];
        engine.recall_write(&skill, &format!("{session}-late"), Some(speaker), text)?;
        after_write.push(ask(&questions[i % questions.len()])?);
    }
    out.line(format!(
        "query after one write: {}",
        summary(&mut after_write)
    ))?;
    out.line(format!("load average: {}", load()))?;
    Ok(())
}

/// Every turn as `(session, speaker, text)`, and every question.
fn turns_and_questions(samples: &[Value]) -> (Vec<(String, String, String)>, Vec<String>) {
    let mut turns = Vec::new();
    let mut questions = Vec::new();
    for (c, sample) in samples.iter().enumerate() {
        let conv = &sample["conversation"];
        for n in 1.. {
            let Some(session) = conv[format!("session_{n}")].as_array() else {
                break;
            };
            for turn in session {
                let speaker = turn["speaker"].as_str().unwrap_or("someone");
                turns.push((
                    format!("c{c}-s{n}"),
                    speaker.to_ascii_lowercase().replace(' ', "-"),
                    turn["text"].as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
        let qa = sample["qa"].as_array().into_iter().flatten();
        questions.extend(qa.filter_map(|q| q["question"].as_str().map(str::to_owned)));
    }
    (turns, questions)
}

/// `p50 … p90 … p99 … ms (n)`.
fn summary(ms: &mut [f64]) -> String {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms ({} queries)",
        at(0.5),
        at(0.9),
        at(0.99),
        ms.len()
    )
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
