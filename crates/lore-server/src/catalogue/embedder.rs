//! The embedder's lifecycle: reviewers read the active embedder, runs, checkpoints and what a
//! run would train on; admins train, resume, activate, roll back, cancel and delete.
//!
//! The embedder serves every scope, so only an unrestricted credential may read or tune it
//! (the Engine refuses a scoped handle), and a store without tuning tables answers
//! `unsupported`. Every operation that changes what recall uses or loses work carries the same
//! guard on every door: `actor`, `confirm: true` and a non-blank `reason`, which the audit entry
//! keeps beside the credential that asked.

use axum::http::StatusCode;
use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::ports::tuning::{Checkpoint, TunePlan, TuneRun};
use lore_engine::{ActiveEmbedder, Admin, Engine, Preflight, Switch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Nothing, Operation, PageInput, Rest, Tool, Verb};
use crate::auth::Role;

/// The embedder operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Active>();
    each.one::<PreflightRun>();
    each.one::<Train>();
    each.one::<Runs>();
    each.one::<Run>();
    each.one::<Resume>();
    each.one::<Cancel>();
    each.one::<Checkpoints>();
    each.one::<Activate>();
    each.one::<Rollback>();
    each.one::<Delete>();
}

impl Component for TunePlan {
    const NAME: &'static str = "TunePlan";
}

impl Component for TuneRun {
    const NAME: &'static str = "TuneRun";
}

impl Component for Checkpoint {
    const NAME: &'static str = "Checkpoint";
}

impl Component for ActiveEmbedder {
    const NAME: &'static str = "ActiveEmbedder";
}

impl Component for Switch {
    const NAME: &'static str = "EmbedderSwitch";
}

impl Component for Preflight {
    const NAME: &'static str = "TunePreflight";
}

const TUNING: Tool = Tool {
    name: "",
    group: "embedder",
    title: "",
};

const fn tool(name: &'static str, title: &'static str) -> Option<Tool> {
    Some(Tool {
        name,
        title,
        ..TUNING
    })
}

const fn rest(verb: Verb, path: &'static str) -> Option<Rest> {
    Some(Rest {
        verb,
        path,
        status: StatusCode::OK,
    })
}

/// `active_embedder`, `GET /v1/embedder`.
pub struct Active;

impl Operation for Active {
    type Input = Nothing;
    type Output = Described<ActiveEmbedder>;
    const NAME: &'static str = "active_embedder";
    const SUMMARY: &'static str = "For reviewers: which embedder recall uses now, the base \
        alone or the base with an adapter checkpoint and its held-out figures.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/embedder");
    const TOOL: Option<Tool> = tool("embedder_status", "Embedder status");
    const ANSWER: &'static str = "The active embedder.";

    fn run(engine: &Engine, _: Nothing) -> lore_core::Result<Self::Output> {
        engine.active_embedder().map(Described)
    }
}

/// How a run would train; what is left out takes the configured plan's value.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// Overrides of the configured plan (`[tuning]` in `lore.toml`), any subset of its fields.
    #[schemars(with = "Option<Documented<TunePlan>>")]
    plan: Option<serde_json::Map<String, serde_json::Value>>,
    /// Who starts it, recorded with the run (the credential when omitted).
    actor: Option<String>,
}

impl PlanInput {
    /// The configured plan with this input's fields over it.
    fn plan(&self, engine: &Engine) -> lore_core::Result<TunePlan> {
        let mut plan =
            serde_json::to_value(engine.tuning_plan()).map_err(lore_core::Error::store)?;
        if let (Some(over), serde_json::Value::Object(base)) = (&self.plan, &mut plan) {
            base.extend(over.clone());
        }
        crate::input::from_value(plan, crate::input::Place::Body)
            .map_err(|refused| lore_core::Error::invalid("plan", refused.message().to_owned()))
    }
}

/// `preflight_tuning`, `POST /v1/embedder/preflight`.
pub struct PreflightRun;

impl Operation for PreflightRun {
    type Input = PlanInput;
    type Output = Described<Preflight>;
    const NAME: &'static str = "preflight_tuning";
    const SUMMARY: &'static str = "For reviewers: what a tuning run would learn from (queries \
        with the lessons that helped or were suppressed) and what stands in its way, without \
        training.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/preflight");
    const TOOL: Option<Tool> = tool("embedder_preflight", "Embedder tuning preflight");
    const ANSWER: &'static str = "The pairs and problems.";

    fn run(engine: &Engine, input: PlanInput) -> lore_core::Result<Self::Output> {
        engine.tuning_preflight(&input.plan(engine)?).map(Described)
    }
}

/// `start_tuning`, `POST /v1/embedder/runs`.
pub struct Train;

