//! A hierarchical navigable small-world graph (Malkov and Yashunin) over unit vectors.
//!
//! Every node lives on layer 0 and, with probability falling by a factor `m` per layer, on the
//! layers above; a search walks greedily down the sparse upper layers to a good starting point,
//! then runs a beam of width `ef` over layer 0. New nodes pick their neighbours with the paper's
//! heuristic (a candidate is kept only if it is nearer the new node than to any neighbour kept
//! so far, so links spread in all directions instead of bunching in one cluster), topped up
//! with the nearest rejected ones; a neighbour whose list overflows is pruned with the same
//! heuristic.
//!
//! The graph stores links only and measures similarity on int8 codes ([`super::quant`]) held by
//! the caller ([`super::ann::VectorIndex`]), passed to every call, so nothing is held twice; the
//! caller ranks a walk's candidates again with the float vectors. Layer 0's links are one flat
//! array, a row per node holding its link count and then room for `cap0` links, because that is
//! where a search spends its time; a node's row is read as it joins a walk's frontier, so that
//! it is in cache by the time the walk expands it.
//!
//! A node's layer-0 list may hold half again its `m0` links before it is pruned back to `m0`:
//! pruning (the heuristic over every pair of links) cost a build far more than finding the
//! links did, and a node pruned once per `m0 / 2` new links instead of once per link builds
//! several times faster, for a few more links walked per node.
//!
//! Many nodes are inserted in batches ([`Hnsw::extend`]): the nodes of a batch plan their links
//! against the graph as it was before the batch, in parallel, since planning only reads; then
//! the links are written, and each old node that receives new links is pruned once for all of
//! them (inserting one by one prunes it once per link, which was most of a build's time). A
//! batch is a small share of the graph, so that its nodes missing each other costs little
//! recall; the first nodes go in one by one. The batches and the levels depend only on the node
//! count, never on the thread count, so the same vectors give the same graph on any machine.

use std::cell::RefCell;
use std::collections::BinaryHeap;

use super::quant::{Code, Codes};

/// The graph's shape and effort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HnswParams {
    /// Links per node on the upper layers (layer 0 has twice as many).
    pub m: usize,
    /// The beam width while inserting.
    pub ef_construction: usize,
    /// The beam width while searching (at least the number of results asked for).
    pub ef_search: usize,
    /// The beam width on layer 1, whose nodes all start the search's beam on layer 0. A
    /// question unlike the stored texts (a real question over conversation turns) lies between
    /// regions of the graph, and a single greedy descent lands in the wrong one; many starting
    /// points reach the right one. 1 is the paper's greedy descent.
    #[serde(default = "one")]
    pub ef_entry: usize,
}

fn one() -> usize {
    1
}

impl Default for HnswParams {
    /// Chosen with `lore bench recall` at 100k lessons on the builtin embedder's vectors with
    /// LoCoMo's real questions (docs/BENCHMARKS.md has the figures): m 12 with one greedy
    /// descent found 0.81 of the exact top 10 with a beam of 128 and needed 512 for 0.98; an
    /// entry beam of 64 alone raised 0.81 to 0.92; m 16 with an entry beam of 128 and a beam of
    /// 192 reaches 0.98 for about a third of a millisecond more than the old search. These are
    /// the beams up to 100k vectors: beyond, the search widens both as the graph grows
    /// ([`super::ann::VectorIndex::search_effort`]).
    ///
    /// The construction beam decides what the graph can find at a million lessons: with 64,
    /// no search effort got past 0.98 there (0.985 with a search beam of 2,048), since the
    /// walk ends in a region of the graph that the rest of the exact top 10 is not linked to;
    /// with 128 the same search finds 0.990 (192: 0.993). 128 is the one that keeps the
    /// million-lesson build well inside three minutes on two cores (101 s).
    fn default() -> Self {
        Self {
            m: 16,
            ef_construction: 128,
            ef_search: 192,
            ef_entry: 128,
        }
    }
}

