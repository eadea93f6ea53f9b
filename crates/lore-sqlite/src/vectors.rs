//! What the recall index keeps in the file: lesson revisions, lesson vectors and index state.
//!
//! Vectors are BLOBs of little-endian f32 beside the embedder's name and dimension, so a file
//! moved between machines reads the same. The revision is maintained by triggers (migration
//! 0002), so no write path has to remember it.

use lore_core::id::LessonId;
use lore_core::model::Lesson;
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::store::{LessonChanges, LessonVector};
use lore_core::{Error, Result, Scope};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::Db;
use crate::filter::Where;
use crate::rows;

/// The highest lesson revision.
pub(crate) fn revision(conn: &Connection) -> Result<u64> {
    let max: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(revision), 0) FROM lesson_changes")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .db()?;
    Ok(u64::try_from(max).unwrap_or(0))
}

/// The lessons inside `scope` changed after `since`, up to the revision read first.
pub(crate) fn changed(conn: &Connection, scope: &Scope, since: u64) -> Result<LessonChanges> {
    let upto = revision(conn)?;
    let mut w = Where::scope(scope);
    w.push(
        "c.revision > ? AND c.revision <= ?",
        [Value::Integer(as_i64(since)), Value::Integer(as_i64(upto))],
    );
    let sql = format!(
        "SELECT t.body FROM lesson_changes c JOIN lessons t ON t.seq = c.lesson_seq{} \
         ORDER BY c.revision",
        w.sql()
    );
    let bodies: Vec<String> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(w.params().iter().cloned()), |r| r.get(0))?
                .collect()
        })
        .db()?;
    let lessons = bodies
        .iter()
        .map(|b| rows::from_json::<Lesson>(b))
        .collect::<Result<_>>()?;
    Ok(LessonChanges {
        revision: upto,
        lessons,
    })
}

/// Stores one checked vector; the lesson must exist.
pub(crate) fn put(conn: &Connection, v: &LessonVector) -> Result<()> {
    if rows::stored(conn, crate::table::Table::Lessons, v.lesson.as_str())?.is_none() {
        return Err(Error::not_found("lesson", v.lesson.as_str()));
    }
    let blob: Vec<u8> = v.vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    conn.prepare_cached(
        "INSERT OR REPLACE INTO lesson_vectors (lesson_id, embedder, dim, source_hash, vector) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .and_then(|mut s| {
        s.execute(params![
            v.lesson.as_str(),
            v.embedder.name,
            as_i64(v.embedder.dim as u64),
            // Stored as the same 64 bits; SQLite integers are signed.
            v.source_hash as i64,
            blob
        ])
    })
    .db()?;
    Ok(())
}

/// The vectors of the lessons inside `scope`.
pub(crate) fn list(
    conn: &Connection,
    scope: &Scope,
    only: Option<&[LessonId]>,
) -> Result<Vec<LessonVector>> {
    let mut w = Where::scope(scope);
    if let Some(ids) = only {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; ids.len()].join(", ");
        w.push(
            &format!("v.lesson_id IN ({marks})"),
            ids.iter().map(|id| Value::Text(id.as_str().to_owned())),
        );
    }
    let sql = format!(
        "SELECT v.lesson_id, v.embedder, v.dim, v.source_hash, v.vector \
         FROM lesson_vectors v JOIN lessons t ON t.id = v.lesson_id{}",
        w.sql()
    );
    let raw: Vec<(String, String, i64, i64, Vec<u8>)> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(w.params().iter().cloned()), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .db()?;
    raw.into_iter()
        .map(|(id, name, dim, hash, blob)| {
            let vector: Vec<f32> = blob
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let dim = usize::try_from(dim).unwrap_or(0);
            if vector.len() != dim || blob.len() % 4 != 0 {
                return Err(Error::store(std::io::Error::other(format!(
                    "the stored vector of lesson {id} is damaged ({} bytes for {dim} dimensions)",
                    blob.len()
                ))));
            }
            Ok(LessonVector {
                lesson: LessonId::parse(&id)?,
                embedder: EmbedderId { name, dim },
                source_hash: hash as u64,
                vector,
            })
        })
        .collect()
}

/// Deletes the vector of lesson `id`, if any: purge erases what was derived from the text.
pub(crate) fn erase(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM lesson_vectors WHERE lesson_id = ?")
        .and_then(|mut s| s.execute([id]))
        .db()?;
    Ok(())
}

pub(crate) fn state(conn: &Connection, key: &str) -> Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT value FROM index_state WHERE key = ?")
        .and_then(|mut s| s.query_row([key], |r| r.get(0)).optional())
        .db()
}

pub(crate) fn set_state(conn: &Connection, key: &str, value: &[u8]) -> Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO index_state (key, value) VALUES (?, ?)")
        .and_then(|mut s| s.execute(params![key, value]))
        .db()?;
    Ok(())
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
