//! Lessons: list and read what Lore learned, learn lessons an agent already holds, and a
//! reviewer's edit, retirement and an admin's purge; every change is audited by the Engine.
//!
//! Lessons and their audit trails are answered redacted (the detector's findings masked) unless
//! a reviewer or admin asks with `raw`; each raw read leaves a `disclosed` audit entry naming
//! the credential.

use axum::http::StatusCode;
use lore_core::id::LessonId;
use lore_core::model::{AuditEntry, Lesson, LessonStatus, RecordKind};
use lore_core::wording::{self, Place};
use lore_core::{SkillPath, sensitive};
use lore_engine::{Attribution, Engine, LearnReport, LessonEdit, Page, PageRequest, PurgeReport};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Operation, Rest, Tool, Verb};
use crate::auth::Role;

/// The lesson operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<List>();
    each.one::<Get>();
    each.one::<Edit>();
    each.one::<Retire>();
    each.one::<Purge>();
    each.one::<Learn>();
}

impl Component for Page<Lesson> {
    const NAME: &'static str = "LessonPage";
}

impl Component for LearnReport {
    const NAME: &'static str = "LearnReport";
}

impl Component for PurgeReport {
    const NAME: &'static str = "LessonPurgeReport";
}

/// One lesson to learn, as the document describes it (the Engine reads the fields itself, so
/// that a bad item is named by its place in the list or its line).
#[derive(Debug)]
pub struct LessonLine;

impl Component for LessonLine {
    const NAME: &'static str = "LessonLine";
}

/// Refuses `raw` to a caller below reviewer: the text as written is for people who curate it.
fn allow_raw(role: Role, raw: bool) -> lore_core::Result<()> {
    if raw && role < Role::Reviewer {
        return Err(role.refusal(Role::Reviewer));
    }
    Ok(())
}

/// `lesson` as the caller may see it: masked, or as written with the read on record.
fn shown(engine: &Engine, lesson: Lesson, raw: bool, why: &str) -> lore_core::Result<Lesson> {
    if raw {
        engine.record_disclosure(RecordKind::Lesson, lesson.id.as_str(), why)?;
        return Ok(lesson);
    }
    Ok(sensitive::redact_lesson(&lesson))
}

/// The statuses a listing keeps: a list, or one text with the names separated by commas (as a
/// query string carries them).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Statuses {
    /// `["approved", "trial"]`.
    List(#[schemars(with = "Vec<Documented<LessonStatus>>")] Vec<String>),
    /// `approved,trial`.
    Text(String),
}

impl Statuses {
    fn parse(&self) -> lore_core::Result<std::collections::BTreeSet<LessonStatus>> {
        match self {
            Self::List(names) => crate::review::statuses(names.iter().map(String::as_str)),
            Self::Text(text) => crate::review::statuses(text.split(',')),
        }
    }
}

/// Which lessons to list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Only this skill's lessons, `domain/skill`; every skill the caller may read when omitted.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Only lessons in these states (`needs_review`, `trial`, `approved`, `rejected`,
    /// `suppressed`, `expired`, `one_time_exception`, `sensitive`, `superseded`, `archived`),
    /// as a list or separated by commas; all when omitted.
    #[serde(alias = "statuses")]
    status: Option<Statuses>,
    /// At most this many, 1 to 500; 50 when omitted, with `next_offset` when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
    /// Reviewers and admins: the text as written, each read on record.
    #[serde(default)]
    raw: bool,
}

/// `list_lessons`, `GET /v1/lessons`.
pub struct List;

impl Operation for List {
    type Input = ListInput;
    type Output = Described<Page<Lesson>>;
    const NAME: &'static str = "list_lessons";
    const SUMMARY: &'static str = "The learned lessons in the caller's scope, oldest first, a \
        page at a time, each with its status, rule and confidence; redacted unless raw.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/lessons");
    const TOOL: Option<Tool> = Some(Tool {
        name: "list_lessons",
        group: "lessons",
        title: "List lessons",
    });
    const ANSWER: &'static str = "A page of lessons.";

    fn allow(role: Role, input: &ListInput) -> lore_core::Result<()> {
        allow_raw(role, input.raw)
    }

