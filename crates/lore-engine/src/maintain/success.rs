//! Success capture (seed 002): a run a referee graded among its skill's best teaches what worked.
//!
//! Failures teach through corrections and recurring fingerprints; a run that went well teaches
//! nothing unless someone says it went well. The `referee` signal says so: a grade from 0 to 1.
//! A run that succeeded, was graded at least [`Capture::min_quality`] and at or above the
//! [`Capture::success_percentile`] of its skill's graded runs becomes a candidate lesson, offline:
//! the task it was given (its input's words) and what it did (the action its output or signals
//! name, else its output), as an example to follow. It enters like any machine-made lesson
//! (`trial` in `auto` curation, `needs_review` in `review`), tagged `success_derived`, and is
//! measured like any other; a run teaches once.
//!
//! [`Capture::min_quality`]: crate::Capture::min_quality
//! [`Capture::success_percentile`]: crate::Capture::success_percentile

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::distill::task_words;
use crate::engine::{Engine, audit};
use lore_core::error::Result;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{
    AuditAction, Execution, Lesson, LessonSource, Outcome, RecordKind, SignalChannel, Tiers,
    UtilityStats,
};
use lore_core::ports::store::Record;
use lore_core::scope::SkillPath;

/// The tag every success-derived lesson carries.
pub const SUCCESS_TAG: &str = "success_derived";
/// Longest example quoted in a proposed rule, in characters.
const MAX_EXAMPLE: usize = 240;

impl Engine {
    /// Proposes a lesson for every well-graded successful run that has not taught one yet.
    pub(super) fn propose_from_successes(&self) -> Result<Vec<LessonId>> {
        let capture = self.config.capture;
        let mut grades: HashMap<ExecutionId, (f64, usize, Vec<String>)> = HashMap::new();
        for event in self.store.error_events(&self.filter())? {
            let Some(id) = event.execution_id.clone() else {
                continue;
            };
            let entry = grades.entry(id).or_default();
            if let Some(action) = event.action.clone() {
                entry.2.push(action);
            }
            if event.channel == SignalChannel::Referee
                && let Some(v) = event.value
            {
                entry.0 += v;
                entry.1 += 1;
            }
        }
        let taught: HashSet<ExecutionId> = self
            .lessons(None, None)?
            .into_iter()
            .filter(|l| l.source == LessonSource::Success)
            .filter_map(|l| l.execution_id)
            .collect();
        let mut by_skill: BTreeMap<SkillPath, Vec<(Execution, f64, Vec<String>)>> = BTreeMap::new();
        for execution in self.store.executions(&self.filter())? {
            let Some((sum, n, actions)) = grades.remove(&execution.id) else {
                continue;
            };
            if n == 0 || !self.scope.allows(&execution.skill) {
                continue;
            }
            let grade = sum / n as f64;
            by_skill
                .entry(execution.skill.clone())
                .or_default()
                .push((execution, grade, actions));
        }
        let mut records = Vec::new();
        let mut proposed = Vec::new();
        for runs in by_skill.values() {
            let bar = percentile(
                runs.iter().map(|(_, g, _)| *g).collect(),
                capture.success_percentile,
            )
            .max(capture.min_quality);
            for (execution, grade, actions) in runs {
                let succeeded = matches!(execution.outcome, Outcome::Success | Outcome::Accepted);
                if !succeeded || *grade < bar || taught.contains(&execution.id) {
                    continue;
                }
                let Some(lesson) = self.success_lesson(execution, *grade, actions) else {
                    continue;
                };
                records.push(Record::Audit(audit(
                    RecordKind::Lesson,
                    lesson.id.as_str(),
                    AuditAction::Created,
                    (None, Some(lesson.status)),
                    &self.actor(None),
                    lesson.created_at,
                    "proposed from a run a referee graded among its skill's best",
                    json!({ "execution": execution.id, "grade": grade, "bar": bar }),
                )));
                proposed.push(lesson.id.clone());
                records.push(Record::Lesson(lesson));
            }
        }
        self.write_proposals(&records)?;
        Ok(proposed)
    }

    /// The lesson one well-graded run teaches; `None` when it shows nothing to follow.
    fn success_lesson(&self, run: &Execution, grade: f64, actions: &[String]) -> Option<Lesson> {
        let words = task_words(&run.input);
        let example = match actions.last() {
            Some(action) => clip(action),
            None => clip(&example_of(&run.output)?),
        };
        if words.is_empty() || example.is_empty() {
            return None;
        }
        let task = words.join(", ");
        let rule = format!("For a task about {task}, do as a run graded {grade:.2} did: {example}");
        let at = self.now();
        Some(Lesson {
            id: LessonId::generate(at),
            skill: run.skill.clone(),
            agent: self.scope.agent.clone(),
            correction_id: None,
            execution_id: Some(run.id.clone()),
            mistake: String::new(),
            root_cause: String::new(),
            applies_when: format!("Tasks about: {task}."),
            triggers: Vec::new(),
            tags: self.written_tags(vec![SUCCESS_TAG.to_owned()]),
            tiers: Tiers {
                summary: rule.clone(),
                condition: format!("a task about {task}"),
                action: example,
                rationale: format!("a referee graded the run {grade:.2}"),
                steps: Vec::new(),
            },
            rule,
            confidence: 0.5,
            source: LessonSource::Success,
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

/// The value at `p` percent of `values` (nearest rank); 0 for none.
fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p.clamp(0.0, 100.0) / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// What a run answered, as one line: its text, its `action`/`command`, or its JSON.
fn example_of(output: &Value) -> Option<String> {
    let text = match output {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        Value::Object(map) => ["action", "command"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| output.to_string()),
        other => other.to_string(),
    };
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

fn clip(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(MAX_EXAMPLE).collect();
    if one_line.chars().count() > MAX_EXAMPLE {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_is_the_nearest_rank() {
        assert_eq!(percentile(vec![], 75.0), 0.0);
        assert_eq!(percentile(vec![0.5], 75.0), 0.5);
        assert_eq!(percentile(vec![0.1, 0.2, 0.3, 0.4], 75.0), 0.3);
        assert_eq!(percentile(vec![0.4, 0.1, 0.3, 0.2], 100.0), 0.4);
    }
}
