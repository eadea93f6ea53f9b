//! Connecting: options, the pool, the schema's migrations, and keeping the password out of
//! every message.

use std::fmt;
use std::str::FromStr;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use lore_core::{Error, Result};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

/// The migrations, in order; migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_init.sql"),
    include_str!("../migrations/0002_knowledge.sql"),
    include_str!("../migrations/0003_tuning.sql"),
    include_str!("../migrations/0004_embedder_progress.sql"),
    include_str!("../migrations/0005_knowledge_changes.sql"),
    include_str!("../migrations/0006_memory_revision.sql"),
    include_str!("../migrations/0007_stemmed_search.sql"),
];

/// The newest schema version this build knows, the one it migrates every database to.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The advisory lock that serializes migrations (and the extension's creation) across every
/// process that opens the database at once: `LORE` in ASCII.
const MIGRATION_LOCK: i64 = 0x4C4F_5245;

/// How to reach the database.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A connection string: `postgres://user:password@host:port/db` or `host=… user=…`.
    pub url: String,
    /// The schema Lore's tables live in; `None` for the connection's default (`public`). Tests
    /// give each store its own, so that they run in parallel on one server.
    pub schema: Option<String>,
    /// The most connections this process holds.
    pub pool_size: usize,
}

impl PostgresOptions {
    /// Options for `url` with the default pool. A `schema=NAME` parameter of a URL names the
    /// schema (and is not passed on to the driver, which knows no such parameter).
    pub fn new(url: impl Into<String>) -> Self {
        let (url, schema) = split_schema(&url.into());
        Self {
            url,
            schema,
            pool_size: 16,
        }
    }
}

/// `url` without its `schema=` query parameter, and that parameter's value.
fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?').filter(|_| url.contains("://")) else {
        return (url.to_owned(), None);
    };
    let mut schema = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.strip_prefix("schema=") {
            Some(name) => {
                schema = Some(name.to_owned());
                false
            }
            None => true,
        })
        .collect();
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, schema)
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &redact_url(&self.url))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// `url` without its password, for messages and `lore memory status`: the `:password` of a
/// URL's user, a `password=` query parameter, or a `password=` key of a key-value string.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let authority = match authority.rsplit_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(name, _)| name);
                format!("{user}@{host}")
            }
            None => authority.to_owned(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|kv| !kv.to_ascii_lowercase().starts_with("password="))
                    .collect();
                if kept.is_empty() {
                    path.to_owned()
                } else {
                    format!("{path}?{}", kept.join("&"))
                }
            }
            None => tail.to_owned(),
        };
        return format!("{scheme}://{authority}{tail}");
    }
    let mut out = Vec::new();
    let mut words = url.split_whitespace();
    while let Some(word) = words.next() {
        if word.to_ascii_lowercase().starts_with("password") {
            // `password = x` spreads over three words, `password=x` is one.
            if word.ends_with('=') || !word.contains('=') {
                if !word.contains('=') {
                    words.next();
                }
                words.next();
            }
            continue;
        }
        out.push(word);
    }
    out.join(" ")
}

/// A failure inside a call, before it becomes the core's [`Error`]: the driver's errors are
/// classified and scrubbed once, where the password is known.
pub(crate) enum Fail {
    Db(tokio_postgres::Error),
    Pool(String),
    Lore(Error),
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Lore(e)
    }
}

impl From<deadpool_postgres::PoolError> for Fail {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => Fail::Db(e),
            other => Fail::Pool(other.to_string()),
        }
    }
}

/// A message, free of the password, as an error's source.
#[derive(Debug)]
struct Scrubbed(String);

impl fmt::Display for Scrubbed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Scrubbed {}

/// Turns failures into the core's errors with the password taken out of every message.
#[derive(Clone)]
pub(crate) struct Scrubber {
    password: Option<String>,
}

impl Scrubber {
    pub(crate) fn error(&self, fail: Fail) -> Error {
        match fail {
            Fail::Lore(e) => e,
            Fail::Db(e) => {
                if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
                    // Another writer stored the same ID between our check and our insert.
                    return Error::Conflict(self.scrub(&format!(
                        "a record with this ID was stored meanwhile ({})",
                        e.as_db_error().map_or("", |d| d.constraint().unwrap_or(""))
                    )));
                }
                if e.code() == Some(&SqlState::DISK_FULL) {
                    return Error::StorageFull(
                        "the PostgreSQL server has no space left on its disk (53100 disk_full), \
                         so nothing of this write was stored; free space on the server, then \
                         send it again"
                            .to_owned(),
                    );
                }
                let text = match e.as_db_error() {
                    Some(db) => format!("{}: {}", db.code().code(), db.message()),
                    None => chain(&e),
                };
                Error::store(Scrubbed(self.scrub(&text)))
            }
            Fail::Pool(text) => Error::store(Scrubbed(self.scrub(&text))),
        }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.password {
            Some(p) if !p.is_empty() => text.replace(p.as_str(), "…"),
            _ => text.to_owned(),
        }
    }
}

