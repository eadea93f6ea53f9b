//! The Engine: the one entry point for everything a user of Lore does (seed 002's service layer).
//!
//! The CLI, HTTP handlers and MCP tools translate their input into Engine calls and its results
//! into their output; none of them holds business logic. The Engine checks scope on every call,
//! even though stores filter by scope too, so that isolation never rests on one layer alone.
//!
//! [`Engine`] is defined in `engine.rs` with the ports it holds; each service is a file of its
//! own beside it: `capture` (executions, corrections), `curate` (dedup, conflicts), `review`,
//! `recall`, `measure` (utility and its gates), `maintain`, `memory` (agents' own memory),
//! `episodes` and `causal` (the causal graph), `prompt`, `transfer` (import and export),
//! `purge`, `run` (a skill on a model) and `regression` (tests from corrections).

mod capture;
mod causal;
mod changes;
mod config;
mod curate;
mod decisions;
mod digest;
pub mod distill;
mod engine;
mod episode_search;
mod episode_texts;
mod episodes;
mod evals;
pub mod extract;
mod graph_cache;
pub mod interchange;
pub mod knowledge;
mod layered;
pub mod learn;
mod lessons;
mod links;
mod maintain;
mod materialize;
mod measure;
mod memory;
mod memory_search;
mod org;
mod pages;
pub mod prompt;
mod propose;
mod purge;
mod recall;
mod reformulate;
mod regression;
mod repair;
mod reports;
mod review;
mod run;
mod search;
mod transfer;
mod tuning;
mod warm;

pub use causal::{
    CausalPath, MAX_GRAPH_RESULTS, OutcomeStats, PATH_BUDGET, PATTERN_BUDGET, PathStep,
    PatternQuery, Patterns, SIMILAR_BUDGET, SimilarDecisions, WHAT_IF_BUDGET, WHAT_IF_OVERLAP,
    WhatIf,
};
pub use changes::{Change, Followed};
pub use curate::{CurationReport, MAX_LINKS_HELD, MAX_RELATED};
pub use decisions::{
    DEFAULT_DECISIONS, DecisionQuery, DecisionResult, NewDecision, RecalledDecision,
};
pub use digest::{DigestReport, MAX_DIGEST_DECISIONS, MAX_DIGEST_LESSONS, render as render_digest};
pub use episode_texts::RecalledEpisode;
pub use episodes::{
    DecisionSequence, EPISODE_BUDGET, EpisodeQuery, EpisodeReceipt, EpisodeSummary, EpisodeView,
    MAX_BUDGET, Rendered,
};
pub use evals::{
    DEFAULT_TREND_RUNS, EvalRunRequest, EvalTrend, MAX_EVAL_QUESTIONS, NewEvalSet, TrendPoint,
};
pub use graph_cache::DecisionMatch;
pub use layered::{
    ContextLayer, ContextQuery, ContextResult, LAYER_SEPARATOR, LayerReport, LayerStatus,
};
pub use learn::{LearnReport, LearnedLine, LessonLine, LineOutcome};
pub use lessons::LessonEdit;
pub use lore_recall::lessons::{IndexInfo, IndexOrigin, IndexState, Phases};
pub use maintain::{MaintainReport, RECURS_AT};
pub use measure::{
    EXPLORE_SHARE, HOLDOUT_SHARE, MATCH_AT, MIN_RUNS, MeasureReport, Measurement, NewSignal,
    OPEN_HOLDOUT_SHARE, OVERALL_MIN_RUNS, PROMOTE_AT, SETTLED_HOLDOUT_SHARE, STRATUM_SHARE,
    TYPE_AT, TypeMeasurement, Z, Z_OVERALL,
};
pub use memory::{
    CoreBlock, CoreEdit, CoreMemory, MAX_RESULTS, MEMORY_TOOLS_HEADING, MemoryHit, ToolDefinition,
    memory_instruction, memory_tools,
};
pub use org::{PoolOutcome, PoolPattern, PoolReport, Propagated};
pub use pages::{MAX_PAGE, Page, PageRequest};
pub use propose::{DISCARDED as PROPOSAL_DISCARDED, proposal_schema};
pub use purge::{EpisodePurgeReport, PURGED, PurgeReport};
pub use recall::{RecallQuery, RecallResult, RecalledLesson, ReembedReport};
pub use reformulate::{
    LexicalReformulator, MAX_ROUNDS, MemorySearch, ModelReformulator, Reformulation, Reformulator,
    SearchRound, Verdict, reformulation_schema,
};
pub use regression::{CaseResult, GeneratedTest, TestReport};
pub use repair::FileRepair;
pub use review::{Attribution, RelatedLesson, ReviewItem};
pub use run::{RunOutcome, RunRequest, SkillAnswer};
pub use transfer::ImportReport;
pub use transfer::layers;
pub use tuning::{ActiveEmbedder, Admin, Preflight, Switch};

pub use capture::{
    CorrectionOutcome, FailedTransition, NO_RULE, NewCorrection, NewExecution, error_tags,
    failure_tags,
};
pub use config::{
    Capture, CaptureStrategy, EngineConfig, HumanCorrections, InjectionStrategy, MemoryPolicy,
    OrgConfig, ProposerConfig, Pruning, Upkeep,
};
pub use engine::Engine;
pub use search::Status;
