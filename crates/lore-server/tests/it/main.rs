//! The server's tests, one binary: REST through the router and over loopback, MCP through the
//! official SDK, tokens, JWTs and the role-and-scope rules.

mod common;

mod auth;
mod bench_script;
mod console;
mod digests;
mod doors;
mod events;
mod failures;
mod fuzz;
mod hostile;
mod knowledge;
mod learn;
mod matrix;
mod org;
mod rest;
mod secrets;
mod security;
mod shapes;
mod warming;
