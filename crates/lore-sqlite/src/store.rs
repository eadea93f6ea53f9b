//! [`SqliteStore`]: the [`Store`] port over one SQLite file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use lore_core::graph::GraphCounts;
use lore_core::id::{CorrectionId, EpisodeId, ExecutionId, LessonId, MemoryId};
use lore_core::model::{
    AuditEntry, Correction, Episode, ErrorEvent, Execution, Lesson, MemoryCategory, MemoryEntry,
};
use lore_core::ports::bell::ChangeBell;
use lore_core::ports::store::{
    ChangeCursor, Changes, EpisodeFilter, LessonChanges, LessonUpdate, LessonVector, ListFilter,
    OnDuplicate, Record, SearchHit, StoreCounts, StoreInfo, WriteReport,
};
use lore_core::{Error, Result, Scope, Store};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use tracing::instrument;

use crate::Db;
use crate::episodes;
use crate::filter::Where;
use crate::rows::{self, Row};
use crate::schema;
use crate::search;
use crate::table::Table;
use crate::vectors;

/// How long a statement waits for another process's write before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether [`SqliteStore::open`] may create the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the file (and its parent folders) when it is missing.
    Create,
    /// Open only a file that exists; a missing one is [`Error::NotFound`].
    Existing,
}

/// A Lore store in one SQLite file.
///
/// The connection sits behind a mutex, which makes the store `Send + Sync`; every call holds it
/// briefly, and a write batch is one transaction.
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// A read-only connection of its own for the reads of every lesson or vector that a
    /// recall index build makes: seconds at 100k lessons, which on `conn` would hold every
    /// other call that long (a server's recalls while its index warms, its writes). WAL lets
    /// it read beside the writer. Opened at first use; `None` inside until then, and `conn`
    /// serves when it cannot be opened.
    bulk: Mutex<Option<Connection>>,
    path: PathBuf,
    schema_version: u32,
    checkpointer: Option<Checkpointer>,
    /// Rung after each commit of this process; writes by other processes are found by polling.
    bell: ChangeBell,
    /// Set when a write was refused for lack of room, cleared by the next commit.
    full: AtomicBool,
}

/// Moves WAL checkpoints off the write path.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and its
/// fsyncs made one write in a hundred take over 10 ms here. Writes instead nudge this thread,
/// which runs a passive checkpoint on its own connection: it never blocks a writer, and a write
/// costs only its append to the WAL.
///
/// Under sustained writes a passive checkpoint never catches up with the log's end, so SQLite
/// never starts the log again from its beginning and the file grows without bound (3.5 GB
/// after 72k executions, each commit adding about 12 pages). Past [`WAL_LIMIT_BYTES`] the
/// thread hands over: after its own checkpoint it marks the log [`READY`], stops, and the
/// writer, right after its next commit and before its connection takes another write, copies
/// what was written since. That is the last few milliseconds' worth, and the commit after it
/// starts the log again, which `journal_size_limit` cuts back to the limit. (A truncating
/// checkpoint from the thread bounded the file too, but it holds off every writer while it
/// copies and syncs the whole log, and writers then sleep in SQLite's busy handler: recording
/// fell from 4,800 to 2,000 executions a second with a p99 of 430 ms.)
struct Checkpointer {
    nudge: Option<std::sync::mpsc::SyncSender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// [`IDLE`], [`READY`] or [`CATCHING_UP`]; only one side checkpoints at a time, since
    /// two checkpoints at once make the second give up.
    state: Arc<AtomicU8>,
}

/// How many times a purge tries to checkpoint and truncate the WAL (10 ms apart).
const PURGE_CHECKPOINT_ATTEMPTS: usize = 200;

/// The WAL size past which the writer finishes the thread's checkpoint.
const WAL_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// The thread checkpoints.
const IDLE: u8 = 0;
/// The thread checkpointed a log past the limit and waits for the writer to finish.
const READY: u8 = 1;
/// The writer is finishing the checkpoint.
const CATCHING_UP: u8 = 2;

fn wal_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn wal_len(wal: &Path) -> u64 {
    std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
}

fn checkpoint(conn: &Connection) {
    if let Err(err) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::debug!(%err, "checkpoint skipped");
    }
}

