//! MCP: Lore's tools for a model, over stdio (`lore mcp`) and streamable HTTP (`/mcp`).
//!
//! Most tools are the catalogue's operations ([`crate::catalogue`]), added to the router from
//! their one definition: they take REST's input and answer REST's shapes, field for field,
//! with stored text a model could take for instructions quoted as data. The agent's loop
//! (record an execution, report a signal, correct, recall, the memory prompt) is the one
//! `#[tool_router]` impl here, over the same Engine; its results are views smaller than REST's
//! (see `views`), as a model pays for every token on the calls it makes most. Results are
//! structured (`Json<T>`, with an output schema; the macro finds `Json` by its spelling in the
//! signature, so results are spelled out rather than aliased).
//!
//! What differs from REST is the reader. Parameter docs and error texts are written for a
//! model deciding what to call next: a tool error is a normal result marked `is_error` whose
//! text says what to change, because a JSON-RPC error is something a model rarely reads.
//!
//! Who wrote a correction comes from the credential, as over REST: an agent token's start on
//! `trial` (auto curation) or `needs_review`, a reviewer's or admin's are a person's. Without a
//! credential (stdio, or a server without tokens) the caller is the machine's user, as with the
//! CLI. Over HTTP the author and every audit actor is the connection's token; no tool takes a
//! name for either.

mod compact;
pub mod refusal;
pub mod select;
mod stdio;
mod views;
pub mod wire;

use std::sync::Arc;

use lore_core::SkillPath;
use lore_core::id::{ExecutionId, LessonId};
use lore_core::model::{AuthorKind, Outcome, SignalChannel};
use lore_core::sensitive;
use lore_engine::Engine;
use lore_engine::{NewCorrection, NewExecution, NewSignal, RecallQuery};

use crate::auth::Grant;
use crate::catalogue::{self, Door, Effect, Entry, Principal};
use crate::metrics::Metrics;
use futures_util::future::BoxFuture;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use refusal::{Parameters, ToolError};
pub use select::ToolSelection;
pub use stdio::{serve_lines, serve_lines_with};
pub use views::{
    CorrectionResult, LessonView, PromptView, RecallView, RecordedExecution, SignalView,
};

/// Parameters of `record_execution`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordExecutionParams {
    /// The task's name, `domain/skill`, e.g. `support/summarize-ticket`.
    pub skill: String,
    /// What the run was given (any JSON).
    pub input: Value,
    /// What it produced (any JSON).
    pub output: Value,
    /// `accepted`, `rejected`, `success`, `failure` or `pending_review` (the default).
    #[serde(default)]
    pub outcome: Option<String>,
    /// Cost in US dollars.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// Duration in milliseconds.
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// The model that ran.
    #[serde(default)]
    pub model: Option<String>,
    /// An ID shared by one conversation's runs.
    #[serde(default)]
    pub session: Option<String>,
    /// The IDs of the lessons `recall_memory` gave this run, so Lore measures whether they
    /// helped.
    #[serde(default)]
    pub lessons_shown: Vec<String>,
}

/// Parameters of `report_signal`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportSignalParams {
    /// The execution's ID, as returned by `record_execution`.
    pub execution_id: String,
    /// `hard_failure` (an error or crash), `constraint_failure` (a requirement not met),
    /// `progress`, `efficiency` or `referee` (a grade from a test or judge).
    pub channel: String,
    /// The error text, verbatim. A failure without one needs `action`, and its
    /// `state_before`, `state_after` and `failure_reason` when known.
    #[serde(default)]
    pub message: Option<String>,
    /// 0 to 1; required for `progress`, `efficiency` and `referee`.
    #[serde(default)]
    pub value: Option<f64>,
    /// The command or action attempted.
    #[serde(default)]
    pub action: Option<String>,
    /// For a failure without error text: the state before the action.
    #[serde(default)]
    pub state_before: Option<String>,
    /// For a failure without error text: the state after it (unchanged means stuck).
    #[serde(default)]
    pub state_after: Option<String>,
    /// For a failure without error text: why the step failed (`collision`, `no_change`).
    #[serde(default)]
    pub failure_reason: Option<String>,
}

