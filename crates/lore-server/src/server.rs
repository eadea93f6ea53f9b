//! One process, two protocols: the REST API under `/v1` (with `/metrics`) and MCP at `/mcp`, on
//! one listener, with the web console (`crate::console`) at `/`.
//!
//! Limits live here rather than in handlers: a body size cap (axum's, so an oversized JSON body
//! is answered in the API's error shape), a timeout on every `/v1` request (a 408 in the same
//! shape), and none on `/mcp`,
//! whose streams legitimately stay open. A timed-out request's Engine call keeps running on the
//! blocking pool and may still commit, so a 408 means "unknown", never "not written".
//!
//! Shutdown is graceful and loses no acknowledged write: on the signal the listener closes,
//! MCP sessions are cancelled, and in-flight requests, including their blocking Engine calls,
//! run to completion before [`serve`] returns. A write the client saw acknowledged was
//! committed before the acknowledgement was sent.
//!
//! Without authentication the server is for the machine it runs on: [`check_bind`] refuses any
//! address that is not loopback, and callers say so at start-up. With tokens ([`crate::auth`]),
//! REST and MCP requests alike carry a bearer token and get an Engine scoped to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lore_engine::Engine;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::auth::Access;
use crate::error::ApiError;
use crate::mcp::LoreMcp;
use crate::metrics::{self, Metrics};
use crate::rest;

/// Limits applied to every request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest request body accepted, in bytes.
    pub body_bytes: usize,
    /// How long a `/v1` request may take.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            body_bytes: 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// The REST API alone, with its limits: what the handler tests drive through `oneshot`.
pub fn rest_app(engine: Arc<Engine>, limits: Limits, access: Access) -> Router {
    let metrics = Metrics::new();
    let never = CancellationToken::new();
    rest_with(engine, limits, access, Arc::clone(&metrics), never).layer(
        axum::middleware::from_fn_with_state(metrics, metrics::track),
    )
}

/// The REST routes over `engine`, with the body limit and the `/v1` timeout, counting into
/// `metrics`.
fn rest_with(
    engine: Arc<Engine>,
    limits: Limits,
    access: Access,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Router {
    rest::routes()
        .into_router(engine, access, Arc::clone(&metrics), shutdown)
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        .layer(axum::middleware::from_fn_with_state(
            limits.timeout,
            time_limit,
        ))
}

/// Answers 408 in the API's error shape when a request takes longer than `limit`. The Engine
/// call already on the blocking pool runs on and may commit, so 408 means "unknown".
async fn time_limit(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::timed_out(limit).into_response(),
    }
}

/// REST under `/v1`, `/metrics`, and MCP at `/mcp`; `shutdown` ends the MCP sessions and the
/// event streams. `/mcp` answers only requests whose `Host` is a loopback name.
pub fn app(
    engine: Arc<Engine>,
    limits: Limits,
    access: Access,
    shutdown: CancellationToken,
) -> Router {
    app_with_hosts(engine, limits, access, shutdown, &McpOptions::default())
}

/// How `/mcp` is served.
#[derive(Clone, Debug, Default)]
pub struct McpOptions {
    /// Host names (or `name:port`) `/mcp` answers besides loopback's.
    pub hosts: Vec<String>,
    /// Every request stands alone, with no session: any of several servers behind a proxy can
    /// answer any request, where a session lives only in the process that opened it.
    pub stateless: bool,
    /// The tools a connection gets when its URL names none (`/mcp?tools=…`); the loop by
    /// default.
    pub tools: crate::mcp::ToolSelection,
}

