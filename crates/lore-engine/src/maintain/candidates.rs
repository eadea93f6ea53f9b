//! Candidate lessons from recurring errors (seed 003 §2), offline and without a model.
//!
//! A failure fingerprint reported [`RECURS_AT`] times or more for a skill, in one run or across
//! runs, that no lesson triggers on yet, is a mistake nobody has written down, and it becomes a
//! candidate lesson with the fingerprint as its trigger and [`LessonSource::ErrorEvents`] as
//! its source:
//!
//! - when one of its runs succeeded in the end, Lore knows both the action that failed (the
//!   signal's `action`) and what worked (that run's output), and the rule is `Use <what
//!   worked> instead of <what failed>` (seed 003's WRONG → CORRECT form);
//! - otherwise the rule says what not to repeat: the failing action, or, for a failure that
//!   carried only its transition, the step. It is marked `awaits_fix`, and once a run shows the
//!   fix the same lesson is rewritten into the WRONG → CORRECT form (an edit with its audit
//!   entry), so the early warning never blocks the better rule.
//!
//! Each candidate carries seed 003's `scope_hint` in its `extra`: `task` when only its skill
//! met the fingerprint, `domain` when other skills of its domain did too, `global` when skills
//! of other domains did. A candidate enters as any machine-made lesson does: `trial` in `auto`
//! curation (measured in use, which is what seed 003 calls `candidate`), `needs_review` in
//! `review` curation. Once a lesson triggers on the fingerprint nothing more is proposed for
//! it, so the job is idempotent.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::engine::{Engine, audit};
use crate::measure::signals_failure;
use crate::review::Attribution;
use lore_core::error::Result;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{
    AuditAction, CurationMode, ErrorEvent, Execution, Lesson, LessonSource, LessonStatus, Outcome,
    RecordKind, Tiers, UtilityStats,
};
use lore_core::ports::store::{OnDuplicate, Record};
use lore_core::scope::SkillPath;

/// Reports of a fingerprint, in one run or across runs, before a lesson is proposed for it.
pub const RECURS_AT: usize = 2;
/// Longest action quoted in a proposed rule, in characters.
const MAX_ACTION: usize = 200;
/// The `extra` key of a candidate whose rule does not know the fix yet.
pub const AWAITS_FIX: &str = "awaits_fix";
/// The `extra` key of seed 003's scope hint: `task`, `domain` or `global`.
pub const SCOPE_HINT: &str = "scope_hint";