impl Checkpointer {
    fn start(path: &Path) -> Option<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| c.busy_timeout(BUSY_TIMEOUT).map(|_| c))
        .inspect_err(
            |err| tracing::warn!(%err, "no background checkpointer; SQLite will checkpoint inline"),
        )
        .ok()?;
        let (nudge, nudged) = std::sync::mpsc::sync_channel::<()>(1);
        let state = Arc::new(AtomicU8::new(IDLE));
        let shared = Arc::clone(&state);
        let wal = wal_path(path);
        let thread = std::thread::Builder::new()
            .name("lore-sqlite-checkpoint".into())
            .spawn(move || {
                while nudged.recv().is_ok() {
                    // Let a burst of writes finish so one checkpoint covers them all.
                    std::thread::sleep(Duration::from_millis(20));
                    while nudged.try_recv().is_ok() {}
                    if shared.load(Ordering::Acquire) != IDLE {
                        continue;
                    }
                    checkpoint(&conn);
                    if wal_len(&wal) > WAL_LIMIT_BYTES {
                        shared.store(READY, Ordering::Release);
                    }
                }
            })
            .inspect_err(|err| tracing::warn!(%err, "no background checkpointer"))
            .ok()?;
        Some(Self {
            nudge: Some(nudge),
            thread: Some(thread),
            state,
        })
    }

    /// After a commit on `conn`, the writer's connection, still held: finishes the thread's
    /// checkpoint when it handed over, and nudges the thread.
    fn after_commit(&self, conn: &Connection) {
        if self
            .state
            .compare_exchange(READY, CATCHING_UP, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            checkpoint(conn);
            self.state.store(IDLE, Ordering::Release);
        }
        if let Some(n) = &self.nudge {
            let _ = n.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.nudge.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .field("schema_version", &self.schema_version)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens the Lore database at `path`, migrating it to this build's schema.
    ///
    /// The file is inspected before anything is written to it, so a file that is refused is
    /// left unchanged. An empty file is initialized like a new one.
    ///
    /// # Errors
    /// [`Error::NotFound`] (kind `store`) when the file is missing in [`OpenMode::Existing`];
    /// [`Error::Incompatible`] when it is not SQLite, belongs to another application, or was
    /// written by a newer Lore; [`Error::Io`] when it or its folder cannot be read or created;
    /// [`Error::Store`] when SQLite fails.
    #[instrument(skip_all, fields(path = %path.as_ref().display()))]
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Self> {
        let path = path.as_ref();
        let exists = path.try_exists().map_err(|e| Error::io(path, e))?;
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        match (exists, mode) {
            (true, _) => schema::inspect(path)?,
            (false, OpenMode::Existing) => return Err(Error::not_found("store", path.display())),
            (false, OpenMode::Create) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
                }
                flags |= OpenFlags::SQLITE_OPEN_CREATE;
            }
        }
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| schema::refusal(path, e))?;
        schema::verify(&conn, path)?;
        configure(&conn).db()?;
        let schema_version = schema::migrate(&mut conn, path)?;
        let checkpointer = Checkpointer::start(path);
        if checkpointer.is_some() {
            conn.pragma_update(None, "wal_autocheckpoint", 0).db()?;
            // Applied when a commit starts the log again from its beginning.
            conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES as i64)
                .db()?;
        }
        Ok(Self {
            conn: Mutex::new(conn),
            bulk: Mutex::new(None),
            path: path.to_owned(),
            schema_version,
            checkpointer,
            bell: ChangeBell::new(),
            full: AtomicBool::new(false),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection; a panic in another thread left no transaction open (it rolled back on
    /// unwinding), so a poisoned lock is safe to take over.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs the read `f` on the bulk-read connection ([`SqliteStore::bulk`]), or on the
    /// shared one when that cannot be opened.
    fn bulk_read<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut bulk = self.bulk.lock().unwrap_or_else(PoisonError::into_inner);
        if bulk.is_none() {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            *bulk = Connection::open_with_flags(&self.path, flags)
                .and_then(|c| c.busy_timeout(BUSY_TIMEOUT).map(|()| c))
                .inspect_err(|err| tracing::debug!(%err, "bulk reads share the connection"))
                .ok();
        }
        match bulk.as_mut() {
            Some(conn) => f(conn),
            None => {
                drop(bulk);
                f(&mut self.conn())
            }
        }
    }

    /// Runs `f` in one write transaction, committed only when `f` succeeds. A write refused
    /// for lack of room is [`Error::StorageFull`], and the store remembers it until a commit
    /// succeeds (see [`Store::check_writable`]).
    pub(crate) fn in_transaction<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        match self.transact(f) {
            Ok(out) => {
                self.full.store(false, Ordering::Release);
                Ok(out)
            }
            Err(err) => {
                let err = crate::room::diagnose(&self.path, err);
                if matches!(err, Error::StorageFull(_)) {
                    self.full.store(true, Ordering::Release);
                }
                Err(err)
            }
        }
    }

    fn transact<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .db()?;
        let out = f(&tx)?;
        tx.commit().db()?;
        if let Some(c) = &self.checkpointer {
            c.after_commit(&conn);
        }
        drop(conn);
        self.bell.ring();
        Ok(out)
    }

    fn list<T: serde::de::DeserializeOwned>(
        &self,
        table: Table,
        filter: &ListFilter,
    ) -> Result<Vec<T>> {
        let w = Where::listing(table, filter);
        rows::list(&self.conn(), table, &w, filter.limit, filter.offset)
    }
}

