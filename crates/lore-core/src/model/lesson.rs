//! The lesson: the unit of learned knowledge, and the states it moves through.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::{CorrectionId, ExecutionId, LessonId};
use crate::scope::SkillPath;

/// Where a lesson is in its life (DESIGN.md's one lifecycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LessonStatus {
    /// Machine-made, waiting for a person (review mode).
    NeedsReview,
    /// Machine-made, shown marked as trial so its utility can be measured (auto mode).
    Trial,
    /// Confirmed; retrievable.
    Approved,
    /// Judged wrong or noise.
    Rejected,
    /// Measured as unhelpful or harmful.
    Suppressed,
    /// Left in review too long.
    Expired,
    /// A real outcome, but not to be generalized.
    OneTimeException,
    /// Holds personal or secret data; never fed to a prompt.
    Sensitive,
    /// Replaced by a better lesson.
    Superseded,
    /// Retired or pruned; kept for history.
    Archived,
}

impl LessonStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [LessonStatus; 10] = [
        LessonStatus::NeedsReview,
        LessonStatus::Trial,
        LessonStatus::Approved,
        LessonStatus::Rejected,
        LessonStatus::Suppressed,
        LessonStatus::Expired,
        LessonStatus::OneTimeException,
        LessonStatus::Sensitive,
        LessonStatus::Superseded,
        LessonStatus::Archived,
    ];

    /// The status's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LessonStatus::NeedsReview => "needs_review",
            LessonStatus::Trial => "trial",
            LessonStatus::Approved => "approved",
            LessonStatus::Rejected => "rejected",
            LessonStatus::Suppressed => "suppressed",
            LessonStatus::Expired => "expired",
            LessonStatus::OneTimeException => "one_time_exception",
            LessonStatus::Sensitive => "sensitive",
            LessonStatus::Superseded => "superseded",
            LessonStatus::Archived => "archived",
        }
    }

    /// Parses a wire name.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] listing the accepted names.
    pub fn parse(raw: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == raw)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|s| s.as_str()).collect();
                crate::Error::invalid(
                    "status",
                    format!("{raw:?}; expected one of {}", names.join(", ")),
                )
            })
    }

    /// Whether a lesson in this status may reach a prompt under `mode`.
    ///
    /// Only `approved` ever does in review mode (seed 004); auto mode also shows `trial`
    /// lessons, marked as such, so that their utility can be measured (seed 003).
    pub fn is_retrievable(self, mode: CurationMode) -> bool {
        match self {
            LessonStatus::Approved => true,
            LessonStatus::Trial => mode == CurationMode::Auto,
            _ => false,
        }
    }
}

/// How machine-made lessons are curated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CurationMode {
    /// Machine-made lessons wait for a person; only approved lessons reach a prompt.
    Review,
    /// Machine-made lessons go on trial and are promoted or suppressed by measured utility.
    #[default]
    Auto,
}

/// Where a lesson came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LessonSource {
    /// Distilled from a correction.
    Correction,
    /// Written directly by a person.
    Manual,
    /// Imported from another memory (seed 000's reflexion files).
    Import,
    /// Proposed from recurring error fingerprints.
    ErrorEvents,
    /// Proposed from a run a referee graded among the skill's best (seed 002's success capture).
    Success,
    /// Proposed by a model.
    Llm,
}

/// Seed 002's progressive disclosure: a summary for ranking, the fuller tiers for the top items.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tiers {
    /// Discovery tier: one line, about a hundred tokens at most.
    pub summary: String,
    /// Activation tier: when it applies.
    pub condition: String,
    /// Activation tier: what to do.
    pub action: String,
    /// Activation tier: why.
    pub rationale: String,
    /// Execution tier: ordered steps.
    #[serde(default)]
    pub steps: Vec<String>,
}

/// Measured usefulness of a lesson (seed 003).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UtilityStats {
    /// How many times the lesson was placed into a prompt.
    pub activations: u64,
    /// Activations followed by a better outcome.
    pub helped: u64,
    /// Activations followed by no improvement or a worse outcome.
    pub hurt: u64,
    /// Matched judged runs that did not show it, at the last measurement: the control its
    /// bounds were drawn from, beside the `helped + hurt` runs that showed it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub baseline_runs: u64,
    /// Aggregated utility in `[-1, 1]`, `None` until measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utility: Option<f64>,
    /// When the lesson was last placed into a prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_at: Option<DateTime<Utc>>,
    /// One-sided 95 % bounds `[lower, upper]` on how much less often its own error happened
    /// where it was shown than in matched runs without it, at the last measurement; `None`
    /// until both sides had runs. How sure the verdict is decides whether it is still tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<[f64; 2]>,
    /// The same bounds (at 97.5 %) for any failure: what catches a lesson that trades its own
    /// error for another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall_bounds: Option<[f64; 2]>,
    /// The same comparisons within each task type the lesson was shown in often enough to be
    /// judged there, when there are two or more: a lesson can help one kind of task and harm
    /// another, and one comparison over both would hide the harm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stratum_bounds: Vec<StratumBounds>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A lesson's comparison within one task type (runs grouped by the content words of their
