//! Searching a skill's conversation log, and archival passages, with the recall pipeline's own
//! parts (archival passages are each found by their own text, with no session context).
//!
//! A reply rarely repeats the words of what it answers ("Yes, last Tuesday"), so an entry is
//! found by a document that puts the entry before it in the same session first:
//! `speaker: text || (date) speaker: text`, the form `lore bench locomo` chose on its dev half;
//! BM25 also indexes the entry before that one at half weight ([`SparseIndex::add_turn`]).
//! Both candidate lists come from the components lesson recall uses, BM25 over stems
//! ([`SparseIndex`]) and the configured embedder with exact dense search, and are fused by the
//! same [`rank`] with the Engine's fusion; what a search returns is still the entry itself.
//! Every entry of the skill is ranked, not a pool, because fusion min-max normalizes each list
//! and a cut list would move the scores the benchmark measured.
//!
//! Each process keeps one index per skill and embedder, built by the first search and brought
//! up to date by the next search after the store's memory revision moved (whichever process
//! wrote). The log is append-only, so an update reads the skill's entries and indexes only
//! those after the ones it holds; anything else (a purge, an entry filed between two others)
//! rebuilds the index from the entries it already has vectors for. A fitting embedder (the
//! builtin one weighs features by IDF) is fitted to the log when the index is built and again
//! once the log has doubled since, so a semantic model embeds each entry once per process and
//! the builtin one a handful of times over the log's life.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use lore_core::error::Result;
use lore_core::id::MemoryId;
use lore_core::model::{MemoryCategory, MemoryEntry};
use lore_core::ports::store::{ListFilter, Store};
use lore_core::scope::{Scope, SkillPath};
use lore_recall::{
    Embedder, Entries, Hit, QueryShape, RankedList, RecallConfig, Source, SparseIndex, cosine,
    rank, text_hash,
};

/// What a log search asks of the Engine: where the log is, the embedder and fusion recall uses,
/// and whose scope filters the hits.
pub(crate) struct LogSearch<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) embedder: &'a Arc<dyn Embedder>,
    pub(crate) config: &'a RecallConfig,
    pub(crate) scope: &'a Scope,
}

/// The cosine at which a semantic embedder's nearest passage counts as about the query without
/// sharing a word with it (all-MiniLM-L6-v2 puts paraphrases above 0.4 and unrelated sentences
/// below 0.2).
const SEMANTIC_FLOOR: f64 = 0.35;

/// The per-skill indexes of one Engine, shared by its scoped handles.
#[derive(Default)]
pub(crate) struct LogIndexes {
    by_skill: Mutex<HashMap<LogKey, Arc<Mutex<LogIndex>>>>,
}

/// An index's embedder (by identity), skill (every skill's, for `None`) and category: a handle
/// given another embedder gets its own.
type LogKey = (String, Option<SkillPath>, MemoryCategory);

/// One skill's log, searchable; slot `i` holds the `i`-th entry in the store's order.
struct LogIndex {
    /// The store's memory revision it reflects; `None` when the store cannot tell.
    revision: Option<u64>,
    /// What it holds: a conversation log (each entry found with the one before it in its
    /// session) or archival passages (each found by its own text).
    category: MemoryCategory,
    /// The embedder as fitted to the log (the configured one when it does not fit).
    embedder: Arc<dyn Embedder>,
    /// Whether the configured embedder fits to a corpus.
    fits: bool,
    /// Entries the fit was made over; a refit is due at twice as many.
    fitted_over: usize,
    entries: Vec<MemoryEntry>,
    /// Each entry's text hash, which tells a purged (rewritten) entry from the one indexed.
    hashes: Vec<u64>,
    /// Each document's text hash, which tells whether its vector can be kept.
    documents: Vec<u64>,
    sparse: SparseIndex,
    dense: Vectors,
    /// The speaker and text of each session's newest entry and of the one before it, the
    /// context of its next one.
    last_said: HashMap<String, (String, Option<String>)>,
}

/// What an entry is found by: the text both indexes see, and the session's entry before the
/// previous one, which BM25 alone adds at reduced weight.
struct Document {
    text: String,
    earlier: Option<String>,
}

