//! Plain-text helpers shared by the distiller, the regression-case writer and the stores'
//! full-text search.

use serde_json::Value as Json;

/// Splits text into sentences at `.`, `!`, `?` or a line break followed by space or the end, so
/// that numbers such as `0.5` stay whole.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            flush(&mut current, &mut out);
            continue;
        }
        current.push(c);
        if matches!(c, '.' | '!' | '?' | ';') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            flush(&mut current, &mut out);
        }
    }
    flush(&mut current, &mut out);
    out
}

fn flush(current: &mut String, out: &mut Vec<String>) {
    let trimmed = current.trim().trim_start_matches(['-', '*', '•']).trim();
    if !trimmed.is_empty() {
        out.push(trimmed.to_owned());
    }
    current.clear();
}

/// What starts the part of a lesson's `applies_when` that lists its task's words. Those words
/// say what the case was about, not where the lesson applies, so recall never holds a query to
/// them (see [`stated_condition`]).
pub const TASK_WORDS_LABEL: &str = "Tasks about:";

/// The condition a lesson's author stated in its `applies_when`: the text before
/// [`TASK_WORDS_LABEL`], trimmed; empty when there is none.
pub fn stated_condition(applies_when: &str) -> &str {
    applies_when
        .find(TASK_WORDS_LABEL)
        .map_or(applies_when, |at| &applies_when[..at])
        .trim()
}

/// The words of a search query: its alphanumeric runs, each once, at most `max` of them.
/// Stores search these as plain words, so no character of a query is ever backend syntax.
pub fn search_terms(query: &str, max: usize) -> Vec<&str> {
    let mut terms: Vec<&str> = Vec::new();
    for term in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
    {
        if !terms.contains(&term) && terms.len() < max {
            terms.push(term);
        }
    }
    terms
}

/// `text` on one line, cut to at most `max` characters with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// The searchable text of a JSON value: keys and string values, `key: value` where a string sits
/// under a key, so that a snippet still reads well.
pub fn flatten(value: &Json) -> String {
    let mut parts = Vec::new();
    collect(value, &mut parts);
    parts.join("; ")
}

fn collect(value: &Json, parts: &mut Vec<String>) {
    match value {
        Json::String(s) => parts.push(s.clone()),
        Json::Array(items) => items.iter().for_each(|v| collect(v, parts)),
        Json::Object(map) => {
            for (key, v) in map {
                match v {
                    Json::String(s) => parts.push(format!("{key}: {s}")),
                    _ => {
                        parts.push(key.clone());
                        collect(v, parts);
                    }
                }
            }
        }
        Json::Null | Json::Bool(_) | Json::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stated_condition_leaves_the_task_words_out() {
        assert_eq!(
            stated_condition("When deploying the api. Tasks about: deploy, api."),
            "When deploying the api."
        );
        assert_eq!(stated_condition("Tasks about: deploy, api."), "");
        assert_eq!(
            stated_condition("  If the queue is full "),
            "If the queue is full"
        );
        assert_eq!(stated_condition(""), "");
    }
}
