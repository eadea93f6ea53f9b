//! Arguments that carry JSON: inline, `@FILE`, `@-` for standard input, or a bare file path.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

/// Reads a JSON argument: inline JSON, `@FILE`, or `@-` for standard input.
pub fn json_arg(flag: &str, raw: &str) -> Result<Value> {
    let (text, source) = match raw.strip_prefix('@') {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .with_context(|| format!("{flag}: cannot read standard input"))?;
            (text, "standard input".to_owned())
        }
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("{flag}: cannot read {path}"))?,
            path.to_owned(),
        ),
        None => (raw.to_owned(), "the argument".to_owned()),
    };
    serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{flag}: malformed JSON in {source}: {e}"))
}

/// `--input`: a bare path to a file (seed 000's form) or whatever `lore record` accepts.
pub fn input_arg(raw: &str) -> Result<Value> {
    if !raw.starts_with('@')
        && !raw.trim_start().starts_with(['{', '[', '"'])
        && Path::new(raw).is_file()
    {
        return json_arg("--input", &format!("@{raw}"));
    }
    json_arg("--input", raw)
}
