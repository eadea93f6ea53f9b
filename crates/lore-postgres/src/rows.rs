//! How each record kind lands in its table, the write transaction with its counters, and the
//! queries every kind shares.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};
use deadpool_postgres::GenericClient;
use lore_core::model::{AuditEntry, Lesson, RecordKind};
use lore_core::ports::store::Record;
use lore_core::text::flatten;
use lore_core::{Error, Result, Scope, SkillPath};
use serde::de::DeserializeOwned;
use tokio_postgres::types::ToSql;

use crate::connect::Fail;
use crate::filter::{Param, Where};
use crate::pipeline;

pub(crate) use lore_core::ports::store::Table;

/// The counter a new row of this table draws from, and the column it fills: `seq` for
/// the followed kinds, a lesson's `revision`.
fn counter_of(table: Table) -> Option<(Counter, &'static str)> {
    match table {
        Table::Executions => Some((Counter::Executions, "seq")),
        Table::Audit => Some((Counter::Audit, "seq")),
        Table::Lessons => Some((Counter::Lessons, "revision")),
        _ => None,
    }
}

/// Whether the table has full-text columns (`doc`, `tsv`).
fn searched(table: Table) -> bool {
    matches!(table, Table::Executions | Table::Lessons | Table::Memories)
}

/// The rows of `lore_counters`. Their order is the order writers lock them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Counter {
    Audit,
    Decisions,
    Episodes,
    Executions,
    Knowledge,
    Lessons,
}

impl Counter {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Counter::Audit => "audit",
            Counter::Decisions => "decisions",
            Counter::Episodes => "episodes",
            Counter::Executions => "executions",
            Counter::Knowledge => "knowledge",
            Counter::Lessons => "lessons",
        }
    }

    /// The counters a write of `record` draws from.
    pub(crate) fn of(record: &Record) -> &'static [Counter] {
        match record {
            Record::Execution(_) => &[Counter::Executions],
            Record::Audit(_) => &[Counter::Audit],
            Record::Lesson(_) => &[Counter::Lessons],
            Record::Episode(_) => &[Counter::Episodes],
            _ => &[],
        }
    }
}

/// A write transaction holding the counters it draws from.
///
/// The counters are locked first, in one statement and in [`Counter`] order, so writers wait
/// for each other there and never deadlock; numbers drawn are written back at commit, so a
/// transaction that fails draws nothing.
pub(crate) struct Writer<'a> {
    pub(crate) tx: deadpool_postgres::Transaction<'a>,
    counters: BTreeMap<Counter, (i64, i64)>,
}

impl<'a> Writer<'a> {
    pub(crate) async fn begin(
        client: &'a mut deadpool_postgres::Client,
        counters: impl IntoIterator<Item = Counter>,
    ) -> Result<Writer<'a>, Fail> {
        let mut wanted: Vec<Counter> = counters.into_iter().collect();
        wanted.sort();
        wanted.dedup();
        let tx = client.transaction().await?;
        let mut held = BTreeMap::new();
        if !wanted.is_empty() {
            let names: Vec<&str> = wanted.iter().map(|c| c.name()).collect();
            let stmt = tx
                .prepare_cached(
                    "SELECT name, value FROM lore_counters WHERE name = ANY($1) \
                     ORDER BY name FOR UPDATE",
                )
                .await?;
            for row in tx.query(&stmt, &[&names]).await? {
                let name: &str = row.get(0);
                let value: i64 = row.get(1);
                if let Some(c) = wanted.iter().find(|c| c.name() == name) {
                    held.insert(*c, (value, value));
                }
            }
        }
        Ok(Writer { tx, counters: held })
    }

    /// The next number of `counter`, which must have been named at [`Writer::begin`].
    pub(crate) fn next(&mut self, counter: Counter) -> Result<i64, Fail> {
        let Some((_, current)) = self.counters.get_mut(&counter) else {
            return Err(Fail::Lore(Error::store(std::io::Error::other(format!(
                "counter {} was not locked",
                counter.name()
            )))));
        };
        *current += 1;
        Ok(*current)
    }

    /// Writes back the numbers drawn and, when any was, announces the write to every
    /// listening store (delivered by PostgreSQL only once the transaction commits), in one
    /// statement.
    pub(crate) async fn commit(self) -> Result<(), Fail> {
        let (names, values): (Vec<&str>, Vec<i64>) = self
            .counters
            .iter()
            .filter(|(_, (start, now))| start != now)
            .map(|(counter, (_, now))| (counter.name(), *now))
            .unzip();
        if !names.is_empty() {
            let stmt = self
                .tx
                .prepare_cached(&format!(
                    "WITH moved AS (UPDATE lore_counters c SET value = v.value \
                     FROM unnest($1::text[], $2::bigint[]) AS v(name, value) \
                     WHERE c.name = v.name RETURNING 1) \
                     SELECT pg_notify('{}', current_schema()) FROM (SELECT count(*) FROM moved) m",
                    crate::notify::CHANNEL
                ))
                .await?;
            self.tx.execute(&stmt, &[&names, &values]).await?;
        }
        self.tx.commit().await?;
        Ok(())
    }
}

