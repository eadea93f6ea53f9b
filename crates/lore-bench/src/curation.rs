//! `lore bench curation`: are people's corrections kept as they meant them?
//!
//! The data are pairs of corrections, one JSON object a line (`class`, `first`, `second`), in
//! four classes: the same rule reworded (it should merge), a rule about a different subject
//! (two lessons), the opposite directive in the same situation (a conflict, sent to review)
//! and a compatible addition (two lessons, no conflict). Each pair gets a skill of its own in
//! one store; both corrections are made by a person, each on a failed run of its own, through
//! [`Engine::correct`], so the distiller and write-time curation are measured as a user meets
//! them. What curation did with the second correction — merged it into the first lesson,
//! linked the two as a conflict, superseded the first, or kept both — is scored as precision
//! and recall of merge and of conflict.
//!
//! The pairs that ship with Lore ([`PAIRS`]) are split by their place within their class:
//! even places are the half the curation rules were tuned on, odd places the held-out half.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use lore_core::SkillPath;
use lore_core::model::{AuthorKind, Outcome};
use lore_engine::{Engine, EngineConfig, NewCorrection, NewExecution};
use lore_sqlite::{OpenMode, SqliteStore};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Out;

/// The correction pairs Lore ships with, written for this benchmark.
pub const PAIRS: &str = include_str!("../data/curation-pairs.jsonl");

/// What a pair of corrections is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The same rule in other words: one lesson.
    Reworded,
    /// The same shape about another subject (noun, entity, subsystem, language, value).
    DifferentSubject,
    /// The same situation, the opposite directive: a conflict.
    Opposite,
    /// Another requirement that holds beside the first.
    Compatible,
}

/// What curation did with the second correction of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Handling {
    /// Merged into the first correction's lesson.
    Merged,
    /// Linked to the first as a conflict and sent to review.
    Conflict,
    /// Its lesson supersedes the first.
    Superseded,
    /// Two lessons, side by side.
    Kept,
}

/// One line of a data file.
#[derive(Clone, Debug, Deserialize)]
pub struct Pair {
    /// What the pair is.
    pub class: Class,
    /// The first correction.
    pub first: String,
    /// The second correction, made after the first.
    pub second: String,
}

/// Precision and recall of one decision.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Score {
    /// Pairs the decision was made on.
    pub decided: usize,
    /// Pairs it should have been made on.
    pub expected: usize,
    /// Pairs it was made on rightly.
    pub right: usize,
    /// `right / decided` (1.0 when nothing was decided).
    pub precision: f64,
    /// `right / expected` (1.0 when nothing was expected).
    pub recall: f64,
}

impl Score {
    fn of(results: &[&PairResult], handling: Handling, class: Class) -> Self {
        let decided = results.iter().filter(|r| r.handling == handling).count();
        let expected = results.iter().filter(|r| r.class == class).count();
        let right = results
            .iter()
            .filter(|r| r.handling == handling && r.class == class)
            .count();
        let share = |n: usize, of: usize| if of == 0 { 1.0 } else { n as f64 / of as f64 };
        Self {
            decided,
            expected,
            right,
            precision: share(right, decided),
            recall: share(right, expected),
        }
    }
}

/// Merge and conflict over some pairs.
#[derive(Clone, Debug, Serialize)]
pub struct Scores {
    /// Pairs counted.
    pub pairs: usize,
    /// Merging, right when the pair is [`Class::Reworded`].
    pub merge: Score,
    /// Conflict, right when the pair is [`Class::Opposite`].
    pub conflict: Score,
}

impl Scores {
    fn of(results: &[&PairResult]) -> Self {
        Self {
            pairs: results.len(),
            merge: Score::of(results, Handling::Merged, Class::Reworded),
            conflict: Score::of(results, Handling::Conflict, Class::Opposite),
        }
    }
}

/// What happened to one pair.
#[derive(Clone, Debug, Serialize)]
pub struct PairResult {
    /// The pair's line in its file, from 1.
    pub line: usize,
    /// Its class.
    pub class: Class,
    /// Whether it is in the held-out half.
    pub heldout: bool,
    /// What curation did.
    pub handling: Handling,
}

impl PairResult {
    /// Whether curation did what the class asks: merge a rewording, link an opposite, and
    /// keep everything else as its own lesson (a supersession keeps the first's words inside
    /// the second's, so it counts as kept).
    pub fn right(&self) -> bool {
        match self.class {
            Class::Reworded => self.handling == Handling::Merged,
            Class::Opposite => self.handling == Handling::Conflict,
            Class::DifferentSubject | Class::Compatible => {
                matches!(self.handling, Handling::Kept | Handling::Superseded)
            }
        }
    }
}

/// The benchmark's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The half the rules were tuned on.
    pub tuned: Scores,
    /// The held-out half.
    pub heldout: Scores,
    /// Every pair.
    pub all: Scores,
    /// The pairs curation got wrong.
    pub wrong: Vec<PairResult>,
}

