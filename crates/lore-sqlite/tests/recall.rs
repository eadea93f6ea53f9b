//! `Engine::recall` over the embedded store: whatever the lessons' states and skills, a recall
//! returns only retrievable lessons inside the handle's scope, within its token budget.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use lore_core::engine::RecallQuery;
use lore_core::id::LessonId;
use lore_core::model::{CurationMode, Lesson, LessonStatus};
use lore_core::recall::{ApproxTokenizer, Decision, Tokenizer};
use lore_core::store::{OnDuplicate, Record, Store};
use lore_core::{Engine, EngineConfig, Error, Scope, SkillPath};
use lore_sqlite::{OpenMode, SqliteStore};
use proptest::prelude::*;
use serde_json::json;

const SKILLS: [&str; 3] = ["ops/deploy", "ops/billing", "hr/screen"];

/// A lesson built from JSON, so that fields added to `Lesson` later keep their defaults.
fn lesson(n: usize, skill: &str, status: LessonStatus, rule: &str) -> Lesson {
    let at = Utc.with_ymd_and_hms(2026, 2, 20, 12, 0, 0).unwrap();
    serde_json::from_value(json!({
        "id": LessonId::generate(at),
        "skill": skill,
        "mistake": format!("mistake {n}"),
        "root_cause": "cause",
        "rule": rule,
        "applies_when": "when deploying",
        "tags": [format!("t{}", n % 2)],
        "tiers": {"summary": rule, "condition": "", "action": "", "rationale": ""},
        "confidence": 0.8,
        "source": "manual",
        "status": status,
        "created_at": at,
        "updated_at": at,
    }))
    .unwrap()
}

fn engine(dir: &tempfile::TempDir, lessons: &[Lesson]) -> Engine {
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    let records: Vec<Record> = lessons.iter().cloned().map(Record::Lesson).collect();
    store.write(&records, OnDuplicate::Fail).unwrap();
    let config = EngineConfig {
        curation: CurationMode::Review,
        ..EngineConfig::default()
    };
    Engine::new(Arc::new(store), config)
}

fn query(text: &str, budget: usize) -> RecallQuery {
    RecallQuery {
        text: text.into(),
        budget: Some(budget),
        ..RecallQuery::default()
    }
}

#[test]
fn recall_finds_the_relevant_lesson_and_explains_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let lessons = [
        lesson(
            0,
            "ops/deploy",
            LessonStatus::Approved,
            "Roll back the deploy when checkout fails.",
        ),
        lesson(
            1,
            "ops/deploy",
            LessonStatus::Approved,
            "Invoices need the VAT rate.",
        ),
        lesson(
            2,
            "ops/deploy",
            LessonStatus::Rejected,
            "Roll back every deploy at once.",
        ),
    ];
    let engine = engine(&dir, &lessons);
    let result = engine
        .recall(&query("checkout fails after deploy", 500))
        .unwrap();
    assert_eq!(result.lessons[0].id, lessons[0].id);
    assert!(
        result.text.contains("Roll back the deploy"),
        "{}",
        result.text
    );
    assert!(
        !result.text.contains("at once"),
        "a rejected lesson never shows"
    );
    assert!(
        result
            .explain
            .iter()
            .any(|e| matches!(e.decision, Decision::Kept { .. }))
    );
    assert!(ApproxTokenizer.count(&result.text) <= 500);
}

#[test]
fn a_skill_outside_the_scope_is_forbidden() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir, &[]).scoped(Scope::domains(["ops"]));
    let err = engine
        .recall(&RecallQuery {
            skill: Some(SkillPath::parse("hr/screen").unwrap()),
            ..query("anything", 100)
        })
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn recall_never_returns_an_ineligible_or_out_of_scope_lesson(
        specs in prop::collection::vec((0usize..3, 0usize..10, 0usize..4), 1..14),
        budget in 0usize..400,
        on_error in any::<bool>(),
    ) {
        let words = ["deploy", "rollback", "checkout", "invoice"];
        let lessons: Vec<Lesson> = specs
            .iter()
            .enumerate()
            .map(|(n, (skill, status, word))| {
                let rule = format!("Always {} carefully, rule {n}.", words[*word]);
                lesson(n, SKILLS[*skill], LessonStatus::ALL[*status], &rule)
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(&dir, &lessons).scoped(Scope::domains(["ops"]));
        let mut q = query("deploy rollback checkout invoice carefully", budget);
        if on_error {
            q.tags = vec!["t0".into()];
        }
        let result = engine.recall(&q).unwrap();
        prop_assert!(ApproxTokenizer.count(&result.text) <= budget);
        for placed in &result.lessons {
            let lesson = lessons.iter().find(|l| l.id == placed.id).unwrap();
            prop_assert_eq!(lesson.skill.domain(), "ops");
            prop_assert_eq!(lesson.status, LessonStatus::Approved);
        }
        for l in lessons.iter().filter(|l| l.skill.domain() != "ops" || l.status != LessonStatus::Approved) {
            prop_assert!(!result.text.contains(l.id.as_str()), "{} leaked", l.id);
        }
    }
}
