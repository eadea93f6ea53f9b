//! Curation through the Engine over the embedded store: the lifecycle table, review decisions,
//! write-time dedup and conflicts, sensitive data, expiry, pruning and purge.

#[path = "curation/support.rs"]
mod support;

use chrono::TimeDelta;
use lore_core::lifecycle::TRANSITIONS;
use lore_core::model::{AuditAction, AuthorKind, CurationMode, LessonStatus, LinkKind};
use lore_core::{Error, SkillPath, Store};
use lore_engine::EngineConfig;
use lore_engine::{Attribution, HumanCorrections, PURGED, Pruning, Upkeep};
use support::{Project, SKILL};

fn why(reason: &str) -> Attribution {
    Attribution::new(Some("mike"), reason)
}

const URGENT: &str = "When a ticket reports errors for many customers, priority must be urgent.";

#[test]
fn every_transition_in_the_table_moves_the_lesson_and_is_audited() {
    let p = Project::new(CurationMode::Auto);
    for (i, (from, to)) in TRANSITIONS.iter().enumerate() {
        let lesson = p.seed(&format!("Rule number {i} for the table."), *from);
        let moved = p.engine.transition(&lesson.id, *to, &why("table")).unwrap();
        assert_eq!(moved.status, *to);
        assert_eq!(p.status(&lesson.id), *to);
        let trail = p.store.audit(Some(lesson.id.as_str())).unwrap();
        let last = trail.last().unwrap();
        assert_eq!(last.action, AuditAction::Transition);
        assert_eq!((last.from, last.to), (Some(*from), Some(*to)));
        assert_eq!(
            (last.actor.as_str(), last.reason.as_str()),
            ("mike", "table")
        );
    }
}

#[test]
fn moves_outside_the_table_are_refused_and_change_nothing() {
    let p = Project::new(CurationMode::Auto);
    for from in LessonStatus::ALL {
        for to in LessonStatus::ALL {
            if TRANSITIONS.contains(&(from, to)) {
                continue;
            }
            let lesson = p.seed("A rule that must not move.", from);
            let err = p.engine.transition(&lesson.id, to, &why("no")).unwrap_err();
            assert!(matches!(err, Error::Conflict(_)), "{from:?}->{to:?}: {err}");
            assert_eq!(p.engine.lesson(&lesson.id).unwrap(), lesson);
            assert!(p.store.audit(Some(lesson.id.as_str())).unwrap().is_empty());
        }
    }
}

#[test]
fn a_batch_with_one_bad_member_changes_nothing() {
    let p = Project::new(CurationMode::Review);
    let a = p.seed("Rule a.", LessonStatus::NeedsReview);
    let b = p.seed("Rule b.", LessonStatus::Rejected);
    let err = p
        .engine
        .approve(&[a.id.clone(), b.id.clone()], &why("batch"))
        .unwrap_err();
    assert!(
        err.to_string().contains("from rejected to approved"),
        "{err}"
    );
    assert_eq!(p.status(&a.id), LessonStatus::NeedsReview);
    let err = p
        .engine
        .approve(&[a.id.clone(), a.id.clone()], &why("twice"))
        .unwrap_err();
    assert!(err.to_string().contains("named twice"), "{err}");
    assert!(p.engine.approve(&[], &why("none")).is_err());

    let c = p.seed("Rule c.", LessonStatus::NeedsReview);
    let done = p
        .engine
        .reject(&[a.id.clone(), c.id.clone()], &why("noise"))
        .unwrap();
    assert_eq!(done.len(), 2);
    assert_eq!(p.status(&c.id), LessonStatus::Rejected);
    p.assert_audit_explains_every_status();
}

