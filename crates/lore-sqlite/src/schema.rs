//! Recognizing a Lore file and bringing its schema up to date.
//!
//! Opening is two steps. [`inspect`] looks at the file over a read-only connection (after
//! checking the SQLite header by hand) and refuses anything that is not an empty file or a Lore
//! database this build understands; only then does the store open it for writing and call
//! [`migrate`]. So a refused file is left exactly as it was.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use lore_core::{Error, Result};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::Db;

/// The `PRAGMA application_id` of a Lore database: `LORE` in ASCII.
pub const APPLICATION_ID: i32 = 0x4C4F_5245;

/// The migrations, in order; migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[include_str!("../migrations/0001_init.sql")];

/// The newest schema version this build knows, the one it migrates every file to.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Decides, without writing anything, whether the existing file at `path` may be opened: an
/// empty file, an SQLite file without tables, or a Lore database no newer than this build.
///
/// # Errors
/// [`Error::Incompatible`] for a file that is not SQLite, another application's database, or a
/// newer Lore's; [`Error::Io`] when the file cannot be read.
pub(crate) fn inspect(path: &Path) -> Result<()> {
    let mut header = Vec::with_capacity(SQLITE_HEADER.len());
    File::open(path)
        .and_then(|f| f.take(SQLITE_HEADER.len() as u64).read_to_end(&mut header))
        .map_err(|e| Error::io(path, e))?;
    if header.is_empty() {
        return Ok(());
    }
    if header != SQLITE_HEADER {
        return Err(not_sqlite(path));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| refusal(path, e))?;
    let application_id: i32 = conn
        .pragma_query_one(None, "application_id")
        .map_err(|e| refusal(path, e))?;
    let version = user_version(&conn).map_err(|e| refusal(path, e))?;
    let objects: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(|e| refusal(path, e))?;
    match application_id {
        APPLICATION_ID if version > SCHEMA_VERSION => Err(newer(path, version)),
        APPLICATION_ID => Ok(()),
        0 if objects == 0 => Ok(()),
        _ => Err(Error::Incompatible(format!(
            "{} is not a Lore database (it is an SQLite file of another application)",
            path.display()
        ))),
    }
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
fn refusal(path: &Path, error: rusqlite::Error) -> Error {
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
