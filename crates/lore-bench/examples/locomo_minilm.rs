//! `lore bench locomo` with the local MiniLM encoder, without building the whole `lore` binary:
//! `LORE_MINILM_PATH=… cargo run --release -p lore-bench --features minilm --example
//! locomo_minilm -- LOCOMO_JSON dev|heldout`.

use std::path::PathBuf;

use anyhow::Context;
use lore_bench::locomo::TurnText;
use lore_bench::{Out, Split};
use lore_providers::embedders::{EmbedderConfig, EmbedderKind, connect};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let data = PathBuf::from(args.next().context("give the LoCoMo JSON file")?);
    let split = match args.next().as_deref() {
        Some("heldout") => Split::Heldout,
        Some("dev") | None => Split::Dev,
        Some(other) => anyhow::bail!("{other:?} is not a split: dev or heldout"),
    };
    let embedder = connect(&EmbedderConfig::from_env()?.with_kind(EmbedderKind::Minilm))?;
    let mut stdout = std::io::stdout();
    lore_bench::locomo::run_bench(
        &data,
        embedder,
        split,
        TurnText::WithPrevious,
        false,
        &mut Out::new(&mut stdout),
    )
}
