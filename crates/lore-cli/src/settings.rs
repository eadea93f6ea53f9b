//! `lore.toml`, the environment and `--set`: the recall and agent-memory settings a user can
//! reach, resolved once for every door the binary opens (the commands, `lore serve`, `lore mcp`).
//!
//! One key space serves all three sources so that a setting has one name: `recall.mmr_lambda`
//! in the file's `[recall]` table, `LORE_RECALL_MMR_LAMBDA` in the environment, `--set
//! recall.mmr_lambda=0.5` on the command line; a flag beats the environment, which beats the
//! file. Each key remembers where it came from, so a refusal names the key and its source, and
//! nothing is opened before every key checks out.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use lore_engine::{Engine, EngineConfig, InjectionStrategy, ProposerConfig};
use lore_recall::{Fusion, RecallConfig, Similarity};
use lore_workspace::learned::LearnedSkills;
use serde::{Deserialize, Serialize};

/// The settings file's name inside the store folder.
pub const FILE: &str = "lore.toml";

/// The confidence an approved lesson needs to become a SKILL.md (seed 002's default).
const DEFAULT_MIN_CONFIDENCE: f64 = 0.5;

/// The most past sessions a recall may add: each costs budget the lessons might need.
const MAX_RECALL_EPISODES: u32 = 20;

/// The RRF constant when `recall.fusion = "rrf"` names none (seed 002's).
const DEFAULT_RRF_K: f64 = 60.0;

/// Every key, by table: the environment is read for these names only.
const KEYS: &[(&str, &[&str])] = &[
    (
        "recall",
        &[
            "fusion",
            "sparse_weight",
            "dense_weight",
            "rrf_k",
            "mmr",
            "mmr_lambda",
            "max_per_tag",
            "max_per_session",
            "min_relevance",
            "relevance_floor",
            "min_condition_match",
            "non_inferable_only",
            "limit",
            "budget",
            "episodes",
            "personal_boost",
        ],
    ),
    (
        "memory",
        &[
            "injection",
            "core_writes",
            "archival_writes",
            "recall_writes",
            "core_budget",
        ],
    ),
    ("skills", &["materialize_dir", "min_confidence"]),
    (
        "org",
        &[
            "propagation",
            "max_targets",
            "min_agents",
            "min_confidence",
            "max_proposals",
            "pool",
        ],
    ),
    (
        "tuning",
        &["epochs", "learning_rate", "held_out", "seed", "held_out_by"],
    ),
    ("mcp", &["tools"]),
    (
        "proposer",
        &[
            "enabled",
            "model",
            "temperature",
            "max_tokens",
            "min_confidence",
        ],
    ),
];

/// Where one key's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The settings file.
    File(PathBuf),
    /// An environment variable.
    Env(String),
    /// `--set`.
    Flag,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Env(name) => write!(f, "environment variable {name}"),
            Self::Flag => f.write_str("--set"),
        }
    }
}

/// The settings as given, every key optional: an absent key keeps the default.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Given {
    /// `[recall]`.
    #[serde(default)]
    pub recall: RecallKeys,
    /// `[memory]`.
    #[serde(default)]
    pub memory: MemoryKeys,
    /// `[skills]`.
    #[serde(default)]
    pub skills: SkillsKeys,
    /// `[org]`.
    #[serde(default)]
    pub org: OrgKeys,
    /// `[tuning]`.
    #[serde(default)]
    pub tuning: TuningKeys,
    /// `[mcp]`.
    #[serde(default)]
    pub mcp: McpKeys,
    /// `[proposer]`.
    #[serde(default)]
    pub proposer: ProposerKeys,
}

/// The `[proposer]` table: the model call that writes a correction's lesson (seed 002's
/// procedural-memory proposer).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProposerKeys {
    enabled: Option<bool>,
    model: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    min_confidence: Option<f64>,
}

/// The `[mcp]` table: what `lore mcp` and `/mcp` offer a connection that names no tools.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpKeys {
    tools: Option<String>,
}

