//! Digests and evaluations: a skill's digest (a short summary of its approved lessons and
//! decisions) read by topic, and question sets graded against what the memory answers.
//!
//! Building digests, defining sets and running them are reviewers' acts: a digest reaches
//! agents' contexts without a review of its own, and a run is a record the team reads as
//! evidence. Reading is open to every role. Who built, defined or ran something is the
//! credential.
//!
//! A digest answered to a model is quoted: its markdown under Lore's provenance line, every
//! line of it behind `> `, as the context's digest layer shows it, so no rule or decision in
//! it stands as a bare line a model could take for an instruction
//! ([`Operation::for_model`]). A program gets the markdown as stored, in the same field.

use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::model::{Digest, EvalQuestion, EvalRun, EvalSet};
use lore_engine::{DigestReport, Engine, EvalRunRequest, EvalTrend, NewEvalSet, PageRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Operation, Rest, SkillPage, Tool, Verb};
use crate::auth::Role;

/// The digest and evaluation operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<Build>();
    each.one::<List>();
    each.one::<History>();
    each.one::<Define>();
    each.one::<Sets>();
    each.one::<RunSets>();
    each.one::<Runs>();
    each.one::<Trends>();
}

impl Component for Digest {
    const NAME: &'static str = "Digest";
}

impl Component for EvalQuestion {
    const NAME: &'static str = "EvalQuestion";
}

impl Component for EvalSet {
    const NAME: &'static str = "EvalSet";
}

impl Component for EvalRun {
    const NAME: &'static str = "EvalRun";
}

impl Component for EvalTrend {
    const NAME: &'static str = "EvalTrend";
}

const fn tool(name: &'static str, title: &'static str) -> Option<Tool> {
    Some(Tool {
        name,
        group: "knowledge",
        title,
    })
}

const fn rest(verb: Verb, path: &'static str, status: StatusCode) -> Option<Rest> {
    Some(Rest { verb, path, status })
}

/// Each digest's markdown as a model reads it: quoted under its provenance line.
fn quoted(digests: &mut [Digest]) {
    for digest in digests {
        digest.markdown = lore_engine::render_digest(digest);
    }
}

/// Which digests to make.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildInput {
    /// Only this skill's, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Make them again even when no source changed.
    #[serde(default)]
    force: bool,
}

/// The digests made and the skills left as they were.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Built {
    /// The digests made (new versions).
    #[schemars(with = "Vec<Documented<Digest>>")]
    built: Vec<Digest>,
    /// The skills whose sources had not changed since their digest.
    #[schemars(with = "Vec<Documented<SkillPath>>")]
    unchanged: Vec<SkillPath>,
}

/// `build_digests`, `POST /v1/digests/build`.
pub struct Build;

impl Operation for Build {
    type Input = BuildInput;
    type Output = Built;
    const NAME: &'static str = "build_digests";
    const SUMMARY: &'static str = "For reviewers: make the digest of each skill in scope (of \
        skill only, when given) whose approved lessons or decisions changed since its last \
        digest; force makes them all again. Extractive unless the server has a model; upkeep \
        does this too.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/digests/build", StatusCode::OK);
    const TOOL: Option<Tool> = tool("build_digests", "Build digests");
    const ANSWER: &'static str = "The digests made and the skills whose sources had not changed.";

    fn run(engine: &Engine, b: BuildInput) -> lore_core::Result<Built> {
        let DigestReport { built, unchanged } = engine.build_digests(b.skill.as_ref(), b.force)?;
        Ok(Built { built, unchanged })
    }

    fn for_model(mut output: Built) -> Built {
        quoted(&mut output.built);
        output
    }
}

/// Digests, a page of them when listed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Digests {
    /// The digests; over MCP each one's markdown is quoted under its provenance line.
    #[schemars(with = "Vec<Documented<Digest>>")]
    digests: Vec<Digest>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `list_digests`, `GET /v1/digests`.
pub struct List;