#[test]
fn review_decisions_set_their_states_and_only_approval_reaches_the_prompt() {
    let p = Project::new(CurationMode::Review);
    let ids: Vec<_> = (0..4)
        .map(|i| {
            p.seed(
                &format!("Distinct guidance {i} here."),
                LessonStatus::NeedsReview,
            )
            .id
        })
        .collect();
    p.engine.approve(&ids[0..1], &why("real")).unwrap();
    p.engine.reject(&ids[1..2], &why("noise")).unwrap();
    p.engine
        .mark_one_time_exception(&ids[2..3], &why("once"))
        .unwrap();
    p.engine.mark_sensitive(&ids[3..4], &why("pii")).unwrap();
    let statuses: Vec<_> = ids.iter().map(|id| p.status(id)).collect();
    assert_eq!(
        statuses,
        [
            LessonStatus::Approved,
            LessonStatus::Rejected,
            LessonStatus::OneTimeException,
            LessonStatus::Sensitive
        ]
    );
    assert_eq!(p.prompt_ids(SKILL), vec![ids[0].clone()]);
    assert!(p.engine.review_queue(None, None).unwrap().is_empty());
}

#[test]
fn supersede_links_both_and_takes_the_old_one_out_of_use() {
    let p = Project::new(CurationMode::Auto);
    let old = p.seed("Set priority to high.", LessonStatus::Approved);
    let new = p.seed(
        "Set priority to urgent and name the page.",
        LessonStatus::Approved,
    );
    p.engine
        .supersede(std::slice::from_ref(&old.id), &new.id, &why("better"))
        .unwrap();
    let old_now = p.engine.lesson(&old.id).unwrap();
    assert_eq!(old_now.status, LessonStatus::Superseded);
    assert!(
        old_now
            .links
            .iter()
            .any(|l| l.kind == LinkKind::SupersededBy && l.target == new.id)
    );
    let new_now = p.engine.lesson(&new.id).unwrap();
    assert!(
        new_now
            .links
            .iter()
            .any(|l| l.kind == LinkKind::Supersedes && l.target == old.id)
    );
    assert_eq!(p.prompt_ids(SKILL), vec![new.id.clone()]);
    let err = p
        .engine
        .supersede(std::slice::from_ref(&new.id), &new.id, &why("self"))
        .unwrap_err();
    assert!(err.to_string().contains("itself"), "{err}");
    p.assert_audit_explains_every_status();
}

#[test]
fn a_correction_with_no_rule_is_feedback_and_makes_no_lesson() {
    let p = Project::new(CurationMode::Auto);
    p.skill_folder(SKILL);
    for text in ["This is wrong.", "x", "no", "Wrong, fix it."] {
        let out = p.correct(text);
        assert!(out.lesson.is_none(), "{text}: {:?}", out.lesson);
        let why = out.lesson_skipped.as_deref().unwrap();
        assert!(why.contains("say what should be done instead"), "{why}");
        assert_eq!(out.guardrail, None);
        assert!(p.engine.write_regression_test(&out).unwrap().is_none());
        // Stored and audited: the run counts as corrected.
        let stored = p.store.corrections(&Default::default()).unwrap();
        assert!(stored.iter().any(|c| c.id == out.correction.id));
        let trail = p.store.audit(Some(out.correction.id.as_str())).unwrap();
        assert!(trail[0].reason.contains("no lesson"), "{:?}", trail[0]);
    }
    assert!(p.prompt_ids(SKILL).is_empty());
    assert!(p.engine.lessons(None, None).unwrap().is_empty());
    let guardrails = p
        .dir
        .path()
        .join("skills")
        .join(SKILL)
        .join("GUARDRAILS.md");
    assert!(!guardrails.exists());
    // A correction that says what to do still teaches.
    let taught = p.correct("Always name the failing page.");
    assert!(taught.lesson.is_some() && taught.lesson_skipped.is_none());
}

