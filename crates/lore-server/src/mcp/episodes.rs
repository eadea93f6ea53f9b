//! The episode and causal-graph tools (seed 001): record a session's decisions and events,
//! then ask what caused what, what an alternative did elsewhere, and which patterns work.
//! Answers lead with their rendered text: it already holds the evidence within seed 001's token
//! budgets, and a model pays for every extra field.

use super::{Parameters, ToolError};
use lore_core::SkillPath;
use lore_core::graph::PathMode;
use lore_core::id::EpisodeId;
use lore_core::model::{Episode, EpisodeOutcome};
use lore_engine::{EpisodeQuery, PageRequest, PatternQuery, Rendered};
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

/// Parameters of `decision_sequence`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeParams {
    /// The episode's ID, as `record_episode` or `list_episodes` returned it.
    pub id: String,
    /// The most tokens the answer may take; 500 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
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

/// Parameters of `list_episodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListEpisodesParams {
    /// Only this skill, `domain/skill`; omit for every skill you may read.
    #[serde(default)]
    pub skill: Option<String>,
    /// Only episodes that ended so: `success`, `partial` or `failure`.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Only episodes started at or after this time (RFC 3339, for example
    /// `2026-01-01T00:00:00Z`).
    #[serde(default)]
    pub since: Option<String>,
    /// How many, 1 to 100; 20 when omitted.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many (use `next_offset` from the previous call to read the next page).
    #[serde(default)]
    pub offset: Option<usize>,
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

/// Parameters of `causal_path`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CausalPathParams {
    /// Where the path starts: `decision:LABEL` (what was chosen), `event:LABEL` (what
    /// happened), `outcome:success|partial|failure`, or a label alone. Labels are matched in
    /// lower case; an exact label wins, else any label containing the text.
    pub from: String,
    /// Where the path ends, in the same form (often `outcome:failure`).
    pub to: String,
    /// `shortest` (fewest links, the default) or `strongest` (the links most often observed).
    #[serde(default)]
    pub mode: Option<String>,
    /// The most tokens the answer may take; 200 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
}

/// Parameters of `what_if`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhatIfParams {
    /// The episode's ID.
    pub episode: String,
    /// The decision's ID inside it (for example `d001`).
    pub decision: String,
    /// The option that was not chosen; one of the decision's options when it lists them.
    pub alternative: String,
    /// How alike another situation must be, as the share of this decision's context words it
    /// shares, 0 to 1; 0.5 when omitted.
    #[serde(default)]
    pub min_overlap: Option<f64>,
    /// The most tokens the answer may take; 1000 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
}

/// Parameters of `similar_decisions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarParams {
    /// The situation you are deciding in, in plain words (for example `choosing a cache for
    /// session data`).
    pub context: String,
    /// How many decisions, 1 to 100; 5 when omitted.
    #[serde(default)]
    pub limit: Option<usize>,
    /// The most tokens the answer may take; 500 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
}

/// Parameters of `find_patterns` and `find_anti_patterns`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternParams {
    /// For `find_patterns`: the lowest success rate, 0 to 1 (0.7 when omitted). For
    /// `find_anti_patterns`: the highest (0.3 when omitted).
    #[serde(default)]
    pub success_rate: Option<f64>,
    /// The fewest times a pattern must have occurred; 3 for patterns, 2 for anti-patterns when
    /// omitted.
    #[serde(default)]
    pub min_occurrences: Option<u64>,
    /// How many, 1 to 100; 10 when omitted.
    #[serde(default)]
    pub limit: Option<usize>,
    /// The most tokens the answer may take; 100 when omitted.
    #[serde(default)]
    pub budget: Option<usize>,
}

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

/// One episode in a listing.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodeLine {
    /// Its ID.
    pub id: String,
    /// Its skill.
    pub skill: String,
    /// How it ended.
    pub outcome: String,
    /// When it started (RFC 3339).
    pub at: String,
    /// What it set out to do.
    pub task: String,
}

/// A page of episodes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodeList {
    /// The episodes, oldest first.
    pub episodes: Vec<EpisodeLine>,
    /// The offset of the next page; absent on the last one.
    pub next_offset: Option<usize>,
}

/// A causal path.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PathAnswer {
    /// Whether a path exists.
    pub found: bool,
    /// The product of its links' weights, 0 to 1.
    pub strength: f64,
    /// The path with each link's evidence.
    pub text: String,
    /// Whether the text was cut to fit the budget.
    pub truncated: bool,
}

/// A what-if analysis.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WhatIfAnswer {
    /// Whether any similar decision elsewhere chose the alternative; false means no recorded
    /// evidence either way.
    pub evidence: bool,
    /// How often the alternative succeeded elsewhere, 0 to 1; absent without evidence.
    pub alternative_success_rate: Option<f64>,
    /// How often the same choice as here succeeded elsewhere; absent without evidence.
    pub chosen_success_rate: Option<f64>,
    /// The analysis with its cases.
    pub text: String,
    /// Whether the text was cut to fit the budget.
    pub truncated: bool,
}

fn mode(raw: Option<&str>) -> lore_core::Result<PathMode> {
    match raw {
        None | Some("shortest") => Ok(PathMode::Shortest),
        Some("strongest") => Ok(PathMode::Strongest),
        Some(other) => Err(lore_core::Error::invalid(
            "mode",
            format!("{other:?}; expected shortest or strongest"),
        )),
    }
}

