//! The ports: what the core needs from the world, as traits that adapters implement.
//!
//! Each port is chosen once at start-up and passed as a trait object (`Arc<dyn Store>`), so the
//! Engine and its services never name a driver, a model runtime or an HTTP client.

pub mod bell;
pub mod clock;
pub mod embed;
pub mod knowledge;
pub mod llm;
pub mod store;
pub mod tokenize;
pub mod tuning;
