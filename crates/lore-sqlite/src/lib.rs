//! Lore's embedded store: one SQLite file that a single command creates and any later build can
//! open.
//!
//! Why it is built this way:
//!
//! - **One file, identified.** `PRAGMA application_id` marks the file as Lore's and
//!   `PRAGMA user_version` records its schema version. A file is inspected over a read-only
//!   connection before anything is written, so a file Lore refuses (not SQLite, another
//!   application's database, a newer Lore's) is never touched.
//! - **Records as JSON, columns to filter.** Each kind has its own table holding the record as a
//!   JSON `body` (the lore-core type through serde) plus the few columns that listings filter and
//!   order on. A new field in a record needs no migration, and the row types never leave this
//!   crate.
//! - **Full text in the same transaction.** FTS5 tables over lesson and execution text are
//!   written alongside their rows, so search can never disagree with the records.
//! - **WAL, one connection.** A `Mutex<Connection>` makes the store `Send + Sync`; WAL lets other
//!   processes (a second `lore` command, a server) read while one writes, and `busy_timeout`
//!   waits out their writes instead of failing.

mod decisions;
mod digests;
mod episodes;
mod filter;
mod knowledge;
mod members;
mod room;
mod rows;
mod schema;
mod search;
mod store;
mod table;
mod tuning;
mod vectors;

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{OpenMode, SqliteStore};

use lore_core::Error;

/// Maps driver errors to [`Error::Store`], once, for every call site.
trait Db<T> {
    /// The value, or the driver's error wrapped opaquely.
    fn db(self) -> lore_core::Result<T>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    fn db(self) -> lore_core::Result<T> {
        self.map_err(db_error)
    }
}

/// Wraps a driver error, dropping the SQL text that some errors carry: messages reach users. A
/// full disk is [`Error::StorageFull`], which a caller can act on.
fn db_error(error: rusqlite::Error) -> Error {
    if room::is_full(&error) {
        return Error::StorageFull(room::DISK_FULL.to_owned());
    }
    match error {
        rusqlite::Error::SqlInputError { error, msg, .. } => {
            Error::store(rusqlite::Error::SqliteFailure(error, Some(msg)))
        }
        other => Error::store(other),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn driver_errors_do_not_carry_the_statement() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let error = conn.prepare("SELEC body FROM secret_table").unwrap_err();
        assert!(
            matches!(error, rusqlite::Error::SqlInputError { .. }),
            "{error:?}"
        );
        let message = crate::db_error(error).to_string();
        assert!(!message.contains("secret_table"), "{message}");
    }
}
