//! The command line, parsed once into typed values.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use lore_bench::Split;
use lore_bench::locomo::TurnText;
use lore_core::SkillPath;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{AuthorKind, CurationMode, LessonStatus, Outcome, SignalChannel};
use lore_engine::HumanCorrections;
use lore_providers::embedders::EmbedderKind;
use lore_recall::HnswParams;

mod bench_agent;
mod digest;
mod embedder;
mod episodes;
mod knowledge;
mod org;
mod review;
mod run;
mod serve;
mod tokens;
mod watch;

pub use bench_agent::AgentArgs;
pub use digest::{DigestCommand, EvalCommand, EvalDefineArgs};
pub use embedder::{AdminArgs, EmbedderCommand, PlanArgs};
pub use episodes::{EpisodeCommand, GraphCommand};
pub use knowledge::{
    ContextArgs, DecisionCommand, DecisionRecordArgs, IngestArgs, KnowledgeCommand,
    KnowledgeRecallArgs,
};
pub use org::OrgCommand;
pub use review::{Decision, MaintainArgs, ReviewArgs, ReviewCommand};
pub use run::{RunArgs, TestArgs};
pub use serve::{McpArgs, ReformulateArgs, ReformulatorKind, ServeArgs};
pub use tokens::TokensCommand;
pub use watch::WatchArgs;

impl Command {
    /// Whether the command works on a project's store, and so must not start a new one in
    /// whatever folder it happens to run in. The others make a project (`init`), name their
    /// stores themselves (`migrate`), use scratch stores (`bench`) or touch no store.
    pub fn needs_project(&self) -> bool {
        !matches!(
            self,
            Self::Init
                | Self::Config
                | Self::Completions { .. }
                | Self::Man
                | Self::Migrate(_)
                | Self::Bench(_)
        )
    }
}

