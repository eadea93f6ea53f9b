//! Real token counts for Lore's budgets: tiktoken's `cl100k_base` and `o200k_base`.
//!
//! A budget of 2,000 tokens should mean what an OpenAI or Anthropic user expects, so packing
//! counts with the encodings those models use (`o200k_base` for GPT-4o and later, `cl100k_base`
//! for GPT-4 and a close stand-in for Claude) rather than a characters-per-token guess.
//!
//! Why a crate of its own: `tiktoken-rs` brings a regex engine (with `fancy-regex`) and embeds
//! its BPE tables, several megabytes, with `include_str!`. The core defines the [`Tokenizer`]
//! port and a dependency-free approximation; binaries that want exact counts depend on this crate,
//! and the core, its tests and other adapters build without any of it. The tables are compiled
//! in, so nothing is downloaded at build or run time; loading one parses it once (about 0.15 s
//! for cl100k, 0.25 s for o200k in a release build), so build one tokenizer per process and
//! share it.

use std::sync::Arc;

use lore_core::ports::tokenize::Tokenizer;
use lore_core::{Error, Result};
use tiktoken_rs::CoreBPE;

/// A tiktoken encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// `cl100k_base` (GPT-4, GPT-3.5; a close stand-in for Claude's tokenizer).
    #[default]
    Cl100k,
    /// `o200k_base` (GPT-4o and later).
    O200k,
}

impl Encoding {
    /// The encoding's tiktoken name.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Cl100k => "cl100k_base",
            Encoding::O200k => "o200k_base",
        }
    }

    /// Parses `cl100k`, `cl100k_base`, `o200k` or `o200k_base`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the accepted encodings.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "cl100k" | "cl100k_base" => Ok(Encoding::Cl100k),
            "o200k" | "o200k_base" => Ok(Encoding::O200k),
            other => Err(Error::invalid(
                "encoding",
                format!("{other:?}; expected cl100k_base or o200k_base"),
            )),
        }
    }
}

/// Counts tokens with a tiktoken encoding.
pub struct Tiktoken {
    encoding: Encoding,
    bpe: CoreBPE,
}

impl std::fmt::Debug for Tiktoken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tiktoken")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl Tiktoken {
    /// Loads `encoding` from the tables compiled into the binary.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if the embedded table fails to parse (a broken build).
    pub fn new(encoding: Encoding) -> Result<Self> {
        let bpe = match encoding {
            Encoding::Cl100k => tiktoken_rs::cl100k_base(),
            Encoding::O200k => tiktoken_rs::o200k_base(),
        }
        .map_err(|err| Error::Unsupported(format!("{}: {err}", encoding.as_str())))?;
        Ok(Self { encoding, bpe })
    }

    /// Loads `encoding`, shared behind the port.
    ///
    /// # Errors
    /// As [`Tiktoken::new`].
    pub fn shared(encoding: Encoding) -> Result<Arc<dyn Tokenizer>> {
        Ok(Arc::new(Self::new(encoding)?))
    }
}

impl Tokenizer for Tiktoken {
    fn name(&self) -> &str {
        self.encoding.as_str()
    }

    fn count(&self, text: &str) -> usize {
        // Special-token text (`<|endoftext|>`) in a memory is data: count it as ordinary text.
        self.bpe.encode_ordinary(text).len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use lore_recall::{ToPack, pack};
    use proptest::prelude::*;

    use super::*;

    fn cl100k() -> &'static Tiktoken {
        static T: OnceLock<Tiktoken> = OnceLock::new();
        T.get_or_init(|| Tiktoken::new(Encoding::Cl100k).unwrap())
    }

    #[test]
    fn counts_match_tiktoken_reference_values() {
        // Reference counts from OpenAI's tiktoken for these strings.
        assert_eq!(cl100k().count("hello world"), 2);
        assert_eq!(cl100k().count(""), 0);
        assert_eq!(
            cl100k().count("<|endoftext|>"),
            7,
            "special tokens are plain text"
        );
        let o200k = Tiktoken::new(Encoding::O200k).unwrap();
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.name(), "o200k_base");
    }

    #[test]
    fn encodings_parse_by_short_and_full_name() {
        assert_eq!(Encoding::parse("o200k").unwrap(), Encoding::O200k);
        assert_eq!(Encoding::parse("cl100k_base").unwrap(), Encoding::Cl100k);
        assert!(
            Encoding::parse("p50k")
                .unwrap_err()
                .to_string()
                .contains("o200k_base")
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn packing_with_tiktoken_never_exceeds_the_budget(
            texts in prop::collection::vec(("\\PC{0,40}", "[a-zA-Z0-9 .,:\n]{0,200}"), 0..10),
            budget in 0usize..120,
            full in 0usize..4,
        ) {
            let tiers: Vec<Vec<String>> = texts.into_iter().map(|(s, f)| vec![s, f]).collect();
            let items: Vec<ToPack<'_>> =
                tiers.iter().map(|t| ToPack { id: "x", tiers: t }).collect();
            let packed = pack(&items, budget, full, cl100k());
            prop_assert!(cl100k().count(&packed.text) <= budget);
            prop_assert_eq!(packed.tokens, cl100k().count(&packed.text));
        }
    }
}
