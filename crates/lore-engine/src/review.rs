//! Review: every status change, and the decisions a person makes on lessons.
//!
//! There is one way to change a lesson's status, [`Engine::transition_many`] (and its
//! one-lesson form [`Engine::transition`]). It checks each move against the lifecycle table
//! ([`lore_core::lifecycle::TRANSITIONS`]), refuses the whole batch before writing anything when one
//! move is wrong, and hands the store one atomic batch of lesson + audit entry pairs
//! ([`lore_core::ports::store::Store::update_lessons`]). Approve, reject, one-time exception, sensitive,
//! supersede, retire, expiry and pruning are all thin names over it, so no path can change a
//! status without the table's consent and an audit entry.
//!
//! What a reviewer sees ([`Engine::review_queue`]) is redacted: the detector's findings are
//! replaced by markers in the lesson, its source correction and the related lessons, so a
//! review screen never shows the secret it is asking about.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Value, json};

use crate::engine::{Engine, audit};
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::lifecycle;
use lore_core::model::{AuditAction, Lesson, LessonLink, LessonStatus, LinkKind, RecordKind};
use lore_core::ports::store::LessonUpdate;
use lore_core::scope::SkillPath;
use lore_core::sensitive::{self, SensitiveKind};

/// Who made a change and why; every status change carries one into its audit entry.
#[derive(Clone, Debug, Default)]
pub struct Attribution {
    /// The person or agent; `None` falls back to the handle's agent, then `lore`.
    pub actor: Option<String>,
    /// Why, in words; empty becomes "no reason given".
    pub reason: String,
    /// Supporting data for the audit entry (IDs, scores); `Value::Null` for none.
    pub evidence: Value,
}

impl Attribution {
    /// A change by `actor` (or the default actor) for `reason`.
    pub fn new(actor: Option<&str>, reason: impl Into<String>) -> Self {
        Self {
            actor: actor.map(str::to_owned),
            reason: reason.into(),
            evidence: Value::Null,
        }
    }

    /// The same attribution with `evidence`.
    pub fn with_evidence(mut self, evidence: Value) -> Self {
        self.evidence = evidence;
        self
    }

    pub(super) fn reason(&self) -> &str {
        match self.reason.trim() {
            "" => "no reason given",
            reason => reason,
        }
    }
}

/// A lesson linked to the one under review.
#[derive(Clone, Debug, Serialize)]
pub struct RelatedLesson {
    /// How it relates.
    pub kind: LinkKind,
    /// Its ID.
    pub id: LessonId,
    /// Its status, when it is still stored and in scope.
    pub status: Option<LessonStatus>,
    /// Its rule, redacted.
    pub rule: Option<String>,
}

/// One lesson waiting for a decision, with its evidence, redacted.
#[derive(Clone, Debug, Serialize)]
pub struct ReviewItem {
    /// The lesson with every text field redacted.
    pub lesson: Lesson,
    /// The source correction's text, redacted.
    pub correction: Option<String>,
    /// The kinds of sensitive data the detector found in the lesson.
    pub findings: BTreeSet<SensitiveKind>,
    /// Duplicates, conflicts and supersessions, with their rules.
    pub related: Vec<RelatedLesson>,
    /// Why the lesson is where it is: the reason of its latest audit entry, redacted.
    pub flagged: Option<String>,
}

impl Engine {
    /// Moves one lesson to `to`; see [`Engine::transition_many`].
    ///
    /// # Errors
    /// As [`Engine::transition_many`].
    pub fn transition(&self, id: &LessonId, to: LessonStatus, why: &Attribution) -> Result<Lesson> {
        let mut moved = self.transition_many(std::slice::from_ref(id), to, why)?;
        Ok(moved.remove(0))
    }

    /// Moves every lesson in `ids` to `to`, all or none, each with its own audit entry.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty or repeated list of IDs; [`Error::Conflict`] for a move
    /// the lifecycle table does not allow or a lesson that changed meanwhile;
    /// [`Error::NotFound`] for a lesson that does not exist or is outside the scope. Nothing changes on any error.
    pub fn transition_many(
        &self,
        ids: &[LessonId],
        to: LessonStatus,
        why: &Attribution,
    ) -> Result<Vec<Lesson>> {
        self.plan_and_apply(|| {
            let updates = self
                .load_distinct(ids)?
                .into_iter()
                .map(|l| self.planned_move(l, to, why))
                .collect::<Result<Vec<_>>>()?;
            let moved = updates.iter().map(|u| u.lesson.clone()).collect();
            Ok((updates, moved))
        })
    }

