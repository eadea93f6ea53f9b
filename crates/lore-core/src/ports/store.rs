//! The Store port: what Lore needs from a database, and nothing about how it is done.
//!
//! The trait is synchronous. The embedded default (SQLite) is synchronous by nature, and an
//! async server calls the Engine from a blocking task, so one trait serves the CLI, tests and
//! servers alike. Every implementation runs the same conformance suite
//! (`lore_core::conformance`, behind the `conformance` feature).
//!
//! Writes go through [`Store::write`], which is atomic: a batch lands whole or not at all. That
//! is what makes the correction pipeline (correction + lesson + audit) and imports safe against a
//! failure halfway.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::Result;
use crate::graph::GraphCounts;
use crate::id::{CorrectionId, EpisodeId, ExecutionId, LessonId, MemoryId};
use crate::model::{
    AuditEntry, Correction, Episode, EpisodeOutcome, ErrorEvent, Execution, Lesson, LessonStatus,
    MemoryCategory, MemoryEntry, RecordKind,
};
use crate::ports::embed::EmbedderId;
use crate::scope::{Scope, SkillPath};

/// Any record a store keeps.
// Records travel in batches that are written and dropped at once; boxing the larger variants
// would add an allocation per record for no saving.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// An execution.
    Execution(Execution),
    /// A correction.
    Correction(Correction),
    /// A lesson.
    Lesson(Lesson),
    /// An error event.
    ErrorEvent(ErrorEvent),
    /// An audit entry.
    Audit(AuditEntry),
    /// An entry of an agent's own memory.
    Memory(MemoryEntry),
    /// An episode; a store writes its graph contribution with it.
    Episode(Episode),
}

impl Record {
    /// The record's ID as text.
    pub fn id(&self) -> &str {
        match self {
            Record::Execution(r) => r.id.as_str(),
            Record::Correction(r) => r.id.as_str(),
            Record::Lesson(r) => r.id.as_str(),
            Record::ErrorEvent(r) => r.id.as_str(),
            Record::Audit(r) => r.id.as_str(),
            Record::Memory(r) => r.id.as_str(),
            Record::Episode(r) => r.id.as_str(),
        }
    }

    /// The record's kind name, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Record::Execution(_) => "execution",
            Record::Correction(_) => "correction",
            Record::Lesson(_) => "lesson",
            Record::ErrorEvent(_) => "error event",
            Record::Audit(_) => "audit entry",
            Record::Memory(_) => "memory entry",
            Record::Episode(_) => "episode",
        }
    }
}

/// What a write does when a record's ID is already stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Refuse the whole batch with [`crate::Error::Conflict`].
    #[default]
    Fail,
    /// Skip a record whose stored copy is identical; refuse one that differs.
    SkipIdentical,
}

impl OnDuplicate {
    /// What a store does with a record whose ID it already holds: `Ok(false)` to skip it, or
    /// the conflict that refuses the batch. `identical` says whether the stored copy equals it.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] naming the `kind` and `id`.
    pub fn on_stored(self, kind: &str, id: &str, identical: bool) -> Result<bool> {
        match self {
            OnDuplicate::SkipIdentical if identical => Ok(false),
            OnDuplicate::SkipIdentical => Err(crate::Error::Conflict(format!(
                "{kind} {id} already exists with different content"
            ))),
            OnDuplicate::Fail => Err(crate::Error::Conflict(format!(
                "{kind} {id} already exists"
            ))),
        }
    }
}

/// What a write did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WriteReport {
    /// Records newly stored.
    pub written: usize,
    /// Records skipped because an identical copy was stored.
    pub skipped: usize,
}

/// Which records a listing returns.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    /// Only what this scope allows.
    pub scope: Scope,
    /// Only this skill.
    pub skill: Option<SkillPath>,
    /// Only lessons in these states (ignored for other kinds).
    pub statuses: Option<BTreeSet<LessonStatus>>,
    /// Only the corrections and error events of this execution (ignored for other kinds).
    pub execution_id: Option<ExecutionId>,
    /// At most this many, oldest first.
    pub limit: Option<usize>,
    /// Skip this many first.
    pub offset: usize,
}

