//! What moves with the records when a store is exported, imported or migrated: seed 004's
//! layers (knowledge documents with their chunks and vectors, decisions, every digest version,
//! evaluation sets and runs) and the embedder's tuning (runs, checkpoints with their weights,
//! the active checkpoint).
//!
//! They are not [`Record`]s: each lives behind its own port, which a store may not implement
//! ([`Error::Unsupported`] reads as "none here"). They travel as [`LayerItem`]s, in the JSONL
//! export's `{"type": …, "record": …}` shape, so one file holds a whole store.
//!
//! Writing is idempotent like a record import: an item already stored identically is skipped,
//! one stored otherwise is refused by name before anything is written, so running an
//! interrupted copy again continues it. A decision and the active checkpoint are stored with an
//! audit entry; when the audit entries travelling with them hold the original one, that one is
//! used (the records' copy then skips it as identical), so a migrated store holds the same
//! audit trail as its source.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, Write};

use chrono::{DateTime, Utc};
use lore_core::error::{Error, Result};
use lore_core::id::CheckpointId;
use lore_core::model::{
    AuditAction, AuditEntry, DecisionRecord, Digest, EvalRun, EvalSet, KnowledgeChunk,
    KnowledgeDocument, RecordKind,
};
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::knowledge::DocumentUpdate;
use lore_core::ports::store::{Record, Store, WriteReport};
use lore_core::ports::tuning::{Checkpoint, TuneRun};
use lore_core::scope::{Scope, SkillPath};
use lore_core::wording::{self, Place};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::audit;
use crate::interchange::read_jsonl_line;

/// One item of the layers beside the records.
#[allow(clippy::large_enum_variant)] // Lives for one line or one batch; see `Record`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "record", rename_all = "snake_case")]
pub enum LayerItem {
    /// A knowledge document with its chunks.
    KnowledgeDocument(DocumentItem),
    /// A resolved decision.
    Decision(DecisionRecord),
    /// One digest version.
    Digest(Digest),
    /// An evaluation set.
    EvalSet(EvalSet),
    /// A graded evaluation run.
    EvalRun(EvalRun),
    /// An embedder tuning run.
    TuneRun(TuneRun),
    /// An adapter checkpoint, with its weights.
    Checkpoint(Checkpoint),
    /// The checkpoint recall applies.
    ActiveCheckpoint(CheckpointId),
}

/// The `type` of every [`LayerItem`] line, in the order they are written.
pub const LAYER_KINDS: [&str; 8] = [
    "knowledge_document",
    "decision",
    "digest",
    "eval_set",
    "eval_run",
    "tune_run",
    "checkpoint",
    "active_checkpoint",
];

/// A document as it travels: the document and its chunks, vectors included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentItem {
    /// The document.
    pub document: KnowledgeDocument,
    /// Its chunks, in order.
    pub chunks: Vec<ChunkItem>,
}

/// A chunk with its vector, which the chunk's own serialization leaves out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkItem {
    /// The chunk.
    pub chunk: KnowledgeChunk,
    /// The embedder that made its vector, if one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<EmbedderId>,
    /// The vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Vec<f32>>,
}

impl ChunkItem {
    fn of(mut chunk: KnowledgeChunk) -> Self {
        // Held here alone, so that an item read back from a file equals the one written.
        let (embedder, vector) = match chunk.vector.take() {
            Some(v) => (Some(v.embedder), Some(v.vector)),
            None => (None, None),
        };
        Self {
            chunk,
            embedder,
            vector,
        }
    }

    fn into_chunk(self) -> Result<KnowledgeChunk> {
        let mut chunk = self.chunk;
        chunk.vector = match (self.embedder, self.vector) {
            (Some(embedder), Some(vector)) => {
                if vector.len() != embedder.dim || vector.iter().any(|x| !x.is_finite()) {
                    return Err(Error::invalid(
                        format!("knowledge chunk {}", chunk.id),
                        format!(
                            "its vector needs {} finite components (it has {})",
                            embedder.dim,
                            vector.len()
                        ),
                    ));
                }
                Some(lore_core::model::ChunkVector { embedder, vector })
            }
            (None, None) => None,
            _ => {
                return Err(Error::invalid(
                    format!("knowledge chunk {}", chunk.id),
                    "a vector needs its embedder, and an embedder its vector",
                ));
            }
        };
        Ok(chunk)
    }
}

