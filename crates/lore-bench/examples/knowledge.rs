//! The knowledge benchmark with the builtin embedder, without building the whole `lore`
//! binary: `cargo run --release -p lore-bench --example knowledge -- CHUNKS QUERIES [STORE]`
//! (with STORE, the store is kept there and a later run skips the unchanged documents).

use std::path::PathBuf;
use std::sync::Arc;

use lore_bench::Out;
use lore_recall::BuiltinEmbedder;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let chunks = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let queries = args.next().map_or(Ok(200), |a| a.parse())?;
    let store = args.next().map(PathBuf::from);
    let mut stdout = std::io::stdout();
    lore_bench::knowledge::run_at(
        store.as_deref(),
        chunks,
        queries,
        Arc::new(BuiltinEmbedder::default()),
        false,
        &mut Out::new(&mut stdout),
    )
}
