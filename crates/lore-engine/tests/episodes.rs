//! Episodes and the causal graph over the embedded store (seed 001): round trips on a real
//! file, exact graph answers on a small hand-built set, scope isolation of every query, token
//! budgets, and the incremental graph equal to the one rebuilt from all episodes.

use std::sync::Arc;

use lore_core::graph::{GraphCounts, PathMode};
use lore_core::id::EpisodeId;
use lore_core::model::{EdgeType, Episode, EpisodeOutcome};
use lore_core::ports::store::EpisodeFilter;
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::{Engine, EngineConfig};
use lore_engine::{EpisodeQuery, PageRequest, PatternQuery};
use lore_sqlite::{OpenMode, SqliteStore};
use proptest::prelude::*;
use serde_json::{Value, json};

const HR: &str = "hr/screen";
const FINANCE: &str = "finance/audit";
const CONTEXT: &str = "Choosing cache for candidate lookups";

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Arc<SqliteStore>,
    engine: Engine,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lore.db");
        let store = Arc::new(SqliteStore::open(&path, OpenMode::Create).unwrap());
        let engine = Engine::new(store.clone(), EngineConfig::default());
        Self {
            _dir: dir,
            path,
            store,
            engine,
        }
    }

    fn scoped(&self, domain: &str) -> Engine {
        self.engine.scoped(Scope::domains([domain]))
    }

    fn add(&self, value: Value) -> Episode {
        let episode = Episode::from_json(value, None).unwrap();
        self.engine.add_episode(episode, false).unwrap().episode
    }

    /// The hand-built set: three hr episodes about a cache choice, one finance episode.
    fn seeded() -> Self {
        Self::seeded_without("")
    }

    /// The hand-built set without the episode `skip`.
    fn seeded_without(skip: &str) -> Self {
        let f = Self::new();
        let set = [
            json!({
                "id": "E1", "skill": HR, "timestamp": "2026-01-01T10:00:00Z", "outcome": "success",
                "task": "Speed up candidate search",
                "decisions": [{"id": "d1", "type": "design", "context": CONTEXT,
                               "options": ["Redis", "Memcached"], "chosen": "Redis",
                               "effects": ["e1"]}],
                "events": [{"id": "e1", "type": "milestone", "content": "Cache ready."}]
            }),
            json!({
                "id": "E2", "skill": HR, "timestamp": "2026-01-02T10:00:00Z", "outcome": "failure",
                "task": "Speed up candidate search again",
                "decisions": [
                    {"id": "d1", "type": "design", "context": CONTEXT,
                     "options": ["Redis", "Memcached"], "chosen": "Redis", "effects": ["e1"]},
                    {"id": "d2", "type": "recovery", "context": "Recover from the cache timeout",
                     "chosen": "Retry with backoff", "outcome": "failure"}
                ],
                "events": [{"id": "e1", "type": "error", "content": "Cache timeout",
                            "leads_to": ["d2"]}]
            }),
            json!({
                "id": "E3", "skill": HR, "timestamp": "2026-01-03T10:00:00Z", "outcome": "success",
                "task": "Cache candidate profiles",
                "decisions": [{"id": "d1", "type": "design", "context": CONTEXT,
                               "options": ["Redis", "Memcached"], "chosen": "Memcached",
                               "effects": ["e1"]}],
                "events": [{"id": "e1", "type": "milestone", "content": "cache ready"}]
            }),
            json!({
                "id": "F1", "skill": FINANCE, "timestamp": "2026-01-04T10:00:00Z",
                "outcome": "failure", "task": "Cache ledger reads",
                "decisions": [{"id": "d1", "type": "design",
                               "context": "Choosing cache for ledger lookups",
                               "chosen": "Memcached"}],
                "events": [{"id": "e1", "type": "error", "content": "Cache timeout"}]
            }),
        ];
        for episode in set {
            if episode["id"] != skip {
                f.add(episode);
            }
        }
        f
    }
}

/// `query` counting a pattern seen once: the fixtures hold few episodes.
fn once(query: PatternQuery) -> PatternQuery {
    PatternQuery {
        min_occurrences: 1,
        ..query
    }
}

fn id(raw: &str) -> EpisodeId {
    EpisodeId::parse(raw).unwrap()
}