impl ListFilter {
    /// A filter for one skill inside `scope`.
    pub fn skill(scope: &Scope, skill: &SkillPath) -> Self {
        Self {
            scope: scope.clone(),
            skill: Some(skill.clone()),
            ..Self::default()
        }
    }
}

/// Which episodes a listing returns.
#[derive(Clone, Debug, Default)]
pub struct EpisodeFilter {
    /// Only what this scope allows.
    pub scope: Scope,
    /// Only this skill.
    pub skill: Option<SkillPath>,
    /// Only episodes that ended so.
    pub outcome: Option<EpisodeOutcome>,
    /// Only episodes that started at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// At most this many, oldest first.
    pub limit: Option<usize>,
    /// Skip this many first.
    pub offset: usize,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchHit {
    /// Lesson or execution.
    pub kind: RecordKind,
    /// The record's ID.
    pub id: String,
    /// Its skill.
    pub skill: SkillPath,
    /// Higher is better; comparable only within one result list.
    pub score: f64,
    /// The text that matched, shortened.
    pub snippet: String,
}

/// How many records a store holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    /// Executions.
    pub executions: u64,
    /// Corrections.
    pub corrections: u64,
    /// Lessons, in any state.
    pub lessons: u64,
    /// Error events.
    pub error_events: u64,
    /// Audit entries.
    pub audit_entries: u64,
    /// Distinct generated tests named by lessons.
    pub tests: u64,
    /// Entries of agents' own memory (core block versions, archival passages, recall log).
    pub memories: u64,
    /// Episodes.
    pub episodes: u64,
}

/// What a store is, for `lore memory status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoreInfo {
    /// The backend (`sqlite`, `postgres`).
    pub backend: &'static str,
    /// Where it lives, with any secret removed.
    pub location: String,
    /// The schema version in use.
    pub schema_version: u32,
}

/// One lesson replacement in a [`Store::update_lessons`] batch.
#[derive(Clone, Debug, PartialEq)]
pub struct LessonUpdate {
    /// The lesson as it should be stored.
    pub lesson: Lesson,
    /// The `updated_at` the caller read; a lesson changed since is not overwritten.
    pub expected_updated_at: DateTime<Utc>,
    /// The audit entry for the change.
    pub audit: AuditEntry,
}

/// A lesson's vector as stored: which embedder made it, and from which text.
#[derive(Clone, Debug, PartialEq)]
pub struct LessonVector {
    /// The lesson.
    pub lesson: LessonId,
    /// The embedder that made the vector (as fitted, for an embedder that fits).
    pub embedder: EmbedderId,
    /// A hash of the text the vector was made from, so that the vector of a lesson whose text
    /// changed is known to be stale.
    pub source_hash: u64,
    /// The vector, `embedder.dim` finite components.
    pub vector: Vec<f32>,
}

impl LessonVector {
    /// Checks the vector before a store writes it: as many components as its embedder's
    /// dimension, all finite, and a named embedder.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] naming what is wrong.
    pub fn check(&self) -> Result<()> {
        if self.vector.len() != self.embedder.dim {
            return Err(crate::Error::invalid(
                "vector",
                format!(
                    "lesson {}: {} components, but {} makes {}",
                    self.lesson,
                    self.vector.len(),
                    self.embedder.name,
                    self.embedder.dim
                ),
            ));
        }
        if self.vector.iter().any(|x| !x.is_finite()) {
            return Err(crate::Error::invalid(
                "vector",
                format!("lesson {}: a component is not a finite number", self.lesson),
            ));
        }
        if self.embedder.name.trim().is_empty() {
            return Err(crate::Error::invalid("embedder", "the name is empty"));
        }
        Ok(())
    }
}

/// The lessons changed since a revision (see [`Store::lesson_revision`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LessonChanges {
    /// The revision these changes bring a reader up to.
    pub revision: u64,
    /// Each lesson written, replaced or purged after the revision asked for, as it is now,
    /// in any state; in the order of their last change.
    pub lessons: Vec<Lesson>,
}

