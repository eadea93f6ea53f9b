//! The Embedder port and the builtin embedder.
//!
//! Vectors from two embedders live in different spaces: comparing them gives numbers that look
//! like similarities and mean nothing. So every vector travels with its [`EmbedderId`] (name and
//! dimension), and a [`super::DenseIndex`] refuses a vector or a query from any other embedder
//! with [`Error::Incompatible`], naming both, instead of ranking garbage.
//!
//! The builtin embedder needs no model, no network and no state: it hashes features of the text
//! (word unigrams and bigrams without stop words, and character trigrams of each word) into a
//! fixed number of signed buckets and L2-normalizes the sum (the "hashing trick"). It is lexical,
//! not semantic, but the character trigrams match `deploy` with `deployed` and `colour` with
//! `color`-like spellings that BM25's exact terms miss, which is what a hybrid needs from its
//! second list. It is deterministic across runs and machines (FNV-1a, no random seed), so stored
//! vectors stay valid. Neural embedders (a local model, an HTTP service) attach to the same port.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::text;
use crate::error::{Error, Result};

/// Which embedder made a vector: its name (with version) and dimension.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbedderId {
    /// A stable name, changed whenever the embedder's output changes (`builtin-hash-v1`).
    pub name: String,
    /// The vector length.
    pub dim: usize,
}

impl fmt::Display for EmbedderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} dimensions)", self.name, self.dim)
    }
}

impl EmbedderId {
    /// Refuses vectors of `other` where vectors of `self` are expected.
    ///
    /// # Errors
    /// [`Error::Incompatible`] naming both embedders.
    pub fn check(&self, other: &EmbedderId) -> Result<()> {
        if self == other {
            return Ok(());
        }
        Err(Error::Incompatible(format!(
            "the vectors were made by {self}, but the query uses {other}; re-embed with one \
             embedder or query with the one that made them"
        )))
    }
}

/// Turns text into a unit-length vector.
pub trait Embedder: Send + Sync {
    /// The embedder's identity, stored with every vector it makes.
    fn id(&self) -> EmbedderId;

    /// Embeds `text` into a vector of `self.id().dim` components with L2 norm 1 (or all zeros
    /// for a text with no features).
    ///
    /// # Errors
    /// Embedder-specific failures (a model that cannot run, a service that does not answer).
    fn embed(&self, text: &str) -> Result<Vec<f32>>;
}

/// The builtin embedder: feature hashing into `dim` signed buckets, L2-normalized.
#[derive(Clone, Debug)]
pub struct BuiltinEmbedder {
    dim: usize,
}

/// The builtin embedder's default dimension: enough buckets that a lesson's few hundred features
/// rarely collide, small enough that brute-force search over 100k vectors stays in milliseconds.
pub const BUILTIN_DIM: usize = 256;

/// Feature weights: a shared topic word counts most, a shared phrase adds to it, and shared
/// character trigrams give partial credit for a different form of the same word.
const UNIGRAM_WEIGHT: f32 = 1.0;
const BIGRAM_WEIGHT: f32 = 0.5;
const TRIGRAM_WEIGHT: f32 = 0.25;

impl Default for BuiltinEmbedder {
    fn default() -> Self {
        Self { dim: BUILTIN_DIM }
    }
}

impl BuiltinEmbedder {
    /// A builtin embedder with `dim` buckets.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a dimension of 0.
    pub fn with_dim(dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid("dimension", "must be at least 1"));
        }
        Ok(Self { dim })
    }

    fn add(&self, v: &mut [f32], feature: &[u8], weight: f32) {
        let h = fnv1a(feature);
        let bucket = (h % self.dim as u64) as usize;
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        v[bucket] += sign * weight;
    }
}

impl Embedder for BuiltinEmbedder {
    fn id(&self) -> EmbedderId {
        EmbedderId {
            name: "builtin-hash-v1".to_owned(),
            dim: self.dim,
        }
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = vec![0.0f32; self.dim];
        let terms = text::terms(text);
        for term in &terms {
            self.add(&mut v, format!("w:{term}").as_bytes(), UNIGRAM_WEIGHT);
            let padded: Vec<char> = format!("<{term}>").chars().collect();
            for gram in padded.windows(3) {
                let gram: String = gram.iter().collect();
                self.add(&mut v, format!("c:{gram}").as_bytes(), TRIGRAM_WEIGHT);
            }
        }
        for pair in terms.windows(2) {
            let feature = format!("b:{} {}", pair[0], pair[1]);
            self.add(&mut v, feature.as_bytes(), BIGRAM_WEIGHT);
        }
        normalize(&mut v);
        Ok(v)
    }
}

/// FNV-1a, 64 bits: tiny, stable across platforms and releases (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Scales `v` to unit length; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two unit vectors (their dot product); 0 when lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    f64::from(a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embed(text: &str) -> Vec<f32> {
        BuiltinEmbedder::default().embed(text).unwrap()
    }

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let v = embed("Roll back the deploy when checkout fails");
        assert_eq!(v.len(), BUILTIN_DIM);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        assert_eq!(v, embed("Roll back the deploy when checkout fails"));
        assert!(
            embed("the of and").iter().all(|x| *x == 0.0),
            "stop words only"
        );
    }

    #[test]
    fn related_texts_are_closer_than_unrelated_ones() {
        let q = embed("deployed checkout failure");
        let near = cosine(&q, &embed("roll back a deploy when checkout fails"));
        let far = cosine(&q, &embed("invoice totals need the VAT rate"));
        assert!(near > far + 0.2, "near {near}, far {far}");
    }

    #[test]
    fn a_different_embedder_is_refused_by_name() {
        let a = BuiltinEmbedder::default().id();
        let b = BuiltinEmbedder::with_dim(64).unwrap().id();
        a.check(&a).unwrap();
        let err = a.check(&b).unwrap_err().to_string();
        assert!(err.contains("256") && err.contains("64"), "{err}");
        assert!(BuiltinEmbedder::with_dim(0).is_err());
    }
}
