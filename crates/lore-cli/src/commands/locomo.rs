//! `lore bench locomo`: evidence recall on LoCoMo, measured through the recall pipeline's parts.
//!
//! Each dialog turn becomes a memory, `(session date) speaker: text` with an image caption
//! appended; each QA question is asked within its own conversation; a question scores the share
//! of its evidence turns found in the top k (LoCoMo's `recall_acc`), averaged per category and
//! overall. The candidate lists come from the same components `lore recall` uses (Okapi BM25
//! with stop words, the builtin embedder with exact dense search) and the fusions are the
//! pipeline's own [`rank`], so the figures measure the engine's retrieval logic, not a copy.
//! `pipeline` runs the whole of [`run`] (MMR λ 0.7 over a pool of 75) with caps and budget off,
//! since every turn is in scope and a session cap would hide evidence by design.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail};
use lore_core::recall::{
    ApproxTokenizer, Bm25Index, BuiltinEmbedder, DenseIndex, Eligibility, Embedder, Entries, Entry,
    Fusion, QueryShape, RankedList, RecallConfig, Source, rank, run,
};
use serde::Serialize;
use serde_json::Value;

use crate::output;

const KS: [usize; 3] = [5, 10, 25];

const CATEGORIES: [(u64, &str); 5] = [
    (1, "multi_hop"),
    (2, "temporal"),
    (3, "open_domain"),
    (4, "single_hop"),
    (5, "adversarial"),
];

