//! Periodic upkeep: expiry of what waited too long for review, utility measurement with its
//! promotion and suppression gates (seed 003, see `measure`), pruning (seed 002), and the repair
//! of files derived from the store (see `repair`), then the digests whose sources changed and
//! the evaluation sets whose skill's memory changed (see `digest`, `evals`).
//!
//! `lore maintain` runs [`Engine::maintain`], which is idempotent: every job selects lessons by
//! a condition its own change makes false (an expired lesson no longer waits, a pruned lesson is
//! no longer in use, a skill pruned down to its maximum is not over it), so a second run with the
//! same clock changes nothing. Time comes from the Clock port, so tests move it instead of
//! sleeping. Every change is an ordinary lifecycle transition with an audit entry, and pruning
//! archives: nothing is deleted.
//!
//! Pruning strategies, after seed 002:
//!
//! - **TTL**: a lesson in use (approved, trial) or suppressed whose last activity — the later of
//!   its creation, its last edit and its last placement into a prompt — is older than `max_age`.
//! - **Pareto**: per skill, lessons measured as useful (positive measured utility) come first,
//!   best utility first: evidence outranks novelty, so a newer lesson that was never measured
//!   cannot push out one that proved itself. The rest are ranked by non-dominated
//!   layers over relevance and recency (last activity), where relevance is confidence for a
//!   lesson not measured yet and at most half of it for one measured as useless or harmful;
//!   the first layers are kept up to `max_lessons`, ties inside the last layer going to higher
//!   relevance, then to the more recent. Among those, a lesson is only ever dropped when another
//!   is at least as relevant and at least as recent.
//! - **Hybrid**: TTL first, then Pareto on what remains.
//!
//! Before measuring, [`candidates`] proposes lessons for failure fingerprints that recur
//! without a lesson (seed 003 §2).

mod candidates;
mod success;

pub use candidates::RECURS_AT;

use crate::config::Pruning;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::measure::MeasureReport;
use super::review::Attribution;
use crate::engine::Engine;
use lore_core::error::Result;
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::scope::SkillPath;

/// What one run of the periodic jobs changed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MaintainReport {
    /// When it ran, by the Engine's clock.
    pub at: Option<DateTime<Utc>>,
    /// Lessons whose text the detector finds personal or secret data in, moved to `sensitive`:
    /// every write is scanned as it lands, so these are lessons stored before the detector
    /// learned to see what they hold.
    pub sensitive: Vec<LessonId>,
    /// Decisions moved to `sensitive` for the same reason (none from a store without
    /// decisions).
    pub sensitive_decisions: Vec<lore_core::id::DecisionId>,
    /// Lessons moved from `needs_review` to `expired`.
    pub expired: Vec<LessonId>,
    /// Lessons archived by the TTL rule.
    pub pruned_by_age: Vec<LessonId>,
    /// Lessons archived by the Pareto rule.
    pub pruned_by_rank: Vec<LessonId>,
    /// Lessons proposed from recurring error fingerprints and, with success capture, from the
    /// best-graded runs.
    pub proposed: Vec<LessonId>,
    /// Utility measured from activations and feedback, and what its gates decided.
    pub utility: MeasureReport,
    /// Guardrails and regression cases that corrections left unwritten (a crash between the
    /// store's commit and the files), written now.
    pub files: super::FileRepair,
    /// Digests made again because their sources changed (none from a store without digests).
    pub digests: Vec<lore_core::id::DigestId>,
    /// Evaluation runs made because their skill's memory changed since the set's last run.
    pub evals: Vec<lore_core::model::EvalRun>,
    /// The org pool's cycle, when `org.pool` turns it on and a person runs the jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org_pool: Option<crate::PoolReport>,
}

const IN_USE: [LessonStatus; 2] = [LessonStatus::Approved, LessonStatus::Trial];

