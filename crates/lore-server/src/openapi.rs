//! `/v1/openapi.json`: the API described for people and code generators.
//!
//! The document is written by hand (`openapi.json` beside this file) rather than derived from
//! annotations: it is short, it builds in no time, and the response shapes it names are the
//! core's serde types, which carry no OpenAPI derive. What keeps it true is a test, not a macro:
//! `openapi_document_matches_the_router` in `tests/rest.rs` checks that every route the router serves is in the document and every
//! operation in the document is served.

use std::sync::LazyLock;

use axum::Json;
use serde_json::Value;

/// The document's text, as shipped.
pub const DOCUMENT: &str = include_str!("openapi.json");

static PARSED: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(DOCUMENT).expect("openapi.json is valid JSON"));

/// The OpenAPI document.
pub fn parsed() -> &'static Value {
    &PARSED
}

pub(crate) async fn document() -> Json<Value> {
    Json(parsed().clone())
}
