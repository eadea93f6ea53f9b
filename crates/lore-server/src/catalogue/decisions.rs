//! The decision corpus: a person records what they decided when an agent asked (reviewer role:
//! an agent asks, a person answers), reviewers move decisions along the lessons' lifecycle,
//! and agents list and recall the approved ones as precedent. Who decided and who reviewed
//! come from the credential, never from the input.

use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::id::DecisionId;
use lore_core::model::{AuditEntry, DecisionRecord, LessonStatus};
use lore_engine::{DecisionQuery, DecisionResult, Engine, NewDecision};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::Documented;
use super::{Each, Effect, LayerQuery, Operation, Rest, Tool, Verb};
use crate::auth::Role;

/// The decision operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Record>();
    each.one::<List>();
    each.one::<Get>();
    each.one::<Review>();
    each.one::<Recall>();
}

/// What a person decided.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDecisionInput {
    /// The skill whose agents meet such situations, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: Option<SkillPath>,
    /// The situation that needed a person: what was asked, what was at stake.
    #[serde(default)]
    situation: String,
    /// What the person decided.
    #[serde(default)]
    action: String,
    /// Why.
    #[serde(default)]
    rationale: String,
    /// How it turned out, if known.
    outcome: Option<String>,
    /// What it resolved (an execution ID, a ticket), if any.
    resolves: Option<String>,
}

/// `record_decision`, `POST /v1/decisions`.
pub struct Record;

impl Operation for Record {
    type Input = NewDecisionInput;
    type Output = Stored;
    const NAME: &'static str = "record_decision";
    const SUMMARY: &'static str = "For reviewers: record what a person decided when an agent \
        asked for help, a precedent for later agents once approved. It waits in needs_review; \
        who decided is the credential.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/decisions",
        status: StatusCode::CREATED,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "record_decision",
        group: "knowledge",
        title: "Record a decision",
    });
    const ANSWER: &'static str = "The stored decision.";

    fn run(engine: &Engine, d: NewDecisionInput) -> lore_core::Result<Stored> {
        engine
            .record_decision(NewDecision {
                skill: d.skill,
                situation: d.situation,
                action: d.action,
                rationale: d.rationale,
                outcome: d.outcome,
                resolves: d.resolves,
            })
            .map(Stored)
    }
}

/// One decision as stored.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Stored(#[schemars(with = "Documented<DecisionRecord>")] DecisionRecord);

/// Decisions as stored, a page of them when listed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Decisions {
    /// The decisions.
    #[schemars(with = "Vec<Documented<DecisionRecord>>")]
    decisions: Vec<DecisionRecord>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// Which decisions to list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Only this skill's decisions, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Only decisions in this state.
    #[schemars(with = "Option<Documented<LessonStatus>>")]
    status: Option<LessonStatus>,
    /// At most this many, 1 to 500; all of them up to 500 when omitted, with `next_offset`
    /// when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// `list_decisions`, `GET /v1/decisions`.
pub struct List;

impl Operation for List {
    type Input = ListInput;
    type Output = Decisions;
    const NAME: &'static str = "list_decisions";
    const SUMMARY: &'static str = "The decisions in the caller's scope, oldest first, a page \
        at a time.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Get,
        path: "/v1/decisions",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The decisions.";

    fn run(engine: &Engine, q: ListInput) -> lore_core::Result<Decisions> {
        let all = engine.list_decisions(q.skill.as_ref(), q.status)?;
        let (decisions, next_offset) = super::window(all, q.limit, q.offset)?;
        Ok(Decisions {
            decisions,
            next_offset,
        })
    }
}

/// The decision to read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionInput {
    /// The decision's ID (`DEC-…`), as recording or listing returned it.
    #[schemars(with = "String")]
    id: DecisionId,
}

/// One decision with every change made to it, as a lesson is read with its history.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionWithAudit {
    /// The decision as stored, redacted.
    #[schemars(with = "Documented<DecisionRecord>")]
    decision: DecisionRecord,
    /// Its audit trail, oldest first: recorded, then each move with who made it and why.
    #[schemars(with = "Vec<AuditShape>")]
    audit: Vec<AuditEntry>,
}