#[test]
fn curation_modes_and_the_rule_for_peoples_corrections() {
    let auto = Project::new(CurationMode::Auto);
    assert_eq!(
        auto.correct(URGENT).lesson.as_ref().unwrap().status,
        LessonStatus::Approved
    );
    let agent = auto.correct_as(SKILL, "Always name the failing page.", AuthorKind::Agent);
    assert_eq!(agent.lesson.as_ref().unwrap().status, LessonStatus::Trial);
    assert_eq!(auto.prompt_ids(SKILL).len(), 2);

    let review = Project::review_mode(HumanCorrections::Approve);
    assert_eq!(
        review.correct(URGENT).lesson.as_ref().unwrap().status,
        LessonStatus::Approved
    );
    let agent = review.correct_as(SKILL, "Always name the failing page.", AuthorKind::Agent);
    assert_eq!(
        agent.lesson.as_ref().unwrap().status,
        LessonStatus::NeedsReview
    );
    assert_eq!(review.prompt_ids(SKILL).len(), 1);

    let strict = Project::review_mode(HumanCorrections::Review);
    let waiting = strict.correct(URGENT).lesson.unwrap();
    assert_eq!(waiting.status, LessonStatus::NeedsReview);
    assert!(strict.prompt_ids(SKILL).is_empty());
    strict
        .engine
        .approve(std::slice::from_ref(&waiting.id), &why("ok"))
        .unwrap();
    assert_eq!(strict.prompt_ids(SKILL), vec![waiting.id]);
}

#[test]
fn a_duplicate_correction_grows_the_evidence_of_the_existing_lesson() {
    let p = Project::new(CurationMode::Auto);
    let first = p.correct(URGENT);
    let again =
        p.correct("when a ticket reports errors for MANY customers,   priority must be urgent");
    assert_eq!(
        again.curation.merged_into.as_ref(),
        Some(&first.lesson.as_ref().unwrap().id)
    );
    assert_eq!(
        again.lesson.as_ref().unwrap().id,
        first.lesson.as_ref().unwrap().id
    );
    assert_eq!(
        again.lesson.as_ref().unwrap().merged_from,
        vec![again.correction.id.clone()]
    );
    assert!(again.guardrail.is_none());
    assert_eq!(p.engine.lessons(None, None).unwrap().len(), 1);
    let trail = p
        .store
        .audit(Some(first.lesson.as_ref().unwrap().id.as_str()))
        .unwrap();
    assert_eq!(trail.last().unwrap().evidence["evidence_count"], 2);
}

/// A conflict waits for a person; approving one side while the other is only on trial (made by
/// an agent, not vouched for by anyone) keeps the link, and the prompt shows one of the two.
#[test]
fn conflicting_lessons_are_linked_sent_to_review_and_not_prompted_together() {
    let p = Project::new(CurationMode::Auto);
    let urgent = p
        .correct_as(SKILL, "Priority must be urgent.", AuthorKind::Agent)
        .lesson
        .unwrap();
    assert_eq!(urgent.status, LessonStatus::Trial);
    let normal = p.correct("Priority must never be urgent.");
    assert_eq!(normal.curation.conflicts, vec![urgent.id.clone()]);
    let normal = normal.lesson.unwrap();
    assert_eq!(normal.status, LessonStatus::NeedsReview);
    let old = p.engine.lesson(&urgent.id).unwrap();
    assert!(
        old.links
            .iter()
            .any(|l| l.kind == LinkKind::Conflicts && l.target == normal.id)
    );
    let queue = p.engine.review_queue(None, None).unwrap();
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].related[0].id, urgent.id);
    p.engine
        .approve(std::slice::from_ref(&normal.id), &why("this one"))
        .unwrap();
    assert!(!p.engine.lesson(&normal.id).unwrap().links.is_empty());
    assert_eq!(p.prompt_ids(SKILL).len(), 1);
}

