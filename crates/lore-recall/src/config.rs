//! The pipeline's settings, with defaults and a validating builder.

use serde::Serialize;

use super::{Fusion, OnErrorWeights, Similarity, check_range};
use lore_core::error::{Error, Result};

/// Every setting of the recall pipeline. Build one with [`RecallConfig::builder`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecallConfig {
    /// How the sparse and dense lists are fused.
    pub fusion: Fusion,
    /// Weight of recency in plain (not on-error) scoring, `[0, 1]`.
    pub recency_weight: f64,
    /// Recency decay per hour of age.
    pub decay_per_hour: f64,
    /// Seed 003's weights for a query with a fingerprint or tags.
    pub on_error: OnErrorWeights,
    /// Candidates scoring below this are dropped, `[0, 1]`.
    pub min_relevance: f64,
    /// Candidates whose calibrated relevance ([`crate::calibrate`]) is below this are dropped,
    /// `[0, 1]`; 0 turns the floor off. An error's fingerprint or tags count as relevance.
    pub relevance_floor: f64,
    /// A memory that states when it applies is dropped when the query meets less than this
    /// share of its condition ([`crate::applies`]), `[0, 1]`; 0 turns the check off.
    pub min_condition_match: f64,
    /// MMR's λ (1 = relevance only); `None` turns MMR off.
    pub mmr_lambda: Option<f64>,
    /// How MMR compares memories.
    pub similarity: Similarity,
    /// MMR looks at `limit × pool_multiplier` candidates, `1..=10`.
    pub pool_multiplier: usize,
    /// At most this many kept memories per tag.
    pub max_per_tag: Option<usize>,
    /// At most this many kept memories per session.
    pub max_per_session: Option<usize>,
    /// At most this many memories in the context.
    pub limit: usize,
    /// The token budget.
    pub budget: usize,
    /// The top this-many memories may show their fuller tiers.
    pub full_tiers: usize,
    /// Keep only memories tagged `non-inferable` (seed 002's filter).
    pub non_inferable_only: bool,
    /// Added to the text relevance of the caller's own memories, capped at 1 (seed 002's
    /// `personal_boost`), `[0, 1]`; shared memories get none. 0, the default, ranks the two alike.
    pub personal_boost: f64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            // Chosen by `lore bench locomo` (dev half, recall@5/10/25; the Engine fits the
            // builtin embedder's IDF to the store, as the benchmark does per conversation):
            // BM25 alone .552/.617/.687; dense unfitted .310/.373/.490, fitted (IDF)
            // .338/.403/.499; with the fitted one, RRF k=60 .477/.568/.673, k=10 .518/.594/.675,
            // linear 0.5 .544/.615/.692, 0.6 .549/.623/.693, 0.7 .549/.617/.699, 0.8
            // .553/.616/.695, 0.9 .552/.619/.690 (unfitted 0.8 was .555/.616/.693). 0.9 is the
            // only weight no worse than BM25 at every k; 1024 buckets lift dense alone to .529 at
            // 10 but not the hybrid. A lexical embedder adds little beside BM25; a neural one
            // gets its own default, see `fusion_for`.
            fusion: Self::fusion_for(false),
            recency_weight: 0.05,
            // A half-life of about four weeks.
            decay_per_hour: 0.001,
            on_error: OnErrorWeights::default(),
            min_relevance: 0.0,
            relevance_floor: Self::RELEVANCE_FLOOR,
            // `lore bench learning`, 5 seeds: retrieval precision 0.79 without the check, 0.86
            // at 0.25, 0.88 at 0.4, 0.92 at 0.5. A quarter keeps a person's short condition
            // ("Checkout outages.") for a query in other words ("checkout fails after deploy")
            // while a step about another operation of the tool still misses it.
            min_condition_match: 0.25,
            mmr_lambda: Some(0.7),
            similarity: Similarity::Auto,
            pool_multiplier: 3,
            max_per_tag: Some(3),
            max_per_session: Some(3),
            limit: 10,
            budget: 2000,
            full_tiers: 3,
            non_inferable_only: false,
            personal_boost: 0.0,
        }
    }
}

