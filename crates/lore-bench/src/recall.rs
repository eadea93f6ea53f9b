//! `lore bench recall`: the latency of the whole recall pipeline at scale.
//!
//! Each size gets a synthetic corpus ([`Vocab`]: LoCoMo-like turns, `(date) speaker: sentence`,
//! or with `--vocab small` the support-desk lessons of `crates/lore-server/bench/seed.py`,
//! whose few words every query shares), indexed in memory with the components the Engine's recall index uses:
//! [`SparseIndex`] (BM25 with MaxScore pruning) and [`VectorIndex`] (HNSW from 4096 vectors)
//! over the builtin embedder fitted to the corpus. A query is timed as `Engine::recall` runs it
//! once its index is fresh: embed the query, take the sparse and dense candidates, make
//! pipeline entries for those candidates, then fuse, MMR, guard and pack ([`run`]). The dense
//! side uses the configured `--embedder` (fitted to the corpus when it fits, as the Engine fits
//! it to a store), embedding the corpus in batches; its query-embedding time is one of the
//! stages, apart from the searches. Questions
//! are LoCoMo's real ones when `--data` names its file, synthetic ones otherwise. Latency is
//! given as p50, p99 and p999 (nearest rank, so p999 needs 1,000 queries to mean more than the
//! slowest), whole and per stage, so that a tail can be traced to the stage that makes it;
//! the per-stage medians say what dominates; index build time (wall and CPU) is reported apart. The ANN
//! index's recall@10 is measured against an exact scan of the same vectors, for LoCoMo's real
//! questions when given and for the synthetic ones in the same run, since real questions lie
//! much farther from the corpus and are where a graph falls short. With `--peer`, LanceDB's
//! script runs on the very same corpus, vectors and questions, and its figures are reported
//! beside Lore's.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use lore_recall::{
    ApproxTokenizer, Embedder, Entries, Hit, HnswParams, QueryShape, RankedList, RecallConfig,
    Source, SparseIndex, VectorIndex, run,
};
use serde::Serialize;

use crate::Out;
use crate::locomo::turn_entry;

mod vocab;

pub use vocab::Vocab;

/// Queries timed per size by default (cycling through the questions): enough for a p999 that
/// is not just the slowest query.
pub const QUERIES: usize = 2000;

#[derive(Serialize)]
struct SizeReport {
    lessons: usize,
    queries: usize,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    /// Median milliseconds per stage: embed the query, BM25, dense search, fuse to pack.
    stages_p50_ms: Stages,
    /// Each stage's 99th percentile.
    stages_p99_ms: Stages,
    /// Each stage's 99.9th percentile.
    stages_p999_ms: Stages,
    /// The query embedding's 99th percentile, milliseconds (every timed question is embedded
    /// anew: the benchmark's embedder keeps no query cache).
    embed_p99_ms: f64,
    /// The 1-minute load average when the timed queries started and when they ended: on a
    /// shared machine, what the latencies were measured under.
    #[serde(skip_serializing_if = "Option::is_none")]
    load_average: Option<[f64; 2]>,
    /// Seconds to embed the corpus (in batches of 256), or to read what an earlier run kept.
    embed_s: f64,
    /// Lessons whose vectors were read from `--vectors` rather than embedded.
    #[serde(skip_serializing_if = "is_zero")]
    corpus_kept: usize,
    /// Seconds to build the sparse and dense indexes from the vectors.
    build_s: f64,
    /// CPU seconds of the whole process over the build (all threads), which a loaded machine
    /// stretches less than the wall time; absent where the system does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    build_cpu_s: Option<f64>,
    /// Share of the exact top 10 (by cosine) that the vector index returned, per question set.
    ann_recall_at_10: AnnRecall,
    /// Whether the vector index searched an HNSW graph (false: it scanned exactly).
    ann: bool,
    /// Bytes the vector index holds per lesson: float vectors, int8 codes and graph links.
    vector_bytes_per_lesson: f64,
    /// Bytes BM25 holds per lesson: postings, vocabulary, per-document terms.
    sparse_bytes_per_lesson: f64,
    /// What building the sparse and dense indexes added to the process's resident memory, per
    /// lesson (Linux's VmRSS before and after; the allocator may keep freed pages, so this is
    /// what the indexes cost a process, not what they hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    index_rss_bytes_per_lesson: Option<f64>,
    /// The whole process's resident memory once the indexes are built, per lesson: the
    /// corpus texts, the indexes (BM25 postings, the vector index with its float vectors, int8
    /// codes and graph) and the embedded corpus's vectors, which the process still holds then,
    /// and what the allocator keeps; not what a server holds besides (lessons, caches).
    #[serde(skip_serializing_if = "Option::is_none")]
    rss_bytes_per_lesson: Option<f64>,
    /// LanceDB on the same corpus, vectors and questions, when `--peer` names its script.
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<Peer>,
    /// The same graph searched with each of `--sweep`'s efforts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sweep: Vec<Effort>,
}

