//! An updatable vector index over slots: exact search while small, HNSW once large.
//!
//! Vectors are unit length, so similarity is the dot product. Below [`HNSW_FROM`] live vectors
//! an exact scan costs less than a graph walk and is always right; from there on a
//! hierarchical navigable small-world graph ([`super::hnsw::Hnsw`]) answers, with its recall
//! against the exact scan measured by `lore bench recall`. The graph is walked on int8 codes of
//! the vectors ([`super::quant`]), and the beam it ends with is ranked again with the float
//! vectors, so what a search returns, and its scores, are exact; only which candidates the
//! beam held is approximate. A removed vector stays in the
//! graph as a waypoint (removing nodes from an HNSW graph degrades it) but is never returned.
//! A search restricted to few slots (a narrow scope) scans those exactly, since a graph walk
//! would find too few of them.

use std::collections::BinaryHeap;
use std::sync::Arc;

use super::hnsw::{Hnsw, HnswParams};
use super::mapped::{MappedFile, Slab};
use super::near::{Near, dot};
use super::quant::{Codes, QueryCode};

/// Live vectors from which the graph is used.
pub const HNSW_FROM: usize = 4096;

/// Live vectors up to which a search uses its parameters' beams as they are.
pub const EFFORT_FROM: usize = 100_000;

/// Beyond [`EFFORT_FROM`], the beams grow as `(live / EFFORT_FROM) ^ EFFORT_GROWTH`: two and a
/// half times as wide at a million (log10 2.5). With the graph at a million lessons
/// (docs/BENCHMARKS.md), the 100k beams (128 / 192) found 0.943 of the exact top 10 for
/// LoCoMo's first 300 real questions; twice those found 0.990 for them but only 0.982 and
/// 0.983 for the next two sets of 300, and two and a half times 0.992 and 0.993, for about
/// 0.15 ms more.
const EFFORT_GROWTH: f64 = 0.397_940_008_672_037_6;

/// A graph search reads the float vectors of this many candidates per result asked for, the
/// best by their codes, and at least [`REFINE_MIN`]: a code's similarity is within about a
/// percent of the float one, and at a million lessons the exact top 10 were always among the
/// first 40 by code, where reading every one of the beam's hundreds of candidates (a kilobyte
/// each at 256 components) cost as much as the walk.
const REFINE_PER_RESULT: usize = 4;
const REFINE_MIN: usize = 64;

/// A restricted search scans exactly when fewer than this share of the live vectors qualify.
const EXACT_SHARE: f64 = 0.1;

/// The beams (on layer 1 and on layer 0) for a graph of `live` vectors built with `params`.
fn grown(params: HnswParams, live: usize) -> (usize, usize) {
    let grow = (live as f64 / EFFORT_FROM as f64)
        .max(1.0)
        .powf(EFFORT_GROWTH);
    let beam = |ef: usize| (ef as f64 * grow).round() as usize;
    (beam(params.ef_entry), beam(params.ef_search))
}

/// What a [`VectorIndex`] holds, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VectorMemory {
    /// Float vectors (and the live flags) in memory.
    pub vectors: usize,
    /// Int8 codes in memory.
    pub codes: usize,
    /// The graph's links.
    pub graph: usize,
    /// Vectors and codes read in place from a mapped file: the file's pages, which the
    /// kernel shares and can drop, not the process's memory.
    pub mapped: usize,
}

/// Every slot's float vectors and int8 codes, each as the part read from a mapped file and
/// the part in memory (see [`VectorIndex::rows`]).
#[derive(Clone, Copy, Debug)]
pub struct Rows<'a> {
    /// Slot-major float vectors.
    pub vectors: (&'a [f32], &'a [f32]),
    /// Each slot's code and then its scale's four little-endian bytes.
    pub codes: (&'a [i8], &'a [i8]),
    /// Whether each slot is live.
    pub live: &'a [bool],
}

/// Vectors by slot, searched exactly or through an HNSW graph.
#[derive(Debug)]
pub struct VectorIndex {
    dim: usize,
    /// The float vectors, read in place from the saved index's file for the slots it holds:
    /// only the few candidates a search ranks again are read.
    data: Slab<f32>,
    /// The vectors' int8 codes, which the graph is built and walked on.
    codes: Codes,
    live: Vec<bool>,
    live_count: usize,
    graph: Option<Hnsw>,
    params: HnswParams,
    /// Beams that replace the ones grown from `params` (a benchmark's sweep).
    effort: Option<(usize, usize)>,
}

