//! Every limit Lore enforces, and the checks that enforce them, in one place.
//!
//! The CLI, REST, MCP and both import formats reach the Engine with the same records, so a
//! limit that lives in one door is a limit an agent walks around through another. Doors may
//! refuse earlier (a request body's size, a schema), but what is stored passes these checks
//! inside the Engine, whichever door it came through, and every refusal names the field.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{
    AuditEntry, Correction, DecisionRecord, Digest, ErrorEvent, EvalRun, EvalSet, Execution,
    KnowledgeChunk, KnowledgeDocument, Lesson, MemoryEntry,
};
use crate::ports::knowledge::DocumentUpdate;
use crate::ports::store::{LessonUpdate, Record};

/// Longest free text of one field (a correction, a lesson's rule, a signal's message), in bytes.
pub const MAX_TEXT: usize = 64 * 1024;
/// Largest input or output of one execution, as JSON text, in bytes.
pub const MAX_JSON: usize = 1024 * 1024;
/// Longest name (a model, a session, an agent, a tag), in bytes.
pub const MAX_NAME: usize = 256;
/// Longest path of a knowledge document's source, in bytes.
pub const MAX_SOURCE: usize = 1024;
/// Most tags on one record.
pub const MAX_TAGS: usize = 64;
/// The most a single run may be said to cost, in US dollars.
pub const MAX_COST_USD: f64 = 1e6;
/// The longest a single run may be said to take: a year, in milliseconds.
pub const MAX_LATENCY_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;
/// The largest token budget a recall may ask for.
pub const MAX_RECALL_BUDGET: usize = 1_000_000;
/// The largest token budget of an episode or graph answer.
pub const MAX_EPISODE_BUDGET: usize = 20_000;
/// The most items one page of a listing holds.
pub const MAX_PAGE: usize = 500;
/// The most results one memory read or search returns.
pub const MAX_RESULTS: usize = 50;
/// The most results one graph query returns.
pub const MAX_GRAPH_RESULTS: usize = 100;

/// Refuses text over [`MAX_TEXT`] bytes or holding a NUL character (which C-string consumers of
/// an export, and some terminals, silently cut at).
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn text(field: &str, value: &str) -> Result<()> {
    sized(field, value, MAX_TEXT)
}

/// [`text`] with the name limit, [`MAX_NAME`].
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn name(field: &str, value: &str) -> Result<()> {
    sized(field, value, MAX_NAME)
}

fn sized(field: &str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(Error::invalid(
            field,
            format!("{} bytes; at most {max} are allowed", value.len()),
        ));
    }
    if value.contains('\0') {
        return Err(Error::invalid(field, "holds a NUL character"));
    }
    Ok(())
}

/// Refuses a measure (a cost, a latency) that is negative, not finite, or above `max`.
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn measure(field: &str, value: Option<f64>, max: f64) -> Result<()> {
    match value {
        Some(v) if !v.is_finite() || v < 0.0 => Err(Error::invalid(
            field,
            format!("{v} is not a finite, non-negative number"),
        )),
        Some(v) if v > max => Err(Error::invalid(field, format!("{v} is above {max}"))),
        _ => Ok(()),
    }
}

/// A token budget: `default` when none is given, else one in `1..=max`.
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn budget(field: &str, value: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match value {
        None => Ok(default),
        Some(b) if (1..=max).contains(&b) => Ok(b),
        Some(b) => Err(Error::invalid(
            field,
            format!("{b} is outside 1 to {max} tokens"),
        )),
    }
}

/// Refuses JSON over [`MAX_JSON`] bytes or with a NUL in any string or key.
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn json(field: &str, value: &Value) -> Result<()> {
    let size = serde_json::to_string(value).map_or(usize::MAX, |s| s.len());
    if size > MAX_JSON {
        return Err(Error::invalid(
            field,
            format!("{size} bytes of JSON; at most {MAX_JSON} are allowed"),
        ));
    }
    if holds_nul(value) {
        return Err(Error::invalid(field, "holds a NUL character"));
    }
    Ok(())
}

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

fn tags(field: &str, values: &[String]) -> Result<()> {
    if values.len() > MAX_TAGS {
        return Err(Error::invalid(
            field,
            format!("{} tags; at most {MAX_TAGS} are allowed", values.len()),
        ));
    }
    values.iter().try_for_each(|t| name(field, t))
}

fn optional_name(field: &str, value: Option<&String>) -> Result<()> {
    value.map_or(Ok(()), |v| name(field, v))
}

/// What every execution must satisfy, however it arrives.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn execution(e: &Execution) -> Result<()> {
    json("input", &e.input)?;
    json("output", &e.output)?;
    measure("cost_usd", e.cost_usd, MAX_COST_USD)?;
    measure("latency_ms", e.latency_ms, MAX_LATENCY_MS)?;
    optional_name("model", e.model.as_ref())?;
    optional_name("agent", e.agent.as_ref())?;
    optional_name("session", e.session.as_ref())
}

/// What every correction must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn correction(c: &Correction) -> Result<()> {
    text("correction", &c.text)?;
    json("original_output", &c.original_output)?;
    optional_name("author", c.author.as_ref())
}

