//! Finding personal data and secrets in text, so that they never reach a prompt.
//!
//! A correction is free text from a person, and people paste what they see: a customer's email,
//! a card number, the API key that failed. Seed 004 keeps such rows out of retrieval with a
//! `sensitive` status; this module is the detector that sets it. It runs on every lesson and
//! correction as it is written (the correction pipeline, edits, imports), and review shows only
//! [`redact`]ed text.
//!
//! The detector is deterministic and offline: regular expressions, each followed by a check
//! that removes the common false positives — for card numbers a card's shape (one run or groups
//! of four, one kind of separator, not the tail of a decimal or an ID), the card networks' first
//! digits (so a `20260220124341` timestamp is not a card) and the Luhn checksum; ISO 13616's
//! mod-97 for IBANs; a digit count for phone numbers; for bare key material (a private key's
//! body lines, an AWS secret access key) mixed case and digits, and for a 40-character AWS secret
//! a key ID or the word `aws` or `secret` nearby. It leans towards flagging: a false positive
//! costs a reviewer a click, a false negative leaks a secret into every prompt — but a lesson
//! flagged wrongly vanishes from prompts, so ordinary numbers must stay clean.
//!
//! Text is read as a model would read it, not as it was typed: compatibility forms are folded
//! (NFKC: a fullwidth `ＡＫＩＡ` is `AKIA`), Cyrillic and Greek letters drawn like Latin ones
//! are read as those (`pаssword` with a Cyrillic `а`), invisible format characters are dropped
//! (a key split by a zero-width space is still the key), and findings are mapped back onto the
//! original text so that redaction removes the invisible characters with the secret.
//! Passwords are found by what names them — an assignment (`password: hunt3r7`), a sentence
//! (`the root password is …`), a URL's user information (`postgres://admin:S3cr3t@host`) —
//! when the value looks like one: letters with digits or symbols, or mixed case, so that
//! `password: required` stays clean.

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

use serde_json::Value;

use crate::model::{AuditEntry, Correction, DecisionRecord, Execution, Lesson};

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
    /// A password: assigned, stated in a sentence, or in a URL's user information.
    Password,
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
            SensitiveKind::Password => "password",
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

/// What a pattern's matches go through: given the text and a match, the spans to report (none
/// for a false positive; a card finder may report part of a match, or two cards in one).
type Check = fn(&str, Range<usize>) -> Vec<Range<usize>>;

struct Pattern {
    kind: SensitiveKind,
    regex: Regex,
    check: Check,
}

fn pattern(kind: SensitiveKind, regex: &str, check: Check) -> Pattern {
    Pattern {
        kind,
        regex: Regex::new(regex).expect("detector patterns are valid"),
        check,
    }
}

fn always(_: &str, m: Range<usize>) -> Vec<Range<usize>> {
    vec![m]
}