/// Parameters of `correct`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectParams {
    /// The execution's skill, `domain/skill`.
    pub skill: String,
    /// The execution's ID, as returned by `record_execution`.
    pub execution_id: String,
    /// What to do instead, as a rule with its condition: "When a ticket reports errors for
    /// many customers, priority must be urgent."
    pub correction: String,
}

/// Parameters of `memory_prompt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptParams {
    /// The skill whose system prompt to assemble, `domain/skill`.
    pub skill: String,
    /// The task the prompt is for, in plain words: its memory is then the layered context for
    /// it (lessons, decisions, digest, knowledge), as a run of the skill gets. Without it, the
    /// skill's learned rules, then the other layers for what the skill is about.
    #[serde(default)]
    pub task: Option<String>,
}

/// Parameters of `recall_memory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallParams {
    /// The task at hand in plain words.
    #[serde(default)]
    pub query: String,
    /// Only this `domain/skill`.
    #[serde(default)]
    pub skill: Option<String>,
    /// An error you just hit, verbatim: lessons learned from it rank first.
    #[serde(default)]
    pub error: Option<String>,
    /// Failure tags, e.g. `["timeout"]`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The most tokens to return.
    #[serde(default)]
    pub budget: Option<usize>,
    /// The most lessons, 1 to 50.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Also say why each candidate was kept or dropped (costs tokens).
    #[serde(default)]
    pub explain: bool,
    /// An ID unique to this run: Lore may then retry a suppressed lesson, marked as explored.
    #[serde(default)]
    pub run: Option<String>,
}

/// Lore's MCP server: the tools, over one Engine.
#[derive(Clone, Debug)]
pub struct LoreMcp {
    engine: Arc<Engine>,
    metrics: Arc<Metrics>,
    tool_router: ToolRouter<Self>,
    tools: ToolSelection,
}

