//! The layered prompt (seed 004) through the Engine: each layer within its budget, the learned
//! rules cut whole and from the tail, the total enforced with SKILL.md cut last, and the
//! prompt's lesson list (its activations) matching what the text carries.

#[path = "curation/support.rs"]
mod support;

use lore_core::SkillPath;
use lore_core::model::LessonStatus;
use lore_core::ports::store::Record;
use lore_engine::CoreEdit;
use lore_engine::EngineConfig;
use lore_recall::{ApproxTokenizer, LayerBudgets, TRUNCATED, Tokenizer};
use support::{Project, SKILL};

fn project(budgets: LayerBudgets) -> Project {
    Project::with(EngineConfig {
        prompt_budgets: budgets,
        ..EngineConfig::default()
    })
}

/// Imports `n` approved lessons whose confidence falls with their number.
fn seed_rules(p: &Project, n: usize) -> Vec<lore_core::id::LessonId> {
    let mut ids = Vec::new();
    for i in 0..n {
        let mut lesson = support::lesson(
            SKILL,
            &format!(
                "Rule {i}: when the ticket mentions outage {i}, escalate to the on-call team."
            ),
            LessonStatus::Approved,
            p.clock_now(),
        );
        lesson.confidence = 0.99 - i as f64 * 0.01;
        ids.push(lesson.id.clone());
        p.engine.import_records(&[Record::Lesson(lesson)]).unwrap();
    }
    ids
}

#[test]
fn learned_rules_are_cut_whole_from_the_tail_and_only_shown_ones_are_activations() {
    let p = project(LayerBudgets {
        per_layer: 200,
        total: 10_000,
    });
    let ids = seed_rules(&p, 30);
    let prompt = p.engine.prompt(&SkillPath::parse(SKILL).unwrap()).unwrap();
    let rules = prompt
        .layers
        .iter()
        .find(|l| l.name == "learned_rules")
        .unwrap();
    assert!(rules.tokens <= 200, "{rules:?}");
    assert!(
        rules.truncated,
        "rules left out to fit are a cut: {rules:?}"
    );
    let shown = &prompt.lessons;
    assert!(
        !shown.is_empty() && shown.len() < 30,
        "{} shown",
        shown.len()
    );
    // The best-ranked rules, in order, and exactly the ones whose text is in the prompt.
    assert_eq!(shown[..], ids[..shown.len()]);
    for id in &ids {
        assert_eq!(
            prompt.text.contains(id.as_str()),
            shown.contains(id),
            "{id}"
        );
    }
}

#[test]
fn the_total_cuts_memory_before_the_skill_instructions() {
    let p = project(LayerBudgets {
        per_layer: 2_000,
        total: 300,
    });
    seed_rules(&p, 30);
    let skill_dir = p.dir.path().join("skills").join(SKILL);
    let instructions = "Summarize the ticket in two sentences and set its priority.\n".repeat(6);
    std::fs::write(skill_dir.join("SKILL.md"), &instructions).unwrap();
    p.engine
        .write_core_memory(
            &SkillPath::parse(SKILL).unwrap(),
            "user",
            "Ana leads the EU checkout team.",
            CoreEdit::Replace,
        )
        .unwrap();
    let prompt = p.engine.prompt(&SkillPath::parse(SKILL).unwrap()).unwrap();
    let total: usize = prompt.layers.iter().map(|l| l.tokens).sum();
    assert!(total <= 300, "{:?}", prompt.layers);
    let skill = prompt.layers.iter().find(|l| l.name == "skill").unwrap();
    assert!(
        !skill.truncated,
        "SKILL.md is cut last: {:?}",
        prompt.layers
    );
    assert!(prompt.text.contains(instructions.trim()));
    // Something gave way, and says so.
    assert!(
        prompt.layers.iter().any(|l| l.truncated),
        "{:?}",
        prompt.layers
    );
    assert!(
        ApproxTokenizer.count(&prompt.text) <= 300 + 20,
        "separators are small"
    );
    if prompt.text.contains(TRUNCATED) {
        assert!(prompt.layers.iter().any(|l| l.truncated));
    }
}

#[test]
fn a_prompt_within_budget_is_untouched() {
    let p = project(LayerBudgets::default());
    seed_rules(&p, 3);
    let prompt = p.engine.prompt(&SkillPath::parse(SKILL).unwrap()).unwrap();
    assert!(prompt.layers.iter().all(|l| !l.truncated));
    assert!(!prompt.text.contains(TRUNCATED));
    assert_eq!(prompt.lessons.len(), 3);
}
