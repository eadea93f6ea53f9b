//! API tokens: opaque to the client, stored hashed, each carrying a role and a scope.
//!
//! A token is `lore_` and 64 hex digits (256 random bits). The server keeps only its SHA-256:
//! a slow password hash buys nothing for a secret with that much entropy, and a fast one keeps
//! verification off the request's critical path. Tokens live in `tokens.json` beside the store,
//! not in it, because they are the server's business and the `Store` port is the core's.
//!
//! The file is re-read when it changes, so `lore tokens create` and `lore tokens revoke` take
//! effect on the next request without a restart. Whether authentication is on is asked of the
//! file on every request (a `stat`, and a re-read only when the file changed): a server started
//! before any token existed requires one from the moment `lore tokens create` writes the first,
//! even from another process. Once on, it stays on: a server that has seen a token keeps
//! refusing unauthenticated requests even if every token is later revoked (it fails closed).
//! JWTs ([`crate::jwt`]) carry the same grant in signed claims and are accepted beside opaque
//! tokens when `lore serve` is given a key.
//!
//! Every authenticated request gets `engine.scoped(grant.scope)`: reads outside the scope
//! return nothing and writes outside it are refused, by the Engine itself. The role adds what
//! the scope cannot say: agents record, correct, read and recall; reviewers also edit, retire
//! and review lessons; admins may do anything, including reading `/metrics`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use lore_core::{Error, Result, Scope, SkillPath};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
pub use crate::grant::{Grant, Role};
use crate::jwt::{JwtVerifier, Refused};

/// Every opaque token starts with this.
const TOKEN_PREFIX: &str = "lore_";

/// Who the audit names for requests to a server without tokens: anyone on the machine.
pub const ANONYMOUS: &str = "anonymous";

/// Parses `domain:hr,skill:hr/screen,agent:bot-1,role:screener,department:hr`; empty or `*`
/// is unrestricted. `role` is the agent's role in the organization, not the token's permission.
///
/// # Errors
/// [`Error::Invalid`] for an unknown key or a malformed skill path.
pub fn parse_scope(raw: &str) -> Result<Scope> {
    let mut scope = Scope::unrestricted();
    for part in raw
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty() && *p != "*")
    {
        match part.split_once(':') {
            Some(("domain", d)) if !d.is_empty() => {
                lore_core::scope::check_domain(d)?;
                scope.domains.get_or_insert_default().insert(d.to_owned());
            }
            Some(("skill", s)) => {
                scope
                    .skills
                    .get_or_insert_default()
                    .insert(SkillPath::parse(s)?);
            }
            Some(("agent", a)) if !a.is_empty() => {
                lore_core::limits::name("agent", a)?;
                scope.agent = Some(a.to_owned());
            }
            Some(("role", r)) => {
                lore_core::scope::check_org_name("role", r)?;
                scope.role = Some(r.to_owned());
            }
            Some(("department", d)) => {
                lore_core::scope::check_org_name("department", d)?;
                scope.department = Some(d.to_owned());
            }
            _ => {
                return Err(Error::invalid(
                    "scope",
                    format!(
                        "{part:?}; use domain:NAME, skill:DOMAIN/SKILL, agent:NAME, role:NAME \
                         or department:NAME"
                    ),
                ));
            }
        }
    }
    Ok(scope)
}

/// One stored token: its hash, never its secret.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The public ID, for listing and revoking.
    pub id: String,
    /// SHA-256 of the secret, hex.
    pub sha256: String,
    /// Its role.
    pub role: Role,
    /// Its scope.
    pub scope: Scope,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// Whether it has been revoked.
    #[serde(default)]
    pub revoked: bool,
}

