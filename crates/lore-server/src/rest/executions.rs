//! `/v1/executions` and `/v1/corrections`: what agents did, and what people said about it.
//!
//! Inputs, outputs and correction texts are answered redacted, the writes' echoes included;
//! `raw=true` on a read gives a reviewer or admin the text as stored, audited per execution.

use super::Path;
use axum::Json;
use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{ErrorEvent, Execution, Outcome, RecordKind, SignalChannel};
use lore_core::sensitive;
use lore_engine::Engine;
use lore_engine::{
    CorrectionOutcome, FailedTransition, NewCorrection, NewExecution, NewSignal, Page,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Body, Caller, Params, page};
use crate::error::ApiError;
use crate::regression::{self, RegressionTest};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordBody {
    skill: SkillPath,
    input: Value,
    output: Value,
    #[serde(default = "pending_review")]
    outcome: Outcome,
    cost_usd: Option<f64>,
    latency_ms: Option<f64>,
    model: Option<String>,
    session: Option<String>,
    #[serde(default)]
    lessons_shown: Vec<LessonId>,
}

fn pending_review() -> Outcome {
    Outcome::PendingReview
}

pub async fn record(
    caller: Caller,
    Body(b): Body<RecordBody>,
) -> Result<(StatusCode, Json<Execution>), ApiError> {
    let new = NewExecution {
        skill: b.skill,
        input: b.input,
        output: b.output,
        outcome: b.outcome,
        cost_usd: b.cost_usd,
        latency_ms: b.latency_ms,
        model: b.model,
        session: b.session,
        lessons_shown: b.lessons_shown,
    };
    let execution = caller.run(move |e| e.record_execution(new)).await?;
    Ok((
        StatusCode::CREATED,
        Json(sensitive::redact_execution(&execution)),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    skill: Option<SkillPath>,
    limit: Option<usize>,
    offset: Option<usize>,
    /// The text as recorded (reviewers and admins; audited).
    #[serde(default)]
    raw: bool,
}

/// `execution` as this reader may see it: redacted, or raw with the read audited.
fn disclose(
    e: &Engine,
    execution: Execution,
    raw: bool,
    why: &str,
) -> lore_core::Result<Execution> {
    if raw {
        e.record_disclosure(RecordKind::Execution, execution.id.as_str(), why)?;
        return Ok(execution);
    }
    Ok(sensitive::redact_execution(&execution))
}

pub async fn list(
    caller: Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Page<Execution>>, ApiError> {
    let raw = caller.raw(q.raw)?;
    let request = page(q.limit, q.offset);
    let page = caller
        .run(move |e| {
            let page = e.executions_page(q.skill.as_ref(), request)?;
            let items = page
                .items
                .into_iter()
                .map(|x| disclose(e, x, raw, "listed raw"))
                .collect::<lore_core::Result<_>>()?;
            Ok(Page {
                items,
                next_offset: page.next_offset,
            })
        })
        .await?;
    Ok(Json(page))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    /// The text as recorded (reviewers and admins; audited).
    #[serde(default)]
    raw: bool,
}

pub async fn get(
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<RawQuery>,
) -> Result<Json<Execution>, ApiError> {
    let raw = caller.raw(q.raw)?;
    let id = ExecutionId::parse(&id)?;
    Ok(Json(
        caller
            .run(move |e| disclose(e, e.execution(&id)?, raw, "read raw"))
            .await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalBody {
    channel: SignalChannel,
    #[serde(default)]
    message: String,
    value: Option<f64>,
    action: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    state_before: String,
    #[serde(default)]
    state_after: String,
    #[serde(default)]
    failure_reason: String,
}

pub async fn signal(
    caller: Caller,
    Path(id): Path<String>,
    Body(b): Body<SignalBody>,
) -> Result<(StatusCode, Json<ErrorEvent>), ApiError> {
    let signal = NewSignal {
        execution_id: ExecutionId::parse(&id)?,
        channel: b.channel,
        message: b.message,
        value: b.value,
        action: b.action,
        tags: b.tags,
    };
    let step = FailedTransition {
        before: b.state_before,
        after: b.state_after,
        reason: b.failure_reason,
    };
    let event = caller
        .run(move |e| e.report_transition(signal, step))
        .await?;
    Ok((StatusCode::CREATED, Json(event)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    limit: Option<usize>,
    offset: Option<usize>,
}

pub async fn signals(
    caller: Caller,
    Path(id): Path<String>,
    Params(q): Params<PageQuery>,
) -> Result<Json<Page<ErrorEvent>>, ApiError> {
    let id = ExecutionId::parse(&id)?;
    let request = page(q.limit, q.offset);
    Ok(Json(
        caller.run(move |e| e.signals_page(&id, request)).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorrectBody {
    skill: SkillPath,
    execution_id: ExecutionId,
    /// `correction`, as the CLI and MCP name it; `text`, its earlier name here, still works.
    #[serde(alias = "text")]
    correction: String,
}

/// A correction's outcome with the regression test written from it.
#[derive(Debug, Serialize)]
pub struct Corrected {
    #[serde(flatten)]
    outcome: CorrectionOutcome,
    regression_test: Option<RegressionTest>,
}

pub async fn correct(
    caller: Caller,
    Body(b): Body<CorrectBody>,
) -> Result<(StatusCode, Json<Corrected>), ApiError> {
    // Who wrote it is the credential's to say: the author is the caller's token (the Engine
    // handle acts for it) and its kind follows the token's role.
    let new = NewCorrection {
        skill: b.skill,
        execution_id: b.execution_id,
        text: b.correction,
        author_kind: caller.role().author_kind(),
        author: None,
    };
    let corrected = caller
        .run(move |e| {
            let mut outcome = e.correct(new)?;
            let regression_test = regression::write(e, &outcome);
            // The answer echoes the correction and its lesson, redacted like every read.
            outcome.correction = sensitive::redact_correction(&outcome.correction);
            outcome.lesson = outcome.lesson.as_ref().map(sensitive::redact_lesson);
            Ok(Corrected {
                outcome,
                regression_test,
            })
        })
        .await?;
    Ok((StatusCode::CREATED, Json(corrected)))
}
