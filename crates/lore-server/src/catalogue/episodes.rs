//! Episodes and the causal graph they build: recording one (as JSON or as a session log),
//! reading one or a session's, listing them, exporting the graph; the graph's questions (one
//! episode's decisions in order, the causal path between two nodes, what an alternative did
//! elsewhere, decisions made in like situations, the patterns that worked and those that
//! failed); and a reviewer's purge of one episode.
//!
//! Every answer carries its evidence as structured fields and as `text`, the same evidence
//! quoted within a token budget: a model reads the text, a program the fields.

use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use lore_core::SkillPath;
use lore_core::graph::PathMode;
use lore_core::graph_export::GraphFormat;
use lore_core::id::EpisodeId;
use lore_core::model::{Episode, EpisodeOutcome};
use lore_engine::{
    Attribution, CausalPath, DecisionSequence, Engine, EpisodePurgeReport, EpisodeQuery,
    EpisodeReceipt, EpisodeSummary, EpisodeView, Page, PageRequest, PatternQuery, Patterns,
    SimilarDecisions, WhatIf,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Operation, Rest, Tool};
use crate::auth::Role;

/// The episode listing and the causal-graph operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Record>();
    each.one::<Extract>();
    each.one::<Get>();
    each.one::<Session>();
    each.one::<Export>();
    each.one::<List>();
    each.one::<Sequence>();
    each.one::<Purge>();
    each.one::<Path>();
    each.one::<Alternative>();
    each.one::<Similar>();
    each.one::<Worked>();
    each.one::<Failed>();
}

impl Component for EpisodeReceipt {
    const NAME: &'static str = "EpisodeReceipt";
}

impl Component for Episode {
    const NAME: &'static str = "Episode";
}

/// An episode as a caller sends it: the stored [`Episode`] without what Lore fills in.
#[derive(Debug)]
pub struct NewEpisode;

impl Component for NewEpisode {
    const NAME: &'static str = "NewEpisode";
}

impl Component for Page<EpisodeSummary> {
    const NAME: &'static str = "EpisodePage";
}

impl Component for EpisodeOutcome {
    const NAME: &'static str = "EpisodeOutcome";
}

impl Component for DecisionSequence {
    const NAME: &'static str = "DecisionSequence";
}

impl Component for EpisodePurgeReport {
    const NAME: &'static str = "EpisodePurgeReport";
}

impl Component for CausalPath {
    const NAME: &'static str = "CausalPath";
}

impl Component for WhatIf {
    const NAME: &'static str = "WhatIf";
}

impl Component for SimilarDecisions {
    const NAME: &'static str = "SimilarDecisions";
}

impl Component for Patterns {
    const NAME: &'static str = "Patterns";
}

const fn tool(name: &'static str, title: &'static str) -> Option<Tool> {
    Some(Tool {
        name,
        group: "episodes",
        title,
    })
}

/// An episode to record, as JSON or as a session log.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordInput {
    /// The episode as a JSON object. Every ID a link names must be a decision or event of
    /// this episode. Give this or `log`.
    #[schemars(with = "Option<Documented<NewEpisode>>")]
    episode: Option<Value>,
    /// Instead of `episode`: the session log in Lore's markdown format (a `# Session ID`
    /// heading; `Skill:`, `Date:`, `Outcome:`, `Task:` lines; `## Decisions` with `### d001
    /// [design] context` and `- Options: a | b`, `- Chosen:`, `- Rationale:`, `- Outcome:`,
    /// `- Effects:` lines; `## Events` lines `- e001 [error] what happened (caused by: d001;
    /// leads to: e002)`; `## Metrics`; `## Lessons`). A line it cannot read is refused with its
    /// number.
    log: Option<String>,
    /// With `log`: the skill, `domain/skill`, when the log has no `Skill:` line.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// True to replace an episode already recorded under the same ID; otherwise a taken ID is
    /// refused.
    #[serde(default)]
    replace: bool,
}

/// `record_episode`, `POST /v1/episodes` (the body is the episode, `?replace=true` in the
/// query).
pub struct Record;

