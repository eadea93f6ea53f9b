//! Learning lessons that already exist, in bulk, over the embedded store: every line becomes a
//! lesson through the correction pipeline's curation, a bad file stores nothing, and the same
//! file twice stores nothing new.

#[path = "curation/support.rs"]
mod support;

use lore_core::Store;
use lore_core::model::{AuthorKind, CurationMode, LessonStatus};
use lore_core::ports::store::ListFilter;
use lore_engine::LineOutcome;
use lore_engine::learn::{BATCH, parse_jsonl};
use support::{Project, SKILL};

fn line(task: &str, lesson: &str) -> String {
    serde_json::json!({"skill": SKILL, "task": task, "failed": "it failed", "lesson": lesson})
        .to_string()
}

fn counts(p: &Project) -> (usize, usize, usize) {
    let all = ListFilter::default();
    (
        p.store.executions(&all).unwrap().len(),
        p.store.corrections(&all).unwrap().len(),
        p.store.lessons(&all).unwrap().len(),
    )
}

#[test]
fn each_line_becomes_a_curated_lesson_and_a_second_run_stores_nothing() {
    let p = Project::new(CurationMode::Auto);
    let file = [
        line("Summarize a checkout ticket", "Always name the failing page in the summary."),
        line("Triage an outage", "When many customers report errors, priority must be urgent."),
        // The same rule as the first line, from another task: merged, not a second lesson.
        line("Summarize a login ticket", "Always name the failing page in the summary."),
        r#"{"skill":"support/triage","task":"Parse a log","lesson":"Use UTC for every timestamp.","fingerprint":"TypeError: x is undefined","tags":["time"]}"#.to_owned(),
    ]
    .join("\n");
    let lines = parse_jsonl(&file).unwrap();
    let report = p
        .engine
        .learn_lessons(&lines, AuthorKind::Agent, Some("bot"))
        .unwrap();
    assert_eq!(
        (report.lines, report.learned, report.merged, report.already),
        (4, 3, 1, 0)
    );
    assert_eq!(report.statuses.get("trial"), Some(&3), "{report:?}");
    let merged = &report.results[2];
    assert_eq!(merged.outcome, LineOutcome::Merged);
    assert_eq!(merged.lesson, report.results[0].lesson);
    assert_eq!(counts(&p), (4, 4, 3));
    let utc = p
        .engine
        .lesson(report.results[3].lesson.as_ref().unwrap())
        .unwrap();
    assert_eq!(utc.triggers, vec!["TypeError: x is undefined".to_owned()]);
    assert!(utc.tags.contains(&"time".to_owned()));
    assert!(utc.extra.contains_key("learned_hash"));
    assert!(utc.correction_id.is_some() && utc.execution_id.is_some());
    let first = p
        .engine
        .lesson(report.results[0].lesson.as_ref().unwrap())
        .unwrap();
    assert_eq!(first.merged_from.len(), 1);
    // Every lesson made is audited, and its guardrail written.
    let trail = p.store.audit(Some(first.id.as_str())).unwrap();
    assert!(!trail.is_empty());
    assert_eq!(report.guardrails, 2, "support/triage has no skill folder");
    p.assert_audit_explains_every_status();

    let again = p
        .engine
        .learn_lessons(&lines, AuthorKind::Agent, None)
        .unwrap();
    assert_eq!((again.learned, again.merged, again.already), (0, 0, 4));
    assert_eq!(counts(&p), (4, 4, 3));
}

#[test]
fn a_persons_lessons_are_approved_and_an_agents_wait_in_review_mode() {
    let p = Project::new(CurationMode::Auto);
    let lines = parse_jsonl(&line("t", "Always cite the source.")).unwrap();
    let r = p
        .engine
        .learn_lessons(&lines, AuthorKind::Human, None)
        .unwrap();
    assert_eq!(r.results[0].status, Some(LessonStatus::Approved));
    let q = Project::new(CurationMode::Review);
    let r = q
        .engine
        .learn_lessons(&lines, AuthorKind::Agent, None)
        .unwrap();
    assert_eq!(r.results[0].status, Some(LessonStatus::NeedsReview));
}

#[test]
fn a_file_larger_than_a_batch_lands_whole_and_dedups_across_batches() {
    let p = Project::new(CurationMode::Auto);
    let n = BATCH + 20;
    let mut text: Vec<String> = (0..n)
        .map(|i| {
            line(
                &format!("task {i}"),
                &format!("Always check widget {i} before shipping order {i}."),
            )
        })
        .collect();
    // A line repeated in the second batch is one lesson.
    text.push(text[3].clone());
    let lines = parse_jsonl(&text.join("\n")).unwrap();
    let report = p
        .engine
        .learn_lessons(&lines, AuthorKind::Human, None)
        .unwrap();
    assert_eq!(report.learned + report.merged, n, "{:?}", report.statuses);
    assert_eq!(report.already, 1);
    assert_eq!(counts(&p).1, n);
}

#[test]
fn a_bad_line_stores_nothing_and_is_named() {
    let p = Project::new(CurationMode::Auto);
    let text = [
        line("t", "Always cite the source."),
        line("t", "Never guess a date."),
        r#"{"skill":"support/triage","task":"t","lesson":""}"#.to_owned(),
    ]
    .join("\n");
    let err = parse_jsonl(&text).unwrap_err().to_string();
    assert!(
        err.contains("line 3: lesson") && err.contains("must not be empty"),
        "{err}"
    );
    let bare = line("t", "wrong");
    let err = parse_jsonl(&bare).unwrap_err().to_string();
    assert!(
        err.contains("line 1: lesson") && err.contains("no rule"),
        "{err}"
    );
    assert_eq!(counts(&p), (0, 0, 0));
}

#[test]
fn a_line_outside_the_scope_stores_nothing() {
    let p = Project::new(CurationMode::Auto);
    let scoped = p.engine.scoped(lore_core::Scope::domains(["hr"]));
    let text = format!(
        "{}\n{}",
        r#"{"skill":"hr/screen","task":"t","lesson":"Always cite the source."}"#,
        line("t", "Never guess a date.")
    );
    let err = scoped
        .learn_lessons(&parse_jsonl(&text).unwrap(), AuthorKind::Agent, None)
        .unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    assert_eq!(counts(&p), (0, 0, 0));
}