impl Operation for List {
    type Input = SkillPage;
    type Output = Digests;
    const NAME: &'static str = "list_digests";
    const SUMMARY: &'static str = "Read the digest of each skill in scope (of skill only, \
        when given): a short markdown summary of its approved lessons and the decisions people \
        made, each point citing its source ID. The gist of what the team learned about a \
        topic.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/digests", StatusCode::OK);
    const TOOL: Option<Tool> = tool("read_digest", "Read a digest");
    const ANSWER: &'static str = "The newest digest of each skill.";

    fn run(engine: &Engine, q: SkillPage) -> lore_core::Result<Digests> {
        let all = engine.digests(q.skill.as_ref())?;
        let (digests, next_offset) = super::window(all, q.limit, q.offset)?;
        Ok(Digests {
            digests,
            next_offset,
        })
    }

    fn for_model(mut output: Digests) -> Digests {
        quoted(&mut output.digests);
        output
    }
}

/// Whose digest versions, a page of them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryInput {
    /// The skill, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    /// At most this many, 1 to 500 (10 when omitted), with `next_offset` when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many newest (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// `digest_history`, `GET /v1/digests/history`.
pub struct History;

impl Operation for History {
    type Input = HistoryInput;
    type Output = Digests;
    const NAME: &'static str = "digest_history";
    const SUMMARY: &'static str = "A skill's digest versions, newest first, a page at a time: \
        how its summary changed as the memory learned.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/digests/history", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The versions, newest first.";

    fn run(engine: &Engine, q: HistoryInput) -> lore_core::Result<Digests> {
        let page = PageRequest {
            limit: q.limit.unwrap_or(10),
            offset: q.offset.unwrap_or(0),
        };
        let page = engine.digest_history(&q.skill, page)?;
        Ok(Digests {
            digests: page.items,
            next_offset: page.next_offset,
        })
    }

    fn for_model(mut output: Digests) -> Digests {
        quoted(&mut output.digests);
        output
    }
}

/// A question set.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetInput {
    /// The skill whose memory the set tests, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: Option<SkillPath>,
    /// The set's name; a set of the same skill and name is replaced.
    #[serde(default)]
    #[schemars(length(min = 1, max = 256))]
    name: String,
    /// 1 to 200 questions, each with the answer a good memory gives and its grader:
    /// `contains` (the default), `exact` (one line is the expected text) or `judge` (needs a
    /// model on the server).
    #[serde(default)]
    #[schemars(with = "Vec<Documented<EvalQuestion>>", length(min = 1, max = 200))]
    questions: Vec<EvalQuestion>,
}

/// `define_eval_set`, `POST /v1/evals/sets`.
pub struct Define;

impl Operation for Define {
    type Input = SetInput;
    type Output = Described<EvalSet>;
    const NAME: &'static str = "define_eval_set";
    const SUMMARY: &'static str = "For reviewers: define (or replace) a skill's question set \
        with the answers a good memory should give, so runs show whether what it learned \
        helps. Who defined it is the credential.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Replace;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/evals/sets", StatusCode::CREATED);
    const TOOL: Option<Tool> = tool("define_eval_set", "Define an evaluation set");
    const ANSWER: &'static str = "The set as stored.";

    fn run(engine: &Engine, s: SetInput) -> lore_core::Result<Self::Output> {
        engine
            .define_eval_set(NewEvalSet {
                skill: s.skill,
                name: s.name,
                questions: s.questions,
            })
            .map(Described)
    }
}

/// Question sets, a page of them.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SetPage {
    /// The sets, by skill and name.
    #[schemars(with = "Vec<Documented<EvalSet>>")]
    sets: Vec<EvalSet>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `list_eval_sets`, `GET /v1/evals/sets`.
pub struct Sets;

impl Operation for Sets {
    type Input = SkillPage;
    type Output = SetPage;
    const NAME: &'static str = "list_eval_sets";
    const SUMMARY: &'static str = "The question sets in the caller's scope, by skill and name.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/evals/sets", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The sets.";

    fn run(engine: &Engine, q: SkillPage) -> lore_core::Result<SetPage> {
        let all = engine.eval_sets(q.skill.as_ref())?;
        let (sets, next_offset) = super::window(all, q.limit, q.offset)?;
        Ok(SetPage { sets, next_offset })
    }
}

