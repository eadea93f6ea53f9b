//! The arguments of `lore org`.

use clap::Subcommand;
use lore_core::id::LessonId;
use lore_core::org::Propagation;

#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// The organization's agents as Lore has seen them: each with the role and department it
    /// last named.
    Members,
    /// Propagate a member's own lesson to the agents of its role or department: at most
    /// `org.max_targets` of them, never back to the lesson's owner.
    Propagate {
        /// The lesson.
        id: LessonId,
        /// `role` or `department` (default: `org.propagation`).
        #[arg(long, value_parser = parse_propagation)]
        strategy: Option<Propagation>,
    },
    /// One cycle of the org pool: rules that at least `org.min_agents` distinct agents learned
    /// become org lessons waiting for review. A person approves them with `lore review
    /// approve`; no flag or setting skips that.
    Pool {
        /// Show what would be proposed; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

fn parse_propagation(raw: &str) -> Result<Propagation, String> {
    Propagation::parse(raw).map_err(|e| e.to_string())
}
