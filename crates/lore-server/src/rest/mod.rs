//! The REST API under `/v1` (and `/metrics`): a route table, the extractors every handler shares, and nothing else.
//!
//! Handlers are translations: JSON in, one Engine call, JSON out. Three things make that hold:
//!
//! - [`Caller`] is the only way a handler reaches the Engine. It resolves the request's scope (the
//!   unrestricted handle until tokens are configured) and runs the synchronous Engine on the
//!   blocking pool, so no handler can block the async runtime or forget the scope.
//! - [`Body`], [`Params`] and [`Path`] stand in for axum's `Json`, `Query` and `Path` so that
//!   malformed input is answered in the same error shape as everything else, in a sentence that
//!   names the field (see [`crate::error`] and [`crate::input`]).
//! - [`Routes`] registers each route and records it in a table, which is how the OpenAPI test
//!   knows the router's real surface without a second, hand-kept list.

mod events;
mod executions;
mod insights;
mod memory;
mod metrics;
mod recall;

pub use events::change_event;

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::handler::Handler;
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use lore_engine::Engine;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::{Access, Role};
use crate::catalogue::{Door, Each, Operation, Principal, Verb};
use crate::error::ApiError;
use crate::input::{self, Place};
use crate::metrics::Metrics;
use crate::openapi;

/// What every handler can reach: the Engine the server was started with, and who may call.
#[derive(Clone, Debug)]
pub struct AppState {
    engine: Arc<Engine>,
    access: Access,
    metrics: Arc<Metrics>,
    /// Cancelled when the server shuts down; ends the event streams.
    shutdown: CancellationToken,
}

/// The Engine handle for this request, already narrowed to the caller's scope and acting for
/// the caller's credential (the token's ID, or [`ANONYMOUS`] without tokens), and its role.
/// Who wrote something and who changed it come from here, never from a request body.
#[derive(Debug)]
pub struct Caller {
    engine: Engine,
    role: Role,
    metrics: Arc<Metrics>,
    /// Whether a credential was checked (false on a server without tokens).
    authenticated: bool,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let grant = state.access.grant(&parts.headers)?;
        let authenticated = grant.is_some();
        let (engine, role) = Principal::new(&state.engine, grant.as_ref(), Door::Rest).into_parts();
        Ok(Self {
            engine,
            role,
            metrics: Arc::clone(&state.metrics),
            authenticated,
        })
    }
}

impl Caller {
    /// Refuses callers whose role is below `needed`.
    ///
    /// # Errors
    /// 403 naming the role needed.
    pub fn require(&self, needed: Role) -> Result<(), ApiError> {
        if self.role >= needed {
            return Ok(());
        }
        Err(self.role.refusal(needed).into())
    }

    /// Whether to hand out stored text unredacted: only when the request asks (`raw=true`) and
    /// the caller is a reviewer or admin. Text is redacted for everyone else; the handler records
    /// each raw read in the audit log ([`lore_engine::Engine::record_disclosure`]) before answering.
    ///
    /// # Errors
    /// 403 when an agent asks for raw text.
    pub fn raw(&self, asked: bool) -> Result<bool, ApiError> {
        if asked {
            self.require(Role::Reviewer)?;
        }
        Ok(asked)
    }

    /// The caller's role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Runs `call` on the blocking pool: the Engine and its store are synchronous.
    ///
    /// # Errors
    /// The Engine's error, mapped once by [`ApiError`]; a panic in `call` becomes a logged 500.
    pub async fn run<T, F>(self, call: F) -> Result<T, ApiError>
    where
        F: FnOnce(&Engine) -> lore_core::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        Ok(self.into_principal().run(call).await?)
    }

    fn into_principal(self) -> Principal {
        Principal::from_parts(self.engine, self.role)
    }
}

/// A JSON request body. What does not parse is refused in the API's error shape with a
/// sentence naming the field at fault (see [`crate::input`]), never serde's or axum's wording.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(ApiError::not_json());
        }
        let bytes = Bytes::from_request(req, state).await?;
        Ok(Self(input::parse_object(&bytes, Place::Body)?))
    }
}

/// `application/json`, or a `+json` type such as `application/merge-patch+json`.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Query parameters, refused like [`Body`]: 422 naming the parameter and the value given.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        Ok(Self(input::parse_query(query)?))
    }
}

/// Path segments (`/v1/lessons/{id}`), refused like [`Body`].
#[derive(Debug)]
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(value) =
            axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// A router that remembers what it serves.
