//! `/v1/lessons`: review and fix what Lore learned; every change is audited by the Engine.

use axum::Json;
use axum::extract::Path;
use lore_core::SkillPath;
use lore_core::engine::{LessonEdit, Page};
use lore_core::id::LessonId;
use lore_core::model::{AuditEntry, Lesson};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, Params, page};
use crate::auth::Role;
use crate::error::ApiError;
use crate::review::statuses;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    /// Comma-separated statuses.
    status: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Page<Lesson>>, ApiError> {
    let statuses = q
        .status
        .as_deref()
        .map(|raw| statuses(raw.split(',')))
        .transpose()?;
    let request = page(q.limit, q.offset);
    let page = caller
        .run(move |e| e.lessons_page(q.skill.as_ref(), statuses, request))
        .await?;
    Ok(Json(page))
}

/// A lesson with its audit trail, as `lore lessons show` prints it.
#[derive(Debug, Serialize)]
pub struct LessonWithAudit {
    lesson: Lesson,
    audit: Vec<AuditEntry>,
}

pub async fn get(
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<LessonWithAudit>, ApiError> {
    let id = LessonId::parse(&id)?;
    let shown = caller
        .run(move |e| {
            Ok(LessonWithAudit {
                lesson: e.lesson(&id)?,
                audit: e.lesson_audit(&id)?,
            })
        })
        .await?;
    Ok(Json(shown))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditBody {
    rule: Option<String>,
    applies_when: Option<String>,
    mistake: Option<String>,
    root_cause: Option<String>,
    confidence: Option<f64>,
    tags: Option<Vec<String>>,
    #[serde(default)]
    reason: String,
}

pub async fn edit(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<EditBody>,
) -> Result<Json<Lesson>, ApiError> {
    caller.require(Role::Reviewer)?;
    let id = LessonId::parse(&id)?;
    let edit = LessonEdit {
        rule: b.rule,
        applies_when: b.applies_when,
        mistake: b.mistake,
        root_cause: b.root_cause,
        confidence: b.confidence,
        tags: b.tags,
    };
    let lesson = caller
        .run(move |e| e.edit_lesson(&id, edit, None, &b.reason))
        .await?;
    Ok(Json(lesson))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetireBody {
    #[serde(default)]
    reason: String,
}

pub async fn retire(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<RetireBody>,
) -> Result<Json<Lesson>, ApiError> {
    caller.require(Role::Reviewer)?;
    let id = LessonId::parse(&id)?;
    let lesson = caller
        .run(move |e| e.retire_lesson(&id, None, &b.reason))
        .await?;
    Ok(Json(lesson))
}