fn seed_episode(skill: &str) -> Value {
    json!({
      "id": "episode-2026-01-01-126",
      "session": "2026-01-01-session-126",
      "skill": skill,
      "timestamp": "2026-01-01T17:00:00Z",
      "outcome": "success",
      "task": "Implement MemoryRouter module",
      "decisions": [{
          "id": "d001", "timestamp": "2026-01-01T17:05:00Z", "type": "design",
          "context": "Choosing routing strategy",
          "options": ["Forgetful-first", "Serena-first", "Parallel"],
          "chosen": "Serena-first", "rationale": "Lower latency, no network dependency",
          "outcome": "success", "effects": ["e001"]
      }],
      "events": [{
          "id": "e001", "timestamp": "2026-01-01T17:10:00Z", "type": "tool_call",
          "content": "Created MemoryRouter.psm1", "caused_by": ["d001"]
      }],
      "metrics": {"duration_minutes": 45, "tool_calls": 87, "errors": 2, "recoveries": 2},
      "lessons": ["Pre-commit hooks check all markdown, not just staged files"]
    })
}

#[test]
fn an_episode_round_trips_through_a_real_file() {
    let f = Fixture::new();
    let stored = f.add(seed_episode(HR));
    drop(f.engine);
    drop(f.store);
    let reopened = SqliteStore::open(&f.path, OpenMode::Existing).unwrap();
    let back = reopened.episode(&stored.id).unwrap().unwrap();
    assert_eq!(back, stored);
    assert_eq!(back.decisions[0].options.len(), 3);
    assert_eq!(reopened.counts(&Scope::unrestricted()).unwrap().episodes, 1);
}

#[test]
fn listing_filters_by_outcome_time_and_skill_and_pages() {
    let f = Fixture::seeded();
    let ids = |q: EpisodeQuery, limit, offset| {
        let page = f
            .engine
            .episodes_page(&q, PageRequest { limit, offset })
            .unwrap();
        (
            page.items
                .iter()
                .map(|e| e.id.to_string())
                .collect::<Vec<_>>(),
            page.next_offset,
        )
    };
    assert_eq!(
        ids(EpisodeQuery::default(), 2, 0),
        (vec!["E1".into(), "E2".into()], Some(2))
    );
    assert_eq!(
        ids(EpisodeQuery::default(), 2, 2),
        (vec!["E3".into(), "F1".into()], None)
    );
    let failures = EpisodeQuery {
        outcome: Some(EpisodeOutcome::Failure),
        ..EpisodeQuery::default()
    };
    assert_eq!(ids(failures, 10, 0).0, ["E2", "F1"]);
    let since = EpisodeQuery {
        since: Some("2026-01-03T00:00:00Z".parse().unwrap()),
        skill: Some(SkillPath::parse(HR).unwrap()),
        ..EpisodeQuery::default()
    };
    assert_eq!(ids(since, 10, 0).0, ["E3"]);
    let err = f
        .engine
        .episodes_page(
            &EpisodeQuery::default(),
            PageRequest {
                limit: 0,
                offset: 0,
            },
        )
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
}

#[test]
fn a_taken_id_is_refused_unless_replaced_and_the_graph_follows_the_replacement() {
    let f = Fixture::seeded();
    let mut again = f.engine.episode(&id("E2")).unwrap();
    let err = f.engine.add_episode(again.clone(), false).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");

    // E2 becomes a success that chose Memcached: Redis is now in one episode only.
    again.outcome = EpisodeOutcome::Success;
    again.decisions[0].chosen = "Memcached".into();
    let receipt = f.engine.add_episode(again.clone(), true).unwrap();
    assert!(receipt.replaced);
    assert_eq!(f.engine.episode(&id("E2")).unwrap(), again);
    let hr = f.scoped("hr").causal_graph().unwrap();
    let redis = hr.nodes.iter().find(|n| n.label == "redis").unwrap();
    assert_eq!((redis.frequency, redis.successes), (1, 1));
    let memcached = hr.nodes.iter().find(|n| n.label == "memcached").unwrap();
    assert_eq!(memcached.episodes, [id("E2"), id("E3")]);
    assert!(
        hr.nodes.iter().all(|n| n.label != "failure"),
        "no hr episode fails any more: {:?}",
        hr.nodes
    );
    assert_eq!(
        f.store.graph_counts(&Scope::unrestricted()).unwrap(),
        GraphCounts::of(&all(&f.store))
    );
}

fn all(store: &SqliteStore) -> Vec<Episode> {
    store.episodes(&EpisodeFilter::default()).unwrap()
}

