//! The arguments of `lore episode` and `lore graph`.

use std::path::PathBuf;

use chrono::{DateTime, NaiveDate, Utc};
use clap::Subcommand;
use lore_core::SkillPath;
use lore_core::graph_export::GraphFormat;
use lore_core::id::EpisodeId;
use lore_core::model::EpisodeOutcome;

#[derive(Debug, Subcommand)]
pub enum EpisodeCommand {
    /// Record an episode from its JSON: the session, its decisions (with the options weighed
    /// and the one chosen), the events and what caused them (a file, or `-` for standard input).
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
    /// offline (the format is in docs/commands.md, "Session logs"), or any log with the configured model (`--llm`).
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
    /// One episode, within a token budget: by its ID, or by its session (`--session`).
    Show {
        /// The episode ID.
        #[arg(required_unless_present = "session")]
        id: Option<EpisodeId>,
        /// The session instead of the ID: every episode recorded for it, oldest first.
        #[arg(long, conflicts_with_all = ["id", "decisions"])]
        session: Option<String>,
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
    /// The whole causal graph as JSON (nodes and their cause-and-effect links), or Graphviz DOT to draw
    /// (`lore graph export --format dot | dot -Tsvg > graph.svg`).
    Export {
        /// `json` or `dot`.
        #[arg(long, default_value = "json", value_parser = parse_graph_format)]
        format: GraphFormat,
        /// Write it to this file instead of standard output.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
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

fn parse_graph_format(raw: &str) -> Result<GraphFormat, String> {
    GraphFormat::parse(raw).map_err(|e| e.to_string())
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
