//! `Engine::recall`: the recall pipeline over the Engine's recall index.
//!
//! Candidates come only from the index ([`lore_recall::lessons`]), which holds the lessons the
//! store lists as retrievable and is brought up to the store's revision before every query;
//! every search inside it admits only lessons of skills this handle's scope (and the query's
//! skill) allows. Each candidate is checked again when it becomes a pipeline [`Entry`] (scope
//! and status), and a candidate from any source that is not in the index is dropped as
//! unknown. So a lesson outside the scope or in an ineligible state cannot reach a context
//! even if one search misbehaves.

use lore_recall::FastMap;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tracing::instrument;

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus};
use lore_core::scope::{Scope, SkillPath};
use lore_recall::applies::{QueryWords, condition_match};
use lore_recall::lessons::{self, IndexInfo, IndexState, RecallIndex, SharedIndex, Shown};
use lore_recall::{
    Decision, DropReason, Eligibility, Embedder, EmbedderId, Entries, Entry, Explanation, Hit,
    MemoryFilter, NEAR_TIE, NON_INFERABLE_TAG, QueryShape, RankedList, RecallConfig, Recalled,
    Scale, Source, Tokenizer, calibrate, run,
};

/// What [`Engine::reembed`] did.
#[derive(Clone, Debug, Serialize)]
pub struct ReembedReport {
    /// The embedder that made the vectors, as fitted.
    pub embedder: EmbedderId,
    /// Lessons embedded.
    pub lessons: usize,
}

/// What to recall.
#[derive(Clone, Debug, Default)]
pub struct RecallQuery {
    /// The task or question, in plain words.
    pub text: String,
    /// Only lessons of this skill.
    pub skill: Option<SkillPath>,
    /// An error (raw or fingerprinted): lessons triggered by it rank first (seed 003).
    pub fingerprint: Option<String>,
    /// Failure tags: lessons sharing them rank higher (seed 003).
    pub tags: Vec<String>,
    /// A token budget instead of the configured one.
    pub budget: Option<usize>,
    /// At most this many lessons instead of the configured limit.
    pub limit: Option<usize>,
    /// Return every candidate's explanation ([`RecallResult::explain`]).
    pub explain: bool,
    /// A key naming this run (a run or session ID). Every recall holds lessons still being
    /// measured out at random ([`Engine::held_out`]); a key makes that draw reproducible.
    /// Without one, the recalls an Engine makes before the run is recorded draw alike, so a
    /// run that recalls at each step holds a lesson out of all its steps or of none. With
    /// one, a lesson the utility gate suppressed on thin evidence is also tried in a small share
    /// of the runs it matches ([`Engine::exploration`]), after the context and marked as
    /// explored, so a wrong verdict can be undone by evidence; without one, suppressed lessons
    /// stay out.
    pub explore: Option<String>,
}

/// One lesson placed in the context.
#[derive(Clone, Debug, Serialize)]
pub struct RecalledLesson {
    /// The lesson.
    pub id: LessonId,
    /// Its skill.
    pub skill: SkillPath,
    /// Its status (approved, or trial in auto curation).
    pub status: LessonStatus,
    /// The tier shown: 0 summary, 1 rule and conditions, 2 with steps.
    pub tier: usize,
    /// Its tokens.
    pub tokens: usize,
    /// Its final score.
    pub score: f64,
}