/// Nodes inserted one by one before batches start.
const SEQUENTIAL: usize = 1024;
/// A batch holds at most `1 / BATCH_SHARE` of the graph it joins, and never more than
/// [`MAX_BATCH`] nodes.
const BATCH_SHARE: usize = 32;
const MAX_BATCH: usize = 4096;

/// The graph.
#[derive(Clone, Debug)]
pub struct Hnsw {
    params: HnswParams,
    m0: usize,
    /// Layer 0's slots per node: `m0` and room for half as many again before a pruning.
    cap0: usize,
    level_mult: f64,
    /// Layer 0: a row of `1 + cap0` words per node, its link count and then its links, so
    /// that a node's count and links are one stretch of memory (one cache miss, not two).
    layer0: Vec<u32>,
    /// Layers above 0, per node: `upper[node][l - 1]` are its links on layer `l`.
    upper: Vec<Vec<Vec<u32>>>,
    entry: Option<u32>,
    top: usize,
    rng: u64,
}

/// Nodes a walk has visited, one bit each, reused across walks on one thread: at a million
/// nodes the bits fit in a core's cache where a word per node did not, and each walk clears
/// only the words it touched, so it costs what it visits, not the graph's size.
struct Visited {
    bits: Vec<u64>,
    touched: Vec<u32>,
    /// One node's unvisited neighbours and their similarities, gathered before any is
    /// compared: the similarities are then independent loads that the core overlaps, where
    /// comparing each as it came made every cache miss wait on the one before.
    fresh: Vec<u32>,
    sims: Vec<f32>,
}

thread_local! {
    static VISITED: RefCell<Visited> = const {
        RefCell::new(Visited {
            bits: Vec::new(),
            touched: Vec::new(),
            fresh: Vec::new(),
            sims: Vec::new(),
        })
    };
}

impl Visited {
    fn start(&mut self, nodes: usize) {
        for &w in &self.touched {
            self.bits[w as usize] = 0;
        }
        self.touched.clear();
        if self.bits.len() < nodes.div_ceil(64) {
            self.bits.resize(nodes.div_ceil(64), 0);
        }
    }

    /// Marks `node`; whether it was new.
    #[inline]
    fn first(&mut self, node: u32) -> bool {
        first(&mut self.bits, &mut self.touched, node)
    }
}

/// Marks `node` in `bits`, noting a word touched for the first time; whether it was new.
#[inline]
fn first(bits: &mut [u64], touched: &mut Vec<u32>, node: u32) -> bool {
    let (word, bit) = (node as usize / 64, 1u64 << (node % 64));
    let w = &mut bits[word];
    if *w & bit != 0 {
        return false;
    }
    if *w == 0 {
        touched.push(word as u32);
    }
    *w |= bit;
    true
}

/// A node and its similarity to the walk's question by their codes, ordered worst first
/// (lowest similarity, then latest slot) for a bounded beam; single precision because the
/// codes carry no more, and a smaller heap entry is a cheaper walk.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cand {
    sim: f32,
    slot: u32,
}

impl Eq for Cand {}

impl Ord for Cand {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .sim
            .total_cmp(&self.sim)
            .then(self.slot.cmp(&other.slot))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The best candidate first (a max-heap by similarity).
#[derive(Clone, Copy, PartialEq)]
struct Best(Cand);

impl Eq for Best {}

impl Ord for Best {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.cmp(&self.0)
    }
}

