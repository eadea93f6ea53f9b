//! Where a benchmark's report goes: a writer the caller owns, as JSON or as lines of text.
//!
//! The benchmarks print as they go (a long run shows its sizes one by one), so they take a
//! writer instead of returning one value; the `lore` binary hands them standard output.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

/// The destination of a report.
pub struct Out<'a> {
    w: &'a mut dyn Write,
}

impl<'a> Out<'a> {
    /// Reports go to `w`.
    pub fn new(w: &'a mut dyn Write) -> Self {
        Self { w }
    }

    /// Writes `value` as pretty JSON.
    ///
    /// # Errors
    /// A failed write.
    pub fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        serde_json::to_writer_pretty(&mut self.w, value)?;
        writeln!(self.w)?;
        Ok(())
    }

    /// Writes one line of text.
    ///
    /// # Errors
    /// A failed write.
    pub fn line(&mut self, text: impl AsRef<str>) -> Result<()> {
        writeln!(self.w, "{}", text.as_ref())?;
        Ok(())
    }
}
