//! Whether a query meets the condition a lesson states.
//!
//! Ranking only orders candidates: asked for one lesson, recall returns the best of the skill's
//! lessons even when none is about the task at hand, and an agent then follows a rule about
//! sorting while it shows rows. A lesson whose author said when it applies ("When deploying the
//! api, …", "To sort by a column, use …") is held to that: it stays a candidate only when the
//! query carries enough of the condition's words, or the lesson's words carry enough of the
//! query's. Both sides are weighed by IDF over the lesson index, so a word every lesson shares
//! counts little and a rare one (the operation) much; a query word no lesson has counts most,
//! since it names something no lesson was written about.
//!
//! IDF over the whole store does not see what the lessons of one skill share: in a store of
//! many skills a tool's name is rare, yet every lesson of that tool carries it, and a condition
//! "When using fluxtool dedupe" was met by any "Using fluxtool: …" step through the tool's name
//! and the verb. So each word is weighed also by how well it tells the lesson's skill's lessons
//! apart ([`SkillWords`]): a word every lesson of the skill carries says which lessons these are,
//! not which of them the task is about, and weighs almost nothing; a word a few of them share (a
//! topic: "checkout", "deploy") still counts, less than one only this lesson has. A condition
//! made only of such words is still held to them, since their weights then compare among
//! themselves. The verbs that only frame a condition ("when using …") are no part of it
//! ([`FRAME_WORDS`]).
//!
//! Lessons without a stated condition are general to their skill and are never held back. The
//! words listed as the task's (after [`lore_core::text::TASK_WORDS_LABEL`]) describe the case
//! the lesson was learned on, not its scope; but a query that carries nearly all of them is
//! that task again, and a lesson always applies to its own task, even when its condition names
//! a detail of it ("when the second list is empty") that the task's text does not spell out. Words match on a light stem ("deploying" meets "deploy"): a stemmer for
//! search would be language-specific (see [`crate::text`]), but this check only asks whether
//! a condition's words recur.

use std::collections::{HashMap, HashSet};

use crate::text::terms;

/// A lesson's stated condition and its task's words, each word with its stem.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    words: Vec<(String, String)>,
    task: Vec<(String, String)>,
}

/// The share of a lesson's task words a query must carry to be that task again.
const SAME_TASK: f64 = 0.8;
/// Verbs that frame a condition without naming its situation: in "when using the api" the api
/// is the situation. Written this way in a lesson's condition, they are rare in a store's text
/// and would weigh as much as the operation they introduce.
pub const FRAME_WORDS: &[&str] = &["use", "uses", "used", "using"];

impl Condition {
    /// The condition stated in `applies_when`, or `None` when it states none.
    pub fn of(applies_when: &str) -> Option<Self> {
        let words = stemmed(lore_core::text::stated_condition(applies_when));
        let task = applies_when
            .split_once(lore_core::text::TASK_WORDS_LABEL)
            .map_or_else(Vec::new, |(_, task)| stemmed(task));
        (!words.is_empty()).then_some(Self { words, task })
    }
}

/// A query's words with their stems, computed once per recall.
#[derive(Clone, Debug)]
pub struct QueryWords {
    words: Vec<(String, String)>,
    stems: HashSet<String>,
}

impl QueryWords {
    /// The words of `query`.
    pub fn of(query: &str) -> Self {
        let words = stemmed(query);
        let stems = words.iter().map(|(_, s)| s.clone()).collect();
        Self { words, stems }
    }

    /// Whether the query has no word to compare.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

/// The stems of a lesson's whole text, for the query's side of the match.
pub fn stems(text: &str) -> HashSet<String> {
    stemmed(text).into_iter().map(|(_, s)| s).collect()
}

/// How well `query` meets `condition`, in `[0, 1]`: 1 when the query is the lesson's own task
/// (it carries [`SAME_TASK`] of the task's words), else the larger of the weighted share of the
/// condition's words the query carries and of the query's words the lesson (`lesson`, its
/// stems) carries. A word weighs its `idf` (as written) times how well it tells the lesson's
/// skill's lessons apart (`skill`, [`SkillWords::telling`]).
pub fn condition_match(
    condition: &Condition,
    lesson: &HashSet<String>,
    query: &QueryWords,
    skill: &SkillWords,
    idf: impl Fn(&str) -> f64,
) -> f64 {
    let share = |words: &[(String, String)], has: &dyn Fn(&str) -> bool| {
        let (mut met, mut all) = (0.0, 0.0);
        for (word, stem) in words {
            let w = idf(word) * skill.telling(stem);
            all += w;
            if has(stem) {
                met += w;
            }
        }
        if all > 0.0 { met / all } else { 0.0 }
    };
    let in_query = |s: &str| query.stems.contains(s);
    if !condition.task.is_empty() && share(&condition.task, &in_query) >= SAME_TASK {
        return 1.0;
    }
    let stated = share(&condition.words, &in_query);
    let asked = share(&query.words, &|s| lesson.contains(s));
    stated.max(asked)
}

/// How many of one skill's lessons carry each stem: what tells them apart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkillWords {
    lessons: usize,
    counts: HashMap<String, usize>,
}

