//! The catalogue of operations: each thing a caller can do, defined once, and every door
//! produced from that one definition.
//!
//! An [`Operation`] names itself, says in one text what it does, gives its input and output
//! as Rust types (serde reads and writes them; schemars describes them), the role it needs,
//! whether it writes, its REST method and path and its MCP tool name and group, and the one
//! function that calls the Engine. From it come:
//!
//! - the REST route and its handler (the REST door mounts every operation through [`for_each`]),
//! - the MCP tool: its `tools/list` entry (name, description, input and output schema,
//!   annotations) and its `tools/call` dispatch ([`crate::mcp`] adds every entry),
//! - the OpenAPI document's operation ([`crate::openapi`] writes them beside the hand-kept
//!   ones),
//! - the role `tools/list` filters by ([`crate::mcp::select::role_needed`]).
//!
//! Who is calling is decided once for every door by [`Principal::new`]: the Engine handle's
//! scope, the actor the audit names and the author kind that sets a new record's curation
//! state. A rule for every door (a limit, a redaction, an audit field) goes in
//! [`Principal::invoke`], the one path every call takes.
//!
//! Why traits and plain data rather than an OpenAPI derive crate: the same definition has to
//! produce MCP tools too, which no OpenAPI crate knows about, and the workspace already
//! describes MCP arguments with schemars; the catalogue keeps one schema source (schemars)
//! for both and writes the small part of OpenAPI it needs itself.

mod decisions;
mod digests;
mod embedder;
mod episodes;
mod knowledge;
mod lessons;
mod memory;
mod org;
mod read;
mod review;
pub mod schema;

use std::sync::LazyLock;

use axum::http::{Method, StatusCode};
use futures_util::future::BoxFuture;
use lore_core::model::AuthorKind;
use lore_engine::Engine;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::{ANONYMOUS, Grant, Role};
use crate::error::ApiError;
use crate::input::{self, Place, Refused};

/// Whether an operation changes what is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Reads only; calling it again changes nothing.
    Read,
    /// Adds or changes records.
    Write,
    /// Adds or replaces records; the same input again changes nothing more.
    Replace,
    /// Removes work or switches what every caller gets; the same input again changes nothing
    /// more. Guarded by `actor`, `confirm` and `reason`.
    Destroy,
}

/// A question for one memory layer (knowledge, decisions): one shape for every layer.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LayerQuery {
    /// The question or situation at hand, in plain words.
    #[serde(default)]
    #[schemars(regex(pattern = r"\S"))]
    query: String,
    /// Only this skill's, `domain/skill`.
    #[schemars(with = "Option<schema::Documented<lore_core::SkillPath>>")]
    skill: Option<lore_core::SkillPath>,
    /// At most this many (the layer's default when omitted: 8 chunks, 5 decisions).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<usize>,
    /// The most tokens to return (2,000 when omitted).
    #[schemars(range(min = 1, max = 1_000_000))]
    budget: Option<usize>,
    /// Also say why each candidate was kept or dropped (costs tokens).
    #[serde(default)]
    explain: bool,
}

/// No input: an argument sent anyway is refused rather than ignored, so a caller learns it
/// asked for something the operation does not do.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Nothing {}

/// A page of a listing with no other parameter.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageInput {
    /// At most this many, 1 to 500; all of them up to 500 when omitted, with `next_offset`
    /// when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// A page of a listing that may be narrowed to one skill.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillPage {
    /// Only this skill's, `domain/skill`.
    #[schemars(with = "Option<schema::Documented<lore_core::SkillPath>>")]
    skill: Option<lore_core::SkillPath>,
    /// At most this many, 1 to 500; all of them up to 500 when omitted, with `next_offset`
    /// when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// An HTTP method a catalogue operation is served on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Reads its input from the query string.
    Get,
    /// Reads its input from a JSON body.
    Post,
    /// Reads its input from a JSON body.
    Put,
    /// Reads its input from a JSON body: the fields given change, the others stay.
    Patch,
}

impl Verb {
    /// As axum names it.
    pub fn method(self) -> Method {
        match self {
            Self::Get => Method::GET,
            Self::Post => Method::POST,
            Self::Put => Method::PUT,
            Self::Patch => Method::PATCH,
        }
    }
}

/// An operation's REST door.
#[derive(Clone, Copy, Debug)]
pub struct Rest {
    /// Its method.
    pub verb: Verb,
    /// Its path under the server's root.
    pub path: &'static str,
    /// The status of a success.
    pub status: StatusCode,
}

impl Rest {
    /// A `GET` of `path`, answered 200.
    pub const fn get(path: &'static str) -> Option<Self> {
        Some(Self {
            verb: Verb::Get,
            path,
            status: StatusCode::OK,
        })
    }

