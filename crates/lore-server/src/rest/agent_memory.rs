//! Agents' own memory over REST: core blocks, archival passages and the recall log, the same
//! operations the self-editing MCP tools call.

use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::model::MemoryEntry;
use lore_engine::{CoreEdit, CoreMemory, MemoryHit};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, Params};
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillQuery {
    skill: SkillPath,
}

pub async fn core(
    caller: Caller,
    Params(q): Params<SkillQuery>,
) -> Result<Json<CoreMemory>, ApiError> {
    Ok(Json(caller.run(move |e| e.core_memory(&q.skill)).await?))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Replace,
    Append,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreWrite {
    skill: SkillPath,
    block: String,
    text: String,
    mode: Option<Mode>,
}

pub async fn write_core(
    caller: Caller,
    Body(b): Body<CoreWrite>,
) -> Result<Json<CoreMemory>, ApiError> {
    let edit = match b.mode {
        Some(Mode::Append) => CoreEdit::Append,
        _ => CoreEdit::Replace,
    };
    let core = caller
        .run(move |e| e.write_core_memory(&b.skill, &b.block, &b.text, edit))
        .await?;
    Ok(Json(core))
}

/// Entries found or read.
#[derive(Debug, Serialize)]
pub struct Hits {
    hits: Vec<MemoryHit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchivalQuery {
    /// Words to search for; without them, the newest passages are listed.
    q: Option<String>,
    skill: Option<SkillPath>,
    #[serde(default = "five")]
    limit: usize,
}

fn five() -> usize {
    5
}

pub async fn search_archival(
    caller: Caller,
    Params(q): Params<ArchivalQuery>,
) -> Result<Json<Hits>, ApiError> {
    let hits = caller
        .run(move |e| match q.q.as_deref() {
            Some(words) => e.archival_search(q.skill.as_ref(), words, q.limit),
            None => e.archival_list(q.skill.as_ref(), q.limit),
        })
        .await?;
    Ok(Json(Hits { hits }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchivalWrite {
    skill: SkillPath,
    text: String,
    #[serde(default)]
    tags: Vec<String>,
}

pub async fn write_archival(
    caller: Caller,
    Body(b): Body<ArchivalWrite>,
) -> Result<(StatusCode, Json<MemoryEntry>), ApiError> {
    let entry = caller
        .run(move |e| e.archival_write(&b.skill, &b.text, &b.tags))
        .await?;
    Ok((StatusCode::CREATED, Json(entry)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    skill: SkillPath,
    session: Option<String>,
    q: Option<String>,
    #[serde(default = "ten")]
    limit: usize,
}

fn ten() -> usize {
    10
}

pub async fn read_log(caller: Caller, Params(q): Params<LogQuery>) -> Result<Json<Hits>, ApiError> {
    let hits = caller
        .run(move |e| e.recall_read(&q.skill, q.session.as_deref(), q.q.as_deref(), q.limit))
        .await?;
    Ok(Json(Hits { hits }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogWrite {
    skill: SkillPath,
    session: String,
    speaker: Option<String>,
    text: String,
}

pub async fn write_log(
    caller: Caller,
    Body(b): Body<LogWrite>,
) -> Result<(StatusCode, Json<MemoryEntry>), ApiError> {
    let entry = caller
        .run(move |e| e.recall_write(&b.skill, &b.session, b.speaker.as_deref(), &b.text))
        .await?;
    Ok((StatusCode::CREATED, Json(entry)))
}