/// A record as stored: body, filter columns and the text its search columns index.
pub(crate) struct Row {
    pub(crate) table: Table,
    pub(crate) id: String,
    /// The record as JSON text.
    pub(crate) body: String,
    /// Columns besides `id`, `body` and the counter's, by name.
    columns: Vec<(&'static str, Param)>,
    /// The searched text by weight, `A` (most) to `D`, for the kinds that are searched.
    text: [String; 4],
}

impl Row {
    /// Flattens a record; `None` for an episode, which lives with its graph contribution.
    pub(crate) fn new(record: &Record) -> Result<Option<Row>> {
        let row = match record {
            Record::Episode(_) => return Ok(None),
            Record::Execution(e) => {
                let mut row =
                    Row::scoped(Table::Executions, e.id.as_str(), &e.skill, e.timestamp, e)?;
                row.text[3] = format!("{}\n{}", flatten(&e.input), flatten(&e.output));
                row
            }
            Record::Correction(c) => {
                let mut row =
                    Row::scoped(Table::Corrections, c.id.as_str(), &c.skill, c.timestamp, c)?;
                row.push("execution_id", c.execution_id.as_str().to_owned());
                row
            }
            Record::Lesson(l) => Row::lesson(l)?,
            Record::ErrorEvent(e) => {
                let mut row =
                    Row::scoped(Table::ErrorEvents, e.id.as_str(), &e.skill, e.timestamp, e)?;
                let execution = e.execution_id.as_ref().map(|x| x.as_str().to_owned());
                row.push("execution_id", execution);
                row
            }
            Record::Audit(a) => Row::audit(a)?,
            Record::Memory(m) => {
                let mut row =
                    Row::scoped(Table::Memories, m.id.as_str(), &m.skill, m.timestamp, m)?;
                row.push("category", m.category.as_str().to_owned());
                row.text[3] = format!("{}\n{}", m.text, m.tags.join(" "));
                row
            }
        };
        Ok(Some(row))
    }

    pub(crate) fn audit(entry: &AuditEntry) -> Result<Row> {
        let mut row = Row {
            table: Table::Audit,
            id: entry.id.as_str().to_owned(),
            body: to_json(entry)?,
            columns: Vec::new(),
            text: Default::default(),
        };
        row.push("subject_kind", kind_name(entry.subject_kind).to_owned());
        row.push("subject", entry.subject.clone());
        row.push("ts", nanos(entry.at));
        Ok(row)
    }