    fn run(engine: &Engine, q: ListInput) -> lore_core::Result<Self::Output> {
        let statuses = q.status.as_ref().map(Statuses::parse).transpose()?;
        let request = PageRequest {
            limit: q.limit.unwrap_or(50),
            offset: q.offset.unwrap_or(0),
        };
        let page = engine.lessons_page(q.skill.as_ref(), statuses, request)?;
        let items = (page.items.into_iter())
            .map(|lesson| shown(engine, lesson, q.raw, "listed raw"))
            .collect::<lore_core::Result<_>>()?;
        Ok(Described(Page {
            items,
            next_offset: page.next_offset,
        }))
    }
}

/// The lesson to read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetInput {
    /// The lesson's ID (`L-…`).
    id: String,
    /// Reviewers and admins: the text as written, the read on record.
    #[serde(default)]
    raw: bool,
}

/// A lesson with its audit trail.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LessonWithAudit {
    /// The lesson.
    #[schemars(with = "Documented<Lesson>")]
    lesson: Lesson,
    /// Every change to it, oldest first, with who made it and why.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    audit: Vec<AuditEntry>,
}

/// `get_lesson`, `GET /v1/lessons/{id}`.
pub struct Get;

impl Operation for Get {
    type Input = GetInput;
    type Output = LessonWithAudit;
    const NAME: &'static str = "get_lesson";
    const SUMMARY: &'static str = "One lesson in full (rule, when it applies, the mistake, \
        status, confidence) with its audit trail.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/lessons/{id}");
    const TOOL: Option<Tool> = Some(Tool {
        name: "get_lesson",
        group: "loop",
        title: "Get a lesson",
    });
    const ANSWER: &'static str = "The lesson and its audit trail.";

    fn allow(role: Role, input: &GetInput) -> lore_core::Result<()> {
        allow_raw(role, input.raw)
    }

    fn run(engine: &Engine, q: GetInput) -> lore_core::Result<LessonWithAudit> {
        let id = LessonId::parse(&q.id)?;
        let lesson = shown(engine, engine.lesson(&id)?, q.raw, "read raw")?;
        let audit = engine.lesson_audit(&id)?;
        let audit = if q.raw {
            audit
        } else {
            audit.iter().map(sensitive::redact_audit).collect()
        };
        Ok(LessonWithAudit { lesson, audit })
    }
}

/// What to change in a lesson; a field left out stays as it is.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The lesson's ID (`L-…`).
    id: String,
    /// A new rule.
    rule: Option<String>,
    /// When the rule applies.
    applies_when: Option<String>,
    /// What went wrong.
    mistake: Option<String>,
    /// Why it went wrong.
    root_cause: Option<String>,
    /// How sure the rule is, 0 to 1.
    #[schemars(range(min = 0.0, max = 1.0))]
    confidence: Option<f64>,
    /// New tags, replacing the old ones.
    tags: Option<Vec<String>>,
    /// Why; the audit log keeps it with the credential that changed it.
    #[serde(default)]
    reason: String,
}

/// `edit_lesson`, `PATCH /v1/lessons/{id}`.
pub struct Edit;

impl Operation for Edit {
    type Input = EditInput;
    type Output = Described<Lesson>;
    const NAME: &'static str = "edit_lesson";
    const SUMMARY: &'static str = "Edit a lesson's text or numbers; audited with the fields \
        before and after. Needs the reviewer or admin role.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Patch,
        path: "/v1/lessons/{id}",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The edited lesson, redacted.";

    fn run(engine: &Engine, b: EditInput) -> lore_core::Result<Described<Lesson>> {
        let id = LessonId::parse(&b.id)?;
        let edit = LessonEdit {
            rule: b.rule,
            applies_when: b.applies_when,
            mistake: b.mistake,
            root_cause: b.root_cause,
            confidence: b.confidence,
            tags: b.tags,
        };
        let lesson = engine.edit_lesson(&id, edit, None, &b.reason)?;
        Ok(Described(sensitive::redact_lesson(&lesson)))
    }
}

/// A lesson and why.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Because {
    /// The lesson's ID (`L-…`).
    id: String,
    /// Why; the audit log keeps it with the credential.
    #[serde(default)]
    reason: String,
}

/// `retire_lesson`, `POST /v1/lessons/{id}/retire`.
pub struct Retire;