#[test]
fn the_graph_of_the_hand_built_set_has_the_expected_counts() {
    let f = Fixture::seeded();
    let hr = f.scoped("hr").causal_graph().unwrap();
    let node = |label: &str| {
        let n = hr
            .nodes
            .iter()
            .find(|n| n.label == label)
            .unwrap_or_else(|| panic!("{label}"));
        (n.frequency, n.successes)
    };
    assert_eq!(node("redis"), (2, 1));
    assert_eq!(
        node("memcached"),
        (1, 1),
        "finance's Memcached is not counted"
    );
    assert_eq!(node("cache ready"), (2, 2), "labels are normalized");
    assert_eq!(node("cache timeout"), (1, 0));
    assert_eq!(node("success"), (2, 2));
    assert_eq!(node("failure"), (1, 0));
    let edge = |s: &str, t: &str| {
        hr.edges
            .iter()
            .find(|e| e.source.label == s && e.target.label == t)
            .map(|e| (e.kind, e.evidence_count, e.weight))
            .unwrap_or_else(|| panic!("{s} -> {t}"))
    };
    assert_eq!(edge("redis", "cache timeout"), (EdgeType::Causes, 1, 0.5));
    assert_eq!(edge("redis", "cache ready"), (EdgeType::Causes, 1, 0.5));
    assert_eq!(
        edge("cache timeout", "retry with backoff"),
        (EdgeType::Enables, 1, 1.0)
    );
    assert_eq!(
        edge("retry with backoff", "failure"),
        (EdgeType::Correlates, 1, 1.0)
    );
    assert_eq!(
        edge("cache ready", "success"),
        (EdgeType::Correlates, 2, 1.0)
    );
    assert_eq!(hr.edges.len(), 6, "{:?}", hr.edges);
    let patterns: Vec<(&str, &str, u64, u64)> = hr
        .patterns
        .iter()
        .map(|p| {
            (
                p.trigger.as_str(),
                p.action.as_str(),
                p.occurrences,
                p.successes,
            )
        })
        .collect();
    assert_eq!(
        patterns,
        [
            ("cache timeout", "retry with backoff", 1, 0),
            ("choosing cache for candidate lookups", "memcached", 1, 1),
            ("choosing cache for candidate lookups", "redis", 2, 1),
        ]
    );

    let everything = f.engine.causal_graph().unwrap();
    let memcached = everything
        .nodes
        .iter()
        .find(|n| n.label == "memcached")
        .unwrap();
    assert_eq!((memcached.frequency, memcached.successes), (2, 1));
}

#[test]
fn causal_paths_are_exact_and_stay_inside_the_scope() {
    let f = Fixture::seeded();
    let hr = f.scoped("hr");
    let path = hr
        .causal_path(
            "decision:redis",
            "outcome:failure",
            PathMode::Shortest,
            None,
        )
        .unwrap();
    let hops: Vec<(String, EdgeType, String)> = path
        .steps
        .iter()
        .map(|s| (s.source.label.clone(), s.kind, s.target.label.clone()))
        .collect();
    assert_eq!(
        hops,
        [
            ("redis".into(), EdgeType::Causes, "cache timeout".into()),
            (
                "cache timeout".into(),
                EdgeType::Enables,
                "retry with backoff".into()
            ),
            (
                "retry with backoff".into(),
                EdgeType::Correlates,
                "failure".into()
            ),
        ]
    );
    assert_eq!(path.strength, 0.5);
    assert_eq!(path.steps[0].episodes, [id("E2")]);
    assert!(
        path.rendered.text.contains("> cache timeout"),
        "{}",
        path.rendered.text
    );
    let strongest = hr
        .causal_path("redis", "outcome:failure", PathMode::Strongest, None)
        .unwrap();
    assert_eq!(strongest.steps.len(), 3);

    // Memcached led to failure only in finance.
    let none = hr
        .causal_path(
            "decision:memcached",
            "outcome:failure",
            PathMode::Shortest,
            None,
        )
        .unwrap();
    assert!(none.steps.is_empty());
    assert!(
        none.rendered.text.contains("No path"),
        "{}",
        none.rendered.text
    );
    let finance = f
        .scoped("finance")
        .causal_path(
            "decision:memcached",
            "outcome:failure",
            PathMode::Shortest,
            None,
        )
        .unwrap();
    assert_eq!(finance.steps.len(), 1);
    assert_eq!(finance.steps[0].episodes, [id("F1")]);

    let err = hr
        .causal_path("decision:oracle", "failure", PathMode::Shortest, None)
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { kind: "node", .. }), "{err}");
    let err = hr
        .causal_path(" ", "failure", PathMode::Shortest, None)
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
}

