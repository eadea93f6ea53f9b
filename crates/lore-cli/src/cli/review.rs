//! The arguments of `lore review` and `lore maintain`.

use clap::{Args, Subcommand};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::LessonStatus;

/// `lore review [list|approve|reject|exception|sensitive|supersede|unlink]`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(subcommand)]
    pub command: Option<ReviewCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List what waits for review, with its evidence (the default).
    List {
        /// Only this skill.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Statuses to list (comma-separated; default needs_review).
        #[arg(long, value_delimiter = ',', value_parser = parse_status)]
        status: Vec<LessonStatus>,
    },
    /// Approve lessons: they reach prompts from now on.
    Approve(Decision),
    /// Reject lessons as wrong or noise.
    Reject(Decision),
    /// Keep lessons as one-time exceptions: real, but not to be generalized.
    Exception(Decision),
    /// Mark lessons as holding sensitive data: never in a prompt again.
    Sensitive(Decision),
    /// Supersede lessons by a better one.
    Supersede {
        #[command(flatten)]
        decision: Decision,
        /// The lesson that replaces them.
        #[arg(long = "with", value_name = "LESSON_ID")]
        with: LessonId,
    },
    /// Take the conflict (or near-duplicate) link off two lessons: both apply, and recall
    /// shows both. Their states stay as they are.
    Unlink {
        /// The two linked lessons.
        #[arg(value_name = "LESSON_ID", num_args = 2, required = true)]
        ids: Vec<LessonId>,
        /// Why (recorded in the audit log).
        #[arg(long, default_value = "")]
        reason: String,
        /// Who decides (recorded in the audit log).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
}

/// The lessons a decision is about, and who decides why.
#[derive(Debug, Args)]
pub struct Decision {
    /// One or more lesson IDs; all change or none does.
    #[arg(required = true, num_args = 1..)]
    pub ids: Vec<LessonId>,
    /// Why (recorded in the audit log).
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Who decides (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

/// `lore maintain`: expiry and pruning.
#[derive(Debug, Args)]
pub struct MaintainArgs {
    /// Lessons waiting in needs_review longer than this many days expire.
    #[arg(long, default_value_t = 30)]
    pub expire_after_days: u32,
    /// Pruning strategy: off, ttl, pareto or hybrid.
    #[arg(long, default_value = "off", value_parser = ["off", "ttl", "pareto", "hybrid"])]
    pub prune: String,
    /// TTL: archive lessons with no activity for this many days.
    #[arg(long, default_value_t = 90)]
    pub ttl_days: u32,
    /// Pareto: keep at most this many lessons in use per skill.
    #[arg(long, default_value_t = 200)]
    pub max_lessons: usize,
    /// Which runs candidate lessons are proposed from: failure (recurring errors with a known
    /// fix), success (runs a referee graded among the skill's best) or hybrid (both).
    #[arg(long, env = "LORE_CAPTURE", default_value = "failure", value_parser = parse_capture)]
    pub capture: lore_engine::CaptureStrategy,
    /// Success capture: the lowest referee grade, 0 to 1, a run needs to teach.
    #[arg(long, default_value_t = 0.8)]
    pub min_quality: f64,
}

fn parse_capture(raw: &str) -> Result<lore_engine::CaptureStrategy, String> {
    lore_engine::CaptureStrategy::parse(raw).map_err(|e| e.to_string())
}

fn parse_status(raw: &str) -> Result<LessonStatus, String> {
    LessonStatus::parse(raw).map_err(|e| e.to_string())
}
