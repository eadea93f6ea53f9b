//! Organization memory over a real SQLite file: members' own lessons, propagation with its cap
//! and never back to the source, the org pool whose proposals only a person approves, the
//! supersession of older org lessons, and `personal_boost`.

use std::sync::Arc;

use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, CurationMode, LessonStatus, Outcome};
use lore_core::org::{self, Propagation};
use lore_core::ports::store::Record;
use lore_core::{Error, Scope, SkillPath};
use lore_engine::{
    Attribution, Engine, EngineConfig, HumanCorrections, NewCorrection, NewExecution, OrgConfig,
    PoolOutcome, RecallQuery,
};
use lore_recall::RecallConfig;
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

const SKILL: &str = "hr/screen";

fn engine(dir: &tempfile::TempDir, config: EngineConfig) -> Engine {
    let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    Engine::new(Arc::new(store), config)
}

fn member(e: &Engine, agent: &str, role: &str, department: &str) -> Engine {
    e.scoped(Scope {
        agent: Some(agent.into()),
        role: Some(role.into()),
        department: Some(department.into()),
        ..Scope::default()
    })
}

/// `who` records a run and corrects it with `text`; the lesson it learned.
fn learn(who: &Engine, text: &str) -> lore_core::model::Lesson {
    let run = who
        .record_execution(NewExecution {
            skill: SkillPath::parse(SKILL).unwrap(),
            input: json!({"candidate": "A"}),
            output: json!({"score": 9}),
            outcome: Outcome::Rejected,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })
        .unwrap();
    who.correct(NewCorrection {
        skill: SkillPath::parse(SKILL).unwrap(),
        execution_id: run.id,
        text: text.into(),
        author_kind: AuthorKind::Agent,
        author: None,
    })
    .unwrap()
    .lesson
    .unwrap()
}

const RULE: &str =
    "Always weigh system design separately from coding when scoring senior candidates.";

#[test]
fn a_members_lesson_is_its_own_until_propagated_and_never_back_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        org: OrgConfig {
            max_targets: 2,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let admin = engine(&dir, config);
    let a = member(&admin, "a", "screener", "hr");
    let b = member(&admin, "b", "screener", "hr");
    let c = member(&admin, "c", "screener", "hr");
    let d = member(&admin, "d", "screener", "hr");
    let w = member(&admin, "w", "writer", "hr");
    for m in [&b, &c, &d, &w] {
        learn(m, "Never invent a candidate's employer.");
    }
    let before = admin.change_cursor().unwrap();
    let lesson = learn(&a, RULE);
    assert_eq!(org::owner(&lesson).as_deref(), Some("a"));
    let told = |e: &Engine| {
        let feed = e.changes_after(before, None, 100).unwrap();
        format!("{:?}", feed.changes).contains(lesson.id.as_str())
    };
    assert!(told(&a) && told(&admin));
    assert!(!told(&b), "the change feed told b of a's own lesson");

    // None by default: only its owner (and a person curating) sees it.
    assert!(a.lesson(&lesson.id).is_ok());
    assert!(admin.lesson(&lesson.id).is_ok());
    assert!(matches!(b.lesson(&lesson.id), Err(Error::NotFound { .. })));
    assert!(
        !b.lessons(None, None)
            .unwrap()
            .iter()
            .any(|l| l.id == lesson.id)
    );
    let query = RecallQuery {
        text: "weigh system design senior candidates".into(),
        ..RecallQuery::default()
    };
    let recalled = |e: &Engine| {
        e.recall(&query)
            .unwrap()
            .lessons
            .iter()
            .any(|l| l.id == lesson.id)
    };
    assert!(recalled(&a));
    assert!(!recalled(&b));
    assert!(
        !b.search("system design", None, 10)
            .unwrap()
            .iter()
            .any(|h| h.id == lesson.id.as_str())
    );
    assert!(
        !b.export_records()
            .unwrap()
            .iter()
            .any(|r| r.id() == lesson.id.as_str())
    );

    // Another agent cannot propagate it; the owner can, by role, capped, never to itself.
    assert!(matches!(
        b.propagate(&lesson.id, Some(Propagation::Role)),
        Err(Error::NotFound { .. })
    ));
    let done = a.propagate(&lesson.id, Some(Propagation::Role)).unwrap();
    assert_eq!(done.targets, ["b", "c"].map(String::from).into());
    assert_eq!(done.capped, 1, "d matched but the cap is 2");
    assert!(!done.targets.contains("a"));
    assert!(recalled(&b) && recalled(&c) && !recalled(&d) && !recalled(&w));
    let stored = admin.lesson(&lesson.id).unwrap();
    assert!(
        stored.tags.contains(&"propagated:a".to_owned()),
        "{:?}",
        stored.tags
    );

    // A target that changed role no longer sees what its old role was given.
    let b_as_writer = member(&admin, "b", "writer", "hr");
    assert!(matches!(
        b_as_writer.lesson(&lesson.id),
        Err(Error::NotFound { .. })
    ));

    // By department: the writer joins, still at most two, still not a.
    let done = admin
        .propagate(&lesson.id, Some(Propagation::Department))
        .unwrap();
    assert_eq!(done.targets.len(), 2);
    assert!(!done.targets.contains("a"));
    assert_eq!(done.capped, 2);

    // `none` propagates nothing and says so.
    let err = a
        .propagate(&lesson.id, Some(Propagation::None))
        .unwrap_err();
    assert!(err.to_string().contains("none"), "{err}");
}