#[test]
fn what_if_reports_outcomes_elsewhere_or_says_there_is_no_evidence() {
    let f = Fixture::seeded();
    let hr = f.scoped("hr");
    let answer = hr
        .what_if(&id("E2"), "d1", "Memcached", None, None)
        .unwrap();
    assert!(answer.evidence);
    let cases = |m: &[lore_engine::DecisionMatch]| {
        m.iter().map(|c| c.episode.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(cases(&answer.alternative_cases), ["E3"]);
    assert_eq!(answer.alternative_stats.success_rate, Some(1.0));
    assert_eq!(cases(&answer.chosen_cases), ["E1"]);
    assert_eq!(answer.actual_outcome, EpisodeOutcome::Failure);

    // Unrestricted, finance's failed Memcached (a similar ledger context) counts too.
    let all = f
        .engine
        .what_if(&id("E2"), "d1", "Memcached", None, None)
        .unwrap();
    assert_eq!(cases(&all.alternative_cases).len(), 2);
    assert_eq!(all.alternative_stats.success_rate, Some(0.5));
    let strict = f
        .engine
        .what_if(&id("E2"), "d1", "Memcached", Some(1.0), None)
        .unwrap();
    assert_eq!(cases(&strict.alternative_cases), ["E3"]);

    let nothing = hr
        .what_if(&id("E2"), "d2", "Fail fast", None, None)
        .unwrap();
    assert!(!nothing.evidence);
    assert_eq!(nothing.alternative_stats.success_rate, None);
    assert!(
        nothing.rendered.text.contains("No evidence"),
        "{}",
        nothing.rendered.text
    );

    for (decision, alt, needle) in [
        ("d1", "Redis", "is what was chosen"),
        ("d1", "Cassandra", "not one of the options"),
        ("d1", " ", "empty"),
    ] {
        let err = hr
            .what_if(&id("E2"), decision, alt, None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{alt}: {err}");
    }
    let err = hr.what_if(&id("E2"), "d9", "x", None, None).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let err = hr.what_if(&id("F1"), "d1", "x", None, None).unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }),
        "finance is invisible: {err}"
    );
    let err = hr
        .what_if(&id("E2"), "d1", "Memcached", Some(1.5), None)
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
}

#[test]
fn similar_decisions_and_patterns_stay_inside_the_scope() {
    let f = Fixture::seeded();
    let hr = f.scoped("hr");
    let similar = hr.similar_decisions("cache lookups", 10, None).unwrap();
    let found: Vec<String> = similar
        .decisions
        .iter()
        .map(|d| format!("{}/{}", d.episode, d.decision))
        .collect();
    assert_eq!(
        found,
        ["E1/d1", "E2/d1", "E3/d1", "E2/d2"],
        "the recovery mentions the cache"
    );
    let all = f.engine.similar_decisions("ledger", 10, None).unwrap();
    assert_eq!(all.decisions.len(), 1);
    assert!(
        hr.similar_decisions("ledger", 10, None)
            .unwrap()
            .decisions
            .is_empty()
    );
    assert!(matches!(
        hr.similar_decisions("the of", 10, None).unwrap_err(),
        Error::Invalid { .. }
    ));
    assert!(matches!(
        hr.similar_decisions("cache", 0, None).unwrap_err(),
        Error::Invalid { .. }
    ));

    let good = hr.patterns(once(PatternQuery::patterns()), None).unwrap();
    let actions: Vec<&str> = good.patterns.iter().map(|p| p.action.as_str()).collect();
    assert_eq!(actions, ["memcached"]);
    let bad = hr
        .patterns(once(PatternQuery::anti_patterns()), None)
        .unwrap();
    let actions: Vec<&str> = bad.patterns.iter().map(|p| p.action.as_str()).collect();
    assert_eq!(actions, ["retry with backoff"]);
    let finance_bad = f
        .scoped("finance")
        .patterns(once(PatternQuery::anti_patterns()), None)
        .unwrap();
    assert_eq!(finance_bad.patterns.len(), 1);
    assert_eq!(
        finance_bad.patterns[0].trigger,
        "choosing cache for ledger lookups"
    );
    // Seed 001's defaults want three occurrences: nothing here is that frequent.
    assert!(
        hr.patterns(PatternQuery::patterns(), None)
            .unwrap()
            .patterns
            .is_empty()
    );
    let err = hr
        .patterns(
            PatternQuery {
                min_success_rate: Some(2.0),
                ..PatternQuery::patterns()
            },
            None,
        )
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err}");
}

#[test]
fn reads_and_writes_are_held_to_the_scope() {
    let f = Fixture::seeded();
    let hr = f.scoped("hr");
    assert!(matches!(
        hr.episode(&id("F1")).unwrap_err(),
        Error::NotFound { .. }
    ));
    let listed = hr
        .episodes_page(
            &EpisodeQuery::default(),
            PageRequest {
                limit: 10,
                offset: 0,
            },
        )
        .unwrap();
    assert_eq!(listed.items.len(), 3);
    assert_eq!(hr.status().unwrap().counts.episodes, 3);

    let finance = Episode::from_json(seed_episode(FINANCE), None).unwrap();
    let err = hr.add_episode(finance, false).unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");

    // An hr handle cannot replace finance's F1 by naming an hr episode with the same ID.
    let mut fake = Episode::from_json(seed_episode(HR), None).unwrap();
    fake.id = id("F1");
    let err = hr.add_episode(fake, true).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert_eq!(f.engine.episode(&id("F1")).unwrap().skill.as_str(), FINANCE);
    assert_eq!(f.engine.status().unwrap().counts.episodes, 4);
}

