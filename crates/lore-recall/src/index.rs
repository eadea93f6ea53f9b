//! In-memory candidate indexes: Okapi BM25 over words and brute-force search over vectors.
//!
//! The SQLite store answers sparse queries with FTS5 for `lore recall`; these indexes serve what
//! has no store behind it (the LoCoMo benchmark, dense candidates until vectors are persisted)
//! and define the reference behaviour: BM25 with k1 = 1.2, b = 0.75 and stop words removed, the
//! setup LoCoMo's reference figures use. Dense search is exact (a dot product per vector), which
//! is the baseline any ANN index must be measured against.

use std::collections::HashMap;

use super::{EmbedderId, cosine};
use super::{Hit, text};
use lore_core::error::Result;

/// Okapi BM25 term-frequency saturation.
const K1: f64 = 1.2;
/// Okapi BM25 length normalization.
const B: f64 = 0.75;

/// An Okapi BM25 index over documents' [`text::terms`].
#[derive(Debug, Default)]
pub struct Bm25Index {
    ids: Vec<String>,
    lens: Vec<u32>,
    total_len: u64,
    postings: HashMap<String, Vec<(u32, u32)>>,
}

impl Bm25Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a document.
    pub fn add(&mut self, id: impl Into<String>, text: &str) {
        let doc = self.ids.len() as u32;
        let terms = text::terms(text);
        let mut tf: HashMap<String, u32> = HashMap::new();
        for term in &terms {
            *tf.entry(term.clone()).or_default() += 1;
        }
        for (term, n) in tf {
            self.postings.entry(term).or_default().push((doc, n));
        }
        self.ids.push(id.into());
        self.lens.push(terms.len() as u32);
        self.total_len += terms.len() as u64;
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The `k` best documents for `query`, best first; documents sharing no term are left out.
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        let n = self.ids.len() as f64;
        let avg_len = (self.total_len as f64 / n.max(1.0)).max(1.0);
        let mut query_terms = text::terms(query);
        query_terms.sort();
        query_terms.dedup();
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for term in &query_terms {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let tf = f64::from(tf);
                let len_norm = 1.0 - B + B * f64::from(self.lens[doc as usize]) / avg_len;
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + K1 * len_norm);
            }
        }
        let scored = scores.into_iter().map(|(doc, s)| (doc as usize, s));
        top_k(scored, k, &self.ids)
    }
}

/// Exact nearest-neighbour search over unit vectors of one embedder.
#[derive(Debug)]
pub struct DenseIndex {
    embedder: EmbedderId,
    ids: Vec<String>,
    data: Vec<f32>,
}

impl DenseIndex {
    /// An empty index for vectors of `embedder`.
    pub fn new(embedder: EmbedderId) -> Self {
        Self {
            embedder,
            ids: Vec::new(),
            data: Vec::new(),
        }
    }

    /// The embedder whose vectors this index holds.
    pub fn embedder(&self) -> &EmbedderId {
        &self.embedder
    }

    /// Adds a vector made by `from`.
    ///
    /// # Errors
    /// [`crate::Error::Incompatible`] when `from` is not this index's embedder, or the vector's
    /// length is not its dimension.
    pub fn add(&mut self, id: impl Into<String>, vector: &[f32], from: &EmbedderId) -> Result<()> {
        self.embedder.check(from)?;
        self.check_len(vector)?;
        self.ids.push(id.into());
        self.data.extend_from_slice(vector);
        Ok(())
    }

    /// How many vectors are indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The `k` vectors most similar to `query` (cosine), best first.
    ///
    /// # Errors
    /// [`crate::Error::Incompatible`] when `from` is not this index's embedder.
    pub fn search(&self, query: &[f32], from: &EmbedderId, k: usize) -> Result<Vec<Hit>> {
        self.embedder.check(from)?;
        self.check_len(query)?;
        if query.iter().all(|x| *x == 0.0) {
            return Ok(Vec::new());
        }
        let dim = self.embedder.dim.max(1);
        let scored = self
            .data
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| (i, cosine(query, v)));
        Ok(top_k(scored, k, &self.ids))
    }

    fn check_len(&self, vector: &[f32]) -> Result<()> {
        if vector.len() == self.embedder.dim {
            return Ok(());
        }
        Err(crate::Error::Incompatible(format!(
            "a vector of {} components given to an index of {}",
            vector.len(),
            self.embedder
        )))
    }
}

/// The `k` best `(position, score)` pairs as hits, best first; ties keep insertion order.
fn top_k(scored: impl Iterator<Item = (usize, f64)>, k: usize, ids: &[String]) -> Vec<Hit> {
    let mut all: Vec<(usize, f64)> = scored.collect();
    let order = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if k < all.len() {
        all.select_nth_unstable_by(k, order);
        all.truncate(k);
    }
    all.sort_by(order);
    all.into_iter()
        .map(|(i, score)| Hit {
            id: ids[i].clone(),
            score,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinEmbedder, Embedder};

    #[test]
    fn bm25_prefers_rare_terms_and_shorter_documents() {
        let mut index = Bm25Index::new();
        index.add("common", "the deploy went fine and the deploy was quick");
        index.add("rare", "checkout returns 500 after the deploy");
        index.add(
            "long",
            "checkout returns 500 after the deploy, said the long ticket text here",
        );
        index.add("none", "invoice totals");
        let hits = index.search("checkout deploy", 10);
        let ids: Vec<_> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["rare", "long", "common"], "{hits:?}");
        assert!(
            index.search("the of", 10).is_empty(),
            "stop words match nothing"
        );
        assert_eq!(index.search("checkout deploy", 1).len(), 1);
    }

    #[test]
    fn bm25_scores_match_the_okapi_formula() {
        let mut index = Bm25Index::new();
        index.add("a", "alpha beta");
        index.add("b", "gamma");
        let hit = &index.search("alpha", 1)[0];
        // N = 2, df = 1: idf = ln(1 + 1.5/1.5); tf = 1, len 2, avg 1.5.
        let idf = 2f64.ln();
        let norm = 1.0 - B + B * 2.0 / 1.5;
        let expected = idf * (K1 + 1.0) / (1.0 + K1 * norm);
        assert!((hit.score - expected).abs() < 1e-12, "{}", hit.score);
    }

    #[test]
    fn dense_search_ranks_by_cosine_and_refuses_other_embedders() {
        let e = BuiltinEmbedder::default();
        let mut index = DenseIndex::new(e.id());
        for (id, text) in [("a", "roll back the deploy"), ("b", "invoice VAT rate")] {
            index.add(id, &e.embed(text).unwrap(), &e.id()).unwrap();
        }
        let q = e.embed("deploy rollback").unwrap();
        let hits = index.search(&q, &e.id(), 2).unwrap();
        assert_eq!(hits[0].id, "a");
        let other = BuiltinEmbedder::with_dim(8).unwrap();
        let err = index.search(&other.embed("x").unwrap(), &other.id(), 2);
        assert!(matches!(err, Err(crate::Error::Incompatible(_))), "{err:?}");
        assert!(index.add("c", &[0.0; 8], &e.id()).is_err(), "wrong length");
    }
}
