//! Measuring what lessons do (seed 003): feedback signals on executions, activations, utility,
//! and the gates that promote useful lessons and suppress harmful ones.
//!
//! An execution carries the lessons that were placed into its prompt (`lessons_shown`: its
//! activations). Feedback arrives as the execution's outcome, as corrections, and as signals on
//! seed 003's four channels, stored as error events with a fingerprint. [`Engine::measure`]
//! judges each lesson like an experiment (DESIGN.md): its runs are compared with *matched* runs
//! that did not show it — same trigger fingerprint or same task type, see [`evidence`] — and a
//! gate waits for a confidence bound rather than a count of runs.
//!
//! - a run *fails* when its outcome is `rejected` or `failure`, when it was corrected, or when a
//!   hard or constraint failure (or a progress signal of zero or less) was reported on it; it
//!   *succeeds* when its outcome is `accepted` or `success` and nothing failed; anything else is
//!   not judged yet and does not count. For a lesson with trigger fingerprints, the lesson's own
//!   failure is the recurrence of one of those fingerprints; every failure still counts in the
//!   *overall* comparison, which catches a lesson that trades one error for another.
//! - `error_reduction` is the relative drop of the lesson's failure rate,
//!   `(baseline − shown) / baseline` (or minus the shown rate when the baseline never failed),
//!   clamped to `[-1, 1]`; `efficiency_gain` is the relative drop of the mean cost of a run (the
//!   efficiency signals' values when reported, else latency), 0 without figures on both sides;
//!   `utility = 0.65 × error_reduction + 0.35 × efficiency_gain` (seed 003's formula without a
//!   referee). When a referee (a test, a rubric, a judge model: the `referee` signal, 0 to 1)
//!   graded runs on both sides, `referee_score_gain` is the difference of the mean grades and
//!   `utility = 0.50 × error_reduction + 0.30 × efficiency_gain + 0.20 × referee_score_gain`.
//!   Utility is reported and gates promotion; the verdict itself comes from the bounds.
//! - `bounds` are the one-sided 95 % Newcombe bounds on the failure-rate difference
//!   `baseline − shown`; `overall_bounds` the same for any failure, at 97.5 %.
//!
//! Gates, each over its own evidence window (seed 003's: at least [`MIN_RUNS`] matched judged
//! runs showed the lesson, for the comparison of any failure [`OVERALL_MIN_RUNS`]):
//!
//! - **hurts** when the upper bound of its own difference is below zero, or the upper bound
//!   of the overall one: a `trial` lesson is suppressed; an `approved`
//!   one too in `auto` curation, while in `review` curation (a person approved it) it is reported
//!   as harmful and left for a person;
//! - **helps** when the lower bound of its own difference is above zero, the overall difference
//!   is not negative and utility is at least [`PROMOTE_AT`]: a `trial` lesson is promoted;
//! - a lesson suppressed by this gate keeps being tried in a small share of matching runs
//!   ([`Engine::exploration`]); when those runs make the verdict fall (no upper bound below zero
//!   and the point estimate now says it helps), it goes back on `trial`.
//!
//! A lesson recalled for several kinds of task can help one and break another; one comparison
//! over all its runs dilutes the harm, and mixes task types whose runs fail at different rates.
//! So runs are grouped into task types by the content words of their input (see [`evidence`]),
//! and a lesson shown in at least [`STRATUM_SHARE`] of the judged runs of two or more types is
//! judged in each of them, against that type's runs without it, with the same windows and
//! each type's bounds set for as many tests as types (a lesson about an error only in the types where that error happened on either
//! side: elsewhere it had nothing to prevent, and its runs there say only which lesson it took
//! the place of): it **hurts** when it hurts in any type, and **helps** when it helps in one and hurts
//! in none. Within a type, a run that left out a lesson known to help that type (its matched
//! comparison says so) is compared only when that lesson's own error did not happen in it: recall fills the place of a lesson that sits out with the next
//! one, so a lesson shown outside its own task is shown mostly where that task's own lesson was
//! missing, and those runs fail for want of it; a rival that took the helper's place in the
//! helper's own task and failed in its own way is judged on that run. The comparison of any
//! failure over all a lesson's runs leaves such runs out too, unless the lesson is about that
//! helper's error itself. When no single type decides, the types' comparisons are combined
//! (`across_types`) if they all point the same way and none looks helped. A lesson shown in
//! one type is judged as above, on its matched runs.
//!
//! Recall breaks near-ties by evidence (`standing`), so a lesson still to be measured that
//! ties with a better-known one would seldom be shown in its own task; it takes that one's
//! place in the recalls that do not hold it out ([`Engine::rotates`]), whose control is then
//! the run with the better-known lesson. How often a lesson is held out follows the task type
//! of the recall ([`Engine::holdout_share_for`]).
//!
//! Several lessons are often shown together, so a run that failed because of one would count
//! against all of them. Blame goes where it belongs: a first pass finds the lessons that hurt;
//! every lesson is then measured without the runs that showed another lesson that hurts or is
//! suppressed. (Two harmful lessons that are only ever shown together therefore wait until one
//! is shown without the other.)
//!
//! Status changes are ordinary lifecycle transitions with audit entries holding every figure;
//! measured statistics are written with an audit entry only when they change, so measuring twice
//! changes nothing.

