//! Corrections racing on one store: a correction is either stored and
//! acknowledged, or refused and not stored — never refused after it was stored.
//!
//! Each thread opens its own connection to one SQLite file, as separate server processes do,
//! and corrects executions with near-duplicate texts, so that every new lesson links older
//! lessons and the writers contend for the same rows.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use lore_core::id::ExecutionId;
use lore_core::model::{AuthorKind, CurationMode, LinkKind, Outcome};
use lore_core::ports::store::ListFilter;
use lore_core::{Error, SkillPath, Store};
use lore_engine::{Engine, EngineConfig};
use lore_engine::{NewCorrection, NewExecution};
use lore_sqlite::{OpenMode, SqliteStore};
use lore_workspace::skills::SkillLibrary;
use serde_json::json;

const SKILL: &str = "support/summarize-ticket";
const THREADS: usize = 6;
const PER_THREAD: usize = 12;

fn engine(dir: &std::path::Path) -> (Engine, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::open(dir.join("lore.db"), OpenMode::Create).unwrap());
    let config = EngineConfig {
        curation: CurationMode::Auto,
        ..EngineConfig::default()
    };
    let engine =
        Engine::new(store.clone(), config).with_skills(SkillLibrary::new(dir.join("skills"), dir));
    (engine, store)
}

fn execution(engine: &Engine) -> ExecutionId {
    engine
        .record_execution(NewExecution {
            skill: SkillPath::parse(SKILL).unwrap(),
            input: json!({"ticket": "Checkout fails"}),
            output: json!({"summary": "A problem.", "priority": "normal"}),
            outcome: Outcome::Rejected,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })
        .unwrap()
        .id
}

/// What one attempt answered: `Ok` with the stored correction's ID, or the refusal.
type Answer = Result<String, String>;

#[test]
fn a_refused_correction_is_not_stored_and_an_accepted_one_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let skill_dir = dir.path().join("skills").join(SKILL);
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(skill_dir.join("SKILL.md"), "# Summarize a ticket\n").unwrap();
    let (setup, store) = engine(dir.path());
    let executions: Vec<Vec<ExecutionId>> = (0..THREADS)
        .map(|_| (0..PER_THREAD).map(|_| execution(&setup)).collect())
        .collect();

    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = executions
        .into_iter()
        .enumerate()
        .map(|(t, ids)| {
            let root = dir.path().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let (engine, _store) = engine(&root);
                barrier.wait();
                ids.into_iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let text = format!(
                            "Always name the failing page and the error code in the summary of \
                             ticket kind {t}-{i}."
                        );
                        let answer: Answer = engine
                            .correct(NewCorrection {
                                skill: SkillPath::parse(SKILL).unwrap(),
                                execution_id: id.clone(),
                                text,
                                author_kind: AuthorKind::Human,
                                author: Some(format!("writer-{t}")),
                            })
                            .map(|o| o.correction.id.to_string())
                            .map_err(|e| {
                                assert!(matches!(e, Error::Conflict(_)), "unexpected error: {e}");
                                e.to_string()
                            });
                        (id, answer)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: BTreeMap<ExecutionId, Answer> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();

    let corrections = store.corrections(&ListFilter::default()).unwrap();
    let lessons = store.lessons(&ListFilter::default()).unwrap();
    let mut refused = 0;
    for (execution, answer) in &answers {
        let stored: Vec<_> = corrections
            .iter()
            .filter(|c| &c.execution_id == execution)
            .collect();
        let from_it = lessons
            .iter()
            .filter(|l| l.execution_id.as_ref() == Some(execution))
            .count();
        match answer {
            Ok(id) => {
                assert_eq!(
                    stored.len(),
                    1,
                    "{execution}: acknowledged, stored {stored:?}"
                );
                assert_eq!(stored[0].id.as_str(), id);
                let merged = lessons
                    .iter()
                    .filter(|l| l.merged_from.iter().any(|c| c.as_str() == id))
                    .count();
                assert_eq!(from_it + merged, 1, "{execution}: one lesson holds it");
            }
            Err(why) => {
                refused += 1;
                assert!(
                    stored.is_empty() && from_it == 0,
                    "{execution} was refused ({why}) yet stored {} correction(s) and {from_it} \
                     lesson(s)",
                    stored.len()
                );
            }
        }
    }
    // The writers did contend: corrections landed on lessons others wrote (merged into them as
    // near-duplicates, or linked to them), which is where a stale read is refused.
    let merged: usize = lessons.iter().map(|l| l.merged_from.len()).sum();
    let linked = lessons
        .iter()
        .filter(|l| l.links.iter().any(|k| k.kind == LinkKind::NearDuplicate))
        .count();
    assert!(
        merged + linked > THREADS,
        "only {merged} merges and {linked} links: the writers did not contend"
    );
    // Every accepted correction's links reached the older lessons too: links go both ways.
    for lesson in &lessons {
        for link in lesson
            .links
            .iter()
            .filter(|k| k.kind == LinkKind::NearDuplicate)
        {
            let other = lessons.iter().find(|l| l.id == link.target).unwrap();
            assert!(
                other
                    .links
                    .iter()
                    .any(|k| k.kind == LinkKind::NearDuplicate && k.target == lesson.id),
                "{} links {} one way only",
                lesson.id,
                other.id
            );
        }
    }
    eprintln!("{} corrections, {refused} refused", THREADS * PER_THREAD);
}