impl LayerItem {
    /// Its `type`, one of [`LAYER_KINDS`].
    pub fn kind(&self) -> &'static str {
        match self {
            LayerItem::KnowledgeDocument(_) => LAYER_KINDS[0],
            LayerItem::Decision(_) => LAYER_KINDS[1],
            LayerItem::Digest(_) => LAYER_KINDS[2],
            LayerItem::EvalSet(_) => LAYER_KINDS[3],
            LayerItem::EvalRun(_) => LAYER_KINDS[4],
            LayerItem::TuneRun(_) => LAYER_KINDS[5],
            LayerItem::Checkpoint(_) => LAYER_KINDS[6],
            LayerItem::ActiveCheckpoint(_) => LAYER_KINDS[7],
        }
    }

    /// What names it in a message: its ID, or its skill and source or name.
    pub fn name(&self) -> String {
        match self {
            LayerItem::KnowledgeDocument(d) => {
                format!("{}:{}", d.document.skill, d.document.source)
            }
            LayerItem::Decision(d) => d.id.to_string(),
            LayerItem::Digest(d) => d.id.to_string(),
            LayerItem::EvalSet(s) => format!("{}:{}", s.skill, s.name),
            LayerItem::EvalRun(r) => r.id.to_string(),
            LayerItem::TuneRun(r) => r.id.to_string(),
            LayerItem::Checkpoint(c) => c.id.to_string(),
            LayerItem::ActiveCheckpoint(c) => c.to_string(),
        }
    }

    /// The skill it belongs to; `None` for the embedder's tuning, which is the whole store's.
    pub fn skill(&self) -> Option<&SkillPath> {
        match self {
            LayerItem::KnowledgeDocument(d) => Some(&d.document.skill),
            LayerItem::Decision(d) => Some(&d.skill),
            LayerItem::Digest(d) => Some(&d.skill),
            LayerItem::EvalSet(s) => Some(&s.skill),
            LayerItem::EvalRun(r) => Some(&r.skill),
            LayerItem::TuneRun(_) | LayerItem::Checkpoint(_) | LayerItem::ActiveCheckpoint(_) => {
                None
            }
        }
    }
}

