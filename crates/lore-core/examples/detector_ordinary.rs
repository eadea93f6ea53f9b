//! How often the detector flags ordinary text: every turn, observation and summary of a LoCoMo
//! file (people talking about their lives), each text scanned alone. A flagged turn would be
//! refused by the conversation log and a lesson holding it would leave prompts, so the figure
//! is what docs/reliability.md reports as the detector's false-positive rate. Files that are
//! not JSON are read as prose, a text per line (technical writing names passwords and tokens
//! without holding any).
//!
//! `cargo run -p lore-core --example detector_ordinary -- locomo_dev.json seeds/*.md`

use std::collections::BTreeMap;
use std::io::Write as _;

use serde_json::Value;

fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) if s.split_whitespace().count() >= 3 => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn main() {
    let mut files = Vec::new();
    for path in std::env::args().skip(1) {
        files.push(std::fs::read_to_string(&path).expect("readable"));
    }
    let mut data = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for text in &files {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => data.push(value),
            // Prose (Markdown): each line that says something.
            Err(_) => texts.extend(text.lines().filter(|l| l.split_whitespace().count() >= 3)),
        }
    }
    for value in &data {
        strings(value, &mut texts);
    }
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut flagged = 0;
    for t in &texts {
        let kinds = lore_core::sensitive::kinds(t);
        if !kinds.is_empty() {
            flagged += 1;
            for k in &kinds {
                *by_kind.entry(k.as_str()).or_default() += 1;
            }
            let _ = writeln!(std::io::stderr(), "{kinds:?}: {t}");
        }
    }
    // The figure is the example's output; the flagged texts went to stderr.
    let _ = writeln!(
        std::io::stdout(),
        "detector: {flagged} of {} ordinary texts flagged ({:.3}%), by kind {by_kind:?}",
        texts.len(),
        100.0 * flagged as f64 / texts.len() as f64
    );
}