fn keep_if(yes: bool, m: Range<usize>) -> Vec<Range<usize>> {
    if yes { vec![m] } else { Vec::new() }
}

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use SensitiveKind::*;
    vec![
        // The header may have lost its leading dashes: the distiller trims them from the start of
        // a sentence, and a key pasted on its own line starts one.
        pattern(
            PrivateKey,
            r"(?s)-{0,5}BEGIN [A-Z0-9 ]*PRIVATE KEY-{3,5}.*?(?:-{0,5}END [A-Z0-9 ]*PRIVATE KEY-{0,5}|\z)",
            always,
        ),
        // A key's body lines without their header: long runs of base64.
        pattern(PrivateKey, r"[A-Za-z0-9+/]{48,}={0,2}", key_body_checks),
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
            r"\b(?:sk|pk|rk)[-_](?:live_|test_|proj-|ant-)?[A-Za-z0-9_-]{16,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}",
            always,
        ),
        // An AWS secret access key: 40 characters of base64, named by its neighbours.
        pattern(ApiKey, r"[A-Za-z0-9+/]{40}", aws_secret_checks),
        // `name = value` where the name says secret, also inside a longer name
        // (`aws_secret_access_key`, `client_secret`, `X-Api-Key`) and as a JSON key.
        pattern(
            ApiKey,
            &format!(r#"(?i)\b{SECRET_NAME}["']?\s*[:=]\s*{VALUE}"#),
            |t, m| keep_if(secret_value(value_of(&t[m.clone()]), 8), m),
        ),
        pattern(
            Password,
            &format!(r#"(?i)\b{PASSWORD_NAME}["']?\s*[:=]\s*{VALUE}"#),
            |t, m| keep_if(password_value(value_of(&t[m.clone()])), m),
        ),
        // A sentence that names one: `the root password is Tr0ub4dor&3`.
        pattern(
            Password,
            &format!(
                r#"(?i)\b(?:{PASSWORD_NAME}|secret|token|api key|passcode)(?:\s+(?:for|of|to|on)\s+\S+)?\s+(?:is|was|will be|should be|reads)\s*[:=]?\s*{VALUE}"#
            ),
            |t, m| keep_if(password_value(last_word(&t[m.clone()])), m),
        ),
        // A URL's user information: `scheme://user:password@host`.
        pattern(
            Password,
            r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]+:[^\s/?#@]+@",
            |t, m| {
                let run = &t[m.clone()];
                let start = m.start + run.find("://").map_or(0, |i| i + 3);
                keep_if(true, start..m.end - 1)
            },
        ),
        pattern(
            Email,
            r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
            always,
        ),
        pattern(
            Iban,
            r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
            |t, m| keep_if(iban_checks(&t[m.clone()]), m),
        ),
        // Runs of digit groups joined by single spaces or dashes; `cards_in` picks the cards.
        pattern(CardNumber, r"[0-9]+(?:[ -][0-9]+)*", cards_in),
        // Groups of four joined by dots; a dotted run is a card only whole (a version, an
        // address or a decimal is dotted too).
        pattern(CardNumber, r"[0-9]+(?:\.[0-9]+){3,4}", dotted_card),
        pattern(
            Phone,
            r"\+[0-9]{1,3}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,4}(?:[ .-]?[0-9]{2,4}){1,4}\b",
            |t, m| keep_if(phone_checks(&t[m.clone()]), m),
        ),
        pattern(
            Phone,
            r"(?:\([0-9]{3}\) ?|\b[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}\b",
            always,
        ),
    ]
});

/// A name that says secret: `api_key`, `client_secret`, `aws_secret_access_key`, `token`.
const SECRET_NAME: &str = r"(?:[a-z0-9]+[_-])*(?:api[_-]?key|secret(?:[_-]?access)?(?:[_-]?key)?|access[_-]?key|private[_-]?key|auth[_-]?token|token)";

/// A name that says password, also spelled out letter by letter (`P A S S W O R D`,
/// `p.a.s.s.w.o.r.d`): a model reads the word through the gaps.
const PASSWORD_NAME: &str = r"(?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|p[ \t._-]{1,3}a[ \t._-]{1,3}s[ \t._-]{1,3}s[ \t._-]{1,3}w[ \t._-]{1,3}o[ \t._-]{1,3}r[ \t._-]{1,3}d)";

/// An assigned value: quoted (anything but the quote and a line break) or bare.
const VALUE: &str = r#"(?:"[^"\r\n]{1,200}"|'[^'\r\n]{1,200}'|[^\s"',;]{1,200})"#;

/// The value of a `name = value` match: what follows the first `:` or `=`, unquoted.
fn value_of(assignment: &str) -> &str {
    let at = assignment.find([':', '=']).map_or(0, |i| i + 1);
    unquote(assignment[at..].trim())
}

/// The value at the end of a sentence that names a password.
fn last_word(sentence: &str) -> &str {
    let trimmed = sentence.trim_end();
    if let Some(body) = trimmed.strip_suffix(['"', '\'']) {
        let quote = &trimmed[body.len()..];
        return body.rfind(quote).map_or(body, |i| &body[i + 1..]);
    }
    let word = trimmed
        .rsplit(char::is_whitespace)
        .next()
        .unwrap_or(trimmed);
    word.trim_start_matches([':', '='])
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// What stands for a value rather than being one: `***`, `<password>`, `${TOKEN}`, `%s`.
fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value
        .chars()
        .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•' | '-' | '_'))
        || value.starts_with('<')
        || value.starts_with("${")
        || value.starts_with("{{")
        || value.starts_with('%')
        || value.starts_with("[redacted")
        || matches!(
            lower.as_str(),
            "null" | "none" | "nil" | "empty" | "redacted" | "hidden" | "true" | "false"
        )
}

