//! The Embedder port: text in, a unit vector out, with the identity of what made it.
//!
//! Vectors from two embedders live in different spaces: comparing them gives numbers that look
//! like similarities and mean nothing. So every vector travels with its [`EmbedderId`] (name and
//! dimension), and an index refuses a vector or a query from any other embedder with
//! [`Error::Incompatible`], naming both, instead of ranking garbage. Implementations live outside
//! the core: the builtin embedder in `lore-recall`, a local model and HTTP services in
//! `lore-providers`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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

    /// Embeds each of `texts`, in order. A model embeds a batch in one pass and a service in one
    /// request, much faster than one call per text; the default calls [`Embedder::embed`].
    ///
    /// # Errors
    /// As [`Embedder::embed`]; one failure fails the batch.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }

    /// Whether the vectors carry meaning beyond the words themselves (a trained model, a
    /// service) rather than the words' own features (the builtin embedder). Recall weighs the
    /// dense list by it when no fusion was configured.
    fn semantic(&self) -> bool {
        false
    }

    /// An embedder fitted to `corpus` (the texts it is about to index), or `None` for one that
    /// learns nothing from its corpus. A fitted embedder's identity names the fit, so its
    /// vectors are never compared with another fit's.
    fn fit(&self, corpus: &[&str]) -> Option<Arc<dyn Embedder>> {
        let _ = corpus;
        None
    }

    /// The fit of a fitted embedder as bytes, to be kept with the vectors it made and given back
    /// to [`Embedder::restore`]; `None` for an embedder without a fit.
    fn fit_state(&self) -> Option<Vec<u8>> {
        None
    }

    /// The embedder fitted as `state` (from [`Embedder::fit_state`] of an embedder of this
    /// kind) describes.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for an embedder without a fit; [`Error::Incompatible`] for a
    /// state it cannot read.
    fn restore(&self, state: &[u8]) -> Result<Arc<dyn Embedder>> {
        let _ = state;
        Err(Error::Unsupported(format!(
            "{} has no fit to restore",
            self.id()
        )))
    }
}

/// Scales `v` to unit length; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