/// Per-connection settings: WAL so readers never block the writer, `NORMAL` sync (safe with
/// WAL), foreign keys, and a wait instead of an immediate "database is locked".
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "SQLite did not switch to WAL; concurrent readers may wait");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

/// The block of a core entry.
///
/// # Errors
/// [`Error::Invalid`] for an entry of another category or without a block.
pub(crate) fn core_block(entry: &MemoryEntry) -> Result<&str> {
    match (&entry.category, &entry.block) {
        (MemoryCategory::Core, Some(block)) => Ok(block),
        _ => Err(Error::invalid(
            "block",
            "a core version needs a core entry with a block",
        )),
    }
}

/// Stores `row` unless its ID is taken; returns whether it was written (`false`: skipped).
fn write_row(tx: &Connection, row: &Row, on_duplicate: OnDuplicate) -> Result<bool> {
    let Some((_, stored)) = rows::stored(tx, row.table, &row.id)? else {
        rows::insert(tx, row)?;
        return Ok(true);
    };
    let identical = on_duplicate == OnDuplicate::SkipIdentical && same_json(&stored, &row.body)?;
    on_duplicate.on_stored(row.table.kind(), &row.id, identical)
}

/// Replaces a stored lesson unless it changed since `expected_updated_at`, and appends `audit`.
fn replace_lesson(
    tx: &Connection,
    row: &Row,
    expected_updated_at: DateTime<Utc>,
    audit: &Row,
) -> Result<()> {
    let Some((seq, body)) = rows::stored(tx, Table::Lessons, &row.id)? else {
        return Err(Error::not_found("lesson", &row.id));
    };
    let current: Lesson = rows::from_json(&body)?;
    if current.updated_at != expected_updated_at {
        return Err(Error::Conflict(format!(
            "lesson {} changed since it was read (updated at {}, expected {})",
            row.id,
            current.updated_at.to_rfc3339(),
            expected_updated_at.to_rfc3339()
        )));
    }
    rows::replace(tx, seq, row)?;
    write_row(tx, audit, OnDuplicate::Fail)?;
    Ok(())
}

/// Whether two JSON texts hold the same value (object key order aside).
fn same_json(a: &str, b: &str) -> Result<bool> {
    let a: serde_json::Value = rows::from_json(a)?;
    let b: serde_json::Value = rows::from_json(b)?;
    Ok(a == b)
}

