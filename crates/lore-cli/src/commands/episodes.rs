//! `lore episode add|extract|show|list|purge` and
//! `lore graph path|what-if|similar|patterns|anti-patterns`.

use std::io::Read;

use anyhow::{Context, Result};
use lore_core::graph::PathMode;
use lore_core::model::Episode;
use lore_engine::{Attribution, EpisodeQuery, PageRequest, PatternQuery, Rendered};
use lore_sqlite::OpenMode;

use crate::cli::{EpisodeCommand, GraphCommand};
use crate::config::Paths;
use crate::output;

/// Reads a file, or standard input for `-`.
pub(crate) fn read_source(path: &std::path::Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        return Ok(text);
    }
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Prints what recording an episode did.
pub(crate) fn print_receipt(receipt: &lore_engine::EpisodeReceipt, json: bool) -> Result<()> {
    if json {
        return output::json(receipt);
    }
    let e = &receipt.episode;
    let mut line = format!(
        "{} episode {} ({}, {}, {} decisions, {} events)",
        if receipt.replaced {
            "Replaced"
        } else {
            "Recorded"
        },
        e.id,
        e.skill,
        e.outcome.as_str(),
        e.decisions.len(),
        e.events.len()
    );
    if receipt.redacted > 0 {
        line.push_str(&format!(
            "; {} text(s) held personal data or secrets and were redacted",
            receipt.redacted
        ));
    }
    output::line(line)
}

pub fn episode(paths: &Paths, cmd: EpisodeCommand, json: bool) -> Result<()> {
    match cmd {
        EpisodeCommand::Add {
            file,
            skill,
            replace,
        } => {
            let text = read_source(&file)?;
            let value: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let episode = Episode::from_json(value, skill.as_ref())?;
            let engine = paths.engine(OpenMode::Create)?;
            let receipt = engine.add_episode(episode, replace)?;
            print_receipt(&receipt, json)
        }
        EpisodeCommand::Extract {
            file,
            skill,
            llm,
            dry_run,
            replace,
        } => {
            let log = read_source(&file)?;
            let episode = if llm {
                let skill = skill.context("--skill is required with --llm")?;
                let model = crate::config::required_model()?;
                lore_engine::extract::with_model(model.as_ref(), &log, &skill)?
            } else {
                lore_engine::extract::episode_from_markdown(&log, skill.as_ref())?
            };
            if dry_run {
                episode.validate()?;
                return output::json(&episode);
            }
            let engine = paths.engine(OpenMode::Create)?;
            let receipt = engine.add_episode(episode, replace)?;
            print_receipt(&receipt, json)
        }
        EpisodeCommand::Show {
            id,
            session,
            decisions,
            budget,
        } => {
            let engine = reader(paths)?;
            let Some(id) = id else {
                let session = session.unwrap_or_default();
                let views = engine.session_episodes(&session, budget)?;
                if json {
                    return output::json(
                        &serde_json::json!({ "session": session, "episodes": views }),
                    );
                }
                let text: Vec<&str> = views.iter().map(|v| v.rendered.text.as_str()).collect();
                return output::line(text.join("\n\n"));
            };
            if decisions {
                let seq = engine.decision_sequence(&id, budget)?;
                return print(&seq, &seq.rendered, json);
            }
            let view = engine.episode_view(&id, budget)?;
            print(&view, &view.rendered, json)
        }
        EpisodeCommand::Purge { id, reason, by } => {
            let engine = paths.engine(OpenMode::Existing)?;
            let report = engine.purge_episode(&id, &Attribution::new(by.as_deref(), reason))?;
            if json {
                return output::json(&report);
            }
            output::line(format!(
                "{} purged: {} decision(s) and {} event(s) erased and taken out of the graph",
                report.episode.id, report.decisions, report.events
            ))
        }
        EpisodeCommand::List {
            outcome,
            since,
            skill,
            limit,
            offset,
        } => {
            let engine = paths.engine(OpenMode::Existing)?;
            let page = engine.episodes_page(
                &EpisodeQuery {
                    skill,
                    outcome,
                    since,
                },
                PageRequest { limit, offset },
            )?;
            if json {
                return output::json(&page);
            }
            if page.items.is_empty() {
                return output::line("no episodes");
            }
            for e in &page.items {
                output::line(format!(
                    "{}  {}  {:<8} {:<24} {}",
                    e.timestamp.format("%Y-%m-%d %H:%M"),
                    e.id,
                    e.outcome.as_str(),
                    e.skill.as_str(),
                    one_line(&e.task)
                ))?;
            }
            if let Some(next) = page.next_offset {
                output::line(format!("more: --offset {next}"))?;
            }
            Ok(())
        }
    }
}

/// An Engine over an existing store whose budgets count cl100k_base tokens, as `lore recall`'s
/// default does.
fn reader(paths: &Paths) -> Result<lore_engine::Engine> {
    crate::config::counting_episodes(paths.engine(OpenMode::Existing)?)
}

pub fn graph(paths: &Paths, cmd: GraphCommand, json: bool) -> Result<()> {
    let engine = reader(paths)?;
    match cmd {
        GraphCommand::Export { format, out } => {
            let text = engine.causal_graph_export(format)?;
            match out {
                Some(file) => std::fs::write(&file, text)
                    .with_context(|| format!("writing {}", file.display())),
                None => output::line(text.trim_end()),
            }
        }
        GraphCommand::Path {
            from,
            to,
            strongest,
            budget,
        } => {
            let mode = if strongest {
                PathMode::Strongest
            } else {
                PathMode::Shortest
            };
            let path = engine.causal_path(&from, &to, mode, budget)?;
            print(&path, &path.rendered, json)
        }
        GraphCommand::WhatIf {
            episode,
            decision,
            alternative,
            min_overlap,
            budget,
        } => {
            let answer = engine.what_if(&episode, &decision, &alternative, min_overlap, budget)?;
            print(&answer, &answer.rendered, json)
        }
        GraphCommand::Similar {
            context,
            limit,
            budget,
        } => {
            let answer = engine.similar_decisions(&context, limit, budget)?;
            print(&answer, &answer.rendered, json)
        }
        GraphCommand::Patterns {
            min_success_rate,
            min_occurrences,
            limit,
            budget,
        } => {
            let query = PatternQuery {
                min_success_rate: Some(min_success_rate),
                max_success_rate: None,
                min_occurrences,
                limit,
            };
            let answer = engine.patterns(query, budget)?;
            print(&answer, &answer.rendered, json)
        }
        GraphCommand::AntiPatterns {
            max_success_rate,
            min_occurrences,
            limit,
            budget,
        } => {
            let query = PatternQuery {
                min_success_rate: None,
                max_success_rate: Some(max_success_rate),
                min_occurrences,
                limit,
            };
            let answer = engine.patterns(query, budget)?;
            print(&answer, &answer.rendered, json)
        }
    }
}

fn print<T: serde::Serialize>(value: &T, rendered: &Rendered, json: bool) -> Result<()> {
    if json {
        output::json(value)
    } else {
        output::line(&rendered.text)
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