/// A position in the store's history of writes: the insertion sequence numbers of the newest
/// execution and the newest audit entry seen. Every change a follower cares about is one or
/// the other (lessons change only with an audit entry), and a store assigns both in commit
/// order, so "everything after this cursor" misses nothing and repeats nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ChangeCursor {
    /// The sequence number of the newest execution seen.
    pub executions: u64,
    /// The sequence number of the newest audit entry seen.
    pub audit: u64,
}

/// What was written after a [`ChangeCursor`], each with its sequence number, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// Executions.
    pub executions: Vec<(u64, Execution)>,
    /// Audit entries.
    pub audit: Vec<(u64, AuditEntry)>,
}

/// Persistence for every Lore record.
///
/// Implementations must pass the conformance suite. They filter by the [`Scope`] in each
/// [`ListFilter`]; the Engine checks scope as well, so isolation never rests on one layer.
pub trait Store: Send + Sync {
    /// What and where this store is.
    fn info(&self) -> StoreInfo;

    /// Stores a batch atomically: all of it or none of it.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when an ID is taken (and, with
    /// [`OnDuplicate::SkipIdentical`], its stored copy differs); [`crate::Error::Store`] when the
    /// backend fails. Nothing is written in either case.
    fn write(&self, records: &[Record], on_duplicate: OnDuplicate) -> Result<WriteReport>;

    /// Replaces a stored lesson and appends its audit entry, atomically.
    ///
    /// `expected_updated_at` is the `updated_at` the caller read: a lesson changed by someone
    /// else in between is not overwritten.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown ID, [`crate::Error::Conflict`] when the stored
    /// lesson's `updated_at` differs from `expected_updated_at`.
    fn update_lesson(
        &self,
        lesson: &Lesson,
        expected_updated_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<()>;

    /// Applies several [`Store::update_lesson`]s atomically: all of them or none.
    ///
    /// Review decisions on a batch and supersession (the old lesson and the new one change
    /// together) rely on this.
    ///
    /// # Errors
    /// As [`Store::update_lesson`], for any lesson of the batch; nothing is written then.
    fn update_lessons(&self, updates: &[LessonUpdate]) -> Result<()>;

    /// [`Store::write`] and [`Store::update_lessons`] in one transaction: the records are
    /// stored and the lessons replaced together, or nothing is.
    ///
    /// The correction pipeline relies on this: a new lesson and the links it adds to older
    /// lessons land together, so a refused update never leaves a correction stored behind a
    /// refusal.
    ///
    /// # Errors
    /// As [`Store::write`] and [`Store::update_lessons`]; nothing is written then.
    fn write_and_update(
        &self,
        records: &[Record],
        on_duplicate: OnDuplicate,
        updates: &[LessonUpdate],
    ) -> Result<WriteReport>;

    /// Erases content on request: each record in `erased` replaces the stored record of the
    /// same kind and ID, its full-text row is removed and not rebuilt, and `audit` is appended,
    /// atomically. Backends should also make the old content unrecoverable from their files
    /// where they can (SQLite: secure delete, FTS merge, WAL truncation).
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] when a record is not stored; nothing is written then.
    fn purge(&self, erased: &[Record], audit: &AuditEntry) -> Result<()>;

    /// One execution by ID.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn execution(&self, id: &ExecutionId) -> Result<Option<Execution>>;

    /// One correction by ID.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn correction(&self, id: &CorrectionId) -> Result<Option<Correction>>;

    /// One lesson by ID.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn lesson(&self, id: &LessonId) -> Result<Option<Lesson>>;

    /// Executions matching `filter`, oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn executions(&self, filter: &ListFilter) -> Result<Vec<Execution>>;

    /// Corrections matching `filter`, oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn corrections(&self, filter: &ListFilter) -> Result<Vec<Correction>>;

    /// Lessons matching `filter`, oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn lessons(&self, filter: &ListFilter) -> Result<Vec<Lesson>>;

    /// Error events matching `filter`, oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn error_events(&self, filter: &ListFilter) -> Result<Vec<ErrorEvent>>;

