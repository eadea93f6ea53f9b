//! `lore bench locomo`: evidence recall on LoCoMo, measured through the recall pipeline's parts.
//!
//! Each dialog turn becomes a memory, `(session date) speaker: text` with an image caption
//! appended; each QA question is asked within its own conversation; a question scores the share
//! of its evidence turns found in the top k (LoCoMo's `recall_acc`), averaged per category and
//! overall. The candidate lists come from the same components `lore recall` uses (Okapi BM25
//! over stems with stop words, the `--embedder` with exact dense search, fitted to the conversation when the
//! embedder learns from its corpus, as the Engine fits it to a store) and the fusions are the
//! pipeline's own [`rank`], so the figures measure the engine's retrieval logic, not a copy.
//! `bm25_feedback` and `default_feedback` widen BM25 by pseudo-relevance feedback, which the
//! Engine does not (see [`Feedback`]). `pipeline` runs the whole of [`run`] (MMR λ 0.7 over a pool of 75) with caps and budget off,
//! since every turn is in scope and a session cap would hide evidence by design.
//!
//! `conversation_log` is not built here: it writes each conversation into Lore's own
//! conversation log and asks the Engine (see `log.rs`), so it measures what an agent using the
//! log gets; it always finds an entry after the one before it, whatever `--turn-text` says.
//!
//! `--split dev` asks every other question of each conversation (from the first), `heldout` the
//! rest: defaults are chosen on `dev` and reported on both.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use lore_recall::{
    ApproxTokenizer, ContextSpread, Eligibility, Embedder, Entries, Entry, Fusion, Hit, QueryShape,
    RankedList, RecallConfig, Sequences, Source, SparseIndex, VectorIndex, rank, run, spread,
};
use serde::Serialize;
use serde_json::Value;

use crate::Out;
use crate::Split;

mod log;
use log::ConversationLog;

const KS: [usize; 3] = [5, 10, 25];

const CATEGORIES: [(u64, &str); 5] = [
    (1, "multi_hop"),
    (2, "temporal"),
    (3, "open_domain"),
    (4, "single_hop"),
    (5, "adversarial"),
];

/// The methods compared, in report order. Dense lists use the embedder fitted to the
/// conversation's turns when it fits (the builtin one: IDF); `unfitted` methods use it as is and
/// are only listed for an embedder that fits. `default` is the Engine's fusion for this embedder.
fn methods(fits: bool, default: Fusion) -> Vec<(&'static str, Method)> {
    use Dense::{Fitted, Unfitted};
    let mut methods = vec![
        ("bm25", Method::Sparse(Feedback::Off)),
        ("bm25_feedback", Method::Sparse(Feedback::On)),
        ("dense", Method::Dense(Fitted)),
        ("rrf_k60", Method::Fused(Fusion::Rrf { k: 60.0 }, Fitted)),
        ("rrf_k10", Method::Fused(Fusion::Rrf { k: 10.0 }, Fitted)),
        ("linear_0.3", linear(0.3, Fitted)),
        ("linear_0.4", linear(0.4, Fitted)),
        ("linear_0.5", linear(0.5, Fitted)),
        ("linear_0.6", linear(0.6, Fitted)),
        ("linear_0.7", linear(0.7, Fitted)),
        ("linear_0.8", linear(0.8, Fitted)),
        ("linear_0.9", linear(0.9, Fitted)),
        ("default", Method::Fused(default, Fitted)),
        ("default_feedback", Method::FusedFeedback(default, Fitted)),
        ("pipeline", Method::Pipeline(default)),
        ("bm25_context", context(1.0)),
        ("dense_context", context(0.0)),
        ("linear_0.5_context", context(0.5)),
        ("linear_0.9_context", context(0.9)),
    ];
    if fits {
        methods.insert(3, ("dense_unfitted", Method::Dense(Unfitted)));
        methods.insert(12, ("linear_0.5_unfitted", linear(0.5, Unfitted)));
        methods.insert(13, ("linear_0.8_unfitted", linear(0.8, Unfitted)));
    }
    let after_default = methods
        .iter()
        .position(|(n, _)| *n == "default")
        .map_or(0, |i| i + 1);
    methods.insert(after_default, ("conversation_log", Method::ConversationLog));
    methods
}

