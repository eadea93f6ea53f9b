//! `POST /v1/recall`: the lessons that fit a task, packed into a token budget, with why.

use std::time::Instant;

use axum::Json;
use lore_core::SkillPath;
use lore_engine::{RecallQuery, RecallResult};
use serde::Deserialize;

use super::{Body, Caller};
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    #[serde(default)]
    query: String,
    skill: Option<SkillPath>,
    fingerprint: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    budget: Option<usize>,
    limit: Option<usize>,
    /// Include every candidate's explanation (sources, scores, kept or dropped and why).
    #[serde(default)]
    explain: bool,
    /// A key naming this run: suppressed lessons are then explored (see the Engine's recall).
    run: Option<String>,
}

impl RecallBody {
    fn into_query(self) -> lore_core::Result<RecallQuery> {
        // Limits are the Engine's (lore_core::limits), the same for every door.
        Ok(RecallQuery {
            text: self.query,
            skill: self.skill,
            fingerprint: self.fingerprint,
            tags: self.tags,
            budget: self.budget,
            limit: self.limit,
            explain: self.explain,
            explore: self.run,
        })
    }
}

pub async fn recall(
    caller: Caller,
    Body(b): Body<RecallBody>,
) -> Result<([(&'static str, &'static str); 1], Json<RecallResult>), ApiError> {
    let query = b.into_query()?;
    let metrics = caller.metrics.clone();
    let started = Instant::now();
    let result = caller.run(move |e| e.recall(&query)).await?;
    metrics.observe_recall(started.elapsed());
    Ok((
        [(crate::server::INDEX_HEADER, result.index.as_str())],
        Json(result),
    ))
}