/// The token file: `tokens.json` beside the store.
#[derive(Debug)]
pub struct TokenFile {
    path: PathBuf,
    records: Vec<TokenRecord>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

impl TokenFile {
    /// Reads `path`; a missing file holds no tokens.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read, [`Error::Invalid`] when it is not a token file.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let records = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::invalid("token file", format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&path, e)),
        };
        Ok(Self { path, records })
    }

    /// The tokens, revoked ones included.
    pub fn records(&self) -> &[TokenRecord] {
        &self.records
    }

    /// Whether any token is still valid.
    pub fn any_active(&self) -> bool {
        self.records.iter().any(|r| !r.revoked)
    }

    /// Makes a token and saves the file; returns its record and the secret, shown only now.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn create(&mut self, role: Role, scope: Scope) -> Result<(TokenRecord, String)> {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let secret = format!("{TOKEN_PREFIX}{}", hex(&bytes));
        let mut id = [0u8; 4];
        rand::rng().fill_bytes(&mut id);
        let record = TokenRecord {
            id: format!("tok_{}", hex(&id)),
            sha256: digest(&secret),
            role,
            scope,
            created_at: chrono::Utc::now().to_rfc3339(),
            revoked: false,
        };
        self.records.push(record.clone());
        self.save()?;
        Ok((record, secret))
    }

    /// Revokes the token with `id` and saves the file.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown ID; [`Error::Io`] when the file cannot be written.
    pub fn revoke(&mut self, id: &str) -> Result<()> {
        let record = self
            .records
            .iter_mut()
            .find(|r| r.id == id)
            .ok_or_else(|| Error::not_found("token", id))?;
        record.revoked = true;
        self.save()
    }

    fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(&self.records).expect("tokens serialize");
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        restrict(&tmp);
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(&self.path, e))
    }

    fn grants(&self) -> HashMap<String, Grant> {
        self.records
            .iter()
            .filter(|r| !r.revoked)
            .map(|r| {
                let grant = Grant {
                    token_id: r.id.clone(),
                    role: r.role,
                    scope: r.scope.clone(),
                };
                (r.sha256.clone(), grant)
            })
            .collect()
    }
}

/// Only the owner may read the token file (the hashes are not secrets, but the scopes are
/// nobody else's business).
fn restrict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Who may call the server.
#[derive(Clone, Debug)]
pub enum Access {
    /// Anyone who can connect, for good: loopback only (see [`crate::check_bind`]). Tests and
    /// embedders that never use tokens; `lore serve` uses [`Access::new`], which watches the
    /// token file.
    Open,
    /// Bearer credentials: opaque tokens from the token file, and JWTs when keys are configured.
    /// Until the token file holds a token (and without JWTs) requests need none; see
    /// [`Verifiers::required`].
    Verified(Arc<Verifiers>),
}

/// What checks a bearer credential.
#[derive(Debug)]
pub struct Verifiers {
    tokens: Tokens,
    jwt: Option<JwtVerifier>,
    /// Set once a token has been seen (or from the start with JWTs); never cleared.
    required: AtomicBool,
}

impl Verifiers {
    /// Whether requests must carry a credential now: with JWTs always; otherwise from the
    /// moment the token file holds an active token, and for good after that.
    pub fn required(&self) -> bool {
        if self.required.load(Ordering::Acquire) {
            return true;
        }
        if self.tokens.any_active() {
            self.required.store(true, Ordering::Release);
            return true;
        }
        false
    }
}

impl Access {
    /// Access over the token file `file` was read from, watched for changes.
    pub fn from_file(file: &TokenFile) -> Self {
        Self::new(file, None)
    }

    /// Access over the token file `file` was read from, and JWTs when `jwt` is given. The file
    /// is watched: tokens created or revoked later, by any process, count from the next request,
    /// and the first token created turns authentication on without a restart.
    pub fn new(file: &TokenFile, jwt: Option<JwtVerifier>) -> Self {
        let required = file.any_active() || jwt.is_some();
        Self::Verified(Arc::new(Verifiers {
            tokens: Tokens::new(file),
            jwt,
            required: AtomicBool::new(required),
        }))
    }

    /// Whether requests must carry a credential now.
    pub fn is_authenticated(&self) -> bool {
        match self {
            Self::Verified(v) => v.required(),
            Self::Open => false,
        }
    }

    /// The JWT verifier, when JWTs are accepted.
    pub fn jwt(&self) -> Option<&JwtVerifier> {
        match self {
            Self::Verified(v) => v.jwt.as_ref(),
            Self::Open => None,
        }
    }

    /// The grant of a request's `Authorization: Bearer` credential; `None` when access is open.
    ///
    /// # Errors
    /// [`ApiError`] 401 when credentials are required and the request has no valid one.
    pub fn grant(&self, headers: &HeaderMap) -> Result<Option<Grant>, ApiError> {
        let Self::Verified(verifiers) = self else {
            return Ok(None);
        };
        if !verifiers.required() {
            return Ok(None);
        }
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                ApiError::unauthenticated("send `Authorization: Bearer <token>`; see `lore tokens`")
            })?
            .trim();
        // Opaque tokens have a prefix no JWT can start with (a JWT begins with its base64url
        // header), so the two kinds never compete for one credential.
        if !presented.starts_with(TOKEN_PREFIX)
            && let Some(jwt) = &verifiers.jwt
        {
            return jwt
                .verify(presented)
                .map(Some)
                .map_err(|Refused(why)| ApiError::unauthenticated(why));
        }
        verifiers
            .tokens
            .verify(presented)
            .map(Some)
            .ok_or_else(|| ApiError::unauthenticated("the token is unknown or revoked"))
    }
}

