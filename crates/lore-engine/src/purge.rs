//! Purge: the one way content leaves Lore for good, on request and on the record.
//!
//! Everything else in Lore archives; a purge erases. It replaces the text of a lesson, of the
//! corrections it was learned from, and the evidence of its earlier audit entries (an edit's
//! entry holds the text before and after) with a marker, in one store call that also drops their
//! full-text rows ([`lore_core::ports::store::Store::purge`]). The record and its IDs stay, so links and
//! the audit trail still resolve, and a `purged` audit entry says who asked and why. The lesson
//! leaves use in the same step: it ends `archived`, or stays `sensitive` if it was. The
//! execution a correction was about is not touched; its content is the agent's record, purged
//! separately when needed.
//!
//! Copies derived from a lesson go first: the digest versions made from it are deleted (the
//! next build makes the skill's digest again) and the answer excerpts of evaluation grades whose
//! context held it become the marker.
//!
//! An episode is purged the same way: its task becomes the marker, its decisions, events, links
//! and lessons are dropped, and the store takes its contribution out of the causal graph in the
//! same transaction, so no graph query uses it again.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::review::Attribution;
use crate::engine::{Engine, audit};
use lore_core::error::{Error, Result};
use lore_core::id::{CorrectionId, EpisodeId, LessonId};
use lore_core::lifecycle;
use lore_core::model::{
    AuditAction, AuditEntry, Correction, Episode, Lesson, LessonStatus, RecordKind, Tiers,
};
use lore_core::ports::store::Record;

pub use lore_core::model::PURGED;

/// What a purge erased.
#[derive(Clone, Debug, Serialize)]
pub struct PurgeReport {
    /// The lesson, as it is now stored.
    pub lesson: Lesson,
    /// The corrections whose text was erased.
    pub corrections: Vec<CorrectionId>,
    /// How many earlier audit entries lost their evidence.
    pub audit_entries: usize,
}

impl Engine {
    /// Erases a lesson's content and that of its source corrections, with an audit entry.
    ///
    /// # Errors
    /// [`Error::Invalid`] without a reason; [`crate::Error::NotFound`] for a lesson that does not exist or is outside the scope;
    /// [`crate::Error::Forbidden`] outside the scope; store failures. Nothing changes on error.
    pub fn purge_lesson(&self, id: &LessonId, why: &Attribution) -> Result<PurgeReport> {
        check_reason(why)?;
        let lesson = self.lesson(id)?;
        self.scope.check_write(&lesson.skill)?;
        let mut erased = vec![Record::Lesson(erase_lesson(&lesson, self.now()))];
        let mut corrections = Vec::new();
        for cid in lesson.correction_id.iter().chain(&lesson.merged_from) {
            if let Some(c) = self.store.correction(cid)? {
                erased.push(Record::Correction(erase_correction(c)));
                corrections.push(cid.clone());
            }
        }
        let audit_entries = erase_evidence(&mut erased, self.store.audit(Some(id.as_str()))?);
        let Record::Lesson(after) = &erased[0] else {
            unreachable!("the lesson comes first")
        };
        let entry = audit(
            RecordKind::Lesson,
            id.as_str(),
            AuditAction::Purged,
            (Some(lesson.status), Some(after.status)),
            &self.actor(why.actor.as_deref()),
            after.updated_at,
            why.reason(),
            json!({ "corrections": corrections, "audit_entries": audit_entries }),
        );
        let after = after.clone();
        // Derived copies first: if the purge then fails, only derived data is gone, and the
        // next build makes it again; the other way round, a crash would leave the text quoted.
        self.forget_derived(id.as_str())?;
        self.store.purge(&erased, &entry)?;
        // The recall index saved beside the store names the lesson and hashes its old text.
        self.forget_saved_index();
        Ok(PurgeReport {
            lesson: after,
            corrections,
            audit_entries,
        })
    }
}

/// What an episode purge erased.
#[derive(Clone, Debug, Serialize)]
pub struct EpisodePurgeReport {
    /// The episode as it is now stored: its ID, skill, session, agent, time, outcome and
    /// metrics; its task is the marker and it holds no decisions, events, links or lessons.
    pub episode: Episode,
    /// How many decisions were erased.
    pub decisions: usize,
    /// How many events were erased.
    pub events: usize,
    /// How many earlier audit entries lost their evidence.
    pub audit_entries: usize,
}

