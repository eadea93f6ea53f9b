//! Curation at write time: a new lesson from a correction is checked for secrets, duplicates,
//! conflicts and supersession before it is stored.
//!
//! The order matters. The sensitive-data detector runs first: a lesson holding a secret is
//! stored as `sensitive`, alone, and takes part in nothing else (it must not grow another
//! lesson's evidence or appear in a link that review shows). Then the lesson is compared with
//! the skill's live lessons (`needs_review`, `trial`, `approved`) by
//! [`lore_core::supersession::Profile::verdict`]:
//!
//! - **Duplicate** (same normalized rule and triggers): no new lesson; the existing one's
//!   evidence grows — the correction joins its `merged_from` list and its confidence becomes the
//!   higher of the two — with an `edited` audit entry.
//! - **Conflict**: both kept and linked both ways (`conflicts`), and the new lesson goes to
//!   `needs_review` whatever the curation mode. [`super::Engine::prompt`] never shows both.
//! - **Full**: the new lesson supersedes the old one. If it is retrievable at once (approved,
//!   or on trial in auto mode) the old one moves to `superseded` now; if it waits for review,
//!   the `supersedes` link is held and applied by [`super::Engine::approve`].
//! - **Near-duplicate** (nearly the same rule words): merged like a duplicate. Linking them
//!   kept both, and two near-identical rules were both approved and both shown.
//! - **Partial**: nothing to do.
//!
//! The correction, the new lesson and the links and transitions on older lessons land in one
//! transaction ([`lore_core::ports::store::Store::write_and_update`]), so a correction is either stored
//! with everything curation decided, or not at all. An older lesson changed by another writer
//! between the read and the write makes the store refuse the whole batch; the correction is then
//! placed again among the lessons as they are now.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::json;

use chrono::{DateTime, Utc};

use super::review::{Attribution, link};
use crate::engine::{Engine, audit};
use lore_core::error::{Error, Result};
use lore_core::id::{CorrectionId, LessonId};
use lore_core::model::{
    AuditAction, Correction, Lesson, LessonSource, LessonStatus, LinkKind, RecordKind,
};
use lore_core::ports::store::{LessonUpdate, ListFilter, OnDuplicate, Record};
use lore_core::scope::SkillPath;
use lore_core::sensitive::{self, SensitiveKind};
use lore_core::supersession::{Profile, Verdict};

/// What write-time curation did with a new lesson.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CurationReport {
    /// The existing lesson the correction was merged into, when it was a duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_into: Option<LessonId>,
    /// Lessons it conflicts with; it waits for review.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<LessonId>,
    /// Lessons it supersedes (now, or once approved).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<LessonId>,
    /// Lessons it nearly duplicates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub near_duplicates: Vec<LessonId>,
    /// Kinds of sensitive data found in the correction; the lesson is `sensitive` when any.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub sensitive: BTreeSet<SensitiveKind>,
}

/// The states a new lesson is compared with.
pub(super) const LIVE: [LessonStatus; 3] = [
    LessonStatus::NeedsReview,
    LessonStatus::Trial,
    LessonStatus::Approved,
];

/// The outcome of placing a new lesson among the skill's lessons.
pub(super) enum Placement {
    /// Store `lesson` as new, then apply `updates` to older lessons.
    New {
        lesson: Box<Lesson>,
        updates: Vec<LessonUpdate>,
        report: CurationReport,
    },
    /// Do not store a new lesson; apply `update`, which merges the correction into an old one.
    Merged {
        update: Box<LessonUpdate>,
        report: CurationReport,
    },
}

impl Engine {
    /// Decides where a freshly distilled lesson goes; writes nothing.
    pub(super) fn place(&self, lesson: Lesson, correction: &Correction) -> Result<Placement> {
        let live: Vec<Known> = self
            .live_lessons(&lesson.skill)?
            .into_iter()
            .map(Known::new)
            .collect();
        self.place_among(lesson, correction, &live.iter().collect::<Vec<_>>())
    }