/// A person who approves both lessons of a conflict says both apply: the link goes, with an
/// audit entry on each, and both reach the prompt and recall.
#[test]
fn approving_both_lessons_of_a_conflict_recalls_both() {
    let p = Project::new(CurationMode::Auto);
    let a = p
        .correct("Always CC the account manager on refund emails.")
        .lesson
        .unwrap();
    let b = p.correct("Never CC the account manager on refund emails.");
    assert_eq!(b.curation.conflicts, vec![a.id.clone()]);
    let b = b.lesson.unwrap();
    p.engine
        .approve(
            std::slice::from_ref(&b.id),
            &why("both hold, for different teams"),
        )
        .unwrap();
    for id in [&a.id, &b.id] {
        let lesson = p.engine.lesson(id).unwrap();
        assert!(lesson.links.is_empty(), "{:?}", lesson.links);
        let trail = p.store.audit(Some(id.as_str())).unwrap();
        assert!(
            trail.last().unwrap().evidence["conflicts_settled"].is_array(),
            "{:?}",
            trail.last()
        );
    }
    let mut shown = p.prompt_ids(SKILL);
    shown.sort();
    let mut both = vec![a.id.clone(), b.id.clone()];
    both.sort();
    assert_eq!(shown, both);
    let recalled = p
        .engine
        .recall(&lore_engine::RecallQuery {
            text: "CC the account manager on refund emails".into(),
            explain: true,
            ..lore_engine::RecallQuery::default()
        })
        .unwrap();
    let explained = serde_json::to_value(&recalled.explain).unwrap();
    for item in explained.as_array().unwrap() {
        assert!(!item.to_string().contains("\"conflict\""), "{item}");
    }
    let ids: Vec<_> = recalled.lessons.iter().map(|l| l.id.clone()).collect();
    assert!(ids.contains(&a.id) && ids.contains(&b.id), "{ids:?}");
}

#[test]
fn a_person_unlinks_a_pair_and_both_keep_their_states() {
    let p = Project::new(CurationMode::Auto);
    let a = p
        .correct("Always include the stack trace in the bug report.")
        .lesson
        .unwrap();
    let b = p
        .correct("Do not include the stack trace in the bug report.")
        .lesson
        .unwrap();
    let [a2, b2] = p
        .engine
        .unlink(&b.id, &a.id, &why("different audiences"))
        .unwrap();
    assert_eq!((a2.id.clone(), b2.id.clone()), (b.id.clone(), a.id.clone()));
    assert!(a2.links.is_empty() && b2.links.is_empty());
    assert_eq!(p.status(&a.id), LessonStatus::Approved);
    assert_eq!(p.status(&b.id), LessonStatus::NeedsReview);
    let trail = p.store.audit(Some(a.id.as_str())).unwrap();
    let last = trail.last().unwrap();
    assert!(last.reason.contains("different audiences"), "{last:?}");
    assert_eq!(last.evidence["unlinked_from"], b.id.as_str());
    // Not linked any more, the same lesson twice, an unknown lesson: each refused.
    assert!(matches!(
        p.engine.unlink(&a.id, &b.id, &why("again")),
        Err(lore_core::Error::Conflict(_))
    ));
    assert!(matches!(
        p.engine.unlink(&a.id, &a.id, &why("self")),
        Err(lore_core::Error::Invalid { .. })
    ));
    let unknown = lore_core::id::LessonId::generate(chrono::Utc::now());
    assert!(matches!(
        p.engine.unlink(&a.id, &unknown, &why("gone")),
        Err(lore_core::Error::NotFound { .. })
    ));
}

#[test]
fn near_duplicates_are_merged_and_shown_once() {
    let p = Project::new(CurationMode::Auto);
    let a =
        p.correct("Always name the failing page and the error code in the summary of the ticket.");
    let b =
        p.correct("Always name the failing page and the error code in the summary of each ticket.");
    assert_eq!(
        b.curation.merged_into,
        Some(a.lesson.as_ref().unwrap().id.clone())
    );
    assert_eq!(b.lesson.as_ref().unwrap().id, a.lesson.as_ref().unwrap().id);
    assert_eq!(
        b.lesson.as_ref().unwrap().merged_from,
        vec![b.correction.id.clone()]
    );
    assert_eq!(
        p.prompt_ids(SKILL),
        vec![a.lesson.as_ref().unwrap().id.clone()]
    );
}

