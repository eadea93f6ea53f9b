//! Knowledge recall: the top chunks for a query, through the same pipeline as lessons.
//!
//! The index ([`super::index`]) holds BM25 over each chunk's heading and text and the vectors
//! made at ingest; every chunk is quoted as data under a provenance line naming its file,
//! heading and lines.

use serde::Serialize;
use tracing::instrument;

use std::collections::{BTreeMap, BTreeSet};

use super::index::{Changes, Item, ItemIndexInfo};
use crate::engine::Engine;
use lore_core::error::Result;
use lore_core::model::{ChunkVector, KnowledgeChunk};
use lore_core::scope::SkillPath;
use lore_core::{quote, sensitive};
use lore_recall::{EmbedderId, Explanation, FastMap};

/// How many chunks knowledge recall returns unless asked otherwise (seed 004: top 8).
pub const DEFAULT_LIMIT: usize = 8;

/// What to look up in the knowledge chunks.
#[derive(Clone, Debug, Default)]
pub struct KnowledgeQuery {
    /// The question or task, in plain words.
    pub text: String,
    /// Only chunks of this skill.
    pub skill: Option<SkillPath>,
    /// At most this many chunks (default 8).
    pub limit: Option<usize>,
    /// A token budget (default: a layer's, 2,000).
    pub budget: Option<usize>,
    /// Return every candidate's explanation.
    pub explain: bool,
}

/// One chunk placed in the context.
#[derive(Clone, Debug, Serialize)]
pub struct RecalledChunk {
    /// The chunk.
    pub id: String,
    /// Its skill.
    pub skill: SkillPath,
    /// Its document.
    pub source: String,
    /// The headings above it.
    pub heading: String,
    /// Its page, in a paged document (a PDF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// Its first line in the document (in its page, when it has one).
    pub line_start: u32,
    /// Its last line.
    pub line_end: u32,
    /// Its tokens as placed.
    pub tokens: usize,
    /// Its final score.
    pub score: f64,
}

/// Knowledge recall's context and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct KnowledgeResult {
    /// The tokenizer that counted the budget.
    pub tokenizer: String,
    /// The embedder of the dense candidates.
    pub embedder: EmbedderId,
    /// The budget in tokens.
    pub budget: usize,
    /// Tokens used.
    pub tokens: usize,
    /// The context: each chunk quoted with its provenance.
    pub text: String,
    /// The chunks in it, in order.
    pub chunks: Vec<RecalledChunk>,
    /// Every candidate, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Explanation>>,
}

/// The words a chunk is found by: its heading and its text.
pub(crate) fn search_text(chunk: &KnowledgeChunk) -> String {
    if chunk.heading.is_empty() {
        chunk.text.clone()
    } else {
        format!("{}\n{}", chunk.heading, chunk.text)
    }
}

/// A chunk as recall shows it: Lore's provenance line (file, page when paged, heading, lines),
/// then the document's words quoted.
pub(crate) fn render(chunk: &KnowledgeChunk) -> String {
    // The heading is the document's words, not Lore's: it opens the quote rather than sitting
    // on the provenance line. The source is a path on one line (ingest refuses others); an older
    // store's is folded onto the line and redacted all the same.
    let heading = quote::one_line(&sensitive::redact(&chunk.heading));
    let page = chunk.page.map_or_else(String::new, |p| format!(" p. {p}"));
    let mut quoted: Vec<String> = Vec::new();
    if !heading.is_empty() {
        quoted.push(format!("> § {heading}"));
    }
    quoted.extend(quote::lines(&chunk.text).map(|l| format!("> {l}")));
    format!(
        "- **{}** ({}; {}{}, lines {}–{})\n{}",
        chunk.id,
        chunk.skill,
        quote::one_line(&sensitive::redact(&chunk.source)),
        page,
        chunk.line_start,
        chunk.line_end,
        quoted.join("\n")
    )
}

impl Engine {
    /// What the knowledge index holds; `None` before this Engine's first knowledge query.
    pub fn knowledge_index_info(&self) -> Option<ItemIndexInfo> {
        self.knowledge
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|index| index.info())
    }

    /// The knowledge chunks most relevant to `query`, packed into its budget.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty or overlong query, a limit outside 1 to 50 or a bad
    /// budget; [`Error::Forbidden`] for a skill outside this handle's scope;
    /// [`Error::Unsupported`] from a store without knowledge; store and embedder failures.
    #[instrument(skip_all)]
    pub fn recall_knowledge(&self, query: &KnowledgeQuery) -> Result<KnowledgeResult> {
        let config = self.layer_config(&query.text, query.limit, DEFAULT_LIMIT, query.budget)?;
        if let Some(skill) = &query.skill {
            self.scope.check_write(skill)?;
        }
        let store = self.store.knowledge()?;
        let index = self.caught_up_index(
            &self.knowledge,
            store.knowledge_revision()?,
            |since| {
                let changes = store.knowledge_changes(since)?;
                // Looked up by borrowed names: every held chunk is asked once.
                let mut documents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for (skill, source) in changes.documents {
                    documents
                        .entry(skill.to_string())
                        .or_default()
                        .insert(source);
                }
                Ok(Some(Changes {
                    revision: changes.revision,
                    stale: Box::new(move |c: &KnowledgeChunk| {
                        documents
                            .get(c.skill.as_str())
                            .is_some_and(|sources| sources.contains(c.source.as_str()))
                    }),
                    added: changes.chunks,
                }))
            },
            || store.knowledge_chunks(&lore_core::Scope::unrestricted(), None),
        )?;
        let recalled = self.search_index(&index, &query.text, query.skill.as_ref(), &config)?;
        let scores: FastMap<&str, f64> = recalled
            .explain
            .iter()
            .map(|e| (e.id.as_str(), e.score))
            .collect();
        let chunks = recalled
            .packed
            .items
            .iter()
            .filter_map(|item| {
                let c = index.get(&item.id)?;
                Some(RecalledChunk {
                    id: c.id.clone(),
                    skill: c.skill.clone(),
                    source: c.source.clone(),
                    heading: c.heading.clone(),
                    page: c.page,
                    line_start: c.line_start,
                    line_end: c.line_end,
                    tokens: item.tokens,
                    score: scores.get(item.id.as_str()).copied().unwrap_or(0.0),
                })
            })
            .collect();
        Ok(KnowledgeResult {
            tokenizer: self.tokenizer().name().to_owned(),
            embedder: index.embedder.clone(),
            budget: config.budget,
            tokens: recalled.packed.tokens,
            text: recalled.packed.text.clone(),
            chunks,
            explain: query.explain.then_some(recalled.explain),
        })
    }
}

impl Item for KnowledgeChunk {
    const KIND: &'static str = "knowledge";
    const STORED_VECTORS: bool = true;

    fn id(&self) -> &str {
        &self.id
    }

    fn skill(&self) -> &SkillPath {
        &self.skill
    }

    fn search_text(&self) -> String {
        search_text(self)
    }

    fn render(&self) -> String {
        render(self)
    }

    fn take_vector(&mut self) -> Option<ChunkVector> {
        self.vector.take()
    }
}
