//! Lore's embedders behind the core's [`Embedder`] port, chosen by name.
//!
//! - `builtin` (the default): the core's feature-hashing embedder; no model, no network.
//! - `minilm`: a local sentence-transformers BERT folder (all-MiniLM-L6-v2) run on the CPU by
//!   Lore's own encoder. Only in builds with the `minilm` feature, so the default build carries
//!   no tokenizer or matrix library.
//! - `http`: an OpenAI-compatible `POST /v1/embeddings` service (OpenAI, Ollama, vLLM, TEI),
//!   [`HttpEmbedder`].
//!
//! [`EmbedderConfig::from_env`] reads `LORE_EMBEDDER`, `LORE_MINILM_PATH`,
//! `LORE_EMBEDDER_MODEL`, `LORE_EMBEDDER_BASE_URL` and `LORE_EMBEDDER_API_KEY`; [`connect`]
//! builds the embedder and fails with an error naming the setting at fault.

#[cfg(feature = "minilm")]
mod bert;
mod http;
#[cfg(feature = "minilm")]
mod kernel;
#[cfg(feature = "minilm")]
mod minilm;
#[cfg(feature = "minilm")]
mod pair;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{ApiKey, RetryPolicy};
pub use http::{BATCH as EMBED_BATCH, HttpEmbedder, HttpEmbedderConfig};
use lore_core::{Error, Result};
use lore_recall::{BuiltinEmbedder, Embedder};
#[cfg(feature = "minilm")]
pub use minilm::{EncoderSettings, MiniLm, Precision};

/// Which embedder to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedderKind {
    /// The core's builtin embedder.
    Builtin,
    /// A local BERT sentence-transformers model.
    Minilm,
    /// An OpenAI-compatible embeddings service.
    Http,
}

impl EmbedderKind {
    /// Parses `builtin`, `minilm` or `http`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the accepted values.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "builtin" | "" => Ok(Self::Builtin),
            "minilm" => Ok(Self::Minilm),
            "http" => Ok(Self::Http),
            other => Err(Error::invalid(
                "embedder",
                format!("{other:?}; expected builtin, minilm or http"),
            )),
        }
    }

    /// The name used in flags and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Minilm => "minilm",
            Self::Http => "http",
        }
    }
}

/// Everything [`connect`] needs; `Debug` hides the key.
#[derive(Clone)]
pub struct EmbedderConfig {
    /// Which embedder.
    pub kind: EmbedderKind,
    /// The model folder, for `minilm`.
    pub minilm_path: Option<PathBuf>,
    /// Whether `minilm` shares one question's products with a helper thread while no other
    /// embedding runs (on by default; docs/embedders.md has the figures).
    pub minilm_split_queries: bool,
    /// The service's model name, for `http`.
    pub model: Option<String>,
    /// The service's base URL, for `http` (default OpenAI's).
    pub base_url: String,
    /// The service's key, for `http`.
    pub api_key: Option<ApiKey>,
    /// How long one HTTP request may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for EmbedderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedderConfig")
            .field("kind", &self.kind)
            .field("minilm_path", &self.minilm_path)
            .field("minilm_split_queries", &self.minilm_split_queries)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

const OPENAI_URL: &str = "https://api.openai.com/v1";
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Builtin,
            minilm_path: None,
            minilm_split_queries: true,
            model: None,
            base_url: OPENAI_URL.to_owned(),
            api_key: None,
            timeout: HTTP_TIMEOUT,
        }
    }
}

impl EmbedderConfig {
    /// Reads the process environment; see [`EmbedderConfig::from_vars`].
    ///
    /// # Errors
    /// As [`EmbedderConfig::from_vars`].
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Builds the configuration from variables looked up by `var`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an unknown `LORE_EMBEDDER`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let kind = match var("LORE_EMBEDDER") {
            Some(raw) => EmbedderKind::parse(&raw)?,
            None => EmbedderKind::Builtin,
        };
        let minilm_split_queries = match var("LORE_MINILM_SPLIT_QUERIES").as_deref() {
            Some("false" | "0") => false,
            None | Some("true" | "1") => true,
            Some(other) => {
                return Err(Error::invalid(
                    "LORE_MINILM_SPLIT_QUERIES",
                    format!("{other:?}; expected true or false"),
                ));
            }
        };
        Ok(Self {
            kind,
            minilm_path: var("LORE_MINILM_PATH").map(PathBuf::from),
            minilm_split_queries,
            model: var("LORE_EMBEDDER_MODEL"),
            base_url: var("LORE_EMBEDDER_BASE_URL").unwrap_or_else(|| OPENAI_URL.to_owned()),
            api_key: var("LORE_EMBEDDER_API_KEY").map(ApiKey::new),
            timeout: HTTP_TIMEOUT,
        })
    }

    /// This configuration with another kind (a `--embedder` flag over the environment).
    pub fn with_kind(mut self, kind: EmbedderKind) -> Self {
        self.kind = kind;
        self
    }
}

/// The embedder `config` describes, loaded (a model) or connected (a service).
///
/// # Errors
/// [`Error::Invalid`] naming the setting at fault: `minilm` without `LORE_MINILM_PATH`, a folder
/// that is not a usable model, or a build without the `minilm` feature; `http` without a model
/// name, or with OpenAI's URL and no key; a service that does not answer its probe.
pub fn connect(config: &EmbedderConfig) -> Result<Arc<dyn Embedder>> {
    match config.kind {
        EmbedderKind::Builtin => Ok(Arc::new(BuiltinEmbedder::default())),
        EmbedderKind::Minilm => {
            let Some(path) = &config.minilm_path else {
                return Err(Error::invalid(
                    "LORE_MINILM_PATH",
                    "the minilm embedder needs the folder of a sentence-transformers model \
                     (config.json, model.safetensors, tokenizer.json)",
                ));
            };
            load_minilm(path, config.minilm_split_queries)
        }
        EmbedderKind::Http => {
            let model = config.model.clone().ok_or_else(|| {
                Error::invalid(
                    "LORE_EMBEDDER_MODEL",
                    "the http embedder needs a model name (text-embedding-3-small, \
                     nomic-embed-text, …)",
                )
            })?;
            if config.base_url.trim_end_matches('/') == OPENAI_URL && config.api_key.is_none() {
                return Err(Error::invalid(
                    "LORE_EMBEDDER_API_KEY",
                    "OpenAI's API needs a key; set it, or LORE_EMBEDDER_BASE_URL for a local \
                     service",
                ));
            }
            let embedder = HttpEmbedder::connect(&HttpEmbedderConfig {
                base_url: config.base_url.clone(),
                model,
                api_key: config.api_key.clone(),
                timeout: config.timeout,
                retry: RetryPolicy::default(),
            })?;
            Ok(Arc::new(embedder))
        }
    }
}

#[cfg(feature = "minilm")]
fn load_minilm(path: &std::path::Path, split_queries: bool) -> Result<Arc<dyn Embedder>> {
    let settings = minilm::EncoderSettings {
        split_queries,
        ..Default::default()
    };
    Ok(Arc::new(MiniLm::load_with(path, settings)?))
}

#[cfg(not(feature = "minilm"))]
fn load_minilm(_path: &std::path::Path, _split_queries: bool) -> Result<Arc<dyn Embedder>> {
    Err(Error::invalid(
        "embedder",
        "minilm is not in this build; rebuild with `--features minilm`",
    ))
}
