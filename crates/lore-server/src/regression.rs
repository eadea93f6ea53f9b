//! Regression tests from corrections received over REST and MCP, written as `lore correct`
//! writes them (beside the skill, a native case and a promptfoo case), so a correction teaches
//! the same whichever way it arrives.
//!
//! The correction is committed before the files are written; a file that cannot be written is
//! logged and reported as no test, never as a failed correction, since the correction and its
//! lesson are stored either way. Answers name the test, not where it lives on the server's disk.

use lore_engine::CorrectionOutcome;
use lore_engine::Engine;
use schemars::JsonSchema;
use serde::Serialize;

/// The test written for a correction.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RegressionTest {
    /// The test's ID, as `lore test` reports it.
    pub id: String,
    /// How many assertions it has.
    pub assertions: usize,
    /// How many of them are LLM-judge rubrics.
    pub rubrics: usize,
}

/// Writes the test for `outcome`; `None` when the skill has no folder, the lesson is sensitive
/// (no secret goes into a file people commit) or the write failed.
pub fn write(engine: &Engine, outcome: &CorrectionOutcome) -> Option<RegressionTest> {
    match engine.write_regression_test(outcome) {
        Ok(test) => test.map(|t| RegressionTest {
            id: t.id,
            assertions: t.assertions,
            rubrics: t.rubrics,
        }),
        Err(err) => {
            tracing::error!(error = %err, correction = %outcome.correction.id,
                "the correction is stored but its regression test was not written");
            None
        }
    }
}
