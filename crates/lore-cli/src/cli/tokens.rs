//! The arguments of `lore tokens`.

use clap::Subcommand;
use lore_server::auth::Role;

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
