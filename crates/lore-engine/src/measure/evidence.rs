//! The evidence behind a lesson's utility: which runs are compared, and how sure the comparison
//! is.
//!
//! A lesson is compared with *matched* runs that did not show it, never with every other run of
//! its skill: a skill mixes task types, and a lesson about `sort` compared with runs that never
//! sort looks useless or harmful whatever it does. A run is matched to a lesson when it
//! is of the same skill and either
//!
//! - one of the lesson's trigger fingerprints was reported on it (it met the lesson's error), or
//! - its input is similar (Jaccard over words, ≥ [`MATCH_AT`]) to a *reference* run: the
//!   execution the lesson was learned from, or a run where one of its triggers occurred.
//!
//! A lesson with no reference run at all (written by hand, imported) is matched on its skill,
//! as before. The same rule selects both sides, so the runs that showed the lesson outside its
//! task type do not count for it either.
//!
//! For judging a lesson per task type, the runs of each skill are grouped once, in the order
//! they ran: a run joins the first type whose first run's input shares at least [`TYPE_AT`] of
//! its content words (no function words, nothing with a digit), else it starts one. The input
//! alone decides, never the outcome.
//!
//! Each side gives a failure rate; the verdict comes from a Newcombe interval (Wilson score
//! intervals combined) on the difference `baseline − shown`, one-sided at 95 % ([`Z`]) for the
//! lesson's own error and at 97.5 % ([`Z_OVERALL`]) for any failure: a lower bound above zero
//! says the lesson helps, an upper bound below zero says it hurts, anything else says "not
//! known yet", which is what three lucky or unlucky runs are.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Measurement, TypeMeasurement};
use crate::Engine;
use lore_core::error::Result;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{
    ErrorEvent, Execution, Lesson, Outcome, SignalChannel, StratumBounds, UtilityStats,
};
use lore_core::scope::SkillPath;
use lore_core::supersession::STOPWORDS;

/// Similarity of two runs' inputs (Jaccard over words) from which they count as one task type.
pub const MATCH_AT: f64 = 0.4;
/// The normal quantile of the bounds on the lesson's own error: one-sided 95 %.
pub const Z: f64 = 1.645;
/// The quantile for the comparison of any failure, one-sided 97.5 %: it is a guard against side
/// effects, and noisier, since every failure of a run counts there, even those no lesson can
/// touch (a dropped connection); so it needs firmer evidence.
pub const Z_OVERALL: f64 = 1.96;
/// Weights of seed 003's utility: error reduction and efficiency gain, `0.65 / 0.35`; with a
/// referee's scores on both sides, `0.50 / 0.30 / 0.20` with the referee score's gain.
const ERROR_WEIGHT: f64 = 0.65;
const REFEREE_WEIGHTS: [f64; 3] = [0.50, 0.30, 0.20];
/// Reference inputs kept per lesson: enough to cover its task types, few enough to stay cheap.
const MAX_REFERENCES: usize = 64;
/// Similarity of the content words of two runs' inputs (Jaccard) from which they are one task
/// type when runs are grouped to judge a lesson per type: stricter than [`MATCH_AT`], which
/// asks only whether a run is near a lesson's own task, because two types that share the tool's
/// words and a step (`select` then `write`, `select` then `dedupe`) must stay apart.
pub const TYPE_AT: f64 = 0.5;
/// Share of a task type's judged runs that must have shown a lesson for the lesson to be judged
/// in that type: a lesson recalled there now and then by accident is no experiment there.
pub const STRATUM_SHARE: f64 = 0.10;
/// Words the name of a task type keeps.
const TYPE_NAME_WORDS: usize = 8;

/// What is known about each execution's result.
pub(super) struct Judged<'a> {
    pub(super) execution: &'a Execution,
    /// `Some(failed)` once judged.
    failed: Option<bool>,
    /// The fingerprints of the failure signals reported on it.
    fingerprints: HashSet<String>,
    /// The efficiency signals' total, else latency.
    cost: Option<f64>,
    /// The referee's score, the mean when several graded it.
    score: Option<f64>,
    /// The words of its input.
    terms: BTreeSet<String>,
    /// Its task type: an index into [`Evidence::types`].
    task_type: usize,
}

