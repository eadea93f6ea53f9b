//! Which tools a connection sees: the loop an agent runs unless it asks for more, and never a
//! tool its credential may not call.
//!
//! A client pays for every tool description on every turn, and a model chooses worse among
//! many tools, so the default is the loop alone (`loop`: recall, search, read a lesson, record,
//! signal, correct), held under 2,500 cl100k tokens by a test. The other groups are opt-in:
//! `lore mcp --tools loop,episodes`, `/mcp?tools=loop,episodes` over HTTP, or `mcp.tools` in
//! `lore.toml`; `all` is every tool. A tool left out is neither listed nor callable.
//!
//! The role a tool needs is written here once: `tools/list` leaves out what the caller's role
//! may not call, and a call to such a tool is refused before it reaches its handler.

use std::collections::BTreeSet;

use lore_core::Scope;

use super::refusal::ToolError;
use crate::auth::{Grant, Role};
use crate::catalogue;

/// The group a connection gets when it names none.
pub const DEFAULT: &str = "loop";

/// The named groups, in the order `--help` and the docs list them, with the tools still written
/// with rmcp's macros; the catalogue's tools name their group themselves ([`members`]). Every
/// tool is in exactly one (a unit test keeps it so).
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "loop",
        &[
            "recall_memory",
            "record_execution",
            "report_signal",
            "correct",
        ],
    ),
    ("lessons", &["memory_prompt"]),
    ("review", &[]),
    ("org", &[]),
    ("episodes", &[]),
    ("knowledge", &[]),
    ("memory", &[]),
    ("embedder", &[]),
];

/// Earlier group names, still accepted so existing client configurations keep working.
const ALIASES: &[(&str, &[&str])] = &[
    ("read", &["lessons"]),
    ("layers", &["knowledge"]),
    ("self-editing", &["memory"]),
];

/// The role `tool` needs: a catalogue tool's is its operation's; every tool still written with
/// rmcp's macros is an agent's.
pub fn role_needed(tool: &str) -> Role {
    catalogue::tool(tool).map_or(Role::Agent, |entry| entry.role)
}

/// Why `grant` may not call `tool`, or `None` when it may. Without a credential (stdio, or a
/// server without tokens) the caller is the machine's user, who owns the store file anyway.
pub fn refusal(tool: &str, grant: Option<&Grant>) -> Option<ToolError> {
    let grant = grant?;
    let needed = role_needed(tool);
    if grant.role < needed {
        return Some(ToolError::forbidden(
            grant.role.refusal(needed),
            format!("Do not retry; ask a person with a {} token.", needed.name()),
        ));
    }
    // The embedder serves every scope, so tuning it is for an unrestricted credential only.
    if tool.starts_with("embedder_") && grant.scope != Scope::unrestricted() {
        return Some(ToolError::forbidden(
            lore_core::Error::Forbidden(
                "the embedder serves every scope; this needs a token without a scope".into(),
            ),
            "Do not retry.",
        ));
    }
    None
}

/// The tools of `group`: those listed in [`GROUPS`] and the catalogue's that name it.
pub fn members(group: &str) -> Vec<&'static str> {
    let listed = GROUPS
        .iter()
        .filter(|(g, _)| *g == group)
        .flat_map(|(_, tools)| tools.iter().copied());
    let catalogued = catalogue::entries()
        .iter()
        .filter_map(|e| e.tool)
        .filter(|t| t.group == group)
        .map(|t| t.name);
    listed.chain(catalogued).collect()
}

/// Every tool's name, by group.
pub fn every_tool() -> impl Iterator<Item = &'static str> {
    GROUPS.iter().flat_map(|(group, _)| members(group))
}

/// The tools a connection may list and call; `None` is every tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolSelection(Option<BTreeSet<String>>);

impl Default for ToolSelection {
    /// The loop.
    fn default() -> Self {
        Self::parse(DEFAULT).unwrap_or_else(|_| Self::all())
    }
}

impl ToolSelection {
    /// Every tool.
    pub fn all() -> Self {
        Self(None)
    }