/// An error and its causes on one line, each said once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text = format!("{text}: {said}");
        }
        cause = c.source();
    }
    text
}

/// What [`connect`] sets up: the pool, the scrubber, and where the tables live.
pub(crate) struct Connected {
    pub(crate) pool: Pool,
    pub(crate) scrubber: Scrubber,
    pub(crate) location: String,
    pub(crate) schema: Option<String>,
    /// How to open a connection of the pool's kind (the listener needs one of its own).
    pub(crate) config: tokio_postgres::Config,
}

/// Parses the options, opens the pool and brings the schema up to date.
pub(crate) async fn connect(options: &PostgresOptions) -> Result<Connected> {
    let location = redact_url(&options.url);
    let mut config = tokio_postgres::Config::from_str(&options.url).map_err(|_| {
        Error::invalid(
            "store",
            format!(
                "{location} is not a PostgreSQL connection string \
                 (postgres://user:password@host:port/database)"
            ),
        )
    })?;
    let scrubber = Scrubber {
        password: config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
    };
    if config.get_application_name().is_none() {
        config.application_name("lore");
    }
    let schema = match &options.schema {
        Some(name) => Some(checked_schema(name)?),
        None => None,
    };
    let location = match &schema {
        Some(s) => format!("{location} (schema {s})"),
        None => location,
    };
    // One connection first, to create the schema and the extension and to migrate, before the
    // pool's connections are told where to look.
    let (mut client, conn) = config
        .connect(NoTls)
        .await
        .map_err(|e| scrubber.error(Fail::Db(e)))?;
    let driver = tokio::spawn(conn);
    let ext_schema = migrate(&mut client, schema.as_deref())
        .await
        .map_err(|f| scrubber.error(f))?;
    drop(client);
    let _ = driver.await;

    let mut path = Vec::new();
    if let Some(s) = &schema {
        path.push(quote_ident(s));
    }
    path.push(quote_ident(&ext_schema));
    if schema.is_none() {
        path.insert(0, "\"$user\"".into());
        path.insert(1, "public".into());
    }
    config.options(format!("-c search_path={}", path.join(",")));
    let manager = Manager::from_config(
        config.clone(),
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(options.pool_size.max(1))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| Error::store(Scrubbed(scrubber.scrub(&e.to_string()))))?;
    Ok(Connected {
        pool,
        scrubber,
        location,
        schema,
        config,
    })
}

/// A schema name Lore will create: letters, digits and `_`, not starting with a digit.
fn checked_schema(name: &str) -> Result<String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(name.to_owned())
    } else {
        Err(Error::invalid(
            "schema",
            format!("{name:?}: use letters, digits and _ (not first), at most 63"),
        ))
    }
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Creates the schema and the `vector` extension if needed and applies the migrations the
/// database lacks, under an advisory lock; returns the schema the extension lives in.
async fn migrate(
    client: &mut tokio_postgres::Client,
    schema: Option<&str>,
) -> Result<String, Fail> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let ext_schema = ensure_vector(&tx).await?;
    let target = match schema {
        Some(s) => {
            tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(s)))
                .await?;
            s.to_owned()
        }
        None => tx
            .query_one("SELECT current_schema()::text", &[])
            .await?
            .get::<_, Option<String>>(0)
            .ok_or_else(|| {
                Error::Incompatible(
                    "the connection has no schema to create Lore's tables in (search_path)".into(),
                )
            })?,
    };
    tx.batch_execute(&format!(
        "SET LOCAL search_path = {}, {}",
        quote_ident(&target),
        quote_ident(&ext_schema)
    ))
    .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS lore_schema (\
             id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)",
    )
    .await?;
    let current: Option<i32> = tx
        .query_opt("SELECT version FROM lore_schema WHERE id = 1", &[])
        .await?
        .map(|r| r.get(0));
    let current = u32::try_from(current.unwrap_or(0)).unwrap_or(u32::MAX);
    if current > SCHEMA_VERSION {
        return Err(Fail::Lore(Error::Incompatible(format!(
            "the database was written by a newer Lore (schema v{current}; this build knows up \
             to v{SCHEMA_VERSION})"
        ))));
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tracing::info!(schema = %target, to = from + 1, "migrating the Lore schema");
        tx.batch_execute(sql).await?;
    }
    let version = i32::try_from(SCHEMA_VERSION).unwrap_or(i32::MAX);
    tx.execute(
        "INSERT INTO lore_schema (id, version) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        &[&version],
    )
    .await?;
    tx.commit().await?;
    Ok(ext_schema)
}

