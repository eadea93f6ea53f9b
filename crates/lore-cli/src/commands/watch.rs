//! `lore watch`: a live table of executions as they land, from this or any other process.
//!
//! The store is the meeting point: `watch` polls it, so executions recorded by another `lore`,
//! a server or an agent appear without any notification channel. Rows are appended, never
//! redrawn, so the table works the same in a terminal, in tmux and through a pipe.

use std::thread;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use lore_core::SkillPath;
use lore_core::model::Execution;
use lore_sqlite::OpenMode;

use crate::config::Paths;
use crate::output;

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only this skill.
    #[arg(long)]
    pub skill: Option<SkillPath>,
    /// How often to look for new executions, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..))]
    pub interval_ms: u64,
    /// How many recent executions to show first.
    #[arg(long, default_value_t = 20)]
    pub recent: usize,
    /// Print the current table and stop instead of watching.
    #[arg(long)]
    pub once: bool,
}

pub fn run(paths: &Paths, args: WatchArgs, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    let all = engine.executions(args.skill.as_ref(), None)?;
    let mut seen = all.len();
    if !json {
        output::line(header())?;
    }
    for execution in &all[all.len().saturating_sub(args.recent)..] {
        print_row(execution, json)?;
    }
    if args.once {
        return Ok(());
    }
    loop {
        thread::sleep(Duration::from_millis(args.interval_ms));
        let all = engine.executions(args.skill.as_ref(), None)?;
        for execution in all.iter().skip(seen) {
            print_row(execution, json)?;
        }
        seen = seen.max(all.len());
    }
}

fn header() -> String {
    format!(
        "{:<19}  {:<30}  {:<24}  {:<14}  {:>10}  {:>9}  {}",
        "TIME (UTC)", "EXECUTION", "SKILL", "OUTCOME", "COST", "LATENCY", "MODEL"
    )
}

fn print_row(execution: &Execution, json: bool) -> Result<()> {
    if json {
        return output::line(serde_json::to_string(execution)?);
    }
    output::line(format!(
        "{:<19}  {:<30}  {:<24}  {:<14}  {:>10}  {:>9}  {}",
        execution.timestamp.format("%Y-%m-%d %H:%M:%S"),
        execution.id,
        execution.skill,
        execution.outcome.as_str(),
        execution
            .cost_usd
            .map(|c| format!("${c:.5}"))
            .unwrap_or_else(|| "-".into()),
        execution
            .latency_ms
            .map(|l| format!("{l:.0} ms"))
            .unwrap_or_else(|| "-".into()),
        execution.model.as_deref().unwrap_or("-"),
    ))
}