impl SkillWords {
    /// The counts over `lessons` (each its stems): the live lessons of one skill.
    pub fn of<'a>(lessons: impl IntoIterator<Item = &'a HashSet<String>>) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut n = 0;
        for stems in lessons {
            n += 1;
            for stem in stems {
                *counts.entry(stem.clone()).or_default() += 1;
            }
        }
        Self { lessons: n, counts }
    }

    /// How well `stem` tells the skill's lessons apart, in `(0, 1]`: its IDF within the skill,
    /// `ln((n + 1) / (carried + ½))`, over that of a word one lesson alone carries, and at most
    /// 1 (a word none of them carries is left to the store's IDF). A word every lesson carries
    /// keeps a little weight, so a condition made only of such words still compares them among
    /// themselves, and a skill of one lesson weighs its words as the store's IDF does. A tool's
    /// name in every lesson of eight weighs 3% of a word one lesson has; a topic two of three
    /// share, 48%.
    pub fn telling(&self, stem: &str) -> f64 {
        if self.lessons == 0 {
            return 1.0;
        }
        let carried = self.counts.get(stem).copied().unwrap_or(0) as f64;
        let n = self.lessons as f64 + 1.0;
        ((n / (carried + 0.5)).ln() / (n / 1.5).ln()).min(1.0)
    }
}

/// Distinct words of `text` that can carry a topic (stop words, frame words and single
/// characters out), each with its stem.
fn stemmed(text: &str) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    terms(text)
        .into_iter()
        .filter(|w| w.chars().count() > 1 && !FRAME_WORDS.contains(&w.as_str()))
        .filter_map(|w| {
            let stem = stem(&w);
            seen.insert(stem.clone()).then_some((w, stem))
        })
        .collect()
}

