//! Knowledge recall: the top chunks for a query, through the same pipeline as lessons.
//!
//! The index (BM25 over each chunk's heading and text, vectors from ingest) is built from the
//! store on first use and kept, shared by every handle of one Engine, until the store's
//! knowledge revision moves: another process's ingest is seen at the next query. Vectors made
//! by another embedder than the configured one are made again in memory, never compared.
//! Candidates are limited to the skills the handle's scope allows inside each search, and
//! every chunk is quoted as data under a provenance line naming its file, heading and lines.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use tracing::instrument;

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::model::KnowledgeChunk;
use lore_core::scope::SkillPath;
use lore_core::{limits, sensitive};
use lore_recall::{
    Eligibility, EmbedderId, Entries, Entry, Explanation, FastMap, Hit, QueryShape, RankedList,
    RecallConfig, Source, SparseIndex, VectorIndex, run,
};

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
    /// Its first line in the document.
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

/// The chunks of one store revision, searchable.
pub(crate) struct KnowledgeIndex {
    revision: u64,
    embedder: EmbedderId,
    chunks: Vec<KnowledgeChunk>,
    search: Vec<String>,
    rendered: Vec<[String; 1]>,
    sparse: SparseIndex,
    dense: VectorIndex,
    slot: FastMap<String, u32>,
}

/// The knowledge index shared by an Engine's handles.
pub(crate) type SharedKnowledge = Arc<Mutex<Option<Arc<KnowledgeIndex>>>>;

/// The words a chunk is found by: its heading and its text.
pub(crate) fn search_text(chunk: &KnowledgeChunk) -> String {
    if chunk.heading.is_empty() {
        chunk.text.clone()
    } else {
        format!("{}\n{}", chunk.heading, chunk.text)
    }
}

/// A chunk as recall shows it: Lore's provenance line, then the document's words quoted.
pub(crate) fn render(chunk: &KnowledgeChunk) -> String {
    let heading = if chunk.heading.is_empty() {
        String::new()
    } else {
        format!(" § {}", chunk.heading)
    };
    let quoted: Vec<String> = chunk.text.lines().map(|l| format!("> {l}")).collect();
    format!(
        "- **{}** ({}; {}{}, lines {}–{})\n{}",
        chunk.id,
        chunk.skill,
        chunk.source,
        heading,
        chunk.line_start,
        chunk.line_end,
        quoted.join("\n")
    )
}