/// Runs of one skill whose inputs say the same thing but for their literals.
struct TaskType<'a> {
    skill: &'a SkillPath,
    /// The content words of the type's first run, which the others are compared with.
    leader: BTreeSet<String>,
    /// The content words every run of the type has: its name.
    shared: BTreeSet<String>,
}

impl TaskType<'_> {
    fn name(&self) -> String {
        let words: Vec<&str> = self
            .shared
            .iter()
            .take(TYPE_NAME_WORDS)
            .map(String::as_str)
            .collect();
        if words.is_empty() {
            "(no words)".to_owned()
        } else {
            words.join(" ")
        }
    }
}

/// Per task type, the lessons that help its runs, with their trigger fingerprints: a run of the
/// type that left one out and failed for want of it is no evidence about another lesson.
pub(super) type Helpers = HashMap<usize, HashMap<LessonId, Vec<String>>>;

pub(super) struct Evidence<'a> {
    pub(super) runs: Vec<Judged<'a>>,
    by_skill: HashMap<&'a SkillPath, Vec<usize>>,
    types: Vec<TaskType<'a>>,
}

impl<'a> Evidence<'a> {
    pub(super) fn gather(engine: &Engine, executions: &'a [Execution]) -> Result<Evidence<'a>> {
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
            by_skill
                .entry(&execution.skill)
                .or_default()
                .push(runs.len());
            runs.push(judge(execution, own, corrected.contains(&execution.id)));
        }
        let types = group_task_types(&mut runs);
        Ok(Evidence {
            runs,
            by_skill,
            types,
        })
    }

    /// The lesson's measurement and the statistics to store for it, leaving out of both sides
    /// the runs that showed one of the `tainted` lessons (other than this one), and out of each
    /// task type's comparison the runs that left out one of the type's `helpers` (other than
    /// this one).
    pub(super) fn measure(
        &self,
        lesson: &Lesson,
        tainted: &HashSet<LessonId>,
        helpers: &Helpers,
    ) -> (Measurement, UtilityStats) {
        self.measure_with_types(lesson, tainted, helpers).0
    }

