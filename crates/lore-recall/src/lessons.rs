//! The recall index: every retrievable lesson, its BM25 postings and its vector, in memory,
//! shared by all the scoped handles of one Engine and kept fresh from the store.
//!
//! The store stays the source of truth. The index is built from it on first use and, before
//! every query, compared with [`Store::lesson_revision`]: when another write (from this process
//! or another) moved the revision on, only the lessons changed since are read
//! ([`Store::lessons_changed`]) and applied: a changed lesson is removed and, if it is still
//! retrievable, added again, so a lesson retired, rejected or marked sensitive leaves the
//! results before the next query answers. Anything that goes wrong while applying changes drops
//! the whole index, to be rebuilt from the store by the next query (fail closed).
//!
//! Vectors are stored with their embedder's identity and a hash of their text
//! ([`LessonVector`]); the index reuses a stored vector only when both still match and embeds
//! (and stores) the lesson otherwise. An embedder that fits to its corpus (the builtin one's
//! IDF) has its fit frozen in the store ([`Store::index_state`]), so every process embeds new
//! lessons with the same fit and all vectors stay comparable. The fit is made on the first build
//! over the retrievable lessons, and made again, re-embedding everything, when their number has
//! grown past twice the fitted corpus (so a memory that started with a handful of lessons does
//! not keep their statistics forever); `lore reembed` does the same on request.
//!
//! A new process does not build the HNSW graph again when the store has a place for derived
//! files ([`Store::derived_path`]): the index is saved there ([`crate::saved`]) after a
//! build, during a long build after every [`CHECKPOINT`] lessons (so a process stopped midway
//! resumes from there), and after [`SAVE_AFTER`] graph insertions or a [`SAVE_SHARE`]th of
//! the file, whichever is more, and loaded on first use. A load reads the lessons from the store as a build does, keeps each saved slot whose lesson is
//! still retrievable with the same text, drops the others and inserts the lessons the file
//! lacks, so it reflects the store exactly as a build would; the kept slots' vectors and codes
//! are read in place from the mapped file, not from the store, and a process that saves reads
//! its own from the file it wrote, so vectors cost the page cache, not the process's heap. A
//! file that cannot be used (damaged, another embedder or fit, too many slots gone) is rebuilt
//! from the store with a warning.
//!
//! A server does not wait for any of this: [`Warmup`] builds the index in the background and
//! answers from the store's own search meanwhile.

mod packed;
mod warm;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;

use crate::adapter::{AdaptedEmbedder, Adapter};
use crate::applies::SkillWords;
pub use crate::render::{Shown, lesson_text};
use crate::saved::{self, EmbedderState, Header, Loaded, Slot};
use crate::{Embedder, EmbedderId, FastMap, HnswParams, SparseIndex, VectorIndex, text_hash};
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::org::Marked;
use lore_core::ports::store::{LessonVector, Store};
use lore_core::scope::{Scope, SkillPath};
pub use warm::{Held, IndexState, Warmup, fresh_or_start, state};

/// The key of the embedder's identity and fit size in [`Store::index_state`].
const EMBEDDER_KEY: &str = "embedder";
/// The key of the frozen fit itself.
const FIT_KEY: &str = "embedder_fit";

/// Every key the recall index keeps in [`Store::index_state`]: what a copy of a store carries
/// over so that its vectors stay usable.
pub const INDEX_STATE_KEYS: [&str; 2] = [EMBEDDER_KEY, FIT_KEY];

/// Lessons embedded per [`Embedder::embed_batch`] call and written per store transaction: a
/// model runs a batch in a few passes and a service in a few requests, and a progress bar
/// still moves every few seconds with a model on a CPU.
const WRITE_BATCH: usize = 256;

/// A fit is made again once the retrievable lessons outnumber twice its corpus plus this.
const REFIT_SLACK: usize = 64;

/// Graph insertions after which the index is saved again: inserting this many at the next
/// start costs about a second at 100k lessons, as much as writing the file.
const SAVE_AFTER: usize = 1000;

/// Beyond [`SAVE_AFTER`], the index is saved again once it has grown by this share of what
/// the file holds: the file holds every vector (a kilobyte and more a lesson), so writing it
/// costs in proportion to its size, and this keeps that cost per insertion the same at any
/// size.
const SAVE_SHARE: usize = 20;

/// Lessons a build (or a load that has many to add) inserts between two saves of its progress:
/// a process stopped mid-build, killed or upgraded, resumes from the last save instead of
/// starting again. About a minute of building at a million lessons on two cores, against a
/// second or so to write the file.
const CHECKPOINT: usize = 100_000;

/// How the Engine's recall index came to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum IndexOrigin {
    /// Built from the store.
    Built,
    /// Loaded from the file beside the store: `kept` saved slots still matched the store,
    /// `dropped` did not (their lesson changed, left or was purged since), and `added` lessons
    /// were inserted because the file lacked them.
    Loaded {
        /// Saved slots whose lesson was unchanged.
        kept: usize,
        /// Saved slots whose lesson changed, left the retrievable statuses or was purged.
        dropped: usize,
        /// Retrievable lessons the file lacked.
        added: usize,
    },
    /// Made for one query from the lessons the store's own search found, while the full index
    /// builds in the background ([`Warmup`]).
    Warming,
}

/// Milliseconds each part of making the index took (zero for a part it did not do): what a
/// cold start spends, so an operator can tell reading the store from building the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Phases {
    /// Reading the lessons from the store (and the saved file, for a load).
    pub read_ms: u64,
    /// Reading their stored vectors, and embedding (and storing) those that lacked one.
    pub vectors_ms: u64,
    /// Adding their words to BM25.
    pub sparse_ms: u64,
    /// Adding their vectors to the dense index: the HNSW graph, built or restored.
    pub graph_ms: u64,
}

/// Milliseconds since `start`.
fn ms_since(start: std::time::Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// What the Engine's recall index holds now (see [`super::Engine::recall_index_info`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexInfo {
    /// Built or loaded.
    pub origin: IndexOrigin,
    /// The store revision it reflects.
    pub revision: u64,
    /// Live lessons.
    pub lessons: usize,
    /// Slots, live or removed.
    pub slots: usize,
    /// Whether dense search walks an HNSW graph (else it scans exactly).
    pub graph: bool,
    /// What making it took, part by part.
    pub phases: Phases,
}

