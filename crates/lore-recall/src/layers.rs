//! Layered context (seed 004): layers stacked in a fixed order, each held to its own token
//! budget by cutting its tail, and the whole held to a total.
//!
//! A layer's tail goes first because layers put what matters most first (the best-ranked rule,
//! the opening of a document). Text is cut at the last line that fits, else at the last word,
//! and a marker says that it was cut, so a reader (or a model) knows the layer is incomplete.
//! When the layers together still exceed the total, they are cut from the last *expendable*
//! layer backwards; a layer marked as not expendable (a skill's own instructions) is cut only
//! when it alone exceeds what is left.

use serde::Serialize;

use super::Tokenizer;

/// Each layer's budget when none is given (seed 004: about 2k tokens).
pub const DEFAULT_LAYER_BUDGET: usize = 2_000;
/// The whole context's budget when none is given (seed 004: about 12k tokens).
pub const DEFAULT_TOTAL_BUDGET: usize = 12_000;
/// What a cut layer ends with.
pub const TRUNCATED: &str = "[… cut to fit its token budget]";

/// Budgets for a layered context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LayerBudgets {
    /// Tokens each layer may hold.
    pub per_layer: usize,
    /// Tokens all layers and their separators may hold together.
    pub total: usize,
}

impl Default for LayerBudgets {
    fn default() -> Self {
        Self {
            per_layer: DEFAULT_LAYER_BUDGET,
            total: DEFAULT_TOTAL_BUDGET,
        }
    }
}

/// One layer to stack.
#[derive(Clone, Debug)]
pub struct Layer {
    /// Its name.
    pub name: &'static str,
    /// Its text.
    pub text: String,
    /// Whether the total may be enforced by cutting it before the layers that are not.
    pub expendable: bool,
}

/// A layer as stacked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stacked {
    /// Its name.
    pub name: &'static str,
    /// Its text after any cut.
    pub text: String,
    /// Its tokens after any cut.
    pub tokens: usize,
    /// Whether it was cut.
    pub truncated: bool,
}

/// Cuts `text` tail-first to at most `budget` tokens: whole lines while they fit, then words
/// of the next line, then the marker. A text that fits comes back unchanged.
pub fn truncate_tail(text: &str, budget: usize, tokenizer: &dyn Tokenizer) -> (String, bool) {
    if tokenizer.count(text) <= budget {
        return (text.to_owned(), false);
    }
    let room = budget.saturating_sub(tokenizer.count(TRUNCATED) + 1);
    let fits = |candidate: &str| tokenizer.count(candidate) <= room;
    let mut kept = String::new();
    for line in text.lines() {
        let next = if kept.is_empty() {
            line.to_owned()
        } else {
            format!("{kept}\n{line}")
        };
        if fits(&next) {
            kept = next;
            continue;
        }
        // The first line that does not fit: keep as many of its words as do.
        let mut partial = kept.clone();
        for word in line.split_whitespace() {
            let sep = if partial.is_empty() || partial.ends_with('\n') {
                ""
            } else if partial == kept {
                "\n"
            } else {
                " "
            };
            let next = format!("{partial}{sep}{word}");
            if !fits(&next) {
                break;
            }
            partial = next;
        }
        kept = partial;
        break;
    }
    let out = if kept.is_empty() {
        TRUNCATED.to_owned()
    } else {
        format!("{kept}\n{TRUNCATED}")
    };
    if tokenizer.count(&out) <= budget {
        (out, true)
    } else {
        // A budget smaller than the marker itself holds nothing.
        (String::new(), true)
    }
}

