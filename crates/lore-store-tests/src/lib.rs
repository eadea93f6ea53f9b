//! The conformance suite: what every [`Store`] must do, written once.
//!
//! Each function takes `&dyn Store`, creates the records it needs and panics when the store
//! misbehaves. [`conformance_tests!`](crate::conformance_tests) turns the whole list into one
//! `#[test]` per function for a backend, so a new backend is correct when it passes the same
//! list as SQLite (the pattern of tantivy's directory tests and atuin's `tests-database`).
//!
//! No function assumes an empty store. Each draws fresh IDs and its own domains
//! (`hr-<tag>`, `finance-<tag>`) and a search word of its own, and looks only through them, so
//! the suite can also run, in parallel, against one shared database such as a Postgres test
//! server.
//!
//! ```ignore
//! use lore_store_tests::TempStore;
//! use lore_sqlite::{OpenMode, SqliteStore};
//!
//! lore_store_tests::conformance_tests!(TempStore::new(|dir| {
//!     SqliteStore::open(dir.join("lore.db"), OpenMode::Create)
//! }));
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Deref;
use std::path::Path;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use serde_json::{Map, json};

use lore_core::Error;
use lore_core::id::{AuditId, CorrectionId, ErrorEventId, ExecutionId, LessonId, MemoryId};
use lore_core::model::{
    AuditAction, AuditEntry, AuthorKind, Correction, ErrorEvent, Execution, Lesson, LessonLink,
    LessonSource, LessonStatus, LinkKind, MemoryCategory, MemoryEntry, Outcome, RecordKind,
    SignalChannel, Tiers, UtilityStats,
};
use lore_core::ports::store::{
    ChangeCursor, Changes, LessonUpdate, LessonVector, ListFilter, OnDuplicate, Record, SearchHit,
    Store, StoreCounts, WriteReport,
};
use lore_core::scope::{Scope, SkillPath};
use lore_recall::EmbedderId;

/// Expands to one `#[test]` per conformance function, each on a store made by `$make`.
///
/// `$make` is evaluated afresh in every test and must give something that dereferences to a
/// [`Store`]: a [`TempStore`], a `Box<dyn Store>`, an `Arc<PostgresStore>`. As it is evaluated
/// inside the test function, it may `return` early to skip a backend that is not configured:
///
/// ```ignore
/// lore_store_tests::conformance_tests!(match postgres_url() {
///     Some(url) => PostgresStore::connect(&url).unwrap(),
///     None => return,
/// });
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            execution_roundtrips,
            correction_roundtrips,
            lesson_roundtrips,
            error_event_roundtrips,
            audit_entry_roundtrips,
            unknown_ids_read_as_none,
            duplicate_id_conflicts_and_names_it,
            batch_with_a_duplicate_writes_nothing,
            skip_identical_skips_equal_records,
            skip_identical_refuses_a_different_record,
            update_lesson_replaces_it_and_appends_audit,
            update_lesson_with_stale_timestamp_conflicts,
            update_unknown_lesson_is_not_found,
            update_lessons_lands_whole_or_not_at_all,
            write_and_update_lands_whole_or_not_at_all,
            purge_erases_content_and_its_search_terms,
            purge_of_an_unknown_record_changes_nothing,
            scope_isolates_domains,
            scope_and_filter_select_skills,
            status_filter_selects_lessons,
            corrections_filter_by_execution,
            listings_are_oldest_first,
            pagination_applies_limit_and_offset,
            audit_lists_by_subject_oldest_first,
            changes_follow_writes_in_commit_order,
            search_finds_a_lesson_by_a_rule_word,
            search_respects_statuses_and_skill,
            search_finds_executions_by_their_input,
            search_ranks_best_first_within_limit,
            search_treats_special_characters_as_words,
            empty_search_finds_nothing,
            counts_follow_scope,
            writes_from_several_threads_all_land,
            info_describes_the_store,
            lesson_revision_grows_with_every_lesson_change,
            lessons_changed_lists_only_what_changed_inside_the_scope,
            vectors_roundtrip_bit_for_bit_and_are_replaced,
            bad_vectors_are_refused_and_nothing_is_written,
            purge_erases_the_lesson_vector,
            index_state_roundtrips,
            memories_roundtrip_by_category_oldest_first,
            memories_follow_scope_and_skill,
            memory_search_ranks_inside_category_and_scope,
            purge_erases_a_memory_and_its_search_terms,
        );
    };
    (@each $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let store = $make;
                $crate::$name(&*store);
            }
        )*
    };
}

/// A store in a temporary folder that is deleted when the guard drops.
///
/// It dereferences to the store, so `TempStore::new(…)` is a ready argument for
/// [`conformance_tests!`](crate::conformance_tests).
pub struct TempStore<S> {
    // Declared first so that it is dropped, and its files closed, before the folder goes.
    store: S,
    dir: tempfile::TempDir,
}

impl<S> TempStore<S> {
    /// Opens a store with `open`, given a fresh, empty temporary folder.
    ///
    /// # Panics
    /// When the folder cannot be created or `open` fails: this is test support.
    pub fn new<E: fmt::Debug>(open: impl FnOnce(&Path) -> Result<S, E>) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = open(dir.path()).expect("the store opens in a temporary folder");
        Self { store, dir }
    }

    /// The temporary folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl<S> Deref for TempStore<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.store
    }
}

/// Records and names private to one test: two domains, three skills and a search word.
struct Fixture {
    tag: String,
    hr: SkillPath,
    hr_other: SkillPath,
    finance: SkillPath,
    word: String,
}

impl Fixture {
    fn new() -> Self {
        let tag = format!("{:08x}", rand::random::<u32>());
        let skill = |raw: String| SkillPath::parse(&raw).expect("a valid skill path");
        Self {
            hr: skill(format!("hr-{tag}/resume-screen")),
            hr_other: skill(format!("hr-{tag}/interview")),
            finance: skill(format!("finance-{tag}/invoice-audit")),
            word: format!("w{tag}"),
            tag,
        }
    }

    /// A moment `minutes` after a fixed base, with nanoseconds, to catch truncated times.
    fn at(&self, minutes: i64) -> DateTime<Utc> {
        let base = Utc.with_ymd_and_hms(2026, 2, 20, 12, 43, 41).unwrap()
            + TimeDelta::nanoseconds(123_456_789);
        base + TimeDelta::minutes(minutes)
    }

    fn hr_scope(&self) -> Scope {
        Scope::domains([self.hr.domain()])
    }

    fn both_scope(&self) -> Scope {
        Scope::domains([self.hr.domain(), self.finance.domain()])
    }

    /// A filter for everything of this fixture's `skill`.
    fn of(&self, skill: &SkillPath) -> ListFilter {
        ListFilter::skill(&Scope::unrestricted(), skill)
    }

    fn execution(&self, skill: &SkillPath, minutes: i64) -> Execution {
        let at = self.at(minutes);
        let mut extra = Map::new();
        extra.insert("trace_id".into(), json!("abc-123"));
        extra.insert("nested".into(), json!({"k": [1, 2.5, null, "ß"]}));
        Execution {
            id: ExecutionId::generate(at),
            skill: skill.clone(),
            timestamp: at,
            input: json!({"candidate": "Zoë Ünal", "role": "数据工程师", "years": 7}),
            output: json!({"overall_score": 72, "notes": ["strong coder", "🚀"]}),
            outcome: Outcome::Accepted,
            cost_usd: Some(0.009_312_345_678_901_2),
            latency_ms: Some(1062.5),
            model: Some("anthropic/claude-haiku-4-5".into()),
            agent: Some("screener-1".into()),
            session: Some(format!("s-{}", self.tag)),
            lessons_shown: vec![LessonId::generate(at)],
            extra,
        }
    }

    fn correction(&self, execution: &Execution, minutes: i64) -> Correction {
        let at = self.at(minutes);
        let mut extra = Map::new();
        extra.insert("ticket".into(), json!("HR-42"));
        Correction {
            id: CorrectionId::generate(at),
            execution_id: execution.id.clone(),
            skill: execution.skill.clone(),
            timestamp: at,
            original_output: execution.output.clone(),
            text: "Score below 60 without system design — «обязательно».".into(),
            author_kind: AuthorKind::Human,
            author: Some("mike".into()),
            extra,
        }
    }

