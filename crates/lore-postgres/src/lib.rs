//! Lore's shared store: PostgreSQL with pgvector, so that many stateless Lore servers on many
//! machines serve one memory.
//!
//! Why it is built this way:
//!
//! - **The same records as SQLite.** Each kind has a table holding the record as JSON text plus
//!   the columns listings filter and order on (`migrations/`), so both stores read back exactly
//!   what was written and pass the same conformance suite (`lore-store-tests`). That holds for
//!   seed 004's layers (knowledge, decisions, digests, evaluations) and the embedder's tuning
//!   too, each behind its own port as in SQLite.
//! - **Commit-ordered numbers.** Followers of the store (the recall index of every server, the
//!   change feed behind `/v1/events`) read "everything after N". Numbers from a sequence are
//!   drawn in start order, so a slow transaction could commit a number below one a follower
//!   already passed. Here each writer locks the counters it needs (`lore_counters`, always in
//!   name order, so two writers never deadlock) and numbers are handed out in commit order.
//!   Lesson writes are serialized by the same lock, which also makes each lesson's
//!   compare-and-set on `updated_at` exact across servers. A write of new records goes to the
//!   server whole, in one round trip (`pipeline`), so the lock is never held while waiting on
//!   the network.
//! - **A synchronous port over an async driver.** The `Store` trait is synchronous (the Engine
//!   runs on blocking threads); the store owns a small tokio runtime that drives
//!   tokio-postgres and a deadpool pool, and each call waits on a channel for its answer, so it
//!   may be called from any thread, even one inside another runtime.
//! - **Writes are announced.** Each write NOTIFYs at commit and each store LISTENs on a
//!   connection of its own (`notify`), so event streams on every server wake at once instead
//!   of on their poll timer.
//! - **Secrets stay out of messages.** [`PostgresStore::location`] and every error carry the
//!   address without its password; errors from the driver are scrubbed of it as well.

mod connect;
mod digests;
mod episodes;
mod filter;
mod knowledge;
mod members;
mod nearest;
mod notify;
mod pipeline;
mod rows;
mod search;
mod store;
pub mod testing;
mod tuning;

pub use connect::{PostgresOptions, SCHEMA_VERSION, redact_url};
pub use store::PostgresStore;