    /// [`Engine::place`] among `live`, the skill's live lessons as the caller sees them (a
    /// bulk import sees the store's and those its batch made so far).
    pub(super) fn place_among(
        &self,
        mut lesson: Lesson,
        correction: &Correction,
        live: &[&Known],
    ) -> Result<Placement> {
        self.mark_learned(&mut lesson)?;
        let mut report = CurationReport {
            sensitive: sensitive::kinds(&correction.text),
            ..CurationReport::default()
        };
        report.sensitive.extend(sensitive::scan_lesson(&lesson));
        if !report.sensitive.is_empty() {
            lesson.status = LessonStatus::Sensitive;
            return Ok(new(lesson, Vec::new(), report));
        }
        let profile = Profile::of(&lesson);
        let verdicts: Vec<(&Lesson, Verdict)> = live
            .iter()
            .map(|old| {
                let v = profile.verdict(&old.profile, &self.config.thresholds);
                (&old.lesson, v)
            })
            .filter(|(_, v)| *v != Verdict::Partial)
            .collect();
        let same = |v: &Verdict| *v == Verdict::Duplicate;
        let near = |v: &Verdict| matches!(v, Verdict::NearDuplicate { .. });
        let twin = verdicts
            .iter()
            .find(|(_, v)| same(v))
            .or_else(|| verdicts.iter().find(|(_, v)| near(v)));
        if let Some((old, _)) = twin {
            let update = self.merge((*old).clone(), &lesson, &correction.id);
            report.merged_into = Some(old.id.clone());
            return Ok(Placement::Merged {
                update: Box::new(update),
                report,
            });
        }
        let updates = self.relate(&mut lesson, strongest(verdicts), &mut report)?;
        Ok(new(lesson, updates, report))
    }

    pub(super) fn live_lessons(&self, skill: &SkillPath) -> Result<Vec<Lesson>> {
        let mut live = self.store.lessons(&ListFilter {
            statuses: Some(LIVE.into()),
            ..ListFilter::skill(&self.scope, skill)
        })?;
        // A member's lesson is its own: it merges with, conflicts with and supersedes only the
        // member's other lessons, never what others share; the org pool joins members' rules.
        if self.scope.is_member() {
            live.retain(|l| lore_core::org::owner(l) == self.scope.agent);
        } else {
            live.retain(|l| lore_core::org::visible(l, &self.scope));
        }
        Ok(live)
    }

    /// The update that merges a duplicate correction into `old`.
    fn merge(&self, old: Lesson, new: &Lesson, correction: &CorrectionId) -> LessonUpdate {
        let mut after = old.clone();
        after.merged_from.push(correction.clone());
        after.confidence = old.confidence.max(new.confidence);
        let why = Attribution::new(None, "merged a duplicate correction").with_evidence(json!({
            "correction_id": correction,
            "execution_id": new.execution_id,
            "confidence": { "before": old.confidence, "after": after.confidence },
            "evidence_count": after.merged_from.len() + 1,
        }));
        self.planned_edit(old, after, &why)
    }

    /// Links `lesson` with the lessons it conflicts with, supersedes or nearly duplicates, and
    /// returns the updates those lessons need.
    fn relate(
        &self,
        lesson: &mut Lesson,
        (verdicts, conflicted): (Vec<(Lesson, Verdict)>, bool),
        report: &mut CurationReport,
    ) -> Result<Vec<LessonUpdate>> {
        if conflicted {
            lesson.status = LessonStatus::NeedsReview;
        }
        let retrievable_now = matches!(lesson.status, LessonStatus::Approved | LessonStatus::Trial);
        let mut updates = Vec::new();
        for (old, verdict) in verdicts {
            let evidence = json!({ "lesson": lesson.id, "verdict": verdict });
            let (mine, theirs, list) = match verdict {
                Verdict::Conflict { .. } => (
                    LinkKind::Conflicts,
                    LinkKind::Conflicts,
                    &mut report.conflicts,
                ),
                Verdict::Full { .. } => (
                    LinkKind::Supersedes,
                    LinkKind::SupersededBy,
                    &mut report.supersedes,
                ),
                Verdict::NearDuplicate { .. } => (
                    LinkKind::NearDuplicate,
                    LinkKind::NearDuplicate,
                    &mut report.near_duplicates,
                ),
                Verdict::Duplicate | Verdict::Partial => continue,
            };
            list.push(old.id.clone());
            link(lesson, mine, &old.id);
            let mut after = old.clone();
            if mine == LinkKind::Supersedes && !retrievable_now {
                continue; // held until the new lesson is approved
            }
            link(&mut after, theirs, &lesson.id);
            let reason = format!("{} {}", verb(mine), lesson.id);
            let why = Attribution::new(None, reason).with_evidence(evidence);
            updates.push(if mine == LinkKind::Supersedes {
                let mut update = self.planned_move(old, LessonStatus::Superseded, &why)?;
                update.lesson.links = after.links;
                update
            } else {
                self.planned_edit(old, after, &why)
            });
        }
        Ok(updates)
    }
}

