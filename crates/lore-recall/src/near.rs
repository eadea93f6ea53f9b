//! What the exact and the graph search share: the dot product and a bounded top-k order.

use std::cmp::Ordering;

/// A `(slot, score)` pair ordered worst first (lowest score, then latest slot), for a bounded
/// top-k heap; the sparse and dense searches share it, so ties break the same way.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Near {
    pub(crate) sim: f64,
    pub(crate) slot: u32,
}

impl Eq for Near {}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .sim
            .total_cmp(&self.sim)
            .then(self.slot.cmp(&other.slot))
    }
}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The dot product, in eight lanes so that the compiler vectorizes it.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}
