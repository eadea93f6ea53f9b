//! Int8 codes of the index's vectors: what the HNSW graph is built and walked on.
//!
//! A graph walk reads a few thousand vectors scattered over memory, so it costs what it loads:
//! a 256-component float vector is a kilobyte, its code a quarter of that, and the integer dot
//! product runs twice as many lanes per instruction. Each vector is scaled by its largest
//! component (so a code uses the whole `-127..=127` range whatever the embedder), which keeps
//! the similarity's error near a percent of the gaps a walk compares. The codes only steer the
//! walk: the candidates it ends on are ranked again with the float vectors
//! ([`super::ann::VectorIndex::search`]), so the results and their scores are the exact ones.
//!
//! A walk asks for a node's neighbours' similarities together ([`Codes::sims`]): their codes'
//! cache lines are all read first, so that the misses are waited for once, not one code after
//! another, and the products run with AVX2 where the CPU has it (the build's baseline is SSE2).
//! Both together made a million-lesson build and a search there about twice as fast.

use pulp::{Arch, Simd, WithSimd};

use crate::mapped::Slab;

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
#[derive(Debug)]
pub(crate) struct Codes {
    dim: usize,
    /// Read in place from the saved index's file for the slots it holds.
    bytes: Slab<i8>,
    /// The widest instructions the CPU has, chosen once: similarities are computed with AVX2
    /// where it exists, which more than halves a build spent mostly in them.
    arch: Arch,
}

impl Codes {
    /// The codes of `data` (slot-major vectors of `dim` components).
    pub(crate) fn of(dim: usize, data: &[f32]) -> Self {
        let mut codes = Self {
            dim,
            bytes: Slab::from_vec(Vec::with_capacity(data.len() / dim.max(1) * (dim + 4))),
            arch: Arch::new(),
        };
        for v in data.chunks_exact(dim.max(1)) {
            codes.push(v);
        }
        codes
    }

    /// Codes of `dim`-component vectors read in place: `bytes` holds whole rows (each code
    /// and its scale, as [`Codes::push`] lays them out). `None` when it does not.
    pub(crate) fn mapped(dim: usize, bytes: Slab<i8>) -> Option<Self> {
        bytes.len().is_multiple_of(dim + 4).then(|| Self {
            dim,
            bytes,
            arch: Arch::new(),
        })
    }

    /// Appends the code of `vector`.
    pub(crate) fn push(&mut self, vector: &[f32]) {
        let bytes = self.bytes.owned_mut();
        let scale = encode(vector, bytes);
        bytes.extend(scale.to_le_bytes().map(|b| b.cast_signed()));
    }

    /// Bytes held in memory, for the memory a lesson costs.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.heap_bytes()
    }

    /// Bytes read in place from a mapped file.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.bytes.mapped_bytes()
    }

    /// Every slot's code and scale, in slot order: the mapped part, then the owned part.
    pub(crate) fn parts(&self) -> (&[i8], &[i8]) {
        self.bytes.parts()
    }

    /// Reads the first slots' codes from `mapped` (the same bytes, written from these codes)
    /// and frees their memory; `false`, changing nothing, when it does not fit.
    pub(crate) fn adopt(&mut self, mapped: Slab<i8>) -> bool {
        mapped.len().is_multiple_of(self.dim + 4) && self.bytes.adopt(mapped)
    }

    /// The code of `slot`.
    #[inline(always)]
    pub(crate) fn code(&self, slot: u32) -> Code<'_> {
        let stride = self.dim + 4;
        let at = slot as usize * stride;
        let (bytes, scale) = self.bytes.range(at, stride).split_at(self.dim);
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
        self.arch.dispatch(Sims {
            codes: self,
            q,
            slots: &[slot],
            out: None,
        })
    }

    /// The approximate similarities of `q` and each of `slots`, appended to `out`: one
    /// dispatch for a node's neighbours.
    pub(crate) fn sims(&self, q: Code<'_>, slots: &[u32], out: &mut Vec<f32>) {
        self.arch.dispatch(Sims {
            codes: self,
            q,
            slots,
            out: Some(out),
        });
    }
}

/// Similarities of one code to several slots, compiled for the CPU's widest instructions;
/// without `out`, the similarity to the only slot is returned.
struct Sims<'a> {
    codes: &'a Codes,
    q: Code<'a>,
    slots: &'a [u32],
    out: Option<&'a mut Vec<f32>>,
}

impl WithSimd for Sims<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> f32 {
        let sim = |slot: u32| {
            let c = self.codes.code(slot);
            dot_i8(self.q.bytes, c.bytes) as f32 * self.q.scale * c.scale
        };
        match self.out {
            Some(out) => {
                // Each code is a few cache lines scattered over a graph's worth of memory, so a
                // walk waits on memory: reading one byte of every line first puts all the
                // misses in flight at once, where a dot product per code took them in turn.
                let stride = self.codes.dim + 4;
                let mut touched = 0i8;
                for &s in self.slots {
                    let at = s as usize * stride;
                    for line in self.codes.bytes.range(at, stride).iter().step_by(64) {
                        touched ^= *line;
                    }
                }
                std::hint::black_box(touched);
                for &s in self.slots {
                    out.push(sim(s));
                }
                0.0
            }
            None => self.slots.first().map_or(0.0, |&s| sim(s)),
        }
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
/// in 15 bits) so that the compiler vectorizes it; inlined into [`Sims`] so that it is
/// compiled with that dispatch's instructions.
#[inline(always)]
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
    fn similarities_of_many_slots_are_each_slots_own_and_the_integer_product() {
        // 300 components: a whole number of 16- and 32-lane blocks and a remainder.
        let dim = 300;
        let data: Vec<f32> = (0..64).flat_map(|i| unit(i + 7, dim)).collect();
        let codes = Codes::of(dim, &data);
        let qc = QueryCode::of(&unit(5, dim));
        let slots: Vec<u32> = (0..64).rev().step_by(3).collect();
        let mut many = vec![-9.0];
        codes.sims(qc.code(), &slots, &mut many);
        assert_eq!(many.len(), 1 + slots.len(), "appended after what was there");
        for (&slot, &sim) in slots.iter().zip(&many[1..]) {
            let c = codes.code(slot);
            let plain: i32 = qc
                .code()
                .bytes
                .iter()
                .zip(c.bytes)
                .map(|(a, b)| i32::from(*a) * i32::from(*b))
                .sum();
            assert_eq!(sim, plain as f32 * qc.code().scale * c.scale, "{slot}");
            assert_eq!(sim, codes.sim(qc.code(), slot), "{slot}");
        }
    }

    #[test]
    fn a_zero_vector_codes_to_zero_and_matches_nothing() {
        let codes = Codes::of(4, &[0.0; 4]);
        let q = QueryCode::of(&[0.5, 0.5, 0.5, 0.5]);
        assert_eq!(codes.sim(q.code(), 0), 0.0);
    }
}
