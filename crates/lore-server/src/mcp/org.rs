//! Organization memory over MCP: the org pool's cycle (reviewers) and propagation of a
//! member's own lesson.
//!
//! A tool answers as REST does and refuses as REST does. The pool only proposes: its
//! proposals wait for a person, and a model holding no reviewer's or admin's token is never
//! that person (see `LoreMcp::call`), so no argument of any tool can approve one.

use super::{Parameters, ToolError};
use lore_core::id::LessonId;
use lore_core::org::Propagation;
use lore_engine::{PoolReport, Propagated};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LoreMcp;

/// Parameters of `org_pool`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolParams {
    /// Report what would be proposed without writing anything.
    #[serde(default)]
    pub dry_run: bool,
}

/// One rule several agents learned.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PatternView {
    /// Its skill.
    pub skill: String,
    /// The rule.
    pub rule: String,
    /// The distinct agents that learned it.
    pub agents: Vec<String>,
    /// `proposed`, `already_proposed`, `conflict` (left for a person), `below_confidence` or
    /// `over_cycle_cap`.
    pub outcome: String,
    /// The org lesson proposed (waiting for review) or already there.
    pub proposal: Option<String>,
    /// Older org lessons it will supersede once a person approves it.
    pub supersedes: Vec<String>,
    /// Older org lessons it contradicts.
    pub conflicts: Vec<String>,
}

/// What one pool cycle did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PoolView {
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Proposals written, each waiting for a person's approval.
    pub proposed: usize,
    /// The patterns found.
    pub patterns: Vec<PatternView>,
}

impl From<PoolReport> for PoolView {
    fn from(r: PoolReport) -> Self {
        let ids = |v: Vec<LessonId>| v.into_iter().map(|i| i.to_string()).collect();
        Self {
            dry_run: r.dry_run,
            proposed: r.proposed,
            patterns: r
                .patterns
                .into_iter()
                .map(|p| PatternView {
                    skill: p.skill.to_string(),
                    rule: p.rule,
                    agents: p.agents.into_iter().collect(),
                    outcome: p.outcome.as_str().to_owned(),
                    proposal: p.proposal.map(|i| i.to_string()),
                    supersedes: ids(p.supersedes),
                    conflicts: ids(p.conflicts),
                })
                .collect(),
        }
    }
}

/// Parameters of `propagate_lesson`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropagateParams {
    /// The lesson's ID: one you learned yourself.
    pub id: String,
    /// `role` (agents with your role) or `department` (agents in your department); the
    /// server's setting when absent.
    #[serde(default)]
    pub strategy: Option<String>,
}

/// Whom a lesson reaches now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PropagatedView {
    /// The lesson.
    pub lesson: String,
    /// The strategy used.
    pub strategy: String,
    /// The agents it reaches besides you.
    pub targets: Vec<String>,
    /// Agents that matched but were left out by the cap.
    pub capped: usize,
}

impl From<Propagated> for PropagatedView {
    fn from(p: Propagated) -> Self {
        Self {
            lesson: p.lesson.to_string(),
            strategy: p.strategy.as_str().to_owned(),
            targets: p.targets.into_iter().collect(),
            capped: p.capped,
        }
    }
}

#[tool_router(router = org_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// For reviewers: run one cycle of the organization's skill pool. Rules that several
    /// distinct agents learned become organization-wide lessons that wait for a person's
    /// approval (`review_lessons` with a reviewer's token); a rule that contradicts an existing
    /// org lesson is reported, not proposed.
    #[tool(annotations(
        title = "Org pool",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn org_pool(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<PoolParams>,
    ) -> Result<Json<PoolView>, ToolError> {
        let report = self.call(&ctx, move |e| e.org_pool(p.dry_run)).await?;
        Ok(Json(PoolView::from(report)))
    }

    /// Share a lesson you learned with the agents of your role or department (at most the
    /// server's cap; never back to you). Only your own lessons can be propagated.
    #[tool(annotations(
        title = "Propagate lesson",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn propagate_lesson(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<PropagateParams>,
    ) -> Result<Json<PropagatedView>, ToolError> {
        let done = self
            .call(&ctx, move |e| {
                let id = LessonId::parse(&p.id)?;
                let strategy = p.strategy.as_deref().map(Propagation::parse).transpose()?;
                e.propagate(&id, strategy)
            })
            .await?;
        Ok(Json(PropagatedView::from(done)))
    }
}