/// A recall's context and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct RecallResult {
    /// The tokenizer that counted the budget.
    pub tokenizer: String,
    /// The embedder that made the dense candidates (as fitted, with its frozen fit).
    pub embedder: EmbedderId,
    /// The budget in tokens.
    pub budget: usize,
    /// Tokens used.
    pub tokens: usize,
    /// The context: each lesson quoted with its provenance.
    pub text: String,
    /// The lessons in it, in order.
    pub lessons: Vec<RecalledLesson>,
    /// Lessons this recall would have placed but left out to measure them: they are still on
    /// trial or not yet surely helpful, and this run is part of their control. Record the run
    /// with the lessons shown as usual; these are simply not among them.
    pub held_out: Vec<LessonId>,
    /// Every candidate: sources, scores, kept or dropped and why; only when the query asked
    /// ([`RecallQuery::explain`]), since most callers want the context alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Explanation>>,
    /// Past sessions placed after the lessons (`recall.episodes` in the settings; none by
    /// default).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub episodes: Vec<crate::episode_texts::RecalledEpisode>,
    /// `ready`: candidates came from the full index; `warming`: it was still building, and
    /// they came from the store's own full-text search ([`Engine::with_background_index`]).
    pub index: IndexState,
    /// The failure tags read from the query's error, beside the tags it named.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inferred_tags: Vec<String>,
}

impl RecallResult {
    /// Adds `block` as the context's last line when the whole still fits the budget; whether
    /// it did.
    pub(crate) fn append(&mut self, block: &str, tokenizer: &dyn Tokenizer) -> bool {
        let text = if self.text.is_empty() {
            block.to_owned()
        } else {
            format!("{}\n{block}", self.text)
        };
        let tokens = tokenizer.count(&text);
        if tokens > self.budget {
            return false;
        }
        self.text = text;
        self.tokens = tokens;
        true
    }
}

