//! Full-text search over what the scope holds, and the scope's counts.

use std::collections::BTreeSet;

use serde::Serialize;

use lore_core::error::{Error, Result};
use lore_core::model::RecordKind;
use lore_core::model::{CurationMode, LessonStatus};
use lore_core::ports::store::{ListFilter, SearchHit, StoreCounts, StoreInfo};
use lore_core::scope::SkillPath;

use crate::engine::Engine;
use crate::reformulate::{MemorySearch, Merged, Reformulation, SearchRound, Verdict};

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

impl Engine {
    /// Full-text search over retrievable lessons, executions and episodes in scope, best first.
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
        let mut hidden = Vec::new();
        for hit in hits.iter().filter(|h| h.kind == RecordKind::Lesson) {
            let id = lore_core::id::LessonId::parse(&hit.id)?;
            if !self.store.lesson(&id)?.is_some_and(|l| self.sees(&l)) {
                hidden.push(hit.id.clone());
            }
        }
        hits.retain(|h| !hidden.contains(&h.id));
        hits.extend(self.search_episodes(query, skill, limit)?);
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
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

    /// Store identity and counts inside the scope, of what this handle may see: another
    /// member's own lessons are not counted, as they are not listed.
    ///
    /// # Errors
    /// Store failures.
    pub fn status(&self) -> Result<Status> {
        Ok(Status {
            store: self.store.info(),
            counts: self.visible_counts()?,
            curation: self.config.curation,
        })
    }
}

impl Engine {
    /// Uses seed 002's Search-and-Ask loop in [`Engine::search_memory`].
    pub fn with_reformulation(mut self, reformulation: Reformulation) -> Self {
        self.reformulation = Some(reformulation);
        self
    }

    /// Searches retrievable lessons and executions in scope for `question`, then, when a loop
    /// is configured ([`Engine::with_reformulation`]), asks its reformulator after each round
    /// whether the results suffice and searches again with the query it proposes.
    ///
    /// # Errors
    /// [`Error::Invalid`] for `limit` 0 or a blank question; store failures. A reformulator's
    /// failure is not an error: see [`MemorySearch::failure`].
    pub fn search_memory(
        &self,
        question: &str,
        skill: Option<&SkillPath>,
        limit: usize,
    ) -> Result<MemorySearch> {
        if question.trim().is_empty() {
            return Err(Error::invalid("query", "give the words to search for"));
        }
        let mut merged = Merged::default();
        let mut rounds = Vec::new();
        let mut tried = vec![question.trim().to_owned()];
        let new = merged.add(self.search(question, skill, limit)?);
        rounds.push(SearchRound {
            query: tried[0].clone(),
            found: new.0,
            new: new.1,
        });
        let Some(loop_) = &self.reformulation else {
            return Ok(merged.finish(rounds, "single", None, limit));
        };
        for _ in 0..loop_.max_rounds {
            let hits = merged.best(limit);
            let verdict = match loop_.reformulator.review(question, &tried, &hits, limit) {
                Ok(verdict) => verdict,
                Err(err) => {
                    tracing::warn!(%err, reformulator = loop_.reformulator.name(), "reformulation failed; keeping the results so far");
                    return Ok(merged.finish(rounds, "failed", Some(err.to_string()), limit));
                }
            };
            let query = match verdict {
                Verdict::Sufficient => return Ok(merged.finish(rounds, "sufficient", None, limit)),
                Verdict::Exhausted => return Ok(merged.finish(rounds, "exhausted", None, limit)),
                Verdict::Search(query) => query.trim().to_owned(),
            };
            if query.is_empty() || tried.iter().any(|t| t.eq_ignore_ascii_case(&query)) {
                return Ok(merged.finish(rounds, "exhausted", None, limit));
            }
            let (found, new) = merged.add(self.search(&query, skill, limit)?);
            rounds.push(SearchRound {
                query: query.clone(),
                found,
                new,
            });
            tried.push(query);
        }
        Ok(merged.finish(rounds, "max_rounds", None, limit))
    }
}
