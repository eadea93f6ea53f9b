//! `lore bench learning`: seed 003's protocol, offline, with simulated tools and agent.
//!
//! Two simulated command-line tools ([`sim::GRIDTOOL`], [`sim::FLUXTOOL`]) and an agent that
//! learns only from the text Lore returns ([`sim::Agent`]) run through the Engine exactly as the
//! command-line loop does: per step `recall` (plus [`Engine::exploration`]), then `record` with
//! `lessons_shown`, `signal` per failed attempt, `correct` (written by the agent) on the first
//! failure of each fingerprint, and `maintain` after every run. The same tasks and the same
//! random draws are replayed by the same agent without memory, which is the baseline.
//!
//! Phases: A (gridtool, bootstrap), B (fluxtool, a new tool), C (gridtool again: retention),
//! D (new task types on both tools: cross-task transfer), and a stress phase with a planted
//! harmful lesson (a wrong `gridtool sort` syntax) and a contradictory one (a `fluxtool dedupe`
//! form that runs but keeps the wrong records). See `docs/learning-bench.md`.
//!
//! Nothing here depends on the command line except [`run`], which prints, so the simulator can
//! move to a crate of its own.

mod curve;
pub mod sim;
mod svg;
mod tune;

pub use curve::Curve;
pub use tune::AdapterFigures;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{
    AuthorKind, Lesson, LessonSource, LessonStatus, Outcome, SignalChannel, Tiers, UtilityStats,
};
use lore_core::ports::clock::Clock;
use lore_core::ports::embed::Embedder;
use lore_core::ports::store::Record;
use lore_engine::{Engine, EngineConfig, NewCorrection, NewExecution, NewSignal, RecallQuery};
use lore_sqlite::{OpenMode, SqliteStore};
use serde::Serialize;
use serde_json::json;

use sim::{Agent, FLUXTOOL, Failure, GRIDTOOL, Rng, Task, Tool};

/// Lessons asked for per step.
const RECALL_LIMIT: usize = 1;
/// How often the agent's unaided guess is the wrong form.
const GUESS_WRONG: f64 = 0.9;
/// How often a step fails for a transient reason (noise no lesson can remove).
const FLAKY: f64 = 0.05;

/// One phase: its name, and per run the tool and the task type (operation indices).
struct Phase {
    name: &'static str,
    runs: usize,
    mix: Vec<(Tool, Vec<usize>)>,
}

fn phases() -> Vec<Phase> {
    let grid_a = vec![
        (GRIDTOOL, vec![0, 4]),
        (GRIDTOOL, vec![1, 0]),
        (GRIDTOOL, vec![2, 4]),
        (GRIDTOOL, vec![1, 2, 4]),
    ];
    let flux_b = vec![
        (FLUXTOOL, vec![0, 4]),
        (FLUXTOOL, vec![1, 0]),
        (FLUXTOOL, vec![2, 4]),
        (FLUXTOOL, vec![0, 1, 2]),
    ];
    let cross = vec![
        (GRIDTOOL, vec![3, 0]),
        (GRIDTOOL, vec![3, 2, 4]),
        (GRIDTOOL, vec![1, 3]),
        (FLUXTOOL, vec![3, 1]),
        (FLUXTOOL, vec![3, 2, 4]),
        (FLUXTOOL, vec![0, 3]),
    ];
    let stress: Vec<_> = grid_a.iter().chain(&flux_b).cloned().collect();
    vec![
        Phase {
            name: "A",
            runs: 24,
            mix: grid_a.clone(),
        },
        Phase {
            name: "B",
            runs: 24,
            mix: flux_b,
        },
        Phase {
            name: "C",
            runs: 16,
            mix: grid_a,
        },
        Phase {
            name: "D",
            runs: 24,
            mix: cross,
        },
        Phase {
            name: "stress",
            runs: 32,
            mix: stress,
        },
    ]
}

/// A clock that moves a second every time it is read: runs get distinct, ordered times.
#[derive(Debug)]
struct TickingClock(Mutex<DateTime<Utc>>);

