//! The embedder's lifecycle (seed 002's fine-tune): preflight, start, resume, status, cancel,
//! runs, the active embedder, activation and rollback of an adapter checkpoint.
//!
//! What is trained is a small adapter over the fitted base embedder ([`lore_recall::adapter`]),
//! from pairs the store already holds: an execution's query with each lesson it was shown, as
//! *helpful* when the run was judged a success (no failure signal, no correction, a good
//! outcome) and as *suppressed* when the lesson was suppressed or rejected since. The split
//! into training and held-out queries is by query text, and a checkpoint becomes active only if
//! it beat the base embedder there.
//!
//! Activating a checkpoint or rolling back builds a whole new recall index with the target
//! embedder while the old one keeps answering, then records the switch and swaps the index
//! under its write lock: a recall sees the old embedder's vectors or the new one's, never both.
//! Activation, rollback and cancellation are destructive: they need an [`Admin`] (actor,
//! confirmation, reason) and write an audit entry with the switch.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use tracing::instrument;

use lore_core::error::{Error, Result};
use lore_core::id::{CheckpointId, TuneRunId};
use lore_core::model::{AuditAction, LessonStatus, RecordKind};
use lore_core::ports::embed::{Embedder, EmbedderId};
use lore_core::ports::tuning::{
    Checkpoint, Evaluation, STALE_AFTER_SECS, TunePlan, TuneRun, TuneStatus, TuningStore,
};
use lore_core::scope::Scope;
use lore_recall::adapter::{self, Adapter};
use lore_recall::lessons::{self, RecallIndex};

use crate::engine::{Engine, audit};

mod pairs;

/// The guard on a destructive operation: who, a literal confirmation, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admin {
    /// Who asks (a server's authenticated caller overrides it).
    pub actor: String,
    /// Must be `true`: the caller saw what will change.
    pub confirm: bool,
    /// Why, in words; kept in the audit log.
    pub reason: String,
}

impl Admin {
    fn check(&self) -> Result<()> {
        if self.actor.trim().is_empty() {
            return Err(Error::invalid("actor", "name who asks for this change"));
        }
        if !self.confirm {
            return Err(Error::invalid(
                "confirm",
                "this changes the embedder recall uses; confirm it explicitly",
            ));
        }
        if self.reason.trim().is_empty() {
            return Err(Error::invalid(
                "reason",
                "say why; it is kept in the audit log",
            ));
        }
        Ok(())
    }
}

/// What a run would train on, and what stands in its way.
#[derive(Clone, Debug, Serialize)]
pub struct Preflight {
    /// The fitted base embedder the adapter would apply to.
    pub base: Option<EmbedderId>,
    /// Lessons with a vector.
    pub lessons: usize,
    /// Queries with feedback.
    pub queries: usize,
    /// Helpful pairs, and of them held out.
    pub helpful_pairs: usize,
    /// Held-out helpful pairs under the plan.
    pub held_out_pairs: usize,
    /// Suppressed pairs.
    pub suppressed_pairs: usize,
    /// Distinct task types among the queries (an input's `task_type`, else its text).
    pub task_types: usize,
    /// Why a run would fail or could not be judged; empty when it can start.
    pub problems: Vec<String>,
}

/// The embedder recall uses now.
#[derive(Clone, Debug, Serialize)]
pub struct ActiveEmbedder {
    /// The embedder as configured.
    pub configured: EmbedderId,
    /// As fitted to the store, once the index was first built.
    pub fitted: Option<EmbedderId>,
    /// The active checkpoint, if any.
    pub checkpoint: Option<CheckpointId>,
    /// Its held-out evaluation.
    pub evaluation: Option<Evaluation>,
    /// The identity recall's vectors carry: the fitted base, with the adapter if one is active.
    pub recall: Option<EmbedderId>,
}

/// The outcome of an activation or a rollback.
#[derive(Clone, Debug, Serialize)]
pub struct Switch {
    /// The checkpoint active before, if any.
    pub from: Option<CheckpointId>,
    /// The checkpoint active now, if any.
    pub to: Option<CheckpointId>,
    /// The identity recall's vectors carry now.
    pub embedder: EmbedderId,
    /// Lessons in the new index.
    pub lessons: usize,
}