#[test]
fn a_full_supersession_waits_for_approval_in_review_mode() {
    let p = Project::review_mode(HumanCorrections::Review);
    let old = p
        .correct("Set priority to urgent for outages.")
        .lesson
        .unwrap();
    p.engine
        .approve(std::slice::from_ref(&old.id), &why("ok"))
        .unwrap();
    let new = p.correct(
        "When a ticket reports an outage for many customers, you must set priority to urgent for outages, always.",
    );
    assert_eq!(
        new.curation.supersedes,
        vec![old.id.clone()],
        "{:?}",
        new.curation
    );
    assert_eq!(p.status(&old.id), LessonStatus::Approved);
    p.engine
        .approve(
            std::slice::from_ref(&new.lesson.as_ref().unwrap().id),
            &why("better"),
        )
        .unwrap();
    assert_eq!(p.status(&old.id), LessonStatus::Superseded);
    assert_eq!(
        p.prompt_ids(SKILL),
        vec![new.lesson.as_ref().unwrap().id.clone()]
    );
    p.assert_audit_explains_every_status();
}

#[test]
fn a_correction_with_a_secret_makes_a_sensitive_lesson_that_no_read_path_returns() {
    let p = Project::new(CurationMode::Auto);
    let out = p.correct(
        "Never paste keys. Always redact the key sk-live_abcdefghijklmnop1234 in summaries.",
    );
    assert_eq!(out.lesson.as_ref().unwrap().status, LessonStatus::Sensitive);
    assert!(out.guardrail.is_none() && out.guardrail_skipped.is_some());
    assert!(p.prompt_ids(SKILL).is_empty());
    let skill = SkillPath::parse(SKILL).unwrap();
    assert!(
        p.engine
            .search("redact summaries", Some(&skill), 10)
            .unwrap()
            .is_empty()
    );

    let statuses = Some([LessonStatus::Sensitive].into());
    let queue = p.engine.review_queue(None, statuses).unwrap();
    let shown = serde_json::to_string(&queue).unwrap();
    assert!(!shown.contains("sk-live_abcdefghijklmnop1234"), "{shown}");
    assert!(shown.contains("[redacted:api_key]"), "{shown}");
}

#[test]
fn decimals_are_not_card_numbers_and_their_lessons_reach_the_prompt() {
    let p = Project::new(CurationMode::Auto);
    let out = p.correct("Always report the score 1-3-0.6860157730842659 with every digit.");
    assert_eq!(
        out.lesson.as_ref().unwrap().status,
        LessonStatus::Approved,
        "{:?}",
        out.curation
    );
    assert_eq!(
        p.prompt_ids(SKILL),
        vec![out.lesson.as_ref().unwrap().id.clone()]
    );
}

#[test]
fn purge_erases_the_lesson_and_its_correction_with_an_audit_entry() {
    let p = Project::new(CurationMode::Auto);
    let out = p.correct("Mail the customer at jane.doe@example.com when the priority is urgent.");
    let id = out.lesson.as_ref().unwrap().id.clone();
    assert!(p.engine.purge_lesson(&id, &why("  ")).is_err());
    let report = p.engine.purge_lesson(&id, &why("privacy request")).unwrap();
    assert_eq!(report.corrections, vec![out.correction.id.clone()]);
    let lesson = p.engine.lesson(&id).unwrap();
    assert_eq!(lesson.rule, PURGED);
    assert_eq!(lesson.status, LessonStatus::Sensitive);
    let correction = p.store.correction(&out.correction.id).unwrap().unwrap();
    assert_eq!(correction.text, PURGED);
    let trail = p.store.audit(Some(id.as_str())).unwrap();
    assert_eq!(trail.last().unwrap().action, AuditAction::Purged);
    let everything = format!("{:?}", p.engine.export_records().unwrap());
    assert!(!everything.contains("jane.doe@example.com"));
    let raw = std::fs::read(p.dir.path().join("lore.db")).unwrap();
    assert!(!raw.windows(20).any(|w| w == b"jane.doe@example.com"));
    p.assert_audit_explains_every_status();
}

