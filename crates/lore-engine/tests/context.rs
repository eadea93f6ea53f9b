//! The one layered context (seed 004) through the Engine on a real SQLite file: lessons and
//! knowledge stacked in order, every layer within its budget and the whole within the total to
//! the token (property-tested), the reported items exactly those the text holds, and a layer
//! whose read fails left empty with a warning while the others still answer.

#[path = "curation/support.rs"]
mod support;

use std::sync::OnceLock;

use lore_core::SkillPath;
use lore_core::model::{CurationMode, LessonStatus};
use lore_engine::knowledge::{Chunking, IngestDocument, IngestRequest};
use lore_engine::{ContextLayer, ContextQuery, LayerStatus, NewDecision};
use lore_recall::{ApproxTokenizer, Tokenizer};
use proptest::prelude::*;
use support::{Project, SKILL};

/// A project with 40 approved lessons and a runbook of 30 sections about checkout incidents.
fn seeded() -> Project {
    let p = Project::new(CurationMode::Review);
    for i in 0..40 {
        p.seed(
            &format!(
                "Rule {i}: when checkout incident {i} reports errors after a deploy, roll back \
                 the release and page the on-call engineer before investigating further."
            ),
            LessonStatus::Approved,
        );
    }
    let mut runbook = String::from("# Checkout incidents\n\n");
    for i in 0..30 {
        runbook.push_str(&format!(
            "## Incident {i}\n\nWhen checkout errors climb after deploy {i}, roll back the \
             release with the pipeline, confirm the error rate falls, and write the incident \
             note with the deploy's commit and the time of the rollback.\n\n"
        ));
    }
    let request = IngestRequest {
        skill: SkillPath::parse(SKILL).unwrap(),
        roots: Vec::new(),
        documents: vec![IngestDocument {
            source: "docs/incidents.md".to_owned(),
            text: runbook,
        }],
        chunking: Chunking::default(),
    };
    p.engine.ingest(&request, &mut |_, _| {}).unwrap();
    let mut approve = Vec::new();
    for (situation, action, keep) in [
        (
            "Checkout errors after a deploy during the sale",
            "Roll back the release at once",
            true,
        ),
        (
            "Checkout errors after a config change",
            "Revert the config, keep the release",
            true,
        ),
        (
            "Checkout errors after a deploy at night",
            "Wait and page nobody",
            false,
        ),
    ] {
        let d = p
            .engine
            .record_decision(NewDecision {
                skill: Some(SkillPath::parse(SKILL).unwrap()),
                situation: situation.into(),
                action: action.into(),
                rationale: "Customers were affected.".into(),
                ..NewDecision::default()
            })
            .unwrap();
        if keep {
            approve.push(d.id);
        }
    }
    p.engine
        .review_decisions(&approve, LessonStatus::Approved, "sound calls")
        .unwrap();
    p.engine.build_digests(None, false).unwrap();
    p
}

fn query(layer: usize, total: usize) -> ContextQuery {
    ContextQuery {
        text: "checkout errors after a deploy: roll back the release".to_owned(),
        skill: None,
        layer_budget: Some(layer),
        total_budget: Some(total),
        explain: false,
    }
}

