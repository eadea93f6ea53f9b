//! PostgreSQL beside SQLite through the same Engine: recording throughput (one writer and four)
//! and recall latency over 10,000 approved lessons. A measurement, not a check: run it with
//! `cargo test --release -p lore-postgres --test bench -- --ignored --nocapture`
//! (`LORE_BENCH_LESSONS` changes the corpus size).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use lore_core::SkillPath;
use lore_core::id::LessonId;
use lore_core::model::{AuthorKind, LessonStatus, Outcome};
use lore_core::ports::store::{OnDuplicate, Record, Store};
use lore_engine::{Engine, EngineConfig, NewCorrection, NewExecution, RecallQuery};
use lore_postgres::testing::{TestStore, test_url};
use lore_sqlite::{OpenMode, SqliteStore};
use serde_json::json;

const WORDS: &[&str] = &[
    "invoice",
    "currency",
    "refund",
    "ticket",
    "deadline",
    "approver",
    "receipt",
    "discount",
    "shipping",
    "signature",
    "language",
    "rounding",
    "vendor",
    "contract",
    "budget",
    "audit",
    "tax",
    "ledger",
    "payment",
    "customer",
    "order",
    "warehouse",
    "schema",
    "timezone",
];

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn execution(skill: &SkillPath, i: usize) -> NewExecution {
    NewExecution {
        skill: skill.clone(),
        input: json!({"ticket": i, "text": WORDS[i % WORDS.len()]}),
        output: json!({"ok": !i.is_multiple_of(3)}),
        outcome: Outcome::Accepted,
        cost_usd: None,
        latency_ms: None,
        model: None,
        session: None,
        lessons_shown: Vec::new(),
    }
}

fn measure(name: &str, store: Arc<dyn Store>, lessons: usize) {
    let engine = Engine::new(Arc::clone(&store), EngineConfig::default());
    let skill = SkillPath::parse("bench/records").unwrap();

    // One writer, then four at once.
    let n = 500;
    let mut took = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        engine.record_execution(execution(&skill, i)).unwrap();
        took.push(t.elapsed());
    }
    let one = n as f64 / started.elapsed().as_secs_f64();
    took.sort();
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..4 {
            let (engine, skill) = (&engine, &skill);
            s.spawn(move || {
                for i in 0..n / 4 {
                    engine
                        .record_execution(execution(skill, w * n + i))
                        .unwrap();
                }
            });
        }
    });
    let four = n as f64 / started.elapsed().as_secs_f64();

    // A real lesson as the template, then `lessons` approved ones written in batches.
    let skill = SkillPath::parse("bench/lessons").unwrap();
    let x = engine.record_execution(execution(&skill, 0)).unwrap();
    let made = engine
        .correct(NewCorrection {
            skill: skill.clone(),
            execution_id: x.id,
            text: "Always state the currency of the invoice total.".into(),
            author_kind: AuthorKind::Human,
            author: None,
        })
        .unwrap();
    let template = made.lesson.unwrap();
    let started = Instant::now();
    let now = Utc::now();
    for chunk in (0..lessons).collect::<Vec<_>>().chunks(1000) {
        let batch: Vec<Record> = chunk
            .iter()
            .map(|&i| {
                let mut l = template.clone();
                let at = now + TimeDelta::microseconds(i as i64);
                l.id = LessonId::generate(at);
                let (a, b, c) = (
                    WORDS[i % WORDS.len()],
                    WORDS[(i / 7) % WORDS.len()],
                    WORDS[(i / 49) % WORDS.len()],
                );
                l.rule = format!("Always check the {a} and the {b} of each {c} (case {i}).");
                l.applies_when = format!("When a {c} mentions {a}.");
                l.tiers.summary = l.rule.clone();
                l.status = LessonStatus::Approved;
                l.created_at = at;
                l.updated_at = at;
                Record::Lesson(l)
            })
            .collect();
        store.write(&batch, OnDuplicate::Fail).unwrap();
    }
    let write_s = started.elapsed().as_secs_f64();

    let query = |i: usize| RecallQuery {
        text: format!(
            "check the {} of the {}",
            WORDS[(i * 5) % WORDS.len()],
            WORDS[(i * 11) % WORDS.len()]
        ),
        skill: Some(skill.clone()),
        ..RecallQuery::default()
    };
    let started = Instant::now();
    engine.recall(&query(0)).unwrap();
    let cold = started.elapsed();
    let mut recalls = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        let r = engine.recall(&query(i)).unwrap();
        recalls.push(t.elapsed());
        assert!(!r.lessons.is_empty());
    }
    recalls.sort();
    eprintln!(
        "{name:<8} record: {one:>6.0}/s one writer (p50 {:.2} ms, p99 {:.2} ms), {four:>6.0}/s \
         four | {lessons} lessons written in {write_s:.1} s | recall: first {:.0} ms (index \
         built), then p50 {:.2} ms, p99 {:.2} ms",
        quantile(&took, 0.5),
        quantile(&took, 0.99),
        cold.as_secs_f64() * 1e3,
        quantile(&recalls, 0.5),
        quantile(&recalls, 0.99),
    );
}

#[test]
#[ignore = "a measurement: run it alone, in release"]
fn postgres_beside_sqlite() {
    let Some(url) = test_url() else {
        return;
    };
    let lessons = std::env::var("LORE_BENCH_LESSONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap();
    measure("sqlite", Arc::new(sqlite), lessons);
    let pg = TestStore::new(&url).unwrap();
    // The engine holds the store; the guard (which drops the schema) outlives it.
    let store: Arc<dyn Store> = Arc::new(
        lore_postgres::PostgresStore::open({
            let mut o = lore_postgres::PostgresOptions::new(&url);
            o.schema = Some(pg.schema().to_owned());
            o
        })
        .unwrap(),
    );
    measure("postgres", store, lessons);
}
