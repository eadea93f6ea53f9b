//! Relevance that means the same in every query: each leg's raw score mapped through bounds
//! that its source sets for the query, instead of min-max over the query's own hits.
//!
//! Min-max gives the best hit 1 whatever it is, so a task that no lesson is about still gets a
//! first lesson scoring 1 and a floor on the fused score cannot tell it from a true match. Raw
//! scores do separate them, but not on one scale: BM25 grows with the store (IDF is a log of
//! its size) and cosine levels differ from one embedder to the next, and from one query to the
//! next (a short generic task sits close to everything). So each leg is put on its own scale:
//!
//! - **Sparse**: BM25 as a share of what the query weighs (the IDF of each of its terms
//!   summed, [`crate::SparseIndex::query_weight`]): the part of the task a lesson covers. Both
//!   grow alike with the store, so the share does not; and a long task is not relevant to a
//!   lesson because it has many words that could match. Below [`IDF_FLOOR_DOCS`] lessons IDF
//!   is read as if the store held that many, since a handful of documents cannot say which
//!   words are rare: a lesson alone in its store and the same lesson among a thousand others
//!   cover the same share of a task.
//! - **Dense**: cosine between bounds set per kind of embedder. A sentence model's cosine is
//!   already a similarity of meaning on one scale for every query (all-MiniLM-L6-v2: tasks about
//!   nothing a lesson says reach about 0.2 to 0.3 with their nearest lesson, reworded tasks 0.35
//!   to 0.7 with their own); a lexical embedder's (the builtin one) is a word overlap, lower.
//!
//! The bounds were chosen on the tuning half of `lore bench lessons`' own data and checked on
//! its held-out half and among 10,000 other lessons (`docs/BENCHMARKS.md`).

use super::Scale;

/// A lesson covering at most this share of the query's weight has no lexical evidence: one
/// or two of a task's words, the share an unrelated lesson reaches by chance. Chance grows
/// with the store: among 10,000 other lessons the nearest lesson to a task no lesson is about
/// covers a median 0.24 of it (0.21 among 40), a reworded task's own lesson 0.2; at 0.15 the
/// builtin embedder served 13 of 40 such tasks there, at 0.2 it serves 7, and finds as many
/// reworded tasks' lessons. It was held at 0.15 while a small store read IDF as it is: with a
/// few lessons a shared word's IDF is at its lowest, and at 0.2 the lesson a person's
/// correction had just made was dropped for the next task of its kind. Read over at least
/// [`IDF_FLOOR_DOCS`] lessons, that lesson covers most of the task, and 0.2 holds.
pub const SPARSE_ZERO: f64 = 0.2;
/// The fewest lessons the sparse leg's IDF is read over
/// ([`crate::SparseIndex::with_idf_floor`]).
///
/// In a store of one lesson every word it holds is in every lesson, so the IDF of a word the
/// task shares with it is a fifth of the IDF of a word it lacks (0.29 against 1.39): the
/// lesson a run just taught ("score system design separately" when screening senior backend
/// candidates) covered 6% of the next run's input, "Jane Smith, Senior Backend Engineer, 5
/// years Python", and was dropped as not relevant. Among 200 lessons the same shared word
/// weighs 0.82 of a missing one, among 10,000 0.89, so from a couple of hundred lessons on the
/// share hardly moves with the store; below that the store is read as holding 200, where a
/// word most lessons share still weighs little. Stores of 200 lessons or more are read as
/// they are, so what was measured among 10,000 lessons holds there unchanged; among 40 the
/// bounds were measured again with it (`docs/BENCHMARKS.md`).
pub const IDF_FLOOR_DOCS: usize = 200;
/// From this share on the lexical evidence is full.
pub const SPARSE_ONE: f64 = 0.5;

/// Cosine bounds `(zero, one)` for a semantic embedder (a sentence model or a service).
/// all-MiniLM-L6-v2 puts a reworded task at 0.35 to 0.7 from its own lesson and a task that no
/// lesson is about at 0.12 to 0.38 from its nearest one (median 0.22), so half of the full
/// evidence, 0.35, is where the first range begins and the second ends.
pub const SEMANTIC: (f64, f64) = (0.2, 0.5);
/// Cosine bounds for a lexical embedder (the builtin one).
pub const LEXICAL: (f64, f64) = (0.1, 0.4);

/// The sparse leg's scale for a query that weighs `weight` (see
/// [`crate::SparseIndex::query_weight`]).
pub fn sparse(weight: f64) -> Scale {
    Scale::Calibrated {
        zero: SPARSE_ZERO * weight,
        one: SPARSE_ONE * weight,
    }
}

/// The dense leg's scale for an embedder whose vectors are `semantic` or lexical.
pub fn dense(semantic: bool) -> Scale {
    let (zero, one) = if semantic { SEMANTIC } else { LEXICAL };
    Scale::Calibrated { zero, one }
}

/// The dense evidence (on [`dense`]'s scale) from which a semantic embedder's verdict that a
/// task is about a lesson stands for the lesson's stated condition ([`meets_by_meaning`]).
pub const MEANING_MEETS_CONDITION: f64 = 0.5;

