//! Failure capture (seed 003 §1): a failed step stored as an error event with a fingerprint and
//! generic tags, whatever evidence the step left.
//!
//! The fingerprint comes from the error text when there is one. A step can fail without any
//! (a robot that did not move, a UI action that changed nothing, a run stopped by a guard): its
//! failed *transition* is then the evidence, the state before, the action, the state after and
//! the failure's reason, each normalized like error text so the same stuck step in another run
//! gives the same fingerprint. Refusing such a failure would lose exactly the errors a
//! task-agnostic memory exists for.
//!
//! Tags are inferred from the structural words of the message and, for the tags that are about
//! what was attempted (`function_case`, `sort_direction`), from the action too. No command-name
//! table is involved, so a new tool's errors are tagged like an old one's.

use std::collections::BTreeSet;

use tracing::instrument;

use crate::engine::Engine;
use crate::measure::NewSignal;
use lore_core::error::{Error, Result};
use lore_core::id::ErrorEventId;
use lore_core::model::{ErrorEvent, SignalChannel};
use lore_core::ports::store::{OnDuplicate, Record};
use lore_core::sensitive;

/// Longest signal message, action or state kept, in bytes.
const MAX_TEXT: usize = 16 * 1024;

/// A step that failed without error text: where it started, where it ended and why it counts
/// as a failure. The action is the signal's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailedTransition {
    /// The state before the action (a screen, a position, a file's summary).
    pub before: String,
    /// The state after it.
    pub after: String,
    /// Why the step failed (`collision`, `no_change`, `guard_hit`); the channel's own name
    /// when empty.
    pub reason: String,
}

impl FailedTransition {
    fn is_empty(&self) -> bool {
        [&self.before, &self.after, &self.reason]
            .iter()
            .all(|s| s.trim().is_empty())
    }
}

impl Engine {
    /// Stores a feedback signal on an execution as an error event with its fingerprint and tags.
    /// A failure without a message is fingerprinted from its action (a failed transition with
    /// no states).
    ///
    /// # Errors
    /// [`Error::NotFound`] for an execution outside the scope or unknown; [`Error::Invalid`] for
    /// a failure with neither message nor action, a missing or non-finite value on a scalar
    /// channel, an oversized text, or a malformed tag. Nothing is stored then.
    #[instrument(skip_all, fields(execution = %signal.execution_id))]
    pub fn report_signal(&self, signal: NewSignal) -> Result<ErrorEvent> {
        self.report_transition(signal, FailedTransition::default())
    }

    /// [`Engine::report_signal`] for a failed step with its states: when the signal has no
    /// message, its fingerprint is the normalized transition (state before, action, state
    /// after, reason), and a step whose state did not change is tagged `state_stall`.
    ///
    /// # Errors
    /// As [`Engine::report_signal`]; a transition on a scalar channel is refused.
    #[instrument(skip_all, fields(execution = %signal.execution_id))]
    pub fn report_transition(
        &self,
        signal: NewSignal,
        transition: FailedTransition,
    ) -> Result<ErrorEvent> {
        let execution = self.execution(&signal.execution_id)?;
        self.scope.check_write(&execution.skill)?;
        let message = signal.message.trim();
        let action = signal.action.as_deref().map(str::trim).unwrap_or_default();
        for (what, text) in [
            ("message", message),
            ("action", action),
            ("state_before", transition.before.trim()),
            ("state_after", transition.after.trim()),
            ("failure_reason", transition.reason.trim()),
        ] {
            if text.len() > MAX_TEXT {
                let why = format!("is {} bytes; the limit is {MAX_TEXT}", text.len());
                return Err(Error::invalid(what, why));
            }
        }
        check_value(signal.channel, signal.value)?;
        let failure = !is_scalar(signal.channel);
        if !failure && !transition.is_empty() {
            return Err(Error::invalid(
                "state_before",
                "a transition describes a failed step: report it on hard_failure or \
                 constraint_failure",
            ));
        }
        if failure && message.is_empty() && action.is_empty() && transition.is_empty() {
            return Err(Error::invalid(
                "message",
                "a failure signal needs the error text, or the failed step: its action and \
                 the states before and after it",
            ));
        }
        for tag in &signal.tags {
            check_tag(tag)?;
        }
        // Error text often carries what it failed on: tokens, addresses. The fingerprint drops
        // literals, and the stored texts are redacted so no read path can leak them.
        let action = Some(sensitive::redact(action)).filter(|a| !a.is_empty());
        let (fingerprint, message) = if !message.is_empty() || !failure {
            let message = sensitive::redact(message);
            let fingerprint = if message.is_empty() {
                format!("{}:<no message>", signal.channel.as_str())
            } else {
                lore_core::fingerprint(&message)
            };
            (fingerprint, message)
        } else {
            let step = Step::new(signal.channel, action.as_deref(), &transition);
            (step.fingerprint(), step.describe())
        };
        let mut tags = failure_tags(&message, action.as_deref(), signal.channel, signal.value);
        if failure && message_is_stall(&transition) {
            tags.insert("state_stall".into());
        }
        tags.extend(signal.tags);
        let at = self.now();
        let event = ErrorEvent {
            id: ErrorEventId::generate(at),
            skill: execution.skill,
            execution_id: Some(execution.id),
            timestamp: at,
            channel: signal.channel,
            fingerprint,
            tags: tags.into_iter().collect(),
            action,
            message,
            value: signal.value,
        };
        self.store
            .write(&[Record::ErrorEvent(event.clone())], OnDuplicate::Fail)?;
        Ok(event)
    }
}

