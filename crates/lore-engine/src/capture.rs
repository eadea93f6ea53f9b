//! Capture: executions as they are recorded, and corrections turned into lessons.
//!
//! A correction is the strongest feedback Lore gets, so its pipeline is here in full: the
//! correction, the distilled lesson and their audit entries land in one atomic batch, and the
//! guardrail file is written after it, because the store, not the file, is the source of truth.
//!
//! A correction with no rule in it ("this is wrong", "no", "x") is feedback on its run and
//! nothing more: it is stored and audited, so the run counts as corrected when utility is
//! measured, but it makes no lesson. A lesson from it would be the verdict itself, approved and
//! shown in every later prompt of the skill, telling the agent nothing it could follow.

mod failure;

pub use failure::{FailedTransition, error_tags, failure_tags};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use tracing::instrument;

use crate::distill::{distill, holds_a_rule};
use lore_core::error::{Error, Result};
use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::model::{
    AuditAction, AuthorKind, Correction, CurationMode, Execution, Lesson, LessonSource,
    LessonStatus, Outcome, RecordKind, UtilityStats,
};
use lore_core::ports::store::{LessonUpdate, ListFilter, OnDuplicate, Record};
use lore_core::scope::SkillPath;
use lore_workspace::skills::GuardrailWrite;

use crate::config::HumanCorrections;
use crate::curate::CurationReport;
use crate::engine::{Engine, ID_ATTEMPTS, audit, one_line};
use lore_core::limits;

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
    /// The lesson distilled from it (a new one, or the one it was merged into); `None` when
    /// the correction holds no rule, and then `lesson_skipped` says why.
    pub lesson: Option<Lesson>,
    /// Why no lesson was made, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson_skipped: Option<String>,
    /// The guardrail file written, if the skill has a folder.
    pub guardrail: Option<String>,
    /// Why no guardrail was written, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guardrail_skipped: Option<String>,
    /// What write-time curation did: merged, linked, held for review, marked sensitive.
    pub curation: CurationReport,
}

/// Why a correction made no lesson: it says something was wrong, not what to do.
pub const NO_RULE: &str = "no rule in the correction: say what should be done instead \
(for example \"always cite the source\" or \"dates must be ISO 8601\"); it is kept as \
feedback on the run";

impl Engine {
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
    pub(crate) fn record_execution_with(
        &self,
        new: NewExecution,
        extra: Map<String, Value>,
    ) -> Result<Execution> {
        self.scope.check_write(&new.skill)?;
        self.check_lessons_shown(&new.lessons_shown)?;
        let mut extra = extra;
        if let Some(member) = self.member_note() {
            extra.insert(lore_core::org::KEY.to_owned(), member);
        }
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
        limits::execution(&execution)?;
        for attempt in 1..=ID_ATTEMPTS {
            let applied = self.applications(&execution)?;
            match self.store.write_and_update(
                &[Record::Execution(execution.clone())],
                OnDuplicate::Fail,
                &applied,
            ) {
                // An ID taken, or a shown lesson edited meanwhile: a fresh ID, a fresh read.
                Err(Error::Conflict(_)) if attempt < ID_ATTEMPTS => {
                    execution.id = ExecutionId::generate(at);
                }
                other => {
                    if other.is_ok() {
                        self.recall.unkeyed.recorded();
                    }
                    return other.map(|_| execution);
                }
            }
        }
        unreachable!("the last attempt returns")
    }

