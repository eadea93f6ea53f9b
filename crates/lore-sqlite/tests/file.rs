//! What only a file-backed store has to get right: reopening, migrating, and refusing files that
//! are not its own without touching them.

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use lore_core::id::ExecutionId;
use lore_core::model::{Execution, Outcome};
use lore_core::ports::store::{ListFilter, OnDuplicate, Record};
use lore_core::{Error, SkillPath, Store};
use lore_sqlite::{APPLICATION_ID, OpenMode, SCHEMA_VERSION, SqliteStore};
use rusqlite::Connection;
use serde_json::json;
use tempfile::TempDir;

fn temp() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lore.db");
    (dir, path)
}

fn execution(word: &str) -> Execution {
    let at = Utc.with_ymd_and_hms(2026, 2, 20, 12, 43, 41).unwrap();
    Execution {
        id: ExecutionId::generate(at),
        skill: SkillPath::parse("hr/resume-screen").unwrap(),
        timestamp: at,
        input: json!({"candidate": word}),
        output: json!({"overall_score": 72}),
        outcome: Outcome::Accepted,
        cost_usd: None,
        latency_ms: None,
        model: None,
        agent: None,
        session: None,
        lessons_shown: Vec::new(),
        extra: Default::default(),
    }
}

fn write(store: &SqliteStore, execution: &Execution) {
    let batch = [Record::Execution(execution.clone())];
    store.write(&batch, OnDuplicate::Fail).unwrap();
}

/// The refusal message, after checking that opening in either mode refuses `path`, names it,
/// and leaves the folder byte-for-byte as it was (no journal or WAL file left behind).
fn refused(path: &Path) -> String {
    let folder = path.parent().unwrap();
    let before = snapshot(folder);
    let mut messages = Vec::new();
    for mode in [OpenMode::Create, OpenMode::Existing] {
        match SqliteStore::open(path, mode) {
            Err(Error::Incompatible(message)) => messages.push(message),
            other => panic!("{} was not refused: {other:?}", path.display()),
        }
        let after = snapshot(folder);
        assert!(
            after == before,
            "the folder changed: {:?} -> {:?}",
            sizes(&before),
            sizes(&after)
        );
    }
    assert_eq!(messages[0], messages[1]);
    assert!(
        messages[0].contains(&path.display().to_string()),
        "{}",
        messages[0]
    );
    messages.remove(0)
}

