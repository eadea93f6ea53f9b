//! One JSON POST with a timeout and retries: the transport both protocols share.
//!
//! 429 and 5xx are retried with exponential backoff, and a `Retry-After` of whole seconds is
//! honoured (capped, so a provider cannot park the CLI for an hour). Other 4xx are not retried:
//! a bad key or a bad request does not get better by asking again. A timeout is not retried
//! either, because the caller already waited the whole timeout once.

use std::thread;
use std::time::Duration;

use lore_core::ports::llm::LlmError;
use serde_json::Value;

use crate::config::{ApiKey, LlmConfig, RetryPolicy};

/// A temperature as the number it was written as: widening the `f32` itself would send 0.3 as
/// 0.30000001192092896, which a provider reads as a different setting from the one configured.
pub(crate) fn temperature(t: f32) -> Value {
    t.to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A status and body as received.
struct Reply {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

/// A blocking JSON client for one provider.
#[derive(Debug)]
pub(crate) struct Http {
    agent: ureq::Agent,
    timeout: Duration,
    retry: RetryPolicy,
    key: Option<ApiKey>,
}

impl Http {
    pub(crate) fn new(config: &LlmConfig) -> Self {
        Self::with(config.timeout, config.retry, config.api_key.clone())
    }

    pub(crate) fn with(timeout: Duration, retry: RetryPolicy, key: Option<ApiKey>) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .user_agent(concat!("lore/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Self {
            agent,
            timeout,
            retry,
            key,
        }
    }

    /// POSTs `body` to `url` with `headers` and returns the parsed JSON answer.
    ///
    /// # Errors
    /// [`LlmError::Timeout`], [`LlmError::Transport`], [`LlmError::RateLimited`] and
    /// [`LlmError::Http`] (after retries), [`LlmError::Protocol`] for a 2xx body that is not JSON.
    pub(crate) fn post_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<Value, LlmError> {
        let payload = body.to_string();
        let mut attempt = 1;
        loop {
            let reply = self.send(url, headers, &payload)?;
            let retryable = reply.status == 429 || reply.status >= 500;
            if retryable && attempt <= self.retry.max_retries {
                let wait = self.retry.delay(attempt, reply.retry_after);
                tracing::warn!(
                    status = reply.status,
                    ?wait,
                    attempt,
                    "provider busy; retrying"
                );
                thread::sleep(wait);
                attempt += 1;
                continue;
            }
            return self.finish(reply, attempt);
        }
    }

    fn send(&self, url: &str, headers: &[(&str, &str)], payload: &str) -> Result<Reply, LlmError> {
        let mut request = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut response = request.send(payload).map_err(|e| self.transport(e))?;
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|e| self.transport(e))?;
        Ok(Reply {
            status,
            retry_after,
            body,
        })
    }

    fn finish(&self, reply: Reply, attempts: u32) -> Result<Value, LlmError> {
        match reply.status {
            200..=299 => serde_json::from_str(&reply.body).map_err(|e| {
                LlmError::Protocol(format!(
                    "the body is not JSON ({e}): {}",
                    short(&reply.body)
                ))
            }),
            429 => Err(LlmError::RateLimited { attempts }),
            status => Err(LlmError::Http {
                status,
                message: self.redact(&error_message(&reply.body)),
            }),
        }
    }

    fn transport(&self, err: ureq::Error) -> LlmError {
        match err {
            ureq::Error::Timeout(_) => LlmError::Timeout(self.timeout),
            other => LlmError::Transport(self.redact(&other.to_string())),
        }
    }

    /// Removes the key from text that came back from the provider (some echo part of it).
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "<redacted>"),
            _ => text.to_owned(),
        }
    }
}

/// The `authorization` header, when there is one.
pub(crate) fn bearer(auth: Option<&str>) -> Vec<(&'static str, &str)> {
    auth.map(|a| ("authorization", a)).into_iter().collect()
}

/// The message in `{"error": {"message": …}}` (both protocols use it), else the body shortened.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
    });
    short(message.unwrap_or(body))
}

pub(crate) fn short(text: &str) -> String {
    const MAX: usize = 300;
    let text = text.trim();
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_honours_retry_after_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(policy.delay(1, None), Duration::from_millis(100));
        assert_eq!(policy.delay(3, None), Duration::from_millis(400));
        assert_eq!(policy.delay(9, None), Duration::from_secs(1));
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn error_messages_come_from_either_protocol_or_the_raw_body() {
        assert_eq!(
            error_message(r#"{"error": {"message": "bad model"}}"#),
            "bad model"
        );
        assert_eq!(error_message(r#"{"error": "plain"}"#), "plain");
        assert_eq!(error_message("gateway down"), "gateway down");
        assert!(error_message(&"x".repeat(1000)).ends_with('…'));
    }
}