impl Operation for Record {
    type Input = RecordInput;
    type Output = Described<EpisodeReceipt>;
    const NAME: &'static str = "record_episode";
    const SUMMARY: &'static str = "Record an episode: one session's task, the decisions made \
        (the options weighed and why), what happened, what caused what, and how it ended. Lore \
        adds it to a causal graph across sessions, so later tasks can ask what led to failures \
        and which choices worked. Personal data and secrets are redacted before storage; a \
        taken ID is refused unless `replace` is true.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Rest::post("/v1/episodes", StatusCode::CREATED);
    const ALSO: &'static [StatusCode] = &[StatusCode::OK];
    const TOOL: Option<Tool> = tool("record_episode", "Record an episode");
    const ANSWER: &'static str = "The episode as stored (201; 200 when it replaced one).";
    const QUERY: &'static [&'static str] = &["replace"];
    const BODY: Option<&'static str> = Some("episode");

    fn run(engine: &Engine, r: RecordInput) -> lore_core::Result<Self::Output> {
        let episode = match (r.episode, r.log) {
            (Some(json), None) if r.skill.is_none() => Episode::from_json(json, None)?,
            (None, Some(log)) => {
                lore_engine::extract::episode_from_markdown(&log, r.skill.as_ref())?
            }
            (Some(_), None) => {
                let why = "goes with `log`; an `episode` names its own skill";
                return Err(lore_core::Error::invalid("skill", why));
            }
            _ => {
                let why = "give the episode as JSON (`episode`) or as a session log (`log`), \
                    one of them";
                return Err(lore_core::Error::invalid("episode", why));
            }
        };
        engine.add_episode(episode, r.replace).map(Described)
    }

    fn status(output: &Self::Output) -> Option<StatusCode> {
        output.0.replaced.then_some(StatusCode::OK)
    }
}

/// A session log to record.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractInput {
    /// The session log: a `# Session` heading, header lines (Skill, Agent, Date, Outcome,
    /// Task, ID), then `## Decisions`, `## Events`, `## Metrics` and `## Lessons`.
    #[schemars(length(min = 1))]
    log: String,
    /// The skill, `domain/skill`, when the log has no `Skill:` line.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Replace an episode stored under the same ID (the log's `ID:` line).
    #[serde(default)]
    replace: bool,
}

/// `extract_episode`, `POST /v1/episodes/extract`: `record_episode` with a log, for an agent
/// runtime's end-of-session hook.
pub struct Extract;

impl Operation for Extract {
    type Input = ExtractInput;
    type Output = Described<EpisodeReceipt>;
    const NAME: &'static str = "extract_episode";
    const SUMMARY: &'static str = "Record an episode from a session log in Lore's markdown (the \
        format `lore episode extract` reads), for an agent runtime to call at the end of a \
        session. A line the parser cannot read is refused naming it; otherwise as \
        recordEpisode.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Rest::post("/v1/episodes/extract", StatusCode::CREATED);
    const ALSO: &'static [StatusCode] = &[StatusCode::OK];
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = Record::ANSWER;
    const QUERY: &'static [&'static str] = &["replace"];

    fn run(engine: &Engine, x: ExtractInput) -> lore_core::Result<Self::Output> {
        let input = RecordInput {
            episode: None,
            log: Some(x.log),
            skill: x.skill,
            replace: x.replace,
        };
        Record::run(engine, input)
    }

    fn status(output: &Self::Output) -> Option<StatusCode> {
        Record::status(output)
    }
}

/// One episode's record and text. A model is answered the text alone: the record holds the
/// same evidence again, and only the text keeps to the budget asked for.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Shown {
    /// The episode as stored (not in a model's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Documented<Episode>>")]
    episode: Option<Episode>,
    /// The episode as text, memory quoted as data (`> …`), cut tail-first to the budget.
    text: String,
    /// The tokens the text takes.
    tokens: usize,
    /// The budget it was held to.
    budget: usize,
    /// Whether it was cut to fit (ask again with a larger `budget` for the rest).
    truncated: bool,
}

