//! The encoder's matrix products, `out = x Wᵀ + b`, written for the few rows of a query.
//!
//! A general GEMM copies ("packs") both operands into cache-friendly panels on every call. For a
//! batch of thousands of token rows that copy is paid back many times over; for a question of a
//! dozen tokens, packing the weights costs about as much as multiplying them, on every layer of
//! every query. Here the weights are packed once, at load, into panels of [`LANES`] output
//! columns (`[inputs][LANES]` each, contiguous), and a product streams each panel once while
//! [`ROWS`] rows of `x` accumulate in registers.
//!
//! The loops are plain safe Rust over fixed-size arrays, which the compiler vectorizes; the
//! product runs inside [`pulp::Arch::dispatch`], which compiles it a second time with AVX2 and
//! FMA and picks that copy when the CPU has them (the build's baseline is SSE2).
//!
//! Weights are f32 or int8. Int8 panels keep one scale per output column (a row of PyTorch's
//! weight), `w ≈ q · scale`, so the scale is applied once per output after the sum, and the
//! weights take a quarter of the memory: all six layers of MiniLM fit in a server's L3 cache.

use std::ops::Range;

use pulp::{Arch, Simd, WithSimd};

/// Output columns per panel: two 256-bit vectors.
pub(crate) const LANES: usize = 16;
/// Rows of `x` per register block.
pub(crate) const ROWS: usize = 4;
/// The bytes of packed rows a product keeps in cache while the panels pass over them.
const TILE_BYTES: usize = 384 << 10;

/// A weight matrix packed into panels of output columns.
pub(crate) struct Panels {
    weights: Weights,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

enum Weights {
    F32(Vec<f32>),
    /// The codes, and one scale per output column (padded to whole panels).
    Int8(Vec<i8>, Vec<f32>),
}

/// How the encoder stores the weights of its large products (the attention and feed-forward
/// matrices; embeddings and norms stay f32).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// The checkpoint's own f32 weights.
    #[default]
    F32,
    /// Int8 codes with one f32 scale per output: a quarter of the memory traffic.
    Int8,
}

impl Panels {
    /// From PyTorch's `[outputs, inputs]` row-major weight and its bias.
    pub(crate) fn new(weight: &[f32], bias: Vec<f32>, inputs: usize, precision: Precision) -> Self {
        let outputs = bias.len();
        assert_eq!(weight.len(), inputs * outputs, "the weight fits its shape");
        let panels = outputs.div_ceil(LANES);
        let place = |o: usize, i: usize| ((o / LANES) * inputs + i) * LANES + o % LANES;
        let weights = match precision {
            Precision::F32 => {
                let mut data = vec![0f32; panels * inputs * LANES];
                for (o, row) in weight.chunks_exact(inputs).enumerate() {
                    for (i, w) in row.iter().enumerate() {
                        data[place(o, i)] = *w;
                    }
                }
                Weights::F32(data)
            }
            Precision::Int8 => {
                let mut codes = vec![0i8; panels * inputs * LANES];
                let mut scales = vec![0f32; panels * LANES];
                for (o, row) in weight.chunks_exact(inputs).enumerate() {
                    let max = row.iter().fold(0f32, |m, w| m.max(w.abs()));
                    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
                    scales[o] = scale;
                    for (i, w) in row.iter().enumerate() {
                        codes[place(o, i)] = (w / scale).round().clamp(-127.0, 127.0) as i8;
                    }
                }
                Weights::Int8(codes, scales)
            }
        };
        Self {
            weights,
            bias,
            inputs,
            outputs,
        }
    }

    /// Several matrices over the same input side by side (query, key and value): one product
    /// gives their outputs concatenated.
    pub(crate) fn stacked(
        parts: &[(&[f32], Vec<f32>)],
        inputs: usize,
        precision: Precision,
    ) -> Self {
        let weight: Vec<f32> = parts.iter().flat_map(|(w, _)| w.iter().copied()).collect();
        let bias: Vec<f32> = parts.iter().flat_map(|(_, b)| b.iter().copied()).collect();
        Self::new(&weight, bias, inputs, precision)
    }

    pub(crate) fn inputs(&self) -> usize {
        self.inputs
    }

    pub(crate) fn outputs(&self) -> usize {
        self.outputs
    }

    pub(crate) fn panels(&self) -> usize {
        self.outputs.div_ceil(LANES)
    }

    /// Bytes the weights take.
    #[cfg(test)]
    pub(crate) fn weight_bytes(&self) -> usize {
        match &self.weights {
            Weights::F32(w) => w.len() * 4,
            Weights::Int8(q, s) => q.len() + s.len() * 4,
        }
    }