#[test]
fn configured_propagation_reaches_the_role_at_once_and_skips_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        org: OrgConfig {
            propagation: Propagation::Role,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let admin = engine(&dir, config);
    let b = member(&admin, "b", "screener", "hr");
    learn(&b, "Never invent a candidate's employer.");
    let a = member(&admin, "a", "screener", "hr");
    let lesson = learn(&a, RULE);
    let org::Marked::Mark(mark) = org::mark(&lesson) else {
        panic!("a member's lesson is marked");
    };
    assert_eq!(mark.targets, ["b".to_owned()].into());
    assert!(b.lesson(&lesson.id).is_ok());
}

/// Three members learn the same rule; the pool's store and handles.
fn three_learn(dir: &tempfile::TempDir, config: EngineConfig) -> (Engine, Vec<LessonId>) {
    let admin = engine(dir, config);
    let ids = ["a", "b", "c"]
        .iter()
        .map(|name| learn(&member(&admin, name, "screener", "hr"), RULE).id)
        .collect();
    (admin, ids)
}

#[test]
fn the_pool_proposes_what_enough_agents_learned_and_only_a_person_approves_it() {
    let dir = tempfile::tempdir().unwrap();
    // The most permissive settings there are: auto curation, people's corrections approved at
    // once, the lowest agent count and confidence. None of them reaches the proposal.
    let config = EngineConfig {
        curation: CurationMode::Auto,
        human_corrections: HumanCorrections::Approve,
        org: OrgConfig {
            min_agents: 3,
            min_confidence: 0.0,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let (admin, _) = three_learn(&dir, config);
    let two = admin.org_pool(true).unwrap();
    assert_eq!(two.proposed, 1, "{two:?}");
    assert_eq!(two.patterns[0].proposal, None, "a dry run writes nothing");

    let report = admin.org_pool(false).unwrap();
    assert_eq!(report.proposed, 1);
    let pattern = &report.patterns[0];
    assert_eq!(pattern.agents.len(), 3);
    let proposal = pattern.proposal.clone().unwrap();
    let stored = admin.lesson(&proposal).unwrap();
    assert_eq!(stored.status, LessonStatus::NeedsReview);
    assert!(org::is_org(&stored));
    assert_eq!(stored.agent, None);

    // Nobody recalls it while it waits.
    let query = RecallQuery {
        text: "weigh system design senior candidates".into(),
        ..RecallQuery::default()
    };
    assert!(
        !admin
            .recall(&query)
            .unwrap()
            .lessons
            .iter()
            .any(|l| l.id == proposal)
    );

    // A second cycle does not propose it again.
    let again = admin.org_pool(false).unwrap();
    assert_eq!(again.proposed, 0);
    assert_eq!(again.patterns[0].outcome, PoolOutcome::AlreadyProposed);

    // No move but a person's approval makes it retrievable: not an agent's approval, not a
    // plain transition to approved or trial, not a member running the pool.
    let why = Attribution::new(None, "looks right");
    let agent = member(&admin, "a", "screener", "hr");
    assert!(matches!(agent.org_pool(false), Err(Error::Forbidden(_))));
    let as_agent = admin.as_author(AuthorKind::Agent);
    assert!(matches!(
        as_agent.approve(std::slice::from_ref(&proposal), &why),
        Err(Error::Forbidden(_))
    ));
    for to in [LessonStatus::Approved, LessonStatus::Trial] {
        assert!(matches!(
            admin.transition(&proposal, to, &why),
            Err(Error::Forbidden(_))
        ));
    }
    assert_eq!(
        admin.lesson(&proposal).unwrap().status,
        LessonStatus::NeedsReview
    );
    // The utility gates and upkeep leave it waiting.
    admin.maintain().unwrap();
    assert_eq!(
        admin.lesson(&proposal).unwrap().status,
        LessonStatus::NeedsReview
    );

    // A person approves it; every member now recalls it, shared.
    let approved = admin
        .as_author(AuthorKind::Human)
        .approve(std::slice::from_ref(&proposal), &why)
        .unwrap();
    assert_eq!(approved[0].status, LessonStatus::Approved);
    let stranger = member(&admin, "z", "writer", "sales");
    assert!(
        stranger
            .recall(&query)
            .unwrap()
            .lessons
            .iter()
            .any(|l| l.id == proposal)
    );
}

#[test]
fn an_imported_org_lesson_waits_for_review_whatever_its_file_says() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, _) = three_learn(&dir, EngineConfig::default());
    let report = admin.org_pool(false).unwrap();
    let id = report.patterns[0].proposal.clone().unwrap();
    let mut forged = admin.lesson(&id).unwrap();
    forged.id = LessonId::generate(chrono::Utc::now());
    forged.status = LessonStatus::Approved;
    admin
        .import_records(&[Record::Lesson(forged.clone())])
        .unwrap();
    assert_eq!(
        admin.lesson(&forged.id).unwrap().status,
        LessonStatus::NeedsReview
    );
}

