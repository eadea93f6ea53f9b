//! `Engine::recall`: the recall pipeline over the store's lessons.
//!
//! Candidates come only from lessons the store lists as retrievable inside this handle's scope;
//! each one is checked again when it becomes a pipeline [`Entry`] (scope and status), and a
//! candidate from any source that is not in that set is dropped as unknown. So a lesson outside
//! the scope or in an ineligible state cannot reach a context even if one search misbehaves.
//!
//! Dense candidates are computed at query time: the configured embedder is fitted to the
//! handle's retrievable lessons (the builtin one learns their IDF), embeds them, and they are
//! searched exactly. That is linear in the number of lessons
//! and fine for a skill's or a team's memory; persisted vectors and an ANN index (issue 6, item
//! 7) replace it without changing the pipeline.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tracing::instrument;

use super::Engine;
use crate::error::{Error, Result};
use crate::id::LessonId;
use crate::model::{Lesson, LessonStatus, LinkKind};
use crate::recall::{
    ApproxTokenizer, BuiltinEmbedder, DenseIndex, Eligibility, Embedder, EmbedderId, Entries,
    Entry, Explanation, Hit, QueryShape, RankedList, RecallConfig, Source, Tokenizer, run,
};
use crate::scope::SkillPath;
use crate::store::ListFilter;

/// The ports and settings recall runs with.
#[derive(Clone)]
pub(crate) struct RecallSettings {
    embedder: Arc<dyn Embedder>,
    tokenizer: Arc<dyn Tokenizer>,
    config: RecallConfig,
}

impl Default for RecallSettings {
    fn default() -> Self {
        Self {
            embedder: Arc::new(BuiltinEmbedder::default()),
            tokenizer: Arc::new(ApproxTokenizer),
            config: RecallConfig::default(),
        }
    }
}

/// What to recall.
#[derive(Clone, Debug, Default)]
pub struct RecallQuery {
    /// The task or question, in plain words.
    pub text: String,
    /// Only lessons of this skill.
    pub skill: Option<SkillPath>,
    /// An error (raw or fingerprinted): lessons triggered by it rank first (seed 003).
    pub fingerprint: Option<String>,
    /// Failure tags: lessons sharing them rank higher (seed 003).
    pub tags: Vec<String>,
    /// A token budget instead of the configured one.
    pub budget: Option<usize>,
    /// At most this many lessons instead of the configured limit.
    pub limit: Option<usize>,
}

/// One lesson placed in the context.
#[derive(Clone, Debug, Serialize)]
pub struct RecalledLesson {
    /// The lesson.
    pub id: LessonId,
    /// Its skill.
    pub skill: SkillPath,
    /// Its status (approved, or trial in auto curation).
    pub status: LessonStatus,
    /// The tier shown: 0 summary, 1 rule and conditions, 2 with steps.
    pub tier: usize,
    /// Its tokens.
    pub tokens: usize,
    /// Its final score.
    pub score: f64,
}

/// A recall's context and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct RecallResult {
    /// The tokenizer that counted the budget.
    pub tokenizer: String,
    /// The embedder that made the dense candidates (as fitted to the lessons searched).
    pub embedder: EmbedderId,
    /// The budget in tokens.
    pub budget: usize,
    /// Tokens used.
    pub tokens: usize,
    /// The context: each lesson quoted with its provenance.
    pub text: String,
    /// The lessons in it, in order.
    pub lessons: Vec<RecalledLesson>,
    /// Every candidate: sources, scores, kept or dropped and why.
    pub explain: Vec<Explanation>,
}

