//! An updatable Okapi BM25 index whose top-k search skips what cannot make the top k (MaxScore).
//!
//! Scoring every document that shares a query term costs as much as the longest posting list:
//! at 100k memories a question naming a speaker touches a tenth of them. MaxScore (Turtle and
//! Flood) keeps an upper bound per term: once `k` documents are held, terms whose bounds add up
//! to less than the k-th score cannot lift a document into the top k on their own, so only
//! documents in the other ("essential") lists are visited, and the rest are looked up only for
//! those, in blocks, stopping as soon as the bound says the document cannot make it. The result
//! is exactly the exhaustive top k ([`SparseIndex::search_exhaustive`], which the property test
//! compares against): same scores, same order, ties to the earlier document.
//!
//! Documents holding the same text (the same terms, counted alike, at the same length) score
//! alike in every query, so a search scores each such text once, at its first document, and
//! gives its later documents that score, or leaves them out at once when a bound left the first
//! out (the threshold only rises). A store of near-identical lessons (a template filled with a
//! few words) then costs a look-up per posting of its essential lists, not the non-essential
//! lists' seeks; a store whose texts are all distinct never looks one up.
//!
//! Documents are added at the end and removed by marking, because a lesson that changes or
//! becomes ineligible must leave the results at once; the statistics (document count, document
//! frequencies, average length) count live documents only, so scores equal those of an index
//! built afresh from the live documents. The bounds are computed at query time from each list's
//! largest term frequency and shortest document, which removal can only make looser, never
//! wrong. Scoring is Okapi BM25 with `k1 = 1.2`, `b = 0.75` over [`super::text::index_terms`].

use crate::FastMap;
use std::collections::{BinaryHeap, HashMap};

use super::near::Near;
use super::text;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Term frequencies and lengths are kept in quarters of an occurrence, so a field weighted
/// below a whole one ([`SparseIndex::add_fields`]) stays an exact integer count; a document of
/// whole-weight text scores exactly as it would counted in occurrences (division by a power of
/// two is exact).
const TF_UNIT: u32 = 4;
/// Pseudo-relevance feedback: the first search's best documents, the terms taken from them, and
/// how many of those documents a term must be in. Chosen on LoCoMo's dev questions (BM25
/// recall@10 .642 without feedback; 5 documents and 5 terms .659, 10 and 10 .662, 10 and 20
/// .649, 20 and 10 .603); two documents keep one turn's chance words out.
const FEEDBACK_DOCS: usize = 10;
const FEEDBACK_TERMS: usize = 10;
const FEEDBACK_MIN_DOCS: u32 = 2;
/// How much each word of the turn before the previous one counts in a conversation turn's
/// document ([`SparseIndex::add_turn`]). Chosen on LoCoMo's dev questions, default fusion
/// recall@10: without that turn .728, at 0.25 .763, 0.5 .773, 0.75 .768, 1 .766.
const EARLIER_TURN_WEIGHT: f64 = 0.5;
/// Postings per block; a block's bounds let a lookup skip it whole.
const BLOCK: usize = 64;

/// One term's postings, by document slot ascending.
#[derive(Debug, Default)]
struct Postings {
    docs: Vec<u32>,
    tfs: Vec<u32>,
    /// Live documents containing the term.
    df: u32,
    /// The largest term frequency and shortest document length in the list: the term's bound.
    max_tf: u32,
    min_len: u32,
    /// Per block of [`BLOCK`] postings: its last document, largest tf and shortest length.
    blocks: Vec<(u32, u32, u32)>,
}

impl Postings {
    fn push(&mut self, doc: u32, tf: u32, len: u32) {
        if self.docs.len().is_multiple_of(BLOCK) {
            self.blocks.push((doc, tf, len));
        }
        let block = self.blocks.last_mut().expect("a block was pushed");
        *block = (doc, block.1.max(tf), block.2.min(len));
        if self.docs.is_empty() {
            self.min_len = len;
        }
        self.docs.push(doc);
        self.tfs.push(tf);
        self.df += 1;
        self.max_tf = self.max_tf.max(tf);
        self.min_len = self.min_len.min(len);
    }
}

/// An updatable BM25 index over documents numbered by slot.
#[derive(Debug, Default)]
pub struct SparseIndex {
    terms: FastMap<String, u32>,
    postings: Vec<Postings>,
    /// Per slot: its length in terms.
    lens: Vec<u32>,
    /// Every slot's distinct term IDs, one after another (a list per document cost a
    /// vector's header and an allocation each), and per slot where its IDs start; a slot's
    /// end is the next one's start. A removed slot keeps its IDs, read by no one.
    term_ids: Vec<u32>,
    terms_at: Vec<u32>,
    live: Vec<bool>,
    live_docs: usize,
    live_len: u64,
    /// Per slot, its text: documents with the same terms, counts and length share one, and
    /// score alike in any query, so a search scores such a text once.
    doc_text: Vec<u32>,
    /// Per text, a hash of its terms and counts to a slot holding it, which is compared before
    /// a new document is given that text (a hash alone could join two texts).
    texts: FastMap<u64, (u32, u32)>,
    /// Per text, how many slots were given it: a text held once is never looked up.
    text_docs: Vec<u32>,
    /// The fewest documents IDF is read over ([`SparseIndex::with_idf_floor`]); 0 reads the
    /// live documents as they are.
    idf_floor: usize,
}

