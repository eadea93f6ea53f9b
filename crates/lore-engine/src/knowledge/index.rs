//! An in-memory search index over one kind of record (knowledge chunks, decisions), shared by
//! the layers that recall them through the same pipeline as lessons.
//!
//! The index is built from the store on first use and kept, shared by every handle of one
//! Engine, until the store's revision for that kind moves, so another process's write is seen
//! at the next query. Vectors made by another embedder than the configured one are made again
//! in memory, never compared. Every search admits only records of skills the handle's scope
//! (and the query's skill) allows, and each candidate is checked again for sensitive text when
//! it becomes a pipeline entry: eligibility fails closed.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::model::ChunkVector;
use lore_core::scope::SkillPath;
use lore_core::{limits, sensitive};
use lore_recall::{
    Eligibility, EmbedderId, Entries, Entry, FastMap, Hit, QueryShape, RankedList, RecallConfig,
    Recalled, Source, SparseIndex, VectorIndex, run,
};

/// A record an [`ItemIndex`] can hold.
pub(crate) trait Item: Send + Sync {
    /// Its ID, as candidate lists name it.
    fn id(&self) -> &str;
    /// Its skill, which scope checks.
    fn skill(&self) -> &SkillPath;
    /// The words it is found by.
    fn search_text(&self) -> String;
    /// How recall shows it: a provenance line, then its words quoted.
    fn render(&self) -> String;
    /// Whether recall may show it at all (its state), apart from scope and sensitive text.
    fn retrievable(&self) -> bool {
        true
    }
    /// Its stored vector, taken out to go into the index.
    fn take_vector(&mut self) -> Option<ChunkVector> {
        None
    }
}

/// The records of one store revision, searchable.
pub(crate) struct ItemIndex<T> {
    pub(crate) revision: u64,
    pub(crate) embedder: EmbedderId,
    pub(crate) items: Vec<T>,
    search: Vec<String>,
    rendered: Vec<[String; 1]>,
    sparse: SparseIndex,
    dense: VectorIndex,
    pub(crate) slot: FastMap<String, u32>,
}

/// An index shared by an Engine's handles.
pub(crate) type Shared<T> = Arc<Mutex<Option<Arc<ItemIndex<T>>>>>;

impl<T: Item> ItemIndex<T> {
    /// The record a packed item names.
    pub(crate) fn get(&self, id: &str) -> Option<&T> {
        self.slot.get(id).map(|s| &self.items[*s as usize])
    }
}

impl Engine {
    /// The index in `shared` if it is at `revision` and of the configured embedder, else one
    /// built from `load()`.
    pub(crate) fn cached_index<T: Item>(
        &self,
        shared: &Shared<T>,
        revision: u64,
        load: impl FnOnce() -> Result<Vec<T>>,
    ) -> Result<Arc<ItemIndex<T>>> {
        let embedder = self.recall.embedder.id();
        let mut slot = shared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = slot.as_ref()
            && index.revision == revision
            && index.embedder == embedder
        {
            return Ok(Arc::clone(index));
        }
        let index = Arc::new(self.build_index(revision, load()?)?);
        *slot = Some(Arc::clone(&index));
        Ok(index)
    }

    fn build_index<T: Item>(&self, revision: u64, mut items: Vec<T>) -> Result<ItemIndex<T>> {
        let embedder = self.recall.embedder.id();
        let search: Vec<String> = items.iter().map(Item::search_text).collect();
        let mut stored: Vec<Option<Vec<f32>>> = items
            .iter_mut()
            .map(|i| {
                i.take_vector()
                    .filter(|v| v.embedder == embedder)
                    .map(|v| v.vector)
            })
            .collect();
        let stale: Vec<usize> = (0..items.len()).filter(|i| stored[*i].is_none()).collect();
        let texts: Vec<&str> = stale.iter().map(|i| search[*i].as_str()).collect();
        if !texts.is_empty() {
            let fresh = self.recall.embedder.embed_batch(&texts)?;
            for (i, v) in stale.into_iter().zip(fresh) {
                stored[i] = Some(v);
            }
        }
        let mut sparse = SparseIndex::new();
        let mut dense = VectorIndex::new(embedder.dim);
        let mut slot = FastMap::default();
        for (i, vector) in stored.into_iter().enumerate() {
            let vector = vector.unwrap_or_default();
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
            sparse.add(&search[i]);
            dense.add(&vector);
            slot.insert(items[i].id().to_owned(), i as u32);
        }
        let rendered = items.iter().map(|c| [c.render()]).collect();
        Ok(ItemIndex {
            revision,
            embedder,
            items,
            search,
            rendered,
            sparse,
            dense,
            slot,
        })
    }

