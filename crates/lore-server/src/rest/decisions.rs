//! The decision corpus over REST: a person records what they decided (reviewer role: an
//! agent asks, a person answers), reviewers move decisions along the lifecycle, and agents
//! list and recall them. Who decided and who reviewed come from the credential.

use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::id::DecisionId;
use lore_core::model::{DecisionRecord, LessonStatus};
use lore_engine::{DecisionQuery, DecisionResult, NewDecision};
use serde::{Deserialize, Serialize};

use super::knowledge::RecallBody;
use super::{Body, Caller, Params, window};
use crate::auth::Role;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordBody {
    skill: Option<SkillPath>,
    #[serde(default)]
    situation: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    rationale: String,
    outcome: Option<String>,
    resolves: Option<String>,
}

pub async fn record(
    caller: Caller,
    Body(b): Body<RecordBody>,
) -> Result<(StatusCode, Json<DecisionRecord>), ApiError> {
    caller.require(Role::Reviewer)?;
    let new = NewDecision {
        skill: b.skill,
        situation: b.situation,
        action: b.action,
        rationale: b.rationale,
        outcome: b.outcome,
        resolves: b.resolves,
    };
    let d = caller.run(move |e| e.record_decision(new)).await?;
    Ok((StatusCode::CREATED, Json(d)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewBody {
    ids: Vec<DecisionId>,
    status: LessonStatus,
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Serialize)]
pub struct Decisions {
    decisions: Vec<DecisionRecord>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn review(
    caller: Caller,
    Body(b): Body<ReviewBody>,
) -> Result<Json<Decisions>, ApiError> {
    caller.require(Role::Reviewer)?;
    let decisions = caller
        .run(move |e| e.review_decisions(&b.ids, b.status, &b.reason))
        .await?;
    Ok(Json(Decisions {
        decisions,
        next_offset: None,
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    status: Option<LessonStatus>,
    /// Paged like every other list: at most this many, `1..=500`.
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Decisions>, ApiError> {
    let (skill, status) = (q.skill, q.status);
    let all = caller
        .run(move |e| e.list_decisions(skill.as_ref(), status))
        .await?;
    let (decisions, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Decisions {
        decisions,
        next_offset,
    }))
}

pub async fn recall(
    caller: Caller,
    Body(b): Body<RecallBody>,
) -> Result<Json<DecisionResult>, ApiError> {
    let query = DecisionQuery {
        text: b.query,
        skill: b.skill,
        limit: b.limit,
        budget: b.budget,
        explain: b.explain,
    };
    Ok(Json(caller.run(move |e| e.recall_decisions(&query)).await?))
}
