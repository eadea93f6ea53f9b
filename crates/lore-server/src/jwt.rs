//! JSON Web Tokens, for deployments where an identity provider issues the credentials: HS256
//! (a shared secret) and EdDSA (Ed25519; the server holds only the public key).
//!
//! A JWT carries the same grant as an opaque token, in claims:
//!
//! ```json
//! {"iss": "https://id.example", "aud": "lore", "exp": 1767225600,
//!  "role": "agent", "domains": ["hr"], "skills": ["hr/screen"], "agent": "bot-1"}
//! ```
//!
//! `exp`, `iss` and `aud` are required and checked, and `nbf` when present. `domains` is
//! required too (`["*"]` for every domain): a token whose issuer forgot the scope gets nothing,
//! not everything. The algorithm is taken from the keys the server was given, never from the
//! token: a token signed with HS256 is refused by a server that only has an EdDSA public key
//! (otherwise the public key could be used as an HMAC secret), and `alg: none` is never valid.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use lore_core::{Error, Result, Scope, SkillPath};
use serde::Deserialize;

use crate::grant::{Grant, Role};

/// HS256 secrets shorter than this are refused: the HMAC is only as strong as its key.
pub const MIN_SECRET_BYTES: usize = 32;

/// How `lore serve` was told to verify JWTs.
pub struct JwtConfig {
    /// The HS256 shared secret.
    pub hs256_secret: Option<Vec<u8>>,
    /// The EdDSA public key, PEM (SubjectPublicKeyInfo).
    pub eddsa_public_pem: Option<Vec<u8>>,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The `aud` every token must include.
    pub audience: String,
}

// Written by hand so that the secret cannot reach a log through `{:?}`.
impl fmt::Debug for JwtConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtConfig")
            .field(
                "hs256_secret",
                &self.hs256_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("eddsa_public_pem", &self.eddsa_public_pem.is_some())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish()
    }
}

/// Checks JWTs against the configured keys, issuer and audience.
pub struct JwtVerifier {
    keys: Vec<(Algorithm, DecodingKey)>,
    issuer: String,
    audience: String,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("algorithms", &self.algorithms())
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// Why a JWT was refused; the message is safe to return to the client.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

/// The claims Lore reads; others (`iat`, `jti`, ...) are allowed and ignored.
#[derive(Debug, Deserialize)]
struct Claims {
    sub: Option<String>,
    role: String,
    /// `domain_scope` is the claim's name in tokens minted for agentura-style gateways; either
    /// name takes a list, or one domain as a string.
    #[serde(alias = "domain_scope", deserialize_with = "one_or_many")]
    domains: Vec<String>,
    #[serde(default)]
    skills: Option<Vec<String>>,
    #[serde(default)]
    agent: Option<String>,
    /// The agent's role in the organization (`role` is the permission).
    #[serde(default)]
    org_role: Option<String>,
    #[serde(default)]
    department: Option<String>,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Domains {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Domains::deserialize(d)? {
        Domains::One(one) => vec![one],
        Domains::Many(many) => many,
    })
}

impl JwtVerifier {
    /// A verifier for `config`; `None` when it names no key.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a short secret, an unreadable PEM, or an empty issuer or audience.
    pub fn new(config: JwtConfig) -> Result<Option<Self>> {
        let mut keys = Vec::new();
        if let Some(secret) = &config.hs256_secret {
            if secret.len() < MIN_SECRET_BYTES {
                return Err(Error::invalid(
                    "JWT secret",
                    format!(
                        "it is {} bytes; HS256 needs at least {MIN_SECRET_BYTES} random bytes",
                        secret.len()
                    ),
                ));
            }
            keys.push((Algorithm::HS256, DecodingKey::from_secret(secret)));
        }
        if let Some(pem) = &config.eddsa_public_pem {
            let key = DecodingKey::from_ed_pem(pem).map_err(|e| {
                Error::invalid(
                    "JWT public key",
                    format!("not an Ed25519 public key in PEM form ({e})"),
                )
            })?;
            keys.push((Algorithm::EdDSA, key));
        }
        if keys.is_empty() {
            return Ok(None);
        }
        for (what, value) in [
            ("JWT issuer", &config.issuer),
            ("JWT audience", &config.audience),
        ] {
            if value.trim().is_empty() {
                return Err(Error::invalid(
                    what,
                    "it is empty; tokens are checked against it",
                ));
            }
        }
        Ok(Some(Self {
            keys,
            issuer: config.issuer,
            audience: config.audience,
        }))
    }

    /// Reads an HS256 secret from a file, without its trailing newline.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read.
    pub fn read_secret(path: &Path) -> Result<Vec<u8>> {
        let mut bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
            bytes.pop();
        }
        Ok(bytes)
    }

    /// The algorithms accepted, for the start-up message.
    pub fn algorithms(&self) -> Vec<&'static str> {
        self.keys
            .iter()
            .map(|(alg, _)| match alg {
                Algorithm::EdDSA => "EdDSA",
                _ => "HS256",
            })
            .collect()
    }

    /// The issuer tokens must name.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience tokens must name.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The grant a valid token carries.
    ///
    /// # Errors
    /// [`Refused`] saying what is wrong: malformed, expired, not yet valid, signed with an
    /// algorithm or key this server does not accept, the wrong issuer or audience, or claims
    /// that do not make a scope.
    pub fn verify(&self, token: &str) -> Result<Grant, Refused> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            Refused("the JWT is malformed or its algorithm is not supported".into())
        })?;
        let Some((alg, key)) = self.keys.iter().find(|(alg, _)| *alg == header.alg) else {
            return Err(Refused(format!(
                "JWTs signed with {:?} are not accepted here; this server accepts {}",
                header.alg,
                self.algorithms().join(", ")
            )));
        };
        let mut validation = Validation::new(*alg);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.validate_nbf = true;
        validation.leeway = 30;
        let claims = jsonwebtoken::decode::<Claims>(token, key, &validation)
            .map_err(|e| Refused(refusal(e.kind())))?
            .claims;
        grant(claims).map_err(|e| Refused(format!("the JWT's claims are invalid: {e}")))
    }
}

