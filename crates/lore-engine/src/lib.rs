//! The Engine: the one entry point for everything a user of Lore does (seed 002's service layer).
//!
//! CLI commands, and later HTTP handlers and MCP tools, translate their input into Engine calls
//! and its results into their output; none of them holds business logic. The Engine checks scope
//! on every call, even though stores filter by scope too, so that isolation never rests on one
//! layer alone.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use tracing::instrument;

use crate::distill::distill;
use crate::prompt::AssembledPrompt;
use lore_core::error::{Error, Result};
use lore_core::id::{AuditId, CorrectionId, ExecutionId, LessonId};
use lore_core::model::{
    AuditAction, AuditEntry, AuthorKind, Correction, CurationMode, Execution, Lesson, LessonSource,
    LessonStatus, MemoryCategory, Outcome, RecordKind, UtilityStats,
};
use lore_core::ports::clock::{Clock, SystemClock};
use lore_core::ports::store::{
    EpisodeFilter, ListFilter, OnDuplicate, Record, SearchHit, Store, StoreCounts, StoreInfo,
    WriteReport,
};
use lore_core::scope::{Scope, SkillPath};
use lore_core::supersession::Thresholds;
use lore_workspace::skills::{GuardrailWrite, SkillLibrary};

mod causal;
mod changes;
mod curate;
pub mod distill;
mod episodes;
pub mod extract;
mod graph_cache;
pub mod interchange;
mod lessons;
mod maintain;
mod measure;
mod memory;
mod pages;
pub mod prompt;
mod propose;
mod purge;
mod recall;
mod reformulate;
mod regression;
mod review;
mod run;
mod transfer;

pub use causal::{
    CausalPath, DecisionMatch, MAX_GRAPH_RESULTS, OutcomeStats, PATH_BUDGET, PATTERN_BUDGET,
    PathStep, PatternQuery, Patterns, SIMILAR_BUDGET, SimilarDecisions, WHAT_IF_BUDGET,
    WHAT_IF_OVERLAP, WhatIf,
};
pub use changes::{Change, Followed};
pub use curate::CurationReport;
pub use episodes::{
    DecisionSequence, EPISODE_BUDGET, EpisodeQuery, EpisodeReceipt, EpisodeSummary, EpisodeView,
    MAX_BUDGET, Rendered,
};
pub use lessons::LessonEdit;
pub use lore_recall::lessons::{IndexInfo, IndexOrigin};
pub use maintain::{MaintainReport, Pruning, RECURS_AT, Upkeep};
pub use measure::{
    EXPLORE_SHARE, MATCH_AT, MIN_RUNS, MeasureReport, Measurement, NewSignal, OVERALL_MIN_RUNS,
    PROMOTE_AT, Z, Z_OVERALL,
};
pub use memory::{
    CoreBlock, CoreEdit, CoreMemory, InjectionStrategy, MAX_RESULTS, MemoryHit, MemoryPolicy,
    ToolDefinition, memory_tools,
};
pub use pages::{MAX_PAGE, Page, PageRequest};
pub use propose::proposal_schema;
pub use purge::{EpisodePurgeReport, PURGED, PurgeReport};
pub use recall::{RecallQuery, RecallResult, RecalledLesson, ReembedReport};
pub use reformulate::{
    LexicalReformulator, MAX_ROUNDS, MemorySearch, ModelReformulator, Reformulation, Reformulator,
    SearchRound, Verdict, reformulation_schema,
};
pub use regression::{CaseResult, GeneratedTest, TestReport};
pub use review::{Attribution, RelatedLesson, ReviewItem};
pub use run::{RunOutcome, RunRequest, SkillAnswer};
pub use transfer::ImportReport;

/// What status a lesson from a person's correction gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HumanCorrections {
    /// Approved at once (seed 000: injected on the very next run).
    #[default]
    Approve,
    /// Sent to review like any machine-made lesson.
    Review,
}

/// How the Engine curates what it learns.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineConfig {
    /// `auto` (the default) or `review`.
    pub curation: CurationMode,
    /// What happens to lessons distilled from a person's correction.
    pub human_corrections: HumanCorrections,
    /// Similarity thresholds of dedup, conflicts and supersession.
    pub thresholds: Thresholds,
    /// Expiry and pruning, run by [`Engine::maintain`].
    pub upkeep: Upkeep,
    /// What agents may write to their own memory.
    pub memory: MemoryPolicy,
    /// The token budgets of the prompt's layers (seed 004's layered context).
    pub prompt_budgets: lore_recall::LayerBudgets,
}

