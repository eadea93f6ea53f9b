//! The recall index as a server holds it: built in the background, with recall answering from
//! the store's own search until it is ready ([`lore_recall::lessons::Warmup`]).
//!
//! A command that answers one query and exits waits for the index instead, which is the
//! default: its answer would otherwise come from fewer candidates, and its process ends before
//! a background build could be used.

use std::collections::BTreeSet;

use lore_core::error::Result;
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::ports::store::ListFilter;
use lore_recall::lessons::{self, Held, IndexState, RecallIndex};

use crate::engine::Engine;
use crate::recall::RecallQuery;

/// Up to this many lessons a recall that finds the index missing builds it itself rather than
/// answering from the store's search.
const BUILD_WHILE_WAITING: u64 = 1_000;

impl Engine {
    /// Has recall answer while its index builds rather than wait for it: the build runs on a
    /// thread of its own (see [`Engine::warm_recall_index`]) and, until it is done, each
    /// recall's candidates come from the store's own full-text search, with
    /// [`crate::RecallResult::index`] saying so. For a server, whose first requests would
    /// otherwise wait for a build of a minute or more.
    pub fn with_background_index(self) -> Self {
        self.recall.warmup.background();
        self
    }

    /// Has each background build of the recall index call `release` on its own thread once
    /// the index is in and the build's working copies are freed: a server passes what makes
    /// its allocator hand freed pages back to the system, since the load's copies are about as
    /// large as the index and nothing else would return them.
    pub fn with_memory_release(self, release: fn()) -> Self {
        self.recall.warmup.release_memory_with(release);
        self
    }

    /// Starts building (or loading) the recall index in the background now, when
    /// [`Engine::with_background_index`] was asked for and no index is there yet; a server
    /// calls this at start so that the index is ready as early as it can be.
    pub fn warm_recall_index(&self) {
        if !self.recall.warmup.is_background()
            || lessons::state(&self.recall.index, &self.recall.warmup) == IndexState::Ready
        {
            return;
        }
        let statuses: Vec<LessonStatus> = self.retrievable_statuses().into_iter().collect();
        self.recall.warmup.start(
            &self.recall.index,
            &self.store,
            &self.recall.embedder,
            &statuses,
        );
    }

    /// Whether recall answers from its full index ([`IndexState::Ready`]) or from the store's
    /// search while the index builds ([`IndexState::Warming`]). An Engine that waits for its
    /// index says warming only before its first recall.
    pub fn recall_index_state(&self) -> IndexState {
        lessons::state(&self.recall.index, &self.recall.warmup)
    }

    /// The index `query` reads: the shared one, fresh; or, while it builds in the background,
    /// a provisional one over the store's search for the query's words.
    pub(crate) fn held_index(
        &self,
        query: &RecallQuery,
        pool: usize,
        statuses: &[LessonStatus],
    ) -> Result<Held<'_>> {
        let (shared, embedder) = (&self.recall.index, &self.recall.embedder);
        if !self.recall.warmup.is_background() {
            let guard = lessons::fresh(shared, self.store.as_ref(), embedder, statuses)?;
            return Ok(Held::Ready(guard));
        }
        let fresh =
            lessons::fresh_or_start(shared, &self.recall.warmup, &self.store, embedder, statuses)?;
        if let Some(guard) = fresh {
            return Ok(Held::Ready(guard));
        }
        // A store this small builds in milliseconds, and a provisional index over a handful of
        // search hits scores worse than the whole (a word in every one of its lessons weighs
        // nothing): wait for the build instead.
        if self
            .store
            .counts(&lore_core::Scope::unrestricted())?
            .lessons
            <= BUILD_WHILE_WAITING
        {
            let guard = lessons::fresh(shared, self.store.as_ref(), embedder, statuses)?;
            return Ok(Held::Ready(guard));
        }
        let found = self.searched_by_store(query, pool, statuses)?;
        let index = RecallIndex::provisional(self.store.as_ref(), embedder, statuses, found)?;
        Ok(Held::Warming(Box::new(index)))
    }

    /// The retrievable lessons in this handle's scope (and the query's skill) that the store's
    /// full-text search finds for the query's words, its error and its tags, best first.
    fn searched_by_store(
        &self,
        query: &RecallQuery,
        pool: usize,
        statuses: &[LessonStatus],
    ) -> Result<Vec<Lesson>> {
        let words: Vec<&str> = std::iter::once(query.text.as_str())
            .chain(query.fingerprint.as_deref())
            .chain(query.tags.iter().map(String::as_str))
            .collect();
        let filter = ListFilter {
            scope: self.scope.clone(),
            skill: query.skill.clone(),
            statuses: Some(statuses.iter().copied().collect::<BTreeSet<_>>()),
            ..ListFilter::default()
        };
        let hits = self.store.search_lessons(&words.join(" "), &filter, pool)?;
        let mut found = Vec::with_capacity(hits.len());
        for hit in hits {
            // An ID the store returned is its own; one that does not parse is skipped, as a
            // lesson that left between the search and the read is.
            let Ok(id) = LessonId::parse(&hit.id) else {
                continue;
            };
            if let Some(lesson) = self.store.lesson(&id)? {
                found.push(lesson);
            }
        }
        Ok(found)
    }
}
