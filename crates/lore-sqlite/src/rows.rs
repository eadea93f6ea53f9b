//! How each record kind lands in its table, and the queries every kind shares.
//!
//! A [`Row`] is a record flattened for SQLite: its JSON body, the columns that listings filter
//! and order on, and the text its full-text row indexes. It never leaves this crate; callers get
//! lore-core records back, parsed from the body.

use chrono::{DateTime, Utc};
use lore_core::model::{AuditEntry, Correction, Execution, Lesson, RecordKind};
use lore_core::ports::store::Record;
use lore_core::text::flatten;
use lore_core::{Result, Scope, SkillPath};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde::de::DeserializeOwned;

use crate::Db;
use crate::filter::Where;
use crate::table::Table;

/// A record as stored: body, filter columns and full-text columns.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) table: Table,
    pub(crate) id: String,
    /// The record as JSON text.
    pub(crate) body: String,
    /// Columns besides `id` and `body`, by name.
    columns: Vec<(&'static str, Value)>,
    /// The full-text columns, in the order of [`crate::table::fts_insert`].
    text: Vec<String>,
}

impl Row {
    /// Flattens a record; `None` for an episode, which lives in its own table with its graph
    /// contribution (`episodes.rs`).
    ///
    /// # Errors
    /// [`lore_core::Error::Store`] when the record does not serialize.
    pub(crate) fn new(record: &Record) -> Result<Option<Row>> {
        let row = match record {
            Record::Episode(_) => return Ok(None),
            Record::Execution(e) => Row::execution(e)?,
            Record::Correction(c) => Row::correction(c)?,
            Record::Lesson(l) => Row::lesson(l)?,
            Record::ErrorEvent(e) => {
                Row::scoped(Table::ErrorEvents, e.id.as_str(), &e.skill, e.timestamp, e)?
            }
            Record::Audit(a) => Row::audit(a)?,
            Record::Memory(m) => {
                let mut row =
                    Row::scoped(Table::Memories, m.id.as_str(), &m.skill, m.timestamp, m)?;
                row.columns.push(("category", text(m.category.as_str())));
                row.text = vec![m.text.clone(), m.tags.join(" ")];
                row
            }
        };
        Ok(Some(row))
    }

    fn correction(correction: &Correction) -> Result<Row> {
        let (id, skill) = (correction.id.as_str(), &correction.skill);
        let mut row = Row::scoped(
            Table::Corrections,
            id,
            skill,
            correction.timestamp,
            correction,
        )?;
        let execution = text(correction.execution_id.as_str());
        row.columns.push(("execution_id", execution));
        Ok(row)
    }

    /// Flattens an audit entry.
    pub(crate) fn audit(entry: &AuditEntry) -> Result<Row> {
        Ok(Row {
            table: Table::Audit,
            id: entry.id.as_str().to_owned(),
            body: to_json(entry)?,
            columns: vec![
                ("subject_kind", text(kind_name(entry.subject_kind))),
                ("subject", text(&entry.subject)),
                ("timestamp", timestamp(entry.at)),
            ],
            text: Vec::new(),
        })
    }

    /// Flattens a lesson; its time column is `created_at`, so listings stay in creation order.
    pub(crate) fn lesson(lesson: &Lesson) -> Result<Row> {
        let mut row = Row::scoped(
            Table::Lessons,
            lesson.id.as_str(),
            &lesson.skill,
            lesson.created_at,
            lesson,
        )?;
        row.columns.push(("status", text(lesson.status.as_str())));
        row.text = vec![
            lesson.rule.clone(),
            lesson.applies_when.clone(),
            lesson.mistake.clone(),
            lesson.root_cause.clone(),
            lesson.tags.join(" "),
            lesson.tiers.summary.clone(),
        ];
        Ok(row)
    }

    fn execution(execution: &Execution) -> Result<Row> {
        let mut row = Row::scoped(
            Table::Executions,
            execution.id.as_str(),
            &execution.skill,
            execution.timestamp,
            execution,
        )?;
        row.text = vec![flatten(&execution.input), flatten(&execution.output)];
        Ok(row)
    }

    /// A row with the columns every skill-bearing kind has.
    fn scoped(
        table: Table,
        id: &str,
        skill: &SkillPath,
        at: DateTime<Utc>,
        record: &impl serde::Serialize,
    ) -> Result<Row> {
        Ok(Row {
            table,
            id: id.to_owned(),
            body: to_json(record)?,
            columns: vec![
                ("skill", text(skill.as_str())),
                ("domain", text(skill.domain())),
                ("timestamp", timestamp(at)),
            ],
            text: Vec::new(),
        })
    }
}

