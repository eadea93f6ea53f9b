//! Writes through one store wake the followers of every other store on the same schema, and
//! only of that schema.

use std::time::{Duration, Instant};

use lore_core::Store;
use lore_core::ports::store::{OnDuplicate, Record};
use lore_postgres::testing::{TestStore, test_url, with_schema};
use lore_postgres::{PostgresOptions, PostgresStore};

fn execution() -> Record {
    lore_postgres::testing::execution(serde_json::json!({"step": 1}))
}

/// Waits until `store`'s listener announced it listens (its first ring), so that later rings
/// come from writes.
fn listening(store: &PostgresStore) -> u64 {
    let bell = store
        .change_bell()
        .expect("a PostgreSQL store announces writes");
    let started = Instant::now();
    while bell.rung() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never listened"
        );
        bell.wait(0, Duration::from_millis(50));
    }
    bell.rung()
}

#[test]
fn a_write_through_one_store_wakes_another_on_the_same_schema_only() {
    let Some(url) = test_url() else {
        return;
    };
    let a = TestStore::new(&url).unwrap();
    let b = PostgresStore::open(PostgresOptions::new(with_schema(&url, a.schema()))).unwrap();
    let elsewhere = TestStore::new(&url).unwrap();
    let b_bell = b.change_bell().unwrap();

    let mark = listening(&b);
    elsewhere.write(&[execution()], OnDuplicate::Fail).unwrap();
    assert_eq!(
        b_bell.wait(mark, Duration::from_millis(500)),
        mark,
        "a write to another schema woke this store"
    );

    let started = Instant::now();
    a.write(&[execution()], OnDuplicate::Fail).unwrap();
    let rung = b_bell.wait(mark, Duration::from_secs(30));
    assert_ne!(
        rung, mark,
        "a write through another store did not wake this one"
    );
    eprintln!(
        "heard another store's write {:?} after it began",
        started.elapsed()
    );
}