impl Engine {
    /// Runs expiry and pruning with the Engine's configured [`Upkeep`], then writes the
    /// guardrails and regression cases live lessons lack ([`Engine::repair_files`]); idempotent.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an invalid configuration (nothing changes); store failures.
    pub fn maintain(&self) -> Result<MaintainReport> {
        let upkeep = self.config.upkeep;
        upkeep.validate()?;
        let now = self.now();
        let mut report = MaintainReport {
            at: Some(now),
            ..MaintainReport::default()
        };
        // First, so that no later job (a digest, an evaluation) reads what it takes away.
        report.sensitive = self.rescan_sensitive()?;
        report.sensitive_decisions = self.rescan_sensitive_decisions()?;
        report.expired = self.expire(now - upkeep.review_expiry)?;
        if self.config.capture.strategy.failures() {
            report.proposed = self.propose_from_errors()?;
        }
        if self.config.capture.strategy.successes() {
            report.proposed.extend(self.propose_from_successes()?);
        }
        // Before pruning: the Pareto rank weighs relevance by measured utility.
        report.utility = self.measure()?;
        let (max_age, max_lessons) = match upkeep.pruning {
            Pruning::Off => (None, None),
            Pruning::Ttl { max_age } => (Some(max_age), None),
            Pruning::Pareto { max_lessons } => (None, Some(max_lessons)),
            Pruning::Hybrid {
                max_age,
                max_lessons,
            } => (Some(max_age), Some(max_lessons)),
        };
        if let Some(age) = max_age {
            report.pruned_by_age = self.prune_by_age(now - age)?;
        }
        if let Some(max) = max_lessons {
            report.pruned_by_rank = self.prune_by_rank(max)?;
        }
        report.files = self.repair_files()?;
        // The consolidation schedule of seed 002's evolver: opt-in, and only proposals, which
        // wait for a person like any other. An agent running the jobs skips it: the pool reads
        // every member's lessons.
        if self.config.org.pool && self.is_person() {
            report.org_pool = Some(self.org_pool(false)?);
        }
        // After every lesson move: digests and evaluations see the memory as upkeep left it.
        report.digests = match self.build_digests(None, false) {
            Ok(built) => built.built.into_iter().map(|d| d.id).collect(),
            Err(lore_core::Error::Unsupported(_)) => Vec::new(),
            Err(err) => return Err(err),
        };
        report.evals = self.evals_on_change()?;
        Ok(report)
    }

    /// Reads were already guarded (a lesson whose text the detector flags is left out when it
    /// is read); this makes the stored status say so too, so a reviewer sees it, an export
    /// carries it as sensitive, and a purge can find it. The detector runs over every lesson
    /// not yet marked, which upkeep can afford: it costs about what reading them does.
    fn rescan_sensitive(&self) -> Result<Vec<LessonId>> {
        let statuses = LessonStatus::ALL
            .into_iter()
            .filter(|s| *s != LessonStatus::Sensitive)
            .collect();
        let found: Vec<Lesson> = self
            .lessons(None, Some(statuses))?
            .into_iter()
            .filter(|l| !lore_core::sensitive::scan_lesson(l).is_empty())
            .collect();
        let why = Attribution::new(
            None,
            "holds personal or secret data the detector now finds; stored before it could",
        );
        self.move_all(found, LessonStatus::Sensitive, &why)
    }

    /// [`Engine::rescan_sensitive`] for decisions, whose texts recording scans the same way.
    fn rescan_sensitive_decisions(&self) -> Result<Vec<lore_core::id::DecisionId>> {
        // The stored text, not the redacted one readers get: the detector must see what it
        // looks for.
        let all = match self
            .store
            .decisions()
            .and_then(|s| s.decisions(&self.scope, None))
        {
            Ok(all) => all,
            Err(lore_core::Error::Unsupported(_)) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let found: Vec<lore_core::id::DecisionId> = all
            .into_iter()
            .filter(|d| d.status != LessonStatus::Sensitive)
            .filter(|d| {
                [&d.situation, &d.action, &d.rationale]
                    .into_iter()
                    .chain(d.outcome.as_ref())
                    .any(|t| !lore_core::sensitive::kinds(t).is_empty())
            })
            .map(|d| d.id)
            .collect();
        if !found.is_empty() {
            self.review_decisions(
                &found,
                LessonStatus::Sensitive,
                "holds personal or secret data the detector now finds; stored before it could",
            )?;
        }
        Ok(found)
    }

    fn expire(&self, before: DateTime<Utc>) -> Result<Vec<LessonId>> {
        let stale: Vec<Lesson> = self
            .lessons(None, Some([LessonStatus::NeedsReview].into()))?
            .into_iter()
            .filter(|l| l.updated_at < before)
            .collect();
        let why = Attribution::new(None, "waited in review longer than the expiry age")
            .with_evidence(json!({ "waiting_since_before": before }));
        self.move_all(stale, LessonStatus::Expired, &why)
    }

    fn prune_by_age(&self, before: DateTime<Utc>) -> Result<Vec<LessonId>> {
        let statuses: BTreeSet<_> = IN_USE
            .into_iter()
            .chain([LessonStatus::Suppressed])
            .collect();
        let old: Vec<Lesson> = self
            .lessons(None, Some(statuses))?
            .into_iter()
            .filter(|l| last_activity(l) < before)
            .collect();
        let why = Attribution::new(None, "pruned: no activity within the TTL")
            .with_evidence(json!({ "strategy": "ttl", "inactive_since_before": before }));
        self.move_all(old, LessonStatus::Archived, &why)
    }

    fn prune_by_rank(&self, max_lessons: usize) -> Result<Vec<LessonId>> {
        let mut by_skill: BTreeMap<SkillPath, Vec<Lesson>> = BTreeMap::new();
        for lesson in self.lessons(None, Some(IN_USE.into()))? {
            by_skill
                .entry(lesson.skill.clone())
                .or_default()
                .push(lesson);
        }
        let dropped: Vec<Lesson> = by_skill
            .into_values()
            .flat_map(|lessons| pareto_overflow(lessons, max_lessons))
            .collect();
        let why = Attribution::new(None, "pruned: outside the relevance × recency frontier")
            .with_evidence(json!({ "strategy": "pareto", "max_lessons": max_lessons }));
        self.move_all(dropped, LessonStatus::Archived, &why)
    }

    fn move_all(
        &self,
        lessons: Vec<Lesson>,
        to: LessonStatus,
        why: &Attribution,
    ) -> Result<Vec<LessonId>> {
        if lessons.is_empty() {
            return Ok(Vec::new());
        }
        let updates = lessons
            .into_iter()
            .map(|l| self.planned_move(l, to, why))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.apply(updates)?.into_iter().map(|l| l.id).collect())
    }
}