    /// `out = x Wᵀ + b` for `rows` rows of `x` (each `inputs` long) into `out` (rows
    /// `outputs` long), with `x` packed into `scratch` on the way.
    pub(crate) fn apply(
        &self,
        arch: Arch,
        x: &[f32],
        rows: usize,
        out: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        pack_rows(x, rows, self.inputs, scratch);
        self.apply_packed(arch, scratch, rows, out, self.outputs, 0..self.panels());
    }

    /// The output columns of `panels` only, for `rows` rows already packed by [`pack_rows`],
    /// written to `out` whose rows are `stride` long, from its column 0: so two threads can each
    /// take a share of the panels into buffers of their own.
    pub(crate) fn apply_packed(
        &self,
        arch: Arch,
        packed: &[f32],
        rows: usize,
        out: &mut [f32],
        stride: usize,
        panels: Range<usize>,
    ) {
        let k = self.inputs;
        assert!(packed.len() >= rows.div_ceil(ROWS) * k * ROWS);
        let width = (panels.end * LANES).min(self.outputs) - panels.start * LANES;
        assert!(width <= stride && out.len() >= (rows.max(1) - 1) * stride + width);
        arch.dispatch(Product {
            panels: self,
            packed,
            rows,
            out,
            stride,
            range: panels,
        });
    }

    /// The loops of [`Panels::apply_packed`], inlined into each instruction set's copy.
    #[inline(always)]
    fn product(&self, job: Product<'_>) {
        let Product {
            packed,
            rows,
            out,
            stride,
            range: panels,
            ..
        } = job;
        let k = self.inputs;
        let first = panels.start * LANES;
        // A batch's rows go a tile at a time, each tile small enough to stay in the core's L2
        // cache while every panel passes over it; a query's rows are one tile.
        let tile = (TILE_BYTES / (k * ROWS * 4)).max(1);
        let blocks = rows.div_ceil(ROWS);
        for tile_start in (0..blocks).step_by(tile) {
            for p in panels.clone() {
                let cols = p * LANES..((p + 1) * LANES).min(self.outputs);
                let span = tile_start * k * ROWS..(blocks.min(tile_start + tile)) * k * ROWS;
                for (b, xs) in packed[span].chunks_exact(k * ROWS).enumerate() {
                    let b = tile_start + b;
                    let acc = match &self.weights {
                        Weights::F32(w) => block_f32(xs, &w[p * k * LANES..(p + 1) * k * LANES]),
                        Weights::Int8(q, s) => {
                            let mut acc = block_i8(xs, &q[p * k * LANES..(p + 1) * k * LANES]);
                            let scale = &s[p * LANES..(p + 1) * LANES];
                            for row in &mut acc {
                                for (a, s) in row.iter_mut().zip(scale) {
                                    *a *= s;
                                }
                            }
                            acc
                        }
                    };
                    let bias = &self.bias[cols.clone()];
                    for (r, acc) in acc.iter().enumerate().take(rows - b * ROWS) {
                        let start = (b * ROWS + r) * stride + cols.start - first;
                        let dest = &mut out[start..start + cols.len()];
                        for ((d, a), bias) in dest.iter_mut().zip(acc).zip(bias) {
                            *d = a + bias;
                        }
                    }
                }
            }
        }
    }
}

/// A product's arguments, for [`Arch::dispatch`]: a closure would be compiled once, outside
/// the instruction set's context, unless the compiler chose to inline it.
struct Product<'a> {
    panels: &'a Panels,
    packed: &'a [f32],
    rows: usize,
    out: &'a mut [f32],
    stride: usize,
    range: Range<usize>,
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        self.panels.product(self);
    }
}

/// `x`'s rows in blocks of [`ROWS`], each block `[inputs][ROWS]` (a block's values for one input
/// side by side), the last block padded with zero rows.
pub(crate) fn pack_rows(x: &[f32], rows: usize, inputs: usize, packed: &mut Vec<f32>) {
    let blocks = rows.div_ceil(ROWS);
    packed.clear();
    packed.resize(blocks * inputs * ROWS, 0.0);
    for (r, row) in x.chunks_exact(inputs).take(rows).enumerate() {
        let block = &mut packed[(r / ROWS) * inputs * ROWS..];
        for (i, v) in row.iter().enumerate() {
            block[i * ROWS + r % ROWS] = *v;
        }
    }
}

/// One block of rows times one f32 panel.
#[inline(always)]
fn block_f32(xs: &[f32], panel: &[f32]) -> [[f32; LANES]; ROWS] {
    let mut acc = [[0f32; LANES]; ROWS];
    let (xs, _) = xs.as_chunks::<ROWS>();
    let (ws, _) = panel.as_chunks::<LANES>();
    for (x, w) in xs.iter().zip(ws) {
        for (row, xv) in acc.iter_mut().zip(x) {
            for (a, w) in row.iter_mut().zip(w) {
                *a += xv * w;
            }
        }
    }
    acc
}

