//! Purges erase content everywhere it was: records, search terms, vectors.

use serde_json::json;

use crate::fixture::*;
use lore_core::Error;
use lore_core::model::{LessonStatus, MemoryCategory, RecordKind};
use lore_core::ports::store::{ListFilter, Record, Store};

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
