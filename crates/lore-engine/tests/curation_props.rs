//! Curation at scale and under arbitrary sequences of operations.
//!
//! - A property test drives the Engine with random corrections, review decisions, maintenance
//!   runs and purges, and checks after every step that nothing ineligible reaches a prompt or a
//!   search, that no two conflicting lessons share a prompt, and that the audit trail explains
//!   every lesson's status.
//! - A seeded store of 1,000 corrections with duplicates, conflicts and planted secrets shows
//!   duplicates merged, conflicts kept apart and no secret reachable by prompt or search.

#[path = "curation/support.rs"]
mod support;

use chrono::TimeDelta;
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, CurationMode, Lesson, LinkKind};
use lore_core::sensitive;
use lore_engine::EngineConfig;
use lore_engine::{Attribution, HumanCorrections, Pruning, Upkeep};
use proptest::prelude::*;
use support::{Project, SKILL};

const TEXTS: &[&str] = &[
    "Priority must be urgent.",
    "Priority must be normal.",
    "Always name the failing page in the summary.",
    "Never name the failing page in the summary.",
    "Use a formal tone with customers.",
    "priority must be URGENT",
    "Mail the customer at bob@example.com about the refund.",
    "Always include the order number and the refund amount in the summary.",
    "Always include the order number and the refund amount in every summary.",
    "Card 4111 1111 1111 1111 was charged twice; always check duplicates.",
];

#[derive(Clone, Debug)]
enum Op {
    Correct(usize, bool),
    Approve(usize),
    Reject(usize),
    Exception(usize),
    Sensitive(usize),
    Supersede(usize, usize),
    Retire(usize),
    Purge(usize),
    Maintain(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..TEXTS.len(), any::<bool>()).prop_map(|(t, h)| Op::Correct(t, h)),
        2 => any::<usize>().prop_map(Op::Approve),
        1 => any::<usize>().prop_map(Op::Reject),
        1 => any::<usize>().prop_map(Op::Exception),
        1 => any::<usize>().prop_map(Op::Sensitive),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Supersede(a, b)),
        1 => any::<usize>().prop_map(Op::Retire),
        1 => any::<usize>().prop_map(Op::Purge),
        1 => (0i64..60).prop_map(Op::Maintain),
    ]
}

fn pick(p: &Project, i: usize) -> Option<LessonId> {
    let all = p.engine.lessons(None, None).unwrap();
    (!all.is_empty()).then(|| all[i % all.len()].id.clone())
}

/// Applies `op`; refusals by the lifecycle table are expected and must change nothing, which
/// the audit check after each step confirms.
fn apply(p: &Project, op: &Op) {
    let why = Attribution::new(Some("prop"), "property test");
    let one = |i: usize| pick(p, i).map(|id| vec![id]);
    let _ = match op {
        Op::Correct(t, human) => {
            let author = if *human {
                AuthorKind::Human
            } else {
                AuthorKind::Agent
            };
            p.correct_as(SKILL, TEXTS[*t], author);
            Ok(Vec::new())
        }
        Op::Approve(i) => one(*i).map_or(Ok(Vec::new()), |ids| p.engine.approve(&ids, &why)),
        Op::Reject(i) => one(*i).map_or(Ok(Vec::new()), |ids| p.engine.reject(&ids, &why)),
        Op::Exception(i) => one(*i).map_or(Ok(Vec::new()), |ids| {
            p.engine.mark_one_time_exception(&ids, &why)
        }),
        Op::Sensitive(i) => {
            one(*i).map_or(Ok(Vec::new()), |ids| p.engine.mark_sensitive(&ids, &why))
        }
        Op::Supersede(a, b) => match (pick(p, *a), pick(p, *b)) {
            (Some(old), Some(new)) => p.engine.supersede(&[old], &new, &why),
            _ => Ok(Vec::new()),
        },
        Op::Retire(i) => one(*i).map_or(Ok(Vec::new()), |ids| {
            p.engine
                .retire_lesson(&ids[0], None, "prop")
                .map(|l| vec![l])
        }),
        Op::Purge(i) => one(*i).map_or(Ok(Vec::new()), |ids| {
            p.engine.purge_lesson(&ids[0], &why).map(|r| vec![r.lesson])
        }),
        Op::Maintain(days) => {
            p.clock.advance(TimeDelta::days(*days));
            p.engine.maintain().map(|_| Vec::new())
        }
    };
}