impl Engine {
    /// Uses `embedder` for dense recall candidates (default: the builtin embedder).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.recall.embedder = embedder;
        self
    }

    /// Counts recall budgets with `tokenizer` (default: [`ApproxTokenizer`]).
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn Tokenizer>) -> Self {
        self.recall.tokenizer = tokenizer;
        self
    }

    /// Uses `config` for recall.
    pub fn with_recall_config(mut self, config: RecallConfig) -> Self {
        self.recall.config = config;
        self
    }

    /// The lessons that fit `query`, packed into its token budget, with an explanation.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside the scope, [`Error::Invalid`] for an empty query,
    /// a budget or a limit of 0; store and embedder failures.
    #[instrument(skip_all, fields(skill = ?query.skill))]
    pub fn recall(&self, query: &RecallQuery) -> Result<RecallResult> {
        if let Some(skill) = &query.skill
            && !self.scope.allows(skill)
        {
            return Err(Error::Forbidden(format!(
                "{skill} is outside this handle's scope"
            )));
        }
        let has_error = query.fingerprint.is_some() || !query.tags.is_empty();
        if query.text.trim().is_empty() && !has_error {
            return Err(Error::invalid("query", "give words, a fingerprint or tags"));
        }
        let config = self.recall_config(query)?;
        let lessons = self.store.lessons(&ListFilter {
            skill: query.skill.clone(),
            statuses: Some(self.retrievable_statuses()),
            ..self.filter()
        })?;
        let pool = config.limit * config.pool_multiplier;
        let (dense, vectors, embedder) = self.dense_candidates(&query.text, &lessons, pool)?;
        let lists = [
            self.sparse_candidates(query, pool)?,
            dense,
            fingerprint_candidates(query.fingerprint.as_deref(), &lessons),
            tag_candidates(&query.tags, &lessons),
        ];
        let entries = self.entries(lessons.iter().zip(vectors));
        let shape = QueryShape {
            on_error: has_error,
        };
        let tokenizer = self.recall.tokenizer.as_ref();
        let recalled = run(&lists, &entries, shape, &config, &[], tokenizer);
        let by_id: HashMap<&str, &Lesson> = lessons.iter().map(|l| (l.id.as_str(), l)).collect();
        let placed = recalled
            .packed
            .items
            .iter()
            .filter_map(|item| {
                let lesson = by_id.get(item.id.as_str())?;
                let score = recalled.explain.iter().find(|e| e.id == item.id)?.score;
                Some(RecalledLesson {
                    id: lesson.id.clone(),
                    skill: lesson.skill.clone(),
                    status: lesson.status,
                    tier: item.tier,
                    tokens: item.tokens,
                    score,
                })
            })
            .collect();
        Ok(RecallResult {
            tokenizer: tokenizer.name().to_owned(),
            embedder,
            budget: config.budget,
            tokens: recalled.packed.tokens,
            text: recalled.packed.text,
            lessons: placed,
            explain: recalled.explain,
        })
    }

    fn recall_config(&self, query: &RecallQuery) -> Result<RecallConfig> {
        let mut config = self.recall.config.clone();
        if let Some(budget) = query.budget {
            if budget == 0 {
                return Err(Error::invalid("budget", "must be at least 1 token"));
            }
            config.budget = budget;
        }
        if let Some(limit) = query.limit {
            if limit == 0 {
                return Err(Error::invalid("limit", "must be at least 1"));
            }
            config.limit = limit;
        }
        Ok(config)
    }

    fn sparse_candidates(&self, query: &RecallQuery, pool: usize) -> Result<RankedList> {
        let filter = ListFilter {
            skill: query.skill.clone(),
            statuses: Some(self.retrievable_statuses()),
            ..self.filter()
        };
        // The store searches executions too; ask for enough to leave `pool` lessons.
        let hits = self.store.search(&query.text, &filter, pool * 2)?;
        let hits = hits
            .into_iter()
            .filter(|h| h.kind == crate::model::RecordKind::Lesson)
            .map(|h| Hit {
                id: h.id,
                score: h.score,
            })
            .take(pool)
            .collect();
        Ok(RankedList {
            source: Source::Sparse,
            hits,
        })
    }

    fn dense_candidates(
        &self,
        text: &str,
        lessons: &[Lesson],
        pool: usize,
    ) -> Result<(RankedList, Vec<Vec<f32>>, EmbedderId)> {
        let texts: Vec<String> = lessons.iter().map(lesson_text).collect();
        let corpus: Vec<&str> = texts.iter().map(String::as_str).collect();
        // Fitted to the very lessons it indexes (IDF for the builtin embedder).
        let fitted = self.recall.embedder.fit(&corpus);
        let embedder = fitted.as_deref().unwrap_or(self.recall.embedder.as_ref());
        let id = embedder.id();
        let mut index = DenseIndex::new(id.clone());
        let mut vectors = Vec::with_capacity(lessons.len());
        for (lesson, text) in lessons.iter().zip(&corpus) {
            let v = embedder.embed(text)?;
            index.add(lesson.id.as_str(), &v, &id)?;
            vectors.push(v);
        }
        let hits = if text.trim().is_empty() {
            Vec::new()
        } else {
            index.search(&embedder.embed(text)?, &id, pool)?
        };
        let list = RankedList {
            source: Source::Dense,
            hits,
        };
        Ok((list, vectors, id))
    }

    fn entries<'a>(&self, lessons: impl Iterator<Item = (&'a Lesson, Vec<f32>)>) -> Entries {
        let now = self.now();
        lessons
            .map(|(lesson, vector)| {
                let entry = Entry {
                    id: lesson.id.to_string(),
                    text: lesson_text(lesson),
                    vector: Some(vector),
                    tags: lesson.tags.clone(),
                    session: None,
                    age_hours: age_hours(lesson.updated_at, now),
                    reliability: reliability(lesson),
                    eligibility: self.eligibility(lesson),
                    conflicts_with: conflicts(lesson),
                    tiers: tiers(lesson),
                };
                (entry.id.clone(), entry)
            })
            .collect()
    }

    /// Scope and status, checked again here so that no single layer decides alone.
    fn eligibility(&self, lesson: &Lesson) -> Eligibility {
        if !self.scope.allows(&lesson.skill) {
            return Eligibility::Ineligible(format!("{} is outside the scope", lesson.skill));
        }
        match lesson.status {
            LessonStatus::Sensitive => Eligibility::Sensitive,
            s if s.is_retrievable(self.config.curation) => Eligibility::Eligible,
            s => Eligibility::Ineligible(format!("status {}", s.as_str())),
        }
    }
}