    fn lesson(&self, skill: &SkillPath, status: LessonStatus, minutes: i64) -> Lesson {
        let at = self.at(minutes);
        let id = LessonId::generate(at);
        let mut extra = Map::new();
        extra.insert(
            "origin".into(),
            json!({"tool": "agentura", "ñ": [1, 2.5, null]}),
        );
        extra.insert("imported_from".into(), json!("seed-000"));
        Lesson {
            generated_test_ids: vec![format!("TEST-{id}")],
            merged_from: vec![CorrectionId::generate(at)],
            id,
            skill: skill.clone(),
            agent: Some("screener-1".into()),
            correction_id: Some(CorrectionId::generate(at)),
            execution_id: Some(ExecutionId::generate(at)),
            mistake: "Scored a candidate too high: 72 instead of 55.".into(),
            root_cause: "Mis-weighted criteria".into(),
            rule: "Always weigh system design separately; coding ≠ design.".into(),
            applies_when: "Senior backend roles, 数据工程师 included.".into(),
            triggers: vec!["score too high".into()],
            tags: vec!["scoring".into(), "hiring".into()],
            tiers: Tiers {
                summary: "Weigh system design separately".into(),
                condition: "senior roles".into(),
                action: "weigh separately".into(),
                rationale: "coding ≠ design".into(),
                steps: vec!["check design".into(), "cap the score".into()],
            },
            confidence: 0.876_543_210_987_654_3,
            source: LessonSource::Correction,
            status,
            utility: UtilityStats {
                activations: 3,
                helped: 2,
                hurt: 1,
                utility: Some(1.0 / 3.0),
                last_applied_at: Some(at),
            },
            links: vec![LessonLink {
                kind: LinkKind::Conflicts,
                target: LessonId::parse("REFL-001").unwrap(),
            }],
            validated_by_test: true,
            created_at: at,
            updated_at: at,
            extra,
        }
    }

    /// A lesson whose rule holds this fixture's search word.
    fn findable_lesson(&self, skill: &SkillPath, status: LessonStatus, minutes: i64) -> Lesson {
        let mut lesson = self.lesson(skill, status, minutes);
        lesson.rule = format!("Always check the {} field before scoring.", self.word);
        lesson
    }

    fn error_event(&self, skill: &SkillPath, minutes: i64) -> ErrorEvent {
        let at = self.at(minutes);
        ErrorEvent {
            id: ErrorEventId::generate(at),
            skill: skill.clone(),
            execution_id: Some(ExecutionId::generate(at)),
            timestamp: at,
            channel: SignalChannel::HardFailure,
            fingerprint: "unknown column '<str>' at line <n>".into(),
            tags: vec!["unknown_symbol".into()],
            action: Some("SELECT foo".into()),
            message: "unknown column 'foo' at line 3 — «ошибка»".into(),
            value: Some(0.25),
        }
    }

    fn audit(&self, kind: RecordKind, subject: &str, minutes: i64) -> AuditEntry {
        let at = self.at(minutes);
        AuditEntry {
            id: AuditId::generate(at),
            subject_kind: kind,
            subject: subject.to_owned(),
            action: AuditAction::Transition,
            from: Some(LessonStatus::NeedsReview),
            to: Some(LessonStatus::Approved),
            actor: "mike".into(),
            at,
            reason: "looks right — ✓".into(),
            evidence: json!({"execution": "EXEC-1", "score": 0.5}),
        }
    }
}

fn write(store: &dyn Store, records: Vec<Record>) -> WriteReport {
    store
        .write(&records, OnDuplicate::Fail)
        .expect("the store accepts a batch of new records")
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| id(i).to_owned()).collect()
}

fn search(store: &dyn Store, query: &str, filter: &ListFilter, limit: usize) -> Vec<SearchHit> {
    store
        .search(query, filter, limit)
        .unwrap_or_else(|e| panic!("search for {query:?} failed: {e}"))
}

fn hit_ids(hits: &[SearchHit]) -> BTreeSet<String> {
    hits.iter().map(|h| h.id.clone()).collect()
}

fn expect_conflict<T: fmt::Debug>(result: lore_core::Result<T>, id: &str) {
    match result {
        Err(Error::Conflict(message)) => {
            assert!(
                message.contains(id),
                "the conflict should name {id}: {message}"
            );
        }
        other => panic!("expected a conflict about {id}, got {other:?}"),
    }
}

/// An execution reads back equal to what was written: unicode, nested JSON, `extra` fields.
pub fn execution_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let execution = f.execution(&f.hr, 0);
    write(store, vec![Record::Execution(execution.clone())]);
    assert_eq!(store.execution(&execution.id).unwrap(), Some(execution));
}

/// A correction reads back equal to what was written.
pub fn correction_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let execution = f.execution(&f.hr, 0);
    let correction = f.correction(&execution, 1);
    write(
        store,
        vec![
            Record::Execution(execution),
            Record::Correction(correction.clone()),
        ],
    );
    assert_eq!(store.correction(&correction.id).unwrap(), Some(correction));
}

/// A lesson with every field set reads back equal to what was written.
pub fn lesson_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(lesson));
}

/// An error event reads back, through a listing, equal to what was written.
pub fn error_event_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let event = f.error_event(&f.hr, 0);
    write(store, vec![Record::ErrorEvent(event.clone())]);
    assert_eq!(store.error_events(&f.of(&f.hr)).unwrap(), vec![event]);
}

/// An audit entry reads back by its subject, and appears in the whole log.
pub fn audit_entry_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let subject = format!("REFL-{}", f.tag);
    let entry = f.audit(RecordKind::Lesson, &subject, 0);
    write(store, vec![Record::Audit(entry.clone())]);
    assert_eq!(store.audit(Some(&subject)).unwrap(), vec![entry.clone()]);
    assert!(store.audit(None).unwrap().contains(&entry));
}

/// IDs that were never written read as `None`, not as errors.
pub fn unknown_ids_read_as_none(store: &dyn Store) {
    let f = Fixture::new();
    let at = f.at(0);
    assert_eq!(store.execution(&ExecutionId::generate(at)).unwrap(), None);
    assert_eq!(store.correction(&CorrectionId::generate(at)).unwrap(), None);
    assert_eq!(store.lesson(&LessonId::generate(at)).unwrap(), None);
    assert!(
        store
            .audit(Some(&format!("nothing-{}", f.tag)))
            .unwrap()
            .is_empty()
    );
}

/// Writing a taken ID of any kind is a conflict that names the ID.
pub fn duplicate_id_conflicts_and_names_it(store: &dyn Store) {
    let f = Fixture::new();
    let execution = f.execution(&f.hr, 0);
    let records = vec![
        Record::Correction(f.correction(&execution, 1)),
        Record::Execution(execution),
        Record::Lesson(f.lesson(&f.hr, LessonStatus::Trial, 2)),
        Record::ErrorEvent(f.error_event(&f.hr, 3)),
        Record::Audit(f.audit(RecordKind::Lesson, "REFL-001", 4)),
    ];
    for record in records {
        write(store, vec![record.clone()]);
        expect_conflict(
            store.write(std::slice::from_ref(&record), OnDuplicate::Fail),
            record.id(),
        );
    }
}