    /// Approves lessons; a lesson that was proposed to supersede others (a FULL verdict held
    /// for review) supersedes them now, in the same batch, and a conflict with a lesson that
    /// is (or is now) approved too is settled: both apply, so the link goes and both are
    /// recalled.
    ///
    /// # Errors
    /// As [`Engine::transition_many`].
    pub fn approve(&self, ids: &[LessonId], why: &Attribution) -> Result<Vec<Lesson>> {
        self.plan_and_apply(|| self.planned_approval(ids, why))
    }

    /// The updates that approve `ids` (and supersede what they were proposed to replace), and
    /// the approved lessons.
    fn planned_approval(
        &self,
        ids: &[LessonId],
        why: &Attribution,
    ) -> Result<(Vec<LessonUpdate>, Vec<Lesson>)> {
        let lessons = self.load_distinct(ids)?;
        let mut updates = Vec::new();
        let mut pending = Vec::new();
        for lesson in lessons {
            pending.extend(self.pending_supersessions(&lesson, ids)?);
            self.check_org_move(&lesson, LessonStatus::Approved, true)?;
            updates.push(self.unchecked_move(lesson, LessonStatus::Approved, why)?);
        }
        let count = updates.len();
        self.settle_conflicts(&mut updates, why)?;
        let approved: Vec<Lesson> = updates[..count].iter().map(|u| u.lesson.clone()).collect();
        for (old, by) in pending {
            let evidence = json!({ "superseded_by": by });
            let why = Attribution {
                reason: format!("superseded by {by}, approved"),
                evidence,
                ..why.clone()
            };
            let mut update = self.planned_move(old, LessonStatus::Superseded, &why)?;
            link(&mut update.lesson, LinkKind::SupersededBy, &by);
            updates.push(update);
        }
        Ok((updates, approved))
    }

    /// Plans a batch with `plan` and writes it. When the store refuses the batch because a
    /// lesson changed between the read and the write (another process's correction linked it,
    /// or a second reviewer edited it), the batch is planned again on fresh reads, lifecycle
    /// checks included: a retry is the same call made a moment later, never a blind overwrite,
    /// and a decision is not refused for a race the caller could not see.
    fn plan_and_apply<T>(
        &self,
        mut plan: impl FnMut() -> Result<(Vec<LessonUpdate>, T)>,
    ) -> Result<T> {
        // Busy skills see a correction touch many lessons at once; a growing pause (5 ms, 10 ms,
        // ... about a quarter second in all) lets the other writer finish.
        const ATTEMPTS: u32 = 10;
        for attempt in 1.. {
            let (updates, value) = plan()?;
            match self.apply(updates) {
                Ok(_) => return Ok(value),
                Err(Error::Conflict(why)) if attempt < ATTEMPTS => {
                    tracing::debug!(%why, attempt, "a lesson changed meanwhile; planning again");
                    std::thread::sleep(std::time::Duration::from_millis(5 * u64::from(attempt)));
                }
                Err(err) => return Err(err),
            }
        }
        unreachable!("the loop returns by its last attempt")
    }

    /// Rejects lessons: judged wrong or noise, kept for the record, never retrieved.
    ///
    /// # Errors
    /// As [`Engine::transition_many`].
    pub fn reject(&self, ids: &[LessonId], why: &Attribution) -> Result<Vec<Lesson>> {
        self.transition_many(ids, LessonStatus::Rejected, why)
    }

    /// Marks lessons as one-time exceptions: a real outcome, not to be generalized.
    ///
    /// # Errors
    /// As [`Engine::transition_many`].
    pub fn mark_one_time_exception(
        &self,
        ids: &[LessonId],
        why: &Attribution,
    ) -> Result<Vec<Lesson>> {
        self.transition_many(ids, LessonStatus::OneTimeException, why)
    }