impl Engine {
    /// Uses `embedder` for dense recall candidates (default: the builtin embedder). Unless a
    /// recall config was given, the fusion becomes the embedder's default
    /// ([`RecallConfig::fusion_for`]). A semantic embedder (a model, a service) keeps the
    /// vectors of the last questions it was asked ([`lore_recall::QueryCache`]).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.recall.embedder = if embedder.semantic() {
            Arc::new(lore_recall::QueryCache::new(
                embedder,
                lore_recall::QUERY_CACHE_TEXTS,
            ))
        } else {
            embedder
        };
        self.recall.index = SharedIndex::default();
        // A build under way fills the old index; the new one gets its own.
        let background = self.recall.warmup.is_background();
        self.recall.warmup = Arc::default();
        if background {
            self.recall.warmup.background();
        }
        self
    }

    /// The tokenizer budgets are counted with.
    pub(crate) fn tokenizer(&self) -> &dyn Tokenizer {
        self.recall.tokenizer.as_ref()
    }

    /// Counts recall budgets with `tokenizer` (default: [`ApproxTokenizer`]).
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn Tokenizer>) -> Self {
        self.recall.tokenizer = tokenizer;
        self
    }

    /// Uses `config` for recall, its fusion whatever the embedder.
    pub fn with_recall_config(mut self, config: RecallConfig) -> Self {
        self.recall.config = config;
        self.recall.configured = true;
        self
    }

    /// The lessons that fit `query`, packed into its token budget, with an explanation.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside the scope, [`Error::Invalid`] for an empty query,
    /// a budget or a limit of 0; [`Error::Incompatible`] when the stored vectors were made by
    /// another embedder than the configured one; store and embedder failures.
    #[instrument(skip_all, fields(skill = ?query.skill))]
    pub fn recall(&self, query: &RecallQuery) -> Result<RecallResult> {
        // An error names its kind of failure in words a signal with that message would have
        // been tagged by, so lessons learned from failures like it rank higher even when their
        // fingerprint differs; every door reads the error alike.
        let inferred: Vec<String> = query
            .fingerprint
            .as_deref()
            .map(crate::capture::error_tags)
            .unwrap_or_default()
            .into_iter()
            .filter(|t| !query.tags.contains(t))
            .collect();
        if inferred.is_empty() {
            return self.recall_as_asked(query, inferred);
        }
        let widened = RecallQuery {
            tags: query.tags.iter().chain(&inferred).cloned().collect(),
            ..query.clone()
        };
        self.recall_as_asked(&widened, inferred)
    }

    fn recall_as_asked(
        &self,
        query: &RecallQuery,
        inferred_tags: Vec<String>,
    ) -> Result<RecallResult> {
        if let Some(skill) = &query.skill
            && !self.scope.allows(skill)
        {
            return Err(Error::Forbidden(format!(
                "{skill} is outside this handle's scope"
            )));
        }
        let has_error = query.fingerprint.is_some() || !query.tags.is_empty();
        if query.text.trim().is_empty() && !has_error {
            return Err(Error::invalid("query", "give words, a fingerprint or tags"));
        }
        let config = self.recall_config(query)?;
        if let Some(key) = &query.explore {
            lore_core::limits::name("run", key)?;
        }
        let statuses: Vec<LessonStatus> = self.retrievable_statuses().into_iter().collect();
        let pool = config.limit * config.pool_multiplier;
        let held = self.held_index(query, pool, &statuses)?;
        let index: &RecallIndex = &held;
        // Scope and skill are enforced inside every search, so a narrow handle still gets its
        // own top k rather than what is left of everyone's.
        let (mask, allowed) = index.skill_mask(|skill| {
            self.scope.allows(skill) && query.skill.as_ref().is_none_or(|q| q == skill)
        });
        // Another member's own lesson is not a candidate at all, so it takes no place in a
        // search's top k; only lessons with an organization mark need the look-up.
        let view = self.view();
        let curator = lore_core::org::sees_everything(&view);
        let admits = |slot: u32| {
            index.admits(&mask, slot)
                && (curator || index.doc(slot).is_some_and(|d| d.visible(&view)))
        };
        let sparse = index.sparse.search(&query.text, pool, admits);
        let vector = if query.text.trim().is_empty() {
            None
        } else {
            Some(index.embedder.embed(&query.text)?)
        };
        let dense = vector
            .as_ref()
            .map_or_else(Vec::new, |q| index.dense.search(q, pool, allowed, admits));
        let scales = [
            calibrate::sparse(index.sparse.query_weight(&query.text)),
            calibrate::dense(index.embedder.semantic()),
            Scale::MinMax,
            Scale::MinMax,
        ];
        let found = [
            (Source::Sparse, sparse),
            (Source::Dense, dense),
            (
                Source::Fingerprint,
                fingerprint_candidates(query.fingerprint.as_deref(), index, &admits),
            ),
            (Source::Tags, tag_candidates(&query.tags, index, &admits)),
        ];
        let mut slots: Vec<u32> = found
            .iter()
            .flat_map(|(_, hits)| hits.iter().map(|&(slot, _)| slot))
            .collect();
        slots.sort_unstable();
        slots.dedup();
        // What the query's error found is held to the error, not to a condition's words.
        let by_error: HashSet<u32> = found[2..]
            .iter()
            .flat_map(|(_, hits)| hits.iter().map(|&(slot, _)| slot))
            .collect();

        // Every recall is part of the experiment: a lesson still being measured sits out a share
        // of recalls, drawn once here for each candidate, and those runs become its control.
        // Without a key, the recalls of one run (those before its record) draw alike.
        let unkeyed = self.recall.unkeyed.key();
        let run_key = query.explore.as_deref().unwrap_or(&unkeyed);
        let drawn: HashSet<u32> = slots
            .iter()
            .copied()
            .filter(|_| self.recall.measuring)
            .filter(|&slot| {
                index.doc(slot).is_some_and(|d| {
                    Engine::held_out_for(&index.full(d), &query.text, Some(run_key))
                })
            })
            .collect();
        let words = QueryWords::of(&query.text);
        let semantic = index.embedder.semantic();
        let entries = self.entries(index, &slots, |slot, shown| {
            let condition = shown.condition.as_ref()?;
            if words.is_empty() || by_error.contains(&slot) {
                return None;
            }
            // A sentence model that places the task close to the lesson has read the condition
            // in other words than its own.
            if let Some(q) = &vector
                && calibrate::meets_by_meaning(
                    semantic,
                    lore_recall::cosine(q, index.dense.vector(slot)),
                )
            {
                return None;
            }
            // A word every lesson of the skill carries (its tool's name) says which lessons
            // these are, not which of them the task is about.
            let skill = index.skill_words(index.doc(slot)?);
            Some(condition_match(
                condition,
                &shown.stems,
                &words,
                skill,
                |w| index.sparse.idf(w),
            ))
        });
        let shape = QueryShape {
            on_error: has_error,
        };
        let tokenizer = self.recall.tokenizer.as_ref();
        let (config, marked) = non_inferable(config, &entries, index);
        let filters: Vec<&dyn MemoryFilter> = match &marked {
            Some(filter) => vec![filter],
            None => Vec::new(),
        };
        let pipeline = |held: &HashSet<u32>| {
            let lists: Vec<RankedList> = found
                .iter()
                .zip(&scales)
                .map(|((source, hits), scale)| RankedList {
                    scale: *scale,
                    source: *source,
                    hits: hits
                        .iter()
                        .filter(|(slot, _)| !held.contains(slot))
                        .filter_map(|&(slot, score)| {
                            index.doc(slot).map(|d| Hit {
                                id: d.id.as_str().to_owned(),
                                score,
                            })
                        })
                        .collect(),
                })
                .collect();
            run(&lists, &entries, shape, &config, &filters, tokenizer)
        };
        // Only a lesson that would have been placed is held out: the recall is made whole
        // first, and made again without the drawn lessons only when one of them was placed.
        let mut recalled = pipeline(&HashSet::new());
        let mut drawn = drawn;
        let mut rivals = Vec::new();
        if self.recall.measuring {
            let rotation = rotated(index, &recalled, &drawn, query);
            drawn.extend(rotation.incumbents);
            rivals = rotation.rivals;
        }
        let held_out: Vec<LessonId> = recalled
            .packed
            .items
            .iter()
            .filter_map(|item| index.lesson(&item.id))
            .filter(|(slot, _)| drawn.contains(slot))
            .map(|(_, lesson)| lesson.id)
            .collect();
        if !held_out.is_empty() {
            // A held-out lesson's place goes only to a lesson about the same situation: its
            // control is then the same recall without it, or with an alternative to it. Given
            // to the next candidate whatever it was, the place went mostly to a lesson about
            // another task, shown exactly where this task's own lesson was missing; its runs
            // then failed for want of that lesson and it was judged harmful for it.
            let waiting = left_out(&recalled, index, &drawn, &rivals);
            let mut without = drawn.clone();
            without.extend(waiting.iter().copied());
            let first = std::mem::replace(&mut recalled, pipeline(&without));
            recalled
                .explain
                .extend(first.explain.into_iter().filter(|e| {
                    index
                        .lesson(&e.id)
                        .is_some_and(|(s, _)| waiting.contains(&s))
                }));
        }
        let placed = recalled
            .packed
            .items
            .iter()
            .filter_map(|item| {
                let (_, lesson) = index.lesson(&item.id)?;
                let score = recalled.explain.iter().find(|e| e.id == item.id)?.score;
                Some(RecalledLesson {
                    id: lesson.id.clone(),
                    skill: lesson.skill.clone(),
                    status: lesson.status,
                    tier: item.tier,
                    tokens: item.tokens,
                    score,
                })
            })
            .collect();
        let mut result = RecallResult {
            tokenizer: tokenizer.name().to_owned(),
            embedder: index.embedder.id(),
            budget: config.budget,
            tokens: recalled.packed.tokens,
            text: recalled.packed.text,
            lessons: placed,
            held_out,
            explain: query.explain.then_some(recalled.explain),
            episodes: Vec::new(),
            index: held.state(),
            inferred_tags,
        };
        drop(held);
        if let Some(key) = &query.explore {
            self.add_explored(&mut result, query, key)?;
        }
        self.add_episodes(&mut result, query)?;
        Ok(result)
    }

    /// Appends the suppressed lessons [`Engine::exploration`] picks for the run `key`, within
    /// what is left of the budget, each quoted like any other and marked as explored.
    fn add_explored(
        &self,
        result: &mut RecallResult,
        query: &RecallQuery,
        key: &str,
    ) -> Result<()> {
        let tokenizer = self.recall.tokenizer.as_ref();
        for lesson in self.exploration(query, key)? {
            if result.lessons.iter().any(|l| l.id == lesson.id) {
                continue;
            }
            let shown = Shown::of(&lesson);
            let tier = shown.tiers.len().min(2) - 1;
            let block = format!(
                "{}\n  _Explored_: suppressed earlier; shown again to measure it.",
                shown.tiers[tier]
            );
            let before = result.tokens;
            if !result.append(&block, tokenizer) {
                continue;
            }
            result.lessons.push(RecalledLesson {
                id: lesson.id.clone(),
                skill: lesson.skill.clone(),
                status: lesson.status,
                tier,
                tokens: result.tokens - before,
                score: 0.0,
            });
        }
        Ok(())
    }

    /// Fits the configured embedder again to the retrievable lessons and re-embeds every
    /// lesson with it, calling `progress(done, total)` as it goes; the in-memory index is
    /// rebuilt by the next recall. Switching embedders is this with another configured one.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a scoped handle (it rewrites every lesson's vector);
    /// [`Error::Conflict`] while an adapter checkpoint is active; store and embedder failures
    /// (vectors already written stay valid: each names its embedder).
    pub fn reembed(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<ReembedReport> {
        if self.scope != Scope::unrestricted() {
            return Err(Error::Forbidden(
                "re-embedding rewrites every lesson's vector; it needs an unrestricted handle"
                    .into(),
            ));
        }
        if let Some(checkpoint) = lessons::active_checkpoint(self.store.as_ref())? {
            // A new fit would move the vectors under the adapter trained on the old one.
            return Err(Error::Conflict(format!(
                "checkpoint {checkpoint} is active and was trained on the current fit; roll \
                 back to the base embedder (`lore embedder rollback base`) before re-embedding"
            )));
        }
        let statuses: Vec<LessonStatus> = self.retrievable_statuses().into_iter().collect();
        let mut guard = self
            .recall
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = None;
        let (embedder, lessons) = lessons::reembed(
            self.store.as_ref(),
            &self.recall.embedder,
            &statuses,
            progress,
        )?;
        Ok(ReembedReport { embedder, lessons })
    }

    /// What the recall index holds and how it came to be (built, or loaded from the file
    /// beside the store), once a recall has made it.
    pub fn recall_index_info(&self) -> Option<IndexInfo> {
        self.recall
            .index
            .read()
            .ok()?
            .as_ref()
            .map(RecallIndex::info)
    }

    /// What the recall index holds in memory, part by part, once it is in (see
    /// [`RecallIndex::memory`]: it walks every lesson, so it is for a measurement).
    pub fn recall_index_memory(&self) -> Option<lore_recall::lessons::IndexMemory> {
        self.recall
            .index
            .read()
            .ok()?
            .as_ref()
            .map(RecallIndex::memory)
    }

    /// Deletes the recall index saved beside the store (it names lessons and hashes their
    /// text); this process writes it again at its next query.
    pub(super) fn forget_saved_index(&self) {
        lessons::forget_saved(&self.recall.index, self.store.as_ref());
    }

    /// The embedder the stored vectors were made with (as fitted), if any were made yet.
    ///
    /// # Errors
    /// Store failures; [`Error::Incompatible`] for an unreadable state.
    pub fn stored_embedder(&self) -> Result<Option<EmbedderId>> {
        Ok(lessons::stored_state(self.store.as_ref())?.map(|s| s.fitted))
    }

    /// Gives newly written lessons their vectors at once, with the stored fit, so the next
    /// recall only reads them. Before the first recall there is no fit yet and the first
    /// build embeds everything; a failure here is logged, not returned (the lesson is
    /// stored, and the next recall embeds what lacks a vector).
    pub(super) fn embed_written(&self, lessons: &[&Lesson]) {
        let result = (|| -> Result<()> {
            let embedder = match self
                .recall
                .index
                .read()
                .ok()
                .and_then(|g| g.as_ref().map(|i| i.embedder.clone()))
            {
                Some(embedder) => embedder,
                None => {
                    match lessons::stored_embedder(self.store.as_ref(), &self.recall.embedder)? {
                        Some((embedder, _)) => embedder,
                        None => return Ok(()),
                    }
                }
            };
            lessons::embed_and_store(self.store.as_ref(), embedder.as_ref(), lessons, &mut |_| {})?;
            Ok(())
        })();
        if let Err(err) = result {
            tracing::warn!(%err, "the new lessons get their vectors at the next recall");
        }
    }

    fn recall_config(&self, query: &RecallQuery) -> Result<RecallConfig> {
        let mut config = self.recall.config.clone();
        if !self.recall.configured {
            config.fusion = RecallConfig::calibrated_fusion_for(self.recall.embedder.semantic());
        }
        config.budget = lore_core::limits::budget(
            "budget",
            query.budget,
            config.budget,
            lore_core::limits::MAX_RECALL_BUDGET,
        )?;
        if let Some(limit) = query.limit {
            if limit == 0 || limit > lore_core::limits::MAX_PAGE {
                return Err(Error::invalid(
                    "limit",
                    format!("{limit} is outside 1 to {}", lore_core::limits::MAX_PAGE),
                ));
            }
            config.limit = limit;
        }
        Ok(config)
    }

    /// The pipeline's entries for the candidates in `slots`, borrowing what the index keeps.
    fn entries<'i>(
        &self,
        index: &'i RecallIndex,
        slots: &[u32],
        condition_match: impl Fn(u32, &Shown) -> Option<f64>,
    ) -> Entries<'i> {
        let now = self.now();
        let sessions = self.source_sessions(index, slots);
        slots
            .iter()
            .filter_map(|&slot| index.doc(slot).map(|doc| (slot, doc)))
            .map(|(slot, doc)| {
                let lesson = &index.full(doc);
                let shown = doc.shown.get_or_init(|| Box::new(Shown::of(lesson)));
                let entry = Entry {
                    id: lesson.id.as_str().to_owned(),
                    text: Cow::Borrowed(&shown.text),
                    vector: Some(Cow::Borrowed(index.dense.vector(slot))),
                    tags: Cow::Owned(cap_tags(&lesson.tags).into_owned()),
                    session: lesson
                        .execution_id
                        .as_ref()
                        .and_then(|id| sessions.get(id).cloned().flatten()),
                    age_hours: age_hours(lesson.updated_at, now),
                    reliability: reliability(lesson),
                    standing: crate::measure::standing(lesson),
                    utility: lesson.utility.utility,
                    confidence: lesson.confidence,
                    eligibility: self.eligibility(lesson),
                    conflicts_with: Cow::Borrowed(&shown.conflicts),
                    tiers: Cow::Borrowed(&shown.tiers),
                    condition_match: condition_match(slot, shown),
                    personal: self.scope.agent.is_some()
                        && lore_core::org::owner(lesson) == self.scope.agent,
                };
                (entry.id.clone(), entry)
            })
            .collect()
    }

    /// The session of each candidate's source execution (seed 003's cap on lessons per prior
    /// session), read from the store once per execution and kept. A store failure leaves the
    /// lesson without a session: the cap is a guard on variety, not worth failing a recall for.
    fn source_sessions(
        &self,
        index: &RecallIndex,
        slots: &[u32],
    ) -> std::collections::HashMap<lore_core::id::ExecutionId, Option<String>> {
        let mut cache = self
            .recall
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = std::collections::HashMap::new();
        for id in slots
            .iter()
            .filter_map(|&slot| index.full(index.doc(slot)?).execution_id)
        {
            if !cache.contains_key(&id) {
                match self.store.execution(&id) {
                    Ok(found) => {
                        cache.insert(id.clone(), found.and_then(|e| e.session));
                    }
                    Err(err) => {
                        tracing::warn!(%err, "a lesson's source session is unknown");
                        continue;
                    }
                }
            }
            out.insert(id.clone(), cache[&id].clone());
        }
        out
    }

    /// Scope and status, checked again here so that no single layer decides alone.
    fn eligibility(&self, lesson: &Lesson) -> Eligibility {
        if !self.scope.allows(&lesson.skill) {
            return Eligibility::Ineligible(format!("{} is outside the scope", lesson.skill));
        }
        if !lore_core::org::visible(lesson, &self.view()) {
            return Eligibility::Ineligible("another agent's own lesson".into());
        }
        match lesson.status {
            LessonStatus::Sensitive => Eligibility::Sensitive,
            s if s.is_retrievable(self.config.curation) => Eligibility::Eligible,
            s => Eligibility::Ineligible(format!("status {}", s.as_str())),
        }
    }
}