    /// Each lesson `execution` shows, applied once more (seed 002's `application_count`, kept
    /// as `utility.activations`, and `last_applied_at`), in the execution's own batch so a run
    /// and its applications are stored together. The counts are statistics, like the rest of
    /// `utility`: `updated_at` stays, so a reviewer's edit of the rule is never refused because
    /// the lesson was used, and measuring recounts them from the executions.
    fn applications(&self, execution: &Execution) -> Result<Vec<LessonUpdate>> {
        let mut updates = Vec::with_capacity(execution.lessons_shown.len());
        for id in &execution.lessons_shown {
            let before = self.lesson(id)?;
            let mut after = before.clone();
            after.utility.activations += 1;
            after.utility.last_applied_at = Some(
                after
                    .utility
                    .last_applied_at
                    .map_or(execution.timestamp, |t| t.max(execution.timestamp)),
            );
            let entry = audit(
                RecordKind::Lesson,
                id.as_str(),
                AuditAction::Edited,
                (None, None),
                &self.actor(None),
                execution.timestamp,
                &format!("applied in {}", execution.id),
                serde_json::json!({
                    "execution": execution.id,
                    "application_count": after.utility.activations,
                }),
            );
            updates.push(LessonUpdate {
                lesson: after,
                expected_updated_at: before.updated_at,
                audit: entry,
            });
        }
        Ok(updates)
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
    /// A correction with no rule in it ([`holds_a_rule`]) is stored and audited as feedback on
    /// its run, and makes no lesson, guardrail or regression case ([`NO_RULE`] says so).
    ///
    /// The correction, the lesson, their audit entries and the links curation adds to older
    /// lessons are written in one atomic batch, so a refused correction stored nothing; the
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
        limits::text("correction", text)?;
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
            author: self
                .principal
                .clone()
                .or_else(|| new.author.clone())
                .or_else(|| self.scope.agent.clone()),
            extra: Map::new(),
        };
        let actor = self.actor(new.author.as_deref());
        if !holds_a_rule(text) {
            self.store_feedback(&correction, &actor, at)?;
            return Ok(CorrectionOutcome {
                correction,
                lesson: None,
                lesson_skipped: Some(NO_RULE.to_owned()),
                guardrail: None,
                guardrail_skipped: None,
                curation: CurationReport::default(),
            });
        }
        let status = self.initial_status(new.author_kind);
        let mut lesson = self.learn(&execution, &mut correction, status, at);
        self.add_failure_triggers(&mut lesson, &execution, text)?;
        let (lesson, curation) = self.store_correction(&correction, lesson, &actor, at)?;
        self.embed_written(&[&lesson]);
        self.materialize(std::slice::from_ref(&lesson));
        let (guardrail, guardrail_skipped) = match curation.guardrail_skipped(&lesson) {
            Some(why) => (None, Some(why)),
            None => self.write_guardrail(&lesson, &correction),
        };
        Ok(CorrectionOutcome {
            correction,
            lesson: Some(lesson),
            lesson_skipped: None,
            guardrail,
            guardrail_skipped,
            curation,
        })
    }

    pub(crate) fn initial_status(&self, author: AuthorKind) -> LessonStatus {
        match (author, self.config.curation, self.config.human_corrections) {
            (AuthorKind::Human, CurationMode::Auto, _) => LessonStatus::Approved,
            (AuthorKind::Human, CurationMode::Review, HumanCorrections::Approve) => {
                LessonStatus::Approved
            }
            (_, CurationMode::Auto, _) => LessonStatus::Trial,
            _ => LessonStatus::NeedsReview,
        }
    }

    pub(crate) fn lesson_from(
        &self,
        correction: &Correction,
        input: &Value,
        status: LessonStatus,
        at: DateTime<Utc>,
    ) -> Lesson {
        let d = distill(&correction.text, input);
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

    pub(crate) fn write_guardrail(
        &self,
        lesson: &Lesson,
        correction: &Correction,
    ) -> (Option<String>, Option<String>) {
        let Some(skills) = &self.skills else {
            return (None, Some("no skills folder is configured".to_owned()));
        };
        let avoid = match one_line(&lesson.mistake) {
            m if m.is_empty() => String::new(),
            m => format!("Avoid: {m} "),
        };
        let bullet = format!(
            "- **{}** (from {}, {}): {avoid}Instead: {}",
            lesson.id,
            correction.id,
            correction.timestamp.format("%Y-%m-%d"),
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
}