impl Engine {
    /// Proposes a lesson for every recurring, uncovered failure fingerprint, and rewrites a
    /// candidate that awaited its fix once a run shows it.
    pub(super) fn propose_from_errors(&self) -> Result<Vec<LessonId>> {
        let lessons = self.lessons(None, None)?;
        let awaiting: HashMap<(SkillPath, String), Lesson> = lessons
            .iter()
            .filter(|l| awaits_fix(l))
            .flat_map(|l| {
                l.triggers
                    .iter()
                    .map(move |t| ((l.skill.clone(), t.clone()), l.clone()))
            })
            .collect();
        let covered: BTreeSet<String> = lessons
            .into_iter()
            .filter(|l| !awaits_fix(l))
            .flat_map(|l| l.triggers)
            .collect();
        let failures: Vec<ErrorEvent> = self
            .store
            .error_events(&self.filter())?
            .into_iter()
            .filter(signals_failure)
            .collect();
        let reach = Reach::of(&failures);
        let mut groups: BTreeMap<(SkillPath, String), Vec<ErrorEvent>> = BTreeMap::new();
        for event in &failures {
            if !covered.contains(&event.fingerprint) {
                groups
                    .entry((event.skill.clone(), event.fingerprint.clone()))
                    .or_default()
                    .push(event.clone());
            }
        }
        let executions: HashMap<ExecutionId, Execution> = self
            .store
            .executions(&self.filter())?
            .into_iter()
            .map(|e| (e.id.clone(), e))
            .collect();
        let mut records = Vec::new();
        let mut upgrades = Vec::new();
        let mut proposed = Vec::new();
        for (key, events) in groups {
            let (skill, fingerprint) = &key;
            if events.len() < RECURS_AT || !self.scope.allows(skill) {
                continue;
            }
            let runs: BTreeSet<&ExecutionId> = events
                .iter()
                .filter_map(|e| e.execution_id.as_ref())
                .collect();
            let fix = known_fix(&events, &executions);
            let hint = reach.hint(skill, fingerprint);
            match (awaiting.get(&key), fix) {
                (Some(_), None) => {}
                (Some(old), Some(fix)) => {
                    let after = self.with_fix(old.clone(), fingerprint, fix, runs.len());
                    let why = Attribution::new(
                        None,
                        "a run that succeeded shows the fix: the rule now says what to use",
                    )
                    .with_evidence(json!({ "fingerprint": fingerprint, "runs": runs.len() }));
                    upgrades.push(self.planned_edit(old.clone(), after, &why));
                    proposed.push(old.id.clone());
                }
                (None, fix) => {
                    let lesson = self.candidate(skill, fingerprint, &events, fix, hint);
                    records.push(Record::Audit(audit(
                        RecordKind::Lesson,
                        lesson.id.as_str(),
                        AuditAction::Created,
                        (None, Some(lesson.status)),
                        &self.actor(None),
                        lesson.created_at,
                        "proposed from a recurring error fingerprint",
                        json!({ "fingerprint": fingerprint, "reports": events.len(),
                                "runs": runs.len(), SCOPE_HINT: hint }),
                    )));
                    proposed.push(lesson.id.clone());
                    records.push(Record::Lesson(lesson));
                }
            }
        }
        self.write_proposals(&records)?;
        let rewritten = self.apply(upgrades)?;
        self.embed_written(&rewritten.iter().collect::<Vec<_>>());
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

    /// The candidate for one fingerprint: WRONG → CORRECT when `fix` is known, otherwise what
    /// not to repeat, marked [`AWAITS_FIX`].
    fn candidate(
        &self,
        skill: &SkillPath,
        fingerprint: &str,
        events: &[ErrorEvent],
        fix: Option<Fix<'_>>,
        hint: &str,
    ) -> Lesson {
        let at = self.now();
        let tags: BTreeSet<String> = events.iter().flat_map(|e| e.tags.clone()).collect();
        let latest = events.last().expect("a group has events");
        let mut extra = Map::new();
        extra.insert(SCOPE_HINT.into(), json!(hint));
        let lesson = Lesson {
            id: LessonId::generate(at),
            skill: skill.clone(),
            agent: self.scope.agent.clone(),
            correction_id: None,
            execution_id: latest.execution_id.clone(),
            mistake: String::new(),
            root_cause: "recurring_error".to_owned(),
            applies_when: format!("When an action fails with: {fingerprint}"),
            triggers: vec![fingerprint.to_owned()],
            tags: self.written_tags(tags.into_iter().collect()),
            tiers: Tiers::default(),
            rule: String::new(),
            confidence: 0.0,
            source: LessonSource::ErrorEvents,
            status: self.proposal_status(),
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: at,
            updated_at: at,
            extra,
        };
        match fix {
            Some(fix) => self.with_fix(lesson, fingerprint, fix, events.len()),
            None => without_fix(lesson, fingerprint, latest, events.len()),
        }
    }

    /// `lesson` saying to use what worked instead of what failed.
    fn with_fix(
        &self,
        mut lesson: Lesson,
        fingerprint: &str,
        fix: Fix<'_>,
        count: usize,
    ) -> Lesson {
        let action = clip(fix.failed.action.as_deref().unwrap_or_default());
        let worked = clip(&fix.worked);
        let rule = format!("Use `{worked}` instead of `{action}`.");
        lesson.execution_id = Some(fix.run.id.clone());
        lesson.mistake = format!("`{action}` failed: {}", fix.failed.message);
        lesson.tiers = Tiers {
            summary: rule.clone(),
            condition: format!("the error `{fingerprint}`"),
            action: format!("use `{worked}`"),
            rationale: format!("`{action}` failed {count} times; `{worked}` worked"),
            steps: Vec::new(),
        };
        lesson.rule = rule;
        lesson.confidence = 0.6;
        lesson.extra.remove(AWAITS_FIX);
        lesson.updated_at = self.now();
        lesson
    }
}

/// `lesson` saying what not to repeat, for a fingerprint whose fix no run has shown yet.
fn without_fix(mut lesson: Lesson, fingerprint: &str, latest: &ErrorEvent, count: usize) -> Lesson {
    let message = clip(&latest.message);
    let (rule, action) = match latest.action.as_deref().map(clip) {
        Some(action) => (
            format!(
                "Do not repeat `{action}`: it failed {count} times with \"{message}\". Try a \
                 different form of the step."
            ),
            format!("avoid `{action}`; try a different form"),
        ),
        None => (
            format!(
                "When a step fails with \"{message}\", do not repeat it unchanged: it failed \
                 {count} times. Change the approach."
            ),
            "change the approach instead of repeating the step".to_owned(),
        ),
    };
    lesson.mistake = match latest.action.as_deref() {
        Some(action) => format!("`{}` failed: {message}", clip(action)),
        None => message.clone(),
    };
    lesson.tiers = Tiers {
        summary: rule.clone(),
        condition: format!("the error `{fingerprint}`"),
        action,
        rationale: format!("the same failure was reported {count} times; no fix is known yet"),
        steps: Vec::new(),
    };
    lesson.rule = rule;
    // Lower than a rule with a known fix: it says what fails, not what works.
    lesson.confidence = 0.4;
    lesson.extra.insert(AWAITS_FIX.into(), json!(true));
    lesson
}

/// Whether `lesson` is a recurring-error candidate still waiting for its fix.
fn awaits_fix(lesson: &Lesson) -> bool {
    lesson.source == LessonSource::ErrorEvents
        && matches!(
            lesson.status,
            LessonStatus::Trial | LessonStatus::NeedsReview
        )
        && lesson.extra.get(AWAITS_FIX) == Some(&json!(true))
}

/// A failing action and the output of a later run of the skill that succeeded.
struct Fix<'a> {
    failed: &'a ErrorEvent,
    run: &'a Execution,
    worked: String,
}