/// An execution to record; the Engine stamps its ID and time.
#[derive(Clone, Debug)]
pub struct NewExecution {
    /// The skill that ran.
    pub skill: SkillPath,
    /// Its input.
    pub input: Value,
    /// Its output.
    pub output: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// Model cost in US dollars.
    pub cost_usd: Option<f64>,
    /// Wall-clock milliseconds.
    pub latency_ms: Option<f64>,
    /// The model used.
    pub model: Option<String>,
    /// The session it belongs to.
    pub session: Option<String>,
    /// The lessons that were placed into its prompt (from a recall or a prompt assembly), so
    /// their utility can be measured; each must exist inside the scope.
    pub lessons_shown: Vec<LessonId>,
}

/// A correction to make.
#[derive(Clone, Debug)]
pub struct NewCorrection {
    /// The skill of the execution.
    pub skill: SkillPath,
    /// The execution being corrected.
    pub execution_id: ExecutionId,
    /// What was wrong and what should change.
    pub text: String,
    /// A person or an agent.
    pub author_kind: AuthorKind,
    /// The author's name.
    pub author: Option<String>,
}

/// What the correction pipeline made.
#[derive(Clone, Debug, Serialize)]
pub struct CorrectionOutcome {
    /// The stored correction.
    pub correction: Correction,
    /// The lesson distilled from it.
    pub lesson: Lesson,
    /// The guardrail file written, if the skill has a folder.
    pub guardrail: Option<String>,
    /// Why no guardrail was written, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrail_skipped: Option<String>,
    /// What write-time curation did: merged, linked, held for review, marked sensitive.
    pub curation: CurationReport,
}

/// Store identity and counts, for `lore memory status`.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The store.
    pub store: StoreInfo,
    /// How many records of each kind are in scope.
    pub counts: StoreCounts,
    /// The curation mode in force.
    pub curation: CurationMode,
}

/// The one entry point to Lore.
#[derive(Clone)]
pub struct Engine {
    store: Arc<dyn Store>,
    skills: Option<SkillLibrary>,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    scope: Scope,
    proposer: Option<Arc<dyn lore_core::ports::llm::Llm>>,
    recall: recall::RecallSettings,
    reformulation: Option<Reformulation>,
    /// Each scope's causal graph between queries, shared by scoped handles.
    graphs: Arc<graph_cache::GraphCache>,
    /// What counts the budgets of episode and graph answers; the recall tokenizer when `None`.
    episode_tokenizer: Option<Arc<dyn lore_recall::Tokenizer>>,
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
const ID_ATTEMPTS: usize = 3;

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
            recall: recall::RecallSettings::default(),
            reformulation: None,
            graphs: Arc::default(),
            episode_tokenizer: None,
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

    /// The scope of this handle.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The skill library, when one is configured.
    pub fn skills(&self) -> Option<&SkillLibrary> {
        self.skills.as_ref()
    }

    fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    fn actor(&self, explicit: Option<&str>) -> String {
        explicit
            .map(str::to_owned)
            .or_else(|| self.scope.agent.clone())
            .unwrap_or_else(|| "lore".to_owned())
    }

    fn filter(&self) -> ListFilter {
        ListFilter {
            scope: self.scope.clone(),
            ..ListFilter::default()
        }
    }

    /// Records one execution and returns it with its new ID.
    ///
    /// # Errors
    /// [`Error::Forbidden`] outside the scope, [`Error::Invalid`] for a negative cost or latency.
    #[instrument(skip_all, fields(skill = %new.skill))]
    pub fn record_execution(&self, new: NewExecution) -> Result<Execution> {
        self.record_execution_with(new, Map::new())
    }

    /// [`Engine::record_execution`] with details Lore has no field for (a run's provider, usage,
    /// error) kept in the execution's `extra`.
    fn record_execution_with(
        &self,
        new: NewExecution,
        extra: Map<String, Value>,
    ) -> Result<Execution> {
        self.scope.check_write(&new.skill)?;
        check_non_negative("cost_usd", new.cost_usd)?;
        check_non_negative("latency_ms", new.latency_ms)?;
        self.check_lessons_shown(&new.lessons_shown)?;
        let at = self.now();
        let mut execution = Execution {
            id: ExecutionId::generate(at),
            skill: new.skill,
            timestamp: at,
            input: new.input,
            output: new.output,
            outcome: new.outcome,
            cost_usd: new.cost_usd,
            latency_ms: new.latency_ms,
            model: new.model,
            agent: self.scope.agent.clone(),
            session: new.session,
            lessons_shown: new.lessons_shown,
            extra,
        };
        for attempt in 1..=ID_ATTEMPTS {
            match self
                .store
                .write(&[Record::Execution(execution.clone())], OnDuplicate::Fail)
            {
                Err(Error::Conflict(_)) if attempt < ID_ATTEMPTS => {
                    execution.id = ExecutionId::generate(at);
                }
                other => return other.map(|_| execution),
            }
        }
        unreachable!("the last attempt returns")
    }

