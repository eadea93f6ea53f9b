//! The corpora `lore bench recall` indexes, made from word lists with a fixed-seed generator so
//! every run indexes the same text and no data set is copied.
//!
//! Two shapes, because they load recall differently. [`Vocab::Locomo`] is conversation-like:
//! many speakers, subjects and objects, an ID-specific word per turn, so a question's rarer
//! words pick out a small share of the corpus. [`Vocab::Small`] is the shape of
//! `crates/lore-server/bench/seed.py`: lessons of a support desk built from 14 subjects, 8
//! conditions and 9 actions, so every query shares words with a large share of the store
//! and BM25's posting lists are as long as the store is large — the expensive case, and the
//! one a server's whole-store recall meets when its lessons are alike.

/// Which corpus and questions a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Vocab {
    /// LoCoMo-like conversation turns and questions about them.
    Locomo,
    /// seed.py's lessons and recall.lua's queries: a small vocabulary that every query shares.
    Small,
}

impl Vocab {
    /// Reads `locomo` or `small`.
    ///
    /// # Errors
    /// Any other name, with the two that are read.
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "locomo" => Ok(Self::Locomo),
            "small" => Ok(Self::Small),
            other => Err(format!("{other:?}; expected locomo or small")),
        }
    }

    /// The `i`th document of the corpus.
    pub fn lesson(self, i: usize) -> String {
        match self {
            Self::Locomo => locomo_turn(i),
            Self::Small => small_lesson(i),
        }
    }

    /// The `i`th synthetic question.
    pub fn question(self, i: usize) -> String {
        match self {
            Self::Locomo => locomo_question(i),
            Self::Small => small_query(i),
        }
    }
}

