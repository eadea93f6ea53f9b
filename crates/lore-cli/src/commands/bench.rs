//! `lore bench`: the benchmarks live in `lore-bench`; this hands them their settings and stdout.

use anyhow::Result;
use lore_bench::{Out, episodes, ingest, learning, lessons, locomo, recall, stores};
use lore_providers::embedders::EmbedderKind;
use lore_recall::HnswParams;

use crate::cli::BenchCommand;
use crate::config::Paths;

pub fn run(paths: &Paths, cmd: BenchCommand, json: bool) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    let out = &mut Out::new(&mut stdout);
    match cmd {
        BenchCommand::Ingest { records, sizes } => ingest::run(records, sizes, json, out),
        BenchCommand::Episodes { sizes } => episodes::run(sizes, json, out),
        BenchCommand::Recall {
            sizes,
            data,
            m,
            ef_construction,
            ef_search,
            peer_data,
        } => {
            let bench = recall::Bench {
                params: HnswParams {
                    m,
                    ef_construction,
                    ef_search,
                },
                peer_data: peer_data.as_deref(),
            };
            recall::run_bench(&paths.embedder()?, sizes, data.as_deref(), bench, json, out)
        }
        BenchCommand::Lessons { data, via } => {
            let embedder = match paths.embedder {
                EmbedderKind::Builtin => None,
                _ => Some(paths.embedder()?),
            };
            lessons::run(&data, embedder, via, json, out)
        }
        BenchCommand::Learning { seeds, svg } => learning::run(seeds, json, svg.as_deref(), out),
        BenchCommand::Stores { lessons, postgres } => match postgres {
            None => stores::run(lessons, None, json, out),
            Some(url) => {
                let store = crate::config::bench_postgres(&url)?;
                let figures = stores::run(lessons, Some(store.open()), json, out);
                store.finish()?;
                figures
            }
        },
        BenchCommand::Locomo { data, split } => {
            locomo::run_bench(&data, paths.embedder()?, split, json, out)
        }
    }
}