/// One block of rows times one int8 panel, before the columns' scales.
#[inline(always)]
fn block_i8(xs: &[f32], panel: &[i8]) -> [[f32; LANES]; ROWS] {
    let mut acc = [[0f32; LANES]; ROWS];
    let (xs, _) = xs.as_chunks::<ROWS>();
    let (ws, _) = panel.as_chunks::<LANES>();
    for (x, w) in xs.iter().zip(ws) {
        let w = w.map(f32::from);
        for (row, xv) in acc.iter_mut().zip(x) {
            for (a, w) in row.iter_mut().zip(&w) {
                *a += xv * w;
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed-seed generator for test inputs.
    fn randoms(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    /// The straightforward `x Wᵀ + b` in f64.
    fn reference(x: &[f32], w: &[f32], b: &[f32], rows: usize, k: usize) -> Vec<f64> {
        let n = b.len();
        let mut out = vec![0f64; rows * n];
        for r in 0..rows {
            for o in 0..n {
                let dot: f64 = (0..k)
                    .map(|i| f64::from(x[r * k + i]) * f64::from(w[o * k + i]))
                    .sum();
                out[r * n + o] = dot + f64::from(b[o]);
            }
        }
        out
    }

    fn product(panels: &Panels, x: &[f32], rows: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; rows * panels.outputs()];
        panels.apply(Arch::new(), x, rows, &mut out, &mut Vec::new());
        out
    }

    #[test]
    fn f32_panels_match_the_straightforward_product_for_any_shape() {
        // Row counts around the block size, outputs that do not fill the last panel, and batches
        // of more than one tile of rows.
        let shapes = [
            (1, 8, 16),
            (3, 5, 7),
            (4, 33, 40),
            (13, 64, 100),
            (17, 384, 48),
            (300, 384, 20),
            (70, 1536, 17),
        ];
        for (rows, k, n) in shapes {
            let x = randoms(rows * k, 1 + rows as u64);
            let w = randoms(n * k, 2 + n as u64);
            let b = randoms(n, 3);
            let panels = Panels::new(&w, b.clone(), k, Precision::F32);
            let got = product(&panels, &x, rows);
            for (g, want) in got.iter().zip(reference(&x, &w, &b, rows, k)) {
                assert!(
                    (f64::from(*g) - want).abs() < 1e-4,
                    "{rows}x{k}x{n}: {g} vs {want}"
                );
            }
        }
    }

    #[test]
    fn int8_panels_stay_within_the_quantization_bound() {
        let (rows, k, n) = (9, 384, 70);
        let x = randoms(rows * k, 11);
        let w = randoms(n * k, 12);
        let b = randoms(n, 13);
        let panels = Panels::new(&w, b.clone(), k, Precision::Int8);
        assert!(panels.weight_bytes() < n.div_ceil(LANES) * LANES * k * 2);
        let got = product(&panels, &x, rows);
        let want = reference(&x, &w, &b, rows, k);
        for r in 0..rows {
            // Each weight is off by at most half a step (max |w| / 254), so an output by at most
            // that times the row's L1 norm.
            let bound = (0..n)
                .map(|o| {
                    w[o * k..(o + 1) * k]
                        .iter()
                        .fold(0f32, |m, v| m.max(v.abs()))
                })
                .fold(0f32, f32::max)
                / 254.0
                * x[r * k..(r + 1) * k].iter().map(|v| v.abs()).sum::<f32>();
            let mut worst = 0f64;
            for o in 0..n {
                let err = (f64::from(got[r * n + o]) - want[r * n + o]).abs();
                assert!(
                    err <= f64::from(bound) + 1e-4,
                    "row {r} col {o}: {err} > {bound}"
                );
                worst = worst.max(err);
            }
            // Not exact either: the codes are a real approximation.
            assert!(worst > 0.0);
        }
    }

    #[test]
    fn a_share_of_the_panels_fills_its_own_columns() {
        let (rows, k, n) = (6, 40, 64);
        let x = randoms(rows * k, 21);
        let w = randoms(n * k, 22);
        let b = randoms(n, 23);
        let panels = Panels::new(&w, b, k, Precision::F32);
        let whole = product(&panels, &x, rows);
        let mut packed = Vec::new();
        pack_rows(&x, rows, k, &mut packed);
        // The last two of four panels, into a buffer 32 columns wide.
        let mut half = vec![0f32; rows * 32];
        panels.apply_packed(Arch::new(), &packed, rows, &mut half, 32, 2..4);
        for r in 0..rows {
            assert_eq!(&half[r * 32..(r + 1) * 32], &whole[r * n + 32..(r + 1) * n]);
        }
    }
}