/// Lore: a learning memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "lore", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The options every command takes, listed under their own heading in each command's help so
/// that a command's own options stand apart.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The store folder (default: the nearest `.lore/` above the working directory; outside a
    /// project, only `lore init` starts one, in `./.lore`).
    #[arg(long, global = true, env = "LORE_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The store: a PostgreSQL URL (`postgres://user:password@host/db`, shared by many Lore
    /// servers; builds with the `postgres` feature), or `sqlite:PATH`. Default: `lore.db` in the
    /// store folder. The URL's password is never printed.
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub store: Option<String>,
    /// The skills folder (default: `skills/` in the project root).
    #[arg(long, global = true, env = "LORE_SKILLS_DIR", value_name = "DIR")]
    pub skills: Option<PathBuf>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Curation mode: `auto` (machine-made lessons go on trial) or `review` (only approved
    /// lessons reach a prompt).
    #[arg(
        long,
        global = true,
        env = "LORE_CURATION",
        default_value = "auto",
        value_parser = parse_curation
    )]
    pub curation: CurationMode,
    /// In review mode, whether a person's correction is approved at once (`approve`) or waits
    /// for review like a machine-made lesson (`review`).
    #[arg(
        long,
        global = true,
        env = "LORE_HUMAN_CORRECTIONS",
        default_value = "approve",
        value_parser = parse_human_corrections
    )]
    pub human_corrections: HumanCorrections,
    /// The embedder for dense recall: `builtin` (no model), `minilm` (the local model in
    /// `LORE_MINILM_PATH`; builds with the `minilm` feature) or `http` (an OpenAI-compatible
    /// `/v1/embeddings` service: `LORE_EMBEDDER_BASE_URL`, `LORE_EMBEDDER_MODEL`,
    /// `LORE_EMBEDDER_API_KEY`).
    #[arg(
        long,
        global = true,
        env = "LORE_EMBEDDER",
        default_value = "builtin",
        value_parser = parse_embedder
    )]
    pub embedder: EmbedderKind,
    /// The settings file (default: `lore.toml` in the store folder, read when it exists).
    #[arg(long, global = true, env = "LORE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// One setting, `TABLE.KEY=VALUE` (`recall.mmr_lambda=0.5`, `memory.injection=tool`);
    /// repeatable, and it beats the environment (`LORE_RECALL_MMR_LAMBDA`) and the file. The
    /// keys are in docs/configuration.md; `lore config` shows the settings in effect.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Act as an organization member, or within a narrower scope, in the form tokens take:
    /// `agent:NAME,role:NAME,department:NAME[,domain:NAME]`. With an agent, the command acts as
    /// that agent (an agent never approves an org lesson); without `--as` it acts as a person.
    #[arg(long = "as", global = true, env = "LORE_AS", value_name = "SCOPE")]
    pub acting: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a project here: create `.lore/` and an example skill. Other commands run inside a
    /// project (here or in a folder above) and refuse elsewhere rather than start a store.
    Init,
    /// Log an execution an agent made; prints its ID.
    Record(RecordArgs),
    /// Correct an execution: stores the correction, learns a lesson, appends a guardrail.
    Correct(CorrectArgs),
    /// Report feedback on an execution: a hard or constraint failure, progress, efficiency, or a
    /// referee's grade.
    Signal(SignalArgs),
    /// Learn lessons that already exist (an agent's reflections, a team's runbook) from a
    /// JSON-lines file, each as a correction of a failed run of its task; running it twice
    /// stores nothing new.
    Learn(LearnArgs),
    /// Inspect memory.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Record and read episodes: a session's decisions and events with their causes.
    #[command(subcommand)]
    Episode(EpisodeCommand),
    /// Query the causal graph the episodes build: paths, what-if, similar decisions, patterns.
    #[command(subcommand)]
    Graph(GraphCommand),
    /// Review and fix learned lessons.
    #[command(subcommand)]
    Lessons(LessonsCommand),
    /// Review what waits: list it with its evidence, or approve, reject, keep as a one-time
    /// exception, mark sensitive, supersede (one or many at once).
    Review(ReviewArgs),
    /// Organization memory: the members Lore has seen, propagation of a member's lesson, and
    /// the org pool, whose proposals only a person approves (`lore review approve`).
    #[command(subcommand)]
    Org(OrgCommand),
    /// Run the periodic jobs: expiry of stale reviews, utility measurement (promotion and
    /// suppression of lessons by what they did), pruning, digests whose sources changed, and
    /// evaluation sets whose skill's memory changed; running twice changes nothing.
    Maintain(MaintainArgs),
    /// Import a Lore JSONL export, or the three JSON files of an `.agentura/` folder
    /// (executions, corrections and lessons kept by an agent runtime); a progress line on a
    /// terminal.
    Import(ImportArgs),
    /// Export memory as JSONL (everything, to restore or migrate) or as the three
    /// `.agentura/` files; a progress line on a terminal.
    Export(ExportArgs),
    /// The lessons that fit a task, packed into a token budget.
    Recall(RecallArgs),
    /// Ingest a team's documents as knowledge chunks: unchanged files are skipped, changed ones
    /// re-chunked, vanished ones removed (a progress bar on a terminal).
    Ingest(IngestArgs),
    /// Recall and list knowledge chunks.
    #[command(subcommand)]
    Knowledge(KnowledgeCommand),
    /// Decisions people made when agents asked: record, review, list, recall.
    #[command(subcommand)]
    Decision(DecisionCommand),
    /// The layered context for a task: every memory layer in a fixed order, each within its
    /// token budget and all within a total, with each layer's figures.
    Context(ContextArgs),
    /// Each skill's digest: one page a person or an agent reads, written from its approved
    /// lessons and decisions and rebuilt when they change: build, show,
    /// list, history.
    #[command(subcommand)]
    Digest(DigestCommand),
    /// Question sets with expected answers per skill, graded runs over time and their trends
    /// (is memory making the answers better?).
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Fit the embedder again to the retrievable lessons and re-embed every lesson (a progress
    /// bar on a terminal). Recall is refused while the store's vectors are another embedder's.
    Reembed,
    /// The embedder's lifecycle: train an adapter from the feedback, judge it on held-out
    /// queries, activate it, roll back, cancel a run.
    #[command(subcommand)]
    Embedder(EmbedderCommand),
    /// Copy every record from one store to another (SQLite to PostgreSQL or back), then check
    /// that both hold the same records, by counts and checksums. Running it again after an
    /// interruption continues: records already copied are skipped.
    Migrate(MigrateArgs),
    /// Measure Lore on this machine.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Serve the REST API (/v1) and MCP (/mcp) over HTTP; loopback only without authentication.
    Serve(ServeArgs),
    /// Serve MCP over standard input and output (Claude Desktop, Claude Code, Cursor).
    Mcp(McpArgs),
    /// API tokens for `lore serve`.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Run a skill on the configured model and record the execution.
    Run(RunArgs),
    /// Replay the regression tests generated from a skill's corrections.
    Test(TestArgs),
    /// A live table of executions as they are recorded.
    Watch(WatchArgs),
    /// Show the settings in effect: the file read, each key given with where it came from
    /// (`lore.toml`, the environment, `--set`), and the resulting recall and agent-memory
    /// configuration. A key that does not check out is refused here as everywhere.
    Config,
    /// Print a shell completion script: `lore completions bash > /etc/bash_completion.d/lore`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `lore man > lore.1; man ./lore.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The store to copy from: `sqlite:PATH` or a PostgreSQL URL (`postgres:URL` or
    /// `postgres://…`).
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The store to copy into, created when missing: `sqlite:PATH` or a PostgreSQL URL.
    #[arg(long, value_name = "STORE")]
    pub to: String,
}