/// Linear fusion with `sparse` on BM25 and the rest on the dense list.
fn linear(sparse: f64, dense: Dense) -> Method {
    Method::Fused(
        Fusion::Linear {
            sparse,
            dense: 1.0 - sparse,
        },
        dense,
    )
}

/// Linear fusion with `sparse` on BM25, then neighbour context ([`spread`], its defaults).
fn context(sparse: f64) -> Method {
    match linear(sparse, Dense::Fitted) {
        Method::Fused(fusion, dense) => Method::Context(fusion, dense),
        other => other,
    }
}

/// Whether the BM25 list is widened by pseudo-relevance feedback
/// ([`SparseIndex::search_with_feedback`]). The Engine's list is not: feedback lifts LoCoMo but
/// pulls the wrong lessons into short task queries (`lore bench lessons`).
#[derive(Clone, Copy)]
enum Feedback {
    Off,
    On,
}

#[derive(Clone, Copy)]
enum Method {
    Sparse(Feedback),
    Dense(Dense),
    Fused(Fusion, Dense),
    /// Fused, then re-scored with neighbouring turns of the same session.
    Context(Fusion, Dense),
    /// Fused, over BM25 widened by feedback.
    FusedFeedback(Fusion, Dense),
    /// The Engine's whole pipeline with this fusion.
    Pipeline(Fusion),
    /// Lore's own conversation log: every turn written with [`Engine::recall_write`] into a
    /// SQLite store, every question asked with [`Engine::recall_read`].
    ConversationLog,
}

/// Which copy of the embedder makes the dense list.
#[derive(Clone, Copy)]
enum Dense {
    /// As configured.
    Unfitted,
    /// Fitted to the conversation (the builtin one: features weighted by IDF), as the Engine
    /// fits it to a store; the same as `Unfitted` for an embedder that learns nothing.
    Fitted,
}

/// Recall at 5, 10 and 25 over some questions.
#[derive(Default, Serialize)]
struct Recall {
    questions: usize,
    recall_at_5: f64,
    recall_at_10: f64,
    recall_at_25: f64,
}

#[derive(Default)]
struct Sums {
    n: usize,
    at: [f64; 3],
}

impl Sums {
    fn add(&mut self, scores: [f64; 3]) {
        self.n += 1;
        self.at.iter_mut().zip(scores).for_each(|(s, x)| *s += x);
    }

    fn mean(&self) -> Recall {
        let m = |i: usize| self.at[i] / self.n.max(1) as f64;
        Recall {
            questions: self.n,
            recall_at_5: m(0),
            recall_at_10: m(1),
            recall_at_25: m(2),
        }
    }
}

#[derive(Serialize)]
struct MethodReport {
    overall: Recall,
    categories: BTreeMap<&'static str, Recall>,
}

/// Milliseconds to embed one question (one `embed` call each, as `lore recall` does).
#[derive(Serialize)]
struct Latency {
    queries: usize,
    p50_ms: f64,
    p90_ms: f64,
}

#[derive(Serialize)]
struct Report {
    embedder: String,
    split: Split,
    turn_text: TurnText,
    conversations: usize,
    /// Turns the conversation log refused to store (sensitive data), never found then.
    conversation_log_refused: usize,
    default_fusion: Fusion,
    query_embedding: Latency,
    methods: BTreeMap<&'static str, MethodReport>,
}

