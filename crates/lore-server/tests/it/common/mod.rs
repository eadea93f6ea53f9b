//! A temporary Lore home with an example skill, shared by the server's integration tests.

#![allow(dead_code)]

pub mod server;

use std::path::PathBuf;
use std::sync::Arc;

use lore_core::SkillPath;
use lore_engine::{Engine, EngineConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use lore_workspace::skills::SkillLibrary;
use tempfile::TempDir;

/// The skill every fixture has a folder for.
pub const SKILL: &str = "support/summarize-ticket";

/// A store and skills folder in a temporary directory.
pub struct Home {
    pub dir: TempDir,
    pub engine: Arc<Engine>,
}

impl Home {
    pub fn new() -> Self {
        Self::with_config(EngineConfig::default())
    }

    /// A home whose Engine runs with `config` (review curation, for instance).
    pub fn with_config(config: EngineConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let lore = dir.path().join(".lore");
        std::fs::create_dir_all(&lore).unwrap();
        let store = SqliteStore::open(lore.join("lore.db"), OpenMode::Create).unwrap();
        let skills = SkillLibrary::new(dir.path().join("skills"), dir.path());
        skills
            .write_example(&SkillPath::parse(SKILL).unwrap())
            .unwrap();
        let engine = Engine::new(Arc::new(store), config).with_skills(skills);
        Self {
            dir,
            engine: Arc::new(engine),
        }
    }

    pub fn lore_home(&self) -> PathBuf {
        self.dir.path().join(".lore")
    }

    /// Every stored record, to show that a refused request changed nothing.
    pub fn snapshot(&self) -> Vec<lore_core::ports::store::Record> {
        self.engine.export_records().unwrap()
    }
}

/// Test-only JWT keys and minting. The Ed25519 pairs in `tests/fixtures` were made for these
/// tests with `openssl genpkey -algorithm ed25519` and protect nothing.
pub mod jwt {
    use std::path::PathBuf;

    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    use lore_server::jwt::{JwtConfig, JwtVerifier};
    use serde_json::{Value, json};

    pub const ISSUER: &str = "https://id.test";
    pub const AUDIENCE: &str = "lore";
    pub const SECRET: &[u8] = b"a test secret of more than thirty-two bytes";

    pub fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    fn pem(name: &str) -> Vec<u8> {
        std::fs::read(fixture(name)).unwrap()
    }

    pub fn public_pem() -> Vec<u8> {
        pem("ed25519-test-public.pem")
    }

    /// A verifier with the HS256 secret, the EdDSA public key, or both.
    pub fn verifier(hs256: bool, eddsa: bool) -> JwtVerifier {
        JwtVerifier::new(JwtConfig {
            hs256_secret: hs256.then(|| SECRET.to_vec()),
            eddsa_public_pem: eddsa.then(public_pem),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
        })
        .unwrap()
        .unwrap()
    }

    pub fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    /// Valid claims for `role` over `domains` (`["*"]` for all), an hour to live.
    pub fn claims(role: &str, domains: &[&str]) -> Value {
        json!({
            "iss": ISSUER, "aud": AUDIENCE, "sub": "test-client",
            "exp": now() + 3600, "nbf": now() - 10,
            "role": role, "domains": domains,
        })
    }

    pub fn hs256(claims: &Value) -> String {
        hs256_with(claims, SECRET)
    }

    pub fn hs256_with(claims: &Value, secret: &[u8]) -> String {
        let key = EncodingKey::from_secret(secret);
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).unwrap()
    }

    pub fn eddsa(claims: &Value) -> String {
        eddsa_with(claims, "ed25519-test-private.pem")
    }

    pub fn eddsa_with(claims: &Value, private_key: &str) -> String {
        let key = EncodingKey::from_ed_pem(&pem(private_key)).unwrap();
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), claims, &key).unwrap()
    }

    /// An unsigned token (`alg: none`), which must never be accepted.
    pub fn unsigned(claims: &Value) -> String {
        use base64::Engine as _;
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            b64(claims)
        )
    }
}

/// The `id` of each item of a JSON array.
pub fn ids(items: &serde_json::Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An object's field names, sorted: what two doors' answers are compared by.
pub fn fields(object: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = object
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {object}"))
        .keys()
        .cloned()
        .collect();
    names.sort_unstable();
    names
}
