//! Knowledge chunks and the layered context over REST: documents in (their text in the body, since the server cannot
//! read the caller's files), the ingested list, and recall of the top chunks.
//!
//! Ingest needs the reviewer role: a chunk reaches agents' contexts without a review of its
//! own, so putting one there is a curator's act, like approving a lesson.

use axum::Json;
use lore_core::SkillPath;
use lore_core::model::KnowledgeDocument;
use lore_engine::knowledge::{
    Chunking, IngestDocument, IngestReport, IngestRequest, KnowledgeQuery, KnowledgeResult,
};
use lore_engine::{ContextQuery, ContextResult};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, Params, window};
use crate::auth::Role;
use crate::error::ApiError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestBody {
    skill: SkillPath,
    documents: Vec<IngestDocument>,
    /// Folders the documents came from: stored documents under them that the body lacks are
    /// removed.
    #[serde(default)]
    roots: Vec<String>,
    max_tokens: Option<usize>,
    overlap_tokens: Option<usize>,
}

pub async fn ingest(
    caller: Caller,
    Body(b): Body<IngestBody>,
) -> Result<Json<IngestReport>, ApiError> {
    caller.require(Role::Reviewer)?;
    let defaults = Chunking::default();
    let request = IngestRequest {
        skill: b.skill,
        roots: b.roots,
        documents: b.documents,
        chunking: Chunking {
            max_tokens: b.max_tokens.unwrap_or(defaults.max_tokens),
            overlap_tokens: b.overlap_tokens.unwrap_or(defaults.overlap_tokens),
        },
    };
    let report = caller
        .run(move |e| e.ingest(&request, &mut |_, _| {}))
        .await?;
    Ok(Json(report))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    limit: Option<usize>,
    offset: Option<usize>,
}

#[derive(Debug, Serialize)]
pub struct Documents {
    documents: Vec<KnowledgeDocument>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Documents>, ApiError> {
    let skill = q.skill;
    let all = caller
        .run(move |e| e.knowledge_documents(skill.as_ref()))
        .await?;
    let (documents, next_offset) = window(all, q.limit, q.offset)?;
    Ok(Json(Documents {
        documents,
        next_offset,
    }))
}

/// The body of a layer's recall (knowledge, decisions): one shape for every layer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    #[serde(default)]
    pub(super) query: String,
    pub(super) skill: Option<SkillPath>,
    pub(super) limit: Option<usize>,
    pub(super) budget: Option<usize>,
    #[serde(default)]
    pub(super) explain: bool,
}

pub async fn recall(
    caller: Caller,
    Body(b): Body<RecallBody>,
) -> Result<Json<KnowledgeResult>, ApiError> {
    let query = KnowledgeQuery {
        text: b.query,
        skill: b.skill,
        limit: b.limit,
        budget: b.budget,
        explain: b.explain,
    };
    Ok(Json(caller.run(move |e| e.recall_knowledge(&query)).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextBody {
    #[serde(default)]
    query: String,
    skill: Option<SkillPath>,
    layer_budget: Option<usize>,
    total_budget: Option<usize>,
    #[serde(default)]
    explain: bool,
}

/// `POST /v1/context`: the layered context, every layer's figures, and any layer's warning.
pub async fn context(
    caller: Caller,
    Body(b): Body<ContextBody>,
) -> Result<Json<ContextResult>, ApiError> {
    let query = ContextQuery {
        text: b.query,
        skill: b.skill,
        layer_budget: b.layer_budget,
        total_budget: b.total_budget,
        explain: b.explain,
    };
    Ok(Json(caller.run(move |e| e.context(&query)).await?))
}