    /// [`Evidence::measure`], with the task types of the matched runs that showed the lesson:
    /// its own types, where it is a helper when it helps.
    pub(super) fn measure_with_types(
        &self,
        lesson: &Lesson,
        tainted: &HashSet<LessonId>,
        helpers: &Helpers,
    ) -> ((Measurement, UtilityStats), BTreeSet<usize>) {
        let showed = |run: &Judged<'_>| run.execution.lessons_shown.contains(&lesson.id);
        let skills: BTreeSet<&SkillPath> = self
            .runs
            .iter()
            .filter(|r| showed(r))
            .map(|r| &r.execution.skill)
            .collect();
        let pool: Vec<&Judged<'_>> = skills
            .iter()
            .flat_map(|s| &self.by_skill[*s])
            .map(|&i| &self.runs[i])
            .collect();
        let matcher = Matcher::new(lesson, &pool);
        let mut own = Pair::default();
        let mut overall = Pair::default();
        // Per task type, every run of the type, matched to the lesson or not: a lesson recalled
        // outside its own task is judged there too, against runs of that type alone.
        let mut by_type: BTreeMap<usize, (Pair, Pair)> = BTreeMap::new();
        // The share of a type's runs that showed the lesson counts the runs up to the last that
        // did: once suppressed it is shown no more, and a verdict must not fade because of it.
        let last_shown = pool
            .iter()
            .filter(|r| showed(r))
            .map(|r| r.execution.timestamp)
            .max();
        let mut window: BTreeMap<usize, [usize; 2]> = BTreeMap::new();
        let mut own_types = BTreeSet::new();
        let mut stats = UtilityStats::default();
        for run in pool {
            let is_shown = showed(run);
            if is_shown {
                stats.activations += 1;
                stats.last_applied_at = latest(stats.last_applied_at, run.execution.timestamp);
            }
            let Some(failed) = run.failed else { continue };
            let blamed_elsewhere = run
                .execution
                .lessons_shown
                .iter()
                .any(|id| *id != lesson.id && tainted.contains(id));
            if blamed_elsewhere {
                continue;
            }
            // A lesson about a fingerprint is judged on that fingerprint's recurrence: a run
            // that failed for another reason is not the lesson's failure. Every failure still
            // counts in `overall`, which is what catches a lesson that trades one error for
            // another.
            let own_failed = if lesson.triggers.is_empty() {
                failed
            } else {
                matcher.hit(run)
            };
            // Recall fills the place of a lesson that sits out with the next one, so a lesson
            // shown outside its own task is shown most often where that task's own lesson was
            // not, and those runs fail for want of it: within a type, a run that left out a
            // lesson known to help there is compared only when that lesson's error did not
            // happen in it (one without triggers: never). A run where a rival took the helper's
            // place in the helper's own task and failed in its own way is the rival's evidence.
            //
            // A helper with triggers explains its own error in any task type of its skill, not
            // only in those it was shown in: a type first met while it sat out (a new pairing
            // of steps) fails of that error for want of it just the same, and the lesson that
            // stood beside it there did not cause that.
            let missing_helper = |claimed: &[String]| {
                helpers.iter().any(|(&t, known)| {
                    let own_type = t == run.task_type;
                    (own_type || self.types[t].skill == &run.execution.skill)
                        && known.iter().any(|(id, triggers)| {
                            *id != lesson.id
                                && !run.execution.lessons_shown.contains(id)
                                && ((own_type && triggers.is_empty())
                                    || triggers.iter().any(|t| {
                                        run.fingerprints.contains(t) && !claimed.contains(t)
                                    }))
                        })
                })
            };
            let without_a_helper = missing_helper(&[]);
            // Over all its runs, the comparison of any failure leaves such a run out too:
            // rotation gives a lesson under measurement a proven one's place, and a rule about
            // a dropped connection that took the filter rule's place was suppressed for the
            // filter's error. A lesson about that very error is judged on it (it claims to
            // prevent it), and its own error is counted as before.
            let failed_for_want_of_a_helper = missing_helper(&lesson.triggers);
            if !without_a_helper {
                if last_shown.is_some_and(|last| run.execution.timestamp <= last) {
                    let counts = window.entry(run.task_type).or_default();
                    counts[0] += 1;
                    counts[1] += usize::from(is_shown);
                }
                let (type_own, type_overall) = by_type.entry(run.task_type).or_default();
                type_own.side(is_shown).add(own_failed, run.cost);
                type_own.side(is_shown).grade(run.score);
                type_overall.side(is_shown).add(failed, run.cost);
            }
            if !matcher.matches(run) {
                continue;
            }
            if is_shown {
                own_types.insert(run.task_type);
            }
            own.side(is_shown).add(own_failed, run.cost);
            own.side(is_shown).grade(run.score);
            if !failed_for_want_of_a_helper {
                overall.side(is_shown).add(failed, run.cost);
            }
            if is_shown {
                if own_failed || failed {
                    stats.hurt += 1;
                } else {
                    stats.helped += 1;
                }
            }
        }
        let mut measurement = measurement(lesson, &own, &overall);
        let judged_in: Vec<(usize, &(Pair, Pair))> = by_type
            .iter()
            .filter(|(t, (own, _))| {
                let [runs, shown] = window.get(t).copied().unwrap_or_default();
                own.shown.runs > 0 && shown as f64 >= STRATUM_SHARE * runs as f64
            })
            .map(|(t, pairs)| (*t, pairs))
            .collect();
        // Shown in one task type only, the lesson is judged as before: on its matched runs.
        if judged_in.len() >= 2 {
            let pairs: Vec<&(Pair, Pair)> = judged_in.iter().map(|(_, p)| *p).collect();
            measurement.across_types = across_types(lesson, &pairs).map(Box::new);
            // "Hurts in any type" and "helps in one" are as many tests as types: each type's
            // bounds are at the level that keeps the chance of a verdict by chance in any of
            // them at what one comparison promises (Bonferroni).
            let tests = judged_in.len() as f64;
            let z = [
                normal_quantile(1.0 - (1.0 - normal_cdf(Z)) / tests),
                normal_quantile(1.0 - (1.0 - normal_cdf(Z_OVERALL)) / tests),
            ];
            for (t, (own, overall)) in judged_in {
                let task_type = self.types[t].name();
                let m = self::measurement_at(lesson, own, overall, z);
                stats.stratum_bounds.push(StratumBounds {
                    task_type: task_type.clone(),
                    runs: own.shown.runs as u64,
                    baseline_runs: own.baseline.runs as u64,
                    bounds: m.bounds,
                    overall_bounds: m.overall_bounds,
                });
                measurement.strata.push(TypeMeasurement {
                    task_type,
                    measurement: m,
                });
            }
        }
        if own.shown.runs > 0 && own.baseline.runs > 0 {
            stats.utility = Some(round(measurement.utility));
            stats.bounds = Some(measurement.bounds);
            stats.baseline_runs = own.baseline.runs as u64;
        }
        if overall.shown.runs > 0 && overall.baseline.runs > 0 {
            stats.overall_bounds = Some(measurement.overall_bounds);
        }
        ((measurement, stats), own_types)
    }
}

