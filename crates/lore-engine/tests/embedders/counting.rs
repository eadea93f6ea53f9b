//! The builtin embedder without its fit, counting the texts it embeds: an embedder that learns
//! nothing from its corpus, as a model is, for tests of what an index embeds and when.

use std::sync::atomic::{AtomicUsize, Ordering};

use lore_recall::{BuiltinEmbedder, Embedder, EmbedderId};

pub struct Counting {
    inner: BuiltinEmbedder,
    texts: AtomicUsize,
}

impl Counting {
    pub fn new() -> Self {
        Self {
            inner: BuiltinEmbedder::default(),
            texts: AtomicUsize::new(0),
        }
    }

    /// Texts embedded so far.
    pub fn texts(&self) -> usize {
        self.texts.load(Ordering::SeqCst)
    }
}

impl Embedder for Counting {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }

    fn embed(&self, text: &str) -> lore_core::Result<Vec<f32>> {
        self.texts.fetch_add(1, Ordering::SeqCst);
        self.inner.embed(text)
    }

    fn embed_batch(&self, texts: &[&str]) -> lore_core::Result<Vec<Vec<f32>>> {
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_batch(texts)
    }
}
