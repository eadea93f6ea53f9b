//! The causal graph of a scope, kept in memory between queries.
//!
//! Every graph query needs the scope's whole graph (its counts summed over the scope's skills)
//! or all of its decisions (what-if and similar decisions rank them with BM25). Reading them from
//! the store on each query grows with the store: about 150 ms at 5,000 episodes. So the Engine
//! keeps, per scope, the finished graph, the episodes and an index of their decision contexts,
//! tagged with the store's episode revision ([`lore_core::ports::store::Store::episode_revision`]), which
//! every write of an episode raises, whichever process makes it. A query compares the revision
//! first (one indexed read) and starts a new entry when it moved. An entry's two parts (the graph
//! for paths and patterns, the decisions for similar decisions and what-if) are each built by the
//! first query that needs it, so the first query after a write reads from the store only what it
//! reads without a cache. The revision is read before the data, so an entry is never tagged newer
//! than what it holds; at worst a write that lands during a build makes the next query build
//! again. Scoped handles of one Engine share the cache; a store that cannot tell its revision
//! gets no caching at all.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::Serialize;

use lore_core::graph::{CausalGraph, normalize};
use lore_core::id::EpisodeId;
use lore_core::model::Episode;
use lore_core::model::EpisodeOutcome;
use lore_core::scope::Scope;
use lore_core::scope::SkillPath;
use lore_recall::SparseIndex;
use lore_recall::text;

/// How many scopes' graphs an Engine keeps; the least recently started goes first.
const MAX_SCOPES: usize = 16;

/// What the graph queries of one scope read, each part built on first use.
#[derive(Default)]
pub(crate) struct ScopeGraph {
    pub(crate) graph: OnceLock<CausalGraph>,
    pub(crate) decisions: OnceLock<Decisions>,
    /// Full-text search over the episodes ([`crate::episode_search`]).
    pub(crate) texts: OnceLock<crate::episode_texts::EpisodeTexts>,
}

/// A decision found in an episode, as evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DecisionMatch {
    /// The episode.
    pub episode: EpisodeId,
    /// Its skill.
    pub skill: SkillPath,
    /// The decision's ID in it.
    pub decision: String,
    /// The decision's context.
    pub context: String,
    /// What was chosen.
    pub chosen: String,
    /// The decision's outcome, else the episode's.
    pub outcome: EpisodeOutcome,
    /// BM25 score against the query (comparable within one answer only).
    pub score: f64,
    /// The share of the query's terms the context holds.
    pub overlap: f64,
}

/// The scope's episodes and BM25 over their decisions' contexts.
pub(crate) struct Decisions {
    /// The scope's episodes, oldest first.
    episodes: Vec<Episode>,
    /// BM25 over their decisions' contexts.
    index: SparseIndex,
    /// Per index slot: the episode and the decision within it.
    slots: Vec<(usize, usize)>,
    /// Per slot: what was chosen, normalized (what-if keeps only two choices).
    chosen: Vec<String>,
    /// Per slot: the context's distinct terms, sorted, for the overlap with a query.
    terms: Vec<Vec<String>>,
}

impl Decisions {
    pub(crate) fn new(episodes: Vec<Episode>) -> Self {
        let mut index = SparseIndex::new();
        let (mut slots, mut chosen, mut terms) = (Vec::new(), Vec::new(), Vec::new());
        for (e, episode) in episodes.iter().enumerate() {
            for (d, decision) in episode.decisions.iter().enumerate() {
                index.add(&decision.context);
                slots.push((e, d));
                chosen.push(normalize(&decision.chosen));
                let mut t = text::terms(&decision.context);
                t.sort_unstable();
                t.dedup();
                terms.push(t);
            }
        }
        Self {
            episodes,
            index,
            slots,
            chosen,
            terms,
        }
    }

    /// The decisions that `keep` accepts (given the episode and the normalized choice), ranked
    /// by BM25 of their context against `query`; decisions sharing no term are left out.
    pub(super) fn search_decisions(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&Episode, &str) -> bool,
    ) -> Vec<DecisionMatch> {
        let query_terms: HashSet<String> = text::terms(query).into_iter().collect();
        let k = limit.min(self.slots.len());
        self.index
            .search(query, k, |slot| {
                let (e, _) = self.slots[slot as usize];
                keep(&self.episodes[e], &self.chosen[slot as usize])
            })
            .into_iter()
            .map(|(slot, score)| {
                let (e, d) = self.slots[slot as usize];
                let (episode, decision) = (&self.episodes[e], &self.episodes[e].decisions[d]);
                let terms = &self.terms[slot as usize];
                let overlap = if query_terms.is_empty() {
                    0.0
                } else {
                    let shared = query_terms
                        .iter()
                        .filter(|t| terms.binary_search(t).is_ok())
                        .count();
                    shared as f64 / query_terms.len() as f64
                };
                DecisionMatch {
                    episode: episode.id.clone(),
                    skill: episode.skill.clone(),
                    decision: decision.id.clone(),
                    context: decision.context.clone(),
                    chosen: decision.chosen.clone(),
                    outcome: decision.outcome.unwrap_or(episode.outcome),
                    score,
                    overlap,
                }
            })
            .collect()
    }
}

struct Entry {
    scope: Scope,
    revision: u64,
    graph: Arc<ScopeGraph>,
}

/// The scopes' graphs of one Engine and its scoped handles.
#[derive(Default)]
pub(crate) struct GraphCache {
    /// Oldest first.
    entries: Mutex<Vec<Entry>>,
}

impl GraphCache {
    /// The entry of `scope` at `revision`: the cached one, or a new empty one that replaces an
    /// older entry. A caller that read an older revision than the cached entry's gets an entry
    /// of its own, not kept.
    pub(crate) fn entry(&self, scope: &Scope, revision: u64) -> Arc<ScopeGraph> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = entries.iter().position(|e| e.scope == *scope) {
            if entries[at].revision == revision {
                return Arc::clone(&entries[at].graph);
            }
            if entries[at].revision > revision {
                return Arc::default();
            }
            entries.remove(at);
        }
        if entries.len() >= MAX_SCOPES {
            entries.remove(0);
        }
        let graph = Arc::new(ScopeGraph::default());
        entries.push(Entry {
            scope: scope.clone(),
            revision,
            graph: Arc::clone(&graph),
        });
        graph
    }
}