#[test]
fn both_layers_stack_in_order_with_their_figures() {
    let p = seeded();
    let result = p.engine.context(&query(2_000, 12_000)).unwrap();
    let names: Vec<ContextLayer> = result.layers.iter().map(|l| l.layer).collect();
    assert_eq!(
        names,
        [
            ContextLayer::Lessons,
            ContextLayer::Decisions,
            ContextLayer::Digest,
            ContextLayer::Knowledge
        ]
    );
    let lessons = &result.layers[0];
    let decisions = &result.layers[1];
    let digest = &result.layers[2];
    let knowledge = &result.layers[3];
    assert_eq!(digest.status, LayerStatus::Filled, "{digest:?}");
    assert_eq!(digest.items.len(), 1);
    assert!(digest.items[0].starts_with("DIG-"));
    assert_eq!(decisions.status, LayerStatus::Filled);
    assert_eq!(
        decisions.items.len(),
        2,
        "approved ones only: {decisions:?}"
    );
    assert_eq!(lessons.status, LayerStatus::Filled);
    assert_eq!(knowledge.status, LayerStatus::Filled);
    assert_eq!(knowledge.items.len(), 8, "seed 004's top 8");
    assert_eq!(lessons.items.len(), 10, "recall's limit");
    let at_lessons = result.text.find("## Lessons learned").unwrap();
    let at_decisions = result.text.find("## Decisions people made").unwrap();
    let at_digest = result.text.find("## Digest of approved memory").unwrap();
    let at_knowledge = result.text.find("## Team knowledge").unwrap();
    assert!(at_lessons < at_decisions && at_decisions < at_digest && at_digest < at_knowledge);
    assert!(
        !result.text.contains("page nobody"),
        "a decision waiting for review is not shown"
    );
    assert!(result.text.contains("> § Checkout incidents › Incident"));
    for layer in &result.layers {
        assert!(layer.tokens <= 2_000, "{layer:?}");
    }
    assert!(result.warnings.is_empty());
    assert_eq!(result.tokens, ApproxTokenizer.count(&result.text));

    let tight = p.engine.context(&query(2_000, 1_500)).unwrap();
    assert!(tight.tokens <= 1_500);
    // The total cuts the last layer first: lessons keep their whole budget's worth.
    assert!(
        !tight.layers[0].truncated && !tight.layers[1].truncated && tight.layers[3].truncated,
        "{:?}",
        tight.layers
    );
    assert!(tight.layers[3].items.len() < tight.layers[3].offered);
    for layer in &tight.layers {
        assert_eq!(layer.packed, layer.items.len(), "{layer:?}");
    }
}

#[test]
fn a_failing_layer_is_empty_with_a_warning_and_the_others_answer() {
    let p = seeded();
    // Damage every stored chunk vector, as a torn write or a bad disk would.
    let conn = rusqlite::Connection::open(p.dir.path().join("lore.db")).unwrap();
    conn.execute("UPDATE knowledge_chunks SET vector = x'00'", [])
        .unwrap();
    conn.execute("UPDATE knowledge_revision SET revision = revision + 1", [])
        .unwrap();
    drop(conn);
    let result = p.engine.context(&query(2_000, 12_000)).unwrap();
    assert_eq!(result.layers[0].status, LayerStatus::Filled);
    assert_eq!(result.layers[1].status, LayerStatus::Filled);
    assert_eq!(result.layers[2].status, LayerStatus::Filled);
    assert_eq!(result.layers[3].status, LayerStatus::Failed);
    assert_eq!(result.warnings.len(), 1);
    assert!(
        result.warnings[0].contains("knowledge layer is empty"),
        "{:?}",
        result.warnings
    );
    assert!(
        !result.warnings[0].contains("damaged"),
        "store details stay in the log"
    );
    assert!(!result.text.contains("## Team knowledge"));
}

#[test]
fn bad_queries_are_refused() {
    let p = seeded();
    for (q, what) in [
        (
            ContextQuery {
                text: " ".into(),
                ..ContextQuery::default()
            },
            "query",
        ),
        (
            ContextQuery {
                layer_budget: Some(0),
                ..query(1, 1)
            },
            "layer_budget",
        ),
        (
            ContextQuery {
                total_budget: Some(2_000_000),
                ..query(1, 1)
            },
            "total_budget",
        ),
    ] {
        let err = p.engine.context(&q).unwrap_err();
        assert!(err.to_string().contains(what), "{err}");
    }
    let outside = p.engine.scoped(lore_core::Scope::domains(["finance"]));
    let err = outside
        .context(&ContextQuery {
            skill: Some(SkillPath::parse(SKILL).unwrap()),
            ..query(100, 100)
        })
        .unwrap_err();
    assert!(matches!(err, lore_core::Error::Forbidden(_)), "{err}");
    let empty = outside.context(&query(2_000, 12_000)).unwrap();
    assert!(
        empty.text.is_empty(),
        "another domain's handle sees nothing: {}",
        empty.text
    );
}