    /// One execution inside the scope.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist or lies outside the scope.
    pub fn execution(&self, id: &ExecutionId) -> Result<Execution> {
        self.store
            .execution(id)?
            .filter(|e| self.scope.allows(&e.skill))
            .ok_or_else(|| Error::not_found("execution", id))
    }

    /// Executions inside the scope, optionally of one skill, newest last.
    ///
    /// # Errors
    /// Store failures.
    pub fn executions(
        &self,
        skill: Option<&SkillPath>,
        limit: Option<usize>,
    ) -> Result<Vec<Execution>> {
        let filter = ListFilter {
            skill: skill.cloned(),
            limit,
            ..self.filter()
        };
        self.store.executions(&filter)
    }

    /// The correction pipeline: store the correction, distill a lesson, append a guardrail.
    ///
    /// The correction, the lesson and their audit entries are written in one atomic batch; the
    /// guardrail file is written after it, because the store, not the file, is the source of
    /// truth.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty correction or a skill that does not match the
    /// execution's, [`Error::NotFound`] for an unknown execution, [`Error::Forbidden`] outside
    /// the scope.
    #[instrument(skip_all, fields(skill = %new.skill, execution = %new.execution_id))]
    pub fn correct(&self, new: NewCorrection) -> Result<CorrectionOutcome> {
        self.scope.check_write(&new.skill)?;
        let text = new.text.trim();
        if text.is_empty() {
            return Err(Error::invalid("correction", "the correction text is empty"));
        }
        let execution = self.execution(&new.execution_id)?;
        if execution.skill != new.skill {
            return Err(Error::invalid(
                "skill",
                format!(
                    "execution {} belongs to {}, not {}",
                    execution.id, execution.skill, new.skill
                ),
            ));
        }
        let at = self.now();
        let mut correction = Correction {
            id: CorrectionId::generate(at),
            execution_id: execution.id.clone(),
            skill: execution.skill.clone(),
            timestamp: at,
            original_output: execution.output.clone(),
            text: text.to_owned(),
            author_kind: new.author_kind,
            author: new.author.clone().or_else(|| self.scope.agent.clone()),
            extra: Map::new(),
        };
        let status = self.initial_status(new.author_kind);
        let mut lesson = self.learn(&execution, &mut correction, status, at);
        self.add_failure_triggers(&mut lesson, &execution, text)?;
        let actor = self.actor(new.author.as_deref());
        let (lesson, curation) = self.store_correction(&correction, lesson, &actor, at)?;
        self.embed_written(&[&lesson]);
        let (guardrail, guardrail_skipped) = match curation.guardrail_skipped(&lesson) {
            Some(why) => (None, Some(why)),
            None => self.write_guardrail(&lesson, &correction),
        };
        Ok(CorrectionOutcome {
            correction,
            lesson,
            guardrail,
            guardrail_skipped,
            curation,
        })
    }

    fn initial_status(&self, author: AuthorKind) -> LessonStatus {
        match (author, self.config.curation, self.config.human_corrections) {
            (AuthorKind::Human, CurationMode::Auto, _) => LessonStatus::Approved,
            (AuthorKind::Human, CurationMode::Review, HumanCorrections::Approve) => {
                LessonStatus::Approved
            }
            (_, CurationMode::Auto, _) => LessonStatus::Trial,
            _ => LessonStatus::NeedsReview,
        }
    }

    fn lesson_from(
        &self,
        correction: &Correction,
        status: LessonStatus,
        at: DateTime<Utc>,
    ) -> Lesson {
        let d = distill(
            &correction.skill,
            &correction.text,
            &correction.original_output,
        );
        Lesson {
            id: LessonId::generate(at),
            skill: correction.skill.clone(),
            agent: self.scope.agent.clone(),
            correction_id: Some(correction.id.clone()),
            execution_id: Some(correction.execution_id.clone()),
            mistake: d.mistake,
            root_cause: d.root_cause,
            rule: d.rule,
            applies_when: d.applies_when,
            triggers: Vec::new(),
            tags: d.tags,
            tiers: d.tiers,
            confidence: d.confidence,
            source: LessonSource::Correction,
            status,
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: at,
            updated_at: at,
            extra: Map::new(),
        }
    }

