//! The temporary project every CLI test binary drives `lore` in.
//!
//! Each binary (`cli.rs`, `review.rs`, `llm.rs`) includes this with `mod common;` and adds its
//! own inherent methods on [`Project`] where only it needs them; not every binary uses every
//! helper here, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output};

use serde_json::Value;

/// Variables from the developer's shell that would change what `lore` does, besides every
/// `LORE_*` one; every run clears them, so a test sees only the environment it sets.
const CLEARED: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "DATABASE_URL",
];

/// The address a just spawned `lore serve` (stdout piped) prints in its banner; the rest of its
/// output is read and dropped from then on, so the server never blocks on a full pipe.
pub fn served_address(child: &mut Child) -> SocketAddr {
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let mut banner = String::new();
    stdout.read_line(&mut banner).unwrap();
    let addr = banner
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {banner:?}"))
        .trim_end_matches('/')
        .parse()
        .unwrap();
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    addr
}

/// The `lore` binary, with none of the shell's variables that would change what it does.
pub fn lore_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lore"));
    for var in CLEARED {
        cmd.env_remove(var);
    }
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("LORE_") {
            cmd.env_remove(var);
        }
    }
    cmd
}

/// A temporary folder to run `lore` in, with the environment variables each run gets.
pub struct Project {
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Project {
    /// An empty folder: no store until something runs `lore init`.
    pub fn new() -> Self {
        Self::with_env(Vec::new())
    }

    /// An empty folder whose runs all get `env`.
    pub fn with_env(env: Vec<(&'static str, String)>) -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            env,
        }
    }

    /// Runs `lore init` here.
    pub fn initialized(self) -> Self {
        self.ok(&["init"]);
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[])
    }

    /// Runs with `extra` beside the project's variables, for this run only.
    pub fn run_with(&self, args: &[&str], extra: &[(&str, String)]) -> Output {
        let mut cmd = lore_command();
        cmd.args(args).current_dir(self.path());
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.envs(extra.iter().map(|(k, v)| (k, v)));
        cmd.output().unwrap()
    }

    /// Runs and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, &[])
    }

    /// As [`Project::ok`], with `extra` variables for this run only.
    pub fn ok_with(&self, args: &[&str], extra: &[(&str, String)]) -> String {
        let out = self.run_with(args, extra);
        assert!(
            out.status.success(),
            "lore {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs and expects failure; returns stdout and stderr.
    pub fn fails_with_output(&self, args: &[&str]) -> (String, String) {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "lore {args:?} should have failed; stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// Runs and expects failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        self.fails_with_output(args).1
    }

    /// Runs with `--json` and expects success; returns stdout parsed.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        serde_json::from_str(&self.ok(&all)).unwrap()
    }

    /// `lore correct` on one execution; returns what it made (`lesson`, `correction`, ...).
    pub fn correct(&self, skill: &str, execution: &str, text: &str) -> Value {
        self.json(&[
            "correct",
            skill,
            "--execution-id",
            execution,
            "--correction",
            text,
        ])
    }
}
