//! Reading memory back: search, the assembled prompt, and the store's status.

use super::Path;
use axum::Json;
use lore_core::SkillPath;
use lore_core::ports::store::SearchHit;
use lore_engine::prompt::AssembledPrompt;
use lore_engine::{MAX_PAGE, Status};
use serde::{Deserialize, Serialize};

use super::{Caller, Params};
use crate::auth::Role;
use crate::error::ApiError;

/// Store identity and counts; where the store lives is for admins only (a file path tells a
/// client nothing it can use and an attacker something).
pub async fn status(caller: Caller) -> Result<Json<Status>, ApiError> {
    let admin = caller.role() >= Role::Admin;
    let mut status = caller.run(|e| e.status()).await?;
    if !admin {
        status.store.location = String::new();
    }
    Ok(Json(status))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    // `query` is what every other door calls the search words; `q` was this route's first name.
    #[serde(alias = "query")]
    q: String,
    skill: Option<SkillPath>,
    #[serde(default = "five")]
    limit: usize,
}

fn five() -> usize {
    5
}

/// Search results, best first.
#[derive(Debug, Serialize)]
pub struct SearchResults {
    hits: Vec<SearchHit>,
}

pub async fn search(
    caller: Caller,
    Params(q): Params<SearchQuery>,
) -> Result<Json<SearchResults>, ApiError> {
    if q.limit > MAX_PAGE {
        let why = format!("{} is more than {MAX_PAGE}", q.limit);
        return Err(lore_core::Error::invalid("limit", why).into());
    }
    let hits = caller
        .run(move |e| e.search(&q.q, q.skill.as_ref(), q.limit))
        .await?;
    Ok(Json(SearchResults { hits }))
}

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