/// A batch holding one duplicate writes nothing at all, whatever the kinds around it.
pub fn batch_with_a_duplicate_writes_nothing(store: &dyn Store) {
    let f = Fixture::new();
    let existing = f.execution(&f.hr, 0);
    write(store, vec![Record::Execution(existing.clone())]);

    let execution = f.execution(&f.hr, 1);
    let correction = f.correction(&execution, 2);
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Approved, 3);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 4);
    let batch = vec![
        Record::Execution(execution.clone()),
        Record::Correction(correction.clone()),
        Record::Lesson(lesson.clone()),
        Record::ErrorEvent(f.error_event(&f.hr, 5)),
        Record::Audit(audit),
        Record::Execution(existing.clone()),
    ];
    expect_conflict(store.write(&batch, OnDuplicate::Fail), existing.id.as_str());
    assert_eq!(store.execution(&execution.id).unwrap(), None);
    assert_eq!(store.correction(&correction.id).unwrap(), None);
    assert_eq!(store.lesson(&lesson.id).unwrap(), None);
    assert!(store.error_events(&f.of(&f.hr)).unwrap().is_empty());
    assert!(store.audit(Some(lesson.id.as_str())).unwrap().is_empty());
    assert!(search(store, &f.word, &ListFilter::default(), 10).is_empty());
    assert_eq!(store.executions(&f.of(&f.hr)).unwrap(), vec![existing]);

    // The same new record twice in one batch is a duplicate as well.
    let twice = f.execution(&f.hr, 6);
    let batch = [
        Record::Execution(twice.clone()),
        Record::Execution(twice.clone()),
    ];
    expect_conflict(store.write(&batch, OnDuplicate::Fail), twice.id.as_str());
    assert_eq!(store.execution(&twice.id).unwrap(), None);
}

/// With `SkipIdentical`, a record equal to the stored one (key order of `extra` aside) is
/// skipped and counted, and new records in the batch are written.
pub fn skip_identical_skips_equal_records(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);

    let mut reordered = lesson.clone();
    reordered.extra = lesson.extra.clone().into_iter().rev().collect();
    let fresh = f.execution(&f.hr, 1);
    let twice = f.error_event(&f.hr, 2);
    let batch = [
        Record::Lesson(reordered),
        Record::Execution(fresh.clone()),
        Record::ErrorEvent(twice.clone()),
        Record::ErrorEvent(twice.clone()),
    ];
    let report = store.write(&batch, OnDuplicate::SkipIdentical).unwrap();
    assert_eq!(
        report,
        WriteReport {
            written: 2,
            skipped: 2
        }
    );
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(lesson));
    assert_eq!(store.execution(&fresh.id).unwrap(), Some(fresh));
    assert_eq!(store.error_events(&f.of(&f.hr)).unwrap(), vec![twice]);
}

/// With `SkipIdentical`, a record that differs from the stored one is a conflict, and the
/// batch writes nothing.
pub fn skip_identical_refuses_a_different_record(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);

    let mut changed = lesson.clone();
    changed.rule = "A different rule.".into();
    let fresh = f.execution(&f.hr, 1);
    let batch = [Record::Execution(fresh.clone()), Record::Lesson(changed)];
    expect_conflict(
        store.write(&batch, OnDuplicate::SkipIdentical),
        lesson.id.as_str(),
    );
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(lesson));
    assert_eq!(store.execution(&fresh.id).unwrap(), None);
}

/// `update_lesson` replaces the lesson everywhere (read, status filter, search) and appends
/// its audit entry.
pub fn update_lesson_replaces_it_and_appends_audit(store: &dyn Store) {
    let f = Fixture::new();
    let old_word = format!("old{}", f.tag);
    let new_word = format!("new{}", f.tag);
    let mut lesson = f.lesson(&f.hr, LessonStatus::NeedsReview, 0);
    lesson.rule = format!("Check {old_word} first.");
    write(store, vec![Record::Lesson(lesson.clone())]);

    let mut updated = lesson.clone();
    updated.status = LessonStatus::Approved;
    updated.rule = format!("Check {new_word} first.");
    updated.updated_at = f.at(5);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 5);
    store
        .update_lesson(&updated, lesson.updated_at, &audit)
        .unwrap();

    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(updated.clone()));
    let with = |status| ListFilter {
        statuses: Some([status].into()),
        ..f.of(&f.hr)
    };
    assert_eq!(
        store.lessons(&with(LessonStatus::Approved)).unwrap(),
        vec![updated]
    );
    assert!(
        store
            .lessons(&with(LessonStatus::NeedsReview))
            .unwrap()
            .is_empty()
    );
    let all = ListFilter::default();
    assert_eq!(
        hit_ids(&search(store, &new_word, &all, 10)),
        [lesson.id.to_string()].into()
    );
    assert!(search(store, &old_word, &all, 10).is_empty());
    assert_eq!(store.audit(Some(lesson.id.as_str())).unwrap(), vec![audit]);
    assert_eq!(store.counts(&f.hr_scope()).unwrap().lessons, 1);
}

/// A batch of lesson updates lands whole; one stale member leaves every lesson and the audit
/// log as they were.
pub fn update_lessons_lands_whole_or_not_at_all(store: &dyn Store) {
    let f = Fixture::new();
    let [a, b] = [0, 1].map(|m| f.lesson(&f.hr, LessonStatus::NeedsReview, m));
    write(
        store,
        vec![Record::Lesson(a.clone()), Record::Lesson(b.clone())],
    );
    let approve = |l: &Lesson, expected| {
        let mut lesson = l.clone();
        lesson.status = LessonStatus::Approved;
        lesson.updated_at = f.at(9);
        LessonUpdate {
            lesson,
            expected_updated_at: expected,
            audit: f.audit(RecordKind::Lesson, l.id.as_str(), 9),
        }
    };
    let stale = [approve(&a, a.updated_at), approve(&b, f.at(-1))];
    expect_conflict(store.update_lessons(&stale), b.id.as_str());
    assert_eq!(store.lesson(&a.id).unwrap(), Some(a.clone()));
    assert!(store.audit(Some(a.id.as_str())).unwrap().is_empty());

    let fresh = [approve(&a, a.updated_at), approve(&b, b.updated_at)];
    store.update_lessons(&fresh).unwrap();
    for update in &fresh {
        assert_eq!(
            store.lesson(&update.lesson.id).unwrap().as_ref(),
            Some(&update.lesson)
        );
        assert_eq!(
            store.audit(Some(update.lesson.id.as_str())).unwrap(),
            vec![update.audit.clone()]
        );
    }
}

/// Records and lesson updates written together land together: a stale update leaves the new
/// records unwritten, and a taken ID leaves the lessons unchanged.
pub fn write_and_update_lands_whole_or_not_at_all(store: &dyn Store) {
    let f = Fixture::new();
    let old = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(old.clone())]);
    let fresh = f.lesson(&f.hr, LessonStatus::Approved, 1);
    let link = |expected| {
        let mut lesson = old.clone();
        lesson.links.push(LessonLink {
            kind: LinkKind::NearDuplicate,
            target: fresh.id.clone(),
        });
        lesson.updated_at = f.at(9);
        LessonUpdate {
            lesson,
            expected_updated_at: expected,
            audit: f.audit(RecordKind::Lesson, old.id.as_str(), 9),
        }
    };

    let stale = link(f.at(-1));
    expect_conflict(
        store.write_and_update(
            &[Record::Lesson(fresh.clone())],
            OnDuplicate::Fail,
            std::slice::from_ref(&stale),
        ),
        old.id.as_str(),
    );
    assert_eq!(store.lesson(&fresh.id).unwrap(), None);
    assert_eq!(store.lesson(&old.id).unwrap(), Some(old.clone()));

    let taken = link(old.updated_at);
    expect_conflict(
        store.write_and_update(
            &[Record::Lesson(old.clone())],
            OnDuplicate::Fail,
            std::slice::from_ref(&taken),
        ),
        old.id.as_str(),
    );
    assert_eq!(store.lesson(&old.id).unwrap(), Some(old.clone()));
    assert!(store.audit(Some(old.id.as_str())).unwrap().is_empty());

    let report = store
        .write_and_update(
            &[Record::Lesson(fresh.clone())],
            OnDuplicate::Fail,
            std::slice::from_ref(&taken),
        )
        .unwrap();
    assert_eq!(report.written, 1);
    assert_eq!(store.lesson(&fresh.id).unwrap(), Some(fresh));
    assert_eq!(store.lesson(&old.id).unwrap(), Some(taken.lesson.clone()));
    assert_eq!(
        store.audit(Some(old.id.as_str())).unwrap(),
        vec![taken.audit]
    );
}

