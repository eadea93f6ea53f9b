//! Measuring what lessons do (seed 003): feedback signals on executions, activations, utility,
//! and the gates that promote useful lessons and suppress harmful ones.
//!
//! An execution carries the lessons that were placed into its prompt (`lessons_shown`: its
//! activations). Feedback arrives as the execution's outcome, as corrections, and as signals on
//! seed 003's four channels, stored as error events with a fingerprint. [`Engine::measure`]
//! compares, for each lesson, the executions that showed it with the executions of the same
//! skills that did not (the baseline):
//!
//! - a run *fails* when its outcome is `rejected` or `failure`, when it was corrected, or when a
//!   hard or constraint failure (or a progress signal of zero or less) was reported on it; it
//!   *succeeds* when its outcome is `accepted` or `success` and nothing failed; anything else is
//!   not judged yet and does not count. For a lesson with trigger fingerprints, a judged run
//!   fails only when one of those fingerprints recurs in it: that is the mistake the lesson is
//!   about.
//! - `error_reduction` is the relative drop of the failure rate, `(baseline − shown) / baseline`
//!   (or minus the shown rate when the baseline never failed), clamped to `[-1, 1]`;
//!   `efficiency_gain` is the relative drop of the mean cost of a run (the efficiency signals'
//!   values when reported, else latency), 0 without figures on both sides;
//!   `utility = 0.65 × error_reduction + 0.35 × efficiency_gain` (seed 003's formula without a
//!   referee score).
//!
//! Gates, over at least [`MIN_RUNS`] judged runs that showed the lesson and at least one judged
//! baseline run: a `trial` lesson with utility ≥ [`PROMOTE_AT`] and no rise in failures is
//! promoted to `approved`; a lesson with utility ≤ 0 is suppressed — `trial` ones always, and
//! `approved` ones in `auto` curation only (in `review` curation a person approved it, so it is
//! reported as harmful and left for a person to decide). Status changes are ordinary lifecycle
//! transitions with audit entries holding the figures; measured statistics are written with an
//! audit entry only when they change, so measuring twice changes nothing.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use tracing::instrument;

use super::review::Attribution;
use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::{ErrorEventId, ExecutionId, LessonId};
use lore_core::model::{
    CurationMode, ErrorEvent, Execution, Lesson, LessonStatus, Outcome, SignalChannel, UtilityStats,
};
use lore_core::ports::store::{ListFilter, Record};
use lore_core::scope::SkillPath;
use lore_core::sensitive;

/// Judged runs showing a lesson before a gate decides on it (seed 003's evidence window).
pub const MIN_RUNS: usize = 3;
/// Utility at or above which a trial lesson is promoted (seed 003).
pub const PROMOTE_AT: f64 = 0.20;
/// Weight of the error reduction in utility; the efficiency gain has the rest.
const ERROR_WEIGHT: f64 = 0.65;
/// Lessons one execution may name as shown: a prompt holds a handful, not thousands.
const MAX_SHOWN: usize = 256;
/// Longest signal message kept, in bytes.
const MAX_MESSAGE: usize = 16 * 1024;

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
    /// Judged runs that showed it.
    pub runs: usize,
    /// Judged runs of the same skills that did not.
    pub baseline_runs: usize,
    /// Relative drop of the failure rate, `[-1, 1]`.
    pub error_reduction: f64,
    /// Relative drop of the mean cost of a run, `[-1, 1]`.
    pub efficiency_gain: f64,
    /// `0.65 × error_reduction + 0.35 × efficiency_gain`.
    pub utility: f64,
}

/// What one measurement pass did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MeasureReport {
    /// Lessons whose statistics changed.
    pub measured: Vec<Measurement>,
    /// Trial lessons promoted to approved.
    pub promoted: Vec<LessonId>,
    /// Lessons suppressed for non-positive utility.
    pub suppressed: Vec<LessonId>,
    /// Approved lessons with non-positive utility left for a person (`review` curation).
    pub harmful: Vec<LessonId>,
}

