//! A rule read as directives: which things it names, and whether it asks for them or against
//! them. Curation compares rules in these terms ([`crate::supersession`]).
//!
//! People reword a rule freely ("reply in their language" / "respond in the language they
//! wrote in") but a rule about another thing differs in a word that names it ("the invoice" /
//! "the refund policy page", "German" / "Spanish", "billing" / "search"). So a rule is reduced
//! to its *content words* in a canonical form: lower-cased, inflection stripped, spelling
//! variants and common synonyms of directive verbs mapped to one word, and the words that only
//! shape a sentence (articles, modals, "always", "make sure", generic verbs such as "use" or
//! "include") dropped. What is left names the rule's subjects, and two rules say the same thing
//! only when those words agree.
//!
//! Polarity is kept apart from content. Negations ("never", "don't", "must not") and verbs that
//! ask against something ("avoid", "omit", "exclude", "disable", "skip") flip it, each once, so
//! "never skip the tests" asks for the tests. A rule is cut into segments at sentence ends and
//! at "instead of", "rather than" and "but", because one rule often holds both directions ("use
//! X instead of Y"; "don't revert; fix it forward"), each segment with its own polarity.

use std::collections::{BTreeMap, BTreeSet};

/// One directive of a rule: its content words and whether it asks against them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Canonical content words.
    pub words: BTreeSet<String>,
    /// Whether the segment asks against its words ("never …", "avoid …", "… instead of it").
    pub negated: bool,
}

/// Phrases rewritten before words are cut, so that an idiom reads as one word or as none.
/// Bounds come first: "no more than" is an upper bound, not a negation.
const PHRASES: &[(&str, &str)] = &[
    ("no more than", "atmost"),
    ("not more than", "atmost"),
    ("no longer than", "atmost"),
    ("not longer than", "atmost"),
    ("no later than", "atmost"),
    ("not later than", "atmost"),
    ("no greater than", "atmost"),
    ("no higher than", "atmost"),
    ("less than", "atmost"),
    ("fewer than", "atmost"),
    ("shorter than", "atmost"),
    ("lower than", "atmost"),
    ("smaller than", "atmost"),
    ("at most", "atmost"),
    ("up to", "atmost"),
    ("no less than", "atleast"),
    ("no fewer than", "atleast"),
    ("not less than", "atleast"),
    ("not fewer than", "atleast"),
    ("more than", "atleast"),
    ("greater than", "atleast"),
    ("higher than", "atleast"),
    ("larger than", "atleast"),
    ("longer than", "atleast"),
    ("at least", "atleast"),
    ("not only", ""),
    ("no matter", ""),
    ("no longer", "never"),
    ("make sure", ""),
    ("be sure", ""),
    ("for example", ""),
    ("for instance", ""),
    ("such as", ""),
    ("e.g.", ""),
    ("right away", ""),
    ("as soon as possible", ""),
    ("straight away", ""),
    ("at once", ""),
    ("as well", ""),
    ("leave out", "omit"),
    ("left out", "omit"),
    ("back up", "backup"),
    ("turn off", "disable"),
    ("switch off", "disable"),
    ("turn on", "enable"),
    ("switch on", "enable"),
    ("do not", "not"),
    ("does not", "not"),
    ("did not", "not"),
    ("is not", "not"),
    ("are not", "not"),
    ("must not", "not"),
    ("should not", "not"),
    ("can not", "not"),
];

/// Where one rule turns into the next directive; what follows "instead of" or "rather than"
/// is what the rule asks against.
const TURNS: &[(&str, bool)] = &[
    (" instead of ", true),
    (" rather than ", true),
    (" but ", false),
    (" otherwise ", false),
];

/// Words that ask against what they govern. Each flips the segment's polarity once.
const NEGATORS: &[&str] = &[
    "never",
    "not",
    "no",
    "nor",
    "none",
    "nobody",
    "nothing",
    "neither",
    "without",
    "don't",
    "dont",
    "doesn't",
    "didn't",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "cannot",
    "can't",
    "won't",
    "wouldn't",
    "shouldn't",
    "mustn't",
    "avoid",
    "refrain",
    "refuse",
    "decline",
    "stop",
    "cease",
    "omit",
    "exclude",
    "skip",
    "forbid",
    "forbidden",
    "prohibit",
    "disallow",
    "deny",
    "disable",
    "hide",
    "ban",
];

