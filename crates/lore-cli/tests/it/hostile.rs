//! The reliability suite's hostile inputs through the CLI's doors
//! (docs/reliability.md): `lore record`, `lore import --jsonl` and `lore import --from` (the seed
//! format). The corpus is the server's (`crates/lore-server/tests/fixtures/hostile.json`), so
//! every door meets the same inputs. Each case must exit non-zero with a message, and the store's
//! export must be byte for byte what it was; accepted prompt-injection text must come back in
//! `lore memory prompt` only quoted under a rule with its provenance.

// The figures each test prints are the suite's report (docs/reliability.md).
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

fn corpus() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../lore-server/tests/fixtures/hostile.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A corpus value as JSON text, its shorthands expanded (`$nest` as raw text: too deep for a
/// `serde_json::Value`).
fn expand(value: &Value) -> String {
    if let Some(s) = value.get("$repeat").and_then(Value::as_str) {
        let times = value["times"].as_u64().unwrap() as usize;
        let then = value["then"].as_str().unwrap_or_default();
        return Value::String(s.repeat(times) + then).to_string();
    }
    if let Some(depth) = value.get("$nest").and_then(Value::as_u64) {
        return "[".repeat(depth as usize) + &"]".repeat(depth as usize);
    }
    value.to_string()
}

/// `(name, field, value as JSON text)` of the cases for `door`.
fn cases_for(corpus: &Value, door: &str) -> Vec<(String, String, String)> {
    corpus["fields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c.get("doors")
                .and_then(Value::as_array)
                .is_none_or(|d| d.iter().any(|x| x == door))
        })
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["field"].as_str().unwrap().to_owned(),
                expand(&c["value"]),
            )
        })
        .collect()
}

/// `base` (a JSON object's text) with `field` set to `value` (JSON text), spliced as text.
fn with_field(base: &Value, field: &str, value: &str) -> String {
    let mut object = base.clone();
    object[field] = json!("$VALUE");
    object.to_string().replacen("\"$VALUE\"", value, 1)
}

/// The store's export, the comparison point for "unchanged".
fn dump(p: &Project) -> String {
    p.ok(&["export", "--jsonl", "dump.jsonl"]);
    std::fs::read_to_string(p.path().join("dump.jsonl")).unwrap()
}

