//! The arguments of `lore ingest` and `lore knowledge`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use lore_core::SkillPath;

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files or folders to ingest (markdown, ADRs, runbooks, plain text); folders are walked,
    /// hidden entries skipped. A document ingested before from one of these folders whose file
    /// is gone is removed.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The skill whose agents the documents inform, `domain/skill`.
    #[arg(long)]
    pub skill: SkillPath,
    /// The most tokens in one chunk.
    #[arg(long, default_value_t = 200)]
    pub max_tokens: usize,
    /// Tokens a cut section's next chunk repeats from the previous one.
    #[arg(long, default_value_t = 30)]
    pub overlap: usize,
}

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// The chunks that fit a question (top 8), quoted with their file, heading and lines.
    Recall(KnowledgeRecallArgs),
    /// The ingested documents: source, hash, chunks, when.
    List {
        /// Only this skill's documents.
        #[arg(long)]
        skill: Option<SkillPath>,
    },
}

#[derive(Debug, Args)]
pub struct KnowledgeRecallArgs {
    /// The question or task, in plain words.
    pub query: String,
    /// Only chunks of this skill, `domain/skill`.
    #[arg(long)]
    pub skill: Option<SkillPath>,
    /// The token budget.
    #[arg(long, default_value_t = 2000)]
    pub budget: usize,
    /// At most this many chunks.
    #[arg(short = 'n', long, default_value_t = 8)]
    pub limit: usize,
    /// The tokenizer counting the budget: cl100k_base or o200k_base.
    #[arg(long, default_value = "cl100k_base")]
    pub encoding: String,
    /// Show every candidate: sources, scores, kept or dropped and why.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The task or question, in plain words.
    pub query: String,
    /// Only memory of this skill, `domain/skill`.
    #[arg(long)]
    pub skill: Option<SkillPath>,
    /// Each layer's token budget (default: the configured one, 2000).
    #[arg(long)]
    pub layer_budget: Option<usize>,
    /// The whole context's token budget (default: the configured one, 12000).
    #[arg(long)]
    pub total_budget: Option<usize>,
    /// The tokenizer counting the budgets: cl100k_base or o200k_base.
    #[arg(long, default_value = "cl100k_base")]
    pub encoding: String,
    /// Show each layer's candidates: sources, scores, kept or dropped and why.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Subcommand)]
pub enum DecisionCommand {
    /// Record a decision a person made when an agent asked (it waits for review).
    Record(DecisionRecordArgs),
    /// Move decisions to a state along the lessons' lifecycle: approved ones are recalled.
    Review {
        /// The decisions (`DEC-…`), all moved or none.
        #[arg(required = true)]
        ids: Vec<lore_core::id::DecisionId>,
        /// The new state: approved, rejected, one_time_exception, sensitive, superseded, …
        #[arg(long, value_parser = parse_status)]
        to: lore_core::model::LessonStatus,
        /// Why; the audit log keeps it.
        #[arg(long)]
        reason: String,
        /// Who decided (default: `lore`).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
    /// List decisions.
    List {
        /// Only this skill's.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Only those in this state.
        #[arg(long, value_parser = parse_status)]
        status: Option<lore_core::model::LessonStatus>,
    },
    /// The approved decisions most like a situation (top 5), quoted with who decided.
    Recall {
        /// The situation, in plain words.
        query: String,
        /// Only this skill's.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// At most this many.
        #[arg(short = 'n', long, default_value_t = 5)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub struct DecisionRecordArgs {
    /// The skill whose agents meet such situations, `domain/skill`.
    #[arg(long)]
    pub skill: SkillPath,
    /// The situation that needed a person.
    #[arg(long)]
    pub situation: String,
    /// What was decided.
    #[arg(long)]
    pub action: String,
    /// Why.
    #[arg(long)]
    pub rationale: String,
    /// How it turned out, when known.
    #[arg(long)]
    pub outcome: Option<String>,
    /// What it resolved (an execution ID, a ticket).
    #[arg(long)]
    pub resolves: Option<String>,
    /// Who decided (default: `lore`).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

fn parse_status(raw: &str) -> Result<lore_core::model::LessonStatus, String> {
    lore_core::model::LessonStatus::parse(raw).map_err(|e| e.to_string())
}
