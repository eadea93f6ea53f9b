//! The Engine's part of a recalled layer (knowledge, decisions): its index kept current with
//! the store, its searches limited to the handle's scope, and its recall configuration.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::index::{Changes, Item, ItemIndex, Prior, Shared, entries, ranked};
use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::limits;
use lore_core::scope::SkillPath;
use lore_recall::{QueryShape, RecallConfig, Recalled, Source, run};

impl Engine {
    /// The index in `shared` if it is at `revision` and of the configured embedder; else one
    /// over the records `load()` reads, assembled from the index before it or, in a new
    /// process, from the file saved beside the store (see [`super::index`]), and saved there
    /// again once enough of it is new.
    pub(crate) fn cached_index<T: Item>(
        &self,
        shared: &Shared<T>,
        revision: u64,
        load: impl FnOnce() -> Result<Vec<T>>,
    ) -> Result<Arc<ItemIndex<T>>> {
        self.caught_up_index(shared, revision, |_| Ok(None), load)
    }

    /// [`Engine::cached_index`] for a kind whose store says what changed after a revision:
    /// `changes(since)` is asked first when this Engine holds an index behind the store, and
    /// when it answers, the index is updated in place with what it names (see
    /// [`ItemIndex::apply`]). Every record is read again only in a new process, after another
    /// embedder, when a query still holds the index, or when removed slots have piled up.
    pub(crate) fn caught_up_index<T: Item>(
        &self,
        shared: &Shared<T>,
        revision: u64,
        changes: impl FnOnce(u64) -> Result<Option<Changes<T>>>,
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
        let path = self.store.derived_path(T::KIND);
        if let Some(held) = slot.as_mut()
            && held.embedder == embedder
            && held.revision < revision
            && let Some(changes) = changes(held.revision)?
            // A store whose revision went back is another store's data: read it all.
            && changes.revision >= held.revision
            && let Some(index) = exclusive(held)
        {
            index.apply(&self.recall.embedder, changes)?;
            if !index.worn() {
                if let Some(p) = &path {
                    index.save_if_due(p);
                }
                return Ok(Arc::clone(held));
            }
        }
        let prior = match slot.take() {
            Some(before) if before.embedder == embedder => Some(Prior::of(&before)),
            _ => path.as_deref().and_then(|p| {
                Prior::read::<T>(p, &embedder).unwrap_or_else(|why| {
                    tracing::warn!(path = %p.display(), %why, "the saved {} index is set aside", T::KIND);
                    None
                })
            }),
        };
        let mut save = |index: &mut ItemIndex<T>| {
            if let Some(p) = &path {
                index.save(p);
            }
        };
        let mut index =
            ItemIndex::assemble(&self.recall.embedder, revision, load()?, prior, &mut save)?;
        if let Some(p) = &path {
            index.save_if_due(p);
        }
        let index = Arc::new(index);
        *slot = Some(Arc::clone(&index));
        Ok(index)
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
            index.item(slot).is_some_and(|item| {
                self.scope.allows(item.skill()) && skill.is_none_or(|s| s == item.skill())
            })
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

/// The index in `held` to change in place, once the queries still reading it are done. New
/// queries wait on the lock the caller holds, so the count only falls; a query that keeps its
/// handle longer than a moment leaves the index to be replaced instead.
fn exclusive<T>(held: &mut Arc<ItemIndex<T>>) -> Option<&mut ItemIndex<T>> {
    let deadline = Instant::now() + Duration::from_millis(200);
    while Arc::strong_count(held) > 1 {
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Arc::get_mut(held)
}
