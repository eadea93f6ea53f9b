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

/// A rule a run's correction taught, in seed 000's walkthrough: the only lesson of its store.
fn walkthrough_lesson(p: &Project, skill: &str) -> lore_core::model::Lesson {
    let mut lesson = support::lesson(
        skill,
        "ALWAYS score system design separately from coding; without distributed systems \
         experience a senior backend candidate scores below 60.",
        LessonStatus::Approved,
        p.clock_now(),
    );
    lesson.applies_when = "Screening senior backend candidates.".into();
    p.engine
        .import_records(&[Record::Lesson(lesson.clone())])
        .unwrap();
    lesson
}

#[test]
fn a_lesson_alone_in_its_store_is_relevant_to_the_next_run_of_its_situation() {
    let p = project(LayerBudgets::default());
    let skill = "hr/resume-screen";
    p.skill_folder(skill);
    let lesson = walkthrough_lesson(&p, skill);
    let skill = SkillPath::parse(skill).unwrap();
    // The input of the run the lesson was learned from, in the words recall gets for a run.
    let input = "Jane Smith\nSenior Backend Engineer\n5 years Python";
    for task in [input.to_owned(), format!("hr resume screen\n{input}")] {
        let recalled = p
            .engine
            .recall(&lore_engine::RecallQuery {
                text: task.clone(),
                skill: Some(skill.clone()),
                explain: true,
                ..Default::default()
            })
            .unwrap();
        let why = recalled
            .explain
            .iter()
            .flatten()
            .find(|e| e.id == lesson.id.as_str())
            .map(|e| e.decision.clone());
        assert!(
            !matches!(
                why,
                Some(lore_recall::Decision::Dropped {
                    why: lore_recall::DropReason::NotRelevant { .. }
                        | lore_recall::DropReason::ConditionNotMet { .. }
                }) | None
            ),
            "{task:?}: {why:?}"
        );
    }
    // A task about something else still gets nothing.
    let other = p
        .engine
        .prompt_for(&skill, Some("Book a meeting room for Friday's team lunch"))
        .unwrap();
    assert!(other.lessons.is_empty(), "{:?}", other.layers);
    // The run's prompt carries it unless recall held it out to measure it (a share of runs).
    let carried = (0..8).any(|_| {
        let prompt = p.engine.prompt_for(&skill, Some(input)).unwrap();
        assert_eq!(
            prompt.text.contains(&lesson.rule),
            prompt.lessons.contains(&lesson.id)
        );
        prompt.lessons.contains(&lesson.id)
    });
    assert!(carried, "the next runs' prompts never carried the lesson");
}

#[test]
fn a_memory_layer_the_total_empties_is_listed_with_what_it_lost() {
    let skill = SkillPath::parse(SKILL).unwrap();
    let instructions = "Summarize the ticket in two sentences and set its priority.\n";
    let fixed = ApproxTokenizer.count(instructions.trim()) + 2;
    // Room for the files and a few tokens of memory: not one whole lesson.
    let p = project(LayerBudgets {
        per_layer: 2_000,
        total: fixed + 12,
    });
    let skill_dir = p.dir.path().join("skills").join(SKILL);
    std::fs::write(skill_dir.join("SKILL.md"), instructions).unwrap();
    seed_rules(&p, 5);
    let task = "the ticket mentions outage 3, escalate to the on-call team";
    let prompt = p.engine.prompt_for(&skill, Some(task)).unwrap();
    let lessons = prompt
        .layers
        .iter()
        .find(|l| l.name == "lessons")
        .unwrap_or_else(|| panic!("{:?}", prompt.layers));
    assert!(lessons.offered.is_some_and(|n| n > 0), "{lessons:?}");
    assert_eq!(lessons.packed, Some(0), "{lessons:?}");
    assert_eq!(lessons.items.as_deref(), Some(&[][..]), "{lessons:?}");
    assert!(lessons.truncated && lessons.tokens == 0, "{lessons:?}");
    assert!(prompt.lessons.is_empty());
    assert!(!prompt.text.contains("outage"), "{}", prompt.text);

    // With room, the same task's layer holds what it packed, and says so.
    let roomy = project(LayerBudgets::default());
    seed_rules(&roomy, 5);
    let prompt = roomy.engine.prompt_for(&skill, Some(task)).unwrap();
    let lessons = prompt.layers.iter().find(|l| l.name == "lessons").unwrap();
    let items = lessons.items.clone().unwrap();
    assert_eq!(Some(items.len()), lessons.packed, "{lessons:?}");
    assert_eq!(lessons.offered, lessons.packed, "{lessons:?}");
    assert!(!lessons.truncated, "{lessons:?}");
    let shown: Vec<String> = prompt.lessons.iter().map(|l| l.to_string()).collect();
    assert_eq!(items, shown);
}