impl Engine {
    /// The plan a run follows when its caller gives none.
    pub fn tuning_plan(&self) -> TunePlan {
        self.config.tuning
    }

    /// The store's tuning, for an unrestricted handle.
    fn tuning_store(&self) -> Result<&dyn TuningStore> {
        if self.scope != Scope::unrestricted() {
            return Err(Error::Forbidden(
                "the embedder serves every scope; tuning it needs an unrestricted handle".into(),
            ));
        }
        self.store.tuning()
    }

    /// The fitted base embedder, fitting it first when no recall has yet.
    fn fitted_base(&self) -> Result<Arc<dyn Embedder>> {
        if let Some((embedder, _)) =
            lessons::stored_embedder(self.store.as_ref(), &self.recall.embedder)?
        {
            return Ok(embedder);
        }
        let statuses: Vec<LessonStatus> = self.retrievable_statuses().into_iter().collect();
        drop(lessons::fresh(
            &self.recall.index,
            self.store.as_ref(),
            &self.recall.embedder,
            &statuses,
        )?);
        lessons::stored_embedder(self.store.as_ref(), &self.recall.embedder)?
            .map(|(e, _)| e)
            .ok_or_else(|| Error::Conflict("the store has no lessons to embed".into()))
    }

    /// Checks a plan and the feedback before a run.
    ///
    /// # Errors
    /// [`Error::Unsupported`] from a store without tuning; [`Error::Invalid`] for a plan out
    /// of bounds; store failures.
    #[instrument(skip_all)]
    pub fn tuning_preflight(&self, plan: &TunePlan) -> Result<Preflight> {
        adapter::check_plan(plan)?;
        let set = self.tuning_pairs()?;
        let (_, held_out) = set.split(plan);
        let held_out_pairs: usize = held_out.iter().map(|q| q.helpful.len()).sum();
        let mut problems = Vec::new();
        if set.helpful_pairs() == 0 {
            problems.push(
                "no helpful pairs: record executions with lessons_shown and a successful outcome"
                    .to_owned(),
            );
        }
        if held_out_pairs < adapter::MIN_HELD_OUT {
            problems.push(format!(
                "{held_out_pairs} held-out helpful pairs; an adapter is judged on at least {}",
                adapter::MIN_HELD_OUT
            ));
        }
        Ok(Preflight {
            base: set.base.clone(),
            lessons: set.lessons.len(),
            queries: set.queries.len(),
            helpful_pairs: set.helpful_pairs(),
            held_out_pairs,
            suppressed_pairs: set.queries.iter().map(|q| q.suppressed.len()).sum(),
            task_types: set.task_types(),
            problems,
        })
    }

    /// Starts a tuning run and trains it to the end in the call (seconds on a CPU): it leaves
    /// a checkpoint with its held-out evaluation. After every epoch the run records its
    /// progress (epoch, loss, heartbeat, the weights so far) and stops there if another caller
    /// cancelled it meanwhile.
    ///
    /// # Errors
    /// [`Error::Unsupported`], [`Error::Forbidden`], [`Error::Invalid`] for a bad plan; a run
    /// that fails is stored as failed and its error returned.
    #[instrument(skip_all)]
    pub fn start_tuning(&self, plan: TunePlan, actor: Option<&str>) -> Result<TuneRun> {
        adapter::check_plan(&plan)?;
        let tuning = self.tuning_store()?;
        let base = self.fitted_base()?;
        let run = TuneRun::started(plan, base.id(), self.actor(actor), self.now());
        tuning.put_run(&run)?;
        self.train_run(tuning, run, None)
    }

