//! The arguments of `lore run` and `lore test`.

use clap::Args;
use lore_core::SkillPath;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The skill to run, `domain/skill`.
    pub skill: SkillPath,
    /// The input: a JSON file, `@FILE`, `@-` for standard input, or inline JSON.
    #[arg(long)]
    pub input: String,
    /// The session this run belongs to.
    #[arg(long)]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// The skill whose tests to run, `domain/skill`.
    pub skill: SkillPath,
}