#[tool_router]
impl LoreMcp {
    /// Tools over `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            metrics: Metrics::new(),
            tool_router: Self::every_tool(),
            tools: ToolSelection::default(),
        }
    }

    /// Every tool's name, in the order they are listed.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Only the tools `spec` names (tool names and groups, see [`select::GROUPS`]) when a
    /// connection names none; the loop without it.
    ///
    /// # Errors
    /// A message naming an unknown tool or group.
    pub fn with_tools(self, spec: &str) -> Result<Self, String> {
        Ok(self.with_selection(ToolSelection::parse(spec)?))
    }

    /// These tools when a connection names none.
    pub fn with_selection(mut self, tools: ToolSelection) -> Self {
        self.tools = tools;
        self
    }

    /// The tools this request may see: those a `tools` parameter in the URL of an HTTP request
    /// names (`/mcp?tools=loop,episodes`), else the server's.
    fn selection(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<ToolSelection, rmcp::ErrorData> {
        let query = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| select::from_query(parts.uri.query()));
        match query {
            None => Ok(self.tools.clone()),
            Some(spec) => ToolSelection::parse(&spec).map_err(|why| {
                rmcp::ErrorData::invalid_params(format!("/mcp?tools=: {why}"), None)
            }),
        }
    }

    /// The same tools, recording recall latency into `metrics` (the HTTP server's).
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Runs a synchronous Engine call on the blocking pool, scoped to the request's token when
    /// it came over authenticated HTTP; errors become model-readable text.
    async fn call<T, F>(&self, ctx: &RequestContext<RoleServer>, call: F) -> Result<T, ToolError>
    where
        F: FnOnce(&Engine) -> lore_core::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.principal(ctx).run(call).await.map_err(ToolError::from)
    }

    /// Who is calling: decided for every door in one place ([`Principal::new`]).
    fn principal(&self, ctx: &RequestContext<RoleServer>) -> Principal {
        let door = if over_http(ctx) {
            Door::McpHttp
        } else {
            Door::McpStdio
        };
        Principal::new(&self.engine, grant(ctx), door)
    }

    /// After a task: record the run. Returns its `id` for `correct` and `report_signal`.
    #[tool(annotations(
        title = "Record an execution",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn record_execution(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecordExecutionParams>,
    ) -> Result<Json<RecordedExecution>, ToolError> {
        let recorded = self
            .call(&ctx, move |e| {
                let outcome = p.outcome.as_deref().map(Outcome::parse).transpose()?;
                e.record_execution(NewExecution {
                    skill: SkillPath::parse(&p.skill)?,
                    input: p.input,
                    output: p.output,
                    outcome: outcome.unwrap_or(Outcome::PendingReview),
                    cost_usd: p.cost_usd,
                    latency_ms: p.latency_ms,
                    model: p.model,
                    session: p.session,
                    lessons_shown: p
                        .lessons_shown
                        .iter()
                        .map(|id| LessonId::parse(id))
                        .collect::<lore_core::Result<_>>()?,
                })
            })
            .await?;
        Ok(Json(RecordedExecution::from(&recorded)))
    }

    /// A failure, progress or grade of a recorded run, as soon as you see it; it measures whether
    /// the lessons shown helped.
    #[tool(annotations(
        title = "Report a signal",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn report_signal(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ReportSignalParams>,
    ) -> Result<Json<SignalView>, ToolError> {
        let event = self
            .call(&ctx, move |e| {
                let step = lore_engine::FailedTransition {
                    before: p.state_before.unwrap_or_default(),
                    after: p.state_after.unwrap_or_default(),
                    reason: p.failure_reason.unwrap_or_default(),
                };
                let signal = NewSignal {
                    execution_id: ExecutionId::parse(&p.execution_id)?,
                    channel: SignalChannel::parse(&p.channel)?,
                    message: p.message.unwrap_or_default(),
                    value: p.value,
                    action: p.action,
                    tags: Vec::new(),
                };
                e.report_transition(signal, step)
            })
            .await?;
        Ok(Json(SignalView::from(&event)))
    }

    /// When the user says a recorded output was wrong: pass their words and Lore learns a rule
    /// that later recalls carry. Without what to do instead no lesson is made
    /// (`lesson_skipped` says why).
    #[tool(annotations(
        title = "Correct an execution",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn correct(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<CorrectParams>,
    ) -> Result<Json<CorrectionResult>, ToolError> {
        let author_kind = author_kind(&ctx);
        let result = self
            .call(&ctx, move |e| {
                let outcome = e.correct(NewCorrection {
                    skill: SkillPath::parse(&p.skill)?,
                    execution_id: ExecutionId::parse(&p.execution_id)?,
                    text: p.correction,
                    author_kind,
                    author: None,
                })?;
                let regression_test = crate::regression::write(e, &outcome);
                let mut result = CorrectionResult::from(&outcome);
                result.lesson = outcome
                    .lesson
                    .as_ref()
                    .map(|l| LessonView::from(&sensitive::redact_lesson(l)));
                result.regression_test = regression_test;
                Ok(result)
            })
            .await?;
        Ok(Json(result))
    }

    /// The system prompt for a skill: workspace and domain context, its memory (quoted, with
    /// provenance), then the skill's instructions. With a task, the memory is the layered
    /// context for it, as a run gets; without, the rules learned from corrections and the
    /// other layers for what the skill is about. Needs a
    /// `skills/DOMAIN/SKILL/SKILL.md` on the server.
    #[tool(annotations(
        title = "Assemble a skill's prompt",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn memory_prompt(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<PromptParams>,
    ) -> Result<Json<PromptView>, ToolError> {
        let prompt = self
            .call(&ctx, move |e| {
                e.prompt_for(&SkillPath::parse(&p.skill)?, p.task.as_deref())
            })
            .await?;
        Ok(Json(PromptView::from(&prompt)))
    }

    /// Before a task, or after an error: the learned rules that apply, quoted with their IDs in
    /// one block within a token budget.
    #[tool(annotations(
        title = "Recall memory",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn recall_memory(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecallParams>,
    ) -> Result<Json<RecallView>, ToolError> {
        let metrics = Arc::clone(&self.metrics);
        let started = std::time::Instant::now();
        let result = self
            .call(&ctx, move |e| {
                if p.limit.is_some_and(|l| l > 50) {
                    return Err(lore_core::Error::invalid("limit", "at most 50"));
                }
                e.recall(&RecallQuery {
                    text: p.query,
                    skill: p.skill.as_deref().map(SkillPath::parse).transpose()?,
                    fingerprint: p.error,
                    tags: p.tags,
                    budget: p.budget,
                    limit: p.limit,
                    explain: p.explain,
                    explore: p.run,
                })
            })
            .await?;
        metrics.observe_recall(started.elapsed());
        Ok(Json(RecallView::new(&result)))
    }
}

