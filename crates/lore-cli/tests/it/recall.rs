//! `lore recall` end to end: text and JSON output, `--explain`, and refused input.

use std::fs;
use std::process::Output;

use lore_providers::fake::{FakeServer, embeddings_answer};
use lore_recall::{BuiltinEmbedder, Embedder};
use serde_json::Value;

struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    /// An initialized project holding three imported lessons of one skill.
    fn with_lessons() -> Self {
        let p = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        p.ok(&["init"]);
        let lesson = |id: &str, rule: &str, when: &str| {
            format!(
                r#"{{"reflexion_id": "{id}", "skill": "support/triage",
                "created_at": "2026-02-20T18:28:36+00:00", "correction_id": "C-{id}",
                "mistake": "Missed it.", "root_cause": "guidance", "rule": "{rule}",
                "applies_when": "{when}", "confidence": 0.9,
                "validated_by_test": false, "generated_test_ids": []}}"#
            )
        };
        let entries = [
            lesson(
                "R-1",
                "Roll back the deploy when checkout returns 500.",
                "Checkout outages.",
            ),
            lesson(
                "R-2",
                "Check the deploy log before blaming checkout.",
                "Checkout errors after a deploy.",
            ),
            lesson(
                "R-3",
                "Invoices need the customer's VAT number.",
                "EU invoices.",
            ),
        ];
        let from = p.dir.path().join("seed");
        fs::create_dir_all(&from).unwrap();
        fs::write(
            from.join("reflexion_entries.json"),
            format!(r#"{{"entries": [{}]}}"#, entries.join(",")),
        )
        .unwrap();
        p.ok(&["import", "--from", "seed"]);
        p
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        crate::common::lore_command()
            .args(args)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .env_remove("LORE_HOME")
            .env_remove("LORE_SKILLS_DIR")
            .env_remove("LORE_ACTOR")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "lore {args:?} failed: {err}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "lore {args:?} should fail: {stdout}");
        String::from_utf8(out.stderr).unwrap()
    }
}

