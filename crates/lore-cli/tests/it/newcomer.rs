//! What a person meets in the first hour: typos, scores, counts and hints that must say what
//! they mean.

use std::fs;

use crate::common::Project;

const SKILL: &str = "support/summarize-ticket";

/// An initialized project with one rejected execution corrected by a person.
fn corrected() -> Project {
    let project = Project::new().initialized();
    let id = project.ok(&[
        "record",
        SKILL,
        "--input",
        r#"{"ticket": "Checkout returns 500 for every EU customer"}"#,
        "--output",
        r#"{"priority": "normal"}"#,
        "--outcome",
        "rejected",
    ]);
    project.correct(
        SKILL,
        id.trim(),
        "When a ticket reports errors for many customers, priority must be urgent.",
    );
    project
}

#[test]
fn record_warns_about_a_skill_it_has_never_seen_and_new_silences_the_warning() {
    let project = Project::new().initialized();
    let record = |skill: &str, extra: &[&str]| {
        let mut args = vec!["record", skill, "--input", "{}", "--output", "{}"];
        args.extend_from_slice(extra);
        let out = project.run(&args);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    // The example skill has a SKILL.md: no warning.
    assert_eq!(record(SKILL, &[]), "");
    let typo = record("support/sumarize-ticket", &[]);
    assert!(
        typo.contains("support/sumarize-ticket is a new skill"),
        "{typo}"
    );
    assert!(typo.contains("--new"), "{typo}");
    // Once it has a run it is known; a deliberate new skill says so.
    assert_eq!(record("support/sumarize-ticket", &[]), "");
    assert_eq!(record("ops/triage", &["--new"]), "");
}

#[test]
fn memory_search_scores_are_readable_in_a_small_store() {
    let project = corrected();
    let out = project.ok(&["memory", "search", "customers priority urgent"]);
    let line = out.lines().find(|l| l.contains("REFL-")).expect(&out);
    let score = line.split_whitespace().next().unwrap();
    assert_ne!(score, "0.000", "{out}");
    assert!(score.parse::<f64>().unwrap() > 0.0, "{out}");
}

#[test]
fn memory_status_counts_the_regression_tests_that_corrections_wrote() {
    let project = corrected();
    let cases = fs::read_to_string(
        project
            .path()
            .join("skills")
            .join(SKILL)
            .join("tests/lore.jsonl"),
    )
    .unwrap();
    assert_eq!(cases.lines().count(), 1);
    let status = project.json(&["memory", "status"]);
    assert_eq!(status["counts"]["tests"], 1, "{status}");
    assert!(project.ok(&["memory", "status"]).contains("Tests: 1"));
}

#[test]
fn recall_shows_a_rule_once_not_again_as_its_only_step() {
    let project = corrected();
    let out = project.ok(&["recall", "many customers report checkout errors"]);
    let rule = "priority must be urgent";
    assert_eq!(out.matches(rule).count(), 1, "{out}");
}

#[test]
fn mcp_without_a_home_refuses_instead_of_making_a_store_where_the_client_started_it() {
    let project = Project::new();
    let err = project.fails(&["mcp"]);
    assert!(err.contains("--home"), "{err}");
    assert!(!project.path().join(".lore").exists());
}

#[test]
fn commands_outside_a_project_refuse_instead_of_starting_a_store_where_they_ran() {
    let project = Project::new();
    fs::write(project.path().join("lessons.jsonl"), "").unwrap();
    for args in [
        &["record", SKILL, "--input", "{}", "--output", "{}"][..],
        &["memory", "status"],
        &["import", "--jsonl", "lessons.jsonl"],
        &["learn", "--jsonl", "lessons.jsonl"],
        &["tokens", "list"],
        &["serve", "--addr", "127.0.0.1:0"],
        &["mcp"],
    ] {
        let err = project.fails(args);
        assert!(
            err.contains("no .lore folder") && err.contains("lore init"),
            "{args:?}: {err}"
        );
        assert!(
            !project.path().join(".lore").exists(),
            "{args:?} made a store"
        );
    }
    // Naming the store is enough, and `lore init` starts a project where it runs.
    let home = project.path().join("elsewhere/.lore");
    let home = home.to_str().unwrap();
    project.ok(&[
        "--home", home, "record", SKILL, "--input", "{}", "--output", "{}",
    ]);
    project.ok(&["init"]);
    project.ok(&["record", SKILL, "--input", "{}", "--output", "{}"]);
}

#[test]
fn a_home_that_names_the_project_folder_points_at_the_lore_folder_inside() {
    let project = Project::new().initialized();
    let home = project.path().to_str().unwrap().to_owned();
    for args in [
        vec!["--home", home.as_str(), "memory", "status"],
        vec![
            "--home",
            home.as_str(),
            "record",
            SKILL,
            "--input",
            "{}",
            "--output",
            "{}",
        ],
    ] {
        let err = project.fails(&args);
        assert!(
            err.contains("--home names the `.lore` folder itself"),
            "{err}"
        );
        assert!(err.contains(&format!("{home}/.lore")), "{err}");
    }
    assert!(!project.path().join("lore.db").exists());
}

#[test]
fn completions_and_the_man_page_are_generated_from_the_command_line() {
    let project = Project::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = project.ok(&["completions", shell]);
        assert!(script.contains("record"), "{shell}: {script}");
    }
    let man = project.ok(&["man"]);
    assert!(
        man.starts_with(".ie") || man.contains(".TH lore 1"),
        "{man}"
    );
    assert!(man.contains("record"), "{man}");
    assert!(project.fails(&["completions", "tcsh"]).contains("tcsh"));
    assert!(!project.path().join(".lore").exists());
}

