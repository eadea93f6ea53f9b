//! The episode tools still written for MCP alone (seed 001): record a session's decisions and
//! events, read one episode or a session's, export the causal graph. Listing and the graph's
//! questions come from the catalogue. Answers lead with their rendered text: it already holds
//! the evidence within seed 001's token budgets, and a model pays for every extra field.

use super::{Parameters, ToolError};
use lore_core::SkillPath;
use lore_core::id::EpisodeId;
use lore_core::model::Episode;
use lore_engine::Rendered;
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LoreMcp;

/// Parameters of `record_episode`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordEpisodeParams {
    /// The episode as a JSON object: `skill` (`domain/skill`), `timestamp` (RFC 3339),
    /// `outcome` (`success`, `partial` or `failure`), `task`, and optionally `id` (drawn when
    /// omitted), `session`, `decisions` (each `id`, `type` design|implementation|test|recovery,
    /// `context`, `options`, `chosen` — one of the options —, `rationale`, `outcome`,
    /// `effects`: IDs of what it caused), `events` (each `id`, `type`
    /// tool_call|error|milestone|handoff, `content`, `caused_by`, `leads_to`), `links` (typed
    /// extra relations `{from, to, type: causes|enables|prevents|correlates}`), `metrics`
    /// (`duration_minutes`, `tool_calls`, `errors`, `recoveries`) and `lessons` (sentences).
    /// Every ID a link names must be a decision or event of this episode. Give this or `log`.
    #[serde(default)]
    pub episode: Option<Value>,
    /// Instead of `episode`: the session log in Lore's markdown format (a `# Session ID`
    /// heading; `Skill:`, `Date:`, `Outcome:`, `Task:` lines; `## Decisions` with `### d001
    /// [design] context` and `- Options: a | b`, `- Chosen:`, `- Rationale:`, `- Outcome:`,
    /// `- Effects:` lines; `## Events` lines `- e001 [error] what happened (caused by: d001;
    /// leads to: e002)`; `## Metrics`; `## Lessons`). A line it cannot read is refused with its
    /// number.
    #[serde(default)]
    pub log: Option<String>,
    /// With `log`: the skill, `domain/skill`, when the log has no `Skill:` line.
    #[serde(default)]
    pub skill: Option<String>,
    /// True to replace an episode already recorded under the same ID; otherwise a taken ID is
    /// refused.
    #[serde(default)]
    pub replace: bool,
}

/// Parameters of `get_episode`: the episode's ID, or its session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetEpisodeParams {
    /// The episode's ID, as `record_episode` or `list_episodes` returned it.
    #[serde(default)]
    pub id: Option<String>,
    /// The session instead of the ID: every episode recorded for it, oldest first.
    #[serde(default)]
    pub session: Option<String>,
    /// The most tokens each episode's text may take; 500 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
}

/// Parameters of `export_causal_graph`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportGraphParams {
    /// `json` (the `causal-graph.json` shape: numbered nodes, edges between them, patterns; the
    /// default) or `dot` (Graphviz, to draw it).
    #[serde(default)]
    pub format: Option<String>,
}

/// The whole causal graph.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphExport {
    /// `json` or `dot`.
    pub format: String,
    /// The graph as text, at most 256 KiB.
    pub graph: String,
    /// Whether the graph was cut to that size (ask `causal_path` or the patterns instead).
    pub truncated: bool,
}

/// The most of an exported graph an MCP answer carries: a model's context is no place for more.
const MAX_EXPORT: usize = 256 * 1024;

/// What recording an episode did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodeRecorded {
    /// The episode's ID.
    pub id: String,
    /// Its skill.
    pub skill: String,
    /// Whether an episode with this ID was replaced.
    pub replaced: bool,
    /// How many texts held personal data or secrets and were redacted before storage.
    pub redacted: usize,
    /// Decisions stored.
    pub decisions: usize,
    /// Events stored.
    pub events: usize,
}

/// An answer: its text, memory quoted as data, within a token budget.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Answer {
    /// The answer.
    pub text: String,
    /// Tokens it takes.
    pub tokens: usize,
    /// Whether it was cut to fit the budget (ask again with a larger `budget` for the rest).
    pub truncated: bool,
}

