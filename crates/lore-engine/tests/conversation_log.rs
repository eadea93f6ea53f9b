//! The conversation log's search over real SQLite files: a reply is found by the words of the
//! question it answers, filters and the limit hold, the index follows writes made through
//! another handle on the same file, and an entry is embedded once per process.

#[path = "embedders/counting.rs"]
mod counting;
#[path = "curation/support.rs"]
mod support;

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use counting::Counting;
use lore_core::model::CurationMode;
use lore_core::ports::clock::Clock;
use lore_core::{Error, Scope, SkillPath};
use lore_engine::{Engine, EngineConfig, MemoryHit};
use lore_sqlite::{OpenMode, SqliteStore};
use support::{Project, SKILL};

fn skill() -> SkillPath {
    SkillPath::parse(SKILL).unwrap()
}

/// The question's words appear in the question only; its answer shares none of them.
const QUESTION: &str = "Which cluster hosts our payment gateway now?";
const ANSWER: &str = "Frankfurt, since March.";

/// Chatter in another session, sharing no word with the question either.
const CHATTER: [(&str, &str); 10] = [
    ("user", "Can you reset my password for the portal?"),
    ("agent", "Sure, a reset link went to your inbox."),
    ("user", "Printer on floor three is jammed again."),
    ("agent", "Facilities will look at it today."),
    ("user", "What time does the all-hands meeting start?"),
    ("agent", "At four in the afternoon."),
    ("user", "Please book a room for the design review."),
    ("agent", "Room Aurora is booked for Tuesday."),
    ("user", "The coffee machine needs descaling."),
    ("agent", "Noted, tablets are ordered."),
];

fn write_chat(engine: &Engine, s: &SkillPath) {
    for (speaker, text) in CHATTER {
        engine
            .recall_write(s, "chat-2", Some(speaker), text)
            .unwrap();
    }
    for (speaker, text) in [("user", QUESTION), ("agent", ANSWER), ("user", "Thanks!")] {
        engine
            .recall_write(s, "chat-1", Some(speaker), text)
            .unwrap();
    }
}

fn texts(hits: &[MemoryHit]) -> Vec<&str> {
    hits.iter().map(|h| h.entry.text.as_str()).collect()
}

#[test]
fn a_reply_is_found_by_the_words_of_the_question_it_answers() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    write_chat(&p.engine, &s);
    let hits = p
        .engine
        .recall_read(&s, None, Some("which cluster hosts the payment gateway"), 2)
        .unwrap();
    let mut found = texts(&hits);
    found.sort_unstable();
    assert_eq!(found, [ANSWER, QUESTION], "{hits:?}");
    assert!(hits[0].score >= hits[1].score && hits[1].score > 0.0);
    // What comes back is the entry as written, not the document it was found by.
    let answer = hits.iter().find(|h| h.entry.text == ANSWER).unwrap();
    assert_eq!(answer.entry.author.as_deref(), Some("agent"));
    assert_eq!(answer.entry.session.as_deref(), Some("chat-1"));
}

#[test]
fn session_skill_scope_and_limit_still_hold() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    write_chat(&p.engine, &s);
    let other = SkillPath::parse("support/other").unwrap();
    p.engine
        .recall_write(&other, "chat-1", Some("user"), QUESTION)
        .unwrap();
    let query = Some("payment gateway cluster");

    let all = p.engine.recall_read(&s, None, query, 50).unwrap();
    assert_eq!(
        all.len(),
        CHATTER.len() + 3,
        "every entry of the skill ranks"
    );
    assert!(all.iter().all(|h| h.entry.skill == s), "{all:?}");
    assert!(all.windows(2).all(|w| w[0].score >= w[1].score));

    let limited = p.engine.recall_read(&s, None, query, 3).unwrap();
    assert_eq!(texts(&limited), texts(&all[..3]));

    let chatter = p.engine.recall_read(&s, Some("chat-2"), query, 50).unwrap();
    assert_eq!(chatter.len(), CHATTER.len());
    assert!(
        chatter
            .iter()
            .all(|h| h.entry.session.as_deref() == Some("chat-2"))
    );
    let none = p.engine.recall_read(&s, Some("chat-9"), query, 5).unwrap();
    assert!(none.is_empty(), "{none:?}");

    for limit in [0, 51] {
        let err = p.engine.recall_read(&s, None, query, limit).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{limit}: {err}");
    }
    let finance = p.engine.scoped(Scope::domains(["finance"]));
    assert!(matches!(
        finance.recall_read(&s, None, query, 5),
        Err(Error::Forbidden(_))
    ));
}