/// The latest failing action against the output of the latest of its runs that succeeded.
fn known_fix<'a>(
    events: &'a [ErrorEvent],
    executions: &'a HashMap<ExecutionId, Execution>,
) -> Option<Fix<'a>> {
    events.iter().rev().find_map(|event| {
        let failed = event.action.as_deref()?;
        let run = executions.get(event.execution_id.as_ref()?)?;
        let succeeded = matches!(run.outcome, Outcome::Success | Outcome::Accepted);
        let worked = succeeded.then(|| action_of(&run.output)).flatten()?;
        (worked != failed).then_some(Fix {
            failed: event,
            run,
            worked,
        })
    })
}

/// Which skills met each fingerprint, for seed 003's scope hint.
struct Reach<'a> {
    skills: HashMap<&'a str, BTreeSet<&'a SkillPath>>,
}

impl<'a> Reach<'a> {
    fn of(failures: &'a [ErrorEvent]) -> Self {
        let mut skills: HashMap<&str, BTreeSet<&SkillPath>> = HashMap::new();
        for e in failures {
            skills.entry(&e.fingerprint).or_default().insert(&e.skill);
        }
        Self { skills }
    }

    /// `task` when only `skill` met `fingerprint`, `domain` when other skills of its domain
    /// did too, `global` when a skill of another domain did.
    fn hint(&self, skill: &SkillPath, fingerprint: &str) -> &'static str {
        let Some(met) = self.skills.get(fingerprint) else {
            return "task";
        };
        if met.iter().any(|s| s.domain() != skill.domain()) {
            "global"
        } else if met.iter().any(|s| *s != skill) {
            "domain"
        } else {
            "task"
        }
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