/// Which sets to run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// Only this skill's sets, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Only the set of this name.
    set: Option<String>,
}

/// Graded runs, a page of them when listed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunPage {
    /// The runs, each with every question's grade.
    #[schemars(with = "Vec<Documented<EvalRun>>")]
    runs: Vec<EvalRun>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `run_evals`, `POST /v1/evals/runs`.
pub struct RunSets;

impl Operation for RunSets {
    type Input = RunInput;
    type Output = RunPage;
    const NAME: &'static str = "run_evals";
    const SUMMARY: &'static str = "For reviewers: run and grade question sets now (every set \
        in scope, of skill, of the set named); each answer is the layered context for its \
        question. Each grade says whether it passed and what was expected.";
    const ROLE: Role = Role::Reviewer;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/evals/runs", StatusCode::CREATED);
    const TOOL: Option<Tool> = tool("run_evals", "Run evaluations");
    const ANSWER: &'static str = "The runs made, one per set.";

    fn run(engine: &Engine, r: RunInput) -> lore_core::Result<RunPage> {
        let runs = engine.run_evals(&EvalRunRequest {
            skill: r.skill,
            set: r.set,
        })?;
        Ok(RunPage {
            runs,
            next_offset: None,
        })
    }
}

/// Which runs to list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunsInput {
    /// Only this skill's runs, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// Only this set's runs.
    set: Option<String>,
    /// At most this many, 1 to 500; all of them up to 500 when omitted, with `next_offset`
    /// when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// `list_eval_runs`, `GET /v1/evals/runs`.
pub struct Runs;

impl Operation for Runs {
    type Input = RunsInput;
    type Output = RunPage;
    const NAME: &'static str = "list_eval_runs";
    const SUMMARY: &'static str = "The graded runs in the caller's scope, oldest first.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/evals/runs", StatusCode::OK);
    const TOOL: Option<Tool> = None;
    const ANSWER: &'static str = "The runs.";

    fn run(engine: &Engine, q: RunsInput) -> lore_core::Result<RunPage> {
        let all = engine.eval_runs(q.skill.as_ref(), q.set.as_deref())?;
        let (runs, next_offset) = super::window(all, q.limit, q.offset)?;
        Ok(RunPage { runs, next_offset })
    }
}

/// Whose trends, over how many runs, a page of sets.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrendInput {
    /// Only this skill's sets, `domain/skill`.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// How many recent runs per set, 1 to 500 (10 when omitted).
    #[schemars(range(min = 1, max = 500))]
    recent: Option<usize>,
    /// At most this many sets, 1 to 500; all of them up to 500 when omitted, with
    /// `next_offset` when more follow.
    #[schemars(range(min = 1, max = 500))]
    limit: Option<usize>,
    /// Skip this many sets (the previous page's `next_offset`).
    offset: Option<usize>,
}

/// Each set's trend, a page of sets.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TrendList {
    /// Each set's scores over its recent runs, by skill and set name.
    #[schemars(with = "Vec<Documented<EvalTrend>>")]
    trends: Vec<EvalTrend>,
    /// The offset of the next page, absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
}

/// `eval_trends`, `GET /v1/evals/trends`.
pub struct Trends;

impl Operation for Trends {
    type Input = TrendInput;
    type Output = TrendList;
    const NAME: &'static str = "eval_trends";
    const SUMMARY: &'static str = "How each evaluation set's score moved over its recent runs \
        (10 unless told): the change from the oldest shown to the newest, and the best; \
        whether the memory's answers got better as it learned.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/evals/trends", StatusCode::OK);
    const TOOL: Option<Tool> = tool("eval_trends", "Evaluation trends");
    const ANSWER: &'static str = "A page of the sets' trends.";

    fn run(engine: &Engine, q: TrendInput) -> lore_core::Result<TrendList> {
        let all = engine.eval_trends(q.skill.as_ref(), q.recent)?;
        let (trends, next_offset) = super::window(all, q.limit, q.offset)?;
        Ok(TrendList {
            trends,
            next_offset,
        })
    }
}
