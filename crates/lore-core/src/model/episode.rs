//! Episodes (seed 001): one session's decisions and events with their cause/effect links, the
//! unit the causal graph aggregates.
//!
//! The JSON shape is seed 001's, plus the scope every Lore record carries (`skill`, `agent`)
//! and optional typed `links` for the relations the seed's ID lists cannot express
//! (`prevents`, `correlates`). Unknown fields are refused rather than kept: an episode is
//! written by an agent or an extractor, and a misspelt `decisons` silently dropped would lose
//! the whole causal structure.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::id::EpisodeId;
use crate::scope::SkillPath;
use crate::wording::Place;

/// What replaces purged text.
pub const PURGED: &str = "[purged]";

/// Longest free text of one field (task, context, rationale, content, a lesson), in bytes.
pub const MAX_TEXT: usize = 4096;
/// Longest item ID, session name or agent name, in bytes.
pub const MAX_NAME: usize = 128;
/// Most decisions in one episode.
pub const MAX_DECISIONS: usize = 200;
/// Most events in one episode.
pub const MAX_EVENTS: usize = 1000;
/// Most options of one decision, links of one item, or lessons of one episode.
pub const MAX_LIST: usize = 50;
/// Most typed links in one episode.
pub const MAX_LINKS: usize = 2000;

macro_rules! wire_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($(#[$vdoc:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// Parses a wire name.
            ///
            /// # Errors
            /// [`Error::Invalid`] listing the accepted names.
            pub fn parse(raw: &str) -> Result<Self> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == raw)
                    .ok_or_else(|| {
                        let names: Vec<_> = Self::ALL.iter().map(|v| v.as_str()).collect();
                        Error::invalid($what, format!("{raw:?}; expected one of {}", names.join(", ")))
                    })
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(raw: &str) -> Result<Self> {
                Self::parse(raw)
            }
        }
    };
}

wire_enum!(
    /// How an episode, or one decision, ended.
    EpisodeOutcome, "outcome" {
        /// The goal was reached.
        Success => "success",
        /// Part of it was reached.
        Partial => "partial",
        /// It was not reached.
        Failure => "failure",
    }
);

wire_enum!(
    /// What a decision was about (seed 001).
    DecisionType, "decision type" {
        /// Shape of the solution.
        Design => "design",
        /// How to build it.
        Implementation => "implementation",
        /// How to check it.
        Test => "test",
        /// How to get out of a failure.
        Recovery => "recovery",
    }
);

wire_enum!(
    /// What happened (seed 001).
    EventType, "event type" {
        /// A tool was called.
        ToolCall => "tool_call",
        /// Something failed.
        Error => "error",
        /// A step was completed.
        Milestone => "milestone",
        /// Work passed to another agent or a person.
        Handoff => "handoff",
    }
);

wire_enum!(
    /// How one node of the causal graph bears on another (seed 001).
    EdgeType, "edge type" {
        /// The source brought the target about.
        Causes => "causes",
        /// The source made the target possible.
        Enables => "enables",
        /// The source kept the target from happening.
        Prevents => "prevents",
        /// They occur together; no direction of cause is claimed.
        Correlates => "correlates",
    }
);

/// One choice made during the episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Unique inside the episode (`d001`).
    pub id: String,
    /// When it was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
    /// What it was about.
    #[serde(rename = "type")]
    pub kind: DecisionType,
    /// The situation it was made in.
    pub context: String,
    /// The options considered; `chosen` must be one of them when any are listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// What was chosen.
    pub chosen: String,
    /// Why.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rationale: String,
    /// How this choice turned out, when known apart from the episode's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<EpisodeOutcome>,
    /// The decisions and events it brought about (IDs in this episode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<String>,
}

/// One thing that happened during the episode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Unique inside the episode (`e001`).
    pub id: String,
    /// When it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
    /// What kind of event.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// What happened.
    pub content: String,
    /// The decisions and events that brought it about (IDs in this episode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caused_by: Vec<String>,
    /// The decisions and events it led to (IDs in this episode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leads_to: Vec<String>,
}

/// A typed relation between two items of the episode, beyond the seed's ID lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeLink {
    /// The source item's ID.
    pub from: String,
    /// The target item's ID.
    pub to: String,
    /// How the source bears on the target.
    #[serde(rename = "type")]
    pub kind: EdgeType,
}

