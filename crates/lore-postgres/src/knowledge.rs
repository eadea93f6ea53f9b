//! Knowledge documents and chunks, and resolved decisions, kept as in SQLite: JSON bodies with
//! the columns reads filter on, and a revision per kind that grows with every change.
//!
//! Both revisions are rows of `lore_counters`, so a sync or a decision write locks its counter
//! first: writers of one kind take turns, a reader of the revision never sees a number whose
//! rows are not committed yet, and the commit announces the change to every listening server.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use lore_core::id::DecisionId;
use lore_core::model::{
    AuditEntry, ChunkVector, DecisionRecord, KnowledgeChunk, KnowledgeDocument,
};
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::knowledge::{
    DecisionStore, DocumentUpdate, KnowledgeChanges, KnowledgeStore,
};
use lore_core::{Error, Result, Scope, SkillPath};
use tracing::instrument;

use crate::connect::Fail;
use crate::filter::Where;
use crate::rows::{self, Counter, Row, Writer, bodies, from_json, nanos, to_json};
use crate::store::PostgresStore;

/// The rows inside `scope`, of `skill` when given.
pub(crate) fn narrowed(scope: &Scope, skill: Option<&SkillPath>) -> Where {
    let mut w = Where::scope(scope);
    if let Some(skill) = skill {
        w.push("t.skill = $?", skill.as_str().to_owned());
    }
    w
}

impl KnowledgeStore for PostgresStore {
    #[instrument(skip_all)]
    fn documents(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
    ) -> Result<Vec<KnowledgeDocument>> {
        let w = narrowed(scope, skill);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!(
                "SELECT t.body FROM knowledge_documents t{} ORDER BY t.skill, t.source",
                w.sql()
            );
            bodies(&client, &sql, &w.params()).await
        })
    }

    #[instrument(skip_all, fields(put = put.len(), remove = remove.len()))]
    fn sync_documents(&self, put: &[DocumentUpdate], remove: &[(SkillPath, String)]) -> Result<()> {
        if put.is_empty() && remove.is_empty() {
            return Ok(());
        }
        put.iter().try_for_each(lore_core::limits::document)?;
        let documents = put
            .iter()
            .map(|u| {
                Ok((
                    u.document.clone(),
                    to_json(&u.document)?,
                    chunk_rows(&u.chunks)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let remove = remove.to_vec();
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Knowledge]).await?;
            let revision = w.next(Counter::Knowledge)?;
            for (skill, source) in &remove {
                if delete_document(&w.tx, skill.as_str(), source).await? {
                    w.tx.execute(
                        "INSERT INTO knowledge_removals (skill, source, revision) \
                         VALUES ($1, $2, $3) ON CONFLICT (skill, source) \
                         DO UPDATE SET revision = excluded.revision",
                        &[&skill.as_str(), source, &revision],
                    )
                    .await?;
                }
            }
            for (doc, body, chunks) in &documents {
                delete_document(&w.tx, doc.skill.as_str(), &doc.source).await?;
                w.tx.execute(
                    "DELETE FROM knowledge_removals WHERE skill = $1 AND source = $2",
                    &[&doc.skill.as_str(), &doc.source],
                )
                .await?;
                w.tx.execute(
                    "INSERT INTO knowledge_documents (skill, domain, source, body, revision) \
                     VALUES ($1, $2, $3, $4, $5)",
                    &[
                        &doc.skill.as_str(),
                        &doc.skill.domain(),
                        &doc.source,
                        body,
                        &revision,
                    ],
                )
                .await?;
                for chunk in chunks {
                    write_chunk(&w.tx, chunk).await?;
                }
            }
            w.commit().await
        })
    }

    #[instrument(skip_all)]
    fn knowledge_chunks(
        &self,
        scope: &Scope,
        skill: Option<&SkillPath>,
    ) -> Result<Vec<KnowledgeChunk>> {
        let w = narrowed(scope, skill);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!(
                "SELECT t.body, t.embedder, t.dim, t.vector FROM knowledge_chunks t{} \
                 ORDER BY t.skill, t.source, t.ordinal",
                w.sql()
            );
            let found = client.query(&sql, &w.params()).await?;
            Ok(found.iter().map(chunk_of).collect::<Result<Vec<_>>>()?)
        })
    }

    #[instrument(skip_all)]
    fn knowledge_changes(&self, since: u64) -> Result<KnowledgeChanges> {
        let since = i64::try_from(since).unwrap_or(i64::MAX);
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            // One snapshot for the revision and the rows it covers: a sync committing meanwhile
            // is either wholly in the answer or wholly after it.
            let tx = rows::snapshot(&mut client).await?;
            let revision = rows::counter(&tx, Counter::Knowledge).await?;
            let documents = tx
                .query(
                    "SELECT skill, source FROM knowledge_documents WHERE revision > $1 \
                     UNION SELECT skill, source FROM knowledge_removals WHERE revision > $1 \
                     ORDER BY 1, 2",
                    &[&since],
                )
                .await?
                .iter()
                .map(|r| Ok((SkillPath::parse(r.get::<_, &str>(0))?, r.get(1))))
                .collect::<Result<Vec<_>>>()?;
            let chunks = tx
                .query(
                    "SELECT t.body, t.embedder, t.dim, t.vector FROM knowledge_chunks t \
                     JOIN knowledge_documents d ON d.skill = t.skill AND d.source = t.source \
                     WHERE d.revision > $1 ORDER BY t.skill, t.source, t.ordinal",
                    &[&since],
                )
                .await?
                .iter()
                .map(chunk_of)
                .collect::<Result<Vec<_>>>()?;
            tx.commit().await?;
            Ok(KnowledgeChanges {
                revision,
                documents,
                chunks,
            })
        })
    }

    fn knowledge_revision(&self) -> Result<u64> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::counter(&client, Counter::Knowledge).await
        })
    }
}

