//! The Llm port: what Lore needs from a language model, and nothing about how it is reached.
//!
//! Like [`crate::Store`], the trait is synchronous: the CLI makes one call at a time, and an
//! async server calls the Engine from a blocking task. Clients live in `lore-providers`
//! (OpenAI-compatible chat completions, Anthropic Messages, offline); the core only sees
//! [`LlmRequest`] in and [`LlmResponse`] out.
//!
//! Structured output is checked here, not in each client, because the check is the same for every
//! provider and it is where memories get lost: a model that answers with prose, or with JSON of the
//! wrong shape, must produce an error the caller records, never a lesson silently dropped behind a
//! 200 (DESIGN.md). [`complete_json`] parses the answer, validates it against the request's
//! schema, asks the model once to repair it, and returns [`LlmError::InvalidOutput`] when the
//! repaired answer still fails.

pub mod price;
pub mod schema;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use price::{Price, PriceTable};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The caller.
    User,
    /// The model, in an earlier turn.
    Assistant,
}

impl Role {
    /// The wire name both chat protocols use.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation sent to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message (an earlier answer, quoted back for a repair).
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// One call to a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LlmRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation, oldest first; never empty when sent.
    pub messages: Vec<Message>,
    /// A JSON Schema the answer must match; `None` for free text.
    pub schema: Option<Value>,
    /// An upper bound on the answer's length, in tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// A model to answer instead of the client's configured one (a task with a model of its
    /// own, such as the lesson proposer); `None` for the configured model.
    pub model: Option<String>,
}

impl LlmRequest {
    /// A request with a system prompt and one user message.
    pub fn new(system: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            messages: vec![Message::user(user)],
            ..Self::default()
        }
    }

    /// Asks for JSON matching `schema`.
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }
}

/// Tokens a call consumed, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LlmResponse {
    /// The answer's text.
    pub text: String,
    /// The answer parsed as JSON, when the request had a schema and the answer matched it.
    pub json: Option<Value>,
    /// Tokens consumed (summed over a repair, when there was one).
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
}

/// Why a model call failed, by what the caller does about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// No model is configured (the offline provider cannot run a skill).
    #[error("no model is configured: {0}")]
    NotConfigured(String),
    /// The provider did not answer in time, after every retry.
    #[error("the model provider timed out after {0:?}")]
    Timeout(Duration),
    /// The provider kept refusing with 429 after every retry.
    #[error("rate limited by the model provider after {attempts} attempts")]
    RateLimited {
        /// How many requests were sent.
        attempts: u32,
    },
    /// The provider answered with an error status (after retries, for 5xx).
    #[error("the model provider answered HTTP {status}: {message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The provider's error message, shortened; never contains the request's key.
        message: String,
    },
    /// The provider could not be reached.
    #[error("cannot reach the model provider: {0}")]
    Transport(String),
    /// The provider answered, but not in its own protocol (a missing field, a non-JSON body).
    #[error("the model provider's response is malformed: {0}")]
    Protocol(String),
    /// The model's answer does not match the requested schema, even after one repair.
    #[error("the model's answer does not match the schema: {why}")]
    InvalidOutput {
        /// What is wrong with it.
        why: String,
        /// The last answer, kept so the caller can record it.
        text: String,
        /// Tokens consumed by the failed attempts.
        usage: Usage,
        /// The model that answered.
        model: String,
    },
}

/// A language model.
///
/// Implementations send [`LlmRequest::schema`] to the provider when its protocol has a JSON mode,
/// but callers wanting checked JSON go through [`complete_json`], which validates whatever comes
/// back.
pub trait Llm: Send + Sync + fmt::Debug {
    /// The provider's name (`openai`, `anthropic`, `offline`), for messages and records.
    fn provider(&self) -> &str;

    /// The configured model.
    fn model(&self) -> &str;

    /// Sends one request; [`LlmResponse::json`] is left `None`.
    ///
    /// # Errors
    /// Any [`LlmError`] but [`LlmError::InvalidOutput`].
    fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError>;
}

/// Sends `request` and, when it has a schema, parses and validates the answer, with one repair.
///
/// The repair quotes the bad answer back to the model with what is wrong with it; the usage of
/// both calls is summed so cost stays honest.
///
/// # Errors
/// Whatever [`Llm::complete`] returns, and [`LlmError::InvalidOutput`] when the repaired answer
/// still fails.
pub fn complete_json(llm: &dyn Llm, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
    let Some(schema) = &request.schema else {
        return llm.complete(request);
    };
    let mut request = request.clone();
    request.system = with_schema_instruction(&request.system, schema);
    let mut first = llm.complete(&request)?;
    let why = match check_answer(&first.text, schema) {
        Ok(value) => return Ok(with_json(first, value)),
        Err(why) => why,
    };
    tracing::warn!(%why, "the model's answer failed its schema; asking once for a repair");
    request
        .messages
        .push(Message::assistant(first.text.clone()));
    request
        .messages
        .push(Message::user(repair_instruction(&why)));
    let second = llm.complete(&request)?;
    first.usage += second.usage;
    match check_answer(&second.text, schema) {
        Ok(value) => Ok(with_json(
            LlmResponse {
                usage: first.usage,
                ..second
            },
            value,
        )),
        Err(why) => Err(LlmError::InvalidOutput {
            why,
            text: second.text,
            usage: first.usage,
            model: second.model,
        }),
    }
}

