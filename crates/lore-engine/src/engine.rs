//! The Engine itself: the ports it holds, its configuration, and how a handle is built.
//!
//! What the Engine does lives beside this file, one service a file (capture, curate, recall,
//! measure, …), each an `impl Engine` block over the state defined here. This file depends on
//! none of them, so the services can call each other without the Engine's definition turning
//! into a knot of imports.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use lore_core::id::AuditId;
use lore_core::model::{AuditAction, AuditEntry, LessonStatus, RecordKind};
use lore_core::ports::clock::{Clock, SystemClock};
use lore_core::ports::store::{ListFilter, Store};
use lore_core::scope::Scope;
use lore_workspace::skills::SkillLibrary;

use lore_core::ports::embed::Embedder;
use lore_core::ports::tokenize::Tokenizer;
use lore_recall::lessons::{SharedIndex, Warmup};
use lore_recall::{ApproxTokenizer, BuiltinEmbedder, RecallConfig};

use crate::config::EngineConfig;
use crate::graph_cache::GraphCache;
use crate::reformulate::Reformulation;

/// The one entry point to Lore.
#[derive(Clone)]
pub struct Engine {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) skills: Option<SkillLibrary>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: EngineConfig,
    pub(crate) scope: Scope,
    pub(crate) proposer: Option<Arc<dyn lore_core::ports::llm::Llm>>,
    /// What the proposer's call sends and which proposals are kept.
    pub(crate) proposer_config: Arc<crate::config::ProposerConfig>,
    pub(crate) recall: RecallSettings,
    pub(crate) reformulation: Option<Reformulation>,
    /// Each scope's causal graph between queries, shared by scoped handles.
    pub(crate) graphs: Arc<GraphCache>,
    /// What counts the budgets of episode and graph answers; the recall tokenizer when `None`.
    pub(crate) episode_tokenizer: Option<Arc<dyn Tokenizer>>,
    /// Who this handle acts for, as a server authenticated them (a token's ID); it names every
    /// write's author and audit actor, over any name a request gives.
    pub(crate) principal: Option<String>,
    /// The knowledge chunks' index, shared by every handle of one Engine.
    pub(crate) knowledge: crate::knowledge::index::Shared<lore_core::model::KnowledgeChunk>,
    /// The approved decisions' index, shared likewise.
    pub(crate) decisions: crate::knowledge::index::Shared<lore_core::model::DecisionRecord>,
    /// Where approved lessons are written as SKILL.md folders, when configured.
    pub(crate) learned: Option<Arc<lore_workspace::learned::LearnedSkills>>,
    /// Whether the caller is a person or an agent, as a server's credential says; see
    /// [`Engine::as_author`].
    pub(crate) author: Option<lore_core::model::AuthorKind>,
    /// The conversation logs' search indexes, shared by every handle of one Engine.
    pub(crate) logs: Arc<crate::memory_search::LogIndexes>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.store.info().backend)
            .field("config", &self.config)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// How many times a write retries with a fresh ID after an ID collision.
pub(crate) const ID_ATTEMPTS: usize = 3;

/// The ports and settings recall runs with.
#[derive(Clone)]
pub(crate) struct RecallSettings {
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) tokenizer: Arc<dyn Tokenizer>,
    pub(crate) config: RecallConfig,
    /// Whether `config` came from the caller, fusion included; otherwise the fusion follows
    /// the embedder ([`RecallConfig::fusion_for`]).
    pub(crate) configured: bool,
    /// Shared by every clone and scoped handle of one Engine.
    pub(crate) index: SharedIndex,
    /// The index's background build, when recall does not wait for it (shared likewise).
    pub(crate) warmup: Arc<Warmup>,
    /// The session of each lesson's source execution, for `max_per_session`: executions do not
    /// change, so a recall reads each one once.
    pub(crate) sessions: Arc<
        std::sync::Mutex<std::collections::HashMap<lore_core::id::ExecutionId, Option<String>>>,
    >,
    /// Whether recalls take part in measuring lessons (hold-outs and rotation). A regression
    /// test's replay does not: it checks its lesson, and a replay without it tests nothing.
    pub(crate) measuring: bool,
    /// The run a recall without a key belongs to (shared likewise).
    pub(crate) unkeyed: Arc<UnkeyedRun>,
}

