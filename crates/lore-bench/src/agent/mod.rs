//! `lore bench agent`: the learning loop with a real model as the executor.
//!
//! A model behind any OpenAI-compatible Chat Completions endpoint is asked, one fresh prompt per
//! step, for the command that does a task with a fictional command-line tool (see [`tools`]).
//! The harness runs the command in the tool's simulator and checks it; a failed step is retried
//! with the tool's error and the operation's reference page, up to `max_steps`. The same task
//! stream, with the same sampling seeds, is given to three arms that differ only in memory:
//!
//! - `none`: the manual and the task;
//! - `rag`: the top past attempts of similar tasks (BM25), with their command, outcome and error;
//! - `lore`: the lessons `lore recall` returns, through the `lore` binary on a store of its own;
//!   each attempt is recorded with the lessons shown, a failure is signalled, a failure later
//!   fixed becomes the agent's correction (Lore's proposer writes the lesson from it when it is
//!   given a model), and `lore maintain` runs after every task.
//!
//! Phases follow the learning protocol: A (the first tool), B (a new tool), C (the first tool
//! again: retention), D (other task kinds on both tools), S (wrong lessons planted in both memory
//! arms, then the first kinds again: are they suppressed?).

mod bm25;
mod door;
mod model;
mod svg;
pub mod tools;

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use crate::Out;
use bm25::{Attempt, Experience};
pub use door::Proposer;
use model::Model;
use tools::{Outcome, Task, Tool};

/// The memory an arm gives the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// No memory: the manual and the task.
    None,
    /// The top past attempts of similar tasks, by BM25.
    Rag,
    /// Lore's lessons, through the `lore` command line.
    Lore,
}

impl Arm {
    /// Reads the name a user types.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Arm::None),
            "rag" => Ok(Arm::Rag),
            "lore" => Ok(Arm::Lore),
            o => Err(format!("{o:?}; expected none, rag or lore")),
        }
    }
}

/// Where Lore's lessons come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lessons {
    /// Lore's proposer, with the executor's model, writes each lesson from the correction.
    Proposer,
    /// The correction (the failure and the command that later worked) is distilled offline.
    Correction,
}

impl Lessons {
    /// Reads the name a user types.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "proposer" => Ok(Lessons::Proposer),
            "correction" => Ok(Lessons::Correction),
            o => Err(format!("{o:?}; expected proposer or correction")),
        }
    }
}

/// Everything a run of the benchmark is told.
#[derive(Clone, Debug)]
pub struct Options {
    /// Tool files; the shipped two when empty.
    pub tools: Vec<PathBuf>,
    /// An OpenAI-compatible `/v1` base URL; when absent, `model_server` is started.
    pub model_url: Option<String>,
    /// A command that serves a model on loopback and prints `port N` once it answers.
    pub model_server: Option<String>,
    /// The model's name as the endpoint knows it.
    pub model_name: String,
    /// The endpoint's key, if it needs one.
    pub api_key: Option<String>,
    /// The `lore` binary that drives the Lore arm.
    pub lore: PathBuf,
    /// The seeds: each gives its own task order and sampling.
    pub seeds: Vec<u64>,
    /// The arms to run, each on the same stream.
    pub arms: Vec<Arm>,
    /// The phases in order (A, B, C, D, S).
    pub phases: Vec<char>,
    /// Tasks of each kind in a phase.
    pub per_kind: usize,
    /// Attempts at a task before it counts as failed.
    pub max_steps: usize,
    /// Lessons asked of `lore recall` per step.
    pub recall_limit: usize,
    /// Where the Lore arm's lessons come from.
    pub lessons: Lessons,
    /// The executor's sampling temperature.
    pub temperature: f64,
    /// The most tokens one answer may take.
    pub max_tokens: u32,
    /// How long to wait for one answer.
    pub timeout: Duration,
    /// Where to write the plot of errors per run.
    pub svg: Option<PathBuf>,
    /// Where to write every attempt's prompt and answer, and the Lore arm's lessons at the end
    /// of each seed, one JSON object a line: what a reader needs to see why a run failed.
    pub trace: Option<PathBuf>,
}