/// The methods compared, in report order. `idf` methods use the builtin embedder fitted to the
/// conversation's turns (as the Engine fits it to a store's lessons); the others use it unfitted.
fn methods() -> Vec<(&'static str, Method)> {
    use Dense::{Flat, Idf};
    vec![
        ("bm25", Method::Sparse),
        ("dense", Method::Dense(Flat)),
        ("dense_idf", Method::Dense(Idf)),
        ("rrf_k60_idf", Method::Fused(Fusion::Rrf { k: 60.0 }, Idf)),
        ("rrf_k10_idf", Method::Fused(Fusion::Rrf { k: 10.0 }, Idf)),
        ("linear_0.5", linear(0.5, Flat)),
        ("linear_0.8", linear(0.8, Flat)),
        ("linear_0.5_idf", linear(0.5, Idf)),
        ("linear_0.6_idf", linear(0.6, Idf)),
        ("linear_0.7_idf", linear(0.7, Idf)),
        ("linear_0.8_idf", linear(0.8, Idf)),
        ("linear_0.9_idf", linear(0.9, Idf)),
        (
            "default",
            Method::Fused(RecallConfig::default().fusion, Idf),
        ),
        ("pipeline", Method::Pipeline),
    ]
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

#[derive(Clone, Copy)]
enum Method {
    Sparse,
    Dense(Dense),
    Fused(Fusion, Dense),
    Pipeline,
}

/// Which builtin embedder makes the dense list.
#[derive(Clone, Copy)]
enum Dense {
    /// Unfitted: every feature of a kind weighs the same.
    Flat,
    /// Fitted to the conversation: features weighted by IDF (what the Engine uses).
    Idf,
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

#[derive(Serialize)]
struct Report {
    embedder: String,
    conversations: usize,
    default_fusion: Fusion,
    methods: BTreeMap<&'static str, MethodReport>,
}

/// One conversation's memories and questions.
struct Conversation {
    turns: Vec<(String, String)>,
    questions: Vec<Question>,
}

struct Question {
    text: String,
    category: u64,
    evidence: Vec<String>,
}

pub fn run_bench(data: &Path, embedder: &str, json: bool) -> Result<()> {
    if embedder != "builtin" {
        bail!("embedder {embedder:?} is not available yet; use builtin");
    }
    let raw =
        std::fs::read_to_string(data).with_context(|| format!("reading {}", data.display()))?;
    let samples: Vec<Value> = serde_json::from_str(&raw).context("LoCoMo JSON")?;
    let conversations: Vec<Conversation> =
        samples.iter().map(conversation).collect::<Result<_>>()?;
    let embedder = BuiltinEmbedder::default();
    let methods = methods();
    let mut sums: Vec<(Sums, HashMap<u64, Sums>)> =
        methods.iter().map(|_| Default::default()).collect();
    for conv in &conversations {
        let index = ConversationIndex::build(conv, &embedder)?;
        for q in &conv.questions {
            for ((_, method), (all, by_cat)) in methods.iter().zip(sums.iter_mut()) {
                let ranking = index.ranking(&q.text, *method)?;
                let scores = KS.map(|k| evidence_recall(&ranking, &q.evidence, k));
                all.add(scores);
                by_cat.entry(q.category).or_default().add(scores);
            }
        }
    }
    let report = Report {
        embedder: format!(
            "{}, unfitted and fitted per conversation (idf)",
            embedder.id()
        ),
        conversations: conversations.len(),
        default_fusion: RecallConfig::default().fusion,
        methods: methods
            .iter()
            .zip(&sums)
            .map(|((name, _), (all, by_cat))| (*name, method_report(all, by_cat)))
            .collect(),
    };
    if json {
        return output::json(&report);
    }
    print_report(&report, &methods)
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

fn print_report(report: &Report, methods: &[(&'static str, Method)]) -> Result<()> {
    output::line(format!(
        "LoCoMo evidence recall, {} conversations, dense: {}",
        report.conversations, report.embedder
    ))?;
    output::line(format!(
        "{:<14} {:<12} {:>9} {:>6} {:>6} {:>6}",
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
            output::line(format!(
                "{name:<14} {cat:<12} {:>9} {:>6.3} {:>6.3} {:>6.3}",
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

/// The indexes of one conversation, built with the pipeline's components.
struct ConversationIndex {
    bm25: Bm25Index,
    flat: DenseSide,
    idf: DenseSide,
    entries: Entries,
    size: usize,
}

/// One embedder's exact index over the turns.
struct DenseSide {
    embedder: BuiltinEmbedder,
    index: DenseIndex,
    vectors: HashMap<String, Vec<f32>>,
}

impl DenseSide {
    fn build(embedder: BuiltinEmbedder, turns: &[(String, String)]) -> Result<Self> {
        let id = embedder.id();
        let mut index = DenseIndex::new(id.clone());
        let mut vectors = HashMap::new();
        for (dia_id, text) in turns {
            let vector = embedder.embed(text)?;
            index.add(dia_id.clone(), &vector, &id)?;
            vectors.insert(dia_id.clone(), vector);
        }
        Ok(Self {
            embedder,
            index,
            vectors,
        })
    }

    fn search(&self, question: &str, k: usize) -> Result<RankedList> {
        let query = self.embedder.embed(question)?;
        Ok(RankedList {
            source: Source::Dense,
            hits: self.index.search(&query, &self.embedder.id(), k)?,
        })
    }
}

impl ConversationIndex {
    fn build(conv: &Conversation, embedder: &BuiltinEmbedder) -> Result<Self> {
        let mut bm25 = Bm25Index::new();
        for (dia_id, text) in &conv.turns {
            bm25.add(dia_id.clone(), text);
        }
        let fitted = embedder.fitted(conv.turns.iter().map(|(_, t)| t.as_str()));
        let flat = DenseSide::build(embedder.clone(), &conv.turns)?;
        let idf = DenseSide::build(fitted, &conv.turns)?;
        let entries = conv
            .turns
            .iter()
            .map(|(dia_id, text)| {
                let vector = idf.vectors[dia_id].clone();
                (dia_id.clone(), turn_entry(dia_id, text, vector))
            })
            .collect();
        Ok(Self {
            bm25,
            flat,
            idf,
            entries,
            size: conv.turns.len(),
        })
    }

    /// Every turn the method ranks, best first (full rankings, so fusion sees whole lists).
    fn ranking(&self, question: &str, method: Method) -> Result<Vec<String>> {
        let sparse = RankedList {
            source: Source::Sparse,
            hits: self.bm25.search(question, self.size),
        };
        let dense = |which| match which {
            Dense::Flat => self.flat.search(question, self.size),
            Dense::Idf => self.idf.search(question, self.size),
        };
        let ids = |list: RankedList| list.hits.into_iter().map(|h| h.id).collect();
        let config = |fusion| RecallConfig::builder().fusion(fusion);
        Ok(match method {
            Method::Sparse => ids(sparse),
            Method::Dense(which) => ids(dense(which)?),
            Method::Fused(fusion, which) => {
                let config = config(fusion).build()?;
                rank(
                    &[sparse, dense(which)?],
                    &self.entries,
                    QueryShape::default(),
                    &config,
                )
                .into_iter()
                .map(|s| s.fused.id)
                .collect()
            }
            Method::Pipeline => {
                let config = config(RecallConfig::default().fusion)
                    .limit(KS[2])
                    .caps(None, None)
                    .budget(usize::MAX)
                    .build()?;
                let lists = [sparse, dense(Dense::Idf)?];
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
pub(crate) fn turn_entry(dia_id: &str, text: &str, vector: Vec<f32>) -> Entry {
    Entry {
        id: dia_id.to_owned(),
        text: text.to_owned(),
        vector: Some(vector),
        tags: Vec::new(),
        session: None,
        age_hours: 0.0,
        reliability: 1.0,
        eligibility: Eligibility::Eligible,
        conflicts_with: Vec::new(),
        tiers: vec![text.to_owned()],
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
fn conversation(sample: &Value) -> Result<Conversation> {
    let conv = &sample["conversation"];
    let mut turns = Vec::new();
    for n in 1.. {
        let Some(session) = conv.get(format!("session_{n}")).and_then(Value::as_array) else {
            break;
        };
        let date = conv[format!("session_{n}_date_time")]
            .as_str()
            .unwrap_or_default();
        for turn in session {
            let dia_id = normalize_dia_id(turn["dia_id"].as_str().unwrap_or_default());
            let mut text = format!(
                "({date}) {}: {}",
                turn["speaker"].as_str().unwrap_or_default(),
                turn["text"].as_str().unwrap_or_default()
            );
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                text.push_str(&format!(" [shares {caption}]"));
            }
            turns.extend(dia_id.map(|id| (id, text)));
        }
    }
    let questions = sample["qa"]
        .as_array()
        .map(|qa| qa.iter().filter_map(question).collect())
        .unwrap_or_default();
    Ok(Conversation { turns, questions })
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
    fn evidence_recall_is_the_share_found_in_the_top_k() {
        let ranking: Vec<String> = ["a", "b", "c"].map(String::from).into();
        let evidence: Vec<String> = ["c", "z"].map(String::from).into();
        assert_eq!(evidence_recall(&ranking, &evidence, 2), 0.0);
        assert_eq!(evidence_recall(&ranking, &evidence, 3), 0.5);
    }
}