/// A purge replaces the stored records with their erased copies, takes their words out of
/// search, and appends its audit entry.
pub fn purge_erases_content_and_its_search_terms(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Sensitive, 0);
    let mut execution = f.execution(&f.hr, 1);
    execution.input = json!({"note": format!("secret {}", f.word)});
    let mut correction = f.correction(&execution, 2);
    correction.text = format!("the secret is {}", f.word);
    write(
        store,
        vec![
            Record::Lesson(lesson.clone()),
            Record::Execution(execution.clone()),
            Record::Correction(correction.clone()),
        ],
    );
    let mut erased_lesson = lesson.clone();
    erased_lesson.rule = "[purged]".into();
    let mut erased_correction = correction.clone();
    erased_correction.text = "[purged]".into();
    let mut erased_execution = execution.clone();
    erased_execution.input = json!(null);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 3);
    let erased = [
        Record::Lesson(erased_lesson.clone()),
        Record::Correction(erased_correction.clone()),
        Record::Execution(erased_execution.clone()),
    ];
    store.purge(&erased, &audit).unwrap();

    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(erased_lesson));
    assert_eq!(
        store.correction(&correction.id).unwrap(),
        Some(erased_correction)
    );
    assert_eq!(
        store.execution(&execution.id).unwrap(),
        Some(erased_execution)
    );
    assert!(search(store, &f.word, &ListFilter::default(), 10).is_empty());
    assert!(search(store, "purged", &f.of(&f.hr), 10).is_empty());
    assert_eq!(store.audit(Some(lesson.id.as_str())).unwrap(), vec![audit]);
    assert_eq!(store.counts(&f.hr_scope()).unwrap().lessons, 1);
}

/// Purging a record that is not stored is not found, and nothing else of the batch changes.
pub fn purge_of_an_unknown_record_changes_nothing(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Sensitive, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let mut erased = lesson.clone();
    erased.rule = "[purged]".into();
    let missing = f.lesson(&f.hr, LessonStatus::Sensitive, 1);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 2);
    let result = store.purge(&[Record::Lesson(erased), Record::Lesson(missing)], &audit);
    assert!(matches!(result, Err(Error::NotFound { .. })), "{result:?}");
    assert!(store.audit(Some(lesson.id.as_str())).unwrap().is_empty());
    assert_eq!(search(store, &f.word, &ListFilter::default(), 10).len(), 1);
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(lesson));
}

/// An update whose `expected_updated_at` is stale is a conflict and changes nothing, not even
/// the audit log; so is a second update from the same stale read.
pub fn update_lesson_with_stale_timestamp_conflicts(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::NeedsReview, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);

    let mut updated = lesson.clone();
    updated.status = LessonStatus::Rejected;
    updated.updated_at = f.at(5);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 5);
    let stale = lesson.updated_at - TimeDelta::seconds(1);
    expect_conflict(
        store.update_lesson(&updated, stale, &audit),
        lesson.id.as_str(),
    );
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(lesson.clone()));
    assert!(store.audit(Some(lesson.id.as_str())).unwrap().is_empty());

    store
        .update_lesson(&updated, lesson.updated_at, &audit)
        .unwrap();
    let mut second = lesson.clone();
    second.status = LessonStatus::Approved;
    second.updated_at = f.at(6);
    let audit2 = f.audit(RecordKind::Lesson, lesson.id.as_str(), 6);
    expect_conflict(
        store.update_lesson(&second, lesson.updated_at, &audit2),
        lesson.id.as_str(),
    );
    assert_eq!(store.lesson(&lesson.id).unwrap(), Some(updated));
    assert_eq!(store.audit(Some(lesson.id.as_str())).unwrap(), vec![audit]);
}

/// Updating a lesson that was never written is `NotFound`, and writes no audit entry.
pub fn update_unknown_lesson_is_not_found(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 1);
    let result = store.update_lesson(&lesson, lesson.updated_at, &audit);
    assert!(
        matches!(result, Err(Error::NotFound { kind: "lesson", .. })),
        "{result:?}"
    );
    assert!(store.audit(Some(lesson.id.as_str())).unwrap().is_empty());
}

/// A scope limited to one domain never sees another domain's records: not in listings, not
/// in search, not in counts.
pub fn scope_isolates_domains(store: &dyn Store) {
    let f = Fixture::new();
    let mut listed = Vec::new();
    let mut lessons = Vec::new();
    for skill in [&f.hr, &f.finance] {
        let mut execution = f.execution(skill, 0);
        execution.input = json!({"note": format!("about {}", f.word)});
        let lesson = f.findable_lesson(skill, LessonStatus::Approved, 2);
        let records = vec![
            Record::Correction(f.correction(&execution, 1)),
            Record::Execution(execution),
            Record::Lesson(lesson.clone()),
            Record::ErrorEvent(f.error_event(skill, 4)),
        ];
        let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 3);
        write(
            store,
            [records.clone(), vec![Record::Audit(audit)]].concat(),
        );
        listed.push(
            records
                .iter()
                .map(|r| r.id().to_owned())
                .collect::<BTreeSet<_>>(),
        );
        lessons.push(lesson.id.to_string());
    }

    let finance_scope = Scope::domains([f.finance.domain()]);
    for (scope, own) in [(f.hr_scope(), &listed[0]), (finance_scope, &listed[1])] {
        let filter = ListFilter {
            scope: scope.clone(),
            ..ListFilter::default()
        };
        let mut seen = BTreeSet::new();
        seen.extend(ids(&store.executions(&filter).unwrap(), |r| r.id.as_str()));
        seen.extend(ids(&store.corrections(&filter).unwrap(), |r| r.id.as_str()));
        seen.extend(ids(&store.lessons(&filter).unwrap(), |r| r.id.as_str()));
        seen.extend(ids(&store.error_events(&filter).unwrap(), |r| {
            r.id.as_str()
        }));
        assert_eq!(&seen, own, "listings inside {scope:?}");

        let hits = search(store, &f.word, &filter, 50);
        assert_eq!(
            hits.len(),
            2,
            "one lesson and one execution inside {scope:?}: {hits:?}"
        );
        assert!(
            hits.iter().all(|h| own.contains(&h.id)),
            "search inside {scope:?}: {hits:?}"
        );

        let one = StoreCounts {
            executions: 1,
            corrections: 1,
            lessons: 1,
            error_events: 1,
            audit_entries: 1,
            tests: 1,
            memories: 0,
            episodes: 0,
        };
        assert_eq!(
            store.counts(&scope).unwrap(),
            one,
            "counts inside {scope:?}"
        );
    }

    for scope in [f.both_scope(), Scope::domains(["*"]), Scope::unrestricted()] {
        let filter = ListFilter {
            scope: scope.clone(),
            ..ListFilter::default()
        };
        let hits = hit_ids(&search(store, &f.word, &filter, 50));
        assert_eq!(hits.len(), 4, "both domains inside {scope:?}: {hits:?}");
        let seen = ids(&store.lessons(&filter).unwrap(), |l| l.id.as_str());
        for id in &lessons {
            assert!(seen.contains(id), "{id} inside {scope:?}");
        }
    }
}

/// A scope's skill allow-list and a filter's skill both narrow listings to those skills.
pub fn scope_and_filter_select_skills(store: &dyn Store) {
    let f = Fixture::new();
    let screen = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let interview = f.lesson(&f.hr_other, LessonStatus::Approved, 1);
    let finance = f.lesson(&f.finance, LessonStatus::Approved, 2);
    let all = [&screen, &interview, &finance].map(|l| Record::Lesson(l.clone()));
    write(store, all.to_vec());

    let skills_scope = Scope {
        skills: Some([f.hr.clone()].into()),
        ..Scope::default()
    };
    let only = |scope: Scope, skill: Option<&SkillPath>| {
        let filter = ListFilter {
            scope,
            skill: skill.cloned(),
            ..ListFilter::default()
        };
        let lessons = store.lessons(&filter).unwrap();
        lessons
            .into_iter()
            .filter(|l| [&f.hr, &f.hr_other, &f.finance].contains(&&l.skill))
            .collect::<Vec<_>>()
    };
    assert_eq!(only(skills_scope, None), vec![screen.clone()]);
    assert_eq!(
        only(Scope::unrestricted(), Some(&f.hr_other)),
        vec![interview.clone()]
    );
    assert_eq!(only(f.hr_scope(), None), vec![screen, interview]);
    assert!(only(f.hr_scope(), Some(&f.finance)).is_empty());
}

