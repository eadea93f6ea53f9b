//! Where Lore keeps things, resolved once from flags, the environment and the working directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use lore_core::Store;
use lore_core::ports::llm::{Llm, PriceTable};
use lore_engine::{Engine, EngineConfig};
use lore_providers::LlmConfig;
use lore_providers::embedders::{EmbedderConfig, EmbedderKind};
use lore_providers::tokenizer::{Encoding, Tiktoken};
use lore_recall::Embedder;
use lore_sqlite::{OpenMode, SqliteStore};
use lore_workspace::skills::SkillLibrary;

use crate::cli::Global;
use crate::cli::{ReformulateArgs, ReformulatorKind};
use crate::settings::{self, Settings};

/// The store file's name inside the home folder.
pub const DB_FILE: &str = "lore.db";
const HOME_DIR: &str = ".lore";

/// Resolved locations.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The `.lore/` folder.
    pub home: PathBuf,
    /// The `skills/` folder.
    pub skills: PathBuf,
    /// Where `WORKSPACE.md` lookups stop.
    pub project_root: PathBuf,
    /// Curation settings from the global flags (`--curation`, `--human-corrections`).
    pub engine_config: EngineConfig,
    /// The embedder for dense recall (`--embedder`).
    pub embedder: EmbedderKind,
    /// Whether the home was named (`--home`, `LORE_HOME`) or found above the working directory,
    /// rather than defaulted to `./.lore`.
    pub located: bool,
    /// Where the records live (`--store`, `DATABASE_URL`).
    pub store: StoreLocation,
    /// `lore.toml`, the environment and `--set`.
    pub settings: Settings,
    /// The scope `--as` names: who the commands act as.
    pub acting: Option<lore_core::Scope>,
}