    /// A lesson; its time column is `created_at`, so listings stay in creation order. The rule
    /// weighs most in search, then its conditions and summary, then the rest.
    pub(crate) fn lesson(lesson: &Lesson) -> Result<Row> {
        let mut row = Row::scoped(
            Table::Lessons,
            lesson.id.as_str(),
            &lesson.skill,
            lesson.created_at,
            lesson,
        )?;
        row.push("status", lesson.status.as_str().to_owned());
        row.push("test_ids", lesson.generated_test_ids.clone());
        row.text = [
            lesson.rule.clone(),
            format!("{}\n{}", lesson.applies_when, lesson.tiers.summary),
            format!(
                "{}\n{}\n{}",
                lesson.mistake,
                lesson.root_cause,
                lesson.tags.join(" ")
            ),
            String::new(),
        ];
        Ok(row)
    }

    fn scoped(
        table: Table,
        id: &str,
        skill: &SkillPath,
        at: DateTime<Utc>,
        record: &impl serde::Serialize,
    ) -> Result<Row> {
        let mut row = Row {
            table,
            id: id.to_owned(),
            body: to_json(record)?,
            columns: Vec::new(),
            text: Default::default(),
        };
        row.push("skill", skill.as_str().to_owned());
        row.push("domain", skill.domain().to_owned());
        row.push("ts", nanos(at));
        Ok(row)
    }

    fn push(&mut self, name: &'static str, value: impl ToSql + Sync + Send + 'static) {
        self.columns.push((name, Box::new(value)));
    }

    /// The text shown in snippets: every searched part, in weight order. PostgreSQL text
    /// cannot hold NUL, which JSON bodies escape but plain text does not.
    fn doc(&self) -> String {
        let parts: Vec<&str> = self
            .text
            .iter()
            .map(String::as_str)
            .filter(|t| !t.is_empty())
            .collect();
        parts.join("\n").replace('\0', " ")
    }
}

/// The vector of `A`..`D`-weighted parts of a row's text, for `$1..$4` of a statement.
const TSV: &str = "setweight(to_tsvector('lore_search', $1), 'A') || \
                   setweight(to_tsvector('lore_search', $2), 'B') || \
                   setweight(to_tsvector('lore_search', $3), 'C') || \
                   setweight(to_tsvector('lore_search', $4), 'D')";

/// The sequence number and body of the stored record `id`, if any; with `lock`, the row stays
/// locked until the transaction ends.
pub(crate) async fn stored(
    db: &impl GenericClient,
    table: Table,
    id: &str,
) -> Result<Option<(i64, String)>, Fail> {
    let sql = format!("SELECT seq, body FROM {} WHERE id = $1", table.name());
    let stmt = db.prepare_cached(&sql).await?;
    Ok(db
        .query_opt(&stmt, &[&id])
        .await?
        .map(|r| (r.get(0), r.get(1))))
}

/// The stored record `id`, parsed.
pub(crate) async fn get<T: DeserializeOwned>(
    db: &impl GenericClient,
    table: Table,
    id: &str,
) -> Result<Option<T>, Fail> {
    match stored(db, table, id).await? {
        Some((_, body)) => Ok(Some(from_json(&body)?)),
        None => Ok(None),
    }
}

/// Stores a new row with the next number of its table's counter.
pub(crate) async fn insert(w: &mut Writer<'_>, row: &Row) -> Result<(), Fail> {
    let number = match counter_of(row.table) {
        Some((counter, _)) => Some(w.next(counter)?),
        None => None,
    };
    let new = NewRow::of(row);
    let stmt = w.tx.prepare_cached(&new.sql(Numbered::Given)).await?;
    w.tx.execute(&stmt, &new.params(number.as_ref())).await?;
    Ok(())
}

/// Where a new row's counter number comes from.
#[derive(Clone, Copy)]
enum Numbered {
    /// A parameter, drawn by the [`Writer`] that holds the counter.
    Given,
    /// The statement draws it itself, taking the counter's row lock until commit.
    Drawn,
}

/// A row's texts made ready for an `INSERT`, which borrows its parameters from them.
struct NewRow<'r> {
    row: &'r Row,
    texts: Vec<String>,
    doc: String,
}

