//! [`PostgresStore`]: the [`Store`] port over PostgreSQL with pgvector.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use chrono::{DateTime, Utc};
use deadpool_postgres::Pool;
use lore_core::graph::GraphCounts;
use lore_core::id::{CorrectionId, EpisodeId, ExecutionId, LessonId, MemoryId};
use lore_core::model::{
    AuditEntry, Correction, Episode, ErrorEvent, Execution, Lesson, MemoryCategory, MemoryEntry,
};
use lore_core::ports::bell::ChangeBell;
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::store::{
    ChangeCursor, Changes, EpisodeFilter, LessonChanges, LessonUpdate, LessonVector, ListFilter,
    OnDuplicate, Record, SearchHit, StoreCounts, StoreInfo, WriteReport,
};
use lore_core::{Error, Result, Scope, Store};
use tokio::runtime::Runtime;
use tracing::instrument;

use crate::connect::{self, Fail, PostgresOptions, SCHEMA_VERSION, Scrubber};
use crate::episodes;
use crate::filter::{Kind, Where};
use crate::nearest;
use crate::notify;
use crate::rows::{self, Counter, Row, Table, Writer};
use crate::search;

/// A Lore store in a PostgreSQL database that many processes share.
pub struct PostgresStore {
    /// Drives the driver's connections; shut down without waiting when the store drops, so
    /// dropping a store inside another runtime is safe.
    runtime: Option<Runtime>,
    pool: Pool,
    scrubber: Scrubber,
    location: String,
    /// The schema it was given, if any.
    schema: Option<String>,
    /// Rung for every write to this store's schema, by any process (`notify`).
    bell: Arc<ChangeBell>,
    /// Set when the server refused a write for lack of room, cleared by
    /// [`Store::check_writable`]'s own write once one succeeds.
    full: AtomicBool,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs `fut` on `runtime` and waits for it on this thread, whatever thread this is.
fn wait<T: Send + 'static>(
    runtime: &Runtime,
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| Error::store(std::io::Error::other("the store's runtime stopped")))
}

impl PostgresStore {
    /// Connects to the database at `url`, creating Lore's tables or bringing them up to date.
    ///
    /// # Errors
    /// As [`PostgresStore::open`].
    pub fn connect(url: &str) -> Result<Self> {
        Self::open(PostgresOptions::new(url))
    }

    /// Connects with `options`, creating the schema and the `vector` extension when they are
    /// missing and migrating Lore's tables, under a lock that other processes opening the same
    /// database at once wait for.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a malformed connection string; [`Error::Incompatible`] when the
    /// server lacks pgvector (the message says how to install it) or the database was written
    /// by a newer Lore; [`Error::Store`] when the server cannot be reached. No message carries
    /// the password.
    pub fn open(options: PostgresOptions) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lore-postgres")
            .enable_all()
            .build()
            .map_err(Error::store)?;
        let connected = wait(&runtime, async move { connect::connect(&options).await })??;
        let bell = Arc::new(ChangeBell::new());
        runtime.spawn(notify::listen(
            connected.config,
            Arc::clone(&bell),
            connected.scrubber.clone(),
        ));
        Ok(Self {
            runtime: Some(runtime),
            pool: connected.pool,
            scrubber: connected.scrubber,
            location: connected.location,
            schema: connected.schema,
            bell,
            full: AtomicBool::new(false),
        })
    }

    /// Where the store lives, without the password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs `f` with the pool on the store's runtime and waits for its answer.
    pub(crate) fn run<T, F>(&self, f: impl FnOnce(Pool) -> F) -> Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, Fail>> + Send + 'static,
    {
        let Some(runtime) = &self.runtime else {
            return Err(Error::store(std::io::Error::other("the store is closed")));
        };
        wait(runtime, f(self.pool.clone()))?.map_err(|fail| {
            let err = self.scrubber.error(fail);
            if matches!(err, Error::StorageFull(_)) {
                self.full.store(true, Ordering::Release);
            }
            err
        })
    }

    fn list<T>(&self, table: Table, kind: Kind, filter: &ListFilter) -> Result<Vec<T>>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let (limit, offset) = (filter.limit, filter.offset);
        let w = Where::listing(kind, filter);
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::list(&client, table, w, limit, offset).await
        })
    }

    fn get<T>(&self, table: Table, id: &str) -> Result<Option<T>>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let id = id.to_owned();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::get(&client, table, &id).await
        })
    }
}