fn with_json(mut response: LlmResponse, value: Value) -> LlmResponse {
    response.json = Some(value);
    response
}

fn with_schema_instruction(system: &str, schema: &Value) -> String {
    format!(
        "{}\n\n---\n\nAnswer with one JSON value and nothing else (no prose, no code fence). It \
         must match this JSON Schema:\n{}\n",
        system.trim_end(),
        serde_json::to_string(schema).unwrap_or_default()
    )
}

fn repair_instruction(why: &str) -> String {
    format!(
        "Your answer cannot be used: {why}. Answer again with only the corrected JSON value, \
         matching the schema."
    )
}

/// Parses a model's answer as JSON and checks it against `schema`.
///
/// Models often wrap JSON in a markdown code fence or a sentence; the outermost fenced block, or
/// else the span from the first `{`/`[` to the last `}`/`]`, is tried when the whole text is not
/// JSON.
///
/// # Errors
/// A sentence saying why the answer is unusable.
pub fn check_answer(text: &str, schema: &Value) -> Result<Value, String> {
    let value = parse_json_answer(text)
        .ok_or_else(|| format!("it is not JSON (it starts {:?})", preview(text)))?;
    schema::validate(schema, &value).map_err(|errors| errors.join("; "))?;
    Ok(value)
}

fn parse_json_answer(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v) = serde_json::from_str(trimmed) {
        return Some(v);
    }
    if let Some(inner) = fenced(trimmed)
        && let Ok(v) = serde_json::from_str(inner)
    {
        return Some(v);
    }
    let start = trimmed.find(['{', '['])?;
    let end = trimmed.rfind(['}', ']'])?;
    (end > start)
        .then(|| serde_json::from_str(&trimmed[start..=end]).ok())
        .flatten()
}

fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let after = &text[start + 3..];
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.rfind("```")?;
    Some(body[..end].trim())
}

fn preview(text: &str) -> String {
    text.trim().chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// Answers from a script, one per call, and remembers what it was asked.
    #[derive(Debug)]
    struct Scripted {
        answers: Mutex<Vec<&'static str>>,
        seen: Mutex<Vec<LlmRequest>>,
    }

    impl Scripted {
        fn new(answers: &[&'static str]) -> Self {
            Self {
                answers: Mutex::new(answers.iter().rev().copied().collect()),
                seen: Mutex::new(Vec::new()),
            }
        }
    }

    impl Llm for Scripted {
        fn provider(&self) -> &str {
            "scripted"
        }
        fn model(&self) -> &str {
            "m"
        }
        fn complete(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
            self.seen.lock().unwrap().push(request.clone());
            let text = self.answers.lock().unwrap().pop().expect("no answer left");
            Ok(LlmResponse {
                text: text.to_owned(),
                json: None,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 5,
                },
                model: "m".into(),
            })
        }
    }

    fn schema() -> Value {
        json!({"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}})
    }

    #[test]
    fn a_valid_answer_is_parsed_in_one_call() {
        let llm = Scripted::new(&["```json\n{\"score\": 42}\n```"]);
        let req = LlmRequest::new("sys", "go").with_schema(schema());
        let out = complete_json(&llm, &req).unwrap();
        assert_eq!(out.json, Some(json!({"score": 42})));
        let seen = llm.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].system.contains("\"required\":[\"score\"]"));
    }

    #[test]
    fn a_bad_answer_is_repaired_once_with_the_reason_and_usage_summed() {
        let llm = Scripted::new(&["I think 42.", "{\"score\": 42}"]);
        let req = LlmRequest::new("sys", "go").with_schema(schema());
        let out = complete_json(&llm, &req).unwrap();
        assert_eq!(out.json, Some(json!({"score": 42})));
        assert_eq!(out.usage.input_tokens, 20);
        let seen = llm.seen.lock().unwrap();
        let repair = &seen[1].messages;
        assert_eq!(repair[1], Message::assistant("I think 42."));
        assert!(repair[2].content.contains("not JSON"), "{repair:?}");
    }

    #[test]
    fn an_answer_that_fails_twice_is_an_error_carrying_the_text() {
        let llm = Scripted::new(&["{\"score\": \"high\"}", "{\"grade\": 1}"]);
        let req = LlmRequest::new("sys", "go").with_schema(schema());
        match complete_json(&llm, &req).unwrap_err() {
            LlmError::InvalidOutput {
                why, text, usage, ..
            } => {
                assert!(why.contains("score"), "{why}");
                assert_eq!(text, "{\"grade\": 1}");
                assert_eq!(usage.output_tokens, 10);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn without_a_schema_the_text_passes_through() {
        let llm = Scripted::new(&["plain words"]);
        let out = complete_json(&llm, &LlmRequest::new("s", "u")).unwrap();
        assert_eq!((out.text.as_str(), out.json), ("plain words", None));
    }

    #[test]
    fn json_is_found_inside_prose() {
        let v = parse_json_answer("Sure! Here: {\"a\": [1]} hope it helps").unwrap();
        assert_eq!(v, json!({"a": [1]}));
        assert!(parse_json_answer("no json here").is_none());
    }
}