fn is_scalar(channel: SignalChannel) -> bool {
    matches!(
        channel,
        SignalChannel::Progress | SignalChannel::Efficiency | SignalChannel::Referee
    )
}

fn check_value(channel: SignalChannel, value: Option<f64>) -> Result<()> {
    match value {
        Some(v) if !v.is_finite() => Err(Error::invalid("value", "must be finite")),
        Some(v) if channel == SignalChannel::Efficiency && v < 0.0 => Err(Error::invalid(
            "value",
            "an efficiency cost cannot be negative",
        )),
        Some(v) if channel == SignalChannel::Referee && !(0.0..=1.0).contains(&v) => {
            Err(Error::invalid(
                "value",
                format!("{v}: a referee's score is 0 (worst) to 1 (best)"),
            ))
        }
        None if is_scalar(channel) => Err(Error::invalid(
            "value",
            "progress, efficiency and referee signals need a value",
        )),
        _ => Ok(()),
    }
}

/// A state that did not change across the action: the step is stuck.
fn message_is_stall(transition: &FailedTransition) -> bool {
    let before = lore_core::fingerprint(&transition.before);
    !before.is_empty() && before == lore_core::fingerprint(&transition.after)
}

/// A failed step's evidence, normalized part by part.
struct Step {
    before: String,
    action: String,
    after: String,
    reason: String,
    /// The parts as given (redacted), for the stored message.
    raw: [String; 4],
}

impl Step {
    fn new(channel: SignalChannel, action: Option<&str>, t: &FailedTransition) -> Self {
        let reason = match t.reason.trim() {
            "" if channel == SignalChannel::ConstraintFailure => "constraint_failed",
            "" => channel.as_str(),
            given => given,
        };
        let raw = [
            t.before.trim(),
            action.unwrap_or_default(),
            t.after.trim(),
            reason,
        ]
        .map(sensitive::redact);
        let part = |text: &str| match lore_core::fingerprint(text) {
            fp if fp.is_empty() => "-".to_owned(),
            fp => fp,
        };
        Self {
            before: part(&raw[0]),
            action: part(&raw[1]),
            after: part(&raw[2]),
            reason: part(&raw[3]),
            raw,
        }
    }

    /// Seed 003's transition signature: before, action, after, reason.
    fn fingerprint(&self) -> String {
        format!(
            "transition {} > {} > {} : {}",
            self.before, self.action, self.after, self.reason
        )
    }

    /// The stored message: the step as given, so a reader sees what happened.
    fn describe(&self) -> String {
        let [before, action, after, reason] = &self.raw;
        let or_dash = |s: &String| {
            if s.is_empty() {
                "-".to_owned()
            } else {
                s.clone()
            }
        };
        format!(
            "failed step ({reason}): state before {}; action {}; state after {}",
            or_dash(before),
            or_dash(action),
            or_dash(after)
        )
    }
}

/// Tags are identifiers: lowercase letters, digits and `_`, 1 to 64 of them.
pub(crate) fn check_tag(tag: &str) -> Result<()> {
    let ok = !tag.is_empty()
        && tag.len() <= 64
        && tag
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "tags",
            format!("{tag:?} is not a tag (lowercase letters, digits and _, at most 64)"),
        ))
    }
}

/// The generic tags of an error as a reader meets it (`lore recall --error`): those of a hard
/// failure with that message.
pub fn error_tags(error: &str) -> Vec<String> {
    failure_tags(error, None, SignalChannel::HardFailure, None)
        .into_iter()
        .collect()
}