/// Grants by the SHA-256 of their token.
type Grants = Arc<HashMap<String, Grant>>;

/// The verifier a running server uses: the token file's grants, refreshed when it changes.
#[derive(Debug)]
pub struct Tokens {
    path: PathBuf,
    cache: RwLock<(Option<Version>, Grants)>,
}

impl Tokens {
    /// Loads the grants of `file`.
    pub fn new(file: &TokenFile) -> Self {
        Self {
            path: file.path.clone(),
            cache: RwLock::new((version(&file.path), Arc::new(file.grants()))),
        }
    }

    /// Whether the file holds an active token now (a `stat`; re-read only when it changed).
    pub fn any_active(&self) -> bool {
        self.refresh();
        !self.cache.read().expect("token cache").1.is_empty()
    }

    /// The grant of a presented token, if it is valid and not revoked.
    pub fn verify(&self, presented: &str) -> Option<Grant> {
        self.refresh();
        let grants = Arc::clone(&self.cache.read().expect("token cache").1);
        grants.get(&digest(presented)).cloned()
    }

    fn refresh(&self) {
        let now = version(&self.path);
        if self.cache.read().expect("token cache").0 == now {
            return;
        }
        // An unreadable or half-written file keeps the old grants; a deleted one has none.
        let grants = match TokenFile::load(&self.path) {
            Ok(file) => file.grants(),
            Err(err) => {
                tracing::warn!(%err, "token file not reloaded");
                return;
            }
        };
        *self.cache.write().expect("token cache") = (now, Arc::new(grants));
    }
}

/// What identifies one version of the token file. File times are coarse (a few milliseconds on
/// Linux), so the inode, which every save changes by renaming a new file into place, and the
/// length are part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn version(path: &Path) -> Option<Version> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Version {
        modified: meta.modified().ok(),
        len: meta.len(),
        inode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_from_the_command_line_form() {
        let s = parse_scope("domain:hr,skill:hr/screen,agent:bot").unwrap();
        assert_eq!(s.domains, Some(["hr".to_owned()].into()));
        assert!(s.allows(&SkillPath::parse("hr/screen").unwrap()));
        assert!(!s.allows(&SkillPath::parse("hr/other").unwrap()));
        assert_eq!(s.agent.as_deref(), Some("bot"));
        assert_eq!(parse_scope("*").unwrap(), Scope::unrestricted());
        let member = parse_scope("domain:hr,agent:bot,role:screener,department:people").unwrap();
        assert_eq!(member.role.as_deref(), Some("screener"));
        assert_eq!(member.department.as_deref(), Some("people"));
        assert!(member.is_member());
        for bad in ["role:", "role:Screener", "department:a/b", "role:../x"] {
            let err = parse_scope(bad).unwrap_err().to_string();
            assert!(
                err.contains("role") || err.contains("department"),
                "{bad}: {err}"
            );
        }
        for bad in ["domain:", "team:x", "skill:../x", "hr"] {
            assert!(parse_scope(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_hashes_are_stored_and_revocation_is_seen_without_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        let mut file = TokenFile::load(&path).unwrap();
        assert!(!file.any_active());
        let (record, secret) = file.create(Role::Agent, Scope::domains(["hr"])).unwrap();
        let stored = std::fs::read_to_string(&path).unwrap();
        assert!(!stored.contains(&secret[5..]), "the secret was stored");
        assert!(stored.contains(&record.sha256));

        let tokens = Tokens::new(&TokenFile::load(&path).unwrap());
        assert_eq!(tokens.verify(&secret).unwrap().role, Role::Agent);
        assert!(tokens.verify("lore_0000").is_none());

        let mut file = TokenFile::load(&path).unwrap();
        file.revoke(&record.id).unwrap();
        assert!(
            tokens.verify(&secret).is_none(),
            "a revoked token still works"
        );
        assert!(matches!(
            file.revoke("tok_nope"),
            Err(Error::NotFound { .. })
        ));
    }
}
