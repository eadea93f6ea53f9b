//! `lore tokens create|list|revoke`: API tokens for `lore serve`, kept hashed in
//! `.lore/tokens.json`. Once a token exists, the server requires one on every request (a running
//! server too, from its next request) and may listen beyond loopback.

use anyhow::Result;
use clap::Subcommand;
use lore_server::auth::{Role, TokenFile, parse_scope};

use crate::config::Paths;
use crate::output;

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Make a token; it is printed once and stored only as a hash.
    Create {
        /// agent (record, correct, read), reviewer (also edit and retire lessons) or admin.
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// What it may touch: `domain:hr[,skill:hr/screen][,agent:NAME]`; `*` for everything.
        #[arg(long)]
        scope: String,
    },
    /// List tokens (IDs, roles, scopes; never secrets).
    List,
    /// Revoke a token by ID; a running server stops accepting it at once.
    Revoke {
        /// The token's ID (`tok_…`).
        id: String,
    },
}

fn parse_role(raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|e| e.to_string())
}

pub fn run(paths: &Paths, cmd: TokensCommand, json: bool) -> Result<()> {
    std::fs::create_dir_all(&paths.home)?;
    let mut file = TokenFile::load(paths.home.join("tokens.json"))?;
    match cmd {
        TokensCommand::Create { role, scope } => {
            let (record, secret) = file.create(role, parse_scope(&scope)?)?;
            if json {
                return output::json(&serde_json::json!({ "id": record.id, "token": secret }));
            }
            output::line(&secret)?;
            eprintln!(
                "{} ({:?}); the token is shown only once",
                record.id, record.role
            );
            Ok(())
        }
        TokensCommand::List => {
            if json {
                return output::json(file.records());
            }
            for r in file.records() {
                let state = if r.revoked { "revoked" } else { "active" };
                let scope = serde_json::to_string(&r.scope)?;
                output::line(format!("{}  {:?}  {state}  {scope}", r.id, r.role))?;
            }
            Ok(())
        }
        TokensCommand::Revoke { id } => {
            file.revoke(&id)?;
            output::line(format!("{id} revoked"))
        }
    }
}
