//! `lore serve` (REST and MCP over HTTP) and `lore mcp` (MCP over stdio).
//!
//! Both hand the same Engine the other commands use to `lore-server`; this file only resolves
//! the address, refuses what is unsafe, and starts a tokio runtime, which no other command needs.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use lore_server::Limits;
use lore_server::auth::{Access, TokenFile};
use lore_sqlite::OpenMode;

use crate::config::Paths;
use crate::output;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on. Without tokens (`lore tokens create`) only loopback addresses
    /// are accepted.
    #[arg(long, default_value = "127.0.0.1:7077")]
    pub addr: SocketAddr,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn serve(paths: &Paths, args: ServeArgs) -> Result<()> {
    let access = Access::from_file(&TokenFile::load(paths.home.join("tokens.json"))?);
    lore_server::check_bind(args.addr, &access)?;
    let engine = Arc::new(paths.engine(OpenMode::Create)?);
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let addr = listener.local_addr()?;
        output::line(format!(
            "Lore listening on http://{addr} (REST at /v1, MCP at /mcp)"
        ))?;
        let auth = if access.is_authenticated() {
            "Authentication: bearer tokens from tokens.json (see `lore tokens`)."
        } else {
            "No authentication: serving loopback only; anyone on this machine can use it."
        };
        output::line(format!("{auth} Store: {}", paths.db().display()))?;
        lore_server::run_until_signal(listener, engine, Limits::default(), access).await?;
        Ok(())
    })
}

pub fn mcp(paths: &Paths) -> Result<()> {
    let engine = Arc::new(paths.engine(OpenMode::Create)?);
    runtime()?.block_on(lore_server::mcp::serve_stdio(engine))
}