/// One conversation's memories and questions.
struct Conversation {
    turns: Vec<(String, String)>,
    /// Per turn, what the turn before the previous one of its session said, which BM25 indexes
    /// at reduced weight beside the document ([`SparseIndex::add_turn`]); `None` alone.
    earlier: Vec<Option<String>>,
    /// Every turn as said, for the conversation log.
    said: Vec<Said>,
    /// Each turn's session and place in it.
    sequences: Sequences,
    questions: Vec<Question>,
}

/// A turn as an agent would log it.
struct Said {
    /// `None` for the few turns LoCoMo gives no usable ID (never evidence).
    dia_id: Option<String>,
    session: usize,
    date: String,
    speaker: String,
    /// The text with its image caption, as in the documents.
    text: String,
}

struct Question {
    text: String,
    category: u64,
    evidence: Vec<String>,
}

/// What a turn's document holds, the text both indexes see. A question is still scored on the
/// turns retrieved alone, one a slot, so the previous turn is context for matching, never a
/// second turn counted as found (unlike the `_context` methods' neighbour spread).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnText {
    /// `(session date) speaker: text`.
    Alone,
    /// The same, after the previous turn of its session as `speaker: text ||`: a reply such as
    /// "Yes, last Tuesday" is found by the words of what it answers. BM25 also indexes the turn
    /// before that at half weight, for the answer to a follow-up ("What's it about?").
    WithPrevious,
}