/// The `[org]` table: organization memory (seed 002). It has no key that approves an org
/// lesson or skips its review; an unknown key is refused like any other.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OrgKeys {
    propagation: Option<PropagationName>,
    max_targets: Option<u32>,
    min_agents: Option<u32>,
    min_confidence: Option<f64>,
    max_proposals: Option<u32>,
    pool: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum PropagationName {
    None,
    Role,
    Department,
}

/// The `[tuning]` table: the default plan of an embedder adapter's training run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TuningKeys {
    epochs: Option<usize>,
    learning_rate: Option<f64>,
    held_out: Option<f64>,
    seed: Option<u64>,
    held_out_by: Option<lore_core::ports::tuning::HeldOutBy>,
}

/// The `[skills]` table: approved lessons as SKILL.md folders (seed 002's materialization).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SkillsKeys {
    materialize_dir: Option<PathBuf>,
    min_confidence: Option<f64>,
}

/// The `[recall]` table.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RecallKeys {
    fusion: Option<FusionName>,
    sparse_weight: Option<f64>,
    dense_weight: Option<f64>,
    rrf_k: Option<f64>,
    mmr: Option<bool>,
    mmr_lambda: Option<f64>,
    max_per_tag: Option<u32>,
    max_per_session: Option<u32>,
    min_relevance: Option<f64>,
    relevance_floor: Option<f64>,
    min_condition_match: Option<f64>,
    non_inferable_only: Option<bool>,
    limit: Option<u32>,
    budget: Option<u32>,
    episodes: Option<u32>,
    personal_boost: Option<f64>,
}

/// The `[memory]` table.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemoryKeys {
    injection: Option<Injection>,
    core_writes: Option<bool>,
    archival_writes: Option<bool>,
    recall_writes: Option<bool>,
    core_budget: Option<u32>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum FusionName {
    Linear,
    Rrf,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Injection {
    Context,
    #[serde(alias = "tool")]
    ToolBased,
    SelfEditing,
}

/// The resolved settings: what was given, where each key came from, and the file read.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    given: Given,
    origins: BTreeMap<String, Origin>,
    /// The file that was read, when there was one.
    pub file: Option<PathBuf>,
}

impl Settings {
    /// Reads `file` (`required` when the user named it), then the environment, then `--set`
    /// pairs, and checks every key.
    ///
    /// # Errors
    /// A file that cannot be read or parsed, an unknown key, a value of the wrong type or out
    /// of range: each message names the key and where it came from.
    pub fn load(file: &Path, required: bool, sets: &[String]) -> Result<Self> {
        Self::from_sources(file, required, std::env::vars(), sets)
    }

    fn from_sources(
        file: &Path,
        required: bool,
        env: impl Iterator<Item = (String, String)>,
        sets: &[String],
    ) -> Result<Self> {
        let mut layers = Layers::default();
        let read = layers.file(file, required)?;
        let env: BTreeMap<String, String> = env.collect();
        for (table, keys) in KEYS {
            for key in *keys {
                let name = format!("LORE_{}_{}", table, key).to_uppercase();
                if let Some(raw) = env.get(&name).filter(|v| !v.trim().is_empty()) {
                    layers.put(&format!("{table}.{key}"), raw, Origin::Env(name))?;
                }
            }
        }
        for pair in sets {
            let Some((key, raw)) = pair.split_once('=') else {
                bail!("--set {pair}: write KEY=VALUE, e.g. --set recall.mmr_lambda=0.5");
            };
            layers.put(key.trim(), raw.trim(), Origin::Flag)?;
        }
        let settings = layers.finish(read)?;
        settings.check()?;
        Ok(settings)
    }

    /// Where `key` (`table.key`) came from, for messages.
    fn origin(&self, key: &str) -> String {
        match self.origins.get(key) {
            Some(origin) => format!("{origin}: {key}"),
            None => key.to_owned(),
        }
    }

    fn refuse(&self, key: &str, problem: impl fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{}: {problem}", self.origin(key))
    }

