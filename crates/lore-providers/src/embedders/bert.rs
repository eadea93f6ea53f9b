//! A BERT encoder for sentence embeddings, written for one job: turning a few short texts into
//! mean-pooled vectors on a CPU, quickly.
//!
//! Why not a general tensor library: a recall embeds one short query while an agent waits, and a
//! general library spends most of that time on per-operation bookkeeping (allocating, broadcasting,
//! padding every text of a batch to the longest). Here the texts of a batch are not padded at all:
//! their tokens are laid end to end as the rows of one matrix, so every linear layer is one matrix
//! product over real tokens only, and attention runs per text over its own tokens. Buffers are
//! allocated once per call and reused by every layer.
//!
//! The arithmetic is BERT's (post-norm layers, exact erf GELU, LayerNorm with the config's epsilon),
//! in f32, so the vectors agree with the reference implementation to about 1e-6.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pulp::{Arch, Simd, WithSimd};
use serde_json::Value;

use super::kernel::{Panels, Precision};
use super::pair::{Helper, Pair};

/// What the encoder needs from `config.json`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub max_positions: usize,
    pub vocab: usize,
    pub eps: f32,
}

impl Shape {
    /// Reads BERT's config; refuses activations other than GELU, since the weights were trained
    /// for the one they name.
    pub(crate) fn from_config(config: &Value) -> Result<Self, String> {
        let int = |key: &str| {
            config
                .get(key)
                .and_then(Value::as_u64)
                .filter(|&n| n > 0)
                .map(|n| n as usize)
                .ok_or_else(|| format!("{key} is missing or not a positive integer"))
        };
        let act = config
            .get("hidden_act")
            .and_then(Value::as_str)
            .unwrap_or("gelu");
        if act != "gelu" {
            return Err(format!(
                "hidden_act {act:?}; only \"gelu\" (erf) is supported"
            ));
        }
        if let Some(kind) = config
            .get("position_embedding_type")
            .and_then(Value::as_str)
            && kind != "absolute"
        {
            return Err(format!(
                "position_embedding_type {kind:?}; only \"absolute\" is supported"
            ));
        }
        let shape = Self {
            hidden: int("hidden_size")?,
            heads: int("num_attention_heads")?,
            intermediate: int("intermediate_size")?,
            layers: int("num_hidden_layers")?,
            max_positions: int("max_position_embeddings")?,
            vocab: int("vocab_size")?,
            eps: config
                .get("layer_norm_eps")
                .and_then(Value::as_f64)
                .unwrap_or(1e-12) as f32,
        };
        if !shape.hidden.is_multiple_of(shape.heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                shape.hidden, shape.heads
            ));
        }
        Ok(shape)
    }
}

struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked into one `[3h, h]` product.
    qkv: Arc<Panels>,
    attention_out: Arc<Panels>,
    attention_norm: Norm,
    up: Arc<Panels>,
    down: Arc<Panels>,
    output_norm: Norm,
}

/// The loaded encoder.
pub(crate) struct Bert {
    shape: Shape,
    words: Vec<f32>,
    positions: Vec<f32>,
    /// Token type 0's embedding: sentence embeddings use one segment.
    segment: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// The instruction set the products and element-wise steps run with.
    arch: Arch,
    /// Whether a short input's products are shared with a helper thread while no other pass
    /// runs.
    split_queries: bool,
    helper: Helper,
}

/// Tokens up to which an input is split over two threads: a question, not a batch of lessons
/// (which keeps the cores busy with one chunk each).
const SPLIT_TOKENS: usize = 64;

/// Forward passes under way in the process, over every loaded model.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// One forward pass counted in [`RUNNING`] while it lives. A question is split over two
/// threads only when it is the only pass: a server answering several at once, or indexing
/// while it answers, already has a thread per core, and a helper would only compete with them.
struct Running {
    others: usize,
}

