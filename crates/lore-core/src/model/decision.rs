//! Resolved human-in-the-loop decisions (seed 004's decision corpus): what the situation was,
//! what a person chose to do, why, and how it turned out.
//!
//! A decision is curated like a lesson, through the same states and the same allowed moves
//! ([`crate::lifecycle`]): it enters `needs_review`, and only an `approved` one is ever recalled,
//! so one person's unusual call does not become everyone's precedent until someone confirms it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::LessonStatus;
use crate::id::DecisionId;
use crate::scope::SkillPath;

/// One resolved decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// Unique ID.
    pub id: DecisionId,
    /// The skill whose agents meet such situations.
    pub skill: SkillPath,
    /// The situation that needed a person: what was asked, what was at stake.
    pub situation: String,
    /// What the person decided to do.
    pub action: String,
    /// Why.
    pub rationale: String,
    /// How it turned out, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// What it resolved (an execution, a review item, a ticket), when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolves: Option<String>,
    /// Its curation state; only `approved` is retrievable.
    pub status: LessonStatus,
    /// Who decided: the credential that wrote it, never a name in a request body.
    pub decided_by: String,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}