impl LoreMcp {
    /// The tools of every module (the loop, agents' memory, episodes, learning) and of the
    /// catalogue.
    fn every_tool() -> ToolRouter<Self> {
        let mut router = Self::tool_router();
        for entry in catalogue::entries() {
            if let Some(tool) = entry.tool {
                router.add_route(ToolRoute::new_dyn(described(entry, tool), dispatch));
            }
        }
        for route in router.map.values_mut() {
            route.attr = compact::tool(route.attr.clone());
        }
        router
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for LoreMcp {
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let selection = self.selection(&context)?;
        if !selection.allows(&request.name) && self.tool_router.has_route(&request.name) {
            return Err(rmcp::ErrorData::invalid_params(
                format!(
                    "the tool {} is not enabled on this connection; call one that tools/list \
                     shows (the server chose them with --tools, mcp.tools or the URL's ?tools=)",
                    request.name
                ),
                None,
            ));
        }
        // A tool error rather than a protocol error: the model reads it and stops retrying.
        if let Some(refused) = select::refusal(&request.name, grant(&context)) {
            return Ok(refused.into_result().into());
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        refusal::arguments_as_tool_error(self.tool_router.call(call).await)
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let selection = self.selection(&context)?;
        let tools = self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|t| selection.allows(&t.name))
            .filter(|t| select::refusal(&t.name, grant(&context)).is_none())
            .collect();
        // As rmcp's generated handler answers, cache hints included for clients that read them.
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Public),
        })
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools
            .allows(name)
            .then(|| self.tool_router.get(name).cloned())
            .flatten()
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("lore", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Lore is a learning memory. Before a task, call recall_memory for the rules \
                 learned from earlier corrections. After it, call record_execution; when the \
                 user says an output was wrong, call correct with the execution's id and their \
                 words, so the next run avoids the mistake.",
            )
    }
}

/// A catalogue operation's `tools/list` entry: its name, its summary, its input and output
/// schemas and annotations from whether it writes.
fn described(entry: &Entry, tool: catalogue::Tool) -> rmcp::model::Tool {
    let object = |schema: Value| match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(rmcp::model::JsonObject::new()),
    };
    let read = entry.effect == Effect::Read;
    let annotations = rmcp::model::ToolAnnotations::from_raw(
        Some(tool.title.to_owned()),
        Some(read),
        (!read).then_some(entry.effect == Effect::Destroy),
        (!read).then_some(matches!(entry.effect, Effect::Replace | Effect::Destroy)),
        Some(false),
    );
    rmcp::model::Tool::new(tool.name, entry.summary, object((entry.input_schema)()))
        .with_raw_output_schema(object((entry.output_schema)()))
        .with_annotations(annotations)
}

/// `tools/call` of a catalogue operation: the same call its REST door makes, its refusals
/// said to the model.
fn dispatch(
    ctx: rmcp::handler::server::tool::ToolCallContext<'_, LoreMcp>,
) -> BoxFuture<'_, Result<rmcp::model::CallToolResponse, rmcp::ErrorData>> {
    let principal = ctx.service.principal(&ctx.request_context);
    let arguments = Value::Object(ctx.arguments.unwrap_or_default());
    let call = catalogue::tool(&ctx.name).map(|entry| (entry.call)(principal, arguments));
    Box::pin(async move {
        let Some(call) = call else {
            return Err(rmcp::ErrorData::invalid_params("no such tool", None));
        };
        Ok(match call.await {
            Ok(value) => rmcp::model::CallToolResult::structured(value).into(),
            Err(failure) => ToolError::from(failure).into_result().into(),
        })
    })
}