/// What the recall index holds, part by part, in bytes: where a server's memory per lesson
/// goes (`lore bench stores` reports it beside the process's resident memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexMemory {
    /// The lessons: each one's entry (ID, skill, organization mark) and the rest of it packed.
    pub lessons: usize,
    /// Renderings made by queries that found their lesson, or that weighed a condition of its
    /// skill ([`Doc::shown`]): their texts and stems.
    pub shown: usize,
    /// BM25: postings, vocabulary, per-document terms.
    pub sparse: usize,
    /// Lesson IDs to slots, skills, triggers and tags.
    pub lookup: usize,
    /// The vector index in memory: float vectors, int8 codes and graph links.
    pub vectors: crate::VectorMemory,
}

impl IndexMemory {
    /// Bytes held in memory (not the mapped file's).
    pub fn heap(&self) -> usize {
        self.lessons
            + self.shown
            + self.sparse
            + self.lookup
            + self.vectors.vectors
            + self.vectors.codes
            + self.vectors.graph
    }
}

/// One lesson in the index: what every search reads of it (its ID, skill and organization
/// mark) and the rest packed ([`packed`]), which [`RecallIndex::full`] unpacks for the few
/// candidates of a query that need it.
#[derive(Debug)]
pub struct Doc {
    /// The lesson's ID.
    pub id: LessonId,
    /// Its interned skill.
    pub skill: u32,
    /// Its organization mark, read once here; `None` for an unmarked (shared) lesson.
    mark: Option<Box<Marked>>,
    /// The rest of the lesson as [`packed::pack`] wrote it.
    packed: Box<[u8]>,
    /// Its rendering for recall, made by the first query that finds it; boxed, so that a
    /// lesson no query has found yet costs a pointer, not the rendering's fields.
    pub shown: OnceLock<Box<Shown>>,
}

impl Doc {
    /// Whether a handle of `scope` may see this lesson ([`lore_core::org::visible`]).
    pub fn visible(&self, scope: &Scope) -> bool {
        match &self.mark {
            None => true,
            Some(mark) => lore_core::org::visible_marked(mark, scope),
        }
    }

    /// Bytes held besides the entry itself: the ID, the mark and the packed lesson.
    fn heap_bytes(&self) -> usize {
        self.id.as_str().len()
            + self.packed.len()
            + self.mark.as_ref().map_or(0, |_| size_of::<Marked>())
    }
}

/// The in-memory index. Slots are shared by the sparse and dense indexes.
pub struct RecallIndex {
    /// The store's lesson revision this index reflects.
    pub revision: u64,
    /// The embedder (as fitted) that made the vectors.
    pub embedder: Arc<dyn Embedder>,
    /// The embedder as configured and as fitted, saved with the index.
    pub state: EmbedderState,
    /// The active checkpoint whose adapter `embedder` applies, if any.
    pub adapter: Option<String>,
    statuses: Vec<LessonStatus>,
    docs: Vec<Option<Doc>>,
    /// Per slot, the live lesson's interned skill or [`NO_SKILL`]: what every search's filter
    /// reads, kept apart from the lessons so that it stays in cache.
    slot_skills: Vec<u32>,
    /// Per lesson ID's hash, its slot: the ID itself is the slot's own ([`Doc::id`]), so this
    /// holds eight bytes of it rather than a copy. An ID whose hash another live lesson's
    /// already has is kept whole in `by_id_rest` (a pair in some 10^7 at a million lessons).
    by_id: FastMap<u64, u32>,
    by_id_rest: HashMap<String, u32>,
    /// BM25 over the lessons' words.
    pub sparse: SparseIndex,
    /// The lessons' vectors, exact below a size and HNSW above it.
    pub dense: VectorIndex,
    skills: Vec<SkillPath>,
    skill_ids: HashMap<SkillPath, u32>,
    /// Live slots per skill, to size a restricted search.
    skill_counts: Vec<usize>,
    /// Per skill, how many of its live lessons carry each word, made by the first recall that
    /// weighs a condition of the skill and dropped when a lesson of it comes or goes.
    skill_words: Vec<OnceLock<SkillWords>>,
    triggers: HashMap<String, Vec<u32>>,
    tags: HashMap<String, Vec<u32>>,
    origin: IndexOrigin,
    /// Slots the file beside the store already has (slots are only ever appended).
    saved_slots: usize,
    phases: Phases,
}

/// The key of a lesson ID in [`RecallIndex::by_id`]: fixed, so that a collision found once
/// is found the same way every time.
fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x1e55_0115).hash_one(id)
}

/// [`RecallIndex::slot_skills`] of a removed slot.
const NO_SKILL: u32 = u32::MAX;

/// The index of one Engine and its scoped handles; `None` until first used or after a failure.
pub type SharedIndex = Arc<RwLock<Option<RecallIndex>>>;

/// Reads the stored embedder state.
pub fn stored_state(store: &dyn Store) -> Result<Option<EmbedderState>> {
    let Some(raw) = store.index_state(EMBEDDER_KEY)? else {
        return Ok(None);
    };
    serde_json::from_slice(&raw)
        .map(Some)
        .map_err(|e| Error::Incompatible(format!("the stored embedder state cannot be read: {e}")))
}

/// Refuses a configured embedder that is not the one the stored vectors were made with.
fn check_base(state: &EmbedderState, configured: &EmbedderId) -> Result<()> {
    if &state.base == configured {
        return Ok(());
    }
    Err(Error::Incompatible(format!(
        "the stored lesson vectors were made by {}, but recall is configured with {}; \
         query with {} or run `lore reembed --embedder NAME` to re-embed every lesson",
        state.base, configured, state.base.name
    )))
}

/// The embedder the stored vectors were made with, restored from its frozen fit; `None` when
/// the store has no embedder state yet.
///
/// # Errors
/// [`Error::Incompatible`] when `configured` is another embedder, or the fit is unreadable.
pub fn stored_embedder(
    store: &dyn Store,
    configured: &Arc<dyn Embedder>,
) -> Result<Option<(Arc<dyn Embedder>, EmbedderState)>> {
    let Some(state) = stored_state(store)? else {
        return Ok(None);
    };
    check_base(&state, &configured.id())?;
    let embedder = match store.index_state(FIT_KEY)? {
        Some(fit) if state.fitted != state.base => configured.restore(&fit)?,
        _ => configured.clone(),
    };
    if embedder.id() != state.fitted {
        return Err(Error::Incompatible(format!(
            "the stored fit restores {}, but the vectors name {}",
            embedder.id(),
            state.fitted
        )));
    }
    Ok(Some((embedder, state)))
}

