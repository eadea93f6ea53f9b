//! Plain-text helpers shared by the distiller and the regression-case writer.

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
