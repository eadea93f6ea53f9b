//! `lore bench`: the benchmarks live in `lore-bench`; this hands them their settings and stdout.

use anyhow::Result;
use lore_bench::{
    Out, agent, episodes, ingest, knowledge, learning, lessons, locomo, recall, stores,
};
use lore_providers::embedders::EmbedderKind;
use lore_recall::HnswParams;
use lore_sqlite::OpenMode;

use crate::cli::BenchCommand;
use crate::config::Paths;

/// Keeps a benchmark's curve with the records when this project has a store, so the web
/// console's health page shows the latest run; a project without one is left without one.
fn keep_for_the_console(paths: &Paths, name: &str, report: &serde_json::Value) -> Result<()> {
    if !paths.store_exists() {
        return Ok(());
    }
    paths
        .engine(OpenMode::Existing)?
        .save_report(name, report)?;
    eprintln!(
        "kept as the latest {name} report in {} (the console's health page draws it)",
        paths.store.describe()
    );
    Ok(())
}

pub fn run(paths: &Paths, cmd: BenchCommand, json: bool) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    let out = &mut Out::new(&mut stdout);
    match cmd {
        BenchCommand::Ingest { records, sizes } => ingest::run(records, sizes, json, out),
        BenchCommand::Episodes { sizes } => episodes::run(sizes, json, out),
        BenchCommand::Knowledge { chunks, queries } => {
            knowledge::run(chunks, queries, paths.embedder()?, json, out)
        }
        BenchCommand::Recall {
            sizes,
            data,
            m,
            ef_construction,
            ef_search,
            ef_entry,
            sweep,
            peer_data,
            peer,
            vectors,
            vocab,
            queries,
        } => {
            let bench = recall::Bench {
                vocab,
                queries,
                params: HnswParams {
                    m,
                    ef_construction,
                    ef_search,
                    ef_entry,
                },
                peer_data: peer_data.as_deref(),
                peer: peer.as_deref(),
                sweep,
                vectors: vectors.as_deref(),
            };
            recall::run_bench(&paths.embedder()?, sizes, data.as_deref(), bench, json, out)
        }
        BenchCommand::Curation { data } => lore_bench::curation::run(data.as_deref(), json, out),
        BenchCommand::Lessons {
            data,
            via,
            unrelated,
            distractors,
            cache,
        } => {
            let embedder = match paths.embedder {
                EmbedderKind::Builtin => None,
                _ => Some(paths.embedder()?),
            };
            let options = lessons::Options {
                via,
                unrelated,
                distractors,
                cache,
            };
            lessons::run(&data, embedder, &options, json, out)
        }
        BenchCommand::Learning { seeds, svg, keyed } => {
            let base = match paths.embedder {
                EmbedderKind::Builtin => None,
                _ => Some(paths.embedder()?),
            };
            let curve = learning::run(seeds, base, keyed, json, svg.as_deref(), out)?;
            // The console shows the shipped protocol's figures; a keyed run is a study beside it.
            if keyed {
                return Ok(());
            }
            keep_for_the_console(paths, "learning", &serde_json::to_value(curve)?)
        }
        BenchCommand::Agent(a) => {
            let options = agent::Options {
                tools: a.tools,
                model_url: a.model_url,
                model_server: a.model_server,
                model_name: a.model,
                api_key: a.model_key,
                lore: match a.lore {
                    Some(path) => path,
                    None => std::env::current_exe()?,
                },
                seeds: if a.seed.is_empty() {
                    (1..=a.seeds).collect()
                } else {
                    a.seed
                },
                arms: a.arms,
                phases: a.phases.chars().collect(),
                per_kind: a.per_kind,
                max_steps: a.max_steps,
                recall_limit: a.recall_limit,
                lessons: a.lessons,
                temperature: a.temperature,
                max_tokens: a.max_tokens,
                timeout: std::time::Duration::from_secs(a.timeout),
                svg: a.svg,
                trace: a.trace,
            };
            agent::run(&options, json, out).map(drop)
        }
        BenchCommand::Stores {
            lessons,
            writers,
            postgres,
        } => match postgres {
            None => stores::run(lessons, &writers, None, json, out),
            Some(url) => {
                let store = crate::config::bench_postgres(&url)?;
                let figures = stores::run(lessons, &writers, Some(store.open()), json, out);
                store.finish()?;
                figures
            }
        },
        BenchCommand::Locomo {
            data,
            split,
            turn_text,
        } => locomo::run_bench(&data, paths.embedder()?, split, turn_text, json, out),
    }
}
