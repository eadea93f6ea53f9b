//! The causal graph in the two shapes other tools read: the JSON of seed 001's
//! `causal-graph.json` (nodes numbered `n001…`, edges between those numbers, patterns `p001…`),
//! and Graphviz DOT for drawing it.

use std::collections::HashMap;
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::graph::{CausalGraph, NodeKey};

/// A shape the causal graph is exported in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GraphFormat {
    /// Seed 001's `causal-graph.json`.
    #[default]
    Json,
    /// Graphviz DOT.
    Dot,
}

impl GraphFormat {
    /// Parses `json` or `dot`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the accepted formats.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "json" => Ok(Self::Json),
            "dot" => Ok(Self::Dot),
            other => Err(Error::invalid(
                "format",
                format!("{other:?}: expected json or dot"),
            )),
        }
    }
}

impl CausalGraph {
    /// Seed 001's `causal-graph.json`, stamped `updated`.
    pub fn to_seed_json(&self, updated: DateTime<Utc>) -> Value {
        let ids = self.node_ids();
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .map(|n| {
                json!({
                    "id": ids[&n.key()],
                    "type": n.kind.as_str(),
                    "label": n.label,
                    "episodes": n.episodes,
                    "frequency": n.frequency,
                    "success_rate": n.success_rate,
                })
            })
            .collect();
        let edges: Vec<Value> = self
            .edges
            .iter()
            .map(|e| {
                json!({
                    "source": ids.get(&e.source),
                    "target": ids.get(&e.target),
                    "type": e.kind.as_str(),
                    "weight": e.weight,
                    "evidence_count": e.evidence_count,
                })
            })
            .collect();
        let patterns: Vec<Value> = self
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "id": format!("p{:03}", i + 1),
                    "name": format!("{} → {}", p.trigger, p.action),
                    "description": format!("When {}, {}", p.trigger, p.action),
                    "trigger": p.trigger,
                    "action": p.action,
                    "success_rate": p.success_rate,
                    "occurrences": p.occurrences,
                    "episodes": p.episodes,
                })
            })
            .collect();
        json!({
            "version": "1.0",
            "updated": updated.to_rfc3339_opts(SecondsFormat::Secs, true),
            "nodes": nodes,
            "edges": edges,
            "patterns": patterns,
        })
    }

    /// The graph in Graphviz DOT: decisions as boxes, events as ellipses, outcomes as double
    /// octagons; each edge labelled with its type and evidence.
    pub fn to_dot(&self) -> String {
        let ids = self.node_ids();
        let mut out =
            String::from("digraph causal {\n  rankdir=LR;\n  node [fontname=\"sans-serif\"];\n");
        for n in &self.nodes {
            let shape = match n.kind.as_str() {
                "decision" => "box",
                "outcome" => "doubleoctagon",
                _ => "ellipse",
            };
            let _ = writeln!(
                out,
                "  {} [label={}, shape={shape}, tooltip={}];",
                ids[&n.key()],
                quoted(&format!("{}: {}", n.kind.as_str(), n.label)),
                quoted(&format!(
                    "{} episodes, success rate {:.2}",
                    n.frequency, n.success_rate
                )),
            );
        }
        for e in &self.edges {
            let (Some(source), Some(target)) = (ids.get(&e.source), ids.get(&e.target)) else {
                continue;
            };
            let _ = writeln!(
                out,
                "  {source} -> {target} [label={}, penwidth={:.1}];",
                quoted(&format!("{} ×{}", e.kind.as_str(), e.evidence_count)),
                1.0 + 2.0 * e.weight,
            );
        }
        out.push_str("}\n");
        out
    }

    /// `n001`, `n002`, … in the graph's node order.
    fn node_ids(&self) -> HashMap<NodeKey, String> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.key(), format!("n{:03}", i + 1)))
            .collect()
    }
}

/// A DOT string: labels come from episodes people and agents wrote, so quotes, backslashes and
/// line breaks are escaped and nothing can close the string early.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphCounts;
    use crate::model::Episode;

    fn graph() -> CausalGraph {
        let episode: Episode = serde_json::from_value(json!({
            "id": "EPI-1", "skill": "ops/deploy", "timestamp": "2026-01-01T17:00:00Z",
            "outcome": "failure", "task": "Export the ledger",
            "decisions": [{"id": "d1", "type": "design", "context": "pick a \"format\"",
                           "options": ["parquet", "csv"], "chosen": "parquet"}],
            "events": [{"id": "e1", "type": "error", "content": "parquet writer crashed",
                        "caused_by": ["d1"]}]
        }))
        .unwrap();
        GraphCounts::of(&[episode]).finish()
    }

    #[test]
    fn the_seed_json_numbers_nodes_and_points_edges_at_them() {
        let g = graph();
        let at = DateTime::parse_from_rfc3339("2026-01-01T18:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let out = g.to_seed_json(at);
        assert_eq!(out["version"], "1.0");
        assert_eq!(out["updated"], "2026-01-01T18:00:00Z");
        let nodes = out["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), g.nodes.len());
        assert_eq!(nodes[0]["id"], "n001");
        let ids: Vec<&Value> = nodes.iter().map(|n| &n["id"]).collect();
        for e in out["edges"].as_array().unwrap() {
            assert!(
                ids.contains(&&e["source"]) && ids.contains(&&e["target"]),
                "{e}"
            );
        }
        assert!(!out["edges"].as_array().unwrap().is_empty());
    }

    #[test]
    fn dot_escapes_what_episodes_wrote() {
        let dot = graph().to_dot();
        assert!(dot.starts_with("digraph causal {"), "{dot}");
        assert!(dot.contains("->"), "{dot}");
        assert!(
            !dot.contains("\"format\""),
            "an inner quote is escaped: {dot}"
        );
        assert_eq!(quoted("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }
}