impl LogIndex {
    fn empty(embedder: Arc<dyn Embedder>, fits: bool, category: MemoryCategory) -> Self {
        let dim = embedder.id().dim;
        Self {
            revision: None,
            category,
            embedder,
            fits,
            fitted_over: 0,
            entries: Vec::new(),
            hashes: Vec::new(),
            documents: Vec::new(),
            sparse: SparseIndex::new(),
            dense: Vectors {
                dim,
                data: Vec::new(),
            },
            last_said: HashMap::new(),
        }
    }

    /// Whether the index holds exactly the first entries of `log`, in order, unchanged.
    fn is_prefix_of(&self, log: &[MemoryEntry]) -> bool {
        log.len() >= self.entries.len()
            && self
                .entries
                .iter()
                .zip(&self.hashes)
                .zip(log)
                .all(|((held, hash), now)| held.id == now.id && *hash == text_hash(&now.text))
    }

    /// Indexes `added` after the entries held, embedding them in one batch.
    fn append(&mut self, added: Vec<MemoryEntry>) -> Result<()> {
        let documents: Vec<Document> = added.iter().map(|e| self.document(e)).collect();
        let texts: Vec<&str> = documents.iter().map(|d| d.text.as_str()).collect();
        let vectors = self.embedder.embed_batch(&texts)?;
        for ((entry, document), vector) in added.into_iter().zip(&documents).zip(vectors) {
            self.push(entry, document, &vector);
        }
        Ok(())
    }

    fn push(&mut self, entry: MemoryEntry, document: &Document, vector: &[f32]) {
        self.sparse
            .add_turn(&document.text, document.earlier.as_deref());
        self.dense.data.extend_from_slice(vector);
        self.hashes.push(text_hash(&entry.text));
        self.documents.push(text_hash(&document.text));
        self.entries.push(entry);
    }

    /// The text `entry` is found by, after the session's entry before it; records `entry` as
    /// that session's newest.
    fn document(&mut self, entry: &MemoryEntry) -> Document {
        if self.category != MemoryCategory::Recall {
            // A passage's tags are words it is filed under, found like its text.
            let mut text = entry.text.clone();
            for tag in &entry.tags {
                text.push(' ');
                text.push_str(&tag.replace(['-', '_'], " "));
            }
            return Document {
                text,
                earlier: None,
            };
        }
        let said = said(entry);
        let date = entry.timestamp.format("%-I:%M %P on %-d %B, %Y");
        let own = format!("({date}) {said}");
        let session = entry.session.clone().unwrap_or_default();
        let (previous, earlier) = self
            .last_said
            .remove(&session)
            .map_or((None, None), |(previous, earlier)| {
                (Some(previous), earlier)
            });
        let text = match &previous {
            Some(before) => format!("{before} || {own}"),
            None => own,
        };
        self.last_said.insert(session, (said, previous));
        Document { text, earlier }
    }
}

/// The entries' vectors, one after the other. A log is searched exactly, every entry scored:
/// no graph to build, and a skill's log is small next to a store's lessons.
struct Vectors {
    dim: usize,
    data: Vec<f32>,
}

impl Vectors {
    fn get(&self, slot: usize) -> &[f32] {
        &self.data[slot * self.dim..(slot + 1) * self.dim]
    }

