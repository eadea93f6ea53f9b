//! `lore ingest PATH…` and `lore knowledge …`: a team's documents as knowledge chunks.
//!
//! The CLI's part is the file system: walking folders, reading text, naming each document by
//! its path relative to the working directory (so a store moved with its project still knows
//! its documents). Everything after that is the Engine's, shared with the other doors.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use lore_engine::knowledge::{
    Chunking, DocumentChange, IngestDocument, IngestReport, IngestRequest, KnowledgeQuery,
    SkippedDocument,
};
use lore_engine::{ContextQuery, LayerStatus};
use lore_providers::tokenizer::{Encoding, Tiktoken};
use lore_sqlite::OpenMode;

use super::pdf;
use crate::cli::{ContextArgs, IngestArgs, KnowledgeCommand, KnowledgeRecallArgs};
use crate::config::Paths;
use crate::output;

/// The extensions a folder walk ingests (besides `.pdf`); a file named on the command line is
/// read whatever its extension.
const TEXT_EXTENSIONS: [&str; 7] = ["md", "markdown", "mdx", "txt", "text", "rst", "adoc"];

/// What a walk found: the documents read, and those found but not readable.
#[derive(Default)]
struct Found {
    documents: Vec<IngestDocument>,
    skipped: Vec<SkippedDocument>,
}

impl Found {
    /// Reads the file at `path`: a PDF through [`pdf::text`], anything else as UTF-8. A file
    /// that cannot be read is skipped (the report names it and why), unless `strict` (a text file
    /// named on the command line, where a typo should stop the command).
    fn read(&mut self, path: &Path, cwd: &Path, strict: bool) -> Result<()> {
        let source = source_name(path, cwd);
        let text = if pdf::is_pdf(path) {
            pdf::text(path)
        } else {
            match std::fs::read_to_string(path) {
                Ok(text) => Ok(text),
                Err(_) if strict => bail!("{} is not UTF-8 text", path.display()),
                Err(_) => Err("it is not UTF-8 text".to_owned()),
            }
        };
        match text {
            Ok(text) => self.documents.push(IngestDocument { source, text }),
            Err(reason) => self.skipped.push(SkippedDocument { source, reason }),
        }
        Ok(())
    }
}

pub fn ingest(paths: &Paths, args: IngestArgs, json: bool) -> Result<()> {
    let cwd = std::env::current_dir()?;
    let mut found = Found::default();
    let mut roots = Vec::new();
    for path in &args.paths {
        let meta =
            std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        roots.push(source_name(path, &cwd));
        if meta.is_dir() {
            walk(path, &cwd, &mut found)?;
        } else {
            found.read(path, &cwd, true)?;
        }
    }
    let Found {
        mut documents,
        mut skipped,
    } = found;
    documents.sort_by(|a, b| a.source.cmp(&b.source));
    documents.dedup_by(|a, b| a.source == b.source);
    skipped.sort_by(|a, b| a.source.cmp(&b.source));
    skipped.dedup_by(|a, b| a.source == b.source);
    let engine = paths.engine(OpenMode::Create)?;
    let request = IngestRequest {
        skill: args.skill,
        roots,
        documents,
        chunking: Chunking {
            max_tokens: args.max_tokens,
            overlap_tokens: args.overlap,
        },
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(request.documents.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("ingesting {bar:40} {pos}/{len} documents ({eta} left)")
                .expect("a valid template"),
        );
        bar
    });
    let report = engine.ingest_skipping(&request, skipped, &mut |done, _| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if json {
        return output::json(&report);
    }
    print_report(&report)
}

/// Walks `dir` for text and PDF documents, skipping hidden entries and symbolic links (which
/// could loop); a file that cannot be read is skipped by name rather than failing the walk.
fn walk(dir: &Path, cwd: &Path, out: &mut Found) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type()?;
        if entry.file_name().to_string_lossy().starts_with('.') || kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            walk(&path, cwd, out)?;
        } else if is_text(&path) || pdf::is_pdf(&path) {
            out.read(&path, cwd, false)?;
        }
    }
    Ok(())
}

