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

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};
use serde_json::Value;

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

/// `y = x Wᵀ + b`.
struct Linear {
    /// `Wᵀ`, `[in, out]` row-major: the matrix product then reads the weights row by row,
    /// where PyTorch's `[out, in]` would have it gather every column with a stride, which cost
    /// more than the arithmetic for a short query.
    weight_t: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value stacked into one `[3h, h]` product.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
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

    fn linear(&mut self, prefix: &str, inputs: usize, outputs: usize) -> Result<Linear, String> {
        Ok(Linear::new(
            &self.take(&format!("{prefix}.weight"), &[outputs, inputs])?,
            self.take(&format!("{prefix}.bias"), &[outputs])?,
            inputs,
        ))
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
    /// Loads the weights for `shape` from a safetensors file's bytes.
    pub(crate) fn load(shape: Shape, safetensors: &[u8]) -> Result<Self, String> {
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
            let q = t.linear(&format!("{p}.attention.self.query"), h, h)?;
            let k = t.linear(&format!("{p}.attention.self.key"), h, h)?;
            let v = t.linear(&format!("{p}.attention.self.value"), h, h)?;
            let qkv = Linear::stack(&[q, k, v]);
            layers.push(Layer {
                qkv,
                attention_out: t.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: t.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                up: t.linear(&format!("{p}.intermediate.dense"), h, shape.intermediate)?,
                down: t.linear(&format!("{p}.output.dense"), shape.intermediate, h)?,
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
        })
    }

    /// Mean-pooled, L2-normalized embeddings of token sequences (each with its special tokens,
    /// none longer than the position table, none empty).
    pub(crate) fn embed(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>, String> {
        let s = self.shape;
        let h = s.hidden;
        let total: usize = sequences.iter().map(|q| q.len()).sum();
        let mut x = vec![0f32; total * h];
        let mut row = 0;
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
                let out = &mut x[row * h..(row + 1) * h];
                let word = &self.words[id * h..(id + 1) * h];
                let place = &self.positions[pos * h..(pos + 1) * h];
                for (((o, w), p), g) in out.iter_mut().zip(word).zip(place).zip(&self.segment) {
                    *o = w + p + g;
                }
                row += 1;
            }
        }
        layer_norm(&mut x, &self.embedding_norm, h, s.eps);

        let mut qkv = vec![0f32; total * 3 * h];
        let mut context = vec![0f32; total * h];
        let mut projected = vec![0f32; total * h];
        let mut up = vec![0f32; total * s.intermediate];
        let longest = sequences.iter().map(|q| q.len()).max().unwrap_or(0);
        let mut scores = vec![0f32; longest * longest];
        for layer in &self.layers {
            layer.qkv.apply(&x, &mut qkv, total);
            self.attend(sequences, &qkv, &mut context, &mut scores);
            layer.attention_out.apply(&context, &mut projected, total);
            for (p, r) in projected.iter_mut().zip(&x) {
                *p += r;
            }
            layer_norm(&mut projected, &layer.attention_norm, h, s.eps);
            layer.up.apply(&projected, &mut up, total);
            for v in &mut up {
                *v = gelu(*v);
            }
            layer.down.apply(&up, &mut x, total);
            for (o, r) in x.iter_mut().zip(&projected) {
                *o += r;
            }
            layer_norm(&mut x, &layer.output_norm, h, s.eps);
        }

        let mut out = Vec::with_capacity(sequences.len());
        let mut start = 0;
        for seq in sequences {
            let mut mean = vec![0f64; h];
            for r in start..start + seq.len() {
                for (m, v) in mean.iter_mut().zip(&x[r * h..(r + 1) * h]) {
                    *m += f64::from(*v);
                }
            }
            start += seq.len();
            let norm = mean.iter().map(|m| m * m).sum::<f64>().sqrt().max(1e-12);
            out.push(mean.iter().map(|m| (m / norm) as f32).collect());
        }
        Ok(out)
    }

