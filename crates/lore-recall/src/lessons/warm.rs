//! Answering while the recall index builds.
//!
//! Building the index over a large store takes a minute or more (reading every lesson and
//! vector, then the HNSW graph), and loading a saved one seconds. A server cannot hold its
//! first requests that long, so an Engine that asks for it ([`Warmup::background`]) builds the
//! index on a thread of its own, off the lock that queries read it through, and swaps it in
//! whole when done. Until then each query gets a provisional index ([`RecallIndex::provisional`])
//! over the lessons the store's own full-text search finds for it: the same pipeline, scope
//! checks and explanations run over it, so the answer is a correct one from fewer candidates,
//! marked as warming.
//!
//! A write during the build is not lost: the build reflects the store at the revision it read,
//! and the first query after the swap applies everything changed since, as after any write.
//! A build that fails is logged and tried again by the next query; a panic in it (a bug) ends
//! the attempt the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLockReadGuard, TryLockError};

use super::{
    EmbedderState, IndexOrigin, RecallIndex, SharedIndex, active_adapter, active_checkpoint,
    adapted, lesson_text, saved, stored_embedder,
};
use crate::{Embedder, text_hash};
use lore_core::error::Result;
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::ports::store::Store;
use lore_core::scope::Scope;
use serde::Serialize;

/// Whether recall answers from the full index or from a provisional one while it builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexState {
    /// The full index: BM25 and vectors over every retrievable lesson.
    Ready,
    /// The index is being built or loaded; candidates come from the store's own full-text
    /// search.
    Warming,
}

impl IndexState {
    /// `ready` or `warming`, as a header or a probe says it.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexState::Ready => "ready",
            IndexState::Warming => "warming",
        }
    }
}

/// The background build of one Engine's index, shared by its clones and scoped handles.
#[derive(Debug, Default)]
pub struct Warmup {
    background: AtomicBool,
    building: AtomicBool,
    release: OnceLock<fn()>,
}

impl Warmup {
    /// Has queries answer while the index builds instead of waiting for it (a server's choice;
    /// a command that answers one query and exits is better served by waiting).
    pub fn background(&self) {
        self.background.store(true, Ordering::Release);
    }

    /// Whether queries answer while the index builds.
    pub fn is_background(&self) -> bool {
        self.background.load(Ordering::Acquire)
    }

    /// Has every background build, once its index is swapped in and its working copies are
    /// freed, call `release` on the thread that built it: a process whose allocator keeps the
    /// pages it freed (the load's copies are about as large as the index) asks it there to hand
    /// them back. Set once; a later call is ignored.
    pub fn release_memory_with(&self, release: fn()) {
        let _ = self.release.set(release);
    }

    /// Whether a background build is running.
    pub fn is_building(&self) -> bool {
        self.building.load(Ordering::Acquire)
    }

    /// Starts building (or loading) the index on a thread of its own unless one already runs;
    /// the index is swapped into `shared` when done, unless another took its place meanwhile.
    pub fn start(
        self: &Arc<Self>,
        shared: &SharedIndex,
        store: &Arc<dyn Store>,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
    ) {
        if self.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let done = Building(Arc::clone(self));
        let (shared, store, configured) = (shared.clone(), store.clone(), configured.clone());
        let statuses = statuses.to_vec();
        let release = self.release.get().copied();
        let spawned = std::thread::Builder::new()
            .name("lore-recall-index".into())
            .spawn(move || {
                let _done = done;
                build_and_swap(&shared, store.as_ref(), &configured, &statuses);
                // Called here rather than by whoever waits for the index: an allocator hands
                // back free pages a thread holds only on that thread.
                if let Some(release) = release {
                    release();
                }
            });
        if let Err(err) = spawned {
            // The closure, and with it the flag's reset, was dropped with the error.
            tracing::warn!(%err, "cannot start the recall index's build; the next query tries again");
        }
    }
}