/// A chunk read back (body, embedder, dimension, vector), with its vector.
fn chunk_of(r: &tokio_postgres::Row) -> Result<KnowledgeChunk> {
    let mut chunk: KnowledgeChunk = from_json(r.get::<_, &str>(0))?;
    let (name, dim, vector): (Option<String>, Option<i32>, Option<pgvector::Vector>) =
        (r.get(1), r.get(2), r.get(3));
    if let (Some(name), Some(dim), Some(vector)) = (name, dim, vector) {
        chunk.vector = Some(ChunkVector {
            embedder: EmbedderId {
                name,
                dim: usize::try_from(dim).unwrap_or(0),
            },
            vector: vector.to_vec(),
        });
    }
    Ok(chunk)
}

/// A chunk as written: the record, its body, and its vector in pgvector's form.
type ChunkRow = (KnowledgeChunk, String, Option<pgvector::Vector>);

fn chunk_rows(chunks: &[KnowledgeChunk]) -> Result<Vec<ChunkRow>> {
    chunks
        .iter()
        .map(|c| {
            let vector = c
                .vector
                .as_ref()
                .map(|v| pgvector::Vector::from(v.vector.clone()));
            Ok((c.clone(), to_json(c)?, vector))
        })
        .collect()
}

/// Deletes a document with its chunks; whether it was there.
async fn delete_document(db: &impl GenericClient, skill: &str, source: &str) -> Result<bool, Fail> {
    let chunks = db
        .prepare_cached("DELETE FROM knowledge_chunks WHERE skill = $1 AND source = $2")
        .await?;
    db.execute(&chunks, &[&skill, &source]).await?;
    let documents = db
        .prepare_cached("DELETE FROM knowledge_documents WHERE skill = $1 AND source = $2")
        .await?;
    Ok(db.execute(&documents, &[&skill, &source]).await? > 0)
}

async fn write_chunk(
    db: &impl GenericClient,
    (chunk, body, vector): &ChunkRow,
) -> Result<(), Fail> {
    let stmt = db
        .prepare_cached(
            "INSERT INTO knowledge_chunks (id, skill, domain, source, ordinal, body, embedder, \
             dim, vector) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .await?;
    let embedder = chunk.vector.as_ref().map(|v| v.embedder.name.as_str());
    let dim = chunk
        .vector
        .as_ref()
        .map(|v| i32::try_from(v.embedder.dim).unwrap_or(i32::MAX));
    let ordinal = i32::try_from(chunk.ordinal).unwrap_or(i32::MAX);
    db.execute(
        &stmt,
        &[
            &chunk.id,
            &chunk.skill.as_str(),
            &chunk.skill.domain(),
            &chunk.source,
            &ordinal,
            body,
            &embedder,
            &dim,
            vector,
        ],
    )
    .await
    .map_err(|e| taken(e, "knowledge chunk", &chunk.id))?;
    Ok(())
}

/// A unique violation as a conflict that names the record; any other failure as it is.
pub(crate) fn taken(e: tokio_postgres::Error, what: &str, id: &str) -> Fail {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        Fail::Lore(Error::Conflict(format!("{what} {id} already exists")))
    } else {
        Fail::Db(e)
    }
}