impl Engine {
    /// Stores a feedback signal on an execution as an error event with its fingerprint and tags.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an execution outside the scope or unknown; [`Error::Invalid`] for
    /// an empty message on a failure channel, a missing or non-finite value on a scalar channel,
    /// an oversized message, or a malformed tag. Nothing is stored then.
    #[instrument(skip_all, fields(execution = %signal.execution_id))]
    pub fn report_signal(&self, signal: NewSignal) -> Result<ErrorEvent> {
        let execution = self.execution(&signal.execution_id)?;
        self.scope.check_write(&execution.skill)?;
        let message = signal.message.trim();
        if message.len() > MAX_MESSAGE {
            return Err(Error::invalid(
                "message",
                format!("is {} bytes; the limit is {MAX_MESSAGE}", message.len()),
            ));
        }
        let scalar = matches!(
            signal.channel,
            SignalChannel::Progress | SignalChannel::Efficiency
        );
        match signal.value {
            Some(v) if !v.is_finite() => return Err(Error::invalid("value", "must be finite")),
            Some(v) if signal.channel == SignalChannel::Efficiency && v < 0.0 => {
                return Err(Error::invalid(
                    "value",
                    "an efficiency cost cannot be negative",
                ));
            }
            None if scalar => {
                return Err(Error::invalid(
                    "value",
                    "progress and efficiency signals need a value",
                ));
            }
            _ => {}
        }
        if !scalar && message.is_empty() {
            return Err(Error::invalid(
                "message",
                "a failure signal needs the error text or what went wrong",
            ));
        }
        for tag in &signal.tags {
            check_tag(tag)?;
        }
        // Error text often carries what it failed on: tokens, addresses. The fingerprint drops
        // literals, and the stored message is redacted so no read path can leak them.
        let message = sensitive::redact(message);
        let mut tags: BTreeSet<String> = infer_tags(&message, signal.channel, signal.value);
        tags.extend(signal.tags);
        let at = self.now();
        let event = ErrorEvent {
            id: ErrorEventId::generate(at),
            skill: execution.skill,
            execution_id: Some(execution.id),
            timestamp: at,
            channel: signal.channel,
            fingerprint: if message.is_empty() {
                format!("{}:<no message>", signal.channel.as_str())
            } else {
                lore_core::fingerprint(&message)
            },
            tags: tags.into_iter().collect(),
            action: signal
                .action
                .map(|a| sensitive::redact(a.trim()))
                .filter(|a| !a.is_empty()),
            message,
            value: signal.value,
        };
        self.store.write(
            &[Record::ErrorEvent(event.clone())],
            lore_core::ports::store::OnDuplicate::Fail,
        )?;
        Ok(event)
    }

    /// The signals reported on one execution, oldest first.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an execution outside the scope or unknown.
    pub fn signals(&self, execution_id: &ExecutionId) -> Result<Vec<ErrorEvent>> {
        self.store.error_events(&self.signal_filter(execution_id)?)
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
        let mut report = MeasureReport::default();
        let mut updates = Vec::new();
        for id in shown_anywhere {
            let Ok(lesson) = self.lesson(id) else {
                continue;
            };
            let (measurement, stats) = evidence.measure(&lesson);
            let gate = self.gate(&lesson, &measurement);
            if lesson.utility == stats && gate.is_none() {
                continue;
            }
            let mut after = lesson.clone();
            after.utility = stats;
            let figures = json!({
                "runs": measurement.runs,
                "baseline_runs": measurement.baseline_runs,
                "error_reduction": measurement.error_reduction,
                "efficiency_gain": measurement.efficiency_gain,
                "utility": measurement.utility,
            });
            match gate {
                Some(Gate::Promote) => {
                    let why = Attribution::new(
                        None,
                        format!(
                            "promoted: measured utility {:.2} over {} runs (gate: ≥ {PROMOTE_AT} over ≥ {MIN_RUNS})",
                            measurement.utility, measurement.runs
                        ),
                    )
                    .with_evidence(figures);
                    report.promoted.push(lesson.id.clone());
                    updates.push(self.planned_move(after, LessonStatus::Approved, &why)?);
                }
                Some(Gate::Suppress) => {
                    let why = Attribution::new(
                        None,
                        format!(
                            "suppressed: measured utility {:.2} over {} runs is not positive",
                            measurement.utility, measurement.runs
                        ),
                    )
                    .with_evidence(figures);
                    report.suppressed.push(lesson.id.clone());
                    updates.push(self.planned_move(after, LessonStatus::Suppressed, &why)?);
                }
                Some(Gate::Harmful) | None => {
                    if matches!(gate, Some(Gate::Harmful)) {
                        report.harmful.push(lesson.id.clone());
                    }
                    if lesson.utility == after.utility {
                        continue;
                    }
                    let why = Attribution::new(None, "utility measured").with_evidence(figures);
                    updates.push(self.planned_edit(lesson, after, &why));
                }
            }
            report.measured.push(measurement);
        }
        self.apply(updates)?;
        Ok(report)
    }