/// Words that shape a directive without naming what it is about: function words, modals,
/// intensifiers, and the generic verbs a directive is phrased with ("use", "include", "keep",
/// "set", "allow"), whose opposites are [`NEGATORS`].
const SHAPE_WORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "to",
    "for",
    "in",
    "on",
    "at",
    "by",
    "with",
    "from",
    "into",
    "onto",
    "as",
    "about",
    "via",
    "per",
    "is",
    "are",
    "be",
    "been",
    "being",
    "was",
    "were",
    "am",
    "it",
    "its",
    "it's",
    "this",
    "that",
    "these",
    "those",
    "there",
    "here",
    "they",
    "them",
    "their",
    "theirs",
    "we",
    "us",
    "our",
    "you",
    "your",
    "yours",
    "he",
    "she",
    "his",
    "her",
    "i",
    "me",
    "my",
    "one",
    "ones",
    "someone",
    "something",
    "when",
    "whenever",
    "if",
    "then",
    "than",
    "so",
    "do",
    "does",
    "did",
    "done",
    "doing",
    "should",
    "must",
    "shall",
    "will",
    "would",
    "can",
    "could",
    "may",
    "might",
    "need",
    "needs",
    "needed",
    "have",
    "has",
    "had",
    "having",
    "always",
    "ever",
    "every",
    "each",
    "any",
    "all",
    "also",
    "too",
    "just",
    "only",
    "please",
    "ensure",
    "sure",
    "make",
    "makes",
    "remember",
    "important",
    "properly",
    "correctly",
    "clearly",
    "explicitly",
    "carefully",
    "immediately",
    "instead",
    "same",
    "like",
    "example",
    "e",
    "g",
    "eg",
    "use",
    "used",
    "uses",
    "using",
    "get",
    "gets",
    "take",
    "takes",
    "give",
    "gives",
    "keep",
    "keeps",
    "put",
    "puts",
    "set",
    "sets",
    "include",
    "includes",
    "included",
    "including",
    "mention",
    "mentions",
    "mentioned",
    "add",
    "adds",
    "added",
    "state",
    "states",
    "show",
    "shows",
    "shown",
    "provide",
    "provides",
    "contain",
    "contains",
    "let",
    "lets",
    "allow",
    "allows",
    "allowed",
    "able",
    "permit",
    "enable",
    "enabled",
    "which",
    "who",
    "whom",
    "what",
    "how",
    "way",
    "manner",
    "display",
    "displays",
    "displayed",
    "appear",
    "appears",
    "expose",
    "exposes",
    "exposed",
    "reveal",
    "reveals",
    "revealed",
    "format",
    "style",
    "whose",
    "yes",
];

/// Spelling variants, irregular forms and common synonyms of directive words, each mapped to
/// one canonical word before stemming.
const SYNONYMS: &[(&str, &str)] = &[
    ("respond", "reply"),
    ("responds", "reply"),
    ("response", "reply"),
    ("responses", "reply"),
    ("answer", "reply"),
    ("answers", "reply"),
    ("answered", "reply"),
    ("client", "customer"),
    ("clients", "customer"),
    ("verify", "check"),
    ("verifies", "check"),
    ("verified", "check"),
    ("confirm", "check"),
    ("confirms", "check"),
    ("validate", "check"),
    ("validated", "check"),
    ("validates", "check"),
    ("begin", "start"),
    ("begins", "start"),
    ("written", "write"),
    ("wrote", "write"),
    ("sent", "send"),
    ("made", "make"),
    ("given", "give"),
    ("gave", "give"),
    ("taken", "take"),
    ("took", "take"),
    ("kept", "keep"),
    ("left", "leave"),
    ("ran", "run"),
    ("broken", "break"),
    ("broke", "break"),
    ("built", "build"),
    ("told", "tell"),
    ("inform", "tell"),
    ("informs", "tell"),
    ("chosen", "choose"),
    ("chose", "choose"),
    ("paid", "pay"),
    ("found", "find"),
    ("exceed", "atleast"),
    ("exceeds", "atleast"),
    ("exceeding", "atleast"),
    ("above", "atleast"),
    ("over", "atleast"),
    ("below", "atmost"),
    ("under", "atmost"),
    ("within", "atmost"),
    ("picture", "photo"),
    ("post", "share"),
    ("posts", "share"),
    ("posted", "share"),
    ("publish", "share"),
    ("pictures", "photo"),
];

/// Words that state a value as digits would: a rule that adds one names another value.
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "once", "twice", "half",
    "double", "atmost", "atleast",
];

/// Whether a canonical word states a value (a number, a bound).
pub fn is_value(word: &str) -> bool {
    word.chars().any(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&word)
}

/// The content words of `text` in canonical form, without polarity.
pub fn content(text: &str) -> BTreeSet<String> {
    segments(text).into_iter().flat_map(|s| s.words).collect()
}

/// The directives of `text`, in order; segments without content words are left out.
pub fn segments(text: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    for sentence in crate::text::sentences(&rewrite(text)) {
        let mut rest = format!(" {sentence} ");
        let mut against = false;
        loop {
            let turn = TURNS
                .iter()
                .filter_map(|(t, neg)| rest.find(t).map(|at| (at, t.len(), *neg)))
                .min();
            let (head, next) = match turn {
                Some((at, len, neg)) => (
                    rest[..at].to_owned(),
                    Some((rest[at + len..].to_owned(), neg)),
                ),
                None => (rest.clone(), None),
            };
            push_segment(&head, against, &mut out);
            match next {
                Some((tail, neg)) => {
                    rest = format!(" {tail}");
                    against = neg;
                }
                None => break,
            }
        }
    }
    out
}

