//! Queries over the causal graph and the decisions of episodes (seed 001's tier 3): causal
//! paths, what-if, similar decisions, patterns and anti-patterns.
//!
//! Every query reads only the episodes and graph counts inside the handle's scope, so a
//! handle for one domain neither sees nor counts another's, aggregates included. They read them
//! through the Engine's per-scope cache (`graph_cache.rs`), fresh as of the store's episode
//! revision.

use serde::Serialize;

use std::sync::Arc;

use super::episodes::{QUOTED, Rendered, check_budget, quote};
use crate::engine::Engine;
use crate::graph_cache::{DecisionMatch, Decisions, ScopeGraph};
use lore_core::error::{Error, Result};
use lore_core::graph::{CausalGraph, GraphPattern, NodeKey, PathMode, normalize};
use lore_core::id::EpisodeId;
use lore_core::model::{EdgeType, EpisodeOutcome};
use lore_recall::text;

/// Seed 001's token target for a causal path.
pub const PATH_BUDGET: usize = 200;
/// Seed 001's token target for a pattern lookup.
pub const PATTERN_BUDGET: usize = 100;
/// Seed 001's token target for a what-if analysis.
pub const WHAT_IF_BUDGET: usize = 1000;
/// The budget of a similar-decisions answer (seed 001 names none; an episode's).
pub const SIMILAR_BUDGET: usize = 500;
pub use lore_core::limits::MAX_GRAPH_RESULTS;
/// Episodes an edge of a path cites at most.
const CITED: usize = 5;
/// The share of a decision's context terms another context must hold to count as a similar
/// situation in a what-if.
pub const WHAT_IF_OVERLAP: f64 = 0.5;

/// One edge of a causal path, with its evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathStep {
    /// Where it starts.
    pub source: NodeKey,
    /// Where it ends.
    pub target: NodeKey,
    /// How the source bears on the target.
    #[serde(rename = "type")]
    pub kind: EdgeType,
    /// Its weight: how often the source was followed by the target.
    pub weight: f64,
    /// How many episodes hold it.
    pub evidence_count: u64,
    /// Some of those episodes (at most five).
    pub episodes: Vec<EpisodeId>,
}

/// The answer to a causal-path query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CausalPath {
    /// The nodes the `from` query matched.
    pub from: Vec<NodeKey>,
    /// The nodes the `to` query matched.
    pub to: Vec<NodeKey>,
    /// Shortest or strongest.
    pub mode: PathMode,
    /// The path, empty when there is none.
    pub steps: Vec<PathStep>,
    /// The product of the steps' weights (0 without a path).
    pub strength: f64,
    /// The path as text within the budget.
    #[serde(flatten)]
    pub rendered: Rendered,
}

/// Outcomes of a group of decisions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OutcomeStats {
    /// How many.
    pub count: usize,
    /// Ended in `success`.
    pub successes: usize,
    /// Ended in `partial`.
    pub partials: usize,
    /// Ended in `failure`.
    pub failures: usize,
    /// `successes / count`; absent without evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_rate: Option<f64>,
}

impl OutcomeStats {
    fn of(matches: &[DecisionMatch]) -> Self {
        let mut s = Self {
            count: matches.len(),
            ..Self::default()
        };
        for m in matches {
            match m.outcome {
                EpisodeOutcome::Success => s.successes += 1,
                EpisodeOutcome::Partial => s.partials += 1,
                EpisodeOutcome::Failure => s.failures += 1,
            }
        }
        s.success_rate = (s.count > 0).then(|| s.successes as f64 / s.count as f64);
        s
    }

    fn describe(&self) -> String {
        match self.success_rate {
            None => "no evidence".to_owned(),
            Some(rate) => format!(
                "{} similar decision(s): {} success, {} partial, {} failure ({:.0}% success)",
                self.count,
                self.successes,
                self.partials,
                self.failures,
                rate * 100.0
            ),
        }
    }
}

