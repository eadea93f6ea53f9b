//! `lore episode show --session`: an episode read by the session it was recorded for.

use crate::common::Project;
use serde_json::json;

const SKILL: &str = "dev/router";

#[test]
fn an_episode_is_shown_by_its_session_as_by_its_id() {
    let p = Project::new().initialized();
    for (id, session, task) in [
        (
            "ep-a",
            "2026-01-01-session-126",
            "Implement the MemoryRouter module",
        ),
        ("ep-b", "2026-01-02-session-127", "Fix the pre-commit hook"),
    ] {
        let episode = json!({
            "id": id, "session": session, "timestamp": "2026-01-01T17:00:00Z",
            "outcome": "success", "task": task, "decisions": [], "events": [], "lessons": []
        });
        let file = format!("{id}.json");
        std::fs::write(p.path().join(&file), episode.to_string()).unwrap();
        p.ok(&["episode", "add", &file, "--skill", SKILL]);
    }
    let shown = p.json(&["episode", "show", "--session", "2026-01-01-session-126"]);
    assert_eq!(shown["session"], "2026-01-01-session-126");
    let episodes = shown["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 1, "{shown}");
    assert_eq!(episodes[0]["episode"]["id"], "ep-a");
    let by_id = p.json(&["episode", "show", "ep-a"]);
    assert_eq!(episodes[0]["text"], by_id["text"]);
    let text = p.ok(&["episode", "show", "--session", "2026-01-01-session-126"]);
    assert!(text.contains("Implement the MemoryRouter module"), "{text}");

    let err = p.fails(&["episode", "show", "--session", "2026-03-03-nothing"]);
    assert!(err.contains("2026-03-03-nothing"), "{err}");
    let err = p.fails(&["episode", "show"]);
    assert!(err.contains("--session") || err.contains("<ID>"), "{err}");
    let err = p.fails(&["episode", "show", "ep-a", "--session", "x"]);
    assert!(err.contains("cannot be used with"), "{err}");
}