/// Stores `row` unless its ID is taken; returns whether it was written (`false`: skipped).
async fn write_row(w: &mut Writer<'_>, row: &Row, on_duplicate: OnDuplicate) -> Result<bool, Fail> {
    let Some((_, stored)) = rows::stored(&w.tx, row.table, &row.id).await? else {
        rows::insert(w, row).await?;
        return Ok(true);
    };
    let identical = on_duplicate == OnDuplicate::SkipIdentical && same_json(&stored, &row.body)?;
    Ok(on_duplicate.on_stored(row.table.kind(), &row.id, identical)?)
}

/// Whether two JSON texts hold the same value (object key order aside).
fn same_json(a: &str, b: &str) -> Result<bool> {
    let a: serde_json::Value = rows::from_json(a)?;
    let b: serde_json::Value = rows::from_json(b)?;
    Ok(a == b)
}

/// A lesson replacement, flattened: the row, the `updated_at` the caller read, the audit row.
type Replacement = (Row, DateTime<Utc>, Row);

/// Replaces a stored lesson unless it changed since `expected`, and appends `audit`. The row is
/// locked first, so the comparison holds until commit even against a writer that bypasses the
/// counters.
async fn replace_lesson(
    w: &mut Writer<'_>,
    (row, expected, audit): &Replacement,
) -> Result<(), Fail> {
    let stmt =
        w.tx.prepare_cached("SELECT seq, body FROM lessons WHERE id = $1 FOR UPDATE")
            .await?;
    let Some(found) = w.tx.query_opt(&stmt, &[&row.id]).await? else {
        return Err(Fail::Lore(Error::not_found("lesson", &row.id)));
    };
    let (seq, body): (i64, &str) = (found.get(0), found.get(1));
    let current: Lesson = rows::from_json(body)?;
    if current.updated_at != *expected {
        return Err(Fail::Lore(Error::Conflict(format!(
            "lesson {} changed since it was read (updated at {}, expected {})",
            row.id,
            current.updated_at.to_rfc3339(),
            expected.to_rfc3339()
        ))));
    }
    rows::replace(w, seq, row, true).await?;
    write_row(w, audit, OnDuplicate::Fail).await?;
    Ok(())
}

/// A record to write: its row, or the episode that lives apart.
enum Item {
    Row(Row),
    Episode(Box<Episode>),
}

impl Item {
    fn all(records: &[Record]) -> Result<Vec<Item>> {
        records
            .iter()
            .map(|record| {
                Ok(match (record, Row::new(record)?) {
                    (_, Some(row)) => Item::Row(row),
                    (Record::Episode(e), None) => Item::Episode(Box::new(e.clone())),
                    (_, None) => unreachable!("only episodes are not rows"),
                })
            })
            .collect()
    }
}