#[test]
fn bad_episodes_change_nothing_and_secrets_are_redacted() {
    let f = Fixture::new();
    let mut bad = seed_episode(HR);
    bad["decisions"][0]["chosen"] = json!("Serial");
    let episode = Episode::from_json(bad, None).unwrap();
    let err = f.engine.add_episode(episode, false).unwrap_err();
    assert!(err.to_string().contains("decisions[0].chosen"), "{err}");
    assert_eq!(f.store.counts(&Scope::unrestricted()).unwrap().episodes, 0);
    assert_eq!(
        f.store.graph_counts(&Scope::unrestricted()).unwrap(),
        GraphCounts::default()
    );

    let agent = f.engine.scoped(Scope {
        agent: Some("bot-1".into()),
        ..Scope::default()
    });
    let mut other = seed_episode(HR);
    other["agent"] = json!("bot-2");
    let err = agent
        .add_episode(Episode::from_json(other, None).unwrap(), false)
        .unwrap_err();
    assert!(
        matches!(err, Error::Invalid { ref what, .. } if what == "agent"),
        "{err}"
    );

    let mut secret = seed_episode(HR);
    secret.as_object_mut().unwrap().remove("id");
    secret["task"] = json!("Mail the report to ana.silva@example.com");
    let receipt = agent
        .add_episode(Episode::from_json(secret, None).unwrap(), false)
        .unwrap();
    assert_eq!(receipt.redacted, 1);
    assert!(receipt.episode.id.as_str().starts_with("EPI-"));
    assert_eq!(receipt.episode.agent.as_deref(), Some("bot-1"));
    let stored = f.store.episode(&receipt.episode.id).unwrap().unwrap();
    assert!(!stored.task.contains("ana.silva"), "{}", stored.task);
    assert!(stored.task.contains("[redacted:"), "{}", stored.task);
}

#[test]
fn rendered_texts_hold_their_token_budgets() {
    let f = Fixture::new();
    let mut big = seed_episode(HR);
    big["events"] = json!(
        (0..120)
            .map(|i| json!({"id": format!("e{i}"), "type": "tool_call",
                            "content": format!("Ran the formatter over module number {i} again")}))
            .collect::<Vec<_>>()
    );
    big["decisions"][0]["effects"] = json!(["e0"]);
    let episode = f.add(big);
    let view = f.engine.episode_view(&episode.id, None).unwrap();
    assert_eq!(view.rendered.budget, 500);
    assert!(view.rendered.truncated);
    assert!(view.rendered.tokens <= 500, "{}", view.rendered.tokens);
    assert!(
        view.rendered
            .text
            .contains("> Implement MemoryRouter module")
    );
    let small = f.engine.episode_view(&episode.id, Some(40)).unwrap();
    assert!(small.rendered.tokens <= 40);
    let path = f
        .engine
        .causal_path("serena-first", "success", PathMode::Shortest, Some(30))
        .unwrap();
    assert!(path.rendered.tokens <= 30 && path.rendered.budget == 30);
    let default_path = f
        .engine
        .causal_path("serena-first", "success", PathMode::Shortest, None)
        .unwrap();
    assert_eq!(default_path.rendered.budget, 200);
    let patterns = f
        .engine
        .patterns(
            PatternQuery {
                min_occurrences: 1,
                min_success_rate: Some(0.0),
                ..PatternQuery::patterns()
            },
            None,
        )
        .unwrap();
    assert_eq!(patterns.rendered.budget, 100);
    assert!(patterns.rendered.tokens <= 100);
    let what_if = f
        .engine
        .what_if(&episode.id, "d001", "Parallel", None, None)
        .unwrap();
    assert_eq!(what_if.rendered.budget, 1000);
    for budget in [0, 20_001] {
        let err = f
            .engine
            .episode_view(&episode.id, Some(budget))
            .unwrap_err();
        assert!(
            matches!(err, Error::Invalid { ref what, .. } if what == "budget"),
            "{err}"
        );
    }
    let seq = f.engine.decision_sequence(&episode.id, None).unwrap();
    assert_eq!(seq.decisions.len(), 1);
    assert!(seq.rendered.text.contains("> Serena-first"));
}

