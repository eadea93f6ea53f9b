//! Cutting a document into chunks: by headings first, then by a size cap with overlap.
//!
//! Headings are where an author already cut the text by meaning, so a section is the natural
//! unit; only a section longer than the cap is cut again, at line boundaries, each piece
//! starting a few lines back so a sentence that straddles a cut is found from either side.
//! Headings inside fenced code blocks are code, not structure. Every piece keeps the line range
//! it came from, so a quote can always be traced back to the file.

use lore_core::error::{Error, Result};
use lore_core::ports::tokenize::Tokenizer;

/// How documents are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunking {
    /// The most tokens a chunk holds.
    pub max_tokens: usize,
    /// How many tokens of the previous piece a cut section's next piece repeats.
    pub overlap_tokens: usize,
}

impl Default for Chunking {
    fn default() -> Self {
        // A few paragraphs: small enough that eight fit the layer's 2,000 tokens with room for
        // their provenance lines, large enough to hold a runbook step with its context.
        Self {
            max_tokens: 200,
            overlap_tokens: 30,
        }
    }
}

impl Chunking {
    /// Checks the settings.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the cap is under 16 tokens or the overlap is not below half of it.
    pub fn check(&self) -> Result<()> {
        if self.max_tokens < 16 {
            return Err(Error::invalid(
                "max_tokens",
                format!("{} is under the minimum of 16", self.max_tokens),
            ));
        }
        if self.overlap_tokens * 2 > self.max_tokens {
            return Err(Error::invalid(
                "overlap_tokens",
                format!(
                    "{} is more than half the chunk size ({})",
                    self.overlap_tokens, self.max_tokens
                ),
            ));
        }
        Ok(())
    }
}

/// The kind of text, which decides whether headings are structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// Markdown (`#` headings, fenced code).
    Markdown,
    /// Anything else: paragraphs only.
    Plain,
    /// A PDF's text: pages separated by form feeds (`\u{c}`, as PDF text extractors write
    /// them), each page cut as plain text, its lines numbered within the page.
    Paged,
}

impl TextFormat {
    /// The format a source path's extension suggests.
    pub fn of(source: &str) -> Self {
        let lower = source.to_ascii_lowercase();
        if [".md", ".markdown", ".mdx"]
            .iter()
            .any(|e| lower.ends_with(e))
        {
            TextFormat::Markdown
        } else if lower.ends_with(".pdf") {
            TextFormat::Paged
        } else {
            TextFormat::Plain
        }
    }
}

/// One piece of a document before it becomes a stored chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The headings above it, outermost first, joined by ` › `.
    pub heading: String,
    /// Its page, 1-based, for paged text; its lines are then numbered within the page.
    pub page: Option<u32>,
    /// First line, 1-based.
    pub line_start: u32,
    /// Last line, inclusive.
    pub line_end: u32,
    /// The text.
    pub text: String,
}

/// A run of lines under one heading path.
struct Section {
    heading: String,
    lines: Vec<(u32, String)>,
}

/// Cuts `text` into pieces of at most `chunking.max_tokens` tokens as `tokenizer` counts them
/// (a single word longer than the cap is the only exception, and is cut by characters).
pub fn chunk(
    text: &str,
    format: TextFormat,
    chunking: Chunking,
    tokenizer: &dyn Tokenizer,
) -> Vec<Piece> {
    if format == TextFormat::Paged {
        // A reader finds a quote by its page; lines counted across pages would not help.
        return text
            .split('\u{c}')
            .enumerate()
            .flat_map(|(i, page)| {
                let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
                chunk(page, TextFormat::Plain, chunking, tokenizer)
                    .into_iter()
                    .map(move |piece| Piece {
                        page: Some(number),
                        ..piece
                    })
            })
            .collect();
    }
    sections(text, format)
        .into_iter()
        .flat_map(|s| split(s, chunking, tokenizer))
        .collect()
}

fn sections(text: &str, format: TextFormat) -> Vec<Section> {
    let mut out = Vec::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut current = Section {
        heading: String::new(),
        lines: Vec::new(),
    };
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let trimmed = line.trim_start();
        if format == TextFormat::Markdown {
            if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
                fence = match fence {
                    Some(open) if open == marker => None,
                    None => Some(marker),
                    other => other,
                };
            } else if fence.is_none()
                && let Some((level, title)) = heading(trimmed)
            {
                out.push(std::mem::replace(
                    &mut current,
                    Section {
                        heading: String::new(),
                        lines: Vec::new(),
                    },
                ));
                stack.retain(|(l, _)| *l < level);
                stack.push((level, title.to_owned()));
                current.heading = stack
                    .iter()
                    .map(|(_, t)| t.as_str())
                    .collect::<Vec<_>>()
                    .join(" › ");
            }
        }
        current.lines.push((number, line.to_owned()));
    }
    out.push(current);
    out.retain(|s| {
        s.lines
            .iter()
            .any(|(_, l)| !l.trim().is_empty() && heading(l.trim_start()).is_none())
    });
    out
}