/// The statuses filter selects lessons in those states, and an empty set selects none.
pub fn status_filter_selects_lessons(store: &dyn Store) {
    let f = Fixture::new();
    let approved = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let trial = f.lesson(&f.hr, LessonStatus::Trial, 1);
    let review = f.lesson(&f.hr, LessonStatus::NeedsReview, 2);
    let lessons = [&approved, &trial, &review].map(|l| Record::Lesson(l.clone()));
    write(store, lessons.to_vec());

    let with = |statuses: &[LessonStatus]| ListFilter {
        statuses: Some(statuses.iter().copied().collect()),
        ..f.of(&f.hr)
    };
    let retrievable = [LessonStatus::Approved, LessonStatus::Trial];
    assert_eq!(
        store.lessons(&with(&retrievable)).unwrap(),
        vec![approved, trial]
    );
    assert_eq!(
        store.lessons(&with(&[LessonStatus::NeedsReview])).unwrap(),
        vec![review]
    );
    assert!(
        store
            .lessons(&with(&[LessonStatus::Archived]))
            .unwrap()
            .is_empty()
    );
    assert!(store.lessons(&with(&[])).unwrap().is_empty());
    assert_eq!(store.lessons(&f.of(&f.hr)).unwrap().len(), 3);
}

/// The execution filter selects the corrections of one execution.
pub fn corrections_filter_by_execution(store: &dyn Store) {
    let f = Fixture::new();
    let a = f.execution(&f.hr, 0);
    let b = f.execution(&f.hr, 1);
    let a1 = f.correction(&a, 2);
    let b1 = f.correction(&b, 3);
    let a2 = f.correction(&a, 4);
    let records = vec![
        Record::Execution(a.clone()),
        Record::Execution(b.clone()),
        Record::Correction(a1.clone()),
        Record::Correction(b1.clone()),
        Record::Correction(a2.clone()),
    ];
    write(store, records);
    let of = |execution: &Execution| ListFilter {
        execution_id: Some(execution.id.clone()),
        ..ListFilter::default()
    };
    assert_eq!(store.corrections(&of(&a)).unwrap(), vec![a1, a2]);
    assert_eq!(store.corrections(&of(&b)).unwrap(), vec![b1]);
}

/// Listings are oldest first; records with the same time keep the order they were written in.
pub fn listings_are_oldest_first(store: &dyn Store) {
    let f = Fixture::new();
    let [e0, e1, e2, tie_a, tie_b] = [0, 1, 2, 5, 5].map(|m| f.execution(&f.hr, m));
    let batch = [&e2, &e0, &tie_a, &e1].map(|e| Record::Execution(e.clone()));
    write(store, batch.to_vec());
    write(store, vec![Record::Execution(tie_b.clone())]);
    let listed = ids(&store.executions(&f.of(&f.hr)).unwrap(), |e| e.id.as_str());
    let expected = ids(&[e0, e1, e2, tie_a, tie_b], |e| e.id.as_str());
    assert_eq!(listed, expected);

    let [l0, l1] = [3, 1].map(|m| f.lesson(&f.hr, LessonStatus::Approved, m));
    write(
        store,
        vec![Record::Lesson(l0.clone()), Record::Lesson(l1.clone())],
    );
    assert_eq!(store.lessons(&f.of(&f.hr)).unwrap(), vec![l1, l0]);

    let [v0, v1] = [9, -9].map(|m| f.error_event(&f.hr, m));
    write(
        store,
        vec![
            Record::ErrorEvent(v0.clone()),
            Record::ErrorEvent(v1.clone()),
        ],
    );
    assert_eq!(store.error_events(&f.of(&f.hr)).unwrap(), vec![v1, v0]);
}

/// `limit` and `offset` page through a listing in order.
pub fn pagination_applies_limit_and_offset(store: &dyn Store) {
    let f = Fixture::new();
    let executions: Vec<Execution> = (0..5).map(|m| f.execution(&f.hr, m)).collect();
    write(
        store,
        executions.iter().cloned().map(Record::Execution).collect(),
    );
    let page = |limit: Option<usize>, offset: usize| {
        let filter = ListFilter {
            limit,
            offset,
            ..f.of(&f.hr)
        };
        store.executions(&filter).unwrap()
    };
    assert_eq!(page(Some(2), 0), executions[0..2]);
    assert_eq!(page(Some(2), 2), executions[2..4]);
    assert_eq!(page(Some(2), 4), executions[4..]);
    assert_eq!(page(None, 3), executions[3..]);
    assert!(page(None, 10).is_empty());
    assert!(page(Some(0), 0).is_empty());
}

/// The audit log of one subject is its entries only, oldest first.
pub fn audit_lists_by_subject_oldest_first(store: &dyn Store) {
    let f = Fixture::new();
    let subject = format!("REFL-{}", f.tag);
    let late = f.audit(RecordKind::Lesson, &subject, 2);
    let early = f.audit(RecordKind::Lesson, &subject, 0);
    let other = f.audit(RecordKind::Lesson, &format!("REFL-{}-other", f.tag), 1);
    let records = [&late, &early, &other].map(|a| Record::Audit(a.clone()));
    write(store, records.to_vec());
    assert_eq!(
        store.audit(Some(&subject)).unwrap(),
        vec![early.clone(), late.clone()]
    );
    let all = ids(&store.audit(None).unwrap(), |a| a.id.as_str());
    let position = |a: &AuditEntry| all.iter().position(|id| id == a.id.as_str()).unwrap();
    assert!(position(&early) < position(&other) && position(&other) < position(&late));
}

/// A follower sees executions and audit entries in the order they were written (not their
/// timestamps' order), each once, from any cursor, a limited number at a time.
pub fn changes_follow_writes_in_commit_order(store: &dyn Store) {
    let f = Fixture::new();
    let start = store.change_cursor().unwrap();
    assert_eq!(store.changes(start, 10).unwrap(), Changes::default());
    let [late, early] = [5, 0].map(|m| f.execution(&f.hr, m));
    let subject = format!("REFL-{}", f.tag);
    let [a_late, a_early] = [5, 0].map(|m| f.audit(RecordKind::Lesson, &subject, m));
    write(
        store,
        vec![
            Record::Execution(late.clone()),
            Record::Audit(a_late.clone()),
        ],
    );
    write(
        store,
        vec![
            Record::Execution(early.clone()),
            Record::Audit(a_early.clone()),
        ],
    );
    // A lesson without an audit entry is not a change a follower sees.
    write(
        store,
        vec![Record::Lesson(f.lesson(&f.hr, LessonStatus::Approved, 1))],
    );

    let changes = store.changes(start, 10).unwrap();
    let executions: Vec<&Execution> = changes.executions.iter().map(|(_, e)| e).collect();
    assert_eq!(executions, [&late, &early]);
    let audit: Vec<&AuditEntry> = changes.audit.iter().map(|(_, a)| a).collect();
    assert_eq!(audit, [&a_late, &a_early]);
    let (e1, e2) = (changes.executions[0].0, changes.executions[1].0);
    let (a1, a2) = (changes.audit[0].0, changes.audit[1].0);
    assert!(start.executions < e1 && e1 < e2 && start.audit < a1 && a1 < a2);
    let head = ChangeCursor {
        executions: e2,
        audit: a2,
    };
    assert_eq!(store.change_cursor().unwrap(), head);
    assert_eq!(store.changes(head, 10).unwrap(), Changes::default());

    let first = store.changes(start, 1).unwrap();
    assert_eq!((first.executions.len(), first.audit.len()), (1, 1));
    let rest = store
        .changes(
            ChangeCursor {
                executions: e1,
                audit: a1,
            },
            10,
        )
        .unwrap();
    assert_eq!(rest.executions, changes.executions[1..]);
    assert_eq!(rest.audit, changes.audit[1..]);
}

