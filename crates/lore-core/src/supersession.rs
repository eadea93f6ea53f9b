//! How a new lesson relates to one a skill already has: duplicate, conflict, supersession
//! (seed 002's CONFLICT / FULL / PARTIAL) or near-duplicate.
//!
//! Everything here is deterministic word-set arithmetic, so a verdict can be explained and
//! tested, and it needs no model. Text is lower-cased and cut into alphanumeric words;
//! [`STOPWORDS`] and the skill's own words (`When executing support/summarize-ticket` opens
//! every distilled condition) are dropped. Rules and actions are compared with Jaccard,
//! `|A ∩ B| / |A ∪ B|`; conditions with the overlap coefficient, `|A ∩ B| / min(|A|, |B|)`,
//! because a lesson with no condition applies always and so overlaps every other.
//!
//! Seed 002 calls a pair a CONFLICT on "high condition overlap + low action similarity". Taken
//! literally with word sets, any two unrelated rules of a skill would conflict (their actions
//! share no words), while "priority must be urgent" against "priority must be normal" would not
//! (they share most words). So Lore reads it as: the conditions overlap and the actions are
//! opposite directives on one subject — the same action (sharing at least
//! [`Thresholds::compatible_action`]) with the other polarity (one says never/don't/avoid, the
//! other does not), or the same statement with exactly one value swapped. Anything looser made
//! unrelated lessons conflict (a skill's lessons share words), so everything else, unrelated
//! actions included, is PARTIAL or a near-duplicate: both apply. CONFLICT is checked before FULL, as the seed requires, so a
//! contradiction can never pass as a supersession.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::model::Lesson;

/// Words too common to tell two rules apart. Negations are deliberately absent: they carry
/// the polarity of an action.
pub const STOPWORDS: &[&str] = &[
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
    "is",
    "are",
    "be",
    "been",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "as",
    "when",
    "whenever",
    "if",
    "then",
    "than",
    "should",
    "must",
    "always",
    "please",
    "so",
    "do",
    "does",
    "executing",
    "use",
    "any",
    "all",
    "every",
    "each",
    "into",
    "their",
    "they",
    "them",
    "was",
    "were",
    "will",
    "would",
    "can",
    "could",
    "has",
    "have",
    "had",
];

/// Words that turn an action around.
pub const NEGATIONS: &[&str] = &[
    "never",
    "not",
    "no",
    "don't",
    "dont",
    "avoid",
    "without",
    "cannot",
    "can't",
    "mustn't",
    "shouldn't",
    "doesn't",
    "isn't",
    "stop",
    "refuse",
];

/// The similarity thresholds of dedup and supersession; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// Rule similarity at or above which two lessons are near-duplicates (default 0.8).
    pub near_duplicate: f64,
    /// Condition overlap at or above which two lessons apply in the same situations (0.5).
    pub condition_overlap: f64,
    /// Action similarity at or above which two actions are about the same thing (0.2).
    pub same_topic: f64,
    /// Action similarity at or above which two same-polarity actions agree (0.5).
    pub compatible_action: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            near_duplicate: 0.8,
            condition_overlap: 0.5,
            same_topic: 0.2,
            compatible_action: 0.5,
        }
    }
}

/// How a new lesson relates to an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The same normalized rule and triggers: merge into the existing lesson.
    Duplicate,
    /// Overlapping conditions, contradicting actions: keep both, link, send to review.
    Conflict {
        /// Condition overlap.
        conditions: f64,
        /// Action similarity.
        actions: f64,
    },
    /// The new lesson covers the old one's conditions with an agreeing action and more
    /// confidence: it supersedes the old one.
    Full {
        /// Action similarity.
        actions: f64,
    },
    /// Nearly the same rule: linked and reported, both kept.
    NearDuplicate {
        /// Rule similarity.
        similarity: f64,
    },
    /// Anything else: both coexist.
    Partial,
}

/// Lower-cased alphanumeric words (apostrophes kept), in order.
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The rule as dedup compares it: its words, lower-cased, single-spaced.
pub fn normalize(text: &str) -> String {
    tokens(text).collect::<Vec<_>>().join(" ")
}

/// Content words: tokens less stopwords and `ignore`.
pub fn content_words(text: &str, ignore: &BTreeSet<String>) -> BTreeSet<String> {
    tokens(text)
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && !ignore.contains(w))
        .collect()
}

/// `|a ∩ b| / |a ∪ b|`; two empty sets are identical (1.0).
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// `|a ∩ b| / min(|a|, |b|)`: how far the smaller set lies inside the larger. An empty set of
/// conditions means "always", which overlaps everything (1.0).
pub fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / smaller as f64
}

/// A lesson reduced to what comparisons need, computed once per lesson.
#[derive(Clone, Debug)]
pub struct Profile {
    rule: String,
    triggers: BTreeSet<String>,
    rule_words: BTreeSet<String>,
    conditions: BTreeSet<String>,
    actions: BTreeSet<String>,
    negated: bool,
    confidence: f64,
}

