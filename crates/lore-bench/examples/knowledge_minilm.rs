//! The knowledge benchmark with the local MiniLM encoder, without building the whole `lore`
//! binary: `LORE_MINILM_PATH=… cargo run --release -p lore-bench --features minilm --example
//! knowledge_minilm -- CHUNKS QUERIES [STORE]` (with STORE, the store is kept there and a later
//! run skips the unchanged documents: the ingest is the long part).

use std::path::PathBuf;

use lore_bench::Out;
use lore_providers::embedders::{EmbedderConfig, EmbedderKind, connect};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let chunks = args.next().map_or(Ok(2_000), |a| a.parse())?;
    let queries = args.next().map_or(Ok(100), |a| a.parse())?;
    let store = args.next().map(PathBuf::from);
    let embedder = connect(&EmbedderConfig::from_env()?.with_kind(EmbedderKind::Minilm))?;
    let mut stdout = std::io::stdout();
    lore_bench::knowledge::run_at(
        store.as_deref(),
        chunks,
        queries,
        embedder,
        false,
        &mut Out::new(&mut stdout),
    )
}
