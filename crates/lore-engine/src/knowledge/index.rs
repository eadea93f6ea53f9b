//! An in-memory search index over one kind of record (knowledge chunks, decisions), shared by
//! the layers that recall them through the same pipeline as lessons. This file holds the index
//! and its searches without the Engine, so the Engine's definition can name the index without
//! depending on the services that use it; `layer.rs` gives the Engine its part.
//!
//! The index reflects one store revision for its kind and catches up when the revision moves,
//! so another process's write is seen at the next query. Where the store can say what changed
//! after a revision (knowledge can), the index is updated in place ([`ItemIndex::apply`]):
//! only the changed records are read, their old slots dropped and the new ones inserted, so a
//! change costs what it touches rather than a read of every record. Otherwise the index is
//! replaced, which is not a rebuild either: it
//! is assembled from the index before it (or, in a new process, from the file saved beside the
//! store through [`lore_recall::saved`], the lesson index's format with its own magic and
//! header): every slot whose record is still there with the same words keeps its vector and its
//! place in the HNSW graph, the others are dropped, and only the records it lacks are inserted.
//! Building the graph is nearly all of a build's time (half a minute at 100k chunks), so a new
//! CLI process or a restarted server pays for the records written since the file was saved,
//! not for all of them. A file made by another embedder, damaged, or with too many stale slots
//! is set aside with a warning and the index is built from the store: the file can make a
//! query faster but never change its answer.
//!
//! Vectors made by another embedder than the configured one are made again in memory, never
//! compared. Every search admits only records of skills the handle's scope (and the query's
//! skill) allows, and each candidate is checked again for sensitive text when it becomes a
//! pipeline entry: eligibility fails closed.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use lore_core::error::{Error, Result};
use lore_core::model::ChunkVector;
use lore_core::scope::SkillPath;
use lore_core::sensitive;
use lore_recall::saved::{self, Format, Loaded, Slot};
use lore_recall::{
    Eligibility, Embedder, EmbedderId, Entries, Entry, FastMap, Hit, HnswParams, RankedList,
    Source, SparseIndex, VectorIndex, text_hash,
};

/// A record an [`ItemIndex`] can hold.
pub(crate) trait Item: Send + Sync {
    /// The name of its saved index beside the store, and of its kind in the file's header.
    const KIND: &'static str;
    /// Whether the store keeps each record's vector ([`Item::take_vector`]); when it does not,
    /// the saved index carries them, so that a new process embeds nothing again.
    const STORED_VECTORS: bool;
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

/// Records inserted between two saves of a long build's progress, so that a process stopped
/// midway resumes from there (the lesson index's figure: about a second to write the file).
const CHECKPOINT: usize = 100_000;

/// Slots inserted since the last save after which the index is saved again: inserting fewer
/// at the next start costs less than writing the file.
const SAVE_AFTER: usize = 1000;

/// The saved index's header: what the file was made from; a load needs the kind, the embedder
/// and the dimension to match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ItemHeader {
    /// [`Item::KIND`].
    pub(crate) kind: String,
    /// The store's revision for that kind when the file was written.
    pub(crate) revision: u64,
    /// The embedder that made every vector the graph links.
    pub(crate) embedder: EmbedderId,
    /// The HNSW graph's construction parameters.
    pub(crate) params: HnswParams,
    /// The vectors' dimension.
    pub(crate) dim: usize,
    /// How many slots follow the header.
    pub(crate) slots: usize,
    /// Whether each slot's vector follows the graph.
    pub(crate) carries_vectors: bool,
}

impl Format for ItemHeader {
    const MAGIC: &'static [u8; 8] = b"LORE-KIX";
    const VERSION: u32 = 1;

    fn slots(&self) -> usize {
        self.slots
    }

    fn params(&self) -> HnswParams {
        self.params
    }

    fn carried_dim(&self) -> Option<usize> {
        self.carries_vectors.then_some(self.dim)
    }
}