impl PartialOrd for Best {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The paper's neighbour heuristic over `found` (best first), topped up to `max`.
fn select(codes: &Codes, found: &[Cand], max: usize) -> Vec<u32> {
    let mut kept: Vec<u32> = Vec::with_capacity(max);
    let mut rejected = Vec::new();
    for c in found {
        if kept.len() == max {
            break;
        }
        let code = codes.code(c.slot);
        if kept.iter().all(|&k| codes.sim(code, k) < c.sim) {
            kept.push(c.slot);
        } else {
            rejected.push(c.slot);
        }
    }
    for r in rejected {
        if kept.len() == max {
            break;
        }
        kept.push(r);
    }
    kept
}

/// `node`'s links `current` joined by `new`; a list longer than `cap` is chosen again, down to
/// `max`, with the heuristic, which keeps the long links that join clusters (keeping the
/// nearest would cut them and strand whole clusters).
fn relink(
    codes: &Codes,
    node: u32,
    current: &[u32],
    new: &[u32],
    (max, cap): (usize, usize),
) -> Vec<u32> {
    let mut links = current.to_vec();
    links.extend(new.iter().filter(|n| !current.contains(n)));
    if links.len() <= cap {
        return links;
    }
    let mut sims = Vec::with_capacity(links.len());
    codes.sims(codes.code(node), &links, &mut sims);
    let mut scored: Vec<Cand> = links
        .iter()
        .zip(sims)
        .map(|(&slot, sim)| Cand { sim, slot })
        .collect();
    scored.sort();
    select(codes, &scored, max)
}

/// `f` over `0..n`, in order, split over up to `threads` scoped threads.
fn parallel_map<T: Send>(n: usize, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    if threads <= 1 || n < 2 * threads {
        return (0..n).map(f).collect();
    }
    let chunk = n.div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|from| {
                let f = &f;
                s.spawn(move || (from..(from + chunk).min(n)).map(f).collect::<Vec<T>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a planning thread does not panic"))
            .collect()
    })
}

/// The threads a build uses.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Hnsw {
    /// An empty graph.
    pub fn new(params: HnswParams) -> Self {
        let m = params.m.max(2);
        Self {
            params: HnswParams { m, ..params },
            m0: 2 * m,
            cap0: 3 * m,
            level_mult: 1.0 / (m as f64).ln(),
            layer0: Vec::new(),
            upper: Vec::new(),
            entry: None,
            top: 0,
            // A fixed seed: the same vectors in the same order give the same graph.
            rng: 0x2545_f491_4f6c_dd1d,
        }
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.upper.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.upper.is_empty()
    }

    /// Bytes of links held, for the memory a lesson costs.
    pub fn heap_bytes(&self) -> usize {
        let upper: usize = self
            .upper
            .iter()
            .map(|u| 24 * u.capacity() + u.iter().map(|l| 4 * l.capacity()).sum::<usize>())
            .sum();
        4 * self.layer0.capacity() + 24 * self.upper.capacity() + upper
    }

