//! The offline distiller: a lesson from a correction, with no model and no network.
//!
//! It is deterministic, so the same correction always gives the same lesson, and it always works;
//! a model-backed proposer (a later upgrade) is optional. It follows seed 000: the rule comes from
//! the correction's directive sentences, applies-when from its conditions and the task's words,
//! the mistake and root cause from the sentences that say what went wrong and why, and
//! confidence from how specific the correction is — a detailed correction with clear rules
//! scores 0.8–1.0, a vague one 0.5–0.6. A field the text says nothing about stays empty rather
//! than holding a sentence that fits every lesson: boilerplate made unrelated lessons of one
//! skill look alike, so curation linked them as conflicts and recall dropped them.

use serde_json::Value;

use lore_core::model::Tiers;
use lore_core::text::{TASK_WORDS_LABEL, sentences};

/// What the distiller makes of one correction.
#[derive(Clone, Debug, PartialEq)]
pub struct Distilled {
    /// What went wrong.
    pub mistake: String,
    /// Why, as a category.
    pub root_cause: String,
    /// The rule to inject.
    pub rule: String,
    /// When it applies.
    pub applies_when: String,
    /// How specific the correction was, `0.5..=1.0`.
    pub confidence: f64,
    /// The root-cause tag.
    pub tags: Vec<String>,
    /// Summary, activation and execution tiers.
    pub tiers: Tiers,
}