fn judge(execution: &Execution, own: Vec<ErrorEvent>, corrected: bool) -> Judged<'_> {
    // A run recorded by `lore learn` only carries an imported lesson's provenance: nobody ran it,
    // so it describes its task (a reference for matching) but is no evidence for or against any
    // lesson.
    let imported = execution.extra.contains_key(crate::learn::LEARNED_HASH);
    let failed = if imported {
        None
    } else if own.iter().any(signals_failure)
        || corrected
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
    let grades: Vec<f64> = own
        .iter()
        .filter(|e| e.channel == SignalChannel::Referee)
        .filter_map(|e| e.value)
        .collect();
    let score = (!grades.is_empty()).then(|| grades.iter().sum::<f64>() / grades.len() as f64);
    Judged {
        execution,
        task_type: 0,
        failed,
        fingerprints: own
            .into_iter()
            .filter(signals_failure)
            .map(|e| e.fingerprint)
            .collect(),
        cost,
        score,
        terms: input_terms(&execution.input),
    }
}

/// Groups the runs of each skill into task types, in the order they ran: a run joins the first
/// type of its skill whose first run's input shares enough content words with its own
/// ([`TYPE_AT`]), else it starts a type. The input alone decides, never the outcome: a type is
/// the same kind of task whatever happened in it. Returns the types; each run's `task_type`
/// indexes them.
fn group_task_types<'a>(runs: &mut [Judged<'a>]) -> Vec<TaskType<'a>> {
    let mut types: Vec<TaskType<'a>> = Vec::new();
    for run in runs.iter_mut() {
        let words = content_words(&run.terms);
        let found = types.iter().position(|t| {
            t.skill == &run.execution.skill
                && (t.leader == words || jaccard(&t.leader, &words) >= TYPE_AT)
        });
        run.task_type = match found {
            Some(i) => {
                types[i].shared.retain(|w| words.contains(w));
                i
            }
            None => {
                types.push(TaskType {
                    skill: &run.execution.skill,
                    leader: words.clone(),
                    shared: words,
                });
                types.len() - 1
            }
        };
    }
    types
}

/// The words of an input that say what the task is: no function words, and nothing with a
/// digit in it (counts, versions, identifiers change from run to run of one task).
pub(super) fn content_words(terms: &BTreeSet<String>) -> BTreeSet<String> {
    terms
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
        .cloned()
        .collect()
}

/// Which runs are comparable with a lesson's: see the module's documentation.
struct Matcher<'l> {
    triggers: &'l [String],
    references: Vec<BTreeSet<String>>,
}

impl<'l> Matcher<'l> {
    fn new(lesson: &'l Lesson, pool: &[&Judged<'_>]) -> Self {
        let mut matcher = Matcher {
            triggers: &lesson.triggers,
            references: Vec::new(),
        };
        for run in pool {
            let source = lesson.execution_id.as_ref() == Some(&run.execution.id);
            if (source || matcher.hit(run))
                && !run.terms.is_empty()
                && !matcher.references.contains(&run.terms)
                && matcher.references.len() < MAX_REFERENCES
            {
                matcher.references.push(run.terms.clone());
            }
        }
        matcher
    }

    /// Whether one of the lesson's triggers was reported on the run.
    fn hit(&self, run: &Judged<'_>) -> bool {
        self.triggers.iter().any(|t| run.fingerprints.contains(t))
    }

    fn matches(&self, run: &Judged<'_>) -> bool {
        self.references.is_empty()
            || self.hit(run)
            || self
                .references
                .iter()
                .any(|r| jaccard(r, &run.terms) >= MATCH_AT)
    }
}

