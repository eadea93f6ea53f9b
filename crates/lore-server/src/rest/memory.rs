//! The assembled prompt.

use axum::Json;
use lore_core::SkillPath;
use lore_engine::prompt::AssembledPrompt;

use super::{Caller, Path};
use crate::error::ApiError;

pub async fn prompt(
    caller: Caller,
    Path((domain, skill)): Path<(String, String)>,
) -> Result<Json<AssembledPrompt>, ApiError> {
    let skill = SkillPath::parse(&format!("{domain}/{skill}"))?;
    Ok(Json(caller.run(move |e| e.prompt(&skill)).await?))
}