/// Seed 001's episode metrics; all optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeMetrics {
    /// Wall-clock minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_minutes: Option<f64>,
    /// Tool calls made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Errors met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<u64>,
    /// Errors recovered from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recoveries: Option<u64>,
}

impl EpisodeMetrics {
    fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// One session's structured extract (seed 001's episodic memory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Episode {
    /// Unique ID; the Engine draws one (`EPI-…`) when an episode arrives without.
    pub id: EpisodeId,
    /// The session it was extracted from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
    /// The skill whose work it records: its scope.
    pub skill: SkillPath,
    /// The agent that did the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// When the episode started (UTC).
    pub timestamp: DateTime<Utc>,
    /// How it ended.
    pub outcome: EpisodeOutcome,
    /// What the session set out to do.
    pub task: String,
    /// The choices made, in order.
    #[serde(default)]
    pub decisions: Vec<Decision>,
    /// What happened, in order.
    #[serde(default)]
    pub events: Vec<Event>,
    /// Typed relations beyond `effects`, `caused_by` and `leads_to`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<EpisodeLink>,
    /// Counters.
    #[serde(default, skip_serializing_if = "EpisodeMetrics::is_empty")]
    pub metrics: EpisodeMetrics,
    /// What was learned, one sentence each.
    #[serde(default)]
    pub lessons: Vec<String>,
}

