//! Seed 002's non-inferable filter end to end over a real SQLite store: while it is on, a lesson
//! learned from a correction is written with the marker, recall keeps only marked lessons, and
//! the marker, which most lessons then share, does not count against the per-tag cap.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, Lesson, LessonStatus, Outcome};
use lore_core::ports::store::{OnDuplicate, Record, Store};
use lore_engine::{Engine, EngineConfig, NewCorrection, NewExecution, RecallQuery};
use lore_recall::{NON_INFERABLE_TAG, RecallConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

const SKILL: &str = "ops/deploy";

fn lesson(n: usize, tags: &[&str]) -> Lesson {
    let at = Utc.with_ymd_and_hms(2026, 2, 20, 12, 0, n as u32).unwrap();
    let rule = format!("Checkout deploy step {n}: check the payment gateway region {n}.");
    serde_json::from_value(json!({
        "id": LessonId::generate(at),
        "skill": SKILL,
        "mistake": format!("mistake {n}"),
        "root_cause": "cause",
        "rule": rule,
        "applies_when": "",
        "tags": tags,
        "tiers": {"summary": rule, "condition": "", "action": "", "rationale": ""},
        "confidence": 0.8,
        "source": "manual",
        "status": LessonStatus::Approved,
        "created_at": at,
        "updated_at": at,
    }))
    .unwrap()
}

fn engine(dir: &tempfile::TempDir, filter: bool) -> (Engine, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap());
    let config = RecallConfig::builder()
        .non_inferable_only(filter)
        .build()
        .unwrap();
    let engine = Engine::new(store.clone(), EngineConfig::default()).with_recall_config(config);
    (engine, store)
}

fn recalled(engine: &Engine) -> Vec<LessonId> {
    let query = RecallQuery {
        text: "checkout deploy payment gateway".into(),
        ..RecallQuery::default()
    };
    let result = engine.recall(&query).unwrap();
    result.lessons.into_iter().map(|l| l.id).collect()
}

#[test]
fn recall_keeps_only_marked_lessons_and_the_marker_caps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marked: Vec<Lesson> = (0..6).map(|n| lesson(n, &[NON_INFERABLE_TAG])).collect();
    let plain = lesson(9, &[]);
    let (engine, store) = engine(&dir, true);
    let mut records: Vec<Record> = marked.iter().cloned().map(Record::Lesson).collect();
    records.push(Record::Lesson(plain.clone()));
    store.write(&records, OnDuplicate::Fail).unwrap();

    let ids = recalled(&engine);
    assert_eq!(ids.len(), 6, "the default cap is 3 per tag: {ids:?}");
    assert!(
        !ids.contains(&plain.id),
        "an unmarked lesson passed the filter"
    );
    drop(engine);
    let (unfiltered, _) = self::engine(&dir, false);
    assert!(recalled(&unfiltered).contains(&plain.id));
}

#[test]
fn a_correction_is_written_with_the_marker_only_while_the_filter_is_on() {
    for filter in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (engine, store) = engine(&dir, filter);
        let skill = SkillPath::parse(SKILL).unwrap();
        let execution = engine
            .record_execution(NewExecution {
                skill: skill.clone(),
                input: json!({"task": "deploy checkout"}),
                output: json!({"step": "deployed to eu-west"}),
                outcome: Outcome::Rejected,
                cost_usd: None,
                latency_ms: None,
                model: None,
                session: None,
                lessons_shown: Vec::new(),
            })
            .unwrap();
        let outcome = engine
            .correct(NewCorrection {
                skill,
                execution_id: execution.id,
                text: "Always check the payment gateway region before a checkout deploy.".into(),
                author_kind: AuthorKind::Human,
                author: Some("ana".into()),
            })
            .unwrap();
        let id = outcome.lesson.expect("a lesson is learned").id;
        let stored = store.lesson(&id).unwrap().unwrap();
        let has = stored.tags.iter().any(|t| t == NON_INFERABLE_TAG);
        assert_eq!(has, filter, "{:?}", stored.tags);
        assert_eq!(recalled(&engine), vec![id], "filter {filter}");
    }
}
