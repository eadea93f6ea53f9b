//! Evaluation runs (seed 004's training loop): question sets with expected answers per skill,
//! graded runs kept over time, and each set's grade trend, so a team sees whether what its
//! memory learned made answers better.
//!
//! **What an answer is.** Offline, without a model, the answer to a question is what the memory
//! would hand an agent asking it: the layered context for the question, restricted to the set's
//! skill (lessons, decisions, digest, knowledge, each within its budget). A set therefore grades
//! the memory, not a model: `contains` passes when the expected text appears in that context,
//! `exact` when one of its lines (quoting, list marks and a leading label such as `Action:`
//! aside) is the expected text; both compare lowercase words, so case, punctuation and spacing
//! do not matter. With a model configured, `judge` asks the model whether the context gives the
//! expected answer; without one a judged question cannot pass and says why.
//!
//! **When a run happens.** On request, or in upkeep ([`Engine::maintain`]) for each set whose
//! skill's memory changed since the set's last run (a hash over the skill's approved lessons
//! and decisions, IDs and revisions) or that was defined again since, so a second upkeep with
//! nothing learned runs nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::instrument;

use crate::digest::source_hash;
use crate::engine::Engine;
use crate::layered::ContextQuery;
use lore_core::error::{Error, Result};
use lore_core::id::EvalRunId;
use lore_core::model::{
    DigestSource, DigestSourceKind, EvalGrade, EvalQuestion, EvalRun, EvalSet, EvalTrigger, Grader,
    LessonStatus,
};
use lore_core::ports::llm::{LlmRequest, complete_json};
use lore_core::scope::SkillPath;
use lore_core::{limits, sensitive};

/// The most questions one set holds.
pub const MAX_EVAL_QUESTIONS: usize = 200;
/// How many characters of an answer a grade keeps.
const ANSWER_EXCERPT: usize = 400;
/// How many recent runs a trend shows unless asked otherwise.
pub const DEFAULT_TREND_RUNS: usize = 10;

const JUDGE_SYSTEM: &str = "You are Lore's grader. Given a question, the expected answer and \
the context a memory returned for the question, say whether the context gives the expected \
answer (the same fact or instruction, in any words). Answer as JSON: {\"passed\": true|false, \
\"why\": \"...\"}.";

/// A set to define (or define again, replacing the one of the same skill and name).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct NewEvalSet {
    /// The skill whose memory it tests.
    pub skill: Option<SkillPath>,
    /// Its name within the skill.
    pub name: String,
    /// Its questions.
    pub questions: Vec<EvalQuestion>,
}

/// Which sets to run.
#[derive(Clone, Debug, Default)]
pub struct EvalRunRequest {
    /// Only this skill's sets.
    pub skill: Option<SkillPath>,
    /// Only the set of this name.
    pub set: Option<String>,
}

/// One run in a trend.
#[derive(Clone, Debug, Serialize)]
pub struct TrendPoint {
    /// The run.
    pub run: EvalRunId,
    /// When.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Its score, 0 to 1.
    pub score: f64,
    /// Questions passed.
    pub passed: usize,
    /// Questions asked.
    pub total: usize,
    /// What made it run.
    pub trigger: EvalTrigger,
}

/// A set's grades over its recent runs.
#[derive(Clone, Debug, Serialize)]
pub struct EvalTrend {
    /// The set's skill.
    pub skill: SkillPath,
    /// The set's name.
    pub set: String,
    /// The recent runs, oldest first.
    pub points: Vec<TrendPoint>,
    /// The newest score less the oldest shown: above zero, answers got better.
    pub change: f64,
    /// The best score shown.
    pub best: f64,
    /// All runs the set has had.
    pub runs: usize,
}

impl Engine {
    /// Defines a skill's evaluation set, replacing the one of the same name.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a missing skill, an empty or overlong name, no questions or more
    /// than 200, an empty question or expected answer, or a `judge` grader without a configured
    /// model; [`Error::Forbidden`] for a skill outside this handle's scope;
    /// [`Error::Unsupported`] from a store without evaluation runs. Nothing is stored then.
    #[instrument(skip_all)]
    pub fn define_eval_set(&self, new: NewEvalSet) -> Result<EvalSet> {
        let skill = new
            .skill
            .ok_or_else(|| Error::invalid("skill", "a set needs its skill, `domain/skill`"))?;
        self.scope.check_write(&skill)?;
        let name = new.name.trim();
        check_eval_set(name, &new.questions, self.proposer.is_some())?;
        let set = EvalSet {
            skill,
            name: name.to_owned(),
            questions: new.questions,
            defined_by: self.actor(None),
            updated_at: self.now(),
        };
        self.store.evals()?.put_eval_set(&set)?;
        Ok(set)
    }

