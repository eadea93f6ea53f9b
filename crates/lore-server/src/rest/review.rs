//! `/v1/review`: the queue of lessons waiting for a person, and the decisions on them.
//!
//! Both need the reviewer role. The queue is redacted by the Engine (a review screen never
//! shows the secret it asks about); decisions are batches, all or none, each audited.

use super::Path;
use axum::Json;
use lore_core::SkillPath;
use lore_core::model::Lesson;
use lore_engine::{Page, ReviewItem};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, Params, page};
use crate::auth::Role;
use crate::error::ApiError;
use crate::review::{Decide, Unlink, statuses};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueQuery {
    skill: Option<SkillPath>,
    /// Comma-separated statuses; `needs_review` when absent.
    status: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn queue(
    caller: Caller,
    Params(q): Params<QueueQuery>,
) -> Result<Json<Page<ReviewItem>>, ApiError> {
    caller.require(Role::Reviewer)?;
    let statuses = q
        .status
        .as_deref()
        .map(|raw| statuses(raw.split(',')))
        .transpose()?;
    let request = page(q.limit, q.offset);
    if request.limit == 0 || request.limit > lore_engine::MAX_PAGE {
        let why = format!(
            "{} is outside 1 to {}",
            request.limit,
            lore_engine::MAX_PAGE
        );
        return Err(lore_core::Error::invalid("limit", why).into());
    }
    let items = caller
        .run(move |e| e.review_queue(q.skill.as_ref(), statuses))
        .await?;
    let end = request.offset.saturating_add(request.limit);
    let next_offset = (items.len() > end).then_some(end);
    let items = items
        .into_iter()
        .skip(request.offset)
        .take(request.limit)
        .collect();
    Ok(Json(Page { items, next_offset }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    ids: Vec<String>,
    superseded_by: Option<String>,
    #[serde(default)]
    reason: String,
}

/// The lessons a decision moved.
#[derive(Debug, Serialize)]
pub struct Decided {
    lessons: Vec<Lesson>,
}

/// `POST /v1/review/supersede`: its own route so that the document can require
/// `superseded_by` here and refuse it for the other decisions.
pub async fn supersede(
    caller: Caller,
    body: Body<DecisionBody>,
) -> Result<Json<Decided>, ApiError> {
    decide(caller, Path("supersede".to_owned()), body).await
}

pub async fn decide(
    caller: Caller,
    Path(decision): Path<String>,
    Body(b): Body<DecisionBody>,
) -> Result<Json<Decided>, ApiError> {
    caller.require(Role::Reviewer)?;
    let decide = Decide::parse(&decision, &b.ids, b.superseded_by.as_deref(), b.reason)?;
    let lessons = caller.run(move |e| decide.apply(e)).await?;
    let lessons = lessons
        .iter()
        .map(lore_core::sensitive::redact_lesson)
        .collect();
    Ok(Json(Decided { lessons }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnlinkBody {
    ids: Vec<String>,
    #[serde(default)]
    reason: String,
}

/// `POST /v1/review/unlink`: takes the conflict (or near-duplicate) link off two lessons, so
/// both are recalled; their states stay.
pub async fn unlink(caller: Caller, Body(b): Body<UnlinkBody>) -> Result<Json<Decided>, ApiError> {
    caller.require(Role::Reviewer)?;
    let unlink = Unlink::parse(&b.ids, b.reason)?;
    let lessons = caller.run(move |e| unlink.apply(e)).await?;
    let lessons = lessons
        .iter()
        .map(lore_core::sensitive::redact_lesson)
        .collect();
    Ok(Json(Decided { lessons }))
}