/// A lesson is found by a word of its rule, in any case, with a short snippet of the match.
pub fn search_finds_a_lesson_by_a_rule_word(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    for query in [
        f.word.clone(),
        f.word.to_uppercase(),
        format!("nothing {} else", f.word),
    ] {
        let hits = search(store, &query, &ListFilter::default(), 10);
        assert_eq!(hits.len(), 1, "{query:?}: {hits:?}");
        let hit = &hits[0];
        assert_eq!(
            (hit.kind, hit.id.as_str()),
            (RecordKind::Lesson, lesson.id.as_str())
        );
        assert_eq!(hit.skill, f.hr);
        assert!(hit.score.is_finite(), "{hit:?}");
        assert!(
            hit.snippet.contains(&f.word),
            "the snippet shows the match: {hit:?}"
        );
        assert!(hit.snippet.chars().count() <= 160, "{hit:?}");
    }
}

/// Search honours the statuses (lessons only) and the skill of the filter.
pub fn search_respects_statuses_and_skill(store: &dyn Store) {
    let f = Fixture::new();
    let approved = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    let review = f.findable_lesson(&f.hr, LessonStatus::NeedsReview, 1);
    let elsewhere = f.findable_lesson(&f.hr_other, LessonStatus::Approved, 2);
    let mut execution = f.execution(&f.hr, 3);
    execution.output = json!({"summary": format!("checked {}", f.word)});
    let records = vec![
        Record::Lesson(approved.clone()),
        Record::Lesson(review.clone()),
        Record::Lesson(elsewhere.clone()),
        Record::Execution(execution.clone()),
    ];
    write(store, records);

    let filter = |status: LessonStatus| ListFilter {
        statuses: Some([status].into()),
        ..f.of(&f.hr)
    };
    let found = hit_ids(&search(store, &f.word, &filter(LessonStatus::Approved), 10));
    assert_eq!(
        found,
        [approved.id.to_string(), execution.id.to_string()].into()
    );
    let found = hit_ids(&search(
        store,
        &f.word,
        &filter(LessonStatus::NeedsReview),
        10,
    ));
    assert_eq!(
        found,
        [review.id.to_string(), execution.id.to_string()].into()
    );
    let found = hit_ids(&search(store, &f.word, &f.of(&f.hr_other), 10));
    assert_eq!(found, [elsewhere.id.to_string()].into());
}

/// Executions are found by the words of their input and output, values and keys alike.
pub fn search_finds_executions_by_their_input(store: &dyn Store) {
    let f = Fixture::new();
    let key_word = format!("k{}", f.tag);
    let out_word = format!("o{}", f.tag);
    let mut execution = f.execution(&f.hr, 0);
    execution.input = json!({
        "candidate": format!("Zoë {}", f.word),
        "details": {key_word.clone(): ["nested", 3]},
    });
    execution.output = json!({"verdict": format!("hire {out_word}")});
    write(store, vec![Record::Execution(execution.clone())]);
    for query in [&f.word, &key_word, &out_word] {
        let hits = search(store, query, &ListFilter::default(), 10);
        assert_eq!(hits.len(), 1, "{query:?}: {hits:?}");
        assert_eq!(hits[0].kind, RecordKind::Execution);
        assert_eq!(hits[0].id, execution.id.as_str());
        assert_eq!(hits[0].skill, f.hr);
    }
}

/// Results come best first, scores never rise, and `limit` bounds the merged list.
pub fn search_ranks_best_first_within_limit(store: &dyn Store) {
    let f = Fixture::new();
    let w = &f.word;
    let mut strong = f.lesson(&f.hr, LessonStatus::Approved, 0);
    strong.rule = format!("{w} {w} {w}");
    strong.applies_when = w.clone();
    strong.tiers.summary = w.clone();
    strong.tags = vec![w.clone()];
    let mut records = vec![Record::Lesson(strong.clone())];
    for minutes in 1..5 {
        let mut weak = f.lesson(&f.hr, LessonStatus::Approved, minutes);
        weak.rule = format!(
            "When the candidate lists many frameworks and tools, mention {w} only in passing \
             after reviewing every project, reference, certificate and interview note."
        );
        records.push(Record::Lesson(weak));
        let mut execution = f.execution(&f.hr, minutes);
        execution.input = json!({"text": format!("a long note that says {w} once among words")});
        records.push(Record::Execution(execution));
    }
    write(store, records);

    let hits = search(store, w, &ListFilter::default(), 3);
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert_eq!(
        hits[0].id,
        strong.id.as_str(),
        "the strongest match comes first: {hits:?}"
    );
    assert!(
        hits.windows(2).all(|p| p[0].score >= p[1].score),
        "{hits:?}"
    );
    assert_eq!(search(store, w, &ListFilter::default(), 50).len(), 9);
    assert!(search(store, w, &ListFilter::default(), 0).is_empty());
}

/// Characters that mean something to a full-text engine are plain text to Lore's search:
/// they never fail a query, and the words around them are still found.
pub fn search_treats_special_characters_as_words(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.findable_lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let filter = ListFilter::default();
    let odd = [
        "\"", "\"\"", "'", "*", "NEAR(", "NEAR(a b", "-", "--", ":", "rule:", "a:b", "(", ")",
        "AND", "OR", "NOT", "^", "+", "{", "}", "[", "]", "\\", "%", "_", ";", "/*", "é",
        "e\u{301}", "🦀", "\u{0}", "\u{200b}", "²", "a\"b", "* OR *",
    ];
    for query in odd {
        store
            .search(query, &filter, 10)
            .unwrap_or_else(|e| panic!("search for {query:?} failed: {e}"));
    }
    let w = &f.word;
    for query in [
        format!("\"{w}"),
        format!("{w}*"),
        format!("-{w}"),
        format!("rule:{w}"),
        format!("NEAR({w}"),
        format!("NOT {w}"),
        format!("{w} AND"),
        format!("({w}))"),
    ] {
        let hits = search(store, &query, &filter, 10);
        assert_eq!(hit_ids(&hits), [lesson.id.to_string()].into(), "{query:?}");
    }
}

/// A query without words finds nothing, and is not an error.
pub fn empty_search_finds_nothing(store: &dyn Store) {
    let f = Fixture::new();
    write(
        store,
        vec![Record::Lesson(f.findable_lesson(
            &f.hr,
            LessonStatus::Approved,
            0,
        ))],
    );
    for query in ["", "   ", "!!! --- ***", "\n\t"] {
        assert!(
            search(store, query, &ListFilter::default(), 10).is_empty(),
            "{query:?}"
        );
    }
}

/// Counts are per kind inside the scope. Audit entries count where their subject does; tests
/// are the distinct IDs named by the lessons' `generated_test_ids`.
pub fn counts_follow_scope(store: &dyn Store) {
    let f = Fixture::new();
    let test = |n: u32| format!("TEST-{}-{n}", f.tag);
    let [e0, e1] = [0, 1].map(|m| f.execution(&f.hr, m));
    let mut lessons = [2, 3, 4].map(|m| f.lesson(&f.hr, LessonStatus::Approved, m));
    lessons[0].generated_test_ids = vec![test(1), test(2)];
    lessons[1].generated_test_ids = vec![test(2), test(3)];
    lessons[2].generated_test_ids = Vec::new();
    let mut records = vec![
        Record::Correction(f.correction(&e0, 5)),
        Record::Audit(f.audit(RecordKind::Lesson, lessons[0].id.as_str(), 6)),
        Record::Audit(f.audit(RecordKind::Execution, e1.id.as_str(), 7)),
        Record::Execution(e0),
        Record::Execution(e1),
        Record::ErrorEvent(f.error_event(&f.hr, 8)),
        Record::ErrorEvent(f.error_event(&f.hr_other, 9)),
    ];
    records.extend(lessons.iter().cloned().map(Record::Lesson));
    let mut finance = f.lesson(&f.finance, LessonStatus::Trial, 10);
    finance.generated_test_ids = vec![test(1), test(4)];
    records.push(Record::Audit(f.audit(
        RecordKind::Lesson,
        finance.id.as_str(),
        11,
    )));
    records.push(Record::Lesson(finance));
    write(store, records);

    let hr = StoreCounts {
        executions: 2,
        corrections: 1,
        lessons: 3,
        error_events: 2,
        audit_entries: 2,
        tests: 3,
        memories: 0,
        episodes: 0,
    };
    assert_eq!(store.counts(&f.hr_scope()).unwrap(), hr);
    let both = StoreCounts {
        lessons: 4,
        audit_entries: 3,
        tests: 4,
        ..hr
    };
    assert_eq!(store.counts(&f.both_scope()).unwrap(), both);
    let one_skill = Scope {
        skills: Some([f.hr_other.clone()].into()),
        ..f.hr_scope()
    };
    let expected = StoreCounts {
        error_events: 1,
        ..StoreCounts::default()
    };
    assert_eq!(store.counts(&one_skill).unwrap(), expected);
}

