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
//! The graph stores links only; the vectors stay in the caller's slot-major array
//! ([`super::ann::VectorIndex`]), passed to every call, so nothing is held twice. Layer 0's
//! links are one flat array, `m0` per node, because that is where a search spends its time.

use std::cell::RefCell;
use std::collections::BinaryHeap;

use super::near::{Near, dot};

/// The graph's shape and effort.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HnswParams {
    /// Links per node on the upper layers (layer 0 has twice as many).
    pub m: usize,
    /// The beam width while inserting.
    pub ef_construction: usize,
    /// The beam width while searching (at least the number of results asked for).
    pub ef_search: usize,
}

impl Default for HnswParams {
    /// Chosen with `lore bench recall` on the builtin embedder's vectors (docs/BENCHMARKS.md has
    /// the figures): at 10k, m 16 / 100 / 96 reached recall@10 1.000 with a 0.36 ms search,
    /// m 12 / 64 / 48 0.997 with 0.14 ms, m 8 / 48 / 40 only 0.875; at 100k, m 12 / 64 needs
    /// a search beam of 128 for 0.970 (48 gave 0.893).
    fn default() -> Self {
        Self {
            m: 12,
            ef_construction: 64,
            ef_search: 128,
        }
    }
}

/// The graph.
#[derive(Debug)]
pub struct Hnsw {
    params: HnswParams,
    m0: usize,
    level_mult: f64,
    /// Layer 0: `m0` slots per node, the first `layer0_len[node]` used.
    layer0: Vec<u32>,
    layer0_len: Vec<u16>,
    /// Layers above 0, per node: `upper[node][l - 1]` are its links on layer `l`.
    upper: Vec<Vec<Vec<u32>>>,
    entry: Option<u32>,
    top: usize,
    rng: u64,
}

/// Marks of visited nodes, reused across searches on one thread: a generation number instead
/// of clearing, so a search costs what it visits, not the graph's size.
struct Visited {
    marks: Vec<u32>,
    generation: u32,
}

thread_local! {
    static VISITED: RefCell<Visited> = const {
        RefCell::new(Visited {
            marks: Vec::new(),
            generation: 0,
        })
    };
}

impl Visited {
    fn start(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.generation = 1;
        }
    }

    /// Marks `node`; whether it was new.
    fn first(&mut self, node: u32) -> bool {
        let mark = &mut self.marks[node as usize];
        let new = *mark != self.generation;
        *mark = self.generation;
        new
    }
}

/// The best candidate first (a max-heap by similarity).
#[derive(Clone, Copy, PartialEq)]
struct Best(Near);

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

fn vector(data: &[f32], dim: usize, node: u32) -> &[f32] {
    let at = node as usize * dim;
    &data[at..at + dim]
}

impl Hnsw {
    /// An empty graph.
    pub fn new(params: HnswParams) -> Self {
        let m = params.m.max(2);
        Self {
            params: HnswParams { m, ..params },
            m0: 2 * m,
            level_mult: 1.0 / (m as f64).ln(),
            layer0: Vec::new(),
            layer0_len: Vec::new(),
            upper: Vec::new(),
            entry: None,
            top: 0,
            // A fixed seed: the same vectors in the same order give the same graph.
            rng: 0x2545_f491_4f6c_dd1d,
        }
    }