    /// Every slot `admits` lets in, by similarity to `query`, best first (ties: earlier slot).
    fn ranked(&self, query: &[f32], admits: impl Fn(u32) -> bool) -> Vec<(u32, f64)> {
        let mut scored: Vec<(u32, f64)> = self
            .data
            .chunks_exact(self.dim.max(1))
            .enumerate()
            .map(|(slot, v)| (slot as u32, v))
            .filter(|(slot, _)| admits(*slot))
            .map(|(slot, v)| (slot, cosine(query, v)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

/// `speaker: text`, or the text alone for an entry without a speaker.
fn said(entry: &MemoryEntry) -> String {
    match &entry.author {
        Some(speaker) => format!("{speaker}: {}", entry.text),
        None => entry.text.clone(),
    }
}

impl LogIndexes {
    /// The entries of `category` of `skill` (of every skill in scope, for `None`) that best
    /// match `query` (of `session` only, when given), best first, at most `limit`; callers have
    /// checked the scope and the limit.
    ///
    /// # Errors
    /// Store and embedder failures.
    pub(crate) fn search(
        &self,
        with: &LogSearch<'_>,
        (skill, category): (Option<&SkillPath>, MemoryCategory),
        session: Option<&str>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(MemoryEntry, f64)>> {
        let shared = self.log_index(with.embedder, skill, category);
        let mut index = shared.lock().unwrap_or_else(PoisonError::into_inner);
        bring_up_to_date(with, &mut index, skill)?;
        let index = &*index;
        let admits = |slot: u32| {
            let entry = &index.entries[slot as usize];
            with.scope.allows(&entry.skill)
                && session.is_none_or(|s| entry.session.as_deref() == Some(s))
        };
        let all = index.entries.len();
        let archival = index.category != MemoryCategory::Recall;
        let list = |source, found: Vec<(u32, f64)>| {
            // A log is ranked as the benchmark measured it (each list min-max scaled). A
            // passage's score is read by itself (mem0's `search` shows it), so there a cosine
            // stays a cosine and BM25 is scaled by the best match only: the last passage found
            // is not given 0.
            let scale = match (archival, source) {
                (false, _) => lore_recall::Scale::MinMax,
                (true, Source::Dense) => lore_recall::Scale::Calibrated {
                    zero: 0.0,
                    one: 1.0,
                },
                (true, _) => lore_recall::Scale::Calibrated {
                    zero: 0.0,
                    one: found
                        .first()
                        .map_or(1.0, |(_, best)| best.max(f64::EPSILON)),
                },
            };
            RankedList {
                source,
                hits: found
                    .into_iter()
                    .map(|(slot, score)| Hit {
                        id: slot.to_string(),
                        score,
                    })
                    .collect(),
                scale,
            }
        };
        let sparse_hits = index.sparse.search(query, all, admits);
        let vector = index.embedder.embed(query)?;
        let mut dense_hits = index.dense.ranked(&vector, admits);
        if archival {
            // A passage is an answer only when it shares a word's stem with the query, or, with
            // a semantic embedder, its meaning: a search for what nothing holds finds nothing,
            // as a word search did, instead of every passage ranked.
            let floor = if index.embedder.semantic() {
                SEMANTIC_FLOOR
            } else {
                f64::INFINITY
            };
            let worded: std::collections::HashSet<u32> =
                sparse_hits.iter().map(|(slot, _)| *slot).collect();
            dense_hits.retain(|(slot, cosine)| worded.contains(slot) || *cosine >= floor);
        }
        let sparse = list(Source::Sparse, sparse_hits);
        let dense = list(Source::Dense, dense_hits);
        // Every entry gets the same reliability and age (none), so the order is the fused text
        // relevance alone, as the benchmark measures it; a log is not ranked by recency.
        let scored = rank(
            &[sparse, dense],
            &Entries::default(),
            QueryShape::default(),
            with.config,
        );
        Ok(scored
            .into_iter()
            .take(limit)
            .filter_map(|s| {
                let slot: usize = s.fused.id.parse().ok()?;
                Some((index.entries.get(slot)?.clone(), s.fused.text))
            })
            .collect())
    }

    fn log_index(
        &self,
        embedder: &Arc<dyn Embedder>,
        skill: Option<&SkillPath>,
        category: MemoryCategory,
    ) -> Arc<Mutex<LogIndex>> {
        let key = (embedder.id().to_string(), skill.cloned(), category);
        let mut map = self.by_skill.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(key)
            .or_insert_with(|| {
                let embedder = embedder.clone();
                let fits = embedder.fit(&["probe"]).is_some();
                Arc::new(Mutex::new(LogIndex::empty(embedder, fits, category)))
            })
            .clone()
    }
}

/// Brings `index` to the store's memory revision: appends what was added after it, or
/// rebuilds it when an entry changed or the fit is due.
fn bring_up_to_date(
    with: &LogSearch<'_>,
    index: &mut LogIndex,
    skill: Option<&SkillPath>,
) -> Result<()> {
    // Read before the entries, so a write landing in between is read again next time.
    let revision = with.store.memory_revision()?;
    if revision.is_some() && revision == index.revision {
        return Ok(());
    }
    // Every handle allowed on the skill sees all of its log (memory scopes go by domain and
    // skill), so one index serves them all; each search checks the scope again.
    let filter = ListFilter {
        scope: Scope::unrestricted(),
        skill: skill.cloned(),
        ..ListFilter::default()
    };
    let log = with.store.memories(&filter, index.category)?;
    let refit =
        index.fits && log.len() > index.entries.len() && log.len() >= 2 * index.fitted_over.max(1);
    if index.is_prefix_of(&log) && !refit {
        let added = log[index.entries.len()..].to_vec();
        if let Err(err) = index.append(added) {
            // The sessions' last entries already moved on: start again at the next query.
            *index = LogIndex::empty(with.embedder.clone(), index.fits, index.category);
            return Err(err);
        }
    } else {
        *index = rebuilt(with.embedder, index, log)?;
    }
    index.revision = revision;
    Ok(())
}

/// A new index of `log`, fitted to it, keeping the vectors `old` made with the same fit.
fn rebuilt(
    configured: &Arc<dyn Embedder>,
    old: &LogIndex,
    log: Vec<MemoryEntry>,
) -> Result<LogIndex> {
    let configured = configured.clone();
    let mut fresh = LogIndex::empty(configured.clone(), old.fits, old.category);
    let documents: Vec<Document> = log.iter().map(|e| fresh.document(e)).collect();
    let texts: Vec<&str> = documents.iter().map(|d| d.text.as_str()).collect();
    let (embedder, vectors) = if old.fits {
        let fitted = configured.fit(&texts).unwrap_or(configured);
        let vectors = fitted.embed_batch(&texts)?;
        (fitted, vectors)
    } else {
        (configured, reuse_vectors(old, &log, &texts)?)
    };
    fresh.embedder = embedder;
    fresh.fitted_over = log.len();
    for ((entry, document), vector) in log.into_iter().zip(&documents).zip(vectors) {
        fresh.push(entry, document, &vector);
    }
    Ok(fresh)
}

/// Vectors for `texts` (the documents of `log`), taken from `old` where its entry and document
/// are the same and made by `old`'s embedder otherwise: an embedder that does not fit makes the
/// same vector for the same document every time, so none is made twice.
fn reuse_vectors(old: &LogIndex, log: &[MemoryEntry], texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    let held: HashMap<&MemoryId, usize> = old
        .entries
        .iter()
        .enumerate()
        .map(|(slot, e)| (&e.id, slot))
        .collect();
    let mut missing = Vec::new();
    let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(log.len());
    for (i, (entry, text)) in log.iter().zip(texts).enumerate() {
        let kept = held
            .get(&entry.id)
            .filter(|&&slot| old.documents[slot] == text_hash(text));
        match kept {
            Some(&slot) => out.push(Some(old.dense.get(slot).to_vec())),
            None => {
                missing.push(i);
                out.push(None);
            }
        }
    }
    let to_embed: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
    for (i, vector) in missing
        .into_iter()
        .zip(old.embedder.embed_batch(&to_embed)?)
    {
        out[i] = Some(vector);
    }
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use lore_recall::BuiltinEmbedder;

    fn entry(session: &str, speaker: &str, text: &str) -> MemoryEntry {
        MemoryEntry {
            id: MemoryId::generate(Utc::now()),
            skill: SkillPath::parse("team/chat").unwrap(),
            category: MemoryCategory::Recall,
            block: None,
            text: text.to_owned(),
            tags: Vec::new(),
            session: Some(session.to_owned()),
            author: Some(speaker.to_owned()),
            timestamp: Utc::now(),
            extra: Default::default(),
        }
    }

    #[test]
    fn a_follow_up_answer_is_found_by_the_entry_two_before_it_in_its_session() {
        let mut index = LogIndex::empty(
            Arc::new(BuiltinEmbedder::default()),
            false,
            MemoryCategory::Recall,
        );
        index
            .append(vec![
                entry("a", "ann", "I finished my first screenplay"),
                entry("b", "bob", "The printer is jammed again"),
                entry("a", "cy", "Wow! What is it about?"),
                entry("b", "dee", "Facilities will fix it"),
                entry("a", "ann", "A mix of drama and romance."),
            ])
            .unwrap();
        let found: Vec<&str> = index
            .sparse
            .search("what genre is the screenplay", 5, |_| true)
            .into_iter()
            .map(|(slot, _)| index.entries[slot as usize].text.as_str())
            .collect();
        assert_eq!(
            found,
            [
                "I finished my first screenplay",
                "Wow! What is it about?",
                "A mix of drama and romance.",
            ]
        );
        // The other session's entries never become context of this one's.
        let printer = index.sparse.search("printer", 5, |_| true);
        let printer: Vec<u32> = printer.into_iter().map(|(slot, _)| slot).collect();
        assert_eq!(printer, [1, 3]);
    }
}
