//! The web console at `/`: one HTML shell, one stylesheet and one script, compiled into the
//! binary.
//!
//! The console has no backend of its own. The script calls the same `/v1` API with the same
//! bearer token as any other client, so every rule (roles, scopes, redaction, audit) is the
//! API's, and a page can show nothing the token could not read with `curl`. The token is typed
//! once on the sign-in screen and kept in the tab's `sessionStorage`; it is never put in a URL
//! or a cookie, so no other site can make a browser use it (no CSRF).
//!
//! Every response here carries a strict Content-Security-Policy: scripts and styles only from
//! this server, no inline script, no `eval`, connections only back to it. The script builds the
//! page with `textContent` and never with HTML strings, so stored text (a lesson written by an
//! agent) cannot become markup.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/console.js");
const STYLE: &str = include_str!("assets/console.css");
const ICON: &str = include_str!("assets/icon.svg");

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; \
    frame-ancestors 'none'";

/// The console's routes: `/` and `/console/*`, outside `/v1`, needing no credential (they hold
/// no data; the data comes from `/v1` with the token).
pub fn router() -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route("/console", get(|| async { Redirect::permanent("/") }))
        .route(
            "/console/console.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/console/console.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route(
            "/console/icon.svg",
            get(|| async { asset(ICON, "image/svg+xml") }),
        )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The assets change with the binary; a short cache keeps an upgrade visible.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