/// What an [`AuditEntry`] serialises to.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct AuditShape {
    id: String,
    subject_kind: String,
    subject: String,
    /// `created`, `transition`, …
    action: String,
    /// The state before a move.
    #[schemars(with = "Option<Documented<LessonStatus>>")]
    from: Option<LessonStatus>,
    /// The state after it.
    #[schemars(with = "Option<Documented<LessonStatus>>")]
    to: Option<LessonStatus>,
    /// The credential that made the change.
    actor: String,
    /// When, RFC 3339.
    at: String,
    /// Why, redacted.
    reason: String,
    /// What supports the change, when anything does.
    evidence: Option<serde_json::Value>,
}

/// `get_decision`, `GET /v1/decisions/{id}`.
pub struct Get;

impl Operation for Get {
    type Input = DecisionInput;
    type Output = DecisionWithAudit;
    const NAME: &'static str = "get_decision";
    const SUMMARY: &'static str = "One decision in the caller's scope with its audit trail: \
        who recorded it, each move since, who made it and why.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Get,
        path: "/v1/decisions/{id}",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "get_decision",
        group: "knowledge",
        title: "Get a decision",
    });
    const ANSWER: &'static str = "The decision and its audit trail.";

    fn run(engine: &Engine, q: DecisionInput) -> lore_core::Result<DecisionWithAudit> {
        Ok(DecisionWithAudit {
            decision: engine.decision(&q.id)?,
            audit: engine.decision_audit(&q.id)?,
        })
    }
}

/// Decisions to move and where.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewInput {
    /// The decisions (`DEC-…`); all move or none.
    #[schemars(with = "Vec<String>")]
    ids: Vec<DecisionId>,
    /// The new state: `approved`, `rejected`, `one_time_exception`, `sensitive`,
    /// `superseded` or `archived`.
    #[schemars(with = "Documented<LessonStatus>")]
    status: LessonStatus,
    /// Why; the audit log keeps it with the credential that moved them.
    #[serde(default)]
    reason: String,
}

/// `review_decisions`, `POST /v1/decisions/review`.
pub struct Review;

impl Operation for Review {
    type Input = ReviewInput;
    type Output = Decisions;
    const NAME: &'static str = "review_decisions";
    const SUMMARY: &'static str = "For reviewers: approve recorded decisions (only approved \
        ones are recalled), or reject, supersede, archive or mark them sensitive; all move or \
        none, each with an audit entry.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/decisions/review",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "review_decisions",
        group: "knowledge",
        title: "Review decisions",
    });
    const ANSWER: &'static str = "The decisions as they now are.";

    fn run(engine: &Engine, r: ReviewInput) -> lore_core::Result<Decisions> {
        Ok(Decisions {
            decisions: engine.review_decisions(&r.ids, r.status, &r.reason)?,
            next_offset: None,
        })
    }
}

/// The recalled decisions: the text to read and what is in it.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Recalled(#[schemars(with = "RecalledShape")] DecisionResult);

/// What [`Recalled`] serialises to; the Engine's result carries no schema of its own.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct RecalledShape {
    /// The embedder of the dense candidates.
    embedder: serde_json::Value,
    /// The budget in tokens.
    budget: usize,
    /// Tokens used.
    tokens: usize,
    /// The decisions quoted as data with who decided and when: precedent to weigh, not orders.
    text: String,
    /// The decisions in the text, best first.
    decisions: Vec<RecalledItem>,
    /// Every candidate and why it was kept or dropped, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    explain: Option<Vec<serde_json::Value>>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct RecalledItem {
    id: String,
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    tokens: usize,
    score: f64,
}

/// `recall_decisions`, `POST /v1/decisions/recall`.
pub struct Recall;

impl Operation for Recall {
    type Input = LayerQuery;
    type Output = Recalled;
    const NAME: &'static str = "recall_decisions";
    const SUMMARY: &'static str = "Before asking a person, see what people decided in \
        similar situations: the approved decisions most like yours, each with its situation, \
        action, rationale, who decided and when.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/decisions/recall",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "recall_decisions",
        group: "knowledge",
        title: "Recall decisions",
    });
    const ANSWER: &'static str = "The packed decisions.";

    fn run(engine: &Engine, q: LayerQuery) -> lore_core::Result<Recalled> {
        engine
            .recall_decisions(&DecisionQuery {
                text: q.query,
                skill: q.skill,
                limit: q.limit,
                budget: q.budget,
                explain: q.explain,
            })
            .map(Recalled)
    }
}
