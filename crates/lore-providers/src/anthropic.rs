//! Anthropic Messages: `POST {base}/v1/messages`.
//!
//! The protocol differs from chat completions where it matters: the system prompt is a top-level
//! field, `max_tokens` is required, the answer is a list of content blocks (the text blocks are
//! joined), and the key goes in `x-api-key` with a pinned `anthropic-version`.

use lore_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, Usage};
use serde_json::{Value, json};

use crate::config::LlmConfig;
use crate::http::{Http, short, temperature};

/// The protocol version this client speaks.
const VERSION: &str = "2023-06-01";
/// Messages requires a bound on the answer; skills and lessons fit well inside it.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A Messages client.
#[derive(Debug)]
pub struct AnthropicClient {
    http: Http,
    url: String,
    model: String,
    key: String,
}

impl AnthropicClient {
    /// A client for `config` (its kind is not checked).
    pub fn new(config: &LlmConfig) -> Self {
        Self {
            http: Http::new(config),
            url: format!("{}/v1/messages", config.base_url),
            model: config.model.clone(),
            key: config
                .api_key
                .as_ref()
                .map(|k| k.expose().to_owned())
                .unwrap_or_default(),
        }
    }

    fn body(&self, request: &LlmRequest) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect();
        let mut body = json!({
            "model": request.model.as_deref().unwrap_or(&self.model),
            "system": request.system,
            "messages": messages,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        });
        if let Some(t) = request.temperature {
            body["temperature"] = temperature(t);
        }
        body
    }
}

impl Llm for AnthropicClient {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let headers = [
            ("x-api-key", self.key.as_str()),
            ("anthropic-version", VERSION),
        ];
        let answer = self
            .http
            .post_json(&self.url, &headers, &self.body(request))?;
        parse(&answer, request.model.as_deref().unwrap_or(&self.model))
    }
}

/// Reads a Messages answer; the text blocks are joined in order.
fn parse(answer: &Value, requested: &str) -> Result<LlmResponse, LlmError> {
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            LlmError::Protocol(format!("no content list in {}", short(&answer.to_string())))
        })?;
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let tokens = |field: &str| {
        answer
            .pointer(&format!("/usage/{field}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(LlmResponse {
        text,
        json: None,
        usage: Usage {
            input_tokens: tokens("input_tokens"),
            output_tokens: tokens("output_tokens"),
        },
        model: answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(requested)
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_are_joined_and_a_missing_list_is_a_protocol_error() {
        let answer = json!({"content": [
            {"type": "text", "text": "a"}, {"type": "tool_use"}, {"type": "text", "text": "b"}
        ], "usage": {"input_tokens": 3, "output_tokens": 4}});
        let ok = parse(&answer, "claude").unwrap();
        assert_eq!((ok.text.as_str(), ok.usage.output_tokens), ("ab", 4));
        assert!(matches!(parse(&json!({}), "c"), Err(LlmError::Protocol(_))));
    }
}
