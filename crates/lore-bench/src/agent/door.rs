//! Lore as an agent reaches it: the `lore` command line on a store of its own, nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// The proposer's model, handed to `lore correct` through Lore's own model settings.
#[derive(Clone, Debug)]
pub struct Proposer {
    /// The endpoint's `/v1` URL.
    pub base_url: String,
    /// The model's name.
    pub model: String,
}

/// The bound on the proposer's answer, set through Lore's `[proposer]` settings. A lesson's JSON
/// takes about 200 tokens; with the default bound of 1,500 the 1.5B model ran on past 890 tokens
/// (at 1.7 tokens a second under load: over ten minutes for one lesson). A proposal cut short
/// fails its schema, and Lore keeps the distilled lesson and records why.
pub const PROPOSER_MAX_TOKENS: u32 = 320;

/// One `lore` binary on one temporary home.
pub struct Lore {
    binary: PathBuf,
    home: PathBuf,
    proposer: Option<Proposer>,
    _dir: tempfile::TempDir,
}

/// What a recall returned.
pub struct Recalled {
    pub text: String,
    pub ids: Vec<String>,
    pub held_out: usize,
}

/// Recall's text with each lesson's ID replaced by its place (`lesson 1`): the harness reports
/// the IDs itself, and an ID is a timestamp and random characters whose tokens differ from one
/// store to the next, so the same lesson made another prompt and the model, at temperature 0,
/// another answer (measured: 541 against 539 prompt tokens for one recall in two replays).
fn for_the_model(text: &str, ids: &[String]) -> String {
    ids.iter()
        .enumerate()
        .fold(text.to_string(), |text, (i, id)| {
            text.replace(id.as_str(), &format!("lesson {}", i + 1))
        })
}

