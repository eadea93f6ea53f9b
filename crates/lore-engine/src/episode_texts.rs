//! The words of a scope's episodes, indexed for full-text search: one BM25 document per
//! episode, and the line that best shows why an episode matched.

use std::collections::HashSet;

use lore_core::model::{Episode, EpisodeOutcome, RecordKind};
use lore_core::ports::store::SearchHit;
use lore_core::scope::SkillPath;
use lore_recall::{SparseIndex, text};
use serde::Serialize;

/// A snippet's longest length, in characters.
const SNIPPET_CHARS: usize = 200;

/// BM25 over the scope's episodes, one document each.
pub(crate) struct EpisodeTexts {
    index: SparseIndex,
    /// Per slot: the episode's ID, skill and lines of text (for the snippet).
    docs: Vec<(String, SkillPath, Vec<String>)>,
    /// Per slot: how the episode ended.
    outcomes: Vec<EpisodeOutcome>,
}

impl EpisodeTexts {
    pub(crate) fn new(episodes: &[Episode]) -> Self {
        let mut index = SparseIndex::new();
        let mut docs = Vec::with_capacity(episodes.len());
        for episode in episodes {
            let lines = lines(episode);
            index.add(&lines.join("\n"));
            docs.push((episode.id.to_string(), episode.skill.clone(), lines));
        }
        let outcomes = episodes.iter().map(|e| e.outcome).collect();
        Self {
            index,
            docs,
            outcomes,
        }
    }

    /// The best matches with how each episode ended.
    pub(crate) fn search(
        &self,
        query: &str,
        skill: Option<&SkillPath>,
        limit: usize,
    ) -> Vec<(SearchHit, EpisodeOutcome)> {
        let terms: HashSet<String> = text::terms(query).into_iter().collect();
        let allow = |slot: u32| skill.is_none_or(|s| *s == self.docs[slot as usize].1);
        self.index
            .search(query, limit, allow)
            .into_iter()
            .map(|(slot, score)| {
                let (id, skill, lines) = &self.docs[slot as usize];
                let hit = SearchHit {
                    kind: RecordKind::Episode,
                    id: id.clone(),
                    skill: skill.clone(),
                    score,
                    snippet: snippet(lines, &terms),
                };
                (hit, self.outcomes[slot as usize])
            })
            .collect()
    }
}

/// What an episode says, one field per line: the task, each decision's context, options,
/// choice and rationale, each event, the lessons.
fn lines(episode: &Episode) -> Vec<String> {
    let mut lines = vec![episode.task.clone()];
    for d in &episode.decisions {
        lines.push(format!("{}: chose {}", d.context, d.chosen));
        if !d.options.is_empty() {
            lines.push(format!("options: {}", d.options.join(", ")));
        }
        lines.push(d.rationale.clone());
    }
    lines.extend(episode.events.iter().map(|e| e.content.clone()));
    lines.extend(episode.lessons.iter().cloned());
    lines.retain(|l| !l.trim().is_empty());
    lines
}

/// The line sharing most of the query's terms, shortened.
fn snippet(lines: &[String], terms: &HashSet<String>) -> String {
    let shared = |line: &String| {
        text::terms(line)
            .into_iter()
            .filter(|t| terms.contains(t))
            .count()
    };
    let best = lines.iter().max_by_key(|l| shared(l)).cloned();
    let best = best.unwrap_or_default();
    let mut out: String = best.chars().take(SNIPPET_CHARS).collect();
    if best.chars().count() > SNIPPET_CHARS {
        out.push('…');
    }
    out
}

/// A past session placed in a recall's context, after its lessons.
#[derive(Clone, Debug, Serialize)]
pub struct RecalledEpisode {
    /// The episode.
    pub id: String,
    /// Its skill.
    pub skill: SkillPath,
    /// How it ended.
    pub outcome: EpisodeOutcome,
    /// Its BM25 score against the query.
    pub score: f64,
}
