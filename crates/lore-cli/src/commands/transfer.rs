//! `lore import` and `lore export`.

use std::fs;
use std::io::{BufReader, IsTerminal};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
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

/// From this many records on, a run without a terminal says on stderr what it is doing, so a
/// long import or export (100,000 executions take seconds) is not mistaken for a hang.
const LARGE: usize = 10_000;

/// What a long import or export is doing, on stderr: a bar or spinner on a terminal, a line per
/// stage of a large transfer otherwise. Standard output keeps only the result.
struct Progress {
    terminal: bool,
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            bar: None,
            started: Instant::now(),
        }
    }

    /// A bar over the bytes of `file` as it is read (a terminal only).
    fn reading(&mut self, file: &fs::File) -> Option<ProgressBar> {
        let len = file.metadata().ok()?.len();
        if !self.terminal {
            return None;
        }
        let bar = ProgressBar::new(len).with_style(
            ProgressStyle::with_template("reading {bar:40} {bytes}/{total_bytes} ({eta} left)")
                .expect("a valid template"),
        );
        self.bar = Some(bar.clone());
        Some(bar)
    }

    /// The next stage, `what` (e.g. "storing 100000 records"), for `count` records.
    fn stage(&mut self, what: &str, count: usize) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.terminal {
            let spinner = ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .expect("a valid template"),
            );
            spinner.set_message(what.to_owned());
            spinner.enable_steady_tick(Duration::from_millis(120));
            self.bar = Some(spinner);
        } else if count >= LARGE {
            eprintln!("{what}…");
        }
    }

    /// Clears the spinner; a large transfer says how long it took.
    fn done(self, what: &str, count: usize) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
        if count >= LARGE || self.terminal {
            eprintln!("{what} in {:.1} s", self.started.elapsed().as_secs_f64());
        }
    }
}

pub fn import(paths: &Paths, args: ImportArgs, json: bool) -> Result<()> {
    let mut progress = Progress::new();
    let report = match &args.jsonl {
        Some(file) => {
            let (records, items) = if file.as_os_str() == "-" {
                read_export(std::io::stdin().lock())?
            } else {
                let f = fs::File::open(file)
                    .with_context(|| format!("cannot open {}", file.display()))?;
                match progress.reading(&f) {
                    Some(bar) => read_export(BufReader::new(bar.wrap_read(f))),
                    None => read_export(BufReader::new(f)),
                }
                .with_context(|| format!("{}", file.display()))?
            };
            let count = records.len() + items.len();
            progress.stage(&format!("storing {count} records"), count);
            let report = paths
                .engine(OpenMode::Create)?
                .import_export(records, items)?;
            progress.done(&format!("imported {count} records"), count);
            report
        }
        None => {
            let bundle = read_agentura(&args.from)?;
            let count = bundle.executions.len() + bundle.corrections.len() + bundle.lessons.len();
            progress.stage(&format!("storing {count} records"), count);
            let report = paths.engine(OpenMode::Create)?.import_agentura(bundle)?;
            progress.done(&format!("imported {count} records"), count);
            report
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
    let mut progress = Progress::new();
    if let Some(file) = &args.jsonl {
        progress.stage("reading the store", 0);
        let records = engine.export_records()?;
        let items = engine.export_layers()?;
        let count = records.len() + items.len();
        progress.stage(&format!("writing {count} records"), count);
        if file.as_os_str() == "-" {
            let mut out = std::io::stdout().lock();
            write_jsonl(&records, &mut out)?;
            write_layer_lines(&items, out)?;
            progress.done(&format!("exported {count} records"), count);
            return Ok(());
        }
        let f =
            fs::File::create(file).with_context(|| format!("cannot create {}", file.display()))?;
        let mut out = std::io::BufWriter::new(f);
        write_jsonl(&records, &mut out)?;
        write_layer_lines(&items, out)?;
        progress.done(&format!("exported {count} records"), count);
        return summary(json, count, file);
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