pub struct Routes {
    router: Router<AppState>,
    table: Vec<(Method, &'static str)>,
}

impl Routes {
    fn new() -> Self {
        Self {
            router: Router::new(),
            table: Vec::new(),
        }
    }

    fn on<H, T>(mut self, method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a standard HTTP method");
        self.router = self.router.route(path, on(filter, handler));
        self.table.push((method, path));
        self
    }

    /// Every `(method, path)` served, in registration order.
    pub fn table(&self) -> &[(Method, &'static str)] {
        &self.table
    }

    /// The axum router over `engine`, counting into `metrics`; `shutdown` ends event streams.
    pub fn into_router(
        self,
        engine: Arc<Engine>,
        access: Access,
        metrics: Arc<Metrics>,
        shutdown: CancellationToken,
    ) -> Router {
        self.router
            .fallback(|uri: Uri| async move { ApiError::no_route(uri.path()) })
            .method_not_allowed_fallback(|method: Method, uri: Uri| async move {
                ApiError::method_not_allowed(&method, uri.path())
            })
            .with_state(AppState {
                engine,
                access,
                metrics,
                shutdown,
            })
    }
}

/// The `/v1` routes: the catalogue's, then the ones still written here.
pub fn routes() -> Routes {
    use Method as M;
    struct Mount(Option<Routes>);
    impl Each for Mount {
        fn one<O: Operation>(&mut self) {
            self.0 = self.0.take().map(mount::<O>);
        }
    }
    let mut catalogued = Mount(Some(Routes::new()));
    crate::catalogue::for_each(&mut catalogued);
    catalogued
        .0
        .unwrap_or_else(Routes::new)
        .on(M::GET, "/v1/openapi.json", openapi::document)
        .on(M::GET, "/v1/whoami", insights::whoami)
        .on(M::GET, "/v1/stats", insights::stats)
        .on(M::GET, "/v1/reports/{name}", insights::report)
        .on(M::GET, "/v1/skills/{domain}/{skill}/prompt", memory::prompt)
        .on(M::POST, "/v1/executions", executions::record)
        .on(M::GET, "/v1/executions", executions::list)
        .on(M::GET, "/v1/executions/{id}", executions::get)
        .on(M::POST, "/v1/executions/{id}/signals", executions::signal)
        .on(M::GET, "/v1/executions/{id}/signals", executions::signals)
        .on(M::POST, "/v1/corrections", executions::correct)
        .on(
            M::GET,
            "/v1/lessons/{id}/activations",
            insights::activations,
        )
        .on(M::POST, "/v1/recall", recall::recall)
        .on(M::GET, "/v1/events", events::events)
        .on(M::GET, "/metrics", metrics::metrics)
}

/// Mounts `O`'s REST door: its input from the query string of a `GET`, else from the body,
/// with the path's segments (`{id}`) as fields of the same input.
pub(crate) fn mount<O: Operation>(routes: Routes) -> Routes {
    let Some(rest) = O::REST else {
        return routes;
    };
    match (rest.verb, rest.path.contains('{')) {
        (Verb::Get, false) => routes.on(rest.verb.method(), rest.path, from_query::<O>),
        (Verb::Get, true) => routes.on(rest.verb.method(), rest.path, from_path_and_query::<O>),
        (_, false) => routes.on(rest.verb.method(), rest.path, from_body::<O>),
        (_, true) => routes.on(rest.verb.method(), rest.path, from_path_and_body::<O>),
    }
}

type Segments = std::collections::BTreeMap<String, String>;

/// The path's segments as query parameters after the query's own, so that a segment is read,
/// and refused, in the same words as any other parameter.
async fn from_path_and_query<O: Operation>(
    caller: Caller,
    Path(segments): Path<Segments>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let input = with_segments(uri.query().unwrap_or_default(), &segments)?;
    answer::<O>(caller, input).await
}

fn with_segments<T: DeserializeOwned>(query: &str, segments: &Segments) -> Result<T, ApiError> {
    let mut all = form_urlencoded::Serializer::new(query.to_owned());
    for (name, value) in segments {
        if form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == name.as_str()) {
            let why = format!("`{name}` is given in the path; leave it out of the query");
            return Err(lore_core::Error::invalid(name.clone(), why).into());
        }
        all.append_pair(name, value);
    }
    Ok(input::parse_query(&all.finish())?)
}

/// The body's fields with the path's segments: a body is optional here, since an act on one
/// record named in the path (`/runs/{id}/resume`) may need nothing more.
async fn from_path_and_body<O: Operation>(
    caller: Caller,
    Path(segments): Path<Segments>,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let input = body_input::<O>(segments, true, uri.query(), &headers, &bytes)?;
    answer::<O>(caller, input).await
}

async fn from_query<O: Operation>(
    caller: Caller,
    Params(input): Params<O::Input>,
) -> Result<Response, ApiError> {
    answer::<O>(caller, input).await
}

async fn from_body<O: Operation>(
    caller: Caller,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Response, ApiError> {
    let input = body_input::<O>(Segments::new(), false, uri.query(), &headers, &bytes)?;
    answer::<O>(caller, input).await
}

/// The input of a call with a body: the body's fields (or the body itself as the field
/// [`Operation::BODY`] names), the path's segments, and the query parameters
/// [`Operation::QUERY`] names; a field given twice is refused rather than one copy chosen.
fn body_input<O: Operation>(
    segments: Segments,
    optional: bool,
    query: Option<&str>,
    headers: &HeaderMap,
    bytes: &Bytes,
) -> Result<O::Input, ApiError> {
    let mut fields = match O::BODY {
        Some(field) if O::TEXT_BODY => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| lore_core::Error::invalid("body", "is not UTF-8"))?;
            Map::from_iter([(field.to_owned(), Value::String(text.to_owned()))])
        }
        _ if optional && bytes.iter().all(u8::is_ascii_whitespace) => Map::new(),
        _ if !is_json(headers) => return Err(ApiError::not_json()),
        Some(field) => {
            let record = input::parse_object(bytes, Place::Body)?;
            Map::from_iter([(field.to_owned(), Value::Object(record))])
        }
        None => input::parse_object(bytes, Place::Body)?,
    };
    let mut add = |name: String, value: Value, place: &str| {
        if fields.contains_key(&name) {
            let why = format!("`{name}` is given in the {place}; leave it out of the body");
            return Err(lore_core::Error::invalid(name, why));
        }
        fields.insert(name, value);
        Ok(())
    };
    for (name, value) in segments {
        add(name, Value::String(value), "path")?;
    }
    let pairs = form_urlencoded::parse(query.unwrap_or_default().as_bytes());
    if !O::QUERY.is_empty() {
        let schema = crate::catalogue::schema::input::<O::Input>();
        for (name, value) in pairs {
            if !O::QUERY.contains(&name.as_ref()) {
                let why = format!(
                    "is not a query parameter here; the query string takes {}",
                    O::QUERY.join(", ")
                );
                return Err(lore_core::Error::invalid(name, why).into());
            }
            let value = typed(&value, &schema["properties"][name.as_ref()]);
            add(name.into_owned(), value, "query string")?;
        }
    }
    Ok(input::from_value(Value::Object(fields), Place::Body)?)
}

