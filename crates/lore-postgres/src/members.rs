//! The organization's members: one `DISTINCT ON` query over members' lessons and one over
//! members' runs, merged by [`lore_core::org::roster`]. The server picks each agent's row, so
//! only one row per member crosses the wire, whatever the number of runs.

use deadpool_postgres::GenericClient;
use lore_core::Scope;
use lore_core::org::{self, Member};

use crate::connect::Fail;
use crate::filter::Where;

/// Members inside `scope`'s domains and skills, by agent name.
pub(crate) async fn members(db: &impl GenericClient, scope: &Scope) -> Result<Vec<Member>, Fail> {
    // The first lesson of each owner; the latest run of each agent.
    let owners = side(
        db,
        scope,
        "lessons",
        "owner",
        "ASC",
        " AND m.o->>'reach' IN ('agent', 'role', 'department')",
    )
    .await?;
    let runs = side(db, scope, "executions", "agent", "DESC", "").await?;
    Ok(org::roster(owners, runs))
}

async fn side(
    db: &impl GenericClient,
    scope: &Scope,
    table: &str,
    name: &str,
    order: &str,
    more: &str,
) -> Result<Vec<Member>, Fail> {
    let w = Where::scope(scope);
    let joiner = if w.is_empty() { " WHERE" } else { " AND" };
    // A mark whose names are not text does not parse as a member; it names no one.
    let sql = format!(
        "SELECT DISTINCT ON (m.o->>'{name}') m.o->>'{name}', m.o->>'role', m.o->>'department' \
         FROM {table} t CROSS JOIN LATERAL (SELECT (t.body::jsonb)->'extra'->'org' AS o) m{}\
         {joiner} jsonb_typeof(m.o->'{name}') = 'string' \
         AND coalesce(jsonb_typeof(m.o->'role'), 'null') IN ('string', 'null') \
         AND coalesce(jsonb_typeof(m.o->'department'), 'null') IN ('string', 'null'){more} \
         ORDER BY m.o->>'{name}', t.ts {order}, t.seq {order}",
        w.sql()
    );
    let stmt = db.prepare_cached(&sql).await?;
    let rows = db.query(&stmt, &w.params()).await?;
    Ok(rows
        .iter()
        .map(|r| Member {
            agent: r.get(0),
            role: r.get(1),
            department: r.get(2),
        })
        .collect())
}