/// Stacks `layers` in order, each within `budgets.per_layer`, all of them (with one
/// `separator` between two layers) within `budgets.total`. Empty layers are left out.
pub fn stack(
    layers: Vec<Layer>,
    budgets: LayerBudgets,
    separator: &str,
    tokenizer: &dyn Tokenizer,
) -> Vec<Stacked> {
    let mut out: Vec<(Stacked, bool)> = layers
        .into_iter()
        .filter(|l| !l.text.trim().is_empty())
        .map(|l| {
            let (text, truncated) = truncate_tail(&l.text, budgets.per_layer, tokenizer);
            let tokens = tokenizer.count(&text);
            (
                Stacked {
                    name: l.name,
                    text,
                    tokens,
                    truncated,
                },
                l.expendable,
            )
        })
        .collect();
    let sep = tokenizer.count(separator);
    let total = |layers: &[(Stacked, bool)]| -> usize {
        let n = layers.iter().filter(|(s, _)| !s.text.is_empty()).count();
        layers.iter().map(|(s, _)| s.tokens).sum::<usize>() + sep * n.saturating_sub(1)
    };
    // Expendable layers from the last backwards, then the others from the last backwards.
    let order: Vec<usize> = (0..out.len())
        .rev()
        .filter(|&i| out[i].1)
        .chain((0..out.len()).rev().filter(|&i| !out[i].1))
        .collect();
    for i in order {
        let over = total(&out).saturating_sub(budgets.total);
        if over == 0 {
            break;
        }
        let layer = &mut out[i].0;
        let keep = layer.tokens.saturating_sub(over);
        let (text, cut) = truncate_tail(&layer.text, keep, tokenizer);
        layer.tokens = tokenizer.count(&text);
        layer.text = text;
        layer.truncated |= cut;
    }
    out.into_iter()
        .map(|(s, _)| s)
        .filter(|s| !s.text.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApproxTokenizer;
    use proptest::prelude::*;

    use crate::pack::tests::Words;

    fn layer(name: &'static str, text: &str, expendable: bool) -> Layer {
        Layer {
            name,
            text: text.to_owned(),
            expendable,
        }
    }

    #[test]
    fn a_text_that_fits_is_untouched() {
        let (out, cut) = truncate_tail("one two\nthree", 3, &Words);
        assert_eq!((out.as_str(), cut), ("one two\nthree", false));
    }

    #[test]
    fn the_tail_goes_first_whole_lines_then_words() {
        let marker = Words.count(TRUNCATED);
        let text = "first line here\nsecond line here\nthird line with many more words in it";
        // Room for the first line, two words of the second, the marker and one to spare.
        let budget = 3 + 2 + marker + 1;
        let (out, cut) = truncate_tail(text, budget, &Words);
        assert!(cut);
        assert_eq!(out, format!("first line here\nsecond line\n{TRUNCATED}"));
        assert!(Words.count(&out) <= budget);
    }

    #[test]
    fn a_budget_below_the_marker_leaves_nothing() {
        let (out, cut) = truncate_tail("a b c d e f g h", 2, &Words);
        assert_eq!((out.as_str(), cut), ("", true));
    }

    #[test]
    fn each_layer_keeps_its_own_budget() {
        let budgets = LayerBudgets {
            per_layer: 10,
            total: 1_000,
        };
        let long = "w ".repeat(50);
        let stacked = stack(
            vec![layer("a", &long, true), layer("b", "short text", true)],
            budgets,
            "---",
            &Words,
        );
        assert_eq!(stacked[0].name, "a");
        assert!(
            stacked[0].truncated && stacked[0].tokens <= 10,
            "{stacked:?}"
        );
        assert_eq!(stacked[1].text, "short text");
        assert!(!stacked[1].truncated);
    }

    #[test]
    fn the_total_cuts_expendable_layers_from_the_last_backwards() {
        let budgets = LayerBudgets {
            per_layer: 100,
            total: 50,
        };
        let twenty = "w ".repeat(20);
        let stacked = stack(
            vec![
                layer("workspace", &twenty, true),
                layer("rules", &twenty, true),
                layer("skill", &twenty, false),
            ],
            budgets,
            "---",
            &Words,
        );
        let names: Vec<_> = stacked.iter().map(|s| (s.name, s.truncated)).collect();
        // 60 words + 2 separators = 62 > 50: the rules layer (last expendable) gives 12.
        assert_eq!(
            names,
            [("workspace", false), ("rules", true), ("skill", false)]
        );
        let used: usize = stacked.iter().map(|s| s.tokens).sum::<usize>() + 2;
        assert!(used <= 50, "{stacked:?}");
    }

    #[test]
    fn empty_layers_are_left_out() {
        let stacked = stack(
            vec![layer("a", "  ", true), layer("b", "x", false)],
            LayerBudgets::default(),
            "---",
            &Words,
        );
        assert_eq!(stacked.len(), 1);
    }

    proptest! {
        #[test]
        fn stacking_never_exceeds_a_budget(
            texts in prop::collection::vec(("[a-z ]{0,300}", any::<bool>()), 1..6),
            per_layer in 1usize..80,
            total in 1usize..200,
        ) {
            let layers = texts
                .iter()
                .map(|(t, e)| layer("l", t, *e))
                .collect();
            let budgets = LayerBudgets { per_layer, total };
            let stacked = stack(layers, budgets, "\n---\n", &ApproxTokenizer);
            let sep = ApproxTokenizer.count("\n---\n");
            for s in &stacked {
                prop_assert!(s.tokens <= per_layer);
                prop_assert_eq!(s.tokens, ApproxTokenizer.count(&s.text));
            }
            let used: usize = stacked.iter().map(|s| s.tokens).sum::<usize>()
                + sep * stacked.len().saturating_sub(1);
            prop_assert!(used <= total, "{} > {}", used, total);
        }
    }
}
