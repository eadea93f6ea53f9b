//! The embedder's lifecycle through the Engine on a real SQLite file: an adapter is trained from
//! the executions' feedback, judged on held-out queries, activated only when it beats the base
//! embedder and only with an actor, a confirmation and a reason; recall then uses its vectors
//! alone, in this process and in a new one, until a rollback; every switch is audited.

#[path = "curation/support.rs"]
mod support;

use std::sync::Arc;

use lore_core::id::LessonId;
use lore_core::model::{AuditAction, CurationMode, LessonStatus, Outcome, RecordKind};
use lore_core::ports::tuning::{TunePlan, TuneRun, TuneStatus};
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::{Admin, Engine, EngineConfig, NewExecution, RecallQuery};
use serde_json::json;
use support::{Project, SKILL};

const TOPICS: [&str; 4] = [
    "invoice totals rounding currency",
    "login password reset email",
    "shipping address postcode courier",
    "refund chargeback bank transfer",
];

fn admin() -> Admin {
    Admin {
        actor: "ops".into(),
        confirm: true,
        reason: "the adapter ranks helpful lessons higher".into(),
    }
}

/// Four lessons, one per topic, and executions whose feedback says which lesson helped each
/// query: lesson `(k + shift) % 4` for a query about topic `k`. With a shift, the words point at
/// the wrong lesson and only the feedback knows better.
fn feedback(p: &Project, shift: usize, runs: usize) -> Vec<LessonId> {
    let ids: Vec<LessonId> = TOPICS
        .iter()
        .map(|t| {
            p.seed(
                &format!("Check the {t} settings first."),
                LessonStatus::Approved,
            )
            .id
        })
        .collect();
    for i in 0..runs {
        let k = i % 4;
        p.engine
            .record_execution(NewExecution {
                skill: SkillPath::parse(SKILL).unwrap(),
                input: json!({"task": format!("ticket {i}: customer reports {} trouble", TOPICS[k])}),
                output: json!({}),
                outcome: Outcome::Success,
                cost_usd: None,
                latency_ms: None,
                model: None,
                session: None,
                lessons_shown: vec![ids[(k + shift) % 4].clone()],
            })
            .unwrap();
    }
    ids
}

fn recall_embedder(engine: &Engine) -> String {
    engine
        .recall(&RecallQuery {
            text: "customer reports invoice rounding trouble".into(),
            ..RecallQuery::default()
        })
        .unwrap()
        .embedder
        .name
}

#[test]
fn an_adapter_that_beats_the_base_is_activated_and_recall_uses_it_alone() {
    let p = Project::new(CurationMode::Auto);
    feedback(&p, 1, 80);
    let preflight = p.engine.tuning_preflight(&TunePlan::default()).unwrap();
    assert!(preflight.problems.is_empty(), "{preflight:?}");
    assert_eq!(preflight.helpful_pairs, 80);

    let run = p
        .engine
        .start_tuning(TunePlan::default(), Some("ops"))
        .unwrap();
    assert_eq!(run.status, TuneStatus::Finished);
    let eval = run.evaluation.clone().unwrap();
    assert!(eval.better, "{eval:?}");
    assert!(eval.adapter.mrr > eval.base.mrr);
    let checkpoint = run.checkpoint.clone().unwrap();
    let base = recall_embedder(&p.engine);
    assert!(!base.contains("+adapter"), "{base}");

    // Without the guard, nothing changes.
    for bad in [
        Admin {
            confirm: false,
            ..admin()
        },
        Admin {
            actor: " ".into(),
            ..admin()
        },
        Admin {
            reason: String::new(),
            ..admin()
        },
    ] {
        let err = p.engine.activate_checkpoint(&checkpoint, &bad).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err}");
    }
    assert_eq!(p.engine.active_embedder().unwrap().checkpoint, None);

    let switch = p.engine.activate_checkpoint(&checkpoint, &admin()).unwrap();
    assert_eq!(switch.to.as_ref(), Some(&checkpoint));
    assert_eq!(switch.lessons, 4);
    let adapted = recall_embedder(&p.engine);
    assert_eq!(adapted, format!("{base}+adapter:{checkpoint}"));
    assert_eq!(
        p.engine.active_embedder().unwrap().checkpoint,
        Some(checkpoint.clone())
    );
    // Every stored vector is the adapter's: none of the base's is left to mix with.
    let vectors = p.store.vectors(&Scope::unrestricted(), None).unwrap();
    assert_eq!(vectors.len(), 4);
    assert!(
        vectors.iter().all(|v| v.embedder.name == adapted),
        "{vectors:?}"
    );

    // Fitting again would move the vectors under the adapter: refused until a rollback.
    let err = p.engine.reembed(&mut |_, _| {}).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert_eq!(recall_embedder(&p.engine), adapted);

    // A new process over the same file recalls with the adapter.
    let again = Engine::new(p.store.clone() as Arc<dyn Store>, EngineConfig::default());
    assert_eq!(recall_embedder(&again), adapted);

    let back = p.engine.rollback_embedder(None, &admin()).unwrap();
    assert_eq!(back.from, Some(checkpoint.clone()));
    assert_eq!(back.to, None);
    assert_eq!(recall_embedder(&p.engine), base);
    assert_eq!(
        recall_embedder(&again),
        base,
        "the other process follows the switch"
    );

    let audit: Vec<_> = p
        .store
        .audit(None)
        .unwrap()
        .into_iter()
        .filter(|e| e.subject_kind == RecordKind::Embedder)
        .collect();
    assert_eq!(audit.len(), 2, "{audit:#?}");
    assert!(
        audit
            .iter()
            .all(|e| e.action == AuditAction::Administered && e.actor == "ops")
    );
    assert_eq!(audit[0].subject, checkpoint.as_str());
    assert_eq!(audit[1].subject, "base");
    assert_eq!(audit[1].reason, admin().reason);
}

