//! Organization memory: the members Lore has seen, the org pool's cycle, and propagation of a
//! member's own lesson.
//!
//! The pool needs the reviewer role and a person in the Engine; what it writes waits for
//! review, and no input can change that: the inputs refuse unknown fields, and the Engine has
//! no way to approve an org lesson but a person's review decision. A caller without a
//! credential over MCP is a model, never that person ([`super::Principal::new`]).

use axum::http::StatusCode;
use lore_core::id::LessonId;
use lore_core::org::{Member, Propagation};
use lore_engine::{Engine, PoolReport, Propagated};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{Component, Documented};
use super::{Each, Effect, Operation, PageInput, Rest, Tool, Verb};
use crate::auth::Role;

/// The organization operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Members>();
    each.one::<Pool>();
    each.one::<Propagate>();
}

impl Component for Member {
    const NAME: &'static str = "Member";
}

impl Component for PoolReport {
    const NAME: &'static str = "PoolReport";
}

impl Component for Propagated {
    const NAME: &'static str = "Propagated";
}

/// The members, a page of them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemberPage {
    /// Each agent with its role and department.
    #[schemars(with = "Vec<Documented<Member>>")]
    members: Vec<Member>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `org_members`, `GET /v1/org/members`.
pub struct Members;

impl Operation for Members {
    type Input = PageInput;
    type Output = MemberPage;
    const NAME: &'static str = "org_members";
    const SUMMARY: &'static str = "The organization's agents as Lore has seen them (agent, \
        role, department), inside the caller's scope. Needs the reviewer or admin role.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Get,
        path: "/v1/org/members",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The members.";

    fn run(engine: &Engine, q: PageInput) -> lore_core::Result<MemberPage> {
        let (members, next_offset) = super::window(engine.members()?, q.limit, q.offset)?;
        Ok(MemberPage {
            members,
            next_offset,
        })
    }
}

/// One cycle of the pool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolInput {
    /// Report what would be proposed without writing anything.
    #[serde(default)]
    dry_run: bool,
}

/// What the cycle found and proposed.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Pooled(#[schemars(with = "Documented<PoolReport>")] PoolReport);

/// `org_pool`, `POST /v1/org/pool`.
pub struct Pool;

impl Operation for Pool {
    type Input = PoolInput;
    type Output = Pooled;
    const NAME: &'static str = "org_pool";
    const SUMMARY: &'static str = "For reviewers: run one cycle of the organization's skill \
        pool. Rules that at least org.min_agents distinct agents learned become org lessons \
        waiting for a person's approval; one that contradicts an existing org lesson is \
        reported, not proposed.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/org/pool",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "org_pool",
        group: "org",
        title: "Org pool",
    });
    const ANSWER: &'static str = "What the cycle found and proposed.";

    fn run(engine: &Engine, p: PoolInput) -> lore_core::Result<Pooled> {
        engine.org_pool(p.dry_run).map(Pooled)
    }
}

/// A lesson to share and with whom.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PropagateInput {
    /// The lesson's ID: one its owner learned.
    id: String,
    /// `role` (agents of the owner's role) or `department`; the server's `org.propagation`
    /// when absent.
    #[schemars(extend("enum" = ["role", "department"]))]
    strategy: Option<String>,
}

/// Whom the lesson reaches now.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Reach(#[schemars(with = "Documented<Propagated>")] Propagated);

/// `propagate_lesson`, `POST /v1/lessons/{id}/propagate`.
pub struct Propagate;

impl Operation for Propagate {
    type Input = PropagateInput;
    type Output = Reach;
    const NAME: &'static str = "propagate_lesson";
    const SUMMARY: &'static str = "Share a lesson you learned with the agents of your role or \
        department (at most org.max_targets of them; never back to you). Its owner or a person \
        may ask.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = Some(Rest {
        verb: Verb::Post,
        path: "/v1/lessons/{id}/propagate",
        status: StatusCode::OK,
    });
    const TOOL: Option<Tool> = Some(Tool {
        name: "propagate_lesson",
        group: "org",
        title: "Propagate lesson",
    });
    const ANSWER: &'static str = "Whom it reaches now.";

    fn run(engine: &Engine, p: PropagateInput) -> lore_core::Result<Reach> {
        let id = LessonId::parse(&p.id)?;
        let strategy = p.strategy.as_deref().map(Propagation::parse).transpose()?;
        engine.propagate(&id, strategy).map(Reach)
    }
}