    /// Marks lessons as sensitive: they never reach a prompt again, and can be purged.
    ///
    /// # Errors
    /// As [`Engine::transition_many`].
    pub fn mark_sensitive(&self, ids: &[LessonId], why: &Attribution) -> Result<Vec<Lesson>> {
        self.transition_many(ids, LessonStatus::Sensitive, why)
    }

    /// Supersedes lessons by `by`: each moves to `superseded` with a `superseded_by` link, and
    /// `by` gains a `supersedes` link to each, in one atomic batch.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `by` is among `ids`, is of another skill, or is not itself
    /// retrievable or waiting for review; otherwise as [`Engine::transition_many`].
    pub fn supersede(
        &self,
        ids: &[LessonId],
        by: &LessonId,
        why: &Attribution,
    ) -> Result<Vec<Lesson>> {
        if ids.contains(by) {
            return Err(Error::invalid(
                "supersede",
                format!("{by} cannot supersede itself"),
            ));
        }
        let successor = self.lesson(by)?;
        if !matches!(
            successor.status,
            LessonStatus::Approved | LessonStatus::Trial | LessonStatus::NeedsReview
        ) {
            return Err(Error::invalid(
                "supersede",
                format!(
                    "{by} is {}; only a live lesson can supersede",
                    successor.status.as_str()
                ),
            ));
        }
        let why = Attribution {
            evidence: json!({ "superseded_by": by }),
            ..why.clone()
        };
        let mut updates = Vec::new();
        let mut after = successor.clone();
        for lesson in self.load_distinct(ids)? {
            if lesson.skill != successor.skill {
                return Err(Error::invalid(
                    "supersede",
                    format!(
                        "{} is of {}, {by} of {}",
                        lesson.id, lesson.skill, successor.skill
                    ),
                ));
            }
            link(&mut after, LinkKind::Supersedes, &lesson.id);
            let mut update = self.planned_move(lesson, LessonStatus::Superseded, &why)?;
            link(&mut update.lesson, LinkKind::SupersededBy, by);
            updates.push(update);
        }
        let moved: Vec<Lesson> = updates.iter().map(|u| u.lesson.clone()).collect();
        let reason = format!("supersedes {}", join_ids(ids));
        updates.push(self.planned_edit(successor, after, &Attribution { reason, ..why }));
        self.apply(updates)?;
        Ok(moved)
    }

    /// Lessons in `statuses` (default: `needs_review`) with their evidence, redacted, oldest
    /// first.
    ///
    /// # Errors
    /// Store failures.
    pub fn review_queue(
        &self,
        skill: Option<&SkillPath>,
        statuses: Option<BTreeSet<LessonStatus>>,
    ) -> Result<Vec<ReviewItem>> {
        let statuses = statuses.unwrap_or_else(|| [LessonStatus::NeedsReview].into());
        self.lessons(skill, Some(statuses))?
            .iter()
            .map(|l| self.review_item(l))
            .collect()
    }

    fn review_item(&self, lesson: &Lesson) -> Result<ReviewItem> {
        let correction = match &lesson.correction_id {
            Some(id) => self
                .store
                .correction(id)?
                .map(|c| sensitive::redact(&c.text)),
            None => None,
        };
        let related = lesson
            .links
            .iter()
            .map(|link| {
                let other = self.lesson(&link.target).ok();
                RelatedLesson {
                    kind: link.kind,
                    id: link.target.clone(),
                    status: other.as_ref().map(|o| o.status),
                    rule: other.map(|o| sensitive::redact(&o.rule)),
                }
            })
            .collect();
        let flagged = self
            .store
            .audit(Some(lesson.id.as_str()))?
            .pop()
            .map(|a| sensitive::redact(&a.reason));
        Ok(ReviewItem {
            lesson: sensitive::redact_lesson(lesson),
            correction,
            findings: sensitive::scan_lesson(lesson),
            related,
            flagged,
        })
    }

    /// The lessons named by `ids`, each once, all inside the scope.
    fn load_distinct(&self, ids: &[LessonId]) -> Result<Vec<Lesson>> {
        if ids.is_empty() {
            return Err(Error::invalid("lesson IDs", "name at least one lesson"));
        }
        let mut seen = BTreeSet::new();
        if let Some(twice) = ids.iter().find(|id| !seen.insert(*id)) {
            return Err(Error::invalid(
                "lesson IDs",
                format!("{twice} is named twice"),
            ));
        }
        ids.iter().map(|id| self.lesson(id)).collect()
    }