#[derive(Debug, Args)]
pub struct RecallArgs {
    /// The task or question, in plain words.
    pub query: String,
    /// Only lessons of this skill, `domain/skill`.
    #[arg(long)]
    pub skill: Option<SkillPath>,
    /// The token budget (default: `recall.budget` in lore.toml, else 2000).
    #[arg(long)]
    pub budget: Option<usize>,
    /// At most this many lessons (default: `recall.limit` in lore.toml, else 10).
    #[arg(short = 'n', long)]
    pub limit: Option<usize>,
    /// An error message or fingerprint: lessons it triggers rank first, and lessons sharing
    /// the failure tags inferred from it (`unknown_symbol`, `sort_direction`, …) rank higher.
    #[arg(long)]
    pub error: Option<String>,
    /// Failure tags (comma-separated), beside those inferred from `--error`.
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// The tokenizer counting the budget: cl100k_base or o200k_base.
    #[arg(long, default_value = "cl100k_base")]
    pub encoding: String,
    /// Show every candidate: sources, scores, kept or dropped and why.
    #[arg(long)]
    pub explain: bool,
    /// A key naming this run (a run or session ID): a lesson that measurement suppressed is
    /// then still tried in a small share of the runs it matches, marked as explored.
    #[arg(long)]
    pub run: Option<String>,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The skill that ran, `domain/skill`.
    pub skill: SkillPath,
    /// The input as JSON, or `@FILE` to read it from a file (`@-` for standard input).
    #[arg(long)]
    pub input: String,
    /// The output as JSON, or `@FILE`.
    #[arg(long)]
    pub output: String,
    /// accepted, rejected, pending_review, success or failure.
    #[arg(long, default_value = "pending_review", value_parser = parse_outcome)]
    pub outcome: Outcome,
    /// Total model cost in US dollars.
    #[arg(long, allow_negative_numbers = true)]
    pub cost_usd: Option<f64>,
    /// Wall-clock milliseconds.
    #[arg(long, allow_negative_numbers = true)]
    pub latency_ms: Option<f64>,
    /// The model that produced the output.
    #[arg(long)]
    pub model: Option<String>,
    /// The session this run belongs to.
    #[arg(long)]
    pub session: Option<String>,
    /// The lessons that were in the run's prompt (comma-separated IDs, as `lore recall` or
    /// `lore memory prompt` listed them), so their utility can be measured.
    #[arg(long, value_delimiter = ',')]
    pub lessons_shown: Vec<LessonId>,
    /// The skill is new on purpose: no warning when it has no `SKILL.md` and no earlier run.
    #[arg(long)]
    pub new: bool,
}