#[test]
fn needs_review_expires_after_the_configured_age_and_maintain_is_idempotent() {
    let p = Project::with(EngineConfig {
        curation: CurationMode::Review,
        upkeep: Upkeep {
            review_expiry: TimeDelta::days(7),
            pruning: Pruning::Off,
        },
        ..EngineConfig::default()
    });
    let old = p.seed("Old guidance.", LessonStatus::NeedsReview);
    p.clock.advance(TimeDelta::days(5));
    let young = p.seed("Young guidance.", LessonStatus::NeedsReview);
    p.clock.advance(TimeDelta::days(3));
    let report = p.engine.maintain().unwrap();
    assert_eq!(report.expired, vec![old.id.clone()]);
    assert_eq!(p.status(&old.id), LessonStatus::Expired);
    assert_eq!(p.status(&young.id), LessonStatus::NeedsReview);
    let again = p.engine.maintain().unwrap();
    assert!(again.expired.is_empty() && again.pruned_by_age.is_empty());
    p.assert_audit_explains_every_status();
}

/// A lesson stored before the detector could see its secret (written straight into the store,
/// as an older build did) is moved to `sensitive` by upkeep, with an audit entry saying why;
/// ordinary lessons stay as they were, and a second run changes nothing.
#[test]
fn maintain_marks_lessons_stored_before_the_detector_saw_their_secret() {
    let p = Project::with(EngineConfig {
        upkeep: Upkeep {
            pruning: Pruning::Off,
            ..Upkeep::default()
        },
        ..EngineConfig::default()
    });
    let now = p.clock_now();
    let old = [
        "Connect with postgres://admin:S3cr3t@db.internal/prod when the replica lags.",
        "If the login fails, the root password is hunt3r7zq, so use it.",
        "Charge the test card 4111.1111.1111.1111 before a real one.",
    ]
    .map(|rule| support::lesson(SKILL, rule, LessonStatus::Approved, now));
    let records: Vec<_> = old
        .iter()
        .cloned()
        .map(lore_core::ports::store::Record::Lesson)
        .collect();
    p.store
        .write(&records, lore_core::ports::store::OnDuplicate::Fail)
        .unwrap();
    let plain = p.seed("Quote version 4.11 of the runbook.", LessonStatus::Approved);
    let decision = old_decision(&p, "Log in as admin with password: hunt3r7 and retry.");
    let report = p.engine.maintain().unwrap();
    assert_eq!(report.sensitive_decisions, vec![decision.clone()]);
    let stored = p.store.decisions().unwrap().decision(&decision).unwrap();
    assert_eq!(stored.unwrap().status, LessonStatus::Sensitive);
    let mut expected: Vec<_> = old.iter().map(|l| l.id.clone()).collect();
    expected.sort();
    let mut found = report.sensitive.clone();
    found.sort();
    assert_eq!(found, expected);
    for lesson in &old {
        assert_eq!(p.status(&lesson.id), LessonStatus::Sensitive);
        let trail = p.store.audit(Some(lesson.id.as_str())).unwrap();
        assert!(
            trail.last().unwrap().reason.contains("detector"),
            "{trail:?}"
        );
    }
    assert_eq!(p.status(&plain.id), LessonStatus::Approved);
    let again = p.engine.maintain().unwrap();
    assert!(again.sensitive.is_empty() && again.sensitive_decisions.is_empty());
    p.assert_audit_explains_every_status();
}