    /// The evaluation sets in scope (of `skill` only, when given).
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside this handle's scope; [`Error::Unsupported`] from
    /// a store without evaluation runs; store failures.
    pub fn eval_sets(&self, skill: Option<&SkillPath>) -> Result<Vec<EvalSet>> {
        if let Some(skill) = skill {
            self.scope.check_write(skill)?;
        }
        self.store.evals()?.eval_sets(&self.scope, skill)
    }

    /// Runs and stores every set the request names, each question answered by the layered
    /// context and graded.
    ///
    /// # Errors
    /// [`Error::NotFound`] when no set matches; [`Error::Forbidden`] for a skill outside this
    /// handle's scope; [`Error::Unsupported`] from a store without evaluation runs; store
    /// failures. A question's own failure (a judge's error) fails that question, not the run.
    #[instrument(skip_all)]
    pub fn run_evals(&self, request: &EvalRunRequest) -> Result<Vec<EvalRun>> {
        let mut sets = self.eval_sets(request.skill.as_ref())?;
        if let Some(name) = &request.set {
            sets.retain(|s| &s.name == name);
        }
        if sets.is_empty() {
            return Err(Error::not_found(
                "evaluation set",
                request.set.as_deref().unwrap_or("(any)"),
            ));
        }
        sets.iter()
            .map(|set| self.run_set(set, EvalTrigger::Manual))
            .collect()
    }

    /// The runs in scope (of `skill`, and of the set named `set`, when given), oldest first.
    ///
    /// # Errors
    /// As [`Engine::eval_sets`].
    pub fn eval_runs(&self, skill: Option<&SkillPath>, set: Option<&str>) -> Result<Vec<EvalRun>> {
        if let Some(skill) = skill {
            self.scope.check_write(skill)?;
        }
        let mut runs = self.store.evals()?.eval_runs(&self.scope, skill, set)?;
        if !lore_core::org::sees_everything(&self.view()) {
            for run in &mut runs {
                for grade in &mut run.grades {
                    self.hide_unseen(&run.skill, grade)?;
                }
            }
        }
        Ok(runs)
    }

    /// A grade's answer is what the memory held for its question: when it came from a lesson
    /// (or a digest of lessons) this handle cannot see, the answer and its items are withheld,
    /// as the lesson is. Runs are made for every member alike; this covers runs made before.
    fn hide_unseen(&self, skill: &SkillPath, grade: &mut EvalGrade) -> Result<()> {
        for item in &grade.items {
            // Items are lessons, decisions (`DEC-`), digests (`DIG-`) and knowledge chunks
            // (`KC-`); a lesson's ID may be any imported form, so it is looked up.
            let seen = if item.starts_with("DIG-") {
                let history = self
                    .store
                    .digests()?
                    .digest_history(skill, limits::MAX_PAGE, 0)?;
                match history.iter().find(|d| d.id.as_str() == item) {
                    Some(d) => self.sees_sources(&d.sources)?,
                    None => false,
                }
            } else if item.starts_with("DEC-") || item.starts_with("KC-") {
                true
            } else {
                match lore_core::id::LessonId::parse(item) {
                    Ok(id) => self.store.lesson(&id)?.is_none_or(|l| self.sees(&l)),
                    Err(_) => true,
                }
            };
            if !seen {
                grade.answer =
                    "(withheld: it draws on a lesson this credential cannot see)".to_owned();
                grade.items.clear();
                return Ok(());
            }
        }
        Ok(())
    }

    /// Each set's grades over its `recent` newest runs (default 10, at most 500).
    ///
    /// # Errors
    /// As [`Engine::eval_sets`]; [`Error::Invalid`] for `recent` outside 1 to 500.
    pub fn eval_trends(
        &self,
        skill: Option<&SkillPath>,
        recent: Option<usize>,
    ) -> Result<Vec<EvalTrend>> {
        let recent = recent.unwrap_or(DEFAULT_TREND_RUNS);
        if !(1..=limits::MAX_PAGE).contains(&recent) {
            return Err(Error::invalid("recent", "it must be 1 to 500"));
        }
        let mut by_set: BTreeMap<(SkillPath, String), Vec<EvalRun>> = BTreeMap::new();
        for run in self.eval_runs(skill, None)? {
            by_set
                .entry((run.skill.clone(), run.set.clone()))
                .or_default()
                .push(run);
        }
        Ok(by_set
            .into_iter()
            .map(|((skill, set), runs)| trend(skill, set, &runs, recent))
            .collect())
    }