#[test]
fn too_few_agents_or_too_little_confidence_propose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        org: OrgConfig {
            min_agents: 4,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let (admin, _) = three_learn(&dir, config);
    assert!(admin.org_pool(false).unwrap().patterns.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        org: OrgConfig {
            min_confidence: 1.0,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let (admin, _) = three_learn(&dir, config);
    let report = admin.org_pool(false).unwrap();
    assert_eq!(report.proposed, 0);
    assert_eq!(report.patterns[0].outcome, PoolOutcome::BelowConfidence);
}

/// Approves the pool's one proposal as a person; its ID.
fn approve_pool(admin: &Engine) -> LessonId {
    let report = admin.org_pool(false).unwrap();
    let id = report
        .patterns
        .iter()
        .find_map(|p| {
            (p.outcome == PoolOutcome::Proposed)
                .then(|| p.proposal.clone())
                .flatten()
        })
        .unwrap_or_else(|| panic!("nothing proposed: {report:?}"));
    admin
        .approve(std::slice::from_ref(&id), &Attribution::new(None, "ok"))
        .unwrap();
    id
}

#[test]
fn a_new_pattern_supersedes_conflicts_with_or_coexists_with_older_org_lessons() {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        org: OrgConfig {
            min_confidence: 0.0,
            ..OrgConfig::default()
        },
        ..EngineConfig::default()
    };
    let admin = engine(&dir, config);
    let learn_all = |names: [&str; 3], text: &str| {
        for name in names {
            learn(&member(&admin, name, "screener", "hr"), text);
        }
    };
    learn_all(["a", "b", "c"], "Priority must be urgent.");
    let old = approve_pool(&admin);

    // CONFLICT: the opposite directive on one subject is reported, not proposed.
    learn_all(["d", "e", "f"], "Priority must never be urgent.");
    let report = admin.org_pool(false).unwrap();
    let conflict = report
        .patterns
        .iter()
        .find(|p| p.outcome == PoolOutcome::Conflict)
        .unwrap();
    assert_eq!(conflict.conflicts, vec![old.clone()]);
    assert_eq!(report.proposed, 0);

    // FULL: a broader, more confident rule supersedes the old one once a person approves it.
    let broader = "When tickets report outages, priority must be urgent and escalated.";
    learn_all(["g", "h", "i"], broader);
    let report = admin.org_pool(false).unwrap();
    let full = report
        .patterns
        .iter()
        .find(|p| p.outcome == PoolOutcome::Proposed);
    if let Some(full) = full
        && !full.supersedes.is_empty()
    {
        assert_eq!(full.supersedes, vec![old.clone()]);
        let new = full.proposal.clone().unwrap();
        assert_eq!(admin.lesson(&old).unwrap().status, LessonStatus::Approved);
        admin
            .approve(std::slice::from_ref(&new), &Attribution::new(None, "ok"))
            .unwrap();
        assert_eq!(admin.lesson(&old).unwrap().status, LessonStatus::Superseded);
    } else {
        panic!("expected a FULL verdict: {report:?}");
    }

    // PARTIAL: an unrelated rule coexists.
    learn_all(["j", "k", "l"], "Summaries must name the failing page.");
    let report = admin.org_pool(false).unwrap();
    let partial = report
        .patterns
        .iter()
        .find(|p| p.outcome == PoolOutcome::Proposed)
        .unwrap();
    assert!(partial.supersedes.is_empty() && partial.conflicts.is_empty());
}

#[test]
fn personal_boost_lifts_the_callers_own_lesson_over_a_shared_one() {
    let dir = tempfile::tempdir().unwrap();
    let admin = engine(&dir, EngineConfig::default());
    // The shared lesson says the query's words more often, so it leads without a boost.
    let shared = learn(
        &admin,
        "Always check references for senior candidates, references for senior roles matter.",
    );
    let a = member(&admin, "a", "screener", "hr");
    let own = learn(&a, "Always check references before scoring.");
    let query = RecallQuery {
        text: "check references senior candidates".into(),
        ..RecallQuery::default()
    };
    let scores = |e: &Engine| -> Vec<(LessonId, f64)> {
        e.recall(&query)
            .unwrap()
            .lessons
            .into_iter()
            .map(|l| (l.id, l.score))
            .collect()
    };
    let score = |list: &[(LessonId, f64)], id: &LessonId| {
        list.iter().find(|(i, _)| i == id).map(|(_, s)| *s).unwrap()
    };
    let plain = scores(&a);
    assert_eq!(
        plain[0].0, shared.id,
        "the shared lesson leads unboosted: {plain:?}"
    );
    assert!(score(&plain, &own.id) < score(&plain, &shared.id));
    let boosted = a
        .clone()
        .with_recall_config(RecallConfig::builder().personal_boost(0.5).build().unwrap());
    let boosted = scores(&boosted);
    // The boost adds to relevance up to its cap: the own lesson rises and stops trailing.
    assert!(
        score(&boosted, &own.id) > score(&plain, &own.id)
            && score(&boosted, &own.id) >= score(&boosted, &shared.id) - 1e-9,
        "{plain:?} {boosted:?}"
    );
    assert!((score(&boosted, &shared.id) - score(&plain, &shared.id)).abs() < 1e-9);
    let order = |e: &Engine| -> Vec<LessonId> {
        e.recall(&query)
            .unwrap()
            .lessons
            .into_iter()
            .map(|l| l.id)
            .collect()
    };
    // Nobody else gets a boost for a's lesson, and a's lesson stays a's.
    assert!(!order(&member(&admin, "b", "screener", "hr")).contains(&own.id));
}
