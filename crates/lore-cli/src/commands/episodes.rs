//! `lore episode add|extract|show|list|purge` and
//! `lore graph path|what-if|similar|patterns|anti-patterns`.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use chrono::{DateTime, NaiveDate, Utc};
use clap::Subcommand;
use lore_core::SkillPath;
use lore_core::graph::PathMode;
use lore_core::id::EpisodeId;
use lore_core::model::{Episode, EpisodeOutcome};
use lore_engine::{Attribution, EpisodeQuery, PageRequest, PatternQuery, Rendered};
use lore_sqlite::OpenMode;
use lore_tokenizer::{Encoding, Tiktoken};

use crate::config::Paths;
use crate::output;

#[derive(Debug, Subcommand)]
pub enum EpisodeCommand {
    /// Record an episode from seed 001's JSON (a file, or `-` for standard input).
    Add {
        /// The JSON file, or `-`.
        file: PathBuf,
        /// The skill, when the JSON names none (`domain/skill`).
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Replace an episode stored under the same ID (refused otherwise).
        #[arg(long)]
        replace: bool,
    },
    /// Turn a session log into an episode and record it: the documented markdown format
    /// offline (see the README), or any log with the configured model (`--llm`).
    Extract {
        /// The session log, or `-` for standard input.
        file: PathBuf,
        /// The skill, when the log names none (`domain/skill`); required with `--llm`.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Extract with the configured model (LORE_LLM_*) instead of the offline parser.
        #[arg(long)]
        llm: bool,
        /// Print the extracted episode as JSON without recording it.
        #[arg(long)]
        dry_run: bool,
        /// Replace an episode stored under the same ID (refused otherwise).
        #[arg(long)]
        replace: bool,
    },
    /// One episode, within a token budget.
    Show {
        /// The episode ID.
        id: EpisodeId,
        /// Only its decisions, in the order they were made.
        #[arg(long)]
        decisions: bool,
        /// Token budget of the text (default 500).
        #[arg(long)]
        budget: Option<usize>,
    },
    /// List episodes, oldest first.
    List {
        /// Only episodes that ended so: success, partial or failure.
        #[arg(long, value_parser = parse_outcome)]
        outcome: Option<EpisodeOutcome>,
        /// Only episodes started at or after this time (RFC 3339, or a date: 2026-01-31).
        #[arg(long, value_parser = parse_since)]
        since: Option<DateTime<Utc>>,
        /// Only this skill.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 50)]
        limit: usize,
        /// Skip this many first.
        #[arg(long, default_value_t = 0)]
        offset: usize,
    },
    /// Erase an episode's content for good and take it out of the causal graph (audited).
    Purge {
        /// The episode ID.
        id: EpisodeId,
        /// Why (recorded in the audit log; required).
        #[arg(long)]
        reason: String,
        /// Who (recorded in the audit log).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// The causal path between two nodes (`kind:label` or a label), with its evidence.
    Path {
        /// Where the path starts: `decision:use redis`, `event:cache timeout`, or a label.
        #[arg(long)]
        from: String,
        /// Where it ends: `outcome:failure`, or any node.
        #[arg(long)]
        to: String,
        /// The strongest path (highest product of weights) instead of the shortest.
        #[arg(long)]
        strongest: bool,
        /// Token budget of the text (default 200).
        #[arg(long)]
        budget: Option<usize>,
    },
    /// What happened elsewhere when a similar decision chose another option.
    WhatIf {
        /// The episode.
        episode: EpisodeId,
        /// The decision's ID in it.
        decision: String,
        /// The option not taken.
        alternative: String,
        /// The share of the decision's context terms a situation must share to count as
        /// similar (default 0.5).
        #[arg(long)]
        min_overlap: Option<f64>,
        /// Token budget of the text (default 1000).
        #[arg(long)]
        budget: Option<usize>,
    },
    /// Decisions made in situations like this one.
    Similar {
        /// The situation, in plain words.
        context: String,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 5)]
        limit: usize,
        /// Token budget of the text (default 500).
        #[arg(long)]
        budget: Option<usize>,
    },
    /// Trigger → action patterns that worked.
    Patterns {
        /// The lowest success rate shown.
        #[arg(long, default_value_t = 0.7)]
        min_success_rate: f64,
        /// The fewest occurrences shown.
        #[arg(long, default_value_t = 3)]
        min_occurrences: u64,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 10)]
        limit: usize,
        /// Token budget of the text (default 100).
        #[arg(long)]
        budget: Option<usize>,
    },
    /// Trigger → action patterns that failed.
    AntiPatterns {
        /// The highest success rate shown.
        #[arg(long, default_value_t = 0.3)]
        max_success_rate: f64,
        /// The fewest occurrences shown.
        #[arg(long, default_value_t = 2)]
        min_occurrences: u64,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 10)]
        limit: usize,
        /// Token budget of the text (default 100).
        #[arg(long)]
        budget: Option<usize>,
    },
}

fn parse_outcome(raw: &str) -> Result<EpisodeOutcome, String> {
    EpisodeOutcome::parse(raw).map_err(|e| e.to_string())
}

fn parse_since(raw: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(raw) {
        return Ok(at.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc())
        .map_err(|_| format!("{raw:?}: expected an RFC 3339 time or a date (2026-01-31)"))
}

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
                let model = crate::commands::run::required_model()?;
                lore_engine::extract::with_model(model.as_ref(), &log, &skill)?
            } else {
                let value = lore_engine::extract::from_markdown(&log)?;
                Episode::from_json(value, skill.as_ref())?
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
            decisions,
            budget,
        } => {
            let engine = reader(paths)?;
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
    counting_episodes(paths.engine(OpenMode::Existing)?)
}

/// `engine` counting episode and graph budgets in cl100k_base tokens: the CLI's reads, `lore
/// serve` and `lore mcp` all go through here, so one episode is cut at the same token whichever
/// of them answers.
pub(crate) fn counting_episodes(engine: lore_engine::Engine) -> Result<lore_engine::Engine> {
    Ok(engine.with_episode_tokenizer(Tiktoken::shared(Encoding::Cl100k)?))
}

pub fn graph(paths: &Paths, cmd: GraphCommand, json: bool) -> Result<()> {
    let engine = reader(paths)?;
    match cmd {
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