/// Parses pairs from JSON lines.
///
/// # Errors
/// A malformed line, named by its number.
pub fn parse(text: &str) -> Result<Vec<Pair>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("line {}", i + 1)))
        .collect()
}

/// Runs the benchmark on the pairs in `data` (the shipped [`PAIRS`] when `None`).
///
/// # Errors
/// An unreadable or malformed file, or a store failure.
pub fn run(data: Option<&Path>, json: bool, out: &mut Out<'_>) -> Result<()> {
    let pairs = match data {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            parse(&text).with_context(|| path.display().to_string())?
        }
        None => parse(PAIRS)?,
    };
    anyhow::ensure!(!pairs.is_empty(), "no correction pairs to measure");
    let report = measure(&pairs)?;
    if json {
        return out.json(&report);
    }
    print(&report, &pairs, out)
}

/// Corrects every pair in a fresh store and scores what curation did.
///
/// # Errors
/// A store failure.
pub fn measure(pairs: &[Pair]) -> Result<Report> {
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
    let engine = Engine::new(Arc::new(store), EngineConfig::default());
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut results = Vec::with_capacity(pairs.len());
    for (i, pair) in pairs.iter().enumerate() {
        let class_key = format!("{:?}", pair.class);
        let place = seen.entry(class_key).or_default();
        let heldout = *place % 2 == 1;
        *place += 1;
        let skill = SkillPath::parse(&format!("bench/pair-{:03}", i + 1))?;
        correct(&engine, &skill, &pair.first, 1)?;
        let second = correct(&engine, &skill, &pair.second, 2)?;
        let c = &second.curation;
        let handling = if c.merged_into.is_some() {
            Handling::Merged
        } else if !c.conflicts.is_empty() {
            Handling::Conflict
        } else if !c.supersedes.is_empty() {
            Handling::Superseded
        } else {
            Handling::Kept
        };
        results.push(PairResult {
            line: i + 1,
            class: pair.class,
            heldout,
            handling,
        });
    }
    let pick =
        |f: &dyn Fn(&PairResult) -> bool| results.iter().filter(|r| f(r)).collect::<Vec<_>>();
    Ok(Report {
        tuned: Scores::of(&pick(&|r| !r.heldout)),
        heldout: Scores::of(&pick(&|r| r.heldout)),
        all: Scores::of(&pick(&|_| true)),
        wrong: results.iter().filter(|r| !r.right()).cloned().collect(),
    })
}

/// A person's correction of a failed run of `skill`.
fn correct(
    engine: &Engine,
    skill: &SkillPath,
    text: &str,
    run: usize,
) -> Result<lore_engine::CorrectionOutcome> {
    let execution = engine.record_execution(NewExecution {
        skill: skill.clone(),
        input: json!({ "task": format!("run {run} of {skill}") }),
        output: json!("rejected"),
        outcome: Outcome::Rejected,
        cost_usd: None,
        latency_ms: None,
        model: None,
        session: None,
        lessons_shown: Vec::new(),
    })?;
    Ok(engine.correct(NewCorrection {
        skill: skill.clone(),
        execution_id: execution.id,
        text: text.to_owned(),
        author_kind: AuthorKind::Human,
        author: Some("bench".into()),
    })?)
}

fn print(report: &Report, pairs: &[Pair], out: &mut Out<'_>) -> Result<()> {
    out.line("half      pairs  merge P  merge R  conflict P  conflict R")?;
    for (name, s) in [
        ("tuned", &report.tuned),
        ("held-out", &report.heldout),
        ("all", &report.all),
    ] {
        out.line(format!(
            "{name:<9} {:>5}  {:>7.3}  {:>7.3}  {:>10.3}  {:>10.3}",
            s.pairs, s.merge.precision, s.merge.recall, s.conflict.precision, s.conflict.recall
        ))?;
    }
    for r in &report.wrong {
        let pair = &pairs[r.line - 1];
        out.line(format!(
            "line {} ({:?}{}): {:?}\n  {}\n  {}",
            r.line,
            r.class,
            if r.heldout { ", held out" } else { "" },
            r.handling,
            pair.first,
            pair.second
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped pairs: no distinct rule merged and no compatible pair held as a conflict,
    /// while rewordings merge and opposite directives are caught, on each half.
    #[test]
    fn corrections_are_kept_as_meant_on_both_halves() {
        let report = measure(&parse(PAIRS).unwrap()).unwrap();
        let mut text = Vec::new();
        print(&report, &parse(PAIRS).unwrap(), &mut Out::new(&mut text)).unwrap();
        eprintln!("{}", String::from_utf8_lossy(&text));
        for s in [&report.tuned, &report.heldout] {
            assert_eq!(s.merge.precision, 1.0, "{s:?}");
            assert_eq!(s.conflict.precision, 1.0, "{s:?}");
            assert!(s.merge.recall >= 0.7, "{s:?}");
            assert!(s.conflict.recall >= 0.9, "{s:?}");
        }
    }
}