/// Evidence recall@5/10/25 of every retrieval method on the conversations in `data`.
///
/// # Errors
/// A file that is not LoCoMo's JSON, an embedder failure, or a failed write to `out`.
pub fn run_bench(
    data: &Path,
    embedder: Arc<dyn Embedder>,
    split: Split,
    turn_text: TurnText,
    json: bool,
    out: &mut Out<'_>,
) -> Result<()> {
    let raw =
        std::fs::read_to_string(data).with_context(|| format!("reading {}", data.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&raw).context("LoCoMo JSON")?;
    let conversations: Vec<Conversation> = samples
        .iter()
        .map(|sample| conversation(sample, turn_text))
        .collect::<Result<_>>()?;
    let fits = embedder.fit(&["probe"]).is_some();
    let default_fusion = RecallConfig::fusion_for(embedder.semantic());
    let methods = methods(fits, default_fusion);
    let mut sums: Vec<(Sums, HashMap<u64, Sums>)> =
        methods.iter().map(|_| Default::default()).collect();
    let mut embed_ms = Vec::new();
    let log = ConversationLog::open(embedder.clone())?;
    let mut refused = 0;
    for (n, conv) in conversations.iter().enumerate() {
        let index = ConversationIndex::build(conv, &embedder)?;
        let logged = log.write(n, conv)?;
        refused += logged.refused;
        let asked = conv.questions.iter().enumerate();
        for (_, q) in asked.filter(|(i, _)| split.keeps(*i)) {
            let query = index.query(&q.text, &mut embed_ms)?;
            for ((_, method), (all, by_cat)) in methods.iter().zip(sums.iter_mut()) {
                let ranking = match method {
                    Method::ConversationLog => log.ranking(&logged, &q.text)?,
                    method => index.ranking(&query, *method)?,
                };
                let scores = KS.map(|k| evidence_recall(&ranking, &q.evidence, k));
                all.add(scores);
                by_cat.entry(q.category).or_default().add(scores);
            }
        }
    }
    embed_ms.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        embed_ms
            .get(((embed_ms.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let report = Report {
        embedder: embedder.id().to_string(),
        split,
        turn_text,
        conversations: conversations.len(),
        conversation_log_refused: refused,
        default_fusion,
        query_embedding: Latency {
            queries: embed_ms.len(),
            p50_ms: quantile(0.5),
            p90_ms: quantile(0.9),
        },
        methods: methods
            .iter()
            .zip(&sums)
            .map(|((name, _), (all, by_cat))| (*name, method_report(all, by_cat)))
            .collect(),
    };
    if json {
        return out.json(&report);
    }
    print_report(&report, &methods, out)
}

fn method_report(all: &Sums, by_cat: &HashMap<u64, Sums>) -> MethodReport {
    MethodReport {
        overall: all.mean(),
        categories: CATEGORIES
            .iter()
            .filter_map(|(c, name)| by_cat.get(c).map(|s| (*name, s.mean())))
            .collect(),
    }
}

fn print_report(
    report: &Report,
    methods: &[(&'static str, Method)],
    out: &mut Out<'_>,
) -> Result<()> {
    out.line(format!(
        "LoCoMo evidence recall, {} conversations, {:?} questions, dense: {}, turn text: {:?}",
        report.conversations, report.split, report.embedder, report.turn_text
    ))?;
    out.line(format!(
        "query embedding: p50 {:.2} ms, p90 {:.2} ms over {} questions",
        report.query_embedding.p50_ms,
        report.query_embedding.p90_ms,
        report.query_embedding.queries
    ))?;
    out.line(format!(
        "conversation log: every turn written with recall_write, {} refused as sensitive",
        report.conversation_log_refused
    ))?;
    out.line(format!(
        "{:<20} {:<12} {:>9} {:>6} {:>6} {:>6}",
        "method", "category", "questions", "@5", "@10", "@25"
    ))?;
    for (name, _) in methods {
        let m = &report.methods[name];
        let rows = m
            .categories
            .iter()
            .map(|(c, r)| (*c, r))
            .chain([("overall", &m.overall)]);
        for (cat, r) in rows {
            out.line(format!(
                "{name:<20} {cat:<12} {:>9} {:>6.3} {:>6.3} {:>6.3}",
                r.questions, r.recall_at_5, r.recall_at_10, r.recall_at_25
            ))?;
        }
    }
    Ok(())
}

/// The share of `evidence` among the first `k` of `ranking`.
fn evidence_recall(ranking: &[String], evidence: &[String], k: usize) -> f64 {
    let top = &ranking[..ranking.len().min(k)];
    let found = evidence.iter().filter(|e| top.contains(e)).count();
    found as f64 / evidence.len() as f64
}

/// Slots as the production indexes answer them, turned back into the turns they hold.
fn hits(slot_ids: &[String], found: Vec<(u32, f64)>) -> Vec<Hit> {
    found
        .into_iter()
        .map(|(slot, score)| Hit {
            id: slot_ids[slot as usize].clone(),
            score,
        })
        .collect()
}

/// The indexes of one conversation, built with the pipeline's components.
struct ConversationIndex {
    bm25: SparseIndex,
    /// The turn in each of `bm25`'s slots (both indexes add the turns in the same order).
    slot_ids: Vec<String>,
    unfitted: DenseSide,
    /// `None` when the embedder learns nothing from its corpus (`unfitted` serves both).
    fitted: Option<DenseSide>,
    entries: Entries<'static>,
    sequences: Sequences,
    size: usize,
}

/// A question with its vectors, embedded once for every method.
struct Query<'a> {
    text: &'a str,
    unfitted: Vec<f32>,
    fitted: Option<Vec<f32>>,
}

/// One embedder's exact index over the turns.
struct DenseSide {
    embedder: Arc<dyn Embedder>,
    index: VectorIndex,
    slot_ids: Vec<String>,
    vectors: HashMap<String, Vec<f32>>,
}

impl DenseSide {
    fn build(embedder: Arc<dyn Embedder>, turns: &[(String, String)]) -> Result<Self> {
        let mut index = VectorIndex::new(embedder.id().dim);
        let texts: Vec<&str> = turns.iter().map(|(_, t)| t.as_str()).collect();
        let mut vectors = HashMap::new();
        let mut slot_ids = Vec::with_capacity(turns.len());
        for ((dia_id, _), vector) in turns.iter().zip(embedder.embed_batch(&texts)?) {
            index.add(&vector);
            slot_ids.push(dia_id.clone());
            vectors.insert(dia_id.clone(), vector);
        }
        Ok(Self {
            embedder,
            index,
            slot_ids,
            vectors,
        })
    }

    fn search(&self, query: &[f32], k: usize) -> Result<RankedList> {
        Ok(RankedList {
            source: Source::Dense,
            hits: hits(&self.slot_ids, self.index.exact(query, k, |_| true)),
            scale: lore_recall::Scale::MinMax,
        })
    }
}

impl ConversationIndex {
    fn build(conv: &Conversation, embedder: &Arc<dyn Embedder>) -> Result<Self> {
        let mut bm25 = SparseIndex::new();
        let mut slot_ids = Vec::with_capacity(conv.turns.len());
        for ((dia_id, text), earlier) in conv.turns.iter().zip(&conv.earlier) {
            bm25.add_turn(text, earlier.as_deref());
            slot_ids.push(dia_id.clone());
        }
        let texts: Vec<&str> = conv.turns.iter().map(|(_, t)| t.as_str()).collect();
        let unfitted = DenseSide::build(embedder.clone(), &conv.turns)?;
        let fitted = match embedder.fit(&texts) {
            Some(fitted) => Some(DenseSide::build(fitted, &conv.turns)?),
            None => None,
        };
        let vectors = &fitted.as_ref().unwrap_or(&unfitted).vectors;
        let entries = conv
            .turns
            .iter()
            .map(|(dia_id, text)| {
                let vector = vectors[dia_id].clone();
                (dia_id.clone(), turn_entry(dia_id, text.clone(), vector))
            })
            .collect();
        Ok(Self {
            bm25,
            slot_ids,
            unfitted,
            fitted,
            entries,
            sequences: conv.sequences.clone(),
            size: conv.turns.len(),
        })
    }

    /// Embeds `text` for every dense side, timing the configured embedder's call into `ms`.
    fn query<'a>(&self, text: &'a str, ms: &mut Vec<f64>) -> Result<Query<'a>> {
        let start = Instant::now();
        let unfitted = self.unfitted.embedder.embed(text)?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        let fitted = match &self.fitted {
            Some(side) => Some(side.embedder.embed(text)?),
            None => None,
        };
        Ok(Query {
            text,
            unfitted,
            fitted,
        })
    }

    /// Every turn the method ranks, best first (full rankings, so fusion sees whole lists).
    fn ranking(&self, query: &Query<'_>, method: Method) -> Result<Vec<String>> {
        let feedback = matches!(
            method,
            Method::Sparse(Feedback::On) | Method::FusedFeedback(..)
        );
        let found = if feedback {
            self.bm25
                .search_with_feedback(query.text, self.size, |_| true)
        } else {
            self.bm25.search(query.text, self.size, |_| true)
        };
        let sparse = RankedList {
            source: Source::Sparse,
            hits: hits(&self.slot_ids, found),
            scale: lore_recall::Scale::MinMax,
        };
        let dense = |which| match (which, &self.fitted, &query.fitted) {
            (Dense::Fitted, Some(side), Some(vector)) => side.search(vector, self.size),
            _ => self.unfitted.search(&query.unfitted, self.size),
        };
        let ids = |list: RankedList| list.hits.into_iter().map(|h| h.id).collect();
        let config = |fusion| RecallConfig::builder().fusion(fusion);
        Ok(match method {
            Method::Sparse(_) => ids(sparse),
            Method::Dense(which) => ids(dense(which)?),
            Method::Fused(fusion, which)
            | Method::Context(fusion, which)
            | Method::FusedFeedback(fusion, which) => {
                let config = config(fusion).build()?;
                let mut scored = rank(
                    &[sparse, dense(which)?],
                    &self.entries,
                    QueryShape::default(),
                    &config,
                );
                if matches!(method, Method::Context(..)) {
                    scored = spread(scored, &self.sequences, ContextSpread::default());
                }
                scored.into_iter().map(|s| s.fused.id).collect()
            }
            Method::ConversationLog => unreachable!("asked through the Engine"),
            Method::Pipeline(fusion) => {
                let config = config(fusion)
                    .limit(KS[2])
                    .caps(None, None)
                    .budget(usize::MAX)
                    .build()?;
                let lists = [sparse, dense(Dense::Fitted)?];
                let out = run(
                    &lists,
                    &self.entries,
                    QueryShape::default(),
                    &config,
                    &[],
                    &ApproxTokenizer,
                );
                out.packed.items.into_iter().map(|i| i.id).collect()
            }
        })
    }
}

/// An always-eligible memory with one tier, as a LoCoMo turn (or a synthetic one) becomes.
pub(crate) fn turn_entry<'a>(
    dia_id: &str,
    text: impl Into<Cow<'a, str>>,
    vector: impl Into<Cow<'a, [f32]>>,
) -> Entry<'a> {
    let text = text.into();
    Entry {
        id: dia_id.to_owned(),
        tiers: vec![text.to_string()].into(),
        text,
        vector: Some(vector.into()),
        tags: Cow::Borrowed(&[]),
        session: None,
        age_hours: 0.0,
        reliability: 1.0,
        utility: None,
        confidence: 1.0,
        eligibility: Eligibility::Eligible,
        conflicts_with: Cow::Borrowed(&[]),
        condition_match: None,
        personal: false,
        standing: 0.0,
    }
}

/// Every usable question of a LoCoMo file, for `lore bench recall`.
pub(crate) fn question_texts(data: &Path) -> Result<Vec<String>> {
    let raw =
        std::fs::read_to_string(data).with_context(|| format!("reading {}", data.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&raw).context("LoCoMo JSON")?;
    let questions = samples.iter().filter_map(|s| s["qa"].as_array()).flatten();
    Ok(questions.filter_map(question).map(|q| q.text).collect())
}

/// One LoCoMo sample: its turns as memories and its questions with normalized evidence.
fn conversation(sample: &Value, turn_text: TurnText) -> Result<Conversation> {
    let conv = &sample["conversation"];
    let mut turns = Vec::new();
    let mut earlier_turns = Vec::new();
    let mut said_turns = Vec::new();
    let mut sequences = Sequences::new();
    for n in 1.. {
        let Some(session) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
            break;
        };
        let date = conv[format!("session_{n}_date_time")]
            .as_str()
            .unwrap_or_default();
        let (mut previous, mut earlier): (Option<String>, Option<String>) = (None, None);
        for turn in session {
            let dia_id = normalize_dia_id(turn["dia_id"].as_str().unwrap_or_default());
            let mut said = format!(
                "{}: {}",
                turn["speaker"].as_str().unwrap_or_default(),
                turn["text"].as_str().unwrap_or_default()
            );
            let mut logged = turn["text"].as_str().unwrap_or_default().to_owned();
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                said.push_str(&format!(" [shares {caption}]"));
                logged.push_str(&format!(" [shares {caption}]"));
            }
            said_turns.push(Said {
                dia_id: dia_id.clone(),
                session: n,
                date: date.to_owned(),
                speaker: turn["speaker"].as_str().unwrap_or_default().to_owned(),
                text: logged,
            });
            let text = match (turn_text, &previous) {
                (TurnText::WithPrevious, Some(before)) => format!("{before} || ({date}) {said}"),
                _ => format!("({date}) {said}"),
            };
            let before_previous = match turn_text {
                TurnText::WithPrevious => earlier.take(),
                TurnText::Alone => None,
            };
            earlier = previous.replace(said);
            if let Some(id) = dia_id {
                sequences.push(id.clone(), &format!("session_{n}"), turns.len() as u64);
                turns.push((id, text));
                earlier_turns.push(before_previous);
            }
        }
    }
    let questions = sample["qa"]
        .as_array()
        .map(|qa| qa.iter().filter_map(question).collect())
        .unwrap_or_default();
    Ok(Conversation {
        turns,
        earlier: earlier_turns,
        said: said_turns,
        sequences,
        questions,
    })
}