/// What every lesson must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn lesson(l: &Lesson) -> Result<()> {
    text("rule", &l.rule)?;
    text("mistake", &l.mistake)?;
    text("root_cause", &l.root_cause)?;
    text("applies_when", &l.applies_when)?;
    text("tiers.summary", &l.tiers.summary)?;
    l.tiers
        .steps
        .iter()
        .try_for_each(|s| text("tiers.steps", s))?;
    l.triggers.iter().try_for_each(|t| text("triggers", t))?;
    tags("tags", &l.tags)?;
    optional_name("agent", l.agent.as_ref())?;
    if !(0.0..=1.0).contains(&l.confidence) {
        return Err(Error::invalid(
            "confidence",
            format!("{} is outside 0 to 1", l.confidence),
        ));
    }
    Ok(())
}

/// What every error event (a signal) must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn error_event(e: &ErrorEvent) -> Result<()> {
    text("message", &e.message)?;
    text("fingerprint", &e.fingerprint)?;
    optional_name("action", e.action.as_ref())?;
    tags("tags", &e.tags)?;
    match e.value {
        Some(v) if !v.is_finite() => Err(Error::invalid("value", format!("{v} is not finite"))),
        _ => Ok(()),
    }
}

/// What every entry of an agent's own memory must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn memory(m: &MemoryEntry) -> Result<()> {
    text("text", &m.text)?;
    optional_name("block", m.block.as_ref())?;
    optional_name("session", m.session.as_ref())?;
    optional_name("author", m.author.as_ref())?;
    tags("tags", &m.tags)
}

/// Checks a record of any kind, as an import does before it writes anything.
///
/// # Errors
/// [`Error::Invalid`] naming the record's kind and the field at fault.
pub fn record(r: &Record) -> Result<()> {
    let (kind, checked) = match r {
        Record::Execution(e) => ("execution", execution(e)),
        Record::Correction(c) => ("correction", correction(c)),
        Record::Lesson(l) => ("lesson", lesson(l)),
        Record::ErrorEvent(e) => ("error event", error_event(e)),
        Record::Memory(m) => ("memory entry", memory(m)),
        Record::Episode(e) => ("episode", e.validate()),
        Record::Audit(a) => ("audit entry", audit(a)),
    };
    named(kind, r.id(), checked)
}

/// What every audit entry must satisfy: its reason is text, its actor a name, its evidence
/// JSON within the limits.
///
/// # Errors
/// [`Error::Invalid`] naming the first field at fault.
pub fn audit(a: &AuditEntry) -> Result<()> {
    text("reason", &a.reason)?;
    name("actor", &a.actor)?;
    name("subject", &a.subject)?;
    json("evidence", &a.evidence)
}

/// Checks everything one write stores: new records and replaced lessons with their audit
/// entries. Both stores run it inside every write, so whichever door a record came through
/// (CLI, REST, MCP, an import, an edit, a review), what is stored is what an import takes
/// back: an export always imports again.
///
/// # Errors
/// [`Error::Invalid`] naming the record's kind, its ID and the field at fault.
pub fn write(records: &[Record], updates: &[LessonUpdate]) -> Result<()> {
    records.iter().try_for_each(record)?;
    updates.iter().try_for_each(|u| {
        named("lesson", u.lesson.id.as_str(), lesson(&u.lesson))?;
        named("audit entry", u.audit.id.as_str(), audit(&u.audit))
    })
}

/// A reference to something outside Lore (a ticket, an execution, a review item): a name
/// that is no path, since a reader may resolve it as one.
///
/// # Errors
/// [`Error::Invalid`] naming `field`.
pub fn reference(field: &str, value: &str) -> Result<()> {
    name(field, value)?;
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(field, "holds a control character"));
    }
    let pathlike = value.starts_with('/')
        || value.contains('\\')
        || value.split('/').any(|part| part == ".." || part == ".");
    if pathlike {
        return Err(Error::invalid(
            field,
            format!("{value:?} reads as a path; name what it refers to (an ID, a ticket)"),
        ));
    }
    Ok(())
}

/// A line shown outside any quote (a knowledge source, a heading): text within `max` bytes,
/// without a NUL, a control character or a line break, so it cannot start a line of its own.
fn one_line(field: &str, value: &str, max: usize) -> Result<()> {
    sized(field, value, max)?;
    if value
        .chars()
        .any(|c| c.is_control() || crate::quote::is_line_break(c))
    {
        return Err(Error::invalid(
            field,
            "holds a line break or control character; it is one line",
        ));
    }
    Ok(())
}

/// What every decision must satisfy, however it was recorded or changed.
///
/// # Errors
/// [`Error::Invalid`] naming the decision and the first field at fault.
pub fn decision(d: &DecisionRecord) -> Result<()> {
    let checked = text("situation", &d.situation)
        .and_then(|()| text("action", &d.action))
        .and_then(|()| text("rationale", &d.rationale))
        .and_then(|()| d.outcome.as_ref().map_or(Ok(()), |o| text("outcome", o)))
        .and_then(|()| {
            d.resolves
                .as_ref()
                .map_or(Ok(()), |r| reference("resolves", r))
        })
        .and_then(|()| name("decided_by", &d.decided_by));
    named("decision", d.id.as_str(), checked)
}