    fn random_level(&mut self) -> usize {
        // xorshift64*: uniform in (0, 1].
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let u = ((r >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        ((-u.ln()) * self.level_mult) as usize
    }

    fn max_links(&self, layer: usize) -> usize {
        if layer == 0 { self.m0 } else { self.params.m }
    }

    /// `(max, cap)` for [`relink`] on `layer`.
    fn bounds(&self, layer: usize) -> (usize, usize) {
        if layer == 0 {
            (self.m0, self.cap0)
        } else {
            (self.params.m, self.params.m)
        }
    }

    fn links(&self, node: u32, layer: usize) -> &[u32] {
        if layer == 0 {
            let at = node as usize * (1 + self.cap0);
            &self.layer0[at + 1..at + 1 + self.layer0[at] as usize]
        } else {
            &self.upper[node as usize][layer - 1]
        }
    }

    /// Reads the start of `node`'s row on layer 0, so that the row is in cache by the time a
    /// walk expands the node: a node joins the frontier well before it is expanded, and the
    /// read costs nothing while the walk goes on (the upper layers are small, and skipped).
    #[inline]
    fn touch(&self, node: u32) -> u32 {
        let at = node as usize * (1 + self.cap0);
        self.layer0[at] ^ self.layer0.get(at + 16).copied().unwrap_or(0)
    }

    fn set_links(&mut self, node: u32, layer: usize, links: &[u32]) {
        if layer == 0 {
            let at = node as usize * (1 + self.cap0);
            self.layer0[at] = links.len() as u32;
            self.layer0[at + 1..at + 1 + links.len()].copy_from_slice(links);
        } else {
            self.upper[node as usize][layer - 1] = links.to_vec();
        }
    }

    /// Room for one more node, on layers 0 to `level`, with no links yet.
    fn grow(&mut self, level: usize) {
        self.layer0.resize(self.layer0.len() + 1 + self.cap0, 0);
        self.upper.push(vec![Vec::new(); level]);
    }

    /// Inserts the next node, whose code is `codes.code(node)`; nodes come in slot order.
    pub(crate) fn insert(&mut self, codes: &Codes, node: u32) {
        assert_eq!(
            node as usize,
            self.len(),
            "nodes are inserted in slot order"
        );
        let level = self.random_level();
        self.grow(level);
        self.attach(codes, node, level);
    }

    /// Links the newest node, on layers 0 to `level`, into the graph.
    fn attach(&mut self, codes: &Codes, node: u32, level: usize) {
        if self.entry.is_none() {
            self.entry = Some(node);
            self.top = level;
            return;
        }
        for (layer, chosen) in self.plan(codes, node, level).into_iter().enumerate() {
            self.set_links(node, layer, &chosen);
            let bounds = self.bounds(layer);
            for &n in &chosen {
                let links = relink(codes, n, self.links(n, layer), &[node], bounds);
                self.set_links(n, layer, &links);
            }
        }
        if level > self.top {
            self.top = level;
            self.entry = Some(node);
        }
    }

    /// The links `node` should get on layers 0 to `min(level, top)`, found in the graph as it
    /// is; it only reads, so the nodes of a batch plan at once.
    fn plan(&self, codes: &Codes, node: u32, level: usize) -> Vec<Vec<u32>> {
        let q = codes.code(node);
        let mut entry = self.entry.expect("a graph with an entry");
        for layer in (level + 1..=self.top).rev() {
            entry = self.greedy(codes, q, entry, layer);
        }
        let mut entries = vec![entry];
        let mut plan = vec![Vec::new(); level.min(self.top) + 1];
        for layer in (0..=level.min(self.top)).rev() {
            let found = self.beam(
                codes,
                q,
                &entries,
                self.params.ef_construction,
                layer,
                |_| true,
            );
            plan[layer] = select(codes, &found, self.max_links(layer));
            entries = found.iter().map(|f| f.slot).collect();
        }
        plan
    }

    /// Inserts nodes from [`Hnsw::len`] up to `to` (their codes in `codes`): one by one while
    /// the graph is small, then in batches planned in parallel.
    pub(crate) fn extend(&mut self, codes: &Codes, to: usize) {
        let threads = threads();
        while self.len() < to {
            let start = self.len();
            if start < SEQUENTIAL {
                self.insert(codes, start as u32);
                continue;
            }
            let cap = (start / BATCH_SHARE).clamp(1, MAX_BATCH).min(to - start);
            let mut levels = Vec::with_capacity(cap);
            let mut high = None;
            while levels.len() < cap {
                // A node above the top layer becomes the entry: it goes in alone, after.
                let level = self.random_level();
                if level > self.top {
                    high = Some(level);
                    break;
                }
                levels.push(level);
            }
            self.insert_batch(codes, start, &levels, threads);
            if let Some(level) = high {
                let node = self.len() as u32;
                self.grow(level);
                self.attach(codes, node, level);
            }
        }
    }

    /// Inserts nodes `start..start + levels.len()`, none above the top layer.
    fn insert_batch(&mut self, codes: &Codes, start: usize, levels: &[usize], threads: usize) {
        let plans = parallel_map(levels.len(), threads, |i| {
            self.plan(codes, (start + i) as u32, levels[i])
        });
        for &level in levels {
            self.grow(level);
        }
        // Per layer, `(target, new node)`: the links back that the new nodes ask for.
        let mut incoming: Vec<Vec<(u32, u32)>> = vec![Vec::new(); self.top + 1];
        for (i, plan) in plans.iter().enumerate() {
            let node = (start + i) as u32;
            for (layer, links) in plan.iter().enumerate() {
                self.set_links(node, layer, links);
                incoming[layer].extend(links.iter().map(|&t| (t, node)));
            }
        }
        for (layer, mut pairs) in incoming.into_iter().enumerate() {
            pairs.sort_unstable();
            if layer == 0 {
                self.relink_layer0(codes, &pairs, threads);
                continue;
            }
            for group in pairs.chunk_by(|a, b| a.0 == b.0) {
                let target = group[0].0;
                let new: Vec<u32> = group.iter().map(|p| p.1).collect();
                let links = relink(
                    codes,
                    target,
                    self.links(target, layer),
                    &new,
                    self.bounds(layer),
                );
                self.set_links(target, layer, &links);
            }
        }
    }

    /// Adds the layer-0 links `pairs` (`(target, source)`, sorted), each target pruned once;
    /// targets are split into ranges, one per thread, each owning its part of the array.
    fn relink_layer0(&mut self, codes: &Codes, pairs: &[(u32, u32)], threads: usize) {
        let (bounds, n) = (self.bounds(0), self.len());
        let row = 1 + self.cap0;
        let per = n.div_ceil(threads.max(1)).max(1);
        let mut rest_links = self.layer0.as_mut_slice();
        let mut rest_pairs = pairs;
        std::thread::scope(|s| {
            let mut base = 0;
            while base < n {
                let end = (base + per).min(n);
                let (links, more) =
                    std::mem::take(&mut rest_links).split_at_mut((end - base) * row);
                rest_links = more;
                let cut = rest_pairs.partition_point(|p| (p.0 as usize) < end);
                let (mine, more) = rest_pairs.split_at(cut);
                rest_pairs = more;
                let from = base;
                let mut work = move || {
                    for group in mine.chunk_by(|a, b| a.0 == b.0) {
                        let target = group[0].0;
                        let at = target as usize - from;
                        let (len, row) = links[at * row..(at + 1) * row]
                            .split_first_mut()
                            .expect("a row starts with its count");
                        let new: Vec<u32> = group.iter().map(|p| p.1).collect();
                        let joined = relink(codes, target, &row[..*len as usize], &new, bounds);
                        row[..joined.len()].copy_from_slice(&joined);
                        *len = joined.len() as u32;
                    }
                };
                if end == n {
                    work();
                } else {
                    s.spawn(work);
                }
                base = end;
            }
        });
    }

    /// Greedy descent on one layer: the nearest node reachable from `entry`.
    fn greedy(&self, codes: &Codes, q: Code<'_>, mut entry: u32, layer: usize) -> u32 {
        let mut best = codes.sim(q, entry);
        loop {
            let mut moved = false;
            for &n in self.links(entry, layer) {
                let sim = codes.sim(q, n);
                if sim > best {
                    best = sim;
                    entry = n;
                    moved = true;
                }
            }
            if !moved {
                return entry;
            }
        }
    }

    /// A beam search of width `ef` on one layer; returns up to `ef` nodes that `ok` accepts,
    /// best first. Rejected nodes are still walked through.
    fn beam(
        &self,
        codes: &Codes,
        q: Code<'_>,
        entries: &[u32],
        ef: usize,
        layer: usize,
        ok: impl Fn(u32) -> bool,
    ) -> Vec<Cand> {
        VISITED.with(|visited| {
            let mut visited = visited.borrow_mut();
            visited.start(self.len());
            let mut frontier: BinaryHeap<Best> = BinaryHeap::new();
            // Worst on top, so the beam drops its worst member.
            let mut results: BinaryHeap<Cand> = BinaryHeap::with_capacity(ef + 1);
            for &e in entries {
                if visited.first(e) {
                    let near = Cand {
                        sim: codes.sim(q, e),
                        slot: e,
                    };
                    frontier.push(Best(near));
                    if ok(e) {
                        results.push(near);
                    }
                }
            }
            while results.len() > ef {
                results.pop();
            }
            let Visited {
                bits,
                touched,
                fresh,
                sims,
            } = &mut *visited;
            while let Some(Best(current)) = frontier.pop() {
                if results.len() >= ef && results.peek().is_some_and(|w| current.sim < w.sim) {
                    break;
                }
                fresh.clear();
                for &n in self.links(current.slot, layer) {
                    if first(bits, touched, n) {
                        fresh.push(n);
                    }
                }
                sims.clear();
                codes.sims(q, fresh, sims);
                for (&n, &sim) in fresh.iter().zip(sims.iter()) {
                    let worst = results.peek().map_or(f32::NEG_INFINITY, |w| w.sim);
                    if results.len() < ef || sim > worst {
                        let near = Cand { sim, slot: n };
                        frontier.push(Best(near));
                        if ok(n) {
                            results.push(near);
                            if results.len() > ef {
                                results.pop();
                            }
                        }
                    }
                }
                // The rows of the nodes that joined the frontier, read together so that their
                // misses overlap, as the codes' do.
                if layer == 0 {
                    let worst = results.peek().map_or(f32::NEG_INFINITY, |w| w.sim);
                    let mut ahead = 0u32;
                    for (&n, &sim) in fresh.iter().zip(sims.iter()) {
                        if sim >= worst {
                            ahead ^= self.touch(n);
                        }
                    }
                    std::hint::black_box(ahead);
                }
            }
            results.into_sorted_vec()
        })
    }

    /// Up to `ef` nodes `ok` accepts, near `q` by their codes, best first by those codes,
    /// starting from the best `entry_ef` nodes of layer 1.
    pub(crate) fn search(
        &self,
        codes: &Codes,
        q: Code<'_>,
        (entry_ef, ef): (usize, usize),
        ok: impl Fn(u32) -> bool,
    ) -> Vec<u32> {
        let Some(mut entry) = self.entry else {
            return Vec::new();
        };
        for layer in (2..=self.top).rev() {
            entry = self.greedy(codes, q, entry, layer);
        }
        let entries: Vec<u32> = if self.top >= 1 {
            let found = self.beam(codes, q, &[entry], entry_ef.max(1), 1, |_| true);
            found.into_iter().map(|n| n.slot).collect()
        } else {
            vec![entry]
        };
        let found = self.beam(codes, q, &entries, ef, 0, ok);
        found.into_iter().map(|n| n.slot).collect()
    }

    /// The parameters the graph was built with.
    pub fn params(&self) -> HnswParams {
        self.params
    }

    /// Appends the graph's links to `out` (little-endian; read back by [`Hnsw::decode`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let n = self.len() as u32;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&self.entry.unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&(self.top as u32).to_le_bytes());
        out.extend_from_slice(&self.rng.to_le_bytes());
        let put = |out: &mut Vec<u8>, links: &[u32]| {
            out.extend_from_slice(&(links.len() as u16).to_le_bytes());
            for l in links {
                out.extend_from_slice(&l.to_le_bytes());
            }
        };
        for node in 0..n {
            put(out, self.links(node, 0));
            let upper = &self.upper[node as usize];
            out.push(upper.len() as u8);
            for links in upper {
                put(out, links);
            }
        }
    }

    /// Reads a graph of `params` written by [`Hnsw::encode`] from the front of `bytes`,
    /// advancing it. `None` for anything a search could trip on (a link to a node that does
    /// not exist or is not on that layer, an overfull list, an entry that is not on the top
    /// layer), so a damaged graph is refused rather than walked.
    pub fn decode(params: HnswParams, bytes: &mut &[u8]) -> Option<Self> {
        let mut graph = Self::new(params);
        let n = take_u32(bytes)?;
        let entry = take_u32(bytes)?;
        let top = take_u32(bytes)? as usize;
        graph.rng = u64::from_le_bytes(take(bytes, 8)?.try_into().ok()?);
        let links = |bytes: &mut &[u8], max: usize| -> Option<Vec<u32>> {
            let len = u16::from_le_bytes(take(bytes, 2)?.try_into().ok()?) as usize;
            if len > max {
                return None;
            }
            let raw = take(bytes, 4 * len)?;
            let out: Vec<u32> = raw
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            out.iter().all(|&l| l < n).then_some(out)
        };
        // Each node takes at least three bytes: a bound on `n` before allocating for it.
        if n as usize > bytes.len() / 3 {
            return None;
        }
        graph.layer0 = vec![0; n as usize * (1 + graph.cap0)];
        graph.upper = Vec::with_capacity(n as usize);
        for node in 0..n {
            let zero = links(bytes, graph.cap0)?;
            graph.set_links(node, 0, &zero);
            let levels = *take(bytes, 1)?.first()? as usize;
            let upper = (0..levels)
                .map(|_| links(bytes, graph.params.m))
                .collect::<Option<Vec<_>>>()?;
            graph.upper.push(upper);
        }
        let on_layer = |node: u32, layer: usize| graph.upper[node as usize].len() >= layer;
        for upper in &graph.upper {
            for (l, links) in upper.iter().enumerate() {
                if !links.iter().all(|&t| on_layer(t, l + 1)) {
                    return None;
                }
            }
        }
        match (n, entry) {
            (0, u32::MAX) => {}
            (0, _) | (_, u32::MAX) => return None,
            (_, e) if e >= n || graph.upper[e as usize].len() != top => return None,
            (_, e) => {
                graph.entry = Some(e);
                graph.top = top;
            }
        }
        Some(graph)
    }
}

/// The next `len` bytes of `bytes`, advancing it.
pub(crate) fn take<'a>(bytes: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
    if bytes.len() < len {
        return None;
    }
    let (head, rest) = bytes.split_at(len);
    *bytes = rest;
    Some(head)
}