    /// Checks each value on its own, then the combinations.
    fn check(&self) -> Result<()> {
        if let Err(lore_core::Error::Invalid { what, why }) =
            lore_recall::adapter::check_plan(&self.tuning_plan())
        {
            let key = what.replace("plan.", "tuning.");
            return Err(self.refuse(&key, why));
        }
        let r = &self.given.recall;
        let unit = [
            ("recall.sparse_weight", r.sparse_weight),
            ("recall.dense_weight", r.dense_weight),
            ("recall.mmr_lambda", r.mmr_lambda),
            ("recall.min_relevance", r.min_relevance),
            ("recall.relevance_floor", r.relevance_floor),
            ("recall.min_condition_match", r.min_condition_match),
            ("skills.min_confidence", self.given.skills.min_confidence),
            ("recall.personal_boost", r.personal_boost),
            ("org.min_confidence", self.given.org.min_confidence),
            (
                "proposer.min_confidence",
                self.given.proposer.min_confidence,
            ),
        ];
        for (key, value) in unit {
            if let Some(v) = value
                && !(v.is_finite() && (0.0..=1.0).contains(&v))
            {
                return Err(self.refuse(key, format!("{v} is outside 0 to 1")));
            }
        }
        if let Some(k) = r.rrf_k
            && !(k.is_finite() && k > 0.0)
        {
            return Err(self.refuse("recall.rrf_k", format!("{k} must be above 0")));
        }
        let max_page = lore_core::limits::MAX_PAGE;
        if let Some(limit) = r.limit
            && !(1..=max_page).contains(&(limit as usize))
        {
            return Err(self.refuse(
                "recall.limit",
                format!("{limit} is outside 1 to {max_page}"),
            ));
        }
        let max_budget = lore_core::limits::MAX_RECALL_BUDGET;
        if let Some(budget) = r.budget
            && !(1..=max_budget).contains(&(budget as usize))
        {
            let problem = format!("{budget} is outside 1 to {max_budget}");
            return Err(self.refuse("recall.budget", problem));
        }
        let skills = &self.given.skills;
        if skills
            .materialize_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(self.refuse("skills.materialize_dir", "is empty; name a folder"));
        }
        if skills.min_confidence.is_some() && skills.materialize_dir.is_none() {
            let problem = "applies to skills.materialize_dir; set the folder with it";
            return Err(self.refuse("skills.min_confidence", problem));
        }
        if let Some(n) = r.episodes
            && n > MAX_RECALL_EPISODES
        {
            let problem = format!("{n} is above {MAX_RECALL_EPISODES}");
            return Err(self.refuse("recall.episodes", problem));
        }
        if self.given.memory.core_budget == Some(0) {
            return Err(self.refuse("memory.core_budget", "must be at least 1 token"));
        }
        let o = &self.given.org;
        for (key, value, least) in [
            ("org.max_targets", o.max_targets, 1),
            ("org.min_agents", o.min_agents, 2),
            ("org.max_proposals", o.max_proposals, 1),
        ] {
            if let Some(v) = value
                && v < least
            {
                return Err(self.refuse(key, format!("{v} is below {least}")));
            }
        }
        if let Err(lore_core::Error::Invalid { what, why }) = self.proposer().validate() {
            return Err(self.refuse(&what.replace("proposer ", "proposer."), why));
        }
        if let Some(tools) = &self.given.mcp.tools {
            lore_server::mcp::ToolSelection::parse(tools)
                .map_err(|why| self.refuse("mcp.tools", why))?;
        }
        self.check_fusion()
    }

    /// The tools a connection that names none gets: `mcp.tools`, or the loop.
    pub fn mcp_tools(&self) -> lore_server::mcp::ToolSelection {
        self.given
            .mcp
            .tools
            .as_deref()
            .and_then(|spec| lore_server::mcp::ToolSelection::parse(spec).ok())
            .unwrap_or_default()
    }

    fn check_fusion(&self) -> Result<()> {
        let r = &self.given.recall;
        let weights = r.sparse_weight.is_some() || r.dense_weight.is_some();
        match r.fusion {
            Some(FusionName::Rrf) if weights => {
                let key = if r.sparse_weight.is_some() {
                    "recall.sparse_weight"
                } else {
                    "recall.dense_weight"
                };
                Err(self.refuse(key, "weights apply to fusion = \"linear\", not \"rrf\""))
            }
            Some(FusionName::Linear) | None if r.rrf_k.is_some() => Err(self.refuse(
                "recall.rrf_k",
                "applies to fusion = \"rrf\"; set recall.fusion = \"rrf\" with it",
            )),
            _ => Ok(()),
        }
    }

    /// The recall configuration: the defaults with every given key; without fusion keys the
    /// fusion follows the embedder (`semantic` or not), as it does with nothing configured.
    pub fn recall_config(&self, semantic: bool) -> RecallConfig {
        let r = &self.given.recall;
        let defaults = RecallConfig::default();
        let cap = |given: Option<u32>, default| match given {
            Some(0) => None,
            Some(n) => Some(n as usize),
            None => default,
        };
        let mmr_lambda = match (r.mmr, r.mmr_lambda) {
            (Some(false), _) => None,
            (_, Some(lambda)) => Some(lambda),
            _ => defaults.mmr_lambda,
        };
        let mut builder = RecallConfig::builder()
            .fusion(self.fusion(semantic))
            .mmr(mmr_lambda, Similarity::Auto)
            .caps(
                cap(r.max_per_tag, defaults.max_per_tag),
                cap(r.max_per_session, defaults.max_per_session),
            )
            .min_relevance(r.min_relevance.unwrap_or(defaults.min_relevance))
            .relevance_floor(r.relevance_floor.unwrap_or(defaults.relevance_floor))
            .min_condition_match(
                r.min_condition_match
                    .unwrap_or(defaults.min_condition_match),
            )
            .non_inferable_only(r.non_inferable_only.unwrap_or(defaults.non_inferable_only))
            .personal_boost(r.personal_boost.unwrap_or(defaults.personal_boost));
        if let Some(limit) = r.limit {
            builder = builder.limit(limit as usize);
        }
        if let Some(budget) = r.budget {
            builder = builder.budget(budget as usize);
        }
        // Every range was checked by `check`, against the same bounds the builder holds.
        builder.build().unwrap_or(defaults)
    }

    fn fusion(&self, semantic: bool) -> Fusion {
        let r = &self.given.recall;
        match (r.fusion, r.sparse_weight, r.dense_weight) {
            (Some(FusionName::Rrf), ..) => Fusion::Rrf {
                k: r.rrf_k.unwrap_or(DEFAULT_RRF_K),
            },
            (_, Some(sparse), Some(dense)) => Fusion::Linear { sparse, dense },
            // One weight given: the other is what is left of 1.
            (_, Some(sparse), None) => Fusion::Linear {
                sparse,
                dense: 1.0 - sparse,
            },
            (_, None, Some(dense)) => Fusion::Linear {
                sparse: 1.0 - dense,
                dense,
            },
            (_, None, None) => RecallConfig::calibrated_fusion_for(semantic),
        }
    }

    /// Whether any recall key was given.
    pub fn configures_recall(&self) -> bool {
        self.given.recall != RecallKeys::default()
    }

    /// `engine` with the recall keys; with none it keeps the Engine's own defaults, whose
    /// fusion follows whatever embedder it is later given.
    pub fn configure_recall(&self, engine: Engine, semantic: bool) -> Engine {
        if self.configures_recall() {
            engine.with_recall_config(self.recall_config(semantic))
        } else {
            engine
        }
    }

    /// Where approved lessons are written, relative paths taken from `project_root`; `None`
    /// when `skills.materialize_dir` is not set.
    pub fn learned_skills(&self, project_root: &Path) -> Option<LearnedSkills> {
        let skills = &self.given.skills;
        let dir = skills.materialize_dir.as_ref()?;
        let min_confidence = skills.min_confidence.unwrap_or(DEFAULT_MIN_CONFIDENCE);
        Some(LearnedSkills::new(project_root.join(dir), min_confidence))
    }

    /// The `[proposer]` keys over seed 002's defaults.
    pub fn proposer(&self) -> ProposerConfig {
        let p = &self.given.proposer;
        let defaults = ProposerConfig::default();
        ProposerConfig {
            enabled: p.enabled.unwrap_or(defaults.enabled),
            model: p.model.clone().or(defaults.model),
            // Narrowed for the wire, where 0.3 is sent as written.
            temperature: p.temperature.map_or(defaults.temperature, |t| t as f32),
            max_tokens: p.max_tokens.unwrap_or(defaults.max_tokens),
            min_confidence: p.min_confidence.unwrap_or(defaults.min_confidence),
        }
    }

    /// The `[tuning]` keys over the default plan.
    fn tuning_plan(&self) -> lore_core::ports::tuning::TunePlan {
        let t = &self.given.tuning;
        let mut plan = lore_core::ports::tuning::TunePlan::default();
        plan.epochs = t.epochs.unwrap_or(plan.epochs);
        plan.learning_rate = t.learning_rate.unwrap_or(plan.learning_rate);
        plan.held_out = t.held_out.unwrap_or(plan.held_out);
        plan.seed = t.seed.unwrap_or(plan.seed);
        plan.held_out_by = t.held_out_by.unwrap_or(plan.held_out_by);
        plan
    }

    /// `config` with the `[memory]` and `[tuning]` keys.
    pub fn apply(&self, config: &mut EngineConfig) {
        config.tuning = self.tuning_plan();
        let m = &self.given.memory;
        if let Some(injection) = m.injection {
            config.injection = match injection {
                Injection::Context => InjectionStrategy::Context,
                Injection::ToolBased => InjectionStrategy::ToolBased,
                Injection::SelfEditing => InjectionStrategy::SelfEditing,
            };
        }
        if let Some(episodes) = self.given.recall.episodes {
            config.recall_episodes = episodes as usize;
        }
        let o = &self.given.org;
        if let Some(p) = o.propagation {
            config.org.propagation = match p {
                PropagationName::None => lore_core::org::Propagation::None,
                PropagationName::Role => lore_core::org::Propagation::Role,
                PropagationName::Department => lore_core::org::Propagation::Department,
            };
        }
        let org = &mut config.org;
        org.max_targets = o.max_targets.map_or(org.max_targets, |n| n as usize);
        org.min_agents = o.min_agents.map_or(org.min_agents, |n| n as usize);
        org.min_confidence = o.min_confidence.unwrap_or(org.min_confidence);
        org.max_proposals = o.max_proposals.map_or(org.max_proposals, |n| n as usize);
        org.pool = o.pool.unwrap_or(org.pool);
        let policy = &mut config.memory;
        policy.core_writes = m.core_writes.unwrap_or(policy.core_writes);
        policy.archival_writes = m.archival_writes.unwrap_or(policy.archival_writes);
        policy.recall_writes = m.recall_writes.unwrap_or(policy.recall_writes);
        policy.core_budget = m.core_budget.map_or(policy.core_budget, |b| b as usize);
    }

    /// Each given key with its value and origin, for `lore config`.
    pub fn entries(&self) -> Vec<(String, toml::Value, String)> {
        let Ok(toml::Value::Table(tables)) = toml::Value::try_from(&self.given) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (table, keys) in tables {
            let toml::Value::Table(keys) = keys else {
                continue;
            };
            for (key, value) in keys {
                let name = format!("{table}.{key}");
                let origin = self.origins.get(&name).map(ToString::to_string);
                out.push((name, value, origin.unwrap_or_default()));
            }
        }
        out
    }
}

