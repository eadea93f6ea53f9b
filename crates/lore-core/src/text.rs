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
