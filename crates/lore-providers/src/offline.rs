//! The offline provider: Lore with no model.
//!
//! Lessons still get made, by the core's deterministic distiller (the Engine uses it whenever no
//! proposer is configured), and every command that does not need a model works. Running a skill
//! does need one, so [`Offline`] answers every request with [`LlmError::NotConfigured`] naming the
//! variables that configure one, instead of inventing an output.

use lore_core::ports::llm::{Llm, LlmError, LlmRequest, LlmResponse};

/// No model.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offline;

/// What to set, for the error message.
pub(crate) const HOW_TO_CONFIGURE: &str = "set OPENAI_API_KEY, ANTHROPIC_API_KEY or \
    OPENROUTER_API_KEY, or LORE_LLM_PROVIDER with LORE_LLM_BASE_URL, LORE_LLM_MODEL and \
    LORE_LLM_API_KEY (a local OpenAI-compatible server needs only the base URL)";

impl Llm for Offline {
    fn provider(&self) -> &str {
        "offline"
    }

    fn model(&self) -> &str {
        "offline"
    }

    fn complete(&self, _request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        Err(LlmError::NotConfigured(HOW_TO_CONFIGURE.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_refuses_with_the_variables_to_set() {
        let err = Offline.complete(&LlmRequest::new("s", "u")).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("no model is configured"), "{text}");
        assert!(text.contains("LORE_LLM_BASE_URL"), "{text}");
    }
}