/// One search effort over the built graph: its recall and the dense search's median.
#[derive(Serialize)]
struct Effort {
    ef_entry: usize,
    ef_search: usize,
    ann_recall_at_10: AnnRecall,
    /// Median milliseconds of the dense search alone (the question already embedded).
    dense_p50_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    load_average: Option<[f64; 2]>,
}

/// ANN recall@10 against an exact scan, for LoCoMo's real questions (when given) and for the
/// synthetic ones, which sit much nearer the corpus.
#[derive(Serialize)]
struct AnnRecall {
    #[serde(skip_serializing_if = "Option::is_none")]
    real: Option<f64>,
    synthetic: f64,
    /// The same, counting as found a returned lesson whose similarity is within [`TIE`] of the
    /// exact 10th (ann-benchmarks' definition): which of several near-equal lessons fills the
    /// last places is not a miss of the search.
    #[serde(skip_serializing_if = "Option::is_none")]
    real_with_ties: Option<f64>,
    synthetic_with_ties: f64,
}

/// How close to the exact 10th similarity a returned lesson counts as a tie.
const TIE: f64 = 1e-3;

impl AnnRecall {
    fn of(real: Option<(f64, f64)>, synthetic: (f64, f64)) -> Self {
        Self {
            real: real.map(|r| r.0),
            synthetic: synthetic.0,
            real_with_ties: real.map(|r| r.1),
            synthetic_with_ties: synthetic.1,
        }
    }

    fn describe(&self) -> String {
        match (self.real, self.real_with_ties) {
            (Some(real), Some(ties)) => format!(
                "{real:.3} real, {:.3} synthetic (ties within {TIE} of the 10th counted: \
                 {ties:.3} real, {:.3} synthetic)",
                self.synthetic, self.synthetic_with_ties
            ),
            _ => format!(
                "{:.3} (ties within {TIE} of the 10th counted: {:.3})",
                self.synthetic, self.synthetic_with_ties
            ),
        }
    }
}

/// Of the exact top 10 `exact` (best first), how many `approx` returned, by ID and counting
/// ties with the 10th.
fn found(exact: &[(u32, f64)], approx: &[(u32, f64)]) -> (usize, usize) {
    let by_id = approx
        .iter()
        .filter(|h| exact.iter().any(|e| e.0 == h.0))
        .count();
    let bar = exact.last().map_or(f64::INFINITY, |e| e.1 - TIE);
    let with_ties = approx
        .iter()
        .filter(|h| exact.iter().any(|e| e.0 == h.0) || h.1 >= bar)
        .count()
        .min(exact.len());
    (by_id, with_ties)
}

/// The peer's figures as its script prints them, with Lore's p50 over its hybrid p50.
#[derive(Serialize)]
struct Peer {
    /// LanceDB's hybrid (FTS + vector, RRF) p50 over Lore's recall p50.
    hybrid_p50_ratio: f64,
    /// What the script printed.
    figures: serde_json::Value,
}

#[derive(Serialize)]
struct Stages {
    embed: f64,
    sparse: f64,
    dense: f64,
    pipeline: f64,
}

impl Stages {
    fn describe(&self) -> String {
        format!(
            "embed {:.3}, bm25 {:.2}, dense {:.2}, fuse..pack {:.2} ms",
            self.embed, self.sparse, self.dense, self.pipeline
        )
    }
}

#[derive(Serialize)]
struct Report {
    embedder: String,
    hnsw: HnswParams,
    vocab: Vocab,
    questions: &'static str,
    sizes: Vec<SizeReport>,
}