/// The later of creation, last edit and last placement into a prompt.
fn last_activity(lesson: &Lesson) -> DateTime<Utc> {
    let applied = lesson.utility.last_applied_at.unwrap_or(lesson.created_at);
    lesson.updated_at.max(applied).max(lesson.created_at)
}

/// Measured utility when it is positive: the lesson proved itself.
fn proven(lesson: &Lesson) -> Option<f64> {
    lesson.utility.utility.filter(|u| *u > 0.0)
}

/// Confidence for a lesson not measured yet; for one measured as useless or harmful, scaled
/// into `[0, confidence / 2]` by its utility.
fn relevance(lesson: &Lesson) -> f64 {
    match lesson.utility.utility {
        Some(u) => lesson.confidence * (1.0 + u.clamp(-1.0, 0.0)) / 2.0,
        None => lesson.confidence,
    }
}

/// The lessons beyond `max`: proven lessons first by utility, then the rest in Pareto order
/// (non-dominated layers, then relevance, recency and ID), so the result is deterministic.
pub(crate) fn pareto_overflow(lessons: Vec<Lesson>, max: usize) -> Vec<Lesson> {
    if lessons.len() <= max {
        return Vec::new();
    }
    let (mut first, rest): (Vec<Lesson>, Vec<Lesson>) =
        lessons.into_iter().partition(|l| proven(l).is_some());
    first.sort_by(|a, b| {
        let utility = |l: &Lesson| proven(l).unwrap_or(0.0);
        utility(b)
            .total_cmp(&utility(a))
            .then(last_activity(b).cmp(&last_activity(a)))
            .then(a.id.cmp(&b.id))
    });
    first.extend(pareto_order(rest));
    first.into_iter().skip(max).collect()
}

fn pareto_order(mut lessons: Vec<Lesson>) -> Vec<Lesson> {
    lessons.sort_by(|a, b| {
        relevance(b)
            .total_cmp(&relevance(a))
            .then(last_activity(b).cmp(&last_activity(a)))
            .then(a.id.cmp(&b.id))
    });
    // In this order, a lesson is dominated by the last member of a layer whose recency is at
    // least its own; it joins the first layer that does not dominate it.
    let mut tails: Vec<DateTime<Utc>> = Vec::new();
    let mut ranked: Vec<(usize, usize, Lesson)> = Vec::with_capacity(lessons.len());
    for (order, lesson) in lessons.into_iter().enumerate() {
        let recency = last_activity(&lesson);
        let layer = tails
            .iter()
            .position(|tail| *tail < recency)
            .unwrap_or(tails.len());
        if layer == tails.len() {
            tails.push(recency);
        } else {
            tails[layer] = recency;
        }
        ranked.push((layer, order, lesson));
    }
    ranked.sort_by_key(|(layer, order, _)| (*layer, *order));
    ranked.into_iter().map(|(_, _, l)| l).collect()
}