/// An ATX heading's level and title.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim();
    Some((level, title))
}

/// One section cut to the cap, with overlap between its pieces.
fn split(section: Section, chunking: Chunking, tokenizer: &dyn Tokenizer) -> Vec<Piece> {
    let units = units(&section.lines, chunking.max_tokens, tokenizer);
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < units.len() {
        let mut end = start;
        let mut tokens = 0;
        while end < units.len() && (end == start || tokens + units[end].2 <= chunking.max_tokens) {
            tokens += units[end].2;
            end += 1;
        }
        let mut piece = piece_of(&section.heading, &units[start..end]);
        // Joining adds newlines, which a byte-pair tokenizer may count: trim until it fits.
        let mut last = end;
        while tokenizer.count(&piece.text) > chunking.max_tokens && last - start > 1 {
            last -= 1;
            piece = piece_of(&section.heading, &units[start..last]);
        }
        end = last;
        if !piece.text.trim().is_empty() {
            pieces.push(piece);
        }
        if end >= units.len() {
            break;
        }
        start = overlap_start(&units, start, end, chunking.overlap_tokens);
    }
    pieces
}

fn piece_of(heading: &str, units: &[(u32, String, usize)]) -> Piece {
    // Blank lines at either end are not part of what the piece quotes.
    let first = units.iter().position(|u| !u.1.trim().is_empty());
    let last = units.iter().rposition(|u| !u.1.trim().is_empty());
    let units = match (first, last) {
        (Some(a), Some(b)) => &units[a..=b],
        _ => units,
    };
    Piece {
        heading: heading.to_owned(),
        page: None,
        line_start: units.first().map_or(0, |u| u.0),
        line_end: units.last().map_or(0, |u| u.0),
        text: units
            .iter()
            .map(|u| u.1.as_str())
            .collect::<Vec<_>>()
            .join("\n")
            .trim()
            .to_owned(),
    }
}

/// Where the next piece starts: far enough back to repeat about `overlap` tokens, never at or
/// before the current start, so the cut always moves forward.
fn overlap_start(
    units: &[(u32, String, usize)],
    start: usize,
    end: usize,
    overlap: usize,
) -> usize {
    let mut next = end;
    let mut tokens = 0;
    while next > start + 1 && tokens + units[next - 1].2 <= overlap {
        tokens += units[next - 1].2;
        next -= 1;
    }
    next
}

/// The section's lines with their token counts; a line over the cap is cut into word runs that
/// fit (and a word over the cap by characters), each keeping the line's number.
fn units(
    lines: &[(u32, String)],
    cap: usize,
    tokenizer: &dyn Tokenizer,
) -> Vec<(u32, String, usize)> {
    let mut out = Vec::new();
    for (number, line) in lines {
        let tokens = tokenizer.count(line);
        if tokens <= cap {
            out.push((*number, line.clone(), tokens));
            continue;
        }
        let mut run = String::new();
        for word in line
            .split_whitespace()
            .flat_map(|w| cut_word(w, cap, tokenizer))
        {
            let candidate = if run.is_empty() {
                word.clone()
            } else {
                format!("{run} {word}")
            };
            if !run.is_empty() && tokenizer.count(&candidate) > cap {
                let tokens = tokenizer.count(&run);
                out.push((*number, std::mem::replace(&mut run, word), tokens));
            } else {
                run = candidate;
            }
        }
        if !run.is_empty() {
            let tokens = tokenizer.count(&run);
            out.push((*number, run, tokens));
        }
    }
    out
}