    /// Parses a comma-separated list of tool names and group names (see [`GROUPS`]) or `all`.
    ///
    /// # Errors
    /// A message naming the unknown entry and what may be given instead.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut chosen = BTreeSet::new();
        for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if name == "all" {
                return Ok(Self::all());
            }
            let named = [name];
            let groups = ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map_or(&named[..], |(_, groups)| groups);
            let tools: Vec<&str> = groups.iter().flat_map(|g| members(g)).collect();
            if !tools.is_empty() {
                chosen.extend(tools.into_iter().map(str::to_owned));
            } else if every_tool().any(|t| t == name) {
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

    #[test]
    fn groups_aliases_and_names_combine_and_unknown_names_are_refused() {
        let loop_and_one = ToolSelection::parse("loop, what_if").unwrap();
        assert!(loop_and_one.allows("correct") && loop_and_one.allows("what_if"));
        assert!(!loop_and_one.allows("causal_path"));
        assert_eq!(
            ToolSelection::parse("loop,all").unwrap(),
            ToolSelection::all()
        );
        // The names clients were configured with before the groups were renamed.
        let old = ToolSelection::parse("read,self-editing,layers").unwrap();
        assert!(old.allows("list_lessons") && old.allows("core_memory_write"));
        assert!(old.allows("layered_context") && !old.allows("correct"));
        let err = ToolSelection::parse("loop,recal_memory").unwrap_err();
        assert!(
            err.contains("\"recal_memory\"") && err.contains("memory, embedder"),
            "{err}"
        );
        assert!(ToolSelection::parse(" , ").is_err());
        assert_eq!(
            from_query(Some("a=1&tools=loop%2Cread")),
            Some("loop,read".to_owned())
        );
        assert_eq!(from_query(Some("a=1")), None);
    }

    #[test]
    fn the_default_is_the_loop_of_at_most_eight_tools() {
        let default = ToolSelection::default();
        let names = default.names().unwrap();
        assert!(names.len() <= 8, "{names:?}");
        for tool in [
            "recall_memory",
            "record_execution",
            "correct",
            "report_signal",
        ] {
            assert!(default.allows(tool), "{tool}");
        }
        assert!(!default.allows("review_lessons") && !default.allows("embedder_train"));
    }

    #[test]
    fn a_credential_is_refused_the_tools_above_its_role_and_scope() {
        let grant = |role, scope| Grant {
            token_id: "tok_1".into(),
            role,
            scope,
        };
        let agent = grant(Role::Agent, Scope::unrestricted());
        assert!(refusal("correct", Some(&agent)).is_none());
        let refused = refusal("review_lessons", Some(&agent)).unwrap();
        assert!(refused.message().contains("reviewer role"), "{refused:?}");
        assert_eq!(refused.code(), "forbidden");
        let reviewer = grant(Role::Reviewer, Scope::unrestricted());
        assert!(refusal("review_lessons", Some(&reviewer)).is_none());
        assert!(refusal("embedder_status", Some(&reviewer)).is_none());
        assert!(refusal("embedder_train", Some(&reviewer)).is_some());
        let scoped = grant(Role::Admin, Scope::domains(["hr"]));
        assert!(refusal("embedder_status", Some(&scoped)).is_some());
        assert!(refusal("review_lessons", Some(&scoped)).is_none());
        assert!(refusal("embedder_train", None).is_none());
        // A catalogue tool's role is its operation's.
        assert!(refusal("record_decision", Some(&agent)).is_some());
        assert!(refusal("recall_decisions", Some(&agent)).is_none());
        assert!(refusal("record_decision", Some(&reviewer)).is_none());
    }

    #[test]
    fn every_catalogue_tool_names_a_group_that_exists() {
        for tool in catalogue::entries().iter().filter_map(|e| e.tool) {
            assert!(
                GROUPS.iter().any(|(g, _)| *g == tool.group),
                "{} names the group {}",
                tool.name,
                tool.group
            );
            assert!(members(tool.group).contains(&tool.name), "{}", tool.name);
        }
    }
}
