//! The curve of a learning run: errors per run with and without memory, averaged over the
//! seeds, with where each phase starts and the run's headline figures. The SVG plot draws it,
//! and `lore bench learning` keeps it with the records so the console's health page can too.

use serde::{Deserialize, Serialize};

use super::{LearningReport, RunFigures};

/// Errors per run over a learning run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// Seeds averaged.
    pub seeds: usize,
    /// Mean errors per run with memory, one value per run.
    pub with_memory: Vec<f64>,
    /// The same without memory.
    pub without_memory: Vec<f64>,
    /// Each phase's name and the index of its first run, in order.
    pub phases: Vec<(String, usize)>,
    /// The headline figures, as `--json` reports them.
    pub recurrence_reduction: f64,
    /// See [`LearningReport::retention_regression`].
    pub retention_regression: f64,
    /// See [`LearningReport::good_lessons_suppressed`].
    pub good_lessons_suppressed: usize,
    /// See [`LearningReport::retrieval_precision`].
    pub retrieval_precision: f64,
}

impl Curve {
    /// The curve of `report`.
    pub fn of(report: &LearningReport) -> Self {
        let runs = report.runs_per_seed;
        let seeds = report.per_seed.len().max(1) as f64;
        let mean = |f: fn(&RunFigures) -> usize| -> Vec<f64> {
            (0..runs)
                .map(|i| {
                    report
                        .per_seed
                        .iter()
                        .filter_map(|s| s.runs.get(i))
                        .map(f)
                        .sum::<usize>() as f64
                        / seeds
                })
                .collect()
        };
        let mut phases: Vec<(String, usize)> = Vec::new();
        if let Some(first) = report.per_seed.first() {
            for (i, run) in first.runs.iter().enumerate() {
                if phases.last().is_none_or(|(name, _)| name != run.phase) {
                    phases.push((run.phase.to_owned(), i));
                }
            }
        }
        Curve {
            seeds: report.per_seed.len(),
            with_memory: mean(|r| r.errors),
            without_memory: mean(|r| r.errors_without),
            phases,
            recurrence_reduction: report.recurrence_reduction,
            retention_regression: report.retention_regression,
            good_lessons_suppressed: report.good_lessons_suppressed,
            retrieval_precision: report.retrieval_precision,
        }
    }
}