impl<'r> NewRow<'r> {
    fn of(row: &'r Row) -> Self {
        Self {
            row,
            texts: row.text.iter().map(|t| t.replace('\0', " ")).collect(),
            doc: row.doc(),
        }
    }

    /// `$1`..`$4` are the weighted texts and `$5` the document (see TSV), for the kinds that
    /// are searched; `id`, `body` and the columns follow, then the number when it is given.
    fn sql(&self, numbered: Numbered) -> String {
        let row = self.row;
        let first = if searched(row.table) { 5 } else { 0 };
        let mut columns = vec!["id", "body"];
        columns.extend(row.columns.iter().map(|(n, _)| *n));
        let mut marks: Vec<String> = (1..=columns.len())
            .map(|i| format!("${}", first + i))
            .collect();
        let mut with = String::new();
        if let Some((counter, column)) = counter_of(row.table) {
            columns.push(column);
            match numbered {
                Numbered::Given => marks.push(format!("${}", first + marks.len() + 1)),
                Numbered::Drawn => {
                    with = format!(
                        "WITH drawn AS (UPDATE lore_counters SET value = value + 1 \
                         WHERE name = '{}' RETURNING value) ",
                        counter.name()
                    );
                    marks.push("(SELECT value FROM drawn)".to_owned());
                }
            }
        }
        if searched(row.table) {
            columns.extend(["doc", "tsv"]);
            marks.extend(["$5".to_owned(), TSV.to_owned()]);
        }
        format!(
            "{with}INSERT INTO {} ({}) VALUES ({})",
            row.table.name(),
            columns.join(", "),
            marks.join(", ")
        )
    }

    fn params<'a>(&'a self, number: Option<&'a i64>) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut all: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if searched(self.row.table) {
            all.extend(self.texts.iter().map(|t| t as &(dyn ToSql + Sync)));
            all.push(&self.doc);
        }
        all.push(&self.row.id);
        all.push(&self.row.body);
        all.extend(
            self.row
                .columns
                .iter()
                .map(|(_, v)| v.as_ref() as &(dyn ToSql + Sync)),
        );
        if let Some(n) = number {
            all.push(n);
        }
        all
    }
}

/// Stores `rows`, all new, as one transaction in one round trip, each drawing its number in
/// its own `INSERT`; `Ok(false)`, with nothing stored, when an ID is taken (the caller then
/// writes them the careful way, which says what to do with a stored one).
///
/// The counters' row locks are what orders writers, and here they are held only while the
/// server runs the statements: the statements and the commit travel together, so no round
/// trip to this process happens under the lock. Several counters are locked first, in name
/// order, as [`Writer::begin`] does; the announcement goes in the same transaction.
pub(crate) async fn insert_new(
    client: &deadpool_postgres::Client,
    rows: &[&Row],
) -> Result<bool, Fail> {
    let mut counters: Vec<Counter> = rows
        .iter()
        .filter_map(|r| counter_of(r.table).map(|(c, _)| c))
        .collect();
    counters.sort();
    counters.dedup();
    let names: Vec<&str> = counters.iter().map(|c| c.name()).collect();
    let new: Vec<NewRow<'_>> = rows.iter().map(|r| NewRow::of(r)).collect();
    let params: Vec<Vec<&(dyn ToSql + Sync)>> = new.iter().map(|n| n.params(None)).collect();
    let mut statements = Vec::with_capacity(rows.len());
    for n in &new {
        statements.push(client.prepare_cached(&n.sql(Numbered::Drawn)).await?);
    }
    let lock = match names.len() {
        0 | 1 => None,
        _ => Some(
            client
                .prepare_cached(
                    "SELECT 1 FROM lore_counters WHERE name = ANY($1) ORDER BY name FOR UPDATE",
                )
                .await?,
        ),
    };
    let notify = match names.len() {
        0 => None,
        _ => Some(
            client
                .prepare_cached(&format!(
                    "SELECT pg_notify('{}', current_schema())",
                    crate::notify::CHANNEL
                ))
                .await?,
        ),
    };
    let lock_params: [&(dyn ToSql + Sync); 1] = [&names];
    let mut calls: Vec<pipeline::Call<'_>> = Vec::with_capacity(rows.len() + 2);
    if let Some(lock) = &lock {
        calls.push(Box::pin(client.execute(lock, &lock_params)));
    }
    for (stmt, params) in statements.iter().zip(&params) {
        calls.push(Box::pin(client.execute(stmt, params)));
    }
    if let Some(notify) = &notify {
        calls.push(Box::pin(client.execute(notify, &[])));
    }
    match pipeline::transaction(client, calls).await {
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => Ok(false),
        other => other.map(|()| true).map_err(Fail::Db),
    }
}

