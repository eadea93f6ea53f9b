//! The Engine's part of a recalled layer (knowledge, decisions): its index kept current with
//! the store, its searches limited to the handle's scope, and its recall configuration.

use std::sync::{Arc, PoisonError};

use super::index::{Item, ItemIndex, Shared, entries, ranked};
use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::limits;
use lore_core::scope::SkillPath;
use lore_recall::{
    FastMap, QueryShape, RecallConfig, Recalled, Source, SparseIndex, VectorIndex, run,
};

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
