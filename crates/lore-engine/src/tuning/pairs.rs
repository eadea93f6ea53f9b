//! The pairs an adapter learns from: each execution's query with the lessons it was shown,
//! helpful when the run succeeded and suppressed when the lesson was suppressed since.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use lore_core::error::Result;
use lore_core::model::{Lesson, LessonStatus, Outcome};
use lore_core::ports::store::ListFilter;
use lore_recall::adapter::{Query, TrainingSet};
use lore_recall::lessons::lesson_text;

use crate::engine::Engine;
use crate::measure::signals_failure;

/// A query's text from an execution's input: the first string field Lore knows as a query,
/// else the input itself.
fn query_text(input: &Value) -> Option<String> {
    let text = match input {
        Value::String(s) => s.clone(),
        Value::Object(map) => ["query", "task", "text", "prompt", "input"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .map_or_else(|| input.to_string(), str::to_owned),
        Value::Null => return None,
        other => other.to_string(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// A query's task type: the input's `task_type` string, when it names one.
fn task_type(input: &Value) -> Option<String> {
    input
        .get("task_type")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

impl Engine {
    /// The pairs an adapter learns from, embedded with the fitted base.
    ///
    /// # Errors
    /// Store and embedder failures; [`Error::Forbidden`] for a scoped handle.
    pub fn tuning_pairs(&self) -> Result<TrainingSet> {
        self.tuning_store()?;
        let base = self.fitted_base()?;
        let all = ListFilter::default();
        let lessons: Vec<Lesson> = self.store.lessons(&all)?;
        let failed: HashSet<String> = self
            .store
            .error_events(&all)?
            .iter()
            .filter(|e| signals_failure(e))
            .filter_map(|e| e.execution_id.as_ref().map(ToString::to_string))
            .chain(
                self.store
                    .corrections(&all)?
                    .iter()
                    .map(|c| c.execution_id.to_string()),
            )
            .collect();
        let mut groups: HashMap<String, u32> = HashMap::new();
        let mut group = |skill: &str| {
            let next = groups.len() as u32;
            *groups.entry(skill.to_owned()).or_insert(next)
        };
        let position: HashMap<String, usize> = lessons
            .iter()
            .enumerate()
            .map(|(i, l)| (l.id.to_string(), i))
            .collect();
        let texts: Vec<String> = lessons.iter().map(lesson_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = base.embed_batch(&refs)?;
        let mut set = TrainingSet {
            base: Some(base.id()),
            lessons: vectors
                .into_iter()
                .zip(&lessons)
                .map(|(v, l)| (v, group(l.skill.as_str())))
                .collect(),
            queries: Vec::new(),
        };
        let mut by_text: HashMap<(String, u32), usize> = HashMap::new();
        for execution in self.store.executions(&all)? {
            let Some(text) = query_text(&execution.input) else {
                continue;
            };
            let succeeded = matches!(execution.outcome, Outcome::Success | Outcome::Accepted)
                && !failed.contains(execution.id.as_str());
            let g = group(execution.skill.as_str());
            let slot = *by_text.entry((text.clone(), g)).or_insert_with(|| {
                set.queries.push(Query {
                    vector: Vec::new(),
                    kind: task_type(&execution.input).unwrap_or_else(|| text.clone()),
                    text,
                    group: g,
                    helpful: Vec::new(),
                    suppressed: Vec::new(),
                });
                set.queries.len() - 1
            });
            let query = &mut set.queries[slot];
            for id in &execution.lessons_shown {
                let Some(&l) = position.get(id.as_str()) else {
                    continue;
                };
                let list = match lessons[l].status {
                    LessonStatus::Suppressed | LessonStatus::Rejected => &mut query.suppressed,
                    _ if succeeded => &mut query.helpful,
                    _ => continue,
                };
                if !list.contains(&l) {
                    list.push(l);
                }
            }
        }
        // A query whose runs failed, with no lesson suppressed since, teaches nothing.
        set.queries
            .retain(|q| !q.helpful.is_empty() || !q.suppressed.is_empty());
        let texts: Vec<&str> = set.queries.iter().map(|q| q.text.as_str()).collect();
        let vectors = base.embed_batch(&texts)?;
        for (q, v) in set.queries.iter_mut().zip(vectors) {
            q.vector = v;
        }
        Ok(set)
    }
}