/// `Ok(None)` for a port the store does not have.
fn supported<T>(port: Result<T>) -> Result<Option<T>> {
    match port {
        Ok(p) => Ok(Some(p)),
        Err(Error::Unsupported(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every layer item inside `scope`, each kind oldest first; the embedder's tuning only for an
/// unrestricted scope, since it is the whole store's.
///
/// # Errors
/// Store failures.
pub fn read_layers(store: &dyn Store, scope: &Scope) -> Result<Vec<LayerItem>> {
    let mut out = Vec::new();
    if let Some(knowledge) = supported(store.knowledge())? {
        let mut chunks: BTreeMap<(String, String), Vec<ChunkItem>> = BTreeMap::new();
        for chunk in knowledge.knowledge_chunks(scope, None)? {
            let key = (chunk.skill.as_str().to_owned(), chunk.source.clone());
            chunks.entry(key).or_default().push(ChunkItem::of(chunk));
        }
        for document in knowledge.documents(scope, None)? {
            let key = (document.skill.as_str().to_owned(), document.source.clone());
            let chunks = chunks.remove(&key).unwrap_or_default();
            out.push(LayerItem::KnowledgeDocument(DocumentItem {
                document,
                chunks,
            }));
        }
    }
    if let Some(decisions) = supported(store.decisions())? {
        out.extend(
            decisions
                .decisions(scope, None)?
                .into_iter()
                .map(LayerItem::Decision),
        );
    }
    if let Some(digests) = supported(store.digests())? {
        for newest in digests.digests(scope, None)? {
            let mut versions = digests.digest_history(&newest.skill, usize::MAX, 0)?;
            versions.reverse();
            out.extend(versions.into_iter().map(LayerItem::Digest));
        }
    }
    if let Some(evals) = supported(store.evals())? {
        out.extend(
            evals
                .eval_sets(scope, None)?
                .into_iter()
                .map(LayerItem::EvalSet),
        );
        out.extend(
            evals
                .eval_runs(scope, None, None)?
                .into_iter()
                .map(LayerItem::EvalRun),
        );
    }
    if *scope == Scope::unrestricted() {
        read_tuning(store, &mut out)?;
    }
    Ok(out)
}

fn read_tuning(store: &dyn Store, out: &mut Vec<LayerItem>) -> Result<()> {
    let Some(tuning) = supported(store.tuning())? else {
        return Ok(());
    };
    let (mut runs, _) = tuning.runs(usize::MAX, 0)?;
    runs.reverse();
    out.extend(runs.into_iter().map(LayerItem::TuneRun));
    let mut listed = tuning.checkpoints()?;
    listed.reverse();
    for c in listed {
        let full = tuning
            .checkpoint(&c.id)?
            .ok_or_else(|| Error::not_found("checkpoint", &c.id))?;
        out.push(LayerItem::Checkpoint(full));
    }
    if let Some(active) = tuning.active_checkpoint()? {
        out.push(LayerItem::ActiveCheckpoint(active));
    }
    Ok(())
}

/// Who writes, and when, for the audit entries a write has to make up.
#[derive(Clone, Debug)]
pub struct Writer<'a> {
    /// The actor of made-up audit entries.
    pub actor: &'a str,
    /// Their time.
    pub at: DateTime<Utc>,
    /// The audit entries travelling with the items, oldest first: a decision's first entry
    /// and a checkpoint's last are used when present.
    pub audits: &'a [AuditEntry],
}

/// Stores `items` into `store`: what is stored identically is skipped, anything stored
/// otherwise is refused before anything is written.
///
/// # Errors
/// [`Error::Conflict`] naming the first item stored otherwise; [`Error::Invalid`] for a chunk
/// whose vector does not match its embedder; [`Error::Unsupported`] when the store lacks a
/// port that an item needs; store failures.
pub fn write_layers(
    store: &dyn Store,
    items: &[LayerItem],
    by: &Writer<'_>,
) -> Result<WriteReport> {
    let plan = Plan::of(store, items)?;
    let mut report = WriteReport {
        written: 0,
        skipped: plan.skipped,
    };
    if !plan.documents.is_empty() {
        store.knowledge()?.sync_documents(&plan.documents, &[])?;
        report.written += plan.documents.len();
    }
    for item in plan.new {
        write_one(store, item, by)?;
        report.written += 1;
    }
    Ok(report)
}

/// What a write will do, decided before it writes anything.
struct Plan<'a> {
    documents: Vec<DocumentUpdate>,
    new: Vec<&'a LayerItem>,
    skipped: usize,
}

/// Reads of the destination, each made once per skill.
#[derive(Default)]
struct Seen {
    documents: HashMap<SkillPath, Vec<DocumentItem>>,
    digests: HashMap<SkillPath, Vec<Digest>>,
    eval_sets: HashMap<SkillPath, Vec<EvalSet>>,
    eval_runs: HashMap<SkillPath, Vec<EvalRun>>,
}

impl<'a> Plan<'a> {
    fn of(store: &dyn Store, items: &'a [LayerItem]) -> Result<Self> {
        let mut plan = Plan {
            documents: Vec::new(),
            new: Vec::new(),
            skipped: 0,
        };
        let mut seen = Seen::default();
        for item in items {
            match stored(store, item, &mut seen)? {
                Some(same) if same == *item => plan.skipped += 1,
                Some(_) => {
                    return Err(Error::Conflict(format!(
                        "{} {} is stored with other content; nothing was written",
                        item.kind().replace('_', " "),
                        item.name()
                    )));
                }
                None => match item {
                    LayerItem::KnowledgeDocument(d) => plan.documents.push(DocumentUpdate {
                        document: d.document.clone(),
                        chunks: d
                            .chunks
                            .iter()
                            .cloned()
                            .map(ChunkItem::into_chunk)
                            .collect::<Result<_>>()?,
                    }),
                    other => plan.new.push(other),
                },
            }
        }
        Ok(plan)
    }
}

/// What `map` holds for `skill`, loaded the first time it is asked for.
fn cached<'m, T>(
    map: &'m mut HashMap<SkillPath, Vec<T>>,
    skill: &SkillPath,
    load: impl FnOnce() -> Result<Vec<T>>,
) -> Result<&'m [T]> {
    if !map.contains_key(skill) {
        let loaded = load()?;
        map.insert(skill.clone(), loaded);
    }
    Ok(&map[skill])
}