/// The words of an input: every string in it, lowercased, split on what is not a letter or a
/// digit, without one-letter words.
pub(crate) fn input_terms(input: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect_terms(input, &mut out);
    out
}

fn collect_terms(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => out.extend(terms(s)),
        Value::Array(items) => items.iter().for_each(|v| collect_terms(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_terms(v, out)),
        _ => {}
    }
}

pub(crate) fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 1)
        .map(str::to_lowercase)
}

pub(crate) fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let shared = a.intersection(b).count();
    let union = a.len() + b.len() - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// Both sides of one comparison.
#[derive(Debug, Default)]
pub(super) struct Pair {
    pub(super) shown: Side,
    pub(super) baseline: Side,
}

impl Pair {
    /// The runs of all `pairs` on each side.
    fn sum<'p>(pairs: impl Iterator<Item = &'p Pair>) -> Pair {
        let mut total = Pair::default();
        for p in pairs {
            total.shown.absorb(&p.shown);
            total.baseline.absorb(&p.baseline);
        }
        total
    }

    fn side(&mut self, shown: bool) -> &mut Side {
        if shown {
            &mut self.shown
        } else {
            &mut self.baseline
        }
    }

    /// `baseline − shown` failure rate with its Newcombe bounds `(difference, lower, upper)`
    /// at the normal quantile `z`.
    pub(super) fn difference(&self, z: f64) -> (f64, f64, f64) {
        let (b, s) = (&self.baseline, &self.shown);
        if b.runs == 0 || s.runs == 0 {
            return (0.0, -1.0, 1.0);
        }
        let (pb, ps) = (b.failure_rate(), s.failure_rate());
        let (lb, ub) = wilson(b.failures, b.runs, z);
        let (ls, us) = wilson(s.failures, s.runs, z);
        let d = pb - ps;
        let lower = d - ((pb - lb).powi(2) + (us - ps).powi(2)).sqrt();
        let upper = d + ((ub - pb).powi(2) + (ps - ls).powi(2)).sqrt();
        (d, lower, upper)
    }
}

/// The task types' comparisons combined, when they agree: every type's difference of the
/// lesson's own error, and every type's difference of any failure, on the same side of zero (or
/// at zero), and no type where it prevents its own error at no cost in others. Each type's difference is weighed by `shown × baseline / (shown + baseline)`, the
/// weight of a stratified (Mantel–Haenszel) difference, so a type where the lesson was shown
/// mostly does not pass its own failure rate off as the lesson's; the bounds combine the types'
/// half-widths with the same weights. `None` when the types disagree: a lesson that helps one
/// kind of task and fails another is judged in each, never on their sum.
fn across_types(lesson: &Lesson, pairs: &[&(Pair, Pair)]) -> Option<Measurement> {
    let agree = |f: fn(&(Pair, Pair)) -> f64| {
        pairs.iter().all(|p| f(p) <= 0.0) || pairs.iter().all(|p| f(p) >= 0.0)
    };
    // A type where it prevents its own error at no cost in other failures is one it helps.
    let helps_somewhere = pairs
        .iter()
        .any(|(own, all)| own.difference(Z).0 > 0.0 && all.difference(Z_OVERALL).0 >= 0.0);
    if helps_somewhere
        || !agree(|(own, _)| own.difference(Z).0)
        || !agree(|(_, all)| all.difference(Z_OVERALL).0)
    {
        return None;
    }
    let mut m = measurement(
        lesson,
        &Pair::sum(pairs.iter().map(|(own, _)| own)),
        &Pair::sum(pairs.iter().map(|(_, all)| all)),
    );
    let (d, lower, upper) = stratified(pairs.iter().map(|(own, _)| own), Z);
    (m.difference, m.bounds) = (round(d), [round(lower), round(upper)]);
    let (d, lower, upper) = stratified(pairs.iter().map(|(_, all)| all), Z_OVERALL);
    (m.overall_difference, m.overall_bounds) = (round(d), [round(lower), round(upper)]);
    Some(m)
}