/// A secret assigned to a secret's name: long enough, and not a placeholder.
fn secret_value(value: &str, min: usize) -> bool {
    value.chars().count() >= min && !placeholder(value)
}

/// A value that looks like a password rather than a word: at least four characters, with letters
/// and digits or symbols, or with upper case past the first letter.
fn password_value(value: &str) -> bool {
    let value = value.trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
    if value.chars().count() < 4 || placeholder(value) {
        return false;
    }
    let letters = value.chars().filter(|c| c.is_alphabetic()).count();
    let other = value.chars().filter(|c| !c.is_alphabetic()).count();
    let inner_upper =
        value.chars().skip(1).any(char::is_uppercase) && value.chars().any(char::is_lowercase);
    letters > 0 && (other > 0 || inner_upper)
}

fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// Base64 key material rather than a path or a name: upper and lower case and at least two
/// digits, with few `/` (a path has many; a key line one in 64 on average).
fn key_material(run: &str) -> bool {
    let count = |f: fn(&char) -> bool| run.chars().filter(f).count();
    count(char::is_ascii_uppercase) > 0
        && count(char::is_ascii_lowercase) > 0
        && count(char::is_ascii_digit) >= 2
        && count(|c| *c == '/' || *c == '+') * 16 <= run.len()
}

fn key_body_checks(text: &str, m: Range<usize>) -> Vec<Range<usize>> {
    keep_if(key_material(text[m.clone()].trim_end_matches('=')), m)
}

/// How far around a lone 40-character run to look for what names it an AWS secret.
const AWS_CONTEXT: usize = 120;

/// A whole 40-character run of key material near an AWS key ID or the words `aws` or `secret`.
fn aws_secret_checks(text: &str, m: Range<usize>) -> Vec<Range<usize>> {
    let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
    let whole = !text[..m.start].ends_with(base64) && !text[m.end..].starts_with(base64);
    let run = &text[m.clone()];
    let looks = run.chars().any(|c| c.is_ascii_uppercase())
        && run.chars().any(|c| c.is_ascii_lowercase())
        && run
            .chars()
            .any(|c| c.is_ascii_digit() || c == '/' || c == '+');
    if !(whole && looks) {
        return Vec::new();
    }
    let from = floor_char(text, m.start.saturating_sub(AWS_CONTEXT));
    let to = floor_char(text, (m.end + AWS_CONTEXT).min(text.len()));
    let around = format!("{} {}", &text[from..m.start], &text[m.end..to]);
    let lower = around.to_ascii_lowercase();
    let named = lower.contains("aws")
        || lower.contains("secret")
        || around.contains("AKIA")
        || around.contains("ASIA");
    keep_if(named, m)
}

fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The card numbers in a run of digit groups. A card is 13 to 19 digits written as one run or in
/// groups of four (the last may be shorter; American Express writes 4-6-5), with one kind of
/// separator, whose first digits are a card network's and whose Luhn checksum holds. A run that
/// continues a longer number (a decimal's fraction, a version, an ID) is not a card; a run of
/// space-separated groups may hold a card among other numbers.
fn cards_in(text: &str, m: Range<usize>) -> Vec<Range<usize>> {
    let before = text[..m.start].chars().next_back();
    let before2 = text[..m.start].chars().rev().nth(1);
    let after = text[m.end..].chars().next();
    let after2 = text[m.end..].chars().nth(1);
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let joins = |c: Option<char>| matches!(c, Some('.' | ',' | '-' | '/' | ':'));
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    if word(before) || word(after) || (joins(before) && digit(before2)) {
        return Vec::new();
    }
    if joins(after) && digit(after2) {
        return Vec::new();
    }
    let run = &text[m.clone()];
    let dashed = run.contains('-');
    if dashed && run.contains(' ') {
        return Vec::new();
    }
    // Groups as byte ranges inside the text.
    let mut groups: Vec<Range<usize>> = Vec::new();
    let mut at = m.start;
    for part in run.split([' ', '-']) {
        groups.push(at..at + part.len());
        at += part.len() + 1;
    }
    let is_card = |window: &[Range<usize>]| {
        let span = window[0].start..window[window.len() - 1].end;
        card_shape(&window.iter().map(|g| g.len()).collect::<Vec<_>>()) && card_checks(&text[span])
    };
    if dashed {
        return keep_if(is_card(&groups), m);
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < groups.len() {
        match (i..groups.len()).rev().find(|&j| is_card(&groups[i..=j])) {
            Some(j) => {
                found.push(groups[i].start..groups[j].end);
                i = j + 1;
            }
            None => i += 1,
        }
    }
    found
}

/// A dotted run of groups of four that is a card, and does not continue a longer number.
fn dotted_card(text: &str, m: Range<usize>) -> Vec<Range<usize>> {
    let before = text[..m.start].chars().next_back();
    let after = text[m.end..].chars().next();
    let after2 = text[m.end..].chars().nth(1);
    let attached = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "_.,-/:".contains(c));
    if attached(before) || after.is_some_and(char::is_alphanumeric) {
        return Vec::new();
    }
    if matches!(after, Some('.' | ',' | '-' | '/' | ':'))
        && after2.is_some_and(|c| c.is_ascii_digit())
    {
        return Vec::new();
    }
    let run = &text[m.clone()];
    let lengths: Vec<usize> = run.split('.').map(str::len).collect();
    keep_if(card_shape(&lengths) && card_checks(run), m)
}

/// Whether digit groups of these lengths are written as cards are.
fn card_shape(lengths: &[usize]) -> bool {
    let total: usize = lengths.iter().sum();
    if !(13..=19).contains(&total) {
        return false;
    }
    match lengths {
        [_] => true,
        [4, 6, 5] | [4, 6, 4] => true,
        [init @ .., last] => {
            init.len() >= 2 && init.iter().all(|&l| l == 4) && (1..=4).contains(last)
        }
        [] => false,
    }
}

/// The Luhn checksum, over card networks' first digits (2221–2720, 3, 4, 5, 6).
fn card_checks(text: &str) -> bool {
    let d = digits(text);
    if d.is_empty() {
        return false;
    }
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
///
/// The text is read normalized (see the module's notes); positions are the original's.
pub fn scan(text: &str) -> Vec<Finding> {
    let Some(folded) = Folded::of(text) else {
        return scan_normal(text);
    };
    scan_normal(&folded.text)
        .into_iter()
        .map(|f| Finding {
            kind: f.kind,
            start: folded.starts[f.start],
            end: folded.ends[f.end - 1],
        })
        .collect()
}

fn scan_normal(text: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = PATTERNS
        .iter()
        .flat_map(|p| {
            p.regex
                .find_iter(text)
                .flat_map(|m| (p.check)(text, m.range()))
                .map(|r| Finding {
                    kind: p.kind,
                    start: r.start,
                    end: r.end,
                })
        })
        .collect();
    found.sort_by_key(|f| (f.start, f.end));
    found
}

/// Text as the detector reads it: NFKC, invisible format characters dropped; for each of its
/// bytes, where the original character it came from starts and ends.
struct Folded {
    text: String,
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Folded {
    /// `None` when `text` reads as it is (ASCII is already NFKC and has no format characters).
    fn of(text: &str) -> Option<Self> {
        if text.is_ascii() {
            return None;
        }
        let mut out = Folded {
            text: String::with_capacity(text.len()),
            starts: Vec::with_capacity(text.len()),
            ends: Vec::with_capacity(text.len()),
        };
        for (at, c) in text.char_indices() {
            if invisible(c) {
                continue;
            }
            let end = at + c.len_utf8();
            let before = out.text.len();
            out.text.extend(
                std::iter::once(c)
                    .nfkc()
                    .map(|n| latin_lookalike(n).unwrap_or(n)),
            );
            for _ in before..out.text.len() {
                out.starts.push(at);
                out.ends.push(end);
            }
        }
        Some(out)
    }
}

/// The Latin letter a Cyrillic or Greek letter is drawn like, so that `pаssword` with a
/// Cyrillic `а` reads as the word a model reads. NFKC leaves these apart (they are letters of
/// their own scripts); only letters that look the same in common fonts are folded.
fn latin_lookalike(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' => 'a',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ё' => 'e',
        'һ' => 'h',
        'і' | 'ι' => 'i',
        'ј' => 'j',
        'к' | 'κ' => 'k',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' => 'u',
        'ν' => 'v',
        'ԝ' => 'w',
        'х' | 'χ' => 'x',
        'у' => 'y',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' | 'Ϲ' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        _ => return None,
    })
}

