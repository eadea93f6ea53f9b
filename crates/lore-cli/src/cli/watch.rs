//! The arguments of `lore watch`.

use clap::Args;
use lore_core::SkillPath;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only this skill.
    #[arg(long)]
    pub skill: Option<SkillPath>,
    /// How often to look for new executions, in milliseconds, when the store does not announce
    /// them (a PostgreSQL store announces every write at once).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
    pub interval_ms: u64,
    /// How many recent executions to show first.
    #[arg(long, default_value_t = 20)]
    pub recent: usize,
    /// Print the current table and stop instead of watching.
    #[arg(long)]
    pub once: bool,
    /// Follow a running `lore serve` at this URL (`http://host:7077`) instead of the local store.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// The bearer token (or JWT) for `--server`.
    #[arg(long, env = "LORE_TOKEN", hide_env_values = true, requires = "server")]
    pub token: Option<String>,
}
