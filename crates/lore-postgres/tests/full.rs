//! A server out of disk space: PostgreSQL's `disk_full` (53100) is the core's `StorageFull`,
//! nothing of the refused write is stored, and the store reports itself not writable until a
//! write of its own succeeds again. The server is made to answer as a full disk would by a
//! trigger in the test's own schema (raising the very error code), since filling a real disk
//! under a shared test server would stop every other test.

use lore_core::ports::store::{ListFilter, OnDuplicate, Record};
use lore_core::{Error, Store};
use lore_postgres::testing::{TestStore, test_url};
use serde_json::json;

fn execution(n: u32) -> Record {
    lore_postgres::testing::execution(json!({"n": n}))
}

const FULL: &str = "CREATE FUNCTION lore_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' \
     USING ERRCODE = 'disk_full'; END $$; \
     CREATE TRIGGER full_executions BEFORE INSERT ON executions \
     FOR EACH ROW EXECUTE FUNCTION lore_test_disk_full(); \
     CREATE TRIGGER full_revision BEFORE UPDATE ON memory_revision \
     FOR EACH ROW EXECUTE FUNCTION lore_test_disk_full();";

const ROOM: &str = "DROP TRIGGER full_executions ON executions; \
     DROP TRIGGER full_revision ON memory_revision;";

#[test]
fn a_full_disk_is_storage_full_until_a_write_succeeds_again() {
    let Some(url) = test_url() else {
        return;
    };
    let store = TestStore::new(&url).unwrap();
    let before = execution(0);
    store
        .write(std::slice::from_ref(&before), OnDuplicate::Fail)
        .unwrap();
    store.check_writable().unwrap();

    store.execute_batch(FULL).unwrap();
    let err = store.write(&[execution(1)], OnDuplicate::Fail).unwrap_err();
    let Error::StorageFull(message) = &err else {
        panic!("a full disk is not StorageFull: {err:?}");
    };
    assert!(
        message.contains("53100") && message.contains("nothing of this write"),
        "{message}"
    );
    assert!(matches!(store.check_writable(), Err(Error::StorageFull(_))));
    assert!(
        matches!(store.check_writable(), Err(Error::StorageFull(_))),
        "still full"
    );

    store.execute_batch(ROOM).unwrap();
    store.check_writable().unwrap();
    let after = execution(2);
    store
        .write(std::slice::from_ref(&after), OnDuplicate::Fail)
        .unwrap();
    let ids: Vec<String> = store
        .executions(&ListFilter::default())
        .unwrap()
        .into_iter()
        .map(|e| e.id.to_string())
        .collect();
    assert_eq!(ids, vec![before.id().to_owned(), after.id().to_owned()]);
}