const DIRECTIVE_MARKERS: &[&str] = &[
    "should",
    "must",
    "always",
    "never",
    "need to",
    "needs to",
    "do not",
    "don't",
    "avoid",
    "ensure",
    "make sure",
    "instead",
    "required",
    "prefer",
    "only",
    "has to",
    "have to",
];
const IMPERATIVE_VERBS: &[&str] = &[
    "use",
    "check",
    "include",
    "exclude",
    "return",
    "set",
    "add",
    "remove",
    "score",
    "weight",
    "weigh",
    "treat",
    "flag",
    "ask",
    "verify",
    "keep",
    "write",
    "reject",
    "accept",
    "cap",
    "limit",
    "mention",
    "list",
    "cite",
    "prioritize",
    "rank",
    "run",
    "call",
    "retry",
    "wait",
    "quote",
    "escape",
    "validate",
    "handle",
    "restart",
    "drain",
    "deploy",
    "rotate",
    "test",
    "sort",
    "convert",
    "compare",
    "split",
    "strip",
    "trim",
    "parse",
    "read",
    "pass",
    "apply",
    "avoid",
    "prefer",
    "make",
    "start",
    "stop",
    "send",
    "name",
    "state",
    "report",
    "create",
    "delete",
    "update",
    "insert",
    "append",
    "wrap",
    "reduce",
    "increase",
    "iterate",
    "count",
    "compute",
    "calculate",
    "initialize",
    "reset",
    "guard",
    "lock",
    "close",
    "open",
    "log",
    "skip",
    "don't",
    "do",
];
const CONDITION_OPENERS: &[&str] = &["when ", "whenever ", "if ", "unless ", "for ", "in case "];
const VAGUE_MARKERS: &[&str] = &[
    "wrong",
    "bad",
    "incorrect",
    "not",
    "right",
    "fix",
    "redo",
    "no",
    "nope",
    "error",
    "broken",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `sentence` tells what to do. Only the part before a "because" clause counts: in
/// "it failed because it never checks the last pair" the "never" describes the mistake.
fn is_directive(sentence: &str) -> bool {
    let lower = format!(" {} ", sentence.to_lowercase());
    let head = CAUSE_MARKERS
        .iter()
        .filter_map(|m| lower.find(m))
        .min()
        .map_or(lower.as_str(), |at| &lower[..at]);
    let lower = format!("{head} ");
    if DIRECTIVE_MARKERS
        .iter()
        .any(|m| lower.contains(&format!(" {m} ")))
    {
        return true;
    }
    let first = words(sentence).into_iter().next().unwrap_or_default();
    if IMPERATIVE_VERBS.contains(&first.as_str()) {
        return true;
    }
    // "When X, run Y": the order comes after a leading condition clause.
    let opens_with_condition = CONDITION_OPENERS
        .iter()
        .any(|o| sentence.to_lowercase().starts_with(o));
    opens_with_condition
        && sentence.split_once(',').is_some_and(|(_, rest)| {
            let after = words(rest).into_iter().next().unwrap_or_default();
            IMPERATIVE_VERBS.contains(&after.as_str())
        })
}

/// The condition clause of a sentence: a leading `When …,` / `If …,`, an inner `… when …`, or a
/// leading purpose `To …, <order>`, which runs to the comma before the order ("To sort the rows
/// by X, largest first, use …").
fn condition_of(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    if lower.starts_with("to ") {
        return order_comma(sentence)
            .map(|end| sentence[..end].trim().to_owned())
            .filter(|c| c.split_whitespace().count() >= 3);
    }
    for opener in CONDITION_OPENERS {
        let start = if lower.starts_with(opener) {
            Some(0)
        } else if *opener != "for " {
            lower
                .match_indices(&format!(" {opener}"))
                .map(|(i, _)| i + 1)
                .find(|&i| !asks_about(&lower[..i]))
        } else {
            None
        };
        if let Some(start) = start {
            let rest = &sentence[start..];
            let end = rest.find([',', ';']).unwrap_or(rest.len());
            let clause = rest[..end].trim().trim_end_matches(['.', '!', '?']);
            if clause.split_whitespace().count() >= 2 {
                return Some(clause.to_owned());
            }
        }
    }
    None
}

/// Words after which "if" or "when" opens what is checked or asked, not when a rule applies:
/// "run it to see if it was mentioned", "check whether", "ask when it ships", "even if".
const ASKING_WORDS: &[&str] = &[
    "see",
    "check",
    "checking",
    "checks",
    "checked",
    "know",
    "knowing",
    "determine",
    "verify",
    "test",
    "testing",
    "tests",
    "ask",
    "asking",
    "asked",
    "wonder",
    "decide",
    "tell",
    "out",
    "sure",
    "confirm",
    "find",
    "learn",
    "even",
    "as",
    "what",
    "about",
    "clear",
    "unclear",
];

/// Whether `before`, the text before an inner "if" or "when", ends with a word that makes the
/// clause the object of a question or a check ([`ASKING_WORDS`]) rather than a condition.
fn asks_about(before: &str) -> bool {
    words(before)
        .last()
        .is_some_and(|w| ASKING_WORDS.contains(&w.as_str()))
}

/// The byte offset of the first comma followed by an order ("…, use", "…, run").
fn order_comma(sentence: &str) -> Option<usize> {
    sentence.match_indices(',').map(|(at, _)| at).find(|&at| {
        let after = words(&sentence[at + 1..])
            .into_iter()
            .next()
            .unwrap_or_default();
        IMPERATIVE_VERBS.contains(&after.as_str())
    })
}

fn has_specifics(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_digit()) || text.contains('"') || text.contains('`')
}

/// The root-cause category of a correction, as a tag, when its words name one. Words every
/// correction uses ("wrong", "incorrect") name none: a tag on nearly every lesson of a skill
/// would tell nothing and only fill recall's per-tag cap.
fn category(lower: &str) -> Option<&'static str> {
    let any = |keys: &[&str]| keys.iter().any(|k| lower.contains(k));
    if any(&["score", "weight", "rank", "rating", "priorit"]) {
        Some("scoring")
    } else if any(&[
        "missing",
        "missed",
        "forgot",
        "omit",
        "ignor",
        "didn't include",
        "lack",
        "without",
    ]) {
        Some("omission")
    } else if any(&["format", "json", "field", "schema", "structure", "markdown"]) {
        Some("format")
    } else if any(&["tone", "voice", "polite", "rude", "formal"]) {
        Some("tone")
    } else {
        None
    }
}

const CAUSE_MARKERS: &[&str] = &[" because ", " since ", " due to ", " as a result of "];

