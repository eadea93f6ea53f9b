//! Exploration: a suppressed lesson keeps a small chance of being shown, so a wrong verdict can
//! be undone by evidence (DESIGN.md).
//!
//! Without it a suppression is forever: a suppressed lesson is never shown, so no run can ever
//! speak for it. [`Engine::exploration`] returns, for one run, the lessons that the
//! utility gate suppressed and that match the run — one of their triggers is the query's
//! fingerprint, or they share enough words with the query — in [`EXPLORE_SHARE`] of such runs.
//! Which runs is decided by a hash of the caller's key (a session or run ID) and the lesson's
//! skill and rule, so a replay with the same keys shows the same lessons, even in another store
//! where the same lessons were learned under other IDs. The caller shows them beside the
//! recall's context and names them in `lessons_shown`; [`Engine::measure`] then judges those runs
//! like any others and puts the lesson back on trial when the evidence turns.
//!
//! Only suppressions made by the gate are explored: a lesson a person suppressed stays out.
//! After [`SETTLED_AFTER`] judged runs, or once the bound says it hurts by more than
//! [`SETTLED_MARGIN`], the verdict is taken as settled and exploration stops: only a suppression
//! on thin evidence is tried again.

use std::collections::BTreeSet;

use super::evidence::{content_words, terms};
use super::{MIN_RUNS, OVERALL_MIN_RUNS};
use crate::{Engine, RecallQuery};
use lore_core::error::Result;
use lore_core::id::LessonId;
use lore_core::model::{AuditAction, Lesson, LessonStatus};

/// Share of matching runs in which a lesson suppressed by measurement is still shown.
pub const EXPLORE_SHARE: f64 = 0.10;
/// Judged runs after which a suppressed lesson's verdict is settled and it is no longer tried.
pub const SETTLED_AFTER: u64 = 100;
/// Share of recalls that hold out a lesson whose bound has not spoken: a balanced experiment,
/// the split that settles a comparison in the fewest runs. A lesson is shown in every run where
/// it matches unless held out, so without this its control is only the runs from before it
/// existed, and a lesson learned beside another from one failed run could never be told from
/// it.
pub const OPEN_HOLDOUT_SHARE: f64 = 0.5;
/// Judged runs that showed a lesson after which a bound that still says nothing makes its
/// experiment balanced: most lessons speak sooner, against the runs from before they existed,
/// and holding half of their runs out from the start would cost a failure in each.
pub const LINGER_AFTER: u64 = 10;
/// Share of recalls that hold out a lesson whose bound says it helps, but not yet surely, or that
/// is new to the experiment: the comparison goes on at a smaller cost.
pub const HOLDOUT_SHARE: f64 = 0.15;
/// Share of runs in which a lesson the bound says helps is still held out: enough to notice the
/// world changing under it, few enough that knowing costs little.
pub const SETTLED_HOLDOUT_SHARE: f64 = 0.03;
/// How clearly the bound must speak to settle a verdict: a lesson helps for sure when the lower
/// bound of its difference is above this, hurts for sure when the upper bound is below minus
/// this. A suppression on evidence that clear is not explored again.
pub const SETTLED_MARGIN: f64 = 0.2;
/// The standing ([`standing`]) from which a lesson's bound says it helps.
const PROVEN: f64 = 2.0;
/// How close a query must be to a task type ([`of_type`]) to be taken as of that type.
const TYPE_CLOSENESS: f64 = 0.5;
/// Share of a lesson's words (or the query's, if fewer) that must appear in the query.
const WORD_OVERLAP: f64 = 0.3;
/// The audit reason the gate writes when it suppresses.
pub(super) const SUPPRESSED_BY_MEASURE: &str = "suppressed: measured utility";

impl Engine {
    /// Suppressed lessons to try again in the run `key`, for `query`: see the module's
    /// documentation. Deterministic for a given key.
    ///
    /// # Errors
    /// Store failures.
    pub fn exploration(&self, query: &RecallQuery, key: &str) -> Result<Vec<Lesson>> {
        let suppressed = self.lessons(
            query.skill.as_ref(),
            Some([LessonStatus::Suppressed].into()),
        )?;
        let query_terms: BTreeSet<String> = terms(&query.text).collect();
        let fingerprint = query.fingerprint.as_deref().map(|f| {
            let f = f.trim();
            [f.to_owned(), lore_core::fingerprint(f)]
        });
        let mut out = Vec::new();
        for lesson in suppressed {
            let surely_hurts = lesson
                .utility
                .bounds
                .is_some_and(|[_, upper]| upper < -SETTLED_MARGIN);
            let settled =
                surely_hurts || lesson.utility.helped + lesson.utility.hurt >= SETTLED_AFTER;
            let hit = fingerprint
                .as_ref()
                .is_some_and(|fs| lesson.triggers.iter().any(|t| fs.contains(t)));
            let relevant = hit || overlaps(&lesson, &query_terms);
            if settled || !relevant || draw(key, &lesson) >= EXPLORE_SHARE {
                continue;
            }
            if self.suppressed_by_measure(&lesson.id)? {
                out.push(lesson);
            }
        }
        Ok(out)
    }