/// input).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StratumBounds {
    /// The words every run of the type shares, to name it.
    pub task_type: String,
    /// Judged runs of the type that showed the lesson.
    pub runs: u64,
    /// Judged runs of the type that did not.
    pub baseline_runs: u64,
    /// Bounds on how much less often its own error happened there (as `bounds`).
    pub bounds: [f64; 2],
    /// Bounds on how much less often any failure happened there (as `overall_bounds`).
    pub overall_bounds: [f64; 2],
}

/// How two lessons relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// Same conditions, incompatible actions: never injected together.
    Conflicts,
    /// This lesson replaces the target.
    Supersedes,
    /// This lesson was replaced by the target.
    SupersededBy,
    /// Nearly the same rule.
    NearDuplicate,
}

/// A typed link from one lesson to another.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LessonLink {
    /// The relation.
    pub kind: LinkKind,
    /// The other lesson.
    pub target: LessonId,
}

/// A learned rule: what went wrong, why, what to do instead, and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lesson {
    /// Unique ID.
    pub id: LessonId,
    /// The skill it belongs to (and so its domain scope).
    pub skill: SkillPath,
    /// The agent that wrote or triggered it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The correction it was distilled from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction_id: Option<CorrectionId>,
    /// The execution that correction was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<ExecutionId>,
    /// What went wrong, for a person.
    pub mistake: String,
    /// Why the model got it wrong (a category).
    pub root_cause: String,
    /// The guidance injected into prompts.
    pub rule: String,
    /// When the rule is relevant.
    pub applies_when: String,
    /// Normalized error fingerprints that should bring this lesson up.
    #[serde(default)]
    pub triggers: Vec<String>,
    /// Generic tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Summary, activation and execution tiers.
    pub tiers: Tiers,
    /// How sure we are, `0.0..=1.0`.
    pub confidence: f64,
    /// Where it came from.
    pub source: LessonSource,
    /// Where it is in its lifecycle.
    pub status: LessonStatus,
    /// Measured usefulness.
    #[serde(default)]
    pub utility: UtilityStats,
    /// Links to other lessons.
    #[serde(default)]
    pub links: Vec<LessonLink>,
    /// Whether a generated test passes with this rule.
    #[serde(default)]
    pub validated_by_test: bool,
    /// The tests that validate it.
    #[serde(default)]
    pub generated_test_ids: Vec<String>,
    /// Later corrections that taught the same rule and were merged into this lesson at write
    /// time (dedup); `correction_id` is the first. The lesson's evidence is all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<CorrectionId>,
    /// When it was created (UTC).
    pub created_at: DateTime<Utc>,
    /// When it last changed (UTC).
    pub updated_at: DateTime<Utc>,
    /// Fields from imported records that Lore has no name for.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::roundtrip;
    use chrono::TimeZone;

    #[test]
    fn lesson_roundtrips_with_every_field_set() {
        let at = Utc.with_ymd_and_hms(2026, 2, 20, 18, 28, 36).unwrap();
        let mut extra = Map::new();
        extra.insert("origin".into(), Value::from("agentura"));
        roundtrip(&Lesson {
            id: LessonId::generate(at),
            skill: SkillPath::parse("hr/resume-screen").unwrap(),
            agent: Some("screener-1".into()),
            correction_id: Some(CorrectionId::parse("CORR-003").unwrap()),
            execution_id: Some(ExecutionId::parse("EXEC-20260220124341").unwrap()),
            mistake: "Scored too high.".into(),
            root_cause: "Mis-weighted criteria".into(),
            rule: "ALWAYS weigh system design separately.".into(),
            applies_when: "Senior backend roles.".into(),
            triggers: vec!["score too high".into()],
            tags: vec!["scoring".into()],
            tiers: Tiers {
                summary: "Weigh system design separately".into(),
                condition: "senior roles".into(),
                action: "weigh separately".into(),
                rationale: "coding ≠ design".into(),
                steps: vec!["check design".into(), "cap score".into()],
            },
            confidence: 0.96,
            source: LessonSource::Correction,
            status: LessonStatus::Approved,
            utility: UtilityStats {
                activations: 3,
                helped: 2,
                hurt: 1,
                baseline_runs: 4,
                utility: Some(0.33),
                last_applied_at: Some(at),
                bounds: Some([-0.12, 0.48]),
                overall_bounds: Some([-0.2, 0.4]),
                stratum_bounds: vec![StratumBounds {
                    task_type: "backend roles senior".into(),
                    runs: 3,
                    baseline_runs: 4,
                    bounds: [-0.12, 0.48],
                    overall_bounds: [-0.5, 0.1],
                }],
            },
            links: vec![LessonLink {
                kind: LinkKind::Conflicts,
                target: LessonId::parse("REFL-001").unwrap(),
            }],
            validated_by_test: true,
            generated_test_ids: vec!["TEST-1".into()],
            merged_from: vec![CorrectionId::parse("CORR-004").unwrap()],
            created_at: at,
            updated_at: at,
            extra,
        });
    }

    #[test]
    fn only_approved_and_auto_trial_are_retrievable() {
        for status in LessonStatus::ALL {
            let review = status.is_retrievable(CurationMode::Review);
            let auto = status.is_retrievable(CurationMode::Auto);
            assert_eq!(review, status == LessonStatus::Approved, "{status:?}");
            assert_eq!(
                auto,
                matches!(status, LessonStatus::Approved | LessonStatus::Trial),
                "{status:?}"
            );
            assert_eq!(LessonStatus::parse(status.as_str()).unwrap(), status);
        }
    }
}
