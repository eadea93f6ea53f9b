//! How recall shows a lesson: its words for searching and comparing, and its tiers as quoted
//! data with provenance, from the one-line summary to the rule with its conditions and steps.
//!
//! Everything a lesson's author wrote is rendered inside a quote (`> `); only Lore's own
//! provenance line stands outside it, so a lesson can never speak as the prompt.

use std::collections::HashSet;

use lore_core::model::{Lesson, LessonStatus, LinkKind};
use lore_core::quote;

use crate::applies::{Condition, stems};

/// The words a lesson is found by: its summary, rule, conditions and mistake.
pub fn lesson_text(lesson: &Lesson) -> String {
    [
        lesson.tiers.summary.as_str(),
        &lesson.rule,
        &lesson.applies_when,
        &lesson.mistake,
    ]
    .join("\n")
}

/// What recall shows of a lesson and compares it by, rendered once per lesson and kept with
/// it in the index (a changed lesson is a new index entry, so this never goes stale).
#[derive(Debug)]
pub struct Shown {
    /// Its words ([`lesson_text`]), for word-bigram similarity and filters.
    pub text: String,
    /// Its tiers: summary, rule and conditions, steps.
    pub tiers: Vec<String>,
    /// The lessons it conflicts with.
    pub conflicts: Vec<String>,
    /// The condition its author stated, which a query must meet.
    pub condition: Option<Condition>,
    /// The stems of its words, for the query's side of that match.
    pub stems: HashSet<String>,
}

impl Shown {
    /// Bytes held, for the memory a lesson costs: the rendering, its texts and its stems
    /// (the condition's words left out).
    pub fn heap_bytes(&self) -> usize {
        let strings = |v: &mut dyn Iterator<Item = &String>| -> usize {
            v.map(|s| s.capacity() + size_of::<String>()).sum()
        };
        size_of::<Self>()
            + self.text.capacity()
            + strings(&mut self.tiers.iter())
            + strings(&mut self.conflicts.iter())
            + strings(&mut self.stems.iter())
            + self.stems.capacity()
    }

    /// The stems of what `lesson` is about, as [`Shown::stems`] holds them, without
    /// rendering the rest.
    pub fn stems_of(lesson: &Lesson) -> HashSet<String> {
        // The task's words say what the case was about, not what the lesson is about.
        stems(
            &[
                lesson.tiers.summary.as_str(),
                &lesson.rule,
                lore_core::text::stated_condition(&lesson.applies_when),
                &lesson.mistake,
            ]
            .join("\n"),
        )
    }

    /// Renders `lesson` once.
    pub fn of(lesson: &Lesson) -> Self {
        let text = lesson_text(lesson);
        Self {
            condition: Condition::of(&lesson.applies_when),
            stems: Self::stems_of(lesson),
            text,
            tiers: tiers(lesson),
            conflicts: lesson
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Conflicts)
                .map(|l| l.target.to_string())
                .collect(),
        }
    }
}

/// The lesson's tiers as quoted data with provenance: summary, rule and conditions, steps.
fn tiers(lesson: &Lesson) -> Vec<String> {
    let head = format!(
        "- **{}** ({}; confidence {:.0}%; {})",
        lesson.id,
        lesson.skill,
        lesson.confidence * 100.0,
        match lesson.status {
            LessonStatus::Trial => "trial: being measured",
            s => s.as_str(),
        }
    );
    let summary = first_line(&lesson.tiers.summary)
        .unwrap_or_else(|| first_line(&lesson.rule).unwrap_or_default());
    let tier0 = format!("{head}\n  > {summary}");
    let mut tier1 = format!("{head}\n");
    tier1.push_str(&quote::block(&lesson.rule, "  "));
    // Only the stated condition: the task words after it are for matching, and a prompt that
    // lists them hands the example's values back to a model that copies what it is shown.
    let applies = quote::one_line(lore_core::text::stated_condition(&lesson.applies_when));
    if !applies.is_empty() {
        // The condition is the correction's own words like the rule: it stays inside the quote.
        tier1.push_str(&format!("  > _Applies when_: {applies}\n"));
    }
    let tier1 = tier1.trim_end().to_owned();
    let mut out = vec![tier0, tier1.clone()];
    // The offline distiller often makes the rule its only step: a step that repeats a line of
    // the rule adds tokens and no meaning, so the deepest tier lists only the others.
    let said = |step: &str| quote::lines(&lesson.rule).any(|l| same_words(&l, step));
    let steps: Vec<String> = lesson
        .tiers
        .steps
        .iter()
        .map(|s| quote::one_line(s))
        .filter(|s| !s.is_empty() && !said(s))
        .enumerate()
        .map(|(i, s)| format!("  > {}. {s}", i + 1))
        .collect();
    if !steps.is_empty() {
        out.push(format!("{tier1}\n{}", steps.join("\n")));
    }
    out
}

/// Whether two lines say the same words, ignoring case, spacing and final punctuation.
fn same_words(a: &str, b: &str) -> bool {
    let words = |s: &str| {
        s.trim()
            .trim_end_matches(['.', '!', ';'])
            .split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

fn first_line(text: &str) -> Option<String> {
    quote::lines(text)
        .map(|l| l.trim().to_owned())
        .find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned_on_sales() -> Lesson {
        let at = "2026-03-01T12:00:00Z";
        serde_json::from_value(serde_json::json!({
            "id": lore_core::id::LessonId::generate(chrono::Utc::now()),
            "skill": "tools/gridtool",
            "mistake": "wrote the column bare",
            "root_cause": "cause",
            "rule": "Write the command as `gridtool sort FILE --key=COLUMN/down`.",
            "applies_when": format!(
                "When asked to sort rows. {} gridtool, sales, amount.",
                lore_core::text::TASK_WORDS_LABEL
            ),
            "tiers": {"summary": "Sort with --key", "condition": "", "action": "", "rationale": ""},
            "confidence": 0.8,
            "source": "manual",
            "status": "approved",
            "created_at": at,
            "updated_at": at,
        }))
        .unwrap()
    }

    /// The words of the task a lesson was learned on find it, but a prompt that shows them gives
    /// the example's values to a model that copies them into the next task.
    #[test]
    fn a_lessons_task_words_are_searched_but_never_shown() {
        let lesson = learned_on_sales();
        let shown = Shown::of(&lesson);
        assert!(shown.text.contains("sales, amount"), "{}", shown.text);
        for tier in &shown.tiers {
            assert!(!tier.contains("sales"), "{tier}");
            assert!(!tier.contains(lore_core::text::TASK_WORDS_LABEL), "{tier}");
        }
        assert!(
            shown.tiers[1].contains("_Applies when_: When asked to sort rows."),
            "{}",
            shown.tiers[1]
        );
    }

    #[test]
    fn a_lesson_with_only_task_words_shows_no_condition() {
        let mut lesson = learned_on_sales();
        lesson.applies_when = format!("{} sales, amount.", lore_core::text::TASK_WORDS_LABEL);
        let shown = Shown::of(&lesson);
        assert!(
            !shown.tiers[1].contains("Applies when"),
            "{}",
            shown.tiers[1]
        );
        assert!(shown.text.contains("amount"));
    }
}