/// A question with its evidence; `None` when it has no usable evidence (some open-domain ones).
fn question(qa: &Value) -> Option<Question> {
    let evidence: Vec<String> = qa["evidence"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .flat_map(|e| e.split(';'))
        .filter_map(normalize_dia_id)
        .collect();
    if evidence.is_empty() {
        return None;
    }
    Some(Question {
        text: qa["question"].as_str()?.to_owned(),
        category: qa["category"].as_u64()?,
        evidence,
    })
}

/// `D<session>:<turn>` with stray colons and leading zeros removed (`D:11:26`, `D30:05`).
fn normalize_dia_id(raw: &str) -> Option<String> {
    let rest = raw.trim().strip_prefix('D')?;
    let numbers: Vec<u64> = rest
        .split(':')
        .filter(|p| !p.is_empty())
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match numbers[..] {
        [session, turn] => Some(format!("D{session}:{turn}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_evidence_ids_are_repaired() {
        assert_eq!(normalize_dia_id("D:11:26").as_deref(), Some("D11:26"));
        assert_eq!(normalize_dia_id("D30:05").as_deref(), Some("D30:5"));
        assert_eq!(normalize_dia_id(" D9:17").as_deref(), Some("D9:17"));
        assert_eq!(normalize_dia_id("X1:2"), None);
        let q = question(&serde_json::json!({
            "question": "q", "category": 1, "evidence": ["D8:6; D9:17"]
        }))
        .unwrap();
        assert_eq!(q.evidence, ["D8:6", "D9:17"]);
        assert!(
            question(&serde_json::json!({"question": "q", "category": 3, "evidence": []}))
                .is_none()
        );
    }

    #[test]
    fn a_turn_follows_the_previous_turn_of_its_own_session_only() {
        let sample = serde_json::json!({"conversation": {
            "session_1_date_time": "1 May", "session_2_date_time": "2 May",
            "session_1": [
                {"dia_id": "D1:1", "speaker": "A", "text": "Where did you go?"},
                {"dia_id": "D1:2", "speaker": "B", "text": "The lake.", "blip_caption": "a boat"},
                {"dia_id": "D1:3", "speaker": "A", "text": "Nice."}
            ],
            "session_2": [{"dia_id": "D2:1", "speaker": "A", "text": "Hi again."}]
        }, "qa": []});
        let texts = |turn_text| {
            let conv = conversation(&sample, turn_text).unwrap();
            conv.turns.into_iter().map(|(_, t)| t).collect::<Vec<_>>()
        };
        let earlier = |turn_text| conversation(&sample, turn_text).unwrap().earlier;
        assert_eq!(
            texts(TurnText::WithPrevious),
            [
                "(1 May) A: Where did you go?",
                "A: Where did you go? || (1 May) B: The lake. [shares a boat]",
                "B: The lake. [shares a boat] || (1 May) A: Nice.",
                "(2 May) A: Hi again.",
            ]
        );
        assert_eq!(
            texts(TurnText::Alone)[1],
            "(1 May) B: The lake. [shares a boat]"
        );
        assert_eq!(
            earlier(TurnText::WithPrevious),
            [None, None, Some("A: Where did you go?".to_owned()), None]
        );
        assert!(earlier(TurnText::Alone).iter().all(Option::is_none));
    }

    #[test]
    fn evidence_recall_is_the_share_found_in_the_top_k() {
        let ranking: Vec<String> = ["a", "b", "c"].map(String::from).into();
        let evidence: Vec<String> = ["c", "z"].map(String::from).into();
        assert_eq!(evidence_recall(&ranking, &evidence, 2), 0.0);
        assert_eq!(evidence_recall(&ranking, &evidence, 3), 0.5);
    }
}
