//! A local sentence-transformers BERT model (all-MiniLM-L6-v2 and its kin) run on the CPU:
//! WordPiece tokens from the folder's `tokenizer.json`, the BERT encoder ([`super::bert`]) from
//! `model.safetensors` and `config.json`, mean pooling over the tokens, L2 normalization, which
//! is what sentence-transformers does for these models, so the vectors match theirs.
//!
//! The identity names the folder and a SHA-256 over what decides the output (`config.json`,
//! `tokenizer.json`, the weights' length, first and last MiB), so two different models, or one
//! fine-tuned copy of another, never compare, while hashing stays quick in debug builds.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use lore_core::ports::embed::{Embedder, EmbedderId};
use lore_core::{Error, Result};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::{Bert, Shape};
pub use super::kernel::Precision;

/// Texts per forward pass: nothing is padded, so a pass costs what its tokens cost; this bounds
/// the activations to a few MB.
const BATCH: usize = 64;

/// The word-piece limit when the folder does not say (`sentence_bert_config.json`'s
/// `max_seq_length`); all-MiniLM-L6-v2 was trained at 256.
const DEFAULT_MAX_TOKENS: usize = 256;

/// A chunk's position among the chunks, and its vectors.
type Embedded = (usize, Vec<Vec<f32>>);

/// How the encoder runs; the defaults are what measured fastest without changing the answers
/// beyond the reference test's tolerance (docs/embedders.md has the figures).
#[derive(Clone, Copy, Debug)]
pub struct EncoderSettings {
    /// How the large products' weights are stored.
    pub precision: Precision,
    /// Whether one short input (a question) shares its products with a helper thread while no
    /// other embedding runs in the process. On by default: the caller never waits for work the
    /// helper has not started, so a busy machine costs little; turn it off to keep a question on
    /// one core.
    pub split_queries: bool,
}

impl Default for EncoderSettings {
    fn default() -> Self {
        Self {
            precision: Precision::default(),
            split_queries: true,
        }
    }
}

/// A BERT sentence-embedding model loaded from a folder.
pub struct MiniLm {
    model: Bert,
    tokenizer: Tokenizer,
    id: EmbedderId,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm").field("id", &self.id).finish()
    }
}

fn bad(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::invalid(format!("embedding model at {}", path.display()), why)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| bad(path, format!("cannot read it: {e}")))
}

impl MiniLm {
    /// Loads the model in `dir` (a sentence-transformers folder).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the file at fault: a missing folder or file, a config that is
    /// not BERT's, a pooling other than mean, weights that do not fit the config.
    pub fn load(dir: &Path) -> Result<Self> {
        Self::load_with(dir, EncoderSettings::default())
    }

    /// Loads the model in `dir`, run as `settings` say.
    ///
    /// # Errors
    /// As [`MiniLm::load`].
    pub fn load_with(dir: &Path, settings: EncoderSettings) -> Result<Self> {
        if !dir.is_dir() {
            return Err(bad(
                dir,
                "no such folder; point LORE_MINILM_PATH at a sentence-transformers folder \
                 holding config.json, model.safetensors and tokenizer.json",
            ));
        }
        let config_path = dir.join("config.json");
        let config_bytes = read(&config_path)?;
        let config_json: serde_json::Value = serde_json::from_slice(&config_bytes)
            .map_err(|e| bad(&config_path, format!("not JSON: {e}")))?;
        if let Some(kind) = config_json.get("model_type").and_then(|v| v.as_str())
            && kind != "bert"
        {
            return Err(bad(
                &config_path,
                format!("model_type {kind:?}; only BERT models are supported"),
            ));
        }
        let shape = Shape::from_config(&config_json).map_err(|e| bad(&config_path, e))?;
        check_pooling(dir)?;

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = read(&tokenizer_path)?;
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| bad(&tokenizer_path, format!("not a tokenizer: {e}")))?;
        let max_tokens = max_tokens(dir).min(shape.max_positions);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| bad(&tokenizer_path, e))?;
        // Texts are never padded: the encoder lays their tokens end to end.
        tokenizer.with_padding(None);

        let weights_path = dir.join("model.safetensors");
        let weights = read(&weights_path)?;
        let hash = fingerprint(&config_bytes, &tokenizer_bytes, &weights);
        let model = Bert::load(shape, &weights, settings.precision, settings.split_queries)
            .map_err(|e| {
                bad(
                    &weights_path,
                    format!("weights do not fit config.json: {e}"),
                )
            })?;
        let id = EmbedderId {
            name: format!("bert-mean-v1:{}+{hash}", label(dir)),
            dim: shape.hidden,
        };
        Ok(Self {
            model,
            tokenizer,
            id,
        })
    }

    /// One forward pass over `texts`: mean-pooled, normalized vectors.
    fn forward(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, String> {
        // One text at a time on this thread: the tokenizer's batch call hands even a single
        // question to a thread pool and waits for it, and batches already run a chunk per core.
        let encodings = texts
            .iter()
            .map(|t| self.tokenizer.encode(*t, true))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        let ids: Vec<&[u32]> = encodings
            .iter()
            .map(tokenizers::Encoding::get_ids)
            .collect();
        self.model.embed(&ids)
    }
}

