//! Full-text search with PostgreSQL's text search.
//!
//! A query is words, never tsquery syntax: its alphanumeric terms (the same cut SQLite's search
//! makes) are each quoted and joined with `|`, so no character of a query can fail a search or
//! change its meaning. The `lore_search` configuration (migrations/0007) lowercases, keeps every
//! word and reads English words by their stem, as SQLite's tokenizer does, so both stores find
//! the same records. Lessons rank with their rule weighing
//! most (weight A), then conditions and summary (B), then the rest (C); executions and memories
//! are one part (D). Scores are `ts_rank` normalized by length, higher is better.

use deadpool_postgres::GenericClient;
use lore_core::model::{MemoryCategory, MemoryEntry, RecordKind};
use lore_core::ports::store::{ListFilter, SearchHit};
use lore_core::text::{search_terms, shorten};
use lore_core::{Result, SkillPath};

use crate::connect::Fail;
use crate::filter::{Kind, Where};
use crate::rows::{from_json, to_i64};

/// At most this many terms of a query are searched; the rest add little but cost.
const MAX_TERMS: usize = 32;

/// A snippet is at most this many characters.
const SNIPPET_CHARS: usize = 160;

/// How many characters a snippet shows before the first match.
const SNIPPET_LEAD: usize = 40;

/// The weights of parts D, C, B and A, as `ts_rank` takes them.
const WEIGHTS: &str = "'{0.1, 0.4, 0.7, 1.0}'::float4[]";

/// The tsquery text for plain words, or `None` when the query has no term.
pub(crate) fn ts_query(query: &str) -> Option<String> {
    let terms = search_terms(query, MAX_TERMS);
    if terms.is_empty() {
        return None;
    }
    // Terms are letters and digits only, so a quote cannot occur inside one.
    let quoted: Vec<String> = terms.iter().map(|t| format!("'{t}'")).collect();
    Some(quoted.join(" | "))
}

/// Searches lessons and executions for `query`, best first, at most `limit` hits.
pub(crate) async fn search(
    db: &impl GenericClient,
    query: &str,
    filter: &ListFilter,
    limit: usize,
) -> Result<Vec<SearchHit>, Fail> {
    let Some(expr) = ts_query(query) else {
        return Ok(Vec::new());
    };
    if limit == 0 {
        return Ok(Vec::new());
    }
    let terms = search_terms(query, MAX_TERMS);
    let mut hits = Vec::new();
    for (table, kind, rank_kind) in [
        ("lessons", RecordKind::Lesson, Kind::Lessons),
        ("executions", RecordKind::Execution, Kind::Other),
    ] {
        let mut w = Where::listing(rank_kind, filter);
        let q = w.bind(expr.clone());
        w.push("t.tsv @@ to_tsquery('lore_search', $?)", expr.clone());
        let l = w.bind(to_i64(limit));
        let sql = format!(
            "SELECT t.id, t.skill, ts_rank({WEIGHTS}, t.tsv, to_tsquery('lore_search', {q}), 1)::float8 \
             AS score, t.doc FROM {table} t{} ORDER BY score DESC, t.seq LIMIT {l}",
            w.sql()
        );
        let stmt = db.prepare_cached(&sql).await?;
        for row in db.query(&stmt, &w.params()).await? {
            let doc: Option<&str> = row.get(3);
            hits.push(SearchHit {
                kind,
                id: row.get(0),
                skill: SkillPath::parse(row.get::<_, &str>(1))?,
                score: row.get(2),
                snippet: snippet(doc.unwrap_or(""), &terms),
            });
        }
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(limit);
    Ok(hits)
}

/// Searches the memory entries of `category` for `query`, best first, with scores.
pub(crate) async fn search_memories(
    db: &impl GenericClient,
    query: &str,
    filter: &ListFilter,
    category: MemoryCategory,
    limit: usize,
) -> Result<Vec<(MemoryEntry, f64)>, Fail> {
    let Some(expr) = ts_query(query) else {
        return Ok(Vec::new());
    };
    let mut w = Where::listing(Kind::Other, filter);
    w.push("t.category = $?", category.as_str().to_owned());
    let q = w.bind(expr.clone());
    w.push("t.tsv @@ to_tsquery('lore_search', $?)", expr);
    let l = w.bind(to_i64(limit));
    let sql = format!(
        "SELECT t.body, ts_rank({WEIGHTS}, t.tsv, to_tsquery('lore_search', {q}), 1)::float8 AS score \
         FROM memories t{} ORDER BY score DESC, t.seq LIMIT {l}",
        w.sql()
    );
    let stmt = db.prepare_cached(&sql).await?;
    let rows = db.query(&stmt, &w.params()).await?;
    rows.iter()
        .map(|r| Ok((from_json(r.get::<_, &str>(0))?, r.get(1))))
        .collect()
}

/// A short passage of `doc` around the first place a term occurs (any case), on one line.
fn snippet(doc: &str, terms: &[&str]) -> String {
    let chars: Vec<char> = doc.chars().collect();
    let lower: Vec<char> = chars.iter().map(|&c| fold(c)).collect();
    let first = terms
        .iter()
        .filter_map(|t| {
            let t: Vec<char> = t.chars().map(fold).collect();
            lower
                .windows(t.len().max(1))
                .position(|w| w == t.as_slice())
        })
        .min()
        .unwrap_or(0);
    let start = first.saturating_sub(SNIPPET_LEAD);
    let text: String = chars[start..].iter().take(SNIPPET_CHARS * 2).collect();
    let text = if start > 0 {
        format!("…{text}")
    } else {
        text
    };
    shorten(&text, SNIPPET_CHARS)
}

/// One character in lower case, keeping positions: a character whose lower case is longer
/// stays as it is.
fn fold(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_syntax_becomes_quoted_words() {
        assert_eq!(
            ts_query(r#"NEAR(a "b* -c d:e' & !x"#).unwrap(),
            "'NEAR' | 'a' | 'b' | 'c' | 'd' | 'e' | 'x'"
        );
        assert_eq!(ts_query(" \"*-: ()'"), None);
    }

    #[test]
    fn snippets_start_near_the_match_and_stay_short() {
        let doc = format!("{} needle {}", "hay ".repeat(100), "straw ".repeat(100));
        let s = snippet(&doc, &["NEEDLE"]);
        assert!(s.contains("needle"), "{s}");
        assert!(
            s.starts_with('…') && s.chars().count() <= SNIPPET_CHARS,
            "{s}"
        );
        assert_eq!(snippet("short text", &["absent"]), "short text");
    }
}
