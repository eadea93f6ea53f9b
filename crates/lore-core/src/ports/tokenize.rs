//! The Tokenizer port: token budgets mean tokens as the model counts them.
//!
//! The real tokenizers (tiktoken's cl100k and o200k) live in `lore-providers`, so the core builds
//! without a regex engine and megabytes of BPE tables; [`ApproxTokenizer`] is the dependency-free
//! fallback.

/// Counts tokens the way a model does.
pub trait Tokenizer: Send + Sync {
    /// The encoding's name (`cl100k_base`, `o200k_base`, `approx`).
    fn name(&self) -> &str;

    /// How many tokens `text` is.
    fn count(&self, text: &str) -> usize;
}

/// A tokenizer-free estimate, used only when no real tokenizer is wired in: one token per three
/// bytes or per word, whichever is more. It over-counts English (about four bytes a token), so a
/// budget it enforces is not exceeded by a real tokenizer in the common case, but it is not exact.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApproxTokenizer;

impl Tokenizer for ApproxTokenizer {
    fn name(&self) -> &str {
        "approx"
    }

    fn count(&self, text: &str) -> usize {
        text.len().div_ceil(3).max(text.split_whitespace().count())
    }
}