/// [`app`], with `/mcp` also answering requests whose `Host` is one of `mcp.hosts` (`name` or
/// `name:port`), and without sessions when `mcp.stateless`. The check guards against DNS rebinding: a web page cannot make a browser talk
/// to a local MCP server under a name it controls. A public deployment lists the names its
/// clients use.
pub fn app_with_hosts(
    engine: Arc<Engine>,
    limits: Limits,
    access: Access,
    shutdown: CancellationToken,
    mcp: &McpOptions,
) -> Router {
    let metrics = Metrics::new();
    let mcp_engine = Arc::clone(&engine);
    let mcp_metrics = Arc::clone(&metrics);
    let mcp_tools = mcp.tools.clone();
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = shutdown.clone();
    config.allowed_hosts.extend(mcp.hosts.iter().cloned());
    if mcp.stateless {
        config.legacy_session_mode = false;
        config.json_response = true;
    }
    let mcp = StreamableHttpService::new(
        move || {
            Ok(LoreMcp::new(Arc::clone(&mcp_engine))
                .with_metrics(Arc::clone(&mcp_metrics))
                .with_selection(mcp_tools.clone()))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mcp = tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn_with_state(
            access.clone(),
            grant_mcp_request,
        ))
        .layer(axum::middleware::from_fn_with_state(
            limits.body_bytes,
            crate::mcp::wire::jsonrpc_errors,
        ))
        .layer(RequestBodyLimitLayer::new(limits.body_bytes))
        .service(mcp);
    let probes = probes(Arc::clone(&engine), shutdown.clone());
    rest_with(engine, limits, access, Arc::clone(&metrics), shutdown)
        .merge(crate::console::router())
        .merge(probes)
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(
            metrics,
            metrics::track,
        ))
        .layer(TraceLayer::new_for_http())
}

/// How long readiness waits for the store before answering that it is not ready.
const READY_WITHIN: Duration = Duration::from_secs(2);

/// The header on recalls and `/readyz` saying whether recall answers from its full index
/// (`ready`) or, while that builds, from the store's own search (`warming`).
pub(crate) const INDEX_HEADER: &str = "lore-recall-index";

/// `/healthz` (the process answers) and `/readyz` (it can serve: the store answers a cheap read
/// within [`READY_WITHIN`], has room for writes, and it is not shutting down), for load balancers
/// and orchestrators. A server whose recall index is still building can serve (from the store's
/// search), so `/readyz` is 200 then too, with `recall_index` and [`INDEX_HEADER`] saying
/// `warming`: a balancer that prefers warm servers can tell them apart.
/// Neither needs a token nor says more than its status, so a probe learns nothing else.
fn probes(engine: Arc<Engine>, shutdown: CancellationToken) -> Router {
    use axum::http::StatusCode;
    use axum::routing::get;
    let answer = |status: StatusCode, word: &str| {
        (status, axum::Json(serde_json::json!({ "status": word }))).into_response()
    };
    let ready = |index: lore_engine::IndexState| {
        let body = serde_json::json!({ "status": "ready", "recall_index": index.as_str() });
        (
            StatusCode::OK,
            [(INDEX_HEADER, index.as_str())],
            axum::Json(body),
        )
            .into_response()
    };
    Router::new()
        .route(
            "/healthz",
            get(move || async move { answer(StatusCode::OK, "alive") }),
        )
        .route(
            "/readyz",
            get(move || async move {
                if shutdown.is_cancelled() {
                    return answer(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
                }
                let index = engine.recall_index_state();
                let read = tokio::task::spawn_blocking(move || {
                    engine.check_writable()?;
                    engine.change_cursor()
                });
                match tokio::time::timeout(READY_WITHIN, read).await {
                    Ok(Ok(Ok(_) | Err(lore_core::Error::Unsupported(_)))) => ready(index),
                    Ok(Ok(Err(lore_core::Error::StorageFull(cause)))) => {
                        tracing::warn!(%cause, "not ready: the store is full");
                        answer(StatusCode::SERVICE_UNAVAILABLE, "storage full")
                    }
                    Ok(Ok(Err(err))) => {
                        tracing::warn!(error = %err, "not ready: the store failed a read");
                        answer(StatusCode::SERVICE_UNAVAILABLE, "store unavailable")
                    }
                    Ok(Err(_)) | Err(_) => {
                        answer(StatusCode::SERVICE_UNAVAILABLE, "store unavailable")
                    }
                }
            }),
        )
}

/// Authenticates an MCP request and hands its grant to the tools in the request's extensions,
/// where [`LoreMcp`] finds it and scopes the Engine per request.
async fn grant_mcp_request(
    State(access): State<Access>,
    mut request: Request,
    next: Next,
) -> Response {
    match access.grant(request.headers()) {
        Ok(grant) => {
            if let Some(grant) = grant {
                request.extensions_mut().insert(grant);
            }
            next.run(request).await
        }
        Err(err) => err.into_response(),
    }
}

/// Why an address was refused.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to listen on {0}: no authentication is configured, so Lore serves loopback \
     addresses only (127.0.0.1 or [::1]); anyone who can reach {0} could read and change all \
     memory"
)]
pub struct PublicWithoutAuth(pub SocketAddr);