/// Nothing ineligible, sensitive or conflicting reaches a prompt or a search.
fn assert_read_paths_are_clean(p: &Project, mode: CurationMode) {
    let all: Vec<Lesson> = p.engine.lessons(None, None).unwrap();
    let by_id = |id: &LessonId| all.iter().find(|l| &l.id == id).unwrap();
    let shown = p.prompt_ids(SKILL);
    for id in &shown {
        let l = by_id(id);
        assert!(l.status.is_retrievable(mode), "{id} is {:?}", l.status);
        assert!(sensitive::scan_lesson(l).is_empty(), "{id} holds a secret");
    }
    for a in &shown {
        for b in &shown {
            let linked = by_id(a)
                .links
                .iter()
                .any(|l| l.kind == LinkKind::Conflicts && &l.target == b);
            assert!(!linked, "{a} and {b} conflict but share a prompt");
        }
    }
    let skill = SkillPath::parse(SKILL).unwrap();
    for query in [
        "priority urgent",
        "summary page",
        "customer refund bob",
        "card duplicates",
    ] {
        for hit in p.engine.search(query, Some(&skill), 50).unwrap() {
            if let Some(l) = all.iter().find(|l| l.id.as_str() == hit.id) {
                assert!(
                    l.status.is_retrievable(mode),
                    "search returned {:?}",
                    l.status
                );
            }
        }
    }
}

fn project(mode: CurationMode) -> Project {
    Project::with(EngineConfig {
        curation: mode,
        human_corrections: HumanCorrections::Approve,
        upkeep: Upkeep {
            review_expiry: TimeDelta::days(20),
            pruning: Pruning::Hybrid {
                max_age: TimeDelta::days(45),
                max_lessons: 4,
            },
        },
        ..EngineConfig::default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn no_sequence_of_operations_leaks_an_ineligible_lesson_or_skips_the_audit(
        review in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..25),
    ) {
        let mode = if review { CurationMode::Review } else { CurationMode::Auto };
        let p = project(mode);
        for op in &ops {
            apply(&p, op);
            assert_read_paths_are_clean(&p, mode);
            p.assert_audit_explains_every_status();
        }
    }
}

#[test]
fn a_thousand_corrections_with_duplicates_conflicts_and_secrets() {
    let p = Project::new(CurationMode::Auto);
    let skills: Vec<String> = (0..10).map(|i| format!("support/queue-{i}")).collect();
    skills.iter().for_each(|s| p.skill_folder(s));
    let secrets = [
        "jane{n}@example.com",
        "sk-live_{n}abcdefghijklmnopq",
        "4111 1111 1111 1111",
    ];
    let mut planted = Vec::new();
    let mut merged = 0;
    for n in 0..1000 {
        // The two priority rules of a topic land in one skill, where they contradict.
        let skill = &skills[if n % 10 == 4 { 3 } else { n % 10 }];
        let topic = n / 10 % 40;
        let text = match n % 10 {
            // Duplicates: the same rule about the topic, written again in other case and spacing.
            0 | 1 => format!("Always tag tickets about topic{topic} with label{topic}."),
            2 => format!("ALWAYS tag tickets about topic{topic}   with label{topic}"),
            // Conflicts on one subject.
            3 => format!("Priority for topic{topic} must be urgent."),
            4 => format!("Priority for topic{topic} must not be urgent."),
            // Planted secrets.
            5 => {
                let secret = secrets[topic % secrets.len()].replace("{n}", &n.to_string());
                planted.push(secret.clone());
                format!("Always forward topic{topic} tickets; the contact is {secret}.")
            }
            _ => format!("Always mention detail{n} when topic{topic} comes up."),
        };
        let out = p.correct_as(skill, &text, AuthorKind::Human);
        merged += usize::from(out.curation.merged_into.is_some());
    }
    assert!(merged >= 200, "only {merged} duplicates merged");
    let lessons = p.engine.lessons(None, None).unwrap();
    assert_eq!(lessons.len(), 1000 - merged);
    let evidence: usize = lessons.iter().map(|l| l.merged_from.len()).sum();
    assert_eq!(
        evidence, merged,
        "every merge grew the evidence of a lesson"
    );

    for skill in &skills {
        assert_read_paths_are_clean(&p, CurationMode::Auto);
        let prompt = p.engine.prompt(&SkillPath::parse(skill).unwrap()).unwrap();
        for secret in &planted {
            assert!(
                !prompt.text.contains(secret.as_str()),
                "{secret} reached a prompt"
            );
        }
        let shown: Vec<&Lesson> = lessons
            .iter()
            .filter(|l| prompt.lessons.contains(&l.id))
            .collect();
        for a in &shown {
            assert!(
                !a.links
                    .iter()
                    .any(|l| l.kind == LinkKind::Conflicts && prompt.lessons.contains(&l.target)),
                "{} shares a prompt with a lesson it conflicts with",
                a.id
            );
        }
    }
    for secret in &planted {
        let hits = p.engine.search(secret, None, 20).unwrap();
        for hit in hits {
            assert!(
                !hit.snippet.contains(secret.as_str()),
                "{secret} found by search: {hit:?}"
            );
        }
    }
    let conflicts = lessons
        .iter()
        .filter(|l| l.links.iter().any(|k| k.kind == LinkKind::Conflicts))
        .count();
    // Each of the 40 topics' two priority rules, and nothing else: rules about other topics
    // name another subject.
    assert_eq!(conflicts, 80, "lessons in conflict");
}