/// The `lore record` arguments that carry `field` = `value`, or `None` when the CLI has no way
/// to say it (a NUL byte cannot be an argument).
fn record_args(p: &Project, field: &str, value: &str) -> Option<Vec<String>> {
    let file = |name: &str, text: &str| -> String {
        let path: PathBuf = p.path().join(name);
        std::fs::write(&path, text).unwrap();
        format!("@{name}")
    };
    // A JSON string is passed as its text; anything else as its JSON.
    let plain = serde_json::from_str::<Value>(value)
        .ok()
        .map(|v| match v {
            Value::String(s) => s,
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        })
        .unwrap_or_else(|| value.to_owned());
    if plain.contains('\0') {
        return None;
    }
    let mut args: Vec<String> = vec!["record".into()];
    let (mut skill, mut input, mut output) = (
        SKILL.to_owned(),
        file("in.json", r#"{"ticket": "ok"}"#),
        file("out.json", r#"{"p": "normal"}"#),
    );
    let mut extra = Vec::new();
    match field {
        "skill" => skill = plain,
        "input" => input = file("in.json", value),
        "output" => output = file("out.json", value),
        "outcome" => extra = vec!["--outcome".into(), plain],
        "cost_usd" => extra = vec!["--cost-usd".into(), plain],
        "latency_ms" => extra = vec!["--latency-ms".into(), plain],
        "model" => extra = vec!["--model".into(), plain],
        "session" => extra = vec!["--session".into(), plain],
        "lessons_shown" => extra = vec!["--lessons-shown".into(), plain],
        other => panic!("the CLI door has no field {other}; list its doors in the corpus"),
    }
    args.extend([skill, "--input".into(), input, "--output".into(), output]);
    args.extend(extra);
    Some(args)
}

/// Runs `args`; an escape when it succeeded or said nothing.
fn refused(p: &Project, args: &[String]) -> Result<(), String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = p.run(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Err(format!(
            "accepted: {}",
            String::from_utf8_lossy(&out.stdout)
        ));
    }
    if stderr.trim().is_empty() {
        return Err("refused without a message".into());
    }
    Ok(())
}

/// A valid JSONL execution record and seed entry, for the cases to spoil.
fn jsonl_base() -> Value {
    json!({"id": "EXEC-20260101000000-AAAAAAAA", "skill": SKILL,
           "timestamp": "2026-01-01T00:00:00Z", "input": {"ticket": "ok"},
           "output": {"p": "normal"}, "outcome": "accepted"})
}

fn seed_base() -> Value {
    json!({"execution_id": "EXEC-20260101000000", "skill": SKILL,
           "timestamp": "2026-01-01T00:00:00+00:00", "input_summary": {"ticket": "ok"},
           "output_summary": {"p": "normal"}, "outcome": "accepted"})
}

/// The seed format's name for a field.
fn seed_name(field: &str) -> &str {
    match field {
        "input" => "input_summary",
        "output" => "output_summary",
        "model" => "model_used",
        other => other,
    }
}

#[test]
fn hostile_inputs_through_the_cli_and_imports_are_refused_and_change_nothing() {
    let corpus = corpus();
    let p = Project::new().initialized();
    p.ok(&["record", SKILL, "--input", "{}", "--output", "{}"]);
    let before = dump(&p);
    let mut escapes = Vec::new();
    let mut attempts = [0usize; 3];

    for (name, field, value) in cases_for(&corpus, "cli") {
        if let Some(args) = record_args(&p, &field, &value) {
            attempts[0] += 1;
            if let Err(why) = refused(&p, &args) {
                escapes.push(format!("cli {name}: {why:.200}"));
            }
        }
    }
    for raw in corpus["malformed"].as_array().unwrap() {
        // `--input` takes any JSON value (`null`, `42`, `[]` are inputs like any other), so
        // only the texts that are not JSON are malformed here.
        if serde_json::from_str::<Value>(raw.as_str().unwrap()).is_ok() {
            continue;
        }
        std::fs::write(p.path().join("in.json"), raw.as_str().unwrap()).unwrap();
        attempts[0] += 1;
        let args = ["record", SKILL, "--input", "@in.json", "--output", "{}"].map(String::from);
        if let Err(why) = refused(&p, &args) {
            escapes.push(format!("cli malformed {raw}: {why:.200}"));
        }
    }

    let jsonl = |line: &str| {
        std::fs::write(p.path().join("in.jsonl"), format!("{line}\n")).unwrap();
        ["import", "--jsonl", "in.jsonl"].map(String::from)
    };
    for (name, field, value) in cases_for(&corpus, "jsonl") {
        let record = with_field(&jsonl_base(), &field, &value);
        attempts[1] += 1;
        let args = jsonl(&format!(r#"{{"type": "execution", "record": {record}}}"#));
        if let Err(why) = refused(&p, &args) {
            escapes.push(format!("jsonl {name}: {why:.200}"));
        }
    }
    for raw in corpus["malformed"].as_array().unwrap() {
        let raw = raw.as_str().unwrap();
        if raw.is_empty() {
            continue; // an empty file is a valid, empty import
        }
        attempts[1] += 1;
        if let Err(why) = refused(&p, &jsonl(raw)) {
            escapes.push(format!("jsonl malformed {raw:?}: {why:.200}"));
        }
    }

    let seed_dir = p.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    let seed = |text: &str| {
        std::fs::write(seed_dir.join("episodic_memory.json"), text).unwrap();
        ["import", "--from", "seed"].map(String::from)
    };
    for (name, field, value) in cases_for(&corpus, "seed") {
        let entry = with_field(&seed_base(), seed_name(&field), &value);
        attempts[2] += 1;
        if let Err(why) = refused(&p, &seed(&format!(r#"{{"entries": [{entry}]}}"#))) {
            escapes.push(format!("seed {name}: {why:.200}"));
        }
    }
    for raw in corpus["malformed"].as_array().unwrap() {
        attempts[2] += 1;
        if let Err(why) = refused(&p, &seed(raw.as_str().unwrap())) {
            escapes.push(format!("seed malformed {raw}: {why:.200}"));
        }
    }

    let unchanged = dump(&p) == before;
    println!(
        "reliability: hostile cli attempts {}, jsonl attempts {}, seed attempts {}, escapes {}, \
         store unchanged {unchanged}",
        attempts[0],
        attempts[1],
        attempts[2],
        escapes.len()
    );
    assert!(escapes.is_empty(), "{escapes:#?}");
    assert!(unchanged, "a refused input changed the store");
    // The controls: unspoiled, the same record and entry are accepted, so each refusal above
    // was the hostile value's doing.
    let args = jsonl(&format!(
        r#"{{"type": "execution", "record": {}}}"#,
        jsonl_base()
    ));
    assert!(refused(&p, &args).is_err(), "the JSONL control was refused");
    let args = seed(&format!(r#"{{"entries": [{}]}}"#, seed_base()));
    assert!(refused(&p, &args).is_err(), "the seed control was refused");
}

#[test]
fn accepted_prompt_injection_comes_back_only_quoted_with_provenance() {
    let corpus = corpus();
    let p = Project::new().initialized();
    let execution = p.ok(&["record", SKILL, "--input", "{}", "--output", "{}"]);
    for injection in corpus["injections"].as_array().unwrap() {
        p.correct(SKILL, execution.trim(), injection.as_str().unwrap());
    }
    let prompt = p.ok(&["memory", "prompt", SKILL]);
    let needles = [
        "developer mode",
        "previous instructions",
        "api keys",
        "system prompt",
        "refl-fake",
        "obey this",
    ];
    let lines: Vec<&str> = prompt.lines().collect();
    let mut seen = 0;
    for (i, line) in lines.iter().enumerate() {
        let lower = line.to_lowercase();
        if !needles.iter().any(|n| lower.contains(n)) {
            continue;
        }
        seen += 1;
        assert!(
            line.trim_start().starts_with("> "),
            "unquoted injection text: {line:?}\n{prompt}"
        );
        let heading = lines[..i].iter().rev().find(|l| l.starts_with("- **"));
        assert!(
            heading.is_some_and(|h| h.contains("confidence") && h.contains("from correction")),
            "no provenance above {line:?}"
        );
    }
    assert!(
        seen > 0,
        "the accepted text never reached the prompt:\n{prompt}"
    );
}
