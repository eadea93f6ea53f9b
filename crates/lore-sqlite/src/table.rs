//! The tables of the record kinds (named in lore-core, alike for every store) and the SQLite
//! statements particular to them.

pub(crate) use lore_core::ports::store::Table;

/// The statement that indexes a record's text, for the kinds that are searched.
pub(crate) fn fts_insert(table: Table) -> Option<&'static str> {
    match table {
        Table::Lessons => Some(
            "INSERT INTO lessons_fts \
             (rowid, rule, applies_when, mistake, root_cause, tags, summary) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        ),
        Table::Executions => {
            Some("INSERT INTO executions_fts (rowid, input, output) VALUES (?, ?, ?)")
        }
        Table::Memories => Some("INSERT INTO memories_fts (rowid, text, tags) VALUES (?, ?, ?)"),
        _ => None,
    }
}
