//! Full-text search over lessons and executions with FTS5.
//!
//! A user's query is words, never FTS5 syntax: it is cut into alphanumeric terms, each term is
//! quoted and the terms are joined with `OR`, so `"`, `*`, `NEAR(`, `-` or `column:` can neither
//! fail a search nor change its meaning. Results are ranked with bm25, negated so that higher is
//! better, and the two kinds are merged into one list.

use lore_core::model::{MemoryCategory, MemoryEntry, RecordKind};
use lore_core::ports::store::{ListFilter, SearchHit};
use lore_core::text::{search_terms, shorten};
use lore_core::{Result, SkillPath};
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use crate::Db;
use crate::filter::Where;
use crate::table::Table;

/// At most this many terms of a query are searched; the rest add little but cost.
const MAX_TERMS: usize = 32;

/// A snippet is at most this many characters.
const SNIPPET_CHARS: usize = 160;

/// Lesson columns weigh in this order: rule, applies_when, mistake, root_cause, tags, summary.
/// The rule and its conditions are what a search is usually after.
const LESSON_RANK: &str = "bm25(lessons_fts, 2.0, 1.5, 1.0, 1.0, 1.0, 1.5)";

/// Searches lessons and executions for `query`, best first, at most `limit` hits.
///
/// # Errors
/// [`lore_core::Error::Store`] when a query fails.
pub(crate) fn search(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
    limit: usize,
) -> Result<Vec<SearchHit>> {
    let Some(expr) = fts_query(query) else {
        return Ok(Vec::new());
    };
    if limit == 0 {
        return Ok(Vec::new());
    }
    let mut hits = LESSONS.run(conn, &expr, filter, limit)?;
    let executions = SearchIn {
        table: Table::Executions,
        fts: "executions_fts",
        rank: "bm25(executions_fts)",
        kind: RecordKind::Execution,
    };
    hits.extend(executions.run(conn, &expr, filter, limit)?);
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    Ok(hits)
}

/// [`search`] over lessons alone.
///
/// # Errors
/// [`lore_core::Error::Store`] when the query fails.
pub(crate) fn search_lessons(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
    limit: usize,
) -> Result<Vec<SearchHit>> {
    match fts_query(query) {
        Some(expr) if limit > 0 => LESSONS.run(conn, &expr, filter, limit),
        _ => Ok(Vec::new()),
    }
}

const LESSONS: SearchIn = SearchIn {
    table: Table::Lessons,
    fts: "lessons_fts",
    rank: LESSON_RANK,
    kind: RecordKind::Lesson,
};

/// One searched kind: its record table, full-text table and rank expression.
struct SearchIn {
    table: Table,
    fts: &'static str,
    rank: &'static str,
    kind: RecordKind,
}

impl SearchIn {
    fn run(
        &self,
        conn: &Connection,
        expr: &str,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
        let mut w = Where::default();
        w.push(
            &format!("{} MATCH ?", self.fts),
            [Value::Text(expr.to_owned())],
        );
        let scoped = Where::listing(self.table, filter);
        w.push_all(scoped);
        let sql = format!(
            "SELECT t.id, t.skill, -{rank}, snippet({fts}, -1, '', '', '…', 24) \
             FROM {fts} JOIN {table} t ON t.seq = {fts}.rowid{where_} \
             ORDER BY 3 DESC, t.seq LIMIT ?",
            rank = self.rank,
            fts = self.fts,
            table = self.table.name(),
            where_ = w.sql(),
        );
        let values = w
            .params()
            .iter()
            .cloned()
            .chain([Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX))]);
        let rows: Vec<(String, String, f64, String)> = conn
            .prepare_cached(&sql)
            .and_then(|mut s| {
                s.query_map(params_from_iter(values), |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect()
            })
            .db()?;
        rows.into_iter()
            .map(|(id, skill, score, snippet)| {
                Ok(SearchHit {
                    kind: self.kind,
                    id,
                    skill: SkillPath::parse(&skill)?,
                    score,
                    snippet: shorten(&snippet, SNIPPET_CHARS),
                })
            })
            .collect()
    }
}

/// Searches the memory entries of `category` for `query`, best first, with scores.
///
/// # Errors
/// [`lore_core::Error::Store`] when a query fails or a body does not parse.
pub(crate) fn search_memories(
    conn: &Connection,
    query: &str,
    filter: &ListFilter,
    category: MemoryCategory,
    limit: usize,
) -> Result<Vec<(MemoryEntry, f64)>> {
    let Some(expr) = fts_query(query) else {
        return Ok(Vec::new());
    };
    let mut w = Where::default();
    w.push("memories_fts MATCH ?", [Value::Text(expr)]);
    w.push_all(Where::listing(Table::Memories, filter));
    w.push(
        "t.category = ?",
        [Value::Text(category.as_str().to_owned())],
    );
    let sql = format!(
        "SELECT t.body, -bm25(memories_fts) FROM memories_fts \
         JOIN memories t ON t.seq = memories_fts.rowid{} ORDER BY 2 DESC, t.seq LIMIT ?",
        w.sql()
    );
    let values = w
        .params()
        .iter()
        .cloned()
        .chain([Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX))]);
    let rows: Vec<(String, f64)> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(values), |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .db()?;
    rows.into_iter()
        .map(|(body, score)| Ok((crate::rows::from_json(&body)?, score)))
        .collect()
}

/// The FTS5 expression for plain words: each alphanumeric term quoted, joined with `OR`.
/// `None` when the query has no term at all.
pub(crate) fn fts_query(query: &str) -> Option<String> {
    let terms = search_terms(query, MAX_TERMS);
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
    Some(quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_syntax_becomes_quoted_words() {
        assert_eq!(
            fts_query(r#"NEAR(a "b* -c d:e"#).unwrap(),
            r#""NEAR" OR "a" OR "b" OR "c" OR "d" OR "e""#
        );
        assert_eq!(fts_query("Zoë 数据"), Some(r#""Zoë" OR "数据""#.into()));
        assert_eq!(fts_query(" \"*-: ()"), None);
        assert_eq!(fts_query(""), None);
    }

    #[test]
    fn repeated_terms_are_searched_once_and_capped() {
        assert_eq!(fts_query("a a A").unwrap(), r#""a" OR "A""#);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        assert_eq!(
            fts_query(&many).unwrap().matches(" OR ").count(),
            MAX_TERMS - 1
        );
    }

    #[test]
    fn flatten_keeps_keys_and_strings() {
        use lore_core::text::flatten;
        let text = flatten(&json!({"candidate": "Zoë", "skills": ["rust", 3], "n": 1}));
        assert_eq!(text, "candidate: Zoë; skills; rust; n");
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("a  b\nc", 10), "a b c");
        let long = "é".repeat(200);
        let short = shorten(&long, SNIPPET_CHARS);
        assert_eq!(short.chars().count(), SNIPPET_CHARS);
        assert!(short.ends_with('…'));
    }
}