fn snapshot(folder: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn sizes(files: &[(String, Vec<u8>)]) -> Vec<(&str, usize)> {
    files
        .iter()
        .map(|(name, bytes)| (name.as_str(), bytes.len()))
        .collect()
}

fn pragma(path: &Path, name: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_one(None, name)
        .unwrap()
}

#[test]
fn reopening_keeps_the_data() {
    let (_dir, path) = temp();
    let first = execution("Zoë Ünal");
    write(&SqliteStore::open(&path, OpenMode::Create).unwrap(), &first);

    let store = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    assert_eq!(store.execution(&first.id).unwrap(), Some(first.clone()));
    let hits = store.search("zoë", &ListFilter::default(), 5).unwrap();
    assert_eq!(hits.len(), 1);
    let info = store.info();
    assert_eq!(info.backend, "sqlite");
    assert_eq!(info.location, path.display().to_string());
    assert_eq!(info.schema_version, SCHEMA_VERSION);
}

#[test]
fn migrations_run_once() {
    let (_dir, path) = temp();
    for _ in 0..3 {
        let store = SqliteStore::open(&path, OpenMode::Create).unwrap();
        write(&store, &execution("again"));
    }
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
    assert_eq!(pragma(&path, "application_id"), i64::from(APPLICATION_ID));
    let store = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    assert_eq!(store.executions(&ListFilter::default()).unwrap().len(), 3);
}

#[test]
fn the_file_uses_wal() {
    let (_dir, path) = temp();
    let _store = SqliteStore::open(&path, OpenMode::Create).unwrap();
    let conn = Connection::open(&path).unwrap();
    let mode: String = conn.pragma_query_one(None, "journal_mode").unwrap();
    assert_eq!(mode, "wal");
}

/// Writers that never pause keep the WAL bounded: past 64 MiB the writer finishes the
/// background checkpoint itself, the next commit starts the log again from its beginning, and
/// `journal_size_limit` cuts the file back. Unbounded, these writes would leave well over
/// 200 MiB of log (each carries 16 KiB of text, stored twice: row and full-text copy).
#[test]
fn sustained_writes_keep_the_wal_bounded() {
    const LIMIT: u64 = 64 * 1024 * 1024;
    let (_dir, path) = temp();
    let store = SqliteStore::open(&path, OpenMode::Create).unwrap();
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let text = "lorem ".repeat(16 * 1024 / 6);
    let largest = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for thread in 0..4 {
            let (store, wal, text, largest) = (&store, &wal, &text, &largest);
            s.spawn(move || {
                for i in 0..1000 {
                    write(store, &execution(&format!("{thread} {i} {text}")));
                    let len = fs::metadata(wal).map(|m| m.len()).unwrap_or(0);
                    largest.fetch_max(len, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let largest = largest.into_inner();
    assert!(
        largest < LIMIT + LIMIT / 2,
        "the WAL reached {} MiB",
        largest >> 20
    );
    let count = store
        .counts(&lore_core::Scope::unrestricted())
        .unwrap()
        .executions;
    assert_eq!(count, 4000, "every write landed");
}

#[test]
fn two_handles_on_one_file_see_each_other() {
    let (_dir, path) = temp();
    let a = SqliteStore::open(&path, OpenMode::Create).unwrap();
    let b = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    let record = execution("shared");
    write(&a, &record);
    assert_eq!(b.execution(&record.id).unwrap(), Some(record));
    write(&b, &execution("other"));
    assert_eq!(a.executions(&ListFilter::default()).unwrap().len(), 2);
}

#[test]
fn create_makes_the_folders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/lore.db");
    SqliteStore::open(&path, OpenMode::Create).unwrap();
    assert!(path.is_file());
}

#[test]
fn an_empty_file_is_initialized() {
    let (_dir, path) = temp();
    fs::write(&path, b"").unwrap();
    let store = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    write(&store, &execution("fresh"));
    assert_eq!(pragma(&path, "application_id"), i64::from(APPLICATION_ID));
}

#[test]
fn existing_mode_on_a_missing_file_is_not_found() {
    let (_dir, path) = temp();
    match SqliteStore::open(&path, OpenMode::Existing) {
        Err(Error::NotFound { kind: "store", id }) => assert_eq!(id, path.display().to_string()),
        other => panic!("{other:?}"),
    }
    assert!(!path.exists(), "Existing mode must not create the file");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_untouched() {
    let (_dir, path) = temp();
    for content in [&b"name,score\nzoe,72\n"[..], b"SQLit", &[0u8; 4096]] {
        fs::write(&path, content).unwrap();
        let message = refused(&path);
        assert!(
            message.ends_with("is not a Lore database (not an SQLite file)"),
            "{message}"
        );
    }
}

#[test]
fn a_damaged_sqlite_file_is_refused_untouched() {
    let (_dir, path) = temp();
    let mut content = b"SQLite format 3\0".to_vec();
    content.extend([0xAB; 4080]);
    fs::write(&path, content).unwrap();
    let message = refused(&path);
    assert!(message.contains("is not a Lore database"), "{message}");
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let (_dir, path) = temp();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
        .unwrap();
    drop(conn);
    let message = refused(&path);
    assert!(message.contains("is not a Lore database"), "{message}");

    // Another application's ID refuses the file even before it has tables, in WAL mode too.
    let (_dir, path) = temp();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA application_id = 1234;")
        .unwrap();
    drop(conn);
    let message = refused(&path);
    assert!(message.contains("is not a Lore database"), "{message}");
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let (_dir, path) = temp();
    write(
        &SqliteStore::open(&path, OpenMode::Create).unwrap(),
        &execution("x"),
    );
    let newer = SCHEMA_VERSION + 1;
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let message = refused(&path);
    let expected = format!(
        "{} was written by a newer Lore (schema v{newer}; this build knows up to \
         v{SCHEMA_VERSION})",
        path.display()
    );
    assert_eq!(message, expected);
}

#[test]
fn a_schema_still_in_the_wal_is_seen_and_refused() {
    // Another application holds the file open in WAL mode: its tables are in the `-wal` file,
    // and the main file's header still looks like an empty database.
    let (_dir, path) = temp();
    let other = Connection::open(&path).unwrap();
    other
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; \
             CREATE TABLE notes (body TEXT);",
        )
        .unwrap();
    let before = fs::read(&path).unwrap();
    let cookie = before.get(40..44);
    assert!(
        cookie.is_none_or(|c| c == [0; 4]),
        "the header alone would refuse the file"
    );
    match SqliteStore::open(&path, OpenMode::Create) {
        Err(Error::Incompatible(message)) => {
            assert!(message.contains("is not a Lore database"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(fs::read(&path).unwrap() == before, "the main file changed");
    let tables: i64 = other
        .query_row("SELECT COUNT(*) FROM sqlite_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tables, 1);
}

/// A v1 file's lessons get revisions when migration 0002 runs, so the first index build of an
/// upgraded store sees every lesson, and later writes move the revision on.
#[test]
fn upgrading_a_v1_file_gives_its_lessons_revisions() {
    let (_dir, path) = temp();
    let at = Utc.with_ymd_and_hms(2026, 2, 20, 12, 0, 0).unwrap();
    let lesson = |rule: &str| -> lore_core::model::Lesson {
        serde_json::from_value(json!({
            "id": lore_core::id::LessonId::generate(at),
            "skill": "ops/deploy", "mistake": "m", "root_cause": "c", "rule": rule,
            "applies_when": "w", "tiers": {"summary": rule, "condition": "", "action": "",
            "rationale": ""}, "confidence": 0.8, "source": "manual", "status": "approved",
            "created_at": at, "updated_at": at,
        }))
        .unwrap()
    };
    let (a, b) = (lesson("first"), lesson("second"));
    // A file as a v1 build wrote it: its schema, its stamp, two lesson rows.
    let v1 =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/0001_init.sql"))
            .unwrap();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&v1).unwrap();
    for l in [&a, &b] {
        conn.execute(
            "INSERT INTO lessons (id, skill, domain, timestamp, status, body) \
             VALUES (?, 'ops/deploy', 'ops', '2026-02-20T12:00:00.000000000Z', 'approved', ?)",
            [l.id.to_string(), serde_json::to_string(l).unwrap()],
        )
        .unwrap();
    }
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;"
    ))
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
    let all = lore_core::Scope::unrestricted();
    let changes = store.lessons_changed(&all, 0).unwrap();
    let ids: Vec<_> = changes.lessons.iter().map(|l| l.id.clone()).collect();
    assert_eq!(ids, vec![a.id.clone(), b.id.clone()]);
    assert_eq!(store.lesson_revision().unwrap(), changes.revision);
    let c = lesson("third");
    store
        .write(&[Record::Lesson(c.clone())], OnDuplicate::Fail)
        .unwrap();
    let later = store.lessons_changed(&all, changes.revision).unwrap();
    assert_eq!(later.lessons, vec![c]);
    assert!(later.revision > changes.revision);
}

/// A v13 file indexed its text word for word; upgrading indexes the same rows by their stem,
/// under the rowids that tie them to their records, so an old store's search finds what a
/// new one does.
#[test]
fn upgrading_a_v13_file_reads_its_indexed_text_by_stem() {
    let (_dir, path) = temp();
    let at = Utc.with_ymd_and_hms(2026, 2, 20, 12, 0, 0).unwrap();
    let lesson: lore_core::model::Lesson = serde_json::from_value(json!({
        "id": lore_core::id::LessonId::generate(at),
        "skill": "ops/deploy", "mistake": "m", "root_cause": "c",
        "rule": "Review the systems designs before a release", "applies_when": "w",
        "tiers": {"summary": "s", "condition": "", "action": "", "rationale": ""},
        "confidence": 0.8, "source": "manual", "status": "approved",
        "created_at": at, "updated_at": at,
    }))
    .unwrap();
    let conn = Connection::open(&path).unwrap();
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let mut files: Vec<PathBuf> = fs::read_dir(&migrations)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in &files[..13] {
        conn.execute_batch(&fs::read_to_string(file).unwrap())
            .unwrap();
    }
    conn.execute(
        "INSERT INTO lessons (id, skill, domain, timestamp, status, body) \
         VALUES (?, 'ops/deploy', 'ops', '2026-02-20T12:00:00.000000000Z', 'approved', ?)",
        [
            lesson.id.to_string(),
            serde_json::to_string(&lesson).unwrap(),
        ],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO lessons_fts (rowid, rule, applies_when, mistake, root_cause, tags, summary) \
         SELECT rowid, ?, 'w', 'm', 'c', '', 's' FROM lessons WHERE id = ?",
        [lesson.rule.clone(), lesson.id.to_string()],
    )
    .unwrap();
    let word_for_word: i64 = conn
        .query_row(
            "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH 'system'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(word_for_word, 0, "v13 reads words as they are");
    conn.execute_batch(&format!(
        "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 13;"
    ))
    .unwrap();
    drop(conn);

    let store = SqliteStore::open(&path, OpenMode::Existing).unwrap();
    assert_eq!(pragma(&path, "user_version"), i64::from(SCHEMA_VERSION));
    let hits = store
        .search("system design", &ListFilter::default(), 10)
        .unwrap();
    let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, [lesson.id.as_str()], "{hits:?}");
}