/// How to run the benchmark.
pub struct Bench<'a> {
    /// The HNSW's settings.
    pub params: HnswParams,
    /// Where to write each size's corpus and questions for a peer, if anywhere.
    pub peer_data: Option<&'a Path>,
    /// The peer's script (LanceDB's), run with [`PEER_PYTHON`] or `python3` on that data.
    pub peer: Option<&'a Path>,
    /// `(ef_entry, ef_search)` pairs to search each size's graph with after the timed run, so
    /// that efforts are compared on one graph built once.
    pub sweep: Vec<(usize, usize)>,
    /// A folder that keeps each size's embedded corpus between runs, if any.
    pub vectors: Option<&'a Path>,
    /// The corpus and synthetic questions.
    pub vocab: Vocab,
    /// Queries timed per size.
    pub queries: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The variable naming the Python that has the peer's packages.
pub const PEER_PYTHON: &str = "LORE_PEER_PYTHON";

/// Questions the peer is given (its script times each once).
const PEER_QUERIES: usize = 300;

/// The largest size the peer runs at: its input is JSON, about 3 kB a lesson.
const PEER_MAX: usize = 200_000;

/// Recall latency per stage and HNSW recall@10 against exact search, at each of `sizes`.
///
/// # Errors
/// An embedder failure, an unreadable `data` file, or a failed write to `out`.
pub fn run_bench(
    embedder: &Arc<dyn Embedder>,
    sizes: Vec<usize>,
    data: Option<&Path>,
    bench: Bench<'_>,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    let params = bench.params;
    anyhow::ensure!(
        data.is_none() || bench.vocab == Vocab::Locomo,
        "--data asks LoCoMo's questions of LoCoMo-like turns; it goes with --vocab locomo"
    );
    anyhow::ensure!(bench.queries > 0, "time at least 1 query");
    let synthetic: Vec<String> = (0..250).map(|i| bench.vocab.question(i)).collect();
    let real = data.map(crate::locomo::question_texts).transpose()?;
    anyhow::ensure!(
        real.as_ref().is_none_or(|q| !q.is_empty()),
        "no questions to ask"
    );
    let questions = Questions {
        real: real.as_deref(),
        synthetic: &synthetic,
    };
    let from = if real.is_some() {
        "locomo"
    } else {
        "synthetic"
    };
    anyhow::ensure!(
        !sizes.is_empty() && sizes.iter().all(|&s| s > 0),
        "give sizes of at least 1 lesson"
    );
    anyhow::ensure!(
        params.m >= 2 && params.ef_construction >= 1 && params.ef_search >= 1,
        "HNSW needs m of at least 2 and beams of at least 1"
    );
    let mut reports = Vec::new();
    let mut embedder_name = String::new();
    for size in sizes {
        let (report, name) = measure(embedder, size, questions, &bench)?;
        embedder_name = name;
        reports.push(report);
    }
    let report = Report {
        embedder: embedder_name,
        hnsw: params,
        vocab: bench.vocab,
        questions: from,
        sizes: reports,
    };
    if json {
        return out.json(&report);
    }
    out.line(format!(
        "recall latency, {:?} corpus, {} questions, dense: {}",
        report.vocab, report.questions, report.embedder
    ))?;
    for s in &report.sizes {
        let st = &s.stages_p50_ms;
        out.line(format!(
            "{:>8} lessons: p50 {:.2} ms, p99 {:.2} ms, p999 {:.2} ms ({} queries{}; medians: \
             embed {:.3} (p99 {:.3}), bm25 {:.2}, dense {:.2}, fuse..pack {:.2} ms; p99s: {}; \
             corpus embedded in {:.1} s{}, \
             index built in {:.1} s{}, vector index {:.0} and BM25 {:.0} bytes a lesson{}); \
             {} recall@10 vs exact {}{}",
            s.lessons,
            s.p50_ms,
            s.p99_ms,
            s.p999_ms,
            s.queries,
            s.load_average
                .map_or_else(String::new, |[a, b]| format!(" at load {a:.1}..{b:.1}")),
            st.embed,
            s.embed_p99_ms,
            st.sparse,
            st.dense,
            st.pipeline,
            s.stages_p99_ms.describe(),
            s.embed_s,
            if s.corpus_kept > 0 {
                format!(" ({} of its vectors read from --vectors)", s.corpus_kept)
            } else {
                String::new()
            },
            s.build_s,
            s.build_cpu_s
                .map_or_else(String::new, |cpu| format!(" ({cpu:.1} s of CPU)")),
            s.vector_bytes_per_lesson,
            s.sparse_bytes_per_lesson,
            match (s.index_rss_bytes_per_lesson, s.rss_bytes_per_lesson) {
                (Some(index), Some(all)) => format!(
                    "; RSS {index:.0} bytes a lesson added by the indexes, {all:.0} for the \
                     process with corpus texts and vectors"
                ),
                _ => String::new(),
            },
            if s.ann { "HNSW" } else { "exact scan" },
            s.ann_recall_at_10.describe(),
            match &s.peer {
                Some(peer) => format!(
                    "; LanceDB hybrid p50 / Lore p50 {:.1}",
                    peer.hybrid_p50_ratio
                ),
                None => String::new(),
            },
        ))?;
        for e in &s.sweep {
            out.line(format!(
                "{:>8} lessons, ef_entry {} ef_search {}: recall@10 vs exact {}, \
                 dense p50 {:.3} ms{}",
                s.lessons,
                e.ef_entry,
                e.ef_search,
                e.ann_recall_at_10.describe(),
                e.dense_p50_ms,
                e.load_average
                    .map_or_else(String::new, |[a, b]| format!(" at load {a:.1}..{b:.1}")),
            ))?;
        }
    }
    Ok(())
}

