//! Digests and evaluation runs over REST (seed 004's wiki and training loop). Building digests,
//! defining sets and running them are reviewers' acts: a digest reaches agents' contexts without
//! a review of its own, and a run is a record the team reads as evidence. Reading is open to
//! every role. Who built, defined or ran something comes from the credential.

use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::model::{Digest, EvalQuestion, EvalRun, EvalSet};
use lore_engine::{DigestReport, EvalRunRequest, EvalTrend, NewEvalSet};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Body, Caller, Params};
use crate::auth::Role;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildBody {
    skill: Option<SkillPath>,
    #[serde(default)]
    force: bool,
}

/// A body whose fields are all optional, taken from a JSON object only: serde would otherwise
/// read `[null, null]` as one, a body the API does not promise to accept.
fn object<T: DeserializeOwned>(map: Map<String, Value>) -> Result<T, ApiError> {
    Ok(crate::input::from_value(
        Value::Object(map),
        crate::input::Place::Body,
    )?)
}

pub async fn build(
    caller: Caller,
    Body(b): Body<Map<String, Value>>,
) -> Result<Json<DigestReport>, ApiError> {
    caller.require(Role::Reviewer)?;
    let b: BuildBody = object(b)?;
    let report = caller
        .run(move |e| e.build_digests(b.skill.as_ref(), b.force))
        .await?;
    Ok(Json(report))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillQuery {
    skill: Option<SkillPath>,
}

#[derive(Debug, Serialize)]
pub struct Digests {
    digests: Vec<Digest>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<SkillQuery>,
) -> Result<Json<Digests>, ApiError> {
    let digests = caller.run(move |e| e.digests(q.skill.as_ref())).await?;
    Ok(Json(Digests { digests }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    skill: SkillPath,
    limit: Option<usize>,
}

pub async fn history(
    caller: Caller,
    Params(q): Params<HistoryQuery>,
) -> Result<Json<Digests>, ApiError> {
    let digests = caller
        .run(move |e| e.digest_history(&q.skill, q.limit.unwrap_or(10)))
        .await?;
    Ok(Json(Digests { digests }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetBody {
    skill: Option<SkillPath>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    questions: Vec<EvalQuestion>,
}

pub async fn define(
    caller: Caller,
    Body(b): Body<SetBody>,
) -> Result<(StatusCode, Json<EvalSet>), ApiError> {
    caller.require(Role::Reviewer)?;
    let new = NewEvalSet {
        skill: b.skill,
        name: b.name,
        questions: b.questions,
    };
    let set = caller.run(move |e| e.define_eval_set(new)).await?;
    Ok((StatusCode::CREATED, Json(set)))
}

#[derive(Debug, Serialize)]
pub struct Sets {
    sets: Vec<EvalSet>,
}

pub async fn sets(caller: Caller, Params(q): Params<SkillQuery>) -> Result<Json<Sets>, ApiError> {
    let sets = caller.run(move |e| e.eval_sets(q.skill.as_ref())).await?;
    Ok(Json(Sets { sets }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    skill: Option<SkillPath>,
    set: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Runs {
    runs: Vec<EvalRun>,
}

pub async fn run(
    caller: Caller,
    Body(b): Body<Map<String, Value>>,
) -> Result<(StatusCode, Json<Runs>), ApiError> {
    caller.require(Role::Reviewer)?;
    let b: RunBody = object(b)?;
    let request = EvalRunRequest {
        skill: b.skill,
        set: b.set,
    };
    let runs = caller.run(move |e| e.run_evals(&request)).await?;
    Ok((StatusCode::CREATED, Json(Runs { runs })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    skill: Option<SkillPath>,
    set: Option<String>,
}

pub async fn runs(caller: Caller, Params(q): Params<RunsQuery>) -> Result<Json<Runs>, ApiError> {
    let runs = caller
        .run(move |e| e.eval_runs(q.skill.as_ref(), q.set.as_deref()))
        .await?;
    Ok(Json(Runs { runs }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrendQuery {
    skill: Option<SkillPath>,
    recent: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Trends {
    trends: Vec<EvalTrend>,
}

pub async fn trends(
    caller: Caller,
    Params(q): Params<TrendQuery>,
) -> Result<Json<Trends>, ApiError> {
    let trends = caller
        .run(move |e| e.eval_trends(q.skill.as_ref(), q.recent))
        .await?;
    Ok(Json(Trends { trends }))
}