/// The sequence number and body of the stored record `id`, if any.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn stored(conn: &Connection, table: Table, id: &str) -> Result<Option<(i64, String)>> {
    let sql = format!("SELECT seq, body FROM {} WHERE id = ?", table.name());
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .db()
}

/// The stored record `id`, parsed.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails or the body does not parse.
pub(crate) fn get<T: DeserializeOwned>(
    conn: &Connection,
    table: Table,
    id: &str,
) -> Result<Option<T>> {
    stored(conn, table, id)?
        .map(|(_, body)| from_json(&body))
        .transpose()
}

/// Stores a new row and its full-text row.
///
/// # Errors
/// [`lore_core::Error::Store`] when a statement fails.
pub(crate) fn insert(conn: &Connection, row: &Row) -> Result<()> {
    let names: Vec<&str> = row.columns.iter().map(|(name, _)| *name).collect();
    let sql = format!(
        "INSERT INTO {} (id, body, {}) VALUES (?, ?{})",
        row.table.name(),
        names.join(", "),
        ", ?".repeat(names.len())
    );
    let values = [text(&row.id), text(&row.body)]
        .into_iter()
        .chain(row.columns.iter().map(|(_, v)| v.clone()));
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.execute(params_from_iter(values)))
        .db()?;
    index(conn, row, conn.last_insert_rowid())
}

/// Replaces the row with sequence number `seq`, and its full-text row, keeping `seq`.
///
/// # Errors
/// [`lore_core::Error::Store`] when a statement fails.
pub(crate) fn replace(conn: &Connection, seq: i64, row: &Row) -> Result<()> {
    erase(conn, seq, row)?;
    index(conn, row, seq)
}

/// Replaces the row with sequence number `seq` and deletes its full-text row without writing a
/// new one: the purge path, whose replacement holds no text worth finding.
///
/// # Errors
/// [`lore_core::Error::Store`] when a statement fails.
pub(crate) fn erase(conn: &Connection, seq: i64, row: &Row) -> Result<()> {
    let sets: Vec<String> = row
        .columns
        .iter()
        .map(|(name, _)| format!("{name} = ?"))
        .collect();
    let sql = format!(
        "UPDATE {} SET body = ?, {} WHERE seq = ?",
        row.table.name(),
        sets.join(", ")
    );
    let values = std::iter::once(text(&row.body))
        .chain(row.columns.iter().map(|(_, v)| v.clone()))
        .chain([Value::Integer(seq)]);
    conn.prepare_cached(&sql)
        .and_then(|mut s| s.execute(params_from_iter(values)))
        .db()?;
    if crate::table::fts_insert(row.table).is_some() {
        let sql = format!("DELETE FROM {}_fts WHERE rowid = ?", row.table.name());
        conn.prepare_cached(&sql)
            .and_then(|mut s| s.execute([seq]))
            .db()?;
    }
    Ok(())
}

/// Merges the full-text indexes into one segment each, so that the terms of deleted rows are
/// dropped from the index files rather than only marked deleted.
///
/// # Errors
/// [`lore_core::Error::Store`] when a statement fails.
pub(crate) fn merge_text_indexes(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "INSERT INTO lessons_fts (lessons_fts) VALUES ('optimize'); \
         INSERT INTO executions_fts (executions_fts) VALUES ('optimize'); \
         INSERT INTO memories_fts (memories_fts) VALUES ('optimize');",
    )
    .db()
}

/// Writes the full-text row of `row` under `rowid`, for the kinds that are searched.
fn index(conn: &Connection, row: &Row, rowid: i64) -> Result<()> {
    let Some(sql) = crate::table::fts_insert(row.table) else {
        return Ok(());
    };
    let values = std::iter::once(Value::Integer(rowid)).chain(row.text.iter().map(|t| text(t)));
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute(params_from_iter(values)))
        .db()?;
    Ok(())
}

/// The records of `table` matching `filter`, oldest first (insertion order breaks ties).
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails or a body does not parse.
pub(crate) fn list<T: DeserializeOwned>(
    conn: &Connection,
    table: Table,
    filter: &Where,
    limit: Option<usize>,
    offset: usize,
) -> Result<Vec<T>> {
    let sql = format!(
        "SELECT t.body FROM {} t{} ORDER BY t.timestamp, t.seq LIMIT ? OFFSET ?",
        table.name(),
        filter.sql()
    );
    page_of_bodies(conn, &sql, filter, limit, offset)
}

