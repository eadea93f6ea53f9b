//! Lore as a service: the REST API under `/v1` and MCP over stdio and streamable HTTP.
//!
//! This crate translates requests into [`lore_engine::Engine`] calls and results into responses,
//! nothing more; the Engine holds every rule. It owns three things the core must not know
//! about: HTTP status codes ([`error`], the one mapping), the wire shapes of requests, and the
//! process concerns of a server (limits, timeouts, binding, graceful shutdown, in [`server`]).
//!
//! The Engine is synchronous (SQLite is), so every call runs on tokio's blocking pool; the
//! async runtime only parses, waits and writes. Both protocols share one `Arc<Engine>`.

pub mod auth;
pub mod catalogue;
pub mod console;
pub mod error;
pub mod grant;
pub mod input;
pub mod jwt;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod regression;
pub mod rest;
pub mod review;
pub mod server;

pub use auth::Access;
pub use error::ApiError;
pub use server::{
    Limits, McpOptions, app, app_with_hosts, check_bind, rest_app, run_until_signal, serve,
};
