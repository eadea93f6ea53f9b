//! Exploration: a suppressed lesson keeps a small chance of being shown, so a wrong verdict can
//! be undone by evidence (DESIGN.md).
//!
//! Without it a suppression is forever: a suppressed lesson is never shown, so no run can ever
//! speak for it (issue 14). [`Engine::exploration`] returns, for one run, the lessons that the
//! utility gate suppressed and that match the run — one of their triggers is the query's
//! fingerprint, or they share enough words with the query — in [`EXPLORE_SHARE`] of such runs.
//! Which runs is decided by a hash of the caller's key (a session or run ID) and the lesson's ID,
//! so a replay with the same keys shows the same lessons. The caller shows them beside the
//! recall's context and names them in `lessons_shown`; [`Engine::measure`] then judges those runs
//! like any others and puts the lesson back on trial when the evidence turns.
//!
//! Only suppressions made by the gate are explored: a lesson a person suppressed stays out.
//! After [`SETTLED_AFTER`] judged runs, or once the bound says it hurts by more than
//! [`SETTLED_MARGIN`], the verdict is taken as settled and exploration stops: only a suppression
//! on thin evidence is tried again.

use std::collections::BTreeSet;

use super::evidence::terms;
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
            if settled || !relevant || draw(key, &lesson.id) >= EXPLORE_SHARE {
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
    /// lesson may prevent its own error and cause another.
    pub fn holdout_share(lesson: &Lesson) -> f64 {
        let u = &lesson.utility;
        let live = matches!(lesson.status, LessonStatus::Trial | LessonStatus::Approved);
        if !live || u.activations == 0 || u.helped + u.hurt >= SETTLED_AFTER {
            return 0.0;
        }
        // A lesson that prevents its own error by causing another looks helpful on its own
        // error alone: while the comparison of any failure leans towards harm (the centre of
        // its bounds below zero), the experiment stays balanced. Its bounds themselves are too
        // wide to wait for: every failure of a run counts there, most of them not the lesson's.
        let unharmful = u
            .overall_bounds
            .is_none_or(|[lower, upper]| lower + upper >= 0.0);
        match u.bounds {
            Some([lower, _]) if lower > SETTLED_MARGIN && unharmful => SETTLED_HOLDOUT_SHARE,
            Some([lower, _]) if lower > 0.0 && unharmful => HOLDOUT_SHARE,
            _ if unharmful && u.helped + u.hurt < LINGER_AFTER => HOLDOUT_SHARE,
            _ => OPEN_HOLDOUT_SHARE,
        }
    }

    /// Whether this recall leaves `lesson` out to measure it ([`Engine::holdout_share`]). With
    /// the run's `key` the draw is a hash of the key and the lesson's ID, so a replay holds out
    /// the same lessons; without one it is a fresh random draw.
    pub fn held_out(lesson: &Lesson, key: Option<&str>) -> bool {
        let share = Engine::holdout_share(lesson);
        if share <= 0.0 {
            return false;
        }
        let drawn = match key {
            Some(key) => draw(&format!("hold:{key}"), &lesson.id),
            None => lore_core::id::random_unit(),
        };
        drawn < share
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

fn overlaps(lesson: &Lesson, query: &BTreeSet<String>) -> bool {
    let own: BTreeSet<String> = terms(&lesson.rule)
        .chain(terms(&lesson.applies_when))
        .collect();
    let shared = own.intersection(query).count();
    let smaller = own.len().min(query.len());
    shared >= 2 && shared as f64 >= WORD_OVERLAP * smaller as f64
}

/// A uniform draw in `[0, 1)` from the key and the lesson (FNV-1a, then a mix).
fn draw(key: &str, lesson: &LessonId) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes().chain([0]).chain(lesson.as_str().bytes()) {
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

    #[test]
    fn about_one_run_in_ten_is_drawn_and_the_draw_is_stable() {
        let id = LessonId::parse("REFL-001").unwrap();
        let drawn = (0..10_000)
            .filter(|i| draw(&format!("run-{i}"), &id) < EXPLORE_SHARE)
            .count();
        assert!((800..1200).contains(&drawn), "{drawn}");
        assert_eq!(draw("run-7", &id), draw("run-7", &id));
    }
}