impl RecallConfig {
    /// The default relevance floor.
    pub const RELEVANCE_FLOOR: f64 = 0.3;

    /// The default fusion for an embedder whose vectors are `semantic` (see
    /// [`super::Embedder::semantic`]) or lexical (the builtin one).
    ///
    /// Chosen on the dev half of `lore bench locomo` with MiniLM (recall@5/10/25): BM25 alone
    /// .552/.606/.690, MiniLM alone .392/.488/.617; linear 0.9/0.1 (the lexical default)
    /// .561/.625/.709, 0.7 .584/.663/.741, 0.6 .592/.666/.746, 0.5 .608/.673/.757,
    /// 0.4 .597/.686/.769, 0.3 .586/.673/.765; RRF k=10 .573/.668/.771. 0.5 is best at 5 and
    /// within .013 of the best at 10 and 25; the Engine's whole pipeline with it scores
    /// .603/.667/.749 (with 0.9/0.1 it was .535/.613/.712).
    pub fn fusion_for(semantic: bool) -> Fusion {
        if semantic {
            Fusion::Linear {
                sparse: 0.5,
                dense: 0.5,
            }
        } else {
            Fusion::Linear {
                sparse: 0.9,
                dense: 0.1,
            }
        }
    }

    /// The default fusion of calibrated lists ([`crate::calibrate`]), as lesson recall makes
    /// them, for a `semantic` or lexical embedder.
    ///
    /// Chosen on the tuning half of `lore bench lessons`' own data: with a sentence model the
    /// dense leg is the one that finds a reworded task's lesson (MiniLM ranks a reworded task's
    /// own lesson first in 32 of 40 tasks, BM25 in 28, and BM25's share of a task covered is
    /// as high for a task no lesson is about as for a reworded one), so it weighs most
    /// (tuning half, floor 0.3: reworded hit@1 .70 at 0.2/0.8 against .65 at 0.3/0.7,
    /// unrelated tasks served .05 both); a lexical embedder only repeats BM25's evidence, so
    /// it keeps the weight [`Self::fusion_for`] gives.
    pub fn calibrated_fusion_for(semantic: bool) -> Fusion {
        if semantic {
            Fusion::Linear {
                sparse: 0.2,
                dense: 0.8,
            }
        } else {
            Self::fusion_for(false)
        }
    }

    /// A builder starting from the defaults.
    pub fn builder() -> RecallConfigBuilder {
        RecallConfigBuilder(Self::default())
    }
}

/// Builds a [`RecallConfig`]; [`RecallConfigBuilder::build`] checks every range.
#[derive(Clone, Debug)]
pub struct RecallConfigBuilder(RecallConfig);