impl From<EpisodeView> for Shown {
    fn from(v: EpisodeView) -> Self {
        Self {
            episode: Some(v.episode),
            text: v.rendered.text,
            tokens: v.rendered.tokens,
            budget: v.rendered.budget,
            truncated: v.rendered.truncated,
        }
    }
}

impl Shown {
    fn for_model(self) -> Self {
        Self {
            episode: None,
            ..self
        }
    }
}

/// `get_episode`, `GET /v1/episodes/{id}`.
pub struct Get;

impl Operation for Get {
    type Input = EpisodeInput;
    type Output = Shown;
    const NAME: &'static str = "get_episode";
    const SUMMARY: &'static str = "One recorded episode as text: task, metrics, lessons, \
        decisions and events, quoted, within a token budget (500 when omitted).";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/episodes/{id}");
    const TOOL: Option<Tool> = tool("get_episode", "Get an episode");
    const ANSWER: &'static str = "The episode and its text.";

    fn run(engine: &Engine, q: EpisodeInput) -> lore_core::Result<Shown> {
        engine.episode_view(&q.id, q.budget).map(Shown::from)
    }

    fn for_model(output: Shown) -> Shown {
        output.for_model()
    }
}

/// One session, its episodes' answers within a budget each.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionInput {
    /// The session the episodes were recorded for.
    #[schemars(length(min = 1, max = 128))]
    session: String,
    /// The most tokens each episode's text may take (500 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// A session's episodes, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionEpisodes {
    /// The session.
    session: String,
    /// Its episodes, oldest first.
    items: Vec<Shown>,
}

/// `session_episodes`, `GET /v1/sessions/{session}/episodes`.
pub struct Session;

impl Operation for Session {
    type Input = SessionInput;
    type Output = SessionEpisodes;
    const NAME: &'static str = "get_session_episodes";
    const SUMMARY: &'static str = "The episodes recorded for one session, oldest first, each \
        as text within a token budget (500 when omitted); not found when there are none.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/sessions/{session}/episodes");
    const TOOL: Option<Tool> = tool("session_episodes", "A session's episodes");
    const ANSWER: &'static str = "The session's episodes.";

    fn run(engine: &Engine, q: SessionInput) -> lore_core::Result<SessionEpisodes> {
        let views = engine.session_episodes(&q.session, q.budget)?;
        Ok(SessionEpisodes {
            session: q.session,
            items: views.into_iter().map(Shown::from).collect(),
        })
    }

    fn for_model(output: SessionEpisodes) -> SessionEpisodes {
        SessionEpisodes {
            items: output.items.into_iter().map(Shown::for_model).collect(),
            ..output
        }
    }
}

// GraphFormat's values; the field's own description says what each is.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum FormatShape {
    Json,
    Dot,
}

/// How to export the graph.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportInput {
    /// `json` (the `causal-graph.json` shape: numbered nodes, edges between them, patterns; the
    /// default) or `dot` (Graphviz, to draw it).
    #[schemars(with = "Option<FormatShape>")]
    format: Option<String>,
}

/// The whole causal graph.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GraphExport {
    /// `json` or `dot`.
    format: &'static str,
    /// The graph as text (a model's answer at most 256 KiB of it).
    graph: String,
    /// Whether the graph was cut to that size (ask `causal_path` or the patterns instead).
    truncated: bool,
}

/// The most of an exported graph a model is answered: a model's context is no place for more.
const MAX_EXPORT: usize = 256 * 1024;

/// `export_causal_graph`, `GET /v1/graph/export`: REST answers the graph itself, as JSON or
/// as Graphviz DOT.
pub struct Export;

