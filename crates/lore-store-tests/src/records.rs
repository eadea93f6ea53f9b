//! Every record kind reads back as written; IDs, duplicates and batches behave alike for all.

use crate::fixture::*;
use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::model::{LessonStatus, RecordKind};
use lore_core::ports::store::{ListFilter, OnDuplicate, Record, Store, WriteReport};

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