/// Clears [`Warmup::building`] when the build ends, however it ends.
struct Building(Arc<Warmup>);

impl Drop for Building {
    fn drop(&mut self) {
        self.0.building.store(false, Ordering::Release);
    }
}

fn build_and_swap(
    shared: &SharedIndex,
    store: &dyn Store,
    configured: &Arc<dyn Embedder>,
    statuses: &[LessonStatus],
) {
    let started = std::time::Instant::now();
    match RecallIndex::open(store, configured, statuses) {
        Ok(mut index) => {
            if let Some(path) = store.derived_path(saved::NAME) {
                index.save_if_due(&path);
            }
            let info = index.info();
            let mut guard = shared
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if guard.is_none() {
                *guard = Some(index);
            }
            shared.clear_poison();
            tracing::info!(
                seconds = started.elapsed().as_secs_f64(),
                lessons = info.lessons,
                origin = ?info.origin,
                phases = ?info.phases,
                "the recall index is ready"
            );
        }
        Err(err) => {
            tracing::warn!(%err, "the recall index could not be built; recall answers from the store's search, and the next query tries again");
        }
    }
}

/// The index a query reads: the full one under its read lock, or a provisional one made for
/// this query while the full one builds.
pub enum Held<'a> {
    /// The shared, fresh index.
    Ready(RwLockReadGuard<'a, Option<RecallIndex>>),
    /// A provisional index over the store's own search results.
    Warming(Box<RecallIndex>),
}

impl Held<'_> {
    /// Which of the two this is.
    pub fn state(&self) -> IndexState {
        match self {
            Held::Ready(_) => IndexState::Ready,
            Held::Warming(_) => IndexState::Warming,
        }
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = RecallIndex;

    fn deref(&self) -> &RecallIndex {
        match self {
            Held::Ready(guard) => guard.as_ref().expect("a ready index is present"),
            Held::Warming(index) => index,
        }
    }
}

/// The fresh shared index when there is one (brought up to the store's revision as
/// [`super::fresh`] does), else `None` with a background build started. Never builds under the
/// lock: a change that calls for a rebuild (another fit, another adapter, too many removed
/// slots) drops the index and starts the build.
///
/// # Errors
/// Store failures, and a failure applying changes (which drops the index as
/// [`super::fresh`] does).
pub fn fresh_or_start<'a>(
    shared: &'a SharedIndex,
    warmup: &Arc<Warmup>,
    store: &Arc<dyn Store>,
    configured: &Arc<dyn Embedder>,
    statuses: &[LessonStatus],
) -> Result<Option<RwLockReadGuard<'a, Option<RecallIndex>>>> {
    let revision = store.lesson_revision()?;
    let checkpoint = active_checkpoint(store.as_ref())?;
    let current = |i: &RecallIndex| i.revision >= revision && i.adapter == checkpoint;
    if let Ok(guard) = shared.read()
        && guard.as_ref().is_some_and(current)
    {
        return Ok(Some(guard));
    }
    {
        let mut guard = shared.write().unwrap_or_else(|poisoned| {
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        });
        let usable = match guard.as_mut() {
            None => Ok(false),
            Some(index) if index.adapter != checkpoint => Ok(false),
            Some(index) => index.refresh(store.as_ref(), revision),
        };
        match usable {
            Ok(true) => {
                if let (Some(index), Some(path)) = (guard.as_mut(), store.derived_path(saved::NAME))
                {
                    index.save_if_due(&path);
                }
            }
            Ok(false) => {
                *guard = None;
                drop(guard);
                shared.clear_poison();
                warmup.start(shared, store, configured, statuses);
                return Ok(None);
            }
            Err(err) => {
                *guard = None;
                return Err(err);
            }
        }
        shared.clear_poison();
    }
    Ok(shared.read().ok().filter(|g| g.is_some()))
}