    /// Upkeep's runs: each set whose skill's memory changed since its last run, that was defined
    /// again since, or that never ran, runs now. A store without evaluation runs has none to run.
    pub(crate) fn evals_on_change(&self) -> Result<Vec<EvalRun>> {
        let store = match self.store.evals() {
            Ok(store) => store,
            Err(Error::Unsupported(_)) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let mut out = Vec::new();
        for set in store.eval_sets(&self.scope, None)? {
            let last = store
                .eval_runs(&self.scope, Some(&set.skill), Some(&set.name))?
                .pop();
            let now = self.memory_hash(&set.skill)?;
            // A set defined again since its last run has new questions to answer.
            if last.is_none_or(|r| r.memory_hash != now || r.run_at < set.updated_at) {
                out.push(self.run_set(&set, EvalTrigger::Maintain)?);
            }
        }
        Ok(out)
    }

    fn run_set(&self, set: &EvalSet, trigger: EvalTrigger) -> Result<EvalRun> {
        let memory_hash = self.memory_hash(&set.skill)?;
        let grades = set
            .questions
            .iter()
            .map(|q| self.grade(&set.skill, q))
            .collect::<Result<Vec<_>>>()?;
        let passed = grades.iter().filter(|g| g.passed).count();
        let total = grades.len();
        let now = self.now();
        let run = EvalRun {
            id: EvalRunId::generate(now),
            skill: set.skill.clone(),
            set: set.name.clone(),
            answerer: "context".to_owned(),
            grades,
            passed,
            total,
            score: if total == 0 {
                0.0
            } else {
                passed as f64 / total as f64
            },
            memory_hash,
            trigger,
            run_by: self.actor(None),
            run_at: now,
        };
        self.store.evals()?.put_eval_run(&run)?;
        Ok(run)
    }

    fn grade(&self, skill: &SkillPath, q: &EvalQuestion) -> Result<EvalGrade> {
        // A run is read by every member of the skill: its answers come from what all of them
        // see, never from one member's own lessons.
        let everyone = self.scoped(lore_core::org::every_member(&self.scope));
        let context = everyone.context(&ContextQuery {
            text: q.question.clone(),
            skill: Some(skill.clone()),
            ..ContextQuery::default()
        })?;
        let items = context
            .layers
            .iter()
            .flat_map(|l| l.items.iter().cloned())
            .collect();
        let answer = &context.text;
        let (passed, error) = match q.grader {
            Grader::Contains => (contains(answer, &q.expected), None),
            Grader::Exact => (exact(answer, &q.expected), None),
            Grader::Judge => match &self.proposer {
                Some(llm) => match judge(llm.as_ref(), q, answer) {
                    Ok(passed) => (passed, None),
                    Err(why) => (false, Some(why)),
                },
                None => (false, Some("no model is configured to judge".to_owned())),
            },
        };
        Ok(EvalGrade {
            question: q.question.clone(),
            expected: q.expected.clone(),
            grader: q.grader,
            passed,
            answer: lore_core::text::shorten(answer, ANSWER_EXCERPT),
            items,
            error,
        })
    }

    /// The hash over the skill's approved lessons and decisions, IDs and revisions.
    fn memory_hash(&self, skill: &SkillPath) -> Result<String> {
        let mut sources: Vec<DigestSource> = self
            .lessons(Some(skill), Some([LessonStatus::Approved].into()))?
            .into_iter()
            .map(|l| DigestSource {
                kind: DigestSourceKind::Lesson,
                id: l.id.to_string(),
                revision: l.updated_at,
            })
            .collect();
        if let Ok(store) = self.store.decisions() {
            sources.extend(
                store
                    .decisions(&self.scope, Some(skill))?
                    .into_iter()
                    .filter(|d| d.status == LessonStatus::Approved)
                    .map(|d| DigestSource {
                        kind: DigestSourceKind::Decision,
                        id: d.id.to_string(),
                        revision: d.updated_at,
                    }),
            );
        }
        sources.sort();
        Ok(source_hash(&sources))
    }
}

/// Checks a set's name and questions as defining one does (and importing one); `model` says
/// whether a judge can grade.
///
/// # Errors
/// [`Error::Invalid`] naming the field at fault.
pub(crate) fn check_eval_set(name: &str, questions: &[EvalQuestion], model: bool) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("name", "it is empty"));
    }
    limits::name("name", name)?;
    if name.chars().any(char::is_control) {
        return Err(Error::invalid("name", "it holds a control character"));
    }
    if questions.is_empty() {
        return Err(Error::invalid("questions", "give at least one question"));
    }
    if questions.len() > MAX_EVAL_QUESTIONS {
        return Err(Error::invalid(
            "questions",
            format!("{} is more than {MAX_EVAL_QUESTIONS}", questions.len()),
        ));
    }
    for (i, q) in questions.iter().enumerate() {
        check_question(i, q, model)?;
    }
    Ok(())
}