    /// A `POST` of `path`, answered `status`.
    pub const fn post(path: &'static str, status: StatusCode) -> Option<Self> {
        Some(Self {
            verb: Verb::Post,
            path,
            status,
        })
    }
}

/// An operation's MCP door.
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    /// The tool's name.
    pub name: &'static str,
    /// Its group (see [`crate::mcp::select::GROUPS`]).
    pub group: &'static str,
    /// Its title, for a client's list.
    pub title: &'static str,
}

/// One operation, defined once.
pub trait Operation: Send + Sync + 'static {
    /// What a caller sends: a JSON body, a query string or a tool's arguments, read the same way.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// What a caller gets back on every door.
    type Output: Serialize + JsonSchema + Send + 'static;
    /// Its name, `snake_case`; the OpenAPI operation ID is its camel case.
    const NAME: &'static str;
    /// What it does, for a person reading the API and a model choosing a tool alike.
    const SUMMARY: &'static str;
    /// The least role that may call it.
    const ROLE: Role;
    /// Whether it writes.
    const EFFECT: Effect;
    /// Its REST door, if it has one.
    const REST: Option<Rest>;
    /// Its MCP door, if it has one.
    const TOOL: Option<Tool>;
    /// What the success means, for the OpenAPI response.
    const ANSWER: &'static str;
    /// The input's fields a REST call with a body reads from its query string instead (a
    /// switch such as `replace`, beside a body that is the record itself).
    const QUERY: &'static [&'static str] = &[];
    /// The input's field a REST call's whole body fills, when the body is one record (an
    /// episode) rather than the input's fields.
    const BODY: Option<&'static str> = None;
    /// The media types REST answers in when [`Operation::document`] gives the answer as a
    /// document of its own (a graph in DOT) rather than the output as JSON.
    const DOCUMENTS: &'static [&'static str] = &[];
    /// Whether REST hands the body to [`Operation::BODY`]'s field as text, for the operation
    /// to read in a format of its own (JSON lines) besides JSON.
    const TEXT_BODY: bool = false;
    /// Other successes [`Operation::status`] may answer besides the REST door's own (a record
    /// replaced rather than created), so the API document promises them too.
    const ALSO: &'static [StatusCode] = &[];

    /// Refuses an input that asks for more than `role` may have (stored text unredacted),
    /// beyond [`Operation::ROLE`].
    ///
    /// # Errors
    /// [`lore_core::Error::Forbidden`] naming the role needed.
    fn allow(_role: Role, _input: &Self::Input) -> lore_core::Result<()> {
        Ok(())
    }

    /// The output as `role` may have it, on every door (a store's location only for admins).
    fn for_role(_role: Role, output: Self::Output) -> Self::Output {
        output
    }

    /// The one call into the Engine, on the caller's handle.
    ///
    /// # Errors
    /// The Engine's.
    fn run(engine: &Engine, input: Self::Input) -> lore_core::Result<Self::Output>;

    /// The output as a model reads it (the MCP door answers this): the same fields, with
    /// stored text a model could take for instructions quoted as data. A program, or a person
    /// reading the API, gets [`Operation::run`]'s output as it is.
    fn for_model(output: Self::Output) -> Self::Output {
        output
    }

    /// REST's status for this success, when it depends on what happened (a record replaced
    /// rather than created); the REST door's own status otherwise.
    fn status(_output: &Self::Output) -> Option<StatusCode> {
        None
    }

    /// The answer REST sends as it is, with its media type (one of [`Operation::DOCUMENTS`]),
    /// instead of the output as JSON.
    fn document(_output: &Self::Output) -> Option<(&'static str, &str)> {
        None
    }
}

/// Which door a call came through; only who is calling differs between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// `/v1/…`.
    Rest,
    /// `/mcp` over HTTP.
    McpHttp,
    /// `lore mcp` over standard input and output.
    McpStdio,
}

/// Who is calling, decided once for every door: the Engine handle narrowed to the
/// credential's scope, acting for it (every audit entry names it) and writing as its author
/// kind (which decides whether a new lesson or record waits for review), and its role.
#[derive(Debug)]
pub struct Principal {
    engine: Engine,
    role: Role,
}

