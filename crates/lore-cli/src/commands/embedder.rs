//! `lore embedder …`: call the Engine's embedder lifecycle, print the result.

use anyhow::Result;
use lore_core::id::CheckpointId;
use lore_core::ports::tuning::{Checkpoint, Evaluation, TunePlan, TuneRun};
use lore_engine::Admin;
use lore_sqlite::OpenMode;

use crate::cli::{AdminArgs, EmbedderCommand, PlanArgs};
use crate::config::Paths;
use crate::output;

/// The configured plan (`[tuning]` in `lore.toml`) with the command line's overrides.
fn plan(base: TunePlan, args: &PlanArgs) -> TunePlan {
    let mut plan = base;
    if let Some(epochs) = args.epochs {
        plan.epochs = epochs;
    }
    if let Some(rate) = args.learning_rate {
        plan.learning_rate = rate;
    }
    if let Some(held_out) = args.held_out {
        plan.held_out = held_out;
    }
    if let Some(seed) = args.seed {
        plan.seed = seed;
    }
    if let Some(by) = args.held_out_by {
        plan.held_out_by = by;
    }
    plan
}

fn admin(args: &AdminArgs) -> Admin {
    Admin {
        actor: args.by.clone().unwrap_or_default(),
        confirm: args.confirm,
        reason: args.reason.clone(),
    }
}

fn figures(e: &Evaluation) -> String {
    format!(
        "held-out MRR {:.3} base, {:.3} adapter; hit@1 {:.3} base, {:.3} adapter ({} held-out \
         pairs, {} trained on){}",
        e.base.mrr,
        e.adapter.mrr,
        e.base.hit_at_1,
        e.adapter.hit_at_1,
        e.held_out_pairs,
        e.train_pairs,
        if e.better {
            ""
        } else {
            "; not better than the base: it cannot become active"
        }
    )
}

fn run_line(run: &TuneRun) -> String {
    let mut line = format!(
        "{}  {}  epoch {}/{}",
        run.id,
        run.status.as_str(),
        run.epochs_done,
        run.plan.epochs
    );
    if let Some(loss) = run.loss {
        line.push_str(&format!("  loss {loss:.4}"));
    }
    if let Some(beat) = run.heartbeat_at {
        line.push_str(&format!(
            "  heartbeat {}",
            beat.format("%Y-%m-%d %H:%M:%S UTC")
        ));
    }
    if let Some(c) = &run.checkpoint {
        line.push_str(&format!("  checkpoint {c}"));
    }
    if let Some(e) = &run.evaluation {
        line.push_str(&format!("\n  {}", figures(e)));
    }
    if let Some(err) = &run.error {
        line.push_str(&format!("\n  {err}"));
    }
    line
}

fn checkpoint_line(c: &Checkpoint) -> String {
    format!("{}  run {}  {}", c.id, c.run, figures(&c.evaluation))
}

pub fn run(paths: &Paths, cmd: EmbedderCommand, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    match cmd {
        EmbedderCommand::Preflight(args) => {
            let report = engine.tuning_preflight(&plan(engine.tuning_plan(), &args))?;
            if json {
                return output::json(&report);
            }
            output::line(format!(
                "{} lessons, {} queries with feedback: {} helpful pairs ({} held out), {} suppressed",
                report.lessons,
                report.queries,
                report.helpful_pairs,
                report.held_out_pairs,
                report.suppressed_pairs
            ))?;
            if report.problems.is_empty() {
                return output::line("ready to train");
            }
            report
                .problems
                .iter()
                .try_for_each(|p| output::line(format!("problem: {p}")))
        }
        EmbedderCommand::Train(args) => {
            let run = engine.start_tuning(plan(engine.tuning_plan(), &args), args.by.as_deref())?;
            show_run(&run, json)
        }
        EmbedderCommand::Resume { run } => show_run(&engine.resume_tuning(&run)?, json),
        EmbedderCommand::Status { run } => show_run(&engine.tuning_status(run.as_ref())?, json),
        EmbedderCommand::Runs { limit, offset } => {
            let (runs, total) = engine.tuning_runs(limit, offset)?;
            if json {
                return output::json(&serde_json::json!({"runs": runs, "total": total}));
            }
            runs.iter().try_for_each(|r| output::line(run_line(r)))?;
            output::line(format!("{} of {total} runs", runs.len()))
        }
        EmbedderCommand::Checkpoints => {
            let checkpoints = engine.checkpoints()?;
            if json {
                return output::json(&checkpoints);
            }
            checkpoints
                .iter()
                .try_for_each(|c| output::line(checkpoint_line(c)))
        }
        EmbedderCommand::Active => {
            let active = engine.active_embedder()?;
            if json {
                return output::json(&active);
            }
            let recall = active
                .recall
                .as_ref()
                .map_or_else(|| "not built yet".to_owned(), ToString::to_string);
            output::line(format!("recall embeds with {recall}"))?;
            match (&active.checkpoint, &active.evaluation) {
                (Some(c), Some(e)) => output::line(format!("checkpoint {c}: {}", figures(e))),
                _ => output::line("no adapter: the base embedder alone"),
            }
        }
        EmbedderCommand::Activate {
            checkpoint,
            admin: a,
        } => {
            let switch = engine.activate_checkpoint(&checkpoint, &admin(&a))?;
            show_switch(&switch, json)
        }
        EmbedderCommand::Rollback { to, admin: a } => {
            let to = match to.as_str() {
                "base" => None,
                id => Some(CheckpointId::parse(id)?),
            };
            let switch = engine.rollback_embedder(to.as_ref(), &admin(&a))?;
            show_switch(&switch, json)
        }
        EmbedderCommand::DeleteCheckpoint {
            checkpoint,
            admin: a,
        } => {
            let deleted = engine.delete_checkpoint(&checkpoint, &admin(&a))?;
            if json {
                return output::json(&serde_json::json!({"deleted": deleted}));
            }
            output::line(format!("deleted {deleted}"))
        }
        EmbedderCommand::Cancel { run, admin: a } => {
            let cancelled = engine.cancel_tuning(run.as_ref(), &admin(&a))?;
            if json {
                return output::json(&serde_json::json!({"cancelled": cancelled}));
            }
            match cancelled {
                Some(id) => output::line(format!("cancelled {id}")),
                None => output::line("no run was running"),
            }
        }
    }
}

fn show_run(run: &TuneRun, json: bool) -> Result<()> {
    if json {
        return output::json(run);
    }
    output::line(run_line(run))
}

fn show_switch(switch: &lore_engine::Switch, json: bool) -> Result<()> {
    if json {
        return output::json(switch);
    }
    output::line(format!(
        "recall now embeds with {} ({} lessons re-embedded)",
        switch.embedder, switch.lessons
    ))
}