/// What one item of an episode is, for link resolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ItemRef<'a> {
    /// A decision.
    Decision(&'a Decision),
    /// An event.
    Event(&'a Event),
}

impl Episode {
    /// Parses an episode from JSON in seed 001's shape. A missing `id` is left for the Engine
    /// to draw, `skill` may come from the caller (`default_skill`) when the JSON has none.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field at fault (`decisions[2].type: unknown variant …`).
    pub fn from_json(value: Value, default_skill: Option<&SkillPath>) -> Result<Episode> {
        let Value::Object(mut map) = value else {
            return Err(Error::invalid("episode", "expected a JSON object"));
        };
        match (map.get("skill"), default_skill) {
            (None, Some(skill)) => {
                map.insert("skill".into(), Value::String(skill.to_string()));
            }
            (Some(Value::String(given)), Some(skill)) if given != skill.as_str() => {
                return Err(Error::invalid(
                    "skill",
                    format!("the episode names {given:?} but {skill} was asked for"),
                ));
            }
            _ => {}
        }
        if !map.contains_key("id") {
            // A placeholder the Engine replaces; it keeps one parser for both cases.
            map.insert("id".into(), Value::String(UNSET_ID.into()));
        }
        // serde reads a struct from an array too (by field order); the shape is seed 001's
        // objects, and accepting `[…]` would let a malformed payload through.
        if let Some(metrics) = map.get("metrics")
            && !metrics.is_object()
        {
            return Err(Error::invalid("metrics", "expected an object"));
        }
        for list in ["decisions", "events", "links"] {
            if let Some(Value::Array(items)) = map.get(list)
                && let Some(i) = items.iter().position(|item| !item.is_object())
            {
                return Err(Error::invalid(format!("{list}[{i}]"), "expected an object"));
            }
        }
        serde_path_to_error::deserialize::<_, Episode>(Value::Object(map)).map_err(|err| {
            let path = crate::wording::segments(err.path());
            let message = err.inner().to_string();
            let sentence = crate::wording::describe(Place::Body, &path, &message, None);
            // A sentence that names its field stands alone, as a REST body's refusal does.
            if sentence.contains('`') {
                return Error::invalid("episode", sentence);
            }
            Error::invalid(path.join(".").replace(".[", "["), sentence)
        })
    }

    /// Whether this is what a purge left (a purge): the
    /// marker for a task and nothing else to say.
    pub fn is_purged(&self) -> bool {
        self.task == PURGED
            && self.decisions.is_empty()
            && self.events.is_empty()
            && self.links.is_empty()
            && self.lessons.is_empty()
    }

    /// Whether the ID is still the placeholder [`Episode::from_json`] set for a missing one.
    pub fn has_unset_id(&self) -> bool {
        self.id.as_str() == UNSET_ID
    }

    /// The decision or event with `id`.
    pub fn item(&self, id: &str) -> Option<ItemRef<'_>> {
        self.decisions
            .iter()
            .find(|d| d.id == id)
            .map(ItemRef::Decision)
            .or_else(|| self.events.iter().find(|e| e.id == id).map(ItemRef::Event))
    }

    /// Checks what the types alone cannot: unique item IDs, links that resolve, `chosen`
    /// among `options`, non-empty texts and sizes.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the first field at fault.
    pub fn validate(&self) -> Result<()> {
        check_name("session", &self.session, true)?;
        if let Some(agent) = &self.agent {
            check_name("agent", agent, false)?;
        }
        check_text("task", &self.task)?;
        check_count("decisions", self.decisions.len(), MAX_DECISIONS)?;
        check_count("events", self.events.len(), MAX_EVENTS)?;
        check_count("links", self.links.len(), MAX_LINKS)?;
        check_count("lessons", self.lessons.len(), MAX_LIST)?;
        let mut seen: HashMap<&str, String> = HashMap::new();
        let ids = self
            .decisions
            .iter()
            .enumerate()
            .map(|(i, d)| (format!("decisions[{i}].id"), d.id.as_str()))
            .chain(
                self.events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (format!("events[{i}].id"), e.id.as_str())),
            );
        for (field, id) in ids {
            check_item_id(&field, id)?;
            if let Some(first) = seen.insert(id, field.clone()) {
                return Err(Error::invalid(
                    field,
                    format!("{id:?} is already the ID of {first}; IDs are unique in an episode"),
                ));
            }
        }
        let resolve = |field: String, targets: &[String], own: &str| -> Result<()> {
            check_count(&field, targets.len(), MAX_LIST)?;
            for (j, target) in targets.iter().enumerate() {
                if !seen.contains_key(target.as_str()) {
                    return Err(Error::invalid(
                        format!("{field}[{j}]"),
                        format!("{target:?} is not the ID of a decision or event of this episode"),
                    ));
                }
                if target == own {
                    return Err(Error::invalid(
                        format!("{field}[{j}]"),
                        format!("{target:?} links to itself"),
                    ));
                }
            }
            Ok(())
        };
        for (i, d) in self.decisions.iter().enumerate() {
            let at = |f: &str| format!("decisions[{i}].{f}");
            check_text(&at("context"), &d.context)?;
            check_text(&at("chosen"), &d.chosen)?;
            check_text_optional(&at("rationale"), &d.rationale)?;
            check_count(&at("options"), d.options.len(), MAX_LIST)?;
            for (j, option) in d.options.iter().enumerate() {
                check_text(&format!("{}[{j}]", at("options")), option)?;
            }
            if !d.options.is_empty() && !d.options.iter().any(|o| o.trim() == d.chosen.trim()) {
                return Err(Error::invalid(
                    at("chosen"),
                    format!(
                        "{:?} is not one of the options ({})",
                        d.chosen,
                        d.options.join(", ")
                    ),
                ));
            }
            resolve(at("effects"), &d.effects, &d.id)?;
        }
        for (i, e) in self.events.iter().enumerate() {
            let at = |f: &str| format!("events[{i}].{f}");
            check_text(&at("content"), &e.content)?;
            resolve(at("caused_by"), &e.caused_by, &e.id)?;
            resolve(at("leads_to"), &e.leads_to, &e.id)?;
        }
        for (i, link) in self.links.iter().enumerate() {
            for (end, id) in [("from", &link.from), ("to", &link.to)] {
                if !seen.contains_key(id.as_str()) {
                    return Err(Error::invalid(
                        format!("links[{i}].{end}"),
                        format!("{id:?} is not the ID of a decision or event of this episode"),
                    ));
                }
            }
            if link.from == link.to {
                return Err(Error::invalid(
                    format!("links[{i}].to"),
                    format!("{:?} links to itself", link.to),
                ));
            }
        }
        if let Some(minutes) = self.metrics.duration_minutes
            && !(minutes.is_finite() && minutes >= 0.0)
        {
            return Err(Error::invalid(
                "metrics.duration_minutes",
                format!("{minutes} is not a finite, non-negative number"),
            ));
        }
        for (i, lesson) in self.lessons.iter().enumerate() {
            check_text(&format!("lessons[{i}]"), lesson)?;
        }
        Ok(())
    }

    /// Every free text of the episode, mutably: what secret redaction goes over.
    pub fn texts_mut(&mut self) -> Vec<&mut String> {
        let mut out: Vec<&mut String> = vec![&mut self.task, &mut self.session];
        for d in &mut self.decisions {
            out.push(&mut d.context);
            out.push(&mut d.chosen);
            out.push(&mut d.rationale);
            out.extend(d.options.iter_mut());
        }
        for e in &mut self.events {
            out.push(&mut e.content);
        }
        out.extend(self.lessons.iter_mut());
        out
    }

    /// Decisions in the order they were made: by timestamp where both have one, else as
    /// listed.
    pub fn decisions_in_order(&self) -> Vec<&Decision> {
        let mut out: Vec<(usize, &Decision)> = self.decisions.iter().enumerate().collect();
        out.sort_by(|(i, a), (j, b)| match (a.timestamp, b.timestamp) {
            (Some(x), Some(y)) if x != y => x.cmp(&y),
            _ => i.cmp(j),
        });
        out.into_iter().map(|(_, d)| d).collect()
    }

    /// The distinct item IDs, for callers that check references.
    pub fn item_ids(&self) -> BTreeSet<&str> {
        self.decisions
            .iter()
            .map(|d| d.id.as_str())
            .chain(self.events.iter().map(|e| e.id.as_str()))
            .collect()
    }
}