/// The store can be shared between threads, and concurrent writes all land.
pub fn writes_from_several_threads_all_land(store: &dyn Store) {
    let f = Fixture::new();
    std::thread::scope(|s| {
        for thread in 0..4 {
            let f = &f;
            s.spawn(move || {
                for i in 0..5 {
                    let execution = f.execution(&f.hr, thread * 10 + i);
                    write(store, vec![Record::Execution(execution)]);
                }
            });
        }
    });
    assert_eq!(store.counts(&f.hr_scope()).unwrap().executions, 20);
}

/// `info` names the backend, where it lives and a schema version.
pub fn info_describes_the_store(store: &dyn Store) {
    let info = store.info();
    assert!(!info.backend.is_empty(), "{info:?}");
    assert!(!info.location.is_empty(), "{info:?}");
    assert!(info.schema_version >= 1, "{info:?}");
}

fn changed_ids(store: &dyn Store, scope: &Scope, since: u64) -> (u64, Vec<String>) {
    let changes = store.lessons_changed(scope, since).unwrap();
    (changes.revision, ids(&changes.lessons, |l| l.id.as_str()))
}

/// Archives `lesson` at minute `minutes` through `update_lesson`, returning it as stored.
fn retire(store: &dyn Store, f: &Fixture, lesson: &Lesson, minutes: i64) -> Lesson {
    let mut retired = lesson.clone();
    retired.status = LessonStatus::Archived;
    retired.updated_at = f.at(minutes);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), minutes);
    store
        .update_lesson(&retired, lesson.updated_at, &audit)
        .unwrap();
    retired
}

fn vector_of(id: &LessonId, dim: usize, seed: f32) -> LessonVector {
    LessonVector {
        lesson: id.clone(),
        embedder: EmbedderId {
            name: "test-embedder-v1+corpus-00ff".into(),
            dim,
        },
        source_hash: u64::MAX - 7,
        vector: (0..dim).map(|i| seed + i as f32 * 0.1 - 1e-7).collect(),
    }
}

/// The lesson revision grows with each write, update and purge of a lesson.
pub fn lesson_revision_grows_with_every_lesson_change(store: &dyn Store) {
    let f = Fixture::new();
    let start = store.lesson_revision().unwrap();
    let lesson = f.lesson(&f.hr, LessonStatus::NeedsReview, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let written = store.lesson_revision().unwrap();
    assert!(written > start, "{written} after {start}");

    let updated = retire(store, &f, &lesson, 1);
    let retired = store.lesson_revision().unwrap();
    assert!(retired > written, "{retired} after {written}");

    let mut erased = updated.clone();
    erased.rule = "[purged]".into();
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 2);
    store.purge(&[Record::Lesson(erased)], &audit).unwrap();
    let purged = store.lesson_revision().unwrap();
    assert!(purged > retired, "{purged} after {retired}");
    assert_eq!(
        store.lesson_revision().unwrap(),
        purged,
        "reading changes nothing"
    );
}

/// Changes since a revision are exactly the lessons written or updated after it, as they are
/// now, and only those inside the scope asked for.
pub fn lessons_changed_lists_only_what_changed_inside_the_scope(store: &dyn Store) {
    let f = Fixture::new();
    // Other tests' lessons may share the store: keep only these.
    let mine = |(rev, ids): (u64, Vec<String>), of: &[&Lesson]| {
        let wanted: BTreeSet<&str> = of.iter().map(|l| l.id.as_str()).collect();
        let got: Vec<String> = ids
            .into_iter()
            .filter(|id| wanted.contains(id.as_str()))
            .collect();
        (rev, got)
    };
    let start = store.lesson_revision().unwrap();
    let hr = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let finance = f.lesson(&f.finance, LessonStatus::Approved, 1);
    write(
        store,
        vec![Record::Lesson(hr.clone()), Record::Lesson(finance.clone())],
    );
    let all = Scope::unrestricted();
    let (after_write, got) = mine(changed_ids(store, &all, start), &[&hr, &finance]);
    assert_eq!(got, ids(&[hr.clone(), finance.clone()], |l| l.id.as_str()));
    assert!(after_write > start);
    let (_, got) = mine(changed_ids(store, &f.hr_scope(), start), &[&hr, &finance]);
    assert_eq!(
        got,
        vec![hr.id.to_string()],
        "the finance lesson is out of scope"
    );

    let retired = retire(store, &f, &hr, 3);
    let changes = store.lessons_changed(&all, after_write).unwrap();
    let mine_now: Vec<&Lesson> = changes
        .lessons
        .iter()
        .filter(|l| l.id == hr.id || l.id == finance.id)
        .collect();
    assert_eq!(mine_now, vec![&retired], "only the update, as it is now");
    assert!(changes.revision > after_write);
    let (_, got) = mine(changed_ids(store, &all, changes.revision), &[&hr, &finance]);
    assert!(got.is_empty(), "nothing changed since: {got:?}");
}

/// A stored vector reads back bit for bit with its embedder and source hash; a second one for
/// the same lesson replaces it; listings follow the scope.
pub fn vectors_roundtrip_bit_for_bit_and_are_replaced(store: &dyn Store) {
    let f = Fixture::new();
    let hr = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let finance = f.lesson(&f.finance, LessonStatus::Approved, 1);
    write(
        store,
        vec![Record::Lesson(hr.clone()), Record::Lesson(finance.clone())],
    );
    let first = vector_of(&hr.id, 5, 0.3);
    let other = vector_of(&finance.id, 5, -0.7);
    store.put_vectors(&[first.clone(), other.clone()]).unwrap();
    let of = |scope: &Scope, id: &LessonId| {
        store
            .vectors(scope, None)
            .unwrap()
            .into_iter()
            .filter(|v| &v.lesson == id)
            .collect::<Vec<_>>()
    };
    assert_eq!(of(&Scope::unrestricted(), &hr.id), vec![first.clone()]);
    assert_eq!(
        store
            .vectors(&Scope::unrestricted(), Some(std::slice::from_ref(&hr.id)))
            .unwrap(),
        vec![first],
        "only the lessons asked for"
    );
    assert_eq!(of(&f.both_scope(), &finance.id), vec![other]);
    assert!(
        of(&f.hr_scope(), &finance.id).is_empty(),
        "out of scope vectors are not listed"
    );
    let mut second = vector_of(&hr.id, 3, 9.5);
    second.embedder.name = "another-embedder".into();
    second.source_hash = 1;
    store.put_vectors(std::slice::from_ref(&second)).unwrap();
    assert_eq!(of(&f.hr_scope(), &hr.id), vec![second]);
}

