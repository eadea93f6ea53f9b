//! The lesson proposer's settings (`[proposer]` in `lore.toml`), against a fake provider on
//! loopback speaking each real protocol: what its call sends, and which proposals are kept.

use std::fs;

use crate::common::Project;
use lore_providers::fake::{Captured, FakeServer, Protocol};
use serde_json::{Value, json};

const SKILL: &str = "ops/triage";
const CORRECTION: &str = "Always page the on-call engineer when the error rate exceeds 5 percent; \
    a ticket is too slow for an outage.";
const PROPOSED_RULE: &str = "Page the on-call engineer whenever the error rate is above 5%.";

/// A provider that plays the skill and the proposer, answering the proposer with `confidence`.
fn provider(protocol: Protocol, confidence: f64) -> FakeServer {
    FakeServer::start(move |request: &Captured| {
        let answer = if request.all_text().contains("lesson proposer") {
            json!({
                "mistake": "Opened a ticket during an outage.",
                "root_cause": "Severity was judged by volume, not by error rate.",
                "rule": PROPOSED_RULE,
                "applies_when": "Triaging an incident with a high error rate.",
                "confidence": confidence,
                "summary": "Page on a high error rate"
            })
            .to_string()
        } else {
            json!({"action": "open a ticket"}).to_string()
        };
        protocol.answer(&answer, "served-model")
    })
}

/// A project whose model is at `server`, with `settings` as its `lore.toml`.
fn project(server: &FakeServer, protocol: Protocol, settings: &str) -> Project {
    let env = match protocol {
        Protocol::OpenAi => vec![
            ("LORE_LLM_PROVIDER", "openai".to_owned()),
            ("LORE_LLM_BASE_URL", format!("{}/v1", server.url())),
            ("LORE_LLM_MODEL", "skill-model".to_owned()),
        ],
        Protocol::Anthropic => vec![
            ("LORE_LLM_PROVIDER", "anthropic".to_owned()),
            ("LORE_LLM_BASE_URL", server.url()),
            ("LORE_LLM_MODEL", "skill-model".to_owned()),
            ("ANTHROPIC_API_KEY", "sk-ant-test".to_owned()),
        ],
    };
    let project = Project::with_env(env).initialized();
    fs::write(project.path().join(".lore/lore.toml"), settings).unwrap();
    let skill = project.path().join("skills").join(SKILL);
    fs::create_dir_all(&skill).unwrap();
    fs::write(
        skill.join("SKILL.md"),
        "---\nname: ops/triage\n---\n# Skill: triage\n\nDecide what to do about an alert.\n",
    )
    .unwrap();
    project
}

/// `lore record` of a rejected run on `input`; returns its ID.
fn record(project: &Project, input: &str) -> String {
    let args = [
        "record",
        SKILL,
        "--input",
        input,
        "--output",
        r#"{"action": "open a ticket"}"#,
        "--outcome",
        "rejected",
    ];
    project.ok(&args).trim().to_owned()
}

/// `lore record` then `lore correct` (with `flags` before the command); returns the result.
fn correct(project: &Project, flags: &[&str]) -> Value {
    let id = record(project, r#"{"alert": "error rate 9%"}"#);
    let mut args = flags.to_vec();
    args.extend([
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        CORRECTION,
        "--json",
    ]);
    serde_json::from_str(&project.ok(&args)).unwrap()
}

fn proposer_calls(server: &FakeServer) -> Vec<Captured> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.all_text().contains("lesson proposer"))
        .collect()
}

#[test]
fn the_proposer_call_sends_its_model_temperature_and_token_limit_in_both_protocols() {
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let server = provider(protocol, 0.9);
        let project = project(
            &server,
            protocol,
            "[proposer]\nmodel = \"proposer-small\"\n",
        );
        let corrected = correct(&project, &[]);
        assert_eq!(corrected["lesson"]["rule"], PROPOSED_RULE, "{protocol:?}");
        assert_eq!(
            corrected["lesson"]["extra"]["proposed_by"]["model"], "proposer-small",
            "{protocol:?}"
        );
        let calls = proposer_calls(&server);
        assert_eq!(calls.len(), 1, "{protocol:?}");
        let body = &calls[0].body;
        assert_eq!(body["model"], "proposer-small", "{protocol:?}: {body}");
        assert_eq!(
            body["temperature"].as_f64(),
            Some(0.3),
            "{protocol:?}: {body}"
        );
        assert_eq!(body["max_tokens"], 1500, "{protocol:?}: {body}");
    }
}

