//! `lore`: record what agents did, correct them, and hand the lessons back.
//!
//! A thin binary: parse arguments once into typed values, build an Engine, call it, print.

mod allocator;
mod cli;
mod commands;
mod config;
mod input;
mod output;
mod settings;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LORE_LOG")
                // The PDF reader logs every flaw of a damaged file as an error; `lore ingest`
                // reports such a file once, by name, instead.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,lopdf=off")),
        )
        .init();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        // JSON written straight to stdout fails as serde_json's error around the io error.
        cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            })
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}
