//! `/v1/episodes` and `/v1/graph/…`: episodes (seed 001) and the causal graph they build.

use super::Path;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use lore_core::SkillPath;
use lore_core::graph::PathMode;
use lore_core::id::EpisodeId;
use lore_core::model::{Episode, EpisodeOutcome};
use lore_engine::{
    Attribution, CausalPath, DecisionSequence, EpisodePurgeReport, EpisodeQuery, EpisodeReceipt,
    EpisodeSummary, EpisodeView, Page, PatternQuery, Patterns, SimilarDecisions, WhatIf,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Body, Caller, Params, PurgeBody, page};
use crate::auth::Role;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddQuery {
    #[serde(default)]
    replace: bool,
}

pub async fn add(
    caller: Caller,
    Params(q): Params<AddQuery>,
    Body(body): Body<Value>,
) -> Result<(StatusCode, Json<EpisodeReceipt>), ApiError> {
    record(caller, Episode::from_json(body, None)?, q.replace).await
}

/// A session log in Lore's markdown, as `lore episode extract` reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLog {
    log: String,
    #[serde(default)]
    skill: Option<SkillPath>,
}

/// `POST /v1/episodes/extract`: what an agent runtime calls at the end of a session.
pub async fn extract(
    caller: Caller,
    Params(q): Params<AddQuery>,
    Body(body): Body<SessionLog>,
) -> Result<(StatusCode, Json<EpisodeReceipt>), ApiError> {
    let episode = lore_engine::extract::episode_from_markdown(&body.log, body.skill.as_ref())?;
    record(caller, episode, q.replace).await
}

async fn record(
    caller: Caller,
    episode: Episode,
    replace: bool,
) -> Result<(StatusCode, Json<EpisodeReceipt>), ApiError> {
    let receipt = caller.run(move |e| e.add_episode(episode, replace)).await?;
    let status = if receipt.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(receipt)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    outcome: Option<EpisodeOutcome>,
    since: Option<DateTime<Utc>>,
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Page<EpisodeSummary>>, ApiError> {
    let request = page(q.limit, q.offset);
    let query = EpisodeQuery {
        skill: q.skill,
        outcome: q.outcome,
        since: q.since,
    };
    Ok(Json(
        caller
            .run(move |e| e.episodes_page(&query, request))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetQuery {
    budget: Option<usize>,
}

pub async fn get(
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<BudgetQuery>,
) -> Result<Json<EpisodeView>, ApiError> {
    let id = EpisodeId::parse(&id)?;
    Ok(Json(
        caller.run(move |e| e.episode_view(&id, q.budget)).await?,
    ))
}

/// The episodes of one session (seed 001's `Get-Episode -SessionId`), oldest first.
#[derive(Debug, Serialize)]
pub struct SessionEpisodes {
    session: String,
    items: Vec<EpisodeView>,
}

pub async fn by_session(
    caller: Caller,
    Path(session): Path<String>,
    Params(q): Params<BudgetQuery>,
) -> Result<Json<SessionEpisodes>, ApiError> {
    let name = session.clone();
    let items = caller
        .run(move |e| e.session_episodes(&name, q.budget))
        .await?;
    Ok(Json(SessionEpisodes { session, items }))
}

pub async fn purge(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<PurgeBody>,
) -> Result<Json<EpisodePurgeReport>, ApiError> {
    caller.require(Role::Reviewer)?;
    let id = EpisodeId::parse(&id)?;
    let why = Attribution::new(None, b.reason);
    Ok(Json(caller.run(move |e| e.purge_episode(&id, &why)).await?))
}

pub async fn decisions(
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<BudgetQuery>,
) -> Result<Json<DecisionSequence>, ApiError> {
    let id = EpisodeId::parse(&id)?;
    Ok(Json(
        caller
            .run(move |e| e.decision_sequence(&id, q.budget))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathQuery {
    from: String,
    to: String,
    #[serde(default)]
    mode: PathMode,
    budget: Option<usize>,
}

pub async fn path(
    caller: Caller,
    Params(q): Params<PathQuery>,
) -> Result<Json<CausalPath>, ApiError> {
    Ok(Json(
        caller
            .run(move |e| e.causal_path(&q.from, &q.to, q.mode, q.budget))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatIfQuery {
    episode: String,
    decision: String,
    alternative: String,
    min_overlap: Option<f64>,
    budget: Option<usize>,
}

pub async fn what_if(
    caller: Caller,
    Params(q): Params<WhatIfQuery>,
) -> Result<Json<WhatIf>, ApiError> {
    let episode = EpisodeId::parse(&q.episode)?;
    Ok(Json(
        caller
            .run(move |e| {
                e.what_if(
                    &episode,
                    &q.decision,
                    &q.alternative,
                    q.min_overlap,
                    q.budget,
                )
            })
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarQuery {
    context: String,
    #[serde(default = "five")]
    limit: usize,
    budget: Option<usize>,
}

fn five() -> usize {
    5
}

pub async fn similar(
    caller: Caller,
    Params(q): Params<SimilarQuery>,
) -> Result<Json<SimilarDecisions>, ApiError> {
    Ok(Json(
        caller
            .run(move |e| e.similar_decisions(&q.context, q.limit, q.budget))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternsQuery {
    min_success_rate: Option<f64>,
    min_occurrences: Option<u64>,
    limit: Option<usize>,
    budget: Option<usize>,
}

pub async fn patterns(
    caller: Caller,
    Params(q): Params<PatternsQuery>,
) -> Result<Json<Patterns>, ApiError> {
    let base = PatternQuery::patterns();
    let query = PatternQuery {
        min_success_rate: q.min_success_rate.or(base.min_success_rate),
        min_occurrences: q.min_occurrences.unwrap_or(base.min_occurrences),
        limit: q.limit.unwrap_or(base.limit),
        ..base
    };
    Ok(Json(
        caller.run(move |e| e.patterns(query, q.budget)).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AntiPatternsQuery {
    max_success_rate: Option<f64>,
    min_occurrences: Option<u64>,
    limit: Option<usize>,
    budget: Option<usize>,
}

pub async fn anti_patterns(
    caller: Caller,
    Params(q): Params<AntiPatternsQuery>,
) -> Result<Json<Patterns>, ApiError> {
    let base = PatternQuery::anti_patterns();
    let query = PatternQuery {
        max_success_rate: q.max_success_rate.or(base.max_success_rate),
        min_occurrences: q.min_occurrences.unwrap_or(base.min_occurrences),
        limit: q.limit.unwrap_or(base.limit),
        ..base
    };
    Ok(Json(
        caller.run(move |e| e.patterns(query, q.budget)).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// `json` (seed 001's `causal-graph.json`, the default) or `dot`.
    format: Option<String>,
}

/// `GET /v1/graph/export[?format=json|dot]`: the causal graph inside the caller's scope.
pub async fn export(
    caller: Caller,
    Params(q): Params<ExportQuery>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    use lore_core::graph_export::GraphFormat;
    let format = match q.format.as_deref() {
        None => GraphFormat::Json,
        Some(raw) => GraphFormat::parse(raw)?,
    };
    let text = caller.run(move |e| e.causal_graph_export(format)).await?;
    let content_type = match format {
        GraphFormat::Json => "application/json",
        GraphFormat::Dot => "text/vnd.graphviz; charset=utf-8",
    };
    Ok(([(axum::http::header::CONTENT_TYPE, content_type)], text).into_response())
}
