//! Finding personal data and secrets in text, so that they never reach a prompt.
//!
//! A correction is free text from a person, and people paste what they see: a customer's email,
//! a card number, the API key that failed. Seed 004 keeps such rows out of retrieval with a
//! `sensitive` status; this module is the detector that sets it. It runs on every lesson and
//! correction as it is written (the correction pipeline, edits, imports), and review shows only
//! [`redact`]ed text.
//!
//! The detector is deterministic and offline: regular expressions, each followed by a check
//! that removes the common false positives — the Luhn checksum for card numbers (and only the
//! card networks' first digits, so a `20260220124341` timestamp is not a card), ISO 13616's
//! mod-97 for IBANs, a digit count for phone numbers. It leans towards flagging: a false positive
//! costs a reviewer a click, a false negative leaks a secret into every prompt.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use serde_json::Value;

use crate::model::{AuditEntry, Correction, Execution, Lesson};

/// What kind of sensitive data was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitiveKind {
    /// An email address.
    Email,
    /// A phone number (international `+…` or North American `555-123-4567`).
    Phone,
    /// A payment card number that passes the Luhn check.
    CardNumber,
    /// An API key with a known prefix, or a `key = value` secret assignment.
    ApiKey,
    /// A bearer token or a JSON Web Token.
    BearerToken,
    /// A PEM private key block.
    PrivateKey,
    /// An IBAN that passes the mod-97 check.
    Iban,
}

impl SensitiveKind {
    /// The kind's wire name, also used in redaction markers.
    pub fn as_str(self) -> &'static str {
        match self {
            SensitiveKind::Email => "email",
            SensitiveKind::Phone => "phone",
            SensitiveKind::CardNumber => "card_number",
            SensitiveKind::ApiKey => "api_key",
            SensitiveKind::BearerToken => "bearer_token",
            SensitiveKind::PrivateKey => "private_key",
            SensitiveKind::Iban => "iban",
        }
    }
}

/// One hit: its kind and byte range in the scanned text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What was found.
    pub kind: SensitiveKind,
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset just past the last character.
    pub end: usize,
}

struct Pattern {
    kind: SensitiveKind,
    regex: Regex,
    accept: fn(&str) -> bool,
}

fn pattern(kind: SensitiveKind, regex: &str, accept: fn(&str) -> bool) -> Pattern {
    Pattern {
        kind,
        regex: Regex::new(regex).expect("detector patterns are valid"),
        accept,
    }
}

fn always(_: &str) -> bool {
    true
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use SensitiveKind::*;
    vec![
        pattern(
            PrivateKey,
            r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
            always,
        ),
        pattern(
            BearerToken,
            r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{16,}=*",
            always,
        ),
        pattern(
            BearerToken,
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            always,
        ),
        pattern(
            ApiKey,
            r"\b(?:sk|pk|rk)[-_](?:live_|test_|proj-|ant-)?[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}",
            always,
        ),
        pattern(
            ApiKey,
            r#"(?i)\b(?:api[_-]?key|secret|token|password|passwd)\s*[:=]\s*["']?[A-Za-z0-9_\-./+]{8,}"#,
            always,
        ),
        pattern(
            Email,
            r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
            always,
        ),
        pattern(
            Iban,
            r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
            iban_checks,
        ),
        pattern(CardNumber, r"\b[0-9](?:[ -]?[0-9]){12,18}\b", card_checks),
        pattern(
            Phone,
            r"\+[0-9]{1,3}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,4}(?:[ .-]?[0-9]{2,4}){1,4}\b",
            phone_checks,
        ),
        pattern(
            Phone,
            r"(?:\([0-9]{3}\) ?|\b[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}\b",
            always,
        ),
    ]
});

fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// The Luhn checksum, over card networks' first digits (2221–2720, 3, 4, 5, 6).
fn card_checks(text: &str) -> bool {
    let d = digits(text);
    let prefix4 = d.iter().take(4).fold(0, |acc, x| acc * 10 + x);
    let network = matches!(d[0], 3..=6) || (2221..=2720).contains(&prefix4);
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| match (i % 2, x * 2) {
            (1, doubled) if doubled > 9 => doubled - 9,
            (1, doubled) => doubled,
            _ => x,
        })
        .sum();
    network && (13..=19).contains(&d.len()) && sum.is_multiple_of(10)
}

/// ISO 13616: move the first four characters to the end, letters to numbers, mod 97 is 1.
fn iban_checks(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let rotated = compact[4..].chars().chain(compact[..4].chars());
    let mut rest: u64 = 0;
    for c in rotated {
        let Some(value) = c.to_digit(36) else {
            return false;
        };
        rest = if value >= 10 {
            (rest * 100 + u64::from(value)) % 97
        } else {
            (rest * 10 + u64::from(value)) % 97
        };
    }
    rest == 1
}

/// E.164 allows at most 15 digits; fewer than 8 is not a reachable number.
fn phone_checks(text: &str) -> bool {
    (8..=15).contains(&digits(text).len())
}

/// Every finding in `text`, by position; overlapping hits of different kinds are all kept.
pub fn scan(text: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = PATTERNS
        .iter()
        .flat_map(|p| {
            p.regex
                .find_iter(text)
                .filter(|m| (p.accept)(m.as_str()))
                .map(|m| Finding {
                    kind: p.kind,
                    start: m.start(),
                    end: m.end(),
                })
        })
        .collect();
    found.sort_by_key(|f| (f.start, f.end));
    found
}