/// The statistics one query is scored with.
struct Stats {
    n: f64,
    /// Okapi's length norm `K1 * (1 - B + B * len / avg_len)` taken apart, in [`TF_UNIT`]s:
    /// a constant part and one per unit of length, so a term's score costs one division (it
    /// is computed for every posting a search reads).
    norm_base: f64,
    norm_per_len: f64,
}

impl Stats {
    fn idf(&self, df: u32) -> f64 {
        let df = f64::from(df);
        (1.0 + (self.n - df + 0.5) / (df + 0.5)).ln()
    }

    fn term_score(&self, idf: f64, tf: u32, len: u32) -> f64 {
        // Okapi's `idf * tf * (K1 + 1) / (tf + K1 * norm)` with tf and length in units: the
        // units cancel, and scaling by a power of two is exact.
        let tf = f64::from(tf);
        idf * (K1 + 1.0) * tf / (tf + self.norm_base + self.norm_per_len * f64::from(len))
    }
}

/// A query term's place in its posting list.
struct Cursor<'a> {
    postings: &'a Postings,
    idf: f64,
    bound: f64,
    pos: usize,
}

impl Cursor<'_> {
    fn doc(&self) -> u32 {
        self.postings
            .docs
            .get(self.pos)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Moves to the first posting at or after `doc`, skipping whole blocks that end before it.
    fn seek(&mut self, doc: u32) {
        let p = self.postings;
        if self.doc() >= doc {
            return;
        }
        let mut block = self.pos / BLOCK;
        while block < p.blocks.len() && p.blocks[block].0 < doc {
            block += 1;
        }
        if block == p.blocks.len() {
            self.pos = p.docs.len();
            return;
        }
        let start = self.pos.max(block * BLOCK);
        let end = ((block + 1) * BLOCK).min(p.docs.len());
        self.pos = start + p.docs[start..end].partition_point(|&d| d < doc);
    }

    /// The bound of the block holding the current posting, or of the list past it.
    fn block_bound(&self, stats: &Stats) -> f64 {
        match self.postings.blocks.get(self.pos / BLOCK) {
            Some(&(_, tf, len)) => stats.term_score(self.idf, tf, len),
            None => 0.0,
        }
    }
}

impl SparseIndex {
    /// Bytes held, for the memory a lesson costs: the postings and their blocks, the
    /// vocabulary, and each document's length, terms and text (hash tables counted at their
    /// capacity, with a byte of control per entry).
    pub fn heap_bytes(&self) -> usize {
        let postings: usize = self
            .postings
            .iter()
            .map(|p| 4 * (p.docs.capacity() + p.tfs.capacity()) + 12 * p.blocks.capacity())
            .sum();
        let terms: usize = self.terms.keys().map(String::capacity).sum::<usize>()
            + self.terms.capacity() * (size_of::<(String, u32)>() + 1);
        postings
            + size_of::<Postings>() * self.postings.capacity()
            + terms
            + 4 * (self.term_ids.capacity() + self.terms_at.capacity())
            + 4 * (self.lens.capacity() + self.doc_text.capacity() + self.text_docs.capacity())
            + self.live.capacity()
            + self.texts.capacity() * (size_of::<(u64, (u32, u32))>() + 1)
    }

    /// Frees what the lists grew beyond their documents: a list doubles as it grows, so an
    /// index built at once holds about a third more than its postings until this. For after
    /// a bulk of additions; a few more later grow a list again by doubling.
    pub fn shrink_to_fit(&mut self) {
        for p in &mut self.postings {
            p.docs.shrink_to_fit();
            p.tfs.shrink_to_fit();
            p.blocks.shrink_to_fit();
        }
        self.postings.shrink_to_fit();
        self.terms.shrink_to_fit();
        self.term_ids.shrink_to_fit();
        self.terms_at.shrink_to_fit();
        self.lens.shrink_to_fit();
        self.live.shrink_to_fit();
        self.doc_text.shrink_to_fit();
        self.texts.shrink_to_fit();
        self.text_docs.shrink_to_fit();
    }

