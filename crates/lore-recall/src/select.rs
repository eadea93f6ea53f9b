//! Selection after fusion: filters that fail closed, MMR diversity, and guards.
//!
//! Filters run before MMR (seed 002): an excluded memory must not act as a diversity anchor and
//! push out a visible one that happens to resemble it. Every filter fails closed: a candidate the
//! pipeline knows nothing about is dropped, and a filter that errors drops everything, because an
//! empty context is a smaller harm than a sensitive memory in a prompt.

use crate::FastMap;
use std::collections::HashSet;

use super::cosine;
use super::{DropReason, Eligibility, Entry, Similarity, text};
use lore_core::error::Result;

/// A pluggable filter (seed 002's `MemoryFilterStrategy`): keeps or drops one entry.
pub trait MemoryFilter: Send + Sync {
    /// A short name for explanations.
    fn name(&self) -> &str;

    /// Whether `entry` may reach a prompt.
    ///
    /// # Errors
    /// Any failure; the pipeline then drops every candidate (fails closed).
    fn keep(&self, entry: &Entry) -> Result<bool>;
}

/// Seed 002's non-inferable filter: keeps only memories tagged `non-inferable`, i.e. what an agent
/// cannot find out by reading the code or environment itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct NonInferableOnly;

/// The tag that marks a memory as non-inferable.
pub const NON_INFERABLE_TAG: &str = "non-inferable";

impl MemoryFilter for NonInferableOnly {
    fn name(&self) -> &str {
        "non-inferable"
    }

    fn keep(&self, entry: &Entry) -> Result<bool> {
        Ok(entry.tags.iter().any(|t| t == NON_INFERABLE_TAG))
    }
}

/// Why `entry` (or a missing one) must not be shown, before any configurable filter.
pub fn eligibility_drop(entry: Option<&Entry>) -> Option<DropReason> {
    match entry.map(|e| &e.eligibility) {
        None => Some(DropReason::Unknown),
        Some(Eligibility::Eligible) => None,
        Some(Eligibility::Sensitive) => Some(DropReason::Sensitive),
        Some(Eligibility::Ineligible(why)) => Some(DropReason::Ineligible(why.clone())),
    }
}

/// The first configured filter that drops `entry`, or the failure that drops everything.
///
/// # Errors
/// The filter's own failure, tagged with its name.
pub fn filter_drop(
    entry: &Entry,
    filters: &[&dyn MemoryFilter],
) -> std::result::Result<Option<DropReason>, DropReason> {
    for f in filters {
        match f.keep(entry) {
            Ok(true) => {}
            Ok(false) => return Ok(Some(DropReason::Filtered(f.name().to_owned()))),
            Err(err) => return Err(DropReason::FilterFailed(format!("{}: {err}", f.name()))),
        }
    }
    Ok(None)
}

/// Raises `max_sim[i]` to the cosine of `vectors[i]` with `to`, for each `i` in `items`.
fn raise_to_cosines(to: &[f32], items: &[usize], vectors: &[&[f32]], max_sim: &mut [f64]) {
    for &i in items {
        max_sim[i] = max_sim[i].max(cosine(vectors[i], to));
    }
}

/// Maximal Marginal Relevance: reorders `items` (entries with their scores, best first) by
/// `λ × score - (1 - λ) × max similarity to what is already chosen`. Returns positions into
/// `items` in the new order; ties keep the earlier item.
pub fn mmr(items: &[(&Entry, f64)], lambda: f64, similarity: Similarity) -> Vec<usize> {
    Mmr::new(items, Some(lambda), similarity).collect()
}

/// [`mmr`]'s order one pick at a time, so a caller that needs only the first few picks (the
/// guard stage stops choosing at the limit) does not pay to order the rest: each pick costs a
/// similarity with every item still left.
pub struct Mmr<'s, 'e, 'a> {
    items: &'s [(&'e Entry<'a>, f64)],
    /// `None`: the given order.
    lambda: Option<f64>,
    /// Cosine when every item has a vector; otherwise word-bigram Jaccard.
    vectors: Option<Vec<&'e [f32]>>,
    bigrams: Vec<HashSet<(String, String)>>,
    max_sim: Vec<f64>,
    left: Vec<usize>,
}