impl Operation for Export {
    type Input = ExportInput;
    type Output = GraphExport;
    const NAME: &'static str = "graph_export";
    const SUMMARY: &'static str = "The whole causal graph of the recorded episodes, to keep or \
        draw elsewhere: JSON (the causal-graph.json shape: nodes with how often they occurred \
        and their success rate, weighted edges, patterns) or Graphviz DOT. For one failure, \
        causal_path answers in far fewer tokens.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/export");
    const TOOL: Option<Tool> = tool("export_causal_graph", "Export the causal graph");
    const ANSWER: &'static str = "The graph.";
    const DOCUMENTS: &'static [&'static str] = &["application/json", DOT];

    fn run(engine: &Engine, q: ExportInput) -> lore_core::Result<GraphExport> {
        let format = q
            .format
            .as_deref()
            .map_or(Ok(GraphFormat::Json), GraphFormat::parse)?;
        Ok(GraphExport {
            format: match format {
                GraphFormat::Json => "json",
                GraphFormat::Dot => "dot",
            },
            graph: engine.causal_graph_export(format)?,
            truncated: false,
        })
    }

    fn for_model(mut output: GraphExport) -> GraphExport {
        if output.graph.len() > MAX_EXPORT {
            let mut cut = MAX_EXPORT;
            while !output.graph.is_char_boundary(cut) {
                cut -= 1;
            }
            output.graph.truncate(cut);
            output.truncated = true;
        }
        output
    }

    fn document(output: &GraphExport) -> Option<(&'static str, &str)> {
        let media = if output.format == "dot" {
            DOT
        } else {
            "application/json"
        };
        Some((media, &output.graph))
    }
}

const DOT: &str = "text/vnd.graphviz; charset=utf-8";

/// Which episodes to list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Only this skill's, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Only episodes that ended so: `success`, `partial` or `failure`.
    #[schemars(with = "Option<Documented<EpisodeOutcome>>")]
    outcome: Option<EpisodeOutcome>,
    /// Only episodes started at or after this time (RFC 3339, for example
    /// `2026-01-01T00:00:00Z`).
    #[schemars(with = "Option<String>")]
    since: Option<DateTime<Utc>>,
    /// At most this many, 1 to 500 (50 when omitted).
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// `list_episodes`, `GET /v1/episodes`.
pub struct List;

impl Operation for List {
    type Input = ListInput;
    type Output = Described<Page<EpisodeSummary>>;
    const NAME: &'static str = "list_episodes";
    const SUMMARY: &'static str = "Recorded episodes in the caller's scope, oldest first, a \
        page at a time, optionally only failures (or successes) since a date: to find the \
        sessions worth replaying.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/episodes");
    const TOOL: Option<Tool> = tool("list_episodes", "List episodes");
    const ANSWER: &'static str = "A page of episodes.";

    fn run(engine: &Engine, q: ListInput) -> lore_core::Result<Self::Output> {
        let query = EpisodeQuery {
            skill: q.skill,
            outcome: q.outcome,
            since: q.since,
        };
        let page = PageRequest {
            limit: q.limit.unwrap_or(50),
            offset: q.offset.unwrap_or(0),
        };
        engine.episodes_page(&query, page).map(Described)
    }
}

/// One episode, its answer within a budget.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeInput {
    /// The episode's ID, as recording or listing returned it.
    #[schemars(with = "String")]
    id: EpisodeId,
    /// The most tokens the text may take (500 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `decision_sequence`, `GET /v1/episodes/{id}/decisions`.
pub struct Sequence;

impl Operation for Sequence {
    type Input = EpisodeInput;
    type Output = Described<DecisionSequence>;
    const NAME: &'static str = "get_decision_sequence";
    const SUMMARY: &'static str = "The decisions of one episode in the order they were made, \
        each with its context, the option chosen over the others, and why.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/episodes/{id}/decisions");
    const TOOL: Option<Tool> = tool("decision_sequence", "Decision sequence");
    const ANSWER: &'static str = "The decisions, in order, and their text.";

    fn run(engine: &Engine, q: EpisodeInput) -> lore_core::Result<Self::Output> {
        engine.decision_sequence(&q.id, q.budget).map(Described)
    }
}

/// The episode to erase, and why.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeInput {
    /// The episode's ID.
    #[schemars(with = "String")]
    id: EpisodeId,
    /// Why; the audit entry keeps it with the credential (a purge without one is refused).
    #[schemars(regex(pattern = r"\S"))]
    reason: String,
}

