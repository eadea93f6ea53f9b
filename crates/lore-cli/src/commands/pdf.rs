//! The text of a PDF, page by page, for `lore ingest`.
//!
//! Pages are joined by form feeds, the separator PDF text extractors write, which the Engine's
//! paged chunking turns back into page numbers for each chunk's provenance. Reading runs in
//! pure Rust (pdf-extract over lopdf) behind the `pdf` feature; a build without it still finds
//! `.pdf` files, and says which feature would read them.
//!
//! A PDF that cannot be read is an answer, not a failure: the caller skips it by name and the
//! rest of the ingest goes on. The extractor is known to panic on some malformed files, so a
//! panic is caught and reported as damage, never allowed to end the ingest.

use std::path::Path;

/// Whether `path` names a PDF, by its extension.
pub fn is_pdf(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("pdf"))
}

/// The text of the PDF at `path`, its pages separated by form feeds; `Err` says why it cannot
/// be read (damaged, encrypted, no text, or no PDF support in this build).
#[cfg(not(feature = "pdf"))]
pub fn text(_path: &Path) -> Result<String, String> {
    Err("this lore was built without PDF support (the `pdf` cargo feature of lore-cli)".into())
}

/// The text of the PDF at `path`, its pages separated by form feeds; `Err` says why it cannot
/// be read (damaged, encrypted, no text, or no PDF support in this build).
#[cfg(feature = "pdf")]
pub fn text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the file: {e}"))?;
    // The panic hook would print the extractor's internal message as if Lore had crashed; the
    // ingest is single-threaded here, so silencing it for the call hides nothing else.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let pages = std::panic::catch_unwind(|| pages(&bytes));
    std::panic::set_hook(hook);
    let pages = pages.map_err(|_| "the PDF is damaged (its structure cannot be followed)")??;
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(format!(
            "the PDF holds no text in its {} page(s) (scanned pages need text recognition first)",
            pages.len()
        ));
    }
    // A NUL would make the whole ingest refuse the document as binary.
    Ok(pages.join("\u{c}").replace('\0', ""))
}

#[cfg(feature = "pdf")]
fn pages(bytes: &[u8]) -> Result<Vec<String>, String> {
    use pdf_extract::{Document, PlainTextOutput, output_doc_page};

    let mut doc =
        Document::load_mem(bytes).map_err(|e| format!("the PDF cannot be parsed ({e})"))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("the PDF is encrypted with a password".into());
    }
    let count = u32::try_from(doc.get_pages().len()).unwrap_or(u32::MAX);
    if count == 0 {
        return Err("the PDF has no pages".into());
    }
    // Page by page, so that one unreadable page is named rather than silently ending the text.
    (1..=count)
        .map(|n| {
            let mut text = String::new();
            output_doc_page(&doc, &mut PlainTextOutput::new(&mut text), n)
                .map_err(|e| format!("page {n} of the PDF cannot be read ({e})"))?;
            Ok(text)
        })
        .collect()
}
