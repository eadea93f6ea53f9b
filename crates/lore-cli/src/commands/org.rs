//! `lore org`: organization memory's members, propagation and pool.

use anyhow::Result;
use lore_sqlite::OpenMode;

use crate::cli::OrgCommand;
use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, command: OrgCommand, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    match command {
        OrgCommand::Members => {
            let members = engine.members()?;
            if json {
                return output::json(&members);
            }
            for m in &members {
                output::line(format!(
                    "{}  role: {}  department: {}",
                    m.agent,
                    m.role.as_deref().unwrap_or("-"),
                    m.department.as_deref().unwrap_or("-")
                ))?;
            }
            Ok(())
        }
        OrgCommand::Propagate { id, strategy } => {
            let done = engine.propagate(&id, strategy)?;
            if json {
                return output::json(&done);
            }
            let targets: Vec<&str> = done.targets.iter().map(String::as_str).collect();
            output::line(format!(
                "{} propagated by {} to {} agent(s): {}{}",
                done.lesson,
                done.strategy.as_str(),
                targets.len(),
                if targets.is_empty() {
                    "-".to_owned()
                } else {
                    targets.join(", ")
                },
                if done.capped > 0 {
                    format!(" ({} more left out by org.max_targets)", done.capped)
                } else {
                    String::new()
                }
            ))
        }
        OrgCommand::Pool { dry_run } => {
            let report = engine.org_pool(dry_run)?;
            if json {
                return output::json(&report);
            }
            for p in &report.patterns {
                let agents: Vec<&str> = p.agents.iter().map(String::as_str).collect();
                output::line(format!(
                    "{}  {}  [{}]  {}{}",
                    p.outcome.as_str(),
                    p.skill,
                    agents.join(", "),
                    p.rule,
                    p.proposal
                        .as_ref()
                        .map(|id| format!("  -> {id}"))
                        .unwrap_or_default()
                ))?;
            }
            output::line(format!(
                "proposed: {}{}; each waits for a person's approval (lore review)",
                report.proposed,
                if dry_run {
                    " (dry run: nothing written)"
                } else {
                    ""
                }
            ))
        }
    }
}
