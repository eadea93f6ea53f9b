//! `lore record`, `lore correct` and `lore learn`: what agents did, what people said about it,
//! and lessons that already exist.

use std::io::Read;

use anyhow::{Context, Result, bail};
use lore_engine::{NewCorrection, NewExecution, NewSignal};
use lore_sqlite::OpenMode;

use crate::cli::{CorrectArgs, LearnArgs, RecordArgs, SignalArgs};
use crate::config::Paths;
use crate::input::json_arg;
use crate::output;

pub fn record(paths: &Paths, args: RecordArgs, json: bool) -> Result<()> {
    let input = json_arg("--input", &args.input)?;
    let output = json_arg("--output", &args.output)?;
    let engine = paths.engine(OpenMode::Create)?;
    // Agents record runs of skills nobody wrote a SKILL.md for, so a new skill is allowed; but
    // a typo would quietly start one, so a skill Lore has never seen gets a warning.
    if !args.new
        && !paths.skill_dir(&args.skill).join("SKILL.md").is_file()
        && engine.executions(Some(&args.skill), Some(1))?.is_empty()
    {
        eprintln!(
            "warning: {} is a new skill (no SKILL.md under {} and no earlier run); check its \
             name, or pass --new to say it is new",
            args.skill,
            paths.skills.display()
        );
    }
    let execution = engine.record_execution(NewExecution {
        skill: args.skill,
        input,
        output,
        outcome: args.outcome,
        cost_usd: args.cost_usd,
        latency_ms: args.latency_ms,
        model: args.model,
        session: args.session,
        lessons_shown: args.lessons_shown,
    })?;
    if json {
        output::json(&execution)
    } else {
        output::line(execution.id.as_str())
    }
}

pub fn correct(paths: &Paths, args: CorrectArgs, json: bool) -> Result<()> {
    if args.correction.trim().is_empty() {
        bail!("--correction is empty: say what was wrong and what should change");
    }
    let engine = crate::config::with_proposer(paths.engine(OpenMode::Existing)?)?;
    let outcome = engine.correct(NewCorrection {
        skill: args.skill,
        execution_id: args.execution_id,
        text: args.correction,
        author_kind: args.author_kind,
        author: args.by,
    })?;
    let test = engine.write_regression_test(&outcome)?;
    if json {
        let mut value = serde_json::to_value(&outcome)?;
        value["regression_test"] = serde_json::to_value(&test)?;
        return output::json(&value);
    }
    if let Some(err) = outcome.correction.extra.get("proposer_error") {
        output::line(format!(
            "proposer   failed, so the lesson was distilled offline: {}",
            err["error"].as_str().unwrap_or_default()
        ))?;
    }
    if let Some(note) = outcome
        .correction
        .extra
        .get(lore_engine::PROPOSAL_DISCARDED)
    {
        output::line(format!(
            "proposer   proposal discarded: {}",
            note["why"].as_str().unwrap_or_default()
        ))?;
    }
    if let Some(test) = &test {
        output::line(format!(
            "test       {} ({})",
            test.id,
            test.promptfoo_file.display()
        ))?;
    }
    output::line(format!("correction {}", outcome.correction.id))?;
    let Some(lesson) = &outcome.lesson else {
        let why = outcome.lesson_skipped.as_deref().unwrap_or_default();
        return output::line(format!("lesson     none made: {why}"));
    };
    output::line(format!(
        "lesson     {} ({}, confidence {:.0}%)",
        lesson.id,
        lesson.status.as_str(),
        lesson.confidence * 100.0
    ))?;
    match (&outcome.guardrail, &outcome.guardrail_skipped) {
        (Some(path), _) => output::line(format!("guardrail  {path}")),
        (None, Some(why)) => output::line(format!("guardrail  not written: {why}")),
        (None, None) => Ok(()),
    }
}

pub fn signal(paths: &Paths, args: SignalArgs, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    let step = lore_engine::FailedTransition {
        before: args.state_before,
        after: args.state_after,
        reason: args.failure_reason,
    };
    let signal = NewSignal {
        execution_id: args.execution_id,
        channel: args.channel,
        message: args.message,
        value: args.value,
        action: args.action,
        tags: args.tags,
    };
    let event = engine.report_transition(signal, step)?;
    if json {
        output::json(&event)
    } else {
        output::line(format!(
            "{}  {}  [{}]",
            event.id,
            event.fingerprint,
            event.tags.join(", ")
        ))
    }
}

/// `lore learn --jsonl FILE`: every line validated first (a bad line stores nothing), then
/// learned in batches; lines learned before are counted, not stored again.
pub fn learn(paths: &Paths, args: LearnArgs, json: bool) -> Result<()> {
    let text = if args.jsonl.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(&args.jsonl)
            .with_context(|| format!("reading {}", args.jsonl.display()))?
    };
    let lines = lore_engine::learn::parse_jsonl(&text).with_context(|| {
        format!(
            "{} holds a bad line; nothing was stored",
            args.jsonl.display()
        )
    })?;
    let engine = paths.engine(OpenMode::Create)?;
    let report = engine.learn_lessons(&lines, args.author_kind, args.by.as_deref())?;
    if json {
        return output::json(&report);
    }
    output::line(format!(
        "{} lines: {} new lessons, {} merged into existing ones, {} learned before",
        report.lines, report.learned, report.merged, report.already
    ))?;
    if !report.statuses.is_empty() {
        let states: Vec<String> = report
            .statuses
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect();
        output::line(format!("new lessons: {}", states.join(", ")))?;
    }
    if report.guardrails > 0 {
        output::line(format!("guardrails: {} written", report.guardrails))?;
    }
    Ok(())
}