/// One task given to one arm.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// The seed.
    pub seed: u64,
    /// The arm.
    pub arm: Arm,
    /// The phase.
    pub phase: char,
    /// The task's place in the stream, from 0.
    pub index: usize,
    /// The tool's name.
    pub tool: String,
    /// The task's kind (its operation).
    pub kind: String,
    /// The task's text.
    pub task: String,
    /// The first task of its tool and kind this arm saw in this seed.
    pub first_of_kind: bool,
    /// Whether an attempt passed its checker within the steps allowed.
    pub passed: bool,
    /// Attempts made.
    pub steps: usize,
    /// Attempts the tool refused (hard failures).
    pub tool_errors: usize,
    /// Attempts that ran but did not do the task (constraint failures).
    pub wrong_results: usize,
    /// Failed steps whose error fingerprint this arm had already met in this seed.
    pub recurrent_errors: usize,
    /// Each failed attempt's error fingerprint.
    pub fingerprints: Vec<String>,
    /// The commands the model wrote, in order.
    pub commands: Vec<String>,
    /// Prompt tokens over every attempt, as the endpoint counted them.
    pub prompt_tokens: u64,
    /// Lessons shown, summed over the attempts.
    pub lessons_shown: usize,
    /// The IDs of the lessons shown, step by step.
    pub shown_ids: Vec<String>,
    /// Lessons Lore's recall held out to measure them.
    pub held_out: usize,
    /// Lessons `lore maintain` promoted after it.
    pub promoted: usize,
    /// Lessons `lore maintain` suppressed after it.
    pub suppressed: usize,
    /// Whether its correction was written to Lore.
    pub lesson_written: bool,
    /// Seconds spent waiting for the model.
    pub model_seconds: f64,
}

impl Run {
    fn errors(&self) -> usize {
        self.tool_errors + self.wrong_results
    }
}

/// An arm's figures over a set of runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Runs counted.
    pub runs: usize,
    /// The share of runs that passed.
    pub pass_rate: f64,
    /// Mean attempts per run.
    pub steps_mean: f64,
    /// Attempts the tool refused (hard failures).
    pub tool_errors: usize,
    /// Attempts that ran but did not do the task (constraint failures).
    pub wrong_results: usize,
    /// Errors in runs that were not the first of their tool and kind.
    pub errors_after_first: usize,
    /// Runs that were not the first of their tool and kind.
    pub runs_after_first: usize,
    /// Errors whose fingerprint the arm had met before in the seed.
    pub recurrent_errors: usize,
    /// Mean prompt tokens per run.
    pub prompt_tokens_mean: f64,
    /// Lessons shown, summed over the attempts.
    pub lessons_shown: usize,
    /// Lessons `lore maintain` promoted after it.
    pub promoted: usize,
    /// Lessons `lore maintain` suppressed after it.
    pub suppressed: usize,
}

impl Figures {
    fn of<'a>(runs: impl IntoIterator<Item = &'a Run>) -> Self {
        let runs: Vec<&Run> = runs.into_iter().collect();
        let n = runs.len();
        if n == 0 {
            return Self::default();
        }
        let after: Vec<&&Run> = runs.iter().filter(|r| !r.first_of_kind).collect();
        let mean = |f: &dyn Fn(&Run) -> f64| runs.iter().map(|r| f(r)).sum::<f64>() / n as f64;
        Self {
            runs: n,
            pass_rate: mean(&|r| f64::from(u8::from(r.passed))),
            steps_mean: mean(&|r| r.steps as f64),
            tool_errors: runs.iter().map(|r| r.tool_errors).sum(),
            wrong_results: runs.iter().map(|r| r.wrong_results).sum(),
            errors_after_first: after.iter().map(|r| r.errors()).sum(),
            runs_after_first: after.len(),
            recurrent_errors: runs.iter().map(|r| r.recurrent_errors).sum(),
            prompt_tokens_mean: mean(&|r| r.prompt_tokens as f64),
            lessons_shown: runs.iter().map(|r| r.lessons_shown).sum(),
            promoted: runs.iter().map(|r| r.promoted).sum(),
            suppressed: runs.iter().map(|r| r.suppressed).sum(),
        }
    }
}

/// A planted lesson and what became of it.
#[derive(Clone, Debug, Serialize)]
pub struct PlantedFate {
    /// The seed.
    pub seed: u64,
    /// The tool's name.
    pub tool: String,
    /// `harmful` or `contradictory`.
    pub harm: String,
    /// Its lesson ID in the Lore arm's store.
    pub id: String,
    /// Runs of the Lore arm that were shown it.
    pub shown: usize,
    /// Its status at the end of the seed.
    pub status: String,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The model's name.
    pub model: String,
    /// Where the Lore arm's lessons come from.
    pub lessons: Lessons,
    /// The seeds: each gives its own task order and sampling.
    pub seeds: Vec<u64>,
    /// The phases run.
    pub phases: String,
    /// Tasks of each kind in a phase.
    pub per_kind: usize,
    /// Attempts at a task before it counts as failed.
    pub max_steps: usize,
    /// The machine's load average (1, 5, 15 min) before the run.
    pub load_before: String,
    /// The load average after it.
    pub load_after: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Calls to the executor model.
    pub model_calls: usize,
    /// The median seconds of one executor call.
    pub model_seconds_median: f64,
    /// Per arm, over every run.
    pub arms: BTreeMap<Arm, Figures>,
    /// Per arm and phase.
    pub phases_by_arm: BTreeMap<Arm, BTreeMap<String, Figures>>,
    /// Per arm and seed: the medians are taken over these.
    pub seeds_by_arm: BTreeMap<Arm, Vec<Figures>>,
    /// What became of each planted lesson.
    pub planted: Vec<PlantedFate>,
    /// Lessons of the Lore arm written by the proposer.
    pub lessons_by_proposer: usize,
    /// Lessons distilled offline from the correction (`--lessons correction`, or a proposer
    /// answer Lore refused).
    pub lessons_distilled: usize,
    /// The figures the benchmark is judged by.
    pub goals: Goals,
    /// Every run.
    pub runs: Vec<Run>,
}