    /// The audit entries about `subject` (all when `None`), oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn audit(&self, subject: Option<&str>) -> Result<Vec<AuditEntry>>;

    /// Full-text search over lessons and executions, best first.
    ///
    /// `query` is plain words, never backend syntax. Lessons are limited to
    /// `filter.statuses` when set; everything to `filter.scope` and `filter.skill`.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn search(&self, query: &str, filter: &ListFilter, limit: usize) -> Result<Vec<SearchHit>>;

    /// [`Store::search`] over lessons alone, best first: what recall answers from while its
    /// own index builds. The default searches everything and keeps the lessons; a store
    /// overrides it to skip the executions.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn search_lessons(
        &self,
        query: &str,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        Ok(self
            .search(query, filter, limit.saturating_mul(4))?
            .into_iter()
            .filter(|hit| hit.kind == RecordKind::Lesson)
            .take(limit)
            .collect())
    }

    /// The memory entries of `category` that `filter` selects (scope, skill, limit, offset),
    /// oldest first.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn memories(&self, filter: &ListFilter, category: MemoryCategory) -> Result<Vec<MemoryEntry>>;

    /// Full-text search over the memory entries of `category` inside `filter`'s scope and
    /// skill, best first, with scores (higher is better); `query` is plain words.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn search_memories(
        &self,
        query: &str,
        filter: &ListFilter,
        category: MemoryCategory,
        limit: usize,
    ) -> Result<Vec<(MemoryEntry, f64)>>;

    /// Stores `entry`, a new version of its core block, only while the block's newest stored
    /// version is still `after` (`None`: the block has no version yet); `false`, with nothing
    /// written, when another version came first. The comparison and the write are one
    /// transaction: an append is a read-modify-write, and two writers that both read version
    /// `v` would otherwise each store `v` plus their own line, the first one's line lost.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] when `entry` is not a core entry with a block;
    /// [`crate::Error::Store`] when the backend fails.
    fn write_core_version(&self, entry: &MemoryEntry, after: Option<&MemoryId>) -> Result<bool>;

    /// Whether the store takes writes now: [`crate::Error::StorageFull`] while its last write was
    /// refused for lack of room and no write has succeeded since. A store that remembers such
    /// a refusal tries a small write of its own here, so room that comes back is noticed
    /// without traffic (a server reporting itself not ready gets none). The default, for a
    /// store that cannot tell, is `Ok`.
    ///
    /// # Errors
    /// [`crate::Error::StorageFull`] while there is still no room; [`crate::Error::Store`] when
    /// the backend fails.
    fn check_writable(&self) -> Result<()> {
        Ok(())
    }

    /// A number that grows whenever a memory entry is written or purged, by this process or
    /// any other sharing the store; `None` (the default) from a store that cannot tell, whose
    /// conversation-log searches then read the log every time. Asked before each search, so it
    /// must be cheap.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn memory_revision(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Stores an episode, adds its contribution to the causal graph
    /// ([`crate::graph::Contribution`]) and appends `audit` (which is what followers of the
    /// store's changes see), atomically. With `replace`, an episode stored under the same ID is
    /// replaced and its contribution subtracted first; returns whether one was.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when the ID is taken and `replace` is false;
    /// [`crate::Error::Store`] when the backend fails. Nothing is written then.
    fn put_episode(&self, episode: &Episode, replace: bool, audit: &AuditEntry) -> Result<bool>;

    /// One episode by ID, whatever its scope (callers check).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn episode(&self, id: &EpisodeId) -> Result<Option<Episode>>;

    /// The episodes `filter` selects, oldest first (by timestamp, then insertion).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn episodes(&self, filter: &EpisodeFilter) -> Result<Vec<Episode>>;

    /// The causal graph's counts over the episodes inside `scope`.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn graph_counts(&self, scope: &Scope) -> Result<GraphCounts>;

    /// Recomputes the whole causal graph from the stored episodes, atomically.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn rebuild_graph(&self) -> Result<()>;

    /// A number that grows whenever an episode is written, replaced or purged or the graph is
    /// rebuilt, by this process or any other sharing the store; `None` (the default) from a store
    /// that cannot tell, whose graph queries then read the store every time. Graph queries ask
    /// for it before each answer, so it must be cheap.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn episode_revision(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// How many records of each kind are inside `scope`.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn counts(&self, scope: &Scope) -> Result<StoreCounts>;

    /// The organization's members seen inside `scope`'s domains and skills (its agent, role
    /// and department are ignored), by agent name, as [`crate::org::roster`] merges them: the
    /// owners of members' lessons, then the members that recorded runs, the latest run's role
    /// and department winning. This default reads every lesson and run of the scope; a store
    /// answers from an index on the members' marks instead, so the cost follows the members'
    /// records, not the store's size.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn members(&self, scope: &Scope) -> Result<Vec<crate::org::Member>> {
        let filter = ListFilter {
            scope: scope.clone(),
            ..ListFilter::default()
        };
        let owners = self.lessons(&filter)?;
        let mut runs = self.executions(&filter)?;
        runs.sort_by_key(|e| e.timestamp);
        Ok(crate::org::roster(
            owners.iter().filter_map(crate::org::owner_member),
            runs.iter().filter_map(|r| crate::org::run_member(&r.extra)),
        ))
    }

    /// A number that grows whenever a lesson is written, replaced or purged, by this process or
    /// any other sharing the store. Recall asks for it before every query, so it must be cheap.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn lesson_revision(&self) -> Result<u64>;

    /// The lessons inside `scope` changed after revision `since` (0: all of them), with the
    /// revision that brings the caller up to date. A lesson changed again while this runs is
    /// either included or left for the next call; never lost.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn lessons_changed(&self, scope: &Scope, since: u64) -> Result<LessonChanges>;

    /// Stores lesson vectors, each replacing any earlier vector of its lesson, atomically.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for a lesson that is not stored; [`crate::Error::Invalid`] for
    /// a vector whose length is not its embedder's dimension or that has a non-finite
    /// component. Nothing is written then.
    fn put_vectors(&self, vectors: &[LessonVector]) -> Result<()>;

    /// The stored vectors of the lessons inside `scope` (only those of `lessons` when given),
    /// in no particular order. A purged lesson has none: [`Store::purge`] erases the vectors
    /// of the lessons it erases.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn vectors(&self, scope: &Scope, lessons: Option<&[LessonId]>) -> Result<Vec<LessonVector>>;

    /// A named value kept with the records: the recall index's frozen embedder fit, the latest
    /// benchmark reports.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn index_state(&self, key: &str) -> Result<Option<Vec<u8>>>;

    /// Sets a named value of the recall index, replacing any earlier one.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for an empty key; [`crate::Error::Store`] when the backend
    /// fails.
    fn set_index_state(&self, key: &str, value: &[u8]) -> Result<()>;

    /// Where a derived file named `name` (an index rebuilt from this store whenever it is
    /// missing or in doubt) may be kept beside the store, or `None` (the default) for a store
    /// without such a place. The file never holds the only copy of anything.
    fn derived_path(&self, name: &str) -> Option<std::path::PathBuf> {
        let _ = name;
        None
    }

    /// Builds (once) the store's own nearest-neighbour index over the vectors of `embedder`,
    /// for [`Store::nearest_stored`]. Returns `false` from a store without one (the default).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn prepare_nearest(&self, embedder: &EmbedderId) -> Result<bool> {
        let _ = embedder;
        Ok(false)
    }

    /// The `k` lessons whose stored vectors of `embedder` are nearest `query` by cosine
    /// distance, nearest first, searched inside the store itself (through its index, or by
    /// scanning every vector when `exact`); `None` from a store that cannot (the default).
    /// This is a cold path: recall normally runs on each process's in-memory index.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] for a query whose dimension is not the embedder's;
    /// [`crate::Error::Store`] when the backend fails.
    fn nearest_stored(
        &self,
        embedder: &EmbedderId,
        query: &[f32],
        k: usize,
        exact: bool,
    ) -> Result<Option<Vec<LessonId>>> {
        let _ = (embedder, query, k, exact);
        Ok(None)
    }

    /// The bell this store rings after each write it hears of, or `None` (the default) for a
    /// store that hears of none; followers then read the store on a timer.
    fn change_bell(&self) -> Option<&crate::ports::bell::ChangeBell> {
        None
    }

    /// Where this store keeps knowledge documents and chunks.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default) from a store that keeps none.
    fn knowledge(&self) -> Result<&dyn crate::ports::knowledge::KnowledgeStore> {
        Err(crate::Error::Unsupported(format!(
            "the {} store does not keep knowledge chunks yet",
            self.info().backend
        )))
    }

    /// Where this store keeps resolved human-in-the-loop decisions.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default) from a store that keeps none.
    fn decisions(&self) -> Result<&dyn crate::ports::knowledge::DecisionStore> {
        Err(crate::Error::Unsupported(format!(
            "the {} store does not keep decisions yet",
            self.info().backend
        )))
    }

    /// Where this store keeps digests.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default) from a store that keeps none.
    fn digests(&self) -> Result<&dyn crate::ports::knowledge::DigestStore> {
        Err(crate::Error::Unsupported(format!(
            "the {} store does not keep digests yet",
            self.info().backend
        )))
    }

    /// Where this store keeps evaluation sets and runs.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default) from a store that keeps none.
    fn evals(&self) -> Result<&dyn crate::ports::knowledge::EvalStore> {
        Err(crate::Error::Unsupported(format!(
            "the {} store does not keep evaluation runs yet",
            self.info().backend
        )))
    }

    /// Where this store keeps the embedder's tuning runs and checkpoints.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] (the default) from a store without them.
    fn tuning(&self) -> Result<&dyn crate::ports::tuning::TuningStore> {
        Err(crate::Error::Unsupported(format!(
            "the {} store does not keep embedder tuning runs",
            self.info().backend
        )))
    }

    /// The cursor of the newest write: following from here sees only what comes next.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] from a store that cannot follow its writes;
    /// [`crate::Error::Store`] when the backend fails.
    fn change_cursor(&self) -> Result<ChangeCursor> {
        Err(crate::Error::Unsupported(format!(
            "the {} store cannot follow its writes",
            self.info().backend
        )))
    }

    /// Up to `limit` executions and up to `limit` audit entries written after `after`, in the
    /// order they were committed, whatever their scope (callers filter).
    ///
    /// # Errors
    /// As [`Store::change_cursor`].
    fn changes(&self, after: ChangeCursor, limit: usize) -> Result<Changes> {
        let _ = (after, limit);
        self.change_cursor().map(|_| Changes::default())
    }
}