/// The answer to a what-if query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    /// The episode asked about.
    pub episode: EpisodeId,
    /// The decision asked about.
    pub decision: String,
    /// Its context.
    pub context: String,
    /// What was chosen then.
    pub chosen: String,
    /// How that turned out (the decision's outcome, else the episode's).
    pub actual_outcome: EpisodeOutcome,
    /// The option asked about.
    pub alternative: String,
    /// Whether any similar decision elsewhere chose the alternative.
    pub evidence: bool,
    /// Similar decisions in other episodes that chose the alternative.
    pub alternative_cases: Vec<DecisionMatch>,
    /// Their outcomes.
    pub alternative_stats: OutcomeStats,
    /// Similar decisions in other episodes that chose what was chosen here.
    pub chosen_cases: Vec<DecisionMatch>,
    /// Their outcomes.
    pub chosen_stats: OutcomeStats,
    /// The minimum term overlap that made a context similar.
    pub min_overlap: f64,
    /// The answer as text within the budget.
    #[serde(flatten)]
    pub rendered: Rendered,
}

/// The answer to a similar-decisions query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimilarDecisions {
    /// The context searched for.
    pub context: String,
    /// The decisions, best first.
    pub decisions: Vec<DecisionMatch>,
    /// The answer as text within the budget.
    #[serde(flatten)]
    pub rendered: Rendered,
}

/// Which patterns to return.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PatternQuery {
    /// Only patterns at least this successful.
    pub min_success_rate: Option<f64>,
    /// Only patterns at most this successful.
    pub max_success_rate: Option<f64>,
    /// Only patterns seen at least this often.
    pub min_occurrences: u64,
    /// At most this many.
    pub limit: usize,
}

impl PatternQuery {
    /// Seed 001's `Get-Patterns -MinSuccessRate 0.7 -MinOccurrences 3`.
    pub fn patterns() -> Self {
        Self {
            min_success_rate: Some(0.7),
            max_success_rate: None,
            min_occurrences: 3,
            limit: 10,
        }
    }

    /// Seed 001's `Get-AntiPatterns -MaxSuccessRate 0.3`; two occurrences at least, since one
    /// failure alone is no pattern.
    pub fn anti_patterns() -> Self {
        Self {
            min_success_rate: None,
            max_success_rate: Some(0.3),
            min_occurrences: 2,
            limit: 10,
        }
    }
}

/// The answer to a pattern or anti-pattern query.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Patterns {
    /// The patterns: best first for patterns, worst first for anti-patterns.
    pub patterns: Vec<GraphPattern>,
    /// The answer as text within the budget.
    #[serde(flatten)]
    pub rendered: Rendered,
}

impl Engine {
    /// The causal graph over the episodes inside the scope.
    ///
    /// # Errors
    /// Store failures.
    pub fn causal_graph(&self) -> Result<CausalGraph> {
        Ok(self.scope_graph()?.graph(self)?.clone())
    }

    /// The causal graph inside the scope, exported as seed 001's `causal-graph.json` (stamped
    /// now) or as Graphviz DOT.
    ///
    /// # Errors
    /// Store failures.
    pub fn causal_graph_export(
        &self,
        format: lore_core::graph_export::GraphFormat,
    ) -> Result<String> {
        use lore_core::graph_export::GraphFormat;
        let graph = self.causal_graph()?;
        Ok(match format {
            GraphFormat::Json => {
                let doc = graph.to_seed_json(self.now());
                serde_json::to_string_pretty(&doc).expect("a JSON value serializes") + "\n"
            }
            GraphFormat::Dot => graph.to_dot(),
        })
    }