/// Why it went wrong, in the correction's own words: the clause after the first "because"
/// (or "since", "due to"), to the end of its sentence. Empty when the text gives no reason.
fn cause_of(sentences: &[String]) -> String {
    for sentence in sentences {
        let lower = format!(" {}", sentence.to_lowercase());
        let found = CAUSE_MARKERS
            .iter()
            .filter_map(|m| lower.find(m).map(|i| (i, m.len())))
            .min();
        if let Some((at, len)) = found {
            // `lower` has one leading space more than `sentence`; lower-casing keeps ASCII
            // offsets, and a non-ASCII shift is caught by `get`.
            let start = at + len - 1;
            if let Some(rest) = sentence.get(start..) {
                let clause = rest.trim().trim_end_matches(['.', '!', '?', ';']).trim();
                if clause.split_whitespace().count() >= 2 {
                    return upper_first(clause) + ".";
                }
            }
        }
    }
    String::new()
}

/// Words too common in a task's text to say what the task is about: English function words
/// and the scaffolding of code and prompts.
const TASK_STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "are", "was", "were", "will",
    "you", "your", "given", "which", "what", "when", "then", "than", "there", "their", "have",
    "has", "had", "not", "but", "all", "any", "each", "its", "can", "could", "should", "would",
    "must", "may", "only", "also", "such", "other", "some", "more", "most", "one", "two", "how",
    "who", "where", "why", "these", "those", "them", "they", "our", "out", "use", "using", "used",
    "def", "return", "returns", "import", "typing", "int", "str", "float", "bool", "none", "true",
    "false", "self", "list", "dict", "tuple", "optional", "function", "write", "python", "program",
    "given", "task", "https", "http", "www", "com", "html", "php", "org",
];

/// At most this many of a task's words go into `applies_when`.
const TASK_WORDS: usize = 12;

/// What the task was about: its first distinct content words (identifiers split at `_`), from
/// the execution's input. Empty for an input without text.
pub fn task_words(input: &Value) -> Vec<String> {
    let mut text = String::new();
    collect_strings(input, &mut text);
    let mut out: Vec<String> = Vec::new();
    let parts = text.split(|c: char| !c.is_alphanumeric());
    for word in parts.map(str::to_lowercase) {
        let keep = word.chars().count() >= 3
            && word.chars().any(char::is_alphabetic)
            && !TASK_STOPWORDS.contains(&word.as_str());
        if keep && !out.contains(&word) {
            out.push(word);
            if out.len() == TASK_WORDS {
                break;
            }
        }
    }
    out
}

fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

fn confidence(text: &str, directives: usize, condition: bool) -> f64 {
    let word_count = words(text).len();
    let lower = text.to_lowercase();
    let step = |yes: bool| if yes { 0.05 } else { 0.0 };
    let score: f64 = if directives > 0 {
        0.8 + step(condition)
            + step(has_specifics(text))
            + step(word_count >= 20)
            + step(
                ["always", "never", "must"]
                    .iter()
                    .any(|m| lower.contains(m)),
            )
    } else {
        let vague = word_count <= 5
            && VAGUE_MARKERS
                .iter()
                .any(|m| words(text).iter().any(|w| w == m));
        0.5 + step(!vague && word_count >= 8) + step(!vague && has_specifics(text))
    };
    (score.clamp(0.5, 1.0) * 100.0).round() / 100.0
}

fn summary(rule: &str) -> String {
    let first = sentences(rule).into_iter().next().unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    if words.len() <= 40 {
        first
    } else {
        format!("{}…", words[..40].join(" "))
    }
}

