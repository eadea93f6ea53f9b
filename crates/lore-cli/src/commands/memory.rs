//! `lore memory status|search|prompt`.

use anyhow::Result;
use lore_sqlite::OpenMode;

use crate::cli::MemoryCommand;
use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, cmd: MemoryCommand, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    match cmd {
        MemoryCommand::Status => {
            let status = engine.status()?;
            if json {
                return output::json(&status);
            }
            let c = status.counts;
            output::line(format!(
                "Store: {} ({}, schema v{})",
                status.store.backend, status.store.location, status.store.schema_version
            ))?;
            output::line(format!(
                "Executions: {}  |  Corrections: {}  |  Lessons: {}  |  Tests: {}",
                c.executions, c.corrections, c.lessons, c.tests
            ))
        }
        MemoryCommand::Search {
            query,
            limit,
            skill,
        } => {
            let hits = engine.search(&query, skill.as_ref(), limit)?;
            if json {
                return output::json(&hits);
            }
            if hits.is_empty() {
                return output::line("no matches");
            }
            for hit in hits {
                let kind = serde_json::to_value(hit.kind)?;
                output::line(format!(
                    "{:>7.3}  {:<10} {:<34} {}  {}",
                    hit.score,
                    kind.as_str().unwrap_or_default(),
                    hit.id,
                    hit.skill,
                    hit.snippet
                ))?;
            }
            Ok(())
        }
        MemoryCommand::Prompt { skill } => {
            let prompt = engine.prompt(&skill)?;
            if json {
                output::json(&prompt)
            } else {
                output::line(prompt.text.trim_end())
            }
        }
    }
}