impl Principal {
    /// The caller of a request that came through `door` with `grant` (none without tokens).
    ///
    /// With a token, the token is the author and actor on every door. Without one the store's
    /// owner is calling (tokens are required off loopback), so the role is admin; REST's
    /// anonymous caller is a person at the machine, while an MCP caller without a token is a
    /// model, which writes as an agent (an org lesson's approval needs a person's credential).
    pub fn new(engine: &Engine, grant: Option<&Grant>, door: Door) -> Self {
        match (grant, door) {
            (Some(grant), _) => Self {
                engine: engine
                    .scoped(grant.scope.clone())
                    .acting_as(grant.token_id.clone())
                    .as_author(grant.role.author_kind()),
                role: grant.role,
            },
            (None, Door::Rest) => Self {
                engine: engine.acting_as(ANONYMOUS).as_author(AuthorKind::Human),
                role: Role::Admin,
            },
            (None, Door::McpHttp) => Self {
                engine: engine.acting_as(ANONYMOUS).as_author(AuthorKind::Agent),
                role: Role::Admin,
            },
            (None, Door::McpStdio) => Self {
                engine: engine.as_author(AuthorKind::Agent),
                role: Role::Admin,
            },
        }
    }

    /// The caller's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The handle and role, for the doors' own calls that are not in the catalogue yet.
    pub(crate) fn into_parts(self) -> (Engine, Role) {
        (self.engine, self.role)
    }

    /// A principal [`Principal::new`] made, carried through [`Principal::into_parts`].
    pub(crate) fn from_parts(engine: Engine, role: Role) -> Self {
        Self { engine, role }
    }

    /// Runs `call` on the blocking pool: the Engine and its store are synchronous.
    ///
    /// # Errors
    /// The Engine's error; a panic in `call` becomes an internal error.
    pub async fn run<T, F>(self, call: F) -> Result<T, Failure>
    where
        F: FnOnce(&Engine) -> lore_core::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let engine = self.engine;
        match tokio::task::spawn_blocking(move || call(&engine)).await {
            Ok(result) => result.map_err(Failure::Engine),
            Err(panic) => Err(Failure::Internal(ApiError::from(panic))),
        }
    }

    /// Runs `O` for this caller: the role check, then the Engine call. Every door's call of
    /// a catalogue operation goes through here.
    ///
    /// # Errors
    /// [`Failure::Engine`] for a role below `O::ROLE` and for the Engine's refusals.
    pub async fn invoke<O: Operation>(self, input: O::Input) -> Result<O::Output, Failure> {
        if self.role < O::ROLE {
            return Err(Failure::Engine(self.role.refusal(O::ROLE)));
        }
        O::allow(self.role, &input).map_err(Failure::Engine)?;
        let role = self.role;
        let output = self.run(move |e| O::run(e, input)).await?;
        Ok(O::for_role(role, output))
    }
}

/// Why a call did not succeed, kept apart so each door can say it its own way.
#[derive(Debug)]
pub enum Failure {
    /// The input did not fit the operation's type.
    Input(Refused),
    /// The Engine (or the role check) refused.
    Engine(lore_core::Error),
    /// Something broke on the way.
    Internal(ApiError),
}

impl From<Failure> for ApiError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Input(refused) => refused.into(),
            Failure::Engine(err) => err.into(),
            Failure::Internal(api) => api,
        }
    }
}

/// An operation with its types erased: what the doors iterate over.
#[derive(Clone, Copy)]
pub struct Entry {
    /// [`Operation::NAME`].
    pub name: &'static str,
    /// [`Operation::SUMMARY`].
    pub summary: &'static str,
    /// [`Operation::ANSWER`].
    pub answer: &'static str,
    /// [`Operation::ROLE`].
    pub role: Role,
    /// [`Operation::EFFECT`].
    pub effect: Effect,
    /// [`Operation::REST`].
    pub rest: Option<Rest>,
    /// [`Operation::TOOL`].
    pub tool: Option<Tool>,
    /// [`Operation::QUERY`].
    pub query: &'static [&'static str],
    /// [`Operation::BODY`].
    pub body: Option<&'static str>,
    /// [`Operation::DOCUMENTS`].
    pub documents: &'static [&'static str],
    /// [`Operation::TEXT_BODY`].
    pub text_body: bool,
    /// [`Operation::ALSO`].
    pub also: &'static [StatusCode],
    /// The input's JSON schema, every subschema inlined.
    pub input_schema: fn() -> Value,
    /// The output's JSON schema (what serialising writes), every subschema inlined.
    pub output_schema: fn() -> Value,
    /// Runs the operation on JSON arguments (MCP's), answering JSON rendered for a model.
    pub call: fn(Principal, Value) -> BoxFuture<'static, Result<Value, Failure>>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish()
    }
}

