//! Test support: the test server's address, and stores each in a schema of their own that is
//! dropped afterwards, so that tests share one server and run in parallel.

use std::ops::Deref;

use lore_core::id::ExecutionId;
use lore_core::model::{Execution, Outcome};
use lore_core::ports::store::Record;
use lore_core::{Result, SkillPath};

use crate::{PostgresOptions, PostgresStore};

/// The variable that names the test server (`scripts/ci/postgres` sets it).
pub const URL_VAR: &str = "LORE_TEST_POSTGRES_URL";

/// The variable that names a server without pgvector, for the missing-extension test.
pub const NO_VECTOR_URL_VAR: &str = "LORE_TEST_POSTGRES_NO_VECTOR_URL";

/// The URL in `var`, or `None` to skip a test outside CI.
///
/// # Panics
/// Under `CI=true` when the variable is unset: CI must run every PostgreSQL test.
pub fn url_from(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{var} is not set under CI: scripts/ci/postgres starts the test server")
        }
        _ => {
            eprintln!("skipped: {var} is not set (source scripts/ci/postgres)");
            None
        }
    }
}

/// The test server's URL, or `None` to skip (see [`url_from`]).
pub fn test_url() -> Option<String> {
    url_from(URL_VAR)
}

/// A fresh schema name, unique to this process and call.
pub fn fresh_schema() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "lore_test_{}_{}_{:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    )
}

/// A new accepted execution with `input`, made now under a fresh ID.
///
/// # Panics
/// Never: the skill is a fixed, valid path.
pub fn execution(input: serde_json::Value) -> Record {
    let at = chrono::Utc::now();
    Record::Execution(Execution {
        id: ExecutionId::generate(at),
        skill: SkillPath::parse("hr/resume-screen").expect("a valid skill"),
        timestamp: at,
        input,
        output: serde_json::json!({"ok": true}),
        outcome: Outcome::Accepted,
        cost_usd: None,
        latency_ms: None,
        model: None,
        agent: None,
        session: None,
        lessons_shown: Vec::new(),
        extra: serde_json::Map::new(),
    })
}

/// `url` with a `schema=` parameter, as `lore serve --store` takes it.
pub fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}schema={schema}")
}

/// A store in a schema of its own, dropped with everything in it when the guard drops.
pub struct TestStore {
    store: Option<PostgresStore>,
    schema: String,
}

impl TestStore {
    /// A store in a fresh schema of the server at `url`.
    ///
    /// # Errors
    /// As [`PostgresStore::open`].
    pub fn new(url: &str) -> Result<Self> {
        let schema = fresh_schema();
        let mut options = PostgresOptions::new(url);
        options.schema = Some(schema.clone());
        options.pool_size = 4;
        Ok(Self {
            store: Some(PostgresStore::open(options)?),
            schema,
        })
    }

    /// The schema's name.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Runs `sql` (several statements) in the store's schema: for tests that make the server
    /// misbehave, such as a trigger that answers as a full disk would.
    ///
    /// # Errors
    /// [`lore_core::Error::Store`] when the server refuses.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        let sql = sql.to_owned();
        self.run(move |pool| async move {
            let client = pool.get().await?;
            client.batch_execute(&sql).await?;
            Ok(())
        })
    }
}

impl Deref for TestStore {
    type Target = PostgresStore;

    fn deref(&self) -> &PostgresStore {
        self.store.as_ref().expect("the store lives until drop")
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        if let Some(store) = self.store.take()
            && let Err(err) = store.drop_schema()
        {
            eprintln!("could not drop test schema {}: {err}", self.schema);
        }
    }
}
