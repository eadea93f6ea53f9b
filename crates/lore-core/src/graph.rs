//! The causal graph (seed 001's tier 3): what episodes say about cause and effect, aggregated
//! across them.
//!
//! Each episode contributes a fixed set of nodes, edges and patterns ([`Contribution::of`]), and
//! the graph is the sum of the contributions: counts only, so adding an episode, replacing it
//! (subtract the old contribution, add the new) and rebuilding from every episode give the same
//! graph exactly. Rates and weights are derived from the counts when read, never stored.
//!
//! - Nodes are a kind and a normalized label: a decision by what was chosen, an event by what
//!   happened, an outcome by its name. A node's frequency is the number of episodes it appears
//!   in; its success rate the share of those that ended in `success`.
//! - Edges come from the episode's links: `effects` and `caused_by` are `causes`, `leads_to` is
//!   `enables`, `links` carry their own type, and every item that leads nowhere inside its
//!   episode `correlates` with the episode's outcome. An edge's evidence count is the number of
//!   episodes that hold it; its weight is that count over its source's frequency: how often the
//!   source, when it appeared, was followed by the target.
//! - Patterns are trigger → action: a decision's context (or the error event that led to it)
//!   and what was chosen, counted per decision, with the decision's own outcome when it has one.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

use crate::id::EpisodeId;
use crate::model::{EdgeType, Episode, EpisodeOutcome, EventType, ItemRef};

/// Longest node label, pattern trigger or action kept, in characters.
pub const MAX_LABEL: usize = 200;

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A choice (labelled by what was chosen).
    Decision,
    /// Something that happened.
    Event,
    /// How an episode ended.
    Outcome,
}

impl NodeKind {
    /// Every kind, in documentation order.
    pub const ALL: [NodeKind; 3] = [NodeKind::Decision, NodeKind::Event, NodeKind::Outcome];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Decision => "decision",
            NodeKind::Event => "event",
            NodeKind::Outcome => "outcome",
        }
    }

    /// Parses a wire name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

/// A node's identity: its kind and normalized label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct NodeKey {
    /// What it stands for.
    #[serde(rename = "type")]
    pub kind: NodeKind,
    /// Its normalized label.
    pub label: String,
}

impl NodeKey {
    /// A key with `label` normalized.
    pub fn new(kind: NodeKind, label: &str) -> Self {
        Self {
            kind,
            label: normalize(label),
        }
    }
}

impl std::fmt::Display for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.kind.as_str(), self.label)
    }
}

/// An edge's identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EdgeKey {
    /// Where it starts.
    pub source: NodeKey,
    /// Where it ends.
    pub target: NodeKey,
    /// How the source bears on the target.
    #[serde(rename = "type")]
    pub kind: EdgeType,
}

/// A pattern's identity: when this happens (trigger), do that (action).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PatternKey {
    /// The situation, normalized.
    pub trigger: String,
    /// What was done, normalized.
    pub action: String,
}

/// How often a pattern occurred in one episode and how often it worked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternCount {
    /// Decisions that followed it.
    pub occurrences: u64,
    /// Those that ended in `success`.
    pub successes: u64,
}

/// What one episode adds to the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contribution {
    /// Whether the episode ended in `success` (what its nodes and edges count).
    pub success: bool,
    /// The distinct nodes it holds.
    pub nodes: BTreeSet<NodeKey>,
    /// The distinct edges it holds.
    pub edges: BTreeSet<EdgeKey>,
    /// Its patterns, counted per decision.
    pub patterns: BTreeMap<PatternKey, PatternCount>,
}

