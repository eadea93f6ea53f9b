//! How an Engine is configured: curation, upkeep, agents' memory and the prompt's budgets.
//!
//! Kept apart from the services that read it, so that the Engine's definition depends on
//! settings alone and every door (CLI, server, MCP) builds the same [`EngineConfig`].

use chrono::TimeDelta;
use serde::Serialize;

use lore_core::error::{Error, Result};
use lore_core::model::{CurationMode, MemoryCategory};
use lore_core::supersession::Thresholds;
use lore_recall::LayerBudgets;

/// What status a lesson from a person's correction gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HumanCorrections {
    /// Approved at once (seed 000: injected on the very next run).
    #[default]
    Approve,
    /// Sent to review like any machine-made lesson.
    Review,
}

/// Which runs candidate lessons are captured from (seed 002's capture strategies). Corrections
/// always teach; this chooses what `maintain` proposes on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureStrategy {
    /// From failures: a recurring error fingerprint with a known fix.
    #[default]
    Failure,
    /// From successes: a run a referee graded at least [`Capture::min_quality`] and among the
    /// skill's best ([`Capture::success_percentile`]).
    Success,
    /// Both.
    Hybrid,
}

impl CaptureStrategy {
    /// Parses `failure`, `success` or `hybrid`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the choices.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "failure" => Ok(Self::Failure),
            "success" => Ok(Self::Success),
            "hybrid" => Ok(Self::Hybrid),
            _ => Err(Error::invalid(
                "capture",
                format!("{raw:?}; expected failure, success or hybrid"),
            )),
        }
    }

    /// Whether failures are captured.
    pub fn failures(self) -> bool {
        matches!(self, Self::Failure | Self::Hybrid)
    }

    /// Whether successes are captured.
    pub fn successes(self) -> bool {
        matches!(self, Self::Success | Self::Hybrid)
    }
}

/// Capture: the strategy and the bar a successful run must clear.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Capture {
    /// Which runs candidates come from.
    pub strategy: CaptureStrategy,
    /// The lowest referee grade, 0 to 1, a run needs to teach (seed 002's 8 of 10).
    pub min_quality: f64,
    /// The share of the skill's graded runs it must beat, 0 to 100 (seed 002's 75th percentile).
    pub success_percentile: f64,
}

impl Default for Capture {
    fn default() -> Self {
        Self {
            strategy: CaptureStrategy::default(),
            min_quality: 0.8,
            success_percentile: 75.0,
        }
    }
}

/// How the Engine curates what it learns.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineConfig {
    /// `auto` (the default) or `review`.
    pub curation: CurationMode,
    /// What happens to lessons distilled from a person's correction.
    pub human_corrections: HumanCorrections,
    /// Similarity thresholds of dedup, conflicts and supersession.
    pub thresholds: Thresholds,
    /// Expiry and pruning, run by [`Engine::maintain`].
    pub upkeep: Upkeep,
    /// Which runs [`Engine::maintain`] proposes lessons from.
    pub capture: Capture,
    /// What agents may write to their own memory.
    pub memory: MemoryPolicy,
    /// The token budgets of the prompt's layers (seed 004's layered context).
    pub prompt_budgets: LayerBudgets,
    /// How memory reaches agents: in the prompt, or through tools they call.
    pub injection: InjectionStrategy,
    /// How many past sessions (episodes) a recall adds after its lessons, within its budget;
    /// 0, the default, adds none.
    pub recall_episodes: usize,
    /// Organization memory: propagation and the org pool (seed 002).
    pub org: OrgConfig,
    /// The plan a tuning run follows when its caller gives none (`[tuning]` in `lore.toml`).
    pub tuning: lore_core::ports::tuning::TunePlan,
}

/// Organization memory's settings. There is deliberately no setting that lets an org lesson
/// skip review: [`crate::Engine::org_pool`] only proposes, and only a person approves.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OrgConfig {
    /// How a member's new lesson is propagated: `none` (the default: the agent's own), `role`
    /// or `department`.
    pub propagation: lore_core::org::Propagation,
    /// The most agents one propagation reaches (seed 002's `max_propagation_targets`, 10).
    pub max_targets: usize,
    /// How many distinct agents must have learned a rule before the org pool proposes it
    /// (seed 002's `min_agents_seen_pattern`, 3).
    pub min_agents: usize,
    /// The lowest confidence an org proposal may have (seed 002's 0.8).
    pub min_confidence: f64,
    /// The most proposals one pool cycle makes (seed 002's 10).
    pub max_proposals: usize,
    /// Whether [`crate::Engine::maintain`] runs a pool cycle (seed 002's evolver runs on the
    /// consolidation schedule, opt-in).
    pub pool: bool,
}

impl Default for OrgConfig {
    fn default() -> Self {
        Self {
            propagation: lore_core::org::Propagation::None,
            max_targets: 10,
            min_agents: 3,
            min_confidence: 0.8,
            max_proposals: 10,
            pool: false,
        }
    }
}

impl OrgConfig {
    /// Refuses a zero cap or agent count and a confidence outside `0..=1`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        if self.max_targets == 0 {
            return Err(Error::invalid("org max_targets", "must be at least 1"));
        }
        if self.min_agents < 2 {
            return Err(Error::invalid(
                "org min_agents",
                "must be at least 2: one agent's rule is not an organization's pattern",
            ));
        }
        if self.max_proposals == 0 {
            return Err(Error::invalid("org max_proposals", "must be at least 1"));
        }
        if !(0.0..=1.0).contains(&self.min_confidence) {
            return Err(Error::invalid(
                "org min_confidence",
                format!("{} is outside 0 to 1", self.min_confidence),
            ));
        }
        Ok(())
    }
}

