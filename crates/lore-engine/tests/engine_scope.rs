//! The Engine's own scope checks, over the embedded store: a handle scoped to one domain can
//! neither read nor write another, whatever the store would return.

use std::sync::Arc;

use lore_core::model::{AuthorKind, Outcome};
use lore_core::{Error, Scope, SkillPath};
use lore_engine::{Engine, EngineConfig};
use lore_engine::{NewCorrection, NewExecution};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

fn engine(dir: &tempfile::TempDir) -> Engine {
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    Engine::new(Arc::new(store), EngineConfig::default())
}

fn run(skill: &str) -> NewExecution {
    NewExecution {
        skill: SkillPath::parse(skill).unwrap(),
        input: json!({"q": "quarterly close"}),
        output: json!({"a": "done"}),
        outcome: Outcome::Rejected,
        cost_usd: None,
        latency_ms: None,
        model: None,
        session: None,
        lessons_shown: Vec::new(),
    }
}

fn correction(skill: &str, execution: &lore_core::id::ExecutionId) -> NewCorrection {
    NewCorrection {
        skill: SkillPath::parse(skill).unwrap(),
        execution_id: execution.clone(),
        text: "Always reconcile the quarterly close against the ledger.".into(),
        author_kind: AuthorKind::Human,
        author: None,
    }
}

#[test]
fn a_domain_scoped_handle_cannot_touch_another_domain() {
    let dir = tempfile::tempdir().unwrap();
    let admin = engine(&dir);
    let finance_exec = admin.record_execution(run("finance/close")).unwrap();
    let finance_lesson = admin
        .correct(correction("finance/close", &finance_exec.id))
        .unwrap()
        .lesson
        .unwrap();

    let hr = admin.scoped(Scope::domains(["hr"]));
    assert!(matches!(
        hr.record_execution(run("finance/close")),
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        hr.correct(correction("finance/close", &finance_exec.id)),
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        hr.execution(&finance_exec.id),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        hr.lesson(&finance_lesson.id),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        hr.retire_lesson(&finance_lesson.id, None, "not mine"),
        Err(Error::NotFound { .. })
    ));
    assert!(hr.executions(None, None).unwrap().is_empty());
    assert!(hr.lessons(None, None).unwrap().is_empty());
    assert!(hr.search("quarterly ledger", None, 10).unwrap().is_empty());
    assert!(hr.export_records().unwrap().is_empty());
    assert_eq!(hr.status().unwrap().counts.lessons, 0);
    assert!(matches!(
        hr.prompt(&SkillPath::parse("finance/close").unwrap()),
        Err(Error::Forbidden(_))
    ));

    // The unrestricted handle still sees everything, unchanged.
    assert_eq!(admin.lesson(&finance_lesson.id).unwrap(), finance_lesson);
    assert_eq!(admin.search("quarterly ledger", None, 10).unwrap().len(), 2);
}

#[test]
fn a_scoped_handle_works_inside_its_domain() {
    let dir = tempfile::tempdir().unwrap();
    let hr = engine(&dir).scoped(Scope {
        agent: Some("screener-1".into()),
        ..Scope::domains(["hr"])
    });
    let exec = hr.record_execution(run("hr/screen")).unwrap();
    assert_eq!(exec.agent.as_deref(), Some("screener-1"));
    let outcome = hr.correct(correction("hr/screen", &exec.id)).unwrap();
    assert_eq!(outcome.correction.author.as_deref(), Some("screener-1"));
    assert_eq!(
        hr.lessons(None, None).unwrap(),
        vec![outcome.lesson.unwrap()]
    );
}

#[test]
fn an_import_with_one_record_outside_the_scope_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let admin = engine(&dir);
    let hr_exec = admin.record_execution(run("hr/screen")).unwrap();
    let fin_exec = admin.record_execution(run("finance/close")).unwrap();
    let records = admin.export_records().unwrap();

    let other = tempfile::tempdir().unwrap();
    let hr = engine(&other).scoped(Scope::domains(["hr"]));
    assert!(matches!(
        hr.import_records(&records),
        Err(Error::Forbidden(_))
    ));
    let fresh = engine(&other);
    assert!(fresh.executions(None, None).unwrap().is_empty());
    fresh.import_records(&records).unwrap();
    let ids: Vec<_> = fresh
        .executions(None, None)
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, vec![hr_exec.id, fin_exec.id]);
}