/// A fixed-seed generator (SplitMix64) so that every run indexes the same corpus.
fn pick<const N: usize>(words: &[&'static str; N], seed: u64, salt: u64) -> &'static str {
    let mut z = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(salt);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    words[((z ^ (z >> 31)) % N as u64) as usize]
}

const DESK_SUBJECTS: [&str; 14] = [
    "ticket",
    "invoice",
    "refund",
    "outage",
    "contract",
    "payroll",
    "customer",
    "order",
    "deployment",
    "password reset",
    "chargeback",
    "escalation",
    "renewal",
    "audit log",
];
const CONDITIONS: [&str; 8] = [
    "reports errors for many customers",
    "mentions a deadline",
    "comes from a VIP account",
    "is written in French",
    "includes a stack trace",
    "asks for a refund over 500 EUR",
    "repeats an earlier request",
    "arrives outside business hours",
];
const ACTIONS: [&str; 9] = [
    "set priority to urgent",
    "name the failing service first",
    "quote the order number",
    "never promise a fix date",
    "copy the account manager",
    "answer in the customers language",
    "attach the runbook link",
    "flag it for legal review",
    "round totals to cents",
];
/// Words a query adds that few or no lessons have, as people's queries do.
const EXTRAS: [&str; 12] = [
    "",
    "",
    "urgent",
    "again",
    "today",
    "weekend",
    "Berlin office",
    "second time",
    "angry tone",
    "mobile app",
    "API",
    "quarter end",
];

/// One lesson as seed.py writes it, in the words the Engine indexes of a lesson (summary, rule,
/// condition and mistake, as `lore_recall::lesson_text` joins them).
fn small_lesson(i: usize) -> String {
    let s = i as u64;
    let (subject, condition, action) = (
        pick(&DESK_SUBJECTS, s, 1),
        pick(&CONDITIONS, s, 2),
        pick(&ACTIONS, s, 3),
    );
    let rule = format!("When a {subject} {condition}, {action}.");
    format!(
        "{rule}\n{rule}\nWhen a {subject} {condition}.\nThe output for a {subject} did not {action}."
    )
}

/// One query in the shapes of `crates/lore-server/bench/recall.lua`: a situation in the desk's
/// words, sometimes with words no lesson has, sometimes only an action.
fn small_query(i: usize) -> String {
    let s = i as u64 + 1_000_003;
    let (subject, condition, action, extra) = (
        pick(&DESK_SUBJECTS, s, 1),
        pick(&CONDITIONS, s, 2),
        pick(&ACTIONS, s, 3),
        pick(&EXTRAS, s, 4),
    );
    let query = match s % 5 {
        0 => format!("a {subject} {condition}, what should I do {extra}"),
        1 => format!("how to handle a {subject} that {condition} {extra}"),
        2 => format!("{subject} {condition}: {action}"),
        3 => format!("the {subject} {condition} and I must {action}"),
        _ => format!("{action} {extra}"),
    };
    query.trim_end().to_owned()
}

const SPEAKERS: [&str; 12] = [
    "Caroline", "Melanie", "Jon", "Gina", "John", "Maria", "Joanna", "Nate", "Tim", "Audrey",
    "Andrew", "Evan",
];

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const SUBJECTS: [&str; 24] = [
    "my sister",
    "the kids",
    "our dog",
    "my boss",
    "the band",
    "a friend from school",
    "my neighbour",
    "the team",
    "my grandmother",
    "the new intern",
    "my cousin",
    "the coach",
    "my partner",
    "the landlord",
    "an old classmate",
    "the support group",
    "my therapist",
    "the book club",
    "my brother",
    "the painter",
    "our mentor",
    "the shelter staff",
    "my aunt",
    "the volunteers",
];
const VERBS: [&str; 16] = [
    "went hiking near",
    "painted a mural of",
    "started a class on",
    "read a book about",
    "adopted a puppy from",
    "ran a charity race for",
    "cooked dinner inspired by",
    "wrote a poem about",
    "took photos of",
    "volunteered at",
    "planned a trip to",
    "bought tickets for",
    "learned to play",
    "talked for hours about",
    "built a shelf for",
    "finally finished",
];
const OBJECTS: [&str; 24] = [
    "the lake",
    "the mountains",
    "pottery",
    "sunflowers",
    "the city museum",
    "a jazz concert",
    "the animal shelter",
    "camping gear",
    "the violin",
    "the beach at sunset",
    "an art fair",
    "the community garden",
    "a marathon",
    "the old bookstore",
    "the LGBTQ center",
    "a road trip",
    "the farmers market",
    "a career fair",
    "the guitar",
    "the science fair",
    "a yoga retreat",
    "the family reunion",
    "the pride parade",
    "the dance studio",
];
const TAILS: [&str; 8] = [
    "and it felt amazing.",
    "last weekend.",
    "because it reminds me of home.",
    "with everyone I love.",
    "even though it rained.",
    "and I can't wait to go back.",
    "to support a good cause.",
    "after a really tough week.",
];

/// One LoCoMo-like turn: a session date, a speaker and a sentence, with an ID-specific word.
fn locomo_turn(i: usize) -> String {
    let s = i as u64;
    let session = s / 20;
    format!(
        "({}:{:02} pm on {} {}, {}) {}: {} {} {} {} (note {i})",
        1 + session % 12,
        (session * 7) % 60,
        1 + session % 28,
        pick(&MONTHS, session, 1),
        2022 + session % 3,
        pick(&SPEAKERS, s, 2),
        pick(&SUBJECTS, s, 3),
        pick(&VERBS, s, 4),
        pick(&OBJECTS, s, 5),
        pick(&TAILS, s, 6),
    )
}

fn locomo_question(i: usize) -> String {
    let s = i as u64 + 1_000_003;
    format!(
        "When did {} say {} {} {}?",
        pick(&SPEAKERS, s, 2),
        pick(&SUBJECTS, s, 3),
        pick(&VERBS, s, 4),
        pick(&OBJECTS, s, 5)
    )
}

#[cfg(test)]
mod tests {
    use super::Vocab;
    use lore_recall::SparseIndex;
    use std::collections::HashSet;

    fn terms(vocab: Vocab, n: usize) -> HashSet<String> {
        (0..n)
            .flat_map(|i| lore_recall::text::index_terms(&vocab.lesson(i)))
            .collect()
    }

    #[test]
    fn the_small_vocabulary_repeats_a_few_words_and_the_locomo_one_does_not() {
        assert_eq!(Vocab::Small.lesson(7), Vocab::Small.lesson(7), "fixed seed");
        assert_ne!(Vocab::Small.lesson(7), Vocab::Small.lesson(8));
        let small = terms(Vocab::Small, 5000);
        let locomo = terms(Vocab::Locomo, 5000);
        assert!(small.len() < 100, "{} terms: {small:?}", small.len());
        assert!(locomo.len() > 1000, "{} terms", locomo.len());
        let distinct: HashSet<String> = (0..5000).map(|i| Vocab::Small.lesson(i)).collect();
        assert!(distinct.len() <= 14 * 8 * 9, "{} texts", distinct.len());
        assert!(distinct.len() > 500, "the combinations are all used");
    }

    #[test]
    fn every_small_query_matches_a_large_share_of_the_store() {
        let n = 4000;
        let mut index = SparseIndex::new();
        for i in 0..n {
            index.add(&Vocab::Small.lesson(i));
        }
        let mut shares: Vec<f64> = (0..200)
            .map(|q| {
                let query = Vocab::Small.question(q);
                index.search_exhaustive(&query, n, |_| true).len() as f64 / n as f64
            })
            .collect();
        shares.sort_by(f64::total_cmp);
        // The rarest query names one action (a ninth of the lessons); most name a subject and
        // a condition whose words many other lessons share (a quarter of the store, measured).
        assert!(shares[0] >= 0.08, "{:?}", &shares[..5]);
        assert!(shares[100] >= 0.2, "median share {}", shares[100]);
    }

    #[test]
    fn a_vocabulary_is_named_locomo_or_small() {
        assert_eq!(Vocab::parse("small"), Ok(Vocab::Small));
        assert_eq!(Vocab::parse("locomo"), Ok(Vocab::Locomo));
        let err = Vocab::parse("tiny").unwrap_err();
        assert!(err.contains("locomo or small"), "{err}");
    }
}