/// Runs `sql` (selecting one body column and ending in `LIMIT ? OFFSET ?`) with `filter`'s
/// parameters, and parses the bodies.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails or a body does not parse.
pub(crate) fn page_of_bodies<T: DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    filter: &Where,
    limit: Option<usize>,
    offset: usize,
) -> Result<Vec<T>> {
    let values = filter.params().iter().cloned().chain([
        Value::Integer(limit.map_or(-1, saturating_i64)),
        Value::Integer(saturating_i64(offset)),
    ]);
    let bodies: Vec<String> = conn
        .prepare_cached(sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(values), |r| r.get(0))?
                .collect()
        })
        .db()?;
    bodies.iter().map(|b| from_json(b)).collect()
}

/// How many records of `table` match `filter`.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn count(conn: &Connection, table: Table, filter: &Where) -> Result<u64> {
    let sql = format!("SELECT COUNT(*) FROM {} t{}", table.name(), filter.sql());
    count_query(conn, &sql, filter.params())
}

/// The rows of `table` inserted after sequence number `after`, with their numbers, in
/// insertion order: what a follower of the store reads.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails or a body does not parse.
pub(crate) fn after_seq<T: DeserializeOwned>(
    conn: &Connection,
    table: Table,
    after: u64,
    limit: usize,
) -> Result<Vec<(u64, T)>> {
    let sql = format!(
        "SELECT seq, body FROM {} WHERE seq > ? ORDER BY seq LIMIT ?",
        table.name()
    );
    let rows: Vec<(i64, String)> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(
                [
                    i64::try_from(after).unwrap_or(i64::MAX),
                    saturating_i64(limit),
                ],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .collect()
        })
        .db()?;
    rows.iter()
        .map(|(seq, body)| Ok((u64::try_from(*seq).unwrap_or(0), from_json(body)?)))
        .collect()
}

/// The sequence number of the newest row of `table`; 0 when it is empty.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn max_seq(conn: &Connection, table: Table) -> Result<u64> {
    let sql = format!("SELECT COALESCE(MAX(seq), 0) FROM {}", table.name());
    count_query(conn, &sql, &[])
}

/// Runs a `SELECT COUNT(…)` query.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn count_query(conn: &Connection, sql: &str, params: &[Value]) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(sql)
        .and_then(|mut s| s.query_row(params_from_iter(params), |r| r.get(0)))
        .db()?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// How many audit entries are about records inside `scope`: all of them when the scope is
/// unrestricted, else those whose subject is an in-scope record of the kind they name.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn count_audit(conn: &Connection, scope: &Scope) -> Result<u64> {
    if Where::scope(scope).is_empty() {
        return count(conn, Table::Audit, &Where::default());
    }
    let mut parts = Vec::new();
    let mut params = Vec::new();
    for (table, kind) in Table::SCOPED {
        let w = Where::scope(scope);
        parts.push(format!(
            "(a.subject_kind = '{}' AND a.subject IN (SELECT t.id FROM {} t{}))",
            kind_name(kind),
            table.name(),
            w.sql()
        ));
        params.extend_from_slice(w.params());
    }
    let w = Where::scope(scope);
    parts.push(format!(
        "(a.subject_kind = 'episode' AND a.subject IN (SELECT t.id FROM episodes t{}))",
        w.sql()
    ));
    params.extend_from_slice(w.params());
    let sql = format!("SELECT COUNT(*) FROM audit a WHERE {}", parts.join(" OR "));
    count_query(conn, &sql, &params)
}

/// How many distinct test IDs the lessons inside `scope` name.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn count_tests(conn: &Connection, scope: &Scope) -> Result<u64> {
    let w = Where::scope(scope);
    let sql = format!(
        "SELECT COUNT(DISTINCT j.value) \
         FROM lessons t, json_each(t.body, '$.generated_test_ids') j{}",
        w.sql()
    );
    count_query(conn, &sql, w.params())
}

/// The wire name of a record kind, as the audit table's `subject_kind` column holds it.
pub(crate) fn kind_name(kind: RecordKind) -> &'static str {
    match kind {
        RecordKind::Execution => "execution",
        RecordKind::Correction => "correction",
        RecordKind::Lesson => "lesson",
        RecordKind::Episode => "episode",
        RecordKind::Decision => "decision",
        RecordKind::Embedder => "embedder",
        RecordKind::ErrorEvent => "error_event",
    }
}

/// A UTC time as fixed-width text, so that text order is time order.
pub(crate) fn timestamp(at: DateTime<Utc>) -> Value {
    Value::Text(at.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string())
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn saturating_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn to_json(record: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(record).map_err(lore_core::Error::store)
}

/// Parses a stored body; a failure means the file was damaged or edited by hand.
pub(crate) fn from_json<T: DeserializeOwned>(body: &str) -> Result<T> {
    serde_json::from_str(body).map_err(lore_core::Error::store)
}
