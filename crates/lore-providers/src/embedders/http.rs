//! Embeddings over HTTP: `POST {base}/embeddings`, the OpenAI protocol that OpenAI, Ollama,
//! vLLM and Hugging Face's text-embeddings-inference all serve.
//!
//! The client learns the vector length from one probe request when it is built, because an
//! embedder's identity (name and dimension) is needed before the first vector is stored, and a
//! service that cannot answer should fail at start-up rather than at the first recall. Texts are
//! sent in batches of [`BATCH`]; every answer is checked (one vector per input, in `index`
//! order, of the probed length, finite) and L2-normalized, since not every server normalizes.

use std::time::Duration;

use lore_core::ports::embed::{Embedder, EmbedderId, normalize};
use lore_core::ports::llm::LlmError;
use lore_core::{Error, Result};
use serde_json::{Value, json};

use crate::config::ApiKey;
use crate::config::RetryPolicy;
use crate::http::{Http, bearer, short};

/// Inputs per request: well under every server's limit (OpenAI's is 2048), small enough that one
/// slow batch does not approach the timeout.
pub const BATCH: usize = 64;

/// Where and how to reach an embeddings service; `Debug` hides the key.
#[derive(Clone)]
pub struct HttpEmbedderConfig {
    /// The API's base URL, without the endpoint path (`http://localhost:11434/v1`).
    pub base_url: String,
    /// The model to ask for.
    pub model: String,
    /// The key, for services that need one.
    pub api_key: Option<ApiKey>,
    /// How long one request may take.
    pub timeout: Duration,
    /// Retries on 429 and 5xx.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for HttpEmbedderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedderConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// An [`Embedder`] backed by an OpenAI-compatible embeddings endpoint.
#[derive(Debug)]
pub struct HttpEmbedder {
    http: Http,
    url: String,
    model: String,
    auth: Option<String>,
    dim: usize,
}

impl HttpEmbedder {
    /// Connects to the service and learns the model's dimension from one probe.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a base URL that is not http(s) or an empty model name; the probe's
    /// errors (see [`Embedder::embed_batch`]).
    pub fn connect(config: &HttpEmbedderConfig) -> Result<Self> {
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::invalid(
                "LORE_EMBEDDER_BASE_URL",
                format!("{base:?} is not an http:// or https:// URL"),
            ));
        }
        if config.model.trim().is_empty() {
            return Err(Error::invalid(
                "LORE_EMBEDDER_MODEL",
                "the HTTP embedder needs a model name (text-embedding-3-small, nomic-embed-text, …)",
            ));
        }
        let mut embedder = Self {
            http: Http::with(config.timeout, config.retry, config.api_key.clone()),
            url: format!("{base}/embeddings"),
            model: config.model.clone(),
            auth: config
                .api_key
                .as_ref()
                .map(|k| format!("Bearer {}", k.expose())),
            dim: 0,
        };
        let probe = embedder.request(&["dimension probe"])?;
        embedder.dim = probe[0].len();
        Ok(embedder)
    }

    /// One request for `texts` (at most [`BATCH`]): their vectors in order, normalized.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let headers = bearer(self.auth.as_deref());
        let body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        let answer = self.http.post_json(&self.url, &headers, &body)?;
        let mut vectors = parse(&answer, texts.len())?;
        for v in &mut vectors {
            if self.dim != 0 && v.len() != self.dim {
                return Err(protocol(format!(
                    "a vector of {} dimensions where {} expects {}",
                    v.len(),
                    self.model,
                    self.dim
                )));
            }
            normalize(v);
        }
        Ok(vectors)
    }
}

impl Embedder for HttpEmbedder {
    fn id(&self) -> EmbedderId {
        EmbedderId {
            name: format!("openai-embeddings:{}", self.model),
            dim: self.dim,
        }
    }

    fn semantic(&self) -> bool {
        true
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.request(&[text])?.remove(0))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.request(chunk)?);
        }
        Ok(out)
    }
}

fn protocol(message: String) -> Error {
    Error::Llm(LlmError::Protocol(message))
}

/// Reads `{"data": [{"index": i, "embedding": [...]}, ...]}` into `expected` vectors in input
/// order (servers may answer out of order; `index` says where each belongs).
fn parse(answer: &Value, expected: usize) -> Result<Vec<Vec<f32>>> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| protocol(format!("no data array in {}", short(&answer.to_string()))))?;
    if data.len() != expected {
        return Err(protocol(format!(
            "{} embeddings for {expected} inputs",
            data.len()
        )));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None => position,
            Some(i) => i
                .as_u64()
                .map(|i| i as usize)
                .filter(|i| *i < expected)
                .ok_or_else(|| protocol(format!("a bad embedding index {i}")))?,
        };
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol(format!("embedding {index} is not a list of numbers")))?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32).filter(|x| x.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| protocol(format!("embedding {index} holds a non-number")))?;
        if vector.is_empty() {
            return Err(protocol(format!("embedding {index} is empty")));
        }
        if out[index].replace(vector).is_some() {
            return Err(protocol(format!("embedding index {index} appears twice")));
        }
    }
    let first_len = out[0].as_ref().map_or(0, Vec::len);
    out.into_iter()
        .map(|v| v.filter(|v| v.len() == first_len))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| protocol("embeddings of different lengths in one answer".to_owned()))
}