impl Clock for TickingClock {
    fn now(&self) -> DateTime<Utc> {
        let mut now = self.0.lock().expect("the clock's lock");
        *now += TimeDelta::seconds(1);
        *now
    }
}

/// One run in both arms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunFigures {
    /// The phase.
    pub phase: &'static str,
    /// Failed attempts with memory.
    pub errors: usize,
    /// Failed attempts without memory.
    pub errors_without: usize,
    /// Failed attempts a lesson could have prevented (a wrong form, not a dropped
    /// connection), with memory.
    pub learnable: usize,
    /// The same without memory.
    pub learnable_without: usize,
    /// Learnable failed attempts whose fingerprint had been seen before, with memory.
    pub recurrent: usize,
    /// The same without memory.
    pub recurrent_without: usize,
    /// Seed 003's per-run metrics, with memory: whether every step was right at its first
    /// attempt.
    pub passed: bool,
    /// The share of steps right at their first attempt.
    pub score: f64,
    /// Attempts made: one per step, one more per failed attempt (the agent reads the docs and
    /// tries again).
    pub steps: usize,
    /// Failed attempts (the tool's errors and failed checks).
    pub tool_errors: usize,
    /// Lessons shown in the run.
    pub lesson_activations: usize,
    /// Lessons the run's recalls held out to measure them.
    pub held_out: usize,
    /// Lessons one of the run's recalls showed and another held out: the run counts as having
    /// shown them, though a step went without.
    pub shown_and_held: usize,
    /// Lessons the upkeep after the run promoted.
    pub promoted: usize,
    /// Lessons the upkeep after the run suppressed.
    pub suppressed: usize,
}

/// What one seed gave.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Per run, in order.
    pub runs: Vec<RunFigures>,
    /// Lessons shown, and how many of them the agent used on a step that then succeeded.
    pub shown: usize,
    /// See `shown`.
    pub helped: usize,
    /// Lessons learned from the agent's corrections and from recurring errors.
    pub learned: usize,
    /// Of those, how many were ever suppressed.
    pub good_suppressed: usize,
    /// Their rules and the reasons the gate gave, for the record.
    pub good_suppressed_why: Vec<String>,
    /// Promotions over the whole seed.
    pub promoted: usize,
    /// Activations of the planted harmful lesson before it was suppressed (`None`: never).
    pub harmful_activations: Option<usize>,
    /// The same for the contradictory lesson.
    pub contradictory_activations: Option<usize>,
    /// Activations of each planted lesson in the whole stress phase.
    pub planted_activations: [usize; 2],
    /// The embedder adapter trained on the seed's feedback, judged on held-out queries and on
    /// held-out task types, each with the seconds training took.
    #[serde(skip)]
    pub adapter: Option<[(lore_core::ports::tuning::Evaluation, f64); 2]>,
}

/// The report over every seed.
#[derive(Clone, Debug, Serialize)]
pub struct LearningReport {
    /// Seeds run.
    pub seeds: usize,
    /// Whether every recall named its run's key (`--keyed`), as an agent that passes
    /// `lore recall --run` does: lessons still being measured are then held out of some runs.
    pub keyed: bool,
    /// Runs per seed.
    pub runs_per_seed: usize,
    /// 1 − recurrent errors with memory / without, on the new tool (phase B).
    pub recurrence_reduction: f64,
    /// The same over every phase before the stress phase.
    pub recurrence_reduction_all: f64,
    /// Learnable errors per run in phase C minus in the last third of phase A, with memory.
    pub retention_regression: f64,
    /// Seeds in which the harmful lesson was suppressed.
    pub harmful_suppressed: usize,
    /// The most activations the harmful lesson had before suppression, over the seeds.
    pub activations_to_suppress_harmful: Option<usize>,
    /// Seeds in which the contradictory lesson was suppressed.
    pub contradictory_suppressed: usize,
    /// The most activations the contradictory lesson had before suppression.
    pub activations_to_suppress_contradictory: Option<usize>,
    /// Learned lessons ever suppressed, over all seeds.
    pub good_lessons_suppressed: usize,
    /// Learned lessons, over all seeds.
    pub good_lessons: usize,
    /// Shown lessons the agent used on a step that then succeeded / lessons shown.
    pub retrieval_precision: f64,
    /// Errors per run by phase, with and without memory, averaged over seeds.
    pub phases: BTreeMap<&'static str, [f64; 2]>,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
    /// The embedder the adapter was trained over (`builtin`, or the one `--embedder` named).
    pub adapter_base: String,
    /// The embedder adapter trained on each seed's feedback, against the base embedder, judged
    /// on held-out queries (new tasks of types it trained on).
    pub adapter: AdapterFigures,
    /// The same, judged on held-out task types (kinds of task it never trained on).
    pub adapter_by_task_type: AdapterFigures,
    /// Per seed.
    pub per_seed: Vec<SeedReport>,
}