impl Running {
    fn enter() -> Self {
        Self {
            others: RUNNING.fetch_add(1, Ordering::AcqRel),
        }
    }

    fn alone(&self) -> bool {
        self.others == 0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The tensors of a safetensors file, read as f32.
struct Tensors {
    by_name: HashMap<String, (Vec<usize>, Vec<f32>)>,
}

impl Tensors {
    fn parse(bytes: &[u8]) -> Result<Self, String> {
        let head_len = bytes
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")) as usize)
            .ok_or("shorter than a safetensors header")?;
        let head = bytes
            .get(8..8usize.saturating_add(head_len))
            .ok_or("the header runs past the end of the file")?;
        let head: serde_json::Map<String, Value> =
            serde_json::from_slice(head).map_err(|e| format!("the header is not JSON: {e}"))?;
        let data = &bytes[8 + head_len..];
        let mut by_name = HashMap::new();
        for (name, info) in head {
            if name == "__metadata__" {
                continue;
            }
            let dtype = info.get("dtype").and_then(Value::as_str).unwrap_or("");
            let shape: Vec<usize> = info
                .get("shape")
                .and_then(Value::as_array)
                .map(|s| {
                    s.iter()
                        .filter_map(Value::as_u64)
                        .map(|n| n as usize)
                        .collect()
                })
                .unwrap_or_default();
            let span = info
                .get("data_offsets")
                .and_then(Value::as_array)
                .and_then(|o| Some((o.first()?.as_u64()? as usize, o.get(1)?.as_u64()? as usize)))
                .filter(|&(from, to)| from <= to && to <= data.len())
                .ok_or_else(|| format!("tensor {name}: bad data_offsets"))?;
            let raw = &data[span.0..span.1];
            let values: Vec<f32> = match dtype {
                "F32" => raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().expect("four bytes")))
                    .collect(),
                "F16" => raw
                    .chunks_exact(2)
                    .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                    .collect(),
                "BF16" => raw
                    .chunks_exact(2)
                    .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                    .collect(),
                // Integer tensors (position IDs) are not weights; skip them.
                _ => continue,
            };
            if values.len() != shape.iter().product::<usize>() {
                return Err(format!("tensor {name}: its data does not fill its shape"));
            }
            // Some exports prefix every name with the model's attribute (`bert.`).
            let name = name.strip_prefix("bert.").unwrap_or(&name).to_owned();
            by_name.insert(name, (shape, values));
        }
        Ok(Self { by_name })
    }

    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let (found, values) = self
            .by_name
            .remove(name)
            .ok_or_else(|| format!("tensor {name} is missing"))?;
        if found != shape {
            return Err(format!(
                "tensor {name} has shape {found:?}, expected {shape:?}"
            ));
        }
        Ok(values)
    }

    /// A layer's weight (PyTorch's `[outputs, inputs]`) and bias.
    fn linear(
        &mut self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), String> {
        Ok((
            self.take(&format!("{prefix}.weight"), &[outputs, inputs])?,
            self.take(&format!("{prefix}.bias"), &[outputs])?,
        ))
    }

    fn panels(
        &mut self,
        prefix: &str,
        (inputs, outputs): (usize, usize),
        precision: Precision,
    ) -> Result<Arc<Panels>, String> {
        let (weight, bias) = self.linear(prefix, inputs, outputs)?;
        Ok(Arc::new(Panels::new(&weight, bias, inputs, precision)))
    }

    fn norm(&mut self, prefix: &str, width: usize) -> Result<Norm, String> {
        // Old checkpoints name LayerNorm's parameters gamma and beta.
        let pick = |t: &mut Self, new: &str, old: &str| {
            let key = if t.by_name.contains_key(&format!("{prefix}.{new}")) {
                new
            } else {
                old
            };
            t.take(&format!("{prefix}.{key}"), &[width])
        };
        Ok(Norm {
            gain: pick(self, "weight", "gamma")?,
            bias: pick(self, "bias", "beta")?,
        })
    }
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        // Subnormal: exactly frac · 2⁻²⁴.
        (0, _) => {
            let v = frac as f32 * 2f32.powi(-24);
            return if sign == 0 { v } else { -v };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (frac << 13),
        _ => sign | ((exp + 112) << 23) | (frac << 13),
    };
    f32::from_bits(bits)
}

