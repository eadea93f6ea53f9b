//! Decision tools: a person's answer to an agent's question kept as precedent (reviewers
//! record and curate), and the approved ones recalled by similarity (agents).

use super::{Parameters, ToolError};
use lore_core::SkillPath;
use lore_core::id::DecisionId;
use lore_core::model::LessonStatus;
use lore_engine::{DecisionQuery, NewDecision};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LoreMcp;

/// Parameters of `record_decision`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordDecisionParams {
    /// The skill whose agents meet such situations, `domain/skill`.
    pub skill: String,
    /// The situation that needed a person: what was asked, what was at stake.
    pub situation: String,
    /// What the person decided.
    pub action: String,
    /// Why.
    pub rationale: String,
    /// How it turned out, if known.
    #[serde(default)]
    pub outcome: Option<String>,
    /// What it resolved (an execution ID, a ticket), if any.
    #[serde(default)]
    pub resolves: Option<String>,
}

/// Parameters of `review_decisions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewDecisionsParams {
    /// The decisions (`DEC-…`); all move or none.
    pub ids: Vec<String>,
    /// The new state: `approved`, `rejected`, `one_time_exception`, `sensitive`,
    /// `superseded`, `archived`.
    pub status: String,
    /// Why; the audit log keeps it.
    pub reason: String,
}

/// Parameters of `recall_decisions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallDecisionsParams {
    /// The situation at hand, in plain words.
    pub query: String,
    /// Only this skill's decisions, `domain/skill`.
    #[serde(default)]
    pub skill: Option<String>,
    /// At most this many (default 5).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One decision as stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionView {
    /// Its ID.
    pub id: String,
    /// Its state.
    pub status: String,
    /// Who decided.
    pub decided_by: String,
}

/// Decisions as stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionsView {
    /// Each decision.
    pub decisions: Vec<DecisionView>,
}

/// What `recall_decisions` found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecalledDecisionsView {
    /// The decisions quoted as data with who decided and when: precedent to weigh, not orders.
    pub text: String,
    /// Their IDs, best first.
    pub ids: Vec<String>,
    /// Tokens used.
    pub tokens: usize,
}

fn view(d: &lore_core::model::DecisionRecord) -> DecisionView {
    DecisionView {
        id: d.id.to_string(),
        status: d.status.as_str().to_owned(),
        decided_by: d.decided_by.clone(),
    }
}

#[tool_router(router = decision_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// For reviewers: record what a person decided when an agent asked for help, so later
    /// agents facing a similar situation can follow the precedent once it is approved. It
    /// waits for review; who decided is this connection's credential.
    #[tool(annotations(
        title = "Record a decision",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn record_decision(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecordDecisionParams>,
    ) -> Result<Json<DecisionsView>, ToolError> {
        let d = self
            .call(&ctx, move |e| {
                e.record_decision(NewDecision {
                    skill: Some(SkillPath::parse(&p.skill)?),
                    situation: p.situation,
                    action: p.action,
                    rationale: p.rationale,
                    outcome: p.outcome,
                    resolves: p.resolves,
                })
            })
            .await?;
        Ok(Json(DecisionsView {
            decisions: vec![view(&d)],
        }))
    }

    /// For reviewers: approve recorded decisions (only approved ones are recalled), or reject,
    /// supersede, archive or mark them sensitive; all move or none.
    #[tool(annotations(
        title = "Review decisions",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn review_decisions(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ReviewDecisionsParams>,
    ) -> Result<Json<DecisionsView>, ToolError> {
        let moved = self
            .call(&ctx, move |e| {
                let ids = p
                    .ids
                    .iter()
                    .map(|i| DecisionId::parse(i))
                    .collect::<lore_core::Result<Vec<_>>>()?;
                e.review_decisions(&ids, LessonStatus::parse(&p.status)?, &p.reason)
            })
            .await?;
        Ok(Json(DecisionsView {
            decisions: moved.iter().map(view).collect(),
        }))
    }

    /// Before asking a person, look at what people decided in similar situations: the
    /// approved decisions most like yours (top 5), each with its situation, action,
    /// rationale, who decided and when.
    #[tool(annotations(
        title = "Recall decisions",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn recall_decisions(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecallDecisionsParams>,
    ) -> Result<Json<RecalledDecisionsView>, ToolError> {
        let r = self
            .call(&ctx, move |e| {
                e.recall_decisions(&DecisionQuery {
                    text: p.query,
                    skill: p.skill.as_deref().map(SkillPath::parse).transpose()?,
                    limit: p.limit,
                    ..DecisionQuery::default()
                })
            })
            .await?;
        Ok(Json(RecalledDecisionsView {
            text: r.text,
            ids: r.decisions.iter().map(|d| d.id.to_string()).collect(),
            tokens: r.tokens,
        }))
    }
}
