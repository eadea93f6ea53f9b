//! `lore embedder …` through the binary on a real SQLite file: train an adapter from recorded
//! feedback, activate it only with the guard, recall with it, roll back; each switch audited.

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";
const TOPICS: [&str; 4] = [
    "invoice totals rounding currency",
    "login password reset email",
    "shipping address postcode courier",
    "refund chargeback bank transfer",
];

/// Four lessons, and executions saying that lesson `k + 1` helped a query about topic `k`.
fn with_feedback(p: &Project) {
    let lines: String = TOPICS
        .iter()
        .map(|t| {
            format!(
                "{{\"skill\":\"{SKILL}\",\"task\":\"triage\",\"lesson\":\"Check the {t} settings first.\"}}\n"
            )
        })
        .collect();
    std::fs::write(p.path().join("lessons.jsonl"), lines).unwrap();
    let learned = p.json(&["learn", "--jsonl", "lessons.jsonl"]);
    let ids: Vec<String> = learned["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["lesson"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 4);
    for i in 0..48 {
        let k = i % 4;
        let input = format!(
            "{{\"task\":\"ticket {i}: customer reports {} trouble\"}}",
            TOPICS[k]
        );
        p.ok(&[
            "record",
            SKILL,
            "--input",
            &input,
            "--output",
            "{}",
            "--outcome",
            "success",
            "--lessons-shown",
            &ids[(k + 1) % 4],
        ]);
    }
}

#[test]
fn an_adapter_is_trained_activated_with_a_guard_and_rolled_back() {
    let p = Project::new().initialized();
    with_feedback(&p);
    let preflight = p.json(&["embedder", "preflight"]);
    assert_eq!(preflight["helpful_pairs"], 48);
    assert_eq!(
        preflight["problems"].as_array().unwrap().len(),
        0,
        "{preflight}"
    );

    let run = p.json(&["embedder", "train", "--by", "ops"]);
    assert_eq!(run["status"], "finished");
    let eval = &run["evaluation"];
    assert_eq!(eval["better"], true, "{eval}");
    assert!(eval["adapter"]["mrr"].as_f64().unwrap() > eval["base"]["mrr"].as_f64().unwrap());
    let checkpoint = run["checkpoint"].as_str().unwrap().to_owned();

    // No confirmation, no reason: refused, and nothing changes.
    let err = p.fails(&[
        "embedder",
        "activate",
        &checkpoint,
        "--by",
        "ops",
        "--reason",
        "x",
    ]);
    assert!(err.contains("confirm"), "{err}");
    let err = p.fails(&[
        "embedder",
        "activate",
        &checkpoint,
        "--by",
        "ops",
        "--confirm",
    ]);
    assert!(err.contains("reason"), "{err}");
    assert!(p.json(&["embedder", "active"])["checkpoint"].is_null());

    p.ok(&[
        "embedder",
        "activate",
        &checkpoint,
        "--by",
        "ops",
        "--confirm",
        "--reason",
        "it helps",
    ]);
    let active = p.json(&["embedder", "active"]);
    assert_eq!(active["checkpoint"], checkpoint.as_str());
    let recalled = p.json(&["recall", "customer reports invoice rounding trouble"]);
    let name = recalled["embedder"]["name"].as_str().unwrap();
    assert!(name.ends_with(&format!("+adapter:{checkpoint}")), "{name}");

    p.ok(&[
        "embedder",
        "rollback",
        "base",
        "--by",
        "ops",
        "--confirm",
        "--reason",
        "back",
    ]);
    let recalled = p.json(&["recall", "customer reports invoice rounding trouble"]);
    assert!(
        !recalled["embedder"]["name"]
            .as_str()
            .unwrap()
            .contains("+adapter")
    );
    let runs = p.json(&["embedder", "runs"]);
    assert_eq!(runs["total"], 1);
    let err = p.fails(&[
        "embedder",
        "rollback",
        "CKPT-unknown",
        "--by",
        "ops",
        "--confirm",
        "--reason",
        "x",
    ]);
    assert!(err.contains("not found"), "{err}");
}
