//! Knowledge chunks (seed 004's fifth layer): the documents a team already has (runbooks, ADRs,
//! guides), cut into sections small enough to quote, each carrying where it came from.
//!
//! A document is known by its skill and its source path; its content hash decides whether a
//! new ingest has anything to do, so re-ingesting an unchanged folder writes nothing. Chunks
//! are derived from their document and replaced with it as a whole, which keeps a chunk from
//! ever outliving the text it quotes.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ports::embed::EmbedderId;
use crate::scope::SkillPath;

/// One ingested document, as the store remembers it between ingests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeDocument {
    /// The skill whose agents it informs.
    pub skill: SkillPath,
    /// Where it was read from, as the ingest named it (`docs/runbook.md`).
    pub source: String,
    /// The SHA-256 of its text, in hex: an ingest that finds the same hash skips the file.
    pub hash: String,
    /// How many chunks it was cut into.
    pub chunks: usize,
    /// When it was last ingested.
    pub ingested_at: DateTime<Utc>,
    /// Who ingested it.
    pub ingested_by: String,
}

/// One section of a document, the unit knowledge recall returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeChunk {
    /// A stable ID derived from the skill, source, position and text, so an unchanged chunk
    /// keeps its ID across ingests.
    pub id: String,
    /// Its document's skill.
    pub skill: SkillPath,
    /// Its document's source path.
    pub source: String,
    /// The headings above it, outermost first, joined by ` › ` (empty before the first one).
    pub heading: String,
    /// Its page in a paged document (a PDF), 1-based; its lines are then the page's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// The first line of the document it covers, 1-based.
    pub line_start: u32,
    /// The last line it covers, inclusive.
    pub line_end: u32,
    /// Its position among its document's chunks, from 0.
    pub ordinal: u32,
    /// Its text, with personal and secret data already redacted.
    pub text: String,
    /// Whether the redaction changed anything (the original stays only in the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// Its vector, when one was made at ingest; kept beside the record, not in it.
    #[serde(skip)]
    pub vector: Option<ChunkVector>,
}

/// A chunk's vector and the embedder that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChunkVector {
    /// The embedder (unfitted: chunks are embedded as they arrive).
    pub embedder: EmbedderId,
    /// `embedder.dim` finite components.
    pub vector: Vec<f32>,
}
