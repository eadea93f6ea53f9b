//! `lore review` and `lore maintain`: the curation commands.
//!
//! `lore review` alone lists what waits, with its evidence and redacted; each decision is a
//! subcommand taking one or more lesson IDs, applied all-or-nothing by the Engine.

use std::collections::BTreeSet;

use anyhow::Result;
use chrono::TimeDelta;
use lore_core::model::{Lesson, LessonStatus};
use lore_engine::{Attribution, MaintainReport, Pruning, ReviewItem, Upkeep};
use lore_sqlite::OpenMode;

use crate::cli::{Decision, MaintainArgs, ReviewArgs, ReviewCommand};
use crate::config::Paths;
use crate::output;

impl Decision {
    fn attribution(&self) -> Attribution {
        Attribution::new(self.by.as_deref(), self.reason.clone())
    }
}

impl MaintainArgs {
    fn upkeep(&self) -> Upkeep {
        let max_age = TimeDelta::days(i64::from(self.ttl_days));
        let max_lessons = self.max_lessons;
        let pruning = match self.prune.as_str() {
            "ttl" => Pruning::Ttl { max_age },
            "pareto" => Pruning::Pareto { max_lessons },
            "hybrid" => Pruning::Hybrid {
                max_age,
                max_lessons,
            },
            _ => Pruning::Off,
        };
        Upkeep {
            review_expiry: TimeDelta::days(i64::from(self.expire_after_days)),
            pruning,
        }
    }
}

pub fn review(paths: &Paths, args: ReviewArgs, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    let command = args.command.unwrap_or(ReviewCommand::List {
        skill: None,
        status: Vec::new(),
    });
    let (changed, verb) = match command {
        ReviewCommand::List { skill, status } => {
            let statuses =
                (!status.is_empty()).then(|| status.into_iter().collect::<BTreeSet<_>>());
            return list(&engine.review_queue(skill.as_ref(), statuses)?, json);
        }
        ReviewCommand::Approve(d) => (engine.approve(&d.ids, &d.attribution())?, "approved"),
        ReviewCommand::Reject(d) => (engine.reject(&d.ids, &d.attribution())?, "rejected"),
        ReviewCommand::Exception(d) => (
            engine.mark_one_time_exception(&d.ids, &d.attribution())?,
            "kept as a one-time exception",
        ),
        ReviewCommand::Sensitive(d) => (
            engine.mark_sensitive(&d.ids, &d.attribution())?,
            "marked sensitive",
        ),
        ReviewCommand::Supersede { decision, with } => (
            engine.supersede(&decision.ids, &with, &decision.attribution())?,
            "superseded",
        ),
        ReviewCommand::Unlink { ids, reason, by } => {
            let why = Attribution::new(by.as_deref(), reason);
            (engine.unlink(&ids[0], &ids[1], &why)?.to_vec(), "unlinked")
        }
    };
    decided(&changed, verb, json)
}

fn decided(lessons: &[Lesson], verb: &str, json: bool) -> Result<()> {
    if json {
        let ids: Vec<_> = lessons
            .iter()
            .map(|l| serde_json::json!({ "id": l.id, "status": l.status }))
            .collect();
        return output::json(&ids);
    }
    for l in lessons {
        output::line(format!("{} {verb}", l.id))?;
    }
    Ok(())
}

fn list(items: &[ReviewItem], json: bool) -> Result<()> {
    if json {
        return output::json(items);
    }
    if items.is_empty() {
        return output::line("nothing waits for review");
    }
    for item in items {
        let l = &item.lesson;
        output::line(format!(
            "{}  [{}]  {}  confidence {:.2}",
            l.id,
            l.status.as_str(),
            l.skill,
            l.confidence
        ))?;
        output::line(format!("  rule:         {}", one_line(&l.rule)))?;
        output::line(format!("  applies when: {}", one_line(&l.applies_when)))?;
        if let Some(c) = &item.correction {
            output::line(format!("  correction:   {}", one_line(c)))?;
        }
        if !l.merged_from.is_empty() {
            output::line(format!(
                "  evidence:     {} corrections",
                l.merged_from.len() + 1
            ))?;
        }
        if !item.findings.is_empty() {
            let kinds: Vec<&str> = item.findings.iter().map(|k| k.as_str()).collect();
            output::line(format!("  sensitive:    {}", kinds.join(", ")))?;
        }
        for r in &item.related {
            let kind = serde_json::to_value(r.kind)?;
            let status = r.status.map_or("gone", LessonStatus::as_str);
            let rule = r.rule.as_deref().map(one_line).unwrap_or_default();
            output::line(format!(
                "  {:<13} {} [{status}] {rule}",
                format!("{}:", kind.as_str().unwrap_or_default()),
                r.id
            ))?;
        }
        if let Some(why) = &item.flagged {
            output::line(format!("  why here:     {why}"))?;
        }
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn maintain(paths: &Paths, args: MaintainArgs, json: bool) -> Result<()> {
    let mut paths = paths.clone();
    paths.engine_config.upkeep = args.upkeep();
    if !(0.0..=1.0).contains(&args.min_quality) {
        anyhow::bail!("--min-quality: {} is outside 0 to 1", args.min_quality);
    }
    paths.engine_config.capture = lore_engine::Capture {
        strategy: args.capture,
        min_quality: args.min_quality,
        ..Default::default()
    };
    let engine = crate::config::with_proposer(paths.engine(OpenMode::Existing)?)?;
    let report: MaintainReport = engine.maintain()?;
    if json {
        return output::json(&report);
    }
    let utility = &report.utility;
    output::line(format!(
        "expired: {}  |  measured: {}  |  promoted: {}  |  suppressed: {}  |  pruned by age: {}  |  pruned by rank: {}",
        report.expired.len(),
        utility.measured.len(),
        utility.promoted.len(),
        utility.suppressed.len(),
        report.pruned_by_age.len(),
        report.pruned_by_rank.len()
    ))?;
    let changed = [
        (
            "sensitive (the detector now finds personal or secret data in it)",
            &report.sensitive,
        ),
        ("expired", &report.expired),
        (
            "proposed (from a recurring error or a well-graded run)",
            &report.proposed,
        ),
        ("promoted", &utility.promoted),
        ("suppressed", &utility.suppressed),
        ("back on trial", &utility.reinstated),
        ("harmful, left for review", &utility.harmful),
        ("pruned by age", &report.pruned_by_age),
        ("pruned by rank", &report.pruned_by_rank),
    ];
    for (what, ids) in changed {
        for id in ids {
            output::line(format!("  {id}  {what}"))?;
        }
    }
    for id in &report.sensitive_decisions {
        output::line(format!(
            "  {id}  decision sensitive (the detector now finds personal or secret data in it)"
        ))?;
    }
    for id in &report.digests {
        output::line(format!("  {id}  digest made again (its sources changed)"))?;
    }
    for run in &report.evals {
        output::line(format!(
            "  {}  evaluation {} of {}: {}/{} passed (its memory changed)",
            run.id, run.set, run.skill, run.passed, run.total
        ))?;
    }
    for id in &report.files.guardrails {
        output::line(format!("  {id}  guardrail rewritten (it was missing)"))?;
    }
    for id in &report.files.tests {
        output::line(format!(
            "  {id}  regression case rewritten (it was missing)"
        ))?;
    }
    if let Some(pool) = &report.org_pool {
        for id in pool.patterns.iter().filter_map(|p| p.proposal.as_ref()) {
            output::line(format!("  {id}  org pool: waits for a person"))?;
        }
    }
    Ok(())
}