/// The figures the benchmark is judged by; absent where an arm or phase was not run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Goals {
    /// 1 − Lore's errors after the first task of each kind in phase B / the no-memory arm's.
    pub b_error_reduction_vs_none: Option<f64>,
    /// Lore's pass rate over every run.
    pub lore_pass_rate: Option<f64>,
    /// The retrieval baseline's pass rate.
    pub rag_pass_rate: Option<f64>,
    /// Lore's mean prompt tokens per run.
    pub lore_prompt_tokens_mean: Option<f64>,
    /// The retrieval baseline's mean prompt tokens per run.
    pub rag_prompt_tokens_mean: Option<f64>,
    /// Lore's pass rate in phase C minus phase A's runs after the first of each kind.
    pub retention_c_minus_a: Option<f64>,
    /// Planted lessons suppressed, `N of M`.
    pub planted_suppressed: Option<String>,
}

/// A model server the harness started; stopped when dropped.
struct Served {
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(command: &str) -> Result<(Served, String)> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let (program, args) = words
        .split_first()
        .ok_or_else(|| anyhow!("--model-server is empty"))?;
    let mut child = Command::new(program)
        .args(args)
        .env("OMP_WAIT_POLICY", "PASSIVE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start the model server {command:?}"))?;
    let stdout = child.stdout.take().expect("piped");
    let served = Served { child };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(600))
        .map_err(|_| anyhow!("the model server {command:?} printed no port within 600 s"))?;
    let port: u16 = line
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| {
            anyhow!("the model server {command:?} did not start: it printed {line:?}, not `port N`")
        })?;
    Ok((served, format!("http://127.0.0.1:{port}/v1")))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// SplitMix64: the task order of a seed, the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// A task in the stream: its tool (by index) and the task.
#[derive(Clone)]
struct Step {
    phase: char,
    tool: usize,
    task: Task,
}

/// `per_kind` tasks of each kind of `tool` (transfer kinds or not), starting at `offset` within
/// each kind, shuffled.
fn pick(
    tools: &[Tool],
    tool: usize,
    transfer: bool,
    per_kind: usize,
    offset: usize,
    phase: char,
    rng: &mut Rng,
) -> Vec<Step> {
    let mut kinds: BTreeMap<&str, Vec<&Task>> = BTreeMap::new();
    for t in tools[tool].tasks.iter().filter(|t| t.transfer == transfer) {
        kinds.entry(&t.kind).or_default().push(t);
    }
    let mut out = Vec::new();
    for tasks in kinds.values() {
        for i in 0..per_kind {
            out.push(Step {
                phase,
                tool,
                task: tasks[(offset + i) % tasks.len()].clone(),
            });
        }
    }
    rng.shuffle(&mut out);
    out
}

fn stream(tools: &[Tool], phases: &[char], per_kind: usize, seed: u64) -> Vec<Step> {
    let mut rng = Rng(seed);
    let start = (rng.next() % 4) as usize;
    let second = usize::from(tools.len() > 1);
    let mut out = Vec::new();
    for &phase in phases {
        match phase {
            'A' => out.extend(pick(tools, 0, false, per_kind, start, 'A', &mut rng)),
            'B' => out.extend(pick(tools, second, false, per_kind, start, 'B', &mut rng)),
            'C' => out.extend(pick(
                tools,
                0,
                false,
                per_kind.saturating_sub(1).max(1),
                start + per_kind,
                'C',
                &mut rng,
            )),
            'D' => {
                let mut d = Vec::new();
                for t in 0..tools.len() {
                    d.extend(pick(tools, t, true, per_kind.min(2), start, 'D', &mut rng));
                }
                rng.shuffle(&mut d);
                out.extend(d);
            }
            'S' => {
                // Twice the tasks of a phase: a planted lesson is shown only in the tasks where
                // recall ranks it first, and Lore judges it only once several runs showed it.
                let mut s = Vec::new();
                for t in 0..tools.len() {
                    s.extend(pick(
                        tools,
                        t,
                        false,
                        2 * per_kind,
                        start + 1,
                        'S',
                        &mut rng,
                    ));
                }
                rng.shuffle(&mut s);
                out.extend(s);
            }
            _ => {}
        }
    }
    out
}