impl Operation for Train {
    type Input = PlanInput;
    type Output = Described<TuneRun>;
    const NAME: &'static str = "start_tuning";
    const SUMMARY: &'static str = "For admins: train an adapter over the base embedder from \
        the feedback (seconds) and judge it on held-out queries. Recall is unchanged until its \
        checkpoint is activated.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/embedder/runs",
        status: StatusCode::CREATED,
    });
    const TOOL: Option<Tool> = tool("embedder_train", "Train an embedder adapter");
    const ANSWER: &'static str = "The finished run, with its checkpoint and evaluation.";

    fn run(engine: &Engine, input: PlanInput) -> lore_core::Result<Self::Output> {
        let plan = input.plan(engine)?;
        engine
            .start_tuning(plan, input.actor.as_deref())
            .map(Described)
    }
}

/// A page of runs, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunPage {
    /// The runs.
    #[schemars(with = "Vec<Documented<TuneRun>>")]
    runs: Vec<TuneRun>,
    /// How many runs there are in all.
    total: usize,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `list_tuning_runs`, `GET /v1/embedder/runs`.
pub struct Runs;

impl Operation for Runs {
    type Input = PageInput;
    type Output = RunPage;
    const NAME: &'static str = "list_tuning_runs";
    const SUMMARY: &'static str = "For reviewers: tuning runs, newest first, with their \
        status, figures and checkpoint, a page at a time with the total.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/embedder/runs");
    const TOOL: Option<Tool> = tool("embedder_runs", "Embedder tuning runs");
    const ANSWER: &'static str = "A page of runs.";

    fn run(engine: &Engine, q: PageInput) -> lore_core::Result<RunPage> {
        let limit = q.limit.unwrap_or(lore_engine::MAX_PAGE);
        let offset = q.offset.unwrap_or(0);
        let (runs, total) = engine.tuning_runs(limit, offset)?;
        let next_offset = (total > offset.saturating_add(runs.len()) && !runs.is_empty())
            .then_some(offset + runs.len());
        Ok(RunPage {
            runs,
            total,
            next_offset,
        })
    }
}

/// One run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The run, `TUNE-…`.
    #[schemars(with = "String")]
    id: TuneRunId,
}

/// `get_tuning_run`, `GET /v1/embedder/runs/{id}`.
pub struct Run;

impl Operation for Run {
    type Input = RunInput;
    type Output = Described<TuneRun>;
    const NAME: &'static str = "get_tuning_run";
    const SUMMARY: &'static str = "For reviewers: one tuning run, with its progress while it \
        trains and its checkpoint and held-out figures once done.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/embedder/runs/{id}");
    const TOOL: Option<Tool> = tool("embedder_run", "Embedder tuning run");
    const ANSWER: &'static str = "The run.";

    fn run(engine: &Engine, q: RunInput) -> lore_core::Result<Self::Output> {
        engine.tuning_status(Some(&q.id)).map(Described)
    }
}

/// `resume_tuning`, `POST /v1/embedder/runs/{id}/resume`.
pub struct Resume;

impl Operation for Resume {
    type Input = RunInput;
    type Output = Described<TuneRun>;
    const NAME: &'static str = "resume_tuning";
    const SUMMARY: &'static str = "For admins: train a failed or cancelled run again from its \
        plan, from its last finished epoch where the store kept it.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/runs/{id}/resume");
    const TOOL: Option<Tool> = tool("embedder_resume", "Resume an embedder tuning run");
    const ANSWER: &'static str = "The run, trained.";

    fn run(engine: &Engine, q: RunInput) -> lore_core::Result<Self::Output> {
        engine.resume_tuning(&q.id).map(Described)
    }
}

/// Declares a destructive operation's input: its target fields, then the guard every such
/// operation carries, described the same way on every door.
macro_rules! guarded {
    ($(#[$doc:meta])* $name:ident { $($(#[$f:meta])* $field:ident : $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$f])* $field: $ty,)*
            /// Who asks; the audit entry names the credential too.
            #[serde(default)]
            #[schemars(regex(pattern = r"\S"))]
            actor: String,
            /// Must be true: you have checked what will change.
            #[serde(default)]
            confirm: bool,
            /// Why, for a person reading the audit log.
            #[serde(default)]
            #[schemars(regex(pattern = r"\S"))]
            reason: String,
        }

        impl $name {
            fn guard(&self) -> Admin {
                Admin {
                    actor: self.actor.clone(),
                    confirm: self.confirm,
                    reason: self.reason.clone(),
                }
            }
        }
    };
}

guarded!(
    /// The run to cancel, and the guard.
    CancelInput {
        /// The run, `TUNE-…`; the newest running one when omitted.
        #[schemars(with = "Option<String>")]
        run: Option<TuneRunId>,
    }
);

/// What a cancellation did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Cancelled {
    /// The cancelled run, or null when none was running.
    #[schemars(with = "Option<String>")]
    cancelled: Option<TuneRunId>,
}

/// `cancel_tuning`, `POST /v1/embedder/cancel`.
pub struct Cancel;

impl Operation for Cancel {
    type Input = CancelInput;
    type Output = Cancelled;
    const NAME: &'static str = "cancel_tuning";
    const SUMMARY: &'static str = "For admins: cancel a running tuning run (the named one, or \
        the newest running). Needs actor, confirm=true and a reason; audited.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Destroy;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/cancel");
    const TOOL: Option<Tool> = tool("embedder_cancel", "Cancel an embedder tuning run");
    const ANSWER: &'static str = "The cancelled run's ID, or null when none was running.";

