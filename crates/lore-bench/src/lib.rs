//! Lore's benchmarks, behind `lore bench`: each measures the code a user runs, through the same
//! Engine, stores and recall pipeline, on data it makes or on a public data set given by path.
//!
//! - [`agent`]: the learning loop with a real model over OpenAI's protocol as the executor,
//!   against no memory and plain experience retrieval, on fictional tools described as data.
//! - [`curation`]: people's corrections kept as meant: merge and conflict precision and recall
//!   on correction pairs.
//! - [`ingest`]: recording latency and import throughput.
//! - [`knowledge`]: document ingest throughput and layered-context latency over knowledge chunks.
//! - [`episodes`]: recording episodes and querying the causal graph.
//! - [`recall`]: recall latency per stage and the ANN index's recall against exact search.
//! - [`learning`]: the learning loop with simulated tools and an agent that learns only from
//!   Lore's text: error recurrence with and without memory, suppression of planted lessons.
//! - [`lessons`]: real lessons (agents' self-reflections) found again by recall, beside BM25.
//! - [`locomo`]: evidence recall on LoCoMo conversations for each retrieval method.
//! - [`stores`]: SQLite beside PostgreSQL: recording throughput and recall latency.
//!
//! Figures and how they were measured are in `docs/BENCHMARKS.md`.

pub mod agent;
mod corpus;
pub mod curation;
mod distractors;
pub mod episodes;
pub mod ingest;
pub mod knowledge;
pub mod learning;
pub mod lessons;
pub mod locomo;
pub mod recall;
mod report;
pub mod stores;

pub use report::Out;

/// Which LoCoMo questions `lore bench locomo` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Every other question of each conversation, from the first: defaults are chosen here.
    Dev,
    /// The rest, for measuring those defaults on questions they were not chosen on.
    Heldout,
    /// Both halves.
    All,
}

impl Split {
    /// Whether the question at `index` within its conversation belongs to this split.
    pub fn keeps(self, index: usize) -> bool {
        match self {
            Split::Dev => index.is_multiple_of(2),
            Split::Heldout => !index.is_multiple_of(2),
            Split::All => true,
        }
    }
}
