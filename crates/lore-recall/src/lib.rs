//! Recall: one pipeline from a query to a packed, explained context (DESIGN.md, "Recall").
//!
//! ```text
//! candidate lists (sparse BM25, dense, exact fingerprint, tags)
//!   → fuse (RRF or linear over min-max-normalized scores) → score (+ recency, or seed 003's
//!     on-error weights) → filters (eligibility, minimum relevance, pluggable; fail closed)
//!   → MMR over a pool of limit × 3 → guards (conflicts, per-tag, per-session, limit)
//!   → greedy packing into a token budget with progressive disclosure → explanations
//! ```
//!
//! Each stage is a small pure function in its own module, unit-tested on its own; [`run`] only
//! wires them. The stages know nothing of lessons or stores: a caller (the Engine, the LoCoMo
//! benchmark) turns its records into [`Entry`]s and its searches into [`RankedList`]s. That keeps
//! the pipeline testable without a database and lets the benchmark measure the very code that
//! `lore recall` runs.
//!
//! The ports the pipeline needs, [`Embedder`] and [`Tokenizer`], are the core's; this crate
//! brings their dependency-free defaults ([`BuiltinEmbedder`], [`ApproxTokenizer`]). The real
//! tokenizers and neural embedders live in `lore-providers`.
//!
//! Beside the pipeline lives the Engine's index over lessons ([`lessons`]: BM25 and HNSW kept
//! current with the store) and its file beside the store ([`saved`]), so a restart does not
//! re-embed everything.

pub mod adapter;
mod ann;
pub mod applies;
mod builtin;
pub mod calibrate;
mod context;
mod fuse;
pub mod hnsw;
mod layers;
pub mod lessons;
pub mod mapped;
mod near;
mod pack;
mod quant;
mod query_cache;
mod render;
pub mod saved;
mod select;
mod sparse;
pub mod text;

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

pub use ann::{HNSW_FROM, Rows, VectorIndex, VectorMemory};
pub use builtin::{BUILTIN_DIM, BuiltinEmbedder, cosine, text_hash};
pub use context::{ContextSpread, Sequences, spread};
pub use fuse::{Components, Fused, OnErrorWeights, Scoring, SourceScore, fuse, recency};
pub use hnsw::{Hnsw, HnswParams};
pub use layers::{
    DEFAULT_LAYER_BUDGET, DEFAULT_TOTAL_BUDGET, Layer, LayerBudgets, Stacked, TRUNCATED, stack,
    truncate_tail,
};
pub use lore_core::ports::embed::{Embedder, EmbedderId, normalize};
pub use lore_core::ports::tokenize::{ApproxTokenizer, Tokenizer};
pub use pack::{Packed, PackedItem, ToPack, pack};
pub use query_cache::{QUERY_CACHE_TEXTS, QueryCache};
pub use select::{Guards, MemoryFilter, Mmr, NON_INFERABLE_TAG, NonInferableOnly, mmr};
pub use sparse::SparseIndex;

use lore_core::error::{Error, Result};

/// Where a candidate was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Full-text search (BM25).
    Sparse,
    /// Vector similarity.
    Dense,
    /// Exact error-fingerprint match.
    Fingerprint,
    /// Shared tags.
    Tags,
}

impl Source {
    /// Whether the source measures text relevance (and so takes part in fusion).
    pub fn is_text(self) -> bool {
        matches!(self, Source::Sparse | Source::Dense)
    }
}

/// One candidate in a list: its ID and the source's score (higher is better).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// The memory's ID.
    pub id: String,
    /// The source's score.
    pub score: f64,
}

/// One source's candidates, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedList {
    /// The source.
    pub source: Source,
    /// Its hits, best first.
    pub hits: Vec<Hit>,
    /// How its raw scores become relevance in `[0, 1]`.
    pub scale: Scale,
}

