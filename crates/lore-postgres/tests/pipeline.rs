//! A write of new records is one round trip, and the counters it draws from are locked only
//! while the server runs it: writers on a distant database do not wait for each other's round
//! trips, numbers stay gap-free and in commit order, and a write refused halfway through
//! leaves nothing and draws nothing.
//!
//! The distance is made by a proxy on loopback that holds every byte for [`DELAY`] each way.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lore_core::ports::store::{ChangeCursor, OnDuplicate, Record};
use lore_core::{Error, Store};
use lore_postgres::testing::{TestStore, test_url, with_schema};
use lore_postgres::{PostgresOptions, PostgresStore};
use serde_json::json;

fn execution(n: usize) -> Record {
    lore_postgres::testing::execution(json!({"n": n}))
}

/// One way's delay through the proxy: a round trip costs twice this.
const DELAY: Duration = Duration::from_millis(10);

/// Copies `from` to `to`, each chunk sent `DELAY` after it was read, without holding back the
/// chunks behind it (a long wire, not a slow one).
fn delay_line(mut from: TcpStream, mut to: TcpStream) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0
                || tx
                    .send((Instant::now() + DELAY, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
    });
    thread::spawn(move || {
        for (due, chunk) in rx {
            thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// A proxy to `target` (`host:port`) whose connections are `DELAY` long each way; its address.
fn distant(target: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { break };
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            delay_line(client.try_clone().unwrap(), server.try_clone().unwrap());
            delay_line(server, client);
        }
    });
    address
}

/// `url` with its `host:port` swapped for `address`.
fn through(url: &str, address: &str) -> (String, String) {
    let at = url.rfind('@').expect("the test URL names a user") + 1;
    let end = url[at..].find(['/', '?']).map_or(url.len(), |i| at + i);
    let target = url[at..end].to_owned();
    (format!("{}{address}{}", &url[..at], &url[end..]), target)
}

/// The executions' numbers in the store, in order, through its change feed.
fn numbers(store: &dyn Store) -> Vec<u64> {
    let start = ChangeCursor {
        executions: 0,
        audit: 0,
    };
    let changes = store.changes(start, 10_000).unwrap();
    changes.executions.iter().map(|(seq, _)| *seq).collect()
}

#[test]
fn writers_on_a_distant_database_do_not_wait_for_each_others_round_trips() {
    let Some(url) = test_url() else {
        return;
    };
    // The tables are made over the direct connection; the writers go through the proxy.
    let direct = TestStore::new(&url).unwrap();
    let (_, target) = through(&url, "");
    let (far, _) = through(&url, &distant(target));
    let mut options = PostgresOptions::new(with_schema(&far, direct.schema()));
    options.pool_size = 4;
    let store = PostgresStore::open(options).unwrap();
    // Each connection of the pool prepares its statements once: not what is measured.
    thread::scope(|s| {
        for w in 0..4 {
            let store = &store;
            s.spawn(move || store.write(&[execution(w)], OnDuplicate::Fail).unwrap());
        }
    });

    const WRITERS: usize = 4;
    const EACH: usize = 10;
    let started = Instant::now();
    thread::scope(|s| {
        for w in 0..WRITERS {
            let store = &store;
            s.spawn(move || {
                for i in 0..EACH {
                    store
                        .write(&[execution(100 + w * EACH + i)], OnDuplicate::Fail)
                        .unwrap();
                }
            });
        }
    });
    let took = started.elapsed();
    eprintln!(
        "{} writes through a {DELAY:?} wire: {took:?}",
        WRITERS * EACH
    );
    // Holding the counter over even one round trip serializes the writes at one round trip
    // each: 40 × 20 ms. In one round trip with no wait under the lock, the four writers
    // overlap, each taking about 10 × 20 ms.
    let serialized = DELAY * 2 * u32::try_from(WRITERS * EACH).unwrap();
    assert!(
        took < serialized / 2,
        "{} writes through a {DELAY:?} wire took {took:?}, as if serialized ({serialized:?})",
        WRITERS * EACH
    );
    let seen = numbers(&*direct);
    let all: Vec<u64> = (1..=u64::try_from(WRITERS * EACH + 4).unwrap()).collect();
    assert_eq!(seen, all, "numbers are gap-free and each drawn once");
}

#[test]
fn a_write_refused_halfway_stores_nothing_and_draws_no_number() {
    let Some(url) = test_url() else {
        return;
    };
    let store = TestStore::new(&url).unwrap();
    store
        .write(&[execution(0), execution(1)], OnDuplicate::Fail)
        .unwrap();
    // The server refuses the middle row of the next batch, after the first drew its number.
    store
        .execute_batch(
            "CREATE FUNCTION lore_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.body LIKE '%\"n\":66%' THEN RAISE EXCEPTION 'refused by the test'; \
             END IF; RETURN NEW; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON executions \
             FOR EACH ROW EXECUTE FUNCTION lore_test_refuse();",
        )
        .unwrap();
    let err = store
        .write(
            &[execution(2), execution(66), execution(3)],
            OnDuplicate::Fail,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("refused by the test"),
        "the server's refusal is what is reported: {err}"
    );
    // A batch holding a stored ID is refused whole too, by the careful path.
    let stored = execution(4);
    store
        .write(std::slice::from_ref(&stored), OnDuplicate::Fail)
        .unwrap();
    let err = store
        .write(&[execution(5), stored.clone()], OnDuplicate::Fail)
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    // Skipped instead when asked: the new one stored, the identical stored one left.
    let report = store
        .write(&[execution(6), stored], OnDuplicate::SkipIdentical)
        .unwrap();
    assert_eq!((report.written, report.skipped), (1, 1));
    store.write(&[execution(7)], OnDuplicate::Fail).unwrap();

    assert_eq!(numbers(&*store), vec![1, 2, 3, 4, 5]);
    let count = store
        .counts(&lore_core::Scope::unrestricted())
        .unwrap()
        .executions;
    assert_eq!(count, 5, "nothing of the refused batches was stored");
}