    /// Resumes a failed, cancelled or interrupted run after its last recorded epoch, from the
    /// weights saved then (the epochs' shuffles are drawn again, so it ends with the adapter an
    /// uninterrupted run would have made). A store that kept no weights, or a base embedder
    /// fitted again since, trains it from the first epoch.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::Conflict`] for a run that is running or finished, or that
    /// another caller resumed first.
    #[instrument(skip_all)]
    pub fn resume_tuning(&self, id: &TuneRunId) -> Result<TuneRun> {
        let tuning = self.tuning_store()?;
        let seen = tuning
            .run(id)?
            .ok_or_else(|| Error::not_found("tuning run", id))?;
        let mut run = self.as_seen(seen.clone());
        if !matches!(
            run.status,
            TuneStatus::Failed | TuneStatus::Cancelled | TuneStatus::Interrupted
        ) {
            return Err(Error::Conflict(format!(
                "run {id} is {}; only a failed, cancelled or interrupted run resumes",
                run.status.as_str()
            )));
        }
        let base = self.fitted_base()?.id();
        let saved = match tuning.progress(id)? {
            Some((epoch, weights)) if base == run.base && epoch == run.epochs_done => {
                Some((epoch, weights))
            }
            _ => None,
        };
        if saved.is_none() {
            run.epochs_done = 0;
            run.loss = None;
        }
        run.base = base;
        run.status = TuneStatus::Running;
        run.started_at = self.now();
        run.heartbeat_at = Some(self.now());
        run.finished_at = None;
        run.error = None;
        if !tuning.claim_run(&run, &seen)? {
            return Err(Error::Conflict(format!(
                "run {id} changed while it was being resumed (another caller resumed or \
                 cancelled it); read its status again"
            )));
        }
        self.train_run(tuning, run, saved)
    }

    fn train_run(
        &self,
        tuning: &dyn TuningStore,
        mut run: TuneRun,
        resume: Option<(usize, Vec<f32>)>,
    ) -> Result<TuneRun> {
        let checkpoint = CheckpointId::generate(self.now());
        let result = self.tuning_pairs().and_then(|set| {
            let mut failed = None;
            let plan = run.plan;
            let trained = adapter::train(
                &set,
                &plan,
                checkpoint.as_str(),
                resume,
                &mut |epoch, adapter| {
                    run.epochs_done = epoch.done;
                    run.loss = Some(epoch.loss);
                    run.heartbeat_at = Some(self.now());
                    // Recorded and checked at once: a cancellation that came meanwhile, from
                    // another process or request, stops the run here and is kept.
                    tuning
                        .put_progress(&run, &adapter.weights)
                        .unwrap_or_else(|err| {
                            failed = Some(err);
                            false
                        })
                },
            )?;
            if let Some(err) = failed {
                return Err(err);
            }
            Ok(trained.map(|a| {
                let evaluation = adapter::evaluate(&set, &run.plan, &a);
                (a, evaluation)
            }))
        });
        run.finished_at = Some(self.now());
        match result {
            Ok(Some((trained, evaluation))) => {
                run.status = TuneStatus::Finished;
                run.evaluation = Some(evaluation.clone());
                run.checkpoint = Some(checkpoint.clone());
                let checkpoint = Checkpoint {
                    id: checkpoint,
                    run: run.id.clone(),
                    base: trained.base,
                    created_at: self.now(),
                    evaluation,
                    weights: trained.weights,
                };
                tuning.finish_run(&run, &checkpoint)?;
                Ok(run)
            }
            Ok(None) => tuning
                .run(&run.id)?
                .ok_or_else(|| Error::not_found("tuning run", &run.id)),
            Err(err) => {
                run.status = TuneStatus::Failed;
                run.error = Some(err.to_string());
                tuning.put_run(&run)?;
                Err(err)
            }
        }
    }

    /// A run as callers see it: one stored as running whose heartbeat is older than
    /// [`STALE_AFTER_SECS`] died with its process, and shows as interrupted.
    fn as_seen(&self, mut run: TuneRun) -> TuneRun {
        let beat = run.heartbeat_at.unwrap_or(run.started_at);
        let silent = (self.now() - beat).num_seconds();
        if run.status == TuneStatus::Running && silent > STALE_AFTER_SECS {
            run.status = TuneStatus::Interrupted;
        }
        run
    }

    /// One run, or the newest when `id` is `None`.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an unknown run or when there is none yet.
    pub fn tuning_status(&self, id: Option<&TuneRunId>) -> Result<TuneRun> {
        let tuning = self.tuning_store()?;
        let run = match id {
            Some(id) => tuning
                .run(id)?
                .ok_or_else(|| Error::not_found("tuning run", id)),
            None => tuning
                .runs(1, 0)?
                .0
                .into_iter()
                .next()
                .ok_or_else(|| Error::not_found("tuning run", "(none yet)")),
        }?;
        Ok(self.as_seen(run))
    }