/// Seed 003's generic failure tags, from the structural words of the message, the action and
/// the channel.
pub fn failure_tags(
    message: &str,
    action: Option<&str>,
    channel: SignalChannel,
    value: Option<f64>,
) -> BTreeSet<String> {
    const RULES: &[(&str, &[&str])] = &[
        (
            "syntax_structure",
            &["syntax", "parse error", "unexpected token", "unterminated"],
        ),
        (
            "unknown_symbol",
            &[
                "unknown",
                "undefined",
                "not defined",
                "unrecognized",
                "no such",
            ],
        ),
        (
            "unknown_command",
            &["command not found", "unknown command", "not a command"],
        ),
        (
            "arity_mismatch",
            &["argument", "arity", "too many", "too few", "expects"],
        ),
        ("operator_mismatch", &["operator"]),
        ("column_reference", &["column", "field"]),
        ("path_quote", &["path", "quote", "escape"]),
        (
            "missing_reference",
            &["not found", "missing", "does not exist", "no such file"],
        ),
        (
            "type_mismatch",
            &["type", "expected", "mismatch", "invalid"],
        ),
        ("timeout", &["timeout", "timed out", "deadline"]),
        (
            "permission",
            &["permission", "forbidden", "denied", "unauthorized"],
        ),
        ("unsafe_action", &["unsafe", "safety", "blocked"]),
        ("state_stall", &["stuck", "stall", "no change", "loop"]),
    ];
    let lower = message.to_lowercase();
    let mut tags: BTreeSet<String> = RULES
        .iter()
        .filter(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map(|(tag, _)| (*tag).to_owned())
        .collect();
    if function_case(message) {
        tags.insert("function_case".into());
    }
    if sort_direction(message, action.unwrap_or_default()) {
        tags.insert("sort_direction".into());
    }
    match channel {
        SignalChannel::ConstraintFailure => {
            tags.insert("constraint_failed".into());
        }
        SignalChannel::Progress if value.is_some_and(|v| v <= 0.0) => {
            tags.insert("no_progress".into());
            if value.is_some_and(|v| v < 0.0) {
                tags.insert("goal_distance_increase".into());
            }
        }
        _ => {}
    }
    tags
}

/// Lowercase words, split at anything that is not a letter or digit.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A function named in the wrong case: the error speaks of a function and of case, or of a
/// function it does not know whose name is not in lowercase, or it quotes two names that differ
/// only by case (`unknown function 'Sum'; did you mean 'sum'?`).
fn function_case(message: &str) -> bool {
    const CASE: &[&str] = &[
        "case",
        "uppercase",
        "lowercase",
        "casing",
        "capitalized",
        "capitalised",
        "capitalization",
        "capitalisation",
    ];
    const UNKNOWN: &[&str] = &["unknown", "undefined", "unrecognized", "unrecognised", "no"];
    let w = words(message);
    let function = w.iter().any(|x| matches!(x.as_str(), "function" | "func"));
    if !function {
        return false;
    }
    if w.iter().any(|x| CASE.contains(&x.as_str())) {
        return true;
    }
    let quoted = quoted(message);
    let differ_by_case = quoted.iter().enumerate().any(|(i, a)| {
        quoted[i + 1..]
            .iter()
            .any(|b| a != b && a.to_lowercase() == b.to_lowercase())
    });
    let unknown = w.iter().any(|x| UNKNOWN.contains(&x.as_str()));
    differ_by_case || (unknown && named_function(message).is_some_and(has_upper))
}

fn has_upper(name: &str) -> bool {
    name.chars().any(char::is_uppercase) && name.chars().any(char::is_alphabetic)
}

/// The name after the word "function" (`function Sum`, `function: SUM`), or the first quoted
/// name when the message quotes one.
fn named_function(message: &str) -> Option<&str> {
    if let Some(first) = quoted(message).into_iter().next() {
        return Some(first);
    }
    let lower = message.to_lowercase();
    let at = lower.find("function")? + "function".len();
    message[at..]
        .split(|c: char| c.is_whitespace() || c == ':')
        .find(|s| !s.is_empty())
        .map(|s| s.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '_'))
        .filter(|s| !s.is_empty())
}

/// The literals quoted in `text` with `'`, `"` or backticks.
fn quoted(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['\'', '"', '`']) {
        let mark = rest[open..].chars().next().unwrap_or('\'');
        let after = &rest[open + 1..];
        let Some(close) = after.find(mark) else { break };
        out.push(&after[..close]);
        rest = &after[close + 1..];
    }
    out
}

