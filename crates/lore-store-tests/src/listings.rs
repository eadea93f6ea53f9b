//! Listings, scopes, filters, paging, the change feed and counts.

use std::collections::BTreeSet;

use serde_json::json;

use crate::fixture::*;
use lore_core::model::{AuditEntry, Execution, LessonStatus, RecordKind};
use lore_core::ports::store::{ChangeCursor, Changes, ListFilter, Record, Store, StoreCounts};
use lore_core::scope::{Scope, SkillPath};

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

/// A store that announces writes rings its bell for each of its own, so a waiting follower
/// wakes at once; a wait with the mark after the write sleeps out its timeout.
pub fn a_write_rings_the_change_bell(store: &dyn Store) {
    let Some(bell) = store.change_bell() else {
        return;
    };
    let f = Fixture::new();
    let mark = bell.rung();
    write(store, vec![Record::Execution(f.execution(&f.hr, 0))]);
    let after = bell.wait(mark, std::time::Duration::from_secs(30));
    assert_ne!(after, mark, "the write did not ring the bell");
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

/// The organization's members come from the marks of members' runs and lessons inside the
/// scope: a run's note wins over a lesson's (the latest run's role over an older one's); org
/// lessons, broken marks and runs without a note name no one.
pub fn members_come_from_marks_inside_the_scope(store: &dyn Store) {
    use lore_core::org::{KEY, Member, OrgMark, set_mark};
    let f = Fixture::new();
    let member = |agent: &str, role: &str, department: Option<&str>| Member {
        agent: agent.into(),
        role: Some(role.into()),
        department: department.map(Into::into),
    };
    let run = |skill: &SkillPath, minutes: i64, who: Option<&Member>| {
        let mut e = f.execution(skill, minutes);
        if let Some(who) = who {
            e.extra
                .insert(KEY.into(), serde_json::to_value(who).unwrap());
        }
        Record::Execution(e)
    };
    let owned = |minutes: i64, who: &Member| {
        let mut lesson = f.lesson(&f.hr, LessonStatus::Approved, minutes);
        let scope = Scope {
            agent: Some(who.agent.clone()),
            role: who.role.clone(),
            department: who.department.clone(),
            ..Scope::default()
        };
        set_mark(&mut lesson, &OrgMark::personal(&scope));
        Record::Lesson(lesson)
    };
    let mut org = f.lesson(&f.hr_other, LessonStatus::Approved, 3);
    set_mark(&mut org, &OrgMark::org(["x".to_owned()].into()));
    let mut broken = f.lesson(&f.hr, LessonStatus::Approved, 4);
    broken.extra.insert(KEY.into(), json!("garbage"));
    write(
        store,
        vec![
            run(&f.hr, 0, Some(&member("a", "triage", None))),
            run(&f.hr_other, 5, Some(&member("a", "screener", Some("hr")))),
            run(&f.hr, 6, None),
            owned(1, &member("b", "writer", Some("hr"))),
            owned(2, &member("d", "x", None)),
            run(&f.hr, 7, Some(&member("d", "y", None))),
            run(&f.finance, 8, Some(&member("c", "auditor", None))),
            Record::Lesson(org),
            Record::Lesson(broken),
        ],
    );
    let hr = vec![
        member("a", "screener", Some("hr")),
        member("b", "writer", Some("hr")),
        member("d", "y", None),
    ];
    assert_eq!(store.members(&f.hr_scope()).unwrap(), hr);
    let mut both = hr.clone();
    both.insert(2, member("c", "auditor", None));
    assert_eq!(store.members(&f.both_scope()).unwrap(), both);
    let one_skill = Scope {
        skills: Some([f.hr_other.clone()].into()),
        ..f.hr_scope()
    };
    assert_eq!(
        store.members(&one_skill).unwrap(),
        vec![member("a", "screener", Some("hr"))]
    );
}