impl Engine {
    /// The knowledge chunks most relevant to `query`, packed into its budget.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty or overlong query, a limit outside 1 to 50 or a bad
    /// budget; [`Error::Forbidden`] for a skill outside this handle's scope;
    /// [`Error::Unsupported`] from a store without knowledge; store and embedder failures.
    #[instrument(skip_all)]
    pub fn recall_knowledge(&self, query: &KnowledgeQuery) -> Result<KnowledgeResult> {
        let config = self.knowledge_config(query)?;
        if let Some(skill) = &query.skill {
            self.scope.check_write(skill)?;
        }
        let index = self.knowledge_index()?;
        let allow = |slot: u32| {
            let skill = &index.chunks[slot as usize].skill;
            self.scope.allows(skill) && query.skill.as_ref().is_none_or(|s| s == skill)
        };
        let allowed = (0..index.chunks.len() as u32).filter(|s| allow(*s)).count();
        let k = config.limit * config.pool_multiplier * 2;
        let sparse = index.sparse.search(&query.text, k, allow);
        let vector = self.recall.embedder.embed(&query.text)?;
        let dense = index.dense.search(&vector, k, allowed, allow);
        let lists = [
            ranked(&index, Source::Sparse, &sparse),
            ranked(&index, Source::Dense, &dense),
        ];
        let entries = entries(&index, sparse.iter().chain(&dense).map(|(s, _)| *s));
        let recalled = run(
            &lists,
            &entries,
            QueryShape::default(),
            &config,
            &[],
            self.tokenizer(),
        );
        let scores: FastMap<&str, f64> = recalled
            .explain
            .iter()
            .map(|e| (e.id.as_str(), e.score))
            .collect();
        let chunks = recalled
            .packed
            .items
            .iter()
            .map(|item| {
                let c = &index.chunks[index.slot[&item.id] as usize];
                RecalledChunk {
                    id: c.id.clone(),
                    skill: c.skill.clone(),
                    source: c.source.clone(),
                    heading: c.heading.clone(),
                    line_start: c.line_start,
                    line_end: c.line_end,
                    tokens: item.tokens,
                    score: scores.get(item.id.as_str()).copied().unwrap_or(0.0),
                }
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

    fn knowledge_config(&self, query: &KnowledgeQuery) -> Result<RecallConfig> {
        if query.text.trim().is_empty() {
            return Err(Error::invalid("query", "it is empty"));
        }
        limits::text("query", &query.text)?;
        let mut config = self.recall.config.clone();
        if !self.recall.configured {
            config.fusion = RecallConfig::fusion_for(self.recall.embedder.semantic());
        }
        config.budget = limits::budget(
            "budget",
            query.budget,
            lore_recall::DEFAULT_LAYER_BUDGET,
            limits::MAX_RECALL_BUDGET,
        )?;
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > limits::MAX_RESULTS {
            return Err(Error::invalid(
                "limit",
                format!("{limit} is outside 1 to {}", limits::MAX_RESULTS),
            ));
        }
        config.limit = limit;
        config.full_tiers = limit;
        // Tags and sessions mean nothing for a document's sections.
        config.max_per_tag = None;
        config.max_per_session = None;
        Ok(config)
    }

    /// The index at the store's current revision, built when missing or stale.
    pub(crate) fn knowledge_index(&self) -> Result<Arc<KnowledgeIndex>> {
        let store = self.store.knowledge()?;
        let revision = store.knowledge_revision()?;
        let embedder = self.recall.embedder.id();
        let mut slot = self
            .knowledge
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = slot.as_ref()
            && index.revision == revision
            && index.embedder == embedder
        {
            return Ok(Arc::clone(index));
        }
        let chunks = store.knowledge_chunks(&lore_core::Scope::unrestricted(), None)?;
        let index = Arc::new(self.build_knowledge_index(revision, chunks)?);
        *slot = Some(Arc::clone(&index));
        Ok(index)
    }

    fn build_knowledge_index(
        &self,
        revision: u64,
        mut chunks: Vec<KnowledgeChunk>,
    ) -> Result<KnowledgeIndex> {
        let embedder = self.recall.embedder.id();
        let search: Vec<String> = chunks.iter().map(search_text).collect();
        let stale: Vec<usize> = (0..chunks.len())
            .filter(|i| {
                chunks[*i]
                    .vector
                    .as_ref()
                    .is_none_or(|v| v.embedder != embedder)
            })
            .collect();
        let texts: Vec<&str> = stale.iter().map(|i| search[*i].as_str()).collect();
        let fresh = if texts.is_empty() {
            Vec::new()
        } else {
            self.recall.embedder.embed_batch(&texts)?
        };
        let mut sparse = SparseIndex::new();
        let mut dense = VectorIndex::new(embedder.dim);
        let mut fresh = stale.into_iter().zip(fresh).collect::<FastMap<_, _>>();
        let mut slot = FastMap::default();
        for (i, chunk) in chunks.iter_mut().enumerate() {
            let vector = match fresh.remove(&i) {
                Some(v) => v,
                None => chunk.vector.take().map(|v| v.vector).unwrap_or_default(),
            };
            chunk.vector = None;
            if vector.len() != embedder.dim {
                return Err(Error::invalid(
                    "embedder",
                    format!(
                        "a vector of {} components, not {}",
                        vector.len(),
                        embedder.dim
                    ),
                ));
            }
            let s = sparse.add(&search[i]);
            let d = dense.add(&vector);
            debug_assert_eq!((s, d), (i as u32, i as u32));
            slot.insert(chunk.id.clone(), i as u32);
        }
        let rendered = chunks.iter().map(|c| [render(c)]).collect();
        Ok(KnowledgeIndex {
            revision,
            embedder,
            chunks,
            search,
            rendered,
            sparse,
            dense,
            slot,
        })
    }
}

fn ranked(index: &KnowledgeIndex, source: Source, hits: &[(u32, f64)]) -> RankedList {
    RankedList {
        source,
        hits: hits
            .iter()
            .map(|(s, score)| Hit {
                id: index.chunks[*s as usize].id.clone(),
                score: *score,
            })
            .collect(),
    }
}

/// The pipeline's entries for the candidate slots, borrowing from the index.
fn entries(index: &KnowledgeIndex, slots: impl Iterator<Item = u32>) -> Entries<'_> {
    let mut out = Entries::default();
    for s in slots {
        let i = s as usize;
        let chunk = &index.chunks[i];
        // Ingest redacts, but a chunk written by an older build or another door is checked
        // again here: sensitive text never reaches a context.
        let eligibility = if sensitive::kinds(&chunk.text).is_empty() {
            Eligibility::Eligible
        } else {
            Eligibility::Sensitive
        };
        out.entry(chunk.id.clone()).or_insert_with(|| Entry {
            id: chunk.id.clone(),
            text: Cow::Borrowed(index.search[i].as_str()),
            vector: Some(Cow::Borrowed(index.dense.vector(s))),
            tags: Cow::Borrowed(&[]),
            session: None,
            age_hours: 0.0,
            reliability: 0.5,
            utility: None,
            confidence: 0.5,
            eligibility,
            conflicts_with: Cow::Borrowed(&[]),
            tiers: Cow::Borrowed(&index.rendered[i][..]),
            condition_match: None,
        });
    }
    out
}