impl RankedList {
    /// A list whose scores are min-max normalized ([`Scale::MinMax`]).
    pub fn new(source: Source, hits: Vec<Hit>) -> Self {
        Self {
            source,
            hits,
            scale: Scale::MinMax,
        }
    }
}

/// How a list's raw scores become relevance in `[0, 1]` before fusion.
///
/// Min-max within the list ranks its hits well but says nothing across queries: the best hit
/// scores 1 whether it matches the query or merely shares a word with it, so no floor can be
/// set on it. A calibrated list maps raw scores with bounds its source sets for the query
/// ([`crate::calibrate`]), so a relevance means the same in every query and a floor can tell a
/// lesson about the task from the least unrelated one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scale {
    /// `(raw - lo) / (hi - lo)` over the list's own scores.
    #[default]
    MinMax,
    /// `(raw - zero) / (one - zero)`, clamped to `[0, 1]`.
    Calibrated {
        /// The raw score that means no evidence.
        zero: f64,
        /// The raw score from which the evidence is full.
        one: f64,
    },
}

/// How the sparse and dense lists are fused.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fusion {
    /// Reciprocal rank fusion, `Σ 1 / (k + rank)`, min-max normalized.
    Rrf {
        /// The smoothing constant (seed 002: 60).
        k: f64,
    },
    /// Weighted sum of min-max-normalized scores.
    Linear {
        /// The sparse list's weight.
        sparse: f64,
        /// The dense list's weight.
        dense: f64,
    },
}

/// How MMR compares two memories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Similarity {
    /// Cosine when both have vectors, word-bigram Jaccard otherwise.
    #[default]
    Auto,
    /// Always word-bigram Jaccard (seed 002's default).
    Jaccard,
}

/// Whether a memory may be shown at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eligibility {
    /// It may.
    Eligible,
    /// It holds personal or secret data.
    Sensitive,
    /// Its state or scope forbids it; the reason names which.
    Ineligible(String),
}

/// What the pipeline knows about one memory.
///
/// The bulky parts (text, vector, tags, conflicts, tiers) may borrow from the caller, so a
/// caller that keeps them, as the Engine's recall index does, builds an entry per candidate
/// without copying them on every query.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<'a> {
    /// Its ID, as in the candidate lists.
    pub id: String,
    /// Its text, for word-bigram similarity.
    pub text: Cow<'a, str>,
    /// Its vector, for cosine similarity.
    pub vector: Option<Cow<'a, [f32]>>,
    /// Its tags, for tag caps and the non-inferable filter.
    pub tags: Cow<'a, [String]>,
    /// Its session, for the per-session cap.
    pub session: Option<String>,
    /// Hours since it was made or last confirmed.
    pub age_hours: f64,
    /// How far it can be trusted, `[0, 1]`.
    pub reliability: f64,
    /// Its measured utility, `[-1, 1]`, once measured: the first tie-breaker of a conflict.
    pub utility: Option<f64>,
    /// How confident its source was, `[0, 1]`: the second tie-breaker of a conflict.
    pub confidence: f64,
    /// Whether it may be shown.
    pub eligibility: Eligibility,
    /// IDs it must not be shown together with.
    pub conflicts_with: Cow<'a, [String]>,
    /// Rendered tiers, the one-line summary first.
    pub tiers: Cow<'a, [String]>,
    /// How well the query meets the condition it states ([`applies::condition_match`]);
    /// `None` when it states none or was found by the query's error.
    pub condition_match: Option<f64>,
    /// Whether it is the caller's own rather than shared: it gets
    /// [`RecallConfig::personal_boost`].
    pub personal: bool,
    /// How firmly measurement and curation vouch for it, higher first: what breaks a near-tie
    /// of scores ([`NEAR_TIE`]) instead of recency. 0 when nothing does.
    pub standing: f64,
}