impl<'s, 'e, 'a> Mmr<'s, 'e, 'a> {
    /// Picks from `items` by MMR with `lambda`, or in their order when `lambda` is `None`.
    pub fn new(
        items: &'s [(&'e Entry<'a>, f64)],
        lambda: Option<f64>,
        similarity: Similarity,
    ) -> Self {
        let vectors: Option<Vec<&'e [f32]>> = match similarity {
            Similarity::Auto => items.iter().map(|(e, _)| e.vector.as_deref()).collect(),
            Similarity::Jaccard => None,
        };
        // Bigram sets cost allocations per item, so they are made only when they are used.
        let bigrams = if vectors.is_none() && lambda.is_some() {
            items.iter().map(|(e, _)| text::bigrams(&e.text)).collect()
        } else {
            Vec::new()
        };
        Self {
            items,
            lambda,
            vectors,
            bigrams,
            max_sim: vec![0.0; items.len()],
            left: (0..items.len()).collect(),
        }
    }

    /// From now on, yields what is left in the given order without comparing anything: for a
    /// caller whose remaining decisions no longer depend on the order.
    pub fn stop_ranking(&mut self) {
        self.lambda = None;
    }
}

impl Iterator for Mmr<'_, '_, '_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.left.is_empty() {
            return None;
        }
        let Some(lambda) = self.lambda else {
            return Some(self.left.remove(0));
        };
        let (items, max_sim) = (self.items, &self.max_sim);
        let value = |i: usize| lambda * items[i].1 - (1.0 - lambda) * max_sim[i];
        let (pos, &best) = self
            .left
            .iter()
            .enumerate()
            .reduce(|a, b| if value(*b.1) > value(*a.1) { b } else { a })
            .expect("left is not empty");
        self.left.remove(pos);
        match &self.vectors {
            Some(vectors) => {
                raise_to_cosines(vectors[best], &self.left, vectors, &mut self.max_sim)
            }
            None => {
                for &i in &self.left {
                    let sim = text::jaccard(&self.bigrams[i], &self.bigrams[best]);
                    self.max_sim[i] = self.max_sim[i].max(sim);
                }
            }
        }
        Some(best)
    }
}

/// Per-tag and per-session caps and conflict resolution over entries in rank order.
#[derive(Debug, Default)]
pub struct Guards {
    max_per_tag: Option<usize>,
    max_per_session: Option<usize>,
    per_tag: FastMap<String, usize>,
    per_session: FastMap<String, usize>,
}

impl Guards {
    /// Guards with the given caps (`None`: no cap).
    pub fn new(max_per_tag: Option<usize>, max_per_session: Option<usize>) -> Self {
        Self {
            max_per_tag,
            max_per_session,
            ..Self::default()
        }
    }

    /// Admits `entry` (counting it) or says why not.
    pub fn admit(&mut self, entry: &Entry) -> Option<DropReason> {
        if let Some(cap) = self.max_per_tag
            && let Some(tag) = entry
                .tags
                .iter()
                .find(|t| self.per_tag.get(*t) >= Some(&cap))
        {
            return Some(DropReason::TagCap(tag.clone()));
        }
        if let (Some(cap), Some(session)) = (self.max_per_session, &entry.session)
            && self.per_session.get(session) >= Some(&cap)
        {
            return Some(DropReason::SessionCap(session.clone()));
        }
        for tag in entry.tags.iter() {
            *self.per_tag.entry(tag.clone()).or_default() += 1;
        }
        if let Some(session) = &entry.session {
            *self.per_session.entry(session.clone()).or_default() += 1;
        }
        None
    }
}