/// The most lessons a new lesson is linked with (conflicts, supersedes, near-duplicates
/// together). Each link rewrites the older lesson and audits it; uncapped, n lessons on one
/// subject wrote n²/2 links and audit entries (400 imported lines: 80,600 audit rows). The
/// strongest relations are kept, the newest first among equals, so a reviewer still sees the
/// lessons most like the new one.
pub const MAX_RELATED: usize = 8;

/// The most links an older lesson is given: one every later lesson on its subject relates to
/// (the first approved rule of a topic, say) would otherwise gain a link, a rewrite and an
/// audit entry per lesson ever placed after it. A new lesson that relates to a full one still
/// goes to review when they conflict; it is linked with the next strongest instead.
pub const MAX_LINKS_HELD: usize = 4 * MAX_RELATED;

/// A live lesson with its comparison profile, computed once however many lessons are placed
/// against it.
#[derive(Clone, Debug)]
pub(super) struct Known {
    pub(super) lesson: Lesson,
    pub(super) profile: Profile,
}

impl Known {
    pub(super) fn new(lesson: Lesson) -> Self {
        let profile = Profile::of(&lesson);
        Self { lesson, profile }
    }
}

/// The [`MAX_RELATED`] strongest relations of `verdicts` (taken oldest first), and whether any
/// of all of them is a conflict: a conflict sends the new lesson to review even when the
/// lesson it conflicts with is not among those linked.
fn strongest(verdicts: Vec<(&Lesson, Verdict)>) -> (Vec<(Lesson, Verdict)>, bool) {
    let conflicted = verdicts
        .iter()
        .any(|(_, v)| matches!(v, Verdict::Conflict { .. }));
    let strength = |v: &Verdict| match v {
        Verdict::Conflict { conditions, .. } => 3.0 + conditions,
        Verdict::Full { actions } => 2.0 + actions,
        Verdict::NearDuplicate { similarity } => 1.0 + similarity,
        Verdict::Duplicate | Verdict::Partial => 0.0,
    };
    let mut ranked: Vec<(usize, &Lesson, Verdict)> = verdicts
        .into_iter()
        .enumerate()
        .filter(|(_, (l, _))| l.links.len() < MAX_LINKS_HELD)
        .map(|(i, (l, v))| (i, l, v))
        .rev()
        .collect();
    ranked.sort_by(|a, b| strength(&b.2).total_cmp(&strength(&a.2)));
    ranked.truncate(MAX_RELATED);
    // Linked in the order the lessons were made, as when every relation was kept.
    ranked.sort_by_key(|(i, ..)| *i);
    let kept = ranked.into_iter().map(|(_, l, v)| (l.clone(), v)).collect();
    (kept, conflicted)
}

fn new(lesson: Lesson, updates: Vec<LessonUpdate>, report: CurationReport) -> Placement {
    Placement::New {
        lesson: Box::new(lesson),
        updates,
        report,
    }
}

fn verb(kind: LinkKind) -> &'static str {
    match kind {
        LinkKind::Conflicts => "conflicts with",
        LinkKind::Supersedes | LinkKind::SupersededBy => "superseded by",
        LinkKind::NearDuplicate => "nearly duplicated by",
    }
}

impl CurationReport {
    /// Why no guardrail should be written for `lesson`, if none should.
    pub(super) fn guardrail_skipped(&self, lesson: &Lesson) -> Option<String> {
        if let Some(into) = &self.merged_into {
            return Some(format!("merged into {into}, whose guardrail was written"));
        }
        match lesson.status {
            LessonStatus::Sensitive => Some("the correction holds sensitive data".to_owned()),
            _ => None,
        }
    }
}

/// How many times a correction is placed again when an older lesson it links changed between
/// the read and the write.
pub(super) const PLACE_ATTEMPTS: u32 = 10;