/// The table each stored record kind lives in, named alike in every backend (episodes keep
/// tables of their own). The stores add what is particular to their SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// Executions.
    Executions,
    /// Corrections.
    Corrections,
    /// Lessons.
    Lessons,
    /// Error events.
    ErrorEvents,
    /// The audit log.
    Audit,
    /// Agent memory.
    Memories,
}

impl Table {
    /// The tables whose records carry a skill, with the audit kind that names them.
    pub const SCOPED: [(Table, RecordKind); 4] = [
        (Table::Executions, RecordKind::Execution),
        (Table::Corrections, RecordKind::Correction),
        (Table::Lessons, RecordKind::Lesson),
        (Table::ErrorEvents, RecordKind::ErrorEvent),
    ];

    /// The SQL table name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Executions => "executions",
            Table::Corrections => "corrections",
            Table::Lessons => "lessons",
            Table::ErrorEvents => "error_events",
            Table::Audit => "audit",
            Table::Memories => "memories",
        }
    }

    /// The kind of record, for messages.
    pub fn kind(self) -> &'static str {
        match self {
            Table::Executions => "execution",
            Table::Corrections => "correction",
            Table::Lessons => "lesson",
            Table::ErrorEvents => "error event",
            Table::Audit => "audit entry",
            Table::Memories => "memory entry",
        }
    }
}
