//! Learning lessons that already exist: an agent's reflections, a team's runbook, in bulk.
//!
//! Each line is taken the way a correction is: a failed execution recording the task (and what
//! failed, as its output) and a correction carrying the lesson's text, distilled and curated
//! exactly as `correct` does. That path, rather than a lesson stored directly, is chosen so an
//! imported lesson is like any other: it has a run and a correction behind it (what `lessons
//! show` and purge follow), its run counts as a corrected failure when utility is measured, the
//! same duplicate, conflict and supersession checks place it among the skill's lessons, and its
//! status follows the curation mode and who wrote it (the credential, never the file). The
//! model proposer is not asked: the text already is a lesson, and rewriting thousands of them
//! through a model is a cost the caller did not choose.
//!
//! Every line is validated before anything is stored, so a bad file stores nothing and its
//! error names the line and field. Lines are then written in batches of [`BATCH`], each in one
//! transaction: the batch is curated against the store's lessons and those earlier lines of
//! the batch made, and placed again from fresh reads when another writer changed a lesson it
//! touches. A line's identity is a hash of its content, kept in the `extra` of its execution,
//! correction and lesson (`learned_hash`): a line already learned in the scope is skipped, so
//! the same file twice stores nothing new, and an import cut short can simply be run again.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tracing::instrument;

use crate::curate::{Known, LIVE, PLACE_ATTEMPTS, Placement, correction_recorded, lesson_created};
use crate::distill::holds_a_rule;
use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::limits;
use lore_core::model::{AuthorKind, Correction, Execution, Lesson, LessonStatus, Outcome};
use lore_core::ports::store::{LessonUpdate, OnDuplicate, Record};
use lore_core::scope::SkillPath;
use lore_core::supersession::Profile;
use lore_core::wording::{self, Place};

/// Lines written in one transaction.
pub const BATCH: usize = 500;

/// The key, in each record's `extra`, of the line's content hash.
pub const LEARNED_HASH: &str = "learned_hash";

const FIELDS: &[&str] = &["skill", "task", "failed", "lesson", "fingerprint", "tags"];

/// One lesson to learn, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct LessonLine {
    /// Where it came from (1-based), for messages.
    pub line: usize,
    /// The skill it belongs to.
    pub skill: SkillPath,
    /// What was being done.
    pub task: String,
    /// What failed, if said.
    pub failed: Option<String>,
    /// The lesson's text: a rule someone can follow.
    pub lesson: String,
    /// An error fingerprint the lesson answers, if any.
    pub fingerprint: Option<String>,
    /// Tags for the lesson.
    pub tags: Vec<String>,
}

impl LessonLine {
    /// The line's identity: a hash of its content (trimmed), whatever its place in the file.
    pub fn hash(&self) -> String {
        let canonical = json!([
            self.skill.as_str(),
            self.task.trim(),
            self.failed.as_deref().map(str::trim),
            self.lesson.trim(),
            self.fingerprint,
            self.tags,
        ]);
        format!("{:032x}", fnv1a_128(canonical.to_string().as_bytes()))
    }
}

fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, b| (h ^ u128::from(*b)).wrapping_mul(PRIME))
}

/// Parses JSON lines (one object a line; blank lines skipped), validating each.
///
/// # Errors
/// [`Error::Invalid`] for the first bad line, as `line 3: lesson: must not be empty`; a file
/// with no lines at all is invalid too.
pub fn parse_jsonl(text: &str) -> Result<Vec<LessonLine>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = wording::parse_json(raw.as_bytes(), Place::Line)
            .map_err(|refused| Error::invalid(format!("line {}", i + 1), refused))?;
        out.push(parse_value(i + 1, "line", &value)?);
    }
    non_empty(out)
}

/// Validates a list of lesson objects (a JSON array body, an MCP tool's list); items are
/// numbered from 1 in messages (`item 2: skill: …`).
///
/// # Errors
/// [`Error::Invalid`] for the first bad item, or for an empty list.
pub fn parse_items(items: &[Value]) -> Result<Vec<LessonLine>> {
    let lines = items
        .iter()
        .enumerate()
        .map(|(i, v)| parse_value(i + 1, "item", v))
        .collect::<Result<Vec<_>>>()?;
    non_empty(lines)
}

