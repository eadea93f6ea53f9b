//! Knowledge documents and chunks in SQLite: the document row with its content hash, the
//! chunks as JSON bodies with their vectors beside them, and one revision counter.
//!
//! A sync replaces a document's chunks wholesale inside one transaction, so a reader sees the
//! old version or the new one and never a mix. Each document row keeps the revision that wrote
//! it and each removal leaves a tombstone with its own (migration 0012), so a reader catches up
//! by reading what moved after its revision.

use lore_core::model::{ChunkVector, KnowledgeChunk, KnowledgeDocument};
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::knowledge::{DocumentUpdate, KnowledgeChanges, KnowledgeStore};
use lore_core::{Error, Result, Scope, SkillPath};
use rusqlite::types::Value;
use rusqlite::{Connection, params, params_from_iter};

use crate::filter::Where;
use crate::store::SqliteStore;
use crate::{Db, rows};

/// A chunk's body and its vector's columns (embedder, dimension, bytes), as read.
type ChunkRow = (String, Option<String>, Option<i64>, Option<Vec<u8>>);

impl KnowledgeStore for SqliteStore {
    fn documents(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
    ) -> Result<Vec<KnowledgeDocument>> {
        let w = narrowed(scope, skill);
        let sql = format!(
            "SELECT t.body FROM knowledge_documents t{} ORDER BY t.skill, t.source",
            w.sql()
        );
        let bodies = strings(&self.conn(), &sql, &w)?;
        bodies.iter().map(|b| rows::from_json(b)).collect()
    }

    fn sync_documents(&self, put: &[DocumentUpdate], remove: &[(SkillPath, String)]) -> Result<()> {
        if put.is_empty() && remove.is_empty() {
            return Ok(());
        }
        put.iter().try_for_each(lore_core::limits::document)?;
        self.in_transaction(|tx| {
            let revision: i64 = tx
                .query_row(
                    "UPDATE knowledge_revision SET revision = revision + 1 WHERE id = 1 \
                     RETURNING revision",
                    [],
                    |r| r.get(0),
                )
                .db()?;
            for (skill, source) in remove {
                if delete_document(tx, skill, source)? {
                    tx.prepare_cached(
                        "INSERT INTO knowledge_removals (skill, source, revision) VALUES (?, ?, ?) \
                         ON CONFLICT (skill, source) DO UPDATE SET revision = excluded.revision",
                    )
                    .and_then(|mut s| s.execute(params![skill.as_str(), source, revision]))
                    .db()?;
                }
            }
            for update in put {
                write_document(tx, update, revision)?;
            }
            Ok(())
        })
    }

    fn knowledge_chunks(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
    ) -> Result<Vec<KnowledgeChunk>> {
        let w = narrowed(scope, skill);
        let sql = format!(
            "SELECT t.body, t.embedder, t.dim, t.vector FROM knowledge_chunks t{} \
             ORDER BY t.skill, t.source, t.ordinal",
            w.sql()
        );
        chunks(&self.conn(), &sql, w.params().iter().cloned())
    }

    fn knowledge_revision(&self) -> Result<u64> {
        revision(&self.conn())
    }

