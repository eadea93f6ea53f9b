//! `lore embedder …`: the embedder's lifecycle (seed 002's fine-tune).

use clap::{Args, Subcommand};
use lore_core::id::{CheckpointId, TuneRunId};

/// Train, judge, activate and roll back an adapter over the base embedder.
#[derive(Debug, Subcommand)]
pub enum EmbedderCommand {
    /// What a run would train on, and what stands in its way.
    Preflight(PlanArgs),
    /// Train an adapter from the feedback and judge it on held-out queries (seconds).
    Train(PlanArgs),
    /// Train a failed or cancelled run again from its plan.
    Resume {
        /// The run.
        run: TuneRunId,
    },
    /// A run (default: the newest).
    Status {
        /// The run.
        run: Option<TuneRunId>,
    },
    /// Runs, newest first.
    Runs {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Skip this many first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Checkpoints, newest first, with their held-out figures.
    Checkpoints,
    /// The embedder recall uses now.
    Active,
    /// Make a checkpoint the one recall uses; refused unless it beat the base embedder.
    /// Re-embeds every lesson before the switch.
    Activate {
        /// The checkpoint.
        checkpoint: CheckpointId,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Go back to an earlier checkpoint, or to the base embedder alone (`base`).
    Rollback {
        /// A checkpoint ID, or `base`.
        to: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Delete a checkpoint recall does not use, with its weights; its run keeps its figures.
    DeleteCheckpoint {
        /// The checkpoint.
        checkpoint: CheckpointId,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Cancel a running run (default: the newest running one).
    Cancel {
        /// The run.
        run: Option<TuneRunId>,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// How a run trains; unset values take the plan's defaults.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Passes over the training pairs (1 to 200; default 20).
    #[arg(long)]
    pub epochs: Option<usize>,
    /// The step size (default 0.05).
    #[arg(long)]
    pub learning_rate: Option<f64>,
    /// The share of queries held out to judge the adapter (0.05 to 0.8; default 0.25).
    #[arg(long)]
    pub held_out: Option<f64>,
    /// The random seed (default 7).
    #[arg(long)]
    pub seed: Option<u64>,
    /// What is held out: `query` (other tasks of known types, the default) or `task_type`
    /// (whole task types, named by an execution input's `task_type`).
    #[arg(long, value_parser = lore_core::ports::tuning::HeldOutBy::parse)]
    pub held_out_by: Option<lore_core::ports::tuning::HeldOutBy>,
    /// Who starts it (recorded with the run).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

/// The guard of a destructive operation.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Who asks (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
    /// Confirms the change.
    #[arg(long)]
    pub confirm: bool,
    /// Why (recorded in the audit log).
    #[arg(long, default_value = "")]
    pub reason: String,
}
