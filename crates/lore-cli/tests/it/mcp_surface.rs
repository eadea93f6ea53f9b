//! What a model sees of Lore over MCP when its client asks for fewer tools: `lore mcp --tools`
//! over stdio and `/mcp?tools=` over HTTP, driven by the official MCP Python SDK.

use crate::serve::{Server, project, python_module_available, run_client as client};

const LORE: &str = env!("CARGO_BIN_EXE_lore");

#[test]
fn a_client_that_asks_for_the_loop_sees_and_calls_only_the_loop() {
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
    assert!(stdio.contains("\"get_lesson\""), "{stdio}");

    let server = Server::start(dir.path());
    let url = format!("http://{}/mcp?tools=loop,get_lesson", server.addr);
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
    assert!(
        err.contains("episodes") && err.contains("self-editing"),
        "{err}"
    );
}
