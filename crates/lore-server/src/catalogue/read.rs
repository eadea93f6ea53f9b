//! Reading memory back: keyword search over what the caller may read, and the store's status.

use lore_core::SkillPath;
use lore_core::ports::store::SearchHit;
use lore_engine::{Engine, MemorySearch, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Nothing, Operation, Rest, Tool};
use crate::auth::Role;

/// The reading operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Search>();
    each.one::<State>();
}

impl Component for Status {
    const NAME: &'static str = "Status";
}

/// What to search for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// Keywords.
    // `q` was REST's first name for it; callers written then keep working.
    #[serde(alias = "q")]
    query: String,
    /// Only this `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// 1 to 500; 5 by default.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
}

/// Search results, best first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Found {
    /// The hits (`kind` lesson, execution or episode, `id`, `skill`, `score`, `snippet`); empty
    /// when nothing matched.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    hits: Vec<SearchHit>,
    /// The queries run, in order (`query`, `found`, `new`): the first is the caller's; later
    /// ones come from the server's reformulation loop when it is on.
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    queries: Vec<lore_engine::SearchRound>,
    /// Why the search stopped: single, sufficient, exhausted, max_rounds or failed.
    stopped: String,
}

impl From<MemorySearch> for Found {
    fn from(search: MemorySearch) -> Self {
        Self {
            hits: search.hits,
            queries: search.rounds,
            stopped: search.stopped.to_owned(),
        }
    }
}

/// `search_memory`, `GET /v1/search`.
pub struct Search;

impl Operation for Search {
    type Input = SearchInput;
    type Output = Found;
    const NAME: &'static str = "search_memory";
    const SUMMARY: &'static str = "Look up lessons and past executions by keywords, as a list. \
        For the rules that apply to a task, call `recall_memory`.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/search");
    const TOOL: Option<Tool> = Some(Tool {
        name: "search_memory",
        group: "loop",
        title: "Search memory",
    });
    const ANSWER: &'static str = "The hits, best first.";

    fn run(engine: &Engine, q: SearchInput) -> lore_core::Result<Found> {
        let limit = q.limit.unwrap_or(5);
        if limit > lore_engine::MAX_PAGE {
            let why = format!("{limit} is more than {}", lore_engine::MAX_PAGE);
            return Err(lore_core::Error::invalid("limit", why));
        }
        Ok(engine
            .search_memory(&q.query, q.skill.as_ref(), limit)?
            .into())
    }
}

/// `memory_status`, `GET /v1/status`.
pub struct State;

impl Operation for State {
    type Input = Nothing;
    type Output = Described<Status>;
    const NAME: &'static str = "memory_status";
    const SUMMARY: &'static str = "How much Lore holds: the store, the executions, corrections \
        and lessons the caller may read, and the curation mode.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/status");
    const TOOL: Option<Tool> = Some(Tool {
        name: "memory_status",
        group: "lessons",
        title: "Memory status",
    });
    const ANSWER: &'static str = "The store, the counts and the curation mode.";

    fn run(engine: &Engine, Nothing {}: Nothing) -> lore_core::Result<Described<Status>> {
        engine.status().map(Described)
    }

    /// Where the store lives is for admins only: a file path tells a client nothing it can use
    /// and an attacker something.
    fn for_role(role: Role, mut status: Described<Status>) -> Described<Status> {
        if role < Role::Admin {
            status.0.store.location = String::new();
        }
        status
    }
}
