//! `lore lessons list|show|edit|retire`: a command for what seed 000 left to hand-editing JSON.
//!
//! Lessons are printed redacted, as the server answers them; `show --raw` prints the text as
//! written and records the read in the audit log.

use std::collections::BTreeSet;

use anyhow::Result;
use lore_core::model::{Lesson, RecordKind};
use lore_core::sensitive;
use lore_engine::{Attribution, LessonEdit};
use lore_sqlite::OpenMode;

use crate::cli::LessonsCommand;
use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, cmd: LessonsCommand, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    match cmd {
        LessonsCommand::List { skill, status } => {
            let statuses =
                (!status.is_empty()).then(|| status.into_iter().collect::<BTreeSet<_>>());
            let lessons: Vec<Lesson> = engine
                .lessons(skill.as_ref(), statuses)?
                .iter()
                .map(sensitive::redact_lesson)
                .collect();
            if json {
                return output::json(&lessons);
            }
            if lessons.is_empty() {
                return output::line("no lessons");
            }
            for l in &lessons {
                output::line(format!(
                    "{:<30} {:<12} {:>4.0}%  {:<24} {}",
                    l.id,
                    l.status.as_str(),
                    l.confidence * 100.0,
                    l.skill,
                    l.tiers.summary
                ))?;
            }
            Ok(())
        }
        LessonsCommand::Show { id, raw, by } => {
            let mut lesson = engine.lesson(&id)?;
            let mut audit = engine.lesson_audit(&id)?;
            if raw {
                let engine = match by {
                    Some(by) => engine.acting_as(by),
                    None => engine,
                };
                engine.record_disclosure(
                    RecordKind::Lesson,
                    id.as_str(),
                    "lore lessons show --raw",
                )?;
            } else {
                lesson = sensitive::redact_lesson(&lesson);
                audit = audit.iter().map(sensitive::redact_audit).collect();
            }
            if json {
                return output::json(&serde_json::json!({ "lesson": lesson, "audit": audit }));
            }
            show(&lesson)?;
            output::line("audit:")?;
            for a in audit {
                let action = serde_json::to_value(a.action)?;
                let transition = match (a.from, a.to) {
                    (Some(f), Some(t)) => format!(" {} -> {}", f.as_str(), t.as_str()),
                    (None, Some(t)) => format!(" -> {}", t.as_str()),
                    _ => String::new(),
                };
                output::line(format!(
                    "  {}  {}{}  by {}: {}",
                    a.at.format("%Y-%m-%d %H:%M:%S"),
                    action.as_str().unwrap_or_default(),
                    transition,
                    a.actor,
                    a.reason
                ))?;
            }
            Ok(())
        }
        LessonsCommand::Edit(args) => {
            let edit = LessonEdit {
                rule: args.rule,
                applies_when: args.applies_when,
                mistake: args.mistake,
                root_cause: args.root_cause,
                confidence: args.confidence,
                tags: args.tags,
            };
            let lesson = engine.edit_lesson(&args.id, edit, args.by.as_deref(), &args.reason)?;
            let lesson = sensitive::redact_lesson(&lesson);
            if json {
                output::json(&lesson)
            } else {
                show(&lesson)
            }
        }
        LessonsCommand::Purge(args) => {
            let why = Attribution::new(args.by.as_deref(), args.reason);
            let report = engine.purge_lesson(&args.id, &why)?;
            if json {
                return output::json(&report);
            }
            output::line(format!(
                "{} purged ({}); {} correction(s) erased",
                report.lesson.id,
                report.lesson.status.as_str(),
                report.corrections.len()
            ))
        }
        LessonsCommand::Retire { id, reason, by } => {
            let lesson = engine.retire_lesson(&id, by.as_deref(), &reason)?;
            if json {
                output::json(&lesson)
            } else {
                output::line(format!("{} archived", lesson.id))
            }
        }
    }
}

fn show(l: &Lesson) -> Result<()> {
    output::line(format!("{}  [{}]  {}", l.id, l.status.as_str(), l.skill))?;
    output::line(format!("  rule:         {}", l.rule))?;
    output::line(format!("  applies when: {}", l.applies_when))?;
    output::line(format!("  mistake:      {}", l.mistake))?;
    output::line(format!("  root cause:   {}", l.root_cause))?;
    output::line(format!("  confidence:   {:.2}", l.confidence))?;
    if !l.tags.is_empty() {
        output::line(format!("  tags:         {}", l.tags.join(", ")))?;
    }
    if let Some(c) = &l.correction_id {
        output::line(format!("  correction:   {c}"))?;
    }
    output::line(format!("  validated:    {}", l.validated_by_test))
}