mod evidence;
mod explore;

pub(crate) use evidence::signals_failure;
pub use evidence::{MATCH_AT, STRATUM_SHARE, TYPE_AT, Z, Z_OVERALL};
pub(crate) use explore::standing;
pub use explore::{EXPLORE_SHARE, HOLDOUT_SHARE, OPEN_HOLDOUT_SHARE, SETTLED_HOLDOUT_SHARE};

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::Serialize;
use tracing::instrument;

use super::review::Attribution;
use crate::engine::Engine;
use evidence::{Evidence, Helpers};
use lore_core::error::{Error, Result};
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{
    CurationMode, ErrorEvent, Execution, Lesson, LessonStatus, LinkKind, SignalChannel,
    UtilityStats,
};
use lore_core::ports::store::ListFilter;

/// Matched judged runs showing a lesson before a gate may decide on it: a floor under the
/// confidence bound, which decides (seed 003's evidence window).
pub const MIN_RUNS: usize = 3;
/// Matched judged runs showing a lesson before the comparison of any failure may suppress it.
pub const OVERALL_MIN_RUNS: usize = 5;
/// Utility at or above which a trial lesson is promoted (seed 003).
pub const PROMOTE_AT: f64 = 0.20;
/// Lessons one execution may name as shown: a prompt holds a handful, not thousands.
const MAX_SHOWN: usize = 256;

/// A feedback signal on an execution (seed 003's four channels).
#[derive(Clone, Debug)]
pub struct NewSignal {
    /// The execution it is about.
    pub execution_id: ExecutionId,
    /// Which channel.
    pub channel: SignalChannel,
    /// The error text or a description; required for the failure channels.
    pub message: String,
    /// The channel's scalar: progress toward the goal, or steps/time/cost for efficiency.
    pub value: Option<f64>,
    /// The action that was attempted.
    pub action: Option<String>,
    /// Failure tags to add to the ones inferred from the message.
    pub tags: Vec<String>,
}