impl Bert {
    /// Loads the weights for `shape` from a safetensors file's bytes, the large products'
    /// weights stored at `precision`.
    pub(crate) fn load(
        shape: Shape,
        safetensors: &[u8],
        precision: Precision,
        split_queries: bool,
    ) -> Result<Self, String> {
        let mut t = Tensors::parse(safetensors)?;
        let h = shape.hidden;
        let segments = t
            .by_name
            .get("embeddings.token_type_embeddings.weight")
            .map_or(1, |(s, _)| s.first().copied().unwrap_or(1));
        let mut segment = t.take("embeddings.token_type_embeddings.weight", &[segments, h])?;
        segment.truncate(h);
        let words = t.take("embeddings.word_embeddings.weight", &[shape.vocab, h])?;
        let positions = t.take(
            "embeddings.position_embeddings.weight",
            &[shape.max_positions, h],
        )?;
        let embedding_norm = t.norm("embeddings.LayerNorm", h)?;
        let mut layers = Vec::with_capacity(shape.layers);
        for i in 0..shape.layers {
            let p = format!("encoder.layer.{i}");
            let (q, qb) = t.linear(&format!("{p}.attention.self.query"), h, h)?;
            let (k, kb) = t.linear(&format!("{p}.attention.self.key"), h, h)?;
            let (v, vb) = t.linear(&format!("{p}.attention.self.value"), h, h)?;
            layers.push(Layer {
                qkv: Arc::new(Panels::stacked(
                    &[(&q, qb), (&k, kb), (&v, vb)],
                    h,
                    precision,
                )),
                attention_out: t.panels(
                    &format!("{p}.attention.output.dense"),
                    (h, h),
                    precision,
                )?,
                attention_norm: t.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                up: t.panels(
                    &format!("{p}.intermediate.dense"),
                    (h, shape.intermediate),
                    precision,
                )?,
                down: t.panels(
                    &format!("{p}.output.dense"),
                    (shape.intermediate, h),
                    precision,
                )?,
                output_norm: t.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(Self {
            shape,
            words,
            positions,
            segment,
            embedding_norm,
            layers,
            arch: Arch::new(),
            split_queries,
            helper: Helper::new(Arch::new()),
        })
    }

    /// Mean-pooled, L2-normalized embeddings of token sequences (each with its special tokens,
    /// none longer than the position table, none empty).
    pub(crate) fn embed(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>, String> {
        let tokens: usize = sequences.iter().map(|q| q.len()).sum();
        let running = Running::enter();
        SCRATCH.with(|cell| {
            let mut scratch = cell.take();
            let split = self.split_queries && tokens <= SPLIT_TOKENS && running.alone();
            let pair = if split { self.helper.pair() } else { None };
            let out = self.forward(sequences, &mut scratch, pair.as_ref());
            // A query's buffers are kept for the thread's next query; a large batch's are not
            // held on to.
            if scratch.floats() <= KEPT_SCRATCH {
                cell.replace(scratch);
            }
            out
        })
    }

    fn forward(
        &self,
        sequences: &[&[u32]],
        b: &mut Scratch,
        pair: Option<&Pair<'_>>,
    ) -> Result<Vec<Vec<f32>>, String> {
        let s = self.shape;
        let h = s.hidden;
        let arch = self.arch;
        let total: usize = sequences.iter().map(|q| q.len()).sum();
        let longest = sequences.iter().map(|q| q.len()).max().unwrap_or(0);
        self.embed_tokens(sequences, sized(&mut b.x, total * h))?;
        arch.dispatch(Step::Norm {
            x: &mut b.x,
            residual: None,
            norm: &self.embedding_norm,
            width: h,
            eps: s.eps,
        });
        let qkv = sized(&mut b.qkv, total * 3 * h);
        let context = sized(&mut b.context, total * h);
        let projected = sized(&mut b.projected, total * h);
        let up = sized(&mut b.up, total * s.intermediate);
        let scores = sized(&mut b.scores, longest);
        let (x, packed) = (&mut b.x, &mut b.packed);
        for layer in &self.layers {
            let product = |panels: &Arc<Panels>,
                           x: &[f32],
                           out: &mut [f32],
                           packed: &mut Vec<f32>| {
                match pair {
                    Some(pair) => pair.apply(arch, panels, x, total, out, packed),
                    None => panels.apply(arch, x, total, out, packed),
                }
            };
            product(&layer.qkv, x, qkv, packed);
            self.attend(sequences, qkv, context, scores);
            product(&layer.attention_out, context, projected, packed);
            arch.dispatch(Step::Norm {
                x: projected,
                residual: Some(x),
                norm: &layer.attention_norm,
                width: h,
                eps: s.eps,
            });
            product(&layer.up, projected, up, packed);
            arch.dispatch(Step::Gelu(up));
            product(&layer.down, up, x, packed);
            arch.dispatch(Step::Norm {
                x,
                residual: Some(projected),
                norm: &layer.output_norm,
                width: h,
                eps: s.eps,
            });
        }
        Ok(mean_pool(sequences, x, h))
    }

    /// Each token's word, position and segment embeddings summed into its row of `x`.
    fn embed_tokens(&self, sequences: &[&[u32]], x: &mut [f32]) -> Result<(), String> {
        let s = self.shape;
        let h = s.hidden;
        let mut rows = x.chunks_exact_mut(h);
        for seq in sequences {
            if seq.is_empty() || seq.len() > s.max_positions {
                return Err(format!(
                    "a sequence of {} tokens (1 to {} fit)",
                    seq.len(),
                    s.max_positions
                ));
            }
            for (pos, &id) in seq.iter().enumerate() {
                let id = id as usize;
                if id >= s.vocab {
                    return Err(format!(
                        "token {id} is outside the vocabulary of {}",
                        s.vocab
                    ));
                }
                let out = rows.next().expect("x has a row per token");
                let word = &self.words[id * h..(id + 1) * h];
                let place = &self.positions[pos * h..(pos + 1) * h];
                for (((o, w), p), g) in out.iter_mut().zip(word).zip(place).zip(&self.segment) {
                    *o = w + p + g;
                }
            }
        }
        Ok(())
    }

    /// Self-attention of every text over its own tokens, head by head, into `context`.
    fn attend(&self, sequences: &[&[u32]], qkv: &[f32], context: &mut [f32], scores: &mut [f32]) {
        self.arch.dispatch(Attend {
            hidden: self.shape.hidden,
            heads: self.shape.heads,
            sequences,
            qkv,
            context,
            scores,
        });
    }
}

/// The element-wise steps of a layer, for [`Arch::dispatch`] (a closure would be compiled once,
/// outside the instruction set's context, unless the compiler chose to inline it).
enum Step<'a> {
    /// `x += residual`, then LayerNorm over rows of `width`.
    Norm {
        x: &'a mut [f32],
        residual: Option<&'a [f32]>,
        norm: &'a Norm,
        width: usize,
        eps: f32,
    },
    Gelu(&'a mut [f32]),
}

impl WithSimd for Step<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        match self {
            Step::Norm {
                x,
                residual,
                norm,
                width,
                eps,
            } => {
                if let Some(r) = residual {
                    add(x, r);
                }
                layer_norm(x, norm, width, eps);
            }
            Step::Gelu(v) => v.iter_mut().for_each(|v| *v = gelu(*v)),
        }
    }
}

/// Attention's arguments, for [`Arch::dispatch`].
struct Attend<'a> {
    hidden: usize,
    heads: usize,
    sequences: &'a [&'a [u32]],
    qkv: &'a [f32],
    context: &'a mut [f32],
    scores: &'a mut [f32],
}