    /// The lessons that `lesson` was proposed to supersede and that are not superseded yet,
    /// paired with `lesson`'s ID; lessons in `batch` are decided by the batch itself.
    fn pending_supersessions(
        &self,
        lesson: &Lesson,
        batch: &[LessonId],
    ) -> Result<Vec<(Lesson, LessonId)>> {
        let mut out = Vec::new();
        for l in &lesson.links {
            if l.kind != LinkKind::Supersedes || batch.contains(&l.target) {
                continue;
            }
            if let Some(old) = self.store.lesson(&l.target)?
                && lifecycle::is_allowed(old.status, LessonStatus::Superseded)
            {
                out.push((old, lesson.id.clone()));
            }
        }
        Ok(out)
    }

    /// The update that moves `lesson` to `to`, checked against the table and the scope.
    pub(super) fn planned_move(
        &self,
        lesson: Lesson,
        to: LessonStatus,
        why: &Attribution,
    ) -> Result<LessonUpdate> {
        self.check_org_move(&lesson, to, false)?;
        self.unchecked_move(lesson, to, why)
    }

    /// [`Engine::planned_move`] without the org rule, for the approval that checked it.
    fn unchecked_move(
        &self,
        lesson: Lesson,
        to: LessonStatus,
        why: &Attribution,
    ) -> Result<LessonUpdate> {
        self.scope.check_write(&lesson.skill)?;
        // The request is well formed but the lesson's current state refuses it: a conflict
        // (409 over REST), so a client knows to re-read the lesson rather than fix its input.
        if lesson.status == to {
            return Err(Error::Conflict(format!(
                "{} is already {}",
                lesson.id,
                to.as_str()
            )));
        }
        lifecycle::check(lesson.status, to).map_err(|e| match e {
            Error::Invalid { why, .. } => {
                Error::Conflict(format!("status of {}: {why}", lesson.id))
            }
            other => other,
        })?;
        let mut after = lesson.clone();
        after.status = to;
        Ok(self.planned(lesson, after, AuditAction::Transition, why))
    }

    /// The update that edits `lesson` into `after` without a status change.
    pub(super) fn planned_edit(
        &self,
        lesson: Lesson,
        after: Lesson,
        why: &Attribution,
    ) -> LessonUpdate {
        self.planned(lesson, after, AuditAction::Edited, why)
    }

    fn planned(
        &self,
        before: Lesson,
        mut after: Lesson,
        action: AuditAction,
        why: &Attribution,
    ) -> LessonUpdate {
        let at = self.now().max(before.updated_at);
        after.updated_at = at;
        let statuses = match action {
            AuditAction::Transition => (Some(before.status), Some(after.status)),
            _ => (None, None),
        };
        let entry = audit(
            RecordKind::Lesson,
            after.id.as_str(),
            action,
            statuses,
            &self.actor(why.actor.as_deref()),
            at,
            why.reason(),
            why.evidence.clone(),
        );
        LessonUpdate {
            lesson: after,
            expected_updated_at: before.updated_at,
            audit: entry,
        }
    }

    /// Writes the updates as one atomic batch; a lesson named twice is a bug in the caller.
    pub(super) fn apply(&self, updates: Vec<LessonUpdate>) -> Result<Vec<Lesson>> {
        let mut once = BTreeMap::new();
        for u in &updates {
            if once.insert(u.lesson.id.clone(), ()).is_some() {
                return Err(Error::invalid(
                    "lesson IDs",
                    format!("{} would change twice in one batch", u.lesson.id),
                ));
            }
        }
        self.store.update_lessons(&updates)?;
        let lessons: Vec<Lesson> = updates.into_iter().map(|u| u.lesson).collect();
        self.materialize(&lessons);
        Ok(lessons)
    }
}

/// Adds a link unless it is there already.
pub(super) fn link(lesson: &mut Lesson, kind: LinkKind, target: &LessonId) {
    let link = LessonLink {
        kind,
        target: target.clone(),
    };
    if !lesson.links.contains(&link) {
        lesson.links.push(link);
    }
}

fn join_ids(ids: &[LessonId]) -> String {
    ids.iter()
        .map(LessonId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