/// Whether a task whose vector is at `cosine` from a lesson's meets the lesson's stated
/// condition by meaning, whatever its words.
///
/// A condition is checked word by word ([`crate::applies`]), which a reworded task fails by
/// being reworded: "Localize the changelog for the Japanese market" carries no word of "when
/// translating", "Start the seasonal promotion ads" none of "when launching a campaign". A
/// sentence model sees that they mean the same; a lexical embedder's cosine is only the word
/// overlap the check has already counted, so it never stands in for it.
pub fn meets_by_meaning(semantic: bool, cosine: f64) -> bool {
    semantic && apply(dense(true), cosine).is_some_and(|e| e >= MEANING_MEETS_CONDITION)
}

/// `raw` on `scale`, for a calibrated scale; `None` for min-max, which needs the whole list.
pub fn apply(scale: Scale, raw: f64) -> Option<f64> {
    match scale {
        Scale::MinMax => None,
        Scale::Calibrated { zero, one } => {
            let span = one - zero;
            Some(if span > 0.0 {
                ((raw - zero) / span).clamp(0.0, 1.0)
            } else if raw >= one {
                1.0
            } else {
                0.0
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_evidence_is_the_share_of_the_query_covered() {
        let short = sparse(10.0);
        let long = sparse(40.0);
        // The same raw score is most of a short query and a sliver of a long one.
        assert_eq!(apply(short, 6.0), Some(1.0));
        assert_eq!(apply(long, 6.0), Some(0.0));
        assert_eq!(apply(short, 3.0), apply(long, 12.0));
    }

    #[test]
    fn dense_bounds_follow_the_kind_of_embedder() {
        // A cosine of 0.3 is weak for a sentence model and good word overlap for the builtin.
        let semantic = apply(dense(true), 0.3).unwrap();
        let lexical = apply(dense(false), 0.3).unwrap();
        assert!(semantic < lexical, "{semantic} < {lexical}");
        assert_eq!(apply(dense(true), 0.1), Some(0.0));
        assert_eq!(apply(dense(true), 0.9), Some(1.0));
    }

    /// Lessons written for these tests, each about one situation.
    const LESSONS: [&str; 6] = [
        "Run the database migrations before rolling out a release that changes the schema.",
        "Check the carrier's height limit against the pallet before booking a truck.",
        "Give modals a max-height relative to the viewport so phones can scroll them.",
        "Convert each expense at the exchange rate of the day it was spent.",
        "Lower a DNS record's TTL a day before moving the domain to a new server.",
        "Verify a backup by restoring it into a scratch database, not by its file size.",
    ];

    fn index() -> crate::SparseIndex {
        let mut index = crate::SparseIndex::with_idf_floor(IDF_FLOOR_DOCS);
        for lesson in LESSONS {
            index.add(lesson);
        }
        index
    }

    /// The calibrated sparse evidence of each lesson for `query`, by slot.
    fn sparse_evidence(index: &crate::SparseIndex, query: &str) -> Vec<(u32, f64)> {
        let scale = sparse(index.query_weight(query));
        index
            .search(query, LESSONS.len(), |_| true)
            .into_iter()
            .map(|(slot, raw)| (slot, apply(scale, raw).unwrap()))
            .collect()
    }

    #[test]
    fn a_sparse_score_means_the_same_for_a_short_and_a_long_query() {
        let index = index();
        // Each covers its lesson, in three words and in eleven.
        let short = sparse_evidence(&index, "carrier pallet height");
        let long = sparse_evidence(
            &index,
            "restoring the backup into a scratch database verifies it, its file size does not",
        );
        assert_eq!((short[0].0, long[0].0), (1, 5));
        assert!(
            short[0].1 > 0.9 && long[0].1 > 0.9,
            "short {short:?}, long {long:?}"
        );
        // One word of eleven shared is no evidence, though BM25 finds the lesson.
        let chance = sparse_evidence(
            &index,
            "write a birthday card for the colleague who retires after thirty years at the server room",
        );
        assert!(!chance.is_empty(), "the lesson shares a word with the task");
        assert!(chance.iter().all(|&(_, e)| e == 0.0), "{chance:?}");
    }

    /// A lesson a run taught, and the next run's task in the words a run recalls with.
    const TAUGHT: &str = "ALWAYS score system design separately from coding; without distributed \
        systems experience a senior backend candidate scores below 60. Screening senior backend \
        candidates.";
    const NEXT_RUN: &str = "hr resume screen\nJane Smith\nSenior Backend Engineer\n5 years Python";

    /// `others` lessons about other work, about as long as the taught one (BM25 weighs a
    /// lesson against the store's average length), sharing common words with each other and
    /// one with the task ("years"), none of its situation's.
    fn store_with(index: &mut crate::SparseIndex, others: usize) -> u32 {
        let verbs = [
            "Check", "Confirm", "Review", "Update", "Archive", "Label", "Measure",
        ];
        let things = [
            "invoice", "pallet", "schema", "ticket", "budget", "banner", "backup", "roster",
            "contract", "sensor", "playlist",
        ];
        let times = [
            "before the audit",
            "after a release",
            "every two years",
            "at month end",
        ];
        for i in 0..others {
            index.add(&format!(
                "{} the {} {} with the {} team, and write down who signed off on the {} so \
                 the next reviewer finds it (note {i}).",
                verbs[i % verbs.len()],
                things[i / verbs.len() % things.len()],
                times[i / 3 % times.len()],
                things[(i * 7 + 3) % things.len()],
                things[(i * 5 + 1) % things.len()],
            ));
        }
        index.add(TAUGHT)
    }

    fn evidence_of(index: &crate::SparseIndex, slot: u32, query: &str) -> f64 {
        let scale = sparse(index.query_weight(query));
        index
            .search(query, index.len(), |_| true)
            .into_iter()
            .find(|&(s, _)| s == slot)
            .and_then(|(_, raw)| apply(scale, raw))
            .unwrap_or(0.0)
    }

    #[test]
    fn a_lesson_alone_in_its_store_scores_as_it_does_among_a_thousand() {
        let evidence = |others: usize, floor: usize| {
            let mut index = crate::SparseIndex::with_idf_floor(floor);
            let slot = store_with(&mut index, others);
            evidence_of(&index, slot, NEXT_RUN)
        };
        let alone = evidence(0, IDF_FLOOR_DOCS);
        let among = evidence(1_000, IDF_FLOOR_DOCS);
        assert!(
            alone > 0.2,
            "the task names the lesson's situation: {alone}"
        );
        assert!(
            (alone - among).abs() < 0.05,
            "alone {alone}, among 1,000 {among}"
        );
        // Read as it is, a store of one says nothing of which words are rare.
        let raw_alone = evidence(0, 0);
        assert!(raw_alone < 0.05, "{raw_alone}");
        assert!(
            (evidence(1_000, 0) - among).abs() < 1e-9,
            "a big store reads as it is"
        );
        // And a task about none of it still has no lexical evidence, alone or among many.
        let unrelated = "book a table for the team dinner on Friday";
        for others in [0, 1_000] {
            let mut index = crate::SparseIndex::with_idf_floor(IDF_FLOOR_DOCS);
            let slot = store_with(&mut index, others);
            assert_eq!(evidence_of(&index, slot, unrelated), 0.0, "{others}");
        }
    }

    #[test]
    fn an_unrelated_task_scores_under_the_floor_and_a_reworded_one_above() {
        use crate::{BuiltinEmbedder, Embedder, Fusion, Hit, RankedList, RecallConfig, Source};
        let index = index();
        let embedder = BuiltinEmbedder::default();
        let vectors: Vec<Vec<f32>> = LESSONS.iter().map(|l| embedder.embed(l).unwrap()).collect();
        let Fusion::Linear {
            sparse: ws,
            dense: wd,
        } = RecallConfig::calibrated_fusion_for(false)
        else {
            panic!("lesson recall fuses linearly")
        };
        // Fused relevance of the best lesson for `query`, and which lesson it is.
        let best = |query: &str| {
            let q = embedder.embed(query).unwrap();
            let lists = [
                RankedList {
                    source: Source::Sparse,
                    scale: sparse(index.query_weight(query)),
                    hits: index
                        .search(query, LESSONS.len(), |_| true)
                        .into_iter()
                        .map(|(slot, score)| Hit {
                            id: slot.to_string(),
                            score,
                        })
                        .collect(),
                },
                RankedList {
                    source: Source::Dense,
                    scale: dense(embedder.semantic()),
                    hits: vectors
                        .iter()
                        .enumerate()
                        .map(|(slot, v)| Hit {
                            id: slot.to_string(),
                            score: crate::cosine(&q, v),
                        })
                        .collect(),
                },
            ];
            let fused = crate::fuse(
                &lists,
                Fusion::Linear {
                    sparse: ws,
                    dense: wd,
                },
            );
            (fused[0].id.clone(), fused[0].text)
        };
        let floor = RecallConfig::RELEVANCE_FLOOR;
        let (id, reworded) =
            best("the migrations of the schema must run before the release rolls out");
        assert_eq!(id, "0");
        assert!(
            reworded >= floor,
            "reworded {reworded} under the floor {floor}"
        );
        let (_, unrelated) = best("plan a team offsite and book a room for the database team");
        assert!(
            unrelated < floor,
            "unrelated {unrelated} over the floor {floor}"
        );
    }

    #[test]
    fn only_a_semantic_embedder_meets_a_condition_by_meaning() {
        assert!(meets_by_meaning(true, 0.45));
        assert!(
            !meets_by_meaning(true, 0.3),
            "a loose neighbour is not the situation"
        );
        assert!(
            !meets_by_meaning(false, 0.9),
            "a lexical cosine is the words already checked"
        );
    }

    #[test]
    fn min_max_is_left_to_the_list() {
        assert_eq!(apply(Scale::MinMax, 0.5), None);
        assert_eq!(
            apply(
                Scale::Calibrated {
                    zero: 1.0,
                    one: 1.0
                },
                1.0
            ),
            Some(1.0)
        );
    }
}