/// How an [`ItemIndex`] came to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ItemOrigin {
    /// Built from the store: every record inserted.
    Built,
    /// Assembled from the file beside the store: `kept` saved slots still matched the store,
    /// `dropped` did not (their record changed or left), and `added` records were inserted
    /// because the file lacked them.
    Loaded {
        /// Saved slots whose record was unchanged.
        kept: usize,
        /// Saved slots whose record changed or left.
        dropped: usize,
        /// Records the file lacked.
        added: usize,
    },
    /// Assembled from the index before it, after the store's revision moved; counted as
    /// [`ItemOrigin::Loaded`].
    Updated {
        /// Slots whose record was unchanged.
        kept: usize,
        /// Slots whose record changed or left.
        dropped: usize,
        /// Records inserted.
        added: usize,
    },
}

/// What an [`ItemIndex`] holds now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ItemIndexInfo {
    /// Built from the store, or assembled from a saved file or the index before it (`kept`,
    /// `dropped` and `added` count its slots).
    pub origin: ItemOrigin,
    /// The store revision it reflects.
    pub revision: u64,
    /// Records read from the store to make it: every one for a build or a load, only the
    /// changed ones for an update in place.
    pub read: usize,
    /// Live records.
    pub items: usize,
    /// Slots, live or removed.
    pub slots: usize,
    /// Whether dense search walks an HNSW graph (else it scans exactly).
    pub graph: bool,
}

/// The records of one store revision, searchable. A slot whose record left holds `None` (and
/// stays in the graph as a waypoint) until a rebuild.
pub(crate) struct ItemIndex<T> {
    pub(crate) revision: u64,
    pub(crate) embedder: EmbedderId,
    pub(crate) items: Vec<Option<T>>,
    pub(crate) search: Vec<String>,
    pub(crate) rendered: Vec<[String; 1]>,
    pub(crate) sparse: SparseIndex,
    pub(crate) dense: VectorIndex,
    pub(crate) slot: FastMap<String, u32>,
    hashes: Vec<u64>,
    origin: ItemOrigin,
    read: usize,
    /// Slots the file beside the store holds (slots are only ever appended).
    saved_slots: usize,
}

/// An index shared by an Engine's handles.
pub(crate) type Shared<T> = Arc<Mutex<Option<Arc<ItemIndex<T>>>>>;

/// What changed in the store after an index's revision, as the store reports it.
pub(crate) struct Changes<T> {
    /// The revision the changes bring the index to.
    pub(crate) revision: u64,
    /// Whether a held record was replaced or removed (its slot leaves).
    pub(crate) stale: Box<dyn Fn(&T) -> bool>,
    /// The records written, as stored now.
    pub(crate) added: Vec<T>,
}

/// What a new index starts from: the slots of an earlier one, in order, with its graph and,
/// when known, its vectors (slot-major; empty when the records' stored vectors are to be used).
pub(crate) struct Prior {
    pub(crate) slots: Vec<Slot>,
    pub(crate) graph: Option<lore_recall::Hnsw>,
    pub(crate) vectors: Vec<f32>,
    pub(crate) params: HnswParams,
    pub(crate) saved_slots: usize,
    /// Whether it was read from the file (else it is the index before).
    pub(crate) from_file: bool,
}

impl Prior {
    /// The index before this one, which stays usable by the queries holding it.
    pub(crate) fn of<T: Item>(index: &ItemIndex<T>) -> Self {
        let dim = index.dense.dim();
        let mut vectors = Vec::with_capacity(index.items.len() * dim);
        let slots = (0..index.items.len())
            .map(|s| {
                vectors.extend_from_slice(index.dense.vector(s as u32));
                match &index.items[s] {
                    Some(item) => Slot {
                        id: item.id().to_owned(),
                        hash: index.hashes[s],
                    },
                    None => Slot {
                        id: String::new(),
                        hash: 0,
                    },
                }
            })
            .collect();
        Self {
            slots,
            graph: index.dense.graph().cloned(),
            vectors,
            params: index.dense.params(),
            saved_slots: index.saved_slots,
            from_file: false,
        }
    }