/// Characters that show nothing (Unicode's default-ignorable code points): zero-width spaces
/// and joiners, soft hyphens, direction marks, variation selectors, tags.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{34F}'
            | '\u{61C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
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
            // Overlaps a span already redacted: whatever it adds past that span goes too.
            at = at.max(f.end);
            continue;
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
        .map(|(k, v)| (redact(k), redact_value_of(k, v)))
        .collect();
    out
}

/// `value` with every string in it, object keys too, [`redact`]ed; a value under a key that
/// names a secret (`"aws_secret_access_key": "…"`) is redacted whole, whatever it looks like,
/// since its key is all that says what it is.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (redact(k), redact_value_of(k, v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn redact_value_of(key: &str, value: &Value) -> Value {
    match value {
        Value::String(s) if !s.is_empty() && secret_key(key) => {
            Value::String(format!("[redacted:{}]", key_kind(key).as_str()))
        }
        Value::Number(_) if secret_key(key) && key_kind(key) == SensitiveKind::Password => {
            Value::String(format!("[redacted:{}]", SensitiveKind::Password.as_str()))
        }
        other => redact_json(other),
    }
}

static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^(?:{SECRET_NAME}|{PASSWORD_NAME}|(?:[a-z0-9]+[_-])*(?:credentials?|authorization|cookie))$"
    ))
    .expect("the key pattern is valid")
});

/// Whether a JSON key names a secret (`password`, `client_secret`, `X-Api-Key`, `token`).
pub fn secret_key(key: &str) -> bool {
    SECRET_KEY.is_match(key.trim())
}

fn key_kind(key: &str) -> SensitiveKind {
    let lower = key.to_ascii_lowercase();
    if ["password", "passwd", "passphrase"]
        .iter()
        .any(|w| lower.contains(w))
    {
        SensitiveKind::Password
    } else {
        SensitiveKind::ApiKey
    }
}

/// A copy of `decision` with every text a person wrote redacted: what a reader of decisions
/// (an agent's list, a reviewer's page) is shown. The stored decision keeps its text.
pub fn redact_decision(decision: &DecisionRecord) -> DecisionRecord {
    let mut out = decision.clone();
    out.situation = redact(&decision.situation);
    out.action = redact(&decision.action);
    out.rationale = redact(&decision.rationale);
    out.outcome = decision.outcome.as_deref().map(redact);
    out.resolves = decision.resolves.as_deref().map(redact);
    out
}

