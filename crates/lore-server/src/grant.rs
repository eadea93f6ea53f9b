//! Who a caller is once authenticated: a role and a scope, whichever credential proved it.
//!
//! Tokens (`auth`) and JWTs (`jwt`) both end in a [`Grant`]; keeping it apart from both lets
//! each verifier depend on it without depending on the other.

use lore_core::model::AuthorKind;
use lore_core::{Error, Result, Scope};
use serde::{Deserialize, Serialize};

/// What a token holder may do, beyond its scope. Ordered: each role can do what those before it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Record executions, correct them, read memory.
    Agent,
    /// Also edit, retire and review lessons.
    Reviewer,
    /// Everything.
    Admin,
}

impl Role {
    /// Who writes under this role: an agent token's corrections are an agent's (they wait for
    /// review where an agent's must), a reviewer's or admin's are a person's. The request body
    /// has no say.
    pub fn author_kind(self) -> AuthorKind {
        match self {
            Self::Agent => AuthorKind::Agent,
            Self::Reviewer | Self::Admin => AuthorKind::Human,
        }
    }

    /// The refusal for a caller with this role asking for something that needs `needed`; every
    /// door says it in these words.
    pub fn refusal(self, needed: Role) -> Error {
        Error::Forbidden(format!(
            "this needs the {} role; the token has {}",
            needed.name(),
            self.name()
        ))
    }

    /// `agent`, `reviewer` or `admin`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Reviewer => "reviewer",
            Self::Admin => "admin",
        }
    }

    /// Parses `agent`, `reviewer` or `admin`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the choices.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "agent" => Ok(Self::Agent),
            "reviewer" => Ok(Self::Reviewer),
            "admin" => Ok(Self::Admin),
            _ => Err(Error::invalid(
                "role",
                format!("{raw:?}; expected agent, reviewer or admin"),
            )),
        }
    }
}

/// What one token allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The token's public ID (never the secret).
    pub token_id: String,
    /// Its role.
    pub role: Role,
    /// Its scope.
    pub scope: Scope,
}