/// The ID [`Episode::from_json`] puts where the JSON had none.
const UNSET_ID: &str = "unset";

fn check_count(field: &str, n: usize, max: usize) -> Result<()> {
    if n > max {
        return Err(Error::invalid(
            field,
            format!("{n} entries; at most {max} are allowed"),
        ));
    }
    Ok(())
}

fn check_text(field: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    check_text_optional(field, text)
}

fn check_text_optional(field: &str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(Error::invalid(field, "holds a NUL character"));
    }
    if text.len() > MAX_TEXT {
        return Err(Error::invalid(
            field,
            format!("{} bytes; at most {MAX_TEXT} are allowed", text.len()),
        ));
    }
    Ok(())
}

fn check_name(field: &str, name: &str, may_be_empty: bool) -> Result<()> {
    if name.trim().is_empty() && !may_be_empty {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if name.len() > MAX_NAME {
        return Err(Error::invalid(
            field,
            format!("{} bytes; at most {MAX_NAME} are allowed", name.len()),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid(field, "must not hold control characters"));
    }
    Ok(())
}

fn check_item_id(field: &str, id: &str) -> Result<()> {
    check_name(field, id, false)?;
    // Item IDs follow the rules of record IDs; the error names the field, not the kind.
    crate::id::validate(field, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn seed() -> Value {
        json!({
          "id": "episode-2026-01-01-126",
          "session": "2026-01-01-session-126",
          "timestamp": "2026-01-01T17:00:00Z",
          "outcome": "success",
          "task": "Implement MemoryRouter module",
          "decisions": [{
              "id": "d001", "timestamp": "2026-01-01T17:05:00Z", "type": "design",
              "context": "Choosing routing strategy",
              "options": ["Forgetful-first", "Serena-first", "Parallel"],
              "chosen": "Serena-first",
              "rationale": "Lower latency, no network dependency",
              "outcome": "success", "effects": ["e001"]
          }],
          "events": [{
              "id": "e001", "timestamp": "2026-01-01T17:10:00Z", "type": "tool_call",
              "content": "Created MemoryRouter.psm1", "caused_by": ["d001"], "leads_to": []
          }],
          "metrics": {"duration_minutes": 45, "tool_calls": 87, "errors": 2, "recoveries": 2},
          "lessons": ["Pre-commit hooks check all markdown, not just staged files"]
        })
    }

    fn skill() -> SkillPath {
        SkillPath::parse("dev/router").unwrap()
    }

    fn invalid(value: Value) -> (String, String) {
        let err = Episode::from_json(value, Some(&skill()))
            .and_then(|e| e.validate().map(|_| e))
            .unwrap_err();
        match err {
            Error::Invalid { what, why } => (what, why),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn the_seed_shape_parses_and_round_trips() {
        let episode = Episode::from_json(seed(), Some(&skill())).unwrap();
        episode.validate().unwrap();
        assert_eq!(episode.decisions[0].kind, DecisionType::Design);
        assert_eq!(episode.metrics.tool_calls, Some(87));
        let back: Episode =
            serde_json::from_value(serde_json::to_value(&episode).unwrap()).unwrap();
        assert_eq!(back, episode);
        assert!(!episode.has_unset_id());
    }

    #[test]
    fn every_broken_rule_names_its_field() {
        type Edit = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Edit, &str, &str)> = vec![
            (
                Box::new(|v| v["outcome"] = json!("meh")),
                "outcome",
                "cannot be \"meh\"; it must be",
            ),
            (
                Box::new(|v| v["decisions"][0]["type"] = json!("vibes")),
                "decisions[0].type",
                "cannot be",
            ),
            (
                Box::new(|v| v["events"][0]["type"] = json!("x")),
                "events[0].type",
                "cannot be",
            ),
            (
                Box::new(|v| v["decisons"] = json!([])),
                "decisons",
                "is not a field here",
            ),
            (
                Box::new(|v| v["decisions"][0]["chosen"] = json!("Serial")),
                "decisions[0].chosen",
                "not one of the options",
            ),
            (
                Box::new(|v| v["decisions"][0]["effects"] = json!(["e404"])),
                "decisions[0].effects[0]",
                "not the ID",
            ),
            (
                Box::new(|v| v["events"][0]["caused_by"] = json!(["e001"])),
                "events[0].caused_by[0]",
                "itself",
            ),
            (
                Box::new(|v| v["events"][0]["id"] = json!("d001")),
                "events[0].id",
                "already the ID",
            ),
            (Box::new(|v| v["task"] = json!("  ")), "task", "empty"),
            (
                Box::new(|v| v["decisions"][0]["context"] = json!("x".repeat(MAX_TEXT + 1))),
                "decisions[0].context",
                "at most",
            ),
            (
                Box::new(|v| v["metrics"]["tool_calls"] = json!(-3)),
                "metrics.tool_calls",
                "must be a whole number, 0 or more, not -3",
            ),
            (
                Box::new(|v| v["timestamp"] = json!("yesterday")),
                "timestamp",
                "input",
            ),
            (
                Box::new(|v| {
                    v["links"] = json!([{"from": "d001", "to": "e9", "type": "prevents"}])
                }),
                "links[0].to",
                "not the ID",
            ),
            (
                Box::new(|v| {
                    v["links"] = json!([{"from": "d001", "to": "e001", "type": "blocks"}])
                }),
                "links[0].type",
                "cannot be \"blocks\"",
            ),
            (
                Box::new(|v| v["decisions"][0]["id"] = json!("d 1")),
                "decisions[0].id",
                "character",
            ),
            (
                Box::new(|v| {
                    v["lessons"] = json!((0..=MAX_LIST).map(|i| i.to_string()).collect::<Vec<_>>())
                }),
                "lessons",
                "at most",
            ),
        ];
        for (edit, field, needle) in cases {
            let mut v = seed();
            edit(&mut v);
            let (what, why) = invalid(v);
            let named = what == field || why.contains(&format!("`{field}`"));
            assert!(named, "{field}: {what}: {why}");
            assert!(why.contains(needle), "{field}: {why}");
        }
    }

    #[test]
    fn the_skill_comes_from_the_caller_or_must_agree() {
        let mut v = seed();
        v["skill"] = json!("other/skill");
        assert_eq!(invalid(v).0, "skill");
        let mut v = seed();
        v["skill"] = json!("../x");
        assert!(Episode::from_json(v, None).is_err());
        let mut v = seed();
        v.as_object_mut().unwrap().remove("id");
        assert!(
            Episode::from_json(v, Some(&skill()))
                .unwrap()
                .has_unset_id()
        );
        assert!(
            Episode::from_json(seed(), None).is_err(),
            "no skill anywhere"
        );
    }

    #[test]
    fn decisions_come_in_time_order() {
        let mut v = seed();
        v["decisions"] = json!([
            {"id": "a", "timestamp": "2026-01-01T18:00:00Z", "type": "test", "context": "c", "chosen": "x"},
            {"id": "b", "timestamp": "2026-01-01T17:00:00Z", "type": "test", "context": "c", "chosen": "y"},
        ]);
        v["events"] = json!([]);
        let e = Episode::from_json(v, Some(&skill())).unwrap();
        let ids: Vec<_> = e
            .decisions_in_order()
            .iter()
            .map(|d| d.id.clone())
            .collect();
        assert_eq!(ids, ["b", "a"]);
    }
}
