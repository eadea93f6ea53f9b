//! The embedder's tuning, kept as in SQLite: runs and checkpoints as JSON bodies, a
//! checkpoint's matrix as `real[]` (f32 bit for bit), and the active checkpoint in a one-row
//! table; every operator's change is written with its audit entry in one transaction, which
//! announces it on the change channel like every audited write.

use deadpool_postgres::GenericClient;
use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::model::AuditEntry;
use lore_core::ports::tuning::{Checkpoint, TuneRun, TuningStore, same_attempt, unchanged_since};
use lore_core::{Error, Result};
use tracing::instrument;

use crate::connect::Fail;
use crate::knowledge::taken;
use crate::rows::{self, Counter, Row, Writer, bodies, count_query, nanos, to_i64, to_json};
use crate::store::PostgresStore;

/// A run as written: its ID, status, start and body.
type RunRow = (String, &'static str, i64, String);

fn run_row(run: &TuneRun) -> Result<RunRow> {
    Ok((
        run.id.as_str().to_owned(),
        run.status.as_str(),
        nanos(run.started_at),
        to_json(run)?,
    ))
}

async fn put(db: &impl GenericClient, (id, status, started, body): &RunRow) -> Result<(), Fail> {
    let stmt = db
        .prepare_cached(
            "INSERT INTO embedder_runs (id, status, started_at, body) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
             started_at = excluded.started_at, body = excluded.body",
        )
        .await?;
    db.execute(&stmt, &[id, status, started, body]).await?;
    Ok(())
}

async fn set_active(db: &impl GenericClient, checkpoint: Option<&str>) -> Result<(), Fail> {
    if let Some(id) = checkpoint {
        let known = db
            .query_opt("SELECT 1 FROM embedder_checkpoints WHERE id = $1", &[&id])
            .await?;
        if known.is_none() {
            return Err(Fail::Lore(Error::not_found("checkpoint", id)));
        }
    }
    db.execute(
        "INSERT INTO embedder_active (id, checkpoint) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET checkpoint = excluded.checkpoint",
        &[&checkpoint],
    )
    .await?;
    Ok(())
}

impl TuningStore for PostgresStore {
    #[instrument(skip_all, fields(run = %run.id))]
    fn put_run(&self, run: &TuneRun) -> Result<()> {
        let row = run_row(run)?;
        self.run(move |pool| async move {
            let client = pool.get().await?;
            put(&client, &row).await
        })
    }

    fn run(&self, id: &TuneRunId) -> Result<Option<TuneRun>> {
        let id = id.as_str().to_owned();
        PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            let found: Vec<TuneRun> = bodies(
                &client,
                "SELECT body FROM embedder_runs WHERE id = $1",
                &[&id],
            )
            .await?;
            Ok(found.into_iter().next())
        })
    }

    fn runs(&self, limit: usize, offset: usize) -> Result<(Vec<TuneRun>, usize)> {
        let (limit, offset) = (to_i64(limit), to_i64(offset));
        PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            let runs = bodies(
                &client,
                "SELECT body FROM embedder_runs ORDER BY seq DESC LIMIT $1 OFFSET $2",
                &[&limit, &offset],
            )
            .await?;
            let total = count_query(&client, "SELECT COUNT(*) FROM embedder_runs", &[]).await?;
            Ok((runs, usize::try_from(total).unwrap_or(usize::MAX)))
        })
    }

    #[instrument(skip_all, fields(run = %run.id, checkpoint = %checkpoint.id))]
    fn finish_run(&self, run: &TuneRun, checkpoint: &Checkpoint) -> Result<()> {
        let row = run_row(run)?;
        let body = to_json(&Checkpoint {
            weights: Vec::new(),
            ..checkpoint.clone()
        })?;
        let (id, run_id, weights) = (
            checkpoint.id.as_str().to_owned(),
            checkpoint.run.as_str().to_owned(),
            checkpoint.weights.clone(),
        );
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            put(&tx, &row).await?;
            tx.execute(
                "DELETE FROM embedder_progress WHERE run_id = $1",
                &[&run_id],
            )
            .await?;
            tx.execute(
                "INSERT INTO embedder_checkpoints (id, run_id, body, weights) \
                 VALUES ($1, $2, $3, $4)",
                &[&id, &run_id, &body, &weights],
            )
            .await
            .map_err(|e| taken(e, "checkpoint", &id))?;
            tx.commit().await?;
            Ok(())
        })
    }

    #[instrument(skip_all, fields(run = %run.id, epoch = run.epochs_done))]
    fn put_progress(&self, run: &TuneRun, weights: &[f32]) -> Result<bool> {
        let row = run_row(run)?;
        let (id, epoch, weights) = (row.0.clone(), to_i64(run.epochs_done), weights.to_vec());
        let run = run.clone();
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            // The row lock orders this write against a cancellation committed by another
            // process: whichever comes second sees the first, so a cancel is never overwritten.
            if !locked(&tx, &id)
                .await?
                .is_some_and(|s| same_attempt(&s, &run))
            {
                return Ok(false);
            }
            put(&tx, &row).await?;
            tx.execute(
                "INSERT INTO embedder_progress (run_id, epoch, weights) VALUES ($1, $2, $3) \
                 ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, \
                 weights = excluded.weights",
                &[&id, &epoch, &weights],
            )
            .await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    fn progress(&self, id: &TuneRunId) -> Result<Option<(usize, Vec<f32>)>> {
        let id = id.as_str().to_owned();
        PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            let row = client
                .query_opt(
                    "SELECT epoch, weights FROM embedder_progress WHERE run_id = $1",
                    &[&id],
                )
                .await?;
            Ok(row.map(|r| {
                let epoch: i64 = r.get(0);
                (usize::try_from(epoch).unwrap_or(0), r.get(1))
            }))
        })
    }

    fn checkpoint(&self, id: &CheckpointId) -> Result<Option<Checkpoint>> {
        let id = id.as_str().to_owned();
        PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            let Some(row) = client
                .query_opt(
                    "SELECT body, weights FROM embedder_checkpoints WHERE id = $1",
                    &[&id],
                )
                .await?
            else {
                return Ok(None);
            };
            let mut checkpoint: Checkpoint = rows::from_json(row.get::<_, &str>(0))?;
            checkpoint.weights = row.get(1);
            Ok(Some(checkpoint))
        })
    }

    fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            bodies(
                &client,
                "SELECT body FROM embedder_checkpoints ORDER BY seq DESC",
                &[],
            )
            .await
        })
    }

    fn active_checkpoint(&self) -> Result<Option<CheckpointId>> {
        let raw: Option<String> = PostgresStore::run(self, move |pool| async move {
            let client = pool.get().await?;
            let row = client
                .query_opt("SELECT checkpoint FROM embedder_active WHERE id = 1", &[])
                .await?;
            Ok(row.and_then(|r| r.get(0)))
        })?;
        raw.map(|raw| CheckpointId::parse(&raw)).transpose()
    }

    #[instrument(skip_all)]
    fn set_active_checkpoint(
        &self,
        checkpoint: Option<&CheckpointId>,
        audit: &AuditEntry,
    ) -> Result<()> {
        let checkpoint = checkpoint.map(|c| c.as_str().to_owned());
        let audit = Row::audit(audit)?;
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit]).await?;
            set_active(&w.tx, checkpoint.as_deref()).await?;
            rows::insert(&mut w, &audit).await?;
            w.commit().await
        })
    }

    #[instrument(skip_all, fields(run = %run.id))]
    fn claim_run(&self, run: &TuneRun, seen: &TuneRun) -> Result<bool> {
        let row = run_row(run)?;
        let seen = seen.clone();
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let tx = client.transaction().await?;
            // The row lock makes the second of two resumes read the first one's claim.
            if !locked(&tx, &row.0)
                .await?
                .is_some_and(|s| unchanged_since(&s, &seen))
            {
                return Ok(false);
            }
            put(&tx, &row).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    #[instrument(skip_all, fields(run = %run.id))]
    fn cancel_run(&self, run: &TuneRun, audit: &AuditEntry) -> Result<()> {
        let row = run_row(run)?;
        let audit = Row::audit(audit)?;
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit]).await?;
            put(&w.tx, &row).await?;
            rows::insert(&mut w, &audit).await?;
            w.commit().await
        })
    }

    fn delete_checkpoint(&self, id: &CheckpointId, audit: &AuditEntry) -> Result<()> {
        let id = id.as_str().to_owned();
        let audit = Row::audit(audit)?;
        PostgresStore::run(self, move |pool| async move {
            let mut client = pool.get().await?;
            let mut w = Writer::begin(&mut client, [Counter::Audit]).await?;
            // The row lock holds off an activation until this transaction ends.
            let active =
                w.tx.query_opt(
                    "SELECT checkpoint FROM embedder_active WHERE id = 1 FOR UPDATE",
                    &[],
                )
                .await?
                .and_then(|row| row.get::<_, Option<String>>(0));
            if active.as_deref() == Some(id.as_str()) {
                return Err(Fail::Lore(Error::Conflict(format!(
                    "checkpoint {id} is the one recall uses; roll back to another checkpoint \
                     or to the base embedder first"
                ))));
            }
            let deleted =
                w.tx.execute("DELETE FROM embedder_checkpoints WHERE id = $1", &[&id])
                    .await?;
            if deleted == 0 {
                return Err(Fail::Lore(Error::not_found("checkpoint", &id)));
            }
            rows::insert(&mut w, &audit).await?;
            w.commit().await
        })
    }
}

/// The stored run `id`, its row locked until `tx` ends.
async fn locked(tx: &impl GenericClient, id: &str) -> Result<Option<TuneRun>, Fail> {
    let found: Vec<TuneRun> = bodies(
        tx,
        "SELECT body FROM embedder_runs WHERE id = $1 FOR UPDATE",
        &[&id],
    )
    .await?;
    Ok(found.into_iter().next())
}