    /// The pipeline over `index` for `text`, limited to the scope and `skill`.
    pub(crate) fn search_index<T: Item>(
        &self,
        index: &ItemIndex<T>,
        text: &str,
        skill: Option<&SkillPath>,
        config: &RecallConfig,
    ) -> Result<Recalled> {
        let allow = |slot: u32| {
            let item = &index.items[slot as usize];
            self.scope.allows(item.skill()) && skill.is_none_or(|s| s == item.skill())
        };
        let allowed = (0..index.items.len() as u32).filter(|s| allow(*s)).count();
        let k = config.limit * config.pool_multiplier * 2;
        let sparse = index.sparse.search(text, k, allow);
        let vector = self.recall.embedder.embed(text)?;
        let dense = index.dense.search(&vector, k, allowed, allow);
        let lists = [
            ranked(index, Source::Sparse, &sparse),
            ranked(index, Source::Dense, &dense),
        ];
        let entries = entries(index, sparse.iter().chain(&dense).map(|(s, _)| *s));
        Ok(run(
            &lists,
            &entries,
            QueryShape::default(),
            config,
            &[],
            self.tokenizer(),
        ))
    }

    /// The recall configuration of a layer: the Engine's, with this layer's limit and budget
    /// (a layer's 2,000 tokens by default), every item shown whole, no tag or session caps.
    pub(crate) fn layer_config(
        &self,
        text: &str,
        limit: Option<usize>,
        default_limit: usize,
        budget: Option<usize>,
    ) -> Result<RecallConfig> {
        if text.trim().is_empty() {
            return Err(Error::invalid("query", "it is empty"));
        }
        limits::text("query", text)?;
        let mut config = self.recall.config.clone();
        if !self.recall.configured {
            config.fusion = RecallConfig::fusion_for(self.recall.embedder.semantic());
        }
        config.budget = limits::budget(
            "budget",
            budget,
            lore_recall::DEFAULT_LAYER_BUDGET,
            limits::MAX_RECALL_BUDGET,
        )?;
        let limit = limit.unwrap_or(default_limit);
        if limit == 0 || limit > limits::MAX_RESULTS {
            return Err(Error::invalid(
                "limit",
                format!("{limit} is outside 1 to {}", limits::MAX_RESULTS),
            ));
        }
        config.limit = limit;
        config.full_tiers = limit;
        // Tags and sessions mean nothing for these records.
        config.max_per_tag = None;
        config.max_per_session = None;
        Ok(config)
    }
}

fn ranked<T: Item>(index: &ItemIndex<T>, source: Source, hits: &[(u32, f64)]) -> RankedList {
    RankedList {
        source,
        hits: hits
            .iter()
            .map(|(s, score)| Hit {
                id: index.items[*s as usize].id().to_owned(),
                score: *score,
            })
            .collect(),
    }
}

/// The pipeline's entries for the candidate slots, borrowing from the index.
fn entries<T: Item>(index: &ItemIndex<T>, slots: impl Iterator<Item = u32>) -> Entries<'_> {
    let mut out = Entries::default();
    for s in slots {
        let i = s as usize;
        let item = &index.items[i];
        // Writes redact, but a record written by an older build or by hand is checked again
        // here: sensitive text never reaches a context.
        let eligibility = if !item.retrievable() {
            Eligibility::Ineligible("not approved".to_owned())
        } else if sensitive::kinds(&index.search[i]).is_empty() {
            Eligibility::Eligible
        } else {
            Eligibility::Sensitive
        };
        out.entry(item.id().to_owned()).or_insert_with(|| Entry {
            id: item.id().to_owned(),
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
