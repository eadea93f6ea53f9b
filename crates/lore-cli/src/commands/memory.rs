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
                "Executions: {}  |  Corrections: {}  |  Lessons: {}  |  Tests: {}  |  Episodes: {}",
                c.executions, c.corrections, c.lessons, c.tests, c.episodes
            ))
        }
        MemoryCommand::Search {
            query,
            limit,
            skill,
            reformulate,
        } => {
            let looping = reformulate.reformulate.is_some();
            let search = reformulate
                .apply(engine)?
                .search_memory(&query, skill.as_ref(), limit)?;
            if json {
                // The rounds only when asked for, so the plain search keeps its list shape.
                return if looping {
                    output::json(&search)
                } else {
                    output::json(&search.hits)
                };
            }
            if looping {
                for round in &search.rounds {
                    output::line(format!(
                        "query {:?}: {} found, {} new",
                        round.query, round.found, round.new
                    ))?;
                }
                let failure = search.failure.as_deref().map(|f| format!(" ({f})"));
                output::line(format!(
                    "stopped: {}{}",
                    search.stopped,
                    failure.unwrap_or_default()
                ))?;
            }
            if search.hits.is_empty() {
                return output::line("no matches");
            }
            for hit in search.hits {
                let kind = serde_json::to_value(hit.kind)?;
                output::line(format!(
                    "{:>9}  {:<10} {:<34} {}  {}",
                    score(hit.score),
                    kind.as_str().unwrap_or_default(),
                    hit.id,
                    hit.skill,
                    hit.snippet
                ))?;
            }
            Ok(())
        }
        MemoryCommand::Prompt { skill, task } => {
            let prompt = engine.prompt_for(&skill, task.as_deref())?;
            output::warnings(&prompt.warnings);
            if json {
                output::json(&prompt)
            } else {
                output::line(prompt.text.trim_end())
            }
        }
    }
}

/// A bm25 score with three significant digits. Scores are tiny in a small store (a word found in
/// most records weighs almost nothing), where a fixed `{:.3}` printed every one as `0.000`.
fn score(value: f64) -> String {
    if value == 0.0 || value.abs() >= 0.01 {
        format!("{value:.3}")
    } else {
        format!("{value:.2e}")
    }
}
