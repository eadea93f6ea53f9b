//! `lore decision …`: the decision corpus from the command line. Who decided is the CLI's
//! actor (`--by`, `LORE_ACTOR`, or `lore`), as for corrections.

use anyhow::Result;
use lore_engine::{DecisionQuery, NewDecision};
use lore_sqlite::OpenMode;

use crate::cli::{DecisionCommand, DecisionRecordArgs};
use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, cmd: DecisionCommand, json: bool) -> Result<()> {
    match cmd {
        DecisionCommand::Record(args) => record(paths, args, json),
        DecisionCommand::Review {
            ids,
            to,
            reason,
            by,
        } => {
            let engine = acting(paths.engine(OpenMode::Existing)?, by);
            let moved = engine.review_decisions(&ids, to, &reason)?;
            if json {
                return output::json(&moved);
            }
            for d in moved {
                output::line(format!("{} → {}", d.id, d.status.as_str()))?;
            }
            Ok(())
        }
        DecisionCommand::List { skill, status } => {
            let engine = paths.engine(OpenMode::Existing)?;
            let all = engine.list_decisions(skill.as_ref(), status)?;
            if json {
                return output::json(&all);
            }
            for d in all {
                output::line(format!(
                    "{}  {:<14} {}  {} → {}",
                    d.id,
                    d.status.as_str(),
                    d.skill,
                    lore_core::text::shorten(&d.situation, 60),
                    lore_core::text::shorten(&d.action, 40)
                ))?;
            }
            Ok(())
        }
        DecisionCommand::Recall {
            query,
            skill,
            limit,
        } => {
            let engine = paths.engine(OpenMode::Existing)?;
            let result = engine.recall_decisions(&DecisionQuery {
                text: query,
                skill,
                limit: Some(limit),
                ..DecisionQuery::default()
            })?;
            if json {
                return output::json(&result);
            }
            output::line(format!(
                "{} decisions, {}/{} tokens",
                result.decisions.len(),
                result.tokens,
                result.budget
            ))?;
            if !result.text.is_empty() {
                output::line(format!("\n{}", result.text))?;
            }
            Ok(())
        }
    }
}

fn record(paths: &Paths, args: DecisionRecordArgs, json: bool) -> Result<()> {
    let engine = acting(paths.engine(OpenMode::Create)?, args.by);
    let d = engine.record_decision(NewDecision {
        skill: Some(args.skill),
        situation: args.situation,
        action: args.action,
        rationale: args.rationale,
        outcome: args.outcome,
        resolves: args.resolves,
    })?;
    if json {
        return output::json(&d);
    }
    output::line(format!("{} ({})", d.id, d.status.as_str()))
}

/// The engine acting for `by`: on the command line the machine's user owns the store, so the
/// name given is who decided.
fn acting(engine: lore_engine::Engine, by: Option<String>) -> lore_engine::Engine {
    match by {
        Some(by) => engine.acting_as(by),
        None => engine,
    }
}
