//! `lore run`: a skill on the configured model, recorded with its cost, latency and model.
//!
//! The model comes from the environment (`lore_providers::LlmConfig::from_env`); prices from the
//! built-in table extended by `.lore/prices.json`. With no model configured the command refuses
//! and names the variables to set, rather than inventing an output.

use anyhow::{Result, bail};
use lore_engine::RunRequest;
use lore_sqlite::OpenMode;

use crate::cli::RunArgs;
use crate::config::Paths;
use crate::config::{prices, required_model};
use crate::input::input_arg;
use crate::output;

pub fn run(paths: &Paths, args: RunArgs, json: bool) -> Result<()> {
    let input = input_arg(&args.input)?;
    let llm = required_model()?;
    let prices = prices(paths)?;
    let engine = paths.engine(OpenMode::Create)?;
    let outcome = engine.run(
        RunRequest {
            skill: args.skill,
            input,
            session: args.session,
        },
        llm.as_ref(),
        &prices,
    )?;
    output::warnings(&outcome.warnings);
    if json {
        output::json(&outcome)?;
    } else {
        print_run(&outcome.execution, outcome.error.is_none())?;
    }
    match outcome.error {
        Some(err) => bail!(
            "{err} (recorded as failed execution {})",
            outcome.execution.id
        ),
        None => Ok(()),
    }
}

/// A failed run has no output (`null`); the error that follows says what happened instead.
fn print_run(execution: &lore_core::model::Execution, succeeded: bool) -> Result<()> {
    output::line(format!("execution {}", execution.id))?;
    output::line(format!(
        "model     {}  cost {}  latency {:.0} ms",
        execution.model.as_deref().unwrap_or("?"),
        execution
            .cost_usd
            .map(|c| format!("${c:.6}"))
            .unwrap_or_else(|| "unknown (add the model to .lore/prices.json)".into()),
        execution.latency_ms.unwrap_or_default(),
    ))?;
    if !succeeded && execution.output.is_null() {
        return Ok(());
    }
    output::line(serde_json::to_string_pretty(&execution.output)?)
}
