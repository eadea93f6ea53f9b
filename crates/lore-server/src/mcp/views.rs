//! What the tools return: small, flat shapes a model can read at a glance.

use lore_core::model::{ErrorEvent, Execution, Lesson};
use lore_engine::prompt::AssembledPrompt;
use lore_engine::{CorrectionOutcome, RecallResult};
use lore_recall::{Decision, Explanation};
use schemars::JsonSchema;
use serde::Serialize;

/// The execution just recorded; its fields are named as REST's `POST /v1/executions` names them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordedExecution {
    /// The execution's ID, for `correct` and `report_signal`.
    pub id: String,
    /// The skill it was filed under.
    pub skill: String,
    /// How it ended.
    pub outcome: String,
    /// When it was recorded (UTC, RFC 3339).
    pub timestamp: String,
}

impl From<&Execution> for RecordedExecution {
    fn from(e: &Execution) -> Self {
        Self {
            id: e.id.to_string(),
            skill: e.skill.to_string(),
            outcome: e.outcome.as_str().to_owned(),
            timestamp: e.timestamp.to_rfc3339(),
        }
    }
}

/// A stored feedback signal; its fields are named as REST's answer names them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SignalView {
    /// The signal's ID.
    pub id: String,
    /// The normalized error, recognised when it recurs.
    pub fingerprint: String,
    /// The failure tags, inferred and given.
    pub tags: Vec<String>,
}

impl From<&ErrorEvent> for SignalView {
    fn from(e: &ErrorEvent) -> Self {
        Self {
            id: e.id.to_string(),
            fingerprint: e.fingerprint.clone(),
            tags: e.tags.clone(),
        }
    }
}

/// A lesson in full.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LessonView {
    /// The lesson's ID.
    pub id: String,
    /// Its skill.
    pub skill: String,
    /// Its state: only `approved` (and `trial`, in auto curation) lessons reach a prompt.
    pub status: String,
    /// What to do.
    pub rule: String,
    /// When the rule applies.
    pub applies_when: String,
    /// What went wrong before.
    pub mistake: String,
    /// Why it went wrong.
    pub root_cause: String,
    /// How sure Lore is of the rule, 0 to 1.
    pub confidence: f64,
    /// Tags.
    pub tags: Vec<String>,
    /// The correction it was learned from, if any.
    pub correction_id: Option<String>,
}

impl From<&Lesson> for LessonView {
    fn from(l: &Lesson) -> Self {
        Self {
            id: l.id.to_string(),
            skill: l.skill.to_string(),
            status: l.status.as_str().to_owned(),
            rule: l.rule.clone(),
            applies_when: l.applies_when.clone(),
            mistake: l.mistake.clone(),
            root_cause: l.root_cause.clone(),
            confidence: l.confidence,
            tags: l.tags.clone(),
            correction_id: l.correction_id.as_ref().map(ToString::to_string),
        }
    }
}

/// What `correct` stored and learned.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CorrectionResult {
    /// The stored correction.
    pub correction_id: String,
    /// The lesson learned from it (new, or the existing one it was merged into); null when
    /// the correction held no rule.
    pub lesson: Option<LessonView>,
    /// Why no lesson was made, when none was: what to send in a new correction so one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson_skipped: Option<String>,
    /// The guardrail file the rule was appended to, if the skill has a folder.
    pub guardrail: Option<String>,
    /// The regression test written from the correction (replayed by `lore test`), if the
    /// skill has a folder.
    pub regression_test: Option<crate::regression::RegressionTest>,
}

impl From<&CorrectionOutcome> for CorrectionResult {
    fn from(o: &CorrectionOutcome) -> Self {
        Self {
            correction_id: o.correction.id.to_string(),
            lesson: o.lesson.as_ref().map(LessonView::from),
            lesson_skipped: o.lesson_skipped.clone(),
            guardrail: o.guardrail.clone(),
            regression_test: None,
        }
    }
}

