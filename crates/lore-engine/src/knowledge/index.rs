//! An in-memory search index over one kind of record (knowledge chunks, decisions), shared by
//! the layers that recall them through the same pipeline as lessons. This file holds the index
//! and its searches without the Engine, so the Engine's definition can name the index without
//! depending on the services that use it; `layer.rs` gives the Engine its part.
//!
//! The index is built from the store on first use and kept, shared by every handle of one
//! Engine, until the store's revision for that kind moves, so another process's write is seen
//! at the next query. Vectors made by another embedder than the configured one are made again
//! in memory, never compared. Every search admits only records of skills the handle's scope
//! (and the query's skill) allows, and each candidate is checked again for sensitive text when
//! it becomes a pipeline entry: eligibility fails closed.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use lore_core::model::ChunkVector;
use lore_core::scope::SkillPath;
use lore_core::sensitive;
use lore_recall::{
    Eligibility, EmbedderId, Entries, Entry, FastMap, Hit, RankedList, Source, SparseIndex,
    VectorIndex,
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
    pub(crate) search: Vec<String>,
    pub(crate) rendered: Vec<[String; 1]>,
    pub(crate) sparse: SparseIndex,
    pub(crate) dense: VectorIndex,
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

pub(crate) fn ranked<T: Item>(
    index: &ItemIndex<T>,
    source: Source,
    hits: &[(u32, f64)],
) -> RankedList {
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
pub(crate) fn entries<T: Item>(
    index: &ItemIndex<T>,
    slots: impl Iterator<Item = u32>,
) -> Entries<'_> {
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
            personal: false,
        });
    }
    out
}