fn shared() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(seeded)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_budget_holds_to_the_token(layer in 1usize..1_500, total in 1usize..3_000) {
        let p = shared();
        let result = p.engine.context(&query(layer, total)).unwrap();
        let tok = ApproxTokenizer;
        prop_assert!(tok.count(&result.text) <= total, "{} > {total}", tok.count(&result.text));
        prop_assert_eq!(result.tokens, tok.count(&result.text));
        let mut rebuilt = Vec::new();
        for report in &result.layers {
            prop_assert!(report.tokens <= layer, "{report:?} over {layer}");
            prop_assert_eq!(report.packed, report.items.len(), "{:?}", report);
            if report.items.len() < report.offered {
                prop_assert!(report.truncated, "{:?}", report);
            }
            for id in &report.items {
                prop_assert!(result.text.contains(&format!("**{id}**")), "{id} listed, not shown");
            }
            if report.tokens > 0 {
                let start = result.text.find(match report.layer {
                    ContextLayer::Lessons => "## Lessons learned",
                    ContextLayer::Decisions => "## Decisions people made",
                    ContextLayer::Digest => "## Digest of approved memory",
                    ContextLayer::Knowledge => "## Team knowledge",
                });
                prop_assert!(start.is_some());
                rebuilt.push(report.layer);
            }
        }
        // Layers keep their order, and nothing in the text is claimed by no layer.
        let mut sorted = rebuilt.clone();
        sorted.sort_by_key(|l| ContextLayer::ORDER.iter().position(|o| o == l));
        prop_assert_eq!(rebuilt, sorted);
        let shown = result.text.matches("- **").count();
        let listed: usize = result.layers.iter().map(|l| l.items.len()).sum();
        prop_assert_eq!(shown, listed, "{}", result.text);
    }
}

#[test]
fn the_digest_does_not_repeat_the_lessons_shown_above_it() {
    let p = seeded();
    let result = p.engine.context(&query(2_000, 12_000)).unwrap();
    let shown = &result.layers[0].items;
    assert!(!shown.is_empty());
    let start = result.text.find("## Digest of approved memory").unwrap();
    let end = result.text.find("## Team knowledge").unwrap();
    let digest = &result.text[start..end];
    for id in shown {
        assert!(
            !digest.contains(&format!("[{id}]")),
            "{id} twice:\n{digest}"
        );
        assert!(result.text.contains(&format!("**{id}**")));
    }
    // The digest's other rules are still there.
    let cited = digest.matches("[REFL-").count();
    assert!(cited > 0, "{digest}");
}

#[test]
fn a_layer_that_left_items_out_for_its_budget_says_so() {
    let p = seeded();
    // Room for two or three of the ten lessons recall ranks for the query, not all of them.
    let tight = p.engine.context(&query(150, 12_000)).unwrap();
    let lessons = &tight.layers[0];
    assert!(!lessons.items.is_empty(), "{lessons:?}");
    assert!(lessons.items.len() < 10, "{lessons:?}");
    assert!(
        lessons.truncated,
        "lessons dropped for the budget: {lessons:?}"
    );
    assert_eq!(lessons.packed, lessons.items.len(), "{lessons:?}");
    assert_eq!(lessons.offered, lessons.items.len(), "{lessons:?}");
    // With room for all, nothing is left out and none says it was.
    let roomy = p.engine.context(&query(2_000, 12_000)).unwrap();
    assert!(!roomy.layers[0].truncated, "{:?}", roomy.layers[0]);
}

