//! What a call cost: token usage × a price table that users extend.
//!
//! Providers report tokens, not dollars, and prices change more often than Lore is released, so
//! the built-in table holds a few list prices and a project adds or overrides models in
//! `.lore/prices.json`. A model the table does not know has no cost (`None`), never a made-up
//! zero that would make a run look free.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Usage;
use crate::error::{Error, Result};

/// The price of one model, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_mtok: f64,
    /// Per million answer tokens.
    pub output_per_mtok: f64,
}

/// Prices by model name.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceTable {
    prices: BTreeMap<String, Price>,
}

/// List prices at the time of writing; `.lore/prices.json` overrides them.
const BUILTIN: &[(&str, f64, f64)] = &[
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("claude-haiku-4-5", 1.00, 5.00),
    ("claude-sonnet-4-5", 3.00, 15.00),
    ("claude-opus-4-1", 15.00, 75.00),
];

impl Default for PriceTable {
    fn default() -> Self {
        let prices = BUILTIN
            .iter()
            .map(|&(model, input, output)| {
                (
                    model.to_owned(),
                    Price {
                        input_per_mtok: input,
                        output_per_mtok: output,
                    },
                )
            })
            .collect();
        Self { prices }
    }
}

impl PriceTable {
    /// The built-in table extended (and overridden) by a JSON object of
    /// `{"model": {"input_per_mtok": X, "output_per_mtok": Y}}`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for malformed JSON, an unknown field, or a negative or non-finite price.
    pub fn with_overrides(mut self, json: &str) -> Result<Self> {
        let overrides: BTreeMap<String, Price> =
            serde_json::from_str(json).map_err(|e| Error::invalid("prices", e))?;
        for (model, price) in overrides {
            for value in [price.input_per_mtok, price.output_per_mtok] {
                if !value.is_finite() || value < 0.0 {
                    return Err(Error::invalid(
                        "prices",
                        format!("{model}: {value} is not a finite, non-negative price"),
                    ));
                }
            }
            self.prices.insert(model, price);
        }
        Ok(self)
    }

    /// The price of `model`: an exact match, else without a `provider/` prefix, else the longest
    /// known name it starts with (so `claude-haiku-4-5-20251001` finds `claude-haiku-4-5`).
    pub fn price(&self, model: &str) -> Option<Price> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        [model, bare]
            .into_iter()
            .find_map(|name| self.prices.get(name).copied())
            .or_else(|| {
                self.prices
                    .iter()
                    .filter(|(known, _)| bare.starts_with(known.as_str()))
                    .max_by_key(|(known, _)| known.len())
                    .map(|(_, price)| *price)
            })
    }

    /// What `usage` of `model` cost in US dollars; `None` for an unknown model.
    pub fn cost(&self, model: &str, usage: Usage) -> Option<f64> {
        self.price(model).map(|p| {
            (usage.input_tokens as f64 * p.input_per_mtok
                + usage.output_tokens as f64 * p.output_per_mtok)
                / 1_000_000.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
        }
    }

    #[test]
    fn cost_is_usage_times_price_and_unknown_models_have_none() {
        let table = PriceTable::default();
        let cost = table
            .cost("gpt-4o-mini", usage(1_000_000, 500_000))
            .unwrap();
        assert!((cost - 0.45).abs() < 1e-9, "{cost}");
        assert_eq!(table.cost("mystery-model", usage(10, 10)), None);
    }

    #[test]
    fn provider_prefixes_and_dated_names_find_their_price() {
        let table = PriceTable::default();
        let haiku = table.price("claude-haiku-4-5").unwrap();
        assert_eq!(
            table.price("anthropic/claude-haiku-4-5-20251001"),
            Some(haiku)
        );
        // The longest known prefix wins: gpt-4o-mini is not priced as gpt-4o.
        assert_eq!(
            table.price("gpt-4o-mini-2024").unwrap().input_per_mtok,
            0.15
        );
    }

    #[test]
    fn overrides_add_and_replace_and_bad_ones_are_refused() {
        let table = PriceTable::default()
            .with_overrides(
                r#"{"local-llama": {"input_per_mtok": 0, "output_per_mtok": 0},
                "gpt-4o": {"input_per_mtok": 1, "output_per_mtok": 2}}"#,
            )
            .unwrap();
        assert_eq!(table.cost("local-llama", usage(5, 5)), Some(0.0));
        assert_eq!(table.price("gpt-4o").unwrap().output_per_mtok, 2.0);
        for bad in [
            "not json",
            r#"{"m": {"input_per_mtok": -1, "output_per_mtok": 0}}"#,
            r#"{"m": {"input": 1}}"#,
        ] {
            let err = PriceTable::default().with_overrides(bad).unwrap_err();
            assert!(err.to_string().contains("invalid prices"), "{bad}: {err}");
        }
    }
}