/// `lore signal`.
#[derive(Debug, Args)]
pub struct SignalArgs {
    /// The execution the signal is about.
    pub execution_id: ExecutionId,
    /// hard_failure, constraint_failure, progress, efficiency or referee.
    #[arg(long, value_parser = parse_channel)]
    pub channel: SignalChannel,
    /// The error text, or what went wrong. A failure without one is fingerprinted from its
    /// step: `--action` with `--state-before`, `--state-after` and `--failure-reason`.
    #[arg(long, default_value = "")]
    pub message: String,
    /// Progress toward the goal (≤ 0: none), the run's steps/time/cost for efficiency, or a
    /// referee's grade of the run from 0 (worst) to 1 (best).
    #[arg(long, allow_negative_numbers = true)]
    pub value: Option<f64>,
    /// The action that was attempted.
    #[arg(long)]
    pub action: Option<String>,
    /// Failure tags to add to the inferred ones (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub tags: Vec<String>,
    /// The state before the failed step, for a failure without a message.
    #[arg(long, default_value = "")]
    pub state_before: String,
    /// The state after it (the same as before: the step is stuck).
    #[arg(long, default_value = "")]
    pub state_after: String,
    /// Why the step counts as failed (`collision`, `no_change`); the channel's name if omitted.
    #[arg(long, default_value = "")]
    pub failure_reason: String,
}

#[derive(Debug, Args)]
pub struct CorrectArgs {
    /// The skill of the execution, `domain/skill`.
    pub skill: SkillPath,
    /// The execution being corrected.
    #[arg(long)]
    pub execution_id: ExecutionId,
    /// What was wrong and what should change.
    #[arg(long)]
    pub correction: String,
    /// Who is correcting (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
    /// `human` (the default: in auto curation the lesson is approved at once) or `agent` (an
    /// agent or automated referee: the lesson goes on trial and must earn its place).
    #[arg(long, default_value = "human", value_parser = parse_author_kind)]
    pub author_kind: AuthorKind,
}

