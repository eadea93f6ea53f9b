//! Episodes and the causal graph's counts, kept as in SQLite: the graph only ever changes by
//! adding or taking out one episode's [`Contribution`], inside the transaction that writes the
//! episode, and every such transaction holds the `episodes` counter, so writers of the graph
//! take turns and the counts cannot drift.

use std::collections::HashMap;

use deadpool_postgres::GenericClient;
use lore_core::graph::{Contribution, Counts, GraphCounts};
use lore_core::id::EpisodeId;
use lore_core::model::Episode;
use lore_core::ports::store::{EpisodeFilter, OnDuplicate};
use lore_core::{Error, Scope};

use crate::connect::Fail;
use crate::filter::Where;
use crate::rows::{Counter, Writer, bodies, count_query, from_json, nanos, to_i64, to_json};

/// The episode stored under `id`, with its row number.
async fn stored(db: &impl GenericClient, id: &str) -> Result<Option<(i64, Episode)>, Fail> {
    let stmt = db
        .prepare_cached("SELECT seq, body FROM episodes WHERE id = $1")
        .await?;
    match db.query_opt(&stmt, &[&id]).await? {
        Some(r) => Ok(Some((r.get(0), from_json(r.get::<_, &str>(1))?))),
        None => Ok(None),
    }
}

/// One episode by ID.
pub(crate) async fn get(db: &impl GenericClient, id: &EpisodeId) -> Result<Option<Episode>, Fail> {
    Ok(stored(db, id.as_str()).await?.map(|(_, e)| e))
}

