//! `GET /metrics`: Prometheus text (see [`crate::metrics`]).

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use lore_core::scope::Scope;

use super::Caller;
use crate::auth::Role;
use crate::error::ApiError;
use crate::metrics::store_bytes;

/// The content type of Prometheus' text format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub async fn metrics(caller: Caller) -> Result<impl IntoResponse, ApiError> {
    // Counts and sizes are of the whole store, not a scope: an admin without a scope only.
    caller.require(Role::Admin)?;
    let metrics = caller.metrics.clone();
    let (status, bytes) = caller
        .run(|e| {
            if e.scope() != &Scope::unrestricted() {
                return Err(lore_core::Error::Forbidden(
                    "/metrics counts the whole store; it needs a token without a scope".into(),
                ));
            }
            let status = e.status()?;
            let bytes = store_bytes(&status.store.location);
            Ok((status, bytes))
        })
        .await?;
    Ok((
        [(CONTENT_TYPE, TEXT_FORMAT)],
        metrics.render(&status, bytes),
    ))
}