/// Texts per `embed_batch` call while embedding the corpus.
const EMBED_BATCH: usize = 256;

/// The questions a run asks: the timed ones are the real ones when given.
#[derive(Clone, Copy)]
struct Questions<'a> {
    real: Option<&'a [String]>,
    synthetic: &'a [String],
}

impl Questions<'_> {
    fn timed(&self) -> &[String] {
        self.real.unwrap_or(self.synthetic)
    }
}

fn measure(
    configured: &Arc<dyn Embedder>,
    size: usize,
    questions: Questions<'_>,
    bench: &Bench<'_>,
) -> Result<(SizeReport, String)> {
    let params = bench.params;
    let texts: Vec<String> = (0..size).map(|i| bench.vocab.lesson(i)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embedder = configured.fit(&refs).unwrap_or_else(|| configured.clone());
    let id = embedder.id();
    let start = Instant::now();
    let embedded = crate::corpus::embed(&*embedder, &refs, EMBED_BATCH, bench.vectors, |done| {
        // A model takes minutes over a large corpus: say how far it got, on stderr.
        if size >= 10 * EMBED_BATCH && done.is_multiple_of(40 * EMBED_BATCH) {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "embedded {done}/{size} lessons");
        }
    })?;
    let (vectors, corpus_kept) = (embedded.vectors, embedded.from_disk);
    let embed_s = start.elapsed().as_secs_f64();
    let scratch = match (bench.peer_data, bench.peer) {
        (None, Some(_)) if size <= PEER_MAX => Some(tempfile::tempdir()?),
        _ => None,
    };
    let peer_dir = bench
        .peer_data
        .map(|dir| dir.join(size.to_string()))
        .or_else(|| scratch.as_ref().map(|t| t.path().to_path_buf()));
    if let Some(dir) = &peer_dir
        && size <= PEER_MAX
    {
        write_peer_data(dir, &texts, &vectors, questions.timed(), &*embedder)?;
    }
    let start = Instant::now();
    let cpu_start = cpu_seconds();
    let rss_before = rss_bytes();
    let mut sparse = SparseIndex::new();
    let mut dense = VectorIndex::with_params(id.dim, params);
    for text in &texts {
        sparse.add(text);
    }
    dense.add_many(&vectors);
    let rss_after = rss_bytes();
    drop(vectors);
    let build_s = start.elapsed().as_secs_f64();
    let build_cpu_s = cpu_seconds().zip(cpu_start).map(|(end, start)| end - start);
    let config = RecallConfig::default();
    let pool = config.limit * config.pool_multiplier;
    let all = |_: u32| true;
    let hits = |found: Vec<(u32, f64)>| -> Vec<Hit> {
        found
            .into_iter()
            .map(|(slot, score)| Hit {
                id: format!("L{slot}"),
                score,
            })
            .collect()
    };
    let mut total = Vec::with_capacity(bench.queries);
    let mut stages: [Vec<f64>; 4] = Default::default();
    let load_before = load_average();
    for q in questions.timed().iter().cycle().take(bench.queries) {
        let t0 = Instant::now();
        let query = embedder.embed(q)?;
        let t1 = Instant::now();
        let sparse_hits = hits(sparse.search(q, pool, all));
        let t2 = Instant::now();
        let dense_hits = hits(dense.search(&query, pool, size, all));
        let t3 = Instant::now();
        let lists = [
            RankedList {
                source: Source::Sparse,
                hits: sparse_hits,
                scale: lore_recall::Scale::MinMax,
            },
            RankedList {
                source: Source::Dense,
                hits: dense_hits,
                scale: lore_recall::Scale::MinMax,
            },
        ];
        // As the Engine does: entries for the candidates only.
        let mut entries = Entries::default();
        for hit in lists.iter().flat_map(|l| &l.hits) {
            if !entries.contains_key(&hit.id) {
                let slot: usize = hit.id[1..].parse()?;
                let vector = dense.vector(slot as u32);
                entries.insert(
                    hit.id.clone(),
                    turn_entry(&hit.id, texts[slot].as_str(), vector),
                );
            }
        }
        let out = run(
            &lists,
            &entries,
            QueryShape::default(),
            &config,
            &[],
            &ApproxTokenizer,
        );
        let t4 = Instant::now();
        std::hint::black_box(out);
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        total.push(ms(t0, t4));
        for (s, (a, b)) in stages
            .iter_mut()
            .zip([(t0, t1), (t1, t2), (t2, t3), (t3, t4)])
        {
            s.push(ms(a, b));
        }
    }
    let load_average = load_before.zip(load_average()).map(|(a, b)| [a, b]);
    for s in stages.iter_mut().chain([&mut total]) {
        s.sort_by(f64::total_cmp);
    }
    let embed_p99_ms = percentile(&stages[0], 0.99);
    let stage = |q: f64| {
        let [embed, sparse, dense, pipeline] = stages.each_ref().map(|s| percentile(s, q));
        Stages {
            embed,
            sparse,
            dense,
            pipeline,
        }
    };
    let recall = |set: &[String]| ann_recall(&*embedder, &dense, set);
    let ann_recall_at_10 = AnnRecall::of(
        questions.real.map(recall).transpose()?,
        recall(questions.synthetic)?,
    );
    let sweep = sweep(&*embedder, &mut dense, questions, bench)?;
    let p50_ms = percentile(&total, 0.5);
    let peer = match (bench.peer, &peer_dir) {
        (Some(script), Some(dir)) if size <= PEER_MAX => Some(run_peer(script, dir, p50_ms)?),
        _ => None,
    };
    let report = SizeReport {
        lessons: size,
        queries: total.len(),
        p50_ms,
        p99_ms: percentile(&total, 0.99),
        p999_ms: percentile(&total, 0.999),
        stages_p50_ms: stage(0.5),
        stages_p99_ms: stage(0.99),
        stages_p999_ms: stage(0.999),
        embed_p99_ms,
        load_average,
        embed_s,
        corpus_kept,
        build_s,
        build_cpu_s,
        ann_recall_at_10,
        ann: dense.graph().is_some(),
        vector_bytes_per_lesson: dense.heap_bytes() as f64 / size as f64,
        sparse_bytes_per_lesson: sparse.heap_bytes() as f64 / size as f64,
        index_rss_bytes_per_lesson: rss_before
            .zip(rss_after)
            .map(|(before, after)| after.saturating_sub(before) as f64 / size as f64),
        rss_bytes_per_lesson: rss_after.map(|after| after as f64 / size as f64),
        peer,
        sweep,
    };
    Ok((report, id.to_string()))
}

