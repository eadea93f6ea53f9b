//! The tables of the record kinds, and what each is called in SQL and in messages.

use lore_core::model::RecordKind;

/// The table of one record kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Table {
    Executions,
    Corrections,
    Lessons,
    ErrorEvents,
    Audit,
    Memories,
}

impl Table {
    /// The tables whose records carry a skill, with the audit kind that names them.
    pub(crate) const SCOPED: [(Table, RecordKind); 4] = [
        (Table::Executions, RecordKind::Execution),
        (Table::Corrections, RecordKind::Correction),
        (Table::Lessons, RecordKind::Lesson),
        (Table::ErrorEvents, RecordKind::ErrorEvent),
    ];

    /// The SQL table name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Executions => "executions",
            Table::Corrections => "corrections",
            Table::Lessons => "lessons",
            Table::ErrorEvents => "error_events",
            Table::Audit => "audit",
            Table::Memories => "memories",
        }
    }

    /// The kind of record, for messages.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Table::Executions => "execution",
            Table::Corrections => "correction",
            Table::Lessons => "lesson",
            Table::ErrorEvents => "error event",
            Table::Audit => "audit entry",
            Table::Memories => "memory entry",
        }
    }

    /// The statement that indexes a record's text, for the kinds that are searched.
    pub(crate) fn fts_insert(self) -> Option<&'static str> {
        match self {
            Table::Lessons => Some(
                "INSERT INTO lessons_fts \
                 (rowid, rule, applies_when, mistake, root_cause, tags, summary) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            ),
            Table::Executions => {
                Some("INSERT INTO executions_fts (rowid, input, output) VALUES (?, ?, ?)")
            }
            Table::Memories => {
                Some("INSERT INTO memories_fts (rowid, text, tags) VALUES (?, ?, ?)")
            }
            _ => None,
        }
    }
}
