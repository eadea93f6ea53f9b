//! Lore's providers: language-model clients behind the core's [`Llm`] port, embedders behind its
//! Embedder port ([`embedders`]: builtin, a local MiniLM on Lore's own encoder, HTTP) and
//! tiktoken behind its Tokenizer port ([`tokenizer`]). Heavy parts sit behind features.
//!
//! Two wire protocols cover the providers people run: OpenAI-compatible chat completions
//! (OpenAI, OpenRouter, Ollama, vLLM, LM Studio: only the base URL differs) and Anthropic
//! Messages. A third client, [`Offline`], is what Lore uses with nothing configured: it cannot run
//! a skill and says so, and lessons come from the core's offline distiller instead.
//!
//! The clients are blocking, like the Store port, on one small HTTP client (`ureq` with rustls).
//! They own transport concerns only: timeouts, retries with exponential backoff on 429 and 5xx
//! (honouring `Retry-After`), and mapping each protocol's JSON to [`LlmResponse`]. Checking a
//! structured answer against its schema is the core's job (`lore_core::ports::llm::complete_json`), so it
//! is the same for every provider.
//!
//! Keys are held in [`ApiKey`], whose `Debug` prints nothing of the key, and are redacted from any
//! provider error message before it reaches a log or a record.

mod anthropic;
mod config;
pub mod embedders;
#[cfg(feature = "fake")]
pub mod fake;
mod http;
mod offline;
mod openai;
pub mod tokenizer;

use std::sync::Arc;

pub use anthropic::AnthropicClient;
pub use config::RetryPolicy;
pub use config::{ApiKey, LlmConfig, ProviderKind};
pub use embedders::{EMBED_BATCH, HttpEmbedder, HttpEmbedderConfig};
use lore_core::ports::llm::Llm;
#[cfg(doc)]
use lore_core::ports::llm::LlmResponse;
pub use offline::Offline;
pub use openai::OpenAiClient;

/// The client `config` describes.
pub fn connect(config: &LlmConfig) -> Arc<dyn Llm> {
    match config.kind {
        ProviderKind::OpenAi => Arc::new(OpenAiClient::new(config)),
        ProviderKind::Anthropic => Arc::new(AnthropicClient::new(config)),
        ProviderKind::Offline => Arc::new(Offline),
    }
}