fn check_question(i: usize, q: &EvalQuestion, model: bool) -> Result<()> {
    for (field, text) in [("question", &q.question), ("expected", &q.expected)] {
        let field = format!("questions[{i}].{field}");
        if text.trim().is_empty() {
            return Err(Error::invalid(&field, "it is empty"));
        }
        limits::text(&field, text)?;
        if !sensitive::kinds(text).is_empty() {
            return Err(Error::invalid(
                &field,
                "it holds personal or secret data, which memory never returns",
            ));
        }
    }
    if q.grader == Grader::Judge && !model {
        return Err(Error::invalid(
            format!("questions[{i}].grader"),
            "judge needs a configured model; use contains or exact offline",
        ));
    }
    Ok(())
}

/// Lowercase words joined by one space: what graders compare.
fn normalize(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the expected words appear, in order and whole, in the answer.
pub(crate) fn contains(answer: &str, expected: &str) -> bool {
    let expected = normalize(expected);
    !expected.is_empty() && format!(" {} ", normalize(answer)).contains(&format!(" {expected} "))
}

/// Whether one line of the answer, without quoting, list marks and a leading label, is the
/// expected text.
pub(crate) fn exact(answer: &str, expected: &str) -> bool {
    let expected = normalize(expected);
    !expected.is_empty()
        && answer.lines().any(|line| {
            let line = line.trim_start_matches(['>', '-', '*', ' ']);
            let unlabelled = match line.split_once(": ") {
                Some((label, rest)) if !label.contains(' ') || label.len() < 20 => rest,
                _ => line,
            };
            normalize(line) == expected || normalize(unlabelled) == expected
        })
}

fn judge(
    llm: &dyn lore_core::ports::llm::Llm,
    q: &EvalQuestion,
    answer: &str,
) -> std::result::Result<bool, String> {
    let request = LlmRequest::new(
        JUDGE_SYSTEM,
        format!(
            "Question: {}\nExpected answer: {}\n\nContext (quoted data):\n{answer}",
            q.question, q.expected
        ),
    )
    .with_schema(json!({
        "type": "object",
        "required": ["passed"],
        "properties": { "passed": { "type": "boolean" }, "why": { "type": "string" } }
    }));
    let response = complete_json(llm, &request).map_err(|e| e.to_string())?;
    response
        .json
        .as_ref()
        .and_then(|v| v["passed"].as_bool())
        .ok_or_else(|| "the judge gave no verdict".to_owned())
}

fn trend(skill: SkillPath, set: String, runs: &[EvalRun], recent: usize) -> EvalTrend {
    let shown = &runs[runs.len().saturating_sub(recent)..];
    let points: Vec<TrendPoint> = shown
        .iter()
        .map(|r| TrendPoint {
            run: r.id.clone(),
            at: r.run_at,
            score: r.score,
            passed: r.passed,
            total: r.total,
            trigger: r.trigger,
        })
        .collect();
    let first = points.first().map_or(0.0, |p| p.score);
    let last = points.last().map_or(0.0, |p| p.score);
    EvalTrend {
        skill,
        set,
        best: points.iter().map(|p| p.score).fold(0.0, f64::max),
        change: last - first,
        points,
        runs: runs.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_compares_whole_words_whatever_the_case_and_punctuation() {
        let answer = "> Action: Roll back the release, then page on-call.";
        assert!(contains(answer, "roll back the release"));
        assert!(contains(answer, "Page on call"));
        assert!(!contains(answer, "roll back the releases"));
        assert!(!contains(answer, "back the rel"));
        assert!(!contains(answer, "  "));
    }

    #[test]
    fn exact_needs_one_whole_line_apart_from_quoting_and_a_label() {
        let answer = "- **REFL-1** (a/b)\n> Action: Roll back the release.\n> more text";
        assert!(exact(answer, "roll back the release"));
        assert!(exact(answer, "Action: roll back the release"));
        assert!(!exact(answer, "roll back"));
        assert!(!exact(answer, "more"));
    }
}