#[test]
fn an_adapter_that_does_not_beat_the_base_is_refused() {
    let p = Project::new(CurationMode::Auto);
    // The words already point at the helpful lesson: the base ranks it first.
    feedback(&p, 0, 80);
    let run = p.engine.start_tuning(TunePlan::default(), None).unwrap();
    let eval = run.evaluation.unwrap();
    assert_eq!(eval.base.hit_at_1, 1.0, "{eval:?}");
    assert!(!eval.better, "{eval:?}");
    let err = p
        .engine
        .activate_checkpoint(&run.checkpoint.unwrap(), &admin())
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(err.to_string().contains("did not beat the base"), "{err}");
    assert_eq!(p.engine.active_embedder().unwrap().checkpoint, None);
    assert!(
        p.store
            .audit(None)
            .unwrap()
            .iter()
            .all(|e| e.subject_kind != RecordKind::Embedder)
    );
}

#[test]
fn a_running_run_is_cancelled_with_a_guard_and_resumed() {
    let p = Project::new(CurationMode::Auto);
    feedback(&p, 1, 40);
    let first = p.engine.start_tuning(TunePlan::default(), None).unwrap();
    let tuning = p.store.tuning().unwrap();
    let running = TuneRun {
        id: lore_core::id::TuneRunId::generate(p.clock_now()),
        status: TuneStatus::Running,
        checkpoint: None,
        evaluation: None,
        ..first
    };
    tuning.put_run(&running).unwrap();
    let err = p
        .engine
        .cancel_tuning(
            None,
            &Admin {
                confirm: false,
                ..admin()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("confirm"), "{err}");
    assert_eq!(
        p.engine.tuning_status(Some(&running.id)).unwrap().status,
        TuneStatus::Running
    );

    let cancelled = p.engine.cancel_tuning(None, &admin()).unwrap();
    assert_eq!(cancelled.as_ref(), Some(&running.id));
    assert_eq!(
        p.engine.tuning_status(None).unwrap().status,
        TuneStatus::Cancelled
    );
    assert_eq!(
        p.engine.cancel_tuning(None, &admin()).unwrap(),
        None,
        "nothing runs now"
    );
    assert!(p.store.audit(Some(running.id.as_str())).unwrap().len() == 1);

    let resumed = p.engine.resume_tuning(&running.id).unwrap();
    assert_eq!(resumed.status, TuneStatus::Finished);
    assert!(resumed.checkpoint.is_some());
    let err = p.engine.resume_tuning(&running.id).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    let (runs, total) = p.engine.tuning_runs(10, 0).unwrap();
    assert_eq!(total, 2);
    assert_eq!(runs.len(), 2);
    assert_eq!(p.engine.checkpoints().unwrap().len(), 2);
}

#[test]
fn bad_plans_and_scoped_handles_are_refused_and_change_nothing() {
    let p = Project::new(CurationMode::Auto);
    feedback(&p, 1, 20);
    let plan = TunePlan {
        held_out: 0.0,
        ..TunePlan::default()
    };
    let err = p.engine.start_tuning(plan, None).unwrap_err();
    assert!(err.to_string().contains("plan.held_out"), "{err}");
    let scoped = p.engine.scoped(Scope {
        agent: Some("a".into()),
        ..Scope::unrestricted()
    });
    assert!(matches!(
        scoped.start_tuning(TunePlan::default(), None),
        Err(Error::Forbidden(_))
    ));
    assert_eq!(p.engine.tuning_runs(10, 0).unwrap().1, 0);
    let unknown = lore_core::id::CheckpointId::parse("CKPT-nope").unwrap();
    assert!(matches!(
        p.engine.activate_checkpoint(&unknown, &admin()),
        Err(Error::NotFound { .. })
    ));
}