/// One counted element of a [`Contribution`], as a store keeps it: its kind (`node`, `edge` or
/// `pattern`), its key as JSON, and how much it adds to the count and to the successes.
pub type ElementCount = (&'static str, String, u64, u64);

impl Contribution {
    /// Every element this contribution counts, with its key as JSON, for stores that keep
    /// the graph as rows.
    ///
    /// # Errors
    /// [`crate::Error::Store`] when a key does not serialize.
    pub fn elements(&self) -> crate::Result<Vec<ElementCount>> {
        let success = u64::from(self.success);
        let mut out = Vec::new();
        for node in &self.nodes {
            out.push(("node", key_json(node)?, 1, success));
        }
        for edge in &self.edges {
            out.push(("edge", key_json(edge)?, 1, success));
        }
        for (pattern, n) in &self.patterns {
            out.push(("pattern", key_json(pattern)?, n.occurrences, n.successes));
        }
        Ok(out)
    }

    /// The nodes, edges and patterns `episode` adds: none for a purged episode, which no
    /// query may use, not even through its outcome.
    pub fn of(episode: &Episode) -> Self {
        if episode.is_purged() {
            return Self::default();
        }
        let outcome = NodeKey::new(NodeKind::Outcome, episode.outcome.as_str());
        let key = |item: ItemRef<'_>| match item {
            ItemRef::Decision(d) => NodeKey::new(NodeKind::Decision, &d.chosen),
            ItemRef::Event(e) => NodeKey::new(NodeKind::Event, &e.content),
        };
        let mut out = Self {
            success: episode.outcome == EpisodeOutcome::Success,
            ..Self::default()
        };
        out.nodes.insert(outcome.clone());
        let mut links: Vec<(&str, &str, EdgeType)> = Vec::new();
        for d in &episode.decisions {
            out.nodes.insert(key(ItemRef::Decision(d)));
            links.extend(
                d.effects
                    .iter()
                    .map(|t| (d.id.as_str(), t.as_str(), EdgeType::Causes)),
            );
        }
        for e in &episode.events {
            out.nodes.insert(key(ItemRef::Event(e)));
            links.extend(
                e.caused_by
                    .iter()
                    .map(|s| (s.as_str(), e.id.as_str(), EdgeType::Causes)),
            );
            links.extend(
                e.leads_to
                    .iter()
                    .map(|t| (e.id.as_str(), t.as_str(), EdgeType::Enables)),
            );
        }
        links.extend(
            episode
                .links
                .iter()
                .map(|l| (l.from.as_str(), l.to.as_str(), l.kind)),
        );
        let mut leads_somewhere: BTreeSet<&str> = BTreeSet::new();
        for (from, to, kind) in &links {
            let (Some(a), Some(b)) = (episode.item(from), episode.item(to)) else {
                continue; // validation refuses these; a stored episode has none
            };
            let (source, target) = (key(a), key(b));
            if source != target {
                leads_somewhere.insert(from);
                out.edges.insert(EdgeKey {
                    source,
                    target,
                    kind: *kind,
                });
            }
        }
        let items = episode
            .decisions
            .iter()
            .map(|d| (d.id.as_str(), ItemRef::Decision(d)))
            .chain(
                episode
                    .events
                    .iter()
                    .map(|e| (e.id.as_str(), ItemRef::Event(e))),
            );
        for (id, item) in items {
            if !leads_somewhere.contains(id) {
                out.edges.insert(EdgeKey {
                    source: key(item),
                    target: outcome.clone(),
                    kind: EdgeType::Correlates,
                });
            }
        }
        for d in &episode.decisions {
            let trigger = trigger_of(episode, &d.id).unwrap_or(&d.context);
            let count = out
                .patterns
                .entry(PatternKey {
                    trigger: normalize(trigger),
                    action: normalize(&d.chosen),
                })
                .or_default();
            count.occurrences += 1;
            if d.outcome.unwrap_or(episode.outcome) == EpisodeOutcome::Success {
                count.successes += 1;
            }
        }
        out
    }
}

/// The content of the first error event that leads to decision `id`, if any.
fn trigger_of<'a>(episode: &'a Episode, id: &str) -> Option<&'a str> {
    let errors = || episode.events.iter().filter(|e| e.kind == EventType::Error);
    errors()
        .find(|e| e.leads_to.iter().any(|t| t == id))
        .or_else(|| {
            episode
                .links
                .iter()
                .filter(|l| l.to == id)
                .find_map(|l| errors().find(|e| e.id == l.from))
        })
        .map(|e| e.content.as_str())
}

/// A label as the graph keys it: lower case, whitespace collapsed, trailing punctuation
/// dropped, at most [`MAX_LABEL`] characters.
pub fn normalize(text: &str) -> String {
    let joined = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let trimmed = joined.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    trimmed.chars().take(MAX_LABEL).collect()
}