#[test]
fn help_speaks_to_a_user_and_keeps_the_global_options_apart() {
    let project = Project::new();
    let mut pages = vec![project.ok(&["--help"])];
    for command in [
        &["record"][..],
        &["import"],
        &["export"],
        &["digest"],
        &["eval"],
        &["episode"],
        &["episode", "add"],
        &["graph", "export"],
        &["serve"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        pages.push(project.ok(&args));
    }
    for page in &pages {
        for internal in ["seed 0", "seed-format", "seed's"] {
            assert!(!page.contains(internal), "{internal:?} in:\n{page}");
        }
    }
    let record = project.ok(&["record", "--help"]);
    let global = record.find("Global options:").expect(&record);
    let own = record.find("--input").expect(&record);
    let home = record.find("--home").expect(&record);
    assert!(own < global && global < home, "{record}");
}

/// The README's first command, `scripts/demo`, run with this build's binary: a person's
/// correction of a rejected run reaches the next prompt for the skill, quoted, and nothing is
/// left behind in the folder it ran from.
#[test]
fn the_readme_demo_carries_the_correction_into_the_next_prompt() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    // The demo is a script: the same clean environment every other test gives `lore`.
    let clean = crate::common::lore_command();
    let mut demo = std::process::Command::new("bash");
    for (var, value) in clean.get_envs() {
        match value {
            Some(v) => demo.env(var, v),
            None => demo.env_remove(var),
        };
    }
    demo.arg(root.join("scripts/demo"))
        .current_dir(tmp.path())
        .env("TMPDIR", tmp.path())
        .env("LORE_DEMO_BIN", env!("CARGO_BIN_EXE_lore"));
    let out = demo.output().expect("bash runs scripts/demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let prompt = stdout
        .split("$ lore memory prompt")
        .nth(1)
        .unwrap_or_else(|| panic!("the demo printed no prompt:\n{stdout}"));
    assert!(
        prompt.contains("priority must be urgent"),
        "the correction is not in the next prompt:\n{prompt}"
    );
    // The demo's project lived in a temporary folder that it removed.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the demo left {left:?}");
}
