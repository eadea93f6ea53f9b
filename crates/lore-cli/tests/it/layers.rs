//! The prompt a skill runs with carries seed 004's stacked layers from every door: `lore memory
//! prompt --task`, the prompt `lore run` sends the model, `GET /v1/skills/…/prompt?task=` over
//! loopback and `lore context` all hold the same layers, in the same order, with the same
//! items; a layer whose read fails is left empty with a warning on each door. A real SQLite
//! file, a real server, a fake model on loopback.

use serde_json::{Value, json};

use crate::common::Project;
use crate::serve::Server;
use lore_providers::fake::{FakeServer, Protocol};

const SKILL: &str = "support/summarize-ticket";
const TICKET: &str = "Many customers report errors when paying by card at checkout";
const MEMORY: [&str; 4] = ["lessons", "decisions", "digest", "knowledge"];

/// A project in review curation (a person's correction is approved at once, and recall holds
/// its lesson out only once a run has shown it) with one memory item in each layer, all about card payment errors.
fn seeded() -> Project {
    let p = Project::with_env(vec![("LORE_CURATION", "review".to_owned())]).initialized();
    std::fs::write(
        p.path().join("skills").join(SKILL).join("SKILL.md"),
        "# Summarize a ticket\n\nSummarize the support ticket in two sentences and set its \
         priority.\n",
    )
    .unwrap();
    let exec = p.ok(&[
        "record",
        SKILL,
        "--input",
        &json!({"ticket": TICKET}).to_string(),
        "--output",
        r#"{"summary": "A payment question.", "priority": "normal"}"#,
        "--outcome",
        "rejected",
    ]);
    p.correct(
        SKILL,
        exec.trim(),
        "When many customers report card payment errors at checkout, the priority is urgent \
         and the summary names the failing payment page.",
    );
    let decision = p.json(&[
        "decision",
        "record",
        "--skill",
        SKILL,
        "--situation",
        "Many customers report card payment errors at checkout",
        "--action",
        "Escalate the ticket to the payments on-call engineer",
        "--rationale",
        "Payments failing for many customers is an outage",
        "--by",
        "alice",
    ]);
    let id = decision["id"].as_str().unwrap();
    p.ok(&[
        "decision", "review", id, "--to", "approved", "--reason", "sound", "--by", "bob",
    ]);
    let docs = p.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("payments.md"),
        "# Payments runbook\n\n## Card payment errors at checkout\n\nWhen many customers report \
         card payment errors at checkout, check the payment provider's status page, then the \
         checkout error rate, and name the failing payment page in the ticket.\n",
    )
    .unwrap();
    p.ok(&["ingest", "docs", "--skill", SKILL]);
    p.ok(&["digest", "build"]);
    p
}

/// The layers' names, in order.
fn names(prompt: &Value) -> Vec<String> {
    prompt["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A memory layer's items in a prompt's report.
fn items<'a>(prompt: &'a Value, layer: &str) -> &'a Value {
    &prompt["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == layer)
        .unwrap_or_else(|| panic!("no {layer} in {prompt}"))["items"]
}

/// The body of a REST answer, parsed, after checking its status.
fn body(answer: &str, status: u16) -> Value {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.contains(&format!(" {status} ")), "{answer}");
    serde_json::from_str(body).unwrap()
}

fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn every_door_stacks_the_same_layers_for_a_task() {
    let p = seeded();
    let task = format!("{TICKET}; summarize the ticket");
    let cli = p.json(&["memory", "prompt", SKILL, "--task", &task]);
    assert_eq!(
        names(&cli),
        [
            "workspace",
            "domain",
            "lessons",
            "decisions",
            "digest",
            "knowledge",
            "skill"
        ],
        "{cli}"
    );
    let text = cli["text"].as_str().unwrap();
    let at = |heading: &str| text.find(heading).unwrap_or_else(|| panic!("{text}"));
    assert!(
        at("## Lessons learned") < at("## Decisions people made")
            && at("## Decisions people made") < at("## Digest of approved memory")
            && at("## Digest of approved memory") < at("## Team knowledge")
            && at("## Team knowledge") < at("Summarize the support ticket"),
        "{text}"
    );
    for layer in cli["layers"].as_array().unwrap() {
        if MEMORY.contains(&layer["name"].as_str().unwrap()) {
            let held = layer["items"].as_array().unwrap().len();
            assert!(held > 0, "{layer}");
            assert_eq!(layer["packed"], held, "{layer}");
            assert_eq!(layer["offered"], held, "{layer}");
            assert_eq!(layer["truncated"], false, "{layer}");
        }
    }
    assert_eq!(cli["warnings"], json!([]), "{cli}");

    // `lore context` holds the same items in each layer.
    let context = p.json(&["context", &task, "--skill", SKILL]);
    for layer in context["layers"].as_array().unwrap() {
        let name = layer["layer"].as_str().unwrap();
        assert_eq!(&layer["items"], items(&cli, name), "{name}: {context}");
    }

    // The server answers the same prompt for the same task, and without a task the skill's
    // learned rules, as the CLI does.
    let server = Server::start_with(
        p.path(),
        &["--addr", "127.0.0.1:0"],
        &[("LORE_CURATION", "review")],
    );
    let path = format!("/v1/skills/{SKILL}/prompt");
    let rest = body(&server.get(&format!("{path}?task={}", encoded(&task))), 200);
    assert_eq!(rest["text"], cli["text"]);
    assert_eq!(rest["layers"], cli["layers"]);
    let plain = body(&server.get(&path), 200);
    let cli_plain = p.json(&["memory", "prompt", SKILL]);
    assert_eq!(plain["text"], cli_plain["text"]);
    assert!(
        names(&plain).contains(&"learned_rules".to_owned()),
        "{plain}"
    );
    let refused = body(&server.get(&format!("{path}?tsak=x")), 422);
    assert!(refused.to_string().contains("tsak"), "{refused}");

    // The knowledge layer fails: the others still answer, and every door says why.
    lose_a_table(&p);
    let out = p.run(&["memory", "prompt", SKILL, "--task", &task, "--json"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the knowledge layer is empty"),
        "{stderr}"
    );
    let degraded: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        names(&degraded),
        [
            "workspace",
            "domain",
            "lessons",
            "decisions",
            "digest",
            "skill"
        ],
        "{degraded}"
    );
    let warnings = degraded["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{degraded}");
    assert!(!warnings[0].as_str().unwrap().contains("damaged"));
    let rest = body(&server.get(&format!("{path}?task={}", encoded(&task))), 200);
    assert_eq!(rest["warnings"], degraded["warnings"]);
    assert_eq!(rest["layers"], degraded["layers"]);
    server.terminate();
}

#[test]
fn a_run_sends_the_model_the_prompt_memory_prompt_shows_for_its_task() {
    let answer = r#"{"summary": "Card payments fail for many customers.", "priority": "urgent"}"#;
    let model = FakeServer::scripted(vec![
        Protocol::OpenAi.answer(answer, "gpt-4o-mini"),
        Protocol::OpenAi.answer(answer, "gpt-4o-mini"),
    ]);
    let p = seeded();
    let input = json!({"ticket": TICKET}).to_string();
    // The model only for the run: the correction that seeded the lesson asks no proposer.
    let model_env = [
        ("LORE_LLM_PROVIDER", "openai".to_owned()),
        ("LORE_LLM_BASE_URL", format!("{}/v1", model.url())),
        ("LORE_LLM_MODEL", "gpt-4o-mini".to_owned()),
    ];
    p.ok_with(&["run", SKILL, "--input", &input], &model_env);
    // A run recalls with the skill's name beside its input's text.
    let task = format!("support summarize ticket\n{TICKET}");
    // The run showed the lesson, so it is now being measured: a later recall without a run
    // key sits it out at random, and its place stays empty. The prompt that shows it is the
    // one the run had (the run's own recall came before any activation, so it held none out).
    let full = |prompt: &Value| {
        MEMORY.iter().all(|layer| {
            prompt["layers"]
                .as_array()
                .is_some_and(|ls| ls.iter().any(|l| l["name"] == *layer))
        })
    };
    let shown = (0..40)
        .map(|_| p.json(&["memory", "prompt", SKILL, "--task", &task]))
        .find(full)
        .expect("some prompt for the task shows every layer");
    for layer in MEMORY {
        assert!(
            items(&shown, layer)
                .as_array()
                .is_some_and(|i| !i.is_empty()),
            "{layer}: {shown}"
        );
    }
    let sent = &model.requests()[0];
    let system = sent.body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(
        system.trim_end(),
        shown["text"].as_str().unwrap().trim_end()
    );

    // A run whose knowledge layer fails still runs, says why, and keeps why with its record.
    lose_a_table(&p);
    let out = p.run_with(&["run", SKILL, "--input", &input, "--json"], &model_env);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the knowledge layer is empty"),
        "{stderr}"
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["warnings"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(
        run["execution"]["extra"]["prompt_warnings"], run["warnings"],
        "{run}"
    );
}

/// Loses a table of the store the knowledge layer reads, as a bad restore would.
fn lose_a_table(p: &Project) {
    let conn = rusqlite::Connection::open(p.path().join(".lore/lore.db")).unwrap();
    conn.execute("DROP TABLE knowledge_revision", []).unwrap();
}
