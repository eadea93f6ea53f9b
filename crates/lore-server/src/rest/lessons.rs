//! `/v1/lessons`: review and fix what Lore learned; every change is audited by the Engine.
//!
//! Lessons and their audit trails are answered redacted (the detector's findings masked) unless
//! a reviewer or admin asks with `raw=true`; each raw read leaves a `disclosed` audit entry.

use super::Path;
use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuditEntry, Lesson, RecordKind};
use lore_core::sensitive;
use lore_engine::{Attribution, LearnReport, LessonEdit, Page, PurgeReport, learn};
use serde::{Deserialize, Serialize};

use super::{Body, Caller, Params, PurgeBody, page};
use crate::auth::Role;
use crate::error::ApiError;
use crate::input::{self, Place};
use crate::review::statuses;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    /// Comma-separated statuses.
    status: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
    /// The text as written (reviewers and admins; audited).
    #[serde(default)]
    raw: bool,
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Page<Lesson>>, ApiError> {
    let raw = caller.raw(q.raw)?;
    let statuses = q
        .status
        .as_deref()
        .map(|raw| statuses(raw.split(',')))
        .transpose()?;
    let request = page(q.limit, q.offset);
    let page = caller
        .run(move |e| {
            let mut page = e.lessons_page(q.skill.as_ref(), statuses, request)?;
            for lesson in &mut page.items {
                if raw {
                    e.record_disclosure(RecordKind::Lesson, lesson.id.as_str(), "listed raw")?;
                } else {
                    *lesson = sensitive::redact_lesson(lesson);
                }
            }
            Ok(page)
        })
        .await?;
    Ok(Json(page))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    /// The text as written (reviewers and admins; audited).
    #[serde(default)]
    raw: bool,
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
    Params(q): Params<RawQuery>,
) -> Result<Json<LessonWithAudit>, ApiError> {
    let raw = caller.raw(q.raw)?;
    let id = LessonId::parse(&id)?;
    let shown = caller
        .run(move |e| {
            let lesson = e.lesson(&id)?;
            if raw {
                e.record_disclosure(RecordKind::Lesson, id.as_str(), "read raw")?;
                return Ok(LessonWithAudit {
                    lesson,
                    audit: e.lesson_audit(&id)?,
                });
            }
            Ok(LessonWithAudit {
                lesson: sensitive::redact_lesson(&lesson),
                audit: e
                    .lesson_audit(&id)?
                    .iter()
                    .map(sensitive::redact_audit)
                    .collect(),
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
    Ok(Json(sensitive::redact_lesson(&lesson)))
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
    Ok(Json(sensitive::redact_lesson(&lesson)))
}

/// `POST /v1/lessons/{id}/purge`: erases a lesson's text and its source corrections' for good.
/// Admins only: unlike every other change it cannot be undone, and an episode's purge, which
/// reviewers may do, erases an agent's record rather than what people curated.
pub async fn purge(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<PurgeBody>,
) -> Result<Json<PurgeReport>, ApiError> {
    caller.require(Role::Admin)?;
    let id = LessonId::parse(&id)?;
    let why = Attribution::new(None, b.reason);
    let mut report = caller.run(move |e| e.purge_lesson(&id, &why)).await?;
    report.lesson = sensitive::redact_lesson(&report.lesson);
    Ok(Json(report))
}

/// `POST /v1/lessons/import`: lessons that already exist, as JSON lines or a JSON array of the
/// same objects (`skill`, `task`, `lesson`, optional `failed`, `fingerprint`, `tags`). Any role
/// may learn inside its scope; who wrote the lessons is the token's role, as for a correction.
/// 201 when something was stored, 200 when every line was learned before.
pub async fn import(
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<LearnReport>), ApiError> {
    let text = std::str::from_utf8(&body)
        .map_err(|_| lore_core::Error::invalid("body", "is not UTF-8"))?;
    let lines = if text.trim_start().starts_with('[') {
        let items: Vec<serde_json::Value> = input::parse_json(text.as_bytes(), Place::Body)?;
        learn::parse_items(&items)?
    } else {
        // Each line's syntax first, so a broken line is described in the API's words.
        for (i, line) in text.lines().enumerate() {
            if !line.trim().is_empty() {
                input::parse_json::<serde_json::Value>(line.as_bytes(), Place::Line).map_err(
                    |refused| lore_core::Error::invalid(format!("line {}", i + 1), refused),
                )?;
            }
        }
        learn::parse_jsonl(text)?
    };
    let author_kind = caller.role().author_kind();
    let report = caller
        .run(move |e| e.learn_lessons(&lines, author_kind, None))
        .await?;
    let stored = report.learned + report.merged > 0;
    let status = if stored {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(report)))
}