    /// The share of recalls that leave `lesson` out to measure it: its control, drawn anew for
    /// every recall and independently for every lesson, so that two lessons usually recalled
    /// together are each shown without the other often enough to be told apart.
    ///
    /// - 0 for a lesson not in the experiment: not live, never shown in a recorded run (nothing
    ///   is measured where no run reports what it showed), or judged over [`SETTLED_AFTER`] runs;
    /// - [`OPEN_HOLDOUT_SHARE`] while its bound says neither that it helps nor that it hurts
    ///   after [`LINGER_AFTER`] judged runs (before, [`HOLDOUT_SHARE`]);
    /// - [`HOLDOUT_SHARE`] once the lower bound is above zero (it helps, not yet surely);
    /// - [`SETTLED_HOLDOUT_SHARE`] once the lower bound is above [`SETTLED_MARGIN`]: the control
    ///   has spoken, and every further held-out run is a failure an agent need not have had.
    ///
    /// The last two only while the comparison of any failure does not lean towards harm: a
    /// lesson may prevent its own error and cause another. While it leans towards harm, the
    /// share balances the information of the two sides (`shown² / (shown² + baseline²)`, between
    /// [`HOLDOUT_SHARE`] and [`OPEN_HOLDOUT_SHARE`]): such a lesson usually has a long control
    /// already and too few runs that showed it for the bound to speak, and holding it out of
    /// half its runs would leave it unjudged. This is the share over all its runs;
    /// a recall uses [`Engine::holdout_share_for`], which follows the task types.
    pub fn holdout_share(lesson: &Lesson) -> f64 {
        let u = &lesson.utility;
        if !in_experiment(lesson) {
            return 0.0;
        }
        share_for(
            u.bounds,
            u.overall_bounds,
            [u.helped + u.hurt, u.baseline_runs],
        )
    }

    /// The share of recalls of `query` that leave `lesson` out: as [`Engine::holdout_share`],
    /// but from the bounds of the task type the query is of, when the lesson is judged per task
    /// type (`utility.stratum_bounds`); when the query is as close to several types, the least
    /// decided of them. A lesson sure to help its own type is shown there almost always, and
    /// held out of another type it is shown in as much as that type still needs: without that,
    /// a type it harms would have nothing to compare with. A query of no judged type gets the
    /// share over all its runs.
    pub fn holdout_share_for(lesson: &Lesson, query: &str) -> f64 {
        if !in_experiment(lesson) {
            return 0.0;
        }
        let words = content_words(&terms(query).collect());
        let typed: Vec<(f64, f64)> = lesson
            .utility
            .stratum_bounds
            .iter()
            .map(|t| {
                let share = share_for(
                    Some(t.bounds),
                    Some(t.overall_bounds),
                    [t.runs, t.baseline_runs],
                );
                (of_type(&words, &t.task_type), share)
            })
            .filter(|(closeness, _)| *closeness >= TYPE_CLOSENESS)
            .collect();
        let closest = typed.iter().map(|(c, _)| *c).fold(0.0, f64::max);
        typed
            .iter()
            .filter(|(c, _)| *c >= closest)
            .map(|(_, share)| *share)
            .reduce(f64::max)
            .unwrap_or_else(|| Engine::holdout_share(lesson))
    }

    /// Whether this recall leaves `lesson` out to measure it ([`Engine::holdout_share`]). With
    /// the run's `key` the draw is a hash of the key and the lesson's skill and rule, so a replay
    /// holds out the same lessons; without one it is a fresh random draw.
    pub fn held_out(lesson: &Lesson, key: Option<&str>) -> bool {
        drawn_below(Engine::holdout_share(lesson), "hold", lesson, key)
    }

    /// [`Engine::held_out`] for a recall of `query`, at [`Engine::holdout_share_for`].
    pub fn held_out_for(lesson: &Lesson, query: &str, key: Option<&str>) -> bool {
        drawn_below(
            Engine::holdout_share_for(lesson, query),
            "hold",
            lesson,
            key,
        )
    }