    /// Where the distinct term IDs of `slot`, live or removed, lie in `term_ids`.
    fn terms_range(&self, slot: usize) -> std::ops::Range<usize> {
        let Some(&start) = self.terms_at.get(slot) else {
            return 0..0;
        };
        let end = self
            .terms_at
            .get(slot + 1)
            .map_or(self.term_ids.len(), |&e| e as usize);
        start as usize..end
    }

    /// The distinct term IDs of `slot`, live or removed.
    fn doc_terms(&self, slot: usize) -> &[u32] {
        &self.term_ids[self.terms_range(slot)]
    }

    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index whose IDF reads the store as holding at least `docs` documents.
    ///
    /// IDF tells a rare word from a common one by counting documents, which a small store
    /// cannot do: with one document every word it holds is in all of them, so a word the query
    /// shares with it weighs a fifth of a word it lacks, and a task naming the situation of the
    /// store's only lesson covers almost none of its own weight. Read over at least `docs`
    /// documents, a word in one document of a few is as rare as it would be in a store of
    /// `docs`, a word in most of them still common; from `docs` documents on nothing changes.
    /// Document lengths are the live documents' own either way.
    pub fn with_idf_floor(docs: usize) -> Self {
        Self {
            idf_floor: docs,
            ..Self::default()
        }
    }

    /// Slots ever used, live or removed; the next [`SparseIndex::add`] gets this one.
    pub fn slots(&self) -> usize {
        self.lens.len()
    }

    /// Live documents.
    pub fn len(&self) -> usize {
        self.live_docs
    }

    /// Whether no document is live.
    pub fn is_empty(&self) -> bool {
        self.live_docs == 0
    }

    /// Adds a document and returns its slot.
    pub fn add(&mut self, text: &str) -> u32 {
        self.add_fields(&[(text, 1.0)])
    }

    /// Adds a conversation turn's `document` (the turn after the previous one of its session)
    /// with the words of the turn before that, `earlier`, at half weight. An answer often
    /// comes two turns after what it answers ("I finished my screenplay" — "What's it about?" —
    /// "A mix of drama and romance"), so the question's words are found there; at half weight
    /// they lift the answer without outranking the turns that said them.
    pub fn add_turn(&mut self, document: &str, earlier: Option<&str>) -> u32 {
        self.add_fields(&[
            (earlier.unwrap_or_default(), EARLIER_TURN_WEIGHT),
            (document, 1.0),
        ])
    }

    /// Adds a document made of several fields and returns its slot. Each field's terms count
    /// `weight` occurrences apiece (rounded to a quarter, at most 1) toward the term frequency
    /// and the document's length, as BM25F weighs fields: a conversation turn indexed after the
    /// turn it answers is found by that turn's words, yet ranks below the turn that said them.
    /// A weight of 0 leaves a field out.
    pub fn add_fields(&mut self, fields: &[(&str, f64)]) -> u32 {
        let doc = u32::try_from(self.lens.len()).expect("fewer than 2^32 documents");
        let mut tf: FastMap<String, u32> = FastMap::default();
        let mut len = 0u32;
        for (text, weight) in fields {
            let units = (weight.clamp(0.0, 1.0) * f64::from(TF_UNIT)).round() as u32;
            if units == 0 {
                continue;
            }
            for term in text::index_terms(text) {
                *tf.entry(term).or_default() += units;
                len = len.saturating_add(units);
            }
        }
        // Pushed first, so that the slot before this one ends where this one's IDs start.
        let start = u32::try_from(self.term_ids.len()).expect("fewer than 2^32 postings");
        self.terms_at.push(start);
        let mut counted = Vec::with_capacity(tf.len());
        for (term, n) in tf {
            let next = self.postings.len() as u32;
            let id = *self.terms.entry(term).or_insert(next);
            if id == next {
                self.postings.push(Postings::default());
            }
            self.postings[id as usize].push(doc, n, len);
            self.term_ids.push(id);
            counted.push((id, n));
        }
        counted.sort_unstable();
        let text = self.text_of(&counted, len, doc);
        self.doc_text.push(text);
        self.lens.push(len);
        self.live.push(true);
        self.live_docs += 1;
        self.live_len += u64::from(len);
        doc
    }