    /// The file saved at `path` for `T` by `embedder`: `Ok(None)` when there is none,
    /// `Err(why)` when it cannot be used.
    pub(crate) fn read<T: Item>(
        path: &Path,
        embedder: &EmbedderId,
    ) -> std::result::Result<Option<Self>, String> {
        let Some(Loaded {
            header,
            slots,
            graph,
            vectors,
            ..
        }) = saved::read::<ItemHeader>(path).map_err(|why| format!("the file {why}"))?
        else {
            return Ok(None);
        };
        if header.kind != T::KIND {
            return Err(format!("the file holds {}, not {}", header.kind, T::KIND));
        }
        if &header.embedder != embedder || header.dim != embedder.dim {
            return Err(format!(
                "the file was made by {}, but recall is configured with {embedder}",
                header.embedder
            ));
        }
        if header.carries_vectors == T::STORED_VECTORS {
            return Err("the file carries other data than this kind keeps".into());
        }
        Ok(Some(Self {
            saved_slots: slots.len(),
            slots,
            graph,
            vectors,
            params: header.params,
            from_file: true,
        }))
    }
}

impl<T: Item> ItemIndex<T> {
    /// The record a packed item names.
    pub(crate) fn get(&self, id: &str) -> Option<&T> {
        self.slot
            .get(id)
            .and_then(|s| self.items[*s as usize].as_ref())
    }

    /// The live record in `slot`.
    pub(crate) fn item(&self, slot: u32) -> Option<&T> {
        self.items.get(slot as usize).and_then(Option::as_ref)
    }

    /// What the index holds now.
    pub(crate) fn info(&self) -> ItemIndexInfo {
        ItemIndexInfo {
            origin: self.origin.clone(),
            revision: self.revision,
            read: self.read,
            items: self.sparse.len(),
            slots: self.items.len(),
            graph: self.dense.graph().is_some(),
        }
    }

    /// The index of `items` at `revision`, assembled from `prior` when given and usable (a
    /// prior too few of whose slots still match is set aside with a warning). `save` is called
    /// with the index as it grows, after every [`CHECKPOINT`] records of a long insertion.
    ///
    /// # Errors
    /// Embedder failures, or an embedder answering with vectors of the wrong number or size.
    pub(crate) fn assemble(
        embedder: &Arc<dyn Embedder>,
        revision: u64,
        items: Vec<T>,
        prior: Option<Prior>,
        save: &mut dyn FnMut(&mut Self),
    ) -> Result<Self> {
        let id = embedder.id();
        let mut items: Vec<Option<T>> = items.into_iter().map(Some).collect();
        let mut stored: Vec<Option<Vec<f32>>> = items
            .iter_mut()
            .map(|i| {
                let i = i.as_mut().expect("all present");
                i.take_vector()
                    .filter(|v| v.embedder == id && v.vector.len() == id.dim)
                    .map(|v| v.vector)
            })
            .collect();
        let mut search: Vec<Option<String>> = items
            .iter()
            .flatten()
            .map(|i| Some(i.search_text()))
            .collect();
        let mut index = Self {
            revision,
            embedder: id.clone(),
            items: Vec::with_capacity(items.len()),
            search: Vec::with_capacity(items.len()),
            rendered: Vec::with_capacity(items.len()),
            sparse: SparseIndex::new(),
            dense: VectorIndex::new(id.dim),
            slot: FastMap::default(),
            hashes: Vec::with_capacity(items.len()),
            origin: ItemOrigin::Built,
            read: items.len(),
            saved_slots: 0,
        };
        if let Some(prior) = prior
            && let Err(why) = index.restore(prior, &mut items, &mut search, &mut stored)?
        {
            tracing::warn!(%why, "building the {} index from the store", T::KIND);
        }
        let rest: Vec<usize> = (0..items.len()).filter(|i| items[*i].is_some()).collect();
        let missing: Vec<usize> = rest
            .iter()
            .copied()
            .filter(|i| stored[*i].is_none())
            .collect();
        embed_missing(
            embedder,
            &missing,
            |i| search[i].as_deref().expect("not yet placed"),
            &mut stored,
        )?;
        if let ItemOrigin::Loaded { added, .. } | ItemOrigin::Updated { added, .. } =
            &mut index.origin
        {
            *added = rest.len();
        }
        for batch in rest.chunks(CHECKPOINT) {
            let vectors: Vec<Vec<f32>> = batch
                .iter()
                .map(|i| stored[*i].take().expect("made above"))
                .collect();
            for &i in batch {
                let item = items[i].take().expect("placed once");
                index.push(item, search[i].take().expect("placed once"));
            }
            index.dense.add_many(&vectors);
            if rest.len() > CHECKPOINT {
                save(&mut index);
            }
        }
        Ok(index)
    }