impl Store for PostgresStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "postgres",
            location: self.location.clone(),
            schema_version: SCHEMA_VERSION,
        }
    }

    #[instrument(skip_all, fields(records = records.len()))]
    fn write(&self, records: &[Record], on_duplicate: OnDuplicate) -> Result<WriteReport> {
        self.write_and_update(records, on_duplicate, &[])
    }

    #[instrument(skip_all, fields(lesson = %lesson.id))]
    fn update_lesson(
        &self,
        lesson: &Lesson,
        expected_updated_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<()> {
        let update = LessonUpdate {
            lesson: lesson.clone(),
            expected_updated_at,
            audit: audit.clone(),
        };
        self.write_and_update(&[], OnDuplicate::Fail, &[update])
            .map(|_| ())
    }

    #[instrument(skip_all, fields(lessons = updates.len()))]
    fn update_lessons(&self, updates: &[LessonUpdate]) -> Result<()> {
        self.write_and_update(&[], OnDuplicate::Fail, updates)
            .map(|_| ())
    }

    #[instrument(skip_all, fields(records = records.len(), lessons = updates.len()))]
    fn write_and_update(
        &self,
        records: &[Record],
        on_duplicate: OnDuplicate,
        updates: &[LessonUpdate],
    ) -> Result<WriteReport> {
        lore_core::limits::write(records, updates)?;
        let mut counters: Vec<Counter> = records
            .iter()
            .flat_map(|r| Counter::of(r).iter().copied())
            .collect();
        if !updates.is_empty() {
            counters.extend([Counter::Lessons, Counter::Audit]);
        }
        let items = Item::all(records)?;
        let replacements = updates
            .iter()
            .map(|u| {
                Ok((
                    Row::lesson(&u.lesson)?,
                    u.expected_updated_at,
                    Row::audit(&u.audit)?,
                ))
            })
            .collect::<Result<Vec<Replacement>>>()?;
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            // New rows alone, the usual write, go in one round trip; when one's ID is taken
            // (or there is more to do) the write takes the careful way below.
            let rows: Vec<&Row> = items
                .iter()
                .filter_map(|item| match item {
                    Item::Row(row) => Some(row),
                    Item::Episode(_) => None,
                })
                .collect();
            if replacements.is_empty()
                && !rows.is_empty()
                && rows.len() == items.len()
                && rows::insert_new(&client, &rows).await?
            {
                return Ok(WriteReport {
                    written: rows.len(),
                    skipped: 0,
                });
            }
            let mut w = Writer::begin(&mut client, counters).await?;
            let mut report = WriteReport::default();
            for item in &items {
                let written = match item {
                    Item::Row(row) => write_row(&mut w, row, on_duplicate).await?,
                    Item::Episode(e) => episodes::write(&mut w, e, on_duplicate).await?,
                };
                if written {
                    report.written += 1;
                } else {
                    report.skipped += 1;
                }
            }
            for replacement in &replacements {
                replace_lesson(&mut w, replacement).await?;
            }
            w.commit().await?;
            Ok(report)
        })
    }

    #[instrument(skip_all, fields(records = erased.len()))]
    fn purge(&self, erased: &[Record], audit: &AuditEntry) -> Result<()> {
        lore_core::limits::audit(audit)?;
        let mut counters = vec![Counter::Audit];
        counters.extend(erased.iter().flat_map(|r| match r {
            Record::Lesson(_) => Some(Counter::Lessons),
            Record::Episode(_) => Some(Counter::Episodes),
            _ => None,
        }));
        let items = Item::all(erased)?;
        let audit = Row::audit(audit)?;
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut tables = Vec::new();
            {
                let mut w = Writer::begin(&mut client, counters).await?;
                for item in &items {
                    match item {
                        Item::Episode(e) => {
                            episodes::erase(&mut w, e).await?;
                            tables.push("episodes");
                        }
                        Item::Row(row) => {
                            let Some((seq, _)) = rows::stored(&w.tx, row.table, &row.id).await?
                            else {
                                return Err(Fail::Lore(Error::not_found(row.table.kind(), &row.id)));
                            };
                            rows::replace(&mut w, seq, row, false).await?;
                            if row.table == Table::Lessons {
                                w.tx.execute(
                                    "DELETE FROM lesson_vectors WHERE lesson_id = $1",
                                    &[&row.id],
                                )
                                .await?;
                                tables.push("lesson_vectors");
                            }
                            tables.push(row.table.name());
                        }
                    }
                }
                write_row(&mut w, &audit, OnDuplicate::Fail).await?;
                w.commit().await?;
            }
            // The old row versions stay in the table's pages until vacuumed: vacuum now, so
            // the erased text is not left waiting for autovacuum.
            tables.sort_unstable();
            tables.dedup();
            if let Err(err) = client
                .batch_execute(&format!("VACUUM {}", tables.join(", ")))
                .await
            {
                tracing::warn!(code = ?err.code(), "vacuum after a purge failed; autovacuum will reclaim the rows");
            }
            Ok(())
        })
    }

    #[instrument(skip_all)]
    fn execution(&self, id: &ExecutionId) -> Result<Option<Execution>> {
        self.get(Table::Executions, id.as_str())
    }

    #[instrument(skip_all)]
    fn correction(&self, id: &CorrectionId) -> Result<Option<Correction>> {
        self.get(Table::Corrections, id.as_str())
    }

    #[instrument(skip_all)]
    fn lesson(&self, id: &LessonId) -> Result<Option<Lesson>> {
        self.get(Table::Lessons, id.as_str())
    }

    #[instrument(skip_all)]
    fn executions(&self, filter: &ListFilter) -> Result<Vec<Execution>> {
        self.list(Table::Executions, Kind::Other, filter)
    }

    #[instrument(skip_all)]
    fn corrections(&self, filter: &ListFilter) -> Result<Vec<Correction>> {
        self.list(Table::Corrections, Kind::Corrections, filter)
    }

    #[instrument(skip_all)]
    fn lessons(&self, filter: &ListFilter) -> Result<Vec<Lesson>> {
        self.list(Table::Lessons, Kind::Lessons, filter)
    }

    #[instrument(skip_all)]
    fn error_events(&self, filter: &ListFilter) -> Result<Vec<ErrorEvent>> {
        self.list(Table::ErrorEvents, Kind::ErrorEvents, filter)
    }

    #[instrument(skip_all)]
    fn audit(&self, subject: Option<&str>) -> Result<Vec<AuditEntry>> {
        let mut w = Where::default();
        if let Some(subject) = subject {
            w.push("t.subject = $?", subject.to_owned());
        }
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::list(&client, Table::Audit, w, None, 0).await
        })
    }

    #[instrument(skip_all)]
    fn search(&self, query: &str, filter: &ListFilter, limit: usize) -> Result<Vec<SearchHit>> {
        let (query, filter) = (query.to_owned(), filter.clone());
        self.run(move |pool| async move {
            let client = pool.get().await?;
            search::search(&client, &query, &filter, limit).await
        })
    }

    fn memories(&self, filter: &ListFilter, category: MemoryCategory) -> Result<Vec<MemoryEntry>> {
        let (limit, offset) = (filter.limit, filter.offset);
        let mut w = Where::listing(Kind::Other, filter);
        w.push("t.category = $?", category.as_str().to_owned());
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::list(&client, Table::Memories, w, limit, offset).await
        })
    }

    fn search_memories(
        &self,
        query: &str,
        filter: &ListFilter,
        category: MemoryCategory,
        limit: usize,
    ) -> Result<Vec<(MemoryEntry, f64)>> {
        let (query, filter) = (query.to_owned(), filter.clone());
        self.run(move |pool| async move {
            let client = pool.get().await?;
            search::search_memories(&client, &query, &filter, category, limit).await
        })
    }

    #[instrument(skip_all, fields(memory = %entry.id))]
    fn write_core_version(&self, entry: &MemoryEntry, after: Option<&MemoryId>) -> Result<bool> {
        let block = match (&entry.category, &entry.block) {
            (MemoryCategory::Core, Some(block)) => block.clone(),
            _ => {
                return Err(Error::invalid(
                    "block",
                    "a core version needs a core entry with a block",
                ));
            }
        };
        lore_core::limits::memory(entry)?;
        let Some(row) = Row::new(&Record::Memory(entry.clone()))? else {
            unreachable!("a memory entry is a row")
        };
        let skill = entry.skill.as_str().to_owned();
        let after = after.map(|a| a.as_str().to_owned());
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, []).await?;
            // Under READ COMMITTED two transactions could both find the same newest version
            // and both insert; a transaction-scoped lock on the block (in this schema) orders
            // them, and the second then reads the first one's version.
            w.tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(\
                 current_schema() || chr(10) || $1 || chr(10) || $2, 0))",
                &[&skill, &block],
            )
            .await?;
            let newest =
                w.tx.query_opt(
                    "SELECT id FROM memories WHERE skill = $1 AND category = 'core' \
                     AND (body::jsonb) ->> 'block' = $2 ORDER BY ts DESC, seq DESC LIMIT 1",
                    &[&skill, &block],
                )
                .await?
                .map(|r| r.get::<_, String>(0));
            if newest != after {
                return Ok(false);
            }
            let written = write_row(&mut w, &row, OnDuplicate::Fail).await?;
            w.commit().await?;
            Ok(written)
        })
    }

    /// While a write is remembered as refused for lack of room, rewrites one row with its own
    /// value (a new row version the server must find room for), so that room that came back
    /// is noticed without waiting for traffic.
    fn check_writable(&self) -> Result<()> {
        if !self.full.load(Ordering::Acquire) {
            return Ok(());
        }
        self.run(move |pool| async move {
            let client = pool.get().await?;
            client
                .execute(
                    "UPDATE memory_revision SET revision = revision WHERE id = 1",
                    &[],
                )
                .await?;
            Ok(())
        })?;
        self.full.store(false, Ordering::Release);
        Ok(())
    }

    fn memory_revision(&self) -> Result<Option<u64>> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let row = client
                .query_one("SELECT revision FROM memory_revision WHERE id = 1", &[])
                .await?;
            Ok(Some(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
        })
    }

    #[instrument(skip_all, fields(episode = %episode.id))]
    fn put_episode(&self, episode: &Episode, replace: bool, audit: &AuditEntry) -> Result<bool> {
        episode.validate()?;
        lore_core::limits::audit(audit)?;
        let audit = Row::audit(audit)?;
        let episode = episode.clone();
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit, Counter::Episodes]).await?;
            let replaced = episodes::put(&mut w, &episode, replace).await?;
            write_row(&mut w, &audit, OnDuplicate::Fail).await?;
            w.commit().await?;
            Ok(replaced)
        })
    }

    #[instrument(skip_all)]
    fn episode(&self, id: &EpisodeId) -> Result<Option<Episode>> {
        let id = id.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            episodes::get(&client, &id).await
        })
    }

    #[instrument(skip_all)]
    fn episodes(&self, filter: &EpisodeFilter) -> Result<Vec<Episode>> {
        let filter = filter.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            episodes::list(&client, &filter).await
        })
    }

    #[instrument(skip_all)]
    fn graph_counts(&self, scope: &Scope) -> Result<GraphCounts> {
        let scope = scope.clone();
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            // One snapshot, so counts and members are of the same moment.
            let tx = rows::snapshot(&mut client).await?;
            let graph = episodes::graph(&tx, &scope).await?;
            tx.commit().await?;
            Ok(graph)
        })
    }

    #[instrument(skip_all)]
    fn rebuild_graph(&self) -> Result<()> {
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Episodes]).await?;
            episodes::rebuild(&mut w).await?;
            w.commit().await
        })
    }

    fn episode_revision(&self) -> Result<Option<u64>> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::counter(&client, Counter::Episodes).await.map(Some)
        })
    }

    #[instrument(skip_all)]
    fn members(&self, scope: &Scope) -> Result<Vec<lore_core::org::Member>> {
        let scope = scope.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            crate::members::members(&client, &scope).await
        })
    }

    #[instrument(skip_all)]
    fn counts(&self, scope: &Scope) -> Result<StoreCounts> {
        let scope = scope.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let db = &client;
            let w = Where::scope(&scope);
            Ok(StoreCounts {
                executions: rows::count(db, Table::Executions, &w).await?,
                corrections: rows::count(db, Table::Corrections, &w).await?,
                lessons: rows::count(db, Table::Lessons, &w).await?,
                error_events: rows::count(db, Table::ErrorEvents, &w).await?,
                audit_entries: rows::count_audit(db, &scope).await?,
                tests: rows::count_tests(db, &scope).await?,
                memories: rows::count(db, Table::Memories, &w).await?,
                episodes: episodes::count(db, &scope).await?,
            })
        })
    }

    fn lesson_revision(&self) -> Result<u64> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            rows::counter(&client, Counter::Lessons).await
        })
    }

    #[instrument(skip_all, fields(since))]
    fn lessons_changed(&self, scope: &Scope, since: u64) -> Result<LessonChanges> {
        let mut w = Where::scope(scope);
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            // One snapshot, so the revision and the rows are of the same moment; revisions are
            // drawn in commit order, so the snapshot holds every revision up to the one read.
            let tx = rows::snapshot(&mut client).await?;
            let upto = rows::counter(&tx, Counter::Lessons).await?;
            let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            w.push("t.revision > $?", clamp(since));
            w.push("t.revision <= $?", clamp(upto));
            let sql = format!(
                "SELECT t.body FROM lessons t{} ORDER BY t.revision",
                w.sql()
            );
            let lessons = rows::bodies(&tx, &sql, &w.params()).await?;
            tx.commit().await?;
            Ok(LessonChanges {
                revision: upto,
                lessons,
            })
        })
    }

    #[instrument(skip_all, fields(vectors = items.len()))]
    fn put_vectors(&self, items: &[LessonVector]) -> Result<()> {
        items.iter().try_for_each(LessonVector::check)?;
        let items = items.to_vec();
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            let exists = tx
                .prepare_cached("SELECT 1 FROM lessons WHERE id = $1")
                .await?;
            let put = tx
                .prepare_cached(
                    "INSERT INTO lesson_vectors (lesson_id, embedder, dim, source_hash, vector) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (lesson_id) DO UPDATE SET \
                     embedder = excluded.embedder, dim = excluded.dim, \
                     source_hash = excluded.source_hash, vector = excluded.vector",
                )
                .await?;
            for v in &items {
                let id = v.lesson.as_str();
                if tx.query_opt(&exists, &[&id]).await?.is_none() {
                    return Err(Fail::Lore(Error::not_found("lesson", id)));
                }
                let dim = i32::try_from(v.embedder.dim).unwrap_or(i32::MAX);
                // The same 64 bits; PostgreSQL integers are signed.
                let hash = v.source_hash as i64;
                let vector = pgvector::Vector::from(v.vector.clone());
                tx.execute(&put, &[&id, &v.embedder.name, &dim, &hash, &vector])
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    #[instrument(skip_all)]
    fn vectors(&self, scope: &Scope, lessons: Option<&[LessonId]>) -> Result<Vec<LessonVector>> {
        let mut w = Where::scope(scope);
        if let Some(ids) = lessons {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let ids: Vec<String> = ids.iter().map(|i| i.as_str().to_owned()).collect();
            w.push("v.lesson_id = ANY($?)", ids);
        }
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!(
                "SELECT v.lesson_id, v.embedder, v.dim, v.source_hash, v.vector \
                 FROM lesson_vectors v JOIN lessons t ON t.id = v.lesson_id{}",
                w.sql()
            );
            let rows = client.query(&sql, &w.params()).await?;
            rows.iter()
                .map(|r| {
                    let dim: i32 = r.get(2);
                    let hash: i64 = r.get(3);
                    let vector: pgvector::Vector = r.get(4);
                    Ok(LessonVector {
                        lesson: LessonId::parse(r.get::<_, &str>(0))?,
                        embedder: EmbedderId {
                            name: r.get(1),
                            dim: usize::try_from(dim).unwrap_or(0),
                        },
                        source_hash: hash as u64,
                        vector: vector.to_vec(),
                    })
                })
                .collect()
        })
    }

    #[instrument(skip_all)]
    fn prepare_nearest(&self, embedder: &EmbedderId) -> Result<bool> {
        let embedder = embedder.clone();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            nearest::prepare(&client, &embedder).await
        })?;
        Ok(true)
    }

    #[instrument(skip_all, fields(k, exact))]
    fn nearest_stored(
        &self,
        embedder: &EmbedderId,
        query: &[f32],
        k: usize,
        exact: bool,
    ) -> Result<Option<Vec<LessonId>>> {
        let (embedder, query) = (embedder.clone(), query.to_vec());
        self.run(move |pool| async move {
            let mut client = pool.get().await?;
            nearest::nearest(&mut client, &embedder, query, k, exact).await
        })
        .map(Some)
    }

    fn index_state(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let key = key.to_owned();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let row = client
                .query_opt("SELECT value FROM index_state WHERE key = $1", &[&key])
                .await?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn set_index_state(&self, key: &str, value: &[u8]) -> Result<()> {
        if key.trim().is_empty() {
            return Err(Error::invalid("key", "an index state needs a name"));
        }
        let (key, value) = (key.to_owned(), value.to_vec());
        self.run(move |pool| async move {
            let client = pool.get().await?;
            client
                .execute(
                    "INSERT INTO index_state (key, value) VALUES ($1, $2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    &[&key, &value],
                )
                .await?;
            Ok(())
        })
    }

    fn change_bell(&self) -> Option<&ChangeBell> {
        Some(&self.bell)
    }

    fn knowledge(&self) -> Result<&dyn lore_core::ports::knowledge::KnowledgeStore> {
        Ok(self)
    }

    fn decisions(&self) -> Result<&dyn lore_core::ports::knowledge::DecisionStore> {
        Ok(self)
    }

    fn digests(&self) -> Result<&dyn lore_core::ports::knowledge::DigestStore> {
        Ok(self)
    }

    fn evals(&self) -> Result<&dyn lore_core::ports::knowledge::EvalStore> {
        Ok(self)
    }

    fn tuning(&self) -> Result<&dyn lore_core::ports::tuning::TuningStore> {
        Ok(self)
    }

    fn change_cursor(&self) -> Result<ChangeCursor> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            Ok(ChangeCursor {
                executions: rows::counter(&client, Counter::Executions).await?,
                audit: rows::counter(&client, Counter::Audit).await?,
            })
        })
    }

    fn changes(&self, after: ChangeCursor, limit: usize) -> Result<Changes> {
        self.run(move |pool| async move {
            let client = pool.get().await?;
            Ok(Changes {
                executions: rows::after_seq(&client, Table::Executions, after.executions, limit)
                    .await?,
                audit: rows::after_seq(&client, Table::Audit, after.audit, limit).await?,
            })
        })
    }
}

impl PostgresStore {
    /// Drops the schema this store was opened with (`schema=` or [`PostgresOptions::schema`])
    /// and everything in it: the end of a benchmark's or a test's scratch store.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a store in the connection's default schema, which is never
    /// dropped; [`Error::Store`] when the server refuses.
    pub fn drop_schema(&self) -> Result<()> {
        let Some(schema) = self.schema.clone() else {
            return Err(Error::invalid(
                "schema",
                "the store is in the connection's default schema, which Lore never drops",
            ));
        };
        self.run(move |pool| async move {
            let client = pool.get().await?;
            let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
            client.batch_execute(&sql).await?;
            Ok(())
        })
    }
}
