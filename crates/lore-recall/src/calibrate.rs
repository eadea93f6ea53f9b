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
//!   lesson because it has many words that could match.
//! - **Dense**: cosine between bounds set per kind of embedder. A sentence model's cosine is
//!   already a similarity of meaning on one scale for every query (all-MiniLM-L6-v2: tasks about
//!   nothing a lesson says reach about 0.2 to 0.3 with their nearest lesson, reworded tasks 0.35
//!   to 0.7 with their own); a lexical embedder's (the builtin one) is a word overlap, lower.
//!
//! The bounds were chosen on the tuning half of `lore bench lessons`' own data and checked on
//! its held-out half and among 10,000 other lessons (`docs/BENCHMARKS.md`).

use super::Scale;

/// A lesson covering at most this share of the query's weight has no lexical evidence: one
/// or two of a task's words, the share an unrelated lesson reaches by chance.
pub const SPARSE_ZERO: f64 = 0.15;
/// From this share on the lexical evidence is full.
pub const SPARSE_ONE: f64 = 0.5;

/// Cosine bounds `(zero, one)` for a semantic embedder (a sentence model or a service).
pub const SEMANTIC: (f64, f64) = (0.2, 0.6);
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
