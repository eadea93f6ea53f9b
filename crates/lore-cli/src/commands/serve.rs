//! `lore serve` (REST and MCP over HTTP) and `lore mcp` (MCP over stdio).
//!
//! Both hand the same Engine the other commands use to `lore-server`; this file only resolves
//! the address, refuses what is unsafe, and starts a tokio runtime, which no other command needs.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use lore_engine::Engine;
use lore_server::Limits;
use lore_server::auth::{Access, TokenFile};
use lore_server::jwt::{JwtConfig, JwtVerifier};
use lore_sqlite::OpenMode;

use crate::cli::{McpArgs, ReformulateArgs, ServeArgs};
use crate::config::{Paths, configured_model, counting_episodes};
use crate::output;

/// The environment variable that may hold the HS256 secret. Read here rather than through
/// clap so that the value never appears in `--help` or in a debug print of the arguments.
const SECRET_ENV: &str = "LORE_JWT_SECRET";

fn jwt(args: &ServeArgs) -> Result<Option<JwtVerifier>> {
    let from_env = std::env::var_os(SECRET_ENV).filter(|v| !v.is_empty());
    let hs256_secret = match (&args.jwt_secret_file, from_env) {
        (Some(_), Some(_)) => {
            bail!("give the JWT secret once: --jwt-secret-file or {SECRET_ENV}, not both")
        }
        (Some(path), None) => Some(JwtVerifier::read_secret(path)?),
        (None, Some(value)) => Some(value.into_encoded_bytes()),
        (None, None) => None,
    };
    let eddsa_public_pem = match &args.jwt_public_key {
        Some(path) => Some(
            std::fs::read(path)
                .with_context(|| format!("cannot read the JWT public key {}", path.display()))?,
        ),
        None => None,
    };
    if hs256_secret.is_none() && eddsa_public_pem.is_none() {
        if args.jwt_issuer.is_some() {
            bail!("--jwt-issuer needs a key: --jwt-secret-file, {SECRET_ENV} or --jwt-public-key");
        }
        return Ok(None);
    }
    let Some(issuer) = args.jwt_issuer.clone() else {
        bail!("JWTs need --jwt-issuer (or LORE_JWT_ISSUER): the `iss` every token must carry");
    };
    Ok(JwtVerifier::new(JwtConfig {
        hs256_secret,
        eddsa_public_pem,
        issuer,
        audience: args.jwt_audience.clone(),
    })?)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The Engine a server hands every request: the CLI's, with the configured model (which
/// proposes lessons from corrections, writes digests and judges evaluation questions, as on the
/// command line) and episode budgets counted as the CLI counts them, and recall answering from
/// the store's search while its index builds in the background (so no request waits a minute
/// for a build over a large store). Also a line saying which model answers, naming no key or
/// address.
fn server_engine(paths: &Paths, reformulate: &ReformulateArgs) -> Result<(Arc<Engine>, String)> {
    let engine = reformulate
        .apply(paths.engine(OpenMode::Create)?)?
        .with_background_index()
        .with_memory_release(crate::allocator::release_free_memory);
    let (engine, model) = match configured_model()? {
        Some(llm) => {
            let line = format!(
                "Model: {} {} (proposes lessons from corrections, writes digests, judges \
                 evaluation questions).",
                llm.provider(),
                llm.model()
            );
            (engine.with_proposer(llm), line)
        }
        None => (
            engine,
            "Model: none (offline): digests are extractive and judged evaluation questions are \
             refused; LORE_LLM_PROVIDER and its key configure one."
                .to_owned(),
        ),
    };
    Ok((Arc::new(counting_episodes(engine)?), model))
}

pub fn serve(paths: &Paths, args: ServeArgs) -> Result<()> {
    let jwt = jwt(&args)?;
    let access = Access::new(&TokenFile::load(paths.home.join("tokens.json"))?, jwt);
    lore_server::check_bind(args.addr, &access)?;
    let (engine, model) = server_engine(paths, &args.reformulate)?;
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let addr = listener.local_addr()?;
        engine.warm_recall_index();
        output::line(format!(
            "Lore listening on http://{addr} (the console at /, REST at /v1, MCP at /mcp)"
        ))?;
        let auth = match access.jwt() {
            Some(jwt) => format!(
                "Authentication: bearer tokens from tokens.json and JWTs ({}, iss {:?}, aud {:?}).",
                jwt.algorithms().join(", "),
                jwt.issuer(),
                jwt.audience()
            ),
            None if access.is_authenticated() => {
                "Authentication: bearer tokens from tokens.json (see `lore tokens`).".to_owned()
            }
            None => "No authentication: serving loopback only; anyone on this machine can use it \
                     until a token exists (`lore tokens create`), which takes effect at once."
                .to_owned(),
        };
        output::line(format!("{auth} Store: {}", paths.store.describe()))?;
        output::line(model)?;
        let mut mcp_hosts = args.mcp_hosts.clone();
        if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
            mcp_hosts.push(addr.ip().to_string());
        }
        if !addr.ip().is_loopback() {
            let names = if args.mcp_hosts.is_empty() {
                "loopback names and the listening address only; add --mcp-host NAME for the \
                 names clients use"
                    .to_owned()
            } else {
                format!("loopback names and {}", mcp_hosts.join(", "))
            };
            output::line(format!("MCP answers Host headers of {names}."))?;
        }
        let mcp = lore_server::McpOptions {
            hosts: mcp_hosts,
            stateless: args.mcp_stateless,
            tools: paths.settings.mcp_tools(),
        };
        lore_server::run_until_signal(listener, engine, Limits::default(), access, &mcp).await?;
        Ok(())
    })
}

pub fn mcp(paths: &Paths, args: McpArgs) -> Result<()> {
    // A client starts `lore mcp` in a folder of its own choosing (often `/` or the user's home),
    // where a default `./.lore` would be a new store nobody meant; `commands::run` refused that.
    let (engine, model) = server_engine(paths, &args.reformulate)?;
    engine.warm_recall_index();
    // Standard output carries the protocol: the model line goes to the log.
    eprintln!("{model}");
    let tools = lore_server::mcp::LoreMcp::new(engine);
    let tools = match &args.tools {
        Some(spec) => tools
            .with_tools(spec)
            .map_err(|why| anyhow::anyhow!("--tools: {why}"))?,
        None => tools.with_selection(paths.settings.mcp_tools()),
    };
    runtime()?.block_on(lore_server::mcp::serve_stdio_with(tools))
}