impl VectorIndex {
    /// An empty index of `dim`-component vectors.
    pub fn new(dim: usize) -> Self {
        Self::with_params(dim, HnswParams::default())
    }

    /// An empty index whose graph, once built, uses `params`.
    pub fn with_params(dim: usize, params: HnswParams) -> Self {
        Self {
            dim,
            data: Slab::default(),
            codes: Codes::of(dim, &[]),
            live: Vec::new(),
            live_count: 0,
            graph: None,
            params,
            effort: None,
        }
    }

    /// The vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Live vectors.
    pub fn len(&self) -> usize {
        self.live_count
    }

    /// Whether no vector is live.
    pub fn is_empty(&self) -> bool {
        self.live_count == 0
    }

    /// Slots ever used.
    pub fn slots(&self) -> usize {
        self.live.len()
    }

    /// The vector in `slot`.
    pub fn vector(&self, slot: u32) -> &[f32] {
        self.data.range(slot as usize * self.dim, self.dim)
    }

    /// Adds a vector of [`VectorIndex::dim`] components and returns its slot.
    ///
    /// # Panics
    /// When the length is wrong: callers check the embedder's identity first.
    pub fn add(&mut self, vector: &[f32]) -> u32 {
        assert_eq!(vector.len(), self.dim, "a vector of the index's dimension");
        let slot = u32::try_from(self.live.len()).expect("fewer than 2^32 vectors");
        self.push(vector);
        if let Some(graph) = &mut self.graph {
            graph.insert(&self.codes, slot);
        } else if self.live_count >= HNSW_FROM {
            self.build_graph();
        }
        slot
    }

    /// Adds `vectors` (each of [`VectorIndex::dim`] components) and returns the first one's
    /// slot; the rest follow it. A graph takes them in parallel batches, which is how a build
    /// or a large import should add lessons.
    ///
    /// # Panics
    /// When a length is wrong, as [`VectorIndex::add`].
    pub fn add_many<V: AsRef<[f32]>>(&mut self, vectors: &[V]) -> u32 {
        let first = u32::try_from(self.live.len()).expect("fewer than 2^32 vectors");
        for v in vectors {
            assert_eq!(
                v.as_ref().len(),
                self.dim,
                "a vector of the index's dimension"
            );
            self.push(v.as_ref());
        }
        if let Some(graph) = &mut self.graph {
            graph.extend(&self.codes, self.live.len());
        } else if self.live_count >= HNSW_FROM {
            self.build_graph();
        }
        first
    }

    fn push(&mut self, vector: &[f32]) {
        self.data.extend_from_slice(vector);
        self.codes.push(vector);
        self.live.push(true);
        self.live_count += 1;
    }

    /// Bytes held in memory for the vectors, their codes and the graph, for the memory a
    /// lesson costs (not what is read in place from a mapped file).
    pub fn heap_bytes(&self) -> usize {
        let memory = self.memory();
        memory.vectors + memory.codes + memory.graph
    }

    /// Bytes held, part by part.
    pub fn memory(&self) -> VectorMemory {
        VectorMemory {
            vectors: self.data.heap_bytes() + self.live.capacity(),
            codes: self.codes.heap_bytes(),
            graph: self.graph.as_ref().map_or(0, Hnsw::heap_bytes),
            mapped: self.data.mapped_bytes() + self.codes.mapped_bytes(),
        }
    }