/// The stratified difference `baseline − shown` over `pairs` with its bounds at `z`: each
/// pair's Newcombe difference and half-widths, weighed by `shown × baseline / (shown +
/// baseline)`.
fn stratified<'p>(pairs: impl Iterator<Item = &'p Pair>, z: f64) -> (f64, f64, f64) {
    let (mut weight, mut d, mut low, mut high) = (0.0, 0.0, 0.0, 0.0);
    for pair in pairs {
        let (s, b) = (pair.shown.runs as f64, pair.baseline.runs as f64);
        if s == 0.0 || b == 0.0 {
            continue;
        }
        let w = s * b / (s + b);
        let (di, lower, upper) = pair.difference(z);
        weight += w;
        d += w * di;
        low += (w * (di - lower)).powi(2);
        high += (w * (upper - di)).powi(2);
    }
    if weight == 0.0 {
        return (0.0, -1.0, 1.0);
    }
    let d = d / weight;
    (d, d - low.sqrt() / weight, d + high.sqrt() / weight)
}

/// Whether `a` loses steadily to `rival`, a lesson it conflicts with: the rival's own failure
/// rate is lower than `a`'s by the one-sided 95 % bound, each over the runs that showed it.
pub(super) fn loses_to(a: &Measurement, rival: &Measurement) -> bool {
    let side = |m: &Measurement| Side {
        runs: m.runs,
        failures: (m.failure_rate * m.runs as f64).round() as usize,
        ..Side::default()
    };
    let pair = Pair {
        shown: side(a),
        baseline: side(rival),
    };
    let (_, _, upper) = pair.difference(Z);
    upper < 0.0
}

/// Judged runs on one side of the comparison.
#[derive(Debug, Default)]
pub(super) struct Side {
    pub(super) runs: usize,
    pub(super) failures: usize,
    cost_sum: f64,
    costed: usize,
    score_sum: f64,
    scored: usize,
}

impl Side {
    /// Counts a referee's score of a run on this side.
    pub(super) fn grade(&mut self, score: Option<f64>) {
        if let Some(s) = score {
            self.score_sum += s;
            self.scored += 1;
        }
    }

    fn absorb(&mut self, other: &Side) {
        self.runs += other.runs;
        self.failures += other.failures;
        self.cost_sum += other.cost_sum;
        self.costed += other.costed;
        self.score_sum += other.score_sum;
        self.scored += other.scored;
    }

    fn mean_score(&self) -> Option<f64> {
        (self.scored > 0).then(|| self.score_sum / self.scored as f64)
    }

    pub(super) fn add(&mut self, failed: bool, cost: Option<f64>) {
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

/// The Wilson score interval of `failures / runs` at the normal quantile `z`.
pub(super) fn wilson(failures: usize, runs: usize, z: f64) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 1.0);
    }
    let n = runs as f64;
    let p = failures as f64 / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Seed 003's utility from the lesson's own failures and costs, with the bounds of both
/// comparisons.
pub(super) fn measurement(lesson: &Lesson, own: &Pair, overall: &Pair) -> Measurement {
    measurement_at(lesson, own, overall, [Z, Z_OVERALL])
}

/// [`measurement`] with the bounds of the lesson's own error and of any failure at the normal
/// quantiles `z`.
fn measurement_at(lesson: &Lesson, own: &Pair, overall: &Pair, z: [f64; 2]) -> Measurement {
    let (shown, baseline) = (&own.shown, &own.baseline);
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
    let referee_score_gain = match (shown.mean_score(), baseline.mean_score()) {
        (Some(s), Some(base)) => Some((s - base).clamp(-1.0, 1.0)),
        _ => None,
    };
    let utility = match referee_score_gain {
        Some(gain) => {
            let [e, f, r] = REFEREE_WEIGHTS;
            e * error_reduction + f * efficiency_gain + r * gain
        }
        None => ERROR_WEIGHT * error_reduction + (1.0 - ERROR_WEIGHT) * efficiency_gain,
    };
    let (difference, lower, upper) = own.difference(z[0]);
    let (overall_difference, overall_lower, overall_upper) = overall.difference(z[1]);
    Measurement {
        lesson: lesson.id.clone(),
        runs: shown.runs,
        baseline_runs: baseline.runs,
        failure_rate: round(a),
        baseline_failure_rate: round(b),
        error_reduction,
        efficiency_gain,
        referee_score_gain: referee_score_gain.map(round),
        utility,
        difference: round(difference),
        bounds: [round(lower), round(upper)],
        overall_difference: round(overall_difference),
        overall_bounds: [round(overall_lower), round(overall_upper)],
        strata: Vec::new(),
        across_types: None,
    }
}