/// A light English stem: a plural, then one common ending off, so "deploying", "deployed" and
/// "deploys" meet "deploy", and "migrations" meets "migrating". It errs toward matching, which
/// keeps a lesson rather than holding it back.
fn stem(word: &str) -> String {
    const ENDINGS: &[(&str, usize)] = &[("ing", 6), ("ion", 6), ("ed", 5), ("ly", 5)];
    let mut w = if word.len() >= 5 && word.ends_with("ies") {
        format!("{}y", &word[..word.len() - 3])
    } else if word.len() >= 4 && word.ends_with('s') && !word.ends_with("ss") {
        word[..word.len() - 1].to_owned()
    } else {
        word.to_owned()
    };
    if let Some((ending, _)) = ENDINGS
        .iter()
        .find(|(ending, min)| w.len() >= *min && w.ends_with(ending))
    {
        w.truncate(w.len() - ending.len());
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(_: &str) -> f64 {
        1.0
    }

    fn none() -> SkillWords {
        SkillWords::default()
    }

    #[test]
    fn inflections_meet_their_stem_and_short_words_stay_whole() {
        assert_eq!(stem("deploying"), "deploy");
        assert_eq!(stem("deployed"), "deploy");
        assert_eq!(stem("deploys"), "deploy");
        assert_eq!(stem("queries"), "query");
        assert_eq!(stem("rows"), "row");
        assert_eq!(stem("migrations"), stem("migrating"));
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("sing"), "sing");
    }

    #[test]
    fn only_a_stated_condition_holds_a_lesson_back() {
        assert!(Condition::of("").is_none());
        assert!(Condition::of("Tasks about: deploy, api.").is_none());
        assert!(Condition::of("When deploying the api. Tasks about: x.").is_some());
    }

    #[test]
    fn a_query_about_another_operation_does_not_meet_the_condition() {
        let condition = Condition::of("To sort the rows by X, largest first with gridtool")
            .expect("a stated condition");
        let lesson = stems(
            "To sort the rows by X, largest first with gridtool, use `gridtool sort \
             --order=desc X` instead of `gridtool sort --desc X`.",
        );
        // The rarer a word among the lessons, the more it weighs.
        let idf = |w: &str| match w {
            "gridtool" | "using" => 0.1,
            "rows" | "first" => 0.5,
            _ => 2.0,
        };
        let about_sorting = QueryWords::of("Using gridtool: sort the rows by price, largest first");
        let about_showing = QueryWords::of("Using gridtool: show the first 10 rows");
        let met = condition_match(&condition, &lesson, &about_sorting, &none(), idf);
        let missed = condition_match(&condition, &lesson, &about_showing, &none(), idf);
        assert!(met > 0.9, "{met}");
        assert!(missed < 0.25, "{missed}");
    }

    #[test]
    fn a_lesson_applies_to_its_own_task_whatever_detail_its_condition_names() {
        let condition = Condition::of(
            "When the second list is empty. Tasks about: remove, last, element, first, list.",
        )
        .unwrap();
        let lesson = stems("When the second list is empty, still remove the last element.");
        let own = QueryWords::of("Remove the last element of the first list, then append.");
        assert_eq!(
            condition_match(&condition, &lesson, &own, &none(), flat),
            1.0
        );
        let other = QueryWords::of("Count the vowels of a string.");
        assert_eq!(
            condition_match(&condition, &lesson, &other, &none(), flat),
            0.0
        );
    }

    #[test]
    fn words_every_lesson_of_the_skill_carries_do_not_meet_a_condition() {
        let condition = Condition::of("When using fluxtool dedupe.").unwrap();
        let planted = stems(
            "To drop repeated records, use `fluxtool dedupe --keep=last X`. When using fluxtool \
             dedupe.",
        );
        let others = [
            stems(
                "To select the X and id fields with fluxtool, use `fluxtool select --fields=[a,b] X`.",
            ),
            stems("To rename the X field to label with fluxtool, use `fluxtool rename --map X`."),
        ];
        let skill = SkillWords::of(others.iter().chain([&planted]));
        assert!(skill.telling("fluxtool") < skill.telling("dedupe"));
        // "using" is as rare in the store as "dedupe": by IDF alone it would carry the match.
        let idf = |w: &str| if w == "fluxtool" { 0.5 } else { 2.0 };
        let elsewhere = QueryWords::of("Using fluxtool: write the result to status.out");
        let met = condition_match(&condition, &planted, &elsewhere, &skill, idf);
        assert!(met < 0.25, "{met}");
        let own = QueryWords::of("Using fluxtool: dedupe the records by price");
        let met = condition_match(&condition, &planted, &own, &skill, idf);
        assert_eq!(met, 1.0);
        // A condition made only of the skill's shared words is still held to them.
        let only_shared = Condition::of("When using fluxtool.").unwrap();
        let met = condition_match(&only_shared, &planted, &elsewhere, &skill, idf);
        assert_eq!(met, 1.0);
        let elsewhere = QueryWords::of("write the result to status.out");
        let met = condition_match(&only_shared, &planted, &elsewhere, &skill, idf);
        assert_eq!(met, 0.0);
    }

    #[test]
    fn a_topic_a_few_lessons_share_still_meets_a_condition() {
        // Two of three lessons are about checkout after a deploy: their words are the topic, not
        // the skill's, and a task in other words about it meets the condition.
        let lessons = [
            stems("Roll back the deploy when checkout returns 500. Checkout outages."),
            stems("Check the deploy log before blaming checkout. Checkout errors after a deploy."),
            stems("Invoices need the customer's VAT number. EU invoices."),
        ];
        let skill = SkillWords::of(&lessons);
        let condition = Condition::of("Checkout errors after a deploy.").unwrap();
        let query = QueryWords::of("checkout fails after deploy");
        let met = condition_match(&condition, &lessons[1], &query, &skill, flat);
        // Well above the default floor (`min_condition_match`, 0.25): "checkout" and "deploy"
        // weigh about half as much as "errors", which only this lesson has.
        assert!(met > 0.4, "{met}");
        let elsewhere = QueryWords::of("the VAT number of an EU invoice");
        let met = condition_match(&condition, &lessons[1], &elsewhere, &skill, flat);
        assert_eq!(met, 0.0);
    }

    #[test]
    fn a_skill_of_one_lesson_weighs_its_words_alike() {
        let one = stems("When deploying the api, run migrations first.");
        let skill = SkillWords::of([&one]);
        assert_eq!(skill.telling("deploy"), 1.0);
        assert_eq!(skill.telling("api"), 1.0);
        assert_eq!(skill.telling("unheard"), 1.0);
    }

    #[test]
    fn a_short_query_inside_the_lessons_words_meets_it() {
        let condition = Condition::of("When deploying the api to production").unwrap();
        let lesson = stems("When deploying the api to production, run migrations first.");
        let query = QueryWords::of("deploy api");
        assert_eq!(
            condition_match(&condition, &lesson, &query, &none(), flat),
            1.0
        );
        let elsewhere = QueryWords::of("write the quarterly report");
        assert_eq!(
            condition_match(&condition, &lesson, &elsewhere, &none(), flat),
            0.0
        );
    }
}
