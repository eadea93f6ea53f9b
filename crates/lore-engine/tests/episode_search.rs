//! Episodes in full-text search (seed 001) over a real SQLite file: an episode is found by the
//! words of its decisions, events and lessons beside lessons and executions, only inside the
//! handle's scope and the asked skill, and never again once purged.

use std::sync::Arc;

use lore_core::model::{Episode, RecordKind};
use lore_core::{Scope, SkillPath};
use lore_engine::{Attribution, Engine, EngineConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

fn episode(id: &str, skill: &str, context: &str, event: &str) -> Episode {
    Episode::from_json(
        json!({
            "id": id, "skill": skill, "timestamp": "2026-01-01T09:00:00Z",
            "outcome": "failure", "task": "Ship the release",
            "decisions": [{"id": "d1", "type": "design", "context": context,
                           "options": ["A", "B"], "chosen": "A", "rationale": "quicker"}],
            "events": [{"id": "e1", "type": "error", "content": event}],
            "lessons": ["Pre-commit hooks check every markdown file, not just staged ones"],
        }),
        None,
    )
    .unwrap()
}

#[test]
fn search_finds_episodes_in_scope_and_forgets_purged_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    let engine = Engine::new(Arc::new(store), EngineConfig::default());
    let dev = episode(
        "dev-1",
        "dev/router",
        "Choosing the routing strategy",
        "Pre-commit failed on unrelated markdown",
    );
    let ops = episode(
        "ops-1",
        "ops/deploy",
        "Choosing the rollout window",
        "Canary latency doubled",
    );
    engine.add_episode(dev, false).unwrap();
    engine.add_episode(ops, false).unwrap();

    let hits = engine.search("pre-commit markdown", None, 10).unwrap();
    let episodes: Vec<_> = hits
        .iter()
        .filter(|h| h.kind == RecordKind::Episode)
        .collect();
    assert_eq!(episodes.len(), 2, "both carry the lesson: {hits:?}");
    assert_eq!(
        episodes[0].id, "dev-1",
        "the event makes dev-1 the better match: {hits:?}"
    );
    assert!(
        episodes[0].snippet.contains("markdown"),
        "{:?}",
        episodes[0]
    );

    let hits = engine.search("canary latency", None, 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (hits[0].id.as_str(), hits[0].skill.as_str()),
        ("ops-1", "ops/deploy")
    );
    let dev_skill = SkillPath::parse("dev/router").unwrap();
    assert!(
        engine
            .search("canary latency", Some(&dev_skill), 10)
            .unwrap()
            .is_empty()
    );
    let dev_only = engine.scoped(Scope::domains(["dev"]));
    assert!(
        dev_only
            .search("canary latency", None, 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        dev_only.search("routing strategy", None, 10).unwrap().len(),
        1
    );

    let why = Attribution::new(Some("ana"), "holds a customer's name");
    let ops_id = "ops-1".parse().unwrap();
    engine.purge_episode(&ops_id, &why).unwrap();
    assert!(
        engine
            .search("canary latency", None, 10)
            .unwrap()
            .is_empty()
    );
}