/// A random, valid episode over a small vocabulary, so labels and patterns repeat.
fn arb_episode(n: usize) -> impl Strategy<Value = Value> {
    let labels = [
        "Redis",
        "Memcached",
        "retry",
        "cache timeout",
        "Cache ready",
        "rollback",
    ];
    let contexts = [
        "pick a cache",
        "recover from timeout",
        "choose retry policy",
    ];
    let skills = [HR, FINANCE, "hr/other"];
    (
        0..skills.len(),
        0..3usize,
        proptest::collection::vec((0..labels.len(), 0..contexts.len(), 0..4usize), 0..4),
        proptest::collection::vec((0..labels.len(), 0..4usize), 0..4),
        proptest::collection::vec((0..8usize, 0..8usize, 0..4usize), 0..6),
    )
        .prop_map(move |(skill, outcome, decisions, events, links)| {
            let outcomes = ["success", "partial", "failure"];
            let nd = decisions.len();
            let ids: Vec<String> = (0..nd)
                .map(|i| format!("d{i}"))
                .chain((0..events.len()).map(|i| format!("e{i}")))
                .collect();
            let mut links_json = Vec::new();
            if !ids.is_empty() {
                for (a, b, t) in links {
                    let (a, b) = (a % ids.len(), b % ids.len());
                    if a != b {
                        let kind = ["causes", "enables", "prevents", "correlates"][t];
                        links_json.push(json!({"from": ids[a], "to": ids[b], "type": kind}));
                    }
                }
            }
            json!({
                "id": format!("P{n}"),
                "skill": skills[skill],
                "timestamp": "2026-01-01T00:00:00Z",
                "outcome": outcomes[outcome],
                "task": "t",
                "decisions": decisions.iter().enumerate().map(|(i, (l, c, o))| {
                    let mut d = json!({"id": format!("d{i}"), "type": "design",
                                       "context": contexts[*c], "chosen": labels[*l]});
                    if *o < 3 { d["outcome"] = json!(outcomes[*o]); }
                    if i + 1 < nd { d["effects"] = json!([format!("d{}", i + 1)]); }
                    d
                }).collect::<Vec<_>>(),
                "events": events.iter().enumerate().map(|(i, (l, k))| {
                    let kind = ["tool_call", "error", "milestone", "handoff"][*k];
                    let mut e = json!({"id": format!("e{i}"), "type": kind, "content": labels[*l]});
                    if nd > 0 { e["caused_by"] = json!(["d0"]); }
                    e
                }).collect::<Vec<_>>(),
                "links": links_json,
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Adding, replacing and rebuilding all give the graph summed from the final episodes.
    #[test]
    fn the_incremental_graph_equals_the_rebuilt_graph(
        first in proptest::collection::vec((0..4usize).prop_flat_map(arb_episode), 1..6),
        replacements in proptest::collection::vec((0..4usize).prop_flat_map(arb_episode), 0..4),
    ) {
        let f = Fixture::new();
        for e in first.iter().chain(&replacements) {
            let episode = Episode::from_json(e.clone(), None).unwrap();
            f.engine.add_episode(episode, true).unwrap();
        }
        let incremental = f.store.graph_counts(&Scope::unrestricted()).unwrap();
        let episodes = all(&f.store);
        prop_assert_eq!(&incremental, &GraphCounts::of(&episodes));
        f.store.rebuild_graph().unwrap();
        prop_assert_eq!(&f.store.graph_counts(&Scope::unrestricted()).unwrap(), &incremental);
        // Each scope's graph is the sum over its own episodes only.
        let hr = Scope::domains(["hr"]);
        let hr_episodes: Vec<Episode> =
            episodes.into_iter().filter(|e| hr.allows(&e.skill)).collect();
        prop_assert_eq!(f.store.graph_counts(&hr).unwrap(), GraphCounts::of(&hr_episodes));
    }
}

/// Every graph query's answer over the hand-built set, as JSON, so two stores can be compared.
fn answers(engine: &Engine) -> Value {
    let loose = |q: PatternQuery| PatternQuery {
        min_occurrences: 1,
        ..q
    };
    json!({
        "graph": engine.causal_graph().unwrap(),
        "path": engine.causal_path("decision:redis", "outcome:failure", PathMode::Shortest, None)
            .ok(),
        "strongest": engine.causal_path("redis", "outcome:failure", PathMode::Strongest, None)
            .ok(),
        "what_if": engine.what_if(&id("E2"), "d1", "Memcached", None, None).ok(),
        "similar": engine.similar_decisions("cache lookups", 10, None).unwrap(),
        "patterns": engine.patterns(loose(PatternQuery::patterns()), None).unwrap(),
        "anti_patterns": engine.patterns(loose(PatternQuery::anti_patterns()), None).unwrap(),
    })
}

fn jsonl(records: &[lore_core::ports::store::Record]) -> Vec<u8> {
    let mut buf = Vec::new();
    lore_engine::interchange::write_jsonl(records, &mut buf).unwrap();
    buf
}

#[test]
fn episodes_travel_through_export_and_import_and_the_graph_answers_the_same() {
    let from = Fixture::seeded();
    let exported = jsonl(&from.engine.export_records().unwrap());
    let to = Fixture::new();
    let records = lore_engine::interchange::read_jsonl(exported.as_slice()).unwrap();
    let report = to.engine.import_jsonl(records.clone()).unwrap();
    assert_eq!(report.episodes, 4);
    assert_eq!(report.write.written, records.len());
    assert_eq!(all(&to.store), all(&from.store));
    assert_eq!(answers(&to.engine), answers(&from.engine));
    assert_eq!(answers(&to.scoped("hr")), answers(&from.scoped("hr")));
    assert_eq!(
        answers(&to.scoped("finance")),
        answers(&from.scoped("finance"))
    );

    // The counters written by the import are those a rebuild makes.
    let imported = to.store.graph_counts(&Scope::unrestricted()).unwrap();
    to.store.rebuild_graph().unwrap();
    assert_eq!(
        to.store.graph_counts(&Scope::unrestricted()).unwrap(),
        imported
    );

    // A second import skips every identical record and changes nothing.
    let again = to.engine.import_jsonl(records.clone()).unwrap();
    assert_eq!(
        (again.write.written, again.write.skipped),
        (0, records.len())
    );
    assert_eq!(
        to.store.graph_counts(&Scope::unrestricted()).unwrap(),
        imported
    );

    // A scoped export holds only the scope's episodes.
    let hr: Vec<String> = from
        .scoped("hr")
        .export_records()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            lore_core::ports::store::Record::Episode(e) => Some(e.id.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(hr, ["E1", "E2", "E3"]);
}

#[test]
fn a_conflicting_or_malformed_episode_fails_the_whole_import() {
    let from = Fixture::seeded();
    let to = Fixture::seeded();
    let before = (all(&to.store), answers(&to.engine));
    let mut records = from.engine.export_records().unwrap();
    // A new episode the failed import must not store.
    records.push(lore_core::ports::store::Record::Episode(
        Episode::from_json(seed_episode(HR), None).unwrap(),
    ));
    for r in &mut records {
        if let lore_core::ports::store::Record::Episode(e) = r
            && e.id.as_str() == "E2"
        {
            e.task = "Something else entirely".into();
        }
    }
    let err = to.engine.import_jsonl(records).unwrap_err();
    assert!(
        matches!(&err, Error::Conflict(m) if m.contains("episode E2")),
        "{err}"
    );
    assert_eq!((all(&to.store), answers(&to.engine)), before);

    // An episode that breaks a rule is refused by the Engine too, whoever built the records.
    let mut broken = Episode::from_json(seed_episode(HR), None).unwrap();
    broken.id = id("NEW-1");
    broken.decisions[0].chosen = "Nobody".into();
    let err = to
        .engine
        .import_jsonl(vec![lore_core::ports::store::Record::Episode(broken)])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { what, .. } if what.contains("chosen")),
        "{err}"
    );
    assert_eq!((all(&to.store), answers(&to.engine)), before);

    // A handle for hr cannot import a finance episode.
    let finance = Episode::from_json(seed_episode(FINANCE), None).unwrap();
    let err = to
        .scoped("hr")
        .import_jsonl(vec![lore_core::ports::store::Record::Episode(finance)])
        .unwrap_err();
    assert!(matches!(err, Error::Forbidden(_)), "{err}");
    assert_eq!((all(&to.store), answers(&to.engine)), before);
}

fn raw_contains(path: &std::path::Path, needle: &str) -> bool {
    let wal = path.with_extension("db-wal");
    [path, wal.as_path()].iter().any(|p| {
        std::fs::read(p)
            .map(|raw| raw.windows(needle.len()).any(|w| w == needle.as_bytes()))
            .unwrap_or(false)
    })
}

#[test]
fn a_purged_episode_leaves_the_file_and_the_graph_and_bad_requests_change_nothing() {
    let f = Fixture::seeded();
    let why = |reason: &str| lore_engine::Attribution::new(Some("dpo"), reason);
    let hr = f.scoped("hr");
    assert!(raw_contains(&f.path, "with backoff"));
    let before = (
        all(&f.store),
        answers(&f.engine),
        f.store.audit(None).unwrap(),
    );
    let err = hr.purge_episode(&id("E2"), &why(" ")).unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { what, .. } if what == "reason"),
        "{err}"
    );
    let err = hr.purge_episode(&id("NOPE"), &why("erasure")).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    let err = hr.purge_episode(&id("F1"), &why("erasure")).unwrap_err();
    assert!(
        matches!(err, Error::NotFound { .. }),
        "finance is invisible to hr: {err}"
    );
    assert_eq!(
        (
            all(&f.store),
            answers(&f.engine),
            f.store.audit(None).unwrap()
        ),
        before
    );

    let report = hr
        .purge_episode(&id("E2"), &why("erasure request"))
        .unwrap();
    assert_eq!((report.decisions, report.events), (2, 1));
    let stored = f.engine.episode(&id("E2")).unwrap();
    assert_eq!(stored.task, lore_engine::PURGED);
    assert!(stored.decisions.is_empty() && stored.events.is_empty());
    assert_eq!(stored.outcome, EpisodeOutcome::Failure);
    let trail = f.store.audit(Some("E2")).unwrap();
    let last = trail.last().unwrap();
    assert_eq!(last.action, lore_core::model::AuditAction::Purged);
    assert_eq!(
        (last.actor.as_str(), last.reason.as_str()),
        ("dpo", "erasure request")
    );
    assert!(!raw_contains(&f.path, "with backoff"));
    assert!(!raw_contains(&f.path, "candidate search again"));

    // The graph answers as if E2 had never been recorded, and equals a rebuild.
    let without = Fixture::seeded_without("E2");
    assert_eq!(answers(&f.engine), answers(&without.engine));
    assert_eq!(answers(&hr), answers(&without.scoped("hr")));
    let counts = f.store.graph_counts(&Scope::unrestricted()).unwrap();
    f.store.rebuild_graph().unwrap();
    assert_eq!(
        f.store.graph_counts(&Scope::unrestricted()).unwrap(),
        counts
    );
    // A purged episode exports as purged and imports as such.
    let to = Fixture::new();
    to.engine
        .import_jsonl(f.engine.export_records().unwrap())
        .unwrap();
    assert_eq!(to.engine.episode(&id("E2")).unwrap(), stored);
}

/// One write in the cache property test: who makes it, and what.
#[derive(Clone, Debug)]
enum Write {
    /// Through the Engine whose cache is checked (or its hr handle when `scoped`).
    Cached { episode: Value, scoped: bool },
    /// Through another Engine on its own connection to the file, as another process would.
    Other { episode: Value },
    /// A purge of the n-th episode written so far, by the other Engine.
    Purge(usize),
}

fn arb_write() -> impl Strategy<Value = Write> {
    prop_oneof![
        (0..6usize, any::<bool>()).prop_flat_map(|(n, scoped)| {
            arb_episode(n).prop_map(move |episode| Write::Cached { episode, scoped })
        }),
        (0..6usize).prop_flat_map(|n| arb_episode(n).prop_map(|episode| Write::Other { episode })),
        (0..6usize).prop_map(Write::Purge),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The cached graph answers exactly as a new Engine reading the store from scratch, in
    /// every scope, after any mix of writes by the cached Engine, its scoped handle and another
    /// connection (add, replace, purge).
    #[test]
    fn cached_graph_answers_equal_uncached_ones_after_interleaved_writes(
        writes in proptest::collection::vec(arb_write(), 1..8),
    ) {
        let f = Fixture::new();
        let other_store = Arc::new(SqliteStore::open(&f.path, OpenMode::Existing).unwrap());
        let other = Engine::new(other_store, EngineConfig::default());
        let hr = f.scoped("hr");
        let scopes = [Scope::unrestricted(), Scope::domains(["hr"]), Scope::domains(["finance"])];
        let why = lore_engine::Attribution::new(None, "test");
        let mut written: Vec<EpisodeId> = Vec::new();
        // Warm every scope's cache first, so later answers come from refreshed entries.
        for scope in &scopes {
            answers(&f.engine.scoped(scope.clone()));
        }
        for write in writes {
            match write {
                Write::Cached { episode, scoped } => {
                    let episode = Episode::from_json(episode, None).unwrap();
                    written.push(episode.id.clone());
                    let handle = if scoped { &hr } else { &f.engine };
                    // An hr handle refuses a finance episode; the property still holds.
                    let _ = handle.add_episode(episode, true);
                }
                Write::Other { episode } => {
                    let episode = Episode::from_json(episode, None).unwrap();
                    written.push(episode.id.clone());
                    other.add_episode(episode, true).unwrap();
                }
                Write::Purge(n) => {
                    if let Some(id) = written.get(n) {
                        let _ = other.purge_episode(id, &why);
                    }
                }
            }
            let fresh = Engine::new(
                Arc::new(SqliteStore::open(&f.path, OpenMode::Existing).unwrap()),
                EngineConfig::default(),
            );
            for scope in &scopes {
                prop_assert_eq!(
                    answers(&f.engine.scoped(scope.clone())),
                    answers(&fresh.scoped(scope.clone())),
                    "scope {:?}", scope
                );
            }
        }
    }
}
