//! The knowledge port: where ingested documents and their chunks are kept.
//!
//! It is a trait of its own, reached through [`crate::Store::knowledge`], so a store that does
//! not keep knowledge yet answers a typed [`crate::Error::Unsupported`] (which REST turns into
//! 501) instead of every store having to grow the methods at once.

use crate::error::Result;
use crate::model::{KnowledgeChunk, KnowledgeDocument};
use crate::scope::{Scope, SkillPath};

/// A document to store with the chunks it was cut into, replacing any earlier version.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentUpdate {
    /// The document.
    pub document: KnowledgeDocument,
    /// Its chunks, in order.
    pub chunks: Vec<KnowledgeChunk>,
}

/// Persistence for knowledge documents and chunks.
pub trait KnowledgeStore: Send + Sync {
    /// The documents inside `scope` (and of `skill`, when given), by source.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn documents(&self, scope: &Scope, skill: Option<&SkillPath>)
    -> Result<Vec<KnowledgeDocument>>;

    /// Stores each document of `put` with its chunks (replacing the earlier version's chunks)
    /// and removes each `(skill, source)` of `remove` with its chunks, atomically.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails; nothing is written then.
    fn sync_documents(&self, put: &[DocumentUpdate], remove: &[(SkillPath, String)]) -> Result<()>;

    /// The chunks inside `scope` (and of `skill`, when given), with their vectors, by source
    /// and position.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn knowledge_chunks(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
    ) -> Result<Vec<KnowledgeChunk>>;

    /// A number that grows with every [`KnowledgeStore::sync_documents`] that changed
    /// something, by any process sharing the store; cheap, asked before every query.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn knowledge_revision(&self) -> Result<u64>;
}