/// Which of two conflicting entries to keep: higher measured utility (an unmeasured entry
/// counts as 0), then higher confidence, then newer. `Some((true, by))` when `a` is better,
/// `Some((false, by))` when `b` is, `None` when nothing tells them apart; `by` names the
/// deciding criterion.
pub fn better(a: &Entry<'_>, b: &Entry<'_>) -> Option<(bool, &'static str)> {
    let utility = |e: &Entry<'_>| e.utility.unwrap_or(0.0);
    let criteria = [
        (utility(a).total_cmp(&utility(b)), "utility"),
        (a.confidence.total_cmp(&b.confidence), "confidence"),
        (b.age_hours.total_cmp(&a.age_hours), "recency"),
    ];
    criteria
        .into_iter()
        .find(|(order, _)| order.is_ne())
        .map(|(order, by)| (order.is_gt(), by))
}

/// The rival that should be kept instead of `entry`: the best of its conflicting entries in
/// `present` that `open` still accepts (not yet kept or dropped), if it beats `entry`; with the
/// criterion that decided. An entry ties with none of them goes first: rank breaks the tie.
pub fn conflict_winner<'e, 'a>(
    entry: &Entry<'_>,
    present: &FastMap<&str, &'e Entry<'a>>,
    open: impl Fn(&str) -> bool,
) -> Option<(&'e Entry<'a>, &'static str)> {
    let mut best: Option<(&'e Entry<'a>, &'static str)> = None;
    for rival in entry
        .conflicts_with
        .iter()
        .filter(|id| open(id.as_str()))
        .filter_map(|id| present.get(id.as_str()).copied())
    {
        let current: &Entry<'_> = best.map_or(entry, |(b, _)| b);
        if let Some((false, by)) = better(current, rival) {
            best = Some((rival, by));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::entry;

    #[test]
    fn mmr_promotes_a_different_item_over_a_near_duplicate() {
        let a = entry("a", "check the invoice total before sending");
        let b = entry("b", "check the invoice total before sending it");
        let c = entry("c", "ask the customer for the order number");
        let items = [(&a, 1.0), (&b, 0.95), (&c, 0.7)];
        assert_eq!(mmr(&items, 0.7, Similarity::Jaccard), [0, 2, 1]);
        assert_eq!(
            mmr(&items, 1.0, Similarity::Jaccard),
            [0, 1, 2],
            "λ = 1 is relevance"
        );
    }

    #[test]
    fn mmr_uses_cosine_when_vectors_exist() {
        let mut a = entry("a", "alpha");
        let mut b = entry("b", "beta");
        let mut c = entry("c", "gamma");
        a.vector = Some(vec![1.0, 0.0].into());
        b.vector = Some(vec![1.0, 0.0].into());
        c.vector = Some(vec![0.0, 1.0].into());
        let items = [(&a, 1.0), (&b, 0.9), (&c, 0.8)];
        assert_eq!(mmr(&items, 0.7, Similarity::Auto), [0, 2, 1]);
        assert_eq!(
            mmr(&items, 0.7, Similarity::Jaccard),
            [0, 1, 2],
            "no shared words"
        );
    }

    /// Deterministic floats in [-0.5, 0.5) from a linear congruential generator.
    fn uniform(mut z: u32) -> impl FnMut() -> f32 {
        move || {
            z = z.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (z >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        }
    }

    #[test]
    fn picks_stopped_early_are_mmrs_first_picks_then_the_rest_in_order() {
        let mut next = uniform(7u32);
        let entries: Vec<Entry> = (0..25)
            .map(|i| {
                let mut e = entry(&format!("e{i}"), "text");
                e.vector = Some((0..16).map(|_| next()).collect::<Vec<f32>>().into());
                e
            })
            .collect();
        let items: Vec<(&Entry, f64)> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e, 1.0 - i as f64 / 50.0))
            .collect();
        let full = mmr(&items, 0.5, Similarity::Auto);
        assert_ne!(full, (0..25).collect::<Vec<_>>(), "MMR reorders these");
        let mut lazy = Mmr::new(&items, Some(0.5), Similarity::Auto);
        let first: Vec<usize> = lazy.by_ref().take(6).collect();
        assert_eq!(first, full[..6]);
        lazy.stop_ranking();
        let mut rest: Vec<usize> = lazy.collect();
        assert!(rest.is_sorted(), "{rest:?}");
        rest.extend(&first);
        rest.sort_unstable();
        assert_eq!(rest, (0..25).collect::<Vec<_>>(), "every item once");
        let unranked: Vec<usize> = Mmr::new(&items, None, Similarity::Auto).collect();
        assert_eq!(unranked, (0..25).collect::<Vec<_>>());
    }

    #[test]
    fn cosine_sums_in_lanes_to_the_plain_dot_product() {
        let mut next = uniform(1u32);
        let vectors: Vec<Vec<f32>> = [37, 37, 256, 256, 5, 8]
            .iter()
            .map(|&n| (0..n).map(|_| next()).collect())
            .collect();
        for pair in [(0, 1), (2, 3), (4, 4), (5, 5)] {
            let (a, b) = (&vectors[pair.0], &vectors[pair.1]);
            let plain: f64 = a
                .iter()
                .zip(b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            assert!((cosine(a, b) - plain).abs() < 1e-5, "{pair:?}");
        }
        assert_eq!(
            cosine(&vectors[0], &vectors[2]),
            0.0,
            "another length compares as 0"
        );
    }

    #[test]
    fn guards_cap_tags_and_sessions() {
        let mut guards = Guards::new(Some(1), Some(2));
        let mut e = |id: &str, tag: &str, session: &str| {
            let mut e = entry(id, id);
            e.tags = vec![tag.to_owned()].into();
            e.session = Some(session.to_owned());
            guards.admit(&e)
        };
        assert_eq!(e("1", "sql", "s1"), None);
        assert_eq!(e("2", "sql", "s1"), Some(DropReason::TagCap("sql".into())));
        assert_eq!(e("3", "http", "s1"), None);
        assert_eq!(
            e("4", "dns", "s1"),
            Some(DropReason::SessionCap("s1".into()))
        );
        assert_eq!(e("5", "dns", "s2"), None);
    }

    #[test]
    fn conflicts_go_to_utility_then_confidence_then_recency() {
        let mut a = entry("a", "always retry");
        let mut b = entry("b", "never retry");
        a.conflicts_with = vec!["b".into()].into();
        b.conflicts_with = vec!["a".into()].into();
        let open = |_: &str| true;
        a.confidence = 0.9;
        b.confidence = 0.6;
        b.utility = Some(0.3);
        let present: FastMap<&str, &Entry> = [("a", &a), ("b", &b)].into_iter().collect();
        assert_eq!(
            conflict_winner(&a, &present, open).unwrap(),
            (&b, "utility")
        );
        assert!(conflict_winner(&b, &present, open).is_none());
        assert!(
            conflict_winner(&a, &present, |id| id != "b").is_none(),
            "a rival already settled is no rival"
        );
        b.utility = None;
        let present: FastMap<&str, &Entry> = [("a", &a), ("b", &b)].into_iter().collect();
        assert_eq!(
            conflict_winner(&b, &present, open).unwrap(),
            (&a, "confidence")
        );
        b.confidence = 0.9;
        b.age_hours = 1.0;
        a.age_hours = 5.0;
        let present: FastMap<&str, &Entry> = [("a", &a), ("b", &b)].into_iter().collect();
        assert_eq!(
            conflict_winner(&a, &present, open).unwrap(),
            (&b, "recency")
        );
        a.age_hours = 1.0;
        let present: FastMap<&str, &Entry> = [("a", &a), ("b", &b)].into_iter().collect();
        assert!(
            conflict_winner(&a, &present, open).is_none(),
            "all equal: the higher-ranked one stays"
        );
    }

    #[test]
    fn filters_fail_closed() {
        struct Broken;
        impl MemoryFilter for Broken {
            fn name(&self) -> &str {
                "broken"
            }
            fn keep(&self, _: &Entry) -> Result<bool> {
                Err(crate::Error::Unsupported("detector offline".into()))
            }
        }
        let e = entry("a", "text");
        assert!(matches!(
            filter_drop(&e, &[&Broken]),
            Err(DropReason::FilterFailed(_))
        ));
        assert_eq!(
            filter_drop(&e, &[&NonInferableOnly]),
            Ok(Some(DropReason::Filtered("non-inferable".into())))
        );
        assert_eq!(eligibility_drop(None), Some(DropReason::Unknown));
    }
}
