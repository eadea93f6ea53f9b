//! The arguments of `lore serve` and `lore mcp`, and the Search-and-Ask settings they share with `lore memory search`.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The address to listen on. Without tokens (`lore tokens create`) or a JWT key only
    /// loopback addresses are accepted.
    #[arg(long, default_value = "127.0.0.1:7077")]
    pub addr: SocketAddr,
    /// Accept HS256 JWTs signed with the secret in this file (at least 32 bytes). The secret
    /// may instead come from the LORE_JWT_SECRET environment variable.
    #[arg(long, value_name = "FILE")]
    pub jwt_secret_file: Option<PathBuf>,
    /// Accept EdDSA (Ed25519) JWTs verified with the public key in this PEM file.
    #[arg(long, value_name = "FILE")]
    pub jwt_public_key: Option<PathBuf>,
    /// The issuer (`iss`) JWTs must name; required with a JWT key.
    #[arg(long, env = "LORE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// A host name (or `name:port`) MCP clients use to reach this server; repeatable. `/mcp`
    /// answers loopback names and the address it listens on, and these.
    #[arg(long = "mcp-host", value_name = "HOST")]
    pub mcp_hosts: Vec<String>,
    /// Serve MCP without sessions: each request stands alone, so any of several servers behind
    /// a proxy answers any request (deploy/compose.postgres.yaml's servers run so). Clients get
    /// no session ID and no stream of server-sent messages between their requests.
    #[arg(long, env = "LORE_MCP_STATELESS")]
    pub mcp_stateless: bool,
    /// The audience (`aud`) JWTs must include.
    #[arg(long, env = "LORE_JWT_AUDIENCE", default_value = "lore")]
    pub jwt_audience: String,
    #[command(flatten)]
    pub reformulate: ReformulateArgs,
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub reformulate: ReformulateArgs,
    /// The tools to offer, comma-separated: tool names, the groups `loop` (recall_memory,
    /// search_memory, get_lesson, record_execution, report_signal, correct), `lessons`,
    /// `review`, `org`, `episodes`, `knowledge`, `memory`, `embedder`, or `all`. By default
    /// `mcp.tools` from lore.toml (or LORE_MCP_TOOLS), else `loop`: every tool's description
    /// costs the model tokens on every turn. Over HTTP, `/mcp?tools=loop,episodes` chooses.
    #[arg(long, value_name = "LIST")]
    pub tools: Option<String>,
}

/// Who decides, in the Search-and-Ask loop, whether a search found enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReformulatorKind {
    /// No model: terms the best results share widen the query; with nothing found, inflected
    /// words lose their endings.
    Lexical,
    /// The configured model (LORE_LLM_PROVIDER and its key) reads the results and proposes
    /// the next query.
    Model,
}

/// The Search-and-Ask loop of `search_memory`: when a search finds too little, ask again with a
/// better query.
#[derive(Clone, Debug, clap::Args)]
pub struct ReformulateArgs {
    /// After a search that found too little, search again with a better query and merge the
    /// results by ID. Off when absent.
    #[arg(long, value_enum)]
    pub reformulate: Option<ReformulatorKind>,
    /// Searches after the first, 1 to 5.
    #[arg(long, default_value_t = 2, requires = "reformulate")]
    pub reformulate_rounds: usize,
}
