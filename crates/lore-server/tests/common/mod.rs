//! A temporary Lore home with an example skill, shared by the server's integration tests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use lore_core::skills::SkillLibrary;
use lore_core::{Engine, EngineConfig, SkillPath};
use lore_sqlite::{OpenMode, SqliteStore};
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
    pub fn snapshot(&self) -> Vec<lore_core::store::Record> {
        self.engine.export_records().unwrap()
    }
}
