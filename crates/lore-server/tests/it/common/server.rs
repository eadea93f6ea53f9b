//! A server over a temporary home, driven through `Router::oneshot`: REST requests and MCP tool
//! calls (initialize, then the call, in one session), with or without tokens.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_engine::EngineConfig;
use lore_server::auth::{Access, Role, TokenFile, parse_scope};
use lore_server::{Limits, app};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::{Home, SKILL};

pub struct Server {
    pub home: Home,
    pub tokens: std::path::PathBuf,
    pub app: Router,
}

impl Server {
    /// A server over `config` whose token file holds an admin token before it starts.
    pub fn with_tokens(config: EngineConfig) -> Self {
        let home = Home::with_config(config);
        let tokens = home.lore_home().join("tokens.json");
        TokenFile::load(&tokens)
            .unwrap()
            .create(Role::Admin, parse_scope("*").unwrap())
            .unwrap();
        Self::start(home, tokens)
    }

    /// A server started with no token at all.
    pub fn open() -> Self {
        let home = Home::new();
        let tokens = home.lore_home().join("tokens.json");
        Self::start(home, tokens)
    }

    pub fn start(home: Home, tokens: std::path::PathBuf) -> Self {
        let access = Access::new(&TokenFile::load(&tokens).unwrap(), None);
        let app = app(
            Arc::clone(&home.engine),
            Limits::default(),
            access,
            CancellationToken::new(),
        );
        Self { home, tokens, app }
    }

    /// A new token's secret and ID over `scope` (as `lore tokens create --scope` takes it).
    pub fn scoped_token(&self, role: Role, scope: &str) -> (String, String) {
        let mut file = TokenFile::load(&self.tokens).unwrap();
        let (record, secret) = file.create(role, parse_scope(scope).unwrap()).unwrap();
        (secret, record.id)
    }

    /// One raw request to `/mcp` (loopback `Host`, the Accept MCP asks for), answered with
    /// its status, content type and body.
    pub async fn mcp_raw(
        &self,
        token: Option<&str>,
        content_type: Option<&str>,
        body: &str,
    ) -> (StatusCode, String, String) {
        let mut req = Request::post("/mcp")
            .header(header::HOST, "localhost")
            .header(header::ACCEPT, "application/json, text/event-stream");
        if let Some(ct) = content_type {
            req = req.header(header::CONTENT_TYPE, ct);
        }
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let res = self
            .app
            .clone()
            .oneshot(req.body(Body::from(body.to_owned())).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let ct = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, ct, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The status of a GET whose body is a stream that does not end (`/v1/events`).
    pub async fn status_only(&self, token: &str, uri: &str) -> StatusCode {
        let req = Request::get(uri)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        self.app.clone().oneshot(req).await.unwrap().status()
    }

    /// A new token's secret and ID, made as `lore tokens create` makes it.
    pub fn token(&self, role: Role) -> (String, String) {
        let mut file = TokenFile::load(&self.tokens).unwrap();
        let (record, secret) = file.create(role, parse_scope("*").unwrap()).unwrap();
        (secret, record.id)
    }

    pub async fn send(
        &self,
        token: Option<&str>,
        method: Method,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let res = self
            .app
            .clone()
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        (status, value)
    }

    pub async fn record(&self, token: &str, input: Value) -> String {
        let (status, body) = self
            .send(
                Some(token),
                Method::POST,
                "/v1/executions",
                Some(json!({"skill": SKILL, "input": input, "output": {"priority": "normal"}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    /// One MCP tool call over streamable HTTP: initialize, then the call in that session.
    pub async fn mcp(&self, token: &str, tool: &str, arguments: Value) -> Value {
        let params = json!({"name": tool, "arguments": arguments});
        self.mcp_method(token, "tools/call", params).await
    }

    /// One JSON-RPC request over streamable HTTP with every tool (`/mcp?tools=all`):
    /// initialize, then `method` in that session.
    pub async fn mcp_method(&self, token: &str, method: &str, params: Value) -> Value {
        self.mcp_at("/mcp?tools=all", token, method, params).await
    }

    /// [`Self::mcp_method`] at `uri` (`/mcp` with the connection's own query).
    pub async fn mcp_at(&self, uri: &str, token: &str, method: &str, params: Value) -> Value {
        let post = |body: Value, session: Option<String>| {
            let mut req = Request::post(uri)
                .header(header::HOST, "localhost")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json, text/event-stream");
            if let Some(s) = session {
                req = req
                    .header("mcp-session-id", s)
                    .header("mcp-protocol-version", "2025-06-18");
            }
            req.body(Body::from(body.to_string())).unwrap()
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "security-test", "version": "0"}}});
        let res = self.app.clone().oneshot(post(init, None)).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let session = res.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        let _ = first_message(res).await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let res = self
            .app
            .clone()
            .oneshot(post(initialized, Some(session.clone())))
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
        let res = self
            .app
            .clone()
            .oneshot(post(call, Some(session)))
            .await
            .unwrap();
        first_message(res).await
    }
}

/// The first JSON-RPC message of a response, whether it came as JSON or as an event stream.
pub async fn first_message(res: axum::response::Response) -> Value {
    use futures_util::StreamExt;
    let mut body = res.into_body().into_data_stream();
    let mut text = String::new();
    while let Some(chunk) = body.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        for line in text.lines() {
            let data = line.strip_prefix("data:").map(str::trim).unwrap_or(line);
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && v.get("jsonrpc").is_some()
            {
                return v;
            }
        }
    }
    panic!("no JSON-RPC message in {text:?}")
}