/// Refuses a non-loopback address when no authentication is configured.
///
/// # Errors
/// [`PublicWithoutAuth`] naming the address.
pub fn check_bind(addr: SocketAddr, access: &Access) -> Result<(), PublicWithoutAuth> {
    if addr.ip().is_loopback() || access.is_authenticated() {
        Ok(())
    } else {
        Err(PublicWithoutAuth(addr))
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then drains in-flight requests.
///
/// # Errors
/// When accepting connections fails.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

/// Serves REST and MCP over `engine` on `listener` until Ctrl-C or SIGTERM, then drains;
/// `mcp` as in [`app_with_hosts`].
///
/// # Errors
/// When accepting connections fails.
pub async fn run_until_signal(
    listener: TcpListener,
    engine: Arc<Engine>,
    limits: Limits,
    access: Access,
    mcp: &McpOptions,
) -> std::io::Result<()> {
    let token = CancellationToken::new();
    tokio::spawn(cancel_on_signal(token.clone()));
    survive_file_size_limit();
    let app = app_with_hosts(engine, limits, access, token.clone(), mcp);
    serve(listener, app, token).await
}

/// Turns a write past the process's file-size limit (`ulimit -f`) from death by SIGXFSZ into
/// the `EFBIG` error the store reports as full (507), as a full disk is: a server that dies
/// there loses every request in flight and restarts into the same limit.
fn survive_file_size_limit() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::from_raw(libc::SIGXFSZ)) {
            Ok(mut stream) => {
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        tracing::warn!("a write passed this process's file-size limit");
                    }
                });
            }
            Err(err) => tracing::warn!(%err, "cannot catch SIGXFSZ; a file-size limit kills"),
        }
    }
}

/// Cancels `token` on Ctrl-C or SIGTERM.
pub async fn cancel_on_signal(token: CancellationToken) {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!(%err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(err) => {
                tracing::warn!(%err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    token.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_request_times_out_in_the_api_error_shape() {
        use tower::ServiceExt;
        let slow = Router::new()
            .route(
                "/v1/slow",
                axum::routing::get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_millis(20),
                time_limit,
            ));
        let request = Request::get("/v1/slow")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = slow.oneshot(request).await.unwrap();
        assert_eq!(response.status().as_u16(), 408);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "timeout", "{body}");
    }

    #[test]
    fn only_loopback_is_served_without_auth() {
        for ok in ["127.0.0.1:7077", "[::1]:7077", "127.0.0.2:1"] {
            assert!(
                check_bind(ok.parse().unwrap(), &Access::Open).is_ok(),
                "{ok}"
            );
        }
        for refused in ["0.0.0.0:7077", "[::]:7077", "192.168.1.5:7077"] {
            let err = check_bind(refused.parse().unwrap(), &Access::Open)
                .unwrap_err()
                .to_string();
            assert!(err.contains("loopback"), "{refused}: {err}");
        }
    }
}