    /// Places `prior`'s slots: each keeps the record with its ID and words, taken out of
    /// `items`, and the vector it had; the rest stay as removed slots.
    fn restore(
        &mut self,
        prior: Prior,
        items: &mut [Option<T>],
        search: &mut [Option<String>],
        stored: &mut [Option<Vec<f32>>],
    ) -> Result<std::result::Result<(), String>> {
        let Prior {
            slots,
            graph,
            vectors,
            params,
            saved_slots,
            from_file,
        } = prior;
        let dim = self.dense.dim();
        if !vectors.is_empty() && vectors.len() != slots.len() * dim {
            return Ok(Err("its vectors do not fill its slots".into()));
        }
        let position: FastMap<&str, usize> = items
            .iter()
            .enumerate()
            .map(|(i, item)| (item.as_ref().expect("all present").id(), i))
            .collect();
        // A slot keeps its record only if the record is still there with the words its vector
        // was made from, and a vector is at hand: the prior's, else the store's.
        let mut taken = vec![false; items.len()];
        let claimed: Vec<Option<usize>> = slots
            .iter()
            .map(|slot| {
                let &i = position.get(slot.id.as_str())?;
                let usable = !taken[i]
                    && text_hash(search[i].as_deref()?) == slot.hash
                    && (!vectors.is_empty() || stored[i].is_some());
                usable.then(|| {
                    taken[i] = true;
                    i
                })
            })
            .collect();
        let kept = claimed.iter().flatten().count();
        if slots.len() > 2 * kept + 1024 {
            return Ok(Err(format!(
                "only {kept} of its {} slots still match the store",
                slots.len()
            )));
        }
        if graph.as_ref().is_some_and(|g| g.len() != slots.len()) {
            return Ok(Err("its graph does not fit its slots".into()));
        }
        let mut data = Vec::with_capacity(slots.len() * dim);
        let mut live = Vec::with_capacity(slots.len());
        for (s, claim) in claimed.into_iter().enumerate() {
            match claim {
                Some(i) => {
                    match stored[i].take() {
                        Some(v) if vectors.is_empty() => data.extend_from_slice(&v),
                        _ => data.extend_from_slice(&vectors[s * dim..(s + 1) * dim]),
                    }
                    let item = items[i].take().expect("claimed once");
                    self.push(item, search[i].take().expect("claimed once"));
                }
                None => {
                    // A removed slot: the graph still walks through it, never returns it.
                    data.extend(std::iter::repeat_n(0.0, dim));
                    self.push_removed();
                }
            }
            live.push(self.items[s].is_some());
        }
        // The graph keeps the shape it was built with; searches take this release's effort.
        let params = HnswParams {
            m: params.m,
            ef_construction: params.ef_construction,
            ..HnswParams::default()
        };
        self.dense = VectorIndex::restore(dim, params, data, live, graph)
            .ok_or_else(|| Error::Incompatible("a restored index of the wrong size".into()))?;
        self.saved_slots = saved_slots;
        let dropped = slots.len() - kept;
        self.origin = if from_file {
            ItemOrigin::Loaded {
                kept,
                dropped,
                added: 0,
            }
        } else {
            ItemOrigin::Updated {
                kept,
                dropped,
                added: 0,
            }
        };
        Ok(Ok(()))
    }

