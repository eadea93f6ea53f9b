//! How a new lesson relates to one a skill already has: duplicate, conflict, supersession
//! (seed 002's CONFLICT / FULL / PARTIAL) or a rewording of it.
//!
//! Everything here is deterministic word-set arithmetic over [`crate::directive`]'s reading of
//! a rule (canonical content words, and directives each with a polarity), so a verdict can be
//! explained and tested, and it needs no model. A lesson's *situation* is its stated condition
//! (the "when …" clause) and triggers; the words of the task it was learned on are left out,
//! since two corrections of different runs name different tasks while meaning one rule.
//!
//! - **Rewording** (merged): the same situation and the same content words with no word asked
//!   for by one and against by the other; one rule may add up to
//!   [`Thresholds::rewording_slack`] words when they share many. Two rules that each name a
//!   word the other lacks — "the invoice" / "the refund policy page", "German" / "Spanish", one
//!   subsystem / another — name different subjects and stay two lessons, however long the
//!   words they share.
//! - **Conflict** (seed 002's "high condition overlap + low action similarity", read as
//!   opposite directives): the same situation, and a directive of one asks against what a
//!   directive of the other asks for ("always X" / "never X", "use X instead of Y" / "use Y",
//!   "enable" / "disable"), the one's words held in the other's, so neither swaps the subject.
//!   Two rules that add different requirements in one situation both apply, and a value swapped
//!   for another ("reply in German" / "reply in Spanish") is another subject, not a
//!   contradiction. CONFLICT is checked before FULL, as the seed requires, so a contradiction
//!   can never pass as a supersession.
//! - **Full**: the new lesson's situation holds the old one's, it says everything the old one
//!   says and more, and it is more confident.
//! - **Partial**: anything else; both apply.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::directive::{self, Segment};
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

/// The tolerances of dedup and supersession; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// Content words one rule may name beyond another and still say the same thing (1): a
    /// rewording often adds a word ("the *full* stack trace"); a second subject is a swap, and
    /// a swap is never a rewording.
    pub rewording_slack: usize,
    /// Content words two rules must share before [`Thresholds::rewording_slack`] applies (4):
    /// in a short rule one added word is a new requirement ("the order number *and date*").
    pub rewording_min_shared: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            rewording_slack: 1,
            rewording_min_shared: 4,
        }
    }
}