impl Entry {
    /// `O`, erased.
    pub fn of<O: Operation>() -> Self {
        Self {
            name: O::NAME,
            summary: O::SUMMARY,
            answer: O::ANSWER,
            role: O::ROLE,
            effect: O::EFFECT,
            rest: O::REST,
            tool: O::TOOL,
            query: O::QUERY,
            body: O::BODY,
            documents: O::DOCUMENTS,
            text_body: O::TEXT_BODY,
            also: O::ALSO,
            input_schema: schema::input::<O::Input>,
            output_schema: schema::output::<O::Output>,
            call: call_json::<O>,
        }
    }

    /// The OpenAPI operation ID: the name in camel case.
    pub fn operation_id(&self) -> String {
        let mut out = String::new();
        let mut upper = false;
        for c in self.name.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    }
}

fn call_json<O: Operation>(
    principal: Principal,
    arguments: Value,
) -> BoxFuture<'static, Result<Value, Failure>> {
    Box::pin(async move {
        let input: O::Input =
            input::from_value(arguments, Place::Arguments).map_err(Failure::Input)?;
        let output = O::for_model(principal.invoke::<O>(input).await?);
        serde_json::to_value(output).map_err(|e| Failure::Engine(lore_core::Error::store(e)))
    })
}

/// Cuts a listing the Engine returns whole to the page asked for (every record from the start
/// unless it says otherwise, at most [`lore_engine::MAX_PAGE`]), with the offset of the next
/// page, as the store-paged listings answer.
///
/// # Errors
/// [`lore_core::Error::Invalid`] for a limit outside `1..=MAX_PAGE`.
pub(crate) fn window<T>(
    items: Vec<T>,
    limit: Option<usize>,
    offset: Option<usize>,
) -> lore_core::Result<(Vec<T>, Option<usize>)> {
    let limit = limit.unwrap_or(lore_engine::MAX_PAGE);
    if limit == 0 || limit > lore_engine::MAX_PAGE {
        let why = format!("{limit} is outside 1 to {}", lore_engine::MAX_PAGE);
        return Err(lore_core::Error::invalid("limit", why));
    }
    let offset = offset.unwrap_or(0);
    let next = (items.len() > offset.saturating_add(limit)).then_some(offset + limit);
    Ok((items.into_iter().skip(offset).take(limit).collect(), next))
}

/// Something a door does once for each operation's type (the REST door mounts its handler):
/// the catalogue knows every operation, the door what to do with one, so the catalogue never
/// imports a door.
pub(crate) trait Each {
    /// Does it for `O`.
    fn one<O: Operation>(&mut self);
}

/// Calls `each` once for every operation, in the catalogue's order.
pub(crate) fn for_each(each: &mut impl Each) {
    lessons::each(each);
    decisions::each(each);
    knowledge::each(each);
    digests::each(each);
    episodes::each(each);
    memory::each(each);
    read::each(each);
    embedder::each(each);
    org::each(each);
    review::each(each);
}

static ENTRIES: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    struct Collect(Vec<Entry>);
    impl Each for Collect {
        fn one<O: Operation>(&mut self) {
            self.0.push(Entry::of::<O>());
        }
    }
    let mut all = Collect(Vec::new());
    for_each(&mut all);
    all.0
});

/// Every operation in the catalogue.
pub fn entries() -> &'static [Entry] {
    &ENTRIES
}

/// The operation behind the MCP tool `name`.
pub fn tool(name: &str) -> Option<&'static Entry> {
    entries()
        .iter()
        .find(|e| e.tool.is_some_and(|t| t.name == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_doors_and_tools_are_each_used_once() {
        let mut names: Vec<_> = entries().iter().map(|e| e.name).collect();
        let mut routes: Vec<_> = entries()
            .iter()
            .filter_map(|e| e.rest.map(|r| format!("{} {}", r.verb.method(), r.path)))
            .collect();
        let mut tools: Vec<_> = entries()
            .iter()
            .filter_map(|e| e.tool.map(|t| t.name))
            .collect();
        for list in [&mut names, &mut tools] {
            let n = list.len();
            list.sort_unstable();
            list.dedup();
            assert_eq!(list.len(), n, "{list:?}");
        }
        let n = routes.len();
        routes.sort();
        routes.dedup();
        assert_eq!(routes.len(), n, "{routes:?}");
        for entry in entries() {
            assert!(
                entry.rest.is_some() || entry.tool.is_some(),
                "{} has no door",
                entry.name
            );
            assert!(
                entry.summary.len() > 40,
                "{}: {}",
                entry.name,
                entry.summary
            );
        }
    }

    #[test]
    fn operation_ids_are_the_names_in_camel_case() {
        let entry = Entry::of::<decisions::Record>();
        assert_eq!(entry.operation_id(), "recordDecision");
    }
}