    /// Runs newest first, a page at a time, with the total.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a limit of 0 or over [`lore_core::limits::MAX_PAGE`].
    pub fn tuning_runs(&self, limit: usize, offset: usize) -> Result<(Vec<TuneRun>, usize)> {
        let most = lore_core::limits::MAX_PAGE;
        if limit == 0 || limit > most {
            return Err(Error::invalid(
                "limit",
                format!("{limit} is outside 1 to {most}"),
            ));
        }
        let (runs, total) = self.tuning_store()?.runs(limit, offset)?;
        Ok((runs.into_iter().map(|r| self.as_seen(r)).collect(), total))
    }

    /// Every checkpoint, newest first, without weights.
    ///
    /// # Errors
    /// As [`Engine::tuning_runs`].
    pub fn checkpoints(&self) -> Result<Vec<Checkpoint>> {
        self.tuning_store()?.checkpoints()
    }

    /// Cancels a running run (`id`, or the newest running one); `None` when none was running.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an incomplete [`Admin`]; [`Error::Conflict`] for a named run
    /// that is not running.
    #[instrument(skip_all)]
    pub fn cancel_tuning(
        &self,
        id: Option<&TuneRunId>,
        admin: &Admin,
    ) -> Result<Option<TuneRunId>> {
        admin.check()?;
        let tuning = self.tuning_store()?;
        let run = match id {
            Some(id) => Some(self.tuning_status(Some(id))?),
            None => tuning
                .runs(usize::MAX, 0)?
                .0
                .into_iter()
                .map(|r| self.as_seen(r))
                .find(|r| r.status == TuneStatus::Running),
        };
        let Some(mut run) = run else {
            return Ok(None);
        };
        if run.status != TuneStatus::Running {
            return Err(Error::Conflict(format!(
                "run {} is {}, not running",
                run.id,
                run.status.as_str()
            )));
        }
        run.status = TuneStatus::Cancelled;
        run.finished_at = Some(self.now());
        run.error = Some(format!("cancelled: {}", admin.reason));
        let entry = self.admin_audit(run.id.as_str(), "cancel", admin, json!({}));
        tuning.cancel_run(&run, &entry)?;
        Ok(Some(run.id))
    }

    fn admin_audit(
        &self,
        subject: &str,
        operation: &str,
        admin: &Admin,
        evidence: Value,
    ) -> lore_core::model::AuditEntry {
        let mut evidence = evidence;
        if let Value::Object(map) = &mut evidence {
            map.insert("operation".into(), json!(operation));
        }
        audit(
            RecordKind::Embedder,
            subject,
            AuditAction::Administered,
            (None, None),
            &self.actor(Some(&admin.actor)),
            self.now(),
            &admin.reason,
            evidence,
        )
    }

    /// The embedder recall uses now.
    ///
    /// # Errors
    /// Store failures.
    pub fn active_embedder(&self) -> Result<ActiveEmbedder> {
        let tuning = self.tuning_store()?;
        let fitted = lessons::stored_state(self.store.as_ref())?.map(|s| s.fitted);
        let checkpoint = tuning.active_checkpoint()?;
        let stored = match &checkpoint {
            Some(id) => tuning.checkpoint(id)?,
            None => None,
        };
        let recall = match &stored {
            Some(c) => Some(EmbedderId {
                name: format!("{}+adapter:{}", c.base.name, c.id),
                dim: c.base.dim,
            }),
            None => fitted.clone(),
        };
        Ok(ActiveEmbedder {
            configured: self.recall.embedder.id(),
            fitted,
            checkpoint,
            evaluation: stored.map(|c| c.evaluation),
            recall,
        })
    }

    /// Makes `id` the checkpoint recall applies: refused unless it beat the base embedder on
    /// its held-out pairs and was trained on the current fit. The new index is built first,
    /// then the switch is recorded and the index swapped at once.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an incomplete [`Admin`]; [`Error::NotFound`]; [`Error::Conflict`]
    /// for a checkpoint that did not beat the base; [`Error::Incompatible`] for one trained on
    /// another fit.
    #[instrument(skip_all)]
    pub fn activate_checkpoint(&self, id: &CheckpointId, admin: &Admin) -> Result<Switch> {
        admin.check()?;
        let checkpoint = self
            .tuning_store()?
            .checkpoint(id)?
            .ok_or_else(|| Error::not_found("checkpoint", id))?;
        let e = &checkpoint.evaluation;
        if !e.better {
            return Err(Error::Conflict(format!(
                "checkpoint {id} did not beat the base embedder on its {} held-out pairs \
                 (MRR {:.3} against {:.3}); it cannot become active",
                e.held_out_pairs, e.adapter.mrr, e.base.mrr
            )));
        }
        let adapter = Adapter::new(id.to_string(), checkpoint.base, checkpoint.weights)?;
        self.switch(Some(Arc::new(adapter)), admin, "activate")
    }

