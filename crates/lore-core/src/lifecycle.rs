//! The one lifecycle of a lesson: which status may follow which, written down once.
//!
//! Seed 004's states keep poison out of prompts only if nothing can jump around them, so the
//! allowed moves live in a single table, [`TRANSITIONS`], and every status change in Lore goes
//! through [`crate::Engine::transition`], which consults it and writes the audit entry in the same
//! store transaction as the change. Tests iterate the table, so a move added here is a move tested.
//!
//! The shape of the table, in words:
//!
//! - what waits (`needs_review`), what is measured (`trial`) and what is in use (`approved`) can
//!   be decided on by a person: approved, rejected, a one-time exception, superseded, archived;
//! - `trial` is promoted to `approved` or suppressed by measured utility (seed 003);
//! - `needs_review` left too long becomes `expired` (`lore maintain`);
//! - second chances: a suppressed lesson can go back on trial or be approved, an expired one
//!   can be reopened or decided on late;
//! - everything that is no longer used can be archived (retired or pruned);
//! - anything can be marked `sensitive`, because a secret must be taken out of use whatever the
//!   lesson's state. `sensitive` and `archived` are final: a sensitive lesson leaves only by an
//!   audited purge of its content, which keeps its status.

use crate::error::{Error, Result};
use crate::model::LessonStatus::{
    self, Approved, Archived, Expired, NeedsReview, OneTimeException, Rejected, Sensitive,
    Superseded, Suppressed, Trial,
};

/// Every allowed status change, `(from, to)`; anything else is refused.
pub const TRANSITIONS: &[(LessonStatus, LessonStatus)] = &[
    // Decisions on what waits for review.
    (NeedsReview, Approved),
    (NeedsReview, Rejected),
    (NeedsReview, OneTimeException),
    (NeedsReview, Superseded),
    (NeedsReview, Expired),
    (NeedsReview, Archived),
    (NeedsReview, Sensitive),
    // Trial: promoted or suppressed by utility, or decided on by a person.
    (Trial, Approved),
    (Trial, Suppressed),
    (Trial, Rejected),
    (Trial, OneTimeException),
    (Trial, Superseded),
    (Trial, Archived),
    (Trial, Sensitive),
    // Approved lessons can still be withdrawn.
    (Approved, Suppressed),
    (Approved, Rejected),
    (Approved, OneTimeException),
    (Approved, Superseded),
    (Approved, Archived),
    (Approved, Sensitive),
    // Second chances.
    (Suppressed, Trial),
    (Suppressed, Approved),
    (Suppressed, Archived),
    (Suppressed, Sensitive),
    (Expired, NeedsReview),
    (Expired, Approved),
    (Expired, Rejected),
    (Expired, Archived),
    (Expired, Sensitive),
    // Kept for history; archived when pruned, and still open to a sensitivity mark.
    (Rejected, Archived),
    (Rejected, Sensitive),
    (OneTimeException, Archived),
    (OneTimeException, Sensitive),
    (Superseded, Archived),
    (Superseded, Sensitive),
    (Archived, Sensitive),
];

/// Whether `from → to` is in [`TRANSITIONS`].
pub fn is_allowed(from: LessonStatus, to: LessonStatus) -> bool {
    TRANSITIONS.contains(&(from, to))
}

/// The statuses reachable from `from`, in table order.
pub fn next_statuses(from: LessonStatus) -> Vec<LessonStatus> {
    TRANSITIONS
        .iter()
        .filter(|(f, _)| *f == from)
        .map(|(_, to)| *to)
        .collect()
}

/// Refuses a move that is not in the table, naming the moves that are.
///
/// # Errors
/// [`Error::Invalid`] (field `status`) when `from → to` is not allowed.
pub fn check(from: LessonStatus, to: LessonStatus) -> Result<()> {
    if is_allowed(from, to) {
        return Ok(());
    }
    let next: Vec<&str> = next_statuses(from)
        .into_iter()
        .map(LessonStatus::as_str)
        .collect();
    let allowed = if next.is_empty() {
        "none".to_owned()
    } else {
        next.join(", ")
    };
    Err(Error::invalid(
        "status",
        format!(
            "a lesson cannot go from {} to {}; from {} it can go to: {allowed}",
            from.as_str(),
            to.as_str(),
            from.as_str()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CurationMode;

    #[test]
    fn every_state_appears_in_the_table() {
        for status in LessonStatus::ALL {
            let touched = TRANSITIONS
                .iter()
                .any(|(f, t)| *f == status || *t == status);
            assert!(touched, "{status:?} is in no transition");
        }
    }

    #[test]
    fn the_table_has_no_self_loops_or_repeats() {
        for (i, pair) in TRANSITIONS.iter().enumerate() {
            assert_ne!(pair.0, pair.1, "{pair:?}");
            assert!(!TRANSITIONS[..i].contains(pair), "{pair:?} twice");
        }
    }

    #[test]
    fn sensitive_is_reachable_from_everywhere_and_leads_nowhere() {
        for status in LessonStatus::ALL.into_iter().filter(|s| *s != Sensitive) {
            assert!(is_allowed(status, Sensitive), "{status:?}");
        }
        assert!(next_statuses(Sensitive).is_empty());
        assert_eq!(next_statuses(Archived), vec![Sensitive]);
    }

    #[test]
    fn nothing_but_promotion_and_approval_enters_a_retrievable_state() {
        for (from, to) in TRANSITIONS {
            if to.is_retrievable(CurationMode::Auto) && !from.is_retrievable(CurationMode::Auto) {
                assert!(
                    matches!((from, to), (_, Approved) | (Suppressed, Trial)),
                    "{from:?} -> {to:?}"
                );
            }
        }
    }

    #[test]
    fn refusals_name_the_allowed_moves() {
        let err = check(Rejected, Approved).unwrap_err().to_string();
        assert!(err.contains("from rejected to approved"), "{err}");
        assert!(err.contains("archived, sensitive"), "{err}");
        let err = check(Sensitive, Approved).unwrap_err().to_string();
        assert!(err.contains("can go to: none"), "{err}");
        check(NeedsReview, Approved).unwrap();
    }
}