    fn gate(&self, lesson: &Lesson, m: &Measurement) -> Option<Gate> {
        if m.runs < MIN_RUNS || m.baseline_runs == 0 {
            return None;
        }
        match lesson.status {
            LessonStatus::Trial if m.utility >= PROMOTE_AT && m.error_reduction >= 0.0 => {
                Some(Gate::Promote)
            }
            LessonStatus::Trial if m.utility <= 0.0 => Some(Gate::Suppress),
            LessonStatus::Approved if m.utility <= 0.0 => match self.config.curation {
                CurationMode::Auto => Some(Gate::Suppress),
                CurationMode::Review => Some(Gate::Harmful),
            },
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Gate {
    Promote,
    Suppress,
    Harmful,
}

/// What is known about each execution's result.
struct Judged<'a> {
    execution: &'a Execution,
    /// `Some(failed)` once judged.
    failed: Option<bool>,
    /// The fingerprints of the signals reported on it.
    fingerprints: HashSet<String>,
    /// The efficiency signals' total, else latency.
    cost: Option<f64>,
}

struct Evidence<'a> {
    runs: Vec<Judged<'a>>,
    by_skill: HashMap<&'a SkillPath, Vec<usize>>,
}

impl<'a> Evidence<'a> {
    fn gather(engine: &Engine, executions: &'a [Execution]) -> Result<Evidence<'a>> {
        let corrected: HashSet<ExecutionId> = engine
            .store
            .corrections(&engine.filter())?
            .into_iter()
            .map(|c| c.execution_id)
            .collect();
        let mut signals: HashMap<ExecutionId, Vec<ErrorEvent>> = HashMap::new();
        for event in engine.store.error_events(&engine.filter())? {
            if let Some(id) = event.execution_id.clone() {
                signals.entry(id).or_default().push(event);
            }
        }
        let mut runs = Vec::with_capacity(executions.len());
        let mut by_skill: HashMap<&SkillPath, Vec<usize>> = HashMap::new();
        for execution in executions {
            let own = signals.remove(&execution.id).unwrap_or_default();
            let failed = if own.iter().any(signals_failure)
                || corrected.contains(&execution.id)
                || matches!(execution.outcome, Outcome::Rejected | Outcome::Failure)
            {
                Some(true)
            } else if matches!(execution.outcome, Outcome::Accepted | Outcome::Success) {
                Some(false)
            } else {
                None
            };
            let efficiency: Vec<f64> = own
                .iter()
                .filter(|e| e.channel == SignalChannel::Efficiency)
                .filter_map(|e| e.value)
                .collect();
            let cost = if efficiency.is_empty() {
                execution.latency_ms
            } else {
                Some(efficiency.iter().sum())
            };
            by_skill
                .entry(&execution.skill)
                .or_default()
                .push(runs.len());
            runs.push(Judged {
                execution,
                failed,
                fingerprints: own.into_iter().map(|e| e.fingerprint).collect(),
                cost,
            });
        }
        Ok(Evidence { runs, by_skill })
    }

    /// The lesson's measurement and the statistics to store for it.
    fn measure(&self, lesson: &Lesson) -> (Measurement, UtilityStats) {
        let showed = |run: &Judged<'_>| run.execution.lessons_shown.contains(&lesson.id);
        let skills: BTreeSet<&SkillPath> = self
            .runs
            .iter()
            .filter(|r| showed(r))
            .map(|r| &r.execution.skill)
            .collect();
        let mut shown = Side::default();
        let mut baseline = Side::default();
        let mut stats = UtilityStats::default();
        for &i in skills.iter().flat_map(|s| &self.by_skill[*s]) {
            let run = &self.runs[i];
            let is_shown = showed(run);
            if is_shown {
                stats.activations += 1;
                stats.last_applied_at = latest(stats.last_applied_at, run.execution.timestamp);
            }
            let Some(failed) = run.failed else { continue };
            // A lesson about a fingerprint is judged on that fingerprint's recurrence: a run
            // that failed for another reason is not the lesson's failure.
            let failed = if lesson.triggers.is_empty() {
                failed
            } else {
                lesson.triggers.iter().any(|t| run.fingerprints.contains(t))
            };
            let side = if is_shown { &mut shown } else { &mut baseline };
            side.add(failed, run.cost);
            if is_shown {
                if failed {
                    stats.hurt += 1;
                } else {
                    stats.helped += 1;
                }
            }
        }
        let measurement = measurement(&lesson.id, &shown, &baseline);
        if shown.runs > 0 && baseline.runs > 0 {
            stats.utility = Some(round(measurement.utility));
        }
        (measurement, stats)
    }
}

/// Judged runs on one side of the comparison.
#[derive(Debug, Default)]
struct Side {
    runs: usize,
    failures: usize,
    cost_sum: f64,
    costed: usize,
}

impl Side {
    fn add(&mut self, failed: bool, cost: Option<f64>) {
        self.runs += 1;
        self.failures += usize::from(failed);
        if let Some(c) = cost {
            self.cost_sum += c;
            self.costed += 1;
        }
    }