    fn knowledge_changes(&self, since: u64) -> Result<KnowledgeChanges> {
        let since = i64::try_from(since).unwrap_or(i64::MAX);
        let mut conn = self.conn();
        // One read transaction: the revision and the rows it covers come from the same
        // snapshot, whatever another process commits meanwhile.
        let tx = conn.transaction().db()?;
        let revision = revision(&tx)?;
        let mut documents: Vec<(String, String)> = tx
            .prepare_cached(
                "SELECT skill, source FROM knowledge_documents WHERE revision > ?1 \
                 UNION SELECT skill, source FROM knowledge_removals WHERE revision > ?1",
            )
            .and_then(|mut s| {
                s.query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .db()?;
        documents.sort();
        let chunks = chunks(
            &tx,
            "SELECT t.body, t.embedder, t.dim, t.vector FROM knowledge_chunks t \
             JOIN knowledge_documents d ON d.skill = t.skill AND d.source = t.source \
             WHERE d.revision > ? ORDER BY t.skill, t.source, t.ordinal",
            [Value::Integer(since)],
        )?;
        tx.finish().db()?;
        Ok(KnowledgeChanges {
            revision,
            documents: documents
                .into_iter()
                .map(|(skill, source)| Ok((SkillPath::parse(&skill)?, source)))
                .collect::<Result<_>>()?,
            chunks,
        })
    }
}

/// The current revision.
fn revision(conn: &Connection) -> Result<u64> {
    let revision: i64 = conn
        .prepare_cached("SELECT revision FROM knowledge_revision WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .db()?;
    Ok(u64::try_from(revision).unwrap_or(0))
}

/// The chunks `sql` selects (body, embedder, dimension, vector), with their vectors.
fn chunks(
    conn: &Connection,
    sql: &str,
    params: impl IntoIterator<Item = Value>,
) -> Result<Vec<KnowledgeChunk>> {
    let raw: Vec<ChunkRow> = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(params), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .db()?;
    raw.into_iter()
        .map(|(body, embedder, dim, blob)| {
            let mut chunk: KnowledgeChunk = rows::from_json(&body)?;
            chunk.vector = match (embedder, dim, blob) {
                (Some(name), Some(dim), Some(blob)) => Some(decode(&chunk.id, name, dim, &blob)?),
                _ => None,
            };
            Ok(chunk)
        })
        .collect()
}

/// The rows inside `scope`, of `skill` when given.
fn narrowed(scope: &Scope, skill: Option<&SkillPath>) -> Where {
    let mut w = Where::scope(scope);
    if let Some(skill) = skill {
        w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
    }
    w
}

fn strings(conn: &Connection, sql: &str, w: &Where) -> Result<Vec<String>> {
    conn.prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(w.params().iter().cloned()), |r| r.get(0))?
                .collect()
        })
        .db()
}

/// Deletes a document with its chunks; whether it was there.
fn delete_document(tx: &Connection, skill: &SkillPath, source: &str) -> Result<bool> {
    tx.prepare_cached("DELETE FROM knowledge_chunks WHERE skill = ? AND source = ?")
        .and_then(|mut s| s.execute(params![skill.as_str(), source]))
        .db()?;
    let gone = tx
        .prepare_cached("DELETE FROM knowledge_documents WHERE skill = ? AND source = ?")
        .and_then(|mut s| s.execute(params![skill.as_str(), source]))
        .db()?;
    Ok(gone > 0)
}

fn write_document(tx: &Connection, update: &DocumentUpdate, revision: i64) -> Result<()> {
    let doc = &update.document;
    let body = rows::to_json(doc)?;
    delete_document(tx, &doc.skill, &doc.source)?;
    tx.prepare_cached("DELETE FROM knowledge_removals WHERE skill = ? AND source = ?")
        .and_then(|mut s| s.execute(params![doc.skill.as_str(), doc.source]))
        .db()?;
    tx.prepare_cached(
        "INSERT INTO knowledge_documents (skill, domain, source, body, revision) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .and_then(|mut s| {
        s.execute(params![
            doc.skill.as_str(),
            doc.skill.domain(),
            doc.source,
            body,
            revision
        ])
    })
    .db()?;
    for chunk in &update.chunks {
        write_chunk(tx, chunk)?;
    }
    Ok(())
}

fn write_chunk(tx: &Connection, chunk: &KnowledgeChunk) -> Result<()> {
    let (embedder, dim, blob) = match &chunk.vector {
        Some(v) => (
            Some(v.embedder.name.as_str()),
            Some(i64::try_from(v.embedder.dim).unwrap_or(i64::MAX)),
            Some(
                v.vector
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<u8>>(),
            ),
        ),
        None => (None, None, None),
    };
    let body = rows::to_json(chunk)?;
    tx.prepare_cached(
        "INSERT INTO knowledge_chunks (id, skill, domain, source, ordinal, body, embedder, dim, \
         vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .and_then(|mut s| {
        s.execute(params![
            chunk.id,
            chunk.skill.as_str(),
            chunk.skill.domain(),
            chunk.source,
            chunk.ordinal,
            body,
            embedder,
            dim,
            blob
        ])
    })
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            Error::Conflict(format!("knowledge chunk {} already exists", chunk.id))
        }
        other => crate::db_error(other),
    })?;
    Ok(())
}

fn decode(id: &str, name: String, dim: i64, blob: &[u8]) -> Result<ChunkVector> {
    let dim = usize::try_from(dim).unwrap_or(0);
    if blob.len() != dim * 4 {
        return Err(Error::store(std::io::Error::other(format!(
            "the stored vector of knowledge chunk {id} is damaged ({} bytes for {dim} dimensions)",
            blob.len()
        ))));
    }
    let vector = blob
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(ChunkVector {
        embedder: EmbedderId { name, dim },
        vector,
    })
}