/// Error fingerprint: the message with its quoted literals and numbers taken out, so one kind
/// of mistake has one fingerprint whatever the task's values.
pub fn fingerprint(message: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in message.to_lowercase().chars() {
        match c {
            '\'' | '"' | '`' => {
                if !quoted {
                    out.push('*');
                }
                quoted = !quoted;
            }
            _ if quoted => {}
            c if c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn system_prompt(tool: &Tool) -> String {
    format!(
        "You run the command-line tool {name}. Its manual:\n{manual}\n\
         Answer with JSON {{\"command\": \"...\"}} holding the one {name} command line that does \
         the task.",
        name = tool.name,
        manual = tool.manual.trim()
    )
}

/// The agent's correction of a task it failed and then passed, written from what it saw: the
/// operation, the command that passed and the one that failed with the tool's message.
///
/// Each part is there because the 1.5B model showed it is needed. The directive sentence holds
/// the form (Lore makes a lesson's rule of a correction's directive sentences, and a directive
/// that only points at "the form that worked" lost it). The form is a pattern, the task's
/// values replaced by their slots' names, since the model copies an example's values. The
/// sentence opens with the condition "When asked to OP (what the manual says OP does)", so
/// Lore states when the lesson applies: recall then holds it back from a task of another
/// operation of the same tool, whose form the model would copy, and finds it for a task worded
/// as the manual words the operation ("Order the rows …" for `sort`).
fn correction(tool: &Tool, task: &Task, good: &str, bad: &str, err: &str) -> String {
    let op = good.split_whitespace().nth(1).unwrap_or(&task.kind);
    let what = tool
        .describe(op)
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    let (form, slots) = tool.pattern(task, good);
    let (bad, _) = tool.pattern(task, bad);
    let (err, _) = tool.pattern(task, err);
    let values = match slots.as_slice() {
        [] => "the task's own values".to_string(),
        [one] => format!("the task's own {one}"),
        [first @ .., last] => format!("the task's own {} and {last}", first.join(", ")),
    };
    format!(
        "When asked to {op}{what}, write the {name} command in the form `{form}` with {values}. \
         The command `{bad}` failed with: {err}",
        name = tool.name
    )
}

/// What one arm keeps between tasks.
struct Memory {
    arm: Arm,
    rag: Experience,
    lore: Option<door::Lore>,
    /// (tool, kind) pairs seen.
    seen_kinds: HashSet<(usize, String)>,
    seen_fingerprints: HashSet<String>,
    planted: Vec<(String, String, String)>,
    written_by_proposer: usize,
    written_distilled: usize,
}

fn skill(tool: &Tool) -> String {
    format!("tools/{}", tool.name)
}

struct Harness<'a> {
    options: &'a Options,
    tools: &'a [Tool],
    model: Model,
    calls: Vec<f64>,
    trace: Option<std::io::BufWriter<std::fs::File>>,
}

impl Harness<'_> {
    fn trace(&mut self, event: &serde_json::Value) -> Result<()> {
        if let Some(w) = &mut self.trace {
            use std::io::Write;
            serde_json::to_writer(&mut *w, event)?;
            w.write_all(b"\n")?;
            w.flush()?;
        }
        Ok(())
    }

    fn memory(&self, arm: Arm, proposer: Option<&Proposer>) -> Result<Memory> {
        let lore = match arm {
            Arm::Lore => Some(door::Lore::new(&self.options.lore, proposer.cloned())?),
            _ => None,
        };
        Ok(Memory {
            arm,
            rag: Experience::default(),
            lore,
            seen_kinds: HashSet::new(),
            seen_fingerprints: HashSet::new(),
            planted: Vec::new(),
            written_by_proposer: 0,
            written_distilled: 0,
        })
    }

    /// Puts each tool's wrong lessons where the arm would find them: as a person's lesson in
    /// Lore, as a past attempt recorded as passed in the baseline's experience.
    fn plant(&self, memory: &mut Memory) -> Result<()> {
        for tool in self.tools {
            for p in &tool.planted {
                match memory.arm {
                    Arm::None => {}
                    Arm::Rag => memory.rag.add(Attempt {
                        task: p.task.clone(),
                        command: p.command.clone(),
                        error: None,
                    }),
                    Arm::Lore => {
                        let lore = memory.lore.as_ref().expect("the Lore arm has a store");
                        let s = skill(tool);
                        let ex = match &p.corrects {
                            Some(bad) => {
                                let ex = lore.record(&s, &p.task, bad, false, &[])?;
                                if let Some(task) = tool.tasks.iter().find(|t| t.text == p.task)
                                    && let Outcome::ToolError(e) = tool.run(bad, task)
                                {
                                    lore.signal(&ex, "hard_failure", &e, bad)?;
                                }
                                ex
                            }
                            None => lore.record(&s, &p.task, &p.command, false, &[])?,
                        };
                        let (id, _) = lore.correct(&s, &ex, &p.rule, false)?;
                        memory.planted.push((tool.name.clone(), p.harm.clone(), id));
                    }
                }
            }
        }
        Ok(())
    }

    fn task(&mut self, memory: &mut Memory, seed: u64, index: usize, step: &Step) -> Result<Run> {
        let tool = &self.tools[step.tool];
        let task = &step.task;
        let s = skill(tool);
        let system = system_prompt(tool);
        let first_of_kind = memory.seen_kinds.insert((step.tool, task.kind.clone()));
        let mut run = Run {
            seed,
            arm: memory.arm,
            phase: step.phase,
            index,
            tool: tool.name.clone(),
            kind: task.kind.clone(),
            task: task.text.clone(),
            first_of_kind,
            passed: false,
            steps: 0,
            tool_errors: 0,
            wrong_results: 0,
            recurrent_errors: 0,
            fingerprints: Vec::new(),
            commands: Vec::new(),
            prompt_tokens: 0,
            lessons_shown: 0,
            shown_ids: Vec::new(),
            held_out: 0,
            promoted: 0,
            suppressed: 0,
            lesson_written: false,
            model_seconds: 0.0,
        };
        let mut last: Option<(String, String)> = None;
        let mut first_failure: Option<(String, String, String)> = None;
        for attempt in 0..self.options.max_steps {
            let mut shown = Vec::new();
            let mut held_now = 0;
            // The task first, then memory: a small model follows a form it reads after the task
            // much more often than one it reads before (measured: 3 of 3 against 1 of 3).
            let mut user = format!("Task: {}\n", task.text);
            match memory.arm {
                Arm::None => {}
                Arm::Rag => {
                    let top = memory.rag.top(&task.text, 3);
                    if !top.is_empty() {
                        user.push_str("\nEarlier attempts at similar tasks (learn from them):\n");
                        for a in top {
                            user.push_str(&a.line());
                            user.push('\n');
                        }
                    }
                }
                Arm::Lore => {
                    let lore = memory.lore.as_ref().expect("the Lore arm has a store");
                    let recalled = lore.recall(
                        &task.text,
                        &s,
                        self.options.recall_limit,
                        last.as_ref().map(|(_, e)| e.as_str()),
                        &format!("seed-{seed}-task-{index}"),
                    )?;
                    held_now = recalled.held_out;
                    run.held_out += recalled.held_out;
                    if !recalled.ids.is_empty() {
                        user.push_str("\nLessons from earlier runs (follow them):\n");
                        user.push_str(&recalled.text);
                        user.push('\n');
                    }
                    run.lessons_shown += recalled.ids.len();
                    run.shown_ids.extend(recalled.ids.iter().cloned());
                    shown = recalled.ids;
                }
            }
            if let Some((cmd, err)) = &last {
                user.push_str(&format!(
                    "\nYour previous command `{cmd}` failed: {err}\nThe reference page of \
                     this operation: {}\n",
                    tool.reference(task)
                ));
            }
            let call_seed = seed
                .wrapping_mul(1_000_003)
                .wrapping_add((index * 10 + attempt) as u64);
            let reply = self.model.command(&system, &user, call_seed)?;
            self.calls.push(reply.elapsed.as_secs_f64());
            run.model_seconds += reply.elapsed.as_secs_f64();
            run.prompt_tokens += reply.prompt_tokens;
            run.steps += 1;
            let outcome = tool.run(&reply.command, task);
            self.trace(&serde_json::json!({
                "seed": seed, "arm": memory.arm, "phase": step.phase.to_string(),
                "index": index, "attempt": attempt, "task": task.text, "user": user,
                "command": reply.command, "outcome": format!("{outcome:?}"),
                "shown": shown, "held_out": held_now,
            }))?;
            run.commands.push(reply.command.clone());
            let error = match &outcome {
                Outcome::Passed => None,
                Outcome::ToolError(e) => {
                    run.tool_errors += 1;
                    Some(("hard_failure", e.clone()))
                }
                Outcome::WrongResult(e) => {
                    run.wrong_results += 1;
                    Some(("constraint_failure", e.clone()))
                }
            };
            if let Some((_, e)) = &error {
                let fp = fingerprint(e);
                if !memory.seen_fingerprints.insert(fp.clone()) {
                    run.recurrent_errors += 1;
                }
                run.fingerprints.push(fp);
            }
            match memory.arm {
                Arm::None => {}
                Arm::Rag => memory.rag.add(Attempt {
                    task: task.text.clone(),
                    command: reply.command.clone(),
                    error: error.as_ref().map(|(_, e)| e.clone()),
                }),
                Arm::Lore => {
                    let lore = memory.lore.as_ref().expect("the Lore arm has a store");
                    let ex =
                        lore.record(&s, &task.text, &reply.command, error.is_none(), &shown)?;
                    if let Some((channel, e)) = &error {
                        lore.signal(&ex, channel, e, &reply.command)?;
                        if first_failure.is_none() {
                            first_failure = Some((ex, reply.command.clone(), e.clone()));
                        }
                    }
                }
            }
            match error {
                None => {
                    run.passed = true;
                    break;
                }
                Some((_, e)) => last = Some((reply.command, e)),
            }
        }
        if let (Arm::Lore, true, Some((ex, bad, err))) =
            (memory.arm, run.passed, first_failure.as_ref())
        {
            let good = run.commands.last().expect("a passed run has a command");
            let text = correction(tool, task, good, bad, err);
            let lore = memory.lore.as_ref().expect("the Lore arm has a store");
            let (_, by_model) = lore.correct(&s, ex, &text, true)?;
            run.lesson_written = true;
            if by_model {
                memory.written_by_proposer += 1;
            } else {
                memory.written_distilled += 1;
            }
        }
        if let Some(lore) = &memory.lore {
            let (promoted, suppressed) = lore.maintain()?;
            run.promoted = promoted.len();
            run.suppressed = suppressed.len();
        }
        Ok(run)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs the benchmark and writes its report to `out`.
pub fn run(options: &Options, json: bool, out: &mut Out) -> Result<Report> {
    let tools = tools::load_all(&options.tools)?;
    if options.arms.is_empty() || options.seeds.is_empty() || options.phases.is_empty() {
        bail!("at least one arm, one seed and one phase are needed");
    }
    if let Some(p) = options.phases.iter().find(|p| !"ABCDS".contains(**p)) {
        bail!("unknown phase {p:?}: the phases are A, B, C, D and S");
    }
    if options.max_steps == 0 || options.per_kind == 0 {
        bail!("--max-steps and --per-kind must be at least 1");
    }
    let started = Instant::now();
    let load_before = load_average();
    let (_served, url) = match (&options.model_url, &options.model_server) {
        (Some(url), _) => (None, url.clone()),
        (None, Some(cmd)) => {
            let (s, url) = serve(cmd)?;
            (Some(s), url)
        }
        (None, None) => bail!(
            "no model: pass --model-url (any OpenAI-compatible /v1 endpoint) or --model-server \
             (a command that serves one on loopback; scripts/ci/model sets LORE_MODEL_SERVER)"
        ),
    };
    let mut model = Model::new(
        &url,
        &options.model_name,
        options.api_key.clone(),
        options.timeout,
    );
    model.temperature = options.temperature;
    model.max_tokens = options.max_tokens;
    let proposer = (options.lessons == Lessons::Proposer).then(|| Proposer {
        base_url: url.clone(),
        model: options.model_name.clone(),
    });
    let trace = match &options.trace {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => None,
    };
    let mut harness = Harness {
        options,
        tools: &tools,
        model,
        calls: Vec::new(),
        trace,
    };
    let mut runs = Vec::new();
    let mut planted = Vec::new();
    let (mut by_proposer, mut distilled) = (0, 0);
    for &seed in &options.seeds {
        let steps = stream(&tools, &options.phases, options.per_kind, seed);
        for &arm in &options.arms {
            let mut memory = harness.memory(arm, proposer.as_ref())?;
            let mut planted_done = false;
            for (index, step) in steps.iter().enumerate() {
                if step.phase == 'S' && !planted_done {
                    harness.plant(&mut memory)?;
                    planted_done = true;
                }
                let run = harness
                    .task(&mut memory, seed, index, step)
                    .with_context(|| {
                        format!(
                            "seed {seed}, arm {arm:?}, task {}: {}",
                            index + 1,
                            step.task.text
                        )
                    })?;
                let line = format!(
                    "seed {seed} {arm:?} {phase} {i:>2} {tool} {kind}: {verdict} in {steps} \
                         step(s), {errors} error(s), {tokens} prompt tokens{lessons}",
                    phase = run.phase,
                    i = index + 1,
                    tool = run.tool,
                    kind = run.kind,
                    verdict = if run.passed { "passed" } else { "FAILED" },
                    steps = run.steps,
                    errors = run.errors(),
                    tokens = run.prompt_tokens,
                    lessons = if arm == Arm::Lore {
                        format!(", {} lesson(s) shown", run.lessons_shown)
                    } else {
                        String::new()
                    },
                );
                // A long run shows its progress; with --json it goes to stderr, so stdout stays
                // one document.
                if json {
                    eprintln!("{line}");
                } else {
                    out.line(line)?;
                }
                runs.push(run);
            }
            by_proposer += memory.written_by_proposer;
            distilled += memory.written_distilled;
            if let Some(lore) = &memory.lore {
                for tool in &tools {
                    let lessons = lore.lessons(&skill(tool))?;
                    harness.trace(&serde_json::json!({
                        "seed": seed, "arm": arm, "tool": tool.name, "lessons": lessons,
                    }))?;
                }
                for (tool, harm, id) in &memory.planted {
                    let statuses = lore.statuses(&format!("tools/{tool}"))?;
                    let shown = runs
                        .iter()
                        .filter(|r| r.seed == seed && r.arm == Arm::Lore)
                        .filter(|r| r.shown_ids.contains(id))
                        .count();
                    planted.push(PlantedFate {
                        seed,
                        tool: tool.clone(),
                        harm: harm.clone(),
                        id: id.clone(),
                        shown,
                        status: statuses.get(id).cloned().unwrap_or_else(|| "gone".into()),
                    });
                }
            }
        }
    }
    let report = summarize(
        options,
        runs,
        planted,
        (by_proposer, distilled),
        (load_before, started),
        &harness.calls,
    );
    if let Some(path) = &options.svg {
        std::fs::write(path, svg::plot(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if json {
        out.json(&report)?;
    } else {
        print_summary(&report, out)?;
    }
    Ok(report)
}

fn summarize(
    options: &Options,
    runs: Vec<Run>,
    planted: Vec<PlantedFate>,
    (by_proposer, distilled): (usize, usize),
    (load_before, started): (String, Instant),
    calls: &[f64],
) -> Report {
    let mut arms = BTreeMap::new();
    let mut phases_by_arm: BTreeMap<Arm, BTreeMap<String, Figures>> = BTreeMap::new();
    let mut seeds_by_arm: BTreeMap<Arm, Vec<Figures>> = BTreeMap::new();
    for &arm in &options.arms {
        arms.insert(arm, Figures::of(runs.iter().filter(|r| r.arm == arm)));
        for &phase in &options.phases {
            phases_by_arm.entry(arm).or_default().insert(
                phase.to_string(),
                Figures::of(runs.iter().filter(|r| r.arm == arm && r.phase == phase)),
            );
        }
        for &seed in &options.seeds {
            seeds_by_arm.entry(arm).or_default().push(Figures::of(
                runs.iter().filter(|r| r.arm == arm && r.seed == seed),
            ));
        }
    }
    let phase = |arm: Arm, p: char| phases_by_arm.get(&arm).and_then(|m| m.get(&p.to_string()));
    let mut goals = Goals::default();
    if let (Some(l), Some(n)) = (phase(Arm::Lore, 'B'), phase(Arm::None, 'B'))
        && n.errors_after_first > 0
    {
        goals.b_error_reduction_vs_none =
            Some(1.0 - l.errors_after_first as f64 / n.errors_after_first as f64);
    }
    goals.lore_pass_rate = arms.get(&Arm::Lore).map(|f| f.pass_rate);
    goals.rag_pass_rate = arms.get(&Arm::Rag).map(|f| f.pass_rate);
    goals.lore_prompt_tokens_mean = arms.get(&Arm::Lore).map(|f| f.prompt_tokens_mean);
    goals.rag_prompt_tokens_mean = arms.get(&Arm::Rag).map(|f| f.prompt_tokens_mean);
    if phase(Arm::Lore, 'C').is_some() && phase(Arm::Lore, 'A').is_some() {
        let a = Figures::of(
            runs.iter()
                .filter(|r| r.arm == Arm::Lore && r.phase == 'A' && !r.first_of_kind),
        );
        let c = phase(Arm::Lore, 'C').expect("checked");
        goals.retention_c_minus_a = Some(c.pass_rate - a.pass_rate);
    }
    if !planted.is_empty() {
        let suppressed = planted.iter().filter(|p| p.status == "suppressed").count();
        goals.planted_suppressed = Some(format!("{suppressed} of {}", planted.len()));
    }
    Report {
        model: options.model_name.clone(),
        lessons: options.lessons,
        seeds: options.seeds.clone(),
        phases: options.phases.iter().collect(),
        per_kind: options.per_kind,
        max_steps: options.max_steps,
        load_before,
        load_after: load_average(),
        seconds: started.elapsed().as_secs_f64(),
        model_calls: calls.len(),
        model_seconds_median: median(calls.to_vec()),
        arms,
        phases_by_arm,
        seeds_by_arm,
        planted,
        lessons_by_proposer: by_proposer,
        lessons_distilled: distilled,
        goals,
        runs,
    }
}

fn print_summary(r: &Report, out: &mut Out) -> Result<()> {
    out.line(format!(
        "\nmodel {} · lessons by {:?} · seeds {:?} · phases {} · {:.0} s · {} model calls, \
         median {:.1} s · load {} → {}",
        r.model,
        r.lessons,
        r.seeds,
        r.phases,
        r.seconds,
        r.model_calls,
        r.model_seconds_median,
        r.load_before,
        r.load_after
    ))?;
    out.line(
        "arm   phase runs pass  steps  tool_err wrong  err_after_first  recurrent  prompt_tok  shown promoted suppressed",
    )?;
    for (arm, phases) in &r.phases_by_arm {
        let all = std::iter::once(("all".to_string(), &r.arms[arm]))
            .chain(phases.iter().map(|(p, f)| (p.clone(), f)));
        for (p, f) in all {
            out.line(format!(
                "{:<5} {:<5} {:>4} {:>4.2} {:>6.2} {:>8} {:>5} {:>9}/{:<6} {:>9} {:>11.0} {:>6} {:>8} {:>10}",
                format!("{arm:?}").to_lowercase(),
                p,
                f.runs,
                f.pass_rate,
                f.steps_mean,
                f.tool_errors,
                f.wrong_results,
                f.errors_after_first,
                f.runs_after_first,
                f.recurrent_errors,
                f.prompt_tokens_mean,
                f.lessons_shown,
                f.promoted,
                f.suppressed
            ))?;
        }
    }
    let g = &r.goals;
    let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    out.line(format!(
        "goals: phase B error reduction vs none {} · pass rate lore {} rag {} · prompt tokens \
         lore {} rag {} · retention (C − A) {} · planted suppressed {}",
        show(g.b_error_reduction_vs_none),
        show(g.lore_pass_rate),
        show(g.rag_pass_rate),
        show(g.lore_prompt_tokens_mean),
        show(g.rag_prompt_tokens_mean),
        show(g.retention_c_minus_a),
        g.planted_suppressed.as_deref().unwrap_or("-"),
    ))?;
    for p in &r.planted {
        out.line(format!(
            "planted {} lesson on {} (seed {}): {}",
            p.harm, p.tool, p.seed, p.status
        ))?;
    }
    out.line(format!(
        "lessons written by the proposer: {}, distilled from the correction: {}",
        r.lessons_by_proposer, r.lessons_distilled
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_drop_the_values_and_keep_the_mistake() {
        assert_eq!(
            fingerprint("gridtool: sort: cannot read sort argument '--by' (exit 2)"),
            fingerprint("gridtool: sort: cannot read sort argument '--order' (exit 3)")
        );
        assert_ne!(
            fingerprint("gridtool: sort: cannot read sort argument '--by' (exit 2)"),
            fingerprint("gridtool: filter: invalid filter expression '--by' (exit 2)")
        );
    }

    #[test]
    fn every_arm_gets_the_same_stream_and_kinds_repeat() {
        let tools = tools::load_all(&[]).unwrap();
        let a = stream(&tools, &['A', 'B', 'C', 'D', 'S'], 3, 7);
        let b = stream(&tools, &['A', 'B', 'C', 'D', 'S'], 3, 7);
        let texts = |s: &[Step]| s.iter().map(|s| s.task.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&a), texts(&b));
        assert_ne!(
            texts(&a),
            texts(&stream(&tools, &['A', 'B', 'C', 'D', 'S'], 3, 8))
        );
        let count = |p: char| a.iter().filter(|s| s.phase == p).count();
        assert_eq!((count('A'), count('B'), count('C')), (6, 6, 4));
        assert_eq!((count('D'), count('S')), (4, 24));
        assert!(a.iter().filter(|s| s.phase == 'B').all(|s| s.tool == 1));
        assert!(a.iter().filter(|s| s.phase == 'D').all(|s| s.task.transfer));
    }
}
