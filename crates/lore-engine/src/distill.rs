//! The offline distiller: a lesson from a correction, with no model and no network.
//!
//! It is deterministic, so the same correction always gives the same lesson, and it always works;
//! a model-backed proposer (a later upgrade) is optional. It follows seed 000: the rule comes from
//! the correction's directive sentences, applies-when from its conditions, the mistake from the
//! original output against the correction, and confidence from how specific the correction is —
//! a detailed correction with clear rules scores 0.8–1.0, a vague "this is wrong" 0.5–0.6.

use serde_json::Value;

use lore_core::model::Tiers;
use lore_core::scope::SkillPath;
use lore_core::text::sentences;

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
];
const CONDITION_OPENERS: &[&str] = &["when ", "whenever ", "if ", "unless ", "for ", "in case "];
const VAGUE_MARKERS: &[&str] = &[
    "wrong",
    "bad",
    "incorrect",
    "not right",
    "fix",
    "redo",
    "no",
];

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn is_directive(sentence: &str) -> bool {
    let lower = format!(" {} ", sentence.to_lowercase());
    if DIRECTIVE_MARKERS
        .iter()
        .any(|m| lower.contains(&format!(" {m} ")))
    {
        return true;
    }
    let first = words(sentence).into_iter().next().unwrap_or_default();
    IMPERATIVE_VERBS.contains(&first.as_str())
}

/// The condition clause of a sentence: a leading `When …,` / `If …,`, or an inner `… when …`.
fn condition_of(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    for opener in CONDITION_OPENERS {
        let start = if lower.starts_with(opener) {
            Some(0)
        } else if *opener != "for " {
            lower.find(&format!(" {opener}")).map(|i| i + 1)
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

fn has_specifics(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_digit()) || text.contains('"') || text.contains('`')
}

fn root_cause(lower: &str) -> (&'static str, &'static str) {
    let any = |keys: &[&str]| keys.iter().any(|k| lower.contains(k));
    if any(&["score", "weight", "rank", "rating", "priorit"]) {
        (
            "scoring",
            "Mis-weighted criteria: the output weighed factors that the correction separates.",
        )
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
        ("omission", "Missed a required consideration.")
    } else if any(&["format", "json", "field", "schema", "structure", "markdown"]) {
        ("format", "Wrong output format or structure.")
    } else if any(&["tone", "voice", "polite", "rude", "formal"]) {
        ("tone", "Wrong tone or voice.")
    } else if any(&["incorrect", "wrong", "false", "inaccurate", "not true"]) {
        ("factual", "Factual or judgement error.")
    } else {
        ("guidance", "The skill's prompt lacked this guidance.")
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

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
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

/// Distills a lesson from a correction of `skill` whose original output was `original_output`.
pub fn distill(skill: &SkillPath, correction: &str, original_output: &Value) -> Distilled {
    let all = sentences(correction);
    let directives: Vec<&String> = all.iter().filter(|s| is_directive(s)).collect();
    let observations: Vec<&String> = all.iter().filter(|s| !is_directive(s)).collect();
    let conditions: Vec<String> = all.iter().filter_map(|s| condition_of(s)).collect();

    let rule = if directives.is_empty() {
        correction.trim().to_owned()
    } else {
        directives
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let applies_when = match conditions.first() {
        Some(c) => format!("When executing {skill}, {}.", lowercase_first(c)),
        None => format!("When executing {skill}."),
    };
    let output = shorten(
        &serde_json::to_string(original_output).unwrap_or_default(),
        160,
    );
    let what = observations
        .first()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "The output did not follow the guidance in the correction.".into());
    let mistake = format!("{what} (original output: {output})");
    let (tag, cause) = root_cause(&correction.to_lowercase());
    let has_condition = !conditions.is_empty();
    Distilled {
        confidence: confidence(correction, directives.len(), has_condition),
        tiers: Tiers {
            summary: summary(&rule),
            condition: applies_when.clone(),
            action: rule.clone(),
            rationale: cause.to_owned(),
            steps: directives.iter().map(|s| s.to_string()).collect(),
        },
        mistake,
        root_cause: cause.to_owned(),
        rule,
        applies_when,
        tags: vec![tag.to_owned()],
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn skill() -> SkillPath {
        SkillPath::parse("hr/resume-screen").unwrap()
    }

    const DETAILED: &str = "When screening for senior backend roles, system design experience \
        should be weighted separately from coding skills. A candidate with 5 years Python but no \
        distributed systems should score below 60.";

    #[test]
    fn detailed_correction_gives_a_confident_rule_with_conditions() {
        let d = distill(&skill(), DETAILED, &json!({"overall_score": 72}));
        assert!(
            d.confidence >= 0.8 && d.confidence <= 1.0,
            "{}",
            d.confidence
        );
        assert!(d.rule.contains("weighted separately"), "{}", d.rule);
        assert!(d.rule.contains("below 60"), "{}", d.rule);
        assert_eq!(
            d.applies_when,
            "When executing hr/resume-screen, when screening for senior backend roles."
        );
        assert!(d.mistake.contains("\"overall_score\":72"), "{}", d.mistake);
        assert_eq!(d.tags, vec!["scoring".to_owned()]);
        assert_eq!(d.tiers.steps.len(), 2);
    }

    #[test]
    fn vague_correction_gives_low_confidence() {
        let d = distill(&skill(), "This is wrong.", &json!({}));
        assert!((0.5..=0.6).contains(&d.confidence), "{}", d.confidence);
        assert_eq!(d.rule, "This is wrong.");
        assert_eq!(d.applies_when, "When executing hr/resume-screen.");
    }

    #[test]
    fn observation_sentences_become_the_mistake() {
        let d = distill(
            &skill(),
            "The summary ignored the salary band. Always mention the salary band.",
            &json!("text"),
        );
        assert!(
            d.mistake
                .starts_with("The summary ignored the salary band."),
            "{}",
            d.mistake
        );
        assert_eq!(d.rule, "Always mention the salary band.");
        assert_eq!(d.tags, vec!["omission".to_owned()]);
    }

    #[test]
    fn distilling_is_deterministic_and_keeps_decimals_whole() {
        let text = "Scores must use 0.5 steps. Never round up.";
        let a = distill(&skill(), text, &json!(1));
        assert_eq!(a, distill(&skill(), text, &json!(1)));
        assert_eq!(
            sentences(text),
            vec!["Scores must use 0.5 steps.", "Never round up."]
        );
    }
}
