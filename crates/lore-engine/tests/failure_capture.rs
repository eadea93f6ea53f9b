//! Seed 003's capture over the embedded store: failed steps fingerprinted from their text or
//! their transition, and candidate lessons from a fingerprint that recurs, with or without a
//! known fix.

#[path = "curation/support.rs"]
mod support;

use lore_core::id::ExecutionId;
use lore_core::model::{
    AuditAction, CurationMode, Execution, LessonSource, LessonStatus, Outcome, SignalChannel,
};
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::{FailedTransition, NewExecution, NewSignal};
use serde_json::{Value, json};
use support::{Project, SKILL};

fn run_of(p: &Project, skill: &str, outcome: Outcome, output: Value) -> Execution {
    p.engine
        .record_execution(NewExecution {
            skill: SkillPath::parse(skill).unwrap(),
            input: json!({"task": "reach the kitchen"}),
            output,
            outcome,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })
        .unwrap()
}

fn run(p: &Project, outcome: Outcome) -> Execution {
    run_of(p, SKILL, outcome, json!({}))
}

fn failure(execution: &ExecutionId, message: &str, action: Option<&str>) -> NewSignal {
    NewSignal {
        execution_id: execution.clone(),
        channel: SignalChannel::HardFailure,
        message: message.to_owned(),
        value: None,
        action: action.map(str::to_owned),
        tags: Vec::new(),
    }
}

fn stuck(before: &str, after: &str) -> FailedTransition {
    FailedTransition {
        before: before.into(),
        after: after.into(),
        reason: "collision".into(),
    }
}

#[test]
fn a_failure_without_a_message_is_fingerprinted_from_its_transition() {
    let p = Project::new(CurationMode::Auto);
    let first = run(&p, Outcome::Failure);
    let second = run(&p, Outcome::Failure);
    let a = p
        .engine
        .report_transition(
            failure(&first.id, "", Some("move north 3")),
            stuck("hall at (4, 5)", "hall at (4, 5)"),
        )
        .unwrap();
    let b = p
        .engine
        .report_transition(
            failure(&second.id, "  ", Some("move north 8")),
            stuck("hall at (9, 2)", "hall at (9, 2)"),
        )
        .unwrap();
    assert_eq!(a.fingerprint, b.fingerprint, "the same stuck step");
    assert_eq!(
        a.fingerprint,
        "transition hall at <num> > move north <num> > hall at <num> : collision"
    );
    assert!(a.tags.iter().any(|t| t == "state_stall"), "{:?}", a.tags);
    assert!(
        a.message.contains("hall at (4, 5)") && a.message.contains("collision"),
        "{}",
        a.message
    );
    // Another step that failed differently is another fingerprint, and not a stall.
    let moved = p
        .engine
        .report_transition(
            failure(&second.id, "", Some("open door")),
            FailedTransition {
                before: "hall".into(),
                after: "kitchen door locked".into(),
                reason: String::new(),
            },
        )
        .unwrap();
    assert_eq!(
        moved.fingerprint,
        "transition hall > open door > kitchen door locked : hard_failure"
    );
    assert!(!moved.tags.iter().any(|t| t == "state_stall"));
    // The action alone is a transition too.
    let acted = p
        .engine
        .report_signal(failure(&second.id, "", Some("press 'Export'")))
        .unwrap();
    assert_eq!(
        acted.fingerprint,
        "transition - > press <str> > - : hard_failure"
    );
    // A message still wins: the transition is the fallback.
    let said = p
        .engine
        .report_transition(
            failure(&second.id, "unknown option '--desc' for sort", None),
            stuck("a", "a"),
        )
        .unwrap();
    assert_eq!(said.fingerprint, "unknown option <str> for sort");
    assert!(said.tags.iter().any(|t| t == "sort_direction"));
}

#[test]
fn a_failure_with_no_evidence_at_all_is_refused_and_stores_nothing() {
    let p = Project::new(CurationMode::Auto);
    let e = run(&p, Outcome::Failure);
    let counts = || p.store.counts(&Scope::unrestricted()).unwrap();
    let before = counts();
    let err = p
        .engine
        .report_transition(failure(&e.id, " ", None), FailedTransition::default())
        .unwrap_err();
    assert!(
        matches!(err, Error::Invalid { .. }) && err.to_string().contains("states before"),
        "{err}"
    );
    // A transition belongs to a failure, not to a progress reading.
    let progress = NewSignal {
        channel: SignalChannel::Progress,
        value: Some(0.0),
        ..failure(&e.id, "", None)
    };
    let err = p
        .engine
        .report_transition(progress, stuck("a", "a"))
        .unwrap_err();
    assert!(err.to_string().contains("hard_failure"), "{err}");
    let huge = FailedTransition {
        before: "x".repeat(17 * 1024),
        ..stuck("", "b")
    };
    let err = p
        .engine
        .report_transition(failure(&e.id, "", Some("go")), huge)
        .unwrap_err();
    assert!(err.to_string().contains("state_before"), "{err}");
    assert_eq!(counts(), before);
}