/// The destination's version of `item`, if it holds one.
fn stored(store: &dyn Store, item: &LayerItem, seen: &mut Seen) -> Result<Option<LayerItem>> {
    let all = Scope::unrestricted();
    Ok(match item {
        LayerItem::KnowledgeDocument(d) => {
            let skill = &d.document.skill;
            cached(&mut seen.documents, skill, || documents_of(store, skill))?
                .iter()
                .find(|s| s.document.source == d.document.source)
                .cloned()
                .map(LayerItem::KnowledgeDocument)
        }
        LayerItem::Decision(d) => store.decisions()?.decision(&d.id)?.map(LayerItem::Decision),
        LayerItem::Digest(d) => cached(&mut seen.digests, &d.skill, || {
            store.digests()?.digest_history(&d.skill, usize::MAX, 0)
        })?
        .iter()
        .find(|s| s.id == d.id)
        .cloned()
        .map(LayerItem::Digest),
        LayerItem::EvalSet(s) => cached(&mut seen.eval_sets, &s.skill, || {
            store.evals()?.eval_sets(&all, Some(&s.skill))
        })?
        .iter()
        .find(|x| x.name == s.name)
        .cloned()
        .map(LayerItem::EvalSet),
        LayerItem::EvalRun(r) => cached(&mut seen.eval_runs, &r.skill, || {
            store.evals()?.eval_runs(&all, Some(&r.skill), None)
        })?
        .iter()
        .find(|x| x.id == r.id)
        .cloned()
        .map(LayerItem::EvalRun),
        LayerItem::TuneRun(r) => store.tuning()?.run(&r.id)?.map(LayerItem::TuneRun),
        LayerItem::Checkpoint(c) => store
            .tuning()?
            .checkpoint(&c.id)?
            .map(LayerItem::Checkpoint),
        // The active checkpoint is a setting, not a record: the source's choice wins.
        LayerItem::ActiveCheckpoint(c) => {
            let active = store.tuning()?.active_checkpoint()?;
            (active.as_ref() == Some(c)).then(|| item.clone())
        }
    })
}

/// The documents of one skill in the destination, chunks included.
fn documents_of(store: &dyn Store, skill: &SkillPath) -> Result<Vec<DocumentItem>> {
    let knowledge = store.knowledge()?;
    let all = Scope::unrestricted();
    let chunks = knowledge.knowledge_chunks(&all, Some(skill))?;
    Ok(knowledge
        .documents(&all, Some(skill))?
        .into_iter()
        .map(|document| DocumentItem {
            chunks: chunks
                .iter()
                .filter(|c| c.source == document.source)
                .cloned()
                .map(ChunkItem::of)
                .collect(),
            document,
        })
        .collect())
}

