//! Regression tests from corrections (seed 000): what a correction says the output must do,
//! as checks that can be replayed.
//!
//! A correction is prose, but it often states checkable facts: "should score below 60",
//! "priority must be urgent", "always mention \"salary band\"". Those become deterministic
//! assertions (a JSON path comparison against a field of the corrected output, contains, not
//! contains), which need no model to check and never flake. Whatever the correction says that is
//! not checkable that way becomes an LLM-judge rubric, so every correction yields a test.
//!
//! Each case is written twice: as a line of `tests/lore.jsonl` (Lore's native format, replayed by
//! `lore test`) and as an entry of `tests/promptfoo.yaml`, a list of promptfoo test cases that a
//! promptfoo config includes with `tests: file://promptfoo.yaml`. Both files are append-only, so
//! a person's edits to earlier cases survive.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::scope::SkillPath;
use lore_core::text::sentences;

/// How a JSON path assertion compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    /// Equal (strings compare case-insensitively).
    Eq,
    /// Less than.
    Lt,
    /// At most.
    Le,
    /// Greater than.
    Gt,
    /// At least.
    Ge,
}

impl Comparison {
    fn symbol(self) -> &'static str {
        match self {
            Comparison::Eq => "===",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }
}

/// One check on a skill's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Assertion {
    /// The output's text contains this (case-insensitive).
    Contains {
        /// The text to find.
        value: String,
    },
    /// The output's text does not contain this (case-insensitive).
    NotContains {
        /// The text that must be absent.
        value: String,
    },
    /// A field of the JSON output compares to a value (`$.overall_score` `lt` `60`).
    JsonPath {
        /// `$.field` or `$.a.b`.
        path: String,
        /// How to compare.
        op: Comparison,
        /// What to compare with.
        value: Value,
    },
    /// A model judges the output against this rubric.
    LlmRubric {
        /// What the output must satisfy, in words.
        rubric: String,
    },
}

/// A regression test made from one correction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// `TEST-…`, derived from the correction's ID.
    pub id: String,
    /// The skill under test.
    pub skill: SkillPath,
    /// The correction it came from.
    pub correction_id: CorrectionId,
    /// The lesson it validates.
    pub lesson_id: LessonId,
    /// The execution that was corrected.
    pub execution_id: ExecutionId,
    /// The input to replay.
    pub input: Value,
    /// The corrected expectation, in the correction's words.
    pub expectation: String,
    /// The checks; never empty.
    pub assertions: Vec<Assertion>,
}

/// The test ID for a correction: `CORR-x` becomes `TEST-x`.
pub fn test_id(correction: &CorrectionId) -> String {
    let raw = correction.as_str();
    format!("TEST-{}", raw.strip_prefix("CORR-").unwrap_or(raw))
}

/// The assertions a correction states about `original_output`; a rubric when it states none.
pub fn assertions_from(correction: &str, original_output: &Value) -> Vec<Assertion> {
    let mut out = Vec::new();
    for sentence in sentences(correction) {
        let lower = sentence.to_lowercase();
        out.extend(field_assertions(&lower, original_output));
        out.extend(quoted_assertions(&sentence, &lower));
    }
    out.dedup();
    if out.is_empty() {
        out.push(Assertion::LlmRubric {
            rubric: correction.trim().to_owned(),
        });
    }
    out
}

const COMPARATORS: &[(&str, Comparison)] = &[
    ("below", Comparison::Lt),
    ("under", Comparison::Lt),
    ("less than", Comparison::Lt),
    ("lower than", Comparison::Lt),
    ("at most", Comparison::Le),
    ("no more than", Comparison::Le),
    ("above", Comparison::Gt),
    ("over", Comparison::Gt),
    ("more than", Comparison::Gt),
    ("greater than", Comparison::Gt),
    ("higher than", Comparison::Gt),
    ("at least", Comparison::Ge),
];

/// Comparisons and required values for the top-level fields of the original output that the
/// sentence names (`overall_score` as itself, as `overall score`, or, for a `…score` field, as
/// `score`).
fn field_assertions(lower: &str, original: &Value) -> Vec<Assertion> {
    let Some(fields) = original.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, value) in fields {
        let spoken = name.replace('_', " ");
        let named = lower.contains(name.as_str())
            || lower.contains(&spoken)
            || (name.ends_with("score") && lower.contains("score"));
        if !named {
            continue;
        }
        let path = format!("$.{name}");
        if value.is_number() {
            out.extend(number_comparison(lower).map(|(op, n)| Assertion::JsonPath {
                path,
                op,
                value: json!(n),
            }));
        } else if value.is_string()
            && let Some(wanted) =
                required_value(lower, &spoken).or_else(|| required_value(lower, name))
        {
            out.push(Assertion::JsonPath {
                path,
                op: Comparison::Eq,
                value: json!(wanted),
            });
        }
    }
    out
}