impl RecallConfigBuilder {
    /// Sets the fusion.
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.0.fusion = fusion;
        self
    }

    /// Sets the recency weight and decay per hour.
    pub fn recency(mut self, weight: f64, decay_per_hour: f64) -> Self {
        self.0.recency_weight = weight;
        self.0.decay_per_hour = decay_per_hour;
        self
    }

    /// Sets the on-error weights.
    pub fn on_error(mut self, weights: OnErrorWeights) -> Self {
        self.0.on_error = weights;
        self
    }

    /// Sets the minimum relevance.
    pub fn min_relevance(mut self, min: f64) -> Self {
        self.0.min_relevance = min;
        self
    }

    /// Sets the relevance floor (0 turns it off).
    pub fn relevance_floor(mut self, floor: f64) -> Self {
        self.0.relevance_floor = floor;
        self
    }

    /// Sets the share of a stated condition a query must meet (0 turns the check off).
    pub fn min_condition_match(mut self, min: f64) -> Self {
        self.0.min_condition_match = min;
        self
    }

    /// Sets MMR's λ, or turns MMR off with `None`.
    pub fn mmr(mut self, lambda: Option<f64>, similarity: Similarity) -> Self {
        self.0.mmr_lambda = lambda;
        self.0.similarity = similarity;
        self
    }

    /// Sets the MMR pool multiplier.
    pub fn pool_multiplier(mut self, multiplier: usize) -> Self {
        self.0.pool_multiplier = multiplier;
        self
    }

    /// Sets the per-tag and per-session caps.
    pub fn caps(mut self, per_tag: Option<usize>, per_session: Option<usize>) -> Self {
        self.0.max_per_tag = per_tag;
        self.0.max_per_session = per_session;
        self
    }

    /// Sets how many memories a context holds at most.
    pub fn limit(mut self, limit: usize) -> Self {
        self.0.limit = limit;
        self
    }

    /// Sets the token budget.
    pub fn budget(mut self, tokens: usize) -> Self {
        self.0.budget = tokens;
        self
    }

    /// Sets how many top memories may show fuller tiers.
    pub fn full_tiers(mut self, top: usize) -> Self {
        self.0.full_tiers = top;
        self
    }

    /// Sets the boost of the caller's own memories.
    pub fn personal_boost(mut self, boost: f64) -> Self {
        self.0.personal_boost = boost;
        self
    }

    /// Keeps only non-inferable memories.
    pub fn non_inferable_only(mut self, on: bool) -> Self {
        self.0.non_inferable_only = on;
        self
    }

    /// The checked configuration.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a weight, λ or minimum outside `[0, 1]`, a negative decay, an RRF
    /// k not above 0, a pool multiplier outside `1..=10`, or a limit of 0.
    pub fn build(self) -> Result<RecallConfig> {
        let c = self.0;
        check_range("recency weight", c.recency_weight, 0.0, 1.0)?;
        check_range("decay per hour", c.decay_per_hour, 0.0, f64::MAX)?;
        check_range("minimum relevance", c.min_relevance, 0.0, 1.0)?;
        check_range("relevance floor", c.relevance_floor, 0.0, 1.0)?;
        check_range("minimum condition match", c.min_condition_match, 0.0, 1.0)?;
        check_range("personal boost", c.personal_boost, 0.0, 1.0)?;
        if let Some(lambda) = c.mmr_lambda {
            check_range("MMR lambda", lambda, 0.0, 1.0)?;
        }
        match c.fusion {
            Fusion::Rrf { k } if !(k.is_finite() && k > 0.0) => {
                return Err(Error::invalid("RRF k", format!("{k} must be above 0")));
            }
            Fusion::Linear { sparse, dense } => {
                check_range("sparse weight", sparse, 0.0, 1.0)?;
                check_range("dense weight", dense, 0.0, 1.0)?;
            }
            Fusion::Rrf { .. } => {}
        }
        if !(1..=10).contains(&c.pool_multiplier) {
            return Err(Error::invalid("pool multiplier", "must be within 1..=10"));
        }
        if c.limit == 0 {
            return Err(Error::invalid("limit", "must be at least 1"));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_design() {
        let c = RecallConfig::builder().build().unwrap();
        assert_eq!(c.mmr_lambda, Some(0.7));
        assert_eq!(c.pool_multiplier, 3);
        assert_eq!(c.on_error.fingerprint, 0.40);
    }

    #[test]
    fn the_builder_refuses_out_of_range_settings() {
        let b = RecallConfig::builder;
        assert!(b().mmr(Some(1.5), Similarity::Auto).build().is_err());
        assert!(b().fusion(Fusion::Rrf { k: 0.0 }).build().is_err());
        assert!(b().pool_multiplier(11).build().is_err());
        assert!(b().limit(0).build().is_err());
        assert!(b().min_condition_match(1.2).build().is_err());
        assert!(b().recency(-0.1, 0.0).build().is_err());
        let ok = b()
            .fusion(Fusion::Rrf { k: 10.0 })
            .budget(50)
            .build()
            .unwrap();
        assert_eq!((ok.fusion, ok.budget), (Fusion::Rrf { k: 10.0 }, 50));
    }
}
