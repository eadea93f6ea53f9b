//! One function per command: call the Engine, print the result.

mod bench;
mod capture;
mod decisions;
mod digest;
mod embedder;
pub mod episodes;
mod knowledge;
mod lessons;
mod memory;
mod migrate;
mod org;
mod pdf;
mod recall;
mod reembed;
pub mod review;
pub mod run;
pub mod serve;
pub mod test;
pub mod tokens;
mod transfer;
pub mod watch;

use anyhow::Result;
use lore_core::SkillPath;
use lore_sqlite::OpenMode;

use crate::cli::{Cli, Command};
use crate::config::Paths;
use crate::output;

/// The skill `lore init` writes as an example.
const EXAMPLE_SKILL: &str = "support/summarize-ticket";

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    let paths = Paths::resolve(&cli.global)?;
    if cli.command.needs_project() {
        paths.require_project()?;
    }
    let json = cli.global.json;
    match cli.command {
        Command::Completions { shell } => {
            // Into a buffer first: the generator panics on a closed pipe (`| head`).
            let mut script = Vec::new();
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "lore", &mut script);
            Ok(std::io::Write::write_all(&mut std::io::stdout(), &script)?)
        }
        Command::Man => {
            let command = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(command).render(&mut std::io::stdout())?;
            Ok(())
        }
        Command::Init => init(&paths, json),
        Command::Config => show_config(&paths, json),
        Command::Serve(args) => serve::serve(&paths, args),
        Command::Mcp(args) => serve::mcp(&paths, args),
        Command::Tokens(cmd) => tokens::run(&paths, cmd, json),
        Command::Run(args) => run::run(&paths, args, json),
        Command::Test(args) => test::run(&paths, args, json),
        Command::Watch(args) => watch::run(&paths, args, json),
        Command::Record(args) => capture::record(&paths, args, json),
        Command::Correct(args) => capture::correct(&paths, args, json),
        Command::Signal(args) => capture::signal(&paths, args, json),
        Command::Learn(args) => capture::learn(&paths, args, json),
        Command::Memory(cmd) => memory::run(&paths, cmd, json),
        Command::Episode(cmd) => episodes::episode(&paths, cmd, json),
        Command::Graph(cmd) => episodes::graph(&paths, cmd, json),
        Command::Lessons(cmd) => lessons::run(&paths, cmd, json),
        Command::Org(cmd) => org::run(&paths, cmd, json),
        Command::Review(args) => review::review(&paths, args, json),
        Command::Maintain(args) => review::maintain(&paths, args, json),
        Command::Import(args) => transfer::import(&paths, args, json),
        Command::Export(args) => transfer::export(&paths, args, json),
        Command::Recall(args) => recall::run(&paths, args, json),
        Command::Reembed => reembed::run(&paths, json),
        Command::Embedder(cmd) => embedder::run(&paths, cmd, json),
        Command::Ingest(args) => knowledge::ingest(&paths, args, json),
        Command::Knowledge(cmd) => knowledge::run(&paths, cmd, json),
        Command::Context(args) => knowledge::context(&paths, args, json),
        Command::Decision(cmd) => decisions::run(&paths, cmd, json),
        Command::Digest(cmd) => digest::digest(&paths, cmd, json),
        Command::Eval(cmd) => digest::eval(&paths, cmd, json),
        Command::Migrate(args) => migrate::run(&paths, args, json),
        Command::Bench(cmd) => bench::run(&paths, cmd, json),
    }
}

fn init(paths: &Paths, json: bool) -> Result<()> {
    let engine = paths.engine(OpenMode::Create)?;
    let skill = SkillPath::parse(EXAMPLE_SKILL)?;
    let written = match engine.skills() {
        Some(skills) => skills.write_example(&skill)?,
        None => Vec::new(),
    };
    if json {
        return output::json(&serde_json::json!({
            "home": paths.home,
            "store": paths.store.describe(),
            "skills": paths.skills,
            "written": written,
        }));
    }
    output::line(format!("Lore store: {}", paths.store.describe()))?;
    output::line(format!("Skills:     {}", paths.skills.display()))?;
    for path in written {
        output::line(format!("  wrote {}", path.display()))?;
    }
    output::line(format!(
        "Next: lore record {EXAMPLE_SKILL} --input '{{\"ticket\": \"...\"}}' --output '{{\"summary\": \"...\"}}'"
    ))
}

/// `lore config`: what each door will run with.
fn show_config(paths: &Paths, json: bool) -> Result<()> {
    let semantic = paths.embedder != lore_providers::embedders::EmbedderKind::Builtin;
    let settings = &paths.settings;
    let recall = settings.recall_config(semantic);
    let memory = &paths.engine_config.memory;
    let injection = paths.engine_config.injection;
    let given = settings.entries();
    if json {
        let given: Vec<_> = given
            .iter()
            .map(|(key, value, origin)| serde_json::json!({"key": key, "value": value, "from": origin}))
            .collect();
        return output::json(&serde_json::json!({
            "file": settings.file,
            "given": given,
            "recall": recall,
            "memory": {"injection": injection, "policy": memory},
            "org": paths.engine_config.org,
            "proposer": settings.proposer(),
        }));
    }
    let file = match &settings.file {
        Some(path) => path.display().to_string(),
        None => "none".to_owned(),
    };
    output::line(format!("settings file: {file}"))?;
    for (key, value, origin) in &given {
        output::line(format!("{key} = {value}  # {origin}"))?;
    }
    output::line(format!("recall: {}", serde_json::to_string(&recall)?))?;
    output::line(format!(
        "memory: injection {}, {}",
        serde_json::to_value(injection)?
            .as_str()
            .unwrap_or_default(),
        serde_json::to_string(memory)?
    ))?;
    output::line(format!(
        "org: {}",
        serde_json::to_string(&paths.engine_config.org)?
    ))?;
    output::line(format!(
        "proposer: {}",
        serde_json::to_string(&settings.proposer())?
    ))
}
