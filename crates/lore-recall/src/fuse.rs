//! Fusion: many ranked candidate lists become one relevance per candidate, then one score.
//!
//! Two fusions are offered because neither wins everywhere. RRF (`Σ 1 / (k + rank)`) ignores
//! score scales, which makes it robust, but it throws away how much better the first hit was than
//! the second; with seed 002's k = 60 it scored below BM25 alone on LoCoMo. Linear fusion keeps
//! that information by min-max normalizing each list to `[0, 1]` and weighting the lists. The
//! default is whichever measured better (`lore bench locomo`); both stay configurable.
//!
//! The score then adds recency, `exp(-decay × age_hours)`. On an error (a query that carries a
//! fingerprint or tags) seed 003's formula replaces it: 0.40 fingerprint match, 0.25 tag overlap,
//! 0.20 text relevance, 0.10 reliability, 0.05 recency.

use crate::FastMap;

use serde::Serialize;

use super::{Fusion, RankedList, Scale, Source};

/// One source's opinion of a candidate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceScore {
    /// The list it came from.
    pub source: Source,
    /// Its 1-based rank there.
    pub rank: usize,
    /// The source's own score (BM25, cosine, match fraction).
    pub raw: f64,
    /// The score on its list's scale ([`Scale`]), `[0, 1]`.
    pub normalized: f64,
}

/// A candidate with its sources and its fused text relevance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fused {
    /// The candidate's ID.
    pub id: String,
    /// Where it was found, in list order.
    pub sources: Vec<SourceScore>,
    /// Text relevance from the sparse and dense lists, `[0, 1]`.
    pub text: f64,
    /// Whether its text relevance comes from calibrated lists ([`Scale::Calibrated`]), so that
    /// it means the same in every query and a floor applies to it.
    pub calibrated: bool,
}

impl Fused {
    /// The normalized score this candidate got from `source`, 0 when it was not found there.
    pub fn from(&self, source: Source) -> f64 {
        self.sources
            .iter()
            .find(|s| s.source == source)
            .map_or(0.0, |s| s.normalized)
    }
}

/// Fuses every list into candidates ordered by text relevance (best first; ties by first seen).
///
/// Fingerprint and tag lists are recorded as sources but do not count toward text relevance:
/// they enter the score through seed 003's weights instead.
pub fn fuse(lists: &[RankedList], fusion: Fusion) -> Vec<Fused> {
    // Candidates in the order they were first seen, found by ID without copying it.
    let mut fused: Vec<Fused> = Vec::new();
    let mut at: FastMap<&str, usize> = FastMap::default();
    for list in lists {
        for (i, (hit, normalized)) in list.hits.iter().zip(scaled(list)).enumerate() {
            let k = *at.entry(hit.id.as_str()).or_insert_with(|| {
                fused.push(Fused {
                    id: hit.id.clone(),
                    sources: Vec::new(),
                    text: 0.0,
                    calibrated: false,
                });
                fused.len() - 1
            });
            let entry = &mut fused[k];
            if entry.sources.iter().any(|s| s.source == list.source) {
                continue;
            }
            entry.calibrated |= list.source.is_text() && list.scale != Scale::MinMax;
            entry.sources.push(SourceScore {
                source: list.source,
                rank: i + 1,
                raw: hit.score,
                normalized,
            });
        }
    }
    let raw: Vec<f64> = fused.iter().map(|f| text_relevance(f, fusion)).collect();
    let normalized = match fusion {
        Fusion::Rrf { .. } => normalize(&raw),
        Fusion::Linear { .. } => raw,
    };
    for (f, text) in fused.iter_mut().zip(normalized) {
        f.text = text;
    }
    // A stable sort: equal relevance keeps the order first seen.
    fused.sort_by(|a, b| b.text.total_cmp(&a.text));
    fused
}

fn text_relevance(f: &Fused, fusion: Fusion) -> f64 {
    let text_sources = f.sources.iter().filter(|s| s.source.is_text());
    match fusion {
        Fusion::Rrf { k } => text_sources.map(|s| 1.0 / (k + s.rank as f64)).sum(),
        Fusion::Linear { sparse, dense } => text_sources
            .map(|s| match s.source {
                Source::Sparse => sparse * s.normalized,
                _ => dense * s.normalized,
            })
            .sum(),
    }
}

/// A list's scores on its scale: calibrated, or min-max normalized to `[0, 1]` (all 1 when
/// they are equal).
fn scaled(list: &RankedList) -> Vec<f64> {
    let raw: Vec<f64> = list.hits.iter().map(|h| h.score).collect();
    match list.scale {
        Scale::MinMax => normalize(&raw),
        scale => raw
            .iter()
            .map(|&r| crate::calibrate::apply(scale, r).unwrap_or(0.0))
            .collect(),
    }
}

fn normalize(scores: &[f64]) -> Vec<f64> {
    let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = hi - lo;
    scores
        .iter()
        .map(|s| if span > 0.0 { (s - lo) / span } else { 1.0 })
        .collect()
}

/// `exp(-decay × age_hours)`: 1 for a new memory, falling toward 0; negative ages count as 0.
pub fn recency(age_hours: f64, decay_per_hour: f64) -> f64 {
    (-decay_per_hour * age_hours.max(0.0)).exp()
}