impl Operation for Retire {
    type Input = Because;
    type Output = Described<Lesson>;
    const NAME: &'static str = "retire_lesson";
    const SUMMARY: &'static str = "Retire a lesson: archived, kept on record, never in a \
        prompt again. Needs the reviewer or admin role.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = Rest::post("/v1/lessons/{id}/retire", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The archived lesson, redacted.";

    fn run(engine: &Engine, b: Because) -> lore_core::Result<Described<Lesson>> {
        let lesson = engine.retire_lesson(&LessonId::parse(&b.id)?, None, &b.reason)?;
        Ok(Described(sensitive::redact_lesson(&lesson)))
    }
}

/// `purge_lesson`, `POST /v1/lessons/{id}/purge`: admins only, since unlike every other change
/// it cannot be undone (an episode's purge, which reviewers may do, erases an agent's record
/// rather than what people curated).
pub struct Purge;

impl Operation for Purge {
    type Input = Because;
    type Output = Described<PurgeReport>;
    const NAME: &'static str = "purge_lesson";
    const SUMMARY: &'static str = "Erase a lesson's text and its source corrections' text for \
        good, with an audit entry; the lesson ends archived (or stays sensitive) and keeps its \
        ID. A reason is required. Needs the admin role.";
    const ROLE: Role = Role::Admin;
    const EFFECT: Effect = Effect::Destroy;
    const REST: Option<Rest> = Rest::post("/v1/lessons/{id}/purge", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "What was erased.";

    fn run(engine: &Engine, b: Because) -> lore_core::Result<Described<PurgeReport>> {
        let id = LessonId::parse(&b.id)?;
        let mut report = engine.purge_lesson(&id, &Attribution::new(None, b.reason))?;
        report.lesson = sensitive::redact_lesson(&report.lesson);
        Ok(Described(report))
    }
}

/// The lessons to learn: a list of objects, or (a REST body) the same objects one a line.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Lines {
    /// Each with `skill`, `task`, `lesson`, and optionally `failed`, `fingerprint`, `tags`.
    Items(#[schemars(with = "Vec<Documented<LessonLine>>")] Vec<Value>),
    /// JSON lines, or a JSON array, as text.
    #[schemars(skip)]
    Text(String),
}

/// Lessons an agent already holds.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LearnInput {
    /// The lessons, at least one: each `skill` (`domain/skill`), `task` (what was being done),
    /// `lesson` (the rule to follow; a bare verdict is refused), and optionally `failed`,
    /// `fingerprint` and `tags`.
    lessons: Lines,
}

/// `learn_lessons`, `POST /v1/lessons/import`.
pub struct Learn;

impl Operation for Learn {
    type Input = LearnInput;
    type Output = Described<LearnReport>;
    const NAME: &'static str = "learn_lessons";
    const SUMMARY: &'static str = "Learn lessons already held (an agent's reflections, a \
        runbook), many at once: each is checked against what Lore has (a duplicate is merged) \
        and curated like a correction by whoever the credential is. An error names the item and \
        field and nothing is stored; sending the same lessons again stores nothing new.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = Rest::post("/v1/lessons/import", StatusCode::CREATED);
    const TOOL: Option<Tool> = Some(Tool {
        name: "learn_lessons",
        group: "lessons",
        title: "Learn lessons",
    });
    const ANSWER: &'static str = "Lessons learned or merged (200 when every one was learned \
        before and nothing was stored).";
    const BODY: Option<&'static str> = Some("lessons");
    const TEXT_BODY: bool = true;

    fn run(engine: &Engine, q: LearnInput) -> lore_core::Result<Described<LearnReport>> {
        let lines = match q.lessons {
            Lines::Items(items) => lore_engine::learn::parse_items(&items)?,
            Lines::Text(text) if text.trim_start().starts_with('[') => {
                let items: Vec<Value> = wording::parse_json(text.as_bytes(), Place::Body)
                    .map_err(|refused| lore_core::Error::invalid("body", refused))?;
                lore_engine::learn::parse_items(&items)?
            }
            Lines::Text(text) => lore_engine::learn::parse_jsonl(&text)?,
        };
        let report = engine.learn_lessons(&lines, engine.author_kind(), None)?;
        Ok(Described(report))
    }

    fn status(report: &Described<LearnReport>) -> Option<StatusCode> {
        (report.0.learned + report.0.merged == 0).then_some(StatusCode::OK)
    }
}
