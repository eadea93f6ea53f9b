//! Embedder tools (seed 002's fine-tune lifecycle): reviewers read the active embedder, runs
//! and preflight; admins train, resume, activate, roll back and cancel. The destructive tools
//! take the guard triple (`actor`, `confirm: true`, `reason`) and are audited under the
//! connection's credential. A store without tuning answers "not supported".

use super::{Parameters, ToolError};
use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::ports::tuning::TunePlan;
use lore_engine::Admin;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LoreMcp;

/// Parameters of `embedder_status`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderStatusParams {
    /// A tuning run (`TUNE-…`) to report on; the newest when absent.
    #[serde(default)]
    pub run_id: Option<String>,
}

/// Parameters of `embedder_runs`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderRunsParams {
    /// How many runs (1 to 500; default 20).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many first.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Parameters of `embedder_preflight` and `embedder_train`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderPlanParams {
    /// Passes over the training pairs (1 to 200; default 20).
    #[serde(default)]
    pub epochs: Option<usize>,
    /// The share of queries held out to judge the adapter (0.05 to 0.8; default 0.25).
    #[serde(default)]
    pub held_out: Option<f64>,
    /// The random seed (default 7): the same feedback and seed train the same adapter.
    #[serde(default)]
    pub seed: Option<u64>,
    /// What is held out to judge the adapter: `query` (new tasks of types it trained on, the
    /// default) or `task_type` (whole task types it never saw, named by an execution input's
    /// `task_type`).
    #[serde(default)]
    pub held_out_by: Option<String>,
}

/// Parameters of `embedder_resume`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderResumeParams {
    /// The failed or cancelled run (`TUNE-…`).
    pub run_id: String,
}

/// The guard every destructive embedder tool takes, with its target.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbedderAdminParams {
    /// For `embedder_activate`: the checkpoint (`CKPT-…`). For `embedder_rollback`: a
    /// checkpoint, or `base` for the base embedder alone. For `embedder_cancel`: a run
    /// (`TUNE-…`), or absent for the newest running one.
    #[serde(default)]
    pub target: Option<String>,
    /// Who asks for the change (the audit entry also names this connection's credential).
    pub actor: String,
    /// Must be true: you have checked what will change (`embedder_status`).
    pub confirm: bool,
    /// Why, in words a person reviewing the audit log will understand.
    pub reason: String,
}

/// What an embedder tool answers: the record as REST answers it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EmbedderView {
    /// The active embedder, run, runs, preflight or switch, as JSON.
    pub result: Value,
}

fn view(value: impl Serialize) -> Result<Json<EmbedderView>, ToolError> {
    serde_json::to_value(value)
        .map(|result| Json(EmbedderView { result }))
        .map_err(|e| ToolError::from(lore_core::Error::store(e)))
}

/// The engine's configured plan with the call's overrides.
fn plan(base: TunePlan, p: &EmbedderPlanParams) -> lore_core::Result<TunePlan> {
    let mut plan = base;
    if let Some(epochs) = p.epochs {
        plan.epochs = epochs;
    }
    if let Some(held_out) = p.held_out {
        plan.held_out = held_out;
    }
    if let Some(seed) = p.seed {
        plan.seed = seed;
    }
    if let Some(by) = &p.held_out_by {
        plan.held_out_by = lore_core::ports::tuning::HeldOutBy::parse(by)?;
    }
    Ok(plan)
}

fn admin(p: &EmbedderAdminParams) -> Admin {
    Admin {
        actor: p.actor.clone(),
        confirm: p.confirm,
        reason: p.reason.clone(),
    }
}