    /// Every slot's float vectors (slot-major) and int8 codes (each slot's code and then its
    /// scale's four bytes), each as the part read from a mapped file and the part in memory:
    /// what a saved index holds to be used in place.
    pub fn rows(&self) -> Rows<'_> {
        Rows {
            vectors: self.data.parts(),
            codes: self.codes.parts(),
            live: &self.live,
        }
    }

    /// Reads the first `slots` slots' vectors and codes in place from `file`, at the byte
    /// offsets given (laid out as [`VectorIndex::rows`] gives them), and frees the memory that
    /// held them: after a save, the file just written holds the same values. `false`,
    /// changing nothing, when they do not fit this index.
    pub fn adopt(
        &mut self,
        file: &Arc<MappedFile>,
        slots: usize,
        (codes_at, vectors_at): (usize, usize),
    ) -> bool {
        if slots > self.slots() {
            return false;
        }
        let Some(codes) = Slab::mapped(file.clone(), codes_at, slots * (self.dim + 4)) else {
            return false;
        };
        let Some(data) = Slab::mapped(file.clone(), vectors_at, slots * self.dim) else {
            return false;
        };
        // Each part holds the same values either way, so one taken without the other is
        // still right.
        let codes = self.codes.adopt(codes);
        self.data.adopt(data) && codes
    }

    /// An index over `data` (slot-major vectors of `dim` components) whose slots are live
    /// where `live` says, searched through `graph` when given: a graph built over exactly these
    /// slots, such as one read back from disk. Without one, the graph is built as
    /// [`VectorIndex::add`] would have. `None` when the sizes disagree.
    pub fn restore(
        dim: usize,
        params: HnswParams,
        data: Vec<f32>,
        live: Vec<bool>,
        graph: Option<Hnsw>,
    ) -> Option<Self> {
        if data.len() != live.len() * dim || graph.as_ref().is_some_and(|g| g.len() != live.len()) {
            return None;
        }
        let codes = Codes::of(dim, &data);
        Some(Self::assemble(
            dim,
            params,
            (Slab::from_vec(data), codes),
            live,
            graph,
        ))
    }

    /// [`VectorIndex::restore`] over vectors and codes read in place from `file`, at the byte
    /// offsets given, one row per entry of `live` (laid out as [`VectorIndex::rows`] gives
    /// them). `None` when they do not fit the file or the graph.
    pub fn restore_mapped(
        dim: usize,
        params: HnswParams,
        file: &Arc<MappedFile>,
        (codes_at, vectors_at): (usize, usize),
        live: Vec<bool>,
        graph: Option<Hnsw>,
    ) -> Option<Self> {
        let slots = live.len();
        if graph.as_ref().is_some_and(|g| g.len() != slots) {
            return None;
        }
        let codes = Codes::mapped(
            dim,
            Slab::mapped(file.clone(), codes_at, slots.checked_mul(dim + 4)?)?,
        )?;
        let data = Slab::mapped(file.clone(), vectors_at, slots.checked_mul(dim)?)?;
        Some(Self::assemble(dim, params, (data, codes), live, graph))
    }

    fn assemble(
        dim: usize,
        params: HnswParams,
        (data, codes): (Slab<f32>, Codes),
        live: Vec<bool>,
        graph: Option<Hnsw>,
    ) -> Self {
        let live_count = live.iter().filter(|l| **l).count();
        let mut index = Self {
            dim,
            data,
            codes,
            live,
            live_count,
            graph,
            params,
            effort: None,
        };
        if index.graph.is_none() && live_count >= HNSW_FROM {
            index.build_graph();
        }
        index
    }

    /// The graph, once the index has one.
    pub fn graph(&self) -> Option<&Hnsw> {
        self.graph.as_ref()
    }

    /// The parameters a graph of this index is built with.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// Sets the search's beams (on layer 1 and on layer 0) as they are, whatever the size,
    /// or back to the ones grown from the parameters with `None`; the graph does not depend
    /// on them, so that one graph can be searched with several efforts.
    pub fn set_search_effort(&mut self, effort: Option<(usize, usize)>) {
        self.effort = effort;
    }

    /// The beams (on layer 1 and on layer 0) a search uses now: the parameters' up to
    /// [`EFFORT_FROM`] live vectors, growing with the graph beyond.
    pub fn search_effort(&self) -> (usize, usize) {
        self.effort
            .unwrap_or_else(|| grown(self.params, self.live_count))
    }

    /// Builds the graph over every slot now, whatever the size (the benchmark's choice).
    pub fn build_graph(&mut self) {
        let mut graph = Hnsw::new(self.params);
        graph.extend(&self.codes, self.live.len());
        self.graph = Some(graph);
    }

    /// Removes `slot` from results; unknown or removed slots are ignored.
    pub fn remove(&mut self, slot: u32) {
        if let Some(live) = self.live.get_mut(slot as usize)
            && *live
        {
            *live = false;
            self.live_count -= 1;
        }
    }

    /// The `k` live vectors most similar to `query` among the slots `allow` accepts, best
    /// first as `(slot, similarity)`. `allowed` is how many live slots `allow` accepts (it
    /// decides between the graph and an exact scan); a zero query finds nothing.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        allowed: usize,
        allow: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        if k == 0 || query.iter().all(|x| *x == 0.0) {
            return Vec::new();
        }
        let narrow = (allowed as f64) < EXACT_SHARE * self.live_count as f64;
        match &self.graph {
            Some(graph) if !narrow => {
                let ok = |slot: u32| self.live[slot as usize] && allow(slot);
                // A filter that rejects some slots needs a wider beam to still find k.
                let share = (allowed as f64 / self.live_count.max(1) as f64).max(EXACT_SHARE);
                let (ef_entry, ef_search) = self.search_effort();
                let ef = ((ef_search.max(k) as f64) / share).ceil() as usize;
                let code = QueryCode::of(query);
                let efs = (ef_entry, ef);
                let found = graph.search(&self.codes, code.code(), efs, ok);
                self.refine(query, found, k)
            }
            _ => self.exact(query, k, allow),
        }
    }

    /// The best `k` of `candidates` (best first by their codes) by their float vectors'
    /// similarity to `query`: the walk ranked them by codes, so its order near the cut can be
    /// wrong by a code's error, though not by much, so only the first few `k` are read again.
    fn refine(&self, query: &[f32], mut candidates: Vec<u32>, k: usize) -> Vec<(u32, f64)> {
        candidates.truncate(k.saturating_mul(REFINE_PER_RESULT).max(REFINE_MIN));
        // A float vector is several cache lines far from the last: read them all first, so
        // that their misses overlap instead of each product waiting on its own.
        let mut touched = 0.0f32;
        for &slot in &candidates {
            for x in self.vector(slot).iter().step_by(16) {
                touched += x;
            }
        }
        std::hint::black_box(touched);
        let mut scored: Vec<Near> = candidates
            .into_iter()
            .map(|slot| Near {
                sim: f64::from(dot(query, self.vector(slot))),
                slot,
            })
            .collect();
        scored.sort();
        scored.truncate(k);
        scored.into_iter().map(|n| (n.slot, n.sim)).collect()
    }

    /// The exact top `k` by scanning every live slot `allow` accepts.
    pub fn exact(&self, query: &[f32], k: usize, allow: impl Fn(u32) -> bool) -> Vec<(u32, f64)> {
        let mut heap: BinaryHeap<Near> = BinaryHeap::with_capacity(k + 1);
        let (mapped, owned) = self.data.parts();
        let rows = mapped
            .chunks_exact(self.dim.max(1))
            .chain(owned.chunks_exact(self.dim.max(1)));
        for (slot, v) in rows.enumerate() {
            let slot = slot as u32;
            if !self.live[slot as usize] || !allow(slot) {
                continue;
            }
            let sim = f64::from(dot(query, v));
            if heap.len() < k {
                heap.push(Near { sim, slot });
            } else if heap.peek().is_some_and(|w| sim > w.sim) {
                heap.pop();
                heap.push(Near { sim, slot });
            }
        }
        heap.into_sorted_vec()
            .into_iter()
            .map(|n| (n.slot, n.sim))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinEmbedder, Embedder};

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut z = seed;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                z = z
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((z >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        super::super::normalize(&mut v);
        v
    }

    #[test]
    fn exact_search_ranks_by_dot_product_and_skips_removed_and_filtered() {
        let mut index = VectorIndex::new(16);
        let vs: Vec<Vec<f32>> = (0..50).map(|i| unit(i, 16)).collect();
        for v in &vs {
            index.add(v);
        }
        let hits = index.search(&vs[7], 3, 50, |_| true);
        assert_eq!(hits[0].0, 7);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        index.remove(7);
        assert!(
            index
                .search(&vs[7], 50, 49, |_| true)
                .iter()
                .all(|h| h.0 != 7)
        );
        let odd = index.search(&vs[7], 50, 25, |s| s % 2 == 1);
        assert!(
            odd.iter().all(|h| h.0 % 2 == 1) && odd.len() == 24,
            "{odd:?}"
        );
        assert!(index.search(&[0.0; 16], 3, 49, |_| true).is_empty());
        assert_eq!(dot(&vs[3], &vs[4]), dot(&vs[4], &vs[3]));
    }

    #[test]
    fn search_effort_grows_beyond_effort_from_and_a_set_effort_replaces_it() {
        let p = HnswParams::default();
        let base = (p.ef_entry, p.ef_search);
        assert_eq!(grown(p, 1), base);
        assert_eq!(grown(p, EFFORT_FROM), base);
        let (entry, search) = grown(p, 10 * EFFORT_FROM);
        assert_eq!((entry, search), (base.0 * 5 / 2, base.1 * 5 / 2));
        let half = grown(p, 5 * EFFORT_FROM);
        assert!(half.1 > base.1 && half.1 < search, "{half:?}");
        let mut index = VectorIndex::new(16);
        for i in 0..10 {
            index.add(&unit(i, 16));
        }
        assert_eq!(index.search_effort(), base);
        index.set_search_effort(Some((3, 7)));
        assert_eq!(index.search_effort(), (3, 7));
        index.set_search_effort(None);
        assert_eq!(index.search_effort(), base);
    }

    /// A LoCoMo-like corpus (`(date) speaker: sentence`, from small word lists) and questions
    /// phrased as people ask them, with words the corpus never uses: the questions lie far
    /// from every turn, as LoCoMo's real ones do, which is where a greedy descent fails.
    fn conversation_like(n: usize) -> (Vec<String>, Vec<String>) {
        const WHO: [&str; 8] = [
            "Caroline", "Melanie", "Jon", "Gina", "Maria", "Nate", "Audrey", "Evan",
        ];
        const DID: [&str; 10] = [
            "went hiking near",
            "painted a mural of",
            "read a book about",
            "adopted a puppy from",
            "volunteered at",
            "planned a trip to",
            "took photos of",
            "wrote a poem about",
            "bought tickets for",
            "talked for hours about",
        ];
        const WHAT: [&str; 14] = [
            "the lake",
            "the mountains",
            "sunflowers",
            "the city museum",
            "a jazz concert",
            "the animal shelter",
            "the beach at sunset",
            "the community garden",
            "the LGBTQ center",
            "the farmers market",
            "a yoga retreat",
            "the pride parade",
            "the support group",
            "the dance studio",
        ];
        const WITH: [&str; 6] = [
            "my sister",
            "the kids",
            "our dog",
            "my boss",
            "a friend",
            "the team",
        ];
        let pick = |i: usize, salt: usize, len: usize| {
            (i.wrapping_mul(2654435761).rotate_left(salt as u32 * 7) ^ (i * salt)) % len
        };
        let corpus = (0..n)
            .map(|i| {
                format!(
                    "({} May 2023) {}: {} {} {} (note {i})",
                    1 + i / 50 % 28,
                    WHO[pick(i, 1, WHO.len())],
                    WITH[pick(i, 2, WITH.len())],
                    DID[pick(i, 3, DID.len())],
                    WHAT[pick(i, 4, WHAT.len())],
                )
            })
            .collect();
        let asks = [
            "When did {} go to {}?",
            "What did {} think about {} last summer?",
            "Why does {} care so much about {}?",
            "How often has {} been to {}?",
        ];
        let questions = (0..48)
            .map(|q| {
                asks[q % asks.len()]
                    .replacen("{}", WHO[q % WHO.len()], 1)
                    .replacen("{}", WHAT[(q * 5) % WHAT.len()], 1)
            })
            .collect();
        (corpus, questions)
    }

    /// Recall@10 of the index's search against the exact scan over `questions`.
    fn recall_at_10(index: &VectorIndex, e: &dyn Embedder, questions: &[String]) -> f64 {
        let (mut found, mut wanted) = (0, 0);
        for q in questions {
            let v = e.embed(q).unwrap();
            let exact: Vec<u32> = index.exact(&v, 10, |_| true).iter().map(|h| h.0).collect();
            let approx = index.search(&v, 10, index.len(), |_| true);
            found += approx.iter().filter(|h| exact.contains(&h.0)).count();
            wanted += exact.len();
        }
        found as f64 / wanted as f64
    }

    #[test]
    fn questions_unlike_the_corpus_find_what_an_exact_scan_finds() {
        let (corpus, questions) = conversation_like(8_000);
        let refs: Vec<&str> = corpus.iter().map(String::as_str).collect();
        let e = BuiltinEmbedder::default().fit(&refs).unwrap();
        let vectors = e.embed_batch(&refs).unwrap();
        let recall = |params: HnswParams| {
            let mut index = VectorIndex::with_params(e.id().dim, params);
            index.add_many(&vectors);
            assert!(index.graph().is_some());
            recall_at_10(&index, &*e, &questions)
        };
        let now = recall(HnswParams::default());
        assert!(now >= 0.98, "recall@10 {now}");
        // The earlier graph and search (m 12, one greedy descent, beam 128) fall short here.
        let before = recall(HnswParams {
            m: 12,
            ef_construction: 64,
            ef_search: 128,
            ef_entry: 1,
        });
        assert!(before < now, "before {before}, now {now}");
    }
}