/// The kinds of sensitive data in `text`.
pub fn kinds(text: &str) -> BTreeSet<SensitiveKind> {
    scan(text).into_iter().map(|f| f.kind).collect()
}

/// `text` with every finding replaced by `[redacted:KIND]`.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in scan(text) {
        if f.start < at {
            continue; // inside a span already redacted
        }
        out.push_str(&text[at..f.start]);
        out.push_str(&format!("[redacted:{}]", f.kind.as_str()));
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The text of a lesson that can reach a prompt or a reviewer.
fn lesson_texts(lesson: &Lesson) -> impl Iterator<Item = &String> {
    [
        &lesson.rule,
        &lesson.applies_when,
        &lesson.mistake,
        &lesson.root_cause,
        &lesson.tiers.summary,
        &lesson.tiers.condition,
        &lesson.tiers.action,
        &lesson.tiers.rationale,
    ]
    .into_iter()
    .chain(&lesson.tiers.steps)
    .chain(&lesson.triggers)
    .chain(&lesson.tags)
}

/// The kinds of sensitive data anywhere in a lesson's text.
pub fn scan_lesson(lesson: &Lesson) -> BTreeSet<SensitiveKind> {
    lesson_texts(lesson).flat_map(|t| kinds(t)).collect()
}

/// A copy of `lesson` with every text field redacted, for review.
pub fn redact_lesson(lesson: &Lesson) -> Lesson {
    let mut out = lesson.clone();
    for field in [
        &mut out.rule,
        &mut out.applies_when,
        &mut out.mistake,
        &mut out.root_cause,
        &mut out.tiers.summary,
        &mut out.tiers.condition,
        &mut out.tiers.action,
        &mut out.tiers.rationale,
    ] {
        *field = redact(field);
    }
    for list in [&mut out.tiers.steps, &mut out.triggers, &mut out.tags] {
        list.iter_mut().for_each(|t| *t = redact(t));
    }
    out.extra = lesson
        .extra
        .iter()
        .map(|(k, v)| (k.clone(), redact_json(v)))
        .collect();
    out
}

/// `value` with every string in it (object keys kept) [`redact`]ed.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A copy of `execution` with its input, output and extra details redacted.
pub fn redact_execution(execution: &Execution) -> Execution {
    let mut out = execution.clone();
    out.input = redact_json(&execution.input);
    out.output = redact_json(&execution.output);
    out.extra = execution
        .extra
        .iter()
        .map(|(k, v)| (k.clone(), redact_json(v)))
        .collect();
    out
}

/// A copy of `correction` with its text and the output it corrected redacted.
pub fn redact_correction(correction: &Correction) -> Correction {
    let mut out = correction.clone();
    out.text = redact(&correction.text);
    out.original_output = redact_json(&correction.original_output);
    out.extra = correction
        .extra
        .iter()
        .map(|(k, v)| (k.clone(), redact_json(v)))
        .collect();
    out
}

/// A copy of an audit entry with its reason and evidence redacted (an edit's evidence holds the
/// text before and after).
pub fn redact_audit(entry: &AuditEntry) -> AuditEntry {
    let mut out = entry.clone();
    out.reason = redact(&entry.reason);
    out.evidence = redact_json(&entry.evidence);
    out
}

#[cfg(test)]
mod tests {
    use super::SensitiveKind::*;
    use super::*;

    fn only(text: &str) -> Vec<SensitiveKind> {
        kinds(text).into_iter().collect()
    }

    #[test]
    fn finds_each_kind() {
        assert_eq!(only("write to jane.doe+x@example.co.uk today"), [Email]);
        assert_eq!(only("call +44 20 7946 0958 now"), [Phone]);
        assert_eq!(only("call (415) 555-0132 now"), [Phone]);
        assert_eq!(only("card 4111 1111 1111 1111 declined"), [CardNumber]);
        assert_eq!(only("card 5500-0000-0000-0004"), [CardNumber]);
        assert_eq!(only("key sk-proj-abcdefghijklmnop1234 leaked"), [ApiKey]);
        assert_eq!(only("AKIAIOSFODNN7EXAMPLE"), [ApiKey]);
        assert_eq!(only("set api_key = 'x9Y8z7W6v5U4'"), [ApiKey]);
        assert_eq!(
            only("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345"),
            [BearerToken]
        );
        assert_eq!(
            only("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"),
            [PrivateKey]
        );
        assert_eq!(only("pay to DE89 3704 0044 0532 0130 00 please"), [Iban]);
        assert_eq!(only("GB82WEST12345698765432"), [Iban]);
    }

    #[test]
    fn checksums_and_shapes_keep_ordinary_text_clean() {
        for clean in [
            "Priority must be urgent when 500 errors hit 3 customers.",
            "card 4111 1111 1111 1112 fails Luhn",
            "EXEC-20260220124341-7K3Q9M2B at 2026-02-20 12:43:41",
            "version 1.2.3 and score 0.85 of 100",
            "GB82 WEST 1234 5698 7654 33",
            "an @mention and a.b@c",
            "token limits of 2000 are fine",
        ] {
            assert!(kinds(clean).is_empty(), "{clean:?}: {:?}", scan(clean));
        }
    }

    #[test]
    fn redaction_replaces_every_hit_and_keeps_the_rest() {
        let text = "Mail bob@example.com, key sk-live_0123456789abcdefgh, card 4111111111111111.";
        let red = redact(text);
        assert_eq!(
            red,
            "Mail [redacted:email], key [redacted:api_key], card [redacted:card_number]."
        );
        assert!(kinds(&red).is_empty(), "{red}");
    }
}