/// Whether `shared` holds an index now, without waiting on a query that is updating it (an
/// update in progress means an index is there, unless a background build is what runs).
pub fn state(shared: &SharedIndex, warmup: &Warmup) -> IndexState {
    let present = match shared.try_read() {
        Ok(guard) => guard.is_some(),
        Err(TryLockError::Poisoned(_)) => false,
        Err(TryLockError::WouldBlock) => !warmup.is_building(),
    };
    if present {
        IndexState::Ready
    } else {
        IndexState::Warming
    }
}

impl RecallIndex {
    /// A small index over `lessons` alone (those the store's own search found for one query),
    /// with the stored fit's vectors where the store has them and fresh ones (not stored)
    /// where it does not. It is never saved, refreshed or shared; with no fit stored yet its
    /// vectors are the configured embedder's, unfitted.
    ///
    /// # Errors
    /// Store and embedder failures.
    pub fn provisional(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
        lessons: Vec<Lesson>,
    ) -> Result<Self> {
        let (embedder, state) = match stored_embedder(store, configured)? {
            Some(found) => found,
            None => (
                configured.clone(),
                EmbedderState {
                    base: configured.id(),
                    fitted: configured.id(),
                    fit_docs: 0,
                },
            ),
        };
        let (embedder, checkpoint) = adapted(embedder, active_adapter(store)?);
        let lessons: Vec<Lesson> = lessons
            .into_iter()
            .filter(|l| statuses.contains(&l.status))
            .collect();
        let texts: Vec<String> = lessons.iter().map(lesson_text).collect();
        let vectors = stored_or_embedded(store, embedder.as_ref(), &lessons, &texts)?;
        let mut index = Self::empty(0, embedder, state, statuses);
        index.adapter = checkpoint;
        index.origin = IndexOrigin::Warming;
        index.insert_all(lessons, &texts, &vectors);
        Ok(index)
    }
}

