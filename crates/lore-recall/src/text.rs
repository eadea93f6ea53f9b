//! Words, stop words and word bigrams: the text features every recall stage shares.
//!
//! One definition of "a word" serves BM25, the builtin embedder and MMR's Jaccard similarity, so
//! a query term that BM25 matches is the same term the embedder hashes and the diversity stage
//! compares. Words are lower-cased runs of letters and digits.
//!
//! BM25 indexes each term cut to a light English stem ([`index_terms`]): a question and the
//! memory that answers it rarely share an inflection ("when did she sign up" against "I signed
//! up"), and on LoCoMo's dev questions BM25 over stems found more evidence than over whole words
//! (recall@10 .606 → .642). The builtin embedder keeps whole words: its character trigrams
//! already bridge inflections, and a change to its features would change every stored vector.
//! The stemmer only strips regular endings of ASCII words, so other languages pass through.

use std::collections::HashSet;

/// English function words that carry no topic (a common short list, as BM25 setups use).
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `word` (lower case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Every word of `text`, lower-cased, in order.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The words of `text` that carry a topic: [`words`] without stop words.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .collect()
}

/// What BM25 indexes of `text`: its [`terms`], each cut to its [`stem`].
pub fn index_terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .collect()
}

/// Lessons are compared by curation and ranked by recall over the same stems.
pub use lore_core::directive::stem;

/// The set of adjacent word pairs of `text` (seed 002's word-bigram similarity).
///
/// A one-word text yields that word alone, so two identical one-word texts still compare equal.
pub fn bigrams(text: &str) -> HashSet<(String, String)> {
    let w = words(text);
    if w.len() == 1 {
        return HashSet::from([(w[0].clone(), String::new())]);
    }
    w.windows(2).map(|p| (p[0].clone(), p[1].clone())).collect()
}

/// Jaccard similarity of two sets: shared over total, 0 when both are empty.
pub fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|p| p[0] < p[1]));
        assert!(is_stop_word("the") && !is_stop_word("deploy"));
    }

    #[test]
    fn terms_lowercase_split_and_drop_stop_words() {
        assert_eq!(
            terms("When the Deploy fails, ROLL back v2!"),
            ["deploy", "fails", "roll", "back", "v2"]
        );
        assert_eq!(index_terms("When the Deploy fails"), ["deploy", "fail"]);
        assert_eq!(words("Zoë's 数据"), ["zoë", "s", "数据"]);
    }

    #[test]
    fn inflections_meet_at_one_stem() {
        let same = |words: &[&str]| {
            let stems: HashSet<String> = words.iter().map(|w| stem(w)).collect();
            assert_eq!(stems.len(), 1, "{words:?} gave {stems:?}");
        };
        same(&["hike", "hikes", "hiked", "hiking"]);
        same(&["signed", "signing", "signs"]);
        same(&["running", "runs"]);
        same(&["stopped", "stopping", "stops"]);
        same(&["stories", "story"]);
        same(&["classes", "class"]);
        same(&["painting", "painted", "paints"]);
        // Short words, identifiers and other scripts stay whole; so does a word that would lose
        // its last vowel.
        for whole in ["bus", "used", "v2ing", "zoëing", "thing", "focus"] {
            assert_eq!(stem(whole), whole);
        }
        assert_eq!(stem("things"), "thing");
    }

    #[test]
    fn jaccard_of_bigrams_measures_shared_phrasing() {
        let a = bigrams("check the invoice total");
        let b = bigrams("check the invoice date");
        assert!((jaccard(&a, &b) - 0.5).abs() < 1e-9, "2 shared of 4");
        assert_eq!(jaccard(&bigrams("same"), &bigrams("Same")), 1.0);
        assert_eq!(jaccard(&bigrams(""), &bigrams("")), 0.0);
    }
}
