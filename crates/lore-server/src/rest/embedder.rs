//! The embedder's lifecycle over REST (seed 002's fine-tune): reviewers read runs, checkpoints
//! and the active embedder; admins train, resume, activate, roll back and cancel. Destructive
//! operations need `actor`, `confirm: true` and a `reason` in the body, and the audit entry names
//! the credential. A store without tuning answers 501 `unsupported`.

use super::Path;
use axum::Json;
use axum::http::StatusCode;
use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::ports::tuning::{Checkpoint, TunePlan, TuneRun};
use lore_engine::{ActiveEmbedder, Admin, Preflight, Switch};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, PageQuery, Params, window};
use crate::auth::Role;
use crate::error::ApiError;

/// The guard every destructive operation's body carries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminBody {
    #[serde(default)]
    actor: String,
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: String,
}

impl From<AdminBody> for Admin {
    fn from(b: AdminBody) -> Self {
        Admin {
            actor: b.actor,
            confirm: b.confirm,
            reason: b.reason,
        }
    }
}

pub async fn active(caller: Caller) -> Result<Json<ActiveEmbedder>, ApiError> {
    caller.require(Role::Reviewer)?;
    Ok(Json(caller.run(|e| e.active_embedder()).await?))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanBody {
    #[serde(default)]
    plan: Option<TunePlan>,
    #[serde(default)]
    actor: Option<String>,
}

/// A body read as `T` only when it is a JSON object: serde would also read a struct from an
/// array of its fields in order, which the OpenAPI document does not promise.
fn object<T: serde::de::DeserializeOwned>(body: serde_json::Value) -> Result<T, ApiError> {
    if !body.is_object() {
        return Err(lore_core::Error::invalid("body", "expected a JSON object").into());
    }
    Ok(crate::input::from_value(body, crate::input::Place::Body)?)
}

pub async fn preflight(
    caller: Caller,
    Body(b): Body<serde_json::Value>,
) -> Result<Json<Preflight>, ApiError> {
    caller.require(Role::Reviewer)?;
    let b: PlanBody = object(b)?;
    Ok(Json(
        caller
            .run(move |e| e.tuning_preflight(&b.plan.unwrap_or_else(|| e.tuning_plan())))
            .await?,
    ))
}

pub async fn start(
    caller: Caller,
    Body(b): Body<serde_json::Value>,
) -> Result<(StatusCode, Json<TuneRun>), ApiError> {
    caller.require(Role::Admin)?;
    let b: PlanBody = object(b)?;
    let run = caller
        .run(move |e| {
            let plan = b.plan.unwrap_or_else(|| e.tuning_plan());
            e.start_tuning(plan, b.actor.as_deref())
        })
        .await?;
    Ok((StatusCode::CREATED, Json(run)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    limit: Option<usize>,
    offset: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Runs {
    runs: Vec<TuneRun>,
    total: usize,
}

pub async fn runs(caller: Caller, Params(q): Params<RunsQuery>) -> Result<Json<Runs>, ApiError> {
    caller.require(Role::Reviewer)?;
    let (runs, total) = caller
        .run(move |e| e.tuning_runs(q.limit.unwrap_or(50), q.offset.unwrap_or(0)))
        .await?;
    Ok(Json(Runs { runs, total }))
}

pub async fn run(caller: Caller, Path(id): Path<String>) -> Result<Json<TuneRun>, ApiError> {
    caller.require(Role::Reviewer)?;
    let id = TuneRunId::parse(&id)?;
    Ok(Json(caller.run(move |e| e.tuning_status(Some(&id))).await?))
}

pub async fn resume(caller: Caller, Path(id): Path<String>) -> Result<Json<TuneRun>, ApiError> {
    caller.require(Role::Admin)?;
    let id = TuneRunId::parse(&id)?;
    Ok(Json(caller.run(move |e| e.resume_tuning(&id)).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    #[serde(default)]
    run: Option<TuneRunId>,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Serialize)]
pub struct Cancelled {
    cancelled: Option<TuneRunId>,
}

pub async fn cancel(
    caller: Caller,
    Body(b): Body<serde_json::Value>,
) -> Result<Json<Cancelled>, ApiError> {
    caller.require(Role::Admin)?;
    let b: CancelBody = object(b)?;
    let admin = Admin {
        actor: b.actor,
        confirm: b.confirm,
        reason: b.reason,
    };
    let cancelled = caller
        .run(move |e| e.cancel_tuning(b.run.as_ref(), &admin))
        .await?;
    Ok(Json(Cancelled { cancelled }))
}

#[derive(Debug, Serialize)]
pub struct Checkpoints {
    checkpoints: Vec<Checkpoint>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn checkpoints(
    caller: Caller,
    Params(q): Params<PageQuery>,
) -> Result<Json<Checkpoints>, ApiError> {
    caller.require(Role::Reviewer)?;
    let all = caller.run(|e| e.checkpoints()).await?;
    let (checkpoints, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Checkpoints {
        checkpoints,
        next_offset,
    }))
}

pub async fn activate(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<serde_json::Value>,
) -> Result<Json<Switch>, ApiError> {
    caller.require(Role::Admin)?;
    let b: AdminBody = object(b)?;
    let id = CheckpointId::parse(&id)?;
    let admin = Admin::from(b);
    Ok(Json(
        caller
            .run(move |e| e.activate_checkpoint(&id, &admin))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollbackBody {
    /// A checkpoint ID, or `base`.
    to: String,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    confirm: bool,
    #[serde(default)]
    reason: String,
}

pub async fn rollback(
    caller: Caller,
    Body(b): Body<serde_json::Value>,
) -> Result<Json<Switch>, ApiError> {
    caller.require(Role::Admin)?;
    let b: RollbackBody = object(b)?;
    let to = match b.to.as_str() {
        "base" => None,
        id => Some(CheckpointId::parse(id)?),
    };
    let admin = Admin {
        actor: b.actor,
        confirm: b.confirm,
        reason: b.reason,
    };
    Ok(Json(
        caller
            .run(move |e| e.rollback_embedder(to.as_ref(), &admin))
            .await?,
    ))
}
