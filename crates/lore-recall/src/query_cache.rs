//! The query vectors of a costly embedder (a model, a service), kept for the texts asked again.
//!
//! A model takes milliseconds for one question, the rest of a recall well under one. The same
//! text is embedded again and again: an agent asks with the same task text each turn, and one
//! layered context asks the lessons, the knowledge and the decisions with it at once, from
//! three threads. The cache answers repeats with the very vector the embedder made, and
//! concurrent askers of one text wait for a single embedding instead of each making it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use lore_core::error::Result;
use lore_core::ports::embed::{Embedder, EmbedderId};

/// Texts kept: about 1.5 MB of vectors at 384 dimensions.
pub const QUERY_CACHE_TEXTS: usize = 1024;

/// Longer texts are documents being indexed, not questions, and are never kept.
const LONGEST_QUERY: usize = 2_000;

/// One text's vector, made once; askers of the same text wait on its lock meanwhile.
type Slot = Arc<Mutex<Option<Arc<[f32]>>>>;

/// An embedder whose single-text embeddings ([`Embedder::embed`]) are kept, the oldest text
/// making room first; batches (lessons being indexed) pass straight through.
pub struct QueryCache {
    inner: Arc<dyn Embedder>,
    capacity: usize,
    slots: Mutex<(HashMap<String, Slot>, VecDeque<String>)>,
}

impl std::fmt::Debug for QueryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryCache")
            .field("embedder", &self.inner.id())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl QueryCache {
    /// `inner` with its last `capacity` texts' vectors kept.
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            inner,
            capacity: capacity.max(1),
            slots: Mutex::default(),
        }
    }

    /// The slot of `text`, made (and the oldest dropped) when new.
    fn slot(&self, text: &str) -> Slot {
        let mut guard = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, order) = &mut *guard;
        if let Some(slot) = map.get(text) {
            return Arc::clone(slot);
        }
        while order.len() >= self.capacity {
            if let Some(oldest) = order.pop_front() {
                map.remove(&oldest);
            }
        }
        let slot = Slot::default();
        map.insert(text.to_owned(), Arc::clone(&slot));
        order.push_back(text.to_owned());
        slot
    }
}

impl Embedder for QueryCache {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        if text.len() > LONGEST_QUERY {
            return self.inner.embed(text);
        }
        let slot = self.slot(text);
        let mut vector = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = vector.as_ref() {
            return Ok(v.to_vec());
        }
        // A failure is not kept: the next asker tries again.
        let made = self.inner.embed(text)?;
        *vector = Some(Arc::from(made.as_slice()));
        Ok(made)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.inner.embed_batch(texts)
    }

    fn semantic(&self) -> bool {
        self.inner.semantic()
    }

    fn fit(&self, corpus: &[&str]) -> Option<Arc<dyn Embedder>> {
        self.inner.fit(corpus)
    }

    fn fit_state(&self) -> Option<Vec<u8>> {
        self.inner.fit_state()
    }

    fn restore(&self, state: &[u8]) -> Result<Arc<dyn Embedder>> {
        self.inner.restore(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BuiltinEmbedder;
    use lore_core::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The builtin embedder, counting its calls and failing on the text "fail" while `fail` is
    /// set.
    struct Counting {
        inner: BuiltinEmbedder,
        calls: AtomicUsize,
        fail: std::sync::atomic::AtomicBool,
    }

    impl Embedder for Counting {
        fn id(&self) -> EmbedderId {
            self.inner.id()
        }
        fn embed(&self, text: &str) -> Result<Vec<f32>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            // Slow enough that concurrent askers overlap.
            std::thread::sleep(std::time::Duration::from_millis(20));
            if text == "fail" && self.fail.load(Ordering::SeqCst) {
                return Err(Error::invalid("embedding", "the service did not answer"));
            }
            self.inner.embed(text)
        }
    }

    fn counting() -> Arc<Counting> {
        Arc::new(Counting {
            inner: BuiltinEmbedder::default(),
            calls: AtomicUsize::new(0),
            fail: true.into(),
        })
    }

    #[test]
    fn a_repeated_text_gets_the_same_vector_from_one_embedding() {
        let inner = counting();
        let cache = QueryCache::new(inner.clone(), 8);
        let first = cache.embed("rotate the tokens").unwrap();
        let again = cache.embed("rotate the tokens").unwrap();
        assert_eq!(first, again);
        assert_eq!(first, inner.inner.embed("rotate the tokens").unwrap());
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
        assert_eq!(cache.id(), inner.id());
    }

    #[test]
    fn concurrent_askers_of_one_text_share_one_embedding() {
        let inner = counting();
        let cache = QueryCache::new(inner.clone(), 8);
        let vectors: Vec<Vec<f32>> = std::thread::scope(|s| {
            let askers: Vec<_> = (0..3)
                .map(|_| s.spawn(|| cache.embed("drain the queue").unwrap()))
                .collect();
            askers.into_iter().map(|a| a.join().unwrap()).collect()
        });
        assert!(vectors.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(inner.calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_oldest_text_makes_room_and_failures_are_not_kept() {
        let inner = counting();
        let cache = QueryCache::new(inner.clone(), 2);
        for text in ["a b", "c d", "e f"] {
            cache.embed(text).unwrap();
        }
        cache.embed("c d").unwrap();
        assert_eq!(inner.calls.load(Ordering::SeqCst), 3, "c d was still kept");
        cache.embed("a b").unwrap();
        assert_eq!(inner.calls.load(Ordering::SeqCst), 4, "a b had made room");

        assert!(cache.embed("fail").is_err());
        inner.fail.store(false, Ordering::SeqCst);
        assert!(cache.embed("fail").is_ok(), "the failure was not kept");
        assert_eq!(inner.calls.load(Ordering::SeqCst), 6);

        let batch = cache.embed_batch(&["a b", "a b"]).unwrap();
        assert_eq!(batch.len(), 2);
        assert_eq!(
            inner.calls.load(Ordering::SeqCst),
            8,
            "batches pass through"
        );
    }
}
