//! Digests (seed 004's wiki) and evaluation runs (seed 004's training loop).
//!
//! A digest is a skill's curated memory summarized as markdown: distilled from its approved
//! lessons and decisions, stored with the list of what it was made from and a hash of their IDs
//! and revisions, so periodic upkeep makes it again only when one of them changed. It is derived
//! data: the lessons and decisions stay the source of truth, and a digest never holds text they
//! did not (sensitive text is left out when it is made and checked again when it is read).
//!
//! An evaluation set is a skill's questions with the answers a good memory should give; a run
//! grades the memory's answers to every question of a set and is kept, so a team sees over
//! time whether what its memory learned made answers better.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::id::{DigestId, EvalRunId};
use crate::scope::SkillPath;

/// What kind of record a digest was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DigestSourceKind {
    /// An approved lesson.
    Lesson,
    /// An approved decision.
    Decision,
}

/// One record a digest was made from, at the revision it was read.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DigestSource {
    /// Lesson or decision.
    pub kind: DigestSourceKind,
    /// Its ID.
    pub id: String,
    /// Its revision: when it last changed.
    pub revision: DateTime<Utc>,
}

/// How a digest's text was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DigestMethod {
    /// Offline: the sources' own sentences, selected and grouped.
    Extractive,
    /// Summarized by a model.
    Model {
        /// The model's name.
        model: String,
    },
}

/// A skill's digest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Digest {
    /// Unique ID; a new one each time the digest is made again.
    pub id: DigestId,
    /// The skill (the digest's topic).
    pub skill: SkillPath,
    /// The summary, as markdown.
    pub markdown: String,
    /// What it was made from, sorted.
    pub sources: Vec<DigestSource>,
    /// SHA-256 (hex) over the sources' kinds, IDs and revisions: the same sources give the same
    /// hash, so upkeep skips a digest whose hash has not moved.
    pub source_hash: String,
    /// How its text was made.
    pub method: DigestMethod,
    /// Why a configured model was not used, when it failed and the extractive text stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_error: Option<String>,
    /// Who made it: the credential that asked, or upkeep.
    pub generated_by: String,
    /// When it was made.
    pub generated_at: DateTime<Utc>,
}

/// How an answer is graded against the expected one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grader {
    /// The expected text appears in the answer (case and spacing aside).
    #[default]
    Contains,
    /// One line of the answer is the expected text (case, spacing and quoting aside).
    Exact,
    /// A model judges whether the answer gives the expected one; needs a configured model.
    Judge,
}

impl Grader {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Grader::Contains => "contains",
            Grader::Exact => "exact",
            Grader::Judge => "judge",
        }
    }

    /// Parses `contains`, `exact` or `judge`.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] naming the accepted values.
    pub fn parse(raw: &str) -> crate::Result<Self> {
        match raw {
            "contains" => Ok(Grader::Contains),
            "exact" => Ok(Grader::Exact),
            "judge" => Ok(Grader::Judge),
            other => Err(crate::Error::invalid(
                "grader",
                format!("{other:?} is not one of contains, exact, judge"),
            )),
        }
    }
}

/// One question of an evaluation set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalQuestion {
    /// The question, as an agent would ask it.
    pub question: String,
    /// What a good answer gives.
    pub expected: String,
    /// How the answer is graded.
    #[serde(default)]
    pub grader: Grader,
}

/// A skill's named evaluation set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalSet {
    /// The skill whose memory it tests.
    pub skill: SkillPath,
    /// Its name, unique within the skill.
    pub name: String,
    /// Its questions, in order.
    pub questions: Vec<EvalQuestion>,
    /// Who defined it last.
    pub defined_by: String,
    /// When it was last defined.
    pub updated_at: DateTime<Utc>,
}

/// What made a run happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalTrigger {
    /// Someone asked for it.
    Manual,
    /// Upkeep, because the skill's memory changed since the set's last run.
    Maintain,
}

/// One question's grade in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalGrade {
    /// The question.
    pub question: String,
    /// The expected answer.
    pub expected: String,
    /// The grader used.
    pub grader: Grader,
    /// Whether the answer passed.
    pub passed: bool,
    /// The answer's first characters, for a person reading the run.
    pub answer: String,
    /// The IDs of the memory items the answer was made from.
    pub items: Vec<String>,
    /// Why it failed, when the grader could not grade (a judge's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A graded run of one set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalRun {
    /// Unique ID.
    pub id: EvalRunId,
    /// The set's skill.
    pub skill: SkillPath,
    /// The set's name.
    pub set: String,
    /// What an answer was: `context` (the layered context, offline) or `model:NAME`.
    pub answerer: String,
    /// Each question's grade, in the set's order.
    pub grades: Vec<EvalGrade>,
    /// How many passed.
    pub passed: usize,
    /// How many were asked.
    pub total: usize,
    /// `passed / total`.
    pub score: f64,
    /// SHA-256 (hex) over the skill's approved lessons and decisions (IDs and revisions) at the
    /// run: the memory state the grades belong to.
    pub memory_hash: String,
    /// What made it run.
    pub trigger: EvalTrigger,
    /// Who ran it.
    pub run_by: String,
    /// When.
    pub run_at: DateTime<Utc>,
}
