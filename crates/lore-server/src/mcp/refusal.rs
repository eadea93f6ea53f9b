//! How a tool refuses: the REST API's code and message, plus what the model should do next.
//!
//! A tool error is a normal result marked `isError`, because a JSON-RPC error is something a
//! model rarely reads. Its text is the REST message followed by advice for the model; its
//! structured content is the REST error body itself, `{"error": {"code", "message"}}`, so a
//! program that calls both doors branches on one set of codes. The code and message come from
//! [`ApiError`]'s mapping, so the two doors cannot drift apart.
//!
//! [`Parameters`] replaces rmcp's extractor of the same name (the tool macros find the input
//! schema by that name) so that arguments that do not fit are refused the same way, in the
//! sentence a REST body would get, instead of serde's wording.

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::catalogue::Failure;
use crate::error::ApiError;
use crate::input::{self, Place};

/// Marks an argument error on its way from [`Parameters`] to `call_tool`, which turns it into
/// a tool error: rmcp hands extractor failures back as protocol errors.
pub(super) const ARGUMENTS: &str = "lore:arguments";

const INTERNAL_ADVICE: &str = "Retrying will not help; carry on without memory and tell the user.";

/// A tool's refusal.
#[derive(Debug)]
pub struct ToolError {
    code: &'static str,
    message: String,
    advice: String,
}

impl ToolError {
    fn new(code: &'static str, message: impl Into<String>, advice: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            advice: advice.into(),
        }
    }

    /// `err` (a role's or scope's refusal), with `advice` for the model.
    pub fn forbidden(err: lore_core::Error, advice: impl Into<String>) -> Self {
        Self {
            advice: advice.into(),
            ..Self::from(err)
        }
    }

    /// Arguments that do not fit the tool's parameters.
    pub fn arguments(message: impl Into<String>) -> Self {
        Self::new(
            "invalid",
            message,
            "Fix that argument and call the tool again.",
        )
    }

    /// The stable code, as over REST.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message, as over REST.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What the model reads: the message and what to do about it.
    pub fn text(&self) -> String {
        format!("{}. {}", self.message, self.advice)
    }

    /// The tool result carrying this refusal.
    pub fn into_result(self) -> CallToolResult {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        let mut result = CallToolResult::structured_error(body);
        result.content = vec![ContentBlock::text(self.text())];
        result
    }
}

impl From<lore_core::Error> for ToolError {
    fn from(err: lore_core::Error) -> Self {
        use lore_core::Error as E;
        let advice = match &err {
            // A skill without SKILL.md still has learned rules; only its instructions are missing.
            E::NotFound { kind: "skill", .. } => {
                "Without a SKILL.md there is no prompt to assemble, but the skill's learned \
                 rules are there: call recall_memory with this skill instead. Instructions for \
                 the skill are a file a person adds on the server (skills/DOMAIN/SKILL/SKILL.md)."
            }
            E::NotFound { .. } => {
                "Check the ID: record_execution, list_lessons and search_memory return valid ones."
            }
            E::Invalid { .. } => "Fix that argument and call the tool again.",
            E::Forbidden(_) => {
                "This connection may not do that; do not retry, or use a skill inside your scope."
            }
            E::Conflict(_) => "It changed meanwhile; read it again, then retry.",
            E::Unsupported(_) => "This Lore server cannot do that; do not retry.",
            E::StorageFull(_) => {
                "Nothing was saved. Carry on without writing to memory, tell the user, and retry \
                 the write later."
            }
            _ => INTERNAL_ADVICE,
        };
        let api = ApiError::from(err);
        Self::new(api.code(), api.message(), advice)
    }
}

impl From<ApiError> for ToolError {
    fn from(api: ApiError) -> Self {
        Self::new(api.code(), api.message(), INTERNAL_ADVICE)
    }
}

impl From<Failure> for ToolError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Input(refused) => Self::arguments(refused.message().to_owned()),
            Failure::Engine(err) => Self::from(err),
            Failure::Internal(api) => Self::from(api),
        }
    }
}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        Ok(self.into_result().into())
    }
}

/// A tool's arguments, refused in a sentence naming the argument at fault.
#[derive(Debug)]
pub struct Parameters<P>(pub P);

impl<P: JsonSchema> JsonSchema for Parameters<P> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        P::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        P::json_schema(generator)
    }
}

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Parameters<P> {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        input::from_value(serde_json::Value::Object(arguments), Place::Arguments)
            .map(Parameters)
            .map_err(|refused| {
                rmcp::ErrorData::invalid_params(
                    refused.message().to_owned(),
                    Some(json!(ARGUMENTS)),
                )
            })
    }
}

/// Turns [`Parameters`]' refusal back into a tool error; other protocol errors pass.
pub(super) fn arguments_as_tool_error(
    answer: Result<CallToolResponse, rmcp::ErrorData>,
) -> Result<CallToolResponse, rmcp::ErrorData> {
    match answer {
        Err(e) if e.data.as_ref().is_some_and(|d| d == ARGUMENTS) => {
            Ok(ToolError::arguments(e.message.into_owned())
                .into_result()
                .into())
        }
        other => other,
    }
}