fn non_empty(lines: Vec<LessonLine>) -> Result<Vec<LessonLine>> {
    if lines.is_empty() {
        return Err(Error::invalid("lessons", "no lessons to learn"));
    }
    Ok(lines)
}

fn parse_value(n: usize, noun: &str, value: &Value) -> Result<LessonLine> {
    let at = |field: &str| format!("{noun} {n}: {field}");
    let bad = |field: &str, why: String| Error::invalid(at(field), why);
    let Some(object) = value.as_object() else {
        return Err(Error::invalid(
            format!("{noun} {n}"),
            "must be a JSON object with skill, task and lesson",
        ));
    };
    if let Some(key) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(bad(
            key,
            format!("is not a field; the fields are {}", FIELDS.join(", ")),
        ));
    }
    let text = |field: &str, required: bool| -> Result<Option<String>> {
        match object.get(field) {
            None | Some(Value::Null) if required => Err(bad(field, "is required".into())),
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(bad(field, "must not be empty".into()))
            }
            Some(Value::String(s)) => {
                limits::text(field, s).map_err(|e| bad(field, reason(e)))?;
                Ok(Some(s.trim().to_owned()))
            }
            Some(_) => Err(bad(field, "must be a string".into())),
        }
    };
    let skill = text("skill", true)?.unwrap_or_default();
    let skill = SkillPath::parse(&skill).map_err(|e| bad("skill", reason(e)))?;
    let task = text("task", true)?.unwrap_or_default();
    let lesson = text("lesson", true)?.unwrap_or_default();
    if !holds_a_rule(&lesson) {
        return Err(bad(
            "lesson",
            "holds no rule: say what should be done instead".into(),
        ));
    }
    let tags = match object.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|t| match t {
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
                _ => Err(bad("tags", "must be a list of non-empty strings".into())),
            })
            .collect::<Result<_>>()?,
        Some(_) => return Err(bad("tags", "must be a list of strings".into())),
    };
    Ok(LessonLine {
        line: n,
        skill,
        task,
        failed: text("failed", false)?,
        lesson,
        fingerprint: text("fingerprint", false)?,
        tags,
    })
}

/// The message of a validation error, without the field the caller names itself.
fn reason(err: Error) -> String {
    match err {
        Error::Invalid { why, .. } => why,
        other => other.to_string(),
    }
}

/// What became of one line.
#[derive(Clone, Debug, Serialize)]
pub struct LearnedLine {
    /// The line (or item) number.
    pub line: usize,
    /// `learned` (a new lesson), `merged` (into an existing lesson it duplicates) or
    /// `already` (this line was learned before; nothing stored).
    pub outcome: LineOutcome,
    /// The lesson that holds it (none for `already`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<LessonId>,
    /// That lesson's state after the import.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<LessonStatus>,
}

/// What became of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineOutcome {
    /// A new lesson.
    Learned,
    /// Merged into an existing lesson it duplicates.
    Merged,
    /// Learned by an earlier import (or an earlier line of this one); nothing stored.
    Already,
}

/// What a bulk learn did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LearnReport {
    /// Lines read.
    pub lines: usize,
    /// New lessons.
    pub learned: usize,
    /// Lines merged into an existing lesson.
    pub merged: usize,
    /// Lines learned before, skipped.
    pub already: usize,
    /// New lessons by state.
    pub statuses: BTreeMap<String, usize>,
    /// Guardrail bullets written.
    pub guardrails: usize,
    /// Each line, in order.
    pub results: Vec<LearnedLine>,
}

/// One batch on its way to the store.
#[derive(Default)]
struct Batch {
    records: Vec<Record>,
    /// New lessons, in the order made, with their correction.
    fresh: Vec<(Lesson, Correction)>,
    /// Older lessons changed, by ID: the first read's `updated_at`, the state now.
    touched: BTreeMap<LessonId, LessonUpdate>,
    /// Each skill's live lessons as this batch sees them.
    live: HashMap<SkillPath, LiveSet>,
    /// Per line: merged or new, and the lesson's ID.
    placed: Vec<(usize, LineOutcome, LessonId)>,
}

impl Batch {
    /// Applies an update the curation planned, to a lesson of this batch or an older one.
    fn apply(&mut self, update: LessonUpdate) {
        let after = update.lesson.clone();
        if let Some((fresh, _)) = self.fresh.iter_mut().find(|(l, _)| l.id == after.id) {
            *fresh = after.clone();
            self.records.push(Record::Audit(update.audit));
        } else if let Some(first) = self.touched.get_mut(&after.id) {
            first.lesson = after.clone();
            self.records.push(Record::Audit(update.audit));
        } else {
            self.touched.insert(after.id.clone(), update);
        }
        self.see(after);
    }

