//! `lore episode` and `lore graph` end to end: recording from a file and standard input, the
//! queries with `--json`, token budgets counted with tiktoken, and bad input refused with
//! nothing stored.

use std::io::Write;
use std::process::Stdio;

use crate::common::Project;
use serde_json::{Value, json};

const SKILL: &str = "dev/router";

fn episode(id: &str, outcome: &str, chosen: &str) -> Value {
    json!({
      "id": id,
      "session": format!("session-{id}"),
      "timestamp": "2026-01-01T17:00:00Z",
      "outcome": outcome,
      "task": "Implement MemoryRouter module",
      "decisions": [{
          "id": "d001", "type": "design", "context": "Choosing routing strategy",
          "options": ["Forgetful-first", "Serena-first", "Parallel"],
          "chosen": chosen, "rationale": "Lower latency", "effects": ["e001"]
      }],
      "events": [{"id": "e001", "type": "tool_call", "content": "Created MemoryRouter.psm1",
                  "caused_by": ["d001"]}],
      "metrics": {"duration_minutes": 45, "tool_calls": 87, "errors": 2, "recoveries": 2},
      "lessons": ["Pre-commit hooks check all markdown"]
    })
}

fn write(p: &Project, name: &str, value: &Value) -> String {
    std::fs::write(p.path().join(name), value.to_string()).unwrap();
    name.to_owned()
}

