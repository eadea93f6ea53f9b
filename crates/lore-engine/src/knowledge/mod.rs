//! Knowledge: the documents a team already has, ingested as chunks and recalled by the same
//! hybrid pipeline as lessons (seed 004's knowledge layer).
//!
//! Ingest is incremental by content hash: a document whose text is unchanged is skipped, a
//! changed one has all its chunks replaced, and a document stored under an ingested root that
//! the new ingest no longer lists is removed with its chunks. The doors read files (the CLI
//! walks folders, REST takes the text in the body); from here on every door shares one path:
//! validation, redaction of personal and secret data, chunking, embedding, and one store sync
//! per batch.

pub mod chunk;
pub(crate) mod index;
mod layer;
mod recall;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tracing::instrument;

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::model::{ChunkVector, KnowledgeChunk, KnowledgeDocument};
use lore_core::ports::knowledge::{DocumentUpdate, KnowledgeStore};
use lore_core::scope::SkillPath;
use lore_core::sensitive;

pub use chunk::{Chunking, Piece, TextFormat};
pub use index::{ItemIndexInfo, ItemOrigin};
pub use recall::{DEFAULT_LIMIT, KnowledgeQuery, KnowledgeResult, RecalledChunk};

/// The largest document ingested, in bytes: larger files are almost always generated output
/// (logs, dumps), not a team's prose.
pub const MAX_DOCUMENT: usize = 8 * 1024 * 1024;

/// The longest source path accepted, in bytes.
const MAX_SOURCE: usize = 1024;

/// How many documents one store transaction writes: small enough that an interrupted ingest
/// keeps most of its work, large enough that commits do not dominate.
const BATCH: usize = 64;

/// One document to ingest: where it came from and its text.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestDocument {
    /// Its source path, relative where possible (`docs/runbook.md`).
    pub source: String,
    /// Its text.
    pub text: String,
}

/// What to ingest.
#[derive(Clone, Debug)]
pub struct IngestRequest {
    /// The skill whose agents the documents inform.
    pub skill: SkillPath,
    /// The folders or files the documents were read from: a stored document of this skill under
    /// one of them that `documents` lacks was deleted, and is removed. Empty: remove nothing.
    pub roots: Vec<String>,
    /// The documents found.
    pub documents: Vec<IngestDocument>,
    /// How to cut them.
    pub chunking: Chunking,
}

/// What happened to one document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentChange {
    /// Stored for the first time.
    Added,
    /// Its text changed; its chunks were replaced.
    Updated,
    /// Same hash as stored: nothing written.
    Unchanged,
    /// Its file is gone: removed with its chunks.
    Removed,
}

/// One document's line in an [`IngestReport`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IngestedDocument {
    /// The source path.
    pub source: String,
    /// What happened.
    pub change: DocumentChange,
    /// Its chunks now (0 when removed).
    pub chunks: usize,
    /// Chunks whose personal or secret data was redacted.
    pub redacted: usize,
}

/// A document its door found but could not read (a damaged or encrypted PDF, one with no
/// text, a file that is not UTF-8): whatever is stored for it stays as it was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkippedDocument {
    /// Its source path.
    pub source: String,
    /// Why it could not be read.
    pub reason: String,
}

/// What an ingest did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IngestReport {
    /// The skill.
    pub skill: String,
    /// Documents stored for the first time.
    pub added: usize,
    /// Documents whose chunks were replaced.
    pub updated: usize,
    /// Documents skipped as unchanged.
    pub unchanged: usize,
    /// Documents removed because their file is gone.
    pub removed: usize,
    /// Chunks written.
    pub chunks_written: usize,
    /// Chunks removed (of updated and removed documents).
    pub chunks_removed: usize,
    /// Every document, by source.
    pub documents: Vec<IngestedDocument>,
    /// Documents found but not read, by source; their stored versions were kept.
    pub skipped: Vec<SkippedDocument>,
}