/// The standard normal distribution function, by the complementary error function (Numerical
/// Recipes' `erfcc`, absolute error below 1.2e-7).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// The quantile of the standard normal distribution at `p` in `(0, 1)`, by bisection on
/// [`normal_cdf`]: called a few times per lesson, so plain and exact enough beats fast.
fn normal_quantile(p: f64) -> f64 {
    let (mut low, mut high) = (-10.0, 10.0);
    for _ in 0..80 {
        let mid = (low + high) / 2.0;
        if normal_cdf(mid) < p {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
}

/// Whether an event reports a failure: a hard or constraint failure, or no progress.
pub(crate) fn signals_failure(event: &ErrorEvent) -> bool {
    match event.channel {
        SignalChannel::HardFailure | SignalChannel::ConstraintFailure => true,
        SignalChannel::Progress => event.value.is_some_and(|v| v <= 0.0),
        SignalChannel::Efficiency | SignalChannel::Referee => false,
    }
}

fn latest(current: Option<DateTime<Utc>>, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    Some(current.map_or(at, |c| c.max(at)))
}

/// Four decimals: stored statistics compare equal across passes despite float noise.
pub(super) fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
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

    fn pair(shown: Side, baseline: Side) -> Pair {
        Pair { shown, baseline }
    }

    fn lesson() -> Lesson {
        serde_json::from_value(serde_json::json!({
            "id": "REFL-001", "skill": "a/b", "mistake": "", "root_cause": "", "rule": "r",
            "applies_when": "", "tiers": {"summary": "", "condition": "", "action": "",
            "rationale": ""}, "confidence": 0.8, "source": "manual", "status": "trial",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    fn m(shown: Side, baseline: Side) -> Measurement {
        let own = pair(shown, baseline);
        measurement(&lesson(), &own, &Pair::default())
    }

    #[test]
    fn halving_the_failure_rate_is_half_an_error_reduction() {
        let m = m(side(4, 1, &[]), side(4, 2, &[]));
        assert!((m.error_reduction - 0.5).abs() < 1e-12);
        assert!((m.utility - 0.65 * 0.5).abs() < 1e-12);
        assert_eq!((m.runs, m.baseline_runs), (4, 4));
    }

    #[test]
    fn failures_where_the_baseline_had_none_are_negative() {
        let m = m(side(4, 2, &[]), side(3, 0, &[]));
        assert!((m.error_reduction + 0.5).abs() < 1e-12);
        assert!(m.utility < 0.0);
    }

    #[test]
    fn doubling_the_failures_clamps_at_minus_one() {
        assert_eq!(m(side(2, 2, &[]), side(4, 1, &[])).error_reduction, -1.0);
    }

    #[test]
    fn a_referees_grades_on_both_sides_weigh_a_fifth_of_utility() {
        let mut own = Pair::default();
        for _ in 0..4 {
            own.shown.add(false, None);
            own.shown.grade(Some(0.9));
            own.baseline.add(false, None);
            own.baseline.grade(Some(0.4));
        }
        let lesson = lesson();
        let m = measurement(&lesson, &own, &Pair::default());
        assert_eq!(m.referee_score_gain, Some(0.5));
        assert!((m.utility - 0.20 * 0.5).abs() < 1e-12, "{m:?}");
        // Graded on one side only: no referee term, seed 003's formula without it.
        let mut one_sided = Pair::default();
        one_sided.shown.add(false, None);
        one_sided.shown.grade(Some(1.0));
        one_sided.baseline.add(false, None);
        let m = measurement(&lesson, &one_sided, &Pair::default());
        assert_eq!(m.referee_score_gain, None);
        assert!(m.utility.abs() < 1e-12, "{m:?}");
    }

    #[test]
    fn cheaper_runs_count_as_efficiency_gain() {
        let m = m(side(2, 0, &[50.0, 50.0]), side(2, 0, &[100.0, 100.0]));
        assert_eq!(m.error_reduction, 0.0);
        assert!((m.efficiency_gain - 0.5).abs() < 1e-12);
        assert!((m.utility - 0.35 * 0.5).abs() < 1e-12);
    }

    #[test]
    fn no_baseline_means_no_reduction_and_no_verdict() {
        let m = m(side(5, 0, &[1.0]), Side::default());
        assert_eq!((m.error_reduction, m.utility), (0.0, 0.0));
        assert_eq!(m.bounds, [-1.0, 1.0]);
    }

    #[test]
    fn the_normal_quantile_inverts_the_distribution_function() {
        assert!((normal_quantile(0.95) - 1.645).abs() < 1e-3);
        assert!((normal_quantile(0.975) - 1.960).abs() < 1e-3);
        // Two tests at 97.5 % together: each at 98.75 %.
        assert!((normal_quantile(1.0 - 0.025 / 2.0) - 2.241).abs() < 1e-3);
        assert!((normal_cdf(-Z) - 0.05).abs() < 1e-4);
    }

    #[test]
    fn wilson_bounds_narrow_with_runs() {
        let (lo, hi) = wilson(0, 3, Z);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.474).abs() < 1e-3, "{hi}");
        let (lo, hi) = wilson(50, 100, Z);
        assert!(lo > 0.41 && hi < 0.59, "{lo} {hi}");
    }

    fn both(
        shown: (usize, usize),
        baseline: (usize, usize),
        any: [(usize, usize); 2],
    ) -> (Pair, Pair) {
        (
            pair(
                side(shown.0, shown.1, &[]),
                side(baseline.0, baseline.1, &[]),
            ),
            pair(side(any[0].0, any[0].1, &[]), side(any[1].0, any[1].1, &[])),
        )
    }

    #[test]
    fn task_types_too_thin_alone_decide_together_when_they_agree() {
        // In each of two types the lesson prevents its own error but every run that showed it
        // failed otherwise (a form that runs and gives the wrong result): 4 runs a type.
        let a = both((4, 0), (6, 4), [(4, 4), (6, 1)]);
        let b = both((4, 0), (7, 5), [(4, 4), (7, 1)]);
        let alone = measurement(&lesson(), &a.0, &a.1);
        assert!(!alone.hurts(), "4 runs are under the window: {alone:?}");
        let together = across_types(&lesson(), &[&a, &b]).expect("they agree");
        assert_eq!(together.runs, 8);
        assert!(together.hurts(), "{together:?}");
    }

    #[test]
    fn a_lesson_that_helps_one_type_is_never_judged_on_the_sum() {
        // It prevents its error in one type at no cost, and fails the runs of another.
        let helps = both((6, 0), (6, 5), [(6, 0), (6, 5)]);
        let fails = both((6, 0), (6, 0), [(6, 6), (6, 0)]);
        assert!(across_types(&lesson(), &[&helps, &fails]).is_none());
        // Two types pointing opposite ways on any failure are not summed either.
        let better = both((5, 1), (5, 1), [(5, 0), (5, 2)]);
        let worse = both((5, 1), (5, 1), [(5, 3), (5, 0)]);
        assert!(across_types(&lesson(), &[&better, &worse]).is_none());
    }

    #[test]
    fn three_runs_prove_nothing_but_a_clear_difference_does() {
        // 2 of 3 failed with the lesson, 1 of 3 without: that is noise.
        let (_, lo, hi) = pair(side(3, 2, &[]), side(3, 1, &[])).difference(Z);
        assert!(lo < 0.0 && hi > 0.0, "{lo} {hi}");
        // 22 of 36 prevented against a baseline that failed 30 times in 36: it helps.
        let (_, lo, _) = pair(side(36, 14, &[]), side(36, 30, &[])).difference(Z);
        assert!(lo > 0.0, "{lo}");
    }

    #[test]
    fn inputs_of_one_task_type_match() {
        let a = input_terms(&serde_json::json!({"task": "gridtool: sort sales by revenue"}));
        let b = input_terms(&serde_json::json!({"task": "gridtool: sort orders by revenue"}));
        let c = input_terms(&serde_json::json!({"task": "fluxtool: merge two files"}));
        assert!(jaccard(&a, &b) >= MATCH_AT);
        assert!(jaccard(&a, &c) < MATCH_AT);
    }
}