/// One node of the aggregated graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphNode {
    /// What it stands for.
    #[serde(rename = "type")]
    pub kind: NodeKind,
    /// Its normalized label.
    pub label: String,
    /// The episodes it appears in, in ID order.
    pub episodes: Vec<EpisodeId>,
    /// How many episodes it appears in.
    pub frequency: u64,
    /// How many of those ended in `success`.
    pub successes: u64,
    /// `successes / frequency`.
    pub success_rate: f64,
}

impl GraphNode {
    /// Its key.
    pub fn key(&self) -> NodeKey {
        NodeKey {
            kind: self.kind,
            label: self.label.clone(),
        }
    }
}

/// One edge of the aggregated graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphEdge {
    /// Where it starts.
    pub source: NodeKey,
    /// Where it ends.
    pub target: NodeKey,
    /// How the source bears on the target.
    #[serde(rename = "type")]
    pub kind: EdgeType,
    /// How many episodes hold it.
    pub evidence_count: u64,
    /// How many of those ended in `success`.
    pub successes: u64,
    /// `evidence_count` over the source's frequency, in (0, 1].
    pub weight: f64,
    /// The episodes that hold it, in ID order.
    pub episodes: Vec<EpisodeId>,
}

/// One trigger → action pattern of the aggregated graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphPattern {
    /// The situation.
    pub trigger: String,
    /// What was done.
    pub action: String,
    /// How many decisions followed it.
    pub occurrences: u64,
    /// How many of those ended in `success`.
    pub successes: u64,
    /// `successes / occurrences`.
    pub success_rate: f64,
    /// The episodes it occurred in, in ID order.
    pub episodes: Vec<EpisodeId>,
}

/// The counts a store keeps for one node, edge or pattern inside one skill.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Episodes (nodes, edges) or decisions (patterns).
    pub count: u64,
    /// Those that ended in `success`.
    pub successes: u64,
    /// The episodes that contributed.
    pub episodes: BTreeSet<EpisodeId>,
}

impl Counts {
    fn add(&mut self, count: u64, successes: u64, episode: &EpisodeId) {
        self.count += count;
        self.successes += successes;
        self.episodes.insert(episode.clone());
    }

    fn merge(&mut self, other: Counts) {
        self.count += other.count;
        self.successes += other.successes;
        self.episodes.extend(other.episodes);
    }
}

/// The aggregated graph as a store reads it: counts by key, before rates and weights.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphCounts {
    /// Nodes.
    pub nodes: BTreeMap<NodeKey, Counts>,
    /// Edges.
    pub edges: BTreeMap<EdgeKey, Counts>,
    /// Patterns.
    pub patterns: BTreeMap<PatternKey, Counts>,
}

impl GraphCounts {
    /// The counts of `episodes`, summed from scratch: what any store's incremental graph must
    /// equal.
    pub fn of(episodes: &[Episode]) -> Self {
        let mut out = Self::default();
        for episode in episodes {
            out.add(&episode.id, &Contribution::of(episode));
        }
        out
    }

    /// Adds one episode's contribution.
    pub fn add(&mut self, episode: &EpisodeId, c: &Contribution) {
        let s = u64::from(c.success);
        for node in &c.nodes {
            self.nodes
                .entry(node.clone())
                .or_default()
                .add(1, s, episode);
        }
        for edge in &c.edges {
            self.edges
                .entry(edge.clone())
                .or_default()
                .add(1, s, episode);
        }
        for (pattern, n) in &c.patterns {
            self.patterns.entry(pattern.clone()).or_default().add(
                n.occurrences,
                n.successes,
                episode,
            );
        }
    }

    /// Adds counts read from another skill's rows.
    pub fn merge(&mut self, other: GraphCounts) {
        for (k, v) in other.nodes {
            self.nodes.entry(k).or_default().merge(v);
        }
        for (k, v) in other.edges {
            self.edges.entry(k).or_default().merge(v);
        }
        for (k, v) in other.patterns {
            self.patterns.entry(k).or_default().merge(v);
        }
    }

