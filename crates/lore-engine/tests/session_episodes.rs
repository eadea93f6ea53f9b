//! Seed 001's `Get-Episode -SessionId`: episodes read by the session they were recorded for.

#[path = "curation/support.rs"]
mod support;

use lore_core::model::{CurationMode, Episode};
use lore_core::{Error, Scope};
use serde_json::json;
use support::{Project, SKILL};

fn episode(id: &str, session: &str, skill: &str, task: &str) -> Episode {
    Episode::from_json(
        json!({
            "id": id, "session": session, "skill": skill, "timestamp": "2026-01-01T17:00:00Z",
            "outcome": "success", "task": task, "decisions": [], "events": [], "lessons": []
        }),
        None,
    )
    .unwrap()
}

#[test]
fn a_session_s_episodes_are_read_by_its_name_inside_the_scope() {
    let p = Project::new(CurationMode::Auto);
    let add = |e: Episode| p.engine.add_episode(e, false).unwrap();
    add(episode(
        "EPI-1",
        "2026-01-01-session-126",
        SKILL,
        "Route the memory",
    ));
    add(episode(
        "EPI-2",
        "2026-01-02-session-127",
        SKILL,
        "Something else",
    ));
    add(episode(
        "EPI-3",
        "2026-01-01-session-126",
        SKILL,
        "Route it again",
    ));
    add(episode("EPI-4", "shared", "finance/invoice", "An invoice"));

    let views = p
        .engine
        .session_episodes(" 2026-01-01-session-126 ", Some(200))
        .unwrap();
    let ids: Vec<&str> = views.iter().map(|v| v.episode.id.as_str()).collect();
    assert_eq!(ids, ["EPI-1", "EPI-3"]);
    assert!(views[0].rendered.text.contains("Route the memory"));
    assert!(views.iter().all(|v| v.rendered.tokens <= 200));

    let err = p
        .engine
        .session_episodes("no-such-session", None)
        .unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }) && err.to_string().contains("no-such-session"),
        "{err}"
    );
    let err = p.engine.session_episodes("  ", None).unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
    // Another domain's episode is not found through a support-only handle.
    let support = p.engine.scoped(Scope::domains(["support"]));
    assert!(matches!(
        support.session_episodes("shared", None).unwrap_err(),
        Error::NotFound { .. }
    ));
    assert_eq!(p.engine.session_episodes("shared", None).unwrap().len(), 1);
}