/// Replaces the row with sequence number `seq` in place, with its text indexed again, or with
/// no text at all when `keep_text` is false (a purge: its replacement holds nothing worth
/// finding). A lesson draws a new revision.
pub(crate) async fn replace(
    w: &mut Writer<'_>,
    seq: i64,
    row: &Row,
    keep_text: bool,
) -> Result<(), Fail> {
    let mut sets: Vec<String> = Vec::new();
    let mut all: Vec<&(dyn ToSql + Sync)> = Vec::new();
    let texts: Vec<String> = row.text.iter().map(|t| t.replace('\0', " ")).collect();
    let doc = row.doc();
    if searched(row.table) {
        if keep_text {
            all.extend(texts.iter().map(|t| t as &(dyn ToSql + Sync)));
            all.push(&doc);
            sets.push(format!("doc = $5, tsv = {TSV}"));
        } else {
            sets.push("doc = NULL, tsv = NULL".into());
        }
    }
    all.push(&row.body);
    sets.push(format!("body = ${}", all.len()));
    for (name, value) in &row.columns {
        all.push(value.as_ref());
        sets.push(format!("{name} = ${}", all.len()));
    }
    let revision;
    if row.table == Table::Lessons {
        revision = w.next(Counter::Lessons)?;
        all.push(&revision);
        sets.push(format!("revision = ${}", all.len()));
    }
    all.push(&seq);
    let sql = format!(
        "UPDATE {} SET {} WHERE seq = ${}",
        row.table.name(),
        sets.join(", "),
        all.len()
    );
    let stmt = w.tx.prepare_cached(&sql).await?;
    w.tx.execute(&stmt, &all).await?;
    Ok(())
}

