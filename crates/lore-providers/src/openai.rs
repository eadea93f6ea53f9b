//! OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama, vLLM, LM Studio.
//!
//! Only `POST {base}/chat/completions` is used, with the fields every compatible server accepts.
//! When the request has an object schema, `response_format: json_object` asks for JSON; the
//! schema itself travels in the system prompt (put there by `complete_json`), because strict
//! `json_schema` mode is not implemented by every compatible server and the core validates the
//! answer either way.

use lore_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse, Usage};
use serde_json::{Value, json};

use crate::config::LlmConfig;
use crate::http::{Http, bearer, short, temperature};

/// A chat-completions client.
#[derive(Debug)]
pub struct OpenAiClient {
    http: Http,
    url: String,
    model: String,
    auth: Option<String>,
}

impl OpenAiClient {
    /// A client for `config` (its kind is not checked).
    pub fn new(config: &LlmConfig) -> Self {
        Self {
            http: Http::new(config),
            url: format!("{}/chat/completions", config.base_url),
            model: config.model.clone(),
            auth: config
                .api_key
                .as_ref()
                .map(|k| format!("Bearer {}", k.expose())),
        }
    }

    fn body(&self, request: &LlmRequest) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        messages.extend(
            request
                .messages
                .iter()
                .map(|m| json!({"role": m.role.as_str(), "content": m.content})),
        );
        let model = request.model.as_deref().unwrap_or(&self.model);
        let mut body = json!({"model": model, "messages": messages});
        if let Some(max) = request.max_tokens {
            body["max_tokens"] = json!(max);
        }
        if let Some(t) = request.temperature {
            body["temperature"] = temperature(t);
        }
        if request.schema.as_ref().and_then(|s| s.get("type")) == Some(&json!("object")) {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }
}

impl Llm for OpenAiClient {
    fn provider(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let headers = bearer(self.auth.as_deref());
        let answer = self
            .http
            .post_json(&self.url, &headers, &self.body(request))?;
        parse(&answer, request.model.as_deref().unwrap_or(&self.model))
    }
}

/// Reads a chat-completions answer.
fn parse(answer: &Value, requested: &str) -> Result<LlmResponse, LlmError> {
    let text = answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            LlmError::Protocol(format!(
                "no choices[0].message.content in {}",
                short(&answer.to_string())
            ))
        })?;
    let tokens = |field: &str| {
        answer
            .pointer(&format!("/usage/{field}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(LlmResponse {
        text: text.to_owned(),
        json: None,
        usage: Usage {
            input_tokens: tokens("prompt_tokens"),
            output_tokens: tokens("completion_tokens"),
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
    fn answers_without_content_are_protocol_errors() {
        let err = parse(&json!({"choices": []}), "m").unwrap_err();
        assert!(matches!(err, LlmError::Protocol(_)), "{err}");
        let ok = parse(&json!({"choices": [{"message": {"content": "hi"}}]}), "m").unwrap();
        assert_eq!(
            (ok.text.as_str(), ok.model.as_str(), ok.usage),
            ("hi", "m", Usage::default())
        );
    }
}