/// Searches `dense`'s graph with each of `efforts` as they are, then puts its own back.
fn sweep(
    embedder: &dyn Embedder,
    dense: &mut VectorIndex,
    questions: Questions<'_>,
    bench: &Bench<'_>,
) -> Result<Vec<Effort>> {
    let (efforts, queries) = (&bench.sweep, bench.queries);
    if efforts.is_empty() {
        return Ok(Vec::new());
    }
    let timed: Vec<Vec<f32>> = questions
        .timed()
        .iter()
        .take(queries)
        .map(|q| embedder.embed(q))
        .collect::<Result<_, _>>()?;
    // The exact top 10 once: at a million vectors each is a scan of a gigabyte.
    type Exact = (Vec<f32>, Vec<(u32, f64)>);
    let exact = |set: &[String]| -> Result<Vec<Exact>> {
        set.iter()
            .take(RECALL_QUESTIONS)
            .map(|q| {
                let v = embedder.embed(q)?;
                let top = dense.exact(&v, 10, |_| true);
                Ok((v, top))
            })
            .collect()
    };
    let real = questions.real.map(exact).transpose()?;
    let synthetic = exact(questions.synthetic)?;
    let mut rows = Vec::with_capacity(efforts.len());
    for &(ef_entry, ef_search) in efforts.iter() {
        dense.set_search_effort(Some((ef_entry, ef_search)));
        let load_before = load_average();
        let config = RecallConfig::default();
        let pool = config.limit * config.pool_multiplier;
        let mut ms: Vec<f64> = timed
            .iter()
            .cycle()
            .take(queries)
            .map(|query| {
                let t = Instant::now();
                std::hint::black_box(dense.search(query, pool, dense.len(), |_| true));
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        let load_average = load_before.zip(load_average()).map(|(a, b)| [a, b]);
        let recall = |set: &[Exact]| {
            let (mut by_id, mut with_ties) = (0, 0);
            for (v, top) in set {
                let (a, b) = found(top, &dense.search(v, 10, dense.len(), |_| true));
                by_id += a;
                with_ties += b;
            }
            let wanted = set.iter().map(|(_, top)| top.len()).sum::<usize>().max(1) as f64;
            (by_id as f64 / wanted, with_ties as f64 / wanted)
        };
        rows.push(Effort {
            ef_entry,
            ef_search,
            ann_recall_at_10: AnnRecall::of(real.as_deref().map(recall), recall(&synthetic)),
            dense_p50_ms: {
                ms.sort_by(f64::total_cmp);
                percentile(&ms, 0.5)
            },
            load_average,
        });
    }
    dense.set_search_effort(None);
    Ok(rows)
}

/// Questions whose ANN recall is measured per set.
const RECALL_QUESTIONS: usize = 300;

/// The share of the exact top 10 that the index's search returns, over up to
/// [`RECALL_QUESTIONS`] of `questions`, all vectors eligible.
fn ann_recall(
    embedder: &dyn Embedder,
    dense: &VectorIndex,
    questions: &[String],
) -> Result<(f64, f64)> {
    let (mut by_id, mut with_ties, mut wanted) = (0usize, 0usize, 0usize);
    for q in questions.iter().take(RECALL_QUESTIONS) {
        let query = embedder.embed(q)?;
        let exact = dense.exact(&query, 10, |_| true);
        let (a, b) = found(&exact, &dense.search(&query, 10, dense.len(), |_| true));
        by_id += a;
        with_ties += b;
        wanted += exact.len();
    }
    let wanted = wanted.max(1) as f64;
    Ok((by_id as f64 / wanted, with_ties as f64 / wanted))
}

/// Runs the peer's script on the data in `dir` and reads the JSON it prints.
fn run_peer(script: &Path, dir: &Path, lore_p50_ms: f64) -> Result<Peer> {
    use anyhow::Context;
    let python = std::env::var_os(PEER_PYTHON).unwrap_or_else(|| "python3".into());
    let db = tempfile::tempdir()?;
    let output = std::process::Command::new(&python)
        .arg(script)
        .arg("--corpus")
        .arg(dir.join("corpus.jsonl"))
        .arg("--queries")
        .arg(dir.join("queries.jsonl"))
        .arg("--db")
        .arg(db.path())
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| {
            format!(
                "cannot run {} {}",
                python.to_string_lossy(),
                script.display()
            )
        })?;
    anyhow::ensure!(
        output.status.success(),
        "the peer script {} failed ({}); set {PEER_PYTHON} to a Python with its packages",
        script.display(),
        output.status
    );
    let figures: serde_json::Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("the peer script {} printed no JSON", script.display()))?;
    let hybrid = figures["hybrid"]["p50_ms"]
        .as_f64()
        .context("the peer's figures have no hybrid p50")?;
    Ok(Peer {
        hybrid_p50_ratio: hybrid / lore_p50_ms,
        figures,
    })
}