fn is_text(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TEXT_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The path relative to the working directory when it lies inside it, else absolute; with
/// `/` separators and no `./`.
fn source_name(path: &Path, cwd: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let normal: PathBuf = absolute.components().collect();
    let shown = normal
        .strip_prefix(cwd)
        .map_or(normal.clone(), Path::to_owned);
    let name = shown.to_string_lossy().replace('\\', "/");
    if name.is_empty() {
        ".".to_owned()
    } else {
        name
    }
}

fn print_report(report: &IngestReport) -> Result<()> {
    for doc in &report.documents {
        let what = match doc.change {
            DocumentChange::Added => "added",
            DocumentChange::Updated => "updated",
            DocumentChange::Unchanged => continue,
            DocumentChange::Removed => "removed",
        };
        let redacted = if doc.redacted > 0 {
            format!(", {} redacted", doc.redacted)
        } else {
            String::new()
        };
        output::line(format!(
            "  {what:<8} {} ({} chunks{redacted})",
            doc.source, doc.chunks
        ))?;
    }
    for doc in &report.skipped {
        output::line(format!("  skipped  {}: {}", doc.source, doc.reason))?;
    }
    let skipped = if report.skipped.is_empty() {
        String::new()
    } else {
        format!(
            ", {} skipped (any stored version kept)",
            report.skipped.len()
        )
    };
    output::line(format!(
        "{}: {} added, {} updated, {} unchanged, {} removed{skipped}; {} chunks written, {} \
         removed",
        report.skill,
        report.added,
        report.updated,
        report.unchanged,
        report.removed,
        report.chunks_written,
        report.chunks_removed
    ))
}

pub fn run(paths: &Paths, cmd: KnowledgeCommand, json: bool) -> Result<()> {
    match cmd {
        KnowledgeCommand::Recall(args) => recall(paths, args, json),
        KnowledgeCommand::List { skill } => {
            if !paths.store_exists() {
                bail!("no store yet: run `lore ingest PATH --skill DOMAIN/SKILL` first");
            }
            let engine = paths.engine(OpenMode::Existing)?;
            let docs = engine.knowledge_documents(skill.as_ref())?;
            if json {
                return output::json(&docs);
            }
            for d in &docs {
                output::line(format!(
                    "{}  {}  {} chunks  {}  {}",
                    d.skill,
                    d.source,
                    d.chunks,
                    &d.hash[..12.min(d.hash.len())],
                    d.ingested_at.format("%Y-%m-%d %H:%M")
                ))?;
            }
            Ok(())
        }
    }
}

fn recall(paths: &Paths, args: KnowledgeRecallArgs, json: bool) -> Result<()> {
    if !paths.store_exists() {
        bail!("no store yet: run `lore ingest PATH --skill DOMAIN/SKILL` first");
    }
    let tokenizer = Tiktoken::shared(Encoding::parse(&args.encoding)?)?;
    let engine = paths.engine(OpenMode::Existing)?.with_tokenizer(tokenizer);
    let result = engine.recall_knowledge(&KnowledgeQuery {
        text: args.query,
        skill: args.skill,
        limit: Some(args.limit),
        budget: Some(args.budget),
        explain: args.explain,
    })?;
    if json {
        return output::json(&result);
    }
    output::line(format!(
        "{} chunks, {}/{} tokens ({}), dense candidates by {}",
        result.chunks.len(),
        result.tokens,
        result.budget,
        result.tokenizer,
        result.embedder
    ))?;
    if !result.text.is_empty() {
        output::line(format!("\n{}", result.text))?;
    }
    if let Some(explain) = &result.explain {
        output::line("\nscore  decision                  sources                            id")?;
        for e in explain {
            output::line(super::recall::explain_line(e))?;
        }
    }
    Ok(())
}

pub fn context(paths: &Paths, args: ContextArgs, json: bool) -> Result<()> {
    let (engine, _scratch) = super::recall::reading_engine(paths, &args.encoding)?;
    let result = engine.context(&ContextQuery {
        text: args.query,
        skill: args.skill,
        layer_budget: args.layer_budget,
        total_budget: args.total_budget,
        explain: args.explain,
    })?;
    output::warnings(&result.warnings);
    if json {
        return output::json(&result);
    }
    output::line(format!(
        "{}/{} tokens ({}); layers of {} tokens each:",
        result.tokens, result.total_budget, result.tokenizer, result.layer_budget
    ))?;
    for layer in &result.layers {
        let status = match layer.status {
            LayerStatus::Filled => "",
            LayerStatus::Empty => " (empty)",
            LayerStatus::Failed => " (failed)",
        };
        let cut = if layer.truncated { ", cut" } else { "" };
        output::line(format!(
            "  {:<10} {:>5} tokens, {} items{cut}{status}",
            serde_json::to_value(layer.layer)?
                .as_str()
                .unwrap_or_default(),
            layer.tokens,
            layer.items.len()
        ))?;
        for e in layer.explain.iter().flatten() {
            output::line(format!("    {}", super::recall::explain_line(e)))?;
        }
    }
    if !result.text.is_empty() {
        output::line(format!("\n{}", result.text))?;
    }
    Ok(())
}