/// `purge_episode`, `POST /v1/episodes/{id}/purge`.
pub struct Purge;

impl Operation for Purge {
    type Input = PurgeInput;
    type Output = Described<EpisodePurgeReport>;
    const NAME: &'static str = "purge_episode";
    const SUMMARY: &'static str = "For reviewers: erase an episode's content for good (its \
        task becomes [purged]; decisions, events, links and lessons are dropped) and take it out \
        of the causal graph, with an audit entry.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = Rest::post("/v1/episodes/{id}/purge", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "What was erased.";

    fn run(engine: &Engine, p: PurgeInput) -> lore_core::Result<Self::Output> {
        let why = Attribution::new(None, p.reason);
        engine.purge_episode(&p.id, &why).map(Described)
    }
}

// PathMode's values; the field's own description says what each does.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum PathModeShape {
    Shortest,
    Strongest,
}

/// Two nodes of the graph.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathInput {
    /// Where the path starts: `decision:LABEL` (what was chosen), `event:LABEL` (what
    /// happened), `outcome:success|partial|failure`, or a label alone. Labels are matched in
    /// lower case; an exact label wins, else any label containing the text.
    #[schemars(length(min = 1))]
    from: String,
    /// Where the path ends, in the same form (often `outcome:failure`).
    #[schemars(length(min = 1))]
    to: String,
    /// `shortest` (fewest links, the default) or `strongest` (the links most often observed).
    #[serde(default)]
    #[schemars(with = "Option<PathModeShape>")]
    mode: PathMode,
    /// The most tokens the text may take (200 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `causal_path`, `GET /v1/graph/path`.
pub struct Path;

impl Operation for Path {
    type Input = PathInput;
    type Output = Described<CausalPath>;
    const NAME: &'static str = "causal_path";
    const SUMMARY: &'static str = "How one thing led to another across recorded episodes: the \
        chain of causes from a decision or event to an outcome (or any node), each link with \
        how often it was observed; steps is empty when there is none. Use it to explain a \
        failure before repeating a choice.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/path");
    const TOOL: Option<Tool> = tool("causal_path", "Causal path");
    const ANSWER: &'static str = "The path, each step with its evidence.";

    fn run(engine: &Engine, q: PathInput) -> lore_core::Result<Self::Output> {
        engine
            .causal_path(&q.from, &q.to, q.mode, q.budget)
            .map(Described)
    }
}

/// A decision and the option it did not take.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhatIfInput {
    /// The episode's ID.
    #[schemars(with = "String")]
    episode: EpisodeId,
    /// The decision's ID inside it (for example `d001`).
    #[schemars(length(min = 1))]
    decision: String,
    /// The option that was not chosen; one of the decision's options when it lists them.
    #[schemars(length(min = 1))]
    alternative: String,
    /// How alike another situation must be, as the share of this decision's context words it
    /// shares, 0 to 1 (0.5 when omitted).
    #[schemars(range(min = 0.0, max = 1.0))]
    min_overlap: Option<f64>,
    /// The most tokens the text may take (1000 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `what_if`, `GET /v1/graph/what-if`.
pub struct Alternative;

impl Operation for Alternative {
    type Input = WhatIfInput;
    type Output = Described<WhatIf>;
    const NAME: &'static str = "what_if";
    const SUMMARY: &'static str = "What happened in other recorded episodes when a situation \
        like this decision's chose the alternative: their outcomes and success rate, beside \
        those that made the same choice; evidence is false when none did.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/what-if");
    const TOOL: Option<Tool> = tool("what_if", "What if");
    const ANSWER: &'static str = "The cases either way and their outcomes.";

    fn run(engine: &Engine, q: WhatIfInput) -> lore_core::Result<Self::Output> {
        engine
            .what_if(
                &q.episode,
                &q.decision,
                &q.alternative,
                q.min_overlap,
                q.budget,
            )
            .map(Described)
    }
}