/// How pruning keeps the lesson pool small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "strategy", rename_all = "snake_case")]
pub enum Pruning {
    /// No pruning (the default: archiving lessons in use is a choice to make).
    #[default]
    Off,
    /// Archive lessons whose last activity is older than `max_age`.
    Ttl {
        /// The age limit.
        max_age: TimeDelta,
    },
    /// Archive, per skill, what falls outside the relevance × recency frontier beyond
    /// `max_lessons`.
    Pareto {
        /// Lessons in use kept per skill.
        max_lessons: usize,
    },
    /// TTL, then Pareto.
    Hybrid {
        /// The age limit.
        max_age: TimeDelta,
        /// Lessons in use kept per skill.
        max_lessons: usize,
    },
}

/// What the periodic jobs do.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Upkeep {
    /// How long a lesson may wait in `needs_review` before it expires (default 30 days).
    pub review_expiry: TimeDelta,
    /// The pruning strategy.
    pub pruning: Pruning,
}

impl Default for Upkeep {
    fn default() -> Self {
        Self {
            review_expiry: TimeDelta::days(30),
            pruning: Pruning::Off,
        }
    }
}

impl Upkeep {
    /// Refuses non-positive ages and a zero maximum.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        let positive = |what: &str, age: TimeDelta| {
            if age > TimeDelta::zero() {
                Ok(())
            } else {
                Err(Error::invalid(what, "must be longer than zero"))
            }
        };
        positive("review expiry", self.review_expiry)?;
        match self.pruning {
            Pruning::Ttl { max_age } | Pruning::Hybrid { max_age, .. } => {
                positive("pruning max age", max_age)?
            }
            _ => {}
        }
        match self.pruning {
            Pruning::Pareto { max_lessons: 0 } | Pruning::Hybrid { max_lessons: 0, .. } => {
                Err(Error::invalid("pruning max lessons", "must be at least 1"))
            }
            _ => Ok(()),
        }
    }
}

/// What agents may write, and how much core memory a prompt carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryPolicy {
    /// Whether agents may edit core blocks (seed 002's `allow_core_writes` safety valve).
    pub core_writes: bool,
    /// Whether agents may add archival passages.
    pub archival_writes: bool,
    /// Whether agents may append to the recall log.
    pub recall_writes: bool,
    /// The most tokens all of a skill's core blocks may hold together.
    pub core_budget: usize,
}

impl Default for MemoryPolicy {
    fn default() -> Self {
        Self {
            core_writes: true,
            archival_writes: true,
            recall_writes: true,
            core_budget: 500,
        }
    }
}

impl MemoryPolicy {
    pub(crate) fn allows(&self, category: MemoryCategory) -> bool {
        match category {
            MemoryCategory::Core => self.core_writes,
            MemoryCategory::Archival => self.archival_writes,
            MemoryCategory::Recall => self.recall_writes,
        }
    }
}

/// How memory reaches an agent (seed 002): which tools it is given, and whether the prompt
/// carries the learned rules ([`crate::EngineConfig::injection`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectionStrategy {
    /// Lessons are recalled and placed into the prompt before the run (the default); no tools.
    #[default]
    Context,
    /// The agent searches and recalls memory itself, when it decides to.
    ToolBased,
    /// The agent reads and writes its own core, archival and recall memory.
    SelfEditing,
}

/// The lesson proposer's settings (seed 002's `ProceduralMemoryConfig`): the separate model call
/// that rewrites a correction's distilled lesson. They travel with that call only; digests and
/// judges keep the client's own model and sampling.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProposerConfig {
    /// Whether the proposer is asked at all. Off, corrections still teach: the offline
    /// distiller writes their lessons, as it does when no model is configured.
    pub enabled: bool,
    /// The model the proposer's call names; `None` for the configured model.
    pub model: Option<String>,
    /// Sampling temperature of the proposer's call (seed 002's 0.3).
    #[serde(serialize_with = "as_written")]
    pub temperature: f32,
    /// The most tokens the proposer may answer with (seed 002's 1500).
    pub max_tokens: u32,
    /// Proposals below this confidence are discarded and the distilled lesson is kept
    /// (seed 002's 0.5).
    pub min_confidence: f64,
}

impl Default for ProposerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            model: None,
            temperature: 0.3,
            max_tokens: 1500,
            min_confidence: 0.5,
        }
    }
}

/// An `f32` as the decimal it was written as: widened as it is, 0.7 would read 0.699999988.
fn as_written<S: serde::Serializer>(
    value: &f32,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_f64(value.to_string().parse().unwrap_or(f64::from(*value)))
}

impl ProposerConfig {
    /// The most tokens a proposer may be allowed: a lesson is a few hundred.
    pub const MAX_TOKENS: u32 = 32_768;

    /// Refuses a blank model name, a temperature outside 0 to 2, a token limit of 0 or above
    /// [`Self::MAX_TOKENS`], and a confidence outside 0 to 1.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the setting.
    pub fn validate(&self) -> Result<()> {
        if self.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
            return Err(Error::invalid("proposer model", "is empty; name a model"));
        }
        if !(self.temperature.is_finite() && (0.0..=2.0).contains(&self.temperature)) {
            return Err(Error::invalid(
                "proposer temperature",
                format!("{} is outside 0 to 2", self.temperature),
            ));
        }
        if !(1..=Self::MAX_TOKENS).contains(&self.max_tokens) {
            return Err(Error::invalid(
                "proposer max_tokens",
                format!("{} is outside 1 to {}", self.max_tokens, Self::MAX_TOKENS),
            ));
        }
        if !(self.min_confidence.is_finite() && (0.0..=1.0).contains(&self.min_confidence)) {
            return Err(Error::invalid(
                "proposer min_confidence",
                format!("{} is outside 0 to 1", self.min_confidence),
            ));
        }
        Ok(())
    }
}