    /// The path from the nodes `from` names to those `to` names (`kind:label` or a label; see
    /// [`CausalGraph::find_nodes`]), with each edge's evidence, and its text within `budget`
    /// (default [`PATH_BUDGET`]).
    ///
    /// # Errors
    /// [`Error::NotFound`] (kind `node`) when a query matches no node; [`Error::Invalid`] for
    /// an empty query or a bad budget.
    pub fn causal_path(
        &self,
        from: &str,
        to: &str,
        mode: PathMode,
        budget: Option<usize>,
    ) -> Result<CausalPath> {
        let budget = check_budget(budget, PATH_BUDGET)?;
        for (what, q) in [("from", from), ("to", to)] {
            if normalize(q.split_once(':').map_or(q, |(_, l)| l)).is_empty() {
                return Err(Error::invalid(what, "name a node: `kind:label` or a label"));
            }
        }
        let shared = self.scope_graph()?;
        let graph = shared.graph(self)?;
        let find = |q: &str| {
            let found = graph.find_nodes(q);
            if found.is_empty() {
                Err(Error::not_found("node", q))
            } else {
                Ok(found)
            }
        };
        let (sources, targets) = (find(from)?, find(to)?);
        let steps: Vec<PathStep> = graph
            .path(&sources, &targets, mode)
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let edge = &graph.edges[e];
                PathStep {
                    source: edge.source.clone(),
                    target: edge.target.clone(),
                    kind: edge.kind,
                    weight: edge.weight,
                    evidence_count: edge.evidence_count,
                    episodes: edge.episodes.iter().take(CITED).cloned().collect(),
                }
            })
            .collect();
        let strength = if steps.is_empty() {
            0.0
        } else {
            steps.iter().map(|s| s.weight).product()
        };
        let mut text = format!(
            "{} causal path from {from:?} to {to:?} in the episodes of this scope:\n",
            mode.as_str()
        );
        if steps.is_empty() {
            text.push_str("No path: the episodes hold no chain of links between them.\n");
        } else {
            text.push_str(&format!("Strength {strength:.2}. {QUOTED}\n"));
            for s in &steps {
                text.push_str(&format!(
                    "- {} {} --{}--> {} {} (weight {:.2}, {} episode(s): {})\n",
                    s.source.kind.as_str(),
                    quote(&s.source.label),
                    s.kind.as_str(),
                    s.target.kind.as_str(),
                    quote(&s.target.label),
                    s.weight,
                    s.evidence_count,
                    join_ids(&s.episodes),
                ));
            }
        }
        let key = |i: &usize| graph.nodes[*i].key();
        Ok(CausalPath {
            from: sources.iter().map(key).collect(),
            to: targets.iter().map(key).collect(),
            mode,
            steps,
            strength,
            rendered: self.render(&text, budget),
        })
    }

    /// Decisions inside the scope whose context resembles `context`, best first (BM25 over
    /// decision contexts), with their text within `budget` (default [`SIMILAR_BUDGET`]).
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty context, a limit outside `1..=MAX_GRAPH_RESULTS` or a bad
    /// budget.
    pub fn similar_decisions(
        &self,
        context: &str,
        limit: usize,
        budget: Option<usize>,
    ) -> Result<SimilarDecisions> {
        let budget = check_budget(budget, SIMILAR_BUDGET)?;
        check_limit(limit)?;
        if text::terms(context).is_empty() {
            return Err(Error::invalid(
                "context",
                "give words that describe the situation",
            ));
        }
        let shared = self.scope_graph()?;
        let decisions = shared
            .decisions(self)?
            .search_decisions(context, limit, |_, _| true);
        let mut out = format!("Decisions in similar situations, best match first. {QUOTED}\n");
        if decisions.is_empty() {
            out.push_str("None: no recorded decision shares a term with this context.\n");
        }
        for d in &decisions {
            out.push_str(&render_match(d));
        }
        Ok(SimilarDecisions {
            context: context.to_owned(),
            decisions,
            rendered: self.render(&out, budget),
        })
    }

    /// What happened elsewhere when a situation like `decision`'s (in `episode`) chose
    /// `alternative`: similar decisions in other episodes inside the scope (at least
    /// `min_overlap` of this context's terms, default [`WHAT_IF_OVERLAP`]), their outcomes and
    /// success rate, beside those that chose what was chosen here; an explicit "no evidence"
    /// when none chose the alternative. Text within `budget` (default [`WHAT_IF_BUDGET`]).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown episode or decision; [`Error::Invalid`] for an
    /// alternative that is what was chosen, or not among the decision's options when it lists
    /// some, or a bad overlap or budget.
    pub fn what_if(
        &self,
        episode: &EpisodeId,
        decision: &str,
        alternative: &str,
        min_overlap: Option<f64>,
        budget: Option<usize>,
    ) -> Result<WhatIf> {
        let budget = check_budget(budget, WHAT_IF_BUDGET)?;
        let min_overlap = min_overlap.unwrap_or(WHAT_IF_OVERLAP);
        if !(min_overlap.is_finite() && (0.0..=1.0).contains(&min_overlap)) {
            return Err(Error::invalid(
                "min_overlap",
                format!("{min_overlap} is outside 0 to 1"),
            ));
        }
        let ep = self.episode(episode)?;
        let d = ep
            .decisions
            .iter()
            .find(|d| d.id == decision)
            .ok_or_else(|| Error::not_found("decision", format!("{episode}/{decision}")))?;
        let wanted = normalize(alternative);
        if wanted.is_empty() {
            return Err(Error::invalid("alternative", "must not be empty"));
        }
        if wanted == normalize(&d.chosen) {
            return Err(Error::invalid(
                "alternative",
                format!("{alternative:?} is what was chosen; name another option"),
            ));
        }
        if !d.options.is_empty() && !d.options.iter().any(|o| normalize(o) == wanted) {
            return Err(Error::invalid(
                "alternative",
                format!(
                    "{alternative:?} is not one of the options ({})",
                    d.options.join(", ")
                ),
            ));
        }
        let chosen = normalize(&d.chosen);
        // Only decisions that chose one of the two can be cases, so the others are never ranked.
        let shared = self.scope_graph()?;
        let similar = shared
            .decisions(self)?
            .search_decisions(&d.context, usize::MAX, |e, c| {
                e.id != ep.id && (c == wanted || c == chosen)
            });
        let similar: Vec<DecisionMatch> = similar
            .into_iter()
            .filter(|m| m.overlap >= min_overlap)
            .collect();
        let (alternative_cases, chosen_cases): (Vec<_>, Vec<_>) = similar
            .into_iter()
            .filter(|m| {
                let c = normalize(&m.chosen);
                c == wanted || c == chosen
            })
            .partition(|m| normalize(&m.chosen) == wanted);
        let alternative_stats = OutcomeStats::of(&alternative_cases);
        let chosen_stats = OutcomeStats::of(&chosen_cases);
        let actual = d.outcome.unwrap_or(ep.outcome);
        let mut text = format!(
            "What if decision {} of episode {} had chosen another option? {QUOTED}\n\
             Context {}\nChosen {} ({})\nAlternative {}\n",
            d.id,
            ep.id,
            quote(&d.context),
            quote(&d.chosen),
            actual.as_str(),
            quote(alternative),
        );
        if alternative_cases.is_empty() {
            text.push_str(
                "No evidence: no similar decision in this scope chose the alternative, so \
                 nothing recorded says how it would have gone.\n",
            );
        } else {
            text.push_str(&format!(
                "Alternative elsewhere: {}\n",
                alternative_stats.describe()
            ));
        }
        text.push_str(&format!(
            "Same choice elsewhere: {}\n",
            chosen_stats.describe()
        ));
        for m in alternative_cases.iter().chain(&chosen_cases) {
            text.push_str(&render_match(m));
        }
        Ok(WhatIf {
            episode: ep.id.clone(),
            decision: d.id.clone(),
            context: d.context.clone(),
            chosen: d.chosen.clone(),
            actual_outcome: actual,
            alternative: alternative.to_owned(),
            evidence: !alternative_cases.is_empty(),
            alternative_cases,
            alternative_stats,
            chosen_cases,
            chosen_stats,
            min_overlap,
            rendered: self.render(&text, budget),
        })
    }

    /// Trigger → action patterns inside the scope that pass `query`, with their text within
    /// `budget` (default [`PATTERN_BUDGET`]). With a maximum success rate and no minimum the
    /// answer is anti-patterns, worst first; otherwise best first.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a rate outside 0 to 1, a limit outside `1..=MAX_GRAPH_RESULTS` or
    /// a bad budget.
    pub fn patterns(&self, query: PatternQuery, budget: Option<usize>) -> Result<Patterns> {
        let budget = check_budget(budget, PATTERN_BUDGET)?;
        check_limit(query.limit)?;
        for (what, rate) in [
            ("min_success_rate", query.min_success_rate),
            ("max_success_rate", query.max_success_rate),
        ] {
            if let Some(r) = rate
                && !(r.is_finite() && (0.0..=1.0).contains(&r))
            {
                return Err(Error::invalid(what, format!("{r} is outside 0 to 1")));
            }
        }
        let anti = query.max_success_rate.is_some() && query.min_success_rate.is_none();
        let shared = self.scope_graph()?;
        let mut found: Vec<GraphPattern> = shared
            .graph(self)?
            .patterns
            .iter()
            .filter(|p| p.occurrences >= query.min_occurrences)
            .filter(|p| query.min_success_rate.is_none_or(|m| p.success_rate >= m))
            .filter(|p| query.max_success_rate.is_none_or(|m| p.success_rate <= m))
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            let by_rate = if anti {
                a.success_rate.total_cmp(&b.success_rate)
            } else {
                b.success_rate.total_cmp(&a.success_rate)
            };
            by_rate
                .then(b.occurrences.cmp(&a.occurrences))
                .then(a.trigger.cmp(&b.trigger))
                .then(a.action.cmp(&b.action))
        });
        found.truncate(query.limit);
        let mut text = format!(
            "{} ({QUOTED})\n",
            if anti { "Anti-patterns" } else { "Patterns" }
        );
        if found.is_empty() {
            text.push_str("None pass these thresholds.\n");
        }
        for p in &found {
            text.push_str(&format!(
                "- when {} do {} ({:.0}% of {})\n",
                quote(&p.trigger),
                quote(&p.action),
                p.success_rate * 100.0,
                p.occurrences
            ));
        }
        Ok(Patterns {
            rendered: self.render(&text, budget),
            patterns: found,
        })
    }
}