fn push_segment(text: &str, against: bool, out: &mut Vec<Segment>) {
    let mut negated = against;
    let mut words = BTreeSet::new();
    for raw in tokens(text) {
        if is_negator(&raw) {
            negated = !negated;
            continue;
        }
        if let Some(word) = canonical(&raw) {
            words.insert(word);
        }
    }
    if !words.is_empty() {
        out.push(Segment { words, negated });
    }
}

/// A negation, or a verb that asks against its object in any inflection ("excluding",
/// "avoided", "skips").
fn is_negator(word: &str) -> bool {
    static STEMS: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    let stems = STEMS.get_or_init(|| NEGATORS.iter().map(|w| stem(w)).collect());
    NEGATORS.contains(&word) || stems.contains(&stem(word))
}

/// Lower-cased text with [`PHRASES`] rewritten at word boundaries.
fn rewrite(text: &str) -> String {
    let lower = text.to_lowercase().replace(['’', '‘'], "'");
    let mut padded = format!(" {} ", lower.replace("e-mail", "email"));
    for (phrase, with) in PHRASES {
        let needle = format!(" {phrase} ");
        let replacement = format!(" {with} ");
        while padded.contains(&needle) {
            padded = padded.replace(&needle, &replacement);
        }
    }
    padded.trim().to_owned()
}

/// Words of lower-cased text, apostrophes kept inside a word and a possessive dropped.
fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.strip_suffix("'s").unwrap_or(w).to_owned())
}

/// The canonical form of a lower-cased word, or `None` for a word that names nothing.
fn canonical(word: &str) -> Option<String> {
    if SHAPE_WORDS.contains(&word) {
        return None;
    }
    let synonyms: &BTreeMap<&str, &str> = synonym_map();
    let word = synonyms.get(word).copied().unwrap_or(word);
    if SHAPE_WORDS.contains(&word) {
        return None;
    }
    if NUMBER_WORDS.contains(&word) {
        return Some(word.to_owned());
    }
    Some(stem(&word.replace("iz", "is")))
}

fn synonym_map() -> &'static BTreeMap<&'static str, &'static str> {
    static MAP: std::sync::OnceLock<BTreeMap<&str, &str>> = std::sync::OnceLock::new();
    MAP.get_or_init(|| SYNONYMS.iter().copied().collect())
}

/// A lower-case word without its regular English inflection: a plural, then `-ing` or `-ed`,
/// a doubled final consonant, then a final `e`, so "hike", "hikes", "hiked" and "hiking" all
/// become "hik", and "running" meets "run". Words of three letters or fewer, and words with a
/// digit or a letter outside ASCII, are left whole: a short word's ending is usually its root,
/// and an identifier or a foreign word has no English suffix to take off.
pub fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if let Some(base) = w.strip_suffix("ies") {
        w = format!("{base}y");
    } else if let Some(base) = w.strip_suffix("sses") {
        w = format!("{base}ss");
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    for ending in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(ending)
            && base.len() >= 3
            && base.bytes().any(is_vowel)
        {
            w.truncate(base.len());
            let b = w.as_bytes();
            let n = b.len();
            if b[n - 1] == b[n - 2] && !is_vowel(b[n - 1]) && !b"lsz".contains(&b[n - 1]) {
                w.pop();
            }
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

fn is_vowel(b: u8) -> bool {
    b"aeiouy".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        content(text).into_iter().collect()
    }

    #[test]
    fn wording_that_shapes_a_sentence_is_not_content() {
        assert_eq!(
            words("Always make sure to reply to the customer in their language."),
            words("Respond to customers in the language.")
        );
        assert_eq!(words("Dates must be written"), words("write dates"));
    }

    #[test]
    fn negations_flip_polarity_once_each() {
        let one = |t: &str| {
            let s = segments(t);
            assert_eq!(s.len(), 1, "{t}: {s:?}");
            s[0].negated
        };
        assert!(!one("Run the tests."));
        assert!(one("Never run the tests."));
        assert!(one("Skip the tests."));
        assert!(!one("Never skip the tests."));
        assert!(one("Users must not be able to delete comments."));
        assert!(!one("Keep summaries no longer than 100 words."));
    }

    #[test]
    fn instead_of_and_sentence_ends_cut_a_rule_into_directives() {
        let s = segments("Use metric units instead of imperial ones.");
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(!s[0].negated && s[1].negated, "{s:?}");
        let s = segments("Don't revert the commit; fix it forward.");
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(s[0].negated && !s[1].negated, "{s:?}");
    }
}