/// A batch with a vector of an unknown lesson, of the wrong length or with a NaN is refused
/// whole, naming the problem.
pub fn bad_vectors_are_refused_and_nothing_is_written(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let good = vector_of(&lesson.id, 4, 0.5);
    let unknown = vector_of(&f.lesson(&f.hr, LessonStatus::Approved, 1).id, 4, 0.5);
    let result = store.put_vectors(&[good.clone(), unknown.clone()]);
    assert!(
        matches!(&result, Err(Error::NotFound { id, .. }) if *id == unknown.lesson.to_string()),
        "{result:?}"
    );
    let mut short = good.clone();
    short.vector.pop();
    let result = store.put_vectors(&[good.clone(), short]);
    assert!(
        matches!(&result, Err(Error::Invalid { why, .. }) if why.contains('3') && why.contains('4')),
        "{result:?}"
    );
    let mut nan = good.clone();
    nan.vector[1] = f32::NAN;
    let result = store.put_vectors(&[good, nan]);
    assert!(matches!(result, Err(Error::Invalid { .. })), "{result:?}");
    let stored: Vec<LessonVector> = store
        .vectors(&f.hr_scope(), None)
        .unwrap()
        .into_iter()
        .filter(|v| v.lesson == lesson.id)
        .collect();
    assert!(stored.is_empty(), "nothing of a refused batch is stored");
}

/// Purging a lesson erases its vector too: it was made from the erased text.
pub fn purge_erases_the_lesson_vector(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Sensitive, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    store.put_vectors(&[vector_of(&lesson.id, 4, 0.1)]).unwrap();
    let mut erased = lesson.clone();
    erased.rule = "[purged]".into();
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), 1);
    store.purge(&[Record::Lesson(erased)], &audit).unwrap();
    assert!(
        store
            .vectors(&f.hr_scope(), None)
            .unwrap()
            .iter()
            .all(|v| v.lesson != lesson.id)
    );
}

/// Index state reads back as written, is replaced by a second write, and needs a name.
pub fn index_state_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let key = format!("test-state-{}", f.tag);
    assert_eq!(store.index_state(&key).unwrap(), None);
    let value: Vec<u8> = (0..=255u8).chain([0, 0, 7]).collect();
    store.set_index_state(&key, &value).unwrap();
    assert_eq!(store.index_state(&key).unwrap(), Some(value));
    store.set_index_state(&key, b"second").unwrap();
    assert_eq!(store.index_state(&key).unwrap(), Some(b"second".to_vec()));
    assert!(matches!(
        store.set_index_state(" ", b"x"),
        Err(Error::Invalid { .. })
    ));
}

impl Fixture {
    fn memory(
        &self,
        skill: &SkillPath,
        category: MemoryCategory,
        text: &str,
        minutes: i64,
    ) -> MemoryEntry {
        let at = self.at(minutes);
        MemoryEntry {
            id: MemoryId::generate(at),
            skill: skill.clone(),
            category,
            block: (category == MemoryCategory::Core).then(|| "user".to_owned()),
            text: text.to_owned(),
            tags: vec!["pref".into()],
            session: (category == MemoryCategory::Recall).then(|| format!("s-{}", self.tag)),
            author: Some("agent-7".into()),
            timestamp: at,
            extra: Map::new(),
        }
    }
}

fn memory_ids(entries: &[MemoryEntry]) -> Vec<String> {
    ids(entries, |m| m.id.as_str())
}

/// Memory entries come back whole, one category at a time, oldest first.
pub fn memories_roundtrip_by_category_oldest_first(store: &dyn Store) {
    let f = Fixture::new();
    let late = f.memory(
        &f.hr,
        MemoryCategory::Core,
        "Prefers answers in Zoë's ✓ style",
        5,
    );
    let early = f.memory(&f.hr, MemoryCategory::Core, "Prefers short answers", 1);
    let archival = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        "The ledger closes on Fridays",
        2,
    );
    let recall = f.memory(&f.hr, MemoryCategory::Recall, "user: hello", 3);
    write(
        store,
        [&late, &early, &archival, &recall]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let filter = ListFilter::skill(&f.hr_scope(), &f.hr);
    let core = store.memories(&filter, MemoryCategory::Core).unwrap();
    assert_eq!(core, vec![early, late]);
    assert_eq!(
        store.memories(&filter, MemoryCategory::Archival).unwrap(),
        vec![archival]
    );
    assert_eq!(
        store.memories(&filter, MemoryCategory::Recall).unwrap(),
        vec![recall]
    );
    let counted = store.counts(&f.hr_scope()).unwrap();
    assert_eq!(counted.memories, 4);
}

/// Another domain's memories are invisible; a skill filter narrows to one skill.
pub fn memories_follow_scope_and_skill(store: &dyn Store) {
    let f = Fixture::new();
    let hr = f.memory(&f.hr, MemoryCategory::Archival, "hr passage", 1);
    let other = f.memory(&f.hr_other, MemoryCategory::Archival, "hr other passage", 2);
    let fin = f.memory(&f.finance, MemoryCategory::Archival, "finance passage", 3);
    write(
        store,
        [&hr, &other, &fin]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let scoped = ListFilter {
        scope: f.hr_scope(),
        ..ListFilter::default()
    };
    let listed = store.memories(&scoped, MemoryCategory::Archival).unwrap();
    assert_eq!(memory_ids(&listed), memory_ids(&[hr.clone(), other]));
    let one = ListFilter::skill(&f.both_scope(), &f.hr);
    let listed = store.memories(&one, MemoryCategory::Archival).unwrap();
    assert_eq!(memory_ids(&listed), memory_ids(&[hr]));
    let hits = store
        .search_memories("finance passage", &scoped, MemoryCategory::Archival, 10)
        .unwrap();
    assert!(
        hits.iter().all(|(m, _)| m.skill.domain() == f.hr.domain()),
        "{hits:?}"
    );
}

/// Memory search finds words of the text and tags, ranks the better match first, stays in
/// its category, and treats query syntax as words.
pub fn memory_search_ranks_inside_category_and_scope(store: &dyn Store) {
    let f = Fixture::new();
    let w = &f.word;
    let strong = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        &format!("{w} {w} ledger {w}"),
        1,
    );
    let weak = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        &format!("{w} is mentioned once among many other words here"),
        2,
    );
    let core = f.memory(&f.hr, MemoryCategory::Core, &format!("{w} core"), 3);
    write(
        store,
        [&strong, &weak, &core]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let filter = ListFilter {
        scope: f.hr_scope(),
        ..ListFilter::default()
    };
    let hits = store
        .search_memories(
            &format!("{w} OR \"NEAR("),
            &filter,
            MemoryCategory::Archival,
            10,
        )
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|(m, _)| m.id.as_str()).collect();
    assert_eq!(found, vec![strong.id.as_str(), weak.id.as_str()]);
    assert!(hits[0].1 > hits[1].1, "{hits:?}");
    let one = store
        .search_memories(w, &filter, MemoryCategory::Archival, 1)
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(
        store
            .search_memories("", &filter, MemoryCategory::Archival, 10)
            .unwrap()
            .is_empty()
    );
}

/// A purged memory keeps its ID but loses its text, and search no longer finds its words.
pub fn purge_erases_a_memory_and_its_search_terms(store: &dyn Store) {
    let f = Fixture::new();
    let w = &f.word;
    let secret = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        &format!("{w} secret passage"),
        1,
    );
    write(store, vec![Record::Memory(secret.clone())]);
    let mut erased = secret.clone();
    erased.text = String::new();
    erased.tags = Vec::new();
    let audit = f.audit(RecordKind::Lesson, secret.id.as_str(), 2);
    store
        .purge(&[Record::Memory(erased.clone())], &audit)
        .unwrap();
    let filter = ListFilter::skill(&f.hr_scope(), &f.hr);
    assert_eq!(
        store.memories(&filter, MemoryCategory::Archival).unwrap(),
        vec![erased]
    );
    assert!(
        store
            .search_memories(w, &filter, MemoryCategory::Archival, 10)
            .unwrap()
            .is_empty()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_are_distinct_and_valid() {
        let (a, b) = (Fixture::new(), Fixture::new());
        assert_ne!(a.hr, b.hr);
        assert_ne!(a.word, b.word);
        assert_eq!(a.at(1) - a.at(0), TimeDelta::minutes(1));
        let lesson = a.lesson(&a.hr, LessonStatus::Approved, 0);
        let text = serde_json::to_string(&lesson).unwrap();
        assert_eq!(serde_json::from_str::<Lesson>(&text).unwrap(), lesson);
    }
}