/// Runs `seeds` seeds, prints the report (JSON with `json`), writes the plot to `svg`, and
/// returns the curve for keeping with the records.
///
/// # Errors
/// Store and Engine failures, an unwritable SVG file.
pub fn run(
    seeds: usize,
    adapter_base: Option<Arc<dyn Embedder>>,
    keyed: bool,
    json: bool,
    svg_path: Option<&Path>,
    out: &mut crate::Out<'_>,
) -> Result<Curve> {
    let report = measure(seeds, adapter_base, keyed)?;
    if let Some(path) = svg_path {
        std::fs::write(path, svg::plot(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if json {
        out.json(&report)?;
    } else {
        out.line(summary(&report))?;
    }
    Ok(Curve::of(&report))
}

fn summary(r: &LearningReport) -> String {
    let phases: Vec<String> = r
        .phases
        .iter()
        .map(|(name, [with, without])| {
            format!("  {name:<7} errors/run {with:.2} with memory, {without:.2} without")
        })
        .collect();
    format!(
        "seeds: {}  runs/seed: {}{}  ({:.1} s)\n{}\n\
         recurrence reduction (new tool): {:.0}%   (all phases: {:.0}%)\n\
         retention regression: {:+.3} errors/run\n\
         harmful lesson suppressed: {}/{} seeds, within {} activations\n\
         contradictory lesson suppressed: {}/{} seeds, within {} activations\n\
         good lessons suppressed: {} of {}\n\
         retrieval precision: {:.2}\n\
         embedder adapter over {}:\n{}\n{}",
        r.seeds,
        r.runs_per_seed,
        if r.keyed {
            "  (keyed: every recall names its run)"
        } else {
            ""
        },
        r.elapsed_s,
        phases.join("\n"),
        r.recurrence_reduction * 100.0,
        r.recurrence_reduction_all * 100.0,
        r.retention_regression,
        r.harmful_suppressed,
        r.seeds,
        r.activations_to_suppress_harmful
            .map_or("-".into(), |n| n.to_string()),
        r.contradictory_suppressed,
        r.seeds,
        r.activations_to_suppress_contradictory
            .map_or("-".into(), |n| n.to_string()),
        r.good_lessons_suppressed,
        r.good_lessons,
        r.retrieval_precision,
        r.adapter_base,
        tune::line("held-out queries", &r.adapter, r.seeds),
        tune::line("held-out task types", &r.adapter_by_task_type, r.seeds),
    )
}

/// Runs every seed and aggregates.
///
/// # Errors
/// Store and Engine failures.
pub fn measure(
    seeds: usize,
    adapter_base: Option<Arc<dyn Embedder>>,
    keyed: bool,
) -> Result<LearningReport> {
    let started = Instant::now();
    let per_seed = (0..seeds as u64)
        .map(|s| {
            let seed = 0x5eed_0000 + s;
            let base = adapter_base.clone();
            lore_core::id::with_seeded_ids(seed, || simulate(seed, base, keyed))
        })
        .collect::<Result<Vec<_>>>()?;
    let base = adapter_base.map_or_else(|| "builtin".to_owned(), |e| e.id().name);
    Ok(aggregate(
        per_seed,
        started.elapsed().as_secs_f64(),
        base,
        keyed,
    ))
}

fn aggregate(
    per_seed: Vec<SeedReport>,
    elapsed_s: f64,
    adapter_base: String,
    keyed: bool,
) -> LearningReport {
    let all = || per_seed.iter().flat_map(|s| &s.runs);
    let sum = |phase: Option<&str>, f: fn(&RunFigures) -> usize| -> usize {
        all()
            .filter(|r| phase.is_none_or(|p| r.phase == p) && r.phase != "stress")
            .map(f)
            .sum()
    };
    let reduction = |phase: Option<&str>| {
        let without = sum(phase, |r| r.recurrent_without);
        if without == 0 {
            0.0
        } else {
            1.0 - sum(phase, |r| r.recurrent) as f64 / without as f64
        }
    };
    let mut phases = BTreeMap::new();
    for phase in ["A", "B", "C", "D", "stress"] {
        let runs: Vec<&RunFigures> = all().filter(|r| r.phase == phase).collect();
        let n = runs.len().max(1) as f64;
        let with: usize = runs.iter().map(|r| r.errors).sum();
        let without: usize = runs.iter().map(|r| r.errors_without).sum();
        phases.insert(phase, [with as f64 / n, without as f64 / n]);
    }
    let retention: Vec<f64> = per_seed.iter().map(retention_regression).collect();
    let worst = |f: fn(&SeedReport) -> Option<usize>| per_seed.iter().filter_map(f).max();
    let count =
        |f: fn(&SeedReport) -> Option<usize>| per_seed.iter().filter(|s| f(s).is_some()).count();
    let shown: usize = per_seed.iter().map(|s| s.shown).sum();
    let helped: usize = per_seed.iter().map(|s| s.helped).sum();
    LearningReport {
        keyed,
        seeds: per_seed.len(),
        runs_per_seed: per_seed.first().map_or(0, |s| s.runs.len()),
        recurrence_reduction: reduction(Some("B")),
        recurrence_reduction_all: reduction(None),
        retention_regression: retention.iter().sum::<f64>() / retention.len().max(1) as f64,
        harmful_suppressed: count(|s| s.harmful_activations),
        activations_to_suppress_harmful: worst(|s| s.harmful_activations),
        contradictory_suppressed: count(|s| s.contradictory_activations),
        activations_to_suppress_contradictory: worst(|s| s.contradictory_activations),
        good_lessons_suppressed: per_seed.iter().map(|s| s.good_suppressed).sum(),
        good_lessons: per_seed.iter().map(|s| s.learned).sum(),
        retrieval_precision: helped as f64 / shown.max(1) as f64,
        adapter_base,
        adapter: tune::aggregate(
            &per_seed
                .iter()
                .filter_map(|s| s.adapter.clone().map(|[q, _]| q))
                .collect::<Vec<_>>(),
        ),
        adapter_by_task_type: tune::aggregate(
            &per_seed
                .iter()
                .filter_map(|s| s.adapter.clone().map(|[_, t]| t))
                .collect::<Vec<_>>(),
        ),
        phases,
        elapsed_s,
        per_seed,
    }
}

/// Learnable errors per run in phase C minus in the last third of phase A, with memory.
fn retention_regression(seed: &SeedReport) -> f64 {
    let rate = |runs: &[&RunFigures]| {
        runs.iter().map(|r| r.learnable).sum::<usize>() as f64 / runs.len().max(1) as f64
    };
    let a: Vec<&RunFigures> = seed.runs.iter().filter(|r| r.phase == "A").collect();
    let c: Vec<&RunFigures> = seed.runs.iter().filter(|r| r.phase == "C").collect();
    rate(&c) - rate(&a[a.len() * 2 / 3..])
}

/// The state of one seed's memory arm.
struct World {
    engine: Engine,
    clock: Arc<TickingClock>,
    agent: Agent,
    /// Fingerprints seen, per arm: `[with memory, without]`.
    seen: [BTreeSet<String>; 2],
    /// Whether each recall names its run's key (the Engine then holds out and explores).
    keyed: bool,
    /// Lessons the agent's corrections and recurring errors made.
    learned: BTreeSet<LessonId>,
    /// Rules by lesson, for judging what a shown lesson did.
    rules: HashMap<LessonId, String>,
    report: SeedReport,
    _dir: tempfile::TempDir,
}

/// One seed: every phase, both arms.
///
/// # Errors
/// Store and Engine failures.
pub fn simulate(
    seed: u64,
    adapter_base: Option<Arc<dyn Embedder>>,
    keyed: bool,
) -> Result<SeedReport> {
    let dir = tempfile::tempdir()?;
    let store = Arc::new(SqliteStore::open(
        dir.path().join("lore.db"),
        OpenMode::Create,
    )?);
    let start = Utc
        .with_ymd_and_hms(2026, 11, 24, 9, 0, 0)
        .single()
        .context("start time")?;
    let clock = Arc::new(TickingClock(Mutex::new(start)));
    let engine = Engine::new(store, EngineConfig::default()).with_clock(clock.clone());
    let mut world = World {
        engine,
        clock,
        agent: Agent {
            guess_wrong: GUESS_WRONG,
            flaky: FLAKY,
        },
        seen: Default::default(),
        keyed,
        learned: BTreeSet::new(),
        rules: HashMap::new(),
        report: SeedReport {
            seed,
            ..SeedReport::default()
        },
        _dir: dir,
    };
    let mut index = 0u64;
    let mut planted: Option<[LessonId; 2]> = None;
    for phase in phases() {
        if phase.name == "stress" {
            planted = Some(world.plant()?);
        }
        for _ in 0..phase.runs {
            let mut rng = Rng::new(seed, index);
            let (tool, ops) = &phase.mix[rng.below(phase.mix.len())];
            let task = Task::draw(*tool, ops, &mut rng);
            let shown = world.run(seed, index, phase.name, &task)?;
            if let Some(planted) = &planted {
                world.count_planted(planted, &shown)?;
            }
            index += 1;
        }
    }
    world.finish()?;
    world.report.adapter = Some(tune::tune(&world.engine, adapter_base)?);
    Ok(world.report)
}

fn skill(tool: &Tool) -> SkillPath {
    SkillPath::parse(&format!("bench/{}", tool.name)).expect("a valid skill path")
}

impl World {
    /// One run in both arms; returns the lessons shown with memory.
    fn run(
        &mut self,
        seed: u64,
        index: u64,
        phase: &'static str,
        task: &Task,
    ) -> Result<Vec<LessonId>> {
        let skill = skill(&task.tool);
        let mut shown: Vec<LessonId> = Vec::new();
        let mut held_out: BTreeSet<LessonId> = BTreeSet::new();
        let mut with = Vec::new();
        let mut without = Vec::new();
        // One key names the whole run, as `lore recall --run` is meant: every recall of a run
        // then holds out the same lessons.
        let run_key = format!("{seed}-{index}");
        for step in 0..task.steps.len() {
            let key = format!("{seed}-{index}-{step}");
            let query = RecallQuery {
                text: task.step_text(step),
                skill: Some(skill.clone()),
                limit: Some(RECALL_LIMIT),
                explore: self.keyed.then(|| run_key.clone()),
                ..RecallQuery::default()
            };
            let recalled = self.engine.recall(&query)?;
            held_out.extend(recalled.held_out.iter().cloned());
            // A keyed recall places the explored lessons in its own text; unkeyed, the bench
            // asks for them beside it, so both protocols explore.
            let explored = if self.keyed {
                Vec::new()
            } else {
                self.engine.exploration(&query, &key)?
            };
            let mut text = recalled.text.clone();
            if let Some(extra) = lore_engine::prompt::render_learned_rules(&explored) {
                text.push('\n');
                text.push_str(&extra);
            }
            for id in recalled
                .lessons
                .iter()
                .map(|l| &l.id)
                .chain(explored.iter().map(|l| &l.id))
            {
                if !shown.contains(id) {
                    shown.push(id.clone());
                }
            }
            // The same draws in both arms: only the text differs.
            let step_seed = index * 16 + step as u64;
            with.push(
                self.agent
                    .step(task, step, &text, &mut Rng::new(seed, step_seed)),
            );
            without.push(
                self.agent
                    .step(task, step, "", &mut Rng::new(seed, step_seed)),
            );
        }
        let failures: Vec<&Failure> = with.iter().filter_map(|s| s.failure.as_ref()).collect();
        let commands: Vec<String> = with
            .iter()
            .zip(&task.steps)
            .map(|(s, (op, arg))| {
                s.failure.as_ref().map_or_else(
                    || {
                        format!(
                            "{} {} {} {arg}",
                            task.tool.name,
                            task.tool.ops[*op].name,
                            s.from_rule
                                .clone()
                                .unwrap_or_else(|| task.tool.ops[*op].right.to_owned())
                        )
                    },
                    |f| f.fixed.clone(),
                )
            })
            .collect();
        let execution = self.engine.record_execution(NewExecution {
            skill: skill.clone(),
            input: json!({ "task": task.text(), "task_type": task.kind() }),
            output: json!({ "commands": commands }),
            outcome: Outcome::Success,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: Some(format!("seed-{seed}")),
            lessons_shown: shown.clone(),
        })?;
        let first_right = with.iter().filter(|s| s.failure.is_none()).count();
        let mut figures = RunFigures {
            phase,
            passed: failures.is_empty(),
            score: first_right as f64 / with.len().max(1) as f64,
            steps: with.len() + failures.len(),
            tool_errors: failures.len(),
            lesson_activations: shown.len(),
            held_out: held_out.len(),
            shown_and_held: shown.iter().filter(|id| held_out.contains(*id)).count(),
            ..RunFigures::default()
        };
        for failure in &failures {
            self.engine.report_signal(NewSignal {
                execution_id: execution.id.clone(),
                channel: if failure.refused {
                    SignalChannel::HardFailure
                } else {
                    SignalChannel::ConstraintFailure
                },
                message: failure.message.clone(),
                value: None,
                action: Some(failure.command.clone()),
                tags: Vec::new(),
            })?;
        }
        for failure in failures {
            figures.errors += 1;
            // A retry of the same command worked: nothing to learn, nothing a lesson prevents.
            if failure.fixed == failure.command {
                continue;
            }
            figures.learnable += 1;
            if !self.seen[0].insert(lore_core::fingerprint(&failure.message)) {
                figures.recurrent += 1;
                continue;
            }
            let outcome = self.engine.correct(NewCorrection {
                skill: skill.clone(),
                execution_id: execution.id.clone(),
                text: sim::correction_text(task, failure.step, failure),
                author_kind: AuthorKind::Agent,
                author: Some("bench-agent".into()),
            })?;
            if let Some(lesson) = outcome.lesson {
                self.learned.insert(lesson.id);
            }
        }
        for failure in without.iter().filter_map(|s| s.failure.as_ref()) {
            figures.errors_without += 1;
            if failure.fixed == failure.command {
                continue;
            }
            figures.learnable_without += 1;
            if !self.seen[1].insert(lore_core::fingerprint(&failure.message)) {
                figures.recurrent_without += 1;
            }
        }
        self.judge_shown(task, &with, &shown)?;
        let upkeep = self.engine.maintain()?;
        self.learned.extend(upkeep.proposed);
        self.report.promoted += upkeep.utility.promoted.len();
        figures.promoted = upkeep.utility.promoted.len();
        figures.suppressed = upkeep.utility.suppressed.len();
        self.report.runs.push(figures);
        Ok(shown)
    }

    /// Counts the shown lessons, and those the agent used on a step that then succeeded.
    fn judge_shown(
        &mut self,
        task: &Task,
        steps: &[sim::StepResult],
        shown: &[LessonId],
    ) -> Result<()> {
        for id in shown {
            if !self.rules.contains_key(id) {
                let rule = self.engine.lesson(id)?.rule;
                self.rules.insert(id.clone(), rule);
            }
            let rule = &self.rules[id];
            let helped = steps.iter().any(|s| {
                let op = task.tool.ops[s.op].name;
                let form = sim::rule_form(rule, task.tool.name, op);
                let succeeded = s.failure.as_ref().is_none_or(|f| f.fixed == f.command);
                succeeded && form.is_some() && form == s.from_rule
            });
            self.report.shown += 1;
            self.report.helped += usize::from(helped);
        }
        Ok(())
    }

    /// Imports the harmful and the contradictory lesson, approved, as a careless import would.
    fn plant(&mut self) -> Result<[LessonId; 2]> {
        let harmful = self.planted_lesson(
            &GRIDTOOL,
            0,
            "To sort the rows by X, largest first with gridtool, use `gridtool sort --reverse X` instead of `gridtool sort --desc X`.",
        )?;
        let contradictory = self.planted_lesson(
            &FLUXTOOL,
            1,
            "To drop repeated records by X, keeping the first with fluxtool, use `fluxtool dedupe --keep=last X` instead of `fluxtool dedupe --keep X`.",
        )?;
        Ok([harmful, contradictory])
    }

    fn planted_lesson(&mut self, tool: &Tool, op: usize, rule: &str) -> Result<LessonId> {
        let at = self.clock.now();
        let o = &tool.ops[op];
        let sample = o
            .error
            .replace("{form}", o.wrong)
            .replace("{arg}", "x")
            .replace("{pos}", "1");
        let lesson = Lesson {
            id: LessonId::generate(at),
            skill: skill(tool),
            agent: None,
            correction_id: None,
            execution_id: None,
            mistake: format!("{} {} failed", tool.name, o.name),
            root_cause: "planted".into(),
            rule: rule.to_owned(),
            applies_when: format!("When using {} {}.", tool.name, o.name),
            triggers: vec![lore_core::fingerprint(&sample)],
            tags: Vec::new(),
            tiers: Tiers {
                summary: rule.to_owned(),
                ..Tiers::default()
            },
            confidence: 0.9,
            source: LessonSource::Import,
            status: LessonStatus::Approved,
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: at,
            updated_at: at,
            extra: serde_json::Map::new(),
        };
        let id = lesson.id.clone();
        self.engine.import_records(&[Record::Lesson(lesson)])?;
        Ok(id)
    }

    /// Counts activations of the planted lessons until each is suppressed.
    fn count_planted(&mut self, planted: &[LessonId; 2], shown: &[LessonId]) -> Result<()> {
        for (i, id) in planted.iter().enumerate() {
            let counted = if i == 0 {
                &mut self.report.harmful_activations
            } else {
                &mut self.report.contradictory_activations
            };
            if shown.contains(id) {
                self.report.planted_activations[i] += 1;
            }
            if counted.is_none() && self.engine.lesson(id)?.status == LessonStatus::Suppressed {
                *counted = Some(self.report.planted_activations[i]);
            }
        }
        Ok(())
    }

    /// Counts the learned lessons that were ever suppressed.
    fn finish(&mut self) -> Result<()> {
        self.report.learned = self.learned.len();
        for id in &self.learned {
            let trail = self.engine.lesson_audit(id)?;
            let Some(entry) = trail
                .iter()
                .find(|e| e.to == Some(LessonStatus::Suppressed))
            else {
                continue;
            };
            self.report.good_suppressed += 1;
            let rule = self.engine.lesson(id)?.rule;
            self.report
                .good_suppressed_why
                .push(format!("{id}: {rule} — {}", entry.reason));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holdout, exploration and ties hash lesson IDs, so figures repeat only if the IDs do.
    #[test]
    fn a_seed_gives_the_same_figures_every_time() {
        let figures = || serde_json::to_value(&measure(1, None, false).unwrap().per_seed).unwrap();
        let first = figures();
        assert!(first[0]["shown"].as_u64().unwrap() > 0, "{first}");
        assert_eq!(first, figures());
    }

    /// A keyed run names each recall's run, so the Engine holds lessons out of some runs: the
    /// figures differ from the unkeyed protocol's, and the report says which protocol ran.
    #[test]
    fn a_keyed_run_holds_lessons_out_and_says_so() {
        let plain = measure(1, None, false).unwrap();
        let keyed = measure(1, None, true).unwrap();
        assert!(keyed.keyed && !plain.keyed);
        let shown = |r: &LearningReport| (r.per_seed[0].shown, r.per_seed[0].helped);
        assert_ne!(shown(&keyed), shown(&plain));
    }

    /// Seed 003's per-run metrics add up: a run passes when no attempt failed, each failed
    /// attempt costs a step, the activations and promotions are the seed's, and recalls that
    /// name no key still hold lessons out to measure them.
    #[test]
    fn every_run_reports_seed_003s_metrics() {
        let r = measure(1, None, false).unwrap();
        let seed = &r.per_seed[0];
        for run in &seed.runs {
            assert_eq!(run.passed, run.tool_errors == 0, "{run:?}");
            assert_eq!(run.tool_errors, run.errors, "{run:?}");
            assert!(run.steps > run.tool_errors, "{run:?}");
            assert!((0.0..=1.0).contains(&run.score), "{run:?}");
            assert_eq!(run.passed, run.score == 1.0, "{run:?}");
        }
        let sum = |f: fn(&RunFigures) -> usize| seed.runs.iter().map(f).sum::<usize>();
        assert_eq!(sum(|r| r.lesson_activations), seed.shown);
        assert_eq!(sum(|r| r.promoted), seed.promoted);
        assert!(sum(|r| r.held_out) > 0);
        assert!(sum(|r| r.suppressed) > 0, "the planted lessons");
    }

    /// The loop's own guard: on two seeds, memory removes most repeated errors on a new tool,
    /// the planted harmful lesson is suppressed, no good lesson is, and most lessons shown are
    /// used. A change in how lessons are distilled, related or recalled that
    /// costs any of these fails here rather than in a benchmark read later.
    #[test]
    fn the_loop_learns_and_its_gates_keep_the_good_lessons() {
        let r = measure(2, None, false).unwrap();
        let why: Vec<&String> = r
            .per_seed
            .iter()
            .flat_map(|s| &s.good_suppressed_why)
            .collect();
        assert_eq!(r.good_lessons_suppressed, 0, "{why:#?}");
        assert!(r.good_lessons >= 2 * 6, "{}", r.good_lessons);
        // Every recall holds lessons under measurement out, which costs the simulated agent the
        // runs they sit out. Recall breaks near-ties by evidence, and a lesson still to be
        // measured takes a better-known one's place where they tie, so the planted lessons are
        // shown in their own task until judged: the harmful one is suppressed, and the
        // contradictory one sometimes (its own error it prevents; only the comparison of any
        // failure, over 5 runs, can find it within the 32 runs of the stress phase). A stated
        // condition is met only by the words that tell the skill's lessons apart, so a lesson
        // is no longer shown at a step it is not about: precision rose from 0.74 to 0.91 on
        // these two seeds. Measured: recurrence 0.74 (0.81 before; phase B holds 24 runs a
        // seed, and it moves by a run or two), harmful and contradictory each suppressed in
        // 1 of 2.
        assert!(r.harmful_suppressed >= 1, "{}", r.harmful_suppressed);
        assert!(
            r.harmful_suppressed + r.contradictory_suppressed >= 2,
            "harmful {}, contradictory {}",
            r.harmful_suppressed,
            r.contradictory_suppressed
        );
        assert!(r.recurrence_reduction >= 0.7, "{}", r.recurrence_reduction);
        assert!(r.retrieval_precision >= 0.85, "{}", r.retrieval_precision);
    }
}