/// The schema the `vector` extension is installed in, if it is.
async fn vector_schema(tx: &tokio_postgres::Transaction<'_>) -> Result<Option<String>, Fail> {
    let sql = "SELECT n.nspname::text FROM pg_extension e \
               JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'";
    Ok(tx.query_opt(sql, &[]).await?.map(|r| r.get(0)))
}

/// The schema of the `vector` extension, created when the server has it but the database does
/// not yet; a clear refusal, saying what to install, when the server lacks it.
async fn ensure_vector(tx: &tokio_postgres::Transaction<'_>) -> Result<String, Fail> {
    if let Some(schema) = vector_schema(tx).await? {
        return Ok(schema);
    }
    let available = tx
        .query_opt(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'",
            &[],
        )
        .await?
        .is_some();
    if !available {
        return Err(Fail::Lore(Error::Incompatible(
            "the PostgreSQL server has no pgvector extension, which Lore needs for lesson \
             vectors: install pgvector on the database server (the postgresql-<version>-pgvector \
             package, or an image that has it such as pgvector/pgvector), then run \
             `CREATE EXTENSION vector;` in the database as a superuser"
                .into(),
        )));
    }
    tx.batch_execute("SAVEPOINT vector").await?;
    // In `public` when it exists, so that every schema's search path finds the type.
    let created = tx
        .batch_execute(
            "DO $$ BEGIN \
               IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN \
                 CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public; \
               ELSE CREATE EXTENSION IF NOT EXISTS vector; END IF; END $$",
        )
        .await;
    if let Err(e) = created {
        if e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            return Err(Fail::Lore(Error::Incompatible(
                "the database lacks the pgvector extension and this user may not create it: \
                 run `CREATE EXTENSION vector;` in the database as a superuser, once"
                    .into(),
            )));
        }
        return Err(e.into());
    }
    tx.batch_execute("RELEASE SAVEPOINT vector").await?;
    vector_schema(tx)
        .await?
        .ok_or_else(|| Fail::Lore(Error::Incompatible("the vector extension vanished".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password() {
        for (url, want) in [
            (
                "postgres://lore:s3cret@db:5432/lore",
                "postgres://lore@db:5432/lore",
            ),
            ("postgresql://lore@db/lore", "postgresql://lore@db/lore"),
            (
                "postgres://lore:s3cret@db/lore?sslmode=disable&password=s3cret",
                "postgres://lore@db/lore?sslmode=disable",
            ),
            ("postgres://db/lore?password=s3cret", "postgres://db/lore"),
            (
                "host=db user=lore password=s3cret dbname=lore",
                "host=db user=lore dbname=lore",
            ),
            ("host=db password = s3cret user=x", "host=db user=x"),
        ] {
            let redacted = redact_url(url);
            assert_eq!(redacted, want, "{url}");
            assert!(!redacted.contains("s3cret"));
        }
    }

    #[test]
    fn a_schema_parameter_names_the_schema() {
        let o = PostgresOptions::new("postgres://u@h/db?sslmode=disable&schema=team_a");
        assert_eq!(o.url, "postgres://u@h/db?sslmode=disable");
        assert_eq!(o.schema.as_deref(), Some("team_a"));
        let o = PostgresOptions::new("postgres://u@h/db?schema=x");
        assert_eq!(
            (o.url.as_str(), o.schema.as_deref()),
            ("postgres://u@h/db", Some("x"))
        );
        assert_eq!(PostgresOptions::new("host=h").schema, None);
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(checked_schema("lore_test_1").is_ok());
        for bad in ["", "1x", "a-b", "a\"b", "a b", &"x".repeat(64)] {
            assert!(checked_schema(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn options_debug_hides_the_password() {
        let options = PostgresOptions::new("postgres://lore:s3cret@db/lore");
        assert!(!format!("{options:?}").contains("s3cret"));
    }
}
