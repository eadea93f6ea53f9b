//! The arguments of `lore digest` and `lore eval`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use lore_core::SkillPath;

#[derive(Debug, Subcommand)]
pub enum DigestCommand {
    /// Make the digest of each skill whose approved lessons or decisions changed since its
    /// last one (by the configured model, else extractive); `lore maintain` does the same.
    Build {
        /// Only this skill, `domain/skill`.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Make them again even when nothing changed.
        #[arg(long)]
        force: bool,
        /// Who asked (default: `lore`).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
    /// Print a skill's digest (every skill's newest, without one) as markdown.
    Show {
        /// The skill (the digest's topic), `domain/skill`.
        skill: Option<SkillPath>,
    },
    /// One line per skill's newest digest: ID, sources, how and when it was made.
    List,
    /// A skill's digest versions, newest first.
    History {
        /// The skill, `domain/skill`.
        skill: SkillPath,
        /// At most this many.
        #[arg(short = 'n', long, default_value_t = 10)]
        limit: usize,
        /// Skip this many newest first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Define (or replace) a skill's named question set, from a file, inline pairs, or both.
    Define(EvalDefineArgs),
    /// List the question sets.
    List {
        /// Only this skill's.
        #[arg(long)]
        skill: Option<SkillPath>,
    },
    /// Run and grade sets now: each answer is the layered context for its question.
    Run {
        /// Only this skill's sets.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Only the set of this name.
        #[arg(long)]
        set: Option<String>,
        /// Who ran it (default: `lore`).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
    /// The graded runs, oldest first.
    Runs {
        /// Only this skill's.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Only this set's.
        #[arg(long)]
        set: Option<String>,
    },
    /// Each set's scores over its recent runs, and how they moved.
    Trend {
        /// Only this skill's sets.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// How many recent runs to show.
        #[arg(short = 'n', long, default_value_t = 10)]
        recent: usize,
    },
}

#[derive(Debug, Args)]
pub struct EvalDefineArgs {
    /// The skill whose memory the set tests, `domain/skill`.
    #[arg(long)]
    pub skill: SkillPath,
    /// The set's name, unique within the skill.
    #[arg(long)]
    pub name: String,
    /// A JSON-lines file (or a JSON array) of `{"question", "expected", "grader"?}`; `-` reads
    /// standard input.
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// A question (repeatable; each pairs with the `--expected` at the same position).
    #[arg(long = "question")]
    pub questions: Vec<String>,
    /// What a good answer gives (repeatable).
    #[arg(long = "expected")]
    pub expected: Vec<String>,
    /// How the inline questions are graded: contains, exact, or judge (needs a model).
    #[arg(long, default_value = "contains", value_parser = parse_grader)]
    pub grader: lore_core::model::Grader,
    /// Who defined it (default: `lore`).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

fn parse_grader(raw: &str) -> Result<lore_core::model::Grader, String> {
    lore_core::model::Grader::parse(raw).map_err(|e| e.to_string())
}
