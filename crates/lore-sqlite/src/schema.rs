//! Recognizing a Lore file and bringing its schema up to date.
//!
//! Opening is three steps, so that a file Lore refuses is left exactly as it was. [`inspect`]
//! reads the 100-byte SQLite header by hand, before SQLite sees the file: anything that is not
//! SQLite, carries another application's ID, was written by a newer Lore, or already has a
//! schema without Lore's ID is refused there. The header of a WAL database can lag behind its
//! `-wal` file, so [`verify`] asks SQLite the same questions again over the opened connection,
//! before anything is written. Only then does [`migrate`] run.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use lore_core::{Error, Result};
use rusqlite::{Connection, TransactionBehavior};

use crate::Db;

/// The `PRAGMA application_id` of a Lore database: `LORE` in ASCII.
pub const APPLICATION_ID: i32 = 0x4C4F_5245;

/// The migrations, in order; migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_recall_index.sql"),
    include_str!("../migrations/0003_memories.sql"),
    include_str!("../migrations/0004_episodes.sql"),
    include_str!("../migrations/0005_episode_revision.sql"),
    include_str!("../migrations/0006_knowledge.sql"),
    include_str!("../migrations/0007_decisions.sql"),
    include_str!("../migrations/0008_digests_evals.sql"),
    include_str!("../migrations/0009_embedder_runs.sql"),
    include_str!("../migrations/0010_org_members.sql"),
    include_str!("../migrations/0011_embedder_progress.sql"),
    include_str!("../migrations/0012_knowledge_changes.sql"),
    include_str!("../migrations/0013_memory_revision.sql"),
    include_str!("../migrations/0014_stemmed_search.sql"),
];

/// The newest schema version this build knows, the one it migrates every file to.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The first 16 bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The length of the SQLite file header.
const HEADER_LEN: usize = 100;

/// What identifies a database file, wherever it was read from.
#[derive(Clone, Copy, Debug)]
struct Identity {
    application_id: i32,
    user_version: u32,
    /// Whether the file has (or once had) tables, indexes or views.
    has_schema: bool,
}

impl Identity {
    /// Reads the header fields (big-endian): schema cookie at 40, user version at 60,
    /// application ID at 68.
    fn from_header(header: &[u8; HEADER_LEN]) -> Self {
        let field = |at: usize| [header[at], header[at + 1], header[at + 2], header[at + 3]];
        Self {
            application_id: i32::from_be_bytes(field(68)),
            user_version: u32::from_be_bytes(field(60)),
            has_schema: u32::from_be_bytes(field(40)) != 0,
        }
    }

    /// Accepts an empty database or a Lore database no newer than this build.
    fn check(self, path: &Path) -> Result<()> {
        match self.application_id {
            APPLICATION_ID if self.user_version > SCHEMA_VERSION => {
                Err(newer(path, self.user_version))
            }
            APPLICATION_ID => Ok(()),
            0 if !self.has_schema => Ok(()),
            _ => Err(Error::Incompatible(format!(
                "{} is not a Lore database (it is an SQLite file of another application)",
                path.display()
            ))),
        }
    }
}

/// Decides from the file's header alone, without SQLite opening it, whether the existing file
/// at `path` may be opened: an empty file, an SQLite file without a schema, or a Lore database
/// no newer than this build.
///
/// # Errors
/// [`Error::Incompatible`] for a file that is not SQLite, another application's database, or a
/// newer Lore's; [`Error::Io`] when the file cannot be read.
pub(crate) fn inspect(path: &Path) -> Result<()> {
    let mut bytes = Vec::with_capacity(HEADER_LEN);
    File::open(path)
        .and_then(|f| f.take(HEADER_LEN as u64).read_to_end(&mut bytes))
        .map_err(|e| Error::io(path, e))?;
    if bytes.is_empty() {
        return Ok(());
    }
    let header: &[u8; HEADER_LEN] = match bytes.as_slice().try_into() {
        Ok(header) if bytes.starts_with(SQLITE_MAGIC) => header,
        _ => return Err(not_sqlite(path)),
    };
    Identity::from_header(header).check(path)
}

/// Asks SQLite what [`inspect`] read from the header, now counting a `-wal` file's changes;
/// call it before writing anything.
///
/// # Errors
/// The same refusals as [`inspect`]; [`Error::Store`] when SQLite fails otherwise.
pub(crate) fn verify(conn: &Connection, path: &Path) -> Result<()> {
    let read = || -> rusqlite::Result<Identity> {
        let objects: i64 =
            conn.query_row("SELECT COUNT(*) FROM sqlite_schema", [], |r| r.get(0))?;
        Ok(Identity {
            application_id: conn.pragma_query_one(None, "application_id")?,
            user_version: user_version(conn)?,
            has_schema: objects > 0,
        })
    };
    read().map_err(|e| refusal(path, e))?.check(path)
}

/// Applies the migrations `conn` lacks, each batch in one transaction, and stamps the file.
///
/// The version is read again under the write lock, so two processes creating the same file at
/// once do not both migrate it.
///
/// # Errors
/// [`Error::Incompatible`] when another process upgraded the file past this build in the
/// meantime; [`Error::Store`] when a migration fails (and nothing of it stays).
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<u32> {
    if user_version(conn).db()? == SCHEMA_VERSION {
        return Ok(SCHEMA_VERSION);
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let current = user_version(&tx).db()?;
    if current > SCHEMA_VERSION {
        return Err(newer(path, current));
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tracing::info!(path = %path.display(), to = from + 1, "migrating the Lore schema");
        tx.execute_batch(sql).db()?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .db()?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .db()?;
    tx.commit().db()?;
    Ok(SCHEMA_VERSION)
}

/// The file's `PRAGMA user_version`.
fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    let version: i64 = conn.pragma_query_one(None, "user_version")?;
    // A negative version is no version Lore ever wrote: treat it as newer than anything.
    Ok(u32::try_from(version).unwrap_or(u32::MAX))
}

/// Why a file that looked like SQLite could not be read.
pub(crate) fn refusal(path: &Path, error: rusqlite::Error) -> Error {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => not_sqlite(path),
        _ => crate::db_error(error),
    }
}

fn not_sqlite(path: &Path) -> Error {
    Error::Incompatible(format!(
        "{} is not a Lore database (not an SQLite file)",
        path.display()
    ))
}

fn newer(path: &Path, version: u32) -> Error {
    Error::Incompatible(format!(
        "{} was written by a newer Lore (schema v{version}; this build knows up to \
         v{SCHEMA_VERSION})",
        path.display()
    ))
}
