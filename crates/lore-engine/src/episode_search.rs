//! Episodes in full-text search (seed 001): BM25 over each episode's words, beside the store's
//! search of lessons and executions.
//!
//! The scope's episodes are already held in memory for the graph queries ([`ScopeGraph`]), tagged
//! with the store's episode revision, so the index is one more part of that entry, built by the
//! first search after a write. Both stores get the same search with no schema of their own, and
//! a scoped handle indexes only the episodes its scope allows.

use lore_core::error::Result;
use lore_core::ports::store::SearchHit;
use lore_core::scope::SkillPath;

use crate::engine::Engine;
use crate::episode_texts::{EpisodeTexts, RecalledEpisode};
use crate::graph_cache::ScopeGraph;
use crate::recall::{RecallQuery, RecallResult};

impl ScopeGraph {
    /// The scope's episodes, searchable by their words.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn texts(&self, engine: &Engine) -> Result<&EpisodeTexts> {
        if let Some(texts) = self.texts.get() {
            return Ok(texts);
        }
        let built = EpisodeTexts::new(&engine.all_episodes()?);
        Ok(self.texts.get_or_init(|| built))
    }
}

impl Engine {
    /// The episodes in scope (and `skill`) that match `query`, best first, at most `limit`.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn search_episodes(
        &self,
        query: &str,
        skill: Option<&SkillPath>,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        let graph = self.scope_graph()?;
        let found = graph.texts(self)?.search(query, skill, limit);
        Ok(found.into_iter().map(|(hit, _)| hit).collect())
    }

    /// Appends the past sessions that best match `query` to a recall's context, within what is
    /// left of its budget, each quoted with its provenance; at most
    /// [`crate::EngineConfig::recall_episodes`], none by default.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn add_episodes(
        &self,
        result: &mut RecallResult,
        query: &RecallQuery,
    ) -> Result<()> {
        let wanted = self.config.recall_episodes;
        if wanted == 0 || query.text.trim().is_empty() {
            return Ok(());
        }
        let graph = self.scope_graph()?;
        let found = graph
            .texts(self)?
            .search(&query.text, query.skill.as_ref(), wanted);
        let tokenizer = self.tokenizer();
        for (hit, outcome) in found {
            let block = format!(
                "- Past session {} ({}, {}), from its record: \"{}\"",
                hit.id,
                hit.skill,
                outcome.as_str(),
                lore_core::sensitive::redact(&hit.snippet).replace('"', "'"),
            );
            if !result.append(&block, tokenizer) {
                continue;
            }
            result.episodes.push(RecalledEpisode {
                id: hit.id,
                skill: hit.skill,
                outcome,
                score: hit.score,
            });
        }
        Ok(())
    }
}