impl Engine {
    /// Erases an episode's content and takes it out of the causal graph, in one transaction,
    /// with an audit entry. Graph queries no longer see it; listings still show its ID, time
    /// and outcome.
    ///
    /// # Errors
    /// [`Error::Invalid`] without a reason; [`crate::Error::NotFound`] for an episode that does
    /// not exist or is outside the scope; [`crate::Error::Forbidden`] when the scope may read but
    /// not write it; store failures. Nothing changes on error.
    pub fn purge_episode(&self, id: &EpisodeId, why: &Attribution) -> Result<EpisodePurgeReport> {
        check_reason(why)?;
        let episode = self.episode(id)?;
        self.scope.check_write(&episode.skill)?;
        let erased = Episode {
            task: PURGED.to_owned(),
            decisions: Vec::new(),
            events: Vec::new(),
            links: Vec::new(),
            lessons: Vec::new(),
            ..episode.clone()
        };
        let (decisions, events) = (episode.decisions.len(), episode.events.len());
        let mut records = vec![Record::Episode(erased.clone())];
        let audit_entries = erase_evidence(&mut records, self.store.audit(Some(id.as_str()))?);
        let entry = audit(
            RecordKind::Episode,
            id.as_str(),
            AuditAction::Purged,
            (None, None),
            &self.actor(why.actor.as_deref()),
            self.now(),
            why.reason(),
            json!({ "decisions": decisions, "events": events, "audit_entries": audit_entries }),
        );
        self.store.purge(&records, &entry)?;
        Ok(EpisodePurgeReport {
            episode: erased,
            decisions,
            events,
            audit_entries,
        })
    }
}

impl Engine {
    /// Erases a purged record's text from what was derived from it: the digest versions made
    /// from it, and the answer excerpts of evaluation grades whose context held it. A store
    /// without digests or evaluation runs has none.
    fn forget_derived(&self, id: &str) -> Result<()> {
        let unsupported = |r: Result<usize>| match r {
            Err(Error::Unsupported(_)) => Ok(0),
            other => other,
        };
        let digests = unsupported(
            self.store
                .digests()
                .and_then(|s| s.forget_digest_source(id)),
        )?;
        let grades = unsupported(
            self.store
                .evals()
                .and_then(|s| s.forget_eval_item(id, PURGED)),
        )?;
        tracing::info!(
            id,
            digests,
            grades,
            "purged text erased from derived records"
        );
        Ok(())
    }
}

fn check_reason(why: &Attribution) -> Result<()> {
    if why.reason.trim().is_empty() {
        return Err(Error::invalid(
            "reason",
            "a purge needs a reason for the audit log",
        ));
    }
    Ok(())
}

/// Adds to `records` the entries of `history` that hold evidence, with the evidence erased (an
/// edit's entry holds the text before and after); returns how many.
fn erase_evidence(records: &mut Vec<Record>, history: Vec<AuditEntry>) -> usize {
    let before = records.len();
    records.extend(
        history
            .into_iter()
            .filter(|a| !a.evidence.is_null())
            .map(|mut a| {
                a.evidence = json!({ "purged": true });
                Record::Audit(a)
            }),
    );
    records.len() - before
}

fn erase_lesson(lesson: &Lesson, now: chrono::DateTime<chrono::Utc>) -> Lesson {
    let status = if lifecycle::is_allowed(lesson.status, LessonStatus::Archived) {
        LessonStatus::Archived
    } else {
        lesson.status
    };
    Lesson {
        mistake: PURGED.to_owned(),
        root_cause: PURGED.to_owned(),
        rule: PURGED.to_owned(),
        applies_when: PURGED.to_owned(),
        triggers: Vec::new(),
        tags: Vec::new(),
        tiers: Tiers {
            summary: PURGED.to_owned(),
            ..Tiers::default()
        },
        status,
        updated_at: now.max(lesson.updated_at),
        extra: Map::new(),
        ..lesson.clone()
    }
}

fn erase_correction(correction: Correction) -> Correction {
    Correction {
        text: PURGED.to_owned(),
        original_output: Value::Null,
        extra: Map::new(),
        ..correction
    }
}