    /// Whether `incumbent`, placed ahead of a near-tied `challenger`, gives it its place in this
    /// recall: when the challenger is still to be measured where `query` recalls it (never shown
    /// in a recorded run, or its bound not yet sure there) and the incumbent is known better
    /// than it (its bound says it helps, or it was judged over [`LINGER_AFTER`] runs and more
    /// than the challenger). The challenger's own holdout draw is the experiment's other arm:
    /// the caller rotates only when the challenger was not drawn, so its control is the run
    /// with the incumbent. Without this a challenger tied with a better-known lesson is shown
    /// only where that one sits out, too seldom in the very task it is about to be judged
    /// there: a rule contradicting the right one stays approved, shown only where it does not
    /// apply.
    pub fn rotates(incumbent: &Lesson, challenger: &Lesson, query: &str) -> bool {
        let u = &challenger.utility;
        let live = matches!(
            challenger.status,
            LessonStatus::Trial | LessonStatus::Approved
        );
        let measuring = u.activations == 0
            || Engine::holdout_share_for(challenger, query) > SETTLED_HOLDOUT_SHARE;
        let judged = |l: &Lesson| l.utility.helped + l.utility.hurt;
        let known_better = standing(incumbent) >= PROVEN
            || (judged(incumbent) >= LINGER_AFTER && judged(incumbent) > judged(challenger));
        live && measuring && !surely_hurts(challenger) && known_better
    }