fn since(raw: Option<&str>) -> lore_core::Result<Option<chrono::DateTime<chrono::Utc>>> {
    raw.map(|s| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| lore_core::Error::invalid("since", format!("{s:?}: {e}")))
    })
    .transpose()
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

    /// The decisions of one episode in the order they were made, each with its context, the
    /// option chosen over the others, and why.
    #[tool(annotations(
        title = "Decision sequence",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn decision_sequence(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<EpisodeParams>,
    ) -> Result<Json<Answer>, ToolError> {
        let seq = self
            .call(&ctx, move |e| {
                e.decision_sequence(&EpisodeId::parse(&p.id)?, p.budget)
            })
            .await?;
        Ok(Json(seq.rendered.into()))
    }

    /// Recorded episodes you may read, oldest first, optionally only failures (or successes)
    /// since a date: to find the sessions worth replaying.
    #[tool(annotations(
        title = "List episodes",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_episodes(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ListEpisodesParams>,
    ) -> Result<Json<EpisodeList>, ToolError> {
        let page = self
            .call(&ctx, move |e| {
                let query = EpisodeQuery {
                    skill: p.skill.as_deref().map(SkillPath::parse).transpose()?,
                    outcome: p
                        .outcome
                        .as_deref()
                        .map(EpisodeOutcome::parse)
                        .transpose()?,
                    since: since(p.since.as_deref())?,
                };
                let limit = p.limit.unwrap_or(20);
                if limit > 100 {
                    return Err(lore_core::Error::invalid("limit", "at most 100"));
                }
                let offset = p.offset.unwrap_or(0);
                e.episodes_page(&query, PageRequest { limit, offset })
            })
            .await?;
        Ok(Json(EpisodeList {
            episodes: page
                .items
                .iter()
                .map(|s| EpisodeLine {
                    id: s.id.to_string(),
                    skill: s.skill.to_string(),
                    outcome: s.outcome.as_str().to_owned(),
                    at: s.timestamp.to_rfc3339(),
                    task: s.task.clone(),
                })
                .collect(),
            next_offset: page.next_offset,
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

    /// How one thing led to another across recorded episodes: the chain of causes from a
    /// decision or event to an outcome (or any node), each link with how often it was
    /// observed. Use it to explain a failure before repeating a choice.
    #[tool(annotations(title = "Causal path", read_only_hint = true, open_world_hint = false))]
    async fn causal_path(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<CausalPathParams>,
    ) -> Result<Json<PathAnswer>, ToolError> {
        let path = self
            .call(&ctx, move |e| {
                e.causal_path(&p.from, &p.to, mode(p.mode.as_deref())?, p.budget)
            })
            .await?;
        Ok(Json(PathAnswer {
            found: !path.steps.is_empty(),
            strength: path.strength,
            text: path.rendered.text,
            truncated: path.rendered.truncated,
        }))
    }

    /// What happened in other recorded episodes when a situation like this decision's chose
    /// the alternative: their outcomes and success rate, beside those that made the same
    /// choice. Says plainly when there is no evidence.
    #[tool(annotations(title = "What if", read_only_hint = true, open_world_hint = false))]
    async fn what_if(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<WhatIfParams>,
    ) -> Result<Json<WhatIfAnswer>, ToolError> {
        let answer = self
            .call(&ctx, move |e| {
                e.what_if(
                    &EpisodeId::parse(&p.episode)?,
                    &p.decision,
                    &p.alternative,
                    p.min_overlap,
                    p.budget,
                )
            })
            .await?;
        Ok(Json(WhatIfAnswer {
            evidence: answer.evidence,
            alternative_success_rate: answer.alternative_stats.success_rate,
            chosen_success_rate: answer.chosen_stats.success_rate,
            text: answer.rendered.text,
            truncated: answer.rendered.truncated,
        }))
    }

    /// Decisions recorded in situations like the one you are in, best match first, with what
    /// was chosen and how it turned out. Call it before an important choice.
    #[tool(annotations(
        title = "Similar decisions",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn similar_decisions(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<SimilarParams>,
    ) -> Result<Json<Answer>, ToolError> {
        let found = self
            .call(&ctx, move |e| {
                e.similar_decisions(&p.context, p.limit.unwrap_or(5), p.budget)
            })
            .await?;
        Ok(Json(found.rendered.into()))
    }

    /// Situation → action patterns that usually worked across recorded episodes, best first.
    #[tool(annotations(
        title = "Find patterns",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn find_patterns(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<PatternParams>,
    ) -> Result<Json<Answer>, ToolError> {
        let base = PatternQuery::patterns();
        let query = PatternQuery {
            min_success_rate: p.success_rate.or(base.min_success_rate),
            ..pattern_query(&p, base)
        };
        let found = self
            .call(&ctx, move |e| e.patterns(query, p.budget))
            .await?;
        Ok(Json(found.rendered.into()))
    }

    /// Situation → action patterns that usually failed across recorded episodes, worst first:
    /// what to avoid.
    #[tool(annotations(
        title = "Find anti-patterns",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn find_anti_patterns(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<PatternParams>,
    ) -> Result<Json<Answer>, ToolError> {
        let base = PatternQuery::anti_patterns();
        let query = PatternQuery {
            max_success_rate: p.success_rate.or(base.max_success_rate),
            ..pattern_query(&p, base)
        };
        let found = self
            .call(&ctx, move |e| e.patterns(query, p.budget))
            .await?;
        Ok(Json(found.rendered.into()))
    }
}

fn pattern_query(p: &PatternParams, base: PatternQuery) -> PatternQuery {
    PatternQuery {
        min_occurrences: p.min_occurrences.unwrap_or(base.min_occurrences),
        limit: p.limit.unwrap_or(base.limit),
        ..base
    }
}
