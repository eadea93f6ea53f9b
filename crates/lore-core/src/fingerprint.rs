//! Error fingerprints (seed 003): the same failure, recognised across runs.
//!
//! Volatile literals (quoted strings, numbers, paths, hex IDs) are replaced by placeholders so
//! that `unknown column 'foo' at line 3` and `unknown column 'bar' at line 9` count as one
//! recurring error, while the structural words (`unknown`, `missing`, `expected`) are kept.

/// Normalizes error text into a fingerprint.
pub fn fingerprint(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    let mut chars = error.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' | '`' => {
                for next in chars.by_ref() {
                    if next == c {
                        break;
                    }
                }
                push_token(&mut out, "<str>");
            }
            c if c.is_ascii_digit() => {
                while chars
                    .peek()
                    .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '.')
                {
                    chars.next();
                }
                push_token(&mut out, "<num>");
            }
            '/' | '\\' => {
                while chars.peek().is_some_and(|n| !n.is_whitespace()) {
                    chars.next();
                }
                push_token(&mut out, "<path>");
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut word = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_alphanumeric() || n == '_' {
                        word.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if word.chars().any(|ch| ch.is_ascii_digit()) {
                    push_token(&mut out, "<id>");
                } else if chars.peek() == Some(&'/') {
                    // A relative path such as `src/main.rs` is as volatile as an absolute one.
                    while chars.peek().is_some_and(|n| !n.is_whitespace()) {
                        chars.next();
                    }
                    push_token(&mut out, "<path>");
                } else {
                    push_token(&mut out, &word.to_lowercase());
                }
            }
            _ => {}
        }
    }
    out
}

fn push_token(out: &mut String, token: &str) {
    if out.ends_with(token) && token.starts_with('<') {
        return;
    }
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(token);
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn volatile_literals_are_stripped() {
        assert_eq!(
            fingerprint("Unknown column 'foo' at line 3"),
            fingerprint("unknown column \"bar\" at line 97")
        );
        assert_eq!(
            fingerprint("File not found: /tmp/a/b.txt"),
            "file not found <path>"
        );
        assert_eq!(fingerprint("missing src/main.rs"), "missing <path>");
        assert_eq!(
            fingerprint("timeout after 30.5s id a1b2"),
            "timeout after <num> id <id>"
        );
    }

    #[test]
    fn structure_words_are_kept() {
        let fp = fingerprint("SyntaxError: expected ')' but found EOF");
        assert_eq!(fp, "syntaxerror expected <str> but found eof");
        assert_ne!(fp, fingerprint("SyntaxError: unexpected ')'"));
    }
}