/// Placed lessons that give their place to a near-tied rival this time, and those rivals.
struct Rotation {
    incumbents: Vec<u32>,
    rivals: Vec<u32>,
}

/// The candidates the limit (or the pool) left out of `recalled` that may not take the place
/// of a placed lesson held out this time (in `drawn`): all but those about the same situation as
/// one of them. Such a stand-in is a `rival` a rotation gives the place to, a lesson that
/// shares a held-out lesson's trigger (it is about the same error), or one the recall cannot
/// tell from it by relevance (a near-tie). A lesson dropped as a conflict is not counted here:
/// a conflict needs the same situation.
fn left_out(
    recalled: &Recalled,
    index: &RecallIndex,
    drawn: &HashSet<u32>,
    rivals: &[u32],
) -> HashSet<u32> {
    let held: Vec<(Lesson, f64)> = recalled
        .packed
        .items
        .iter()
        .filter_map(|item| Some((index.lesson(&item.id)?, score_of(recalled, &item.id)?)))
        .filter(|((slot, _), _)| drawn.contains(slot))
        .map(|((_, lesson), at)| (lesson, at))
        .collect();
    let stands_in = |candidate: &Lesson, at: f64| {
        held.iter().any(|(lesson, s)| {
            (at - s).abs() < NEAR_TIE
                || lesson
                    .triggers
                    .iter()
                    .any(|t| candidate.triggers.contains(t))
        })
    };
    over_limit(recalled, index, true)
        .filter(|(slot, lesson, at)| !rivals.contains(slot) && !stands_in(lesson, *at))
        .map(|(slot, _, _)| slot)
        .collect()
}