    fn write_guardrail(
        &self,
        lesson: &Lesson,
        correction: &Correction,
    ) -> (Option<String>, Option<String>) {
        let Some(skills) = &self.skills else {
            return (None, Some("no skills folder is configured".to_owned()));
        };
        let bullet = format!(
            "- **{}** (from {}, {}): Avoid: {} Instead: {}",
            lesson.id,
            correction.id,
            correction.timestamp.format("%Y-%m-%d"),
            one_line(&lesson.mistake),
            one_line(&lesson.rule),
        );
        match skills.append_guardrail(&lesson.skill, &bullet) {
            Ok(GuardrailWrite::Appended(path)) => (Some(path.display().to_string()), None),
            Ok(GuardrailWrite::NoSkillFolder(dir)) => {
                (None, Some(format!("no skill folder at {}", dir.display())))
            }
            Err(err) => {
                tracing::warn!(%err, "guardrail not written");
                (None, Some(err.to_string()))
            }
        }
    }

    /// Full-text search over retrievable lessons and executions in scope, best first.
    ///
    /// # Errors
    /// [`Error::Invalid`] for `limit` 0; store failures.
    pub fn search(
        &self,
        query: &str,
        skill: Option<&SkillPath>,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        if limit == 0 {
            return Err(Error::invalid("limit", "must be at least 1"));
        }
        let filter = ListFilter {
            skill: skill.cloned(),
            statuses: Some(self.retrievable_statuses()),
            ..self.filter()
        };
        // Execution text is never scanned as it is written, and search results are read by
        // agents, so whatever a snippet quotes passes the detector first.
        let mut hits = self.store.search(query, &filter, limit)?;
        for hit in &mut hits {
            hit.snippet = lore_core::sensitive::redact(&hit.snippet);
        }
        Ok(hits)
    }

    /// The statuses that may reach a prompt under the configured curation mode.
    pub fn retrievable_statuses(&self) -> BTreeSet<LessonStatus> {
        LessonStatus::ALL
            .into_iter()
            .filter(|s| s.is_retrievable(self.config.curation))
            .collect()
    }

    /// The 4-layer system prompt for `skill`, with its retrievable lessons.
    ///
    /// # Errors
    /// [`Error::Unsupported`] without a skills folder, [`Error::NotFound`] when the skill has no
    /// `SKILL.md`, [`Error::Forbidden`] outside the scope.
    pub fn prompt(&self, skill: &SkillPath) -> Result<AssembledPrompt> {
        if !self.scope.allows(skill) {
            return Err(Error::Forbidden(format!(
                "{skill} is outside this handle's scope"
            )));
        }
        let Some(skills) = &self.skills else {
            return Err(Error::Unsupported(
                "prompt assembly needs a skills folder".into(),
            ));
        };
        let files = skills.load(skill)?;
        let mut lessons = self.store.lessons(&ListFilter {
            statuses: Some(self.retrievable_statuses()),
            ..ListFilter::skill(&self.scope, skill)
        })?;
        // Higher confidence first; among equals, the newer lesson reflects the newer feedback.
        lessons.sort_by(|a, b| {
            b.confidence
                .total_cmp(&a.confidence)
                .then(b.created_at.cmp(&a.created_at))
        });
        let core = self.core_memory(skill)?;
        Ok(prompt::assemble_layered(
            &files,
            &curate::prompt_guard(lessons),
            &core.blocks,
            self.config.prompt_budgets,
            self.tokenizer(),
        ))
    }

    /// Store identity and counts inside the scope.
    ///
    /// # Errors
    /// Store failures.
    pub fn status(&self) -> Result<Status> {
        Ok(Status {
            store: self.store.info(),
            counts: self.store.counts(&self.scope)?,
            curation: self.config.curation,
        })
    }

