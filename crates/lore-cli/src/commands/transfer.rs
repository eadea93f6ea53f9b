//! `lore import` and `lore export`.

use std::fs;
use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result, bail};
use lore_engine::interchange::{
    AgenturaBundle, CORRECTIONS_FILE, EPISODIC_FILE, REFLEXIONS_FILE, write_jsonl,
};
use lore_engine::layers::{read_export, write_layer_lines};
use lore_sqlite::OpenMode;

use crate::cli::{ExportArgs, ImportArgs};
use crate::config::Paths;
use crate::output;

fn read_optional(dir: &Path, name: &str) -> Result<Option<String>> {
    let path = dir.join(name);
    if !path.exists() {
        return Ok(None);
    }
    fs::read_to_string(&path)
        .map(Some)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// Parses the seed-format files in `dir`; at least one must exist.
pub fn read_agentura(dir: &Path) -> Result<AgenturaBundle> {
    let episodic = read_optional(dir, EPISODIC_FILE)?;
    let corrections = read_optional(dir, CORRECTIONS_FILE)?;
    let reflexions = read_optional(dir, REFLEXIONS_FILE)?;
    if episodic.is_none() && corrections.is_none() && reflexions.is_none() {
        bail!(
            "{} holds none of {EPISODIC_FILE}, {CORRECTIONS_FILE}, {REFLEXIONS_FILE}",
            dir.display()
        );
    }
    Ok(AgenturaBundle::parse(
        episodic.as_deref(),
        corrections.as_deref(),
        reflexions.as_deref(),
    )?)
}

pub fn import(paths: &Paths, args: ImportArgs, json: bool) -> Result<()> {
    let report = match &args.jsonl {
        Some(file) => {
            let (records, items) = if file.as_os_str() == "-" {
                read_export(std::io::stdin().lock())?
            } else {
                let f = fs::File::open(file)
                    .with_context(|| format!("cannot open {}", file.display()))?;
                read_export(BufReader::new(f)).with_context(|| format!("{}", file.display()))?
            };
            paths
                .engine(OpenMode::Create)?
                .import_export(records, items)?
        }
        None => {
            let bundle = read_agentura(&args.from)?;
            paths.engine(OpenMode::Create)?.import_agentura(bundle)?
        }
    };
    if json {
        return output::json(&report);
    }
    for r in &report.renamed {
        output::line(format!(
            "renamed execution {} -> {} (another execution of the files has its ID; the \
             original is kept in its extra field original_execution_id)",
            r.id, r.new_id
        ))?;
    }
    let layers: usize = report.layers.values().sum();
    output::line(format!(
        "read {} executions, {} corrections, {} lessons, {} episodes, {} other, {layers} layer \
         items; stored {}, already present {}",
        report.executions,
        report.corrections,
        report.lessons,
        report.episodes,
        report.other,
        report.write.written,
        report.write.skipped
    ))
}

pub fn export(paths: &Paths, args: ExportArgs, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    if let Some(file) = &args.jsonl {
        let records = engine.export_records()?;
        let items = engine.export_layers()?;
        if file.as_os_str() == "-" {
            let mut out = std::io::stdout().lock();
            write_jsonl(&records, &mut out)?;
            return Ok(write_layer_lines(&items, out)?);
        }
        let f =
            fs::File::create(file).with_context(|| format!("cannot create {}", file.display()))?;
        let mut out = std::io::BufWriter::new(f);
        write_jsonl(&records, &mut out)?;
        write_layer_lines(&items, out)?;
        return summary(json, records.len() + items.len(), file);
    }
    let bundle = engine.export_agentura()?;
    fs::create_dir_all(&args.to).with_context(|| format!("cannot create {}", args.to.display()))?;
    let [episodic, corrections, reflexions] = bundle.render();
    for (name, text) in [
        (EPISODIC_FILE, episodic),
        (CORRECTIONS_FILE, corrections),
        (REFLEXIONS_FILE, reflexions),
    ] {
        let path = args.to.join(name);
        fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let count = bundle.executions.len() + bundle.corrections.len() + bundle.lessons.len();
    summary(json, count, &args.to)
}

fn summary(json: bool, count: usize, to: &Path) -> Result<()> {
    if json {
        output::json(&serde_json::json!({ "records": count, "to": to }))
    } else {
        output::line(format!("exported {count} records to {}", to.display()))
    }
}
