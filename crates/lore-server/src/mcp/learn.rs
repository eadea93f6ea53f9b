//! `learn_lessons`: lessons an agent already holds (its reflections, a runbook it was given),
//! learned in bulk through the Engine's import, as an agent's: on trial in auto curation,
//! waiting for review in review curation.

use super::{Parameters, ToolError};
use lore_core::model::AuthorKind;
use lore_engine::{LearnReport, LineOutcome, learn};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LoreMcp;

/// One lesson to learn.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct LessonItem {
    /// The skill it belongs to, `domain/skill`.
    pub skill: String,
    /// What was being done when the lesson was learned (the task's text).
    pub task: String,
    /// What failed, in a sentence, if you know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The lesson: what to do, as a rule someone can follow ("Always check the last element
    /// when comparing adjacent pairs."). A bare verdict ("that was wrong") is refused.
    pub lesson: String,
    /// An error fingerprint the lesson answers, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Tags (lowercase words).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Parameters of `learn_lessons`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LearnParams {
    /// The lessons, at least one.
    pub lessons: Vec<LessonItem>,
}

/// What became of one item.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LearnedItem {
    /// Its place in the list, from 1.
    pub item: usize,
    /// `learned` (a new lesson), `merged` (into an existing lesson that says the same) or
    /// `already` (sent before; nothing stored).
    pub outcome: String,
    /// The lesson that holds it, for `get_lesson`.
    pub lesson_id: Option<String>,
    /// That lesson's state.
    pub status: Option<String>,
}

/// What `learn_lessons` did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LearnResult {
    /// New lessons.
    pub learned: usize,
    /// Items merged into existing lessons.
    pub merged: usize,
    /// Items sent before, skipped.
    pub already: usize,
    /// Each item, in order.
    pub items: Vec<LearnedItem>,
}

impl From<&LearnReport> for LearnResult {
    fn from(r: &LearnReport) -> Self {
        let outcome = |o: LineOutcome| match o {
            LineOutcome::Learned => "learned",
            LineOutcome::Merged => "merged",
            LineOutcome::Already => "already",
        };
        Self {
            learned: r.learned,
            merged: r.merged,
            already: r.already,
            items: r
                .results
                .iter()
                .map(|l| LearnedItem {
                    item: l.line,
                    outcome: outcome(l.outcome).to_owned(),
                    lesson_id: l.lesson.as_ref().map(ToString::to_string),
                    status: l.status.map(|s| s.as_str().to_owned()),
                })
                .collect(),
        }
    }
}

#[tool_router(router = learn_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// Learn lessons you already hold (your reflections after failed tasks, a runbook you were
    /// given), many at once. Each becomes a lesson of its skill, checked against the lessons
    /// Lore has (a duplicate is merged) and placed on trial, so it comes back in later prompts
    /// and must earn its place. Every item is checked first; an error names the item and field
    /// and nothing is stored. Sending the same items again stores nothing new.
    #[tool(annotations(
        title = "Learn lessons",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn learn_lessons(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<LearnParams>,
    ) -> Result<Json<LearnResult>, ToolError> {
        let report = self
            .call(&ctx, move |e| {
                let items: Vec<serde_json::Value> = p
                    .lessons
                    .iter()
                    .map(|l| serde_json::to_value(l).unwrap_or_default())
                    .collect();
                let lines = learn::parse_items(&items)?;
                e.learn_lessons(&lines, AuthorKind::Agent, None)
            })
            .await?;
        Ok(Json(LearnResult::from(&report)))
    }
}
