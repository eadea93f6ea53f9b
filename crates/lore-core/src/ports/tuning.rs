//! Where a store keeps the embedder's tuning: the runs that trained an adapter, the checkpoints
//! they left, and which checkpoint recall uses (seed 002's fine-tune lifecycle).
//!
//! An adapter is a square matrix applied to the base embedder's vectors. Its checkpoint names
//! the fitted base embedder it was trained on, so it is never applied to another one, and it
//! carries its held-out evaluation, so activation can refuse an adapter that does not beat the
//! base. The store only keeps these records; training and evaluating live in `lore-recall` and
//! the lifecycle in the Engine. A store without the tables answers [`crate::Error::Unsupported`]
//! from [`crate::ports::store::Store::tuning`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::id::{CheckpointId, TuneRunId};
use crate::model::AuditEntry;
use crate::ports::embed::EmbedderId;

/// How an adapter is trained; every field has a default and a bound.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TunePlan {
    /// Passes over the training pairs.
    pub epochs: usize,
    /// The step size of stochastic gradient descent.
    pub learning_rate: f64,
    /// How far a helpful lesson must score above a negative one before the pair stops teaching.
    pub margin: f64,
    /// The pull back towards the identity map, per step: it keeps the adapter close to the base
    /// embedder where the feedback says nothing.
    pub regularization: f64,
    /// Negative lessons drawn per helpful pair, besides the suppressed ones.
    pub negatives: usize,
    /// The share of distinct queries kept out of training to evaluate on.
    pub held_out: f64,
    /// The random seed: the same pairs and plan give the same adapter.
    pub seed: u64,
    /// What the held-out share is drawn over: query texts, or whole task types.
    pub held_out_by: HeldOutBy,
}

/// What a plan holds out to judge an adapter on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldOutBy {
    /// Distinct query texts: new tasks, of types the adapter may have trained on.
    #[default]
    Query,
    /// Whole task types (an execution input's `task_type`, else its query text): the figure
    /// says whether the adapter helps on kinds of task it never saw.
    TaskType,
}

impl HeldOutBy {
    /// Parses `query` or `task_type`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] naming the choices.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "query" => Ok(Self::Query),
            "task_type" | "task-type" => Ok(Self::TaskType),
            _ => Err(crate::Error::invalid(
                "plan.held_out_by",
                format!("{raw:?}; expected query or task_type"),
            )),
        }
    }
}

impl Default for TunePlan {
    fn default() -> Self {
        Self {
            epochs: 20,
            learning_rate: 0.05,
            margin: 0.2,
            regularization: 0.001,
            negatives: 4,
            held_out: 0.25,
            seed: 7,
            held_out_by: HeldOutBy::Query,
        }
    }
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TuneStatus {
    /// Training now.
    Running,
    /// Trained and evaluated; it left a checkpoint.
    Finished,
    /// Stopped by an error; it can be resumed.
    Failed,
    /// Stopped by an operator; it can be resumed.
    Cancelled,
    /// Stored as running, but its process has written no heartbeat for longer than
    /// [`STALE_AFTER_SECS`]: it died. Never stored, only shown; it can be resumed.
    Interrupted,
}

/// How long a running run may go without a heartbeat before it shows as
/// [`TuneStatus::Interrupted`]. A run beats after every epoch, and an epoch takes seconds even
/// over MiniLM's 384 dimensions, so two minutes of silence means its process is gone.
pub const STALE_AFTER_SECS: i64 = 120;

impl TuneStatus {
    /// The status as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }
}

/// Ranking figures of one embedder on held-out pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RankFigures {
    /// The share of helpful pairs whose lesson ranks first among its candidates.
    pub hit_at_1: f64,
    /// The mean reciprocal rank of the helpful lesson.
    pub mrr: f64,
    /// The share of suppressed pairs whose lesson ranks above the query's helpful lesson.
    pub suppressed_above: f64,
}

/// The held-out evaluation of an adapter against its base.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Helpful pairs trained on.
    pub train_pairs: usize,
    /// Helpful pairs held out.
    pub held_out_pairs: usize,
    /// Suppressed pairs held out.
    pub held_out_suppressed: usize,
    /// The base embedder on the held-out pairs.
    pub base: RankFigures,
    /// The adapter on the same pairs.
    pub adapter: RankFigures,
    /// Whether the adapter may become active: it beats the base on held-out MRR, on enough
    /// pairs to tell.
    pub better: bool,
}

/// One tuning run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneRun {
    /// Its ID.
    pub id: TuneRunId,
    /// Where it stands.
    pub status: TuneStatus,
    /// How it trains.
    pub plan: TunePlan,
    /// The fitted base embedder it trains on.
    pub base: EmbedderId,
    /// Who started it.
    pub actor: String,
    /// When it started (or was last resumed).
    pub started_at: DateTime<Utc>,
    /// When it stopped, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// Epochs done so far.
    pub epochs_done: usize,
    /// The mean margin loss over the training triplets in the last epoch done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// When its process last reported progress (at the start and after every epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// The held-out evaluation, once trained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Evaluation>,
    /// The checkpoint it left, once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointId>,
    /// Why it failed or was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TuneRun {
    /// A run that starts at `at`: `running`, no epoch done, its first heartbeat now.
    pub fn started(plan: TunePlan, base: EmbedderId, actor: String, at: DateTime<Utc>) -> Self {
        Self {
            id: TuneRunId::generate(at),
            status: TuneStatus::Running,
            plan,
            base,
            actor,
            started_at: at,
            finished_at: None,
            epochs_done: 0,
            loss: None,
            heartbeat_at: Some(at),
            evaluation: None,
            checkpoint: None,
            error: None,
        }
    }
}