#[derive(Debug, Args)]
pub struct LearnArgs {
    /// The file: one JSON object a line with `skill`, `task` (what was being done), `lesson`
    /// (the rule), and optionally `failed` (what failed), `fingerprint` and `tags`; `-` reads
    /// standard input.
    #[arg(long, value_name = "FILE")]
    pub jsonl: PathBuf,
    /// Who wrote the lessons (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
    /// `human` (the default: in auto curation the lessons are approved at once) or `agent`
    /// (an agent's reflections: they go on trial and must earn their place).
    #[arg(long, default_value = "human", value_parser = parse_author_kind)]
    pub author_kind: AuthorKind,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Store type and counts.
    Status,
    /// Full-text search over lessons, executions and episodes.
    Search {
        /// Plain words.
        query: String,
        /// How many results.
        #[arg(short = 'n', long, default_value_t = 5)]
        limit: usize,
        /// Only this skill.
        #[arg(long)]
        skill: Option<SkillPath>,
        #[command(flatten)]
        reformulate: ReformulateArgs,
    },
    /// The assembled 4-layer prompt with the learned rules.
    Prompt {
        /// `domain/skill`.
        skill: SkillPath,
        /// The task the prompt is for: its memory is then the layered context for it
        /// (lessons, decisions, digest, knowledge), as `lore run` builds it for the input's
        /// text; without it, every retrievable lesson of the skill.
        #[arg(long)]
        task: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum LessonsCommand {
    /// List lessons, private data masked.
    List {
        /// Only this skill.
        #[arg(long)]
        skill: Option<SkillPath>,
        /// Only these statuses (comma-separated).
        #[arg(long, value_delimiter = ',', value_parser = parse_status)]
        status: Vec<LessonStatus>,
    },
    /// Show one lesson and its audit trail, private data masked.
    Show {
        /// The lesson ID.
        id: LessonId,
        /// Show the text as written, private data unmasked; the read is audited.
        #[arg(long)]
        raw: bool,
        /// Who reads it raw (recorded in the audit log).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
    /// Edit a lesson's text or numbers (audited).
    Edit(EditArgs),
    /// Erase a lesson's content and its source corrections' text for good (audited).
    Purge(PurgeArgs),
    /// Retire a lesson: it is archived and never reaches a prompt again (audited).
    Retire {
        /// The lesson ID.
        id: LessonId,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
        /// Who (recorded in the audit log).
        #[arg(long, env = "LORE_ACTOR")]
        by: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The lesson ID.
    pub id: LessonId,
    /// Why (recorded in the audit log; required).
    #[arg(long)]
    pub reason: String,
    /// Who (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The lesson ID.
    pub id: LessonId,
    /// A new rule.
    #[arg(long)]
    pub rule: Option<String>,
    /// New conditions.
    #[arg(long)]
    pub applies_when: Option<String>,
    /// A new mistake description.
    #[arg(long)]
    pub mistake: Option<String>,
    /// A new root cause.
    #[arg(long)]
    pub root_cause: Option<String>,
    /// A new confidence between 0 and 1.
    #[arg(long, allow_negative_numbers = true)]
    pub confidence: Option<f64>,
    /// New tags (comma-separated), replacing the old ones.
    #[arg(long, value_delimiter = ',')]
    pub tags: Option<Vec<String>>,
    /// Why.
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Who (recorded in the audit log).
    #[arg(long, env = "LORE_ACTOR")]
    pub by: Option<String>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A folder holding `episodic_memory.json`, `corrections.json`, `reflexion_entries.json`.
    #[arg(long, default_value = ".agentura", conflicts_with = "jsonl")]
    pub from: PathBuf,
    /// A Lore JSONL export to restore instead (`-` for standard input).
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The folder to write the three files into (`episodic_memory.json`, `corrections.json`,
    /// `reflexion_entries.json`).
    #[arg(long, default_value = ".agentura-export", conflicts_with = "jsonl")]
    pub to: PathBuf,
    /// Write every record, knowledge document, decision, digest, evaluation and tuning run as
    /// JSON lines to this file instead (`-` for standard output).
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Latency of recording one execution, and import throughput.
    Ingest {
        /// How many records to time for the recording latency.
        #[arg(long, default_value_t = 2000)]
        records: usize,
        /// Import sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        sizes: Vec<usize>,
    },
    /// Knowledge: ingest throughput (chunks/s) and layered-context latency (p50, p99) over
    /// generated runbooks, with the configured `--embedder`.
    Knowledge {
        /// About how many chunks to ingest.
        #[arg(long, default_value_t = 100_000)]
        chunks: usize,
        /// How many layered contexts to time.
        #[arg(long, default_value_t = 200)]
        queries: usize,
    },
    /// Recording episodes and querying the causal graph (medians) over synthetic episodes.
    Episodes {
        /// How many episodes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        sizes: Vec<usize>,
    },
    /// Recall latency (p50, p99, per stage) over synthetic LoCoMo-like lessons, with the
    /// configured `--embedder` (the query embedding timed as a stage of its own).
    Recall {
        /// Corpus sizes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
        sizes: Vec<usize>,
        /// LoCoMo's JSON file, to ask its real questions (synthetic ones otherwise).
        #[arg(long)]
        data: Option<PathBuf>,
        /// HNSW links per node (layer 0 has twice as many), to tune the graph.
        #[arg(long, default_value_t = HnswParams::default().m)]
        m: usize,
        /// HNSW beam width while building.
        #[arg(long, default_value_t = HnswParams::default().ef_construction)]
        ef_construction: usize,
        /// HNSW beam width while searching.
        #[arg(long, default_value_t = HnswParams::default().ef_search)]
        ef_search: usize,
        /// HNSW beam width on layer 1, whose nodes all start the search on layer 0 (1: one
        /// greedy descent).
        #[arg(long, default_value_t = HnswParams::default().ef_entry)]
        ef_entry: usize,
        /// Also search each size's graph, once built, with these efforts
        /// (`EF_ENTRY:EF_SEARCH`, comma-separated), printing recall and the dense search's p50
        /// for each, so that efforts are compared on one graph.
        #[arg(long, value_delimiter = ',', value_parser = parse_effort, value_name = "ENTRY:SEARCH")]
        sweep: Vec<(usize, usize)>,
        /// Also write each size's corpus and questions with their vectors to
        /// `DIR/{size}/corpus.jsonl` and `queries.jsonl`, so that a peer (LanceDB's script in
        /// the benchmark data) searches exactly the same data.
        #[arg(long, value_name = "DIR")]
        peer_data: Option<PathBuf>,
        /// Also run the peer's script (LanceDB's `lancedb_hybrid.py` in the benchmark data) on
        /// each size's data, up to 200k lessons, and report its figures beside Lore's as a
        /// ratio; `LORE_PEER_PYTHON` names a Python that has its packages.
        #[arg(long, value_name = "SCRIPT")]
        peer: Option<PathBuf>,
        /// Keep each size's embedded corpus in this folder and read it back on the next run
        /// with the same embedder (a model takes over an hour for a million lessons); a run
        /// stopped midway resumes where it got.
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
        /// The corpus: `locomo` (LoCoMo-like conversation turns) or `small` (the support-desk
        /// lessons of the server bench's seed.py, whose few words every query shares, so BM25
        /// reads long posting lists).
        #[arg(long, default_value = "locomo", value_parser = lore_bench::recall::Vocab::parse)]
        vocab: lore_bench::recall::Vocab,
        /// Queries timed per size (p999 needs 1,000 to be more than the slowest).
        #[arg(long, default_value_t = lore_bench::recall::QUERIES)]
        queries: usize,
    },
    /// Real lessons: load agents' self-reflections as corrections of failed runs, then ask
    /// recall with each task; hit@1/3/5 per skill against plain BM25 over the same texts.
    Lessons {
        /// JSON lines with `skill`, `task`, `failed` and `reflection` (Reflexion's shape).
        #[arg(long)]
        data: PathBuf,
        /// How the reflections go in: `correct` (one correction of a recorded failed run
        /// each) or `learn` (one bulk import, as `lore learn --jsonl` makes it).
        #[arg(long, default_value = "correct", value_parser = lore_bench::lessons::Via::parse)]
        via: lore_bench::lessons::Via,
        /// JSON lines with `task` (and optionally `split`): tasks that no lesson is about,
        /// asked over every skill; the share that gets any lesson is the false activation rate.
        #[arg(long, value_name = "FILE")]
        unrelated: Option<PathBuf>,
        /// Write this many other approved lessons (made from templates over many domains)
        /// before the benchmark's own, as in a store in use.
        #[arg(long, default_value_t = 0)]
        distractors: usize,
        /// Keep the embedded store of distractors in this folder and copy it on the next run
        /// with the same count and embedder.
        #[arg(long, value_name = "DIR")]
        cache: Option<PathBuf>,
    },
    /// People's corrections kept as they meant them: pairs of corrections (the same rule
    /// reworded, another subject, the opposite directive, a compatible addition), each made by
    /// a person on a run of its own, and the precision and recall of merging and of conflicts,
    /// on the half the rules were tuned on and on the held-out half.
    Curation {
        /// JSON lines with `class` (reworded, different_subject, opposite, compatible),
        /// `first` and `second`; the pairs shipped with Lore when omitted.
        #[arg(long)]
        data: Option<PathBuf>,
    },
    /// The learning loop with a real model (any OpenAI-compatible endpoint) as the executor on
    /// two fictional tools: no memory, plain experience retrieval and Lore on the same tasks.
    Agent(AgentArgs),
    /// The learning protocol (bootstrap, a new tool, retention, planted harmful lessons) with two
    /// simulated tools (gridtool, fluxtool) and an agent that learns only from the text Lore
    /// returns: error recurrence with and without memory, retention, suppression of planted
    /// harmful lessons, retrieval precision.
    Learning {
        /// How many random seeds.
        #[arg(long, default_value_t = 5)]
        seeds: usize,
        /// Also write a plot of errors per run, with and without memory, to this SVG file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Every recall names its run's key, as `lore recall --run` does: lessons still being
        /// measured are held out of some runs and suppressed ones explored inside the recall.
        /// The console keeps only the unkeyed figures.
        #[arg(long)]
        keyed: bool,
    },
    /// SQLite beside PostgreSQL through the same Engine: recording throughput (by how many
    /// threads write at once), writing approved lessons, and recall latency over them. Each store is fresh: a
    /// temporary file, and a schema of its own on the server (dropped afterwards).
    Stores {
        /// How many lessons to write and recall over.
        #[arg(long, default_value_t = 10_000)]
        lessons: usize,
        /// How many threads record at once, one figure per count (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
        writers: Vec<usize>,
        /// A PostgreSQL server to measure beside SQLite (the `postgres` feature).
        #[arg(long, value_name = "URL")]
        postgres: Option<String>,
    },
    /// Evidence recall on LoCoMo conversations: BM25, the builtin embedder, and their fusions.
    Locomo {
        /// LoCoMo's JSON file (a list of samples).
        #[arg(long)]
        data: PathBuf,
        /// Which questions: `dev` (the half defaults are chosen on), `heldout` (the other
        /// half) or `all`.
        #[arg(long, default_value = "all", value_parser = parse_split)]
        split: Split,
        /// A turn's document text: `with-previous` (after the previous turn of its session, as
        /// context for matching; still one turn a slot) or `alone`.
        #[arg(long, default_value = "with-previous", value_parser = parse_turn_text)]
        turn_text: TurnText,
    },
}

fn parse_turn_text(raw: &str) -> Result<TurnText, String> {
    match raw {
        "with-previous" => Ok(TurnText::WithPrevious),
        "alone" => Ok(TurnText::Alone),
        other => Err(format!("{other:?}; expected with-previous or alone")),
    }
}

fn parse_embedder(raw: &str) -> Result<EmbedderKind, String> {
    EmbedderKind::parse(raw).map_err(|e| e.to_string())
}

fn parse_split(raw: &str) -> Result<Split, String> {
    match raw {
        "dev" => Ok(Split::Dev),
        "heldout" => Ok(Split::Heldout),
        "all" => Ok(Split::All),
        other => Err(format!("{other:?}; expected dev, heldout or all")),
    }
}

fn parse_outcome(raw: &str) -> Result<Outcome, String> {
    Outcome::parse(raw).map_err(|e| e.to_string())
}

fn parse_author_kind(raw: &str) -> Result<AuthorKind, String> {
    match raw {
        "human" => Ok(AuthorKind::Human),
        "agent" => Ok(AuthorKind::Agent),
        other => Err(format!("unknown author kind {other:?}: human or agent")),
    }
}

fn parse_channel(raw: &str) -> Result<SignalChannel, String> {
    SignalChannel::parse(raw).map_err(|e| e.to_string())
}

fn parse_curation(raw: &str) -> Result<CurationMode, String> {
    match raw {
        "auto" => Ok(CurationMode::Auto),
        "review" => Ok(CurationMode::Review),
        other => Err(format!("{other:?}; expected auto or review")),
    }
}

fn parse_human_corrections(raw: &str) -> Result<HumanCorrections, String> {
    match raw {
        "approve" => Ok(HumanCorrections::Approve),
        "review" => Ok(HumanCorrections::Review),
        other => Err(format!("{other:?}; expected approve or review")),
    }
}

fn parse_status(raw: &str) -> Result<LessonStatus, String> {
    LessonStatus::parse(raw).map_err(|e| e.to_string())
}

/// `ENTRY:SEARCH`, two beam widths of at least 1.
fn parse_effort(raw: &str) -> Result<(usize, usize), String> {
    let bad = || format!("expected ENTRY:SEARCH, two beam widths of at least 1, got {raw:?}");
    let (entry, search) = raw.split_once(':').ok_or_else(bad)?;
    let width = |w: &str| w.trim().parse::<usize>().ok().filter(|&w| w >= 1);
    Ok((
        width(entry).ok_or_else(bad)?,
        width(search).ok_or_else(bad)?,
    ))
}