impl Profile {
    /// The normalized rule, the same for two duplicates.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Every word a verdict looks at: a lesson sharing none of them with this one can only be
    /// [`Verdict::Partial`] (or a duplicate, which has the same [`Profile::rule`]).
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.rule_words
            .iter()
            .chain(&self.conditions)
            .chain(&self.actions)
            .chain(&self.triggers)
            .map(String::as_str)
    }

    /// The profile of `lesson`.
    pub fn of(lesson: &Lesson) -> Self {
        let skill: BTreeSet<String> = tokens(lesson.skill.as_str()).collect();
        let none = BTreeSet::new();
        let actions: BTreeSet<String> = content_words(&lesson.rule, &none);
        let negated = actions.iter().any(|w| NEGATIONS.contains(&w.as_str()));
        let triggers: BTreeSet<String> = lesson.triggers.iter().map(|t| normalize(t)).collect();
        let mut conditions = content_words(&lesson.applies_when, &skill);
        conditions.extend(triggers.iter().cloned());
        // A distilled rule repeats its condition clause; the action is what is left. Only the
        // stated condition is taken off: the task's words list the whole case the lesson was
        // learned on, and a task of two steps names both operations, so taking them off would
        // leave two lessons about different operations differing by one flag: a conflict.
        let mut stated = content_words(crate::text::stated_condition(&lesson.applies_when), &skill);
        stated.extend(triggers.iter().cloned());
        let actions: BTreeSet<String> = actions.difference(&stated).cloned().collect();
        Self {
            rule: normalize(&lesson.rule),
            triggers,
            rule_words: tokens(&lesson.rule).collect(),
            conditions,
            actions: actions
                .into_iter()
                .filter(|w| !NEGATIONS.contains(&w.as_str()))
                .collect(),
            negated,
            confidence: lesson.confidence,
        }
    }

    /// The same normalized rule and the same triggers.
    pub fn duplicates(&self, old: &Profile) -> bool {
        self.rule == old.rule && self.triggers == old.triggers
    }

    /// How this (new) lesson relates to `old`.
    pub fn verdict(&self, old: &Profile, t: &Thresholds) -> Verdict {
        if self.duplicates(old) {
            return Verdict::Duplicate;
        }
        let conditions = overlap(&self.conditions, &old.conditions);
        let actions = jaccard(&self.actions, &old.actions);
        let agree = self.negated == old.negated && actions >= t.compatible_action;
        if conditions >= t.condition_overlap && self.contradicts(old, actions, t) {
            return Verdict::Conflict {
                conditions,
                actions,
            };
        }
        if agree && self.conditions.is_superset(&old.conditions) && self.confidence > old.confidence
        {
            return Verdict::Full { actions };
        }
        let similarity = jaccard(&self.rule_words, &old.rule_words);
        if similarity >= t.near_duplicate {
            return Verdict::NearDuplicate { similarity };
        }
        Verdict::Partial
    }

    /// Opposite directives on one subject: the same action with the other polarity ("always
    /// X" against "never X"), or the same statement with one value swapped ("priority must be
    /// urgent" against "… normal"). Two rules that merely share a few words (two unrelated
    /// lessons of one skill always do) never contradict.
    fn contradicts(&self, old: &Profile, actions: f64, t: &Thresholds) -> bool {
        if self.negated != old.negated {
            return actions >= t.compatible_action;
        }
        let mine = self.actions.difference(&old.actions).count();
        let theirs = old.actions.difference(&self.actions).count();
        let shared = self.actions.intersection(&old.actions).count();
        mine == 1 && theirs == 1 && shared >= 1 && actions >= t.same_topic
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::LessonId;
    use crate::model::{LessonSource, LessonStatus, Tiers, UtilityStats};
    use crate::scope::SkillPath;
    use chrono::Utc;
    use serde_json::Map;

    fn lesson(rule: &str, applies_when: &str, confidence: f64) -> Lesson {
        Lesson {
            id: LessonId::generate(Utc::now()),
            skill: SkillPath::parse("support/summarize-ticket").unwrap(),
            agent: None,
            correction_id: None,
            execution_id: None,
            mistake: String::new(),
            root_cause: String::new(),
            rule: rule.into(),
            applies_when: applies_when.into(),
            triggers: Vec::new(),
            tags: Vec::new(),
            tiers: Tiers::default(),
            confidence,
            source: LessonSource::Manual,
            status: LessonStatus::Approved,
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            extra: Map::new(),
        }
    }

    const GENERAL: &str = "When executing support/summarize-ticket.";
    const OUTAGE: &str =
        "When executing support/summarize-ticket, when a ticket reports an outage.";

    fn verdict(new: &Lesson, old: &Lesson) -> Verdict {
        Profile::of(new).verdict(&Profile::of(old), &Thresholds::default())
    }

    #[test]
    fn same_rule_in_other_words_case_and_spacing_is_a_duplicate() {
        let old = lesson("Priority must be URGENT.", GENERAL, 0.8);
        let new = lesson("priority   must be urgent", GENERAL, 0.9);
        assert_eq!(verdict(&new, &old), Verdict::Duplicate);
        let mut triggered = new.clone();
        triggered.triggers = vec!["timeout".into()];
        assert_ne!(verdict(&triggered, &old), Verdict::Duplicate);
    }

    #[test]
    fn opposite_polarity_or_other_values_on_one_subject_conflict() {
        let old = lesson("Always set priority to urgent for outages.", OUTAGE, 0.9);
        let never = lesson("Never set priority to urgent for outages.", OUTAGE, 0.9);
        assert!(matches!(verdict(&never, &old), Verdict::Conflict { .. }));
        let normal = lesson("Priority must be normal.", GENERAL, 0.9);
        let urgent = lesson("Priority must be urgent.", GENERAL, 0.9);
        assert!(matches!(
            verdict(&normal, &urgent),
            Verdict::Conflict { .. }
        ));
    }

    #[test]
    fn unrelated_actions_coexist() {
        let old = lesson("Always mention the salary band.", GENERAL, 0.9);
        let new = lesson("Use a formal tone with customers.", GENERAL, 0.9);
        assert_eq!(verdict(&new, &old), Verdict::Partial);
    }

    #[test]
    fn unrelated_lessons_of_one_skill_sharing_words_never_conflict() {
        let pairs = [
            (
                "The implementation is incorrect because it does not handle an empty list; it \
                 should return 0 for an empty input list.",
                "The implementation is incorrect because it sorts the list in place instead of \
                 returning a new sorted list.",
            ),
            (
                "Never include the customer's phone number in the summary.",
                "Include the ticket number in the summary title.",
            ),
            (
                "Always check the date format of the input before parsing.",
                "Do not parse the input twice; check it once.",
            ),
        ];
        for (a, b) in pairs {
            let (a, b) = (lesson(a, GENERAL, 0.9), lesson(b, GENERAL, 0.9));
            assert!(
                !matches!(verdict(&a, &b), Verdict::Conflict { .. }),
                "{:?} / {:?}: {:?}",
                a.rule,
                b.rule,
                verdict(&a, &b)
            );
        }
    }

    #[test]
    fn wider_conditions_agreeing_action_and_more_confidence_supersede() {
        let old = lesson("Set priority to urgent for outages.", GENERAL, 0.8);
        let new = lesson(
            "Set priority to urgent for outages and name the page.",
            OUTAGE,
            0.95,
        );
        assert!(
            matches!(verdict(&new, &old), Verdict::Full { .. }),
            "{:?}",
            verdict(&new, &old)
        );
        let unsure = lesson(&new.rule, OUTAGE, 0.7);
        assert!(!matches!(verdict(&unsure, &old), Verdict::Full { .. }));
    }

    /// Two lessons learned on one task of two steps list the same task words, which name both
    /// operations; their rules differ in the operation as well as the flag, so they coexist.
    #[test]
    fn lessons_about_two_steps_of_one_task_do_not_conflict() {
        let task = "Tasks about: gridtool, keep, rows, country, above, group, count, filter.";
        let filter = lesson(
            "To keep only the rows where X is above 100 with gridtool, use `gridtool filter \
             --where=gt:100 X` instead of `gridtool filter --where=>100 X`.",
            &format!("To keep only the rows where X is above 100 with gridtool. {task}"),
            0.9,
        );
        let group = |flag: &str| {
            lesson(
                &format!(
                    "To group the rows by X and count them with gridtool, use `gridtool group \
                     --{flag} X` instead of `gridtool group --by X`."
                ),
                &format!("To group the rows by X and count them with gridtool. {task}"),
                0.9,
            )
        };
        let conflict = |new: &Lesson, old: &Lesson| {
            let v = verdict(new, old);
            (matches!(v, Verdict::Conflict { .. }), v)
        };
        let (yes, v) = conflict(&group("key"), &filter);
        assert!(!yes, "{v:?}");
        // The same operation with another flag, learned on that task, still conflicts.
        let (yes, v) = conflict(&group("using"), &group("key"));
        assert!(yes, "{v:?}");
    }

    #[test]
    fn conflict_is_checked_before_full() {
        let old = lesson("Set priority to urgent for outages.", GENERAL, 0.5);
        let new = lesson("Never set priority to urgent for outages.", OUTAGE, 0.99);
        assert!(matches!(verdict(&new, &old), Verdict::Conflict { .. }));
    }

    #[test]
    fn nearly_the_same_rule_is_a_near_duplicate() {
        let old = lesson(
            "Name the failing page and the error code in the summary of the ticket.",
            GENERAL,
            0.9,
        );
        let new = lesson(
            "Name the failing page and the error code in the summary of every ticket.",
            GENERAL,
            0.9,
        );
        assert!(
            matches!(verdict(&new, &old), Verdict::NearDuplicate { .. }),
            "{:?}",
            verdict(&new, &old)
        );
    }
}