impl WithSimd for Attend<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        let h = self.hidden;
        let dh = h / self.heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let stride = 3 * h;
        let mut start = 0;
        for seq in self.sequences {
            let n = seq.len();
            let rows = &self.qkv[start * stride..(start + n) * stride];
            let out = &mut self.context[start * h..(start + n) * h];
            for head in (0..h).step_by(dh) {
                for (i, o) in out.chunks_exact_mut(h).enumerate() {
                    let q = &rows[i * stride + head..][..dh];
                    let s = &mut self.scores[..n];
                    for (sj, key) in s.iter_mut().zip(rows.chunks_exact(stride)) {
                        *sj = dot(q, &key[h + head..][..dh]) * scale;
                    }
                    softmax(s);
                    let o = &mut o[head..head + dh];
                    o.fill(0.0);
                    for (p, value) in s.iter().zip(rows.chunks_exact(stride)) {
                        for (o, v) in o.iter_mut().zip(&value[2 * h + head..][..dh]) {
                            *o += p * v;
                        }
                    }
                }
            }
            start += n;
        }
    }
}

/// Floats a thread's buffers may keep between calls: a few queries' worth.
const KEPT_SCRATCH: usize = 1 << 20;

/// The activations of one forward pass, reused by the thread's next pass.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
    packed: Vec<f32>,
}

