//! Greedy packing into a token budget, with progressive disclosure.
//!
//! A budget means tokens as the model counts them, so packing counts with a [`Tokenizer`] (the
//! `lore-providers` crate provides tiktoken's cl100k and o200k). Items come best first, each with
//! its tiers from the one-line summary to the fullest form (seed 002's discovery, activation and
//! execution tiers). The top items get the fullest tier that still fits, the rest their summary;
//! an item that does not fit is skipped and smaller ones after it may still go in (greedy).
//!
//! BPE counts are not additive: two texts joined can count differently from the sum of their
//! counts. So the packer re-counts the joined text and drops items from the tail until it fits;
//! "never over budget" is a property of the result, not of the arithmetic.

use serde::Serialize;

use lore_core::ports::tokenize::Tokenizer;

use super::DropReason;

/// What packing placed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackedItem {
    /// The item's ID.
    pub id: String,
    /// The tier used: 0 is the summary, higher is fuller.
    pub tier: usize,
    /// The tokens of its rendered text.
    pub tokens: usize,
}

/// The packed text and what went into it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Packed {
    /// The items' rendered tiers joined by newlines.
    pub text: String,
    /// Tokens of `text`, counted whole.
    pub tokens: usize,
    /// The items placed, in order.
    pub items: Vec<PackedItem>,
    /// Items left out, with why.
    pub dropped: Vec<(String, DropReason)>,
}

/// An item to pack: its ID and its tiers, summary first; an item with no tier is skipped.
pub struct ToPack<'a> {
    /// The item's ID.
    pub id: &'a str,
    /// Rendered tiers, from the summary to the fullest.
    pub tiers: &'a [String],
}

/// Packs `items` (best first) into `budget` tokens; the first `full_tiers` placed items may use
/// their fuller tiers.
pub fn pack(items: &[ToPack<'_>], budget: usize, full_tiers: usize, tok: &dyn Tokenizer) -> Packed {
    let mut out = Packed::default();
    let mut parts: Vec<&str> = Vec::new();
    let mut used = 0;
    for item in items {
        let sep = if parts.is_empty() { 0 } else { tok.count("\n") };
        let allowed = if out.items.len() < full_tiers {
            item.tiers.len()
        } else {
            1
        };
        let fit = item.tiers[..allowed.min(item.tiers.len())]
            .iter()
            .enumerate()
            .rev()
            .map(|(tier, text)| (tier, text, tok.count(text)))
            .find(|(_, _, n)| used + sep + n <= budget);
        match fit {
            Some((tier, text, tokens)) => {
                used += sep + tokens;
                parts.push(text);
                out.items.push(PackedItem {
                    id: item.id.to_owned(),
                    tier,
                    tokens,
                });
            }
            None => out
                .dropped
                .push((item.id.to_owned(), DropReason::OverBudget)),
        }
    }
    shrink_to_budget(&mut out, &mut parts, budget, tok);
    out
}

/// Drops items from the tail until the joined text counts within `budget`.
fn shrink_to_budget(out: &mut Packed, parts: &mut Vec<&str>, budget: usize, tok: &dyn Tokenizer) {
    loop {
        let text = parts.join("\n");
        let tokens = tok.count(&text);
        if tokens <= budget || parts.is_empty() {
            out.text = text;
            out.tokens = tokens;
            return;
        }
        parts.pop();
        if let Some(item) = out.items.pop() {
            out.dropped.push((item.id, DropReason::OverBudget));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lore_core::ports::tokenize::ApproxTokenizer;
    use proptest::prelude::*;

    /// One token per word: exact arithmetic for the unit tests.
    pub(crate) struct Words;
    impl Tokenizer for Words {
        fn name(&self) -> &str {
            "words"
        }
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    fn tiers(summary: &str, full: &str) -> Vec<String> {
        vec![summary.to_owned(), full.to_owned()]
    }

    #[test]
    fn top_items_get_full_tiers_the_rest_summaries() {
        let a = tiers("a1", "a1 a2 a3");
        let b = tiers("b1", "b1 b2 b3");
        let c = tiers("c1", "c1 c2 c3");
        let items = [
            ToPack { id: "a", tiers: &a },
            ToPack { id: "b", tiers: &b },
            ToPack { id: "c", tiers: &c },
        ];
        let packed = pack(&items, 100, 1, &Words);
        let placed: Vec<_> = packed
            .items
            .iter()
            .map(|i| (i.id.as_str(), i.tier))
            .collect();
        assert_eq!(placed, [("a", 1), ("b", 0), ("c", 0)]);
        assert_eq!(packed.text, "a1 a2 a3\nb1\nc1");
    }

    #[test]
    fn a_tight_budget_falls_back_to_summaries_and_skips_what_does_not_fit() {
        let a = tiers("a1 a1", "a1 a2 a3 a4");
        let big = vec!["b b b b".to_owned()];
        let c = tiers("c1", "c1 c2");
        let items = [
            ToPack { id: "a", tiers: &a },
            ToPack {
                id: "b",
                tiers: &big,
            },
            ToPack { id: "c", tiers: &c },
        ];
        let packed = pack(&items, 3, 3, &Words);
        let placed: Vec<_> = packed
            .items
            .iter()
            .map(|i| (i.id.as_str(), i.tier))
            .collect();
        assert_eq!(placed, [("a", 0), ("c", 0)]);
        assert_eq!(packed.dropped, [("b".to_owned(), DropReason::OverBudget)]);
        assert_eq!(packed.tokens, 3);
    }

    #[test]
    fn the_approximation_overcounts_plain_english() {
        let text = "Always check the invoice total against the order before sending it.";
        assert!(ApproxTokenizer.count(text) >= 14, "cl100k counts 14");
        assert_eq!(ApproxTokenizer.count(""), 0);
    }

    proptest! {
        #[test]
        fn packing_never_exceeds_the_budget(
            texts in prop::collection::vec(("[a-z ]{0,40}", "[a-z \n]{0,120}"), 0..12),
            budget in 0usize..80,
            full in 0usize..4,
        ) {
            let tiers: Vec<Vec<String>> = texts.into_iter().map(|(s, f)| vec![s, f]).collect();
            let items: Vec<ToPack<'_>> =
                tiers.iter().map(|t| ToPack { id: "x", tiers: t }).collect();
            let packed = pack(&items, budget, full, &ApproxTokenizer);
            prop_assert!(ApproxTokenizer.count(&packed.text) <= budget);
            prop_assert_eq!(packed.items.len() + packed.dropped.len(), items.len());
        }
    }
}