/// One lesson's measured effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measurement {
    /// The lesson.
    pub lesson: LessonId,
    /// Matched judged runs that showed it.
    pub runs: usize,
    /// Matched judged runs that did not (the baseline).
    pub baseline_runs: usize,
    /// The lesson's own failure rate (its triggers' recurrence) where it was shown.
    pub failure_rate: f64,
    /// The same in the baseline.
    pub baseline_failure_rate: f64,
    /// Relative drop of the failure rate, `[-1, 1]`.
    pub error_reduction: f64,
    /// Relative drop of the mean cost of a run, `[-1, 1]`.
    pub efficiency_gain: f64,
    /// How much higher a referee scored the runs that showed it than the baseline, `[-1, 1]`,
    /// when both sides were graded.
    pub referee_score_gain: Option<f64>,
    /// `0.65 × error_reduction + 0.35 × efficiency_gain`, or with a referee's scores on both
    /// sides `0.50 × error_reduction + 0.30 × efficiency_gain + 0.20 × referee_score_gain`.
    pub utility: f64,
    /// `baseline − shown` failure rate: positive when the lesson prevents its error.
    pub difference: f64,
    /// One-sided 95 % bounds on `difference` `[lower, upper]`.
    pub bounds: [f64; 2],
    /// `baseline − shown` rate of any failure.
    pub overall_difference: f64,
    /// One-sided 97.5 % bounds on `overall_difference`.
    pub overall_bounds: [f64; 2],
    /// The same comparisons within each task type the lesson was shown in, in at least
    /// [`STRATUM_SHARE`] of the type's judged runs, against that type's runs without it; only
    /// when there are two or more such types, and then they decide instead of the matched
    /// comparison above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strata: Vec<TypeMeasurement>,
    /// The task types' comparisons combined (each type's difference weighed by its runs, its
    /// bounds widened as the types' are), when every type where the lesson was judged points
    /// the same way: a type alone may hold too few runs to decide, and a lesson that fails in
    /// each is not thereby harmless. Only ever a reason to suppress, and never while the lesson
    /// looks helpful in some type (see [`Measurement::hurts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across_types: Option<Box<Measurement>>,
}

/// A lesson's measurement within one task type.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeMeasurement {
    /// The words every run of the type shares.
    pub task_type: String,
    /// The comparison over the type's runs alone.
    #[serde(flatten)]
    pub measurement: Measurement,
}

impl Measurement {
    /// The evidence says the lesson makes runs fail more: with its own error, or (over at
    /// least [`OVERALL_MIN_RUNS`] runs) with any; judged per task type, in any type where it
    /// was shown.
    ///
    /// Judged per type, the types combined ([`Measurement::across_types`]) decide too.
    pub fn hurts(&self) -> bool {
        self.hurting_type().is_some()
            || self.across_types.as_deref().is_some_and(Measurement::hurts)
            || (self.strata.is_empty()
                && ((self.runs >= MIN_RUNS && self.bounds[1] < 0.0)
                    || (self.runs >= OVERALL_MIN_RUNS && self.overall_bounds[1] < 0.0)))
    }

    /// The evidence says the lesson prevents its error without costing other failures: judged
    /// per task type, it helps in one and hurts in none.
    pub fn helps(&self) -> bool {
        if self.strata.is_empty() {
            !self.hurts()
                && self.runs >= MIN_RUNS
                && self.bounds[0] > 0.0
                && self.overall_difference >= 0.0
                && self.utility >= PROMOTE_AT
        } else {
            !self.hurts() && self.helping_type().is_some()
        }
    }

    /// The first task type where the lesson hurts, when judged per type.
    pub fn hurting_type(&self) -> Option<&TypeMeasurement> {
        self.strata.iter().find(|t| t.measurement.hurts())
    }

    /// The first task type where the lesson helps, when judged per type.
    pub fn helping_type(&self) -> Option<&TypeMeasurement> {
        self.strata.iter().find(|t| t.measurement.helps())
    }
}

/// What one measurement pass did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MeasureReport {
    /// Lessons whose statistics changed.
    pub measured: Vec<Measurement>,
    /// Trial lessons promoted to approved.
    pub promoted: Vec<LessonId>,
    /// Lessons suppressed because the bound says they hurt.
    pub suppressed: Vec<LessonId>,
    /// Suppressed lessons put back on trial because the evidence turned.
    pub reinstated: Vec<LessonId>,
    /// Approved lessons with non-positive utility left for a person (`review` curation).
    pub harmful: Vec<LessonId>,
}