    /// The graph with rates and weights.
    pub fn finish(self) -> CausalGraph {
        let rate = |s: u64, n: u64| if n == 0 { 0.0 } else { s as f64 / n as f64 };
        let freq: HashMap<&NodeKey, u64> = self.nodes.iter().map(|(k, c)| (k, c.count)).collect();
        let edges = self
            .edges
            .iter()
            .map(|(k, c)| GraphEdge {
                source: k.source.clone(),
                target: k.target.clone(),
                kind: k.kind,
                evidence_count: c.count,
                successes: c.successes,
                weight: rate(c.count, freq.get(&k.source).copied().unwrap_or(c.count)).min(1.0),
                episodes: c.episodes.iter().cloned().collect(),
            })
            .collect();
        let nodes = self
            .nodes
            .into_iter()
            .map(|(k, c)| GraphNode {
                kind: k.kind,
                label: k.label,
                frequency: c.count,
                successes: c.successes,
                success_rate: rate(c.successes, c.count),
                episodes: c.episodes.into_iter().collect(),
            })
            .collect();
        let patterns = self
            .patterns
            .into_iter()
            .map(|(k, c)| GraphPattern {
                trigger: k.trigger,
                action: k.action,
                occurrences: c.count,
                successes: c.successes,
                success_rate: rate(c.successes, c.count),
                episodes: c.episodes.into_iter().collect(),
            })
            .collect();
        CausalGraph {
            nodes,
            edges,
            patterns,
        }
    }
}

/// The aggregated graph inside one scope, in key order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CausalGraph {
    /// Nodes.
    pub nodes: Vec<GraphNode>,
    /// Edges.
    pub edges: Vec<GraphEdge>,
    /// Patterns.
    pub patterns: Vec<GraphPattern>,
}

/// Which path [`CausalGraph::path`] looks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathMode {
    /// Fewest edges; among those, the strongest.
    #[default]
    Shortest,
    /// Highest product of edge weights; among those, the fewest edges.
    Strongest,
}

impl PathMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PathMode::Shortest => "shortest",
            PathMode::Strongest => "strongest",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Cost {
    first: f64,
    second: f64,
}

impl Eq for Cost {}

impl Ord for Cost {
    // Reversed so that BinaryHeap pops the cheapest.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .first
            .total_cmp(&self.first)
            .then(other.second.total_cmp(&self.second))
    }
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl CausalGraph {
    /// The nodes `query` names: `kind:label` or a label alone; an exact (normalized) label
    /// match wins, else every node whose label contains the query.
    pub fn find_nodes(&self, query: &str) -> Vec<usize> {
        let (kind, text) = match query.split_once(':') {
            Some((k, rest)) if NodeKind::parse(k.trim()).is_some() => {
                (NodeKind::parse(k.trim()), rest)
            }
            _ => (None, query),
        };
        let wanted = normalize(text);
        if wanted.is_empty() {
            return Vec::new();
        }
        let candidates: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| kind.is_none_or(|k| self.nodes[i].kind == k))
            .collect();
        let exact: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| self.nodes[i].label == wanted)
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        candidates
            .into_iter()
            .filter(|&i| self.nodes[i].label.contains(&wanted))
            .collect()
    }

    /// The best path from any of `from` to any of `to` (node indexes), as edge indexes in
    /// order; `None` when none exists. A node in both sets gives no path: a path has at least
    /// one edge.
    pub fn path(&self, from: &[usize], to: &[usize], mode: PathMode) -> Option<Vec<usize>> {
        let index: HashMap<NodeKey, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key(), i))
            .collect();
        let mut out_edges: Vec<Vec<(usize, usize)>> = vec![Vec::new(); self.nodes.len()];
        for (e, edge) in self.edges.iter().enumerate() {
            if let (Some(&s), Some(&t)) = (index.get(&edge.source), index.get(&edge.target)) {
                out_edges[s].push((t, e));
            }
        }
        let targets: BTreeSet<usize> = to.iter().copied().collect();
        let mut best: Vec<Option<Cost>> = vec![None; self.nodes.len()];
        let mut via: Vec<Option<(usize, usize)>> = vec![None; self.nodes.len()];
        let mut heap = BinaryHeap::new();
        let start = Cost {
            first: 0.0,
            second: 0.0,
        };
        for &s in from {
            best[s] = Some(start);
            heap.push((start, s));
        }
        let mut done = vec![false; self.nodes.len()];
        while let Some((cost, node)) = heap.pop() {
            if done[node] {
                continue;
            }
            done[node] = true;
            if targets.contains(&node) && via[node].is_some() {
                let mut edges = Vec::new();
                let mut at = node;
                while let Some((prev, edge)) = via[at] {
                    edges.push(edge);
                    at = prev;
                    if from.contains(&at) {
                        break;
                    }
                }
                edges.reverse();
                return Some(edges);
            }
            for &(next, e) in &out_edges[node] {
                let strength = -self.edges[e].weight.max(f64::MIN_POSITIVE).ln();
                let step = match mode {
                    PathMode::Shortest => Cost {
                        first: cost.first + 1.0,
                        second: cost.second + strength,
                    },
                    PathMode::Strongest => Cost {
                        first: cost.first + strength,
                        second: cost.second + 1.0,
                    },
                };
                // A start node reached again counts as a target only through a real path.
                if from.contains(&next) && !targets.contains(&next) {
                    continue;
                }
                // `Cost` orders cheaper as greater, for the max-heap.
                if !done[next] && best[next].is_none_or(|b| step > b) {
                    best[next] = Some(step);
                    via[next] = Some((node, e));
                    heap.push((step, next));
                }
            }
        }
        None
    }
}