#[test]
fn configured_sampling_reaches_the_wire_and_the_skill_keeps_its_own_model() {
    let server = provider(Protocol::OpenAi, 0.9);
    let project = project(
        &server,
        Protocol::OpenAi,
        "[proposer]\ntemperature = 0.7\nmax_tokens = 800\n",
    );
    let shown = project.json(&["config"]);
    assert_eq!(
        shown["proposer"],
        json!({"enabled": true, "model": null, "temperature": 0.7, "max_tokens": 800,
               "min_confidence": 0.5})
    );
    let run = project.json(&["run", SKILL, "--input", r#"{"alert": "disk 95%"}"#]);
    assert_eq!(run["execution"]["model"], "served-model");
    let skill_call = &server.requests()[0].body;
    assert_eq!(skill_call["model"], "skill-model");
    assert!(skill_call.get("temperature").is_none(), "{skill_call}");

    correct(&project, &[]);
    let body = &proposer_calls(&server)[0].body;
    // No proposer model configured: the configured model answers.
    assert_eq!(body["model"], "skill-model");
    assert_eq!(body["temperature"].as_f64(), Some(0.7), "{body}");
    assert_eq!(body["max_tokens"], 800, "{body}");
}

#[test]
fn a_proposal_below_min_confidence_is_discarded_and_the_result_says_so() {
    let server = provider(Protocol::OpenAi, 0.3);
    let project = project(&server, Protocol::OpenAi, "");
    let corrected = correct(&project, &[]);
    let lesson = &corrected["lesson"];
    assert_eq!(lesson["source"], "correction", "{lesson}");
    assert_ne!(lesson["rule"], PROPOSED_RULE);
    assert!(
        lesson["rule"].as_str().unwrap().contains("on-call"),
        "{lesson}"
    );
    let note = &corrected["correction"]["extra"]["proposal_discarded"];
    assert_eq!(note["confidence"].as_f64(), Some(0.3), "{note}");
    assert_eq!(note["min_confidence"].as_f64(), Some(0.5), "{note}");
    assert_eq!(note["rule"], PROPOSED_RULE);
    assert!(
        note["why"]
            .as_str()
            .unwrap()
            .contains("below proposer.min_confidence 0.50"),
        "{note}"
    );
    // The text output says it too.
    let id = record(&project, "{}");
    let text = project.ok(&[
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        "Always include the dashboard link in the page.",
    ]);
    assert!(text.contains("proposal discarded"), "{text}");

    // The floor is a setting: lowered, the same proposal is kept.
    let corrected = correct(&project, &["--set", "proposer.min_confidence=0.2"]);
    assert_eq!(corrected["lesson"]["rule"], PROPOSED_RULE);
    assert_eq!(corrected["lesson"]["source"], "llm");
    assert!(
        corrected["correction"]["extra"]
            .get("proposal_discarded")
            .is_none()
    );
}

#[test]
fn the_off_switch_sends_no_proposer_call_and_the_correction_still_teaches() {
    let server = provider(Protocol::Anthropic, 0.9);
    let project = project(
        &server,
        Protocol::Anthropic,
        "[proposer]\nenabled = false\n",
    );
    let corrected = correct(&project, &[]);
    assert_eq!(corrected["lesson"]["source"], "correction");
    assert!(proposer_calls(&server).is_empty());
    // `--set` turns it back on, over the file.
    let server = provider(Protocol::OpenAi, 0.9);
    let project = self::project(&server, Protocol::OpenAi, "[proposer]\nenabled = false\n");
    let on = correct(&project, &["--set", "proposer.enabled=true"]);
    assert_eq!(on["lesson"]["source"], "llm");
    assert_eq!(proposer_calls(&server).len(), 1);
}

#[test]
fn out_of_range_proposer_settings_are_refused_naming_the_key() {
    let server = provider(Protocol::OpenAi, 0.9);
    let project = project(&server, Protocol::OpenAi, "");
    for (set, needle) in [
        ("proposer.temperature=3", "proposer.temperature"),
        ("proposer.max_tokens=0", "proposer.max_tokens"),
        ("proposer.min_confidence=1.5", "proposer.min_confidence"),
        ("proposer.model=\"  \"", "proposer.model"),
        ("proposer.top_p=1", "top_p"),
    ] {
        let err = project.fails(&["--set", set, "lessons", "list"]);
        assert!(err.contains(needle), "{set}: {err}");
    }
    assert!(server.requests().is_empty());
}

/// A proposer that, as the 1.5B model did, writes the failed form into the lesson's condition
/// and summary beside a rule that has the working one.
fn proposer_naming(applies_when: &'static str, summary: &'static str) -> FakeServer {
    FakeServer::start(move |request: &Captured| {
        let answer = json!({
            "mistake": "Wrote the fields with --fields.",
            "root_cause": "The manual does not give the syntax.",
            "rule": "Write the command in the form `fluxtool select STREAM fields:FIELD,FIELD`.",
            "applies_when": applies_when,
            "confidence": 0.9,
            "summary": summary,
        });
        assert!(request.all_text().contains("lesson proposer"));
        Protocol::OpenAi.answer(&answer.to_string(), "served-model")
    })
}

fn correct_select(project: &Project) -> Value {
    let id = project
        .ok(&[
            "record",
            SKILL,
            "--input",
            r#"{"task": "From the stream items keep only the fields sku and price"}"#,
            "--output",
            r#"{"command": "fluxtool select --fields sku price items"}"#,
            "--outcome",
            "rejected",
        ])
        .trim()
        .to_owned();
    let correction = "When asked to select fields, write the fluxtool command in the form \
        `fluxtool select STREAM fields:FIELD,FIELD` with the task's own STREAM and FIELD. The \
        command `fluxtool select --fields FIELD FIELD STREAM` failed with: fluxtool: select: \
        unknown option '--fields' (exit 2)";
    let args = [
        "correct",
        SKILL,
        "--execution-id",
        &id,
        "--correction",
        correction,
        "--json",
    ];
    serde_json::from_str(&project.ok(&args)).unwrap()
}

#[test]
fn a_proposed_condition_or_summary_that_recommends_the_failed_form_is_not_kept() {
    let server = proposer_naming(
        "The command should include the `--fields` option.",
        "Use --fields to pick the fields",
    );
    let store = project(&server, Protocol::OpenAi, "");
    let lesson = &correct_select(&store)["lesson"];
    assert_eq!(lesson["source"], "llm", "{lesson}");
    assert!(
        lesson["rule"]
            .as_str()
            .unwrap()
            .contains("fields:FIELD,FIELD")
    );
    for key in ["applies_when", "summary"] {
        let text = if key == "summary" {
            lesson["tiers"]["summary"].as_str().unwrap()
        } else {
            lesson[key].as_str().unwrap()
        };
        assert!(!text.contains("--fields"), "{key}: {text}");
        assert!(!text.is_empty(), "{key} falls back to the distilled text");
        let note = &lesson["extra"]["distilled_kept"][key];
        assert_eq!(note["names_failed_form"], "--fields", "{lesson}");
    }
    assert!(
        lesson["applies_when"].as_str().unwrap().contains("select"),
        "the correction's own condition: {lesson}"
    );
    let shown = store.json(&["recall", "keep the fields of a stream", "--skill", SKILL]);
    assert!(
        !shown["text"].as_str().unwrap().contains("--fields"),
        "{shown}"
    );

    // A condition and summary that name the situation and the working form are the proposer's.
    let server = proposer_naming(
        "Selecting some fields of a fluxtool stream.",
        "Select takes fields:A,B",
    );
    let store = project(&server, Protocol::OpenAi, "");
    let lesson = &correct_select(&store)["lesson"];
    assert_eq!(
        lesson["applies_when"], "Selecting some fields of a fluxtool stream.",
        "{lesson}"
    );
    assert_eq!(lesson["tiers"]["summary"], "Select takes fields:A,B");
    assert!(lesson["extra"].get("distilled_kept").is_none(), "{lesson}");
}