impl Engine {
    /// The signals reported on one execution, oldest first.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an execution outside the scope or unknown.
    pub fn signals(&self, execution_id: &ExecutionId) -> Result<Vec<ErrorEvent>> {
        self.store.error_events(&self.signal_filter(execution_id)?)
    }

    /// Gives a lesson learned from a correction of `execution` the fingerprints of the hard and
    /// constraint failures reported on it as triggers: the error it is about, so on-error
    /// recall finds it and its utility is judged on that error's recurrence (seed 003). When
    /// the correction quotes some of the failures' actions or messages, only those count: a run
    /// can fail twice and a correction be about one of the two.
    ///
    /// # Errors
    /// Store failures.
    pub(super) fn add_failure_triggers(
        &self,
        lesson: &mut Lesson,
        execution: &Execution,
        correction: &str,
    ) -> Result<()> {
        let failures: Vec<ErrorEvent> = self
            .store
            .error_events(&self.signal_filter(&execution.id)?)?
            .into_iter()
            .filter(|e| {
                matches!(
                    e.channel,
                    SignalChannel::HardFailure | SignalChannel::ConstraintFailure
                )
            })
            .collect();
        let quoted = |e: &ErrorEvent| {
            e.action.as_deref().is_some_and(|a| correction.contains(a))
                || correction.contains(&e.message)
        };
        let any_quoted = failures.iter().any(quoted);
        for event in failures {
            if (!any_quoted || quoted(&event)) && !lesson.triggers.contains(&event.fingerprint) {
                lesson.triggers.push(event.fingerprint);
            }
        }
        Ok(())
    }

    /// The filter for an execution's signals: its skill and its ID, inside the scope.
    pub(super) fn signal_filter(&self, execution_id: &ExecutionId) -> Result<ListFilter> {
        let execution = self.execution(execution_id)?;
        Ok(ListFilter {
            skill: Some(execution.skill),
            execution_id: Some(execution.id),
            ..self.filter()
        })
    }

    /// Refuses a `lessons_shown` list naming a lesson twice or one that is not stored inside the
    /// scope: an activation must point at a lesson whose utility can be measured.
    pub(super) fn check_lessons_shown(&self, shown: &[LessonId]) -> Result<()> {
        if shown.len() > MAX_SHOWN {
            return Err(Error::invalid(
                "lessons_shown",
                format!("names {} lessons; the limit is {MAX_SHOWN}", shown.len()),
            ));
        }
        let mut seen = HashSet::new();
        for id in shown {
            if !seen.insert(id) {
                return Err(Error::invalid(
                    "lessons_shown",
                    format!("{id} is named twice"),
                ));
            }
            if self.lesson(id).is_err() {
                return Err(Error::invalid(
                    "lessons_shown",
                    format!("{id} is not a lesson inside this scope"),
                ));
            }
        }
        Ok(())
    }

