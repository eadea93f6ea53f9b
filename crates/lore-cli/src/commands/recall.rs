//! `lore recall QUERY`: the lessons that fit a task, packed into a token budget.

use anyhow::Result;
use lore_engine::{Engine, RecallQuery, RecallResult};
use lore_providers::tokenizer::{Encoding, Tiktoken};
use lore_recall::{Decision, Explanation};
use lore_sqlite::OpenMode;

use crate::cli::RecallArgs;
use crate::config::Paths;
use crate::output;

/// The Engine a reading command (`lore recall`, `lore context`) uses, counting with `encoding`.
/// A store that does not exist yet holds nothing: the answer comes from an empty store of its
/// own, in the returned folder (kept alive by the caller), so reading never creates a store in
/// the project.
pub(crate) fn reading_engine(
    paths: &Paths,
    encoding: &str,
) -> Result<(Engine, Option<tempfile::TempDir>)> {
    let tokenizer = Tiktoken::shared(Encoding::parse(encoding)?)?;
    let (engine, scratch) = if paths.store_exists() {
        (paths.engine(OpenMode::Existing)?, None)
    } else {
        let dir = tempfile::tempdir()?;
        (paths.engine_at(&dir.path().join("lore.db"))?, Some(dir))
    };
    Ok((engine.with_tokenizer(tokenizer), scratch))
}

pub fn run(paths: &Paths, args: RecallArgs, json: bool) -> Result<()> {
    let (engine, _scratch) = reading_engine(paths, &args.encoding)?;
    let result = engine.recall(&RecallQuery {
        text: args.query,
        skill: args.skill,
        fingerprint: args.error,
        tags: args.tags,
        budget: args.budget,
        limit: args.limit,
        explain: args.explain,
        explore: args.run,
    })?;
    if json {
        return output::json(&result);
    }
    if !result.inferred_tags.is_empty() {
        output::line(format!(
            "tags from the error: {}",
            result.inferred_tags.join(", ")
        ))?;
    }
    print_text(&result)
}

fn print_text(result: &RecallResult) -> Result<()> {
    output::line(format!(
        "{} lessons, {}/{} tokens ({}), dense candidates by {}",
        result.lessons.len(),
        result.tokens,
        result.budget,
        result.tokenizer,
        result.embedder
    ))?;
    if !result.text.is_empty() {
        output::line(format!("\n{}", result.text))?;
    }
    if !result.held_out.is_empty() {
        let ids: Vec<&str> = result.held_out.iter().map(|id| id.as_str()).collect();
        output::line(format!("\nheld out to measure them: {}", ids.join(", ")))?;
    }
    if let Some(explain) = &result.explain {
        output::line("\nscore  decision                  sources                            id")?;
        for e in explain {
            output::line(explain_line(e))?;
        }
    }
    Ok(())
}

pub(crate) fn explain_line(e: &Explanation) -> String {
    let decision = match &e.decision {
        Decision::Kept { position, tier, .. } => format!("kept #{} tier {tier}", position + 1),
        Decision::Dropped { why } => {
            let value = serde_json::to_value(why).unwrap_or_default();
            let reason = value["reason"].as_str().unwrap_or_default().to_owned();
            let detail = &value["detail"];
            match (detail.as_str(), detail["kept"].as_str()) {
                (Some(detail), _) => format!("dropped: {reason} ({detail})"),
                (None, Some(kept)) => format!(
                    "dropped: {reason} (kept {kept}, better by {})",
                    detail["by"].as_str().unwrap_or("rank")
                ),
                (None, None) => format!("dropped: {reason}"),
            }
        }
    };
    let sources: Vec<String> = e
        .sources
        .iter()
        .map(|s| {
            let name = serde_json::to_value(s.source).unwrap_or_default();
            format!(
                "{}#{} {:.2}",
                name.as_str().unwrap_or_default(),
                s.rank,
                s.normalized
            )
        })
        .collect();
    format!(
        "{:.3}  {decision:<25} {:<34} {}",
        e.score,
        sources.join(", "),
        e.id
    )
}