    /// Writes already-formed records (an import), checking scope; identical copies are skipped.
    ///
    /// # Errors
    /// [`Error::Forbidden`] when any record lies outside the scope, [`Error::Conflict`] when a
    /// stored record with the same ID differs. Nothing is written in either case.
    #[instrument(skip_all, fields(records = records.len()))]
    pub fn import_records(&self, records: &[Record]) -> Result<WriteReport> {
        for record in records {
            if let Some(skill) = record_skill(record) {
                self.scope.check_write(skill)?;
            }
        }
        let records = self.quarantine_imported_secrets(records)?;
        let report = self.store.write(&records, OnDuplicate::SkipIdentical)?;
        let lessons: Vec<&Lesson> = records
            .iter()
            .filter_map(|r| match r {
                Record::Lesson(l) => Some(l),
                _ => None,
            })
            .collect();
        self.embed_written(&lessons);
        Ok(report)
    }

    /// Imported lessons were never seen by the detector: a live one that holds personal data or
    /// a secret arrives `sensitive` instead, with an audit entry saying why (written once, so
    /// importing the same files again changes nothing). Imported episodes are checked as
    /// recorded ones are, and their texts redacted.
    fn quarantine_imported_secrets(&self, records: &[Record]) -> Result<Vec<Record>> {
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            if let Record::Episode(episode) = record {
                if episode.has_unset_id() {
                    return Err(Error::invalid("id", "an imported episode needs its ID"));
                }
                episode.validate()?;
                let mut clean = episode.clone();
                episodes::redact(&mut clean);
                out.push(Record::Episode(clean));
                continue;
            }
            let Record::Lesson(lesson) = record else {
                out.push(record.clone());
                continue;
            };
            let kinds = lore_core::sensitive::scan_lesson(lesson);
            if kinds.is_empty() || lesson.status == LessonStatus::Sensitive {
                out.push(record.clone());
                continue;
            }
            let mut quarantined = lesson.clone();
            quarantined.status = LessonStatus::Sensitive;
            out.push(Record::Lesson(quarantined));
            if self.store.lesson(&lesson.id)?.is_none() {
                let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                out.push(Record::Audit(audit(
                    RecordKind::Lesson,
                    lesson.id.as_str(),
                    AuditAction::Transition,
                    (Some(lesson.status), Some(LessonStatus::Sensitive)),
                    &self.actor(None),
                    self.now(),
                    &format!("sensitive data found on import ({})", names.join(", ")),
                    Value::Null,
                )));
            }
        }
        Ok(out)
    }

    /// Every record inside the scope, for export.
    ///
    /// # Errors
    /// Store failures.
    pub fn export_records(&self) -> Result<Vec<Record>> {
        let filter = self.filter();
        let mut out: Vec<Record> = Vec::new();
        out.extend(
            self.store
                .executions(&filter)?
                .into_iter()
                .map(Record::Execution),
        );
        out.extend(
            self.store
                .corrections(&filter)?
                .into_iter()
                .map(Record::Correction),
        );
        out.extend(self.store.lessons(&filter)?.into_iter().map(Record::Lesson));
        out.extend(
            self.store
                .episodes(&EpisodeFilter {
                    scope: self.scope.clone(),
                    ..EpisodeFilter::default()
                })?
                .into_iter()
                .map(Record::Episode),
        );
        let subjects: BTreeSet<String> = out.iter().map(|r| r.id().to_owned()).collect();
        out.extend(
            self.store
                .error_events(&filter)?
                .into_iter()
                .map(Record::ErrorEvent),
        );
        for category in MemoryCategory::ALL {
            out.extend(
                self.store
                    .memories(&filter, category)?
                    .into_iter()
                    .map(Record::Memory),
            );
        }
        out.extend(
            self.store
                .audit(None)?
                .into_iter()
                .filter(|a| self.scope == Scope::unrestricted() || subjects.contains(&a.subject))
                .map(Record::Audit),
        );
        Ok(out)
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

fn record_skill(record: &Record) -> Option<&SkillPath> {
    match record {
        Record::Execution(r) => Some(&r.skill),
        Record::Correction(r) => Some(&r.skill),
        Record::Lesson(r) => Some(&r.skill),
        Record::ErrorEvent(r) => Some(&r.skill),
        Record::Audit(_) => None,
        Record::Memory(r) => Some(&r.skill),
        Record::Episode(r) => Some(&r.skill),
    }
}

fn check_non_negative(what: &str, value: Option<f64>) -> Result<()> {
    match value {
        Some(v) if !v.is_finite() || v < 0.0 => Err(Error::invalid(
            what,
            format!("{v} is not a finite, non-negative number"),
        )),
        _ => Ok(()),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[allow(clippy::too_many_arguments)]
fn audit(
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
