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

use super::{Body, Caller, Params, window};
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
    limit: Option<usize>,
    offset: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Digests {
    digests: Vec<Digest>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<SkillQuery>,
) -> Result<Json<Digests>, ApiError> {
    let skill = q.skill;
    let all = caller.run(move |e| e.digests(skill.as_ref())).await?;
    let (digests, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Digests {
        digests,
        next_offset,
    }))
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
    Ok(Json(Digests {
        digests,
        next_offset: None,
    }))
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
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn sets(caller: Caller, Params(q): Params<SkillQuery>) -> Result<Json<Sets>, ApiError> {
    let skill = q.skill;
    let all = caller.run(move |e| e.eval_sets(skill.as_ref())).await?;
    let (sets, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Sets { sets, next_offset }))
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
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
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
    let runs = Runs {
        runs,
        next_offset: None,
    };
    Ok((StatusCode::CREATED, Json(runs)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    skill: Option<SkillPath>,
    set: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn runs(caller: Caller, Params(q): Params<RunsQuery>) -> Result<Json<Runs>, ApiError> {
    let (skill, set) = (q.skill, q.set);
    let all = caller
        .run(move |e| e.eval_runs(skill.as_ref(), set.as_deref()))
        .await?;
    let (runs, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Runs { runs, next_offset }))
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
