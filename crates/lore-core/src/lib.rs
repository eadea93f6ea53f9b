//! Lore's core: the domain model, the ports (Store, Clock) and the Engine.
//!
//! Everything a user of Lore does goes through [`Engine`]: recording what an agent did, correcting
//! it, learning a lesson from the correction, curating lessons and assembling the prompt that
//! carries them back. The crate holds no SQL driver, HTTP framework or CLI parser: adapters
//! (`lore-sqlite`, `lore-cli`) depend on it, never the other way round, so the compiler keeps the
//! layers honest.

pub mod clock;
pub mod distill;
pub mod engine;
mod error;
pub mod extract;
mod fingerprint;
pub mod front_matter;
pub mod graph;
pub mod id;
pub mod interchange;
pub mod lifecycle;
pub mod llm;
pub mod model;
pub mod prompt;
pub mod recall;
pub mod regression;
pub mod scope;
pub mod sensitive;
pub mod skills;
pub mod store;
pub mod supersession;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use engine::{Engine, EngineConfig};
pub use error::{Error, Result};
pub use fingerprint::fingerprint;
pub use scope::{Scope, SkillPath};
pub use store::Store;