/// A graph key as JSON, the form stores keep it in.
fn key_json<T: serde::Serialize>(key: &T) -> crate::Result<String> {
    serde_json::to_string(key).map_err(crate::Error::store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn episode(id: &str, outcome: &str, chosen: &str, error: bool) -> Episode {
        let v = json!({
            "id": id, "skill": "dev/x", "timestamp": "2026-01-01T00:00:00Z",
            "outcome": outcome, "task": "t",
            "decisions": [{"id": "d1", "type": "design", "context": "Pick a cache",
                           "options": ["Redis", "Memcached"], "chosen": chosen,
                           "effects": ["e1"]}],
            "events": [{"id": "e1", "type": if error {"error"} else {"milestone"},
                        "content": if error {"Cache timeout"} else {"Cache ready."}}]
        });
        Episode::from_json(v, None).unwrap()
    }

    #[test]
    fn labels_are_normalized() {
        assert_eq!(normalize("  Use   Redis. "), "use redis");
        assert_eq!(normalize(&"é".repeat(300)).chars().count(), MAX_LABEL);
    }

    #[test]
    fn counts_and_weights_follow_the_episodes() {
        let eps = [
            episode("a", "success", "Redis", false),
            episode("b", "failure", "Redis", true),
            episode("c", "success", "Memcached", false),
        ];
        let g = GraphCounts::of(&eps).finish();
        let redis = g
            .nodes
            .iter()
            .find(|n| n.label == "redis")
            .expect("redis node");
        assert_eq!((redis.frequency, redis.successes), (2, 1));
        assert_eq!(redis.success_rate, 0.5);
        let to_timeout = g
            .edges
            .iter()
            .find(|e| e.source.label == "redis" && e.target.label == "cache timeout")
            .unwrap();
        assert_eq!((to_timeout.evidence_count, to_timeout.weight), (1, 0.5));
        assert_eq!(to_timeout.kind, EdgeType::Causes);
        let p = g.patterns.iter().find(|p| p.action == "redis").unwrap();
        assert_eq!(
            (p.trigger.as_str(), p.occurrences, p.successes),
            ("pick a cache", 2, 1)
        );

        let from = g.find_nodes("decision:redis");
        let to = g.find_nodes("outcome:failure");
        let path = g.path(&from, &to, PathMode::Shortest).unwrap();
        let labels: Vec<_> = path
            .iter()
            .map(|&e| g.edges[e].target.label.as_str())
            .collect();
        assert_eq!(labels, ["cache timeout", "failure"]);
        assert!(
            g.path(&g.find_nodes("memcached"), &to, PathMode::Strongest)
                .is_none()
        );
    }
}