/// Runs a query selecting one body column and parses the bodies.
pub(crate) async fn bodies<T: DeserializeOwned>(
    db: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<T>, Fail> {
    let stmt = db.prepare_cached(sql).await?;
    let rows = db.query(&stmt, params).await?;
    rows.iter()
        .map(|r| from_json(r.get::<_, &str>(0)).map_err(Fail::Lore))
        .collect()
}

/// The records of `table` matching `w`, oldest first (insertion order breaks ties).
pub(crate) async fn list<T: DeserializeOwned>(
    db: &impl GenericClient,
    table: Table,
    mut w: Where,
    limit: Option<usize>,
    offset: usize,
) -> Result<Vec<T>, Fail> {
    let clause = w.sql();
    let (l, o) = (w.bind(limit.map(to_i64)), w.bind(to_i64(offset)));
    let sql = format!(
        "SELECT t.body FROM {} t{clause} ORDER BY t.ts, t.seq LIMIT {l} OFFSET {o}",
        table.name()
    );
    bodies(db, &sql, &w.params()).await
}

/// Runs a query selecting one count.
pub(crate) async fn count_query(
    db: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, Fail> {
    let stmt = db.prepare_cached(sql).await?;
    let n: i64 = db.query_one(&stmt, params).await?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// How many records of `table` match `w`.
pub(crate) async fn count(db: &impl GenericClient, table: Table, w: &Where) -> Result<u64, Fail> {
    let sql = format!("SELECT COUNT(*) FROM {} t{}", table.name(), w.sql());
    count_query(db, &sql, &w.params()).await
}

/// How many audit entries are about records inside `scope`.
pub(crate) async fn count_audit(db: &impl GenericClient, scope: &Scope) -> Result<u64, Fail> {
    if Where::scope(scope).is_empty() {
        return count_query(db, "SELECT COUNT(*) FROM audit", &[]).await;
    }
    // Every subquery takes the same scope: bind it once, in the first's numbering.
    let w = Where::scope(scope);
    let mut parts = Vec::new();
    for (table, kind) in Table::SCOPED {
        parts.push(format!(
            "(a.subject_kind = '{}' AND a.subject IN (SELECT t.id FROM {} t{}))",
            kind_name(kind),
            table.name(),
            w.sql()
        ));
    }
    parts.push(format!(
        "(a.subject_kind = 'episode' AND a.subject IN (SELECT t.id FROM episodes t{}))",
        w.sql()
    ));
    let sql = format!("SELECT COUNT(*) FROM audit a WHERE {}", parts.join(" OR "));
    count_query(db, &sql, &w.params()).await
}

/// How many distinct test IDs the lessons inside `scope` name.
pub(crate) async fn count_tests(db: &impl GenericClient, scope: &Scope) -> Result<u64, Fail> {
    let w = Where::scope(scope);
    let sql = format!(
        "SELECT COUNT(DISTINCT x) FROM lessons t CROSS JOIN LATERAL unnest(t.test_ids) x{}",
        w.sql()
    );
    count_query(db, &sql, &w.params()).await
}

/// The rows of `table` numbered after `after`, with their numbers, in commit order.
pub(crate) async fn after_seq<T: DeserializeOwned>(
    db: &impl GenericClient,
    table: Table,
    after: u64,
    limit: usize,
) -> Result<Vec<(u64, T)>, Fail> {
    let sql = format!(
        "SELECT seq, body FROM {} WHERE seq > $1 ORDER BY seq LIMIT $2",
        table.name()
    );
    let stmt = db.prepare_cached(&sql).await?;
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let rows = db.query(&stmt, &[&after, &to_i64(limit)]).await?;
    rows.iter()
        .map(|r| {
            let seq: i64 = r.get(0);
            Ok((
                u64::try_from(seq).unwrap_or(0),
                from_json(r.get::<_, &str>(1))?,
            ))
        })
        .collect()
}

/// A read-only transaction on one snapshot (repeatable read), for a counter and the rows it
/// covers: a write committing meanwhile is either wholly in what is read or wholly after it.
pub(crate) async fn snapshot(
    client: &mut deadpool_postgres::Client,
) -> Result<deadpool_postgres::Transaction<'_>, Fail> {
    Ok(client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?)
}

/// The committed value of a counter.
pub(crate) async fn counter(db: &impl GenericClient, counter: Counter) -> Result<u64, Fail> {
    let stmt = db
        .prepare_cached("SELECT value FROM lore_counters WHERE name = $1")
        .await?;
    let n: i64 = db.query_one(&stmt, &[&counter.name()]).await?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
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

/// Nanoseconds since the epoch, saturating outside the years 1677 to 2262.
pub(crate) fn nanos(at: DateTime<Utc>) -> i64 {
    at.timestamp_nanos_opt()
        .unwrap_or(if at.year() < 1970 { i64::MIN } else { i64::MAX })
}

pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn to_json(record: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(record).map_err(Error::store)
}

/// Parses a stored body; a failure means the row was damaged or edited by hand.
pub(crate) fn from_json<T: DeserializeOwned>(body: &str) -> Result<T> {
    serde_json::from_str(body).map_err(Error::store)
}
