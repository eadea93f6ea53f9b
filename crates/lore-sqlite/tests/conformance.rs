//! The store conformance suite, run against `SqliteStore` on real files in temporary folders.

use lore_core::conformance::TempStore;
use lore_sqlite::{OpenMode, SqliteStore};

fn store() -> TempStore<SqliteStore> {
    TempStore::new(|dir| SqliteStore::open(dir.join("lore.db"), OpenMode::Create))
}

lore_core::conformance_tests!(store());