#[test]
fn a_layer_the_total_empties_holds_and_reports_nothing() {
    let p = seeded();
    let full = p.engine.context(&query(400, 12_000)).unwrap();
    let first = full.layers[0].tokens;
    // The total leaves the lessons layer alone: every later layer is emptied.
    let result = p.engine.context(&query(400, first)).unwrap();
    for layer in &result.layers[1..] {
        assert!(layer.items.is_empty(), "{layer:?}");
        assert_eq!(layer.packed, 0, "an emptied layer holds nothing: {layer:?}");
        assert!(layer.offered > 0, "{layer:?}");
        assert!(layer.truncated, "{layer:?}");
        assert_eq!(layer.status, LayerStatus::Empty, "{layer:?}");
        assert_eq!(layer.tokens, 0, "{layer:?}");
    }
}

#[test]
fn a_prompt_for_a_task_holds_the_contexts_layers_and_its_warnings() {
    let p = seeded();
    p.skill_folder(SKILL);
    let skill = SkillPath::parse(SKILL).unwrap();
    let task = "checkout errors after a deploy: roll back the release";
    let prompt = p.engine.prompt_for(&skill, Some(task)).unwrap();
    let context = p
        .engine
        .context(&ContextQuery {
            skill: Some(skill.clone()),
            ..query(2_000, 12_000)
        })
        .unwrap();
    let memory: Vec<&str> = prompt
        .layers
        .iter()
        .map(|l| l.name)
        .filter(|n| *n != "skill")
        .collect();
    assert_eq!(memory, ["lessons", "decisions", "digest", "knowledge"]);
    for report in &context.layers {
        let layer = prompt
            .layers
            .iter()
            .find(|l| l.name == report.layer.name())
            .unwrap();
        assert_eq!(layer.items.as_ref(), Some(&report.items), "{layer:?}");
    }
    assert!(prompt.warnings.is_empty());

    let conn = rusqlite::Connection::open(p.dir.path().join("lore.db")).unwrap();
    conn.execute("DROP TABLE knowledge_revision", []).unwrap();
    drop(conn);
    let degraded = p.engine.prompt_for(&skill, Some(task)).unwrap();
    assert_eq!(degraded.warnings.len(), 1, "{:?}", degraded.warnings);
    assert!(degraded.warnings[0].contains("knowledge layer is empty"));
    assert!(!degraded.text.contains("## Team knowledge"));
    assert!(degraded.text.contains("## Decisions people made"));
    assert!(degraded.layers.iter().all(|l| l.name != "knowledge"));
}

#[test]
fn a_prompt_without_a_task_stacks_every_layer_for_the_skills_own_words() {
    let p = seeded();
    p.skill_folder(SKILL);
    std::fs::write(
        p.dir.path().join("skills").join(SKILL).join("SKILL.md"),
        "---\ndescription: Handle checkout errors after a deploy and roll back the release\n\
         ---\n# Checkout incidents\n",
    )
    .unwrap();
    let prompt = p.engine.prompt(&SkillPath::parse(SKILL).unwrap()).unwrap();
    let names: Vec<&str> = prompt.layers.iter().map(|l| l.name).collect();
    assert_eq!(
        names,
        ["learned_rules", "decisions", "digest", "knowledge", "skill"],
        "{:?}",
        prompt.layers
    );
    let rules = &prompt.layers[0];
    assert!(
        rules.truncated,
        "40 rules do not fit 2,000 tokens: {rules:?}"
    );
    let shown = rules.items.clone().unwrap();
    assert_eq!(rules.packed, Some(shown.len()));
    let start = prompt.text.find("## Digest of approved memory").unwrap();
    let end = prompt.text.find("## Team knowledge").unwrap();
    let digest = &prompt.text[start..end];
    for id in &shown {
        assert!(
            !digest.contains(&format!("[{id}]")),
            "{id} twice:\n{digest}"
        );
    }
    assert!(
        digest.contains("[REFL-"),
        "rules not shown above stay: {digest}"
    );
    assert!(ApproxTokenizer.count(&prompt.text) <= 12_000 + 20);
    assert!(prompt.warnings.is_empty());
}
