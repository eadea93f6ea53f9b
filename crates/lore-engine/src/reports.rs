//! Benchmark reports kept with the records: the latest run of a benchmark (the curve of `lore
//! bench learning`), so that whoever reads this memory, the web console's health page among
//! them, can see whether learning works without running anything.
//!
//! A report holds figures of simulated or public data, never a record's text, so any caller
//! may read it. Only the local command line writes one.

use serde_json::Value;

use crate::engine::Engine;
use lore_core::error::{Error, Result};

/// Where reports sit among the store's named values.
const PREFIX: &str = "report:";
/// The largest report kept.
const MAX_BYTES: usize = 4 * 1024 * 1024;

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "report",
            format!("{name:?}: lowercase letters, digits and '-', 1 to 64 of them"),
        ))
    }
}

impl Engine {
    /// Keeps `report` as the latest report named `name` (`learning`), replacing any earlier.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad name or a report over 4 MiB; store failures.
    pub fn save_report(&self, name: &str, report: &Value) -> Result<()> {
        check_name(name)?;
        let bytes = serde_json::to_vec(report).map_err(|e| Error::invalid("report", e))?;
        if bytes.len() > MAX_BYTES {
            return Err(Error::invalid(
                "report",
                format!("{} bytes; at most {MAX_BYTES} are kept", bytes.len()),
            ));
        }
        self.store
            .set_index_state(&format!("{PREFIX}{name}"), &bytes)
    }

    /// The latest report named `name`, if one was kept.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a bad name; store failures; a stored report that is not JSON.
    pub fn report(&self, name: &str) -> Result<Option<Value>> {
        check_name(name)?;
        let Some(bytes) = self.store.index_state(&format!("{PREFIX}{name}"))? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Store(format!("report {name} is not JSON: {e}").into()))
    }
}
