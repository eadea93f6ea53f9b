//! Printing: JSON for scripts, plain text for people. The only module that writes to stdout.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

/// Prints `value` as pretty JSON.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Prints text as is, with a trailing newline.
pub fn line(text: impl AsRef<str>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", text.as_ref())?;
    Ok(())
}

/// Prints each warning to stderr, where it reaches a person without changing what a script
/// reads from stdout (the JSON carries them too).
pub fn warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}