/// Seed 003's on-error weights.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OnErrorWeights {
    /// Exact fingerprint match.
    pub fingerprint: f64,
    /// Share of the query's tags the memory carries.
    pub tags: f64,
    /// Text relevance.
    pub text: f64,
    /// The memory's reliability.
    pub reliability: f64,
    /// Recency.
    pub recency: f64,
}

impl Default for OnErrorWeights {
    fn default() -> Self {
        Self {
            fingerprint: 0.40,
            tags: 0.25,
            text: 0.20,
            reliability: 0.10,
            recency: 0.05,
        }
    }
}

/// The parts a final score is made of, each in `[0, 1]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Components {
    /// Fused text relevance.
    pub text: f64,
    /// 1 when the memory's trigger fingerprints include the query's.
    pub fingerprint: f64,
    /// Share of the query's tags the memory carries.
    pub tags: f64,
    /// The memory's reliability.
    pub reliability: f64,
    /// `exp(-decay × age_hours)`.
    pub recency: f64,
}

/// How a final score is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scoring {
    /// Text relevance blended with recency: `(1 - w) × text + w × recency`.
    Plain {
        /// The recency weight `w`.
        recency_weight: f64,
    },
    /// Seed 003's weighted sum, used when the query carries a fingerprint or tags.
    OnError(OnErrorWeights),
}

impl Scoring {
    /// The final score of `c`.
    pub fn score(self, c: &Components) -> f64 {
        match self {
            Scoring::Plain { recency_weight: w } => (1.0 - w) * c.text + w * c.recency,
            Scoring::OnError(w) => {
                w.fingerprint * c.fingerprint
                    + w.tags * c.tags
                    + w.text * c.text
                    + w.reliability * c.reliability
                    + w.recency * c.recency
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Hit;

    fn list(source: Source, hits: &[(&str, f64)]) -> RankedList {
        RankedList::new(
            source,
            hits.iter()
                .map(|(id, score)| Hit {
                    id: (*id).to_owned(),
                    score: *score,
                })
                .collect(),
        )
    }

    fn texts(fused: &[Fused]) -> Vec<(&str, f64)> {
        fused.iter().map(|f| (f.id.as_str(), f.text)).collect()
    }

    #[test]
    fn rrf_sums_reciprocal_ranks_then_normalizes() {
        let lists = [
            list(Source::Sparse, &[("a", 9.0), ("b", 5.0), ("c", 1.0)]),
            list(Source::Dense, &[("b", 0.9), ("c", 0.8)]),
        ];
        let fused = fuse(&lists, Fusion::Rrf { k: 60.0 });
        // a = 1/61, b = 1/62 + 1/61, c = 1/63 + 1/62.
        let (a, b, c) = (1.0 / 61.0, 1.0 / 62.0 + 1.0 / 61.0, 1.0 / 63.0 + 1.0 / 62.0);
        let ids: Vec<_> = fused.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        assert!((fused[1].text - (c - a) / (b - a)).abs() < 1e-12);
        assert_eq!(fused[0].sources.len(), 2);
        assert_eq!(fused[0].sources[1].rank, 1, "b is first in the dense list");
    }

    #[test]
    fn linear_weights_min_max_normalized_scores() {
        let lists = [
            list(Source::Sparse, &[("a", 10.0), ("b", 6.0), ("c", 2.0)]),
            list(Source::Dense, &[("c", 0.9), ("b", 0.5), ("a", 0.1)]),
        ];
        let fused = fuse(
            &lists,
            Fusion::Linear {
                sparse: 0.7,
                dense: 0.3,
            },
        );
        assert_eq!(texts(&fused), [("a", 0.7), ("b", 0.5), ("c", 0.3)]);
    }

    #[test]
    fn a_list_of_equal_scores_normalizes_to_one_and_rank_lists_skip_text() {
        let lists = [
            list(Source::Sparse, &[("a", 3.0), ("b", 3.0)]),
            list(Source::Fingerprint, &[("z", 1.0)]),
        ];
        let fused = fuse(
            &lists,
            Fusion::Linear {
                sparse: 0.5,
                dense: 0.5,
            },
        );
        assert_eq!(texts(&fused), [("a", 0.5), ("b", 0.5), ("z", 0.0)]);
        assert_eq!(fused[2].from(Source::Fingerprint), 1.0);
    }

    #[test]
    fn recency_decays_exponentially() {
        assert_eq!(recency(0.0, 0.1), 1.0);
        assert!((recency(10.0, 0.1) - (-1.0f64).exp()).abs() < 1e-12);
        assert_eq!(
            recency(-5.0, 0.1),
            1.0,
            "a future timestamp is not fresher than now"
        );
        assert!(recency(100.0, 0.01) > recency(200.0, 0.01));
    }

    #[test]
    fn on_error_uses_seed_003_weights() {
        let c = Components {
            text: 0.5,
            fingerprint: 1.0,
            tags: 0.5,
            reliability: 0.8,
            recency: 1.0,
        };
        let score = Scoring::OnError(OnErrorWeights::default()).score(&c);
        let expected = 0.40 + 0.25 * 0.5 + 0.20 * 0.5 + 0.10 * 0.8 + 0.05;
        assert!((score - expected).abs() < 1e-12);
        let plain = Scoring::Plain {
            recency_weight: 0.1,
        };
        assert!((plain.score(&c) - (0.9 * 0.5 + 0.1)).abs() < 1e-12);
    }
}
