//! The `lore` binary's tests, one binary (each module a command family): real processes on real
//! SQLite files in temporary folders, real HTTP on loopback.

mod common;

mod bench_agent;
mod cli;
mod clients;
mod digests;
pub(crate) mod embedder;
mod episode_sessions;
mod episodes;
mod failures;
mod hostile;
mod integrity;
mod knowledge;
mod layers;
mod learn;
mod llm;
mod mcp_surface;
mod newcomer;
mod org;
#[cfg(feature = "postgres")]
mod postgres;
mod proposer;
mod recall;
mod reliability;
mod review;
pub(crate) mod serve;
mod served_model;
pub(crate) mod settings;
mod transfer;
mod utility;