/// A candidate's final score in `recalled`.
fn score_of(recalled: &Recalled, id: &str) -> Option<f64> {
    recalled
        .explain
        .iter()
        .find(|e| e.id == id)
        .map(|e| e.score)
}

/// The candidates the limit left out of `recalled` (with `outside_pool`, those the pool left out
/// too), best score first, with their slots and scores.
fn over_limit<'r>(
    recalled: &'r Recalled,
    index: &'r RecallIndex,
    outside_pool: bool,
) -> impl Iterator<Item = (u32, Lesson, f64)> + 'r {
    recalled
        .explain
        .iter()
        .filter(move |e| match &e.decision {
            Decision::Dropped {
                why: DropReason::OverLimit,
            } => true,
            Decision::Dropped {
                why: DropReason::OutsidePool,
            } => outside_pool,
            _ => false,
        })
        .filter_map(|e| {
            index
                .lesson(&e.id)
                .map(|(slot, lesson)| (slot, lesson, e.score))
        })
}

/// The placed lessons that give their place this time to a near-tied candidate still under
/// measurement ([`Engine::rotates`]): only a candidate the limit left out, and that this recall
/// did not draw to sit out, competes for it. Each incumbent names its best such rival.
fn rotated(
    index: &RecallIndex,
    recalled: &Recalled,
    drawn: &HashSet<u32>,
    query: &RecallQuery,
) -> Rotation {
    let left_out: Vec<(u32, Lesson, f64)> = over_limit(recalled, index, false)
        .filter(|(slot, _, _)| !drawn.contains(slot))
        .collect();
    let mut rotation = Rotation {
        incumbents: Vec::new(),
        rivals: Vec::new(),
    };
    for item in &recalled.packed.items {
        let (Some((slot, placed)), Some(at)) =
            (index.lesson(&item.id), score_of(recalled, &item.id))
        else {
            continue;
        };
        let rival = left_out.iter().find(|(rival_slot, rival, s)| {
            !rotation.rivals.contains(rival_slot)
                && (at - s).abs() < NEAR_TIE
                && Engine::rotates(&placed, rival, &query.text)
        });
        if let Some((rival_slot, _, _)) = rival {
            rotation.incumbents.push(slot);
            rotation.rivals.push(*rival_slot);
        }
    }
    rotation
}

