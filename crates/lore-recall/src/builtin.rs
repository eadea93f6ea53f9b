//! The builtin embedder.
//!
//! It needs no model and no network: it hashes features of the text
//! (word unigrams and bigrams without stop words, and character trigrams of each word) into a
//! fixed number of signed buckets and L2-normalizes the sum (the "hashing trick"). It is lexical,
//! not semantic, but the character trigrams match `deploy` with `deployed` and `colour` with
//! `color`-like spellings that BM25's exact terms miss, which is what a hybrid needs from its
//! second list. It is deterministic across runs and machines (FNV-1a, no random seed), so stored
//! vectors stay valid. Unweighted, text that every memory repeats (a speaker's name, a date
//! header) dominates such a vector, so [`Embedder::fit`] gives a copy that weights each feature
//! by its IDF in the corpus it will index; the fit is part of its identity.

use std::sync::Arc;

use lore_core::error::{Error, Result};
use lore_core::ports::embed::{Embedder, EmbedderId, normalize};

use super::text;

/// The builtin embedder: feature hashing into `dim` signed buckets, L2-normalized.
///
/// Unfitted, every feature of a kind weighs the same. [`Embedder::fit`] returns a copy fitted to
/// a corpus: each feature is then also weighted by its inverse document frequency in that corpus
/// (BM25's IDF, from counts of hashed features), so text that most memories repeat (a speaker's
/// name, a date header, a template's boilerplate) stops dominating the vector. A fitted
/// embedder's identity names its corpus, so vectors from another fit are refused.
#[derive(Clone, Debug)]
pub struct BuiltinEmbedder {
    dim: usize,
    idf: Option<Arc<FeatureIdf>>,
}

/// Document frequencies of hashed features over the corpus an embedder was fitted to.
#[derive(Debug)]
struct FeatureIdf {
    docs: usize,
    /// Documents containing a feature, counted in [`DF_SLOTS`] slots by feature hash.
    df: Vec<u32>,
    /// An order-independent hash of the corpus's texts: the fit's identity.
    corpus: u64,
}

/// Slots for document-frequency counts: far more than a corpus has distinct common features,
/// so a rare feature seldom shares a slot with a common one (1 MB per fitted embedder).
const DF_SLOTS: usize = 1 << 18;

impl FeatureIdf {
    fn slot(hash: u64) -> usize {
        // The bucket uses the hash's low bits; the slot uses its high ones.
        (hash >> 32) as usize % DF_SLOTS
    }

    /// BM25's IDF, `ln(1 + (N - df + 0.5) / (df + 0.5))`: positive, highest for rare features.
    fn weight(&self, hash: u64) -> f32 {
        let n = self.docs as f64;
        let df = f64::from(self.df[Self::slot(hash)]);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }
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
        Self {
            dim: BUILTIN_DIM,
            idf: None,
        }
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
        Ok(Self { dim, idf: None })
    }

    /// A copy fitted to `corpus`: features weighted by their IDF in it (see the type's docs).
    pub fn fitted<'a>(&self, corpus: impl IntoIterator<Item = &'a str>) -> Self {
        let mut df = vec![0u32; DF_SLOTS];
        let (mut docs, mut hash) = (0usize, 0u64);
        let mut seen = std::collections::HashSet::new();
        for text in corpus {
            docs += 1;
            hash = hash.wrapping_add(fnv1a(&[text.as_bytes()]));
            seen.clear();
            features(text, |h, _| {
                seen.insert(FeatureIdf::slot(h));
            });
            seen.iter().for_each(|&slot| df[slot] += 1);
        }
        let corpus = fnv1a(&[&hash.to_le_bytes(), &(docs as u64).to_le_bytes()]);
        Self {
            dim: self.dim,
            idf: Some(Arc::new(FeatureIdf { docs, df, corpus })),
        }
    }
}

impl Embedder for BuiltinEmbedder {
    fn id(&self) -> EmbedderId {
        let name = match &self.idf {
            None => "builtin-hash-v1".to_owned(),
            Some(idf) => format!("builtin-hash-idf-v1+corpus-{:016x}", idf.corpus),
        };
        EmbedderId {
            name,
            dim: self.dim,
        }
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = vec![0.0f32; self.dim];
        features(text, |h, weight| {
            let idf = self.idf.as_ref().map_or(1.0, |idf| idf.weight(h));
            let bucket = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign * weight * idf;
        });
        normalize(&mut v);
        Ok(v)
    }

    fn fit(&self, corpus: &[&str]) -> Option<Arc<dyn Embedder>> {
        Some(Arc::new(self.fitted(corpus.iter().copied())))
    }