    /// Applies `changes` in place. A stale slot whose record comes back with the same ID and
    /// words keeps its place, vector and graph links, taking the new record (its lines may have
    /// moved); every other stale slot leaves (staying in the graph as a waypoint, as after a
    /// restore), and the remaining records are inserted with their stored vectors, the others
    /// embedded first, so a failing embedder leaves the index as it was.
    ///
    /// # Errors
    /// Embedder failures, or an embedder answering with vectors of the wrong number or size.
    pub(crate) fn apply(
        &mut self,
        embedder: &Arc<dyn Embedder>,
        changes: Changes<T>,
    ) -> Result<()> {
        let Changes {
            revision,
            stale,
            mut added,
        } = changes;
        let id = embedder.id();
        let read = added.len();
        let mut vectors: Vec<Option<Vec<f32>>> = added
            .iter_mut()
            .map(|i| {
                i.take_vector()
                    .filter(|v| v.embedder == id && v.vector.len() == id.dim)
                    .map(|v| v.vector)
            })
            .collect();
        let search: Vec<String> = added.iter().map(Item::search_text).collect();
        let position: FastMap<&str, usize> = added
            .iter()
            .enumerate()
            .map(|(i, item)| (item.id(), i))
            .collect();
        // Each stale slot, and the added record that takes it over, if any.
        let mut reused = vec![None; added.len()];
        let plan: Vec<(usize, Option<usize>)> = (0..self.items.len())
            .filter(|s| self.items[*s].as_ref().is_some_and(&stale))
            .map(|s| {
                let item = self.items[s].as_ref().expect("filtered");
                let heir = position
                    .get(item.id())
                    .copied()
                    .filter(|&i| reused[i].is_none() && text_hash(&search[i]) == self.hashes[s]);
                if let Some(i) = heir {
                    reused[i] = Some(s);
                }
                (s, heir)
            })
            .collect();
        drop(position);
        let missing: Vec<usize> = (0..added.len())
            .filter(|i| reused[*i].is_none() && vectors[*i].is_none())
            .collect();
        embed_missing(embedder, &missing, |i| search[i].as_str(), &mut vectors)?;
        let mut dropped = 0;
        for &(s, heir) in &plan {
            if heir.is_none() {
                self.remove_slot(s);
                dropped += 1;
            }
        }
        let mut inserted = Vec::new();
        let mut fresh = Vec::new();
        for ((item, search), (vector, slot)) in added
            .into_iter()
            .zip(search)
            .zip(vectors.into_iter().zip(reused))
        {
            if let Some(s) = slot {
                self.rendered[s] = [item.render()];
                self.items[s] = Some(item);
                continue;
            }
            // A record written again under another document would otherwise hold two slots.
            if let Some(&s) = self.slot.get(item.id())
                && self.items[s as usize].is_some()
            {
                self.remove_slot(s as usize);
                dropped += 1;
            }
            inserted.push((item, search));
            fresh.push(vector.expect("stored or made above"));
        }
        let kept = self.sparse.len();
        let count = inserted.len();
        for (item, search) in inserted {
            self.push(item, search);
        }
        self.dense.add_many(&fresh);
        self.revision = revision;
        self.read = read;
        self.origin = ItemOrigin::Updated {
            kept,
            dropped,
            added: count,
        };
        Ok(())
    }

    /// Whether so many slots hold removed records that building afresh beats walking past them
    /// (the bound a restore refuses a prior at).
    pub(crate) fn worn(&self) -> bool {
        self.items.len() > 2 * self.sparse.len() + 1024
    }

    fn remove_slot(&mut self, s: usize) {
        if let Some(item) = self.items[s].take() {
            self.slot.remove(item.id());
        }
        let slot = u32::try_from(s).expect("fewer than 2^32 slots");
        self.sparse.remove(slot);
        self.dense.remove(slot);
        self.search[s] = String::new();
        self.rendered[s] = [String::new()];
        self.hashes[s] = 0;
    }