/// Writes `episode` and adds its contribution; with `replace`, takes out the stored one first.
/// Returns whether an episode was replaced.
pub(crate) async fn put(
    w: &mut Writer<'_>,
    episode: &Episode,
    replace: bool,
) -> Result<bool, Fail> {
    w.next(Counter::Episodes)?;
    let body = to_json(episode)?;
    let replaced = match stored(&w.tx, episode.id.as_str()).await? {
        Some(_) if !replace => {
            return Err(Fail::Lore(Error::Conflict(format!(
                "episode {} already exists; replace it explicitly to change it",
                episode.id
            ))));
        }
        Some((seq, old)) => {
            apply(w, &old, Sign::Remove).await?;
            w.tx.execute("DELETE FROM episodes WHERE seq = $1", &[&seq])
                .await?;
            true
        }
        None => false,
    };
    let stmt =
        w.tx.prepare_cached(
            "INSERT INTO episodes (id, skill, domain, ts, outcome, session, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .await?;
    w.tx.execute(
        &stmt,
        &[
            &episode.id.as_str(),
            &episode.skill.as_str(),
            &episode.skill.domain(),
            &nanos(episode.timestamp),
            &episode.outcome.as_str(),
            &episode.session,
            &body,
        ],
    )
    .await?;
    apply(w, episode, Sign::Add).await?;
    Ok(replaced)
}

/// Stores an imported episode unless its ID is taken; returns whether it was written.
pub(crate) async fn write(
    w: &mut Writer<'_>,
    episode: &Episode,
    on_duplicate: OnDuplicate,
) -> Result<bool, Fail> {
    let Some((_, stored)) = stored(&w.tx, episode.id.as_str()).await? else {
        put(w, episode, false).await?;
        return Ok(true);
    };
    Ok(on_duplicate.on_stored("episode", episode.id.as_str(), stored == *episode)?)
}

/// Replaces a stored episode's body with `erased` in place, taking its contribution out of the
/// graph and adding the erased one's.
pub(crate) async fn erase(w: &mut Writer<'_>, erased: &Episode) -> Result<(), Fail> {
    w.next(Counter::Episodes)?;
    let Some((seq, old)) = stored(&w.tx, erased.id.as_str()).await? else {
        return Err(Fail::Lore(Error::not_found("episode", &erased.id)));
    };
    apply(w, &old, Sign::Remove).await?;
    let body = to_json(erased)?;
    w.tx.execute(
        "UPDATE episodes SET body = $1, session = $2 WHERE seq = $3",
        &[&body, &erased.session, &seq],
    )
    .await?;
    apply(w, erased, Sign::Add).await
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sign {
    Add,
    Remove,
}

/// Adds or takes out one episode's contribution.
async fn apply(w: &mut Writer<'_>, episode: &Episode, sign: Sign) -> Result<(), Fail> {
    let elements = Contribution::of(episode).elements()?;
    let (skill, domain, id) = (
        episode.skill.as_str(),
        episode.skill.domain(),
        episode.id.as_str(),
    );
    let tx = &w.tx;
    let (add_count, add_member, sub_count, drop_empty, drop_member) = (
        tx.prepare_cached(
            "INSERT INTO graph_counts (skill, domain, element, key, count, successes) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (skill, element, key) DO UPDATE SET \
             count = graph_counts.count + excluded.count, \
             successes = graph_counts.successes + excluded.successes",
        )
        .await?,
        tx.prepare_cached(
            "INSERT INTO graph_members (skill, domain, element, key, episode) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .await?,
        tx.prepare_cached(
            "UPDATE graph_counts SET count = count - $1, successes = successes - $2 \
             WHERE skill = $3 AND element = $4 AND key = $5",
        )
        .await?,
        tx.prepare_cached(
            "DELETE FROM graph_counts WHERE skill = $1 AND element = $2 AND key = $3 \
             AND count <= 0",
        )
        .await?,
        tx.prepare_cached(
            "DELETE FROM graph_members \
             WHERE skill = $1 AND element = $2 AND key = $3 AND episode = $4",
        )
        .await?,
    );
    for (element, key, count, successes) in elements {
        let (count, successes) = (to_i64_u(count), to_i64_u(successes));
        match sign {
            Sign::Add => {
                tx.execute(
                    &add_count,
                    &[&skill, &domain, &element, &key, &count, &successes],
                )
                .await?;
                tx.execute(&add_member, &[&skill, &domain, &element, &key, &id])
                    .await?;
            }
            Sign::Remove => {
                tx.execute(&sub_count, &[&count, &successes, &skill, &element, &key])
                    .await?;
                tx.execute(&drop_empty, &[&skill, &element, &key]).await?;
                tx.execute(&drop_member, &[&skill, &element, &key, &id])
                    .await?;
            }
        }
    }
    Ok(())
}

fn to_i64_u(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The episodes `filter` selects, oldest first.
pub(crate) async fn list(
    db: &impl GenericClient,
    filter: &EpisodeFilter,
) -> Result<Vec<Episode>, Fail> {
    let mut w = Where::scope(&filter.scope);
    if let Some(skill) = &filter.skill {
        w.push("t.skill = $?", skill.as_str().to_owned());
    }
    if let Some(outcome) = filter.outcome {
        w.push("t.outcome = $?", outcome.as_str().to_owned());
    }
    if let Some(since) = filter.since {
        w.push("t.ts >= $?", nanos(since));
    }
    let clause = w.sql();
    let l = w.bind(filter.limit.map(to_i64));
    let o = w.bind(to_i64(filter.offset));
    let sql =
        format!("SELECT t.body FROM episodes t{clause} ORDER BY t.ts, t.seq LIMIT {l} OFFSET {o}");
    bodies(db, &sql, &w.params()).await
}

/// How many episodes lie inside `scope`.
pub(crate) async fn count(db: &impl GenericClient, scope: &Scope) -> Result<u64, Fail> {
    let w = Where::scope(scope);
    let sql = format!("SELECT COUNT(*) FROM episodes t{}", w.sql());
    count_query(db, &sql, &w.params()).await
}

/// The graph's counts inside `scope`, summed over its skills.
pub(crate) async fn graph(db: &impl GenericClient, scope: &Scope) -> Result<GraphCounts, Fail> {
    let w = Where::scope(scope);
    let sql = format!(
        "SELECT t.element, t.key, SUM(t.count)::bigint, SUM(t.successes)::bigint \
         FROM graph_counts t{} GROUP BY t.element, t.key",
        w.sql()
    );
    let rows = db.query(&sql, &w.params()).await?;
    let mut counts: Vec<(String, String, Counts)> = Vec::with_capacity(rows.len());
    let mut index = HashMap::new();
    for r in rows {
        let (element, key): (String, String) = (r.get(0), r.get(1));
        let (count, successes): (i64, i64) = (r.get(2), r.get(3));
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
    for r in db.query(&sql, &w.params()).await? {
        let at = (r.get::<_, String>(0), r.get::<_, String>(1));
        if let Some(&i) = index.get(&at) {
            counts[i]
                .2
                .episodes
                .insert(EpisodeId::parse(r.get::<_, &str>(2))?);
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

/// Empties the graph and adds every stored episode again.
pub(crate) async fn rebuild(w: &mut Writer<'_>) -> Result<(), Fail> {
    w.next(Counter::Episodes)?;
    w.tx.batch_execute("DELETE FROM graph_counts; DELETE FROM graph_members;")
        .await?;
    let all = list(&w.tx, &EpisodeFilter::default()).await?;
    for episode in &all {
        apply(w, episode, Sign::Add).await?;
    }
    Ok(())
}
