//! `lore bench agent`: the harness against a fake model on loopback that speaks OpenAI's protocol
//! and follows only what its prompt shows it, and then against the real local model when
//! scripts/ci/model installed it.

use std::collections::BTreeMap;

use lore_bench::agent::tools::{Tool, load_all};
use lore_providers::fake::{FakeServer, Protocol, Reply};
use serde_json::{Value, json};

use crate::common::lore_command;

/// The text of each operation's form that a model cannot guess: a fake executor that sees any
/// of it in its prompt (beyond the task) writes the right command, and otherwise guesses wrong,
/// as the real model does without the manual's missing part.
const MARKERS: [(&str, &[&str]); 6] = [
    ("sort", &["--key="]),
    ("filter", &[".gt.", ".lt.", ".eq."]),
    ("group", &["--key="]),
    ("select", &["fields:"]),
    ("rename", &["--as="]),
    ("merge", &["--on="]),
];

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &text[text.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

fn fake_model() -> FakeServer {
    let tools = load_all(&[]).unwrap();
    FakeServer::start(move |request| {
        let text = request.all_text();
        if text.contains("lesson proposer") {
            let Some(worked) = between(&text, "in the form `", "`") else {
                return Reply::status(400, "a correction without what worked");
            };
            let rule = format!("Write the command in the form `{worked}`.");
            // The condition names the operation, as a proposer that read the run would.
            let op = worked.split(' ').nth(1).unwrap_or_default();
            let when = format!("When asked to {op} with the tool.");
            let proposal = json!({"mistake": "a guessed form", "root_cause": "the manual",
                "rule": rule, "applies_when": when, "confidence": 0.9, "summary": rule});
            return Protocol::OpenAi.answer(&proposal.to_string(), "fake");
        }
        let user = request.body["messages"][1]["content"]
            .as_str()
            .unwrap_or_default();
        let Some(task_text) = between(user, "Task: ", "\n") else {
            return Reply::status(400, "no task line");
        };
        let found = tools
            .iter()
            .find_map(|tool| Some((tool, tool.tasks.iter().find(|t| t.text == task_text)?)));
        let Some((tool, task)) = found else {
            return Reply::status(400, "an unknown task");
        };
        let rest = user.replacen(task_text, "", 1);
        let op = task.expect["op"].as_str();
        let markers = MARKERS.iter().find(|(o, _)| *o == op).unwrap().1;
        let command = if op == "sort" && rest.contains("/down") {
            // It follows the planted harmful lesson whenever it is shown.
            tool.right_command(task)
                .unwrap()
                .replace("/desc", "/down")
                .replace("/asc", "/up")
        } else if markers.iter().any(|m| rest.contains(m)) {
            tool.right_command(task).unwrap()
        } else {
            format!(
                "{} {op} {} --by x",
                tool.name,
                task.expect.values().next().unwrap()
            )
        };
        Protocol::OpenAi.answer(&json!({ "command": command }).to_string(), "fake")
    })
}

fn bench(args: &[&str]) -> Value {
    let out = lore_command()
        .args(["bench", "agent", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lore bench agent {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn phase<'a>(report: &'a Value, arm: &str, phase: &str) -> &'a Value {
    &report["phases_by_arm"][arm][phase]
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn lore_bench_agent_runs_three_arms_on_one_stream_against_a_fake_model() {
    let fake = fake_model();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("errors.svg");
    let url = format!("{}/v1", fake.url());
    let report = bench(&[
        "--model-url",
        &url,
        "--phases",
        "AB",
        "--per-kind",
        "3",
        "--lessons",
        "correction",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        3 * 12,
        "3 arms × (2 kinds × 3 tasks) × 2 phases"
    );
    // The same tasks in the same order for every arm.
    let stream = |arm: &str| -> Vec<&str> {
        runs.iter()
            .filter(|r| r["arm"] == arm)
            .map(|r| r["task"].as_str().unwrap())
            .collect()
    };
    assert_eq!(stream("none"), stream("lore"));
    assert_eq!(stream("none"), stream("rag"));

    // Without memory every task fails once, then passes from the reference page.
    let none = &report["arms"]["none"];
    assert_eq!(none["pass_rate"], 1.0);
    assert_eq!(count(&none["tool_errors"]), 12);
    assert_eq!(count(&none["errors_after_first"]), 8);
    assert_eq!(count(&none["recurrent_errors"]), 8);

    // Lore: the first task of each kind fails, its correction becomes a lesson, and recall
    // shows it on the later tasks of the kind.
    let lore = &report["arms"]["lore"];
    assert_eq!(lore["pass_rate"], 1.0);
    assert!(
        count(&lore["errors_after_first"]) * 2 <= count(&none["errors_after_first"]),
        "{lore}"
    );
    assert!(count(&lore["lessons_shown"]) >= 4, "{lore}");
    assert!(count(&report["lessons_distilled"]) >= 4, "{report:#}");
    for p in ["A", "B"] {
        let (l, n) = (phase(&report, "lore", p), phase(&report, "none", p));
        assert!(
            count(&l["errors_after_first"]) < count(&n["errors_after_first"]),
            "phase {p}: lore {l} none {n}"
        );
    }
    // Phase B alone holds four errors after each kind's first without memory, and recall holds
    // a lesson still measured out of some runs at random: the halving is asserted over both
    // phases above; here, that the new tool's errors fall.
    let reduction = report["goals"]["b_error_reduction_vs_none"]
        .as_f64()
        .unwrap();
    assert!(reduction > 0.0, "{reduction}");

    // The baseline finds the passing attempt of a similar task and copies its form.
    let rag = &report["arms"]["rag"];
    assert!(count(&rag["errors_after_first"]) <= 2, "{rag}");

    // Per run: the commands, the steps and the tokens the endpoint counted.
    let first = &runs[0];
    assert_eq!(first["steps"], 2);
    assert_eq!(first["commands"].as_array().unwrap().len(), 2);
    assert_eq!(first["prompt_tokens"], 200);
    assert!(report["load_before"].as_str().unwrap().split(' ').count() == 3);

    let svg = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 3, "one line per arm");
    assert!(svg.contains(">B</text>"), "the phases are marked");
}

#[test]
fn lores_proposer_writes_the_lessons_with_the_same_model() {
    let fake = fake_model();
    let url = format!("{}/v1", fake.url());
    let report = bench(&[
        "--model-url",
        &url,
        "--phases",
        "B",
        "--per-kind",
        "2",
        "--arms",
        "lore",
    ]);
    assert_eq!(report["lessons"], "proposer");
    let written = count(&report["lessons_by_proposer"]);
    assert!(written >= 2, "{report:#}");
    assert_eq!(count(&report["lessons_distilled"]), 0);
    let asked = fake
        .requests()
        .iter()
        .filter(|r| r.all_text().contains("lesson proposer"))
        .count() as u64;
    assert_eq!(asked, written, "one proposer call per correction");
    assert!(
        count(&report["arms"]["lore"]["lessons_shown"]) >= 1,
        "{report:#}"
    );
}

#[test]
fn planted_lessons_mislead_until_lore_measures_them() {
    let fake = fake_model();
    let url = format!("{}/v1", fake.url());
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let report = bench(&[
        "--model-url",
        &url,
        "--phases",
        "S",
        "--per-kind",
        "2",
        "--arms",
        "rag,lore",
        "--lessons",
        "correction",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let planted = report["planted"].as_array().unwrap();
    let harms: BTreeMap<(&str, &str), &str> = planted
        .iter()
        .map(|p| {
            (
                (p["tool"].as_str().unwrap(), p["harm"].as_str().unwrap()),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        harms.len(),
        4,
        "a harmful and a contradictory lesson per tool: {planted:?}"
    );
    // The fake follows the harmful sort lesson when shown: the retrieval baseline, which keeps
    // a wrong attempt as it was recorded, is misled on the sort tasks.
    let misled = |arm: &str| {
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["arm"] == arm && r["kind"] == "sort")
            .filter(|r| {
                r["commands"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c.as_str().unwrap().contains("/down"))
            })
            .count()
    };
    assert!(misled("rag") >= 1, "{report:#}");
    assert!(
        misled("lore") >= 1,
        "Lore shows the approved planted lesson"
    );
    let sort = planted
        .iter()
        .find(|p| p["tool"] == "gridtool" && p["harm"] == "harmful")
        .unwrap();
    assert!(count(&sort["shown"]) >= 1, "{sort}");
    // Each planted lesson is a person's correction of an attempt the tool refused, so Lore
    // knows the failure it is about and measures it on every task where that failure meets
    // it, as it does an agent's lesson; planted on an attempt without a message, it was
    // measured only on tasks worded like the one it was planted on, and was never judged.
    let lessons: BTreeMap<String, Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| e.get("lessons").cloned())
        .flat_map(|l| l.as_array().unwrap().clone())
        .map(|l| (l["id"].as_str().unwrap().to_string(), l))
        .collect();
    let tools = load_all(&[]).unwrap();
    for p in planted {
        let tool = tools.iter().find(|t| p["tool"] == t.name.as_str()).unwrap();
        let kind = &tool
            .planted
            .iter()
            .find(|q| p["harm"] == q.harm.as_str())
            .unwrap()
            .kind;
        let lesson = &lessons[p["id"].as_str().unwrap()];
        let about = format!("{} {kind} ", tool.name);
        assert!(
            lesson["triggers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t.as_str().unwrap().starts_with(&about)),
            "the planted lesson is about its {kind} failure: {lesson:#}"
        );
    }
    assert_eq!(
        report["goals"]["planted_suppressed"]
            .as_str()
            .unwrap()
            .split(" of ")
            .nth(1),
        Some("4")
    );
}

#[test]
fn lore_bench_agent_refuses_bad_input_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let shipped = lore_bench::agent::tools::SHIPPED[0].1;
    std::fs::write(
        &bad,
        shipped.replace("direction = \"desc\"", "direction = \"sideways\""),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = lore_command()
            .args(["bench", "agent", "--model-url", "http://127.0.0.1:9/v1"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&["--tools", bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.toml") && err.contains("does not pass"),
        "{err}"
    );
    let err = run(&["--phases", "AX"]);
    assert!(err.contains("unknown phase 'X'"), "{err}");
    let err = run(&["--arms", "none,memory"]);
    assert!(err.contains("expected none, rag or lore"), "{err}");
    let err = run(&["--tools", dir.path().join("absent.toml").to_str().unwrap()]);
    assert!(err.contains("absent.toml"), "{err}");
    let out = lore_command().args(["bench", "agent"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model-url"));
    // A URL given wins over the server command scripts/ci/model exports: the run goes to the
    // URL (here nobody answers) instead of stopping at the two being given together.
    let out = lore_command()
        .env("LORE_MODEL_SERVER", "/bin/false")
        .args(["bench", "agent", "--model-url", "http://127.0.0.1:9/v1"])
        .args(["--arms", "none", "--phases", "B", "--per-kind", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("127.0.0.1:9/v1/chat/completions did not answer"),
        "{err}"
    );
    // A tool file of the same shape is accepted as written.
    let other = Tool::parse(&shipped.replace("gridtool", "tabletool")).unwrap();
    assert_eq!(other.name, "tabletool");
}

/// The real local model (Qwen2.5-Coder-1.5B-Instruct, served by scripts/ci/model-server) runs
/// the loop on the new tool at temperature 0: without memory it keeps guessing the forms the
/// manual leaves out; with Lore, the lessons learned from its own corrections reach its prompt
/// and at least halve its errors on the tasks after the first of each kind. Measured 8 → 0 on
/// this seed in two replays in fresh stores (see docs/agent-bench.md), so half is a margin, not
/// the figure. One seed, six tasks, two arms, up to three attempts a task: about 23 model
/// calls, 3 to 4 minutes at a load of 7 to 11.
#[test]
fn a_real_model_repeats_fewer_mistakes_with_lore() {
    let Ok(server) = std::env::var("LORE_MODEL_SERVER") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "LORE_MODEL_SERVER is not set: scripts/ci/model installs the local model, and CI \
             runs every test"
        );
        eprintln!("!!! skipped: no local model (source scripts/ci/model to install it)");
        return;
    };
    let report = bench(&[
        "--model-server",
        &server,
        "--phases",
        "B",
        "--per-kind",
        "3",
        "--arms",
        "none,lore",
        "--lessons",
        "correction",
        "--max-steps",
        "3",
        "--seed",
        "1",
        "--temperature",
        "0",
    ]);
    let (lore, none) = (phase(&report, "lore", "B"), phase(&report, "none", "B"));
    eprintln!(
        "real model, phase B: none {none}\nlore {lore}\nload {} → {}, {} s",
        report["load_before"], report["load_after"], report["seconds"]
    );
    assert_eq!(
        count(&lore["runs"]),
        count(&none["runs"]),
        "lore {lore} none {none}"
    );
    // Without memory the model keeps guessing the forms the manual leaves out.
    assert!(count(&none["errors_after_first"]) >= 4, "{none}");
    assert!(count(&lore["lessons_shown"]) >= 2, "{lore}");
    // At temperature 0 the model answers one prompt alike every time, the prompt carries no
    // lesson ID, and which tasks a lesson under measurement sits out is drawn from the task's
    // run key and the lesson's skill and rule: a replay in a fresh store repeats attempt for
    // attempt. The tasks a lesson sits out are the experiment's controls, with no lesson by
    // design; on the others, the lessons must at least halve the errors the same tasks had
    // without memory. Measured on this seed in two replays: 8 → 0, no task held out.
    let runs = report["runs"].as_array().unwrap();
    let later = |arm: &str| -> Vec<&Value> {
        runs.iter()
            .filter(|r| r["arm"] == arm && r["first_of_kind"] == false)
            .collect()
    };
    let errors = |r: &Value| count(&r["tool_errors"]) + count(&r["wrong_results"]);
    let (mut with_lessons, mut without_memory, mut matched) = (0, 0, 0);
    for (l, n) in later("lore").into_iter().zip(later("none")) {
        assert_eq!(l["task"], n["task"], "the same stream");
        if count(&l["held_out"]) == 0 {
            with_lessons += errors(l);
            without_memory += errors(n);
            matched += 1;
        }
    }
    assert!(matched >= 2, "too few tasks showed their lessons: {lore}");
    assert!(
        with_lessons * 2 <= without_memory,
        "with Lore's lessons shown, at most half the errors of the same tasks without memory: \
         {with_lessons} against {without_memory} over {matched} tasks; lore {lore} none {none}"
    );
    // And over every later task, held-out ones included: a held-out task makes the no-memory
    // arm's errors (1 to 3), so this half leaves room for one or two of them.
    assert!(
        count(&lore["errors_after_first"]) * 2 <= count(&none["errors_after_first"]),
        "lore {lore} none {none}"
    );
}