    /// The text of a new document `doc` with `counted` (term, count) pairs, sorted, and
    /// length `len`: the one an earlier live document with exactly these has, or a new one.
    fn text_of(&mut self, counted: &[(u32, u32)], len: u32, doc: u32) -> u32 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = foldhash::fast::FixedState::with_seed(0x5eed).build_hasher();
        h.write_u32(len);
        for &(id, n) in counted {
            h.write_u32(id);
            h.write_u32(n);
        }
        let key = h.finish();
        if let Some(&(text, holder)) = self.texts.get(&key)
            && self.holds(holder, counted, len)
        {
            self.text_docs[text as usize] += 1;
            return text;
        }
        let text = u32::try_from(self.text_docs.len()).expect("fewer than 2^32 texts");
        self.text_docs.push(1);
        self.texts.insert(key, (text, doc));
        text
    }

    /// Whether live document `slot` has exactly the (term, count) pairs `counted` and `len`.
    fn holds(&self, slot: u32, counted: &[(u32, u32)], len: u32) -> bool {
        let s = slot as usize;
        if !self.is_live(slot) || self.lens[s] != len || self.doc_terms(s).len() != counted.len() {
            return false;
        }
        counted.iter().all(|&(id, n)| {
            let p = &self.postings[id as usize];
            p.docs.binary_search(&slot).is_ok_and(|at| p.tfs[at] == n)
        })
    }

    /// Removes the document in `slot` from results and statistics; unknown or removed slots
    /// are ignored.
    pub fn remove(&mut self, slot: u32) {
        let s = slot as usize;
        if !self.live.get(s).copied().unwrap_or(false) {
            return;
        }
        self.live[s] = false;
        self.live_docs -= 1;
        self.live_len -= u64::from(self.lens[s]);
        for at in self.terms_range(s) {
            let id = self.term_ids[at];
            self.postings[id as usize].df -= 1;
        }
    }

    /// Whether `slot` holds a live document.
    pub fn is_live(&self, slot: u32) -> bool {
        self.live.get(slot as usize).copied().unwrap_or(false)
    }

    fn stats(&self) -> Stats {
        let live = self.live_docs as f64;
        let avg_len = (self.live_len as f64 / f64::from(TF_UNIT) / live.max(1.0)).max(1.0);
        Stats {
            n: self.live_docs.max(self.idf_floor) as f64,
            norm_base: K1 * (1.0 - B) * f64::from(TF_UNIT),
            norm_per_len: K1 * B / avg_len,
        }
    }

    /// The inverse document frequency of `word` (one of [`crate::text::terms`], cut to its stem
    /// here as the index stores it) among the live documents, read as they are whatever the
    /// floor of [`Self::with_idf_floor`]; a word no document has gets the largest.
    ///
    /// It weighs the words of a lesson's stated condition against each other, where what the
    /// store's own lessons share is the point: a tool's name in every lesson of a small store
    /// says nothing of which of them a step meets, though the floor would count it as rare.
    pub fn idf(&self, word: &str) -> f64 {
        let df = self
            .terms
            .get(&text::stem(word))
            .map_or(0, |&id| self.postings[id as usize].df);
        // Only the count of documents matters to an IDF; the length norm is unused.
        let live = Stats {
            n: self.live_docs as f64,
            norm_base: 0.0,
            norm_per_len: 0.0,
        };
        live.idf(df)
    }

    /// The weight of a rare word: the IDF of a word that one live document has. BM25 scores
    /// counted in this unit mean the same in a store of forty documents and of forty thousand
    /// ([`crate::calibrate`]).
    pub fn unit_idf(&self) -> f64 {
        self.stats().idf(1)
    }

    /// [`Self::search`] widened by the words its best answers share: the query is searched, the
    /// [`Self::feedback_terms`] of its first documents are added, and the widened query, with
    /// the question's own terms counted twice so they still lead, is searched again. It needs
    /// no model: it finds the memory that answers in other words than the question's when the
    /// question's first answers use those words ("help children" finds "mentorship program"
    /// through the turns about the program).
    pub fn search_with_feedback(
        &self,
        query: &str,
        k: usize,
        allow: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let first: Vec<u32> = self
            .search(query, FEEDBACK_DOCS, &allow)
            .into_iter()
            .map(|(slot, _)| slot)
            .collect();
        let extra = self.feedback_terms(query, &first, FEEDBACK_TERMS);
        if extra.is_empty() {
            return self.search(query, k, allow);
        }
        self.search(&format!("{query} {query} {}", extra.join(" ")), k, allow)
    }

    /// The `n` terms that best describe the documents in `slots` and are not already in `query`:
    /// each scored by how many of those documents hold it times its idf, so a word the top
    /// answers share and the rest of the index lacks comes first (pseudo-relevance feedback).
    pub fn feedback_terms(&self, query: &str, slots: &[u32], n: usize) -> Vec<String> {
        let asked: Vec<String> = text::index_terms(query);
        let mut count: FastMap<u32, u32> = FastMap::default();
        // A removed slot's IDs are still held, but it has no terms to give.
        for &slot in slots.iter().filter(|&&s| self.is_live(s)) {
            for &id in self.doc_terms(slot as usize) {
                *count.entry(id).or_default() += 1;
            }
        }
        let names: HashMap<u32, &str> = self
            .terms
            .iter()
            .filter(|(_, id)| count.contains_key(id))
            .map(|(t, &id)| (id, t.as_str()))
            .collect();
        let stats = self.stats();
        let mut scored: Vec<(f64, &str)> = count
            .into_iter()
            .filter(|&(_, c)| c >= FEEDBACK_MIN_DOCS)
            .map(|(id, c)| {
                (
                    f64::from(c) * stats.idf(self.postings[id as usize].df),
                    names[&id],
                )
            })
            .filter(|(_, t)| !asked.iter().any(|a| a == t))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(n)
            .map(|(_, t)| t.to_owned())
            .collect()
    }

    /// What `query` weighs: the IDF of each of its distinct terms summed, a term no live
    /// document has counted at the largest IDF. A document holding every term once scores
    /// about this much, so a score over it is the share of the query a document covers.
    pub fn query_weight(&self, query: &str) -> f64 {
        let stats = self.stats();
        let mut terms = text::index_terms(query);
        terms.sort();
        terms.dedup();
        terms
            .iter()
            .map(|t| {
                let df = self
                    .terms
                    .get(t)
                    .map_or(0, |&id| self.postings[id as usize].df);
                stats.idf(df)
            })
            .sum()
    }

    fn query_postings(&self, query: &str) -> Vec<&Postings> {
        let mut terms = text::index_terms(query);
        terms.sort();
        terms.dedup();
        terms
            .iter()
            .filter_map(|t| self.terms.get(t))
            .map(|&id| &self.postings[id as usize])
            .filter(|p| p.df > 0)
            .collect()
    }

    /// The `k` best live documents for `query` among those `allow` accepts, best first as
    /// `(slot, score)`; documents sharing no term are left out; ties go to the earlier slot.
    pub fn search(&self, query: &str, k: usize, allow: impl Fn(u32) -> bool) -> Vec<(u32, f64)> {
        self.search_allowed(query, k, &allow)
    }

    /// [`Self::search`] compiled once, here, with this crate's optimization, whatever crate
    /// asks: a generic search would be compiled in each caller, at the caller's level (an
    /// unoptimized benchmark then times an unoptimized search).
    fn search_allowed(
        &self,
        query: &str,
        k: usize,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let stats = self.stats();
        if k == 0 || self.live_docs == 0 {
            return Vec::new();
        }
        let mut cursors: Vec<Cursor<'_>> = self
            .query_postings(query)
            .into_iter()
            .map(|p| {
                let idf = stats.idf(p.df);
                Cursor {
                    postings: p,
                    idf,
                    bound: stats.term_score(idf, p.max_tf, p.min_len),
                    pos: 0,
                }
            })
            .collect();
        // Ascending bounds: the non-essential terms are a prefix.
        cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound));
        let prefix: Vec<f64> = cursors
            .iter()
            .scan(0.0, |sum, c| {
                *sum += c.bound;
                Some(*sum)
            })
            .collect();
        let mut heap: BinaryHeap<Near> = BinaryHeap::with_capacity(k + 1);
        let mut threshold = f64::NEG_INFINITY;
        // The score of each text held by several documents, once scored here; `None` for one
        // left out by a bound, which the threshold only ever confirms.
        let mut seen: FastMap<u32, Option<f64>> = FastMap::default();
        // Terms before `first_essential` cannot reach the threshold together.
        let mut first_essential = 0;
        loop {
            let doc = cursors[first_essential..]
                .iter()
                .map(Cursor::doc)
                .min()
                .unwrap_or(u32::MAX);
            if doc == u32::MAX {
                break;
            }
            let wanted = self.live[doc as usize] && allow(doc);
            let text = self.doc_text[doc as usize];
            let shared = self.text_docs[text as usize] > 1;
            let known = if wanted && shared {
                seen.get(&text).copied()
            } else {
                None
            };
            let len = self.lens[doc as usize];
            let mut score = 0.0;
            for c in &mut cursors[first_essential..] {
                if c.doc() == doc {
                    if wanted && known.is_none() {
                        score += stats.term_score(c.idf, c.postings.tfs[c.pos], len);
                    }
                    c.pos += 1;
                }
            }
            if !wanted {
                continue;
            }
            match known {
                // Left out when first met, against a threshold that has only risen since.
                Some(None) => continue,
                Some(Some(known)) => score = known,
                None => {}
            }
            // Non-essential terms, highest bound first, while the document can still make it.
            let mut fits = true;
            for i in (0..first_essential).rev() {
                if known.is_some() {
                    break;
                }
                if score + prefix[i] <= threshold {
                    fits = false;
                    break;
                }
                let c = &mut cursors[i];
                c.seek(doc);
                if c.doc() != doc {
                    continue;
                }
                if score + c.block_bound(&stats) + if i > 0 { prefix[i - 1] } else { 0.0 }
                    <= threshold
                {
                    fits = false;
                    break;
                }
                score += stats.term_score(c.idf, c.postings.tfs[c.pos], len);
            }
            if shared && known.is_none() {
                seen.insert(text, fits.then_some(score));
            }
            if !fits || (heap.len() == k && score <= threshold) {
                continue;
            }
            heap.push(Near {
                sim: score,
                slot: doc,
            });
            if heap.len() > k {
                heap.pop();
            }
            if heap.len() == k {
                threshold = heap.peek().map_or(threshold, |s| s.sim);
                while first_essential < cursors.len() && prefix[first_essential] <= threshold {
                    first_essential += 1;
                }
            }
        }
        sorted(heap)
    }

    /// What [`SparseIndex::search`] returns, by scoring every matching document: the reference
    /// the pruned search is tested against.
    pub fn search_exhaustive(
        &self,
        query: &str,
        k: usize,
        allow: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let stats = self.stats();
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for p in self.query_postings(query) {
            let idf = stats.idf(p.df);
            for (&doc, &tf) in p.docs.iter().zip(&p.tfs) {
                if self.live[doc as usize] && allow(doc) {
                    *scores.entry(doc).or_default() +=
                        stats.term_score(idf, tf, self.lens[doc as usize]);
                }
            }
        }
        let mut all: Vec<(u32, f64)> = scores.into_iter().collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }
}