/// A word cut by characters into parts of at most `cap` tokens.
fn cut_word(word: &str, cap: usize, tokenizer: &dyn Tokenizer) -> Vec<String> {
    if tokenizer.count(word) <= cap {
        return vec![word.to_owned()];
    }
    let mut parts = Vec::new();
    let mut part = String::new();
    for c in word.chars() {
        part.push(c);
        if tokenizer.count(&part) > cap {
            part.pop();
            parts.push(std::mem::take(&mut part));
            part.push(c);
        }
    }
    parts.push(part);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use lore_core::ports::tokenize::ApproxTokenizer;
    use proptest::prelude::*;

    const DOC: &str = "# Runbook\n\nIntro line.\n\n## Deploy\n\nRun the pipeline.\n\n```sh\n# not a heading\nmake deploy\n```\n\n### Rollback\n\nRevert the tag.\n\n## Empty\n\n# Other\nText under other.\n";

    #[test]
    fn headings_make_sections_with_their_path_and_lines() {
        let pieces = chunk(
            DOC,
            TextFormat::Markdown,
            Chunking::default(),
            &ApproxTokenizer,
        );
        let headings: Vec<&str> = pieces.iter().map(|p| p.heading.as_str()).collect();
        assert_eq!(
            headings,
            [
                "Runbook",
                "Runbook › Deploy",
                "Runbook › Deploy › Rollback",
                "Other"
            ]
        );
        let deploy = &pieces[1];
        assert_eq!((deploy.line_start, deploy.line_end), (5, 12));
        assert!(deploy.text.contains("# not a heading"), "{}", deploy.text);
        assert_eq!((pieces[3].line_start, pieces[3].line_end), (20, 21));
    }

    #[test]
    fn plain_text_ignores_hashes() {
        let pieces = chunk(
            DOC,
            TextFormat::Plain,
            Chunking::default(),
            &ApproxTokenizer,
        );
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].heading, "");
    }

    #[test]
    fn paged_text_numbers_pages_and_counts_lines_within_each() {
        let text =
            "Deploy guide\n\nFreeze migrations.\n\u{c}\u{c}Rolling back\nUse the previous tag.\n";
        assert_eq!(TextFormat::of("docs/Guide.PDF"), TextFormat::Paged);
        let pieces = chunk(
            text,
            TextFormat::Paged,
            Chunking::default(),
            &ApproxTokenizer,
        );
        let at: Vec<(Option<u32>, u32, u32)> = pieces
            .iter()
            .map(|p| (p.page, p.line_start, p.line_end))
            .collect();
        // The empty second page makes no piece, and the third keeps its number.
        assert_eq!(at, [(Some(1), 1, 3), (Some(3), 1, 2)]);
        assert!(pieces[1].text.starts_with("Rolling back"), "{pieces:?}");
        assert_eq!(
            chunk(
                text,
                TextFormat::Plain,
                Chunking::default(),
                &ApproxTokenizer
            )[0]
            .page,
            None
        );
    }

    #[test]
    fn a_long_section_is_cut_with_overlap() {
        let body: Vec<String> = (1..=200)
            .map(|i| format!("line {i} says something"))
            .collect();
        let text = format!("# Long\n{}", body.join("\n"));
        let chunking = Chunking {
            max_tokens: 50,
            overlap_tokens: 10,
        };
        let pieces = chunk(&text, TextFormat::Markdown, chunking, &ApproxTokenizer);
        assert!(pieces.len() > 5);
        for pair in pieces.windows(2) {
            assert!(pair[1].line_start <= pair[0].line_end, "overlap: {pair:?}");
            assert!(
                pair[1].line_start > pair[0].line_start,
                "progress: {pair:?}"
            );
        }
        assert_eq!(pieces.last().unwrap().line_end, 201);
    }

    #[test]
    fn bad_settings_are_refused() {
        let tiny = Chunking {
            max_tokens: 8,
            overlap_tokens: 0,
        };
        assert!(tiny.check().is_err());
        let wide = Chunking {
            max_tokens: 100,
            overlap_tokens: 60,
        };
        assert!(
            wide.check()
                .unwrap_err()
                .to_string()
                .contains("overlap_tokens")
        );
    }

    proptest! {
        #[test]
        fn every_piece_fits_and_every_line_is_covered(
            lines in proptest::collection::vec("[a-z#` ]{0,120}", 0..80),
            cap in 16usize..80,
        ) {
            let text = lines.join("\n");
            let chunking = Chunking { max_tokens: cap, overlap_tokens: cap / 4 };
            let pieces = chunk(&text, TextFormat::Markdown, chunking, &ApproxTokenizer);
            for p in &pieces {
                prop_assert!(ApproxTokenizer.count(&p.text) <= cap, "{p:?}");
                prop_assert!(p.line_start <= p.line_end);
            }
            for (i, line) in lines.iter().enumerate() {
                let n = (i + 1) as u32;
                let content = !line.trim().is_empty();
                let fenced_or_heading = line.trim_start().starts_with('#') || line.contains('`');
                if content && !fenced_or_heading {
                    prop_assert!(
                        pieces.iter().any(|p| p.line_start <= n && n <= p.line_end),
                        "line {n} {line:?} not covered"
                    );
                }
            }
        }
    }
}
