//! Int8 codes of the index's vectors: what the HNSW graph is built and walked on.
//!
//! A graph walk reads a few thousand vectors scattered over memory, so it costs what it loads:
//! a 256-component float vector is a kilobyte, its code a quarter of that, and the integer dot
//! product runs twice as many lanes per instruction. Each vector is scaled by its largest
//! component (so a code uses the whole `-127..=127` range whatever the embedder), which keeps
//! the similarity's error near a percent of the gaps a walk compares. The codes only steer the
//! walk: the candidates it ends on are ranked again with the float vectors
//! ([`super::ann::VectorIndex::search`]), so the results and their scores are the exact ones.

/// One vector's code: components times `1 / scale`, rounded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Code<'a> {
    pub(crate) bytes: &'a [i8],
    pub(crate) scale: f32,
}

/// A query's code, owned.
#[derive(Debug)]
pub(crate) struct QueryCode {
    bytes: Vec<i8>,
    scale: f32,
}

impl QueryCode {
    /// The code of `vector`.
    pub(crate) fn of(vector: &[f32]) -> Self {
        let mut bytes = Vec::with_capacity(vector.len());
        let scale = encode(vector, &mut bytes);
        Self { bytes, scale }
    }

    pub(crate) fn code(&self) -> Code<'_> {
        Code {
            bytes: &self.bytes,
            scale: self.scale,
        }
    }
}

/// Codes by slot: each slot's `dim` bytes followed by its scale's four bytes, so that one
/// similarity reads one stretch of memory (a walk at a million vectors waits on memory, and a
/// scale kept apart cost a second miss per node).
#[derive(Clone, Debug)]
pub(crate) struct Codes {
    dim: usize,
    bytes: Vec<i8>,
}

impl Codes {
    /// The codes of `data` (slot-major vectors of `dim` components).
    pub(crate) fn of(dim: usize, data: &[f32]) -> Self {
        let mut codes = Self {
            dim,
            bytes: Vec::with_capacity(data.len() / dim.max(1) * (dim + 4)),
        };
        for v in data.chunks_exact(dim.max(1)) {
            codes.push(v);
        }
        codes
    }

    /// Appends the code of `vector`.
    pub(crate) fn push(&mut self, vector: &[f32]) {
        let scale = encode(vector, &mut self.bytes);
        self.bytes
            .extend(scale.to_le_bytes().map(|b| b.cast_signed()));
    }

    /// Bytes held, for the memory a lesson costs.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// The code of `slot`.
    #[inline]
    pub(crate) fn code(&self, slot: u32) -> Code<'_> {
        let stride = self.dim + 4;
        let at = slot as usize * stride;
        let (bytes, scale) = self.bytes[at..at + stride].split_at(self.dim);
        Code {
            bytes,
            scale: f32::from_le_bytes([
                scale[0].cast_unsigned(),
                scale[1].cast_unsigned(),
                scale[2].cast_unsigned(),
                scale[3].cast_unsigned(),
            ]),
        }
    }

    /// The approximate similarity of `q` and `slot`.
    #[inline]
    pub(crate) fn sim(&self, q: Code<'_>, slot: u32) -> f32 {
        let c = self.code(slot);
        dot_i8(q.bytes, c.bytes) as f32 * q.scale * c.scale
    }
}

/// Appends the code of `vector` to `out`; returns its scale (0 for a zero vector).
fn encode(vector: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    let inv = 127.0 / max;
    out.extend(
        vector
            .iter()
            .map(|x| (x * inv).round().clamp(-127.0, 127.0) as i8),
    );
    max / 127.0
}

/// The integer dot product, in sixteen lanes of 16-bit products (a product of two codes fits
/// in 15 bits) so that the compiler vectorizes it.
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::near::dot;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut z = seed.wrapping_add(1);
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                z ^= z << 13;
                z ^= z >> 7;
                z ^= z << 17;
                (z % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        crate::normalize(&mut v);
        v
    }

    #[test]
    fn coded_similarity_is_within_a_percent_of_the_float_one() {
        for dim in [8, 30, 256, 384] {
            let data: Vec<f32> = (0..40).flat_map(|i| unit(i, dim)).collect();
            let codes = Codes::of(dim, &data);
            let q = unit(99, dim);
            let qc = QueryCode::of(&q);
            for slot in 0..40u32 {
                let v = &data[slot as usize * dim..(slot as usize + 1) * dim];
                let exact = dot(&q, v);
                let coded = codes.sim(qc.code(), slot);
                assert!(
                    (exact - coded).abs() < 0.01,
                    "{dim} {slot}: {exact} {coded}"
                );
                let self_sim = codes.sim(codes.code(slot), slot);
                assert!((self_sim - 1.0).abs() < 0.01, "{self_sim}");
            }
        }
    }

    #[test]
    fn a_zero_vector_codes_to_zero_and_matches_nothing() {
        let codes = Codes::of(4, &[0.0; 4]);
        let q = QueryCode::of(&[0.5, 0.5, 0.5, 0.5]);
        assert_eq!(codes.sim(q.code(), 0), 0.0);
    }
}