/// What every knowledge document and its chunks must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the document's source and the first field at fault.
pub fn document(update: &DocumentUpdate) -> Result<()> {
    let doc: &KnowledgeDocument = &update.document;
    let checked = one_line("source", &doc.source, MAX_SOURCE)
        .and_then(|()| name("hash", &doc.hash))
        .and_then(|()| name("ingested_by", &doc.ingested_by))
        .and_then(|()| update.chunks.iter().try_for_each(chunk));
    named("knowledge document", &doc.source, checked)
}

fn chunk(c: &KnowledgeChunk) -> Result<()> {
    name("chunk.id", &c.id)?;
    one_line("chunk.source", &c.source, MAX_SOURCE)?;
    text("chunk.heading", &c.heading)?;
    text("chunk.text", &c.text)
}

/// What every digest must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the digest and the first field at fault.
pub fn digest(d: &Digest) -> Result<()> {
    let checked = text("markdown", &d.markdown)
        .and_then(|()| name("source_hash", &d.source_hash))
        .and_then(|()| name("generated_by", &d.generated_by))
        .and_then(|()| {
            d.model_error
                .as_ref()
                .map_or(Ok(()), |e| text("model_error", e))
        })
        .and_then(|()| d.sources.iter().try_for_each(|s| name("sources", &s.id)));
    named("digest", d.id.as_str(), checked)
}

/// What every evaluation set must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the set and the first field at fault.
pub fn eval_set(set: &EvalSet) -> Result<()> {
    let checked = one_line("name", &set.name, MAX_NAME)
        .and_then(|()| name("defined_by", &set.defined_by))
        .and_then(|()| {
            set.questions.iter().try_for_each(|q| {
                text("questions.question", &q.question)?;
                text("questions.expected", &q.expected)
            })
        });
    named("evaluation set", &set.name, checked)
}

/// What every evaluation run must satisfy.
///
/// # Errors
/// [`Error::Invalid`] naming the run and the first field at fault.
pub fn eval_run(run: &EvalRun) -> Result<()> {
    let checked = one_line("set", &run.set, MAX_NAME)
        .and_then(|()| name("answerer", &run.answerer))
        .and_then(|()| name("memory_hash", &run.memory_hash))
        .and_then(|()| name("run_by", &run.run_by))
        .and_then(|()| {
            if run.score.is_finite() {
                Ok(())
            } else {
                Err(Error::invalid("score", "is not a finite number"))
            }
        })
        .and_then(|()| {
            run.grades.iter().try_for_each(|g| {
                text("grades.question", &g.question)?;
                text("grades.expected", &g.expected)?;
                text("grades.answer", &g.answer)?;
                g.error
                    .as_ref()
                    .map_or(Ok(()), |e| text("grades.error", e))?;
                g.items.iter().try_for_each(|i| name("grades.items", i))
            })
        });
    named("evaluation run", run.id.as_str(), checked)
}

fn named(kind: &str, id: &str, checked: Result<()>) -> Result<()> {
    checked.map_err(|err| match err {
        Error::Invalid { what, why } => {
            // A name given by the caller (a source, a set) may be what is too long.
            let id = crate::quote::one_line(&id.chars().take(80).collect::<String>());
            Error::invalid(format!("{kind} {id}: {what}"), why)
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_refuses_nul_and_oversize_and_names_the_field() {
        assert!(text("rule", "fine").is_ok());
        let err = text("rule", "a\0b").unwrap_err().to_string();
        assert!(err.contains("rule") && err.contains("NUL"), "{err}");
        let long = "x".repeat(MAX_TEXT + 1);
        assert!(
            text("rule", &long)
                .unwrap_err()
                .to_string()
                .contains("rule")
        );
    }

    #[test]
    fn measures_are_finite_non_negative_and_bounded() {
        assert!(measure("latency_ms", Some(12.5), MAX_LATENCY_MS).is_ok());
        assert!(measure("latency_ms", None, MAX_LATENCY_MS).is_ok());
        for bad in [-1.0, f64::NAN, f64::INFINITY, 2f64.powi(70)] {
            assert!(
                measure("latency_ms", Some(bad), MAX_LATENCY_MS).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn json_refuses_nul_in_keys_and_nested_strings() {
        assert!(json("input", &serde_json::json!({"a": ["b", {"c": "d"}]})).is_ok());
        assert!(json("input", &serde_json::json!({"a": ["b", {"c": "d\0"}]})).is_err());
        assert!(json("input", &serde_json::json!({"a\0": 1})).is_err());
    }

    #[test]
    fn budgets_default_and_refuse_zero_and_overflow() {
        assert_eq!(budget("budget", None, 500, 1000).unwrap(), 500);
        assert_eq!(budget("budget", Some(1000), 500, 1000).unwrap(), 1000);
        assert!(budget("budget", Some(0), 500, 1000).is_err());
        assert!(budget("budget", Some(1001), 500, 1000).is_err());
    }
}