    fn failure_rate(&self) -> f64 {
        self.failures as f64 / self.runs.max(1) as f64
    }

    fn mean_cost(&self) -> Option<f64> {
        (self.costed > 0).then(|| self.cost_sum / self.costed as f64)
    }
}

/// Seed 003's utility from the two sides' failure rates and costs.
fn measurement(lesson: &LessonId, shown: &Side, baseline: &Side) -> Measurement {
    let (a, b) = (shown.failure_rate(), baseline.failure_rate());
    let error_reduction = if shown.runs == 0 || baseline.runs == 0 {
        0.0
    } else if b > 0.0 {
        ((b - a) / b).clamp(-1.0, 1.0)
    } else {
        -a
    };
    let efficiency_gain = match (shown.mean_cost(), baseline.mean_cost()) {
        (Some(s), Some(base)) if base > 0.0 => ((base - s) / base).clamp(-1.0, 1.0),
        _ => 0.0,
    };
    Measurement {
        lesson: lesson.clone(),
        runs: shown.runs,
        baseline_runs: baseline.runs,
        error_reduction,
        efficiency_gain,
        utility: ERROR_WEIGHT * error_reduction + (1.0 - ERROR_WEIGHT) * efficiency_gain,
    }
}

/// Whether an event reports a failure: a hard or constraint failure, or no progress.
fn signals_failure(event: &ErrorEvent) -> bool {
    match event.channel {
        SignalChannel::HardFailure | SignalChannel::ConstraintFailure => true,
        SignalChannel::Progress => event.value.is_some_and(|v| v <= 0.0),
        SignalChannel::Efficiency => false,
    }
}

fn latest(current: Option<DateTime<Utc>>, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    Some(current.map_or(at, |c| c.max(at)))
}

/// Four decimals: stored statistics compare equal across passes despite float noise.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Tags are identifiers: lowercase letters, digits and `_`, 1 to 64 of them.
fn check_tag(tag: &str) -> Result<()> {
    let ok = !tag.is_empty()
        && tag.len() <= 64
        && tag
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "tags",
            format!("{tag:?} is not a tag (lowercase letters, digits and _, at most 64)"),
        ))
    }
}