    /// Self-attention of every text over its own tokens, head by head, into `context`.
    fn attend(&self, sequences: &[&[u32]], qkv: &[f32], context: &mut [f32], scores: &mut [f32]) {
        let h = self.shape.hidden;
        let heads = self.shape.heads;
        let dh = h / heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let stride = 3 * h;
        let mut start = 0;
        for seq in sequences {
            let n = seq.len();
            let rows = &qkv[start * stride..(start + n) * stride];
            let out = &mut context[start * h..(start + n) * h];
            for head in 0..heads {
                let (q, k, v) = (head * dh, h + head * dh, 2 * h + head * dh);
                let keys = view(rows, k, (n, dh), stride);
                let mut probs = view_mut(&mut scores[..n * n], 0, (n, n), n);
                general_mat_mul(
                    scale,
                    &view(rows, q, (n, dh), stride),
                    &keys.t(),
                    0.0,
                    &mut probs,
                );
                for r in probs.rows_mut() {
                    softmax(
                        r.into_slice()
                            .expect("rows of a standard layout are contiguous"),
                    );
                }
                general_mat_mul(
                    1.0,
                    &probs.view(),
                    &view(rows, v, (n, dh), stride),
                    0.0,
                    &mut view_mut(out, head * dh, (n, dh), h),
                );
            }
            start += n;
        }
    }
}

impl Linear {
    /// From PyTorch's `[out, in]` weight.
    fn new(weight: &[f32], bias: Vec<f32>, inputs: usize) -> Self {
        let outputs = bias.len();
        let mut weight_t = vec![0f32; weight.len()];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            for (i, w) in row.iter().enumerate() {
                weight_t[i * outputs + o] = *w;
            }
        }
        Self {
            weight_t,
            bias,
            inputs,
            outputs,
        }
    }

    /// The layers side by side: one product gives their outputs concatenated.
    fn stack(parts: &[Self]) -> Self {
        let inputs = parts[0].inputs;
        let outputs: usize = parts.iter().map(|p| p.outputs).sum();
        let mut weight_t = Vec::with_capacity(inputs * outputs);
        for i in 0..inputs {
            for p in parts {
                weight_t.extend_from_slice(&p.weight_t[i * p.outputs..(i + 1) * p.outputs]);
            }
        }
        Self {
            weight_t,
            bias: parts.iter().flat_map(|p| p.bias.iter().copied()).collect(),
            inputs,
            outputs,
        }
    }

    /// `out = x Wᵀ + b` for `rows` rows.
    fn apply(&self, x: &[f32], out: &mut [f32], rows: usize) {
        assert!(x.len() >= rows * self.inputs && out.len() >= rows * self.outputs);
        for r in out[..rows * self.outputs].chunks_exact_mut(self.outputs) {
            r.copy_from_slice(&self.bias);
        }
        let x = view(x, 0, (rows, self.inputs), self.inputs);
        let w = view(&self.weight_t, 0, (self.inputs, self.outputs), self.outputs);
        let mut out = view_mut(out, 0, (rows, self.outputs), self.outputs);
        general_mat_mul(1.0, &x, &w, 1.0, &mut out);
    }
}

/// A `rows × cols` matrix inside `data` from `offset`, each row `stride` floats after the last.
fn view(
    data: &[f32],
    offset: usize,
    (rows, cols): (usize, usize),
    stride: usize,
) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((rows, cols).strides((stride, 1)), &data[offset..])
        .expect("the buffers are sized for the model's shape")
}

fn view_mut(
    data: &mut [f32],
    offset: usize,
    (rows, cols): (usize, usize),
    stride: usize,
) -> ArrayViewMut2<'_, f32> {
    ArrayViewMut2::from_shape((rows, cols).strides((stride, 1)), &mut data[offset..])
        .expect("the buffers are sized for the model's shape")
}

fn layer_norm(x: &mut [f32], norm: &Norm, width: usize, eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let n = width as f32;
        let mean = row.iter().sum::<f32>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// BERT's GELU: `x · Φ(x)` with the normal CDF.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function to within 1.5e-7 (Abramowitz and Stegun 7.1.26): below f32's resolution
/// of GELU's output, at a third of the cost of a correctly rounded one.
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
    let y = 1.0 - poly * (-z * z).exp();
    y.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

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