fn fingerprint_candidates(
    error: Option<&str>,
    index: &RecallIndex,
    admits: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f64)> {
    let Some(raw) = error else {
        return Vec::new();
    };
    let (raw, normalized) = (raw.trim().to_owned(), lore_core::fingerprint(raw));
    let mut slots: Vec<u32> = index.with_trigger(&raw).to_vec();
    slots.extend(index.with_trigger(&normalized));
    slots.sort_unstable();
    slots.dedup();
    slots
        .into_iter()
        .filter(|&s| admits(s))
        .map(|s| (s, 1.0))
        .collect()
}

/// Lessons sharing the query's tags, scored by the share of the query's tags they carry.
fn tag_candidates(
    tags: &[String],
    index: &RecallIndex,
    admits: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f64)> {
    let mut shared: FastMap<u32, usize> = FastMap::default();
    let mut distinct = tags.to_vec();
    distinct.sort();
    distinct.dedup();
    for tag in &distinct {
        for &slot in index.with_tag(tag) {
            if admits(slot) {
                *shared.entry(slot).or_default() += 1;
            }
        }
    }
    let mut scored: Vec<(u32, usize)> = shared.into_iter().collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .map(|(slot, n)| (slot, n as f64 / tags.len() as f64))
        .collect()
}

fn age_hours(at: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    (now - at).num_seconds() as f64 / 3600.0
}