fn sorted(heap: BinaryHeap<Near>) -> Vec<(u32, f64)> {
    // `into_sorted_vec` is ascending by `Ord`, which ranks the best first.
    heap.into_sorted_vec()
        .into_iter()
        .map(|s| (s.slot, s.sim))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn scores_match_the_okapi_formula_and_removal_updates_the_statistics() {
        let mut index = SparseIndex::new();
        let a = index.add("alpha beta");
        let b = index.add("gamma");
        let c = index.add("alpha alpha delta epsilon");
        index.remove(c);
        let hits = index.search("alpha", 5, |_| true);
        // As if `c` never was: N = 2, df = 1, avg length 1.5.
        let idf = 2f64.ln();
        let norm = 1.0 - B + B * 2.0 / 1.5;
        let expected = idf * (K1 + 1.0) / (1.0 + K1 * norm);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, a);
        assert!((hits[0].1 - expected).abs() < 1e-12, "{hits:?}");
        assert!(index.search("delta", 5, |_| true).is_empty());
        assert!(index.search("gamma", 5, |d| d != b).is_empty(), "filtered");
        assert_eq!(index.len(), 2);
        assert_eq!(index.slots(), 3);
    }

    #[test]
    fn a_field_counts_its_weight_and_whole_weight_text_scores_as_before() {
        let texts = ["alpha beta", "gamma alpha alpha", "delta"];
        let mut plain = SparseIndex::new();
        let mut fields = SparseIndex::new();
        for text in texts {
            plain.add(text);
            fields.add_fields(&[(text, 1.0), ("", 0.5)]);
        }
        assert_eq!(
            plain.search("alpha gamma", 5, |_| true),
            fields.search("alpha gamma", 5, |_| true)
        );
        // "alpha" at half weight beside one whole term: tf 0.5, length 1.5, as long as the average.
        let mut half = SparseIndex::new();
        half.add_fields(&[("alpha", 0.5), ("beta", 1.0)]);
        half.add_fields(&[("alpha", 0.5), ("zeta", 1.0)]);
        let idf = (1.0f64 + 0.5 / 2.5).ln();
        let expected = idf * 0.5 * (K1 + 1.0) / (0.5 + K1);
        let hits = half.search("alpha", 5, |_| true);
        assert!((hits[0].1 - expected).abs() < 1e-12, "{hits:?}");
        assert_eq!(hits[0].1, hits[1].1, "same tf, same length");
        let mut skipped = SparseIndex::new();
        skipped.add_fields(&[("alpha", 0.0), ("beta", 1.0)]);
        assert!(skipped.search("alpha", 5, |_| true).is_empty(), "weight 0");
    }

    #[test]
    fn a_follow_up_answer_is_found_by_the_turn_two_before_it_but_ranks_below_it() {
        let turns = [
            "I finished my first screenplay last Friday",
            "Wow! What's it about?",
            "A mix of drama and romance.",
            "We went camping by the lake",
            "The kids loved the campfire",
        ];
        let mut index = SparseIndex::new();
        for (i, own) in turns.iter().enumerate() {
            let document = match i.checked_sub(1) {
                Some(p) => format!("{} || {own}", turns[p]),
                None => (*own).to_owned(),
            };
            index.add_turn(&document, i.checked_sub(2).map(|e| turns[e]));
        }
        let hits = index.search("What genre is the screenplay?", 5, |_| true);
        let slots: Vec<u32> = hits.iter().map(|h| h.0).collect();
        assert_eq!(slots, [0, 1, 2], "{hits:?}");
        assert!(hits[1].1 > hits[2].1, "the earlier turn counts less");
    }

    #[test]
    fn an_inflected_question_finds_the_memory_and_idf_takes_whole_words() {
        let mut index = SparseIndex::new();
        let signed = index.add("Melanie: I just signed up for a pottery class yesterday");
        index.add("Caroline: the parade was fun");
        let hits = index.search("Who is signing up for classes?", 5, |_| true);
        assert_eq!(hits.first().map(|h| h.0), Some(signed), "{hits:?}");
        // The index holds stems; a caller asking about a whole word gets that stem's statistics.
        assert_eq!(index.idf("signing"), index.idf("signed"));
        assert!(index.idf("signing") < index.idf("unheard"));
    }

    #[test]
    fn feedback_finds_the_memory_in_the_words_of_the_first_answers() {
        let mut index = SparseIndex::new();
        index.add("my pottery class works with clay and a kiln");
        index.add("pottery again today, the clay bowl cracked in the kiln");
        let other_words = index.add("I fired my first clay vase in the kiln");
        for filler in ["the parade was fun", "we went camping", "my dog is sick"] {
            index.add(filler);
        }
        let plain = index.search("pottery", 10, |_| true);
        assert!(plain.iter().all(|h| h.0 != other_words), "{plain:?}");
        assert_eq!(
            index.feedback_terms("pottery", &[0, 1], 5),
            ["clay", "kiln"]
        );
        let widened = index.search_with_feedback("pottery", 10, |_| true);
        assert_eq!(widened.len(), 3, "{widened:?}");
        assert_eq!(
            widened[2].0, other_words,
            "the question's own word still leads"
        );
        let refused = index.search_with_feedback("pottery", 10, |d| d != other_words);
        assert!(refused.iter().all(|h| h.0 != other_words), "filtered");
    }

    /// Lessons of a support desk made from a few dozen words (14 subjects, 8 conditions, 9
    /// actions), as a store of alike lessons is: every query term's list holds a large share of
    /// the store and hundreds of documents tie for the top, where a pruning that mishandles a
    /// tie or a bound would show.
    #[test]
    fn pruned_search_equals_exhaustive_top_k_when_every_query_word_is_common() {
        let subjects = [
            "ticket", "invoice", "refund", "outage", "contract", "payroll",
        ];
        let subjects = [
            &subjects[..],
            &["customer", "order", "password reset", "audit log"],
        ];
        let subjects: Vec<&str> = subjects.concat();
        let conditions = [
            "reports errors for many customers",
            "mentions a deadline",
            "comes from a VIP account",
            "asks for a refund over 500 EUR",
            "arrives outside business hours",
        ];
        let actions = [
            "set priority to urgent",
            "never promise a fix date",
            "answer in the customers language",
            "round totals to cents",
        ];
        let mut state: u64 = 42;
        let mut draw = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize % n
        };
        let mut index = SparseIndex::new();
        for _ in 0..3000 {
            let (s, c, a) = (
                subjects[draw(subjects.len())],
                conditions[draw(conditions.len())],
                actions[draw(actions.len())],
            );
            let rule = format!("When a {s} {c}, {a}.");
            index.add(&format!(
                "{rule}\n{rule}\nWhen a {s} {c}.\nThe output did not {a}."
            ));
        }
        for q in 0..60 {
            let (s, c, a) = (
                subjects[draw(subjects.len())],
                conditions[draw(conditions.len())],
                actions[draw(actions.len())],
            );
            let query = match q % 3 {
                0 => format!("a {s} {c}, what should I do"),
                1 => format!("the {s} {c} and I must {a}"),
                _ => format!("{a} urgent"),
            };
            for k in [1, 10, 30] {
                let pruned = index.search(&query, k, |_| true);
                let exact = index.search_exhaustive(&query, k, |_| true);
                assert_eq!(pruned.len(), exact.len(), "{query}");
                for (p, e) in pruned.iter().zip(&exact) {
                    // Tied documents may be summed in another order, so compare scores.
                    assert!(
                        (p.1 - e.1).abs() <= 1e-9 * e.1.abs(),
                        "{query}: {p:?} vs {e:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn documents_share_a_text_only_with_the_same_words_counted_alike() {
        let mut index = SparseIndex::new();
        let a = index.add("refund the invoice");
        let b = index.add("Refunds, the invoices!");
        let c = index.add("refund the invoice invoice");
        let d = index.add("refund refund the invoice");
        let text = |index: &SparseIndex, slot: u32| index.doc_text[slot as usize];
        assert_eq!(
            text(&index, a),
            text(&index, b),
            "the same stems, counted alike"
        );
        assert_ne!(text(&index, a), text(&index, c));
        assert_ne!(
            text(&index, c),
            text(&index, d),
            "the same terms and length, counted otherwise"
        );
        // The text's holder gone, the next copy starts a text of its own, which later
        // copies share.
        index.remove(a);
        let e = index.add("refund the invoice");
        let f = index.add("refund the invoice");
        assert_ne!(text(&index, e), text(&index, b));
        assert_eq!(text(&index, e), text(&index, f));
        let scores = index.search("invoice refund", 10, |_| true);
        let exact = index.search_exhaustive("invoice refund", 10, |_| true);
        assert_eq!(scores, exact);
    }

    /// The answers of a fixed corpus (a few thousand documents over a skewed vocabulary, with
    /// removals, texts held by several documents and documents added after removals), folded
    /// into one digest of every slot and every score's bits: any change to how postings or
    /// per-document terms are held must leave it as the index gave it before they were packed.
    #[test]
    fn a_fixed_corpus_answers_exactly_as_before() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let draw = |next: &mut dyn FnMut(u64) -> u64| {
            let len = 3 + next(18);
            (0..len)
                .map(|_| word(next(400).min(next(400)).min(next(400)) as usize))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut index = SparseIndex::with_idf_floor(50);
        let mut texts: Vec<String> = Vec::new();
        for i in 0..3000 {
            let text = if i % 7 == 3 {
                texts[next(texts.len() as u64) as usize % texts.len()].clone()
            } else {
                draw(&mut next)
            };
            index.add(&text);
            texts.push(text);
            if i % 11 == 5 {
                index.remove(next(index.slots() as u64) as u32);
            }
        }
        let mut digest = 0xcbf2_9ce4_8422_2325u64;
        let mut fold = |x: u64| {
            for b in x.to_le_bytes() {
                digest = (digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        for q in 0..200 {
            let query = draw(&mut next);
            let k = 1 + (q % 25) as usize;
            for (slot, score) in index.search(&query, k, |s| s % 5 != 2) {
                fold(u64::from(slot));
                fold(score.to_bits());
            }
            for (slot, score) in index.search_with_feedback(&query, k, |_| true) {
                fold(u64::from(slot));
                fold(score.to_bits());
            }
            fold(index.query_weight(&query).to_bits());
        }
        assert_eq!(digest, 0x1e85_97ec_5c1b_1d42, "digest {digest:#x}");
    }

    /// Texts over a small vocabulary with skewed frequencies, like a memory with a few
    /// speakers and many topics.
    fn corpus() -> impl Strategy<Value = Vec<Vec<usize>>> {
        prop::collection::vec(prop::collection::vec(0usize..40, 1..12), 1..300)
    }

    fn word(i: usize) -> String {
        // Low numbers are common (they are drawn by min of two), high ones rare.
        format!("w{i}")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The pruned search returns the exhaustive top k: same documents, same scores, in
        /// the same order, with removals and a filter, and with texts that several documents
        /// hold (each copied up to twice more, the corpus sometimes added twice over), which a
        /// search scores once.
        #[test]
        fn pruned_search_equals_exhaustive_top_k(
            docs in corpus(),
            skew in prop::collection::vec(0usize..40, 300),
            copies in prop::collection::vec(0usize..3, 300),
            twice in any::<bool>(),
            removed in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
            query in prop::collection::vec(0usize..45, 1..8),
            k in 1usize..30,
            modulus in 1u32..5,
        ) {
            let mut index = SparseIndex::new();
            for _ in 0..if twice { 2 } else { 1 } {
                for (i, doc) in docs.iter().enumerate() {
                    let words: Vec<String> =
                        doc.iter().map(|&w| word(w.min(skew[i % skew.len()]))).collect();
                    for _ in 0..=copies[i % copies.len()] {
                        index.add(&words.join(" "));
                    }
                }
            }
            let slots = index.slots();
            for r in &removed {
                index.remove(r.index(slots) as u32);
            }
            // A text whose first holder was removed is given again, to a new text.
            if let Some(doc) = docs.first() {
                let words: Vec<String> = doc.iter().map(|&w| word(w.min(skew[0]))).collect();
                index.add(&words.join(" "));
            }
            let query: Vec<String> = query.into_iter().map(word).collect();
            let query = query.join(" ");
            let allow = |d: u32| d % modulus != 1;
            let pruned = index.search(&query, k, allow);
            let exact = index.search_exhaustive(&query, k, allow);
            prop_assert_eq!(pruned.len(), exact.len());
            for (p, e) in pruned.iter().zip(&exact) {
                prop_assert!((p.1 - e.1).abs() <= 1e-9 * e.1.abs().max(1.0), "{:?} vs {:?}", p, e);
                // Equal scores may be summed in another order; only then may documents differ.
                if p.0 != e.0 {
                    let tie = exact.iter().any(|x| x.0 == p.0 && (x.1 - p.1).abs() <= 1e-9);
                    prop_assert!(tie || (p.1 - exact[exact.len() - 1].1).abs() <= 1e-9,
                        "{:?} vs {:?}", pruned, exact);
                }
            }
        }
    }
}
