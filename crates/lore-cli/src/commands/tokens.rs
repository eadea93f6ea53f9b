//! `lore tokens create|list|revoke`: API tokens for `lore serve`, kept hashed in
//! `.lore/tokens.json`. Once a token exists, the server requires one on every request (a running
//! server too, from its next request) and may listen beyond loopback.

use anyhow::Result;
use lore_server::auth::{TokenFile, parse_scope};

use crate::cli::TokensCommand;
use crate::config::Paths;
use crate::output;

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