/// A query parameter's text as the JSON value its field's schema takes (`replace=true` a
/// boolean), or as text when it is not one, for the field's own refusal to name.
fn typed(text: &str, schema: &Value) -> Value {
    let takes = |kind: &str| match &schema["type"] {
        Value::String(t) => t == kind,
        Value::Array(types) => types.iter().any(|t| t == kind),
        _ => false,
    };
    let parsed = if takes("boolean") {
        text.parse::<bool>().ok().map(Value::Bool)
    } else if takes("integer") {
        text.parse::<u64>().ok().map(Value::from)
    } else if takes("number") {
        text.parse::<f64>().ok().map(Value::from)
    } else {
        None
    };
    parsed.unwrap_or_else(|| Value::String(text.to_owned()))
}

async fn answer<O: Operation>(caller: Caller, input: O::Input) -> Result<Response, ApiError> {
    let output = caller.into_principal().invoke::<O>(input).await?;
    let status = O::status(&output)
        .or(O::REST.map(|r| r.status))
        .unwrap_or(StatusCode::OK);
    if let Some((media, text)) = O::document(&output) {
        let text = text.to_owned();
        return Ok((status, [(CONTENT_TYPE, media)], text).into_response());
    }
    Ok((status, Json(output)).into_response())
}

/// The page a listing asks for; 50 records from the start unless it says otherwise.
fn page(limit: Option<usize>, offset: Option<usize>) -> lore_engine::PageRequest {
    lore_engine::PageRequest {
        limit: limit.unwrap_or(50),
        offset: offset.unwrap_or(0),
    }
}
