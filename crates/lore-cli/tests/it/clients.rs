//! Lore's Python and TypeScript clients (`clients/`) run their own test suites against a real
//! `lore serve` on loopback: pytest for the Python package (installed from the path by
//! `scripts/test`), node's built-in test runner for the TypeScript one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::serve::{Server, ok, project, python_module_available};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A project with SKILL.md for the skill the suites use, three tokens and a server; returns the
/// server and the environment the suites read.
fn served() -> (tempfile::TempDir, Server, Vec<(&'static str, String)>) {
    let dir = project();
    let token = |role: &str, scope: &str| {
        ok(
            dir.path(),
            &["tokens", "create", "--role", role, "--scope", scope],
        )
        .trim()
        .to_owned()
    };
    let env = vec![
        ("LORE_TEST_ADMIN_TOKEN", token("admin", "*")),
        ("LORE_TEST_AGENT_TOKEN", token("agent", "domain:support")),
        ("LORE_TEST_REVIEWER_TOKEN", token("reviewer", "*")),
    ];
    let server = Server::start(dir.path());
    // The document the server serves: operations defined in the catalogue are written into it
    // at start, so the source file alone no longer lists every call a client makes.
    let answer = server.request("GET", "/v1/openapi.json", Some(&env[0].1), None);
    let document = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    assert!(document.contains("\"paths\""), "{answer}");
    let path = dir.path().join("openapi.json");
    std::fs::write(&path, document).unwrap();
    let mut env = env;
    env.push(("LORE_URL", format!("http://{}", server.addr)));
    env.push(("LORE_OPENAPI", path.display().to_string()));
    (dir, server, env)
}

fn check(what: &str, out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_python_client_passes_its_suite_against_a_real_server() {
    if !python_module_available(
        "lore_client",
        "lore-client (pip install clients/python)",
        "the Python client suite",
    ) || !python_module_available("pytest", "pytest", "the Python client suite")
    {
        return;
    }
    let (_dir, _server, env) = served();
    let out = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "clients/python/tests",
        ])
        .current_dir(repo())
        .envs(env)
        .output()
        .unwrap();
    let stdout = check("pytest clients/python/tests", &out);
    assert!(stdout.contains(" passed"), "{stdout}");
    assert!(!stdout.contains("skipped"), "{stdout}");
}

#[test]
fn the_typescript_client_passes_its_suite_against_a_real_server() {
    if Command::new("node").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but node is missing (the TypeScript client's tests need Node 18+)"
        );
        eprintln!("\n!!! SKIPPED: the TypeScript client suite needs node (18 or newer).\n");
        return;
    }
    let (_dir, _server, env) = served();
    let out = Command::new("node")
        .args(["--test", "clients/typescript/test/"])
        .current_dir(repo())
        .envs(env)
        .output()
        .unwrap();
    let stdout = check("node --test clients/typescript/test/", &out);
    assert!(stdout.contains("# pass 5"), "{stdout}");
    assert!(stdout.contains("# fail 0"), "{stdout}");
}

/// Each recipe in `examples/` runs offline (its model is the fake OpenAI-compatible server in
/// `examples/fake_openai.py`) against a fresh `lore serve`, and exits 0 only when a person's
/// correction of its first run changed its second; run again on the same server, it succeeds
/// without a second correction.
#[test]
fn the_framework_recipes_learn_from_a_correction_offline() {
    for (recipe, module) in [
        ("langgraph_agent.py", "langgraph"),
        ("openai_agents.py", "agents"),
    ] {
        if !python_module_available(module, "the packages scripts/ci/python pins", recipe)
            || !python_module_available("lore_client", "lore-client", recipe)
        {
            return;
        }
        // No tokens: the recipe talks to a loopback server as its only user.
        let dir = project();
        let server = Server::start(dir.path());
        let out = Command::new("python3")
            .arg(recipe)
            .current_dir(repo().join("examples"))
            .env("LORE_URL", format!("http://{}", server.addr))
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let stdout = check(recipe, &out);
        assert!(
            stdout.contains("'priority': 'normal'"),
            "{recipe}: {stdout}"
        );
        assert!(
            stdout.contains("learned from the correction"),
            "{recipe}: {stdout}"
        );
        // Both runs and the correction reached the store.
        let status = ok(dir.path(), &["memory", "status", "--json"]);
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        assert_eq!(status["counts"]["executions"], 2, "{recipe}: {status}");
        assert_eq!(status["counts"]["corrections"], 1, "{recipe}: {status}");
        // Again against the same server: the recipe succeeds again, and a correction it repeats
        // strengthens the rule it taught the first time instead of adding a second one.
        let lessons = status["counts"]["lessons"].clone();
        let again = Command::new("python3")
            .arg(recipe)
            .current_dir(repo().join("examples"))
            .env("LORE_URL", format!("http://{}", server.addr))
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let stdout = check(recipe, &again);
        // Unless recall held the lesson out of that run to measure it, which it says.
        assert!(
            stdout.contains("learned") || stdout.contains("out of this run to measure"),
            "{recipe}: {stdout}"
        );
        let status = ok(dir.path(), &["memory", "status", "--json"]);
        let status: serde_json::Value = serde_json::from_str(&status).unwrap();
        assert_eq!(status["counts"]["executions"], 4, "{recipe}: {status}");
        assert_eq!(status["counts"]["lessons"], lessons, "{recipe}: {status}");
    }
}

/// The TypeScript declarations compile under `--strict` and describe the client as it is used
/// (`clients/typescript/test/types.ts`), with the compiler `scripts/test` installs.
#[test]
fn the_typescript_declarations_compile_strictly() {
    let tsc = std::env::var_os("LORE_TSC")
        .map(PathBuf::from)
        .or_else(|| {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            Some(home.join(".cache/lore-ci/tsc/node_modules/.bin/tsc"))
        })
        .filter(|p| p.is_file());
    let Some(tsc) = tsc else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must check the TypeScript declarations, but there is no tsc (scripts/test installs it)"
        );
        eprintln!(
            "\n!!! SKIPPED: no TypeScript compiler; scripts/test installs one (or set LORE_TSC).\n"
        );
        return;
    };
    let out = Command::new(tsc)
        .args([
            "--noEmit",
            "--strict",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--target",
            "es2022",
            "clients/typescript/test/types.ts",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    check("tsc --strict clients/typescript/test/types.ts", &out);
}
