//! Telling a full store from a broken one, and noticing when room comes back.
//!
//! SQLite reports a disk that filled up mid-write as `SQLITE_FULL`, but a write refused
//! outright (`EFBIG` past the process's file-size limit, `EDQUOT` past a quota) only as a
//! generic I/O error, and the driver does not carry the operating system's error number. A
//! caller acts differently on the two (free space and retry, or call someone), so on an I/O
//! error this module asks the filesystem directly: it writes [`PROBE_BYTES`] into a scratch
//! file beside the store, at the offset where the store's largest file ends (the file is sparse
//! below it), which needs the room the store's next commit needs and fails with the error
//! number SQLite saw. The same probe tells a store remembered as full when there is room for a
//! commit again: a write of a few bytes may fit in the last free block long before a real one
//! does, and a server that reports itself ready on that would take traffic it then refuses.

use std::io::{ErrorKind, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use lore_core::Error;

/// How much the probe writes: the WAL frames of a commit of a few records.
const PROBE_BYTES: usize = 64 * 1024;

/// The message for `SQLITE_FULL` and `ENOSPC`.
pub(crate) const DISK_FULL: &str = "no space is left on the disk that holds the store, so \
     nothing of this write was stored; free space, then send it again";

/// Whether a driver error says the store ran out of room.
pub(crate) fn is_full(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

/// Whether a driver error is one that a lack of room may hide behind.
fn may_hide_full(error: &Error) -> bool {
    let Error::Store(source) = error else {
        return false;
    };
    source
        .downcast_ref::<rusqlite::Error>()
        .and_then(rusqlite::Error::sqlite_error_code)
        == Some(rusqlite::ErrorCode::SystemIoFailure)
}

/// `error` as [`Error::StorageFull`] when the store at `db` has no room to grow, else as it is.
pub(crate) fn diagnose(db: &Path, error: Error) -> Error {
    if !may_hide_full(&error) {
        return error;
    }
    match probe(db) {
        Some(cause) => {
            tracing::warn!(%error, cause, "a write failed for lack of room");
            Error::StorageFull(cause.to_owned())
        }
        None => error,
    }
}

/// Why the store's files cannot grow by a commit's worth, or `None` when they can (or the
/// probe cannot tell).
pub(crate) fn probe(db: &Path) -> Option<&'static str> {
    let end = ["", "-wal", "-journal"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(with_suffix(db, suffix)).ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    let scratch = with_suffix(db, "-room");
    let written = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&scratch)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(end))?;
            f.write_all(&[0; PROBE_BYTES])?;
            f.sync_data()
        });
    let _ = std::fs::remove_file(&scratch);
    match written.err()?.kind() {
        ErrorKind::StorageFull => Some(DISK_FULL),
        ErrorKind::FileTooLarge => Some(
            "the store's file reached the largest size this process may write (its file-size \
             limit), so nothing of this write was stored; raise the limit or move the store, \
             then send it again",
        ),
        ErrorKind::QuotaExceeded => Some(
            "the disk quota of the store's owner is used up, so nothing of this write was \
             stored; free space or raise the quota, then send it again",
        ),
        _ => None,
    }
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_with_room_left_stays_what_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("lore.db");
        std::fs::write(&db, b"x").unwrap();
        let io = Error::store(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_WRITE),
            None,
        ));
        assert!(matches!(diagnose(&db, io), Error::Store(_)));
        assert!(
            !with_suffix(&db, "-room").exists(),
            "the scratch file is removed"
        );
    }

    #[test]
    fn other_errors_are_not_probed() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("lore.db");
        let busy = Error::store(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        ));
        assert!(matches!(diagnose(&db, busy), Error::Store(_)));
        assert!(matches!(
            diagnose(&db, Error::Conflict("x".into())),
            Error::Conflict(_)
        ));
    }
}