/// A trained adapter: a `dim × dim` matrix, row-major, for one fitted base embedder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its ID.
    pub id: CheckpointId,
    /// The run that trained it.
    pub run: TuneRunId,
    /// The fitted base embedder it applies to.
    pub base: EmbedderId,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Its held-out evaluation.
    pub evaluation: Evaluation,
    /// The matrix, `base.dim × base.dim`, row-major. Left out of listings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<f32>,
}

/// Where a store keeps tuning runs, checkpoints and the active checkpoint.
pub trait TuningStore: Send + Sync {
    /// Stores `run`, new or changed (by ID).
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn put_run(&self, run: &TuneRun) -> Result<()>;

    /// One run by ID.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn run(&self, id: &TuneRunId) -> Result<Option<TuneRun>>;

    /// Runs newest first, `limit` from `offset`, and how many there are in all.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn runs(&self, limit: usize, offset: usize) -> Result<(Vec<TuneRun>, usize)>;

    /// Stores a finished run and the checkpoint it left, atomically.
    ///
    /// # Errors
    /// [`crate::Error::Conflict`] when the checkpoint ID is taken; nothing is written then.
    fn finish_run(&self, run: &TuneRun, checkpoint: &Checkpoint) -> Result<()>;

    /// One checkpoint by ID, with its weights.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn checkpoint(&self, id: &CheckpointId) -> Result<Option<Checkpoint>>;

    /// Every checkpoint, newest first, without weights.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn checkpoints(&self) -> Result<Vec<Checkpoint>>;

    /// The checkpoint recall applies, `None` for the base embedder alone.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn active_checkpoint(&self) -> Result<Option<CheckpointId>>;

    /// Makes `checkpoint` the one recall applies (`None`: the base alone) and writes `audit`,
    /// atomically.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown checkpoint; nothing is written then.
    fn set_active_checkpoint(
        &self,
        checkpoint: Option<&CheckpointId>,
        audit: &AuditEntry,
    ) -> Result<()>;

    /// Records a running run's progress (`epochs_done`, `loss`, `heartbeat_at`) with the
    /// adapter's weights after that epoch, atomically, unless the stored run is no longer
    /// `running` (an operator cancelled it meanwhile) or is another attempt at it (its
    /// `started_at` differs: the run was resumed elsewhere after this process went silent):
    /// then nothing is written and the answer is `false`, so neither a cancellation nor a newer
    /// attempt is ever overwritten. The default checks and stores the run without the weights,
    /// so a resume on such a store trains from the first epoch again.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn put_progress(&self, run: &TuneRun, weights: &[f32]) -> Result<bool> {
        let _ = weights;
        match self.run(&run.id)? {
            Some(stored) if same_attempt(&stored, run) => {
                self.put_run(run)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Stores `run` (a resumed attempt) only if the stored run is still as its caller read it
    /// (`seen`: the same status, start and heartbeat), atomically; `false`, with nothing
    /// written, when another caller changed it meanwhile. Of two callers resuming the same run
    /// at once, one trains it and the other is told so. The default reads and then writes, which
    /// narrows the race without closing it; the SQL stores check and write in one transaction.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn claim_run(&self, run: &TuneRun, seen: &TuneRun) -> Result<bool> {
        match self.run(&run.id)? {
            Some(stored) if unchanged_since(&stored, seen) => {
                self.put_run(run)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The epoch and weights of a run's last recorded progress, if the store keeps them.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails.
    fn progress(&self, id: &TuneRunId) -> Result<Option<(usize, Vec<f32>)>> {
        let _ = id;
        Ok(None)
    }

    /// Stores `run` (cancelled by an operator) and `audit`, atomically.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when the backend fails; nothing is written then.
    fn cancel_run(&self, run: &TuneRun, audit: &AuditEntry) -> Result<()>;

    /// Deletes checkpoint `id` with its weights and writes `audit`, atomically. The active
    /// checkpoint is never deleted: the check and the deletion happen in one transaction, so
    /// an activation committed meanwhile cannot leave recall applying a checkpoint that is gone.
    ///
    /// # Errors
    /// [`crate::Error::NotFound`] for an unknown checkpoint; [`crate::Error::Conflict`] when it
    /// is the active one; nothing is written then.
    fn delete_checkpoint(&self, id: &CheckpointId, audit: &AuditEntry) -> Result<()>;
}

/// Whether `stored` is the running attempt `run` belongs to: progress from any other attempt
/// (one cancelled, or one superseded by a resume elsewhere) must not be written.
pub fn same_attempt(stored: &TuneRun, run: &TuneRun) -> bool {
    stored.status == TuneStatus::Running && stored.started_at == run.started_at
}

/// Whether `stored` is still the run a caller read as `seen`, for [`TuningStore::claim_run`].
pub fn unchanged_since(stored: &TuneRun, seen: &TuneRun) -> bool {
    stored.status == seen.status
        && stored.started_at == seen.started_at
        && stored.heartbeat_at == seen.heartbeat_at
}