/// Who writes a correction or a lesson: the credential's role says, as over REST. Without
/// one (stdio, or a server without tokens) the caller is the machine's user, as with the CLI
/// and REST on loopback, so its corrections are a person's and approved at once in auto
/// curation. Only an org lesson's approval asks more: a person's credential (see `call`).
fn author_kind(ctx: &RequestContext<RoleServer>) -> AuthorKind {
    grant(ctx).map_or(AuthorKind::Human, |g| g.role.author_kind())
}

/// Whether the request came over HTTP (`/mcp`) rather than stdio.
fn over_http(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.extensions.get::<axum::http::request::Parts>().is_some()
}

/// The token's grant, when the request came over authenticated HTTP.
fn grant(ctx: &RequestContext<RoleServer>) -> Option<&Grant> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Grant>())
}

/// Serves the tools over standard input and output until the client disconnects.
///
/// Standard output carries the protocol, so nothing else may print there: logs go to stderr.
///
/// # Errors
/// When the handshake fails or the transport breaks.
pub async fn serve_stdio(engine: Arc<Engine>) -> anyhow::Result<()> {
    serve_stdio_with(LoreMcp::new(engine)).await
}

/// [`serve_stdio`] with these tools (a [`LoreMcp::with_tools`] selection).
///
/// # Errors
/// As [`serve_stdio`].
pub async fn serve_stdio_with(tools: LoreMcp) -> anyhow::Result<()> {
    serve_lines_with(tools, tokio::io::stdin(), tokio::io::stdout()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_tools_are_annotated_and_writes_are_not() {
        let tools = LoreMcp::every_tool().list_all();
        let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "archival_memory_search",
                "archival_memory_write",
                "build_digests",
                "causal_path",
                "conversation_log_read",
                "conversation_log_write",
                "core_memory_read",
                "core_memory_write",
                "correct",
                "decision_sequence",
                "define_eval_set",
                "embedder_activate",
                "embedder_cancel",
                "embedder_checkpoints",
                "embedder_delete_checkpoint",
                "embedder_preflight",
                "embedder_resume",
                "embedder_rollback",
                "embedder_run",
                "embedder_runs",
                "embedder_status",
                "embedder_train",
                "eval_trends",
                "export_causal_graph",
                "find_anti_patterns",
                "find_patterns",
                "get_decision",
                "get_episode",
                "get_lesson",
                "ingest_knowledge",
                "knowledge_chunks",
                "layered_context",
                "learn_lessons",
                "list_episodes",
                "list_knowledge",
                "list_lessons",
                "memory_prompt",
                "memory_status",
                "org_pool",
                "propagate_lesson",
                "read_digest",
                "recall_decisions",
                "recall_knowledge",
                "recall_memory",
                "record_decision",
                "record_episode",
                "record_execution",
                "report_signal",
                "review_decisions",
                "review_lessons",
                "review_queue",
                "run_evals",
                "search_memory",
                "session_episodes",
                "similar_decisions",
                "unlink_lessons",
                "what_if",
            ]
        );
        // The Engine's tool definitions of every strategy are what this server publishes.
        for strategy in [
            lore_engine::InjectionStrategy::ToolBased,
            lore_engine::InjectionStrategy::SelfEditing,
        ] {
            for def in lore_engine::memory_tools(strategy) {
                let tool = tools.iter().find(|t| t.name == def.name);
                let tool = tool.unwrap_or_else(|| panic!("{} is not published", def.name));
                let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
                assert_eq!(read_only, Some(def.read_only), "{}", def.name);
            }
        }
        for tool in &tools {
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
            let writes = matches!(
                tool.name.as_ref(),
                "record_execution"
                    | "record_episode"
                    | "correct"
                    | "learn_lessons"
                    | "ingest_knowledge"
                    | "record_decision"
                    | "review_decisions"
                    | "build_digests"
                    | "define_eval_set"
                    | "run_evals"
                    | "review_lessons"
                    | "unlink_lessons"
                    | "org_pool"
                    | "propagate_lesson"
                    | "report_signal"
                    | "core_memory_write"
                    | "archival_memory_write"
                    | "conversation_log_write"
                    | "embedder_train"
                    | "embedder_resume"
                    | "embedder_activate"
                    | "embedder_rollback"
                    | "embedder_cancel"
                    | "embedder_delete_checkpoint"
            );
            assert_eq!(read_only, Some(!writes), "{}", tool.name);
            assert!(
                tool.output_schema.is_some(),
                "{} has no output schema",
                tool.name
            );
            let description = tool.description.as_deref().unwrap_or_default();
            assert!(description.len() > 40, "{}: {description:?}", tool.name);
        }
    }

    #[test]
    fn every_tool_belongs_to_exactly_one_group() {
        let tools = LoreMcp::every_tool().list_all();
        let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        let mut grouped: Vec<String> = select::every_tool().map(str::to_owned).collect();
        names.sort();
        grouped.sort();
        assert_eq!(names, grouped);
    }

    #[test]
    fn parameter_docs_reach_the_schema() {
        let tools = LoreMcp::tool_router().list_all();
        let correct = tools.iter().find(|t| t.name == "correct").unwrap();
        let schema = serde_json::to_string(&correct.input_schema).unwrap();
        assert!(
            schema.contains("as returned by `record_execution`"),
            "{schema}"
        );
    }

    #[test]
    fn tool_errors_say_what_to_do_and_carry_the_rest_code_and_message() {
        let err = || lore_core::Error::invalid("skill path", "expected `domain/skill`");
        let refused = ToolError::from(err());
        let api = crate::error::ApiError::from(err());
        assert!(refused.text().contains("Fix that argument"), "{refused:?}");
        assert_eq!(
            (refused.code(), refused.message()),
            (api.code(), api.message())
        );
        let result = refused.into_result();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            result.structured_content.unwrap()["error"]["code"],
            "invalid"
        );
        let leaked = ToolError::from(lore_core::Error::store(std::io::Error::other(
            "/secret/path",
        )));
        assert_eq!(leaked.code(), "internal");
        assert!(!leaked.text().contains("/secret"), "{leaked:?}");
    }
}

