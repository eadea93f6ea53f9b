//! The review decisions both protocols offer, as one enum over the Engine's review calls, and
//! the parsing of their arguments.
//!
//! REST (`POST /v1/review/{decision}`, `POST /v1/review/unlink`) and MCP (`review_lessons`,
//! `unlink_lessons`) parse a decision and hand it here, so the two cannot drift on what a name
//! means or which input is refused. Each decision is a batch, all or none:
//! the Engine refuses the whole list before writing when one lesson cannot move.

use std::collections::BTreeSet;

use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::{Error, Result};
use lore_engine::Attribution;
use lore_engine::Engine;

/// What a reviewer decides about a batch of lessons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Use them (and let a proposed successor supersede what it replaces).
    Approve,
    /// Wrong or noise: kept on record, never retrieved.
    Reject,
    /// A real outcome, not to be generalized.
    Exception,
    /// Holds sensitive data: never in a prompt again, can be purged.
    Sensitive,
    /// Replaced by another lesson of the same skill.
    Supersede,
}

impl Decision {
    /// Every decision's wire name.
    pub const NAMES: &str = "approve, reject, exception, sensitive or supersede";

    /// Parses a wire name.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the choices.
    pub fn parse(raw: &str) -> Result<Self> {
        Ok(match raw {
            "approve" => Self::Approve,
            "reject" => Self::Reject,
            "exception" => Self::Exception,
            "sensitive" => Self::Sensitive,
            "supersede" => Self::Supersede,
            _ => {
                let why = format!("{raw:?}; expected {}", Self::NAMES);
                return Err(Error::invalid("decision", why));
            }
        })
    }

    /// Applies the decision to `ids`; `superseded_by` is required for [`Decision::Supersede`]
    /// and refused otherwise. Returns the lessons whose status changed.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a missing or stray `superseded_by`, otherwise the Engine's review
    /// errors (not found outside the scope, invalid move, conflict). Nothing changes on error.
    pub fn apply(
        self,
        engine: &Engine,
        ids: &[LessonId],
        superseded_by: Option<&LessonId>,
        why: &Attribution,
    ) -> Result<Vec<Lesson>> {
        match (self, superseded_by) {
            (Self::Supersede, Some(by)) => engine.supersede(ids, by, why),
            (Self::Supersede, None) => Err(Error::invalid(
                "superseded_by",
                "supersede needs the ID of the lesson that replaces them",
            )),
            (_, Some(_)) => Err(Error::invalid(
                "superseded_by",
                "only the supersede decision takes it",
            )),
            (Self::Approve, None) => engine.approve(ids, why),
            (Self::Reject, None) => engine.reject(ids, why),
            (Self::Exception, None) => engine.mark_one_time_exception(ids, why),
            (Self::Sensitive, None) => engine.mark_sensitive(ids, why),
        }
    }
}

/// A decision on a batch, parsed from the wire and ready to apply.
#[derive(Clone, Debug)]
pub struct Decide {
    decision: Decision,
    ids: Vec<LessonId>,
    superseded_by: Option<LessonId>,
    why: Attribution,
}

impl Decide {
    /// Parses a decision's name, the lesson IDs and the successor, all or none. Who decided is
    /// the Engine handle's principal (the caller's credential), never a name from the request.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an unknown decision or a malformed ID.
    pub fn parse(
        decision: &str,
        ids: &[String],
        superseded_by: Option<&str>,
        reason: String,
    ) -> Result<Self> {
        Ok(Self {
            decision: Decision::parse(decision)?,
            ids: ids
                .iter()
                .map(|id| LessonId::parse(id))
                .collect::<Result<_>>()?,
            superseded_by: superseded_by.map(LessonId::parse).transpose()?,
            why: Attribution::new(None, reason),
        })
    }

    /// Applies it through `engine`; see [`Decision::apply`].
    ///
    /// # Errors
    /// As [`Decision::apply`]. Nothing changes on error.
    pub fn apply(&self, engine: &Engine) -> Result<Vec<Lesson>> {
        self.decision
            .apply(engine, &self.ids, self.superseded_by.as_ref(), &self.why)
    }
}

/// A person's unlinking of two lessons, parsed from the wire and ready to apply.
#[derive(Clone, Debug)]
pub struct Unlink {
    pair: [LessonId; 2],
    why: Attribution,
}

impl Unlink {
    /// Parses exactly two distinct lesson IDs. Who decided is the Engine handle's principal.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a count other than two, a malformed ID or one ID named twice.
    pub fn parse(ids: &[String], reason: String) -> Result<Self> {
        let [a, b] = ids else {
            let why = format!("{} given; unlink takes the two linked lessons", ids.len());
            return Err(Error::invalid("ids", why));
        };
        let pair = [LessonId::parse(a)?, LessonId::parse(b)?];
        if pair[0] == pair[1] {
            return Err(Error::invalid("ids", format!("{a} is named twice")));
        }
        Ok(Self {
            pair,
            why: Attribution::new(None, reason),
        })
    }

    /// Takes the link off through `engine`; see [`Engine::unlink`]. Returns both lessons.
    ///
    /// # Errors
    /// As [`Engine::unlink`]. Nothing changes on error.
    pub fn apply(&self, engine: &Engine) -> Result<Vec<Lesson>> {
        Ok(engine
            .unlink(&self.pair[0], &self.pair[1], &self.why)?
            .to_vec())
    }
}

/// Parses a list of lesson statuses (`["approved", "trial"]`), all or none.
///
/// # Errors
/// [`Error::Invalid`] for the first unknown status.
pub fn statuses<'a>(raw: impl IntoIterator<Item = &'a str>) -> Result<BTreeSet<LessonStatus>> {
    raw.into_iter()
        .map(|s| LessonStatus::parse(s.trim()))
        .collect()
}