/// A clock that stays where it is set.
struct Fixed(DateTime<Utc>);

impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

#[test]
fn the_index_follows_writes_made_through_another_handle_on_the_same_file() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    write_chat(&p.engine, &s);
    let query = Some("which cluster hosts the payment gateway");
    assert_eq!(p.engine.recall_read(&s, None, query, 2).unwrap().len(), 2);

    let store = SqliteStore::open(p.dir.path().join("lore.db"), OpenMode::Existing).unwrap();
    let later = Utc.with_ymd_and_hms(2026, 3, 2, 9, 0, 0).unwrap();
    let other = Engine::new(Arc::new(store), EngineConfig::default());
    // After everything indexed: appended to the index.
    let appended = other.clone().with_clock(Arc::new(Fixed(later)));
    appended
        .recall_write(
            &s,
            "chat-3",
            Some("user"),
            "Is the kestrel rollout finished?",
        )
        .unwrap();
    appended
        .recall_write(&s, "chat-3", Some("agent"), "Yes, every region.")
        .unwrap();
    let hits = p.engine.recall_read(&s, None, Some("kestrel"), 2).unwrap();
    let mut found = texts(&hits);
    found.sort_unstable();
    assert_eq!(
        found,
        ["Is the kestrel rollout finished?", "Yes, every region."]
    );

    // Filed before everything indexed (another process's clock): the index is rebuilt.
    let earlier = Utc.with_ymd_and_hms(2026, 2, 1, 9, 0, 0).unwrap();
    let filed = other.with_clock(Arc::new(Fixed(earlier)));
    filed
        .recall_write(&s, "chat-0", Some("user"), "Who owns the osprey dashboard?")
        .unwrap();
    let hits = p.engine.recall_read(&s, None, Some("osprey"), 1).unwrap();
    assert_eq!(texts(&hits), ["Who owns the osprey dashboard?"]);
    let hits = p.engine.recall_read(&s, None, query, 2).unwrap();
    let mut found = texts(&hits);
    found.sort_unstable();
    assert_eq!(found, [ANSWER, QUESTION], "{hits:?}");
    assert_eq!(
        p.engine.recall_read(&s, None, query, 50).unwrap().len(),
        CHATTER.len() + 6
    );
}

#[test]
fn each_entry_is_embedded_once_per_process() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    let counting = Arc::new(Counting::new());
    let engine = p.engine.clone().with_embedder(counting.clone());
    write_chat(&engine, &s);
    let embedded = || counting.texts();
    let query = Some("payment gateway");
    engine.recall_read(&s, None, query, 5).unwrap();
    let entries = CHATTER.len() + 3;
    assert_eq!(embedded(), entries + 1, "every entry, then the question");
    engine.recall_read(&s, None, query, 5).unwrap();
    assert_eq!(embedded(), entries + 2, "only the question");
    engine
        .recall_write(&s, "chat-1", Some("agent"), "You are welcome.")
        .unwrap();
    engine.recall_read(&s, Some("chat-1"), query, 5).unwrap();
    assert_eq!(embedded(), entries + 4, "the new entry and the question");
    // A scoped handle of the same Engine shares the index.
    let scoped = engine.scoped(Scope::domains(["support"]));
    scoped.recall_read(&s, None, query, 5).unwrap();
    assert_eq!(embedded(), entries + 5);
}