impl Engine {
    /// Stores a correction and what curation made of its lesson; returns the lesson as stored
    /// (the new one, or the one it was merged into).
    ///
    /// Everything lands in one transaction: the correction, the new lesson, their audit entries
    /// and the changes to older lessons. When an older lesson changed since curation read it
    /// (another writer linked it meanwhile), nothing is stored and the correction is placed
    /// again among the lessons as they are now; only when that keeps failing is the correction
    /// refused, and then it is not stored.
    pub(super) fn store_correction(
        &self,
        correction: &Correction,
        lesson: Lesson,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<(Lesson, CurationReport)> {
        let mut attempt = 1;
        loop {
            let started = std::time::Instant::now();
            match self.try_store_correction(correction, lesson.clone(), actor, at) {
                // A taken ID is a conflict too; placing again costs a read and then fails the
                // same way, so one rule serves every backend's wording.
                Err(Error::Conflict(why)) if attempt < PLACE_ATTEMPTS => {
                    tracing::debug!(%why, attempt, "an older lesson changed; placing again");
                    // Writers that collided would collide again at once: wait a random while
                    // that grows with each attempt, so they take turns. The while is at least
                    // as long as an attempt took: over a shared database an attempt's round
                    // trips take far longer than on one SQLite file, and writers on several
                    // servers kept colliding through every try with a fixed few milliseconds.
                    let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    let most = took.max(2).saturating_mul(u64::from(attempt));
                    std::thread::sleep(std::time::Duration::from_millis(rand::random_range(
                        0..=most,
                    )));
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// Stores a correction that makes no lesson, with its audit entry: feedback on its run.
    pub(super) fn store_feedback(
        &self,
        correction: &Correction,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let recorded = correction_recorded(
            correction,
            actor,
            at,
            "correction recorded as feedback; it holds no rule, so no lesson was made",
        );
        self.store.write(
            &[Record::Correction(correction.clone()), recorded],
            OnDuplicate::Fail,
        )?;
        Ok(())
    }

    fn try_store_correction(
        &self,
        correction: &Correction,
        lesson: Lesson,
        actor: &str,
        at: DateTime<Utc>,
    ) -> Result<(Lesson, CurationReport)> {
        let recorded = correction_recorded(correction, actor, at, "correction recorded");
        match self.place(lesson, correction)? {
            Placement::Merged { update, report } => {
                let merged = update.lesson.clone();
                self.store.write_and_update(
                    &[Record::Correction(correction.clone()), recorded],
                    OnDuplicate::Fail,
                    &[*update],
                )?;
                Ok((merged, report))
            }
            Placement::New {
                lesson,
                updates,
                report,
            } => {
                let created = lesson_created(&lesson, correction, &report, actor, at);
                let records = [
                    Record::Correction(correction.clone()),
                    Record::Lesson((*lesson).clone()),
                    recorded,
                    created,
                ];
                self.store
                    .write_and_update(&records, OnDuplicate::Fail, &updates)?;
                Ok((*lesson, report))
            }
        }
    }
}

/// The audit entry of a stored correction.
pub(super) fn correction_recorded(
    correction: &Correction,
    actor: &str,
    at: DateTime<Utc>,
    reason: &str,
) -> Record {
    Record::Audit(audit(
        RecordKind::Correction,
        correction.id.as_str(),
        AuditAction::Created,
        (None, None),
        actor,
        at,
        reason,
        json!({ "execution_id": correction.execution_id }),
    ))
}

/// The audit entry of a lesson made from `correction`.
pub(super) fn lesson_created(
    lesson: &Lesson,
    correction: &Correction,
    report: &CurationReport,
    actor: &str,
    at: DateTime<Utc>,
) -> Record {
    Record::Audit(audit(
        RecordKind::Lesson,
        lesson.id.as_str(),
        AuditAction::Created,
        (None, Some(lesson.status)),
        actor,
        at,
        &created_reason(lesson.source, report),
        json!({ "correction_id": correction.id, "confidence": lesson.confidence, "curation": report }),
    ))
}

fn created_reason(source: LessonSource, report: &CurationReport) -> String {
    let mut reason = match source {
        LessonSource::Llm => "proposed from a correction by a model".to_owned(),
        _ => "distilled from a correction by the offline distiller".to_owned(),
    };
    if !report.sensitive.is_empty() {
        let kinds: Vec<&str> = report.sensitive.iter().map(|k| k.as_str()).collect();
        reason.push_str(&format!("; sensitive data detected ({})", kinds.join(", ")));
    }
    if !report.conflicts.is_empty() {
        reason.push_str("; conflicts with an existing lesson, sent to review");
    }
    reason
}

/// The last guard before lessons enter a prompt, given them best first: drops any lesson whose
/// text the detector flags (whatever its status says) and any lesson that conflicts with one
/// already kept, so the better of two conflicting lessons is shown and never both.
pub(super) fn prompt_guard(lessons: Vec<Lesson>) -> Vec<Lesson> {
    let mut kept: Vec<Lesson> = Vec::with_capacity(lessons.len());
    for lesson in lessons {
        let conflicts = kept.iter().any(|k| in_conflict(k, &lesson));
        if !conflicts && sensitive::scan_lesson(&lesson).is_empty() {
            kept.push(lesson);
        }
    }
    kept
}

fn in_conflict(a: &Lesson, b: &Lesson) -> bool {
    let names = |x: &Lesson, y: &Lesson| {
        x.links
            .iter()
            .any(|l| l.kind == LinkKind::Conflicts && l.target == y.id)
    };
    names(a, b) || names(b, a)
}
