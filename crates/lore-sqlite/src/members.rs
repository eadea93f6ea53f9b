//! The organization's members, read through the partial indexes of migration 0010: one
//! grouped query over members' lessons and one over members' runs, merged by
//! [`lore_core::org::roster`]. Rows of handles without a role never enter either query.

use lore_core::Result;
use lore_core::Scope;
use lore_core::org::{self, Member};
use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use crate::Db;
use crate::filter::Where;

/// Members inside `scope`'s domains and skills, by agent name.
///
/// # Errors
/// [`lore_core::Error::Store`] when a query fails.
pub(crate) fn members(conn: &Connection, scope: &Scope) -> Result<Vec<Member>> {
    // The first lesson of each owner, then the latest run of each agent: SQLite takes the bare
    // columns of a grouped query from the row that gives the MIN or MAX.
    let owners = grouped(conn, scope, &OWNERS)?;
    let runs = grouped(conn, scope, &RUNS)?;
    Ok(org::roster(owners, runs))
}

/// One side's query: per agent, the names of the row `pick` (MIN or MAX) chooses by time.
struct Side {
    table: &'static str,
    name: &'static str,
    pick: &'static str,
    more: &'static str,
}

const OWNERS: Side = Side {
    table: "lessons",
    name: "owner",
    pick: "MIN",
    more: " AND json_extract(t.body, '$.extra.org.reach') IN ('agent', 'role', 'department')",
};

const RUNS: Side = Side {
    table: "executions",
    name: "agent",
    pick: "MAX",
    more: "",
};

impl Side {
    fn sql(&self, w: &Where) -> String {
        let joiner = if w.is_empty() { " WHERE" } else { " AND" };
        let who = format!("json_extract(t.body, '$.extra.org.{}')", self.name);
        format!(
            "SELECT {who} AS who, json_extract(t.body, '$.extra.org.role'), \
             json_extract(t.body, '$.extra.org.department'), \
             {}(t.timestamp || printf('%020d', t.seq)) \
             FROM {} t{}{joiner} {who} IS NOT NULL{} GROUP BY who",
            self.pick,
            self.table,
            w.sql(),
            self.more
        )
    }
}

fn grouped(conn: &Connection, scope: &Scope, side: &Side) -> Result<Vec<Member>> {
    let w = Where::scope(scope);
    let sql = side.sql(&w);
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let rows = stmt
        .query_map(params_from_iter(w.params()), |r| {
            Ok((
                r.get::<_, Value>(0)?,
                r.get::<_, Value>(1)?,
                r.get::<_, Value>(2)?,
            ))
        })
        .db()?;
    let mut out = Vec::new();
    for row in rows {
        // A mark whose names are not text does not parse as a member; it names no one.
        match row.db()? {
            (Value::Text(agent), role, department) => match (name_of(role), name_of(department)) {
                (Ok(role), Ok(department)) => out.push(Member {
                    agent,
                    role,
                    department,
                }),
                _ => continue,
            },
            _ => continue,
        }
    }
    Ok(out)
}

/// A mark's optional name: absent, or text.
fn name_of(value: Value) -> std::result::Result<Option<String>, ()> {
    match value {
        Value::Null => Ok(None),
        Value::Text(s) => Ok(Some(s)),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpenMode, SqliteStore};

    #[test]
    fn both_queries_read_the_members_indexes_not_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
        let conn = store.conn();
        for (side, index) in [(RUNS, "executions_member"), (OWNERS, "lessons_owner")] {
            let plan = format!("EXPLAIN QUERY PLAN {}", side.sql(&Where::default()));
            let mut stmt = conn.prepare(&plan).unwrap();
            let steps: Vec<String> = stmt
                .query_map([], |r| r.get::<_, String>(3))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert!(
                steps.iter().any(|s| s.contains(index)),
                "{index} not used: {steps:?}"
            );
        }
    }
}