/// Each lesson's stored vector when it was made by `embedder` from its present text, else
/// one made now and kept only in memory: a query while warming writes nothing.
fn stored_or_embedded(
    store: &dyn Store,
    embedder: &dyn Embedder,
    lessons: &[Lesson],
    texts: &[String],
) -> Result<Vec<Vec<f32>>> {
    let id = embedder.id();
    let ids: Vec<LessonId> = lessons.iter().map(|l| l.id.clone()).collect();
    let wanted: HashMap<&LessonId, u64> = lessons
        .iter()
        .zip(texts)
        .map(|(l, text)| (&l.id, text_hash(text)))
        .collect();
    let mut stored: HashMap<LessonId, Vec<f32>> = store
        .vectors(&Scope::unrestricted(), Some(&ids))?
        .into_iter()
        .filter(|v| v.embedder == id && wanted.get(&v.lesson) == Some(&v.source_hash))
        .map(|v| (v.lesson, v.vector))
        .collect();
    lessons
        .iter()
        .zip(texts)
        .map(|(l, text)| match stored.remove(&l.id) {
            Some(vector) => Ok(vector),
            None => embedder.embed(text),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BuiltinEmbedder;
    use lore_core::ports::store::{OnDuplicate, Record};
    use lore_sqlite::{OpenMode, SqliteStore};

    fn lesson(n: usize) -> Lesson {
        let at = "2026-03-01T12:00:00Z";
        serde_json::from_value(serde_json::json!({
            "id": LessonId::generate(chrono::Utc::now()),
            "skill": "ops/deploy",
            "mistake": format!("mistake {n}"),
            "root_cause": "cause",
            "rule": format!("rule {n}: check field f{n}"),
            "applies_when": "always",
            "tiers": {"summary": format!("rule {n}"), "condition": "", "action": "", "rationale": ""},
            "confidence": 0.8,
            "source": "manual",
            "status": "approved",
            "created_at": at,
            "updated_at": at,
        }))
        .unwrap()
    }

    /// A store of `n` approved lessons, the embedder and the statuses a build reads it with.
    fn store_of(
        n: usize,
    ) -> (
        tempfile::TempDir,
        Arc<dyn Store>,
        Arc<dyn Embedder>,
        [LessonStatus; 1],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap());
        let records: Vec<Record> = (0..n).map(|n| Record::Lesson(lesson(n))).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        (dir, store, embedder, [LessonStatus::Approved])
    }

    /// The build cannot swap its index in while a query holds the lock; meanwhile the state is
    /// warming and a lesson is written. Once the build is in, the next query's index has it.
    #[test]
    fn a_lesson_written_while_the_index_builds_is_in_it_once_ready() {
        let (_dir, store, embedder, statuses) = store_of(200);
        let (shared, warmup) = (SharedIndex::default(), Arc::new(Warmup::default()));
        warmup.background();
        assert_eq!(
            state(&shared, &warmup),
            IndexState::Warming,
            "nothing built yet"
        );

        let held = shared.write().unwrap();
        warmup.start(&shared, &store, &embedder, &statuses);
        assert_eq!(state(&shared, &warmup), IndexState::Warming);
        let late = lesson(999);
        store
            .write(&[Record::Lesson(late.clone())], OnDuplicate::Fail)
            .unwrap();
        drop(held);

        while warmup.is_building() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(state(&shared, &warmup), IndexState::Ready);
        let guard = fresh_or_start(&shared, &warmup, &store, &embedder, &statuses)
            .unwrap()
            .expect("the built index is there");
        let index = guard.as_ref().unwrap();
        assert!(index.lesson(late.id.as_str()).is_some());
        assert_eq!(index.info().lessons, 201);
    }

    /// The thread each call of [`released`] ran on, in order.
    static RELEASED_ON: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    fn released() {
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_owned();
        RELEASED_ON.lock().unwrap().push(name);
    }

    /// The release runs once a build is in, on the thread that built it (where the allocator
    /// holds the build's freed pages), and the index answers afterwards as before.
    #[test]
    fn a_background_build_releases_memory_on_its_own_thread_once_done() {
        let (_dir, store, embedder, statuses) = store_of(50);
        let (shared, warmup) = (SharedIndex::default(), Arc::new(Warmup::default()));
        warmup.background();
        warmup.release_memory_with(released);

        warmup.start(&shared, &store, &embedder, &statuses);
        while warmup.is_building() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(*RELEASED_ON.lock().unwrap(), ["lore-recall-index"]);
        assert_eq!(state(&shared, &warmup), IndexState::Ready);
        let guard = fresh_or_start(&shared, &warmup, &store, &embedder, &statuses)
            .unwrap()
            .expect("the built index is there");
        assert_eq!(guard.as_ref().unwrap().info().lessons, 50);
    }

    /// A provisional index holds only the retrievable lessons it was given, with vectors, and
    /// says where it came from; making it writes nothing to the store.
    #[test]
    fn a_provisional_index_holds_what_it_was_given_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let mut lessons: Vec<Lesson> = (0..3).map(lesson).collect();
        lessons[2].status = LessonStatus::Rejected;
        let records: Vec<Record> = lessons.iter().cloned().map(Record::Lesson).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let revision = store.lesson_revision().unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        let index = RecallIndex::provisional(
            &store,
            &embedder,
            &[LessonStatus::Approved],
            lessons.clone(),
        )
        .unwrap();
        assert_eq!(index.info().origin, IndexOrigin::Warming);
        assert_eq!(index.info().lessons, 2);
        assert!(index.lesson(lessons[2].id.as_str()).is_none());
        let (slot, _) = index.lesson(lessons[0].id.as_str()).unwrap();
        assert_eq!(index.dense.vector(slot).len(), 16);
        assert!(
            store
                .vectors(&Scope::unrestricted(), None)
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.lesson_revision().unwrap(), revision);
        assert!(store.index_state("embedder").unwrap().is_none());
    }
}
