//! `/v1/episodes` and `/v1/graph/export`: recording, reading and listing episodes and exporting
//! the causal graph they build (the graph's questions are in the catalogue).

use super::Path;
use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::id::EpisodeId;
use lore_core::model::Episode;
use lore_engine::{EpisodeReceipt, EpisodeView};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Body, Caller, Params};
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