    /// Whether a run showed the lesson after its latest transition: only new evidence (runs that
    /// explored it) may undo a suppression, never the same runs counted another way.
    pub(super) fn shown_since_suppressed(
        &self,
        id: &LessonId,
        last_shown: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<bool> {
        let last = self
            .store
            .audit(Some(id.as_str()))?
            .into_iter()
            .rfind(|e| e.action == AuditAction::Transition);
        Ok(match (last, last_shown) {
            (Some(entry), Some(shown)) => shown >= entry.at,
            _ => false,
        })
    }

    /// Whether the lesson's latest transition was the utility gate suppressing it.
    pub(super) fn suppressed_by_measure(&self, id: &LessonId) -> Result<bool> {
        let last = self
            .store
            .audit(Some(id.as_str()))?
            .into_iter()
            .rfind(|e| e.action == AuditAction::Transition);
        Ok(last.is_some_and(|e| {
            e.to == Some(LessonStatus::Suppressed) && e.reason.starts_with(SUPPRESSED_BY_MEASURE)
        }))
    }
}

/// A live lesson a recorded run showed, not yet judged over [`SETTLED_AFTER`] runs.
fn in_experiment(lesson: &Lesson) -> bool {
    let u = &lesson.utility;
    matches!(lesson.status, LessonStatus::Trial | LessonStatus::Approved)
        && u.activations > 0
        && u.helped + u.hurt < SETTLED_AFTER
}

/// The holdout share for one comparison's bounds over `[shown, baseline]` judged runs (those
/// that showed the lesson and its matched control).
fn share_for(
    bounds: Option<[f64; 2]>,
    overall: Option<[f64; 2]>,
    [shown, baseline]: [u64; 2],
) -> f64 {
    // A lesson that prevents its own error by causing another looks helpful on its own
    // error alone: while the comparison of any failure leans towards harm (the centre of
    // its bounds below zero), it is never held out as little as a helpful one. Its bounds
    // themselves are too wide to wait for: every failure of a run counts there, most of them
    // not the lesson's.
    let unharmful = overall.is_none_or(|[lower, upper]| lower + upper >= 0.0);
    match bounds {
        Some([lower, _]) if lower > SETTLED_MARGIN && unharmful => SETTLED_HOLDOUT_SHARE,
        Some([lower, _]) if lower > 0.0 && unharmful => HOLDOUT_SHARE,
        _ if unharmful && shown < LINGER_AFTER => HOLDOUT_SHARE,
        _ if unharmful => OPEN_HOLDOUT_SHARE,
        _ => towards_harm_share(shown, baseline),
    }
}

/// The holdout share of a lesson whose comparison of any failure leans towards harm: the run
/// goes, in expectation, to the side where it narrows the bound more. The variance of a failure
/// rate over `n` runs is `p(1 − p) / n`, and one more run narrows it by about `p(1 − p) / n²`;
/// taking the two sides' `p(1 − p)` as alike, a run is held out with probability
/// `shown² / (shown² + baseline²)`: a balanced experiment once the sides are even, and mostly
/// shown while its control already holds more runs than the runs that showed it, which are then
/// what the verdict waits for. Kept between [`HOLDOUT_SHARE`] (two lessons shown together stay
/// separable, each held out on its own) and [`OPEN_HOLDOUT_SHARE`].
fn towards_harm_share(shown: u64, baseline: u64) -> f64 {
    let (s, b) = ((shown as f64).powi(2), (baseline as f64).powi(2));
    let balancing = if s + b > 0.0 {
        s / (s + b)
    } else {
        OPEN_HOLDOUT_SHARE
    };
    balancing.clamp(HOLDOUT_SHARE, OPEN_HOLDOUT_SHARE)
}

/// How close a query (its content words) is to the task type named by `name`, the words every
/// run of the type shares: the share of the smaller of the two that is shared. A step of a task
/// carries only part of its type's words, and a type's name only its first words.
fn of_type(query: &BTreeSet<String>, name: &str) -> f64 {
    let type_words: BTreeSet<String> = terms(name).collect();
    let smaller = type_words.len().min(query.len());
    if smaller == 0 {
        return 0.0;
    }
    type_words.intersection(query).count() as f64 / smaller as f64
}

/// How firmly measurement and curation vouch for a lesson, higher first: what breaks a near-tie
/// in recall ([`lore_recall::NEAR_TIE`]) instead of recency. A lesson whose bound says it helps
/// comes first, the surer the higher; then one not yet judged, approved before trial, then by
/// confidence; one whose bound says it hurts last.
pub(crate) fn standing(lesson: &Lesson) -> f64 {
    let u = &lesson.utility;
    if surely_hurts(lesson) {
        return 0.0;
    }
    let unharmful = u
        .overall_bounds
        .is_none_or(|[lower, upper]| lower + upper >= 0.0);
    match u.bounds {
        Some([lower, _]) if lower > 0.0 && unharmful => PROVEN + lower.min(1.0),
        _ => {
            let approved = if lesson.status == LessonStatus::Approved {
                0.5
            } else {
                0.0
            };
            1.0 + approved + 0.4 * lesson.confidence.clamp(0.0, 1.0)
        }
    }
}

/// Whether the gate's verdict on the lesson is that it hurts, over enough runs to say so.
fn surely_hurts(lesson: &Lesson) -> bool {
    let u = &lesson.utility;
    let judged = (u.helped + u.hurt) as usize;
    (judged >= MIN_RUNS && u.bounds.is_some_and(|[_, upper]| upper < 0.0))
        || (judged >= OVERALL_MIN_RUNS && u.overall_bounds.is_some_and(|[_, upper]| upper < 0.0))
}

/// A draw below `share`: from the key and the lesson when there is a key, else fresh.
fn drawn_below(share: f64, salt: &str, lesson: &Lesson, key: Option<&str>) -> bool {
    if share <= 0.0 {
        return false;
    }
    let drawn = match key {
        Some(key) => draw(&format!("{salt}:{key}"), lesson),
        None => lore_core::id::random_unit(),
    };
    drawn < share
}

fn overlaps(lesson: &Lesson, query: &BTreeSet<String>) -> bool {
    let own: BTreeSet<String> = terms(&lesson.rule)
        .chain(terms(&lesson.applies_when))
        .collect();
    let shared = own.intersection(query).count();
    let smaller = own.len().min(query.len());
    shared >= 2 && shared as f64 >= WORD_OVERLAP * smaller as f64
}

/// A uniform draw in `[0, 1)` from the key and the lesson (FNV-1a, then a mix). The lesson
/// counts by its skill and rule, not its ID: IDs carry a random part, so a replay that learns
/// the same lessons into a fresh store would otherwise hold out other ones.
fn draw(key: &str, lesson: &Lesson) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let lesson = [lesson.skill.as_str(), "\0", lesson.rule.as_str()];
    for b in key
        .bytes()
        .chain([0])
        .chain(lesson.iter().flat_map(|p| p.bytes()))
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(id: &str, rule: &str) -> Lesson {
        serde_json::from_value(serde_json::json!({
            "id": id, "skill": "a/b", "mistake": "", "root_cause": "", "rule": rule,
            "applies_when": "", "tiers": {"summary": "", "condition": "", "action": "",
            "rationale": ""}, "confidence": 0.8, "source": "manual", "status": "trial",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn about_one_run_in_ten_is_drawn_and_the_draw_is_stable() {
        let l = lesson("REFL-001", "Quote the column name.");
        let drawn = (0..10_000)
            .filter(|i| draw(&format!("run-{i}"), &l) < EXPLORE_SHARE)
            .count();
        assert!((800..1200).contains(&drawn), "{drawn}");
        assert_eq!(draw("run-7", &l), draw("run-7", &l));
    }

    #[test]
    fn the_draw_follows_the_rule_not_the_id_a_store_gave_it() {
        let here = lesson("REFL-001", "Quote the column name.");
        let replayed = lesson("REFL-777", "Quote the column name.");
        let other = lesson("REFL-001", "Sort before you merge.");
        let keys: Vec<String> = (0..200).map(|i| format!("run-{i}")).collect();
        assert!(keys.iter().all(|k| draw(k, &here) == draw(k, &replayed)));
        let same = keys
            .iter()
            .filter(|k| (draw(k, &here) < 0.5) == (draw(k, &other) < 0.5))
            .count();
        assert!(
            (60..140).contains(&same),
            "two rules draw apart: {same} of 200 alike"
        );
    }
}
