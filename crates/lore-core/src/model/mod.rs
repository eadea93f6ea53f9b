//! The records Lore keeps: what agents did, what people said about it, and what was learned.
//!
//! Every record carries its skill (and so its scope), its time and a stable ID. Records serialize
//! to JSON with serde; the JSONL export and the SQLite store both use these shapes, so one
//! round-trip test per type guards both.

mod audit;
mod decision;
mod digest;
mod episode;
mod knowledge;
mod lesson;
mod memory;

pub use audit::{AuditAction, AuditEntry, RecordKind};
pub use decision::DecisionRecord;
pub use digest::{
    Digest, DigestMethod, DigestSource, DigestSourceKind, EvalGrade, EvalQuestion, EvalRun,
    EvalSet, EvalTrigger, Grader,
};
pub use episode::{
    Decision, DecisionType, EdgeType, Episode, EpisodeLink, EpisodeMetrics, EpisodeOutcome, Event,
    EventType, ItemRef, PURGED,
};
pub use knowledge::{ChunkVector, KnowledgeChunk, KnowledgeDocument};
pub use lesson::{
    CurationMode, Lesson, LessonLink, LessonSource, LessonStatus, LinkKind, StratumBounds, Tiers,
    UtilityStats,
};
pub use memory::{MemoryCategory, MemoryEntry};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::{CorrectionId, ErrorEventId, ExecutionId, LessonId};
use crate::scope::SkillPath;

/// How an execution ended, as the agent or a reviewer judged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A person or referee accepted the output.
    Accepted,
    /// A person or referee rejected the output.
    Rejected,
    /// Nobody has judged the output yet.
    PendingReview,
    /// The task succeeded by its own measure (an exit code, a passing check).
    Success,
    /// The task failed by its own measure.
    Failure,
}

impl Outcome {
    /// Every outcome, in documentation order.
    pub const ALL: [Outcome; 5] = [
        Outcome::Accepted,
        Outcome::Rejected,
        Outcome::PendingReview,
        Outcome::Success,
        Outcome::Failure,
    ];

    /// The outcome's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Rejected => "rejected",
            Outcome::PendingReview => "pending_review",
            Outcome::Success => "success",
            Outcome::Failure => "failure",
        }
    }

    /// Parses a wire name.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] listing the accepted names.
    pub fn parse(raw: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|o| o.as_str() == raw)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|o| o.as_str()).collect();
                crate::Error::invalid(
                    "outcome",
                    format!("{raw:?}; expected one of {}", names.join(", ")),
                )
            })
    }
}

/// One run of a skill or task (seed 000's episodic memory entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// Unique ID.
    pub id: ExecutionId,
    /// The skill that ran.
    pub skill: SkillPath,
    /// When it ran (UTC).
    pub timestamp: DateTime<Utc>,
    /// The input given to the skill, as JSON.
    pub input: Value,
    /// The output the skill produced, as JSON.
    pub output: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// Total model cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Wall-clock time in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// The model that produced the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session it belongs to, for per-session guards and episodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The lessons placed into the prompt this execution ran with (its activations): what
    /// utility is measured from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lessons_shown: Vec<LessonId>,
    /// Fields from imported records that Lore has no name for, kept so export is lossless.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// Who wrote a correction; seed 002 keeps the failed agent from writing its own lesson.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    /// A person; in `auto` curation their lesson is approved at once.
    Human,
    /// An agent or automated referee.
    Agent,
}

/// Feedback from a person on one execution (seed 000's correction).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Correction {
    /// Unique ID.
    pub id: CorrectionId,
    /// The execution being corrected.
    pub execution_id: ExecutionId,
    /// The skill of that execution.
    pub skill: SkillPath,
    /// When the correction was made (UTC).
    pub timestamp: DateTime<Utc>,
    /// A snapshot of the execution's output at correction time.
    pub original_output: Value,
    /// What was wrong and what should change, in the author's words.
    pub text: String,
    /// Whether a person or an agent wrote it.
    pub author_kind: AuthorKind,
    /// The author's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Fields from imported records that Lore has no name for.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// Seed 003's four feedback channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalChannel {
    /// An exception, a non-zero exit, an API error, a safety violation.
    HardFailure,
    /// A required condition not met (wrong shape, missing artifact, broken invariant).
    ConstraintFailure,
    /// A scalar distance or progress toward the goal.
    Progress,
    /// Steps, time or cost.
    Efficiency,
    /// An independent scorer's grade of the run, 0 (worst) to 1 (best): a deterministic
    /// evaluator, a rubric, or a model acting as judge (seed 003's referee).
    Referee,
}