/// The corpus (`{"id", "text", "vector"}` a line) and the questions (`{"text", "vector"}`) as
/// the peer script reads them, with the very vectors this run searches.
fn write_peer_data(
    dir: &Path,
    texts: &[String],
    vectors: &[Vec<f32>],
    questions: &[String],
    embedder: &dyn Embedder,
) -> Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, lines: &mut dyn Iterator<Item = Result<serde_json::Value>>| {
        let path = dir.join(name);
        let file = std::fs::File::create(&path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        for line in lines {
            serde_json::to_writer(&mut out, &line?)?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        anyhow::Ok(())
    };
    write(
        "corpus.jsonl",
        &mut texts
            .iter()
            .zip(vectors)
            .enumerate()
            .map(|(id, (text, vector))| {
                Ok(serde_json::json!({"id": id, "text": text, "vector": vector}))
            }),
    )?;
    write(
        "queries.jsonl",
        &mut questions
            .iter()
            .take(PEER_QUERIES)
            .map(|q| Ok(serde_json::json!({"text": q, "vector": embedder.embed(q)?}))),
    )
}

/// The 1-minute load average, from Linux's `/proc/loadavg`.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// The process's resident memory in bytes, from Linux's `/proc/self/status`.
fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// The process's resident anonymous memory (its heap, mostly) and resident file pages (what
/// it maps, such as a saved index), in bytes.
pub(crate) fn resident() -> Option<(u64, u64)> {
    status_bytes("RssAnon:").zip(status_bytes("RssFile:"))
}

/// A field of Linux's `/proc/self/status` given in kB, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The process's user and system CPU seconds so far, from Linux's `/proc/self/stat` (in
/// clock ticks, 100 a second on every Linux this runs on).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let user: f64 = fields.next()?.parse().ok()?;
    let system: f64 = fields.next()?.parse().ok()?;
    Some((user + system) / 100.0)
}