fn write_one(store: &dyn Store, item: &LayerItem, by: &Writer<'_>) -> Result<()> {
    match item {
        LayerItem::KnowledgeDocument(_) => unreachable!("documents are synced together"),
        LayerItem::Decision(d) => {
            let entry = by
                .audits
                .iter()
                .find(|a| a.subject == d.id.as_str())
                .cloned()
                .unwrap_or_else(|| {
                    made_up(
                        by,
                        RecordKind::Decision,
                        d.id.as_str(),
                        AuditAction::Imported,
                    )
                });
            store.decisions()?.put_decision(d, &entry)
        }
        LayerItem::Digest(d) => store.digests()?.put_digest(d),
        LayerItem::EvalSet(s) => store.evals()?.put_eval_set(s),
        LayerItem::EvalRun(r) => store.evals()?.put_eval_run(r),
        LayerItem::TuneRun(r) => store.tuning()?.put_run(r),
        LayerItem::Checkpoint(c) => {
            let tuning = store.tuning()?;
            let run = tuning
                .run(&c.run)?
                .ok_or_else(|| Error::not_found("tuning run", &c.run))?;
            tuning.finish_run(&run, c)
        }
        LayerItem::ActiveCheckpoint(c) => {
            let entry = by
                .audits
                .iter()
                .rev()
                .find(|a| a.subject == c.as_str())
                .cloned()
                .unwrap_or_else(|| {
                    made_up(
                        by,
                        RecordKind::Embedder,
                        c.as_str(),
                        AuditAction::Administered,
                    )
                });
            store.tuning()?.set_active_checkpoint(Some(c), &entry)
        }
    }
}

fn made_up(by: &Writer<'_>, kind: RecordKind, subject: &str, action: AuditAction) -> AuditEntry {
    audit(
        kind,
        subject,
        action,
        (None, None),
        by.actor,
        by.at,
        "restored from an export",
        Value::Null,
    )
}

/// Per kind, how many items `store` holds and a SHA-256 (hex, first 16 bytes) over each
/// item's JSON in sorted order: two stores holding the same layers give the same sums.
///
/// # Errors
/// Store failures.
pub fn layer_sums(store: &dyn Store) -> Result<BTreeMap<&'static str, (usize, String)>> {
    use sha2::{Digest as _, Sha256};
    let mut lines: BTreeMap<&'static str, Vec<String>> =
        LAYER_KINDS.iter().map(|k| (*k, Vec::new())).collect();
    for item in read_layers(store, &Scope::unrestricted())? {
        let json = serde_json::to_string(&item).map_err(Error::store)?;
        lines.entry(item.kind()).or_default().push(json);
    }
    Ok(lines
        .into_iter()
        .map(|(kind, mut lines)| {
            lines.sort_unstable();
            let mut hash = Sha256::new();
            for line in &lines {
                hash.update(line.as_bytes());
                hash.update(b"\n");
            }
            let sum = hash.finalize()[..16]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            (kind, (lines.len(), sum))
        })
        .collect())
}

/// Writes items as JSON lines, in the JSONL export's shape.
///
/// # Errors
/// [`Error::Io`] when the writer fails.
pub fn write_layer_lines(items: &[LayerItem], mut out: impl Write) -> Result<()> {
    for item in items {
        serde_json::to_writer(&mut out, item).map_err(|e| Error::io("export", e.into()))?;
        out.write_all(b"\n").map_err(|e| Error::io("export", e))?;
    }
    out.flush().map_err(|e| Error::io("export", e))
}

/// Reads a JSONL export: its records and its layer items; blank lines are skipped.
///
/// # Errors
/// [`Error::Invalid`] naming the line and what is wrong with it.
pub fn read_export(input: impl BufRead) -> Result<(Vec<Record>, Vec<LayerItem>)> {
    let (mut records, mut items) = (Vec::new(), Vec::new());
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|e| Error::io("import", e))?;
        if line.trim().is_empty() {
            continue;
        }
        if layer_line(&line) {
            let item: LayerItem = wording::parse_json(line.as_bytes(), Place::Line)
                .map_err(|refused| Error::invalid(format!("line {}", n + 1), refused))?;
            items.push(item);
        } else {
            records.push(read_jsonl_line(n + 1, &line)?);
        }
    }
    Ok((records, items))
}

/// Whether a line's `type` names a layer item (a malformed line goes to the record reader,
/// which names its fault).
fn layer_line(line: &str) -> bool {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<Head<'_>>(line)
        .ok()
        .and_then(|h| h.kind)
        .is_some_and(|k| LAYER_KINDS.contains(&k.as_ref()))
}
