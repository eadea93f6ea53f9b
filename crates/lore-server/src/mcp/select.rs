//! Which tools a connection sees: all 51 by default, or a subset named by tool or by group.
//!
//! A model choosing among many tools chooses worse and pays tokens for every description, so a
//! client that only runs the loop can ask for `loop` alone: `lore mcp --tools loop`, or
//! `/mcp?tools=loop` over HTTP. A tool left out is neither listed nor callable.

use std::collections::BTreeSet;

/// The named groups, in the order `--help` and the docs list them.
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "loop",
        &[
            "recall_memory",
            "memory_prompt",
            "record_execution",
            "report_signal",
            "correct",
        ],
    ),
    (
        "read",
        &[
            "search_memory",
            "list_lessons",
            "get_lesson",
            "memory_status",
        ],
    ),
    (
        "review",
        &[
            "review_queue",
            "review_lessons",
            "unlink_lessons",
            "learn_lessons",
        ],
    ),
    ("org", &["org_pool", "propagate_lesson"]),
    (
        "episodes",
        &[
            "record_episode",
            "get_episode",
            "decision_sequence",
            "list_episodes",
            "causal_path",
            "export_causal_graph",
            "what_if",
            "similar_decisions",
            "find_patterns",
            "find_anti_patterns",
        ],
    ),
    (
        "layers",
        &[
            "layered_context",
            "recall_knowledge",
            "list_knowledge",
            "ingest_knowledge",
            "recall_decisions",
            "record_decision",
            "review_decisions",
            "read_digest",
            "build_digests",
            "define_eval_set",
            "run_evals",
            "eval_trends",
        ],
    ),
    (
        "embedder",
        &[
            "embedder_status",
            "embedder_runs",
            "embedder_preflight",
            "embedder_train",
            "embedder_resume",
            "embedder_activate",
            "embedder_rollback",
            "embedder_cancel",
        ],
    ),
    (
        "self-editing",
        &[
            "core_memory_read",
            "core_memory_write",
            "archival_memory_search",
            "archival_memory_write",
            "conversation_log_read",
            "conversation_log_write",
        ],
    ),
];

/// The tools a connection may list and call; `None` is every tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSelection(Option<BTreeSet<String>>);

impl ToolSelection {
    /// Every tool.
    pub fn all() -> Self {
        Self(None)
    }

    /// Parses a comma-separated list of tool names and group names (`loop`, `read`, `review`,
    /// `episodes`, `layers`, `self-editing`, `all`), checked against the `known` tool names.
    ///
    /// # Errors
    /// A message naming the unknown entry and what may be given instead.
    pub fn parse(spec: &str, known: &[String]) -> Result<Self, String> {
        let mut chosen = BTreeSet::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                return Ok(Self::all());
            }
            if let Some((_, tools)) = GROUPS.iter().find(|(group, _)| *group == name) {
                chosen.extend(tools.iter().map(|t| (*t).to_owned()));
            } else if known.iter().any(|k| k == name) {
                chosen.insert(name.to_owned());
            } else {
                let groups: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
                return Err(format!(
                    "unknown tool or group {name:?}: give tool names or the groups {}, or all",
                    groups.join(", ")
                ));
            }
        }
        if chosen.is_empty() {
            return Err("no tools named: give tool names or groups, or all".to_owned());
        }
        Ok(Self(Some(chosen)))
    }

    /// Whether `tool` is selected.
    pub fn allows(&self, tool: &str) -> bool {
        self.0.as_ref().is_none_or(|set| set.contains(tool))
    }

    /// The tools both selections allow.
    pub fn and(&self, other: &Self) -> Self {
        match (&self.0, &other.0) {
            (None, _) => other.clone(),
            (_, None) => self.clone(),
            (Some(a), Some(b)) => Self(Some(a.intersection(b).cloned().collect())),
        }
    }

    /// The selected names, or `None` for all.
    pub fn names(&self) -> Option<Vec<&str>> {
        self.0
            .as_ref()
            .map(|set| set.iter().map(String::as_str).collect())
    }
}

/// The `tools` parameter of a request's query string, if it has one.
pub fn from_query(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "tools")
        .map(|(_, v)| v.replace("%2C", ",").replace("%2c", ","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Vec<String> {
        GROUPS
            .iter()
            .flat_map(|(_, tools)| tools.iter().map(|t| (*t).to_owned()))
            .collect()
    }

    #[test]
    fn groups_and_names_combine_and_unknown_names_are_refused() {
        let known = known();
        let loop_and_one = ToolSelection::parse("loop, get_lesson", &known).unwrap();
        assert!(loop_and_one.allows("correct") && loop_and_one.allows("get_lesson"));
        assert!(!loop_and_one.allows("what_if"));
        assert_eq!(
            ToolSelection::parse("loop,all", &known).unwrap(),
            ToolSelection::all()
        );
        let err = ToolSelection::parse("loop,recal_memory", &known).unwrap_err();
        assert!(
            err.contains("\"recal_memory\"") && err.contains("self-editing"),
            "{err}"
        );
        assert!(ToolSelection::parse(" , ", &known).is_err());
        let narrowed =
            loop_and_one.and(&ToolSelection::parse("get_lesson,what_if", &known).unwrap());
        assert_eq!(narrowed.names(), Some(vec!["get_lesson"]));
        assert_eq!(
            from_query(Some("a=1&tools=loop%2Cread")),
            Some("loop,read".to_owned())
        );
        assert_eq!(from_query(Some("a=1")), None);
    }
}
