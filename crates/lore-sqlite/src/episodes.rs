//! Episodes and the causal graph's counts (migration 0004).
//!
//! The graph is only ever changed by adding or taking out one episode's
//! [`Contribution`], inside the transaction that writes or replaces the episode, so the counts
//! cannot drift from the episodes they summarize.

use lore_core::graph::{Contribution, Counts, GraphCounts};
use lore_core::id::EpisodeId;
use lore_core::model::Episode;
use lore_core::ports::store::{EpisodeFilter, OnDuplicate};
use lore_core::{Result, Scope};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::Db;
use crate::filter::Where;
use crate::rows::{from_json, page_of_bodies, timestamp};

/// The episode stored under `id`, with its row number.
fn stored(conn: &Connection, id: &str) -> Result<Option<(i64, Episode)>> {
    let row: Option<(i64, String)> = conn
        .prepare_cached("SELECT seq, body FROM episodes WHERE id = ?")
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .db()?;
    row.map(|(seq, body)| Ok((seq, from_json(&body)?)))
        .transpose()
}

/// One episode by ID.
pub(crate) fn get(conn: &Connection, id: &EpisodeId) -> Result<Option<Episode>> {
    Ok(stored(conn, id.as_str())?.map(|(_, e)| e))
}

/// Writes `episode` and adds its contribution; with `replace`, takes out the stored one first.
/// Returns whether an episode was replaced.
pub(crate) fn put(conn: &Connection, episode: &Episode, replace: bool) -> Result<bool> {
    let body = serde_json::to_string(episode).map_err(lore_core::Error::store)?;
    let old = stored(conn, episode.id.as_str())?;
    let replaced = match old {
        Some(_) if !replace => {
            return Err(lore_core::Error::Conflict(format!(
                "episode {} already exists; replace it explicitly to change it",
                episode.id
            )));
        }
        Some((seq, old)) => {
            apply(conn, &old, &Contribution::of(&old), Sign::Remove)?;
            conn.prepare_cached("DELETE FROM episodes WHERE seq = ?")
                .and_then(|mut s| s.execute([seq]))
                .db()?;
            true
        }
        None => false,
    };
    conn.prepare_cached(
        "INSERT INTO episodes (id, skill, domain, timestamp, outcome, session, body) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .and_then(|mut s| {
        s.execute(params![
            episode.id.as_str(),
            episode.skill.as_str(),
            episode.skill.domain(),
            timestamp(episode.timestamp),
            episode.outcome.as_str(),
            episode.session,
            body,
        ])
    })
    .db()?;
    apply(conn, episode, &Contribution::of(episode), Sign::Add)?;
    Ok(replaced)
}

/// Stores an imported episode unless its ID is taken; returns whether it was written
/// (`false`: an identical copy is stored).
pub(crate) fn write(
    conn: &Connection,
    episode: &Episode,
    on_duplicate: OnDuplicate,
) -> Result<bool> {
    let Some((_, stored)) = stored(conn, episode.id.as_str())? else {
        put(conn, episode, false)?;
        return Ok(true);
    };
    on_duplicate.on_stored("episode", episode.id.as_str(), stored == *episode)
}