/// Distills a lesson from a correction of a run whose input was `input`.
///
/// Every field comes from the case or stays empty: the rule from the directive sentences (the
/// whole text when there are none), the mistake from the sentences that describe what went
/// wrong, the root cause from their "because" clause, and `applies_when` from the condition
/// clause ("when …", "if …") and the task's own words. Nothing is boilerplate, so two lessons
/// of one skill look alike only when their cases do.
pub fn distill(correction: &str, input: &Value) -> Distilled {
    let all = sentences(correction);
    let directives: Vec<&String> = all.iter().filter(|s| is_directive(s)).collect();
    let observations: Vec<&String> = all.iter().filter(|s| !is_directive(s)).collect();
    // Only an order's own condition says where the lesson applies: in "it failed when the
    // list was empty" the clause describes the mistake, not the lesson's scope.
    let conditions: Vec<String> = directives.iter().filter_map(|s| condition_of(s)).collect();

    let rule = if directives.is_empty() {
        correction.trim().to_owned()
    } else {
        join(&directives)
    };
    let applies_when = applies_when(conditions.first(), &task_words(input));
    let mistake = join(&observations);
    let root_cause = cause_of(&all);
    let lower = correction.to_lowercase();
    let has_condition = !conditions.is_empty();
    Distilled {
        confidence: confidence(correction, directives.len(), has_condition),
        tiers: Tiers {
            summary: summary(&rule),
            condition: applies_when.clone(),
            action: rule.clone(),
            rationale: root_cause.clone(),
            steps: directives.iter().map(|s| s.to_string()).collect(),
        },
        mistake,
        root_cause,
        rule,
        applies_when,
        tags: category(&lower).map(str::to_owned).into_iter().collect(),
    }
}

/// Whether `correction` holds anything to learn: a directive, or at least
/// [`MIN_CONTENT_WORDS`] words that are neither function words nor a bare verdict ("wrong",
/// "bad", "fix"). "This is wrong." and "x" hold nothing; they stay feedback on their run.
pub fn holds_a_rule(correction: &str) -> bool {
    if sentences(correction).iter().any(|s| is_directive(s)) {
        return true;
    }
    let content = words(correction)
        .into_iter()
        .filter(|w| w.chars().count() >= 2)
        .filter(|w| !VAGUE_MARKERS.contains(&w.as_str()))
        .filter(|w| !lore_core::supersession::STOPWORDS.contains(&w.as_str()))
        .filter(|w| !TASK_STOPWORDS.contains(&w.as_str()))
        .count();
    content >= MIN_CONTENT_WORDS
}

/// Content words below which a correction without a directive holds no rule.
pub const MIN_CONTENT_WORDS: usize = 3;

