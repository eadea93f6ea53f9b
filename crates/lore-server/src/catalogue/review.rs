//! A reviewer's work on lessons: the queue of lessons waiting for a person, the decisions on a
//! batch of them (all move or none do, each audited), and the unlinking of two lessons whose
//! rules both hold. What a decision's name means is [`crate::review`]'s, for every door.

use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::model::Lesson;
use lore_engine::{Engine, Page, ReviewItem};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Operation, Rest, Tool, Verb};
use crate::auth::Role;
use crate::review::{Decide, Unlink, statuses};

/// The review family's operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Queue>();
    each.one::<Review>();
    each.one::<Supersede>();
    each.one::<UnlinkPair>();
}

impl Component for Page<ReviewItem> {
    const NAME: &'static str = "ReviewPage";
}

impl Component for Lesson {
    const NAME: &'static str = "Lesson";
}

const fn tool(name: &'static str, title: &'static str) -> Option<Tool> {
    Some(Tool {
        name,
        group: "review",
        title,
    })
}

const fn post(path: &'static str) -> Option<Rest> {
    Some(Rest {
        verb: Verb::Post,
        path,
        status: StatusCode::OK,
    })
}

/// Which lessons wait.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueInput {
    /// Only this skill's, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Statuses, comma-separated (`needs_review,trial`); `needs_review` when omitted.
    status: Option<String>,
    /// At most this many, 1 to 500 (50 when omitted), with `next_offset` when more wait.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// `review_queue`, `GET /v1/review`.
pub struct Queue;

impl Operation for Queue {
    type Input = QueueInput;
    type Output = Described<Page<ReviewItem>>;
    const NAME: &'static str = "review_queue";
    const SUMMARY: &'static str = "For reviewers: lessons waiting for a decision, oldest first, \
        each with the correction it came from, what the detector found and related lessons, \
        private data masked. Decide with review_lessons.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Get,
        path: "/v1/review",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = tool("review_queue", "Review queue");
    const ANSWER: &'static str = "A page of lessons waiting.";

    fn run(engine: &Engine, q: QueueInput) -> lore_core::Result<Self::Output> {
        let statuses = q
            .status
            .as_deref()
            .map(|s| statuses(s.split(',')))
            .transpose()?;
        let limit = Some(q.limit.unwrap_or(50));
        let all = engine.review_queue(q.skill.as_ref(), statuses)?;
        let (items, next_offset) = super::window(all, limit, q.offset)?;
        Ok(Described(Page { items, next_offset }))
    }
}

// The decisions' names; the field's description says what each does.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum DecisionShape {
    Approve,
    Reject,
    Exception,
    Sensitive,
    Supersede,
}

/// A decision on a batch of lessons.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewInput {
    /// `approve` (use them), `reject` (wrong or noise), `exception` (a one-time case, not a
    /// rule), `sensitive` (holds private data) or `supersede` (replaced by `superseded_by`).
    #[schemars(with = "DecisionShape")]
    decision: String,
    /// The lessons' IDs, from `review_queue`. All move or none do.
    #[schemars(length(min = 1))]
    ids: Vec<String>,
    /// For `supersede` only: the lesson that replaces them (same skill).
    superseded_by: Option<String>,
    /// Why, in one sentence; the audit trail keeps it with the caller's credential.
    #[serde(default)]
    reason: String,
}

/// The lessons a decision moved, private data masked.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Decided {
    /// The lessons, with their new status.
    #[schemars(with = "Vec<Documented<Lesson>>")]
    lessons: Vec<Lesson>,
}

impl Decided {
    fn masked(lessons: &[Lesson]) -> Self {
        Self {
            lessons: lessons
                .iter()
                .map(lore_core::sensitive::redact_lesson)
                .collect(),
        }
    }
}

/// `review_lessons`, `POST /v1/review/{decision}`.
pub struct Review;

impl Operation for Review {
    type Input = ReviewInput;
    type Output = Decided;
    const NAME: &'static str = "review";
    const SUMMARY: &'static str = "For reviewers: decide about lessons (approve, reject, \
        exception, sensitive or supersede). A batch moves all together or not at all, and each \
        change is audited.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = post("/v1/review/{decision}");
    const TOOL: Option<Tool> = tool("review_lessons", "Review lessons");
    const ANSWER: &'static str = "The lessons moved.";

    fn run(engine: &Engine, r: ReviewInput) -> lore_core::Result<Decided> {
        let by = r.superseded_by.as_deref();
        let moved = Decide::parse(&r.decision, &r.ids, by, r.reason)?.apply(engine)?;
        Ok(Decided::masked(&moved))
    }
}

/// A batch replaced by another lesson.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupersedeInput {
    /// The lessons' IDs. All move or none do.
    #[schemars(length(min = 1))]
    ids: Vec<String>,
    /// The lesson that replaces them: same skill, not among `ids`, itself retrievable.
    superseded_by: String,
    /// Why, in one sentence; the audit trail keeps it.
    #[serde(default)]
    reason: String,
}

/// `review_supersede`, `POST /v1/review/supersede`: `review` with `supersede`, on a route of
/// its own so that its document requires `superseded_by`.
pub struct Supersede;

impl Operation for Supersede {
    type Input = SupersedeInput;
    type Output = Decided;
    const NAME: &'static str = "review_supersede";
    const SUMMARY: &'static str = "Mark a batch of lessons superseded by another lesson of the \
        same skill: all move or none do, each audited.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = post("/v1/review/supersede");
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = Review::ANSWER;

    fn run(engine: &Engine, s: SupersedeInput) -> lore_core::Result<Decided> {
        let input = ReviewInput {
            decision: "supersede".to_owned(),
            ids: s.ids,
            superseded_by: Some(s.superseded_by),
            reason: s.reason,
        };
        Review::run(engine, input)
    }
}

/// Two linked lessons whose rules both hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlinkInput {
    /// The two linked lessons' IDs (a conflict or near-duplicate pair from `review_queue`).
    #[schemars(length(min = 2, max = 2))]
    ids: Vec<String>,
    /// Why both apply, in one sentence; it goes into the audit trail of both lessons.
    #[serde(default)]
    reason: String,
}

/// `unlink_lessons`, `POST /v1/review/unlink`.
pub struct UnlinkPair;

impl Operation for UnlinkPair {
    type Input = UnlinkInput;
    type Output = Decided;
    const NAME: &'static str = "review_unlink";
    const SUMMARY: &'static str = "For reviewers: take the conflict (or near-duplicate) link off \
        two lessons when both rules hold. Recall then shows both; their states stay. Audited \
        on both lessons.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = post("/v1/review/unlink");
    const TOOL: Option<Tool> = tool("unlink_lessons", "Unlink lessons");
    const ANSWER: &'static str = "Both lessons.";

    fn run(engine: &Engine, u: UnlinkInput) -> lore_core::Result<Decided> {
        let both = Unlink::parse(&u.ids, u.reason)?.apply(engine)?;
        Ok(Decided::masked(&both))
    }
}
