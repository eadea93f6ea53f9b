//! The store conformance suite, run against `PostgresStore` on the test server, each test in a
//! schema of its own so that they run in parallel.

use lore_postgres::testing::{TestStore, test_url};

lore_store_tests::conformance_tests!(match test_url() {
    Some(url) => TestStore::new(&url).expect("the test server accepts a new schema"),
    None => return,
});
