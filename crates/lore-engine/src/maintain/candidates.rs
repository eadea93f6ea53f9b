//! Candidate lessons from recurring errors (seed 003 §2), offline and without a model.
//!
//! A failure fingerprint reported in at least [`RECURS_AT`] runs of a skill, that no lesson of
//! any status triggers on yet, is a mistake nobody has written down. When one of those runs
//! succeeded in the end, Lore knows both the action that failed (the signal's `action`) and what
//! worked (that run's output), and proposes the rule `Use <what worked> instead of <what
//! failed>` with the fingerprint as its trigger and [`LessonSource::ErrorEvents`] as its source.
//! It enters as any machine-made lesson does: `trial` in `auto` curation, `needs_review` in
//! `review` curation. Without a run that succeeded there is nothing to teach yet, so nothing is
//! proposed; once a lesson triggers on the fingerprint, nothing more is, so the job is
//! idempotent.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::engine::{Engine, audit};
use crate::measure::signals_failure;
use lore_core::error::Result;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{
    AuditAction, CurationMode, ErrorEvent, Execution, Lesson, LessonSource, LessonStatus, Outcome,
    RecordKind, Tiers, UtilityStats,
};
use lore_core::ports::store::{OnDuplicate, Record};
use lore_core::scope::SkillPath;

/// Runs a fingerprint must recur in before a lesson is proposed for it.
pub const RECURS_AT: usize = 2;
/// Longest action quoted in a proposed rule, in characters.
const MAX_ACTION: usize = 200;

impl Engine {
    /// Proposes a lesson for every recurring, uncovered failure fingerprint that has a known fix.
    pub(super) fn propose_from_errors(&self) -> Result<Vec<LessonId>> {
        let covered: BTreeSet<String> = self
            .lessons(None, None)?
            .into_iter()
            .flat_map(|l| l.triggers)
            .collect();
        let mut groups: BTreeMap<(SkillPath, String), Vec<ErrorEvent>> = BTreeMap::new();
        for event in self.store.error_events(&self.filter())? {
            if signals_failure(&event) && !covered.contains(&event.fingerprint) {
                groups
                    .entry((event.skill.clone(), event.fingerprint.clone()))
                    .or_default()
                    .push(event);
            }
        }
        let executions: HashMap<ExecutionId, Execution> = self
            .store
            .executions(&self.filter())?
            .into_iter()
            .map(|e| (e.id.clone(), e))
            .collect();
        let mut records = Vec::new();
        let mut proposed = Vec::new();
        for ((skill, fingerprint), events) in groups {
            let runs: BTreeSet<&ExecutionId> = events
                .iter()
                .filter_map(|e| e.execution_id.as_ref())
                .collect();
            if runs.len() < RECURS_AT || !self.scope.allows(&skill) {
                continue;
            }
            let Some(lesson) = self.candidate(&fingerprint, &events, &executions) else {
                continue;
            };
            records.push(Record::Audit(audit(
                RecordKind::Lesson,
                lesson.id.as_str(),
                AuditAction::Created,
                (None, Some(lesson.status)),
                &self.actor(None),
                lesson.created_at,
                "proposed from a recurring error fingerprint",
                json!({ "fingerprint": fingerprint, "runs": runs.len() }),
            )));
            proposed.push(lesson.id.clone());
            records.push(Record::Lesson(lesson));
        }
        self.write_proposals(&records)?;
        Ok(proposed)
    }

    /// The status a lesson Lore proposes on its own starts in: measured on `trial` in `auto`
    /// curation, waiting for a person in `review`.
    pub(super) fn proposal_status(&self) -> LessonStatus {
        match self.config.curation {
            CurationMode::Auto => LessonStatus::Trial,
            CurationMode::Review => LessonStatus::NeedsReview,
        }
    }

    /// Writes proposed lessons with their audit entries in one batch, and embeds them.
    pub(super) fn write_proposals(&self, records: &[Record]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.store.write(records, OnDuplicate::Fail)?;
        let written: Vec<&Lesson> = records
            .iter()
            .filter_map(|r| match r {
                Record::Lesson(l) => Some(l),
                _ => None,
            })
            .collect();
        self.embed_written(&written);
        Ok(())
    }

    /// The lesson for one fingerprint: the latest failing action against the output of the
    /// latest of its runs that succeeded.
    fn candidate(
        &self,
        fingerprint: &str,
        events: &[ErrorEvent],
        executions: &HashMap<ExecutionId, Execution>,
    ) -> Option<Lesson> {
        let (failed, fixed) = events.iter().rev().find_map(|event| {
            let failed = event.action.as_deref()?;
            let run = executions.get(event.execution_id.as_ref()?)?;
            let worked = matches!(run.outcome, Outcome::Success | Outcome::Accepted);
            let fix = worked.then(|| action_of(&run.output)).flatten()?;
            (fix != failed).then_some((event, (run, fix)))
        })?;
        let (run, fix) = fixed;
        let action = clip(failed.action.as_deref().unwrap_or_default());
        let fix = clip(&fix);
        let rule = format!("Use `{fix}` instead of `{action}`.");
        let at = self.now();
        let tags: BTreeSet<String> = events.iter().flat_map(|e| e.tags.clone()).collect();
        Some(Lesson {
            id: LessonId::generate(at),
            skill: run.skill.clone(),
            agent: self.scope.agent.clone(),
            correction_id: None,
            execution_id: Some(run.id.clone()),
            mistake: format!("`{action}` failed: {}", failed.message),
            root_cause: "recurring_error".to_owned(),
            applies_when: format!("When an action fails with: {fingerprint}"),
            triggers: vec![fingerprint.to_owned()],
            tags: self.written_tags(tags.into_iter().collect()),
            tiers: Tiers {
                summary: rule.clone(),
                condition: format!("the error `{fingerprint}`"),
                action: format!("use `{fix}`"),
                rationale: format!("`{action}` failed in {RECURS_AT} or more runs"),
                steps: Vec::new(),
            },
            rule,
            confidence: 0.6,
            source: LessonSource::ErrorEvents,
            status: self.proposal_status(),
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: at,
            updated_at: at,
            extra: Map::new(),
        })
    }
}

/// What a run did, from its output: the text itself, or its `action` or `command` field.
fn action_of(output: &Value) -> Option<String> {
    let text = match output {
        Value::String(s) => s.as_str(),
        Value::Object(map) => ["action", "command"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))?,
        _ => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line
        .replace('`', "'")
        .chars()
        .take(MAX_ACTION)
        .collect()
}