/// Rows in the wrong direction: the error names a direction (`asc`, `descending`), or speaks of
/// order or sorting with a direction word (`reversed`, `decreasing`), or speaks of order while
/// the action chose a direction.
fn sort_direction(message: &str, action: &str) -> bool {
    const DIRECTION: &[&str] = &[
        "asc",
        "desc",
        "ascending",
        "descending",
        "ascend",
        "descend",
    ];
    const ORDER: &[&str] = &["sort", "sorted", "sorting", "order", "ordered", "ordering"];
    const TURN: &[&str] = &[
        "reverse",
        "reversed",
        "backwards",
        "inverted",
        "flipped",
        "increasing",
        "decreasing",
        "direction",
    ];
    let said = words(message);
    let has = |list: &[&str], w: &[String]| w.iter().any(|x| list.contains(&x.as_str()));
    if has(DIRECTION, &said) {
        return true;
    }
    has(ORDER, &said) && (has(TURN, &said) || has(DIRECTION, &words(action)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(message: &str, action: Option<&str>) -> BTreeSet<String> {
        failure_tags(message, action, SignalChannel::HardFailure, None)
    }

    #[test]
    fn tags_come_from_structural_words_and_the_channel() {
        let t = tags("error: unknown column 'foo'", None);
        assert!(t.contains("unknown_symbol") && t.contains("column_reference"));
        let t = failure_tags("", None, SignalChannel::Progress, Some(-0.2));
        assert!(t.contains("no_progress") && t.contains("goal_distance_increase"));
        assert!(failure_tags("", None, SignalChannel::Progress, Some(0.3)).is_empty());
        let t = failure_tags("", None, SignalChannel::ConstraintFailure, None);
        assert!(t.contains("constraint_failed"));
    }

    #[test]
    fn a_function_called_in_the_wrong_case_is_function_case() {
        for message in [
            "unknown function 'Sum'; did you mean 'sum'?",
            "error: unknown function: AVG",
            "function names are case-sensitive",
            "Function `Upper` is not defined (functions are lowercase)",
        ] {
            assert!(tags(message, None).contains("function_case"), "{message}");
        }
        for message in [
            "unknown function 'frobnicate'",
            "unknown column 'Sum'",
            "in case of doubt, retry",
            "function sum expects 1 argument, got 2",
        ] {
            assert!(!tags(message, None).contains("function_case"), "{message}");
        }
    }

    #[test]
    fn rows_in_the_wrong_direction_are_sort_direction() {
        for (message, action) in [
            ("expected rows in descending order", None),
            ("rows are sorted in reverse", None),
            ("ORDER BY direction must be ASC or DESC", None),
            ("output order does not match", Some("sort --by price desc")),
        ] {
            assert!(
                tags(message, action).contains("sort_direction"),
                "{message} / {action:?}"
            );
        }
        for (message, action) in [
            ("missing description field", None),
            ("unknown column 'price'", Some("sort --by price desc")),
            ("argument order is wrong", None),
        ] {
            assert!(
                !tags(message, action).contains("sort_direction"),
                "{message} / {action:?}"
            );
        }
    }

    #[test]
    fn a_transition_is_normalized_part_by_part() {
        let t = |before: &str, after: &str| FailedTransition {
            before: before.into(),
            after: after.into(),
            reason: String::new(),
        };
        let a = Step::new(
            SignalChannel::HardFailure,
            Some("move north 3"),
            &t("room 12 at (4, 5)", "room 12 at (4, 5)"),
        );
        let b = Step::new(
            SignalChannel::HardFailure,
            Some("move north 7"),
            &t("room 31 at (9, 1)", "room 31 at (9, 1)"),
        );
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(
            a.fingerprint(),
            "transition room <num> at <num> > move north <num> > room <num> at <num> : hard_failure"
        );
        let c = Step::new(
            SignalChannel::ConstraintFailure,
            None,
            &t("", "door closed"),
        );
        assert_eq!(
            c.fingerprint(),
            "transition - > - > door closed : constraint_failed"
        );
        assert!(message_is_stall(&t("room 12", "room 12")));
        assert!(!message_is_stall(&t("room 12", "hall")));
        assert!(!message_is_stall(&t("", "")));
    }

    #[test]
    fn tags_must_be_identifiers() {
        assert!(check_tag("no_progress").is_ok());
        for bad in ["", "Has Space", "UPPER", &"x".repeat(65)] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
        }
    }
}