    /// `FIT1`, documents, corpus hash, then `(slot, count)` for each non-zero slot: all
    /// little-endian u32/u64, a few hundred kilobytes for a large corpus.
    fn fit_state(&self) -> Option<Vec<u8>> {
        let idf = self.idf.as_ref()?;
        let mut out = Vec::with_capacity(20 + 8 * idf.df.iter().filter(|&&c| c > 0).count());
        out.extend_from_slice(FIT_MAGIC);
        out.extend_from_slice(&(idf.docs as u64).to_le_bytes());
        out.extend_from_slice(&idf.corpus.to_le_bytes());
        for (slot, &count) in idf.df.iter().enumerate().filter(|(_, c)| **c > 0) {
            out.extend_from_slice(&(slot as u32).to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        Some(out)
    }

    fn restore(&self, state: &[u8]) -> Result<Arc<dyn Embedder>> {
        let bad =
            || Error::Incompatible("the stored fit of the builtin embedder is damaged".into());
        let rest = state.strip_prefix(FIT_MAGIC.as_slice()).ok_or_else(bad)?;
        if rest.len() < 16 || (rest.len() - 16) % 8 != 0 {
            return Err(bad());
        }
        let u64_at = |at: usize| u64::from_le_bytes(rest[at..at + 8].try_into().expect("8 bytes"));
        let mut df = vec![0u32; DF_SLOTS];
        for pair in rest[16..].chunks_exact(8) {
            let slot = u32::from_le_bytes(pair[..4].try_into().expect("4 bytes")) as usize;
            let count = u32::from_le_bytes(pair[4..].try_into().expect("4 bytes"));
            *df.get_mut(slot).ok_or_else(bad)? = count;
        }
        Ok(Arc::new(Self {
            dim: self.dim,
            idf: Some(Arc::new(FeatureIdf {
                docs: usize::try_from(u64_at(0)).map_err(|_| bad())?,
                df,
                corpus: u64_at(8),
            })),
        }))
    }
}

/// The first bytes of a builtin fit's state.
const FIT_MAGIC: &[u8; 4] = b"FIT1";

/// A stable 64-bit hash of `text` (FNV-1a), for telling whether a vector's text changed.
pub fn text_hash(text: &str) -> u64 {
    fnv1a(&[text.as_bytes()])
}

/// Calls `f(hash, weight)` for every feature of `text`: its [`text::terms`] (`w:`), their
/// character trigrams with `<` `>` padding (`c:`), and adjacent term pairs (`b:`).
fn features(text: &str, mut f: impl FnMut(u64, f32)) {
    let terms = text::terms(text);
    let mut buf = [0u8; 16];
    for term in &terms {
        f(fnv1a(&[b"w:", term.as_bytes()]), UNIGRAM_WEIGHT);
        let padded: Vec<char> = std::iter::once('<')
            .chain(term.chars())
            .chain(std::iter::once('>'))
            .collect();
        for gram in padded.windows(3) {
            let mut len = 0;
            for c in gram {
                len += c.encode_utf8(&mut buf[len..]).len();
            }
            f(fnv1a(&[b"c:", &buf[..len]]), TRIGRAM_WEIGHT);
        }
    }
    for pair in terms.windows(2) {
        let feature = [b"b:", pair[0].as_bytes(), b" ", pair[1].as_bytes()];
        f(fnv1a(&feature), BIGRAM_WEIGHT);
    }
}

/// FNV-1a, 64 bits, of the concatenated `parts`: tiny, stable across platforms and releases
/// (unlike `DefaultHasher`).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    parts
        .iter()
        .flat_map(|p| p.iter())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Cosine similarity of two unit vectors (their dot product); 0 when lengths differ.
///
/// Summed in eight lanes, as the vector index sums it: MMR compares each pick with every
/// candidate left, and one chain of dependent additions per pair made that a seventh of a
/// recall.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    f64::from(super::near::dot(a, b))
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
    fn a_fitted_embedder_discounts_common_features_and_names_its_corpus() {
        let corpus = [
            "Caroline: I went hiking",
            "Caroline: the painting is done",
            "Caroline: adoption papers came",
            "Melanie: hiking with the kids",
        ];
        let flat = BuiltinEmbedder::default();
        let fitted = flat.fitted(corpus);
        let q = "Caroline hiking";
        let sim =
            |e: &BuiltinEmbedder, doc: &str| cosine(&e.embed(q).unwrap(), &e.embed(doc).unwrap());
        // Unfitted, the shared name counts as much as the topic; fitted, the rare topic wins.
        assert!(sim(&fitted, corpus[3]) > sim(&fitted, corpus[1]));
        assert!(
            sim(&fitted, corpus[3]) - sim(&fitted, corpus[1])
                > sim(&flat, corpus[3]) - sim(&flat, corpus[1])
        );
        let same = flat.fitted(corpus.iter().rev().copied());
        assert_eq!(fitted.id(), same.id(), "the fit does not depend on order");
        let other = flat.fitted(corpus[..3].iter().copied());
        assert_ne!(fitted.id(), other.id());
        assert!(
            fitted.id().check(&other.id()).is_err(),
            "another fit is refused"
        );
        assert!(
            fitted.id().check(&flat.id()).is_err(),
            "so is the unfitted embedder"
        );
        let via_port = flat.fit(&corpus).unwrap();
        assert_eq!(via_port.id(), fitted.id());
        assert_eq!(via_port.embed(q).unwrap(), fitted.embed(q).unwrap());
    }

    #[test]
    fn a_restored_fit_embeds_exactly_like_the_original() {
        let corpus = [
            "deploy checkout rollback",
            "invoice VAT totals",
            "deploy twice",
        ];
        let flat = BuiltinEmbedder::default();
        let fitted = flat.fit(&corpus).unwrap();
        let state = fitted.fit_state().unwrap();
        let restored = flat.restore(&state).unwrap();
        assert_eq!(restored.id(), fitted.id());
        let q = "deploy the checkout";
        assert_eq!(restored.embed(q).unwrap(), fitted.embed(q).unwrap());
        assert!(
            flat.fit_state().is_none(),
            "the unfitted embedder has no fit"
        );
        for bad in [&b"FIT2"[..], &state[..state.len() - 3], b""] {
            assert!(matches!(flat.restore(bad), Err(Error::Incompatible(_))));
        }
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