#[test]
fn a_fingerprint_recurring_inside_one_run_is_a_candidate_without_a_later_success() {
    for (mode, status) in [
        (CurationMode::Auto, LessonStatus::Trial),
        (CurationMode::Review, LessonStatus::NeedsReview),
    ] {
        let p = Project::new(mode);
        let e = run(&p, Outcome::Failure);
        p.engine
            .report_transition(
                failure(&e.id, "", Some("move north 3")),
                stuck("hall 4", "hall 4"),
            )
            .unwrap();
        assert!(
            p.engine.maintain().unwrap().proposed.is_empty(),
            "once is no pattern"
        );
        p.engine
            .report_transition(
                failure(&e.id, "", Some("move north 5")),
                stuck("hall 9", "hall 9"),
            )
            .unwrap();
        let report = p.engine.maintain().unwrap();
        assert_eq!(report.proposed.len(), 1, "{report:?}");
        let lesson = p.engine.lesson(&report.proposed[0]).unwrap();
        assert_eq!(lesson.source, LessonSource::ErrorEvents);
        assert_eq!(lesson.status, status);
        assert_eq!(
            lesson.triggers,
            vec!["transition hall <num> > move north <num> > hall <num> : collision"]
        );
        assert!(
            lesson.rule.starts_with("Do not repeat `move north 5`"),
            "{}",
            lesson.rule
        );
        assert_eq!(lesson.extra["scope_hint"], "task");
        assert_eq!(lesson.extra["awaits_fix"], true);
        assert!(lesson.tags.iter().any(|t| t == "state_stall"));
        // Covered: nothing more is proposed.
        assert!(p.engine.maintain().unwrap().proposed.is_empty());
        p.assert_audit_explains_every_status();
    }
}

#[test]
fn the_scope_hint_says_how_far_a_fingerprint_reached() {
    let p = Project::new(CurationMode::Auto);
    let fail = |skill: &str, times: usize| {
        let e = run_of(&p, skill, Outcome::Failure, json!({}));
        for _ in 0..times {
            p.engine
                .report_signal(failure(&e.id, "syntax error near 'AS'", None))
                .unwrap();
        }
    };
    fail(SKILL, 2);
    fail("support/triage", 1);
    fail("billing/refund", 1);
    fail("billing/invoice", 2);
    let report = p.engine.maintain().unwrap();
    assert_eq!(report.proposed.len(), 2, "{report:?}");
    let hints: Vec<(String, Value)> = report
        .proposed
        .iter()
        .map(|id| {
            let l = p.engine.lesson(id).unwrap();
            (l.skill.to_string(), l.extra["scope_hint"].clone())
        })
        .collect();
    // Both met a skill of another domain.
    assert!(hints.iter().all(|(_, h)| h == "global"), "{hints:?}");

    let q = Project::new(CurationMode::Auto);
    for skill in [SKILL, SKILL, "support/triage"] {
        let e = run_of(&q, skill, Outcome::Failure, json!({}));
        q.engine
            .report_signal(failure(&e.id, "rate limit hit", None))
            .unwrap();
    }
    let report = q.engine.maintain().unwrap();
    assert_eq!(report.proposed.len(), 1, "{report:?}");
    let lesson = q.engine.lesson(&report.proposed[0]).unwrap();
    assert_eq!(lesson.skill.as_str(), SKILL);
    assert_eq!(lesson.extra["scope_hint"], "domain");
}

#[test]
fn a_candidate_awaiting_its_fix_is_rewritten_once_a_run_shows_it() {
    let p = Project::new(CurationMode::Auto);
    for _ in 0..2 {
        let e = run(&p, Outcome::Failure);
        p.engine
            .report_signal(failure(
                &e.id,
                "gridtool: unknown option '--desc' for sort",
                Some("gridtool sort --desc revenue"),
            ))
            .unwrap();
    }
    let first = p.engine.maintain().unwrap().proposed;
    assert_eq!(first.len(), 1);
    let id = first[0].clone();
    let before = p.engine.lesson(&id).unwrap();
    assert!(before.rule.starts_with("Do not repeat"), "{}", before.rule);
    assert!(before.tags.iter().any(|t| t == "sort_direction"));

    // A run that failed the same way and then succeeded with another command.
    let fixed = run_of(
        &p,
        SKILL,
        Outcome::Success,
        json!({"command": "gridtool sort --order=desc revenue"}),
    );
    p.engine
        .report_signal(failure(
            &fixed.id,
            "gridtool: unknown option '--desc' for sort",
            Some("gridtool sort --desc revenue"),
        ))
        .unwrap();
    let report = p.engine.maintain().unwrap();
    assert_eq!(
        report.proposed,
        vec![id.clone()],
        "the same lesson, rewritten"
    );
    let after = p.engine.lesson(&id).unwrap();
    assert_eq!(
        after.rule,
        "Use `gridtool sort --order=desc revenue` instead of `gridtool sort --desc revenue`."
    );
    assert!(after.extra.get("awaits_fix").is_none(), "{:?}", after.extra);
    assert_eq!(after.extra["scope_hint"], "task");
    assert_eq!(after.status, LessonStatus::Trial);
    let edits = p
        .store
        .audit(Some(id.as_str()))
        .unwrap()
        .into_iter()
        .filter(|e| e.action == AuditAction::Edited)
        .count();
    assert_eq!(edits, 1);
    assert!(p.engine.maintain().unwrap().proposed.is_empty());
    assert_eq!(p.engine.lessons(None, None).unwrap().len(), 1);
}