/// A situation to match.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarInput {
    /// The situation you are deciding in, in plain words (for example `choosing a cache for
    /// session data`).
    #[schemars(length(min = 1))]
    context: String,
    /// How many decisions, 1 to 100 (5 when omitted).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The most tokens the text may take (500 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `similar_decisions`, `GET /v1/graph/similar`.
pub struct Similar;

impl Operation for Similar {
    type Input = SimilarInput;
    type Output = Described<SimilarDecisions>;
    const NAME: &'static str = "similar_decisions";
    const SUMMARY: &'static str = "Decisions recorded in situations like the one you are in, \
        best match first, with what was chosen and how it turned out. Call it before an \
        important choice.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/similar");
    const TOOL: Option<Tool> = tool("similar_decisions", "Similar decisions");
    const ANSWER: &'static str = "The decisions, best match first.";

    fn run(engine: &Engine, q: SimilarInput) -> lore_core::Result<Self::Output> {
        engine
            .similar_decisions(&q.context, q.limit.unwrap_or(5), q.budget)
            .map(Described)
    }
}

/// Which working patterns.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkedInput {
    /// The lowest success rate, 0 to 1 (0.7 when omitted).
    #[schemars(range(min = 0.0, max = 1.0))]
    min_success_rate: Option<f64>,
    /// The fewest times a pattern occurred (3 when omitted).
    min_occurrences: Option<u64>,
    /// How many, 1 to 100 (10 when omitted).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The most tokens the text may take (100 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `find_patterns`, `GET /v1/graph/patterns`.
pub struct Worked;

impl Operation for Worked {
    type Input = WorkedInput;
    type Output = Described<Patterns>;
    const NAME: &'static str = "patterns";
    const SUMMARY: &'static str = "Situation → action patterns that usually worked across \
        recorded episodes, best first.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/patterns");
    const TOOL: Option<Tool> = tool("find_patterns", "Find patterns");
    const ANSWER: &'static str = "The patterns, best first.";

    fn run(engine: &Engine, q: WorkedInput) -> lore_core::Result<Self::Output> {
        let base = PatternQuery::patterns();
        let query = PatternQuery {
            min_success_rate: q.min_success_rate.or(base.min_success_rate),
            ..narrowed(base, q.min_occurrences, q.limit)
        };
        engine.patterns(query, q.budget).map(Described)
    }
}

/// Which failing patterns.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailedInput {
    /// The highest success rate, 0 to 1 (0.3 when omitted).
    #[schemars(range(min = 0.0, max = 1.0))]
    max_success_rate: Option<f64>,
    /// The fewest times a pattern occurred (2 when omitted).
    min_occurrences: Option<u64>,
    /// How many, 1 to 100 (10 when omitted).
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The most tokens the text may take (100 when omitted).
    #[schemars(range(min = 1))]
    budget: Option<usize>,
}

/// `find_anti_patterns`, `GET /v1/graph/anti-patterns`.
pub struct Failed;

impl Operation for Failed {
    type Input = FailedInput;
    type Output = Described<Patterns>;
    const NAME: &'static str = "anti_patterns";
    const SUMMARY: &'static str = "Situation → action patterns that usually failed across \
        recorded episodes, worst first: what to avoid.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = Rest::get("/v1/graph/anti-patterns");
    const TOOL: Option<Tool> = tool("find_anti_patterns", "Find anti-patterns");
    const ANSWER: &'static str = "The patterns, worst first.";

    fn run(engine: &Engine, q: FailedInput) -> lore_core::Result<Self::Output> {
        let base = PatternQuery::anti_patterns();
        let query = PatternQuery {
            max_success_rate: q.max_success_rate.or(base.max_success_rate),
            ..narrowed(base, q.min_occurrences, q.limit)
        };
        engine.patterns(query, q.budget).map(Described)
    }
}

/// `base` with the caller's occurrence floor and count, where given.
fn narrowed(
    base: PatternQuery,
    min_occurrences: Option<u64>,
    limit: Option<usize>,
) -> PatternQuery {
    PatternQuery {
        min_occurrences: min_occurrences.unwrap_or(base.min_occurrences),
        limit: limit.unwrap_or(base.limit),
        ..base
    }
}