fn episodes(p: &Project) -> usize {
    p.json(&["episode", "list"])["items"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn episodes_are_recorded_listed_shown_and_queried() {
    let p = Project::new().initialized();
    let file = write(&p, "a.json", &episode("ep-a", "success", "Serena-first"));
    let out = p.ok(&["episode", "add", &file, "--skill", SKILL]);
    assert!(out.contains("Recorded episode ep-a"), "{out}");

    // Standard input, the skill inside the JSON.
    let mut b = episode("ep-b", "failure", "Parallel");
    b["skill"] = json!(SKILL);
    let mut child = crate::common::lore_command()
        .args(["episode", "add", "-", "--json"])
        .current_dir(p.path())
        .env_remove("LORE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let receipt: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(receipt["episode"]["id"], "ep-b");
    assert_eq!(receipt["replaced"], false);

    let list = p.json(&["episode", "list", "--outcome", "failure"]);
    assert_eq!(list["items"][0]["id"], "ep-b");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        p.json(&["episode", "list", "--since", "2026-01-02"])["items"],
        json!([])
    );

    let shown = p.json(&["episode", "show", "ep-a"]);
    assert_eq!(shown["episode"]["decisions"][0]["chosen"], "Serena-first");
    assert_eq!(shown["budget"], 500);
    assert!(shown["tokens"].as_u64().unwrap() <= 500);
    let text = p.ok(&["episode", "show", "ep-a", "--budget", "25"]);
    assert!(text.contains("cut to fit"), "{text}");
    let seq = p.json(&["episode", "show", "ep-a", "--decisions"]);
    assert_eq!(seq["decisions"][0]["id"], "d001");

    let path = p.json(&[
        "graph",
        "path",
        "--from",
        "decision:parallel",
        "--to",
        "outcome:failure",
    ]);
    assert_eq!(path["steps"].as_array().unwrap().len(), 2, "{path}");
    assert_eq!(
        path["steps"][0]["target"]["label"],
        "created memoryrouter.psm1"
    );
    assert!(path["tokens"].as_u64().unwrap() <= 200);

    let what_if = p.json(&["graph", "what-if", "ep-b", "d001", "Serena-first"]);
    assert_eq!(what_if["evidence"], true);
    assert_eq!(what_if["alternative_stats"]["success_rate"], 1.0);
    let none = p.ok(&["graph", "what-if", "ep-b", "d001", "Forgetful-first"]);
    assert!(none.contains("No evidence"), "{none}");

    let similar = p.json(&["graph", "similar", "routing strategy"]);
    assert_eq!(similar["decisions"].as_array().unwrap().len(), 2);
    let good = p.json(&["graph", "patterns", "--min-occurrences", "1"]);
    assert_eq!(good["patterns"][0]["action"], "serena-first");
    let bad = p.json(&["graph", "anti-patterns", "--min-occurrences", "1"]);
    assert_eq!(bad["patterns"][0]["action"], "parallel");
    assert!(bad["tokens"].as_u64().unwrap() <= 100);

    // Re-recording is refused; --replace replaces.
    let err = p.fails(&["episode", "add", &file, "--skill", SKILL]);
    assert!(err.contains("already exists"), "{err}");
    let replaced = p.ok(&["episode", "add", &file, "--skill", SKILL, "--replace"]);
    assert!(replaced.contains("Replaced episode ep-a"), "{replaced}");
    assert_eq!(episodes(&p), 2);
}

#[test]
fn bad_episodes_are_refused_and_nothing_is_stored() {
    let p = Project::new().initialized();
    let mut cases: Vec<(Value, &str)> = Vec::new();
    let mut v = episode("x", "success", "Serial");
    cases.push((v.clone(), "decisions[0].chosen"));
    v = episode("x", "meh", "Parallel");
    cases.push((v.clone(), "outcome"));
    v = episode("x", "success", "Parallel");
    v["events"][0]["caused_by"] = json!(["d404"]);
    cases.push((v.clone(), "events[0].caused_by[0]"));
    v = episode("x", "success", "Parallel");
    v["decisions"][0]["type"] = json!("vibes");
    cases.push((v.clone(), "decisions[0].type"));
    v = episode("x", "success", "Parallel");
    v["skill"] = json!("other/skill");
    cases.push((v.clone(), "skill"));
    for (i, (value, needle)) in cases.iter().enumerate() {
        let file = write(&p, &format!("bad{i}.json"), value);
        let err = p.fails(&["episode", "add", &file, "--skill", SKILL]);
        assert!(err.contains(needle), "{needle}: {err}");
    }
    std::fs::write(p.path().join("broken.json"), "{not json").unwrap();
    assert!(
        p.fails(&["episode", "add", "broken.json", "--skill", SKILL])
            .contains("not JSON")
    );
    let good = write(&p, "nosk.json", &episode("x", "success", "Parallel"));
    assert!(p.fails(&["episode", "add", &good]).contains("skill"));
    assert!(
        p.fails(&["episode", "add", &good, "--skill", "../etc"])
            .contains("relative")
    );
    assert!(
        p.fails(&["episode", "list", "--outcome", "maybe"])
            .contains("partial")
    );
    assert!(
        p.fails(&["episode", "list", "--since", "soon"])
            .contains("RFC 3339")
    );
    assert!(p.fails(&["episode", "show", "nope"]).contains("not found"));
    assert_eq!(episodes(&p), 0);
    let err = p.fails(&["graph", "patterns", "--min-success-rate", "7"]);
    assert!(err.contains("min_success_rate"), "{err}");
}

const LOG: &str = "# Session s-126
Date: 2026-01-01T17:00:00Z
Outcome: failure
Task: Speed up candidate search

## Decisions
### d1 [design] Choosing a cache for candidate lookups
- Options: Redis | Memcached
- Chosen: Redis
- Rationale: Already deployed
- Effects: e1

## Events
- e1 [error] Cache timeout under load (caused by: d1)

## Metrics
- tool_calls: 12

## Lessons
- Load-test the cache before rollout
";

#[test]
fn extract_turns_a_markdown_log_into_a_recorded_episode() {
    let p = Project::new().initialized();
    std::fs::write(p.path().join("s.md"), LOG).unwrap();
    let dry = p.json(&["episode", "extract", "s.md", "--skill", SKILL, "--dry-run"]);
    assert_eq!(dry["decisions"][0]["chosen"], "Redis");
    assert_eq!(dry["events"][0]["caused_by"], json!(["d1"]));
    assert_eq!(episodes(&p), 0, "a dry run stores nothing");
    let receipt = p.json(&["episode", "extract", "s.md", "--skill", SKILL]);
    let id = receipt["episode"]["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("EPI-"), "{id}");
    assert_eq!(receipt["episode"]["session"], "s-126");
    let path = p.json(&["graph", "path", "--from", "redis", "--to", "failure"]);
    assert_eq!(path["steps"].as_array().unwrap().len(), 2);

    let broken = LOG.replace("- e1 [error]", "- e1 [oops]");
    std::fs::write(p.path().join("bad.md"), broken).unwrap();
    let err = p.fails(&["episode", "extract", "bad.md", "--skill", SKILL]);
    assert!(
        err.contains("line 14") && err.contains("event type"),
        "{err}"
    );
    let dangling = LOG.replace("(caused by: d1)", "(caused by: d9)");
    std::fs::write(p.path().join("dangling.md"), dangling).unwrap();
    let err = p.fails(&["episode", "extract", "dangling.md", "--skill", SKILL]);
    assert!(err.contains("events[0].caused_by[0]"), "{err}");
    assert!(p.fails(&["episode", "extract", "s.md"]).contains("skill"));
    assert_eq!(episodes(&p), 1);
}

/// `lore episode extract --dry-run | head`: a reader that stops early is not an error.
#[test]
fn a_dry_run_piped_into_a_reader_that_closes_early_exits_cleanly() {
    let p = Project::new().initialized();
    std::fs::write(p.path().join("s.md"), LOG).unwrap();
    let mut child = crate::common::lore_command()
        .args(["episode", "extract", "s.md", "--skill", SKILL, "--dry-run"])
        .current_dir(p.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The read end closes before the command writes, so its first write meets a broken pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// `lore graph export`: the graph in seed 001's `causal-graph.json` shape, to stdout or a file,
/// and as DOT; a bad format is refused by name.
#[test]
fn the_causal_graph_exports_as_seed_json_and_as_dot() {
    let p = Project::new().initialized();
    std::fs::write(p.path().join("s.md"), LOG).unwrap();
    p.json(&["episode", "extract", "s.md", "--skill", SKILL]);
    let graph: serde_json::Value = serde_json::from_str(&p.ok(&["graph", "export"])).unwrap();
    assert_eq!(graph["version"], "1.0");
    let nodes = graph["nodes"].as_array().unwrap();
    let redis = nodes
        .iter()
        .find(|n| n["type"] == "decision" && n["label"].as_str().unwrap().contains("redis"))
        .expect("the decision is a node");
    assert_eq!(redis["frequency"], 1);
    let ids: Vec<&serde_json::Value> = nodes.iter().map(|n| &n["id"]).collect();
    let edges = graph["edges"].as_array().unwrap();
    assert!(edges.iter().any(|e| e["source"] == redis["id"]), "{graph}");
    assert!(
        edges
            .iter()
            .all(|e| ids.contains(&&e["source"]) && ids.contains(&&e["target"]))
    );

    p.ok(&["graph", "export", "--format", "dot", "--out", "g.dot"]);
    let dot = std::fs::read_to_string(p.path().join("g.dot")).unwrap();
    assert!(
        dot.starts_with("digraph causal {") && dot.contains(" -> "),
        "{dot}"
    );
    let err = p.fails(&["graph", "export", "--format", "svg"]);
    assert!(err.contains("expected json or dot"), "{err}");
}

mod model {
    use super::*;
    use lore_providers::fake::{FakeServer, Protocol};

    fn project(server: &FakeServer) -> Project {
        Project::with_env(vec![
            ("LORE_LLM_PROVIDER", "openai".to_owned()),
            ("LORE_LLM_BASE_URL", format!("{}/v1", server.url())),
            ("LORE_LLM_MODEL", "gpt-4o-mini".to_owned()),
        ])
        .initialized()
    }

    fn answer() -> Value {
        json!({
            "session": "s-9", "timestamp": "2026-01-02T09:00:00Z", "outcome": "success",
            "task": "Fix the flaky export",
            "decisions": [{"id": "d1", "type": "recovery", "context": "Export times out",
                           "options": ["retry", "stream"], "chosen": "stream", "effects": ["e1"]}],
            "events": [{"id": "e1", "type": "milestone", "content": "Export streams in 2 s"}],
            "lessons": ["Stream large exports"]
        })
    }

    #[test]
    fn the_model_extracts_a_checked_episode_over_a_fake_server() {
        let server = FakeServer::scripted(vec![Protocol::OpenAi.answer(
            &format!("Here it is:\n```json\n{}\n```", answer()),
            "gpt-4o-mini",
        )]);
        let p = project(&server);
        std::fs::write(
            p.path().join("free.md"),
            "We fixed the export by streaming it.",
        )
        .unwrap();
        let receipt = p.json(&["episode", "extract", "free.md", "--skill", SKILL, "--llm"]);
        assert_eq!(receipt["episode"]["decisions"][0]["chosen"], "stream");
        assert_eq!(receipt["episode"]["skill"], SKILL);
        let sent = server.requests();
        assert_eq!(sent.len(), 1);
        let text = sent[0].all_text();
        assert!(
            text.contains("We fixed the export by streaming it."),
            "{text}"
        );
        assert!(text.contains("\"chosen\""), "the schema is sent: {text}");
        assert_eq!(episodes(&p), 1);
    }

    #[test]
    fn an_invalid_answer_is_an_error_and_nothing_is_stored() {
        // Twice off-schema (the second answers the repair), then valid JSON breaking a rule.
        let mut unknown = answer();
        unknown["mood"] = json!("great");
        let mut dangling = answer();
        dangling["events"][0]["caused_by"] = json!(["d7"]);
        let server = FakeServer::scripted(vec![
            Protocol::OpenAi.answer("I could not find any decisions.", "gpt-4o-mini"),
            Protocol::OpenAi.answer(&unknown.to_string(), "gpt-4o-mini"),
            Protocol::OpenAi.answer(&dangling.to_string(), "gpt-4o-mini"),
        ]);
        let p = project(&server);
        std::fs::write(p.path().join("free.md"), "A session.").unwrap();
        let args = ["episode", "extract", "free.md", "--skill", SKILL, "--llm"];
        let err = p.fails(&args);
        assert!(err.contains("mood") || err.contains("schema"), "{err}");
        let err = p.fails(&args);
        assert!(err.contains("events[0].caused_by[0]"), "{err}");
        assert!(err.contains("nothing was stored"), "{err}");
        assert_eq!(server.requests().len(), 3);
        assert_eq!(episodes(&p), 0);
        assert!(
            p.fails(&["episode", "extract", "free.md", "--llm"])
                .contains("--skill")
        );
    }
}

#[test]
fn the_episode_benchmark_reports_every_query() {
    let p = Project::new();
    let report = p.json(&["bench", "episodes", "--sizes", "30"]);
    let size = &report[0];
    assert_eq!(size["episodes"], 30);
    for key in [
        "record_p50_ms",
        "causal_path_p50_ms",
        "what_if_p50_ms",
        "patterns_p50_ms",
    ] {
        assert!(size[key].as_f64().unwrap() >= 0.0, "{key}: {report}");
    }
}

/// A project with ep-a (a success) and ep-b (a failure), recorded through the CLI.
fn with_two_episodes() -> Project {
    let p = Project::new().initialized();
    for (id, outcome, chosen) in [
        ("ep-a", "success", "Serena-first"),
        ("ep-b", "failure", "Parallel"),
    ] {
        let file = write(&p, &format!("{id}.json"), &episode(id, outcome, chosen));
        p.ok(&["episode", "add", &file, "--skill", SKILL]);
    }
    p
}

#[test]
fn export_and_import_carry_episodes_and_a_bad_line_stores_nothing() {
    let from = with_two_episodes();
    let dump = from.path().join("dump.jsonl");
    from.ok(&["export", "--jsonl", dump.to_str().unwrap()]);
    let queries: [&[&str]; 3] = [
        &["graph", "what-if", "ep-b", "d001", "Serena-first"],
        &["graph", "similar", "routing strategy"],
        &["graph", "anti-patterns", "--min-occurrences", "1"],
    ];

    let to = Project::new().initialized();
    let report = to.json(&["import", "--jsonl", dump.to_str().unwrap()]);
    assert_eq!(report["episodes"], 2, "{report}");
    for q in queries {
        assert_eq!(to.json(q), from.json(q), "{q:?}");
    }
    let again = to.ok(&["import", "--jsonl", dump.to_str().unwrap()]);
    assert!(
        again.contains("2 episodes") && again.contains("stored 0"),
        "{again}"
    );

    // A new episode, then a broken one: the import fails naming the line and the field.
    let line = |v: Value| json!({"type": "episode", "record": v}).to_string();
    let mut new = episode("ep-c", "success", "Parallel");
    new["skill"] = json!(SKILL);
    let mut broken = new.clone();
    broken["id"] = json!("ep-d");
    broken["decisions"][0]["chosen"] = json!("Serial");
    let bad = to.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\n{}\n", line(new), line(broken))).unwrap();
    let err = to.fails(&["import", "--jsonl", bad.to_str().unwrap()]);
    assert!(err.contains("line 2: decisions[0].chosen"), "{err}");
    assert_eq!(episodes(&to), 2);
}

#[test]
fn purge_erases_an_episode_and_the_graph_forgets_it() {
    let p = with_two_episodes();
    let similar = || p.json(&["graph", "similar", "routing strategy"])["decisions"].clone();
    assert_eq!(similar().as_array().unwrap().len(), 2);
    assert!(p.fails(&["episode", "purge", "ep-b"]).contains("--reason"));
    let err = p.fails(&["episode", "purge", "ep-b", "--reason", " "]);
    assert!(err.contains("reason"), "{err}");
    let err = p.fails(&["episode", "purge", "ep-z", "--reason", "erasure"]);
    assert!(err.contains("not found"), "{err}");
    assert_eq!(similar().as_array().unwrap().len(), 2);

    let out = p.ok(&[
        "episode", "purge", "ep-b", "--reason", "erasure", "--by", "dpo",
    ]);
    assert!(
        out.contains("ep-b purged: 1 decision(s) and 1 event(s)"),
        "{out}"
    );
    let shown = p.json(&["episode", "show", "ep-b"]);
    assert_eq!(shown["episode"]["task"], "[purged]");
    assert!(!shown.to_string().contains("Parallel"), "{shown}");
    let left = similar();
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(left[0]["episode"], "ep-a");
    let bad = p.json(&["graph", "anti-patterns", "--min-occurrences", "1"]);
    assert!(bad["patterns"].as_array().unwrap().is_empty(), "{bad}");
}

#[test]
fn memory_search_finds_an_episode_by_its_words() {
    let p = Project::new().initialized();
    let file = write(&p, "a.json", &episode("ep-1", "success", "Serena-first"));
    p.ok(&["episode", "add", &file, "--skill", SKILL]);
    let hits = p.json(&["memory", "search", "MemoryRouter psm1", "--skill", SKILL]);
    let hits = hits.as_array().unwrap();
    let found = hits
        .iter()
        .find(|h| h["kind"] == "episode")
        .unwrap_or_else(|| panic!("no episode among {hits:?}"));
    assert_eq!(found["id"], "ep-1");
    assert!(
        found["snippet"].as_str().unwrap().contains("MemoryRouter"),
        "{found}"
    );
    let elsewhere = p.json(&[
        "memory",
        "search",
        "MemoryRouter psm1",
        "--skill",
        "ops/deploy",
    ]);
    assert!(!elsewhere.to_string().contains("ep-1"), "{elsewhere}");
}

/// At the end of a session an agent over MCP hands `record_episode` the log it kept, in the same
/// markdown `lore episode extract` reads; giving both forms is refused and stores nothing.
#[test]
fn an_mcp_client_records_a_session_log_at_the_end_of_a_session() {
    if !crate::serve::python_module_available("mcp", "mcp==2.3.0", "the MCP extraction test") {
        return;
    }
    let p = Project::new().initialized();
    let log = p.path().join("s.md");
    std::fs::write(&log, LOG).unwrap();
    let answer = crate::settings::mcp_checks(&p, &["extract", log.to_str().unwrap(), SKILL]);
    let refused = answer["both_refused"].as_str().unwrap();
    assert!(refused.contains("one of them"), "{answer}");
    let recorded = &answer["recorded"]["episode"];
    assert_eq!(recorded["skill"], SKILL, "{answer}");
    assert_eq!(
        recorded["decisions"].as_array().map(Vec::len),
        Some(1),
        "{answer}"
    );
    assert_eq!(episodes(&p), 1);
    let path = p.json(&["graph", "path", "--from", "redis", "--to", "failure"]);
    assert_eq!(path["steps"].as_array().unwrap().len(), 2);
}

/// With `recall.episodes`, a recall adds the past sessions that match the task after its
/// lessons, within the budget and quoted with their provenance; by default it adds none.
#[test]
fn recall_adds_matching_past_sessions_when_asked() {
    let p = Project::new().initialized();
    let file = write(&p, "a.json", &episode("ep-1", "failure", "Parallel"));
    p.ok(&["episode", "add", &file, "--skill", SKILL]);
    let query = [
        "recall",
        "routing strategy for MemoryRouter",
        "--skill",
        SKILL,
    ];
    let plain = p.json(&query);
    assert!(plain.get("episodes").is_none(), "{plain}");

    let mut asked = query.to_vec();
    asked.extend(["--set", "recall.episodes=2"]);
    let with = p.json(&asked);
    assert_eq!(with["episodes"][0]["id"], "ep-1", "{with}");
    assert_eq!(with["episodes"][0]["outcome"], "failure", "{with}");
    let text = with["text"].as_str().unwrap();
    assert!(
        text.contains("Past session ep-1 (dev/router, failure), from its record: \""),
        "{text}"
    );
    assert!(with["tokens"].as_u64().unwrap() <= with["budget"].as_u64().unwrap());

    asked.extend(["--budget", "5"]);
    let tight = p.json(&asked);
    assert!(tight.get("episodes").is_none(), "over the budget: {tight}");
    let err = p.fails(&["--set", "recall.episodes=50", "recall", "routing"]);
    assert!(err.contains("recall.episodes: 50 is above 20"), "{err}");
}