impl Scratch {
    fn floats(&self) -> usize {
        [
            &self.x,
            &self.qkv,
            &self.context,
            &self.projected,
            &self.up,
            &self.scores,
            &self.packed,
        ]
        .iter()
        .map(|v| v.capacity())
        .sum()
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// `v` as `n` zeros, reusing its allocation.
fn sized(v: &mut Vec<f32>, n: usize) -> &mut Vec<f32> {
    v.clear();
    v.resize(n, 0.0);
    v
}

/// Each text's mean token vector, L2-normalized.
fn mean_pool(sequences: &[&[u32]], x: &[f32], h: usize) -> Vec<Vec<f32>> {
    let mut out = Vec::with_capacity(sequences.len());
    let mut rows = x.chunks_exact(h);
    for seq in sequences {
        let mut mean = vec![0f64; h];
        for row in rows.by_ref().take(seq.len()) {
            for (m, v) in mean.iter_mut().zip(row) {
                *m += f64::from(*v);
            }
        }
        let norm = mean.iter().map(|m| m * m).sum::<f64>().sqrt().max(1e-12);
        out.push(mean.iter().map(|m| (m / norm) as f32).collect());
    }
    out
}

#[inline(always)]
fn add(into: &mut [f32], other: &[f32]) {
    for (a, b) in into.iter_mut().zip(other) {
        *a += b;
    }
}

/// A sum in eight lanes, which the compiler vectorizes (a single running sum it may not
/// reorder).
#[inline(always)]
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let (chunks, rest) = values.as_chunks::<8>();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(*v);
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|v| f(*v)).sum::<f32>()
}

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, ar) = a.as_chunks::<8>();
    let (bc, br) = b.as_chunks::<8>();
    for (x, y) in ac.iter().zip(bc) {
        for ((a, x), y) in acc.iter_mut().zip(x).zip(y) {
            *a += x * y;
        }
    }
    acc.iter().sum::<f32>() + ar.iter().zip(br).map(|(x, y)| x * y).sum::<f32>()
}