/// How a new lesson relates to an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The same normalized rule and triggers: merge into the existing lesson.
    Duplicate,
    /// The same situation, opposite directives on one subject: keep both, link, send to review.
    Conflict {
        /// Overlap of the two situations (1.0 when either applies always).
        conditions: f64,
        /// Jaccard similarity of the two opposed directives.
        actions: f64,
    },
    /// The new lesson covers the old one's situation and says all the old one says, and more,
    /// with more confidence: it supersedes the old one.
    Full {
        /// Jaccard similarity of the two rules' content words.
        actions: f64,
    },
    /// The same rule in other words: merged into the existing lesson.
    NearDuplicate {
        /// Jaccard similarity of the two rules' content words.
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

/// Whether one set holds the other: a situation or a directive that only adds to another,
/// never one that swaps a subject for another.
fn nested(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    a.is_subset(b) || b.is_subset(a)
}

/// Polarity bits of a word in a rule: named by its situation (0), asked for (1), asked against
/// (2), or both (3).
const FOR: u8 = 1;
const AGAINST: u8 = 2;

/// A lesson reduced to what comparisons need, computed once per lesson.
#[derive(Clone, Debug)]
pub struct Profile {
    rule: String,
    triggers: BTreeSet<String>,
    /// Canonical words of the stated condition and the triggers.
    situation: BTreeSet<String>,
    /// The rule's directives, its condition taken off.
    segments: Vec<Segment>,
    /// Every content word of the rule with its polarity bits.
    words: BTreeMap<String, u8>,
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
        self.words
            .keys()
            .chain(&self.situation)
            .chain(&self.triggers)
            .map(String::as_str)
    }

    /// The profile of `lesson`.
    pub fn of(lesson: &Lesson) -> Self {
        let triggers: BTreeSet<String> = lesson.triggers.iter().map(|t| normalize(t)).collect();
        // Only the stated condition says where a lesson applies: the task's words list the
        // whole case it was learned on, and two corrections of different runs name different
        // tasks while meaning the same rule.
        let stated = crate::text::stated_condition(&lesson.applies_when);
        let skill: BTreeSet<String> = directive::content(lesson.skill.as_str());
        let mut situation: BTreeSet<String> = directive::content(stated)
            .difference(&skill)
            .cloned()
            .collect();
        situation.extend(triggers.iter().cloned());
        let segments = action_segments(&lesson.rule, stated, &situation);
        let mut words: BTreeMap<String, u8> = situation.iter().map(|w| (w.clone(), 0)).collect();
        for s in &segments {
            let bit = if s.negated { AGAINST } else { FOR };
            for w in &s.words {
                *words.entry(w.clone()).or_insert(0) |= bit;
            }
        }
        Self {
            rule: normalize(&lesson.rule),
            triggers,
            situation,
            segments,
            words,
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
        let same_situation = self.same_situation(old);
        if same_situation && let Some(actions) = self.opposes(old) {
            let conditions = overlap(&self.situation, &old.situation);
            return Verdict::Conflict {
                conditions,
                actions,
            };
        }
        let (mine, theirs) = (self.content(), old.content());
        let similarity = jaccard(&mine, &theirs);
        if !self.agrees(old) {
            return Verdict::Partial;
        }
        // A rewording merges before it can supersede: one lesson that gathers the evidence of
        // both beats a chain of two that say the same.
        if same_situation && self.rewords(&mine, &theirs, t) {
            return Verdict::NearDuplicate { similarity };
        }
        let wider = self.situation.is_superset(&old.situation);
        if wider && mine.is_superset(&theirs) && mine != theirs && self.confidence > old.confidence
        {
            return Verdict::Full {
                actions: similarity,
            };
        }
        Verdict::Partial
    }

    fn content(&self) -> BTreeSet<String> {
        self.words.keys().cloned().collect()
    }

    /// Both apply in one situation: one's condition holds the other's (no condition holds
    /// every other), and triggers, when both have some, share one. Conditions that name
    /// different things ("when billing fails" / "when search fails") are two situations.
    fn same_situation(&self, old: &Profile) -> bool {
        let triggers_meet = self.triggers.is_empty()
            || old.triggers.is_empty()
            || !self.triggers.is_disjoint(&old.triggers);
        triggers_meet && nested(&self.situation, &old.situation)
    }

    /// Opposite directives on one subject: a directive of one asks for what a directive of the
    /// other asks against, and neither names a subject the other lacks in its place. Returns
    /// the similarity of the two directives.
    fn opposes(&self, old: &Profile) -> Option<f64> {
        let mut best: Option<f64> = None;
        for a in &self.segments {
            for b in old.segments.iter().filter(|b| b.negated != a.negated) {
                let (small, large) = if a.words.len() <= b.words.len() {
                    (&a.words, &b.words)
                } else {
                    (&b.words, &a.words)
                };
                // A one-word directive is weak evidence unless the other is as short: "instead
                // of spaces" does not oppose "two spaces for YAML indentation".
                let enough = small.len() >= 2 || large.len() <= 2;
                if enough && small.is_subset(large) {
                    let s = jaccard(&a.words, &b.words);
                    best = Some(best.map_or(s, |b: f64| b.max(s)));
                }
            }
        }
        best
    }

    /// No word that one asks for, the other asks against.
    fn agrees(&self, old: &Profile) -> bool {
        self.words.iter().all(|(w, mine)| match old.words.get(w) {
            Some(theirs) => *mine == 0 || *theirs == 0 || mine & theirs != 0,
            None => true,
        })
    }

    /// The same content words, up to [`Thresholds::rewording_slack`] added on one side when
    /// they share at least [`Thresholds::rewording_min_shared`]. Two rules that each name a
    /// word the other lacks name different subjects.
    fn rewords(&self, mine: &BTreeSet<String>, theirs: &BTreeSet<String>, t: &Thresholds) -> bool {
        // A number added is a value the other rule does not hold ("retry" / "retry 3 times").
        if mine
            .symmetric_difference(theirs)
            .any(|w| directive::is_value(w))
        {
            return false;
        }
        let only_mine = mine.difference(theirs).count();
        let only_theirs = theirs.difference(mine).count();
        let shared = mine.intersection(theirs).count();
        match (only_mine, only_theirs) {
            (0, 0) => shared > 0,
            (0, extra) | (extra, 0) => {
                extra <= t.rewording_slack && shared >= t.rewording_min_shared
            }
            _ => false,
        }
    }
}

/// The directives of `rule` without its condition clause: the condition's text is cut out
/// before polarity is read (in "when the customer does not reply, close the ticket" the
/// negation belongs to the situation), and its words are taken off what is left.
fn action_segments(rule: &str, stated: &str, situation: &BTreeSet<String>) -> Vec<Segment> {
    let clause = stated
        .trim()
        .trim_end_matches(['.', '!', '?'])
        .to_lowercase();
    let lower = rule.to_lowercase();
    let action = match lower.find(&clause) {
        Some(at) if !clause.is_empty() => {
            format!("{} {}", &lower[..at], &lower[at + clause.len()..])
        }
        _ => lower,
    };
    directive::segments(&action)
        .into_iter()
        .filter_map(|mut s| {
            s.words.retain(|w| !situation.contains(w));
            (!s.words.is_empty()).then_some(s)
        })
        .collect()
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
    fn opposite_directives_on_one_subject_conflict() {
        let old = lesson("Always set priority to urgent for outages.", OUTAGE, 0.9);
        let never = lesson("Never set priority to urgent for outages.", OUTAGE, 0.9);
        assert!(matches!(verdict(&never, &old), Verdict::Conflict { .. }));
        let enable = lesson("Enable strict mode in the compiler settings.", GENERAL, 0.9);
        let disable = lesson(
            "Disable strict mode in the compiler settings.",
            GENERAL,
            0.9,
        );
        assert!(matches!(
            verdict(&disable, &enable),
            Verdict::Conflict { .. }
        ));
        let metric = lesson("Use metric units instead of imperial units.", GENERAL, 0.9);
        let imperial = lesson("Use imperial units, not metric units.", GENERAL, 0.9);
        assert!(matches!(
            verdict(&imperial, &metric),
            Verdict::Conflict { .. }
        ));
    }

    /// "Reply in German" and "reply in Spanish" name two languages, not one rule said twice or
    /// two rules that contradict.
    #[test]
    fn another_value_or_subject_is_another_lesson() {
        let pairs = [
            ("Priority must be normal.", "Priority must be urgent."),
            ("Always reply in German.", "Always reply in Spanish."),
            (
                "When a customer asks about a refund, attach the invoice.",
                "When a customer asks about a refund, attach the refund policy page.",
            ),
        ];
        for (a, b) in pairs {
            let (a, b) = (lesson(a, GENERAL, 0.9), lesson(b, GENERAL, 0.9));
            assert_eq!(
                verdict(&a, &b),
                Verdict::Partial,
                "{:?} / {:?}",
                a.rule,
                b.rule
            );
        }
    }

    /// A rule that adds a value ("retry" / "retry twice") holds another value, however many
    /// words the two share.
    #[test]
    fn a_value_added_is_never_a_rewording() {
        let rule = |times: &str| {
            format!(
                "When the billing service fails, retry the request {times} before paging the \
                 on-call engineer."
            )
        };
        let plain = lesson(&rule(""), GENERAL, 0.9);
        for times in ["twice", "once", "3x"] {
            let other = lesson(&rule(times), GENERAL, 0.8);
            assert_eq!(verdict(&other, &plain), Verdict::Partial, "{}", other.rule);
        }
        // One word of slack is still a rewording when it names no value.
        let full = lesson(&rule("again"), GENERAL, 0.8);
        assert!(
            matches!(verdict(&full, &plain), Verdict::NearDuplicate { .. }),
            "{:?}",
            verdict(&full, &plain)
        );
    }

    /// Thirty rules that differ only in a subsystem's name are thirty lessons.
    #[test]
    fn rules_differing_in_one_subsystem_never_merge() {
        let rule = |name: &str| {
            format!(
                "When the {name} service returns a 503, retry the request three times with \
                 exponential backoff before reporting an outage to the on-call engineer."
            )
        };
        let names = [
            "billing",
            "search",
            "auth",
            "storage",
            "payments",
            "inventory",
        ];
        let first = Profile::of(&lesson(&rule(names[0]), GENERAL, 0.9));
        for name in &names[1..] {
            let other = Profile::of(&lesson(&rule(name), GENERAL, 0.9));
            assert_eq!(
                other.verdict(&first, &Thresholds::default()),
                Verdict::Partial,
                "{name}"
            );
        }
    }

    #[test]
    fn compatible_requirements_in_one_situation_do_not_conflict() {
        let a = lesson("Incident summaries must list the start time.", GENERAL, 0.9);
        let b = lesson(
            "Incident summaries must not leave out the owning team.",
            GENERAL,
            0.9,
        );
        assert_eq!(verdict(&b, &a), Verdict::Partial);
    }

    /// A negation inside the condition says where the rule applies, not what it asks.
    #[test]
    fn a_negated_condition_does_not_turn_the_directive_around() {
        let when = "When a customer does not reply within 3 days.";
        let a = lesson(
            "When a customer does not reply within 3 days, close the ticket.",
            when,
            0.9,
        );
        let b = lesson(
            "If a customer does not reply within 3 days, the ticket must be closed.",
            "If a customer does not reply within 3 days.",
            0.9,
        );
        assert!(
            matches!(verdict(&b, &a), Verdict::NearDuplicate { .. }),
            "{:?}",
            verdict(&b, &a)
        );
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
        // The same operation with the two flags the other way round conflicts.
        let swapped = lesson(
            "To group the rows by X and count them with gridtool, use `gridtool group --by X` \
             instead of `gridtool group --key X`.",
            &format!("To group the rows by X and count them with gridtool. {task}"),
            0.9,
        );
        let (yes, v) = conflict(&swapped, &group("key"));
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