    /// Rolls recall back to checkpoint `to` (which must still beat the base) or, with `None`,
    /// to the base embedder alone; otherwise as [`Engine::activate_checkpoint`].
    ///
    /// # Errors
    /// As [`Engine::activate_checkpoint`].
    #[instrument(skip_all)]
    pub fn rollback_embedder(&self, to: Option<&CheckpointId>, admin: &Admin) -> Result<Switch> {
        match to {
            Some(id) => self.activate_checkpoint(id, admin),
            None => {
                admin.check()?;
                self.tuning_store()?;
                self.switch(None, admin, "rollback")
            }
        }
    }

    /// Deletes checkpoint `id` and its weights, audited; the runs that made it keep their
    /// figures. The active checkpoint is refused: roll back first.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an incomplete [`Admin`]; [`Error::NotFound`]; [`Error::Conflict`]
    /// for the active checkpoint; [`Error::Unsupported`] on a store without tuning.
    #[instrument(skip_all)]
    pub fn delete_checkpoint(&self, id: &CheckpointId, admin: &Admin) -> Result<CheckpointId> {
        admin.check()?;
        let tuning = self.tuning_store()?;
        let checkpoint = tuning
            .checkpoint(id)?
            .ok_or_else(|| Error::not_found("checkpoint", id))?;
        let evidence = json!({"run": checkpoint.run, "better": checkpoint.evaluation.better});
        let entry = self.admin_audit(id.as_str(), "delete", admin, evidence);
        tuning.delete_checkpoint(id, &entry)?;
        Ok(id.clone())
    }

    fn switch(
        &self,
        adapter: Option<Arc<Adapter>>,
        admin: &Admin,
        operation: &str,
    ) -> Result<Switch> {
        let tuning = self.tuning_store()?;
        let base = self.fitted_base()?;
        if let Some(a) = &adapter
            && a.base != base.id()
        {
            return Err(Error::Incompatible(format!(
                "checkpoint {} was trained on {}, but the lessons are embedded with {}; train \
                 a new adapter",
                a.checkpoint,
                a.base,
                base.id()
            )));
        }
        let statuses: Vec<LessonStatus> = self.retrievable_statuses().into_iter().collect();
        let to = adapter
            .as_ref()
            .map(|a| CheckpointId::parse(&a.checkpoint))
            .transpose()?;
        // Built off the lock, on its own thread: recalls keep using the old index meanwhile.
        let store = self.store.clone();
        let configured = self.recall.embedder.clone();
        let index = std::thread::scope(|s| {
            s.spawn(|| RecallIndex::build_with(store.as_ref(), &configured, &statuses, adapter))
                .join()
                .map_err(|_| Error::Store(Box::new(std::io::Error::other("re-embedding panicked"))))
        })??;
        let embedder = index.embedder.id();
        if let Some(to) = &to
            && index.adapter.as_deref() == Some(to.as_str())
            && !embedder.name.ends_with(to.as_str())
        {
            return Err(Error::Incompatible(format!(
                "the lessons were fitted again while re-embedding; checkpoint {to} no longer                  applies, train a new adapter"
            )));
        }
        let lessons = index.info().lessons;
        let mut guard = self
            .recall
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let from = tuning.active_checkpoint()?;
        let subject = to.as_ref().map_or("base", CheckpointId::as_str);
        let entry = self.admin_audit(
            subject,
            operation,
            admin,
            json!({"from": from, "to": to, "embedder": embedder.name}),
        );
        tuning.set_active_checkpoint(to.as_ref(), &entry)?;
        *guard = Some(index);
        Ok(Switch {
            from,
            to,
            embedder,
            lessons,
        })
    }
}