impl DecisionStore for PostgresStore {
    #[instrument(skip_all, fields(decision = %decision.id))]
    fn put_decision(&self, decision: &DecisionRecord, audit: &AuditEntry) -> Result<()> {
        lore_core::limits::decision(decision)?;
        lore_core::limits::audit(audit)?;
        let (decision, body) = (decision.clone(), to_json(decision)?);
        let audit = Row::audit(audit)?;
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit, Counter::Decisions]).await?;
            w.next(Counter::Decisions)?;
            let stmt =
                w.tx.prepare_cached(
                    "INSERT INTO decisions (id, skill, domain, status, updated_at, body) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await?;
            w.tx.execute(
                &stmt,
                &[
                    &decision.id.as_str(),
                    &decision.skill.as_str(),
                    &decision.skill.domain(),
                    &decision.status.as_str(),
                    &nanos(decision.updated_at),
                    &body,
                ],
            )
            .await
            .map_err(|e| taken(e, "decision", decision.id.as_str()))?;
            rows::insert(&mut w, &audit).await?;
            w.commit().await
        })
    }

    #[instrument(skip_all, fields(decisions = updates.len()))]
    fn update_decisions(
        &self,
        updates: &[(DecisionRecord, DateTime<Utc>, AuditEntry)],
    ) -> Result<()> {
        updates.iter().try_for_each(|(d, _, audit)| {
            lore_core::limits::decision(d)?;
            lore_core::limits::audit(audit)
        })?;
        let prepared = updates
            .iter()
            .map(|(d, expected, audit)| Ok((d.clone(), *expected, to_json(d)?, Row::audit(audit)?)))
            .collect::<Result<Vec<_>>>()?;
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit, Counter::Decisions]).await?;
            w.next(Counter::Decisions)?;
            for (decision, expected, body, audit) in &prepared {
                replace_decision(&mut w, decision, *expected, body).await?;
                rows::insert(&mut w, audit).await?;
            }
            w.commit().await
        })
    }

    fn decision(&self, id: &DecisionId) -> Result<Option<DecisionRecord>> {
        let id = id.as_str().to_owned();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let found: Vec<DecisionRecord> =
                bodies(&client, "SELECT body FROM decisions WHERE id = $1", &[&id]).await?;
            Ok(found.into_iter().next())
        })
    }

    #[instrument(skip_all)]
    fn decisions(&self, scope: &Scope, skill: Option<&SkillPath>) -> Result<Vec<DecisionRecord>> {
        let w = narrowed(scope, skill);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!("SELECT t.body FROM decisions t{} ORDER BY t.seq", w.sql());
            bodies(&client, &sql, &w.params()).await
        })
    }

    fn decision_revision(&self) -> Result<u64> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::counter(&client, Counter::Decisions).await
        })
    }
}

/// Replaces a stored decision unless it changed since `expected`; the row is locked first, so
/// the comparison holds until commit.
async fn replace_decision(
    w: &mut Writer<'_>,
    decision: &DecisionRecord,
    expected: DateTime<Utc>,
    body: &str,
) -> Result<(), Fail> {
    let id = decision.id.as_str();
    let stmt =
        w.tx.prepare_cached("SELECT seq, body FROM decisions WHERE id = $1 FOR UPDATE")
            .await?;
    let Some(found) = w.tx.query_opt(&stmt, &[&id]).await? else {
        return Err(Fail::Lore(Error::not_found("decision", id)));
    };
    let (seq, stored): (i64, &str) = (found.get(0), found.get(1));
    let stored: DecisionRecord = from_json(stored)?;
    if stored.updated_at != expected {
        return Err(Fail::Lore(Error::Conflict(format!(
            "decision {id} changed since it was read"
        ))));
    }
    let stmt =
        w.tx.prepare_cached(
            "UPDATE decisions SET status = $1, updated_at = $2, body = $3 WHERE seq = $4",
        )
        .await?;
    w.tx.execute(
        &stmt,
        &[
            &decision.status.as_str(),
            &nanos(decision.updated_at),
            &body,
            &seq,
        ],
    )
    .await?;
    Ok(())
}
