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
pub(crate) fn with_feedback(p: &Project) {
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
            "{{\"task\":\"ticket {i}: customer reports {} trouble\",\"task_type\":\"topic-{k}\"}}",
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
fn whole_task_types_are_held_out_on_request_and_a_bad_split_is_named() {
    let p = Project::new().initialized();
    with_feedback(&p);
    let by_type = p.json(&["embedder", "preflight", "--held-out-by", "task_type"]);
    assert_eq!(by_type["task_types"], 4, "{by_type}");
    // Every query of a type falls on one side: 12 runs per type.
    let held = by_type["held_out_pairs"].as_u64().unwrap();
    assert_eq!(held % 12, 0, "{by_type}");
    let err = p.fails(&["embedder", "train", "--held-out-by", "skill"]);
    assert!(err.contains("query or task_type"), "{err}");
    assert_eq!(p.json(&["embedder", "runs"])["total"], 0, "nothing ran");
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

/// The audit entries of `subject`, read straight from the store's file.
fn audit_of(p: &Project, subject: &str) -> Vec<serde_json::Value> {
    let conn = rusqlite::Connection::open(p.path().join(".lore/lore.db")).unwrap();
    let bodies: Vec<String> = conn
        .prepare("SELECT body FROM audit WHERE subject = ? ORDER BY seq")
        .unwrap()
        .query_map([subject], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect()
}

#[test]
fn a_checkpoint_is_deleted_only_with_the_guard_and_never_while_recall_uses_it() {
    let p = Project::new().initialized();
    with_feedback(&p);
    let run = p.json(&["embedder", "train", "--by", "ops", "--epochs", "5"]);
    let checkpoint = run["checkpoint"].as_str().unwrap().to_owned();
    let guard = ["--by", "ops", "--confirm", "--reason", "stale"];
    let activate = [&["embedder", "activate", checkpoint.as_str()][..], &guard].concat();
    if run["evaluation"]["better"] == true {
        p.ok(&activate);
        let delete = [
            &["embedder", "delete-checkpoint", checkpoint.as_str()][..],
            &guard,
        ]
        .concat();
        let err = p.fails(&delete);
        assert!(err.contains("recall uses"), "{err}");
        assert_eq!(p.json(&["embedder", "active"])["checkpoint"], checkpoint);
        let back = [&["embedder", "rollback", "base"][..], &guard].concat();
        p.ok(&back);
    }
    for (missing, args) in [
        (
            "reason",
            &["--by", "ops", "--confirm", "--reason", "  "][..],
        ),
        ("confirm", &["--by", "ops", "--reason", "stale"][..]),
        ("actor", &["--confirm", "--reason", "stale"][..]),
    ] {
        let cmd = [
            &["embedder", "delete-checkpoint", checkpoint.as_str()][..],
            args,
        ]
        .concat();
        let err = p.fails(&cmd);
        assert!(err.contains(missing), "{missing}: {err}");
    }
    let listed = p.json(&["embedder", "checkpoints"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");

    let delete = [
        &["embedder", "delete-checkpoint", checkpoint.as_str()][..],
        &guard,
    ]
    .concat();
    let deleted = p.json(&delete);
    assert_eq!(deleted["deleted"], checkpoint, "{deleted}");
    assert_eq!(p.json(&["embedder", "checkpoints"]), serde_json::json!([]));
    // The run that made it keeps its figures.
    let runs = p.json(&["embedder", "runs"]);
    assert!(runs["runs"][0]["evaluation"].is_object(), "{runs}");
    let audit = audit_of(&p, &checkpoint);
    let last = audit.last().expect("the deletion is audited");
    assert_eq!(last["evidence"]["operation"], "delete", "{last}");
    assert_eq!(last["reason"], "stale", "{last}");
    let err = p.fails(&delete);
    assert!(err.contains("not found"), "{err}");
}

/// One request to `lore serve` over loopback: the status code and the JSON body.
fn call(
    server: &crate::serve::Server,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, serde_json::Value) {
    let answer = server.request(method, path, None, body);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer}"));
    let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    (
        status,
        serde_json::from_str(json).unwrap_or(serde_json::Value::Null),
    )
}

#[test]
fn rest_over_loopback_trains_refuses_an_unguarded_switch_and_activates() {
    let p = Project::new().initialized();
    with_feedback(&p);
    let server = crate::serve::Server::start(p.path());
    let (status, active) = call(&server, "GET", "/v1/embedder", None);
    assert_eq!(status, 200, "{active}");
    assert!(active["checkpoint"].is_null());

    let (status, bad) = call(
        &server,
        "POST",
        "/v1/embedder/runs",
        Some(r#"{"plan": {"epochs": 0}}"#),
    );
    assert_eq!(status, 422, "{bad}");
    assert!(bad.to_string().contains("plan.epochs"), "{bad}");
    let (status, run) = call(&server, "POST", "/v1/embedder/runs", Some("{}"));
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["evaluation"]["better"], true, "{run}");
    let checkpoint = run["checkpoint"].as_str().unwrap().to_owned();
    let (status, runs) = call(&server, "GET", "/v1/embedder/runs", None);
    assert_eq!((status, runs["total"].as_u64()), (200, Some(1)), "{runs}");

    let activate = format!("/v1/embedder/checkpoints/{checkpoint}/activate");
    let unconfirmed = r#"{"actor": "ops", "confirm": false, "reason": "helps"}"#;
    let (status, refused) = call(&server, "POST", &activate, Some(unconfirmed));
    assert_eq!(status, 422, "{refused}");
    assert!(refused.to_string().contains("confirm"), "{refused}");
    let (_, active) = call(&server, "GET", "/v1/embedder", None);
    assert!(
        active["checkpoint"].is_null(),
        "an unguarded switch changed the embedder"
    );

    let guarded = r#"{"actor": "ops", "confirm": true, "reason": "helps"}"#;
    let (status, switch) = call(&server, "POST", &activate, Some(guarded));
    assert_eq!(status, 200, "{switch}");
    let (_, recalled) = call(
        &server,
        "POST",
        "/v1/recall",
        Some(r#"{"query": "customer reports invoice rounding trouble"}"#),
    );
    let name = recalled["embedder"]["name"].as_str().unwrap_or_default();
    assert!(name.ends_with(&checkpoint), "{recalled}");

    let (status, back) = call(
        &server,
        "POST",
        "/v1/embedder/rollback",
        Some(r#"{"to": "base", "actor": "ops", "confirm": true, "reason": "compare"}"#),
    );
    assert_eq!(status, 200, "{back}");
    assert!(back["to"].is_null(), "{back}");
    // The CLI, another process on the same file, sees the switch.
    assert!(p.json(&["embedder", "active"])["checkpoint"].is_null());

    // A run named in the path reads with no body; a resume with none is read the same way.
    let (status, one) = call(
        &server,
        "GET",
        &format!("/v1/embedder/runs/{}", run["id"].as_str().unwrap()),
        None,
    );
    assert_eq!((status, &one["id"]), (200, &run["id"]), "{one}");
    let resume = format!("/v1/embedder/runs/{}/resume", run["id"].as_str().unwrap());
    let (status, finished) = call(&server, "POST", &resume, None);
    assert_eq!(
        (status, finished["error"]["code"].as_str()),
        (409, Some("conflict")),
        "{finished}"
    );
    let (status, page) = call(&server, "GET", "/v1/embedder/checkpoints?limit=1", None);
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["checkpoints"][0]["id"], checkpoint.as_str(), "{page}");
    let delete = format!("/v1/embedder/checkpoints/{checkpoint}/delete");
    let blank = r#"{"actor": "ops", "confirm": true, "reason": " "}"#;
    let (status, refused) = call(&server, "POST", &delete, Some(blank));
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reason"),
        "{refused}"
    );
    let (status, deleted) = call(&server, "POST", &delete, Some(guarded));
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deleted"], checkpoint.as_str(), "{deleted}");
    let (status, gone) = call(&server, "POST", &delete, Some(guarded));
    assert_eq!(
        (status, gone["error"]["code"].as_str()),
        (404, Some("not_found")),
        "{gone}"
    );
}