#[tool_router(router = embedder_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// For reviewers: which embedder recall uses now (the base, or the base with an adapter
    /// checkpoint and its held-out figures), and a tuning run's status (the newest by default).
    #[tool(annotations(
        title = "Embedder status",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_status(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderStatusParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        let result = self
            .call(&ctx, move |e| {
                let active = e.active_embedder()?;
                let run = match p.run_id {
                    Some(id) => Some(e.tuning_status(Some(&TuneRunId::parse(&id)?))?),
                    None => e.tuning_runs(1, 0)?.0.into_iter().next(),
                };
                Ok(serde_json::json!({"active": active, "run": run}))
            })
            .await?;
        view(result)
    }

    /// For reviewers: tuning runs, newest first, with the total.
    #[tool(annotations(
        title = "Embedder tuning runs",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_runs(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderRunsParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        let (runs, total) = self
            .call(&ctx, move |e| {
                e.tuning_runs(p.limit.unwrap_or(20), p.offset.unwrap_or(0))
            })
            .await?;
        view(serde_json::json!({"runs": runs, "total": total}))
    }

    /// For reviewers: what a tuning run would learn from (queries with the lessons that helped
    /// or were suppressed) and what stands in its way, without training.
    #[tool(annotations(
        title = "Embedder tuning preflight",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_preflight(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderPlanParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        view(
            self.call(&ctx, move |e| {
                e.tuning_preflight(&plan(e.tuning_plan(), &p)?)
            })
            .await?,
        )
    }

    /// For admins: train an adapter over the base embedder from the feedback (seconds) and
    /// judge it on held-out queries. It does not change recall: activate its checkpoint with
    /// `embedder_activate` if its evaluation says `better`.
    #[tool(annotations(
        title = "Train an embedder adapter",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn embedder_train(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderPlanParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        view(
            self.call(&ctx, move |e| {
                e.start_tuning(plan(e.tuning_plan(), &p)?, None)
            })
            .await?,
        )
    }

    /// For admins: train a failed or cancelled run again from its plan.
    #[tool(annotations(
        title = "Resume an embedder tuning run",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn embedder_resume(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderResumeParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        view(
            self.call(&ctx, move |e| {
                e.resume_tuning(&TuneRunId::parse(&p.run_id)?)
            })
            .await?,
        )
    }

    /// For admins: make a checkpoint (`target`) the one recall uses. Refused unless it beat
    /// the base embedder on held-out pairs; every lesson is re-embedded before the switch.
    /// Destructive: needs actor, confirm=true and a reason; audited.
    #[tool(annotations(
        title = "Activate an embedder checkpoint",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_activate(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderAdminParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        let guard = admin(&p);
        view(
            self.call(&ctx, move |e| {
                let raw = p.target.as_deref().unwrap_or_default();
                e.activate_checkpoint(&CheckpointId::parse(raw)?, &guard)
            })
            .await?,
        )
    }

    /// For admins: roll recall back to an earlier checkpoint (`target`), or to the base
    /// embedder alone (`target: "base"`). Destructive: needs actor, confirm=true and a reason;
    /// audited.
    #[tool(annotations(
        title = "Roll the embedder back",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_rollback(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderAdminParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        let guard = admin(&p);
        view(
            self.call(&ctx, move |e| {
                let to = match p.target.as_deref() {
                    Some("base") => None,
                    Some(id) => Some(CheckpointId::parse(id)?),
                    None => {
                        return Err(lore_core::Error::invalid(
                            "target",
                            "name a checkpoint, or `base` for the base embedder alone",
                        ));
                    }
                };
                e.rollback_embedder(to.as_ref(), &guard)
            })
            .await?,
        )
    }

    /// For admins: cancel a running tuning run (`target`, or the newest running one).
    /// Destructive: needs actor, confirm=true and a reason; audited.
    #[tool(annotations(
        title = "Cancel an embedder tuning run",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn embedder_cancel(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EmbedderAdminParams>,
    ) -> Result<Json<EmbedderView>, ToolError> {
        let guard = admin(&p);
        let cancelled = self
            .call(&ctx, move |e| {
                let run = p.target.as_deref().map(TuneRunId::parse).transpose()?;
                e.cancel_tuning(run.as_ref(), &guard)
            })
            .await?;
        view(serde_json::json!({"cancelled": cancelled}))
    }
}
