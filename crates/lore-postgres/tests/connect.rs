//! Connecting: the refusal of a server without pgvector, and passwords kept out of every
//! message and description.

use lore_core::{Error, Store};
use lore_postgres::testing::{NO_VECTOR_URL_VAR, TestStore, test_url, url_from};
use lore_postgres::{PostgresOptions, PostgresStore};

/// The password of a `postgres://user:password@…` URL.
fn password(url: &str) -> String {
    let rest = url.split_once("://").unwrap().1;
    let userinfo = rest.rsplit_once('@').unwrap().0;
    userinfo.split_once(':').unwrap().1.to_owned()
}

#[test]
fn a_server_without_pgvector_is_refused_with_how_to_install_it() {
    let Some(url) = url_from(NO_VECTOR_URL_VAR) else {
        return;
    };
    let err = PostgresStore::connect(&url).unwrap_err();
    assert!(matches!(err, Error::Incompatible(_)), "{err:?}");
    let message = err.to_string();
    for needed in ["pgvector", "install", "CREATE EXTENSION vector"] {
        assert!(message.contains(needed), "{message}");
    }
    assert!(!message.contains(&password(&url)), "{message}");
    // Nothing was created: the refusal comes before any table.
    let client = std::process::Command::new("psql")
        .args([
            &url,
            "-Atc",
            "SELECT count(*) FROM pg_tables WHERE tablename = 'lessons'",
        ])
        .output();
    if let Ok(out) = client
        && out.status.success()
    {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    }
}

#[test]
fn no_message_or_description_shows_the_password() {
    let Some(url) = test_url() else {
        return;
    };
    let secret = password(&url);
    let store = TestStore::new(&url).unwrap();
    let info = store.info();
    assert_eq!(info.backend, "postgres");
    assert!(!info.location.contains(&secret), "{info:?}");
    assert!(info.location.contains(store.schema()), "{info:?}");
    assert!(!format!("{:?}", *store).contains(&secret));

    // A wrong password, a closed port and a malformed string all fail without echoing it.
    let wrong = url.replace(&secret, "not-the-password-x9");
    let closed = {
        let (head, tail) = url.rsplit_once('@').unwrap();
        let path = tail.split_once('/').map_or("", |(_, p)| p);
        format!("{head}@127.0.0.1:1/{path}")
    };
    let malformed = format!("{url}?port=notaport");
    for (what, bad, hidden) in [
        ("wrong password", wrong.as_str(), "not-the-password-x9"),
        ("closed port", closed.as_str(), secret.as_str()),
        ("malformed", malformed.as_str(), secret.as_str()),
    ] {
        let err = PostgresStore::open(PostgresOptions::new(bad)).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(hidden), "{what}: {shown}");
    }
}
