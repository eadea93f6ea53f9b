//! BM25 alone over `lore bench recall --vocab small`'s lessons, where every query word is
//! common: the search's CPU time per query (the thread's own, from
//! `/proc/thread-self/schedstat`, so time spent waiting for a core on a loaded machine is not
//! counted; the kernel advances it at its ticks, so each query runs `REPEATS` times and the
//! mean is taken) and its wall time (the fastest of the repeats), p50/p99/p999, with the
//! pruned top k checked against the exhaustive one on the first queries.
//!
//! `cargo run -p lore-bench --example bm25_small -- LESSONS [QUERIES] [K] [REPEATS]`

#![allow(clippy::print_stdout)] // A command-line measurement: its figures are its output.

use std::time::{Duration, Instant};

use lore_bench::recall::Vocab;
use lore_recall::SparseIndex;

fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let nanos = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(nanos)
}

fn rank(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("counts"))
        .collect();
    let lessons = args.first().copied().unwrap_or(100_000);
    let queries = args.get(1).copied().unwrap_or(2_000);
    let k = args.get(2).copied().unwrap_or(30);
    let repeats = args.get(3).copied().unwrap_or(10).max(1);
    let started = Instant::now();
    let mut index = SparseIndex::new();
    for i in 0..lessons {
        index.add(&Vocab::Small.lesson(i));
    }
    println!(
        "{lessons} lessons indexed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let texts: Vec<String> = (0..queries).map(|i| Vocab::Small.question(i)).collect();
    for q in texts.iter().take(20) {
        let pruned = index.search(q, k, |_| true);
        let exact = index.search_exhaustive(q, k, |_| true);
        assert_eq!(pruned.len(), exact.len(), "{q}");
        for (p, e) in pruned.iter().zip(&exact) {
            assert!((p.1 - e.1).abs() <= 1e-9 * e.1.abs(), "{q}: {p:?} vs {e:?}");
        }
    }
    let (mut cpus, mut walls) = (Vec::new(), Vec::new());
    for q in &texts {
        let c = cpu();
        let mut fastest = Duration::MAX;
        for _ in 0..repeats {
            let w = Instant::now();
            std::hint::black_box(index.search(q, k, |_| true));
            fastest = fastest.min(w.elapsed());
        }
        walls.push(fastest);
        cpus.push((cpu() - c) / u32::try_from(repeats).unwrap_or(u32::MAX));
    }
    cpus.sort();
    walls.sort();
    for (name, d) in [("cpu", &cpus), ("wall", &walls)] {
        println!(
            "{name:<4} p50 {:.3} ms  p99 {:.3} ms  p999 {:.3} ms  ({queries} queries × {repeats}, k {k})",
            rank(d, 0.5),
            rank(d, 0.99),
            rank(d, 0.999)
        );
    }
}