/// Why a candidate was left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", content = "detail", rename_all = "snake_case")]
pub enum DropReason {
    /// A source returned an ID the caller gave no entry for (fails closed).
    Unknown,
    /// Its state or scope forbids it.
    Ineligible(String),
    /// It holds sensitive data.
    Sensitive,
    /// Its score is below the minimum relevance.
    BelowMinRelevance,
    /// Its calibrated relevance is below the relevance floor: the task is not about it. In
    /// percent, against the floor.
    NotRelevant {
        /// Its relevance, in percent.
        relevance: u8,
        /// The floor, in percent.
        floor: u8,
    },
    /// The query does not meet the condition it states: how much of it was met, in percent,
    /// against the minimum.
    ConditionNotMet {
        /// The share met, in percent.
        met: u8,
        /// The minimum, in percent.
        min: u8,
    },
    /// A configured filter dropped it.
    Filtered(String),
    /// A filter failed, so everything was dropped.
    FilterFailed(String),
    /// It ranked below the MMR candidate pool.
    OutsidePool,
    /// A memory it conflicts with was kept in its place: the better of the two by utility,
    /// then confidence, then recency.
    Conflict {
        /// The memory kept instead.
        kept: String,
        /// What decided: `utility`, `confidence` or `recency` (`rank` when all were equal).
        by: String,
    },
    /// Enough memories with this tag were kept already.
    TagCap(String),
    /// Enough memories from this session were kept already.
    SessionCap(String),
    /// Enough memories were kept already.
    OverLimit,
    /// It did not fit in the token budget.
    OverBudget,
}

/// What happened to a candidate.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Placed in the context.
    Kept {
        /// 0-based position in the context.
        position: usize,
        /// The tier shown (0 = summary).
        tier: usize,
        /// Its tokens.
        tokens: usize,
    },
    /// Left out.
    Dropped {
        /// Why.
        #[serde(flatten)]
        why: DropReason,
    },
}

/// One candidate's explanation: where it came from, how it scored, what happened to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    /// The memory's ID.
    pub id: String,
    /// The lists it was found in.
    pub sources: Vec<SourceScore>,
    /// The score's parts.
    pub components: Components,
    /// The final score.
    pub score: f64,
    /// Kept or dropped, and why.
    #[serde(flatten)]
    pub decision: Decision,
}

/// A recall's result: the packed context and an explanation per candidate, in score order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recalled {
    /// The packed context.
    pub packed: Packed,
    /// Every candidate, best score first.
    pub explain: Vec<Explanation>,
}

/// The query's features that steer scoring.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryShape {
    /// The query carries an error fingerprint or tags: use seed 003's on-error weights.
    pub on_error: bool,
}

mod config;
mod pipeline;

pub use config::{RecallConfig, RecallConfigBuilder};
pub use pipeline::{NEAR_TIE, Scored, rank, run};

fn check_range(what: &str, value: f64, lo: f64, hi: f64) -> Result<()> {
    if value.is_finite() && (lo..=hi).contains(&value) {
        return Ok(());
    }
    Err(Error::invalid(
        what,
        format!("{value} is outside {lo}..={hi}"),
    ))
}

/// Entries by ID, as [`run`] takes them.
pub type Entries<'a> = FastMap<String, Entry<'a>>;

/// The maps a recall builds and drops per query, keyed by IDs and words. SipHash (the
/// standard default) was a twentieth of a recall's time; foldhash is several times quicker
/// and still seeded per process, so no one can pick keys that collide.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An eligible entry with one tier (its text).
    pub(crate) fn entry(id: &str, text: &str) -> Entry<'static> {
        Entry {
            id: id.to_owned(),
            text: text.to_owned().into(),
            vector: None,
            tags: Cow::Borrowed(&[]),
            session: None,
            age_hours: 0.0,
            reliability: 0.5,
            utility: None,
            confidence: 0.5,
            eligibility: Eligibility::Eligible,
            conflicts_with: Cow::Borrowed(&[]),
            tiers: vec![text.to_owned()].into(),
            condition_match: None,
            personal: false,
            standing: 0.0,
        }
    }
}
