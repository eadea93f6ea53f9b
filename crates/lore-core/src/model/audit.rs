//! The audit log: who changed what, when, and why. Nothing in Lore changes silently.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LessonStatus;
use crate::id::AuditId;

/// The kind of record an audit entry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// An execution.
    Execution,
    /// A correction.
    Correction,
    /// A lesson.
    Lesson,
    /// An error event.
    ErrorEvent,
    /// An episode.
    Episode,
    /// A resolved human-in-the-loop decision.
    Decision,
    /// An embedder tuning run or one of its checkpoints.
    Embedder,
}

/// What happened to the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// The record was created.
    Created,
    /// The record came in through an import.
    Imported,
    /// A lesson changed status.
    Transition,
    /// A lesson's text or numbers were edited.
    Edited,
    /// The record's content was erased on request.
    Purged,
    /// The record was replaced by a new version under the same ID (episodes).
    Replaced,
    /// The record's text was read unredacted, by someone allowed to and who asked for it.
    /// Nothing changed; the entry is the record of who saw the secrets it may hold.
    Disclosed,
    /// An operator changed the embedder: activated or rolled back a checkpoint, cancelled a run.
    Administered,
}

/// One entry of the audit log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Unique ID.
    pub id: AuditId,
    /// The kind of record.
    pub subject_kind: RecordKind,
    /// The record's ID.
    pub subject: String,
    /// What happened.
    pub action: AuditAction,
    /// The status before a transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<LessonStatus>,
    /// The status after a transition (or at creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<LessonStatus>,
    /// Who did it: a person, an agent, or `lore` for automatic jobs.
    pub actor: String,
    /// When (UTC).
    pub at: DateTime<Utc>,
    /// Why, in words.
    pub reason: String,
    /// Supporting data: IDs, scores, the fields that changed.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub evidence: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::roundtrip;
    use chrono::TimeZone;

    #[test]
    fn audit_entry_roundtrips() {
        let at = Utc.with_ymd_and_hms(2026, 2, 20, 18, 28, 36).unwrap();
        roundtrip(&AuditEntry {
            id: AuditId::generate(at),
            subject_kind: RecordKind::Lesson,
            subject: "REFL-003".into(),
            action: AuditAction::Transition,
            from: Some(LessonStatus::Approved),
            to: Some(LessonStatus::Archived),
            actor: "mike".into(),
            at,
            reason: "rule was wrong".into(),
            evidence: serde_json::json!({"execution": "EXEC-1"}),
        });
    }
}
