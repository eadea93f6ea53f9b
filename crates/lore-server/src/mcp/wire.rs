//! Malformed MCP traffic answered in JSON-RPC, on both transports.
//!
//! rmcp answers a body that is not JSON, or not JSON-RPC, with a bare HTTP status and a line of
//! text over HTTP, and with silence over stdio. A client (or a model reading its log) then has
//! nothing to act on. Here, in front of rmcp, such a message gets a JSON-RPC error object:
//! `-32700` (parse error) for text that is not JSON, `-32600` (invalid request) for JSON that is
//! not a JSON-RPC message, with `id` `null` unless the message carried a usable one. Over HTTP
//! every other client error rmcp answers in text (406, 405, 404 for an unknown session) is
//! wrapped the same way, keeping its status. Over stdio the server keeps serving.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// JSON-RPC's code for text that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error object for the message `id` (`null` when unknown).
pub fn error_object(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Why `line` is not a JSON-RPC message rmcp can take, as the error object to answer with, or
/// `None` when it is one.
pub fn check_message(line: &[u8]) -> Option<Value> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(err) => {
            let why = format!("Parse error: the message is not JSON ({err})");
            return Some(error_object(Value::Null, PARSE_ERROR, &why));
        }
    };
    let id = usable_id(&value);
    let why = match &value {
        Value::Array(_) => "Invalid Request: batches are not supported; send one message at a time",
        Value::Object(o) if o.get("jsonrpc") != Some(&json!("2.0")) => {
            "Invalid Request: a JSON-RPC 2.0 message needs \"jsonrpc\": \"2.0\""
        }
        Value::Object(o) if o.get("method").is_some_and(|m| !m.is_string()) => {
            "Invalid Request: \"method\" must be a string"
        }
        Value::Object(o) if o.contains_key("id") && id.is_null() => {
            "Invalid Request: \"id\" must be a string or an integer"
        }
        Value::Object(o)
            if !o.contains_key("method")
                && !o.contains_key("result")
                && !o.contains_key("error") =>
        {
            "Invalid Request: a message needs \"method\" (a request or notification), or \
             \"result\" or \"error\" (a response)"
        }
        Value::Object(_) => {
            return serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value)
                .err()
                .map(|err| {
                    let why = format!("Invalid Request: {err}");
                    error_object(id, INVALID_REQUEST, &why)
                });
        }
        _ => "Invalid Request: a JSON-RPC message is a JSON object",
    };
    Some(error_object(id, INVALID_REQUEST, why))
}

/// The message's `id` when it is one JSON-RPC allows (a string or an integer), else `null`.
fn usable_id(value: &Value) -> Value {
    match value.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(id @ Value::Number(n)) if n.is_i64() || n.is_u64() => id.clone(),
        _ => Value::Null,
    }
}

/// Middleware in front of rmcp's HTTP service: checks a POST's content type and body, and
/// rewrites rmcp's plain-text client errors as JSON-RPC errors. `limit` is the largest body read.
///
/// A POST found malformed still goes to rmcp, with an empty body (which rmcp refuses without
/// touching a session), so that rmcp's earlier checks keep their precedence: a `Host` it does not
/// serve is a 403 whatever the body holds. Only when rmcp refuses the body itself (its 415) is the
/// answer this module's more precise JSON-RPC error.
pub async fn jsonrpc_errors(State(limit): State<usize>, request: Request, next: Next) -> Response {
    if request.method() == Method::DELETE {
        return session_ended(next.run(request).await);
    }
    if request.method() != Method::POST {
        return as_jsonrpc(next.run(request).await).await;
    }
    let (parts, body) = request.into_parts();
    let refusal = match check_post(&parts.headers, body, limit).await {
        Ok(bytes) => {
            let request = Request::from_parts(parts, Body::from(bytes));
            return as_jsonrpc(next.run(request).await).await;
        }
        Err(refusal) => refusal,
    };
    let probe = next.run(Request::from_parts(parts, Body::empty())).await;
    if probe.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        refusal
    } else {
        as_jsonrpc(probe).await
    }
}

/// A session's end as clients expect it: rmcp answers a DELETE that closed the session with
/// 202, which the official SDKs log as a failure; nothing is pending, so it is a 204.
fn session_ended(response: Response) -> Response {
    if response.status() != StatusCode::ACCEPTED {
        return response;
    }
    let mut ended = Response::new(Body::empty());
    *ended.status_mut() = StatusCode::NO_CONTENT;
    ended
}

/// The POST's body, read whole, or the JSON-RPC error that answers it.
async fn check_post(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<axum::body::Bytes, Response> {
    if !is_json(headers) {
        let why = "Invalid Request: send the JSON-RPC message with Content-Type: application/json";
        return Err(answer(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            error_object(Value::Null, INVALID_REQUEST, why),
        ));
    }
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        let why = format!("Invalid Request: the body could not be read whole in {limit} bytes");
        return Err(answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            error_object(Value::Null, INVALID_REQUEST, &why),
        ));
    };
    match check_message(&bytes) {
        Some(error) => Err(answer(StatusCode::BAD_REQUEST, error)),
        None => Ok(bytes),
    }
}

/// Whether the headers declare a JSON body (`application/json`, parameters allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// A client error answered in text becomes the same status with a JSON-RPC error body.
async fn as_jsonrpc(response: Response) -> Response {
    let status = response.status();
    if !status.is_client_error() || is_json(response.headers()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let text = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_owned()
    } else {
        text
    };
    let body = error_object(Value::Null, INVALID_REQUEST, &text).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}

/// `error` as a JSON response with `status`.
fn answer(status: StatusCode, error: Value) -> Response {
    (status, axum::Json(error)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_checked_before_rmcp_sees_them() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert_eq!(check_message(ok), None);
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(check_message(note), None);
        let cases: [(&[u8], i64, Value); 7] = [
            (b"hello", PARSE_ERROR, Value::Null),
            (b"{\"jsonrpc\":", PARSE_ERROR, Value::Null),
            (b"42", INVALID_REQUEST, Value::Null),
            (b"[]", INVALID_REQUEST, Value::Null),
            (br#"{"id":7,"method":"x"}"#, INVALID_REQUEST, json!(7)),
            (
                br#"{"jsonrpc":"2.0","id":"a"}"#,
                INVALID_REQUEST,
                json!("a"),
            ),
            (
                br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
        ];
        for (line, code, id) in cases {
            let error = check_message(line).unwrap();
            let shown = String::from_utf8_lossy(line);
            assert_eq!(error["error"]["code"], code, "{shown}: {error}");
            assert_eq!(error["id"], id, "{shown}: {error}");
            assert_eq!(error["jsonrpc"], "2.0");
        }
    }
}
