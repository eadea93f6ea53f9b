//! Lore's core: the domain model and the ports, with no driver, runtime or file system.
//!
//! Everything here is data and rules about data: records and their IDs, scopes, the lessons'
//! lifecycle, error fingerprints, what counts as sensitive, supersession and the causal graph.
//! The ports (`Store`, `Embedder`, `Tokenizer`, `Llm`, `Clock`) are traits that the adapters
//! implement; the Engine (`lore-engine`) is written against them alone. Nothing here touches the
//! file system, so the crate can be reasoned about and tested without one.

pub mod directive;
pub mod error;
mod fingerprint;
pub mod graph;
pub mod graph_export;
pub mod id;
pub mod lifecycle;
pub mod limits;
pub mod model;
pub mod org;
pub mod ports;
pub mod quote;
pub mod scope;
pub mod sensitive;
pub mod supersession;
pub mod text;
pub mod wording;

pub use error::{Error, Result};
pub use fingerprint::fingerprint;
pub use ports::store::Store;
pub use scope::{Scope, SkillPath};