/// An approved decision recorded through the Engine, then given `rationale` straight in the
/// store, as a build whose detector missed it would have kept it.
fn old_decision(p: &Project, rationale: &str) -> lore_core::id::DecisionId {
    let recorded = p
        .engine
        .record_decision(lore_engine::NewDecision {
            skill: Some(SkillPath::parse(SKILL).unwrap()),
            situation: "The admin console refused a login".into(),
            action: "Retry with the shared account".into(),
            rationale: "It worked last time".into(),
            outcome: None,
            resolves: None,
        })
        .unwrap();
    let mut old = recorded.clone();
    old.rationale = rationale.into();
    old.status = LessonStatus::Approved;
    old.updated_at += TimeDelta::minutes(1);
    let audit = lore_core::model::AuditEntry {
        id: lore_core::id::AuditId::generate(old.updated_at),
        subject_kind: lore_core::model::RecordKind::Decision,
        subject: old.id.to_string(),
        action: AuditAction::Transition,
        from: Some(recorded.status),
        to: Some(LessonStatus::Approved),
        actor: "an older build".into(),
        at: old.updated_at,
        reason: "approved".into(),
        evidence: serde_json::Value::Null,
    };
    p.store
        .decisions()
        .unwrap()
        .update_decisions(&[(old.clone(), recorded.updated_at, audit)])
        .unwrap();
    old.id
}

#[test]
fn pruning_archives_by_age_then_by_rank_and_is_idempotent() {
    let config = |pruning| EngineConfig {
        upkeep: Upkeep {
            pruning,
            ..Upkeep::default()
        },
        ..EngineConfig::default()
    };
    let p = Project::with(config(Pruning::Hybrid {
        max_age: TimeDelta::days(90),
        max_lessons: 2,
    }));
    let ancient = p.seed("Ancient guidance.", LessonStatus::Approved);
    p.clock.advance(TimeDelta::days(100));
    let mut lessons = Vec::new();
    for (i, confidence) in [0.9, 0.5, 0.7].into_iter().enumerate() {
        let mut l = support::lesson(
            SKILL,
            &format!("Guidance {i}."),
            LessonStatus::Approved,
            p.clock_now(),
        );
        l.confidence = confidence;
        p.engine
            .import_records(&[lore_core::ports::store::Record::Lesson(l.clone())])
            .unwrap();
        lessons.push(l);
    }
    let report = p.engine.maintain().unwrap();
    assert_eq!(report.pruned_by_age, vec![ancient.id.clone()]);
    assert_eq!(report.pruned_by_rank, vec![lessons[1].id.clone()]);
    assert_eq!(p.status(&lessons[1].id), LessonStatus::Archived);
    assert_eq!(p.prompt_ids(SKILL).len(), 2);
    let again = p.engine.maintain().unwrap();
    assert!(again.pruned_by_age.is_empty() && again.pruned_by_rank.is_empty());

    let bad = Project::with(config(Pruning::Pareto { max_lessons: 0 }));
    assert!(matches!(bad.engine.maintain(), Err(Error::Invalid { .. })));
}

#[test]
fn a_corrected_lesson_gets_its_vector_when_written_once_a_fit_exists() {
    use lore_engine::RecallQuery;
    let p = Project::new(CurationMode::Auto);
    let vector_ids = || -> Vec<String> {
        p.store
            .vectors(&lore_core::Scope::unrestricted(), None)
            .unwrap()
            .into_iter()
            .map(|v| v.lesson.to_string())
            .collect()
    };
    let first = p.correct(URGENT).lesson.unwrap();
    assert!(
        vector_ids().is_empty(),
        "no fit yet: the first recall embeds"
    );
    let ask = |text: &str| {
        p.engine
            .recall(&RecallQuery {
                text: text.into(),
                ..RecallQuery::default()
            })
            .unwrap()
    };
    assert_eq!(ask("ticket errors customers").lessons[0].id, first.id);
    assert_eq!(vector_ids(), vec![first.id.to_string()]);
    let second = p
        .correct("Always attach the invoice number when billing is mentioned.")
        .lesson
        .unwrap();
    assert!(
        vector_ids().contains(&second.id.to_string()),
        "embedded with the stored fit before any recall"
    );
    assert_eq!(ask("invoice number billing").lessons[0].id, second.id);
}