fn refusal(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the JWT has expired".into(),
        ErrorKind::ImmatureSignature => "the JWT is not valid yet (nbf)".into(),
        ErrorKind::InvalidSignature => "the JWT's signature does not verify".into(),
        ErrorKind::InvalidIssuer => {
            "the JWT's issuer (iss) is not the one this server trusts".into()
        }
        ErrorKind::InvalidAudience => {
            "the JWT's audience (aud) does not include this server".into()
        }
        ErrorKind::InvalidAlgorithm => "the JWT's algorithm does not match the key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the JWT has no {claim:?} claim"),
        ErrorKind::Json(_) | ErrorKind::InvalidClaimFormat(_) => {
            "the JWT's claims are missing or malformed (role and domains, or domain_scope, are \
             required, once each)"
                .into()
        }
        _ => "the JWT is malformed".into(),
    }
}

/// A claim that names who acts: within the name limit and free of control characters.
fn actor_name(field: &str, value: &str) -> Result<()> {
    lore_core::limits::name(field, value)?;
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            field,
            "holds a control character (a line break?)",
        ));
    }
    Ok(())
}

fn grant(claims: Claims) -> Result<Grant> {
    let role = Role::parse(&claims.role)?;
    let mut scope = Scope::unrestricted();
    if claims.domains.is_empty() {
        return Err(Error::invalid(
            "domains",
            "empty; use [\"*\"] for every domain",
        ));
    }
    if !claims.domains.iter().any(|d| d == "*") {
        let mut domains = BTreeSet::new();
        for d in claims.domains {
            if d.trim().is_empty() {
                return Err(Error::invalid("domains", "an empty domain"));
            }
            domains.insert(d);
        }
        scope.domains = Some(domains);
    }
    if let Some(skills) = claims.skills {
        scope.skills = Some(
            skills
                .iter()
                .map(|s| SkillPath::parse(s))
                .collect::<Result<_>>()?,
        );
    }
    // Both become the audit's actor and show in every record the token writes: a name, never
    // a 100 KB blob or a line of its own.
    if let Some(agent) = &claims.agent {
        actor_name("agent", agent)?;
    }
    if let Some(sub) = &claims.sub {
        actor_name("sub", sub)?;
    }
    scope.agent = claims.agent.filter(|a| !a.is_empty());
    if let Some(role) = claims.org_role {
        lore_core::scope::check_org_name("org_role", &role)?;
        scope.role = Some(role);
    }
    if let Some(department) = claims.department {
        lore_core::scope::check_org_name("department", &department)?;
        scope.department = Some(department);
    }
    Ok(Grant {
        token_id: format!("jwt:{}", claims.sub.as_deref().unwrap_or("-")),
        role,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(extra: serde_json::Value) -> Claims {
        let mut base = serde_json::json!({"role": "agent", "domains": ["hr"], "agent": "bot"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn domain_scope_is_accepted_beside_domains_as_a_list_or_one_domain() {
        let scoped = |claims: serde_json::Value| {
            let claims: Claims = serde_json::from_value(claims).unwrap();
            grant(claims).unwrap().scope.domains
        };
        let hr = Some(BTreeSet::from(["hr".to_owned()]));
        assert_eq!(
            scoped(serde_json::json!({"role": "agent", "domain_scope": ["hr"]})),
            hr
        );
        assert_eq!(
            scoped(serde_json::json!({"role": "agent", "domain_scope": "hr"})),
            hr
        );
        assert_eq!(
            scoped(serde_json::json!({"role": "agent", "domains": "hr"})),
            hr
        );
        assert_eq!(
            scoped(serde_json::json!({"role": "agent", "domain_scope": "*"})),
            None
        );
        let both = serde_json::json!({"role": "agent", "domains": ["hr"], "domain_scope": ["*"]});
        assert!(
            serde_json::from_value::<Claims>(both).is_err(),
            "two names for one claim are refused, never one chosen silently"
        );
    }

    #[test]
    fn org_role_and_department_claims_make_a_member() {
        let g = grant(claims(
            serde_json::json!({"org_role": "screener", "department": "people"}),
        ))
        .unwrap();
        assert_eq!(g.role, Role::Agent, "`role` stays the permission");
        assert_eq!(g.scope.role.as_deref(), Some("screener"));
        assert_eq!(g.scope.department.as_deref(), Some("people"));
        let err = grant(claims(serde_json::json!({"org_role": "Bad Name"}))).unwrap_err();
        assert!(err.to_string().contains("org_role"), "{err}");
    }

    #[test]
    fn an_actor_claim_is_a_name_never_a_blob_or_a_line() {
        assert!(grant(claims(serde_json::json!({"sub": "user-7"}))).is_ok());
        for (field, bad) in [
            ("agent", "a".repeat(100_000)),
            ("agent", "bot\u{0}x".to_owned()),
            ("agent", "bot\nactor: admin".to_owned()),
            ("sub", "u\nforged audit line".to_owned()),
            ("sub", "s".repeat(100_000)),
        ] {
            let err = grant(claims(serde_json::json!({ field: bad }))).unwrap_err();
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
    }
}
