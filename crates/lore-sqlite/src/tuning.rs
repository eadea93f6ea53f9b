//! The embedder's tuning in SQLite: runs and checkpoints as JSON bodies, a checkpoint's matrix
//! as a little-endian f32 blob, and the active checkpoint in a one-row table; every operator's
//! change is written with its audit entry in one transaction.

use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::model::AuditEntry;
use lore_core::ports::tuning::{Checkpoint, TuneRun, TuningStore, same_attempt, unchanged_since};
use lore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use crate::Db;
use crate::rows::{self, Row};
use crate::store::SqliteStore;

fn put(tx: &Connection, run: &TuneRun) -> Result<()> {
    let body = rows::to_json(run)?;
    tx.prepare_cached(
        "INSERT INTO embedder_runs (id, status, started_at, body) VALUES (?, ?, ?, ?) \
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
         started_at = excluded.started_at, body = excluded.body",
    )
    .and_then(|mut s| {
        s.execute(params![
            run.id.as_str(),
            run.status.as_str(),
            rows::timestamp(run.started_at),
            body
        ])
    })
    .db()?;
    Ok(())
}

fn blob(weights: &[f32]) -> Vec<u8> {
    weights.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn floats(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::Incompatible(
            "a checkpoint's weights are not whole f32 values".into(),
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn set_active(tx: &Transaction<'_>, checkpoint: Option<&CheckpointId>) -> Result<()> {
    if let Some(id) = checkpoint {
        let known: Option<i64> = tx
            .prepare_cached("SELECT seq FROM embedder_checkpoints WHERE id = ?")
            .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
            .db()?;
        if known.is_none() {
            return Err(Error::not_found("checkpoint", id));
        }
    }
    tx.prepare_cached(
        "INSERT INTO embedder_active (id, checkpoint) VALUES (1, ?) \
         ON CONFLICT (id) DO UPDATE SET checkpoint = excluded.checkpoint",
    )
    .and_then(|mut s| s.execute([checkpoint.map(CheckpointId::as_str)]))
    .db()?;
    Ok(())
}

impl TuningStore for SqliteStore {
    fn put_run(&self, run: &TuneRun) -> Result<()> {
        put(&self.conn(), run)
    }

    fn run(&self, id: &TuneRunId) -> Result<Option<TuneRun>> {
        let body: Option<String> = self
            .conn()
            .prepare_cached("SELECT body FROM embedder_runs WHERE id = ?")
            .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
            .db()?;
        body.map(|b| rows::from_json(&b)).transpose()
    }

    fn runs(&self, limit: usize, offset: usize) -> Result<(Vec<TuneRun>, usize)> {
        let conn = self.conn();
        let bodies: Vec<String> = conn
            .prepare_cached("SELECT body FROM embedder_runs ORDER BY seq DESC LIMIT ? OFFSET ?")
            .and_then(|mut s| {
                s.query_map(
                    params![
                        i64::try_from(limit).unwrap_or(i64::MAX),
                        i64::try_from(offset).unwrap_or(i64::MAX)
                    ],
                    |r| r.get(0),
                )?
                .collect()
            })
            .db()?;
        let total: i64 = conn
            .prepare_cached("SELECT COUNT(*) FROM embedder_runs")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .db()?;
        let runs = bodies
            .iter()
            .map(|b| rows::from_json(b))
            .collect::<Result<_>>()?;
        Ok((runs, usize::try_from(total).unwrap_or(0)))
    }

    fn finish_run(&self, run: &TuneRun, checkpoint: &Checkpoint) -> Result<()> {
        let body = rows::to_json(&Checkpoint {
            weights: Vec::new(),
            ..checkpoint.clone()
        })?;
        let weights = blob(&checkpoint.weights);
        self.in_transaction(|tx| {
            put(tx, run)?;
            tx.prepare_cached("DELETE FROM embedder_progress WHERE run_id = ?")
                .and_then(|mut s| s.execute([run.id.as_str()]))
                .db()?;
            tx.prepare_cached(
                "INSERT INTO embedder_checkpoints (id, run_id, body, weights) VALUES (?, ?, ?, ?)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    checkpoint.id.as_str(),
                    checkpoint.run.as_str(),
                    body,
                    weights
                ])
            })
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    Error::Conflict(format!("checkpoint {} already exists", checkpoint.id))
                }
                other => crate::db_error(other),
            })?;
            Ok(())
        })
    }

    fn checkpoint(&self, id: &CheckpointId) -> Result<Option<Checkpoint>> {
        let row: Option<(String, Vec<u8>)> = self
            .conn()
            .prepare_cached("SELECT body, weights FROM embedder_checkpoints WHERE id = ?")
            .and_then(|mut s| {
                s.query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .db()?;
        let Some((body, weights)) = row else {
            return Ok(None);
        };
        let mut checkpoint: Checkpoint = rows::from_json(&body)?;
        checkpoint.weights = floats(&weights)?;
        Ok(Some(checkpoint))
    }

    fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        let bodies: Vec<String> = self
            .conn()
            .prepare_cached("SELECT body FROM embedder_checkpoints ORDER BY seq DESC")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .db()?;
        bodies.iter().map(|b| rows::from_json(b)).collect()
    }

    fn active_checkpoint(&self) -> Result<Option<CheckpointId>> {
        let id: Option<Option<String>> = self
            .conn()
            .prepare_cached("SELECT checkpoint FROM embedder_active WHERE id = 1")
            .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
            .db()?;
        id.flatten()
            .map(|raw| CheckpointId::parse(&raw))
            .transpose()
    }

    fn set_active_checkpoint(
        &self,
        checkpoint: Option<&CheckpointId>,
        audit: &AuditEntry,
    ) -> Result<()> {
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| {
            set_active(tx, checkpoint)?;
            rows::insert(tx, &audit)
        })
    }

    fn put_progress(&self, run: &TuneRun, weights: &[f32]) -> Result<bool> {
        let weights = blob(weights);
        self.in_transaction(|tx| {
            // Read and written in one write transaction: a cancellation committed by another
            // process either comes first (and is kept) or after.
            if !stored(tx, &run.id)?.is_some_and(|s| same_attempt(&s, run)) {
                return Ok(false);
            }
            put(tx, run)?;
            tx.prepare_cached(
                "INSERT INTO embedder_progress (run_id, epoch, weights) VALUES (?, ?, ?) \
                 ON CONFLICT (run_id) DO UPDATE SET epoch = excluded.epoch, \
                 weights = excluded.weights",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run.id.as_str(),
                    i64::try_from(run.epochs_done).unwrap_or(i64::MAX),
                    weights
                ])
            })
            .db()?;
            Ok(true)
        })
    }

    fn progress(&self, id: &TuneRunId) -> Result<Option<(usize, Vec<f32>)>> {
        let row: Option<(i64, Vec<u8>)> = self
            .conn()
            .prepare_cached("SELECT epoch, weights FROM embedder_progress WHERE run_id = ?")
            .and_then(|mut s| {
                s.query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .db()?;
        row.map(|(epoch, weights)| Ok((usize::try_from(epoch).unwrap_or(0), floats(&weights)?)))
            .transpose()
    }

    fn claim_run(&self, run: &TuneRun, seen: &TuneRun) -> Result<bool> {
        // One write transaction: of two resumes, the second reads the first's claim.
        self.in_transaction(|tx| {
            if !stored(tx, &run.id)?.is_some_and(|s| unchanged_since(&s, seen)) {
                return Ok(false);
            }
            put(tx, run)?;
            Ok(true)
        })
    }

    fn cancel_run(&self, run: &TuneRun, audit: &AuditEntry) -> Result<()> {
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| {
            put(tx, run)?;
            rows::insert(tx, &audit)
        })
    }

    fn delete_checkpoint(&self, id: &CheckpointId, audit: &AuditEntry) -> Result<()> {
        let audit = Row::audit(audit)?;
        self.in_transaction(|tx| {
            let active: Option<Option<String>> = tx
                .prepare_cached("SELECT checkpoint FROM embedder_active WHERE id = 1")
                .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
                .db()?;
            if active.flatten().as_deref() == Some(id.as_str()) {
                return Err(Error::Conflict(format!(
                    "checkpoint {id} is the one recall uses; roll back to another checkpoint \
                     or to the base embedder first"
                )));
            }
            let deleted = tx
                .prepare_cached("DELETE FROM embedder_checkpoints WHERE id = ?")
                .and_then(|mut s| s.execute([id.as_str()]))
                .db()?;
            if deleted == 0 {
                return Err(Error::not_found("checkpoint", id));
            }
            rows::insert(tx, &audit)
        })
    }
}

/// The stored run `id`, read inside `tx`.
fn stored(tx: &Transaction<'_>, id: &TuneRunId) -> Result<Option<TuneRun>> {
    let body: Option<String> = tx
        .prepare_cached("SELECT body FROM embedder_runs WHERE id = ?")
        .and_then(|mut s| s.query_row([id.as_str()], |r| r.get(0)).optional())
        .db()?;
    body.map(|b| rows::from_json(&b)).transpose()
}