fn number_comparison(lower: &str) -> Option<(Comparison, f64)> {
    COMPARATORS.iter().find_map(|(phrase, op)| {
        let at = lower.find(&format!("{phrase} "))?;
        let rest = &lower[at + phrase.len() + 1..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        number.trim_end_matches('.').parse().ok().map(|n| (*op, n))
    })
}

/// `priority must be urgent` → `urgent`.
fn required_value(lower: &str, field: &str) -> Option<String> {
    let at = lower.find(field)?;
    let rest = lower[at + field.len()..].trim_start();
    let rest = [
        "must be ",
        "should be ",
        "has to be ",
        "needs to be ",
        "is ",
    ]
    .iter()
    .find_map(|p| rest.strip_prefix(p))?;
    let word: String = rest
        .trim_start_matches(['"', '\'', '`'])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// `mention "X"` → contains; `never mention "X"` / `must not include "X"` → not contains.
fn quoted_assertions(sentence: &str, lower: &str) -> Vec<Assertion> {
    let negative = ["never", "not ", "n't", "avoid", "without"]
        .iter()
        .any(|m| lower.contains(m));
    let verb = ["mention", "include", "contain", "say", "use", "state"]
        .iter()
        .any(|v| lower.contains(v));
    if !verb {
        return Vec::new();
    }
    sentence
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|q| !q.trim().is_empty())
        .map(|q| {
            let value = q.trim().to_owned();
            if negative {
                Assertion::NotContains { value }
            } else {
                Assertion::Contains { value }
            }
        })
        .collect()
}

/// The output as text, for contains checks.
pub fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks a deterministic assertion; `None` for a rubric, which needs a judge.
pub fn check(assertion: &Assertion, output: &Value) -> Option<Result<(), String>> {
    let text = output_text(output).to_lowercase();
    Some(match assertion {
        Assertion::Contains { value } => ok_or(
            text.contains(&value.to_lowercase()),
            format!("the output does not contain {value:?}"),
        ),
        Assertion::NotContains { value } => ok_or(
            !text.contains(&value.to_lowercase()),
            format!("the output contains {value:?}"),
        ),
        Assertion::JsonPath { path, op, value } => check_path(output, path, *op, value),
        Assertion::LlmRubric { .. } => return None,
    })
}

fn ok_or(pass: bool, why: String) -> Result<(), String> {
    if pass { Ok(()) } else { Err(why) }
}

fn check_path(output: &Value, path: &str, op: Comparison, expected: &Value) -> Result<(), String> {
    let pointer = format!("/{}", path.trim_start_matches("$.").replace('.', "/"));
    let Some(actual) = output.pointer(&pointer) else {
        return Err(format!("{path} is missing from the output"));
    };
    let pass = match (actual.as_f64(), expected.as_f64(), op) {
        (Some(a), Some(e), Comparison::Eq) => a == e,
        (Some(a), Some(e), Comparison::Lt) => a < e,
        (Some(a), Some(e), Comparison::Le) => a <= e,
        (Some(a), Some(e), Comparison::Gt) => a > e,
        (Some(a), Some(e), Comparison::Ge) => a >= e,
        (_, _, Comparison::Eq) => {
            output_text(actual).to_lowercase() == output_text(expected).to_lowercase()
        }
        _ => false,
    };
    ok_or(
        pass,
        format!("{path} is {actual}, expected {} {expected}", op.symbol()),
    )
}

/// One promptfoo test case, as a YAML list item (JSON-quoted scalars are valid YAML).
pub fn promptfoo_entry(case: &TestCase) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let description = format!(
        "{} ({}): {}",
        case.id,
        case.lesson_id,
        first_line(&case.expectation)
    );
    let mut out = format!(
        "- description: {}\n  vars:\n    input: {}\n  metadata:\n    lore_test_id: {}\n    \
         lesson_id: {}\n  assert:\n",
        q(&description),
        q(&output_text(&case.input)),
        q(&case.id),
        q(case.lesson_id.as_str()),
    );
    for assertion in &case.assertions {
        let (kind, value) = promptfoo_assertion(assertion);
        out.push_str(&format!("    - type: {kind}\n      value: {}\n", q(&value)));
    }
    out
}