/// Seed 003's generic failure tags, from the structural words of the message and the channel.
fn infer_tags(message: &str, channel: SignalChannel, value: Option<f64>) -> BTreeSet<String> {
    const RULES: &[(&str, &[&str])] = &[
        (
            "syntax_structure",
            &["syntax", "parse error", "unexpected token", "unterminated"],
        ),
        (
            "unknown_symbol",
            &[
                "unknown",
                "undefined",
                "not defined",
                "unrecognized",
                "no such",
            ],
        ),
        (
            "unknown_command",
            &["command not found", "unknown command", "not a command"],
        ),
        (
            "arity_mismatch",
            &["argument", "arity", "too many", "too few", "expects"],
        ),
        ("operator_mismatch", &["operator"]),
        ("column_reference", &["column", "field"]),
        ("path_quote", &["path", "quote", "escape"]),
        (
            "missing_reference",
            &["not found", "missing", "does not exist", "no such file"],
        ),
        (
            "type_mismatch",
            &["type", "expected", "mismatch", "invalid"],
        ),
        ("timeout", &["timeout", "timed out", "deadline"]),
        (
            "permission",
            &["permission", "forbidden", "denied", "unauthorized"],
        ),
        ("unsafe_action", &["unsafe", "safety", "blocked"]),
        ("state_stall", &["stuck", "stall", "no change", "loop"]),
    ];
    let lower = message.to_lowercase();
    let mut tags: BTreeSet<String> = RULES
        .iter()
        .filter(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map(|(tag, _)| (*tag).to_owned())
        .collect();
    match channel {
        SignalChannel::ConstraintFailure => {
            tags.insert("constraint_failed".into());
        }
        SignalChannel::Progress if value.is_some_and(|v| v <= 0.0) => {
            tags.insert("no_progress".into());
            if value.is_some_and(|v| v < 0.0) {
                tags.insert("goal_distance_increase".into());
            }
        }
        _ => {}
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(runs: usize, failures: usize, costs: &[f64]) -> Side {
        let mut s = Side::default();
        for i in 0..runs {
            s.add(i < failures, costs.get(i).copied());
        }
        s
    }

    fn id() -> LessonId {
        LessonId::parse("REFL-001").unwrap()
    }

    #[test]
    fn halving_the_failure_rate_is_half_an_error_reduction() {
        let m = measurement(&id(), &side(4, 1, &[]), &side(4, 2, &[]));
        assert!((m.error_reduction - 0.5).abs() < 1e-12);
        assert!((m.utility - 0.65 * 0.5).abs() < 1e-12);
        assert_eq!((m.runs, m.baseline_runs), (4, 4));
    }

    #[test]
    fn failures_where_the_baseline_had_none_are_negative() {
        let m = measurement(&id(), &side(4, 2, &[]), &side(3, 0, &[]));
        assert!((m.error_reduction + 0.5).abs() < 1e-12);
        assert!(m.utility < 0.0);
    }

    #[test]
    fn doubling_the_failures_clamps_at_minus_one() {
        let m = measurement(&id(), &side(2, 2, &[]), &side(4, 1, &[]));
        assert_eq!(m.error_reduction, -1.0);
    }

    #[test]
    fn cheaper_runs_count_as_efficiency_gain() {
        let m = measurement(
            &id(),
            &side(2, 0, &[50.0, 50.0]),
            &side(2, 0, &[100.0, 100.0]),
        );
        assert_eq!(m.error_reduction, 0.0);
        assert!((m.efficiency_gain - 0.5).abs() < 1e-12);
        assert!((m.utility - 0.35 * 0.5).abs() < 1e-12);
    }

    #[test]
    fn no_baseline_means_no_reduction() {
        let m = measurement(&id(), &side(5, 0, &[1.0]), &Side::default());
        assert_eq!(
            (m.error_reduction, m.efficiency_gain, m.utility),
            (0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn tags_come_from_structural_words_and_the_channel() {
        let tags = infer_tags(
            "error: unknown column 'foo'",
            SignalChannel::HardFailure,
            None,
        );
        assert!(tags.contains("unknown_symbol") && tags.contains("column_reference"));
        let tags = infer_tags("", SignalChannel::Progress, Some(-0.2));
        assert!(tags.contains("no_progress") && tags.contains("goal_distance_increase"));
        assert!(infer_tags("", SignalChannel::Progress, Some(0.3)).is_empty());
        assert!(
            infer_tags("", SignalChannel::ConstraintFailure, None).contains("constraint_failed")
        );
    }

    #[test]
    fn tags_must_be_identifiers() {
        assert!(check_tag("no_progress").is_ok());
        for bad in ["", "Has Space", "UPPER", &"x".repeat(65)] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
        }
    }
}