impl Store for SqliteStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "sqlite",
            location: self.path.display().to_string(),
            schema_version: self.schema_version,
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
        lore_core::limits::write(
            &[Record::Lesson(lesson.clone()), Record::Audit(audit.clone())],
            &[],
        )?;
        let row = Row::lesson(lesson)?;
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| replace_lesson(tx, &row, expected_updated_at, &audit))
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
        let rows = records.iter().map(Row::new).collect::<Result<Vec<_>>>()?;
        let replacements = updates
            .iter()
            .map(|u| {
                Ok((
                    Row::lesson(&u.lesson)?,
                    u.expected_updated_at,
                    Row::audit(&u.audit)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        self.in_transaction(|tx| {
            let mut report = WriteReport::default();
            for (record, row) in records.iter().zip(&rows) {
                let written = match (record, row) {
                    (_, Some(row)) => write_row(tx, row, on_duplicate)?,
                    (Record::Episode(episode), None) => episodes::write(tx, episode, on_duplicate)?,
                    (_, None) => unreachable!("only episodes are not rows"),
                };
                if written {
                    report.written += 1;
                } else {
                    report.skipped += 1;
                }
            }
            for (row, expected, audit) in &replacements {
                replace_lesson(tx, row, *expected, audit)?;
            }
            Ok(report)
        })
    }

    #[instrument(skip_all, fields(records = erased.len()))]
    fn purge(&self, erased: &[Record], audit: &AuditEntry) -> Result<()> {
        lore_core::limits::audit(audit)?;
        let rows = erased.iter().map(Row::new).collect::<Result<Vec<_>>>()?;
        let audit = Row::audit(audit)?;
        self.conn()
            .pragma_update(None, "secure_delete", "ON")
            .db()?;
        let purged = self.in_transaction(|tx| {
            for (record, row) in erased.iter().zip(&rows) {
                let Some(row) = row else {
                    if let Record::Episode(episode) = record {
                        episodes::erase(tx, episode)?;
                    }
                    continue;
                };
                let Some((seq, _)) = rows::stored(tx, row.table, &row.id)? else {
                    return Err(Error::not_found(row.table.kind(), &row.id));
                };
                rows::erase(tx, seq, row)?;
                if row.table == Table::Lessons {
                    vectors::erase(tx, &row.id)?;
                }
            }
            write_row(tx, &audit, OnDuplicate::Fail)?;
            rows::merge_text_indexes(tx)
        });
        let conn = self.conn();
        conn.pragma_update(None, "secure_delete", "OFF").db()?;
        purged?;
        // The old pages may still sit in the WAL until it is checkpointed and truncated. The
        // background checkpointer, nudged by this very commit, may hold the log for a moment,
        // and a checkpoint that meets another gives up (busy), so try again until one is whole.
        for _ in 0..PURGE_CHECKPOINT_ATTEMPTS {
            let busy: i64 = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
                .db()?;
            if busy == 0 {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        tracing::warn!("the write-ahead log stayed busy; purged pages leave it at its next reset");
        Ok(())
    }

    #[instrument(skip_all)]
    fn execution(&self, id: &ExecutionId) -> Result<Option<Execution>> {
        rows::get(&self.conn(), Table::Executions, id.as_str())
    }

    #[instrument(skip_all)]
    fn correction(&self, id: &CorrectionId) -> Result<Option<Correction>> {
        rows::get(&self.conn(), Table::Corrections, id.as_str())
    }

    #[instrument(skip_all)]
    fn lesson(&self, id: &LessonId) -> Result<Option<Lesson>> {
        rows::get(&self.conn(), Table::Lessons, id.as_str())
    }

    #[instrument(skip_all)]
    fn executions(&self, filter: &ListFilter) -> Result<Vec<Execution>> {
        self.list(Table::Executions, filter)
    }

    #[instrument(skip_all)]
    fn corrections(&self, filter: &ListFilter) -> Result<Vec<Correction>> {
        self.list(Table::Corrections, filter)
    }

    #[instrument(skip_all)]
    fn lessons(&self, filter: &ListFilter) -> Result<Vec<Lesson>> {
        self.list(Table::Lessons, filter)
    }

    #[instrument(skip_all)]
    fn error_events(&self, filter: &ListFilter) -> Result<Vec<ErrorEvent>> {
        self.list(Table::ErrorEvents, filter)
    }

    #[instrument(skip_all)]
    fn audit(&self, subject: Option<&str>) -> Result<Vec<AuditEntry>> {
        let mut w = Where::default();
        if let Some(subject) = subject {
            w.push("t.subject = ?", [Value::Text(subject.to_owned())]);
        }
        rows::list(&self.conn(), Table::Audit, &w, None, 0)
    }

    #[instrument(skip_all)]
    fn search(&self, query: &str, filter: &ListFilter, limit: usize) -> Result<Vec<SearchHit>> {
        search::search(&self.conn(), query, filter, limit)
    }

    #[instrument(skip_all)]
    fn search_lessons(
        &self,
        query: &str,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        search::search_lessons(&self.conn(), query, filter, limit)
    }

    fn lesson_revision(&self) -> Result<u64> {
        vectors::revision(&self.conn())
    }

    #[instrument(skip_all, fields(since))]
    fn lessons_changed(&self, scope: &Scope, since: u64) -> Result<LessonChanges> {
        // One read transaction, so the revision and the rows are of the same moment.
        let read = |conn: &mut Connection| {
            let tx = conn.transaction().db()?;
            let changes = vectors::changed(&tx, scope, since)?;
            tx.commit().db()?;
            Ok(changes)
        };
        if since == 0 {
            self.bulk_read(read)
        } else {
            read(&mut self.conn())
        }
    }

    #[instrument(skip_all, fields(vectors = items.len()))]
    fn put_vectors(&self, items: &[LessonVector]) -> Result<()> {
        items.iter().try_for_each(LessonVector::check)?;
        self.in_transaction(|tx| items.iter().try_for_each(|v| vectors::put(tx, v)))
    }

    #[instrument(skip_all)]
    fn vectors(&self, scope: &Scope, lessons: Option<&[LessonId]>) -> Result<Vec<LessonVector>> {
        let Some(ids) = lessons else {
            return self.bulk_read(|conn| vectors::list(conn, scope, None));
        };
        let conn = self.conn();
        // Bounded batches: SQLite limits the parameters of one statement.
        ids.chunks(500).try_fold(Vec::new(), |mut all, chunk| {
            all.extend(vectors::list(&conn, scope, Some(chunk))?);
            Ok(all)
        })
    }

    fn index_state(&self, key: &str) -> Result<Option<Vec<u8>>> {
        vectors::state(&self.conn(), key)
    }

    fn set_index_state(&self, key: &str, value: &[u8]) -> Result<()> {
        if key.trim().is_empty() {
            return Err(Error::invalid("key", "an index state needs a name"));
        }
        self.in_transaction(|tx| vectors::set_state(tx, key, value))
    }

    /// `.lore/lore.db` keeps its derived files in `.lore/index/`, named after the database so
    /// that two databases in one folder do not share them.
    fn derived_path(&self, name: &str) -> Option<PathBuf> {
        let stem = self.path.file_stem()?.to_string_lossy();
        let dir = self.path.parent().unwrap_or(Path::new(""));
        Some(dir.join("index").join(format!("{stem}.{name}")))
    }

    fn change_bell(&self) -> Option<&ChangeBell> {
        Some(&self.bell)
    }

    fn decisions(&self) -> Result<&dyn lore_core::ports::knowledge::DecisionStore> {
        Ok(self)
    }

    fn knowledge(&self) -> Result<&dyn lore_core::ports::knowledge::KnowledgeStore> {
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
        let conn = self.conn();
        Ok(ChangeCursor {
            executions: rows::max_seq(&conn, Table::Executions)?,
            audit: rows::max_seq(&conn, Table::Audit)?,
        })
    }

    fn changes(&self, after: ChangeCursor, limit: usize) -> Result<Changes> {
        let conn = self.conn();
        Ok(Changes {
            executions: rows::after_seq(&conn, Table::Executions, after.executions, limit)?,
            audit: rows::after_seq(&conn, Table::Audit, after.audit, limit)?,
        })
    }

    fn memories(&self, filter: &ListFilter, category: MemoryCategory) -> Result<Vec<MemoryEntry>> {
        let mut w = Where::listing(Table::Memories, filter);
        w.push(
            "t.category = ?",
            [Value::Text(category.as_str().to_owned())],
        );
        rows::list(
            &self.conn(),
            Table::Memories,
            &w,
            filter.limit,
            filter.offset,
        )
    }

    fn search_memories(
        &self,
        query: &str,
        filter: &ListFilter,
        category: MemoryCategory,
        limit: usize,
    ) -> Result<Vec<(MemoryEntry, f64)>> {
        search::search_memories(&self.conn(), query, filter, category, limit)
    }

    #[instrument(skip_all, fields(memory = %entry.id))]
    fn write_core_version(&self, entry: &MemoryEntry, after: Option<&MemoryId>) -> Result<bool> {
        let block = core_block(entry)?;
        lore_core::limits::memory(entry)?;
        let Some(row) = Row::new(&Record::Memory(entry.clone()))? else {
            unreachable!("a memory entry is a row")
        };
        // `IMMEDIATE` (see `in_transaction`) takes the write lock before the read, so no other
        // connection, in this process or another, can add a version between the two.
        self.in_transaction(|tx| {
            let newest: Option<String> = tx
                .prepare_cached(
                    "SELECT id FROM memories WHERE skill = ?1 AND category = 'core' \
                     AND json_extract(body, '$.block') = ?2 \
                     ORDER BY timestamp DESC, seq DESC LIMIT 1",
                )
                .and_then(|mut s| {
                    s.query_row([entry.skill.as_str(), block], |r| r.get(0))
                        .optional()
                })
                .db()?;
            if newest.as_deref() != after.map(MemoryId::as_str) {
                return Ok(false);
            }
            write_row(tx, &row, OnDuplicate::Fail)
        })
    }

    /// While a write is remembered as refused for lack of room, checks that the files can grow
    /// by a commit's worth again (see `room`), then commits a write of its own (a row
    /// rewritten with its own value, which SQLite appends to the log like any commit), so that
    /// room that came back is noticed without waiting for traffic.
    fn check_writable(&self) -> Result<()> {
        if !self.full.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(cause) = crate::room::probe(&self.path) {
            return Err(Error::StorageFull(cause.to_owned()));
        }
        self.in_transaction(|tx| {
            tx.execute(
                "UPDATE memory_revision SET revision = revision WHERE id = 1",
                [],
            )
            .db()?;
            Ok(())
        })
    }

    fn memory_revision(&self) -> Result<Option<u64>> {
        let revision: i64 = self
            .conn()
            .prepare_cached("SELECT revision FROM memory_revision WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db()?;
        Ok(Some(u64::try_from(revision).unwrap_or(0)))
    }

    #[instrument(skip_all)]
    fn counts(&self, scope: &Scope) -> Result<StoreCounts> {
        let conn = self.conn();
        let count = |table| rows::count(&conn, table, &Where::scope(scope));
        Ok(StoreCounts {
            executions: count(Table::Executions)?,
            corrections: count(Table::Corrections)?,
            lessons: count(Table::Lessons)?,
            error_events: count(Table::ErrorEvents)?,
            audit_entries: rows::count_audit(&conn, scope)?,
            tests: rows::count_tests(&conn, scope)?,
            memories: count(Table::Memories)?,
            episodes: episodes::count(&conn, scope)?,
        })
    }

    #[instrument(skip_all)]
    fn members(&self, scope: &Scope) -> Result<Vec<lore_core::org::Member>> {
        crate::members::members(&self.conn(), scope)
    }

    #[instrument(skip_all, fields(episode = %episode.id))]
    fn put_episode(&self, episode: &Episode, replace: bool, audit: &AuditEntry) -> Result<bool> {
        episode.validate()?;
        lore_core::limits::audit(audit)?;
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| {
            let replaced = episodes::put(tx, episode, replace)?;
            write_row(tx, &audit, OnDuplicate::Fail)?;
            Ok(replaced)
        })
    }

    #[instrument(skip_all)]
    fn episode(&self, id: &EpisodeId) -> Result<Option<Episode>> {
        episodes::get(&self.conn(), id)
    }

    #[instrument(skip_all)]
    fn episodes(&self, filter: &EpisodeFilter) -> Result<Vec<Episode>> {
        episodes::list(&self.conn(), filter)
    }

    #[instrument(skip_all)]
    fn graph_counts(&self, scope: &Scope) -> Result<GraphCounts> {
        // One read transaction, so counts and members are of the same moment.
        let mut conn = self.conn();
        let tx = conn.transaction().db()?;
        let graph = episodes::graph(&tx, scope)?;
        tx.commit().db()?;
        Ok(graph)
    }

    fn episode_revision(&self) -> Result<Option<u64>> {
        episodes::revision(&self.conn()).map(Some)
    }

    #[instrument(skip_all)]
    fn rebuild_graph(&self) -> Result<()> {
        self.in_transaction(|tx| episodes::rebuild(tx))
    }
}
