//! The embedder adapter on the bench's feedback: after a seed's runs, an adapter is trained on
//! the pairs its store holds (a step's task with the lessons shown in a run that succeeded; with
//! the lessons suppressed since) and judged on held-out tasks against the base embedder. A
//! checkpoint that does not beat the base is then offered for activation, which must refuse it.

use anyhow::{Result, bail};
use lore_core::Error;
use std::sync::Arc;

use lore_core::ports::embed::Embedder;
use lore_core::ports::tuning::{Evaluation, HeldOutBy, TunePlan};
use lore_engine::{Admin, Engine};
use serde::Serialize;

/// The adapter's held-out figures over every seed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AdapterFigures {
    /// Seeds whose adapter beat the base on held-out pairs (and was activated).
    pub better: usize,
    /// Seeds whose adapter did not (and whose activation was refused).
    pub refused: usize,
    /// Helpful pairs trained on, summed over seeds.
    pub train_pairs: usize,
    /// Helpful pairs held out, summed over seeds.
    pub held_out_pairs: usize,
    /// The base embedder's mean MRR of the helpful lesson on held-out pairs.
    pub base_mrr: f64,
    /// The adapter's.
    pub adapter_mrr: f64,
    /// The base embedder's mean hit@1.
    pub base_hit_at_1: f64,
    /// The adapter's.
    pub adapter_hit_at_1: f64,
    /// Training seconds per seed, on average.
    pub train_s: f64,
}

/// Trains an adapter on the seed's feedback twice, holding out queries and then whole task
/// types, over `base` when given (the lessons re-embedded with it first) or the engine's own
/// embedder, and offers each checkpoint for activation, which must succeed exactly when it beat
/// the base; an activated one is rolled back before the next training.
///
/// # Errors
/// Engine failures; an activation that is not refused though the adapter did not help.
pub fn tune(engine: &Engine, base: Option<Arc<dyn Embedder>>) -> Result<[(Evaluation, f64); 2]> {
    let engine = match base {
        Some(base) => {
            let engine = engine.clone().with_embedder(base);
            engine.reembed(&mut |_, _| {})?;
            engine
        }
        None => engine.clone(),
    };
    let by_query = once(&engine, HeldOutBy::Query)?;
    let by_type = once(&engine, HeldOutBy::TaskType)?;
    Ok([by_query, by_type])
}

fn once(engine: &Engine, held_out_by: HeldOutBy) -> Result<(Evaluation, f64)> {
    let plan = TunePlan {
        held_out_by,
        ..TunePlan::default()
    };
    let started = std::time::Instant::now();
    let run = engine.start_tuning(plan, Some("bench"))?;
    let elapsed = started.elapsed().as_secs_f64();
    let (Some(evaluation), Some(checkpoint)) = (run.evaluation, run.checkpoint) else {
        bail!("run {} finished without a checkpoint", run.id);
    };
    let admin = Admin {
        actor: "bench".into(),
        confirm: true,
        reason: "the learning bench judges the adapter".into(),
    };
    match engine.activate_checkpoint(&checkpoint, &admin) {
        Ok(_) if evaluation.better => {
            engine.rollback_embedder(None, &admin)?;
        }
        Err(Error::Conflict(_)) if !evaluation.better => {}
        Ok(_) => bail!("checkpoint {checkpoint} became active without beating the base"),
        Err(err) => return Err(err.into()),
    }
    Ok((evaluation, elapsed))
}

/// One line of the summary: a split's figures over the seeds.
pub fn line(split: &str, f: &AdapterFigures, seeds: usize) -> String {
    format!(
        "  {split}: MRR {:.3} base → {:.3} adapter; hit@1 {:.3} → {:.3} ({} held-out pairs, \
         {} trained; better in {} of {seeds} seeds, refused in {}; {:.1} s training per seed)",
        f.base_mrr,
        f.adapter_mrr,
        f.base_hit_at_1,
        f.adapter_hit_at_1,
        f.held_out_pairs,
        f.train_pairs,
        f.better,
        f.refused,
        f.train_s
    )
}

/// Averages the seeds' evaluations.
pub fn aggregate(seeds: &[(Evaluation, f64)]) -> AdapterFigures {
    let n = seeds.len().max(1) as f64;
    let mean = |f: fn(&Evaluation) -> f64| seeds.iter().map(|(e, _)| f(e)).sum::<f64>() / n;
    AdapterFigures {
        better: seeds.iter().filter(|(e, _)| e.better).count(),
        refused: seeds.iter().filter(|(e, _)| !e.better).count(),
        train_pairs: seeds.iter().map(|(e, _)| e.train_pairs).sum(),
        held_out_pairs: seeds.iter().map(|(e, _)| e.held_out_pairs).sum(),
        base_mrr: mean(|e| e.base.mrr),
        adapter_mrr: mean(|e| e.adapter.mrr),
        base_hit_at_1: mean(|e| e.base.hit_at_1),
        adapter_hit_at_1: mean(|e| e.adapter.hit_at_1),
        train_s: seeds.iter().map(|(_, s)| s).sum::<f64>() / n,
    }
}