/// The run that recalls naming no key are taken to belong to: everything this Engine recalls
/// between two recorded runs. An agent that recalls at every step of a run and names no key
/// would otherwise have each lesson drawn anew at each step, and a run could show a lesson at
/// one step, hold it out at the step it is about, and still count as having shown it: the
/// failure its absence caused would be blamed on it. So the hold-out draw of such a recall is
/// keyed by this Engine's own random mark and the number of runs it has recorded: the same
/// for every recall until the next run is recorded, fresh after. Concurrent agents sharing an
/// Engine draw alike between two records, which keeps each draw random and independent of
/// outcomes; a process that records nothing (a one-shot command) draws anew each time.
#[derive(Debug)]
pub(crate) struct UnkeyedRun {
    mark: u64,
    recorded: std::sync::atomic::AtomicU64,
}

impl Default for UnkeyedRun {
    fn default() -> Self {
        Self {
            mark: (lore_core::id::random_unit() * (1u64 << 53) as f64) as u64,
            recorded: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl UnkeyedRun {
    /// The key of the run under way.
    pub(crate) fn key(&self) -> String {
        let recorded = self.recorded.load(std::sync::atomic::Ordering::Relaxed);
        format!("unkeyed:{:x}:{recorded}", self.mark)
    }

    /// A run was recorded: the next recall belongs to the next run.
    pub(crate) fn recorded(&self) {
        self.recorded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Default for RecallSettings {
    fn default() -> Self {
        Self {
            embedder: Arc::new(BuiltinEmbedder::default()),
            tokenizer: Arc::new(ApproxTokenizer),
            config: RecallConfig::default(),
            configured: false,
            index: SharedIndex::default(),
            warmup: Arc::default(),
            sessions: Arc::default(),
            measuring: true,
            unkeyed: Arc::default(),
        }
    }
}

impl Engine {
    /// An unrestricted Engine over `store`.
    pub fn new(store: Arc<dyn Store>, config: EngineConfig) -> Self {
        Self {
            store,
            skills: None,
            clock: Arc::new(SystemClock),
            config,
            scope: Scope::unrestricted(),
            proposer: None,
            proposer_config: Arc::default(),
            recall: RecallSettings::default(),
            reformulation: None,
            graphs: Arc::default(),
            episode_tokenizer: None,
            principal: None,
            knowledge: Arc::default(),
            decisions: Arc::default(),
            learned: None,
            author: None,
            logs: Arc::default(),
        }
    }

    /// Uses `skills` for prompt assembly and guardrails.
    pub fn with_skills(mut self, skills: SkillLibrary) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Uses `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// A handle limited to `scope`: reads outside it return nothing, writes are refused.
    pub fn scoped(&self, scope: Scope) -> Self {
        Self {
            scope,
            ..self.clone()
        }
    }

    /// A handle that acts for `principal` (a server's authenticated caller): it is the author of
    /// the corrections and the actor of the audit entries this handle writes, whatever actor a
    /// call names. Without one the named actor counts (the CLI's `--by`), then the scope's agent.
    pub fn acting_as(&self, principal: impl Into<String>) -> Self {
        Self {
            principal: Some(principal.into()),
            ..self.clone()
        }
    }

    /// Who this handle acts for, when a server set it.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The scope of this handle.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The skill library, when one is configured.
    pub fn skills(&self) -> Option<&SkillLibrary> {
        self.skills.as_ref()
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub(crate) fn actor(&self, explicit: Option<&str>) -> String {
        self.principal
            .clone()
            .or_else(|| explicit.map(str::to_owned))
            .or_else(|| self.scope.agent.clone())
            .unwrap_or_else(|| "lore".to_owned())
    }

    pub(crate) fn filter(&self) -> ListFilter {
        ListFilter {
            scope: self.scope.clone(),
            ..ListFilter::default()
        }
    }

    /// A new audit ID and entry; used by imports that record how a record arrived.
    pub fn audit_entry(
        &self,
        kind: RecordKind,
        subject: &str,
        action: AuditAction,
        to: Option<LessonStatus>,
        reason: &str,
    ) -> AuditEntry {
        audit(
            kind,
            subject,
            action,
            (None, to),
            &self.actor(None),
            self.now(),
            reason,
            Value::Null,
        )
    }
}

pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn audit(
    kind: RecordKind,
    subject: &str,
    action: AuditAction,
    (from, to): (Option<LessonStatus>, Option<LessonStatus>),
    actor: &str,
    at: DateTime<Utc>,
    reason: &str,
    evidence: Value,
) -> AuditEntry {
    AuditEntry {
        id: AuditId::generate(at),
        subject_kind: kind,
        subject: subject.to_owned(),
        action,
        from,
        to,
        actor: actor.to_owned(),
        at,
        reason: reason.to_owned(),
        evidence,
    }
}