    /// Measures every shown lesson inside the scope and applies the promotion and suppression
    /// gates; idempotent.
    ///
    /// # Errors
    /// Store failures; [`Error::Conflict`] when a lesson changed meanwhile (nothing of the
    /// batch is written then).
    #[instrument(skip_all)]
    pub fn measure(&self) -> Result<MeasureReport> {
        let executions = self.store.executions(&self.filter())?;
        let shown_anywhere: BTreeSet<&LessonId> = executions
            .iter()
            .flat_map(|e| e.lessons_shown.iter())
            .collect();
        if shown_anywhere.is_empty() {
            return Ok(MeasureReport::default());
        }
        let evidence = Evidence::gather(self, &executions)?;
        let lessons: Vec<Lesson> = shown_anywhere
            .into_iter()
            .filter_map(|id| self.lesson(id).ok())
            .collect();
        // The lessons that help their own task type, by their matched comparison: within a
        // type, another lesson is judged only on runs that showed them (see `Evidence`).
        let mut helpers = Helpers::new();
        for lesson in &lessons {
            if lesson.status == LessonStatus::Suppressed {
                continue;
            }
            let ((m, _), own_types) =
                evidence.measure_with_types(lesson, &HashSet::new(), &Helpers::new());
            if m.runs >= MIN_RUNS && m.difference > 0.0 && m.overall_difference >= 0.0 {
                for t in own_types {
                    helpers
                        .entry(t)
                        .or_default()
                        .insert(lesson.id.clone(), lesson.triggers.clone());
                }
            }
        }
        // Blame where it belongs: a run that showed a lesson which hurts (or was suppressed)
        // is no evidence about the other lessons shown beside it. A first pass finds the
        // lessons that hurt; the second measures every lesson without the runs of the others.
        let mut tainted: HashSet<LessonId> = lessons
            .iter()
            .filter(|l| l.status == LessonStatus::Suppressed)
            .map(|l| l.id.clone())
            .collect();
        for lesson in &lessons {
            let (m, _) = evidence.measure(lesson, &tainted, &helpers);
            if m.hurts() {
                tainted.insert(lesson.id.clone());
            }
        }
        let measured: Vec<(Lesson, Measurement, UtilityStats)> = lessons
            .into_iter()
            .map(|lesson| {
                let (m, stats) = evidence.measure(&lesson, &tainted, &helpers);
                (lesson, m, stats)
            })
            .collect();
        let by_id: HashMap<&LessonId, &Measurement> =
            measured.iter().map(|(l, m, _)| (&l.id, m)).collect();
        let mut report = MeasureReport::default();
        let mut updates = Vec::new();
        for (lesson, measurement, stats) in &measured {
            let (lesson, measurement, stats) = (lesson.clone(), measurement.clone(), stats.clone());
            let gate = match self.gate(&lesson, &measurement, stats.last_applied_at)? {
                None => {
                    steady_loser(&lesson, &measurement, &by_id).map(|rival| self.loser_gate(rival))
                }
                gate => gate,
            };
            if lesson.utility == stats && gate.is_none() {
                continue;
            }
            let mut after = lesson.clone();
            after.utility = stats;
            let figures = serde_json::to_value(&measurement).unwrap_or_default();
            let Some(gate) = gate else {
                let why = Attribution::new(None, "utility measured").with_evidence(figures);
                updates.push(self.planned_edit(lesson, after, &why));
                report.measured.push(measurement);
                continue;
            };
            let (to, list) = match &gate {
                Gate::Promote => (LessonStatus::Approved, &mut report.promoted),
                Gate::Suppress | Gate::Loses(_) => {
                    (LessonStatus::Suppressed, &mut report.suppressed)
                }
                Gate::Reinstate => (LessonStatus::Trial, &mut report.reinstated),
                Gate::Harmful => {
                    report.harmful.push(lesson.id.clone());
                    if lesson.utility != after.utility {
                        let why = Attribution::new(None, "utility measured").with_evidence(figures);
                        updates.push(self.planned_edit(lesson, after, &why));
                    }
                    report.measured.push(measurement);
                    continue;
                }
            };
            list.push(lesson.id.clone());
            let why = Attribution::new(None, gate.reason(&measurement)).with_evidence(figures);
            updates.push(self.planned_move(after, to, &why)?);
            report.measured.push(measurement);
        }
        self.apply(updates)?;
        Ok(report)
    }

    /// A steady loser is suppressed in `auto` curation; in `review` a person approved what is
    /// shown, so it is reported as harmful and left for them.
    fn loser_gate(&self, rival: LessonId) -> Gate {
        match self.config.curation {
            CurationMode::Auto => Gate::Loses(rival),
            CurationMode::Review => Gate::Harmful,
        }
    }