impl Engine {
    /// Ingests documents for a skill: unchanged ones are skipped, changed ones re-chunked and
    /// re-embedded, and documents gone from the request's roots removed. `progress` is called
    /// with (documents done, documents in all) as batches land.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside this handle's scope; [`Error::Invalid`] for bad
    /// chunking settings, an empty, duplicated or overlong source, or a document over
    /// [`MAX_DOCUMENT`] or holding a NUL (nothing is written then); [`Error::Unsupported`] from
    /// a store without knowledge; store and embedder failures (batches already written stay).
    #[instrument(skip_all, fields(skill = %request.skill, documents = request.documents.len()))]
    pub fn ingest(
        &self,
        request: &IngestRequest,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<IngestReport> {
        self.ingest_skipping(request, Vec::new(), progress)
    }

    /// [`Engine::ingest`], when the door found documents under the request's roots that it
    /// could not read: each is reported, and its stored version (if any) is kept rather than
    /// removed as vanished, so a file damaged since the last ingest loses nothing.
    ///
    /// # Errors
    /// As [`Engine::ingest`]; [`Error::Invalid`] also for a skipped source the request lists
    /// as read.
    pub fn ingest_skipping(
        &self,
        request: &IngestRequest,
        mut skipped: Vec<SkippedDocument>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<IngestReport> {
        self.scope.check_write(&request.skill)?;
        if let Some(both) = skipped
            .iter()
            .find(|k| request.documents.iter().any(|d| d.source == k.source))
        {
            return Err(Error::invalid(
                "source",
                format!("{} is listed both as read and as skipped", both.source),
            ));
        }
        skipped.sort_by(|a, b| a.source.cmp(&b.source));
        request.chunking.check()?;
        request
            .roots
            .iter()
            .try_for_each(|r| lore_core::limits::name("roots", r))?;
        check_documents(&request.documents)?;
        let store = self.store.knowledge()?;
        let stored: BTreeMap<String, KnowledgeDocument> = store
            .documents(&self.scope, Some(&request.skill))?
            .into_iter()
            .map(|d| (d.source.clone(), d))
            .collect();
        let mut report = IngestReport {
            skill: request.skill.to_string(),
            skipped,
            ..IngestReport::default()
        };
        let total = request.documents.len();
        let mut done = 0;
        progress(done, total);
        for batch in request.documents.chunks(BATCH) {
            let mut updates = Vec::new();
            for doc in batch {
                let hash = sha256_hex(&doc.text);
                let previous = stored.get(&doc.source);
                if previous.is_some_and(|p| p.hash == hash) {
                    report.unchanged += 1;
                    report.documents.push(IngestedDocument {
                        source: doc.source.clone(),
                        change: DocumentChange::Unchanged,
                        chunks: previous.map_or(0, |p| p.chunks),
                        redacted: 0,
                    });
                    continue;
                }
                let update = self.prepare(&request.skill, doc, hash, request.chunking)?;
                let change = match previous {
                    Some(p) => {
                        report.updated += 1;
                        report.chunks_removed += p.chunks;
                        DocumentChange::Updated
                    }
                    None => {
                        report.added += 1;
                        DocumentChange::Added
                    }
                };
                report.chunks_written += update.chunks.len();
                report.documents.push(IngestedDocument {
                    source: doc.source.clone(),
                    change,
                    chunks: update.chunks.len(),
                    redacted: update.chunks.iter().filter(|c| c.redacted).count(),
                });
                updates.push(update);
            }
            self.embed_chunks(&mut updates)?;
            store.sync_documents(&updates, &[])?;
            done += batch.len();
            progress(done, total);
        }
        self.remove_vanished(store, request, &stored, &mut report)?;
        report.documents.sort_by(|a, b| a.source.cmp(&b.source));
        Ok(report)
    }

    /// The documents stored for `skill` (all skills when `None`) inside this handle's scope.
    ///
    /// # Errors
    /// [`Error::Unsupported`] from a store without knowledge; store failures.
    pub fn knowledge_documents(&self, skill: Option<&SkillPath>) -> Result<Vec<KnowledgeDocument>> {
        self.store.knowledge()?.documents(&self.scope, skill)
    }

    /// One stored document of `skill` inside this handle's scope and its chunks in order. A
    /// document outside the scope is answered as unknown, like one never ingested.
    ///
    /// # Errors
    /// [`Error::NotFound`] for a document not stored under `skill` or outside the scope;
    /// [`Error::Unsupported`] from a store without knowledge; store failures.
    pub fn knowledge_document(
        &self,
        skill: &SkillPath,
        source: &str,
    ) -> Result<(KnowledgeDocument, Vec<KnowledgeChunk>)> {
        let store = self.store.knowledge()?;
        let document = store
            .documents(&self.scope, Some(skill))?
            .into_iter()
            .find(|d| d.source == source)
            // The source is not repeated: a caller probing another scope learns nothing
            // from the answer, not even its own guess back.
            .ok_or_else(|| {
                Error::not_found("knowledge document", format!("{skill} with that source"))
            })?;
        let mut chunks: Vec<KnowledgeChunk> = store
            .knowledge_chunks(&self.scope, Some(skill))?
            .into_iter()
            .filter(|c| c.source == source)
            .map(|c| KnowledgeChunk { vector: None, ..c })
            .collect();
        chunks.sort_by_key(|c| c.ordinal);
        Ok((document, chunks))
    }

    /// A document cut, redacted and made into chunks (vectors come later, per batch).
    fn prepare(
        &self,
        skill: &SkillPath,
        doc: &IngestDocument,
        hash: String,
        chunking: Chunking,
    ) -> Result<DocumentUpdate> {
        let pieces = chunk::chunk(
            &doc.text,
            TextFormat::of(&doc.source),
            chunking,
            self.tokenizer(),
        );
        let chunks: Vec<KnowledgeChunk> = pieces
            .into_iter()
            .enumerate()
            .map(|(i, piece)| to_chunk(skill, &doc.source, i, piece))
            .collect();
        Ok(DocumentUpdate {
            document: KnowledgeDocument {
                skill: skill.clone(),
                source: doc.source.clone(),
                hash,
                chunks: chunks.len(),
                ingested_at: self.now(),
                ingested_by: self.actor(None),
            },
            chunks,
        })
    }

    /// Embeds every chunk of `updates` in one batch call, with the configured embedder.
    fn embed_chunks(&self, updates: &mut [DocumentUpdate]) -> Result<()> {
        let embedder = &self.recall.embedder;
        let texts: Vec<String> = updates
            .iter()
            .flat_map(|u| u.chunks.iter().map(recall::search_text))
            .collect();
        if texts.is_empty() {
            return Ok(());
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut vectors = embedder.embed_batch(&refs)?.into_iter();
        let id = embedder.id();
        for chunk in updates.iter_mut().flat_map(|u| u.chunks.iter_mut()) {
            let vector = vectors.next().ok_or_else(|| {
                Error::invalid("embedder", "it returned fewer vectors than texts")
            })?;
            chunk.vector = Some(ChunkVector {
                embedder: id.clone(),
                vector,
            });
        }
        Ok(())
    }

    /// Removes the stored documents under the request's roots that it no longer lists.
    fn remove_vanished(
        &self,
        store: &dyn KnowledgeStore,
        request: &IngestRequest,
        stored: &BTreeMap<String, KnowledgeDocument>,
        report: &mut IngestReport,
    ) -> Result<()> {
        let listed: BTreeSet<&str> = request
            .documents
            .iter()
            .map(|d| d.source.as_str())
            .chain(report.skipped.iter().map(|k| k.source.as_str()))
            .collect();
        let gone: Vec<&KnowledgeDocument> = stored
            .values()
            .filter(|d| !listed.contains(d.source.as_str()))
            .filter(|d| request.roots.iter().any(|r| under(&d.source, r)))
            .collect();
        let remove: Vec<(SkillPath, String)> = gone
            .iter()
            .map(|d| (d.skill.clone(), d.source.clone()))
            .collect();
        store.sync_documents(&[], &remove)?;
        for d in gone {
            report.removed += 1;
            report.chunks_removed += d.chunks;
            report.documents.push(IngestedDocument {
                source: d.source.clone(),
                change: DocumentChange::Removed,
                chunks: 0,
                redacted: 0,
            });
        }
        Ok(())
    }
}

/// Whether `source` is `root` itself or lies inside it (`.` holds every relative path).
fn under(source: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    if root.is_empty() || root == "." {
        return !source.starts_with('/');
    }
    source == root
        || source
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn check_documents(documents: &[IngestDocument]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for doc in documents {
        if doc.source.trim().is_empty() {
            return Err(Error::invalid(
                "source",
                "a document has an empty source path",
            ));
        }
        if doc.source.len() > MAX_SOURCE || doc.source.contains('\0') {
            return Err(Error::invalid(
                "source",
                format!(
                    "{:?} is longer than {MAX_SOURCE} bytes or holds a NUL",
                    doc.source
                ),
            ));
        }
        // A source is shown to models on the provenance line, outside the quote: it must be a
        // path on one line, and, like every write, it holds no secret.
        if doc.source.chars().any(|c| {
            c.is_control() || lore_core::quote::is_line_break(c) || sensitive::invisible(c)
        }) {
            return Err(Error::invalid(
                "source",
                format!(
                    "{:?} holds a line break, control or invisible character; a source is one line",
                    doc.source
                ),
            ));
        }
        let kinds = sensitive::kinds(&doc.source);
        if !kinds.is_empty() {
            let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            return Err(Error::invalid(
                "source",
                format!(
                    "a source path holds sensitive data ({}); it is shown with every chunk, so it is not stored",
                    names.join(", ")
                ),
            ));
        }
        if !seen.insert(doc.source.as_str()) {
            return Err(Error::invalid(
                "source",
                format!("{} is listed twice", doc.source),
            ));
        }
        if doc.text.len() > MAX_DOCUMENT {
            return Err(Error::invalid(
                "document",
                format!(
                    "{} is {} bytes; at most {MAX_DOCUMENT} are ingested",
                    doc.source,
                    doc.text.len()
                ),
            ));
        }
        if doc.text.contains('\0') {
            return Err(Error::invalid(
                "document",
                format!("{} holds a NUL byte (is it binary?)", doc.source),
            ));
        }
    }
    Ok(())
}

fn to_chunk(skill: &SkillPath, source: &str, ordinal: usize, piece: Piece) -> KnowledgeChunk {
    let text = sensitive::redact(&piece.text);
    let redacted = text != piece.text;
    let ordinal = u32::try_from(ordinal).unwrap_or(u32::MAX);
    let id = format!(
        "KC-{}",
        &sha256_hex(&format!("{skill}\0{source}\0{ordinal}\0{text}"))[..16]
    );
    KnowledgeChunk {
        id,
        skill: skill.clone(),
        source: source.to_owned(),
        heading: piece.heading,
        page: piece.page,
        line_start: piece.line_start,
        line_end: piece.line_end,
        ordinal,
        text,
        redacted,
        vector: None,
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::under;

    #[test]
    fn roots_hold_their_files_only() {
        assert!(under("docs/a.md", "docs"));
        assert!(under("docs/a.md", "docs/"));
        assert!(under("docs", "docs"));
        assert!(!under("docs2/a.md", "docs"));
        assert!(under("a.md", "."));
        assert!(!under("/abs/a.md", "."));
    }
}