fn fingerprint_candidates(error: Option<&str>, lessons: &[Lesson]) -> RankedList {
    let hits = error
        .map(|raw| (raw.trim().to_owned(), crate::fingerprint(raw)))
        .map(|(raw, normalized)| {
            lessons
                .iter()
                .filter(|l| l.triggers.iter().any(|t| *t == raw || *t == normalized))
                .map(|l| Hit {
                    id: l.id.to_string(),
                    score: 1.0,
                })
                .collect()
        })
        .unwrap_or_default();
    RankedList {
        source: Source::Fingerprint,
        hits,
    }
}

/// Lessons sharing the query's tags, scored by the share of the query's tags they carry.
fn tag_candidates(tags: &[String], lessons: &[Lesson]) -> RankedList {
    let mut hits: Vec<Hit> = lessons
        .iter()
        .filter_map(|l| {
            let shared = tags.iter().filter(|t| l.tags.contains(t)).count();
            (shared > 0).then(|| Hit {
                id: l.id.to_string(),
                score: shared as f64 / tags.len() as f64,
            })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    RankedList {
        source: Source::Tags,
        hits,
    }
}

/// The words a lesson is found by: its summary, rule, conditions and mistake.
fn lesson_text(lesson: &Lesson) -> String {
    [
        lesson.tiers.summary.as_str(),
        &lesson.rule,
        &lesson.applies_when,
        &lesson.mistake,
    ]
    .join("\n")
}

fn age_hours(at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    (now - at).num_seconds() as f64 / 3600.0
}

/// Confidence, blended half and half with measured utility once there is any.
fn reliability(lesson: &Lesson) -> f64 {
    let confidence = lesson.confidence.clamp(0.0, 1.0);
    match lesson.utility.utility {
        Some(u) => 0.5 * confidence + 0.5 * (u.clamp(-1.0, 1.0) + 1.0) / 2.0,
        None => confidence,
    }
}

fn conflicts(lesson: &Lesson) -> Vec<String> {
    lesson
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Conflicts)
        .map(|l| l.target.to_string())
        .collect()
}

/// The lesson's tiers as quoted data with provenance: summary, rule and conditions, steps.
fn tiers(lesson: &Lesson) -> Vec<String> {
    let head = format!(
        "- **{}** ({}; confidence {:.0}%; {})",
        lesson.id,
        lesson.skill,
        lesson.confidence * 100.0,
        match lesson.status {
            LessonStatus::Trial => "trial: being measured",
            s => s.as_str(),
        }
    );
    let summary = first_line(&lesson.tiers.summary)
        .unwrap_or_else(|| first_line(&lesson.rule).unwrap_or_default());
    let tier0 = format!("{head}\n  > {summary}");
    let mut tier1 = format!("{head}\n");
    for line in lesson.rule.lines().map(str::trim).filter(|l| !l.is_empty()) {
        tier1.push_str(&format!("  > {line}\n"));
    }
    let applies = lesson
        .applies_when
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if !applies.is_empty() {
        tier1.push_str(&format!("  _Applies when_: {applies}\n"));
    }
    let tier1 = tier1.trim_end().to_owned();
    let mut out = vec![tier0, tier1.clone()];
    if !lesson.tiers.steps.is_empty() {
        let steps: Vec<String> = lesson
            .tiers
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| format!("  {}. {}", i + 1, s.trim()))
            .collect();
        out.push(format!("{tier1}\n{}", steps.join("\n")));
    }
    out
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}
