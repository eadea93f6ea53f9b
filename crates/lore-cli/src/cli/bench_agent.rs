//! `lore bench agent`'s arguments.

use std::path::PathBuf;

use clap::Args;
use lore_bench::agent::{Arm, Lessons};

/// The learning loop with a real model as the executor, against no memory and plain
/// experience retrieval; see docs/learning-bench.md.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Any OpenAI-compatible Chat Completions endpoint, up to `/v1`
    /// (e.g. `http://127.0.0.1:8080/v1`); it wins over `--model-server`, so a shell where
    /// scripts/ci/model set `LORE_MODEL_SERVER` can still point at a server already running.
    #[arg(long, value_name = "URL")]
    pub model_url: Option<String>,
    /// A command that serves a model on loopback and prints `port N` once it answers; the
    /// benchmark starts it and stops it (scripts/ci/model sets it up for the local model).
    #[arg(long, env = "LORE_MODEL_SERVER", value_name = "COMMAND")]
    pub model_server: Option<String>,
    /// The model's name as the endpoint knows it.
    #[arg(long, default_value = "local")]
    pub model: String,
    /// The endpoint's key, if it needs one.
    #[arg(long, env = "LORE_BENCH_MODEL_KEY", hide_env_values = true)]
    pub model_key: Option<String>,
    /// Tool files (the shape of crates/lore-bench/data/agent/gridtool.toml); the first is
    /// phase A's tool, the second phase B's. Default: the two shipped tools.
    #[arg(long = "tools", value_name = "FILE")]
    pub tools: Vec<PathBuf>,
    /// How many seeds (1, 2, …), or `--seed` for given ones.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// These seeds instead (comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with = "seeds")]
    pub seed: Vec<u64>,
    /// The arms: none, rag, lore.
    #[arg(long, value_delimiter = ',', default_value = "none,rag,lore", value_parser = Arm::parse)]
    pub arms: Vec<Arm>,
    /// The phases in order: A (first tool), B (new tool), C (retention), D (other tasks),
    /// S (planted wrong lessons).
    #[arg(long, default_value = "ABCDS")]
    pub phases: String,
    /// Tasks of each kind in a phase.
    #[arg(long, default_value_t = 3)]
    pub per_kind: usize,
    /// Attempts at a task before it counts as failed.
    #[arg(long, default_value_t = 3)]
    pub max_steps: usize,
    /// Lessons asked of `lore recall` per step. One: a small model copies the form of any lesson
    /// it is shown, and a second one is most often about another operation of the same tool.
    #[arg(long, default_value_t = 1)]
    pub recall_limit: usize,
    /// Where the Lore arm's lessons come from: `proposer` (Lore's proposer with the same model
    /// writes them from the agent's correction) or `correction` (the correction distilled
    /// offline).
    #[arg(long, default_value = "proposer", value_parser = Lessons::parse)]
    pub lessons: Lessons,
    /// Sampling temperature of the executor. At 0 the model answers the same prompt alike, so
    /// a run repeats; above it the seed of each call draws the sample.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// The most tokens a command may take.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: u32,
    /// Seconds to wait for one answer of the model.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Also write a plot of errors per run, per arm, to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also write every attempt's prompt, answer and outcome, and the Lore arm's lessons after
    /// each seed, to this file (JSON lines).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The `lore` binary that drives the Lore arm (default: this one).
    #[arg(long, value_name = "PATH")]
    pub lore: Option<PathBuf>,
}