/// Confidence, blended half and half with measured utility once there is any.
fn reliability(lesson: &Lesson) -> f64 {
    let confidence = lesson.confidence.clamp(0.0, 1.0);
    match lesson.utility.utility {
        Some(u) => 0.5 * confidence + 0.5 * (u.clamp(-1.0, 1.0) + 1.0) / 2.0,
        None => confidence,
    }
}

/// A lesson's tags as the per-tag caps count them: without the non-inferable marker, which
/// most lessons share once the filter is on and which would otherwise cap the whole context
/// at `max_per_tag`.
fn cap_tags(tags: &[String]) -> Cow<'_, [String]> {
    if tags.iter().any(|t| t == NON_INFERABLE_TAG) {
        Cow::Owned(
            tags.iter()
                .filter(|t| *t != NON_INFERABLE_TAG)
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(tags)
    }
}

/// Seed 002's non-inferable filter over the lessons' stored tags: the entries' tags no longer
/// carry the marker ([`cap_tags`]), so the Engine names the marked lessons itself and the
/// pipeline's own tag filter is turned off in favour of this one.
struct MarkedNonInferable(HashSet<String>);

impl MemoryFilter for MarkedNonInferable {
    fn name(&self) -> &str {
        NON_INFERABLE_TAG
    }

    fn keep(&self, entry: &Entry) -> Result<bool> {
        Ok(self.0.contains(&entry.id))
    }
}

fn non_inferable(
    mut config: RecallConfig,
    entries: &Entries<'_>,
    index: &RecallIndex,
) -> (RecallConfig, Option<MarkedNonInferable>) {
    if !config.non_inferable_only {
        return (config, None);
    }
    config.non_inferable_only = false;
    let marked = entries
        .keys()
        .filter(|id| {
            index
                .lesson(id)
                .is_some_and(|(_, l)| l.tags.iter().any(|t| t == NON_INFERABLE_TAG))
        })
        .cloned()
        .collect();
    (config, Some(MarkedNonInferable(marked)))
}
