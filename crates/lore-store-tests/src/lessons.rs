//! Lesson updates: optimistic, atomic with the writes they belong to, and visible as revisions.

use std::collections::BTreeSet;

use chrono::TimeDelta;

use crate::fixture::*;
use lore_core::Error;
use lore_core::model::{Lesson, LessonLink, LessonStatus, LinkKind, RecordKind};
use lore_core::ports::store::{LessonUpdate, ListFilter, OnDuplicate, Record, Store};
use lore_core::scope::Scope;

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
