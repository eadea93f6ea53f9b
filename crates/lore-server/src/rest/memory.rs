//! The assembled prompt.

use axum::Json;
use lore_core::SkillPath;
use lore_engine::prompt::AssembledPrompt;
use serde::Deserialize;

use super::{Caller, Params, Path};
use crate::error::ApiError;

/// What a prompt is for: with a task, its memory is the layered context for that task, as
/// `lore memory prompt --task` and a run build it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptQuery {
    task: Option<String>,
}

pub async fn prompt(
    caller: Caller,
    Path((domain, skill)): Path<(String, String)>,
    Params(q): Params<PromptQuery>,
) -> Result<Json<AssembledPrompt>, ApiError> {
    let skill = SkillPath::parse(&format!("{domain}/{skill}"))?;
    let prompt = caller
        .run(move |e| e.prompt_for(&skill, q.task.as_deref()))
        .await?;
    Ok(Json(prompt))
}