impl From<Rendered> for Answer {
    fn from(r: Rendered) -> Self {
        Self {
            text: r.text,
            tokens: r.tokens,
            truncated: r.truncated,
        }
    }
}

#[tool_router(router = episode_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// Record an episode: one session's task, the decisions you made (with the options you
    /// weighed and why), what happened, what caused what, and how it ended. Lore adds it to a
    /// causal graph across sessions so later tasks can ask what led to failures and which
    /// choices worked. Call it at the end of a session worth learning from, with the episode
    /// as JSON or the session log you kept in Lore's markdown format.
    #[tool(annotations(
        title = "Record an episode",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn record_episode(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecordEpisodeParams>,
    ) -> Result<Json<EpisodeRecorded>, ToolError> {
        let receipt = self
            .call(&ctx, move |e| {
                let episode = match (p.episode, p.log) {
                    (Some(json), None) if p.skill.is_none() => Episode::from_json(json, None)?,
                    (None, Some(log)) => {
                        let skill = p.skill.as_deref().map(SkillPath::parse).transpose()?;
                        lore_engine::extract::episode_from_markdown(&log, skill.as_ref())?
                    }
                    (Some(_), None) => {
                        return Err(lore_core::Error::invalid(
                            "skill",
                            "goes with `log`; an `episode` names its own skill",
                        ));
                    }
                    _ => {
                        return Err(lore_core::Error::invalid(
                            "episode",
                            "give the episode as JSON (`episode`) or as a session log (`log`), one of them",
                        ));
                    }
                };
                e.add_episode(episode, p.replace)
            })
            .await?;
        let ep = &receipt.episode;
        Ok(Json(EpisodeRecorded {
            id: ep.id.to_string(),
            skill: ep.skill.to_string(),
            replaced: receipt.replaced,
            redacted: receipt.redacted,
            decisions: ep.decisions.len(),
            events: ep.events.len(),
        }))
    }

    /// One recorded episode as text: task, metrics, lessons, decisions and events, quoted,
    /// within a token budget. Give its `id`, or the `session` it was recorded for.
    #[tool(annotations(
        title = "Get an episode",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn get_episode(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<GetEpisodeParams>,
    ) -> Result<Json<Answer>, ToolError> {
        let views = self
            .call(&ctx, move |e| match (p.id, p.session) {
                (Some(id), None) => Ok(vec![e.episode_view(&EpisodeId::parse(&id)?, p.budget)?]),
                (None, Some(session)) => e.session_episodes(&session, p.budget),
                _ => Err(lore_core::Error::invalid(
                    "get_episode",
                    "give the episode's id or its session, one of the two",
                )),
            })
            .await?;
        let answers: Vec<Answer> = views.into_iter().map(|v| v.rendered.into()).collect();
        Ok(Json(Answer {
            text: answers
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
            tokens: answers.iter().map(|a| a.tokens).sum(),
            truncated: answers.iter().any(|a| a.truncated),
        }))
    }

    /// The whole causal graph of the recorded episodes, to keep or draw elsewhere: JSON (nodes
    /// with how often they occurred and their success rate, weighted edges, patterns) or
    /// Graphviz DOT. For a question about one failure, `causal_path` answers in far fewer tokens.
    #[tool(annotations(
        title = "Export the causal graph",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn export_causal_graph(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ExportGraphParams>,
    ) -> Result<Json<GraphExport>, ToolError> {
        use lore_core::graph_export::GraphFormat;
        let format = match p.format.as_deref() {
            None => GraphFormat::Json,
            Some(raw) => GraphFormat::parse(raw)?,
        };
        let mut graph = self
            .call(&ctx, move |e| e.causal_graph_export(format))
            .await?;
        let truncated = graph.len() > MAX_EXPORT;
        if truncated {
            let mut cut = MAX_EXPORT;
            while !graph.is_char_boundary(cut) {
                cut -= 1;
            }
            graph.truncate(cut);
        }
        Ok(Json(GraphExport {
            format: match format {
                GraphFormat::Json => "json",
                GraphFormat::Dot => "dot",
            }
            .to_owned(),
            graph,
            truncated,
        }))
    }
}