fn join(sentences: &[&String]) -> String {
    sentences
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The condition clause, then the task's words; empty when there are neither.
fn applies_when(condition: Option<&String>, task: &[String]) -> String {
    let mut out = condition.map(|c| upper_first(c) + ".").unwrap_or_default();
    if !task.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&format!("{TASK_WORDS_LABEL} {}.", task.join(", ")));
    }
    out
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DETAILED: &str = "When screening for senior backend roles, system design experience \
        should be weighted separately from coding skills. A candidate with 5 years Python but no \
        distributed systems should score below 60.";

    #[test]
    fn detailed_correction_gives_a_confident_rule_with_conditions() {
        let d = distill(
            DETAILED,
            &json!({"candidate": "Ana Ruiz, backend engineer"}),
        );
        assert!(
            d.confidence >= 0.8 && d.confidence <= 1.0,
            "{}",
            d.confidence
        );
        assert!(d.rule.contains("weighted separately"), "{}", d.rule);
        assert!(d.rule.contains("below 60"), "{}", d.rule);
        assert_eq!(
            d.applies_when,
            "When screening for senior backend roles. Tasks about: ana, ruiz, backend, engineer."
        );
        assert_eq!(d.mistake, "", "every sentence is a directive");
        assert_eq!(d.tags, vec!["scoring".to_owned()]);
        assert_eq!(d.tiers.steps.len(), 2);
    }

    #[test]
    fn nothing_is_boilerplate() {
        let d = distill("This is wrong.", &json!({}));
        assert!((0.5..=0.6).contains(&d.confidence), "{}", d.confidence);
        assert_eq!(d.rule, "This is wrong.");
        assert_eq!(d.applies_when, "");
        assert_eq!(d.root_cause, "");
        assert!(d.tags.is_empty(), "{:?}", d.tags);
    }

    #[test]
    fn a_self_reflection_gives_its_mistake_cause_situation_and_rule() {
        let text = "I wrote a loop that stops at the second to last element, which failed \
            because it never compares the last pair. Next time I should iterate over every \
            adjacent pair.";
        let task = json!({"task": "def max_adjacent_product(nums: List[int]) -> int:\n    \
            \"\"\"Find the largest product of adjacent elements.\"\"\""});
        let d = distill(text, &task);
        assert!(d.mistake.starts_with("I wrote a loop"), "{}", d.mistake);
        assert_eq!(d.root_cause, "It never compares the last pair.");
        assert_eq!(
            d.rule,
            "Next time I should iterate over every adjacent pair."
        );
        assert_eq!(
            d.applies_when,
            "Tasks about: max, adjacent, product, nums, find, largest, elements."
        );
    }

    #[test]
    fn a_clause_that_says_what_to_check_is_no_condition() {
        for text in [
            "I should have searched the whole page to see if it was mentioned there.",
            "Next time I should check whether the list is empty and ask when the data arrives.",
            "Always keep the original file, even if the copy looks complete.",
        ] {
            let d = distill(text, &json!({}));
            assert_eq!(d.applies_when, "", "{text}");
        }
        // A stated condition after such a clause is still found.
        let d = distill(
            "You should check the totals to see if they match, and retry if the upload failed.",
            &json!({}),
        );
        assert_eq!(d.applies_when, "If the upload failed.");
    }

    #[test]
    fn an_order_after_a_condition_clause_is_the_rule_not_the_mistake() {
        let text = "When deploying the api, run migrations before restarting the service.";
        let d = distill(text, &json!({"task": "deploy the api"}));
        assert_eq!(d.rule, text);
        assert_eq!(
            d.mistake, "",
            "the sentence says what to do, not what went wrong"
        );
        assert!(
            d.applies_when.contains("deploying the api"),
            "{}",
            d.applies_when
        );
    }

    #[test]
    fn a_purpose_clause_before_an_order_is_the_condition() {
        let text = "To sort the rows by X, largest first with gridtool, use `gridtool sort \
            --order=desc X` instead of `gridtool sort --desc X`.";
        let d = distill(
            text,
            &json!({"task": "sort the rows; then show the first rows"}),
        );
        assert_eq!(
            lore_core::text::stated_condition(&d.applies_when),
            "To sort the rows by X, largest first with gridtool."
        );
        // A purpose without an order after it is no condition.
        let d = distill("To be honest, the output was fine.", &json!({}));
        assert_eq!(d.applies_when, "");
    }

    #[test]
    fn a_condition_in_an_observation_describes_the_mistake_not_the_scope() {
        let d = distill(
            "It failed when the list was empty. Check the length first.",
            &json!({"task": "sum the list"}),
        );
        assert_eq!(lore_core::text::stated_condition(&d.applies_when), "");
        assert!(d.applies_when.contains("sum"), "{}", d.applies_when);
    }

    #[test]
    fn observation_sentences_become_the_mistake() {
        let d = distill(
            "The summary ignored the salary band. Always mention the salary band.",
            &json!("text"),
        );
        assert_eq!(d.mistake, "The summary ignored the salary band.");
        assert_eq!(d.rule, "Always mention the salary band.");
        assert_eq!(d.tags, vec!["omission".to_owned()]);
    }

    #[test]
    fn a_bare_verdict_holds_no_rule() {
        for text in ["This is wrong.", "x", "no", "Wrong, fix it.", "bad output"] {
            assert!(!holds_a_rule(text), "{text}");
        }
        for text in [
            "Always mention the salary band.",
            "The parser drops the trailing comma in nested arrays.",
            "Use UTC.",
        ] {
            assert!(holds_a_rule(text), "{text}");
        }
    }

    #[test]
    fn distilling_is_deterministic_and_keeps_decimals_whole() {
        let text = "Scores must use 0.5 steps. Never round up.";
        let a = distill(text, &json!(1));
        assert_eq!(a, distill(text, &json!(1)));
        assert_eq!(
            sentences(text),
            vec!["Scores must use 0.5 steps.", "Never round up."]
        );
    }
}