    /// Nodes in the graph.
    pub fn len(&self) -> usize {
        self.layer0_len.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.layer0_len.is_empty()
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

    fn links(&self, node: u32, layer: usize) -> &[u32] {
        if layer == 0 {
            let at = node as usize * self.m0;
            &self.layer0[at..at + self.layer0_len[node as usize] as usize]
        } else {
            &self.upper[node as usize][layer - 1]
        }
    }

    fn set_links(&mut self, node: u32, layer: usize, links: &[u32]) {
        if layer == 0 {
            let at = node as usize * self.m0;
            self.layer0[at..at + links.len()].copy_from_slice(links);
            self.layer0_len[node as usize] = links.len() as u16;
        } else {
            self.upper[node as usize][layer - 1] = links.to_vec();
        }
    }

    /// Inserts `node`, whose vector is `data[node * dim..]`; nodes must come in slot order.
    pub fn insert(&mut self, data: &[f32], dim: usize, node: u32) {
        assert_eq!(
            node as usize,
            self.len(),
            "nodes are inserted in slot order"
        );
        let level = self.random_level();
        self.layer0.resize(self.layer0.len() + self.m0, 0);
        self.layer0_len.push(0);
        self.upper.push(vec![Vec::new(); level]);
        let Some(mut entry) = self.entry else {
            self.entry = Some(node);
            self.top = level;
            return;
        };
        let q = vector(data, dim, node);
        for layer in (level + 1..=self.top).rev() {
            entry = self.greedy(data, dim, q, entry, layer);
        }
        let mut entries = vec![entry];
        for layer in (0..=level.min(self.top)).rev() {
            let found = self.beam(
                data,
                dim,
                q,
                &entries,
                self.params.ef_construction,
                layer,
                |_| true,
            );
            let max = if layer == 0 { self.m0 } else { self.params.m };
            let chosen = self.select(data, dim, &found, max);
            self.set_links(node, layer, &chosen);
            for &n in &chosen {
                self.link(data, dim, n, node, layer, max);
            }
            entries = found.iter().map(|f| f.slot).collect();
        }
        if level > self.top {
            self.top = level;
            self.entry = Some(node);
        }
    }

    /// Adds `to` to `from`'s links on `layer`; an overflowing list is chosen again with the
    /// heuristic, which keeps the long links that join clusters (keeping the nearest would
    /// cut them and strand whole clusters).
    fn link(&mut self, data: &[f32], dim: usize, from: u32, to: u32, layer: usize, max: usize) {
        let mut links = self.links(from, layer).to_vec();
        links.push(to);
        if links.len() > max {
            let base = vector(data, dim, from);
            let mut scored: Vec<Near> = links
                .iter()
                .map(|&slot| Near {
                    sim: f64::from(dot(base, vector(data, dim, slot))),
                    slot,
                })
                .collect();
            scored.sort();
            links = self.select(data, dim, &scored, max);
        }
        self.set_links(from, layer, &links);
    }

    /// The paper's neighbour heuristic over `found` (best first), topped up to `max`.
    fn select(&self, data: &[f32], dim: usize, found: &[Near], max: usize) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(max);
        let mut rejected = Vec::new();
        for c in found {
            if kept.len() == max {
                break;
            }
            let v = vector(data, dim, c.slot);
            if kept
                .iter()
                .all(|&k| f64::from(dot(v, vector(data, dim, k))) < c.sim)
            {
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

    /// Greedy descent on one layer: the nearest node reachable from `entry`.
    fn greedy(&self, data: &[f32], dim: usize, q: &[f32], mut entry: u32, layer: usize) -> u32 {
        let mut best = dot(q, vector(data, dim, entry));
        loop {
            let mut moved = false;
            for &n in self.links(entry, layer) {
                let sim = dot(q, vector(data, dim, n));
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
    #[allow(clippy::too_many_arguments)]
    fn beam(
        &self,
        data: &[f32],
        dim: usize,
        q: &[f32],
        entries: &[u32],
        ef: usize,
        layer: usize,
        ok: impl Fn(u32) -> bool,
    ) -> Vec<Near> {
        VISITED.with(|visited| {
            let mut visited = visited.borrow_mut();
            visited.start(self.len());
            let mut frontier: BinaryHeap<Best> = BinaryHeap::new();
            // Worst on top, so the beam drops its worst member.
            let mut results: BinaryHeap<Near> = BinaryHeap::with_capacity(ef + 1);
            for &e in entries {
                if visited.first(e) {
                    let near = Near {
                        sim: f64::from(dot(q, vector(data, dim, e))),
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
            while let Some(Best(current)) = frontier.pop() {
                if results.len() >= ef && results.peek().is_some_and(|w| current.sim < w.sim) {
                    break;
                }
                for &n in self.links(current.slot, layer) {
                    if !visited.first(n) {
                        continue;
                    }
                    let sim = f64::from(dot(q, vector(data, dim, n)));
                    let worst = results.peek().map_or(f64::NEG_INFINITY, |w| w.sim);
                    if results.len() < ef || sim > worst {
                        let near = Near { sim, slot: n };
                        frontier.push(Best(near));
                        if ok(n) {
                            results.push(near);
                            if results.len() > ef {
                                results.pop();
                            }
                        }
                    }
                }
            }
            results.into_sorted_vec()
        })
    }

    /// The `k` nodes `ok` accepts most similar to `q`, best first, searched with beam `ef`.
    pub fn search(
        &self,
        data: &[f32],
        dim: usize,
        q: &[f32],
        k: usize,
        ef: usize,
        ok: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let Some(mut entry) = self.entry else {
            return Vec::new();
        };
        for layer in (1..=self.top).rev() {
            entry = self.greedy(data, dim, q, entry, layer);
        }
        let mut found = self.beam(data, dim, q, &[entry], ef.max(k), 0, ok);
        found.truncate(k);
        found.into_iter().map(|n| (n.slot, n.sim)).collect()
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
        graph.layer0 = vec![0; n as usize * graph.m0];
        graph.layer0_len = Vec::with_capacity(n as usize);
        graph.upper = Vec::with_capacity(n as usize);
        for node in 0..n {
            let zero = links(bytes, graph.m0)?;
            graph.layer0_len.push(0);
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
