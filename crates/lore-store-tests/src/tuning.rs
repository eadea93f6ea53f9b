//! The embedder's tuning: runs, checkpoints and the active checkpoint, or the typed "not
//! supported" from a store without them.

use chrono::{TimeZone, Utc};
use lore_core::Error;
use lore_core::id::{AuditId, CheckpointId};
use lore_core::model::{AuditAction, AuditEntry, RecordKind};
use lore_core::ports::embed::EmbedderId;
use lore_core::ports::store::Store;
use lore_core::ports::tuning::{Checkpoint, Evaluation, TunePlan, TuneRun, TuneStatus};

fn entry(subject: &str) -> AuditEntry {
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0).unwrap();
    AuditEntry {
        id: AuditId::generate(at),
        subject_kind: RecordKind::Embedder,
        subject: subject.to_owned(),
        action: AuditAction::Administered,
        from: None,
        to: None,
        actor: "ops".into(),
        at,
        reason: "conformance".into(),
        evidence: serde_json::Value::Null,
    }
}

/// A run is stored and changed by ID; a finished run's checkpoint reads back with its weights
/// bit for bit (and without them in listings); the active checkpoint is set and cleared with an
/// audit entry, and an unknown one is refused with nothing written; a checkpoint is deleted
/// with an audit entry, never while active. A store without tuning says so with
/// [`Error::Unsupported`].
pub fn tuning_runs_and_checkpoints_roundtrip(store: &dyn Store) {
    let tuning = match store.tuning() {
        Ok(tuning) => tuning,
        Err(Error::Unsupported(why)) => {
            assert!(why.contains("tuning"), "{why}");
            return;
        }
        Err(other) => panic!("expected a tuning store or Unsupported: {other}"),
    };
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 9, 0, 0).unwrap();
    let base = EmbedderId {
        name: "test-embedder".into(),
        dim: 2,
    };
    let mut run = TuneRun::started(TunePlan::default(), base.clone(), "ops".into(), at);
    tuning.put_run(&run).unwrap();
    assert_eq!(tuning.run(&run.id).unwrap().as_ref(), Some(&run));
    let checkpoint = Checkpoint {
        id: CheckpointId::generate(at),
        run: run.id.clone(),
        base,
        created_at: at,
        evaluation: Evaluation::default(),
        weights: vec![1.0, -0.25, f32::MIN_POSITIVE, 0.1],
    };
    run.status = TuneStatus::Finished;
    run.checkpoint = Some(checkpoint.id.clone());
    tuning.finish_run(&run, &checkpoint).unwrap();
    assert_eq!(
        tuning.run(&run.id).unwrap().unwrap().status,
        TuneStatus::Finished
    );
    assert_eq!(
        tuning.checkpoint(&checkpoint.id).unwrap().as_ref(),
        Some(&checkpoint)
    );
    let listed = tuning.checkpoints().unwrap();
    let mine = listed.iter().find(|c| c.id == checkpoint.id).unwrap();
    assert!(mine.weights.is_empty(), "listings leave the weights out");
    assert!(matches!(
        tuning.finish_run(&run, &checkpoint),
        Err(Error::Conflict(_))
    ));
    let (runs, total) = tuning.runs(1000, 0).unwrap();
    assert!(runs.iter().any(|r| r.id == run.id) && total >= 1);

    let unknown = CheckpointId::parse("CKPT-unknown").unwrap();
    let before = tuning.active_checkpoint().unwrap();
    assert!(matches!(
        tuning.set_active_checkpoint(Some(&unknown), &entry("CKPT-unknown")),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(tuning.active_checkpoint().unwrap(), before);
    assert!(store.audit(Some("CKPT-unknown")).unwrap().is_empty());
    tuning
        .set_active_checkpoint(Some(&checkpoint.id), &entry(checkpoint.id.as_str()))
        .unwrap();
    assert_eq!(
        tuning.active_checkpoint().unwrap(),
        Some(checkpoint.id.clone())
    );
    assert_eq!(store.audit(Some(checkpoint.id.as_str())).unwrap().len(), 1);
    // The checkpoint recall applies is never deleted, and the refusal writes nothing.
    assert!(matches!(
        tuning.delete_checkpoint(&checkpoint.id, &entry(checkpoint.id.as_str())),
        Err(Error::Conflict(_))
    ));
    assert_eq!(store.audit(Some(checkpoint.id.as_str())).unwrap().len(), 1);
    assert!(tuning.checkpoint(&checkpoint.id).unwrap().is_some());
    tuning.set_active_checkpoint(None, &entry("base")).unwrap();
    assert_eq!(tuning.active_checkpoint().unwrap(), None);

    tuning
        .delete_checkpoint(&checkpoint.id, &entry(checkpoint.id.as_str()))
        .unwrap();
    assert_eq!(tuning.checkpoint(&checkpoint.id).unwrap(), None);
    assert!(
        tuning
            .checkpoints()
            .unwrap()
            .iter()
            .all(|c| c.id != checkpoint.id)
    );
    assert_eq!(store.audit(Some(checkpoint.id.as_str())).unwrap().len(), 2);
    assert_eq!(
        tuning.run(&run.id).unwrap().unwrap().checkpoint,
        Some(checkpoint.id.clone()),
        "the run keeps its record of what it made"
    );
    assert!(matches!(
        tuning.delete_checkpoint(&checkpoint.id, &entry(checkpoint.id.as_str())),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(store.audit(Some(checkpoint.id.as_str())).unwrap().len(), 2);
}

/// A running run's progress is recorded with its weights after each epoch, and a run an
/// operator cancelled meanwhile is left cancelled: the progress is refused, nothing written. A
/// store may keep no weights (a resume then trains from the first epoch), but the ones it keeps
/// are those of the last epoch recorded.
pub fn tuning_progress_never_overwrites_a_cancellation(store: &dyn Store) {
    let Ok(tuning) = store.tuning() else {
        return;
    };
    let at = Utc.with_ymd_and_hms(2026, 11, 24, 10, 0, 0).unwrap();
    let base = EmbedderId {
        name: "test-embedder".into(),
        dim: 2,
    };
    let mut run = TuneRun::started(TunePlan::default(), base, "ops".into(), at);
    tuning.put_run(&run).unwrap();
    for epoch in 1..=2 {
        run.epochs_done = epoch;
        run.loss = Some(0.5 / epoch as f64);
        run.heartbeat_at = Some(at + chrono::TimeDelta::seconds(epoch as i64));
        let weights = vec![epoch as f32, 0.0, 0.0, 1.0];
        assert!(tuning.put_progress(&run, &weights).unwrap());
        assert_eq!(tuning.run(&run.id).unwrap().as_ref(), Some(&run));
        let kept = tuning.progress(&run.id).unwrap();
        assert_eq!(
            kept,
            Some((epoch, weights)),
            "every store keeps a run's progress"
        );
    }
    let mut cancelled = run.clone();
    cancelled.status = TuneStatus::Cancelled;
    cancelled.error = Some("cancelled: test".into());
    let entry = entry(run.id.as_str());
    tuning.cancel_run(&cancelled, &entry).unwrap();
    run.epochs_done = 3;
    assert!(!tuning.put_progress(&run, &[3.0, 0.0, 0.0, 1.0]).unwrap());
    assert_eq!(tuning.run(&run.id).unwrap().as_ref(), Some(&cancelled));
    let (epoch, _) = tuning
        .progress(&run.id)
        .unwrap()
        .expect("the last epoch's weights");
    assert_eq!(epoch, 2, "the refused epoch left no weights");
}

/// Of two callers resuming the same run from what they both read, one claims it and the other
/// is refused with nothing written; the attempt the claim replaced can no longer record
/// progress (its process went silent and came back), so two processes never train one run.
pub fn a_resume_claims_a_run_once(store: &dyn Store) {
    let Ok(tuning) = store.tuning() else {
        return;
    };
    let at = Utc.with_ymd_and_hms(2026, 11, 25, 1, 0, 0).unwrap();
    let base = EmbedderId {
        name: "test-embedder".into(),
        dim: 2,
    };
    let mut first = TuneRun::started(TunePlan::default(), base, "ops".into(), at);
    tuning.put_run(&first).unwrap();
    first.epochs_done = 1;
    first.heartbeat_at = Some(at + chrono::TimeDelta::seconds(1));
    assert!(tuning.put_progress(&first, &[1.0, 0.0, 0.0, 1.0]).unwrap());
    let seen = tuning.run(&first.id).unwrap().expect("the stored run");

    let attempt = |minutes: i64| {
        let mut run = seen.clone();
        run.started_at = at + chrono::TimeDelta::minutes(minutes);
        run.heartbeat_at = Some(run.started_at);
        run
    };
    let (a, b) = (attempt(5), attempt(6));
    assert!(
        tuning.claim_run(&a, &seen).unwrap(),
        "the first resume claims"
    );
    assert!(
        !tuning.claim_run(&b, &seen).unwrap(),
        "the second resume read a run that has changed since"
    );
    assert_eq!(tuning.run(&first.id).unwrap().as_ref(), Some(&a));

    first.epochs_done = 2;
    first.heartbeat_at = Some(at + chrono::TimeDelta::minutes(7));
    assert!(
        !tuning.put_progress(&first, &[2.0, 0.0, 0.0, 1.0]).unwrap(),
        "the superseded attempt records nothing"
    );
    assert_eq!(tuning.run(&first.id).unwrap().as_ref(), Some(&a));
    let kept = tuning.progress(&first.id).unwrap().map(|(epoch, _)| epoch);
    assert!(kept.is_none_or(|e| e == 1), "{kept:?}");

    let mut a = a;
    a.epochs_done = 2;
    assert!(tuning.put_progress(&a, &[2.0, 0.0, 0.0, 1.0]).unwrap());
}