#[inline(always)]
fn layer_norm(x: &mut [f32], norm: &Norm, width: usize, eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let n = width as f32;
        let mean = lane_sum(row, |v| v) / n;
        let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / lane_sum(row, |v| v);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// BERT's GELU: `x · Φ(x)` with the normal CDF.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function to within 1.5e-7 (Abramowitz and Stegun 7.1.26): below f32's resolution
/// of GELU's output, at a third of the cost of a correctly rounded one.
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_8,
        -1.453_152_1,
        1.061_405_4,
    ];
    let z = x.abs();
    let t = 1.0 / (1.0 + P * z);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let y = 1.0 - poly * exp(-z * z);
    y.copysign(x)
}

/// `eˣ` to about one unit in the last place, in arithmetic the compiler vectorizes (the
/// library's `exp` is a call per value): `x = n ln 2 + r` with `|r| ≤ ln 2 / 2`, a degree-6
/// polynomial for `eʳ` (Cephes' coefficients), and `2ⁿ` made in the exponent bits.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let e = p * r * r + r + 1.0;
    // 2ⁿ's exponent bits, read from the mantissa of n + 127 + 2²³ (an integer conversion would
    // saturate value by value, which does not vectorize).
    let biased = (n + 127.0 + 8_388_608.0).to_bits() - 0x4b00_0000;
    e * f32::from_bits(biased << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_units_in_the_last_place() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let exact = f64::from(x).exp();
            let err = (f64::from(exp(x)) - exact).abs() / exact;
            assert!(err < 2.5e-7, "exp({x}): relative error {err}");
        }
        assert!(exp(-1000.0) < 1e-37 && exp(1000.0) > 1e38);
    }

    #[test]
    fn attention_dot_and_sums_match_a_plain_loop() {
        let a: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..37).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
        assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-5);
        let total: f64 = a.iter().map(|v| f64::from(v * v)).sum();
        assert!((f64::from(lane_sum(&a, |v| v * v)) - total).abs() < 1e-5);
    }

    #[test]
    fn erf_is_within_its_bound_of_the_exact_one() {
        for i in -400..=400 {
            let x = i as f32 / 100.0;
            let exact = libm::erf(f64::from(x));
            assert!((f64::from(erf(x)) - exact).abs() < 5e-7, "erf({x})");
        }
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut r = [1.0, 3.0, 2.0, -50.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[1] > r[2] && r[2] > r[0] && r[0] > r[3]);
    }

    #[test]
    fn gelu_matches_known_values() {
        // x · Φ(x) at a few points, from the normal CDF's tables.
        for (x, want) in [
            (0.0, 0.0),
            (1.0, 0.841_344_7),
            (-1.0, -0.158_655_3),
            (2.0, 1.954_5),
        ] {
            assert!((gelu(x) - want).abs() < 1e-4, "gelu({x}) = {}", gelu(x));
        }
    }

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let norm = Norm {
            gain: vec![1.0; 4],
            bias: vec![0.5; 4],
        };
        let mut x = vec![1.0, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0];
        layer_norm(&mut x, &norm, 4, 1e-12);
        let first = &x[..4];
        assert!((first.iter().sum::<f32>() / 4.0 - 0.5).abs() < 1e-5);
        assert!(first[0] < first[3]);
        // A constant row has no spread: it becomes the bias.
        assert!(x[4..].iter().all(|v| (v - 0.5).abs() < 1e-3));
    }

    #[test]
    fn a_pass_is_alone_only_while_no_other_runs() {
        let first = Running::enter();
        assert!(first.alone());
        let second = Running::enter();
        assert!(!second.alone());
        drop(first);
        drop(second);
        assert!(Running::enter().alone());
    }

    #[test]
    fn half_precision_converts_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }

    #[test]
    fn a_truncated_or_misshapen_file_is_refused_by_name() {
        assert!(Tensors::parse(b"abc").is_err());
        let head = br#"{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}"#;
        let mut file = (head.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(head);
        file.extend_from_slice(&[0u8; 12]);
        let err = Tensors::parse(&file).err().unwrap();
        assert!(err.contains("tensor w"), "{err}");
    }
}
