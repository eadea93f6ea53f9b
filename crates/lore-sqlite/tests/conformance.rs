//! The store conformance suite, run against `SqliteStore` on real files in temporary folders.

use lore_sqlite::{OpenMode, SqliteStore};
use lore_store_tests::TempStore;

fn store() -> TempStore<SqliteStore> {
    TempStore::new(|dir| SqliteStore::open(dir.join("lore.db"), OpenMode::Create))
}

lore_store_tests::conformance_tests!(store());