    fn run(engine: &Engine, c: CancelInput) -> lore_core::Result<Cancelled> {
        let cancelled = engine.cancel_tuning(c.run.as_ref(), &c.guard())?;
        Ok(Cancelled { cancelled })
    }
}

/// A page of checkpoints, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointPage {
    /// The checkpoints, without their weights.
    #[schemars(with = "Vec<Documented<Checkpoint>>")]
    checkpoints: Vec<Checkpoint>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `list_checkpoints`, `GET /v1/embedder/checkpoints`.
pub struct Checkpoints;

impl Operation for Checkpoints {
    type Input = PageInput;
    type Output = CheckpointPage;
    const NAME: &'static str = "list_checkpoints";
    const SUMMARY: &'static str = "For reviewers: the adapter checkpoints, newest first, each \
        with its run and held-out figures, a page at a time.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/embedder/checkpoints");
    const TOOL: Option<Tool> = tool("embedder_checkpoints", "Embedder checkpoints");
    const ANSWER: &'static str = "A page of checkpoints.";

    fn run(engine: &Engine, q: PageInput) -> lore_core::Result<CheckpointPage> {
        let (checkpoints, next_offset) = super::window(engine.checkpoints()?, q.limit, q.offset)?;
        Ok(CheckpointPage {
            checkpoints,
            next_offset,
        })
    }
}

guarded!(
    /// A checkpoint to act on, and the guard.
    CheckpointInput {
        /// The checkpoint, `CKPT-…`.
        #[schemars(with = "String")]
        id: CheckpointId,
    }
);

/// `activate_checkpoint`, `POST /v1/embedder/checkpoints/{id}/activate`.
pub struct Activate;

impl Operation for Activate {
    type Input = CheckpointInput;
    type Output = Described<Switch>;
    const NAME: &'static str = "activate_checkpoint";
    const SUMMARY: &'static str = "For admins: make a checkpoint the one recall uses, refused \
        unless it beat the base embedder on held-out queries; every lesson is re-embedded \
        first. Needs actor, confirm=true and a reason; audited.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Destroy;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/checkpoints/{id}/activate");
    const TOOL: Option<Tool> = tool("embedder_activate", "Activate an embedder checkpoint");
    const ANSWER: &'static str = "The switch.";

    fn run(engine: &Engine, a: CheckpointInput) -> lore_core::Result<Self::Output> {
        engine.activate_checkpoint(&a.id, &a.guard()).map(Described)
    }
}

guarded!(
    /// Where to roll back to, and the guard.
    RollbackInput {
        /// A checkpoint, `CKPT-…`, or `base` for the base embedder alone.
        #[serde(default)]
        to: String,
    }
);

/// `rollback_embedder`, `POST /v1/embedder/rollback`.
pub struct Rollback;

impl Operation for Rollback {
    type Input = RollbackInput;
    type Output = Described<Switch>;
    const NAME: &'static str = "rollback_embedder";
    const SUMMARY: &'static str = "For admins: roll recall back to an earlier checkpoint, or to \
        the base embedder alone (`to: base`). Needs actor, confirm=true and a reason; audited.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Destroy;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/rollback");
    const TOOL: Option<Tool> = tool("embedder_rollback", "Roll the embedder back");
    const ANSWER: &'static str = "The switch.";

    fn run(engine: &Engine, r: RollbackInput) -> lore_core::Result<Self::Output> {
        let to = match r.to.trim() {
            "" => {
                let why = "name a checkpoint, or `base` for the base embedder alone";
                return Err(lore_core::Error::invalid("to", why));
            }
            "base" => None,
            id => Some(CheckpointId::parse(id)?),
        };
        engine
            .rollback_embedder(to.as_ref(), &r.guard())
            .map(Described)
    }
}

/// What a deletion did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deleted {
    /// The deleted checkpoint.
    #[schemars(with = "String")]
    deleted: CheckpointId,
}

/// `delete_checkpoint`, `POST /v1/embedder/checkpoints/{id}/delete`.
pub struct Delete;

impl Operation for Delete {
    type Input = CheckpointInput;
    type Output = Deleted;
    const NAME: &'static str = "delete_checkpoint";
    const SUMMARY: &'static str = "For admins: delete a checkpoint that recall does not use, \
        with its weights; its run keeps its figures. Needs actor, confirm=true and a reason; \
        audited.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Destroy;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/embedder/checkpoints/{id}/delete");
    const TOOL: Option<Tool> = tool(
        "embedder_delete_checkpoint",
        "Delete an embedder checkpoint",
    );
    const ANSWER: &'static str = "The deleted checkpoint's ID.";

    fn run(engine: &Engine, d: CheckpointInput) -> lore_core::Result<Deleted> {
        let deleted = engine.delete_checkpoint(&d.id, &d.guard())?;
        Ok(Deleted { deleted })
    }
}