/// The next little-endian `u32` of `bytes`, advancing it.
pub(crate) fn take_u32(bytes: &mut &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(take(bytes, 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::super::ann::VectorIndex;

    /// Clustered unit vectors, like texts on a few topics.
    fn clustered(n: usize, dim: usize) -> Vec<f32> {
        let mut z = 7u64;
        let mut next = || {
            z = z
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((z >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let centers: Vec<Vec<f32>> = (0..20)
            .map(|_| (0..dim).map(|_| next()).collect())
            .collect();
        let mut data = Vec::with_capacity(n * dim);
        for i in 0..n {
            let mut v: Vec<f32> = centers[i % 20].iter().map(|c| c + 0.4 * next()).collect();
            super::super::normalize(&mut v);
            data.extend(v);
        }
        data
    }

    /// An index over `n` clustered vectors with its graph built.
    fn indexed(n: usize, dim: usize) -> (Vec<f32>, VectorIndex) {
        let data = clustered(n, dim);
        let mut index = VectorIndex::new(dim);
        for v in data.chunks_exact(dim) {
            index.add(v);
        }
        index.build_graph();
        (data, index)
    }

    #[test]
    fn graph_search_finds_nearly_all_exact_neighbours() {
        let (n, dim) = (2000, 16);
        let (data, index) = indexed(n, dim);
        let (mut found, mut total) = (0, 0);
        for q in (0..n).step_by(37) {
            let query = &data[q * dim..(q + 1) * dim];
            let exact: Vec<u32> = index
                .exact(query, 10, |_| true)
                .iter()
                .map(|h| h.0)
                .collect();
            let approx = index.search(query, 10, n, |_| true);
            assert!(approx.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
            found += approx.iter().filter(|h| exact.contains(&h.0)).count();
            total += exact.len();
        }
        let recall = found as f64 / total as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn removed_and_filtered_nodes_are_never_returned() {
        let (n, dim) = (1200, 16);
        let (data, mut index) = indexed(n, dim);
        for slot in (0..n as u32).step_by(3) {
            index.remove(slot);
        }
        for q in (0..n).step_by(101) {
            let query = &data[q * dim..(q + 1) * dim];
            let hits = index.search(query, 20, n / 2, |s| s % 2 == 0);
            assert_eq!(hits.len(), 20, "{q} {:?}", index.exact(query, 3, |_| true));
            assert!(
                hits.iter().all(|h| h.0 % 3 != 0 && h.0 % 2 == 0),
                "{hits:?}"
            );
        }
    }
}
