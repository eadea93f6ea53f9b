//! The MiniLM query embedding alone, on LoCoMo's questions: each distinct question embedded once
//! (no cache in the way), p50/p99, then the conversations' turns embedded in batches as an index
//! build does, in texts a second.
//!
//! ```sh
//! LORE_MINILM_PATH=… cargo run --release -p lore-providers --features minilm \
//!   --example query_embedding -- …/locomo_dev.json [turns] [f32|int8] [1|2] [streams]
//! ```
//!
//! Besides wall time it reports the CPU time the calling thread ran per question (from Linux's
//! `/proc/thread-self/schedstat`), which a loaded machine stretches less.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use lore_providers::embedders::{EncoderSettings, MiniLm, Precision};
use lore_recall::Embedder;
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().ok_or("give the LoCoMo JSON file")?);
    let turns_wanted: usize = args.next().map_or(Ok(2000), |n| n.parse())?;
    let precision = match args.next().as_deref() {
        None | Some("f32") => Precision::F32,
        Some("int8") => Precision::Int8,
        Some(other) => return Err(format!("{other:?}: give f32 or int8").into()),
    };
    let split_queries = args.next().is_none_or(|n| n == "2");
    // Questions embedded at once by as many threads, as a server answering several agents.
    let streams: usize = args.next().map_or(Ok(1), |n| n.parse())?;
    let dir = std::env::var_os("LORE_MINILM_PATH").ok_or("set LORE_MINILM_PATH")?;
    let settings = EncoderSettings {
        precision,
        split_queries,
    };
    let model = MiniLm::load_with(&PathBuf::from(dir), settings)?;

    let samples: Vec<Value> = serde_json::from_slice(&std::fs::read(&data)?)?;
    let mut seen = HashSet::new();
    let questions: Vec<&str> = samples
        .iter()
        .filter_map(|s| s["qa"].as_array())
        .flatten()
        .filter_map(|q| q["question"].as_str())
        .filter(|q| seen.insert(*q))
        .collect();
    let turns: Vec<String> = samples
        .iter()
        .flat_map(|s| {
            let conv = &s["conversation"];
            (1..)
                .map_while(move |n| conv.get(format!("session_{n}"))?.as_array())
                .flatten()
                .map(|t| {
                    format!(
                        "{}: {}",
                        t["speaker"].as_str().unwrap_or_default(),
                        t["text"].as_str().unwrap_or_default()
                    )
                })
        })
        .take(turns_wanted)
        .collect();

    let mut out = std::io::stdout().lock();
    for q in questions.iter().take(20) {
        model.embed(q)?;
    }
    let timed = |from: usize| -> Result<Vec<(f64, f64)>, lore_core::Error> {
        let mut times = Vec::with_capacity(questions.len());
        for i in 0..questions.len() {
            let q = questions[(from + i) % questions.len()];
            let c = cpu_ms();
            let t = Instant::now();
            std::hint::black_box(model.embed(q)?);
            times.push((t.elapsed().as_secs_f64() * 1e3, cpu_ms() - c));
        }
        Ok(times)
    };
    let count = questions.len();
    let started = Instant::now();
    let times: Vec<(f64, f64)> = std::thread::scope(|scope| {
        let each: Vec<_> = (0..streams)
            .map(|s| scope.spawn(move || timed(s * count / streams)))
            .collect();
        each.into_iter()
            .map(|h| h.join().expect("a stream panicked"))
            .collect::<Result<Vec<_>, _>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    let wall = started.elapsed().as_secs_f64();
    let (mut ms, mut cpu): (Vec<f64>, Vec<f64>) = times.into_iter().unzip();
    let (p50, p99) = quantiles(&mut ms);
    let (c50, _) = quantiles(&mut cpu);
    writeln!(
        out,
        "query embedding ({precision:?}, split {split_queries}, {streams} at once): {} questions, p50 {p50:.3} ms, p99 {p99:.3} ms; \
         CPU of the calling thread p50 {c50:.3} ms; {:.0} questions/s",
        ms.len(),
        ms.len() as f64 / wall,
    )?;

    if precision != Precision::F32 {
        let float = MiniLm::load_with(
            &PathBuf::from(std::env::var_os("LORE_MINILM_PATH").unwrap_or_default()),
            EncoderSettings {
                precision: Precision::F32,
                split_queries,
            },
        )?;
        let mut cosines = Vec::with_capacity(questions.len());
        for q in &questions {
            cosines.push(lore_recall::cosine(&model.embed(q)?, &float.embed(q)?));
        }
        cosines.sort_by(f64::total_cmp);
        writeln!(
            out,
            "cosine with the f32 model's vector: min {:.5}, median {:.5}",
            cosines[0],
            cosines[cosines.len() / 2]
        )?;
    }

    if !turns.is_empty() {
        let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
        let t = Instant::now();
        for chunk in refs.chunks(256) {
            std::hint::black_box(model.embed_batch(chunk)?);
        }
        let s = t.elapsed().as_secs_f64();
        writeln!(
            out,
            "batch embedding: {} turns in {s:.2} s, {:.0} texts/s",
            refs.len(),
            refs.len() as f64 / s
        )?;
    }
    Ok(())
}

/// Milliseconds this thread has run, from the scheduler's own count.
fn cpu_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split(' ').next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e6)
}

fn quantiles(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |p: f64| values[((values.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99))
}
