//! Seed 002's `application_count` and `last_applied_at`: a lesson's uses are counted as the
//! runs that showed it are recorded, and measuring agrees with the count.

#[path = "curation/support.rs"]
mod support;

use lore_core::id::LessonId;
use lore_core::model::{AuditAction, CurationMode, Execution, LessonStatus, Outcome};
use lore_core::ports::clock::Clock;
use lore_core::{SkillPath, Store};
use lore_engine::NewExecution;
use serde_json::json;
use support::{Project, SKILL};

fn run(p: &Project, shown: &[&LessonId]) -> Execution {
    p.engine
        .record_execution(NewExecution {
            skill: SkillPath::parse(SKILL).unwrap(),
            input: json!({"ticket": "Checkout fails"}),
            output: json!({"priority": "urgent"}),
            outcome: Outcome::Accepted,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: shown.iter().map(|id| (*id).clone()).collect(),
        })
        .unwrap()
}

#[test]
fn each_run_that_shows_a_lesson_counts_one_application_as_it_is_recorded() {
    let p = Project::new(CurationMode::Auto);
    let lesson = p.seed("Mark outages urgent.", LessonStatus::Approved);
    let other = p.seed("Quote the ticket's ID.", LessonStatus::Approved);
    assert_eq!(lesson.utility.activations, 0);
    assert_eq!(lesson.utility.last_applied_at, None);

    let first = run(&p, &[&lesson.id]);
    p.clock.advance(chrono::TimeDelta::minutes(5));
    let second = run(&p, &[&lesson.id, &other.id]);
    run(&p, &[]);
    let now = p.engine.lesson(&lesson.id).unwrap();
    assert_eq!(now.utility.activations, 2);
    assert_eq!(now.utility.last_applied_at, Some(second.timestamp));
    assert!(second.timestamp > first.timestamp);
    // A statistic, not an edit of the rule: a reviewer holding the lesson read before is not
    // refused for it.
    assert_eq!(now.updated_at, lesson.updated_at);
    let applied: Vec<String> = p
        .store
        .audit(Some(lesson.id.as_str()))
        .unwrap()
        .into_iter()
        .filter(|e| e.action == AuditAction::Edited)
        .map(|e| e.reason)
        .collect();
    assert_eq!(
        applied,
        [
            format!("applied in {}", first.id),
            format!("applied in {}", second.id)
        ]
    );
    assert_eq!(p.engine.lesson(&other.id).unwrap().utility.activations, 1);

    // Measuring recounts from the executions and finds the same.
    p.engine.maintain().unwrap();
    let measured = p.engine.lesson(&lesson.id).unwrap().utility;
    assert_eq!(measured.activations, 2);
    assert_eq!(measured.last_applied_at, Some(second.timestamp));
    assert!(p.clock.now() >= second.timestamp);
}