    fn gate(
        &self,
        lesson: &Lesson,
        m: &Measurement,
        last_shown: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Option<Gate>> {
        // Each verdict checks its own evidence window (see `hurts` and `helps`).
        let own_evidence = m.runs >= MIN_RUNS && m.baseline_runs > 0;
        Ok(match lesson.status {
            LessonStatus::Trial if m.hurts() => Some(Gate::Suppress),
            LessonStatus::Trial if m.helps() => Some(Gate::Promote),
            LessonStatus::Approved if m.hurts() => match self.config.curation {
                CurationMode::Auto => Some(Gate::Suppress),
                CurationMode::Review => Some(Gate::Harmful),
            },
            // An org lesson returns only by a person's approval, never by a gate.
            LessonStatus::Suppressed
                if own_evidence
                    && !lore_core::org::is_org(lesson)
                    && !m.hurts()
                    && m.difference > 0.0
                    && m.overall_difference >= 0.0
                    && self.suppressed_by_measure(&lesson.id)?
                    && self.shown_since_suppressed(&lesson.id, last_shown)? =>
            {
                Some(Gate::Reinstate)
            }
            _ => None,
        })
    }
}

/// The rival a trial or approved lesson steadily loses to (seed 003: a lesson in a
/// contradiction cluster that consistently loses to an alternative is suppressed): a lesson it
/// conflicts with whose own failure rate is lower by the bound, both over at least
/// [`MIN_RUNS`] runs.
fn steady_loser(
    lesson: &Lesson,
    m: &Measurement,
    measured: &HashMap<&LessonId, &Measurement>,
) -> Option<LessonId> {
    if !matches!(lesson.status, LessonStatus::Trial | LessonStatus::Approved) || m.runs < MIN_RUNS {
        return None;
    }
    lesson
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Conflicts)
        .filter_map(|l| measured.get_key_value(&l.target))
        .find(|(_, rival)| rival.runs >= MIN_RUNS && evidence::loses_to(m, rival))
        .map(|(id, _)| (*id).clone())
}

/// What the gates decided about one lesson.
#[derive(Clone, Debug, PartialEq)]
enum Gate {
    Promote,
    Suppress,
    /// Suppressed: it steadily loses to the lesson it conflicts with.
    Loses(LessonId),
    Reinstate,
    Harmful,
}

impl Gate {
    /// The audit reason, with the figures that decided: those of the task type that decided
    /// when the lesson is judged per type.
    fn reason(&self, m: &Measurement) -> String {
        let deciding = match self {
            Gate::Promote => m.helping_type(),
            Gate::Suppress => m.hurting_type(),
            _ => None,
        };
        let across = m.across_types.as_deref().filter(|a| a.hurts());
        let (m, within) = match (deciding, across) {
            (Some(t), _) => (&t.measurement, format!(" in task type \"{}\"", t.task_type)),
            (None, Some(a)) if *self == Gate::Suppress => (
                a,
                format!(" over its {} task types together", m.strata.len()),
            ),
            _ => (m, String::new()),
        };
        let figures = format!(
            "failure rate {:.2} over {} runs against {:.2} over {} matched runs{within}; \
             difference {:+.2} in [{:+.2}, {:+.2}], overall {:+.2} in [{:+.2}, {:+.2}]; \
             utility {:.2}",
            m.failure_rate,
            m.runs,
            m.baseline_failure_rate,
            m.baseline_runs,
            m.difference,
            m.bounds[0],
            m.bounds[1],
            m.overall_difference,
            m.overall_bounds[0],
            m.overall_bounds[1],
            m.utility,
        );
        match self {
            Gate::Promote => format!(
                "promoted: measured utility {:.2}; the lower bound says it helps ({figures})",
                m.utility
            ),
            Gate::Suppress => format!(
                "suppressed: measured utility {:.2}; an upper bound says it hurts ({figures})",
                m.utility
            ),
            Gate::Loses(rival) => format!(
                "suppressed: it conflicts with {rival}, which fails less where shown \
                 (failure rate {:.2} over {} runs; the rival's is lower by the bound; {figures})",
                m.failure_rate, m.runs
            ),
            Gate::Reinstate => {
                format!("back on trial: the evidence no longer says it hurts ({figures})")
            }
            Gate::Harmful => format!("harmful, left for a person ({figures})"),
        }
    }
}
