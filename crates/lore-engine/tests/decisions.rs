//! The decision corpus through the Engine on a real SQLite file: who decided comes from the
//! handle, decisions wait for review and move only along the lessons' lifecycle with an audit
//! entry each, only approved ones are recalled (top 5, by similarity), inside the scope, and
//! bad input is refused with nothing stored.

#[path = "curation/support.rs"]
mod support;

use lore_core::model::{AuditAction, CurationMode, LessonStatus, RecordKind};
use lore_core::ports::knowledge::DecisionStore;
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::{DecisionQuery, NewDecision};
use support::{Project, SKILL};

fn new(situation: &str, action: &str) -> NewDecision {
    NewDecision {
        skill: Some(SkillPath::parse(SKILL).unwrap()),
        situation: situation.to_owned(),
        action: action.to_owned(),
        rationale: "The customer's contract allows it.".to_owned(),
        outcome: None,
        resolves: Some("EXEC-1".to_owned()),
    }
}

#[test]
fn decisions_are_curated_then_recalled_top_five_by_similarity() {
    let p = Project::new(CurationMode::Review);
    let reviewer = p.engine.acting_as("tok_reviewer");
    let mut ids = Vec::new();
    for i in 0..8 {
        let d = reviewer
            .record_decision(new(
                &format!("A refund of {i}00 euros was asked for a late delivery"),
                &format!("Refund {i}00 euros and apologise"),
            ))
            .unwrap();
        assert_eq!(d.status, LessonStatus::NeedsReview);
        assert_eq!(d.decided_by, "tok_reviewer");
        ids.push(d.id);
    }
    let other = reviewer
        .record_decision(new("The export format was unclear", "Choose CSV"))
        .unwrap();
    // Nothing is recalled before review.
    let query = DecisionQuery {
        text: "a customer asks for a refund after a late delivery".to_owned(),
        ..DecisionQuery::default()
    };
    assert!(
        p.engine
            .recall_decisions(&query)
            .unwrap()
            .decisions
            .is_empty()
    );

    let mut approved = ids.clone();
    approved.push(other.id.clone());
    p.engine
        .review_decisions(&approved, LessonStatus::Approved, "sound calls")
        .unwrap();
    let recalled = p.engine.recall_decisions(&query).unwrap();
    assert_eq!(recalled.decisions.len(), 5, "{recalled:#?}");
    assert!(!recalled.decisions.iter().any(|d| d.id == other.id));
    assert!(recalled.text.contains("> Situation: A refund of"));
    assert!(recalled.text.contains("decided by tok_reviewer"));

    // Each move is audited with who and why.
    let audit = p.store.audit(Some(ids[0].as_str())).unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].subject_kind, RecordKind::Decision);
    assert_eq!(audit[1].action, AuditAction::Transition);
    assert_eq!(audit[1].reason, "sound calls");

    // A superseded decision leaves recall.
    p.engine
        .review_decisions(&ids[..1], LessonStatus::Superseded, "a newer policy")
        .unwrap();
    let after = p.engine.recall_decisions(&query).unwrap();
    assert!(!after.decisions.iter().any(|d| d.id == ids[0]));

    // Another domain's handle sees none and cannot review them.
    let finance = p.engine.scoped(Scope::domains(["finance"]));
    assert!(
        finance
            .recall_decisions(&query)
            .unwrap()
            .decisions
            .is_empty()
    );
    let err = finance
        .review_decisions(&ids[1..2], LessonStatus::Rejected, "no")
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
}

#[test]
fn bad_decisions_are_refused_and_nothing_changes() {
    let p = Project::new(CurationMode::Review);
    let kept = p
        .engine
        .record_decision(new("A situation", "An action"))
        .unwrap();
    let revision = p.store.decision_revision().unwrap();
    for (bad, field) in [
        (
            NewDecision {
                skill: None,
                ..new("s", "a")
            },
            "skill",
        ),
        (new(" ", "a"), "situation"),
        (new("s", ""), "action"),
        (
            NewDecision {
                rationale: String::new(),
                ..new("s", "a")
            },
            "rationale",
        ),
        (
            NewDecision {
                resolves: Some("x".repeat(300)),
                ..new("s", "a")
            },
            "resolves",
        ),
    ] {
        let err = p.engine.record_decision(bad).unwrap_err();
        assert!(err.to_string().contains(field), "{err}");
    }
    let outside = p.engine.scoped(Scope::domains(["finance"]));
    assert!(matches!(
        outside.record_decision(new("s", "a")).unwrap_err(),
        Error::Forbidden(_)
    ));
    // An approve and an illegal move in one batch: neither lands.
    let second = p.engine.record_decision(new("Another", "Act")).unwrap();
    p.engine
        .review_decisions(
            std::slice::from_ref(&second.id),
            LessonStatus::Rejected,
            "wrong",
        )
        .unwrap();
    let err = p
        .engine
        .review_decisions(
            &[kept.id.clone(), second.id.clone()],
            LessonStatus::Approved,
            "ok",
        )
        .unwrap_err();
    assert!(err.to_string().contains("status"), "{err}");
    assert_eq!(
        p.store.decision(&kept.id).unwrap().unwrap().status,
        LessonStatus::NeedsReview
    );
    let err =
        p.engine
            .review_decisions(std::slice::from_ref(&kept.id), LessonStatus::Approved, " ");
    assert!(err.unwrap_err().to_string().contains("reason"));
    assert_eq!(p.store.decision_revision().unwrap(), revision + 2);

    // Personal data makes a decision sensitive on arrival: never recalled.
    let private = p
        .engine
        .record_decision(new("Refund asked by jane.doe@example.com", "Refund"))
        .unwrap();
    assert_eq!(private.status, LessonStatus::Sensitive);
}