fn check_limit(limit: usize) -> Result<()> {
    if (1..=MAX_GRAPH_RESULTS).contains(&limit) {
        Ok(())
    } else {
        Err(Error::invalid(
            "limit",
            format!("{limit} is outside 1 to {MAX_GRAPH_RESULTS}"),
        ))
    }
}

fn join_ids(ids: &[EpisodeId]) -> String {
    ids.iter()
        .map(EpisodeId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn render_match(m: &DecisionMatch) -> String {
    format!(
        "- {} {} ({}, {}): context {} chose {}\n",
        m.episode,
        m.decision,
        m.skill,
        m.outcome.as_str(),
        quote(&m.context),
        quote(&m.chosen),
    )
}

impl ScopeGraph {
    /// The finished graph over the scope's episodes.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn graph(&self, engine: &Engine) -> Result<&CausalGraph> {
        if let Some(graph) = self.graph.get() {
            return Ok(graph);
        }
        let built = engine.store.graph_counts(&engine.scope)?.finish();
        Ok(self.graph.get_or_init(|| built))
    }

    /// The scope's decisions, searchable.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn decisions(&self, engine: &Engine) -> Result<&Decisions> {
        if let Some(decisions) = self.decisions.get() {
            return Ok(decisions);
        }
        let built = Decisions::new(engine.all_episodes()?);
        Ok(self.decisions.get_or_init(|| built))
    }
}

impl Engine {
    /// The scope's entry as of the store's current revision.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn scope_graph(&self) -> Result<Arc<ScopeGraph>> {
        Ok(match self.store.episode_revision()? {
            Some(revision) => self.graphs.entry(&self.scope, revision),
            None => Arc::default(),
        })
    }
}