/// An assembled system prompt.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PromptView {
    /// The prompt text, ready to use as a system prompt.
    pub prompt: String,
    /// The lessons quoted in it, in order.
    pub lesson_ids: Vec<String>,
    /// Its layers in order, with their tokens and, for a memory layer, the items it holds.
    pub layers: Vec<PromptLayerView>,
    /// The memory layers whose read failed and were left empty.
    pub warnings: Vec<String>,
}

/// One layer of an assembled prompt.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PromptLayerView {
    /// `memory_tools`, `workspace`, `domain`, `learned_rules`, `lessons`, `decisions`,
    /// `digest`, `knowledge`, `core_memory` or `skill`.
    pub name: String,
    /// Its tokens in the prompt.
    pub tokens: usize,
    /// Whether anything of it was left out to fit a budget.
    pub truncated: bool,
    /// For a memory layer, the IDs of the items the prompt holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<String>>,
}

impl From<&AssembledPrompt> for PromptView {
    fn from(p: &AssembledPrompt) -> Self {
        Self {
            prompt: p.text.clone(),
            lesson_ids: p.lessons.iter().map(ToString::to_string).collect(),
            layers: p
                .layers
                .iter()
                .map(|l| PromptLayerView {
                    name: l.name.to_owned(),
                    tokens: l.tokens,
                    truncated: l.truncated,
                    items: l.items.clone(),
                })
                .collect(),
            warnings: p.warnings.clone(),
        }
    }
}

/// One lesson placed in a recalled context.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecalledItem {
    /// The lesson's ID, for `get_lesson`.
    pub id: String,
    /// Its skill.
    pub skill: String,
    /// `approved`, or `trial` (still being measured).
    pub status: String,
    /// Its score; higher is more relevant.
    pub score: f64,
}

/// Why one candidate was kept or dropped.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExplainLine {
    /// The lesson's ID.
    pub id: String,
    /// Its final score.
    pub score: f64,
    /// `kept`, or why it was dropped (`over_budget`, `conflict`, `below_min_relevance`, …).
    pub decision: String,
}

/// A recalled context.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecallView {
    /// The lessons as one text block, best first; empty when nothing fits.
    pub context: String,
    /// The lessons in it, in order.
    pub lessons: Vec<RecalledItem>,
    /// Tokens used of the budget.
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
    /// Every candidate and what happened to it, when `explain` was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<ExplainLine>>,
    /// Lessons left out of this run to measure them; record the run as usual.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_out: Vec<String>,
    /// Failure tags read from `error`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inferred_tags: Vec<String>,
}

impl RecallView {
    /// The view of `r`, with its explanations when the query asked for them.
    pub fn new(r: &RecallResult) -> Self {
        Self {
            context: r.text.clone(),
            lessons: r
                .lessons
                .iter()
                .map(|l| RecalledItem {
                    id: l.id.to_string(),
                    skill: l.skill.to_string(),
                    status: l.status.as_str().to_owned(),
                    score: l.score,
                })
                .collect(),
            tokens: r.tokens,
            budget: r.budget,
            explain: r
                .explain
                .as_ref()
                .map(|e| e.iter().map(explain_line).collect()),
            held_out: r.held_out.iter().map(ToString::to_string).collect(),
            inferred_tags: r.inferred_tags.clone(),
        }
    }
}

fn explain_line(e: &Explanation) -> ExplainLine {
    let decision = match &e.decision {
        Decision::Kept { .. } => "kept".to_owned(),
        Decision::Dropped { why } => match serde_json::to_value(why) {
            Ok(v) => match (v["reason"].as_str(), v["detail"].as_str()) {
                (Some(r), Some(d)) => format!("{r}: {d}"),
                (Some(r), None) => r.to_owned(),
                _ => v.to_string(),
            },
            Err(_) => "dropped".to_owned(),
        },
    };
    ExplainLine {
        id: e.id.clone(),
        score: e.score,
        decision,
    }
}