impl Lore {
    /// A fresh store (SQLite, in a temporary folder) driven by `binary`.
    pub fn new(binary: &Path, proposer: Option<Proposer>) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("lore-bench-agent-")
            .tempdir()?;
        let lore = Self {
            binary: binary.to_path_buf(),
            home: dir.path().join(".lore"),
            proposer,
            _dir: dir,
        };
        lore.call(&["init", "--json"], false)?;
        Ok(lore)
    }

    fn call(&self, args: &[&str], with_model: bool) -> Result<String> {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--home").arg(&self.home).args(args);
        cmd.current_dir(self.home.parent().expect("home has a parent"));
        // The benchmark decides which calls may use a model: none but the proposer's.
        for var in [
            "OPENROUTER_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "LORE_LLM_BASE_URL",
            "LORE_LLM_MODEL",
            "LORE_LLM_API_KEY",
            "DATABASE_URL",
        ] {
            cmd.env_remove(var);
        }
        match (&self.proposer, with_model) {
            (Some(p), true) => {
                cmd.env("LORE_LLM_PROVIDER", "openai")
                    .env("LORE_LLM_BASE_URL", &p.base_url)
                    .env("LORE_LLM_MODEL", &p.model)
                    .env("LORE_LLM_TIMEOUT_SECS", "600")
                    .env("LORE_PROPOSER_MAX_TOKENS", PROPOSER_MAX_TOKENS.to_string());
            }
            _ => {
                cmd.env("LORE_LLM_PROVIDER", "offline");
            }
        }
        let out = cmd
            .output()
            .with_context(|| format!("cannot run {}", self.binary.display()))?;
        if !out.status.success() {
            bail!(
                "lore {} failed: {}",
                args.first().unwrap_or(&""),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn json(&self, args: &[&str], with_model: bool) -> Result<Value> {
        let out = self.call(args, with_model)?;
        serde_json::from_str(&out).with_context(|| {
            format!(
                "lore {} printed no JSON: {out:.300}",
                args.first().unwrap_or(&"")
            )
        })
    }

    /// Lessons for a step: by the task's words, and by the error's fingerprint on a retry.
    /// `run` names the task the step belongs to (`lore recall --run`): Lore draws which lessons
    /// under measurement sit out from that key, so every attempt at one task is one run of the
    /// experiment and a replay of the stream draws alike.
    pub fn recall(
        &self,
        query: &str,
        skill: &str,
        limit: usize,
        error: Option<&str>,
        run: &str,
    ) -> Result<Recalled> {
        let limit = limit.to_string();
        let mut args = vec![
            "recall", query, "--skill", skill, "--limit", &limit, "--run", run, "--json",
        ];
        if let Some(e) = error {
            args.extend(["--error", e]);
        }
        let v = self.json(&args, false)?;
        let ids: Vec<String> = v["lessons"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|l| l["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Recalled {
            text: if ids.is_empty() {
                String::new()
            } else {
                for_the_model(v["text"].as_str().unwrap_or(""), &ids)
            },
            held_out: v["held_out"].as_array().map_or(0, Vec::len),
            ids,
        })
    }

    /// Records one attempt; returns its execution ID.
    pub fn record(
        &self,
        skill: &str,
        task: &str,
        command: &str,
        passed: bool,
        shown: &[String],
    ) -> Result<String> {
        let input = json!({ "task": task }).to_string();
        let output = json!({ "command": command }).to_string();
        let shown = shown.join(",");
        let mut args = vec![
            "record",
            skill,
            "--new",
            "--input",
            &input,
            "--output",
            &output,
            "--outcome",
            if passed { "accepted" } else { "rejected" },
        ];
        if !shown.is_empty() {
            args.extend(["--lessons-shown", &shown]);
        }
        self.call(&args, false)
    }

    /// A failure signal on a recorded attempt: `hard_failure` (the tool refused it) or
    /// `constraint_failure` (it ran, but not as the task asked).
    pub fn signal(
        &self,
        execution: &str,
        channel: &str,
        message: &str,
        action: &str,
    ) -> Result<()> {
        self.call(
            &[
                "signal",
                execution,
                "--channel",
                channel,
                "--message",
                message,
                "--action",
                action,
                "--json",
            ],
            false,
        )
        .map(drop)
    }

    /// A correction of a failed attempt, written by the agent; with a proposer configured, Lore's
    /// proposer writes the lesson from it. Returns the lesson's ID and whether the proposer's
    /// text was kept (it falls back to the distilled lesson when the model fails).
    pub fn correct(
        &self,
        skill: &str,
        execution: &str,
        text: &str,
        by_agent: bool,
    ) -> Result<(String, bool)> {
        let kind = if by_agent { "agent" } else { "human" };
        let v = self.json(
            &[
                "correct",
                skill,
                "--execution-id",
                execution,
                "--correction",
                text,
                "--author-kind",
                kind,
                "--json",
            ],
            by_agent,
        )?;
        let id = v["lesson"]["id"].as_str().unwrap_or_default().to_string();
        Ok((id, v["lesson"]["source"].as_str() == Some("llm")))
    }

    /// The upkeep after a run: the lessons it promoted and suppressed.
    pub fn maintain(&self) -> Result<(Vec<String>, Vec<String>)> {
        let v = self.json(&["maintain", "--json"], false)?;
        let ids = |k: &str| -> Vec<String> {
            v["utility"][k]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| {
                            x.as_str()
                                .map(str::to_string)
                                .or_else(|| x["id"].as_str().map(str::to_string))
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok((ids("promoted"), ids("suppressed")))
    }

    /// Every lesson in `skill`, as `lore lessons list --json` prints them.
    pub fn lessons(&self, skill: &str) -> Result<Value> {
        self.json(&["lessons", "list", "--skill", skill, "--json"], false)
    }

    /// Every lesson's status in `skill`.
    pub fn statuses(&self, skill: &str) -> Result<BTreeMap<String, String>> {
        let v = self.lessons(skill)?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|l| {
                        Some((
                            l["id"].as_str()?.to_string(),
                            l["status"].as_str()?.to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::for_the_model;

    #[test]
    fn the_model_sees_a_lessons_place_not_its_id() {
        let ids = [
            "REFL-20261207193712-31TXWEMK".to_string(),
            "CORR-003".to_string(),
        ];
        let text = "- **REFL-20261207193712-31TXWEMK** (tools/x; trial)\n  > Do A.\n\
                    - **CORR-003** (tools/x)\n  > Do B; see REFL-20261207193712-31TXWEMK.";
        let shown = for_the_model(text, &ids);
        assert_eq!(
            shown,
            "- **lesson 1** (tools/x; trial)\n  > Do A.\n- **lesson 2** (tools/x)\n  > Do B; see lesson 1."
        );
    }
}