impl SignalChannel {
    /// Every channel, in documentation order.
    pub const ALL: [SignalChannel; 5] = [
        SignalChannel::HardFailure,
        SignalChannel::ConstraintFailure,
        SignalChannel::Progress,
        SignalChannel::Efficiency,
        SignalChannel::Referee,
    ];

    /// The channel's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalChannel::HardFailure => "hard_failure",
            SignalChannel::ConstraintFailure => "constraint_failure",
            SignalChannel::Progress => "progress",
            SignalChannel::Efficiency => "efficiency",
            SignalChannel::Referee => "referee",
        }
    }

    /// Parses a wire name.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] listing the accepted names.
    pub fn parse(raw: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == raw)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|c| c.as_str()).collect();
                crate::Error::invalid(
                    "channel",
                    format!("{raw:?}; expected one of {}", names.join(", ")),
                )
            })
    }
}

/// A failed step, normalized so that recurrences can be counted (seed 003's `ErrorEvent`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// Unique ID.
    pub id: ErrorEventId,
    /// The skill that failed.
    pub skill: SkillPath,
    /// The execution the step belonged to, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<ExecutionId>,
    /// When it happened (UTC).
    pub timestamp: DateTime<Utc>,
    /// Which feedback channel reported it.
    pub channel: SignalChannel,
    /// The normalized error, see [`crate::fingerprint()`].
    pub fingerprint: String,
    /// Generic failure tags (`unknown_symbol`, `no_progress`, …).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The action that was attempted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The raw error text, before normalization.
    pub message: String,
    /// The channel's scalar, for progress and efficiency signals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    pub(crate) fn roundtrip<T>(value: &T)
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        let text = serde_json::to_string(value).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(&back, value, "{text}");
    }

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 2, 20, 12, 43, 41).unwrap()
    }

    #[test]
    fn execution_roundtrips_with_extra_fields() {
        let mut extra = Map::new();
        extra.insert("trace_id".into(), json!("abc"));
        roundtrip(&Execution {
            id: ExecutionId::generate(at()),
            skill: SkillPath::parse("hr/resume-screen").unwrap(),
            timestamp: at(),
            input: json!({"candidate": "Zoë Ünal", "role": "数据工程师"}),
            output: json!({"overall_score": 72}),
            outcome: Outcome::Accepted,
            cost_usd: Some(0.0093),
            latency_ms: Some(1062.5),
            model: Some("anthropic/claude-haiku-4-5".into()),
            agent: None,
            session: Some("s1".into()),
            lessons_shown: vec![LessonId::generate(at())],
            extra,
        });
    }

    #[test]
    fn correction_and_error_event_roundtrip() {
        roundtrip(&Correction {
            id: CorrectionId::generate(at()),
            execution_id: ExecutionId::parse("EXEC-20260220124341").unwrap(),
            skill: SkillPath::parse("hr/resume-screen").unwrap(),
            timestamp: at(),
            original_output: json!({"overall_score": 72}),
            text: "Score below 60 without system design.".into(),
            author_kind: AuthorKind::Human,
            author: Some("mike".into()),
            extra: Map::new(),
        });
        roundtrip(&ErrorEvent {
            id: ErrorEventId::generate(at()),
            skill: SkillPath::parse("data/gridtool").unwrap(),
            execution_id: None,
            timestamp: at(),
            channel: SignalChannel::HardFailure,
            fingerprint: crate::fingerprint("unknown column 'foo' at line 3"),
            tags: vec!["unknown_symbol".into()],
            action: Some("SELECT foo".into()),
            message: "unknown column 'foo' at line 3".into(),
            value: None,
        });
    }

    #[test]
    fn unknown_outcome_names_the_choices() {
        let err = Outcome::parse("maybe").unwrap_err().to_string();
        assert!(err.contains("pending_review"), "{err}");
        assert_eq!(Outcome::parse("success").unwrap(), Outcome::Success);
    }
}
