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

/// The weights of the checkpoint a finished run left.
fn weights_of(p: &Project, run: &TuneRun) -> Vec<f32> {
    let id = run
        .checkpoint
        .clone()
        .expect("a finished run leaves a checkpoint");
    p.store
        .tuning()
        .unwrap()
        .checkpoint(&id)
        .unwrap()
        .unwrap()
        .weights
}

#[test]
fn a_run_cancelled_from_another_handle_stops_at_an_epoch_and_resumes_to_the_same_weights() {
    let p = Project::new(CurationMode::Auto);
    feedback(&p, 1, 40);
    let plan = TunePlan {
        epochs: 60,
        ..TunePlan::default()
    };
    let whole = p.engine.start_tuning(plan, None).unwrap();
    assert_eq!(
        (whole.status, whole.epochs_done),
        (TuneStatus::Finished, 60)
    );
    assert!(whole.loss.is_some_and(|l| l >= 0.0), "{whole:?}");

    let trainer = p.engine.clone();
    let training = std::thread::spawn(move || trainer.start_tuning(plan, None));
    let running = loop {
        if let Ok(run) = p.engine.tuning_status(None)
            && run.id != whole.id
            && run.epochs_done >= 2
        {
            break run;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    assert_eq!(running.status, TuneStatus::Running, "{running:?}");
    assert!(running.heartbeat_at.is_some() && running.loss.is_some());
    p.engine.cancel_tuning(Some(&running.id), &admin()).unwrap();
    let stopped = training.join().unwrap().unwrap();
    assert_eq!(stopped.status, TuneStatus::Cancelled, "{stopped:?}");
    assert!(stopped.epochs_done < 60, "it stopped at an epoch boundary");
    let saved = p.store.tuning().unwrap().progress(&stopped.id).unwrap();
    assert_eq!(saved.map(|(e, _)| e), Some(stopped.epochs_done));

    let resumed = p.engine.resume_tuning(&stopped.id).unwrap();
    assert_eq!(resumed.status, TuneStatus::Finished);
    assert_eq!(weights_of(&p, &resumed), weights_of(&p, &whole));
}

#[test]
fn a_run_whose_process_died_shows_interrupted_and_resumes_from_its_saved_epoch() {
    let p = Project::new(CurationMode::Auto);
    feedback(&p, 1, 40);
    let plan = TunePlan::default();
    let whole = p.engine.start_tuning(plan, None).unwrap();

    // What a process that died after its sixth epoch leaves behind: the run, still marked
    // running, and the weights of that epoch.
    let set = p.engine.tuning_pairs().unwrap();
    let mut after_six = None;
    lore_recall::adapter::train(&set, &plan, "x", None, &mut |e, a| {
        after_six = Some((e.done, a.weights.clone()));
        e.done < 6
    })
    .unwrap();
    let (six, weights) = after_six.unwrap();
    let died = TuneRun {
        id: lore_core::id::TuneRunId::generate(p.clock_now()),
        status: TuneStatus::Running,
        epochs_done: six,
        loss: Some(0.1),
        heartbeat_at: Some(p.clock_now()),
        checkpoint: None,
        evaluation: None,
        finished_at: None,
        ..whole.clone()
    };
    let tuning = p.store.tuning().unwrap();
    tuning.put_run(&died).unwrap();
    assert!(tuning.put_progress(&died, &weights).unwrap());
    let err = p.engine.resume_tuning(&died.id).unwrap_err();
    assert!(
        matches!(err, Error::Conflict(_)),
        "a live run is not resumed: {err}"
    );

    p.clock.advance(chrono::TimeDelta::seconds(
        lore_core::ports::tuning::STALE_AFTER_SECS + 1,
    ));
    let seen = p.engine.tuning_status(Some(&died.id)).unwrap();
    assert_eq!(seen.status, TuneStatus::Interrupted);
    assert_eq!(p.engine.cancel_tuning(None, &admin()).unwrap(), None);
    let resumed = p.engine.resume_tuning(&died.id).unwrap();
    assert_eq!(resumed.status, TuneStatus::Finished);
    assert_eq!(weights_of(&p, &resumed), weights_of(&p, &whole));

    // It went on from the saved weights, not from the start: other saved weights, another end.
    let mut bent = weights.clone();
    bent[0] += 0.5;
    let other = TuneRun {
        id: lore_core::id::TuneRunId::generate(p.clock_now()),
        heartbeat_at: Some(p.clock_now()),
        ..died
    };
    tuning.put_run(&other).unwrap();
    assert!(tuning.put_progress(&other, &bent).unwrap());
    p.clock.advance(chrono::TimeDelta::seconds(
        lore_core::ports::tuning::STALE_AFTER_SECS + 1,
    ));
    let from_bent = p.engine.resume_tuning(&other.id).unwrap();
    assert_ne!(weights_of(&p, &from_bent), weights_of(&p, &whole));
}