#[cfg(test)]
mod budget {
    use lore_core::ports::tokenize::Tokenizer;
    use lore_providers::tokenizer::{Encoding, Tiktoken};

    use super::*;

    /// The JSON of `tools/list` for `selection`, compact as it goes over the wire.
    fn listed(selection: &ToolSelection) -> String {
        let tools: Vec<_> = LoreMcp::every_tool()
            .list_all()
            .into_iter()
            .filter(|t| selection.allows(&t.name))
            .collect();
        serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap()
    }

    #[test]
    fn the_default_tool_list_fits_its_budget_and_every_tool_lists_a_model_can_afford() {
        let cl100k = Tiktoken::new(Encoding::Cl100k).unwrap();
        let default = listed(&ToolSelection::default());
        let tokens = cl100k.count(&default);
        assert!(tokens <= 2_500, "the default tools/list is {tokens} tokens");
        // Every tool at once (20,070 tokens before the schemas were trimmed): a bound that
        // shows when descriptions grow back. The catalogue's tools answer the REST shapes whole
        // (one shape per door); their output schemas name the result's own fields, and
        // `record_episode` describes the whole episode it takes (16,417 with it and the two
        // knowledge reads for one decision and one document's chunks).
        let all = cl100k.count(&listed(&ToolSelection::all()));
        eprintln!("tools/list: default {tokens} cl100k tokens, all {all}");
        assert!(all < 17_000, "all tools: {all} tokens");
    }
}