    /// Adds `item` in the next slot (its vector goes in separately).
    fn push(&mut self, item: T, search: String) {
        let slot = self.sparse.add(&search);
        self.slot.insert(item.id().to_owned(), slot);
        self.rendered.push([item.render()]);
        self.hashes.push(text_hash(&search));
        self.search.push(search);
        self.items.push(Some(item));
    }

    fn push_removed(&mut self) {
        let slot = self.sparse.add("");
        self.sparse.remove(slot);
        self.rendered.push([String::new()]);
        self.hashes.push(0);
        self.search.push(String::new());
        self.items.push(None);
    }

    /// Writes the index to `path` when at least [`SAVE_AFTER`] slots are new since the last
    /// save; a failure only costs the next process time.
    pub(crate) fn save_if_due(&mut self, path: &Path) {
        if self.items.len() >= self.saved_slots + SAVE_AFTER {
            self.save(path);
        }
    }

    /// Writes the index to `path` when it holds something slow to make again: a graph, or
    /// vectors its store does not keep.
    pub(crate) fn save(&mut self, path: &Path) {
        let worth = self.dense.graph().is_some() || (!T::STORED_VECTORS && !self.slot.is_empty());
        if !worth {
            return;
        }
        let dim = self.dense.dim();
        let header = ItemHeader {
            kind: T::KIND.to_owned(),
            revision: self.revision,
            embedder: self.embedder.clone(),
            params: self.dense.params(),
            dim,
            slots: self.items.len(),
            carries_vectors: !T::STORED_VECTORS,
        };
        let slots: Vec<Slot> = (0..self.items.len())
            .map(|s| Slot {
                id: self.items[s]
                    .as_ref()
                    .map_or_else(String::new, |i| i.id().to_owned()),
                hash: self.hashes[s],
            })
            .collect();
        let vectors: Vec<f32> = if T::STORED_VECTORS {
            Vec::new()
        } else {
            (0..self.items.len() as u32)
                .flat_map(|s| self.dense.vector(s).iter().copied())
                .collect()
        };
        match saved::write_carrying(path, &header, &slots, self.dense.graph(), &vectors) {
            Ok(()) => self.saved_slots = self.items.len(),
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "the {} index was not saved", T::KIND);
            }
        }
    }
}

/// Embeds, in one batch, the text of each record in `missing` into its place in `vectors`.
///
/// # Errors
/// Embedder failures, or an embedder answering with vectors of the wrong number or size;
/// `vectors` is unchanged then.
fn embed_missing<'a>(
    embedder: &Arc<dyn Embedder>,
    missing: &[usize],
    text: impl Fn(usize) -> &'a str,
    vectors: &mut [Option<Vec<f32>>],
) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    let id = embedder.id();
    let texts: Vec<&str> = missing.iter().map(|i| text(*i)).collect();
    let made = embedder.embed_batch(&texts)?;
    if made.len() != missing.len() || made.iter().any(|v| v.len() != id.dim) {
        return Err(Error::invalid(
            "embedder",
            format!("{id} returned vectors of the wrong number or size"),
        ));
    }
    for (&i, v) in missing.iter().zip(made) {
        vectors[i] = Some(v);
    }
    Ok(())
}

pub(crate) fn ranked<T: Item>(
    index: &ItemIndex<T>,
    source: Source,
    hits: &[(u32, f64)],
) -> RankedList {
    RankedList {
        source,
        hits: hits
            .iter()
            .filter_map(|(s, score)| {
                Some(Hit {
                    id: index.item(*s)?.id().to_owned(),
                    score: *score,
                })
            })
            .collect(),
        scale: lore_recall::Scale::MinMax,
    }
}

/// The pipeline's entries for the candidate slots, borrowing from the index.
pub(crate) fn entries<T: Item>(
    index: &ItemIndex<T>,
    slots: impl Iterator<Item = u32>,
) -> Entries<'_> {
    let mut out = Entries::default();
    for s in slots {
        let i = s as usize;
        let Some(item) = index.item(s) else { continue };
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
            personal: false,
            standing: 0.0,
        });
    }
    out
}