/// The sources merged into one TOML table, with each key's origin.
#[derive(Default)]
struct Layers {
    table: toml::Table,
    origins: BTreeMap<String, Origin>,
}

impl Layers {
    /// Reads the file into the table; `Some(path)` when it existed.
    fn file(&mut self, path: &Path, required: bool) -> Result<Option<PathBuf>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(None);
            }
            Err(err) => {
                return Err(err).with_context(|| format!("cannot read {}", path.display()));
            }
        };
        let table: toml::Table = text
            .parse()
            .map_err(|err: toml::de::Error| anyhow::anyhow!("{}: {}", path.display(), err))?;
        for (name, value) in &table {
            match value {
                toml::Value::Table(keys) => {
                    for key in keys.keys() {
                        let origin = Origin::File(path.to_path_buf());
                        self.origins.insert(format!("{name}.{key}"), origin);
                    }
                }
                _ => bail!(
                    "{}: {name} is not a table; write the key under its table ([recall], [memory], [skills], [org], [tuning], [mcp])",
                    path.display()
                ),
            }
        }
        self.table = table;
        Ok(Some(path.to_path_buf()))
    }

    /// Sets `key` (`table.key`) from a raw string: a TOML value when it reads as one
    /// (`0.5`, `true`, `60`), else the string itself (`rrf`).
    fn put(&mut self, key: &str, raw: &str, origin: Origin) -> Result<()> {
        let Some((table, name)) = key.split_once('.') else {
            bail!("{origin}: {key:?} is not a key: write TABLE.KEY, e.g. recall.mmr_lambda");
        };
        let value = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.to_owned()));
        let entry = self
            .table
            .entry(table.to_owned())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(keys) = entry else {
            bail!("{origin}: {table} is not a table");
        };
        keys.insert(name.to_owned(), value);
        self.origins.insert(key.to_owned(), origin);
        Ok(())
    }

    fn finish(self, file: Option<PathBuf>) -> Result<Settings> {
        let value = toml::Value::Table(self.table);
        let given: Given = serde_path_to_error::deserialize(value).map_err(|err| {
            let key = err.path().to_string();
            let origin = self.origins.get(&key).map(ToString::to_string);
            let origin = origin.or_else(|| {
                // An unknown key: the path stops at its table; name the source that gave it.
                let table = key.split('.').next().unwrap_or_default();
                let prefix = format!("{table}.");
                let mut given = self.origins.iter().filter(|(k, _)| k.starts_with(&prefix));
                given.next().map(|(_, o)| o.to_string())
            });
            // The deserializer repeats the path on a line of its own; the message leads with it.
            let inner = err.into_inner().to_string();
            let inner = inner.split("\nin `").next().unwrap_or_default().trim_end();
            match origin {
                Some(origin) => anyhow::anyhow!("{origin}: {key}: {inner}"),
                None => anyhow::anyhow!("{key}: {inner}"),
            }
        })?;
        Ok(Settings {
            given,
            origins: self.origins,
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(file: Option<&str>, env: &[(&str, &str)], sets: &[&str]) -> Result<Settings> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        if let Some(text) = file {
            std::fs::write(&path, text).unwrap();
        }
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Settings::from_sources(&path, false, env.collect::<Vec<_>>().into_iter(), &sets)
    }

    #[test]
    fn nothing_given_is_the_defaults() {
        let s = load(None, &[], &[]).unwrap();
        assert_eq!(s.recall_config(false), RecallConfig::default());
        assert!(!s.configures_recall());
        let mut config = EngineConfig::default();
        s.apply(&mut config);
        assert_eq!(config.injection, InjectionStrategy::Context);
    }

    #[test]
    fn tuning_keys_set_the_default_plan_and_bad_ones_are_named() {
        let file = "[tuning]\nepochs = 5\nheld_out = 0.3\n";
        let s = load(Some(file), &[("LORE_TUNING_SEED", "11")], &[]).unwrap();
        let mut config = EngineConfig::default();
        s.apply(&mut config);
        assert_eq!(
            (
                config.tuning.epochs,
                config.tuning.held_out,
                config.tuning.seed
            ),
            (5, 0.3, 11)
        );
        assert_eq!(config.tuning.margin, 0.2, "keys not given keep the default");
        let e = load(None, &[], &["tuning.held_out=0.95"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set: tuning.held_out"), "{e}");
        let e = load(None, &[], &["tuning.epochs=0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("tuning.epochs"), "{e}");
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_file() {
        let file = "[recall]\nmmr_lambda = 0.3\nmax_per_tag = 5\nmax_per_session = 4\n";
        let env = [
            ("LORE_RECALL_MMR_LAMBDA", "0.4"),
            ("LORE_RECALL_MAX_PER_TAG", "6"),
        ];
        let s = load(Some(file), &env, &["recall.mmr_lambda=0.5"]).unwrap();
        let c = s.recall_config(false);
        assert_eq!(c.mmr_lambda, Some(0.5));
        assert_eq!(c.max_per_tag, Some(6));
        assert_eq!(c.max_per_session, Some(4));
    }

    #[test]
    fn fusion_and_memory_keys_reach_their_configurations() {
        let file = "[recall]\nfusion = \"rrf\"\nrrf_k = 10\nmmr = false\nmax_per_tag = 0\n\
                    [memory]\ninjection = \"self_editing\"\ncore_writes = false\n";
        let s = load(Some(file), &[], &[]).unwrap();
        let c = s.recall_config(true);
        assert_eq!(c.fusion, Fusion::Rrf { k: 10.0 });
        assert_eq!((c.mmr_lambda, c.max_per_tag), (None, None));
        let mut config = EngineConfig::default();
        s.apply(&mut config);
        assert_eq!(config.injection, InjectionStrategy::SelfEditing);
        assert!(!config.memory.core_writes && config.memory.archival_writes);
        let linear = load(None, &[], &["recall.sparse_weight=0.7"]).unwrap();
        let fusion = linear.recall_config(false).fusion;
        assert!(
            matches!(fusion, Fusion::Linear { sparse, dense } if sparse == 0.7 && (dense - 0.3).abs() < 1e-9)
        );
    }

    #[test]
    fn a_refusal_names_the_key_and_its_source() {
        let err = |file, env: &[(&str, &str)], sets: &[&str]| {
            load(file, env, sets).unwrap_err().to_string()
        };
        let e = err(Some("[recall]\nmmr_lambda = 1.5\n"), &[], &[]);
        assert!(
            e.contains("lore.toml: recall.mmr_lambda: 1.5 is outside 0 to 1"),
            "{e}"
        );
        let e = err(None, &[("LORE_RECALL_FUSION", "bm25")], &[]);
        assert!(
            e.contains("LORE_RECALL_FUSION: recall.fusion") && e.contains("linear"),
            "{e}"
        );
        let e = err(Some("[recall]\nmmr_lamda = 0.5\n"), &[], &[]);
        assert!(e.contains("lore.toml") && e.contains("mmr_lamda"), "{e}");
        let e = err(None, &[], &["recall.max_per_tag=-1"]);
        assert!(e.contains("--set: recall.max_per_tag"), "{e}");
        let e = err(None, &[], &["recall.rrf_k=10"]);
        assert!(
            e.contains("recall.rrf_k: applies to fusion = \"rrf\""),
            "{e}"
        );
        let e = err(Some("[recal]\nlimit = 3\n"), &[], &[]);
        assert!(e.contains("recal"), "{e}");
        let e = err(Some("[recall\n"), &[], &[]);
        assert!(e.contains("lore.toml"), "{e}");
        let e = err(None, &[], &["memory.injection"]);
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = err(None, &[], &["skills.min_confidence=0.9"]);
        assert!(
            e.contains("--set: skills.min_confidence: applies to skills.materialize_dir"),
            "{e}"
        );
        let e = err(None, &[], &["memory.core_budget=0"]);
        assert!(
            e.contains("--set: memory.core_budget: must be at least 1"),
            "{e}"
        );
    }

    #[test]
    fn a_named_file_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.toml");
        let err = Settings::load(&missing, true, &[]).unwrap_err();
        assert!(format!("{err:#}").contains("absent.toml"), "{err:#}");
    }
}
