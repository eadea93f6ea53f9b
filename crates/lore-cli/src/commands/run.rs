//! `lore run`: a skill on the configured model, recorded with its cost, latency and model.
//!
//! The model comes from the environment (`lore_providers::LlmConfig::from_env`); prices from the
//! built-in table extended by `.lore/prices.json`. With no model configured the command refuses
//! and names the variables to set, rather than inventing an output.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use lore_core::ports::llm::{Llm, PriceTable};
use lore_engine::RunRequest;
use lore_providers::LlmConfig;
use lore_sqlite::OpenMode;
use serde_json::Value;

use super::capture::json_arg;
use crate::cli::RunArgs;
use crate::config::Paths;
use crate::output;

/// The price file users extend, inside the store folder.
const PRICES_FILE: &str = "prices.json";

/// The configured model; offline, an error that says how to configure one.
pub(crate) fn required_model() -> Result<Arc<dyn Llm>> {
    let config = LlmConfig::from_env().context("the model configuration is invalid")?;
    Ok(lore_providers::connect(&config))
}

/// The built-in prices extended by `.lore/prices.json`, when it exists.
pub(crate) fn prices(paths: &Paths) -> Result<PriceTable> {
    let path = paths.home.join(PRICES_FILE);
    if !path.is_file() {
        return Ok(PriceTable::default());
    }
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    PriceTable::default()
        .with_overrides(&text)
        .with_context(|| format!("in {}", path.display()))
}

/// `--input`: a bare path to a file (seed 000's form) or whatever `lore record` accepts.
pub(crate) fn input_arg(raw: &str) -> Result<Value> {
    if !raw.starts_with('@')
        && !raw.trim_start().starts_with(['{', '[', '"'])
        && Path::new(raw).is_file()
    {
        return json_arg("--input", &format!("@{raw}"));
    }
    json_arg("--input", raw)
}

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
    if json {
        output::json(&outcome)?;
    } else {
        print_run(&outcome.execution)?;
    }
    match outcome.error {
        Some(err) => bail!(
            "{err} (recorded as failed execution {})",
            outcome.execution.id
        ),
        None => Ok(()),
    }
}

fn print_run(execution: &lore_core::model::Execution) -> Result<()> {
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
    output::line(serde_json::to_string_pretty(&execution.output)?)
}

/// `engine` with a proposer when a model is configured; offline, the distiller alone.
pub(crate) fn with_proposer(engine: lore_engine::Engine) -> Result<lore_engine::Engine> {
    let config = LlmConfig::from_env().context("the model configuration is invalid")?;
    Ok(match config.kind {
        lore_providers::ProviderKind::Offline => engine,
        _ => engine.with_proposer(lore_providers::connect(&config)),
    })
}