fn promptfoo_assertion(assertion: &Assertion) -> (&'static str, String) {
    match assertion {
        Assertion::Contains { value } => ("icontains", value.clone()),
        Assertion::NotContains { value } => ("not-icontains", value.clone()),
        Assertion::LlmRubric { rubric } => ("llm-rubric", rubric.clone()),
        Assertion::JsonPath { path, op, value } => {
            let field = format!("o{}", path.trim_start_matches('$'));
            let expr = match (op, value) {
                (Comparison::Eq, Value::String(s)) => format!(
                    "String({field}).toLowerCase() === {}",
                    serde_json::to_string(&s.to_lowercase()).unwrap_or_default()
                ),
                _ => format!("{field} {} {value}", op.symbol()),
            };
            (
                "javascript",
                format!(
                    "(() => {{ const t = String(output).trim().replace(/^```(json)?|```$/g, ''); \
                     const o = JSON.parse(t); return {expr}; }})()"
                ),
            )
        }
    }
}

fn first_line(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 100 {
        format!("{}…", line.chars().take(100).collect::<String>())
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen() -> Value {
        json!({"overall_score": 72, "recommendation": "proceed_to_interview", "priority": "normal"})
    }

    #[test]
    fn score_bounds_become_json_path_comparisons() {
        let a = assertions_from(
            "A candidate with 5 years Python but no distributed systems should score below 60.",
            &screen(),
        );
        assert_eq!(
            a,
            vec![Assertion::JsonPath {
                path: "$.overall_score".into(),
                op: Comparison::Lt,
                value: json!(60.0)
            }]
        );
        assert_eq!(check(&a[0], &json!({"overall_score": 55})), Some(Ok(())));
        let failed = check(&a[0], &json!({"overall_score": 72}))
            .unwrap()
            .unwrap_err();
        assert!(failed.contains("expected < 60"), "{failed}");
        assert!(check(&a[0], &json!({"score": 1})).unwrap().is_err());
    }

    #[test]
    fn required_values_and_quoted_phrases_become_checks() {
        let a = assertions_from(
            "Priority must be urgent. Always mention \"EU customers\". Never include \"TODO\".",
            &screen(),
        );
        assert!(a.contains(&Assertion::JsonPath {
            path: "$.priority".into(),
            op: Comparison::Eq,
            value: json!("urgent")
        }));
        assert!(a.contains(&Assertion::Contains {
            value: "EU customers".into()
        }));
        assert!(a.contains(&Assertion::NotContains {
            value: "TODO".into()
        }));
        let good = json!({"priority": "URGENT", "summary": "All eu customers affected"});
        for assertion in &a {
            assert_eq!(check(assertion, &good), Some(Ok(())), "{assertion:?}");
        }
    }

    #[test]
    fn a_correction_without_checkable_facts_becomes_a_rubric() {
        let a = assertions_from("The tone was too casual for a rejection.", &screen());
        assert_eq!(
            a,
            vec![Assertion::LlmRubric {
                rubric: "The tone was too casual for a rejection.".into()
            }]
        );
        assert_eq!(check(&a[0], &json!({})), None);
    }

    #[test]
    fn promptfoo_entries_quote_everything_and_map_each_assertion() {
        let case = TestCase {
            id: "TEST-1".into(),
            skill: SkillPath::parse("hr/screen").unwrap(),
            correction_id: CorrectionId::parse("CORR-001").unwrap(),
            lesson_id: LessonId::parse("REFL-001").unwrap(),
            execution_id: ExecutionId::parse("EXEC-20260220124341").unwrap(),
            input: json!({"name": "Zoë \"Z\""}),
            expectation: "score: below 60\nreally".into(),
            assertions: assertions_from("Should score below 60; mention \"design\".", &screen()),
        };
        let yaml = promptfoo_entry(&case);
        assert!(
            yaml.starts_with("- description: \"TEST-1 (REFL-001): score: below 60 really\"\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("    input: \"{\\\"name\\\":\\\"Zoë \\\\\\\"Z\\\\\\\"\\\"}\"\n"),
            "{yaml}"
        );
        assert!(yaml.contains("    - type: javascript\n"), "{yaml}");
        assert!(yaml.contains("return o.overall_score < 60"), "{yaml}");
        assert!(
            yaml.contains("    - type: icontains\n      value: \"design\"\n"),
            "{yaml}"
        );
    }
}