/// Where the records live.
#[derive(Clone)]
pub enum StoreLocation {
    /// An SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database, by connection string (which may hold a password).
    Postgres(String),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StoreLocation {
    /// Reads `--store`: `postgres://…`/`postgresql://…` or `postgres:URL`, `sqlite:PATH`;
    /// `None` means the default file in `home`.
    pub fn parse(raw: Option<&str>, cwd: &Path, home: &Path) -> Result<Self> {
        let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(Self::Sqlite(home.join(DB_FILE)));
        };
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            return Ok(Self::Postgres(raw.to_owned()));
        }
        if let Some(url) = raw.strip_prefix("postgres:") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        if let Some(path) = raw.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            return Ok(Self::Sqlite(absolute(cwd, Path::new(path))));
        }
        anyhow::bail!(
            "--store {}: name a PostgreSQL URL (postgres://user:password@host/db) or sqlite:PATH",
            redact(raw)
        )
    }

    /// The store for messages, without a password.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => path.display().to_string(),
            Self::Postgres(url) => redact(url),
        }
    }

    /// Opens the store; `mode` says whether a missing SQLite file may be created.
    pub fn open(&self, mode: OpenMode) -> Result<Arc<dyn Store>> {
        match self {
            Self::Sqlite(path) => {
                let store = SqliteStore::open(path, mode).map_err(|err| match err {
                    lore_core::Error::NotFound { .. } => anyhow::anyhow!(
                        "no Lore store at {}; run `lore init` (or `lore record`) first",
                        path.display()
                    ),
                    other => other.into(),
                })?;
                Ok(Arc::new(store))
            }
            Self::Postgres(url) => open_postgres(url),
        }
    }
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Result<Arc<dyn Store>> {
    let store = lore_postgres::PostgresStore::connect(url)
        .with_context(|| format!("cannot open the store at {}", redact(url)))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(url: &str) -> Result<Arc<dyn Store>> {
    anyhow::bail!(
        "{} is a PostgreSQL store, and this build of lore has no PostgreSQL support: build it \
         with `--features postgres`",
        redact(url)
    )
}

/// A fresh schema on the PostgreSQL server at `url` for a benchmark: the store, and what drops
/// the schema afterwards.
pub struct ScratchStore {
    #[cfg(feature = "postgres")]
    store: Arc<lore_postgres::PostgresStore>,
}

impl ScratchStore {
    /// The store, for the benchmark to hold while it runs.
    pub fn open(&self) -> Arc<dyn Store> {
        #[cfg(feature = "postgres")]
        {
            Arc::clone(&self.store) as Arc<dyn Store>
        }
        #[cfg(not(feature = "postgres"))]
        unreachable!("made only with the postgres feature")
    }

    /// Drops the schema and everything in it.
    pub fn finish(self) -> Result<()> {
        #[cfg(feature = "postgres")]
        self.store.drop_schema()?;
        Ok(())
    }
}

/// A [`ScratchStore`] in a new schema of the server at `url`.
#[cfg(feature = "postgres")]
pub fn bench_postgres(url: &str) -> Result<ScratchStore> {
    let mut options = lore_postgres::PostgresOptions::new(url);
    options.schema = Some(format!("lore_bench_{}", std::process::id()));
    let store = lore_postgres::PostgresStore::open(options)
        .with_context(|| format!("cannot open the store at {}", redact(url)))?;
    Ok(ScratchStore {
        store: Arc::new(store),
    })
}

/// Without the `postgres` feature there is no PostgreSQL store to measure.
#[cfg(not(feature = "postgres"))]
pub fn bench_postgres(url: &str) -> Result<ScratchStore> {
    open_postgres(url).map(|_| ScratchStore {})
}

/// A connection string without its password.
fn redact(url: &str) -> String {
    #[cfg(feature = "postgres")]
    {
        lore_postgres::redact_url(url)
    }
    #[cfg(not(feature = "postgres"))]
    {
        // Without the driver, keep only the scheme and host: enough to recognize it.
        match url.split_once("://") {
            Some((scheme, rest)) => {
                let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
                format!("{scheme}://{host}")
            }
            None => "(a connection string)".to_owned(),
        }
    }
}

impl Paths {
    /// `--home`/`LORE_HOME` wins; otherwise the nearest `.lore/` above the working directory;
    /// otherwise `./.lore`. The project root is the folder holding `.lore/`.
    pub fn resolve(global: &Global) -> Result<Self> {
        let cwd = std::env::current_dir().context("cannot read the working directory")?;
        let located = global.home.is_some() || cwd.ancestors().any(|d| d.join(HOME_DIR).is_dir());
        let (home, project_root) = match &global.home {
            Some(home) => {
                let home = absolute(&cwd, home);
                let root = if home.file_name().is_some_and(|n| n == HOME_DIR) {
                    home.parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_else(|| cwd.clone())
                } else {
                    cwd.clone()
                };
                (home, root)
            }
            None => match cwd.ancestors().find(|d| d.join(HOME_DIR).is_dir()) {
                Some(root) => (root.join(HOME_DIR), root.to_path_buf()),
                None => (cwd.join(HOME_DIR), cwd.clone()),
            },
        };
        let skills = global
            .skills
            .as_ref()
            .map(|s| absolute(&cwd, s))
            .unwrap_or_else(|| project_root.join("skills"));
        let settings = match &global.config {
            Some(file) => Settings::load(&absolute(&cwd, file), true, &global.set)?,
            None => Settings::load(&home.join(settings::FILE), false, &global.set)?,
        };
        let mut engine_config = EngineConfig {
            curation: global.curation,
            human_corrections: global.human_corrections,
            ..EngineConfig::default()
        };
        settings.apply(&mut engine_config);
        let store = StoreLocation::parse(global.store.as_deref(), &cwd, &home)?;
        let acting = global
            .acting
            .as_deref()
            .map(lore_server::auth::parse_scope)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--as: {e}"))?;
        Ok(Self {
            acting,
            home,
            skills,
            project_root,
            engine_config,
            embedder: global.embedder,
            located,
            store,
            settings,
        })
    }

    /// Refuses to go on outside a project: no `.lore/` here or above, no `--home` and no
    /// `--store`. A default `./.lore` would be a new, empty store nobody meant, started by a
    /// command run from the wrong folder (or by a client that starts `lore mcp` in `/`).
    ///
    /// # Errors
    /// Saying how to name the project or make one.
    pub fn require_project(&self) -> Result<()> {
        let default_store =
            matches!(&self.store, StoreLocation::Sqlite(path) if *path == self.db());
        if self.located || !default_store {
            return Ok(());
        }
        anyhow::bail!(
            "no .lore folder in {} or above it: run this inside a project, give the store with \
             --home /path/to/project/.lore (or LORE_HOME), or run `lore init` here to start one",
            self.project_root.display()
        )
    }

    /// The folder of `skill` under the skills folder.
    pub fn skill_dir(&self, skill: &lore_core::SkillPath) -> PathBuf {
        self.skills.join(skill.domain()).join(skill.name())
    }

    /// The default store file in the home (the store itself may be elsewhere: `--store`).
    pub fn db(&self) -> PathBuf {
        self.home.join(DB_FILE)
    }

    /// Whether the store exists: a database server's always does (it is created on connect).
    pub fn store_exists(&self) -> bool {
        match &self.store {
            StoreLocation::Sqlite(path) => path.exists(),
            StoreLocation::Postgres(_) => true,
        }
    }

    /// An Engine over the store; `mode` says whether a missing store may be created.
    pub fn engine(&self, mode: OpenMode) -> Result<Engine> {
        // `--home /proj` for `/proj/.lore` would otherwise start a second, empty store.
        if let StoreLocation::Sqlite(path) = &self.store {
            let nested = self.home.join(HOME_DIR).join(DB_FILE);
            if *path == self.db() && !path.exists() && nested.is_file() {
                anyhow::bail!(
                    "no Lore store at {}, but there is one at {}: --home names the `.lore` \
                     folder itself (--home {})",
                    path.display(),
                    nested.display(),
                    self.home.join(HOME_DIR).display()
                );
            }
        }
        self.configure(self.store.open(mode)?)
    }

    /// An Engine configured as [`Paths::engine`]'s, over a new store at `db`.
    pub fn engine_at(&self, db: &Path) -> Result<Engine> {
        self.configure(Arc::new(SqliteStore::open(db, OpenMode::Create)?))
    }

    fn configure(&self, store: Arc<dyn Store>) -> Result<Engine> {
        let mut engine = Engine::new(store, self.engine_config)
            .with_skills(SkillLibrary::new(&self.skills, &self.project_root))
            .with_proposer_config(self.settings.proposer())?;
        if let Some(learned) = self.settings.learned_skills(&self.project_root) {
            engine = engine.with_learned_skills(learned);
        }
        // Every command gets the configured embedder, since writing a lesson embeds it too; the
        // builtin one is the Engine's own default, so only a model or service is loaded here.
        let (engine, semantic) = match self.embedder {
            EmbedderKind::Builtin => (engine, false),
            _ => {
                let embedder = self.embedder()?;
                let semantic = embedder.semantic();
                (engine.with_embedder(embedder), semantic)
            }
        };
        let engine = self.settings.configure_recall(engine, semantic);
        Ok(match &self.acting {
            Some(scope) => engine.scoped(scope.clone()),
            None => engine,
        })
    }

    /// The embedder `--embedder` names, with its settings from the environment.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        let config = EmbedderConfig::from_env()?.with_kind(self.embedder);
        lore_providers::embedders::connect(&config)
            .with_context(|| format!("cannot use the {} embedder", self.embedder.as_str()))
    }
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

impl ReformulateArgs {
    /// `engine` with the loop these arguments ask for.
    pub fn apply(&self, engine: Engine) -> Result<Engine> {
        use lore_engine::{LexicalReformulator, ModelReformulator, Reformulation, Reformulator};
        let Some(kind) = self.reformulate else {
            return Ok(engine);
        };
        let reformulator: Arc<dyn Reformulator> = match kind {
            ReformulatorKind::Lexical => Arc::new(LexicalReformulator),
            ReformulatorKind::Model => {
                let config = lore_providers::LlmConfig::from_env()
                    .context("the model configuration is invalid")?;
                if config.kind == lore_providers::ProviderKind::Offline {
                    anyhow::bail!(
                        "--reformulate model needs a model: set LORE_LLM_PROVIDER (and its key), \
                         or use --reformulate lexical"
                    );
                }
                Arc::new(ModelReformulator::new(lore_providers::connect(&config)))
            }
        };
        Ok(engine.with_reformulation(Reformulation::new(self.reformulate_rounds, reformulator)?))
    }
}

/// The price file users extend, inside the store folder.
const PRICES_FILE: &str = "prices.json";

/// The configured model; offline, an error that says how to configure one.
pub fn required_model() -> Result<Arc<dyn Llm>> {
    let config = LlmConfig::from_env().context("the model configuration is invalid")?;
    Ok(lore_providers::connect(&config))
}

/// The built-in prices extended by `.lore/prices.json`, when it exists.
pub fn prices(paths: &Paths) -> Result<PriceTable> {
    let path = paths.home.join(PRICES_FILE);
    if !path.is_file() {
        return Ok(PriceTable::default());
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    PriceTable::default()
        .with_overrides(&text)
        .with_context(|| format!("in {}", path.display()))
}

/// The model the environment configures; `None` offline.
pub fn configured_model() -> Result<Option<Arc<dyn Llm>>> {
    let config = LlmConfig::from_env().context("the model configuration is invalid")?;
    Ok(match config.kind {
        lore_providers::ProviderKind::Offline => None,
        _ => Some(lore_providers::connect(&config)),
    })
}

/// `engine` with a proposer when a model is configured; offline, the distiller alone. The
/// same model writes digests and judges evaluation questions.
pub fn with_proposer(engine: lore_engine::Engine) -> Result<lore_engine::Engine> {
    Ok(match configured_model()? {
        Some(llm) => engine.with_proposer(llm),
        None => engine,
    })
}

/// `engine` counting episode and graph budgets in cl100k_base tokens: the CLI's reads, `lore
/// serve` and `lore mcp` all go through here, so one episode is cut at the same token whichever
/// of them answers.
pub fn counting_episodes(engine: lore_engine::Engine) -> Result<lore_engine::Engine> {
    Ok(engine.with_episode_tokenizer(Tiktoken::shared(Encoding::Cl100k)?))
}
