//! The knowledge port: where ingested documents and their chunks are kept, and the decision
//! corpus, digests and evaluation runs beside them.
//!
//! It is a trait of its own, reached through [`crate::Store::knowledge`], so a store that does
//! not keep knowledge yet answers a typed [`crate::Error::Unsupported`] (which REST turns into
//! 501) instead of every store having to grow the methods at once.

use crate::error::Result;
use chrono::{DateTime, Utc};

use crate::id::DecisionId;
use crate::model::{
    AuditEntry, DecisionRecord, Digest, EvalRun, EvalSet, KnowledgeChunk, KnowledgeDocument,
};
use crate::scope::{Scope, SkillPath};

/// A document to store with the chunks it was cut into, replacing any earlier version.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentUpdate {
    /// The document.
    pub document: KnowledgeDocument,
    /// Its chunks, in order.
    pub chunks: Vec<KnowledgeChunk>,
}

/// What changed in the knowledge store after a revision: all a reader holding that revision
/// needs to catch up without reading every chunk again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnowledgeChanges {
    /// The revision these changes bring a reader to.
    pub revision: u64,
    /// Every `(skill, source)` written or removed after the revision asked about, by skill and
    /// source: a reader drops every chunk it holds of each before adding `chunks`.
    pub documents: Vec<(SkillPath, String)>,
    /// The chunks of the documents written after that revision, as stored now (vectors
    /// included), by skill, source and position.
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

    /// What changed after revision `since`, in every scope (callers filter), read at one
    /// point in time: the documents written or removed since, and the chunks of those still
    /// there. A `since` at or past the current revision yields nothing but that revision (a
    /// reader whose revision is ahead of the store's is holding another store's data, and
    /// should read everything again).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn knowledge_changes(&self, since: u64) -> Result<KnowledgeChanges>;
}

/// Persistence for resolved human-in-the-loop decisions.
pub trait DecisionStore: Send + Sync {
    /// Stores a new decision and its audit entry, atomically.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when the ID is taken; [`crate::Error::Store`] when the backend
    /// fails. Nothing is written then.
    fn put_decision(&self, decision: &DecisionRecord, audit: &AuditEntry) -> Result<()>;

    /// Replaces stored decisions, each with its audit entry, atomically; a decision changed
    /// since the `updated_at` its caller read is not overwritten.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown ID, [`crate::Error::Conflict`] for a decision
    /// changed meanwhile; nothing is written then.
    fn update_decisions(
        &self,
        updates: &[(DecisionRecord, DateTime<Utc>, AuditEntry)],
    ) -> Result<()>;

    /// One decision by ID, whatever its scope (callers check).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn decision(&self, id: &DecisionId) -> Result<Option<DecisionRecord>>;

    /// The decisions inside `scope` (of `skill` when given), oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn decisions(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<DecisionRecord>>;

    /// A number that grows with every decision written or changed, by any process.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn decision_revision(&self) -> Result<u64>;
}

/// Persistence for digests: every version kept, the newest per skill read.
pub trait DigestStore: Send + Sync {
    /// Stores a new digest version.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when the ID is taken; [`crate::Error::Store`] when the backend
    /// fails.
    fn put_digest(&self, digest: &Digest) -> Result<()>;

    /// The newest digest of each skill inside `scope` (of `skill` only, when given), by skill.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn digests(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<Digest>>;

    /// A skill's digest versions, newest first: at most `limit` after skipping the `offset`
    /// newest.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn digest_history(&self, skill: &SkillPath, limit: usize, offset: usize)
    -> Result<Vec<Digest>>;

    /// Deletes every digest version made from the record `source` (a purged lesson's text may
    /// be quoted in them); the next build makes the skill's digest again. Returns how many.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails; nothing is deleted then.
    fn forget_digest_source(&self, source: &str) -> Result<usize>;
}

/// Persistence for evaluation sets and their graded runs.
pub trait EvalStore: Send + Sync {
    /// Stores a set, replacing the set of the same skill and name.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn put_eval_set(&self, set: &EvalSet) -> Result<()>;

    /// The sets inside `scope` (of `skill` only, when given), by skill and name.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn eval_sets(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<EvalSet>>;

    /// Stores a run.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when the ID is taken; [`crate::Error::Store`] when the backend
    /// fails.
    fn put_eval_run(&self, run: &EvalRun) -> Result<()>;

    /// The runs inside `scope` (of `skill`, and of the set named `set`, when given), oldest
    /// first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn eval_runs(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
        set: Option<&str>,
    ) -> Result<Vec<EvalRun>>;

    /// Replaces with `marker` the answer excerpt of every graded question whose context held the
    /// item `id` (a purged lesson's text may be in it). Returns how many grades changed.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails; nothing changes then.
    fn forget_eval_item(&self, id: &str, marker: &str) -> Result<usize>;
}