impl Embedder for MiniLm {
    fn id(&self) -> EmbedderId {
        self.id.clone()
    }

    fn semantic(&self) -> bool {
        true
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_batch(&[text])?.remove(0))
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let fail =
            |e: String| Error::invalid("embedding", format!("the model {} failed: {e}", self.id));
        let chunks: Vec<&[&str]> = texts.chunks(BATCH).collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZero::get)
            .min(chunks.len());
        if threads <= 1 {
            let mut out = Vec::with_capacity(texts.len());
            for chunk in chunks {
                out.extend(self.forward(chunk).map_err(fail)?);
            }
            return Ok(out);
        }
        // Each core takes the next unclaimed chunk, so a corpus keeps every core busy.
        let next = AtomicUsize::new(0);
        let done: Vec<std::result::Result<Vec<Embedded>, String>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(chunk) = chunks.get(i) else {
                                return Ok(mine);
                            };
                            mine.push((i, self.forward(chunk)?));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|_| Err("a worker panicked".into())))
                .collect()
        });
        let mut parts = Vec::with_capacity(chunks.len());
        for part in done {
            parts.extend(part.map_err(fail)?);
        }
        parts.sort_by_key(|(i, _)| *i);
        Ok(parts.into_iter().flat_map(|(_, v)| v).collect())
    }
}

/// Refuses a folder whose pooling is not mean pooling (CLS or max pooling would need other code;
/// silently using mean would give vectors the model was not trained for).
fn check_pooling(dir: &Path) -> Result<()> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    let pooling: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(&path, format!("not JSON: {e}")))?;
    let on = |key: &str| pooling.get(key).and_then(|v| v.as_bool()).unwrap_or(false);
    let others = [
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
    ];
    if !on("pooling_mode_mean_tokens") || others.iter().any(|k| on(k)) {
        return Err(bad(&path, "only mean pooling is supported"));
    }
    Ok(())
}

fn max_tokens(dir: &Path) -> usize {
    std::fs::read(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("max_seq_length").and_then(|n| n.as_u64()))
        .map_or(DEFAULT_MAX_TOKENS, |n| n as usize)
}

/// The first 16 hex digits of SHA-256 over the config, the tokenizer and a sample of the weights.
fn fingerprint(config: &[u8], tokenizer: &[u8], weights: &[u8]) -> String {
    const SAMPLE: usize = 1 << 20;
    let mut h = Sha256::new();
    for part in [
        config,
        tokenizer,
        &weights[..weights.len().min(SAMPLE)],
        &weights[weights.len().saturating_sub(SAMPLE)..],
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update((weights.len() as u64).to_le_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A readable name for the folder: its own, or its parent's when it has a generic one (a
/// package's `model/`).
fn label(dir: &Path) -> String {
    let dir: PathBuf = dir.components().collect();
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    match name(&dir) {
        Some(n) if n != "model" => n,
        _ => dir
            .parent()
            .and_then(name)
            .unwrap_or_else(|| "model".into()),
    }
}
