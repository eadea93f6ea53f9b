//! Seed 002's injection strategies in the assembled prompt: context injection carries the
//! learned rules; with tools, the prompt carries a brief note on the memory tools instead.

#[path = "curation/support.rs"]
mod support;

use lore_core::SkillPath;
use lore_core::model::LessonStatus;
use lore_engine::{EngineConfig, InjectionStrategy, MEMORY_TOOLS_HEADING};
use support::{Project, SKILL};

fn prompt_with(injection: InjectionStrategy) -> (lore_engine::prompt::AssembledPrompt, String) {
    let p = Project::with(EngineConfig {
        injection,
        ..EngineConfig::default()
    });
    let lesson = p.seed("Mark outages urgent.", LessonStatus::Approved);
    let prompt = p.engine.prompt(&SkillPath::parse(SKILL).unwrap()).unwrap();
    (prompt, lesson.id.to_string())
}

#[test]
fn tool_based_injection_tells_the_agent_about_its_memory_tools_in_the_prompt() {
    let (prompt, lesson) = prompt_with(InjectionStrategy::ToolBased);
    let names: Vec<&str> = prompt.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["memory_tools", "skill"]);
    assert!(
        prompt.text.starts_with(MEMORY_TOOLS_HEADING),
        "{}",
        prompt.text
    );
    for tool in ["`recall_memory`", "`search_memory`"] {
        assert!(prompt.text.contains(tool), "{tool}: {}", prompt.text);
    }
    // The skill's own instructions still come last, and the rules are left to the tools.
    assert!(
        prompt.text.trim_end().ends_with("# Summarize a ticket"),
        "{}",
        prompt.text
    );
    assert!(prompt.lessons.is_empty() && !prompt.text.contains(&lesson));
    assert!(prompt.layers[0].tokens > 0 && prompt.layers[0].source == "engine");
}

#[test]
fn self_editing_names_its_six_tools_and_context_injection_has_no_note() {
    let (prompt, _) = prompt_with(InjectionStrategy::SelfEditing);
    assert_eq!(prompt.layers[0].name, "memory_tools");
    for tool in [
        "core_memory_write",
        "archival_memory_search",
        "conversation_log_read",
    ] {
        assert!(prompt.text.contains(tool), "{tool}: {}", prompt.text);
    }
    let (prompt, lesson) = prompt_with(InjectionStrategy::Context);
    assert!(
        !prompt.text.contains(MEMORY_TOOLS_HEADING),
        "{}",
        prompt.text
    );
    assert!(prompt.layers.iter().all(|l| l.name != "memory_tools"));
    assert_eq!(prompt.lessons.len(), 1);
    assert!(prompt.text.contains(&lesson));
}