/// A copy of `execution` with its input, output, extra details, model and session redacted.
pub fn redact_execution(execution: &Execution) -> Execution {
    let mut out = execution.clone();
    out.input = redact_json(&execution.input);
    out.output = redact_json(&execution.output);
    out.model = execution.model.as_deref().map(redact);
    out.session = execution.session.as_deref().map(redact);
    out.extra = execution
        .extra
        .iter()
        .map(|(k, v)| (redact(k), redact_value_of(k, v)))
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
        .map(|(k, v)| (redact(k), redact_value_of(k, v)))
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

    const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const PEM_BODY: [&str; 3] = [
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
        "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo",
    ];

    /// Texts that hold a secret or personal data, with the kind each must be found as.
    fn true_positives() -> Vec<(String, SensitiveKind)> {
        let pem = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
            PEM_BODY.join("\n")
        );
        vec![
            (format!("aws_secret_access_key={AWS_SECRET}"), ApiKey),
            (format!("AWS_SECRET_ACCESS_KEY = \"{AWS_SECRET}\""), ApiKey),
            (format!("aws_secret_access_key: {AWS_SECRET}"), ApiKey),
            (
                format!("keys AKIAIOSFODNN7EXAMPLE {AWS_SECRET} in the log"),
                ApiKey,
            ),
            (format!("AKIAIOSFODNN7EXAMPLE / {AWS_SECRET}"), ApiKey),
            (
                format!("the secret was {AWS_SECRET} for the aws account"),
                ApiKey,
            ),
            (pem.clone(), PrivateKey),
            // The distiller splits sentences at line breaks and trims leading dashes.
            (
                format!("BEGIN RSA PRIVATE KEY----- {}", PEM_BODY[0]),
                PrivateKey,
            ),
            (
                format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}", PEM_BODY[1]),
                PrivateKey,
            ),
            // Only body lines, without the header: one line, or several.
            (PEM_BODY[1].to_owned(), PrivateKey),
            (format!("the key was {}", PEM_BODY[2]), PrivateKey),
            (PEM_BODY.join("\n"), PrivateKey),
            (
                format!("{} (original output: \"x\")", PEM_BODY[0]),
                PrivateKey,
            ),
            // As JSON text: an escaped line break between lines.
            (format!("\"{}\\n{}\"", PEM_BODY[0], PEM_BODY[1]), PrivateKey),
            ("card 4111 1111 1111 1111 declined".into(), CardNumber),
            ("card 4111-1111-1111-1111 declined".into(), CardNumber),
            ("card 4111111111111111.".into(), CardNumber),
            ("amex 378282246310005 ok".into(), CardNumber),
            ("amex 3782 822463 10005 ok".into(), CardNumber),
            ("(5500 0000 0000 0004)".into(), CardNumber),
            ("card:4242424242424242".into(), CardNumber),
            ("19 digits 6011 0009 9013 9424 123".into(), CardNumber),
        ]
        .into_iter()
        .chain(evasions())
        .collect()
    }

    /// Misses the detector once had, and their neighbours: dotted cards, passwords by assignment,
    /// by sentence and in URLs, keys split by invisible characters or typed in other forms.
    fn evasions() -> Vec<(String, SensitiveKind)> {
        [
            ("card 4111.1111.1111.1111 declined", CardNumber),
            ("password: hunt3r7", Password),
            ("password: \"p@$$w0rd!Zq\"", Password),
            ("the root password is Tr0ub4dor&3", Password),
            ("The root password is \"correct horse 42\".", Password),
            ("db_password=S3cr3t!", Password),
            ("{\"password\": \"hunt3r7\"}", Password),
            ("postgres://admin:S3cr3t@host/db", Password),
            ("https://bob:hunter2@example.com/x", Password),
            ("AKIA\u{200b}IOSFODNN7EXAMPLE", ApiKey),
            ("AKIAIOSF\u{2060}ODNN7EXAMPLE", ApiKey),
            ("AKIA\u{AD}IOSFODNN7EXAMPLE", ApiKey),
            ("\u{FF21}\u{FF2B}\u{FF29}\u{FF21}IOSFODNN7EXAMPLE", ApiKey),
            ("card 4111\u{200b}1111\u{200b}1111\u{200b}1111", CardNumber),
            ("client_secret: \"a$b%c^d&e*f(g)\"", ApiKey),
            ("the api token was 9f8e7d6c5b4a", Password),
            // Letters of other scripts drawn like Latin ones: Cyrillic а, Greek ο, Cyrillic АКІА.
            ("p\u{430}ssword: hunter2xyz", Password),
            ("the root passw\u{3bf}rd is Tr0ub4dor&3", Password),
            ("\u{410}\u{41a}\u{406}\u{410}IOSFODNN7EXAMPLE", ApiKey),
            // The name spelled out letter by letter.
            ("P A S S W O R D = hunter2xyz", Password),
            ("the root p.a.s.s.w.o.r.d is Tr0ub4dor&3", Password),
            ("p-a-s-s-w-o-r-d: \"s3cr3t!x\"", Password),
        ]
        .map(|(t, k)| (t.to_owned(), k))
        .to_vec()
    }

    #[test]
    fn evasions_are_found_and_redacted_whole() {
        let missed: Vec<_> = evasions()
            .into_iter()
            .filter(|(t, k)| !kinds(t).contains(k))
            .collect();
        assert!(missed.is_empty(), "{} missed: {missed:?}", missed.len());
        let red = redact("key AKIA\u{200b}IOSFODNN7EXAMPLE here");
        assert_eq!(red, "key [redacted:api_key] here");
        let red = redact("postgres://admin:S3cr3t@host/db");
        assert_eq!(red, "postgres://[redacted:password]@host/db");
    }

    #[test]
    fn a_value_under_a_secret_key_is_redacted_whatever_it_looks_like() {
        let value = serde_json::json!({
            "aws_secret_access_key": "abc",
            "nested": [{"password": 1234, "X-Api-Key": "short"}],
            "AKIAIOSFODNN7EXAMPLE": "a key as a key",
            "max_tokens": 2000,
            "token_count": "12",
        });
        let red = redact_json(&value).to_string();
        for leaked in ["\"abc\"", "1234", "short", "AKIAIOSFODNN7EXAMPLE"] {
            assert!(!red.contains(leaked), "{leaked}: {red}");
        }
        assert!(
            red.contains("\"max_tokens\":2000") && red.contains("\"token_count\":\"12\""),
            "{red}"
        );
    }

    /// Ordinary texts: nothing in them is sensitive.
    fn ordinary() -> Vec<String> {
        let mut texts: Vec<String> = [
            "1-3-0.6860157730842659",
            "score 0.6860157730842659 after 3 runs",
            "ratio 4111111111111111.5 is off",
            "ratio 12.4111111111111111 is off",
            "version 4.111.1111.1111.1111 shipped",
            "v5.5000000000000004 of the build",
            "EXEC-20260220124341-7K3Q9M2B at 2026-02-20 12:43:41",
            "timestamp 2026-02-20T12:43:41.681444+00:00 and 1740055421681444",
            "at 1740055421.6814441 seconds",
            "id 550e8400-e29b-41d4-a716-446655440000",
            "order 4111-1111-1111-1111-1111-22 closed",
            "serial 4111 1111-1111 1111 mixed separators",
            "ids 41111111 11111111 and 4111 11 1111 1111 11",
            "total 1,234,567,890,123,456 units",
            "git 3f786850e387550fdab836ed7e6dc881de23001b was deployed",
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 matched",
            "path /api/v1/Users/12345/OrdersHistory/2024/DetailsView/Item",
            "ThisIsAVeryLongCamelCaseIdentifierNameForTheService used",
            "phone-like 555-0100 and ext 1234 5678",
            "Priority must be urgent when 500 errors hit 3 customers.",
            "token limits of 2000 are fine",
            "max_tokens=2000 and password policy of 12 characters",
            // Words around passwords and tokens that hold none.
            "password: required",
            "Reset the password: click the link in the email",
            "the password is required and the token is expired",
            "the secret is to keep it simple",
            "the token limit is 4096 and the token is valid",
            "pwd: /home/user/project",
            "password = <your password>",
            "password: ${DB_PASSWORD}",
            "token: \"[redacted:api_key]\"",
            "postgres://localhost:5432/lore and https://example.com:8080/a@b",
            "version 1.2.3.4 and address 10.0.0.1 and 2026.11.27.1",
            "values 4111.1111.1111.1112 fail Luhn",
            "\u{FF11}\u{FF12} fullwidth digits and a zero\u{200b}width space",
            // Russian and Greek prose stays clean when its letters are read as Latin ones.
            "Пароль не нужен: сервис открыт для всех.",
            "Ο κωδικός πρόσβασης είναι υποχρεωτικός για την υπηρεσία.",
        ]
        .map(str::to_owned)
        .to_vec();
        // Decimals as a model writes them: 2,000 of them, from a fixed seed.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = (state >> 11) as f64 / (1u64 << 53) as f64;
            texts.push(format!("{}-{}-{x}", i % 7, i % 5));
            texts.push(format!("confidence {}", x * 1000.0));
        }
        texts
    }

    #[test]
    fn the_corpus_is_found_in_both_directions() {
        for (text, kind) in true_positives() {
            let found = kinds(&text);
            assert!(
                found.contains(&kind),
                "{text:?}: {found:?}, expected {kind:?}"
            );
        }
        let flagged: Vec<(String, Vec<Finding>)> = ordinary()
            .into_iter()
            .map(|t| {
                let found = scan(&t);
                (t, found)
            })
            .filter(|(_, found)| !found.is_empty())
            .collect();
        assert!(
            flagged.is_empty(),
            "{} false positives: {:?}",
            flagged.len(),
            &flagged[..flagged.len().min(5)]
        );
    }

    #[test]
    fn aws_keys_and_key_bodies_are_redacted_whole() {
        let text = format!("AKIAIOSFODNN7EXAMPLE {AWS_SECRET}; aws_secret_access_key={AWS_SECRET}");
        let red = redact(&text);
        assert!(
            !red.contains("wJalrXUtnFEMI") && !red.contains("EXAMPLEKEY"),
            "{red}"
        );
        assert!(!red.contains("AKIA"), "{red}");
        let text = format!("BEGIN RSA PRIVATE KEY----- {} {}", PEM_BODY[0], PEM_BODY[1]);
        let red = redact(&text);
        assert!(!red.contains("MIIE") && !red.contains("VTLw7"), "{red}");
        let red = redact(&format!("lines: {}\n{}", PEM_BODY[1], PEM_BODY[2]));
        assert_eq!(red, "lines: [redacted:private_key]\n[redacted:private_key]");
    }

    #[test]
    fn every_text_field_of_a_lesson_is_scanned_and_redacted() {
        let secret = "mail jane.doe@example.com";
        let base = || crate::model::Lesson {
            id: crate::id::LessonId::parse("REFL-1").unwrap(),
            skill: crate::scope::SkillPath::parse("hr/screen").unwrap(),
            agent: None,
            correction_id: None,
            execution_id: None,
            mistake: String::new(),
            root_cause: String::new(),
            rule: String::new(),
            applies_when: String::new(),
            triggers: Vec::new(),
            tags: Vec::new(),
            tiers: crate::model::Tiers::default(),
            confidence: 0.5,
            source: crate::model::LessonSource::Import,
            status: crate::model::LessonStatus::Approved,
            utility: crate::model::UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            updated_at: chrono::DateTime::UNIX_EPOCH,
            extra: serde_json::Map::new(),
        };
        type Plant = fn(&mut Lesson, String);
        let fields: [(&str, Plant); 11] = [
            ("mistake", |l, t| l.mistake = t),
            ("root_cause", |l, t| l.root_cause = t),
            ("rule", |l, t| l.rule = t),
            ("applies_when", |l, t| l.applies_when = t),
            ("tiers.summary", |l, t| l.tiers.summary = t),
            ("tiers.condition", |l, t| l.tiers.condition = t),
            ("tiers.action", |l, t| l.tiers.action = t),
            ("tiers.rationale", |l, t| l.tiers.rationale = t),
            ("tiers.steps", |l, t| l.tiers.steps = vec![t]),
            ("triggers", |l, t| l.triggers = vec![t]),
            ("tags", |l, t| l.tags = vec![t]),
        ];
        for (name, plant) in fields {
            for text in [
                secret.to_owned(),
                PEM_BODY[0].to_owned(),
                format!("aws_secret_access_key={AWS_SECRET}"),
            ] {
                let mut lesson = base();
                plant(&mut lesson, text.clone());
                assert!(
                    !scan_lesson(&lesson).is_empty(),
                    "{name}: {text:?} not found"
                );
                let shown = serde_json::to_string(&redact_lesson(&lesson)).unwrap();
                assert!(shown.contains("[redacted:"), "{name}: {shown}");
                assert!(!shown.contains(&text), "{name} shows {text:?}: {shown}");
            }
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