    /// Makes `lesson`'s current state what later lines are compared with.
    fn see(&mut self, lesson: Lesson) {
        let live = self.live.entry(lesson.skill.clone()).or_default();
        live.see(lesson);
    }
}

/// The most live lessons one imported line is compared with. Comparing each line with every
/// lesson before it made an import of n lines on one subject n²/2 comparisons; these are the
/// lessons sharing its rarest words, the newest first, plus any with its very rule.
pub const MAX_COMPARED: usize = 256;

/// A skill's live lessons as a batch sees them, found by the words their profiles hold.
#[derive(Default)]
struct LiveSet {
    /// Each lesson seen, in the order first seen; `None` once it is no longer live.
    slots: Vec<Option<Known>>,
    by_id: HashMap<LessonId, usize>,
    /// The slots whose profile held a word (a slot may stay listed after its lesson changed;
    /// candidates are compared in full, so a stale entry costs one comparison).
    postings: HashMap<String, Vec<usize>>,
    by_rule: HashMap<String, Vec<usize>>,
}

impl LiveSet {
    /// Makes `lesson`'s current state what later lines are compared with.
    fn see(&mut self, lesson: Lesson) {
        let live = LIVE.contains(&lesson.status);
        let slot = match self.by_id.get(&lesson.id) {
            Some(&slot) => slot,
            None if !live => return,
            None => {
                self.slots.push(None);
                self.by_id.insert(lesson.id.clone(), self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        if !live {
            self.slots[slot] = None;
            return;
        }
        let known = Known::new(lesson);
        for word in known.profile.words() {
            let list = self.postings.entry(word.to_owned()).or_default();
            if list.last() != Some(&slot) {
                list.push(slot);
            }
        }
        let same = self
            .by_rule
            .entry(known.profile.rule().to_owned())
            .or_default();
        if same.last() != Some(&slot) {
            same.push(slot);
        }
        self.slots[slot] = Some(known);
    }

    /// The live lessons `profile` is compared with, oldest first: every one with its rule, then
    /// up to [`MAX_COMPARED`] sharing its words, the rarest words first, newest first in each.
    fn candidates(&self, profile: &Profile) -> Vec<&Known> {
        let mut chosen: BTreeSet<usize> = self
            .by_rule
            .get(profile.rule())
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let mut lists: Vec<&Vec<usize>> = profile
            .words()
            .filter_map(|w| self.postings.get(w))
            .collect();
        lists.sort_by_key(|l| l.len());
        'words: for list in lists {
            for &slot in list.iter().rev() {
                if chosen.len() >= MAX_COMPARED {
                    break 'words;
                }
                chosen.insert(slot);
            }
        }
        chosen
            .into_iter()
            .filter_map(|slot| self.slots[slot].as_ref())
            .collect()
    }
}

impl Engine {
    /// Learns each of `lines` as a correction of a failed run of its task, in batches of
    /// [`BATCH`], skipping lines learned before.
    ///
    /// # Errors
    /// [`Error::Forbidden`] when a line's skill lies outside the scope (naming the line; then
    /// nothing is stored), [`Error::Invalid`] for a line over a limit, store failures (batches
    /// already written stay; running the import again completes it).
    #[instrument(skip_all, fields(lines = lines.len()))]
    pub fn learn_lessons(
        &self,
        lines: &[LessonLine],
        author_kind: AuthorKind,
        author: Option<&str>,
    ) -> Result<LearnReport> {
        for line in lines {
            self.scope.check_write(&line.skill).map_err(|e| match e {
                Error::Forbidden(why) => Error::Forbidden(format!("line {}: {why}", line.line)),
                other => other,
            })?;
        }
        let mut known = self.learned_hashes(lines)?;
        let mut report = LearnReport {
            lines: lines.len(),
            ..LearnReport::default()
        };
        let mut todo = Vec::new();
        for line in lines {
            if known.insert(line.hash()) {
                todo.push(line);
            } else {
                report.already += 1;
                report.results.push(LearnedLine {
                    line: line.line,
                    outcome: LineOutcome::Already,
                    lesson: None,
                    status: None,
                });
            }
        }
        let actor = self.actor(author);
        for chunk in todo.chunks(BATCH) {
            self.learn_batch(chunk, author_kind, author, &actor, &mut report)?;
        }
        report.results.sort_by_key(|r| r.line);
        Ok(report)
    }

    /// The hashes of lines already learned in the skills `lines` name.
    fn learned_hashes(&self, lines: &[LessonLine]) -> Result<HashSet<String>> {
        let skills: HashSet<&SkillPath> = lines.iter().map(|l| &l.skill).collect();
        let mut known = HashSet::new();
        for skill in skills {
            let filter = lore_core::ports::store::ListFilter::skill(&self.scope, skill);
            for correction in self.store.corrections(&filter)? {
                if let Some(Value::String(h)) = correction.extra.get(LEARNED_HASH) {
                    known.insert(h.clone());
                }
            }
        }
        Ok(known)
    }

    fn learn_batch(
        &self,
        lines: &[&LessonLine],
        author_kind: AuthorKind,
        author: Option<&str>,
        actor: &str,
        report: &mut LearnReport,
    ) -> Result<()> {
        let mut attempt = 1;
        let batch = loop {
            let batch = self.plan_batch(lines, author_kind, author, actor)?;
            let updates: Vec<LessonUpdate> = batch.touched.values().cloned().collect();
            let mut records = batch.records.clone();
            records.extend(batch.fresh.iter().map(|(l, _)| Record::Lesson(l.clone())));
            match self
                .store
                .write_and_update(&records, OnDuplicate::Fail, &updates)
            {
                Ok(_) => break batch,
                Err(Error::Conflict(why)) if attempt < PLACE_ATTEMPTS => {
                    tracing::debug!(%why, attempt, "a lesson changed; placing the batch again");
                    attempt += 1;
                }
                Err(err) => return Err(err),
            }
        };
        self.finish_batch(batch, report);
        Ok(())
    }

    /// Distills and places every line of a batch; writes nothing.
    fn plan_batch(
        &self,
        lines: &[&LessonLine],
        author_kind: AuthorKind,
        author: Option<&str>,
        actor: &str,
    ) -> Result<Batch> {
        let at = self.now();
        let mut batch = Batch::default();
        for line in lines {
            let (execution, correction) = self.line_records(line, author_kind, author, at)?;
            let mut lesson = self.lesson_from(
                &correction,
                &execution.input,
                self.initial_status(author_kind),
                at,
            );
            lesson.triggers.extend(line.fingerprint.iter().cloned());
            for tag in &line.tags {
                if !lesson.tags.contains(tag) {
                    lesson.tags.push(tag.clone());
                }
            }
            lesson.extra.insert(LEARNED_HASH.into(), json!(line.hash()));
            limits::lesson(&lesson).map_err(|e| at_line(line.line, e))?;
            if !batch.live.contains_key(&line.skill) {
                let live = self.live_lessons(&line.skill)?;
                let mut set = LiveSet::default();
                live.into_iter().for_each(|l| set.see(l));
                batch.live.insert(line.skill.clone(), set);
            }
            let candidates = batch.live[&line.skill].candidates(&Profile::of(&lesson));
            batch.records.push(Record::Execution(execution));
            batch.records.push(correction_recorded(
                &correction,
                actor,
                at,
                "correction recorded from a learned lesson",
            ));
            match self.place_among(lesson, &correction, &candidates)? {
                Placement::Merged { update, .. } => {
                    batch
                        .placed
                        .push((line.line, LineOutcome::Merged, update.lesson.id.clone()));
                    batch.apply(*update);
                }
                Placement::New {
                    lesson,
                    updates,
                    report,
                } => {
                    batch
                        .records
                        .push(lesson_created(&lesson, &correction, &report, actor, at));
                    batch
                        .placed
                        .push((line.line, LineOutcome::Learned, lesson.id.clone()));
                    batch.see((*lesson).clone());
                    batch.fresh.push((*lesson, correction.clone()));
                    updates.into_iter().for_each(|u| batch.apply(u));
                }
            }
            batch.records.push(Record::Correction(correction));
        }
        Ok(batch)
    }

    /// The failed run and the correction one line stands for.
    fn line_records(
        &self,
        line: &LessonLine,
        author_kind: AuthorKind,
        author: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(Execution, Correction)> {
        let mut extra = Map::new();
        extra.insert(LEARNED_HASH.into(), json!(line.hash()));
        let output = line.failed.as_ref().map_or(Value::Null, |f| json!(f));
        let execution = Execution {
            id: ExecutionId::generate(at),
            skill: line.skill.clone(),
            timestamp: at,
            input: json!({ "task": line.task }),
            output: output.clone(),
            outcome: Outcome::Failure,
            cost_usd: None,
            latency_ms: None,
            model: None,
            agent: self.scope.agent.clone(),
            session: None,
            lessons_shown: Vec::new(),
            extra: extra.clone(),
        };
        limits::execution(&execution).map_err(|e| at_line(line.line, e))?;
        let correction = Correction {
            id: CorrectionId::generate(at),
            execution_id: execution.id.clone(),
            skill: line.skill.clone(),
            timestamp: at,
            original_output: output,
            text: line.lesson.clone(),
            author_kind,
            author: self
                .principal
                .clone()
                .or_else(|| author.map(str::to_owned))
                .or_else(|| self.scope.agent.clone()),
            extra,
        };
        limits::correction(&correction).map_err(|e| at_line(line.line, e))?;
        Ok((execution, correction))
    }

    /// After a batch is stored: vectors for its new lessons, their guardrails, the report.
    fn finish_batch(&self, batch: Batch, report: &mut LearnReport) {
        let fresh: Vec<&Lesson> = batch.fresh.iter().map(|(l, _)| l).collect();
        self.embed_written(&fresh);
        for (lesson, correction) in &batch.fresh {
            *report
                .statuses
                .entry(lesson.status.as_str().to_owned())
                .or_default() += 1;
            if lesson.status != LessonStatus::Sensitive && self.skills.is_some() {
                let (written, _) = self.write_guardrail(lesson, correction);
                report.guardrails += usize::from(written.is_some());
            }
        }
        let status_of = |id: &LessonId| {
            batch
                .fresh
                .iter()
                .map(|(l, _)| l)
                .chain(batch.touched.values().map(|u| &u.lesson))
                .find(|l| &l.id == id)
                .map(|l| l.status)
        };
        for (line, outcome, id) in batch.placed.iter().cloned() {
            match outcome {
                LineOutcome::Learned => report.learned += 1,
                _ => report.merged += 1,
            }
            report.results.push(LearnedLine {
                line,
                outcome,
                status: status_of(&id),
                lesson: Some(id),
            });
        }
    }
}

fn at_line(line: usize, err: Error) -> Error {
    match err {
        Error::Invalid { what, why } => Error::invalid(format!("line {line}: {what}"), why),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            (
                r#"{"skill":"a/b","task":"t","lesson":""}"#,
                "line 1: lesson",
            ),
            (r#"{"skill":"a/b","lesson":"Always x."}"#, "line 1: task"),
            (
                r#"{"skill":"nope","task":"t","lesson":"Use UTC."}"#,
                "line 1: skill",
            ),
            (
                r#"{"skill":"a/b","task":"t","lesson":"x"}"#,
                "line 1: lesson",
            ),
            (
                r#"{"skill":"a/b","task":"t","lesson":"Use UTC.","tag":[]}"#,
                "line 1: tag",
            ),
            (
                r#"{"skill":"a/b","task":"t","lesson":"Use UTC.","tags":"a"}"#,
                "line 1: tags",
            ),
            ("[1]", "line 1"),
            ("{", "line 1"),
        ];
        for (text, field) in cases {
            let err = parse_jsonl(&format!("\n{text}")).unwrap_err().to_string();
            let field = field.replace("line 1", "line 2");
            assert!(err.contains(&field), "{text}: {err}");
        }
        let err = parse_jsonl("\n\n").unwrap_err().to_string();
        assert!(err.contains("no lessons"), "{err}");
    }

    #[test]
    fn a_line_is_known_by_its_content() {
        let text = r#"{"skill":"a/b","task":"t","lesson":"Use UTC.","tags":["time"]}"#;
        let a = parse_jsonl(text).unwrap();
        let b = parse_jsonl(&format!("\n{text}")).unwrap();
        assert_eq!(a[0].hash(), b[0].hash());
        let other = parse_jsonl(&text.replace("UTC", "GMT")).unwrap();
        assert_ne!(a[0].hash(), other[0].hash());
    }
}