/// Replaces a stored episode's body with `erased` in place (same row, same `seq`), taking its
/// contribution out of the graph and adding the erased one's, which a purge leaves empty.
pub(crate) fn erase(conn: &Connection, erased: &Episode) -> Result<()> {
    let Some((seq, old)) = stored(conn, erased.id.as_str())? else {
        return Err(lore_core::Error::not_found("episode", &erased.id));
    };
    apply(conn, &old, &Contribution::of(&old), Sign::Remove)?;
    let body = serde_json::to_string(erased).map_err(lore_core::Error::store)?;
    conn.prepare_cached("UPDATE episodes SET body = ?, session = ? WHERE seq = ?")
        .and_then(|mut s| s.execute(params![body, erased.session, seq]))
        .db()?;
    apply(conn, erased, &Contribution::of(erased), Sign::Add)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sign {
    Add,
    Remove,
}

/// Adds or takes out one episode's contribution.
fn apply(conn: &Connection, episode: &Episode, c: &Contribution, sign: Sign) -> Result<()> {
    let elements = c.elements()?;
    let (skill, domain, id) = (
        episode.skill.as_str(),
        episode.skill.domain(),
        episode.id.as_str(),
    );
    for (element, key, count, successes) in elements {
        let (count, successes) = (to_i64(count), to_i64(successes));
        match sign {
            Sign::Add => {
                conn.prepare_cached(
                    "INSERT INTO graph_counts (skill, domain, element, key, count, successes) \
                     VALUES (?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (skill, element, key) DO UPDATE SET \
                     count = count + excluded.count, successes = successes + excluded.successes",
                )
                .and_then(|mut s| s.execute(params![skill, domain, element, key, count, successes]))
                .db()?;
                conn.prepare_cached(
                    "INSERT INTO graph_members (skill, domain, element, key, episode) \
                     VALUES (?, ?, ?, ?, ?)",
                )
                .and_then(|mut s| s.execute(params![skill, domain, element, key, id]))
                .db()?;
            }
            Sign::Remove => {
                conn.prepare_cached(
                    "UPDATE graph_counts SET count = count - ?, successes = successes - ? \
                     WHERE skill = ? AND element = ? AND key = ?",
                )
                .and_then(|mut s| s.execute(params![count, successes, skill, element, key]))
                .db()?;
                conn.prepare_cached(
                    "DELETE FROM graph_counts \
                     WHERE skill = ? AND element = ? AND key = ? AND count <= 0",
                )
                .and_then(|mut s| s.execute(params![skill, element, key]))
                .db()?;
                conn.prepare_cached(
                    "DELETE FROM graph_members \
                     WHERE skill = ? AND element = ? AND key = ? AND episode = ?",
                )
                .and_then(|mut s| s.execute(params![skill, element, key, id]))
                .db()?;
            }
        }
    }
    Ok(())
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The episodes `filter` selects, oldest first.
pub(crate) fn list(conn: &Connection, filter: &EpisodeFilter) -> Result<Vec<Episode>> {
    let mut w = Where::scope(&filter.scope);
    if let Some(skill) = &filter.skill {
        w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
    }
    if let Some(outcome) = filter.outcome {
        w.push("t.outcome = ?", [Value::Text(outcome.as_str().to_owned())]);
    }
    if let Some(since) = filter.since {
        w.push("t.timestamp >= ?", [timestamp(since)]);
    }
    let sql = format!(
        "SELECT t.body FROM episodes t{} ORDER BY t.timestamp, t.seq LIMIT ? OFFSET ?",
        w.sql()
    );
    page_of_bodies(conn, &sql, &w, filter.limit, filter.offset)
}

/// How many episodes lie inside `scope`.
pub(crate) fn count(conn: &Connection, scope: &Scope) -> Result<u64> {
    let w = Where::scope(scope);
    let sql = format!("SELECT COUNT(*) FROM episodes t{}", w.sql());
    crate::rows::count_query(conn, &sql, w.params())
}

/// The graph's counts inside `scope`, summed over its skills.
pub(crate) fn graph(conn: &Connection, scope: &Scope) -> Result<GraphCounts> {
    let w = Where::scope(scope);
    let mut counts: Vec<(String, String, Counts)> = Vec::new();
    let sql = format!(
        "SELECT t.element, t.key, SUM(t.count), SUM(t.successes) FROM graph_counts t{} \
         GROUP BY t.element, t.key",
        w.sql()
    );
    let rows: Vec<(String, String, i64, i64)> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(w.params()), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .db()?;
    let mut index = std::collections::HashMap::new();
    for (element, key, count, successes) in rows {
        index.insert((element.clone(), key.clone()), counts.len());
        counts.push((
            element,
            key,
            Counts {
                count: u64::try_from(count).unwrap_or(0),
                successes: u64::try_from(successes).unwrap_or(0),
                ..Counts::default()
            },
        ));
    }
    let sql = format!(
        "SELECT t.element, t.key, t.episode FROM graph_members t{}",
        w.sql()
    );
    let members: Vec<(String, String, String)> = conn
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_map(params_from_iter(w.params()), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect()
        })
        .db()?;
    for (element, key, episode) in members {
        if let Some(&i) = index.get(&(element, key)) {
            counts[i].2.episodes.insert(EpisodeId::parse(&episode)?);
        }
    }
    let mut out = GraphCounts::default();
    for (element, key, c) in counts {
        match element.as_str() {
            "node" => {
                out.nodes.insert(from_json(&key)?, c);
            }
            "edge" => {
                out.edges.insert(from_json(&key)?, c);
            }
            _ => {
                out.patterns.insert(from_json(&key)?, c);
            }
        }
    }
    Ok(out)
}

/// The episode revision (migration 0005): raised by triggers on every write to `episodes`, and
/// by a rebuild of the graph.
pub(crate) fn revision(conn: &Connection) -> Result<u64> {
    let revision: i64 = conn
        .prepare_cached("SELECT revision FROM episode_revision WHERE id = 1")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .db()?;
    Ok(u64::try_from(revision).unwrap_or(0))
}

/// Empties the graph and adds every stored episode again.
pub(crate) fn rebuild(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "DELETE FROM graph_counts; DELETE FROM graph_members; \
         UPDATE episode_revision SET revision = revision + 1 WHERE id = 1;",
    )
    .db()?;
    for episode in list(conn, &EpisodeFilter::default())? {
        apply(conn, &episode, &Contribution::of(&episode), Sign::Add)?;
    }
    Ok(())
}
