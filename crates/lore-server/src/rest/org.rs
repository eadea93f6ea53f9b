//! `/v1/org`: organization memory (seed 002) — the members Lore has seen, propagation of a
//! member's lesson, and the org pool's cycle.
//!
//! The pool needs the reviewer role here and a person in the Engine; what it writes waits for
//! review, and no field of any body can change that: the bodies refuse unknown fields, and the
//! Engine has no way to approve an org lesson but a person's review decision.

use super::Path;
use axum::Json;
use lore_core::id::LessonId;
use lore_core::org::{Member, Propagation};
use lore_engine::{PoolReport, Propagated};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, PageQuery, Params, window};
use crate::auth::Role;
use crate::error::ApiError;

/// The members, as `lore org members` prints them.
#[derive(Debug, Serialize)]
pub struct Members {
    members: Vec<Member>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn members(
    caller: Caller,
    Params(q): Params<PageQuery>,
) -> Result<Json<Members>, ApiError> {
    caller.require(Role::Reviewer)?;
    let all = caller.run(|e| e.members()).await?;
    let (members, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Members {
        members,
        next_offset,
    }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolBody {
    /// Report what would be proposed without writing it.
    #[serde(default)]
    dry_run: bool,
}

pub async fn pool(caller: Caller, Body(b): Body<PoolBody>) -> Result<Json<PoolReport>, ApiError> {
    caller.require(Role::Reviewer)?;
    let report = caller.run(move |e| e.org_pool(b.dry_run)).await?;
    Ok(Json(report))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropagateBody {
    /// `role` or `department`; the configured strategy when absent.
    strategy: Option<String>,
}

pub async fn propagate(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<PropagateBody>,
) -> Result<Json<Propagated>, ApiError> {
    let id = LessonId::parse(&id)?;
    let strategy = b.strategy.as_deref().map(Propagation::parse).transpose()?;
    let done = caller.run(move |e| e.propagate(&id, strategy)).await?;
    Ok(Json(done))
}