/// Fits `configured` to `texts` (when it fits at all) and stores the fit and its identity.
fn fit_and_store(
    store: &dyn Store,
    configured: &Arc<dyn Embedder>,
    texts: &[&str],
) -> Result<(Arc<dyn Embedder>, EmbedderState)> {
    let embedder = configured.fit(texts).unwrap_or_else(|| configured.clone());
    let state = EmbedderState {
        base: configured.id(),
        fitted: embedder.id(),
        fit_docs: texts.len(),
    };
    if let Some(fit) = embedder.fit_state() {
        store.set_index_state(FIT_KEY, &fit)?;
    }
    let json = serde_json::to_vec(&state).map_err(|e| Error::Store(Box::new(e)))?;
    store.set_index_state(EMBEDDER_KEY, &json)?;
    Ok((embedder, state))
}

/// Embeds `lessons` with `embedder` and stores the vectors, calling `progress(done)` as it goes.
pub fn embed_and_store(
    store: &dyn Store,
    embedder: &dyn Embedder,
    lessons: &[&Lesson],
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<Vec<f32>>> {
    let id = embedder.id();
    let mut out = Vec::with_capacity(lessons.len());
    for chunk in lessons.chunks(WRITE_BATCH) {
        let texts: Vec<String> = chunk.iter().map(|l| lesson_text(l)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_batch(&refs)?;
        if vectors.len() != chunk.len() {
            return Err(Error::Incompatible(format!(
                "{id} returned {} vectors for {} texts",
                vectors.len(),
                chunk.len()
            )));
        }
        let batch: Vec<LessonVector> = chunk
            .iter()
            .zip(&texts)
            .zip(vectors)
            .map(|((lesson, text), vector)| LessonVector {
                lesson: lesson.id.clone(),
                embedder: id.clone(),
                source_hash: text_hash(text),
                vector,
            })
            .collect();
        store.put_vectors(&batch)?;
        out.extend(batch.into_iter().map(|v| v.vector));
        progress(out.len());
    }
    Ok(out)
}

/// Fits `configured` again to the retrievable lessons and re-embeds every lesson with it.
/// Returns the fitted identity and how many lessons were embedded.
pub fn reembed(
    store: &dyn Store,
    configured: &Arc<dyn Embedder>,
    statuses: &[LessonStatus],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(EmbedderId, usize)> {
    let all = store.lessons_changed(&Scope::unrestricted(), 0)?.lessons;
    let texts: Vec<String> = all
        .iter()
        .filter(|l| statuses.contains(&l.status))
        .map(lesson_text)
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (embedder, state) = fit_and_store(store, configured, &refs)?;
    let lessons: Vec<&Lesson> = all.iter().collect();
    let total = lessons.len();
    progress(0, total);
    embed_and_store(store, embedder.as_ref(), &lessons, &mut |done| {
        progress(done, total)
    })?;
    Ok((state.fitted, total))
}

/// The vectors of `lessons` (whose texts are `texts`): the stored ones where embedder and text
/// still match, the rest embedded now and stored. `all` reads every stored vector at once (a
/// build) instead of asking for these lessons' (a refresh).
fn vectors_for(
    store: &dyn Store,
    embedder: &dyn Embedder,
    lessons: &[Lesson],
    texts: &[String],
    all: bool,
) -> Result<Vec<Vec<f32>>> {
    let id = embedder.id();
    let ids: Vec<LessonId> = if all {
        Vec::new()
    } else {
        lessons.iter().map(|l| l.id.clone()).collect()
    };
    let mut stored: HashMap<LessonId, LessonVector> = store
        .vectors(&Scope::unrestricted(), (!all).then_some(ids.as_slice()))?
        .into_iter()
        .filter(|v| v.embedder == id)
        .map(|v| (v.lesson.clone(), v))
        .collect();
    let found: Vec<Option<Vec<f32>>> = lessons
        .iter()
        .zip(texts)
        .map(|(l, t)| {
            stored
                .remove(&l.id)
                .filter(|v| v.source_hash == text_hash(t))
                .map(|v| v.vector)
        })
        .collect();
    let missing: Vec<&Lesson> = lessons
        .iter()
        .zip(&found)
        .filter(|(_, v)| v.is_none())
        .map(|(l, _)| l)
        .collect();
    let mut made = embed_and_store(store, embedder, &missing, &mut |_| {})?.into_iter();
    Ok(found
        .into_iter()
        .map(|v| v.unwrap_or_else(|| made.next().expect("every missing vector was made")))
        .collect())
}

/// Whether a fit made on `fit_docs` lessons is due again with `docs` retrievable ones.
fn refit_due(embedder: &dyn Embedder, fit_docs: usize, docs: usize) -> bool {
    embedder.fit_state().is_some() && docs > 2 * fit_docs + REFIT_SLACK
}

impl RecallIndex {
    /// Builds the index from the store: every lesson in `statuses`, with its vector, through
    /// the store's active adapter if it has one. With a place for derived files, the progress
    /// is saved there as it goes ([`CHECKPOINT`]).
    pub fn build(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
    ) -> Result<Self> {
        Self::build_with(store, configured, statuses, active_adapter(store)?)
    }

    /// Builds the index as [`RecallIndex::build`] does, with `adapter` on top of the fitted
    /// base embedder (none: the base alone). Lessons whose stored vector another embedder
    /// made are embedded again, so the index never holds two embedders' vectors.
    pub fn build_with(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
        adapter: Option<Arc<Adapter>>,
    ) -> Result<Self> {
        Self::build_reporting(
            store,
            configured,
            statuses,
            adapter,
            CHECKPOINT,
            &mut |_| {},
        )
    }

    /// [`RecallIndex::build_with`], saving after every `every` lessons and calling `progress`
    /// with the slots saved after each save.
    fn build_reporting(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
        adapter: Option<Arc<Adapter>>,
        every: usize,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Self> {
        let started = std::time::Instant::now();
        let changes = store.lessons_changed(&Scope::unrestricted(), 0)?;
        let lessons: Vec<Lesson> = changes
            .lessons
            .into_iter()
            .filter(|l| statuses.contains(&l.status))
            .collect();
        let texts: Vec<String> = lessons.iter().map(lesson_text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let read_ms = ms_since(started);
        let started = std::time::Instant::now();
        let (embedder, state) = match stored_embedder(store, configured)? {
            Some((embedder, state))
                if !refit_due(embedder.as_ref(), state.fit_docs, refs.len()) =>
            {
                (embedder, state)
            }
            _ => fit_and_store(store, configured, &refs)?,
        };
        let (embedder, checkpoint) = adapted(embedder, adapter);
        let vectors = vectors_for(store, embedder.as_ref(), &lessons, &texts, true)?;
        let mut index = Self::empty(changes.revision, embedder, state, statuses);
        index.phases.read_ms = read_ms;
        index.phases.vectors_ms = ms_since(started);
        index.adapter = checkpoint;
        index.insert_saving(store, lessons, &texts, &vectors, every, progress);
        index.settle();
        Ok(index)
    }

    fn empty(
        revision: u64,
        embedder: Arc<dyn Embedder>,
        state: EmbedderState,
        statuses: &[LessonStatus],
    ) -> Self {
        Self {
            revision,
            dense: VectorIndex::new(embedder.id().dim),
            adapter: None,
            embedder,
            state,
            statuses: statuses.to_vec(),
            docs: Vec::new(),
            slot_skills: Vec::new(),
            by_id: FastMap::default(),
            by_id_rest: HashMap::new(),
            sparse: SparseIndex::with_idf_floor(crate::calibrate::IDF_FLOOR_DOCS),
            skills: Vec::new(),
            skill_ids: HashMap::new(),
            skill_counts: Vec::new(),
            skill_words: Vec::new(),
            triggers: HashMap::new(),
            tags: HashMap::new(),
            origin: IndexOrigin::Built,
            saved_slots: 0,
            phases: Phases::default(),
        }
    }

    /// The index from the file beside the store when there is a usable one, else built.
    pub fn open(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
    ) -> Result<Self> {
        Self::open_reporting(store, configured, statuses, CHECKPOINT, &mut |_| {})
    }

    /// [`RecallIndex::open`], saving and reporting as [`RecallIndex::build_reporting`].
    fn open_reporting(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
        every: usize,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Self> {
        // The file holds a graph over the base embedder's vectors only.
        let path = match active_checkpoint(store)? {
            None => store.derived_path(saved::NAME),
            Some(_) => None,
        };
        if let Some(path) = path {
            let why = match saved::read(&path) {
                Ok(None) => None,
                Ok(Some(loaded)) => {
                    match Self::load(store, configured, statuses, loaded, every, progress)? {
                        Ok(index) => return Ok(index),
                        Err(why) => Some(why),
                    }
                }
                Err(why) => Some(format!("the file {why}")),
            };
            if let Some(why) = why {
                tracing::warn!(path = %path.display(), %why, "rebuilding the recall index from the store");
            }
        }
        let adapter = active_adapter(store)?;
        Self::build_reporting(store, configured, statuses, adapter, every, progress)
    }

    /// The index `loaded` describes, checked slot by slot against the store and brought up
    /// to date with it; `Ok(Err(why))` when it cannot be used.
    fn load(
        store: &dyn Store,
        configured: &Arc<dyn Embedder>,
        statuses: &[LessonStatus],
        loaded: Loaded,
        every: usize,
        progress: &mut dyn FnMut(usize),
    ) -> Result<std::result::Result<Self, String>> {
        let Loaded {
            header,
            slots,
            graph,
            mapped,
            ..
        } = loaded;
        let Some(mapped) = mapped else {
            return Ok(Err("the file lays out no vectors".into()));
        };
        let Some((embedder, state)) = stored_embedder(store, configured)? else {
            return Ok(Err("the store has no embedder state".into()));
        };
        let started = std::time::Instant::now();
        let changes = store.lessons_changed(&Scope::unrestricted(), 0)?;
        let mut lessons: Vec<Option<Lesson>> = changes
            .lessons
            .into_iter()
            .filter(|l| statuses.contains(&l.status))
            .map(Some)
            .collect();
        if header.state != state
            || header.dim != state.fitted.dim
            || header.statuses != statuses
            || refit_due(embedder.as_ref(), state.fit_docs, lessons.len())
        {
            return Ok(Err(format!(
                "the file was made by {} for other settings than {}'s",
                header.state.fitted, state.fitted
            )));
        }
        let position: HashMap<String, usize> = lessons
            .iter()
            .enumerate()
            .map(|(i, l)| (l.as_ref().expect("all present").id.to_string(), i))
            .collect();
        // Each saved slot keeps its lesson only if the store still has it, retrievable, with
        // the text its vector was made from.
        let mut claimed: Vec<Option<(Lesson, String)>> = Vec::with_capacity(slots.len());
        for slot in &slots {
            let lesson = position
                .get(&slot.id)
                .and_then(|&i| {
                    let text = lesson_text(lessons[i].as_ref()?);
                    (text_hash(&text) == slot.hash).then_some((i, text))
                })
                .and_then(|(i, text)| Some((lessons[i].take()?, text)));
            claimed.push(lesson);
        }
        let kept = claimed.iter().flatten().count();
        if slots.len() > 2 * kept + 1024 {
            return Ok(Err(format!(
                "only {kept} of its {} slots still match the store",
                slots.len()
            )));
        }
        let dim = state.fitted.dim;
        let mut index = Self::empty(changes.revision, embedder, state, statuses);
        // The kept slots' vectors are the file's, read in place: each was made by this
        // embedder and fit (the header matched the store's) from the text whose hash the slot
        // matched, as the store's own vector for the lesson was.
        index.phases.read_ms = ms_since(started);
        let started = std::time::Instant::now();
        let mut live = Vec::with_capacity(slots.len());
        for entry in claimed {
            let slot = match entry {
                Some((lesson, text)) => {
                    let slot = index.sparse.add(&text);
                    index.register(slot, lesson);
                    slot
                }
                None => {
                    // A removed slot: the graph still walks through it, never returns it.
                    let slot = index.sparse.add("");
                    index.sparse.remove(slot);
                    index.docs.push(None);
                    index.slot_skills.push(NO_SKILL);
                    slot
                }
            };
            live.push(index.docs[slot as usize].is_some());
        }
        index.phases.sparse_ms = ms_since(started);
        let started = std::time::Instant::now();
        // The graph keeps the shape it was built with (a release that changes the defaults
        // does not rebuild it); searches take this release's effort.
        let params = HnswParams {
            m: header.params.m,
            ef_construction: header.params.ef_construction,
            ..HnswParams::default()
        };
        let Some(dense) =
            VectorIndex::restore_mapped(dim, params, &mapped.file, mapped.at, live, graph)
        else {
            return Ok(Err("its graph or vectors do not fit its slots".into()));
        };
        index.dense = dense;
        index.phases.graph_ms = ms_since(started);
        index.saved_slots = slots.len();
        let added: Vec<Lesson> = lessons.into_iter().flatten().collect();
        let origin = IndexOrigin::Loaded {
            kept,
            dropped: slots.len() - kept,
            added: added.len(),
        };
        if !added.is_empty() {
            // A build stopped midway left this file: the rest goes in with saves as it goes.
            let texts: Vec<String> = added.iter().map(lesson_text).collect();
            let vectors = vectors_for(store, index.embedder.as_ref(), &added, &texts, false)?;
            index.insert_saving(store, added, &texts, &vectors, every, progress);
        }
        index.origin = origin;
        index.settle();
        Ok(Ok(index))
    }

    /// Writes the index beside the store when it has a graph worth keeping and enough of it
    /// is new since the last save; a failure only costs the next process time.
    fn save_if_due(&mut self, path: &Path) {
        let after = SAVE_AFTER.max(self.saved_slots / SAVE_SHARE);
        if self.sparse.slots() >= self.saved_slots + after {
            self.save(path);
        }
    }

    /// Writes the index beside the store when it has a graph over the base embedder's vectors
    /// (an adapter's are never saved); a failure only costs the next process time.
    fn save(&mut self, path: &Path) {
        if self.adapter.is_some() || self.dense.graph().is_none() {
            return;
        }
        let slots: Vec<Slot> = self
            .docs
            .iter()
            .map(|doc| match doc {
                Some(d) => Slot {
                    id: d.id.to_string(),
                    hash: text_hash(&lesson_text(&self.full(d))),
                },
                None => Slot {
                    id: String::new(),
                    hash: 0,
                },
            })
            .collect();
        let header = Header {
            revision: self.revision,
            state: self.state.clone(),
            statuses: self.statuses.clone(),
            params: self.dense.params(),
            dim: self.dense.dim(),
            slots: slots.len(),
        };
        match saved::write_mapped(path, &header, &slots, self.dense.graph(), self.dense.rows()) {
            Ok(rows) => {
                self.saved_slots = slots.len();
                // The file holds the vectors and codes just written: read them from there.
                self.dense.adopt(&rows.file, slots.len(), rows.at);
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "the recall index was not saved");
            }
        }
    }

    /// What the index holds, part by part; walks every lesson, so it is for a measurement,
    /// not a hot path.
    pub fn memory(&self) -> IndexMemory {
        let lessons = self
            .docs
            .iter()
            .flatten()
            .map(Doc::heap_bytes)
            .sum::<usize>()
            + self.docs.capacity() * size_of::<Option<Doc>>();
        let shown = self
            .docs
            .iter()
            .flatten()
            .filter_map(|d| d.shown.get())
            .map(|s| s.heap_bytes())
            .sum();
        let slots = |m: &HashMap<String, Vec<u32>>| {
            m.iter()
                .map(|(k, v)| k.capacity() + 4 * v.capacity())
                .sum::<usize>()
                + m.capacity() * (size_of::<(String, Vec<u32>)>() + 1)
        };
        let lookup = self.by_id.capacity() * (size_of::<(u64, u32)>() + 1)
            + self.by_id_rest.keys().map(String::capacity).sum::<usize>()
            + self.by_id_rest.capacity() * (size_of::<(String, u32)>() + 1)
            + 4 * self.slot_skills.capacity()
            + slots(&self.triggers)
            + slots(&self.tags);
        IndexMemory {
            lessons,
            shown,
            sparse: self.sparse.heap_bytes(),
            lookup,
            vectors: self.dense.memory(),
        }
    }

    /// What the index holds now.
    pub fn info(&self) -> IndexInfo {
        IndexInfo {
            origin: self.origin.clone(),
            revision: self.revision,
            lessons: self.sparse.len(),
            slots: self.sparse.slots(),
            graph: self.dense.graph().is_some(),
            phases: self.phases.clone(),
        }
    }

    /// Applies the lessons changed since this index's revision. `Ok(false)` when the index must
    /// be built again instead: another process changed the embedder's fit, a refit is due, or
    /// removed slots outnumber live ones.
    pub fn refresh(&mut self, store: &dyn Store, revision: u64) -> Result<bool> {
        if revision == self.revision {
            return Ok(true);
        }
        if stored_state(store)?.as_ref() != Some(&self.state) {
            return Ok(false);
        }
        let changes = store.lessons_changed(&Scope::unrestricted(), self.revision)?;
        let mut added: Vec<Lesson> = Vec::new();
        for lesson in changes.lessons {
            if let Some(slot) = self.take_slot(lesson.id.as_str()) {
                self.remove(slot);
            }
            if self.statuses.contains(&lesson.status) {
                added.push(lesson);
            }
        }
        if !added.is_empty() {
            self.add_with_vectors(store, added)?;
        }
        self.revision = changes.revision;
        let live = self.sparse.len();
        let rebuild = refit_due(self.embedder.as_ref(), self.state.fit_docs, live)
            || self.sparse.slots() > 2 * live + 1024;
        Ok(!rebuild)
    }

    fn add_with_vectors(&mut self, store: &dyn Store, lessons: Vec<Lesson>) -> Result<()> {
        let texts: Vec<String> = lessons.iter().map(lesson_text).collect();
        let vectors = vectors_for(store, self.embedder.as_ref(), &lessons, &texts, false)?;
        self.insert_all(lessons, &texts, &vectors);
        Ok(())
    }

    /// Adds `lessons` with their texts and vectors, saving the index beside the store after
    /// every `every` of them when there are more than that (and a place to save), then calling
    /// `progress` with the slots saved.
    fn insert_saving(
        &mut self,
        store: &dyn Store,
        lessons: Vec<Lesson>,
        texts: &[String],
        vectors: &[Vec<f32>],
        every: usize,
        progress: &mut dyn FnMut(usize),
    ) {
        let path = store.derived_path(saved::NAME);
        let Some(path) = path.filter(|_| lessons.len() > every) else {
            self.insert_all(lessons, texts, vectors);
            return;
        };
        let mut lessons = lessons.into_iter();
        for (texts, vectors) in texts.chunks(every).zip(vectors.chunks(every)) {
            let chunk: Vec<Lesson> = lessons.by_ref().take(texts.len()).collect();
            self.insert_all(chunk, texts, vectors);
            self.save(&path);
            progress(self.saved_slots);
        }
    }

    /// Adds `lessons` with their texts and vectors; the graph takes the vectors in parallel
    /// batches.
    fn insert_all(&mut self, lessons: Vec<Lesson>, texts: &[String], vectors: &[Vec<f32>]) {
        let first = self.sparse.slots();
        let started = std::time::Instant::now();
        for (lesson, text) in lessons.into_iter().zip(texts) {
            let slot = self.sparse.add(text);
            self.register(slot, lesson);
        }
        self.phases.sparse_ms += ms_since(started);
        let started = std::time::Instant::now();
        let dense_first = self.dense.add_many(vectors);
        self.phases.graph_ms += ms_since(started);
        debug_assert_eq!(
            first, dense_first as usize,
            "the sparse and dense slots agree"
        );
    }

    /// Records `lesson` as the live lesson of the newest `slot`: its skill, triggers and tags.
    fn register(&mut self, slot: u32, lesson: Lesson) {
        debug_assert_eq!(
            slot as usize,
            self.docs.len(),
            "slots are registered in order"
        );
        let next = self.skills.len() as u32;
        let skill = *self.skill_ids.entry(lesson.skill.clone()).or_insert(next);
        if skill == next {
            self.skills.push(lesson.skill.clone());
            self.skill_counts.push(0);
            self.skill_words.push(OnceLock::new());
        }
        self.skill_counts[skill as usize] += 1;
        self.skill_words[skill as usize] = OnceLock::new();
        for t in &lesson.triggers {
            self.triggers.entry(t.clone()).or_default().push(slot);
        }
        let mut tags: Vec<&String> = lesson.tags.iter().collect();
        tags.sort();
        tags.dedup();
        for t in tags {
            self.tags.entry(t.clone()).or_default().push(slot);
        }
        self.put_slot(lesson.id.as_str(), slot);
        let mark = match lore_core::org::mark(&lesson) {
            Marked::Shared => None,
            marked => Some(Box::new(marked)),
        };
        self.docs.push(Some(Doc {
            packed: packed::pack(&lesson),
            id: lesson.id,
            skill,
            mark,
            shown: OnceLock::new(),
        }));
        self.slot_skills.push(skill);
    }

    fn remove(&mut self, slot: u32) {
        self.sparse.remove(slot);
        self.dense.remove(slot);
        if let Some(doc) = self.docs[slot as usize].take() {
            self.skill_counts[doc.skill as usize] -= 1;
            self.skill_words[doc.skill as usize] = OnceLock::new();
        }
        self.slot_skills[slot as usize] = NO_SKILL;
    }

    /// The live lesson in `slot`.
    pub fn doc(&self, slot: u32) -> Option<&Doc> {
        self.docs.get(slot as usize).and_then(Option::as_ref)
    }

    /// The live lesson `id`, with its slot.
    pub fn lesson(&self, id: &str) -> Option<(u32, Lesson)> {
        let slot = self.slot_of(id)?;
        self.doc(slot).map(|d| (slot, self.full(d)))
    }

    /// The slot of the live lesson `id`.
    fn slot_of(&self, id: &str) -> Option<u32> {
        match self.by_id.get(&id_hash(id)) {
            Some(&slot) if self.doc(slot).is_some_and(|d| d.id.as_str() == id) => Some(slot),
            _ => self.by_id_rest.get(id).copied(),
        }
    }

    /// Forgets the slot of the live lesson `id`, and returns it.
    fn take_slot(&mut self, id: &str) -> Option<u32> {
        let hash = id_hash(id);
        match self.by_id.get(&hash) {
            Some(&slot) if self.doc(slot).is_some_and(|d| d.id.as_str() == id) => {
                self.by_id.remove(&hash);
                Some(slot)
            }
            _ => self.by_id_rest.remove(id),
        }
    }

    /// Records `slot` as the live lesson `id`'s, before its entry is pushed.
    fn put_slot(&mut self, id: &str, slot: u32) {
        let hash = id_hash(id);
        match self.by_id.get(&hash) {
            Some(&other) if self.doc(other).is_some() => {
                self.by_id_rest.insert(id.to_owned(), slot);
            }
            _ => {
                self.by_id.insert(hash, slot);
            }
        }
    }

    /// Frees what a bulk of insertions left the lists holding beyond their length (a list
    /// doubles as it grows): for the end of a build or a load, not after every refresh.
    fn settle(&mut self) {
        self.sparse.shrink_to_fit();
        self.docs.shrink_to_fit();
        self.slot_skills.shrink_to_fit();
        self.by_id.shrink_to_fit();
        for slots in self.triggers.values_mut().chain(self.tags.values_mut()) {
            slots.shrink_to_fit();
        }
    }

    /// The whole lesson `doc` holds, unpacked.
    pub fn full(&self, doc: &Doc) -> Lesson {
        packed::unpack(&doc.packed, &doc.id, &self.skills[doc.skill as usize])
            .expect("the index unpacks only what it packed")
    }

    /// Per interned skill, whether `allows` accepts it; and how many live lessons that admits.
    pub fn skill_mask(&self, allows: impl Fn(&SkillPath) -> bool) -> (Vec<bool>, usize) {
        let mask: Vec<bool> = self.skills.iter().map(allows).collect();
        let count = mask
            .iter()
            .zip(&self.skill_counts)
            .filter(|(ok, _)| **ok)
            .map(|(_, n)| n)
            .sum();
        (mask, count)
    }

    /// How many of the live lessons of the skill of `doc` carry each word ([`SkillWords`]).
    pub fn skill_words(&self, doc: &Doc) -> &SkillWords {
        self.skill_words[doc.skill as usize].get_or_init(|| {
            let docs = self
                .slot_skills
                .iter()
                .zip(&self.docs)
                .filter(|(skill, _)| **skill == doc.skill)
                .filter_map(|(_, d)| d.as_ref());
            // Lessons no query has shown yet are not rendered for this: their stems are made
            // and dropped, so that weighing a skill's words does not keep a rendering of every
            // lesson of the skill (at a store of one skill, every lesson's, a kilobyte each).
            let made: Vec<HashSet<String>> = docs
                .clone()
                .filter(|d| d.shown.get().is_none())
                .map(|d| Shown::stems_of(&self.full(d)))
                .collect();
            SkillWords::of(
                docs.filter_map(|d| d.shown.get())
                    .map(|s| &s.stems)
                    .chain(&made),
            )
        })
    }

    /// Whether `slot` holds a live lesson whose skill `mask` admits.
    pub fn admits(&self, mask: &[bool], slot: u32) -> bool {
        self.slot_skills
            .get(slot as usize)
            .and_then(|&skill| mask.get(skill as usize))
            .copied()
            .unwrap_or(false)
    }

    /// Live slots of lessons with trigger `t`.
    pub fn with_trigger(&self, t: &str) -> &[u32] {
        self.triggers.get(t).map_or(&[], Vec::as_slice)
    }

    /// Live or removed slots of lessons with tag `t` (check with [`RecallIndex::doc`]).
    pub fn with_tag(&self, t: &str) -> &[u32] {
        self.tags.get(t).map_or(&[], Vec::as_slice)
    }
}

/// The fresh index for a query: built on first use, brought up to the store's revision, and
/// dropped (to be rebuilt) when anything fails on the way.
pub fn fresh<'a>(
    shared: &'a SharedIndex,
    store: &dyn Store,
    configured: &Arc<dyn Embedder>,
    statuses: &[LessonStatus],
) -> Result<RwLockReadGuard<'a, Option<RecallIndex>>> {
    let revision = store.lesson_revision()?;
    let checkpoint = active_checkpoint(store)?;
    if let Ok(guard) = shared.read()
        && guard
            .as_ref()
            .is_some_and(|i| i.revision >= revision && i.adapter == checkpoint)
    {
        return Ok(guard);
    }
    {
        let mut guard: RwLockWriteGuard<'_, Option<RecallIndex>> =
            shared.write().unwrap_or_else(|poisoned| {
                // A panic mid-update may have left it half applied: start again.
                let mut guard = poisoned.into_inner();
                *guard = None;
                guard
            });
        let first = guard.is_none();
        let current = match guard.as_mut() {
            // Another process switched the adapter: every vector changes.
            Some(index) if index.adapter != checkpoint => Ok(false),
            Some(index) => index.refresh(store, revision),
            None => Ok(false),
        };
        match current {
            Ok(true) => {}
            Ok(false) => {
                *guard = None;
                *guard = Some(if first {
                    RecallIndex::open(store, configured, statuses)?
                } else {
                    RecallIndex::build(store, configured, statuses)?
                });
            }
            Err(err) => {
                *guard = None;
                return Err(err);
            }
        }
        if let (Some(index), Some(path)) = (guard.as_mut(), store.derived_path(saved::NAME)) {
            index.save_if_due(&path);
        }
        shared.clear_poison();
    }
    shared.read().map_err(|_| {
        Error::Store(Box::new(std::io::Error::other(
            "the recall index failed while being updated; the next query rebuilds it",
        )))
    })
}

/// The checkpoint the store says recall applies; `None` for the base alone, and from a store
/// that keeps no tuning.
///
/// # Errors
/// Store failures.
pub fn active_checkpoint(store: &dyn Store) -> Result<Option<String>> {
    match store.tuning() {
        Ok(tuning) => Ok(tuning.active_checkpoint()?.map(|id| id.to_string())),
        Err(Error::Unsupported(_)) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The store's active adapter, read with its weights.
///
/// # Errors
/// Store failures; [`Error::Incompatible`] for weights of the wrong size.
pub fn active_adapter(store: &dyn Store) -> Result<Option<Arc<Adapter>>> {
    let Ok(tuning) = store.tuning() else {
        return Ok(None);
    };
    let Some(id) = tuning.active_checkpoint()? else {
        return Ok(None);
    };
    let checkpoint = tuning
        .checkpoint(&id)?
        .ok_or_else(|| Error::not_found("checkpoint", &id))?;
    Adapter::new(id.to_string(), checkpoint.base, checkpoint.weights).map(|a| Some(Arc::new(a)))
}

/// `embedder` with `adapter` on top, and the adapter's checkpoint. An adapter trained on
/// another fit than the stored one is left off with a warning: recall keeps working with the
/// base alone rather than failing, and `lore embedder status` shows the mismatch.
fn adapted(
    embedder: Arc<dyn Embedder>,
    adapter: Option<Arc<Adapter>>,
) -> (Arc<dyn Embedder>, Option<String>) {
    let Some(adapter) = adapter else {
        return (embedder, None);
    };
    let checkpoint = adapter.checkpoint.clone();
    match AdaptedEmbedder::new(embedder.clone(), adapter) {
        Ok(adapted) => (Arc::new(adapted), Some(checkpoint)),
        Err(err) => {
            tracing::warn!(%err, "recall uses the base embedder without the adapter");
            (embedder, Some(checkpoint))
        }
    }
}

/// Deletes the index saved beside the store, which names lessons and hashes their text, and
/// has the index in memory (if any) saved again at its next refresh.
pub fn forget_saved(shared: &SharedIndex, store: &dyn Store) {
    let Some(path) = store.derived_path(saved::NAME) else {
        return;
    };
    if let Ok(mut guard) = shared.write()
        && let Some(index) = guard.as_mut()
    {
        index.saved_slots = 0;
    }
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            tracing::warn!(path = %path.display(), %err, "the saved recall index could not be deleted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinEmbedder, HNSW_FROM};
    use lore_core::ports::store::{OnDuplicate, Record};
    use lore_sqlite::{OpenMode, SqliteStore};

    fn lesson(n: usize) -> Lesson {
        let at = "2026-03-01T12:00:00Z";
        let skill = ["ops/deploy", "ops/billing", "hr/screen"][n % 3];
        serde_json::from_value(serde_json::json!({
            "id": LessonId::generate(chrono::Utc::now()),
            "skill": skill,
            "mistake": format!("mistake {n}"),
            "root_cause": "cause",
            "rule": format!("rule {n}: check field f{} of record r{}", n % 97, n % 13),
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

    /// A build killed after its first save leaves that save behind; the next process loads it,
    /// inserts only the lessons it lacks (saving as it goes), and holds every lesson.
    #[test]
    fn a_build_stopped_midway_resumes_from_its_last_save() {
        let every = HNSW_FROM + 100;
        let total = 3 * every;
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let lessons: Vec<Lesson> = (0..total).map(lesson).collect();
        let records: Vec<Record> = lessons.iter().cloned().map(Record::Lesson).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        let statuses = [LessonStatus::Approved];

        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            RecallIndex::build_reporting(&store, &embedder, &statuses, None, every, &mut |saved| {
                panic!("stopped after saving {saved} slots")
            })
        }));
        assert!(killed.is_err(), "the build was stopped");
        let path = store.derived_path(saved::NAME).unwrap();
        assert!(path.is_file(), "the first save is on disk");

        let mut saves = Vec::new();
        let index = RecallIndex::open_reporting(&store, &embedder, &statuses, every, &mut |n| {
            saves.push(n)
        })
        .unwrap();
        assert_eq!(
            index.info().origin,
            IndexOrigin::Loaded {
                kept: every,
                dropped: 0,
                added: total - every
            }
        );
        assert_eq!(saves, vec![2 * every, 3 * every]);
        let info = index.info();
        assert_eq!((info.lessons, info.slots, info.graph), (total, total, true));
        assert!(
            lessons
                .iter()
                .all(|l| index.lesson(l.id.as_str()).is_some())
        );

        // The last save holds everything: a third process adds nothing.
        let again = RecallIndex::open(&store, &embedder, &statuses).unwrap();
        assert_eq!(
            again.info().origin,
            IndexOrigin::Loaded {
                kept: total,
                dropped: 0,
                added: 0
            }
        );
    }

    /// A process that saved its index reads its vectors back from the file it wrote, and a new
    /// process reads them in place from that file instead of the store; both answer as the
    /// build did.
    #[test]
    fn the_vectors_are_read_in_place_from_the_saved_file() {
        let total = HNSW_FROM + 300;
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let records: Vec<Record> = (0..total).map(|n| Record::Lesson(lesson(n))).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        let statuses = [LessonStatus::Approved];
        let mut built = RecallIndex::build(&store, &embedder, &statuses).unwrap();
        let queries: Vec<Vec<f32>> = ["check field f3", "record r7 rule", "mistake 41"]
            .iter()
            .map(|q| built.embedder.embed(q).unwrap())
            .collect();
        let answers = |index: &RecallIndex| -> Vec<Vec<(String, u64)>> {
            queries
                .iter()
                .map(|q| {
                    index
                        .dense
                        .search(q, 10, index.dense.len(), |_| true)
                        .into_iter()
                        .map(|(slot, sim)| (index.doc(slot).unwrap().id.to_string(), sim.to_bits()))
                        .collect()
                })
                .collect()
        };
        let before = answers(&built);
        let held = built.memory().vectors;
        assert!(
            held.vectors > total * 16 * 4 && held.mapped == 0,
            "{held:?}"
        );

        let path = store.derived_path(saved::NAME).unwrap();
        built.save(&path);
        let adopted = built.memory().vectors;
        assert_eq!(adopted.mapped, total * (16 + 4 + 4 * 16), "{adopted:?}");
        assert!(adopted.vectors + adopted.codes < total * 2, "{adopted:?}");
        assert_eq!(
            answers(&built),
            before,
            "the builder answers alike from the file"
        );

        let loaded = RecallIndex::open(&store, &embedder, &statuses).unwrap();
        assert!(matches!(loaded.info().origin, IndexOrigin::Loaded { kept, .. } if kept == total));
        let memory = loaded.memory().vectors;
        assert_eq!(memory.mapped, adopted.mapped, "{memory:?}");
        assert!(memory.vectors + memory.codes < total * 2, "{memory:?}");
        assert_eq!(
            answers(&loaded),
            before,
            "a new process answers as the build did"
        );
    }

    /// Two live lessons whose IDs' hashes meet are both found, each as itself, and either
    /// leaves without taking the other with it.
    #[test]
    fn lessons_whose_ids_hash_alike_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let records: Vec<Record> = (0..3).map(|n| Record::Lesson(lesson(n))).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        let mut index = RecallIndex::build(&store, &embedder, &[LessonStatus::Approved]).unwrap();
        let a = index.doc(0).unwrap().id.to_string();
        let b = index.doc(1).unwrap().id.to_string();
        // As if `b` hashed as `a` does: `b` is given its slot again beside `a`'s.
        assert_eq!(index.take_slot(&b), Some(1));
        index.by_id.insert(id_hash(&b), 0);
        index.put_slot(&b, 1);
        assert_eq!(index.by_id_rest.get(&b), Some(&1), "kept whole");
        assert_eq!(
            index.lesson(&a).map(|(s, l)| (s, l.id.to_string())),
            Some((0, a.clone()))
        );
        assert_eq!(
            index.lesson(&b).map(|(s, l)| (s, l.id.to_string())),
            Some((1, b.clone()))
        );
        assert_eq!(index.take_slot(&b), Some(1));
        assert_eq!(index.slot_of(&a), Some(0), "the other stays");
        assert_eq!(index.slot_of(&b), None);
        assert_eq!(index.take_slot(&a), Some(0));
        assert_eq!(index.slot_of(&a), None);
    }

    /// Weighing a skill's words renders none of its lessons: a rendering is kept only for a
    /// lesson a query showed, and the weights are those of every lesson's stems.
    #[test]
    fn weighing_a_skills_words_keeps_no_rendering() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let records: Vec<Record> = (0..60).map(|n| Record::Lesson(lesson(n))).collect();
        store.write(&records, OnDuplicate::Fail).unwrap();
        let embedder: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::with_dim(16).unwrap());
        let index = RecallIndex::build(&store, &embedder, &[LessonStatus::Approved]).unwrap();
        let shown = index.doc(3).unwrap();
        shown
            .shown
            .get_or_init(|| Box::new(Shown::of(&index.full(shown))));
        let words = index.skill_words(index.doc(0).unwrap());
        let skill = index.doc(0).unwrap().skill;
        let docs: Vec<&Doc> = (0..60)
            .filter_map(|s| index.doc(s))
            .filter(|d| d.skill == skill)
            .collect();
        assert_eq!(
            docs.iter().filter(|d| d.shown.get().is_some()).count(),
            usize::from(shown.skill == skill),
            "only the lesson a query showed is rendered"
        );
        let stems: Vec<HashSet<String>> = docs
            .iter()
            .map(|d| Shown::of(&index.full(d)).stems)
            .collect();
        let expected = SkillWords::of(&stems);
        for stem in [
            "rule", "check", "field", "f3", "record", "r7", "mistak", "nowher",
        ] {
            assert_eq!(words.telling(stem), expected.telling(stem), "{stem}");
        }
    }
}