/// The `q` quantile of `sorted` (ascending, not empty) by nearest rank: the smallest value
/// that a share `q` of the values do not exceed. Always one of the values, so a p999 of fewer
/// than 1,000 values is the largest, never an interpolation nobody measured.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    // The tolerance keeps 0.99 x 1000 at rank 990 where the product rounds up.
    let rank = (q * sorted.len() as f64 - 1e-9).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::{found, percentile};

    #[test]
    fn a_percentile_is_the_nearest_ranked_value() {
        let mut values: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        values.sort_by(f64::total_cmp);
        assert_eq!(percentile(&values, 0.5), 500.0);
        assert_eq!(percentile(&values, 0.99), 990.0);
        assert_eq!(percentile(&values, 0.999), 999.0);
        assert_eq!(percentile(&values, 1.0), 1000.0);
        // Too few values for the rank: the slowest, not something between two.
        let few: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&few, 0.999), 100.0);
        assert_eq!(percentile(&few, 0.99), 99.0);
        assert_eq!(percentile(&[7.5], 0.5), 7.5);
        assert_eq!(percentile(&few, 0.0), 1.0);
    }

    #[test]
    fn a_lesson_as_similar_as_the_tenth_counts_only_with_ties() {
        let exact: Vec<(u32, f64)> = (0..10).map(|i| (i, 0.9 - 0.01 * f64::from(i))).collect();
        // Nine of the exact ten, and another lesson tied with the tenth.
        let mut approx = exact[..9].to_vec();
        approx.push((42, exact[9].1));
        assert_eq!(found(&exact, &approx), (9, 10));
        // A lesson clearly below the tenth is a miss either way.
        approx[9] = (42, exact[9].1 - 0.01);
        assert_eq!(found(&exact, &approx), (9, 9));
        assert_eq!(found(&exact, &exact), (10, 10));
    }
}
