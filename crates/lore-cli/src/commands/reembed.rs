//! `lore reembed`: fit the embedder again to the retrievable lessons and re-embed every lesson.
//!
//! The progress bar goes to standard error and only when it is a terminal, so scripts and
//! logs see nothing but the final line (or the JSON report).

use std::io::IsTerminal;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use lore_sqlite::OpenMode;

use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Existing)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("embedding {bar:40} {pos}/{len} lessons ({eta} left)")
                .expect("a valid template"),
        );
        bar
    });
    let report = engine.reembed(&mut |done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        return output::json(&report);
    }
    output::line(format!(
        "re-embedded {} lessons with {}",
        report.lessons, report.embedder
    ))
}