/// The IDs of the lessons a JSON recall placed, in order.
fn lesson_ids(recall: &Value) -> Vec<&str> {
    recall["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect()
}

#[test]
fn a_topic_two_lessons_share_still_meets_a_condition_in_other_words() {
    let p = Project::with_lessons();
    // "checkout" and "deploy" are in two of the three lessons: a topic of the skill, not a
    // word every lesson of it carries, so the condition "Checkout errors after a deploy." is
    // met by a task that says "fails" instead of "errors".
    let json = p.json(&["recall", "checkout fails after deploy", "--explain"]);
    let ids = lesson_ids(&json);
    assert!(ids.contains(&"R-2"), "{ids:?}: {:#}", json["explain"]);
    assert!(!ids.contains(&"R-3"), "{ids:?}");
}

#[test]
fn recall_prints_the_packed_lessons_as_text_and_json() {
    let p = Project::with_lessons();
    // The two checkout lessons state when they apply ("Checkout outages.", "Checkout errors
    // after a deploy."); the task names both situations.
    let query = "checkout errors and outages after a deploy";
    let text = p.ok(&["recall", query]);
    assert!(text.contains("R-1") && text.contains("R-2"), "{text}");
    assert!(text.contains("cl100k_base"), "names its tokenizer: {text}");
    assert!(
        !text.contains("dropped"),
        "no explanation unless asked: {text}"
    );

    let json = p.json(&["recall", query, "--encoding", "o200k_base"]);
    let ids = lesson_ids(&json);
    assert!(ids.contains(&"R-1") && ids.contains(&"R-2"), "{ids:?}");
    assert_ne!(ids[0], "R-3", "the unrelated lesson does not lead: {ids:?}");
    assert_eq!(json["tokenizer"], "o200k_base");
    assert!(json["tokens"].as_u64().unwrap() <= json["budget"].as_u64().unwrap());
    assert!(
        json["embedder"]["name"]
            .as_str()
            .unwrap()
            .starts_with("builtin-hash-idf")
    );
    assert!(json.get("explain").is_none(), "{json}");
}

#[test]
fn explain_shows_dropped_candidates_with_their_reasons() {
    let p = Project::with_lessons();
    let json = p.json(&["recall", "checkout deploy", "-n", "1", "--explain"]);
    let explain = json["explain"].as_array().unwrap();
    assert_eq!(json["lessons"].as_array().unwrap().len(), 1, "{json}");
    let dropped: Vec<&Value> = explain
        .iter()
        .filter(|e| e["decision"] == "dropped")
        .collect();
    assert!(!dropped.is_empty(), "{json}");
    assert!(
        dropped.iter().all(|e| e["reason"].is_string()),
        "every drop says why: {json}"
    );
    assert!(
        dropped.iter().any(|e| e["reason"] == "over_limit"),
        "{json}"
    );

    let text = p.ok(&["recall", "checkout deploy", "-n", "1", "--explain"]);
    assert!(text.contains("kept #1"), "{text}");
    assert!(text.contains("dropped: over_limit"), "{text}");
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let p = Project::with_lessons();
    let err = p.fails(&["recall", "checkout", "--encoding", "p50k_nope"]);
    assert!(err.contains("p50k_nope"), "{err}");
    let err = p.fails(&["recall", "checkout", "--budget", "0"]);
    assert!(err.to_lowercase().contains("budget"), "{err}");
    let err = p.fails(&["recall", "checkout", "-n", "0"]);
    assert!(err.contains("limit"), "{err}");
    let err = p.fails(&["recall", "   "]);
    assert!(err.contains("query"), "{err}");
}

#[test]
fn reembed_refits_and_recall_uses_the_new_fit() {
    let p = Project::with_lessons();
    let before = p.json(&["recall", "checkout deploy"]);
    let fitted = before["embedder"]["name"].as_str().unwrap().to_owned();
    assert!(
        fitted.starts_with("builtin-hash-idf-v1+corpus-"),
        "{before}"
    );
    // Not a terminal: no progress bar, only the report.
    let out = p.run(&["reembed"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("re-embedded 3 lessons with builtin-hash-idf-v1"),
        "{text}"
    );
    let report = p.json(&["reembed"]);
    assert_eq!(report["lessons"], 3);
    assert_eq!(
        report["embedder"]["name"],
        fitted.as_str(),
        "the same lessons fit the same"
    );
    let ids = |v: &Value| -> Vec<String> {
        v["lessons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].to_string())
            .collect()
    };
    let after = p.json(&["recall", "checkout deploy"]);
    assert_eq!(
        ids(&after),
        ids(&before),
        "recency moved on; the order did not"
    );
    let err = p.fails(&["reembed", "--lessons-from", "x"]);
    assert!(err.contains("--lessons-from"), "{err}");
}

#[test]
fn recall_uses_an_http_embedder_when_asked() {
    let p = Project::with_lessons();
    // A service whose vectors are the builtin embedder's: enough meaning to rank by.
    let server = FakeServer::start(|request| {
        let model = BuiltinEmbedder::with_dim(64).unwrap();
        let vectors: Vec<Vec<f32>> = request.body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| model.embed(t.as_str().unwrap()).unwrap())
            .collect();
        embeddings_answer(&vectors, "fake-embed")
    });
    let base = format!("{}/v1", server.url());
    let env = [
        ("LORE_EMBEDDER_BASE_URL", base.as_str()),
        ("LORE_EMBEDDER_MODEL", "fake-embed"),
    ];
    let args = [
        "recall",
        "checkout fails after deploy",
        "--embedder",
        "http",
        "--json",
    ];
    let out = p.run_with(&args, &env);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["embedder"]["name"], "openai-embeddings:fake-embed");
    assert_eq!(json["embedder"]["dim"], 64);
    assert_eq!(
        json["lessons"][0]["id"].as_str().unwrap().get(..2),
        Some("R-")
    );
    let seen = server.requests();
    assert!(seen.iter().all(|r| r.path == "/v1/embeddings"));
    let inputs: Vec<&str> = seen
        .iter()
        .flat_map(|r| r.body["input"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        inputs.contains(&"checkout fails after deploy"),
        "{inputs:?}"
    );

    // The same choice through the environment.
    let env_choice = [("LORE_EMBEDDER", "http"), env[0], env[1]];
    let out = p.run_with(&args[..2], &env_choice);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("openai-embeddings:fake-embed"));

    // The store's vectors are now the service's: another embedder is refused, not compared.
    let err = p.fails(&["recall", "checkout"]);
    assert!(
        err.contains("fake-embed") && err.contains("reembed"),
        "{err}"
    );
}

#[test]
fn unusable_embedders_are_refused_by_name() {
    let p = Project::with_lessons();
    let err = p.fails(&["recall", "checkout", "--embedder", "word2vec"]);
    assert!(
        err.contains("word2vec") && err.contains("builtin, minilm or http"),
        "{err}"
    );

    let refused = |env: &[(&str, &str)]| {
        let out = p.run_with(&["recall", "checkout"], env);
        assert!(!out.status.success(), "{env:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    };
    let err = refused(&[
        ("LORE_EMBEDDER", "minilm"),
        ("LORE_MINILM_PATH", "/no/such/model"),
    ]);
    assert!(err.contains("minilm embedder"), "{err}");
    assert!(
        err.contains("/no/such/model") || err.contains("--features minilm"),
        "names the folder, or the missing feature: {err}"
    );
    let err = refused(&[("LORE_EMBEDDER", "http")]);
    assert!(err.contains("LORE_EMBEDDER_MODEL"), "{err}");
    let err = refused(&[
        ("LORE_EMBEDDER", "http"),
        ("LORE_EMBEDDER_MODEL", "m"),
        ("LORE_EMBEDDER_BASE_URL", "ftp://example.invalid"),
    ]);
    assert!(err.contains("LORE_EMBEDDER_BASE_URL"), "{err}");
}
