//! What a model sees of Lore over MCP: the loop by default, within its token budget; more only
//! when the client asks (`lore mcp --tools`, `/mcp?tools=`, `mcp.tools` in lore.toml); and never
//! a tool the connection's token may not call. Driven by the official MCP Python SDK.

use lore_core::ports::tokenize::Tokenizer;
use lore_providers::tokenizer::{Encoding, Tiktoken};
use serde_json::Value;

use crate::serve::{Server, ok, project, python_module_available, run_client as client};

const LORE: &str = env!("CARGO_BIN_EXE_lore");

/// The loop: what a connection that names no tools is offered.
const LOOP: [&str; 6] = [
    "correct",
    "get_lesson",
    "recall_memory",
    "record_execution",
    "report_signal",
    "search_memory",
];

/// The most cl100k tokens the default `tools/list` may cost a model on every turn.
const BUDGET: usize = 2_500;

/// The client's findings: the last line it printed.
fn findings(out: &str) -> Value {
    serde_json::from_str(out.lines().last().unwrap_or_default()).unwrap()
}

fn names(found: &Value) -> Vec<&str> {
    found["names"]
        .as_array()
        .unwrap_or_else(|| panic!("{found}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

#[test]
fn the_default_tool_list_is_the_loop_within_budget_and_a_token_lists_only_its_roles_tools() {
    if !python_module_available("mcp", "mcp==2.3.0", "the MCP tool budget test") {
        return;
    }
    let dir = project();
    let home = dir.path().join(".lore");
    let skills = dir.path().join("skills");
    let stdio = findings(&client(&[
        "list-stdio",
        LORE,
        home.to_str().unwrap(),
        skills.to_str().unwrap(),
    ]));
    assert_eq!(names(&stdio), LOOP, "{stdio}");
    let cl100k = Tiktoken::new(Encoding::Cl100k).unwrap();
    let tokens = cl100k.count(stdio["json"].as_str().unwrap());
    eprintln!(
        "default tools/list over stdio: {} tools, {tokens} cl100k tokens",
        LOOP.len()
    );
    assert!(LOOP.len() <= 8 && tokens <= BUDGET, "{tokens} tokens");

    let agent = ok(
        dir.path(),
        &["tokens", "create", "--role", "agent", "--scope", "*"],
    );
    let reviewer = ok(
        dir.path(),
        &["tokens", "create", "--role", "reviewer", "--scope", "*"],
    );
    let server = Server::start(dir.path());
    let url = format!("http://{}/mcp", server.addr);
    let http = findings(&client(&["list-http", &url, agent.trim()]));
    assert_eq!(names(&http), LOOP, "{http}");
    assert!(cl100k.count(http["json"].as_str().unwrap()) <= BUDGET);

    let every = format!("{url}?tools=all");
    let as_agent = findings(&client(&["list-http", &every, agent.trim()]));
    let as_agent = names(&as_agent);
    assert!(as_agent.contains(&"record_episode"), "{as_agent:?}");
    for privileged in [
        "review_queue",
        "review_lessons",
        "org_pool",
        "embedder_status",
    ] {
        assert!(
            !as_agent.contains(&privileged),
            "{privileged}: {as_agent:?}"
        );
    }
    let as_reviewer = findings(&client(&["list-http", &every, reviewer.trim()]));
    let as_reviewer = names(&as_reviewer);
    assert!(as_reviewer.contains(&"review_queue"), "{as_reviewer:?}");
    assert!(!as_reviewer.contains(&"embedder_train"), "{as_reviewer:?}");
    server.terminate();
}

#[test]
fn lore_toml_chooses_the_tools_a_connection_gets_when_it_names_none() {
    if !python_module_available("mcp", "mcp==2.3.0", "the MCP tool settings test") {
        return;
    }
    let dir = project();
    let home = dir.path().join(".lore");
    let skills = dir.path().join("skills");
    std::fs::write(home.join("lore.toml"), "[mcp]\ntools = \"loop,episodes\"\n").unwrap();
    let stdio = findings(&client(&[
        "list-stdio",
        LORE,
        home.to_str().unwrap(),
        skills.to_str().unwrap(),
    ]));
    let listed = names(&stdio);
    assert!(
        listed.contains(&"correct") && listed.contains(&"what_if"),
        "{listed:?}"
    );
    assert_eq!(listed.len(), LOOP.len() + 11, "{listed:?}");

    let server = Server::start(dir.path());
    let url = format!("http://{}/mcp", server.addr);
    let http = findings(&client(&["list-http", &url]));
    assert_eq!(names(&http), listed, "{http}");
    // The URL's own choice wins over the file's.
    let asked = findings(&client(&["list-http", &format!("{url}?tools=memory")]));
    assert_eq!(names(&asked).len(), 6, "{asked}");
    assert!(names(&asked).contains(&"core_memory_write"), "{asked}");
    server.terminate();

    std::fs::write(
        home.join("lore.toml"),
        "[mcp]\ntools = \"loop,recal_memory\"\n",
    )
    .unwrap();
    let out = crate::common::lore_command()
        .args(["--home", home.to_str().unwrap(), "mcp"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp.tools") && err.contains("\"recal_memory\""),
        "{err}"
    );
}

#[test]
fn a_client_that_asks_for_a_group_sees_and_calls_only_what_it_asked_for() {
    if !python_module_available("mcp", "mcp==2.3.0", "the MCP tool-subset test") {
        return;
    }
    let dir = project();
    let home = dir.path().join(".lore");
    let skills = dir.path().join("skills");
    let stdio = client(&[
        "subset-stdio",
        LORE,
        home.to_str().unwrap(),
        skills.to_str().unwrap(),
    ]);
    assert!(stdio.contains("\"memory_prompt\""), "{stdio}");

    let server = Server::start(dir.path());
    let url = format!("http://{}/mcp?tools=loop,memory_prompt", server.addr);
    let http = client(&["subset-http", &url]);
    assert!(http.contains("\"record_execution\""), "{http}");
}

#[test]
fn an_unknown_tool_in_the_list_is_refused_at_start() {
    let dir = project();
    let out = crate::common::lore_command()
        .args(["mcp", "--tools", "loop,recal_memory"])
        .current_dir(dir.path())
        .env_remove("LORE_HOME")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"recal_memory\""), "{err}");
    assert!(err.contains("episodes") && err.contains("memory"), "{err}");
}
