//! `lore digest …` and `lore eval …`: seed 004's wiki and training loop from the command line.
//! Who built, defined or ran something is the CLI's actor (`--by`, `LORE_ACTOR`, or `lore`).

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use lore_core::model::{DigestMethod, EvalQuestion};
use lore_engine::{EvalRunRequest, NewEvalSet};
use lore_sqlite::OpenMode;

use crate::cli::{DigestCommand, EvalCommand, EvalDefineArgs};
use crate::config::{Paths, with_proposer};
use crate::output;

pub fn digest(paths: &Paths, cmd: DigestCommand, json: bool) -> Result<()> {
    match cmd {
        DigestCommand::Build { skill, force, by } => {
            let engine = acting(with_proposer(paths.engine(OpenMode::Existing)?)?, by);
            let report = engine.build_digests(skill.as_ref(), force)?;
            if json {
                return output::json(&report);
            }
            output::line(format!(
                "built: {}  |  unchanged: {}",
                report.built.len(),
                report.unchanged.len()
            ))?;
            for d in &report.built {
                output::line(format!(
                    "  {}  {}  {} sources",
                    d.id,
                    d.skill,
                    d.sources.len()
                ))?;
                if let Some(why) = &d.model_error {
                    output::line(format!("    the model was not used: {why}"))?;
                }
            }
            Ok(())
        }
        DigestCommand::Show { skill } => {
            let all = paths.engine(OpenMode::Existing)?.digests(skill.as_ref())?;
            if json {
                return output::json(&all);
            }
            if all.is_empty() {
                bail!("no digest yet; `lore digest build` makes one from approved lessons");
            }
            for d in all {
                output::line(format!("{}\n", d.markdown.trim_end()))?;
            }
            Ok(())
        }
        DigestCommand::List => {
            let all = paths.engine(OpenMode::Existing)?.digests(None)?;
            if json {
                return output::json(&all);
            }
            for d in all {
                output::line(summary(&d))?;
            }
            Ok(())
        }
        DigestCommand::History {
            skill,
            limit,
            offset,
        } => {
            let all = (paths.engine(OpenMode::Existing)?)
                .digest_history(&skill, lore_engine::PageRequest { limit, offset })?
                .items;
            if json {
                return output::json(&all);
            }
            for d in all {
                output::line(summary(&d))?;
            }
            Ok(())
        }
    }
}

fn summary(d: &lore_core::model::Digest) -> String {
    let method = match &d.method {
        DigestMethod::Extractive => "extractive".to_owned(),
        DigestMethod::Model { model } => model.clone(),
    };
    format!(
        "{}  {}  {} sources  {}  {}",
        d.id,
        d.skill,
        d.sources.len(),
        method,
        d.generated_at.format("%Y-%m-%d %H:%M")
    )
}

pub fn eval(paths: &Paths, cmd: EvalCommand, json: bool) -> Result<()> {
    match cmd {
        EvalCommand::Define(args) => define(paths, args, json),
        EvalCommand::List { skill } => {
            let sets = paths
                .engine(OpenMode::Existing)?
                .eval_sets(skill.as_ref())?;
            if json {
                return output::json(&sets);
            }
            for s in sets {
                output::line(format!(
                    "{}  {}  {} questions  (by {}, {})",
                    s.skill,
                    s.name,
                    s.questions.len(),
                    s.defined_by,
                    s.updated_at.format("%Y-%m-%d %H:%M")
                ))?;
            }
            Ok(())
        }
        EvalCommand::Run { skill, set, by } => {
            let engine = acting(with_proposer(paths.engine(OpenMode::Existing)?)?, by);
            let runs = engine.run_evals(&EvalRunRequest { skill, set })?;
            if json {
                return output::json(&runs);
            }
            for r in runs {
                output::line(format!(
                    "{}  {}  {}  {}/{} passed ({:.0}%)",
                    r.id,
                    r.skill,
                    r.set,
                    r.passed,
                    r.total,
                    r.score * 100.0
                ))?;
                for g in r.grades.iter().filter(|g| !g.passed) {
                    let why = g.error.as_deref().unwrap_or("not in the recalled context");
                    output::line(format!(
                        "  failed ({}): {}  expected {:?}: {why}",
                        g.grader.as_str(),
                        lore_core::text::shorten(&g.question, 60),
                        lore_core::text::shorten(&g.expected, 40)
                    ))?;
                }
            }
            Ok(())
        }
        EvalCommand::Runs { skill, set } => {
            let runs = paths
                .engine(OpenMode::Existing)?
                .eval_runs(skill.as_ref(), set.as_deref())?;
            if json {
                return output::json(&runs);
            }
            for r in runs {
                output::line(format!(
                    "{}  {}  {}  {}/{}  {:?}  {}",
                    r.id,
                    r.skill,
                    r.set,
                    r.passed,
                    r.total,
                    r.trigger,
                    r.run_at.format("%Y-%m-%d %H:%M")
                ))?;
            }
            Ok(())
        }
        EvalCommand::Trend { skill, recent } => {
            let trends = paths
                .engine(OpenMode::Existing)?
                .eval_trends(skill.as_ref(), Some(recent))?;
            if json {
                return output::json(&trends);
            }
            for t in trends {
                let scores: Vec<String> = t
                    .points
                    .iter()
                    .map(|p| format!("{:.0}%", p.score * 100.0))
                    .collect();
                output::line(format!(
                    "{}  {}  {}  change {:+.0} points over {} of {} runs",
                    t.skill,
                    t.set,
                    scores.join(" → "),
                    t.change * 100.0,
                    t.points.len(),
                    t.runs
                ))?;
            }
            Ok(())
        }
    }
}

fn define(paths: &Paths, args: EvalDefineArgs, json: bool) -> Result<()> {
    if args.questions.len() != args.expected.len() {
        bail!(
            "--question and --expected pair up: {} questions, {} expected answers",
            args.questions.len(),
            args.expected.len()
        );
    }
    let mut questions = match &args.file {
        Some(path) => read_questions(path)?,
        None => Vec::new(),
    };
    questions.extend(
        args.questions
            .into_iter()
            .zip(args.expected)
            .map(|(question, expected)| EvalQuestion {
                question,
                expected,
                grader: args.grader,
            }),
    );
    let engine = acting(with_proposer(paths.engine(OpenMode::Create)?)?, args.by);
    let set = engine.define_eval_set(NewEvalSet {
        skill: Some(args.skill),
        name: args.name,
        questions,
    })?;
    if json {
        return output::json(&set);
    }
    output::line(format!(
        "{}  {}  {} questions",
        set.skill,
        set.name,
        set.questions.len()
    ))
}

/// Questions from a JSON array or JSON lines (`-`: standard input).
fn read_questions(path: &Path) -> Result<Vec<EvalQuestion>> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(&text).with_context(|| format!("in {}", path.display()));
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}, line {}", path.display(), i + 1))
        })
        .collect()
}

fn acting(engine: lore_engine::Engine, by: Option<String>) -> lore_engine::Engine {
    match by {
        Some(by) => engine.acting_as(by),
        None => engine,
    }
}
