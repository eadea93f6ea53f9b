//! Which model to call, read once from the environment.
//!
//! With nothing set Lore is offline: no model, no key, no network, and every command but `run`
//! and the LLM judge works. Seed 000's keys select a provider on their own (OpenRouter first,
//! then Anthropic, then OpenAI, so a machine with several keys behaves predictably); the `LORE_LLM_*`
//! variables override any part of that choice, and a base URL alone means a local
//! OpenAI-compatible server (Ollama, vLLM, LM Studio), which needs no key.

use std::fmt;
use std::time::Duration;

use lore_core::{Error, Result};

/// How 429 and 5xx answers are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles for each later one.
    pub base_delay: Duration,
    /// No wait is longer than this, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1-based), given the provider's `Retry-After`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)));
        retry_after.unwrap_or(backoff).min(self.max_delay)
    }
}

/// The wire protocol to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// No model: skills cannot run; lessons come from the offline distiller.
    Offline,
}

impl ProviderKind {
    /// The name used in `LORE_LLM_PROVIDER` and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Offline => "offline",
        }
    }

    fn parse(raw: &str) -> Result<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(ProviderKind::OpenAi),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "offline" | "" => Ok(ProviderKind::Offline),
            other => Err(Error::invalid(
                "LORE_LLM_PROVIDER",
                format!("{other:?}; expected openai, anthropic or offline"),
            )),
        }
    }
}

/// An API key. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Everything a client needs; `Debug` hides the key.
#[derive(Clone)]
pub struct LlmConfig {
    /// The protocol.
    pub kind: ProviderKind,
    /// Where to send requests, without the endpoint path (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The model to ask for.
    pub model: String,
    /// The key, when the provider needs one.
    pub api_key: Option<ApiKey>,
    /// How long one request may take, connection to last byte.
    pub timeout: Duration,
    /// Retries on 429 and 5xx.
    pub retry: RetryPolicy,
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

const OPENAI_URL: &str = "https://api.openai.com/v1";
const OPENROUTER_URL: &str = "https://openrouter.ai/api/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

impl LlmConfig {
    /// No model.
    pub fn offline() -> Self {
        Self {
            kind: ProviderKind::Offline,
            base_url: String::new(),
            model: String::new(),
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }

    /// Reads the process environment; see [`LlmConfig::from_vars`].
    ///
    /// # Errors
    /// As [`LlmConfig::from_vars`].
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// Builds the configuration from variables looked up by `var`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an unknown provider, a base URL that is not http(s), a hosted
    /// provider without a key, or an unparsable `LORE_LLM_TIMEOUT_SECS`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let base_override = var("LORE_LLM_BASE_URL");
        let (kind, implied_key) = match var("LORE_LLM_PROVIDER") {
            Some(raw) => (ProviderKind::parse(&raw)?, None),
            None => implied_provider(&var, base_override.is_some()),
        };
        if kind == ProviderKind::Offline {
            return Ok(Self::offline());
        }
        let via_openrouter = implied_key == Some("OPENROUTER_API_KEY");
        let base_url = base_override
            .clone()
            .unwrap_or_else(|| default_url(kind, via_openrouter).to_owned());
        check_url(&base_url)?;
        let api_key = var("LORE_LLM_API_KEY")
            .or_else(|| implied_key.and_then(&var))
            .or_else(|| var(key_var(kind)))
            .map(ApiKey::new);
        if api_key.is_none() && base_override.is_none() {
            return Err(Error::invalid(
                "LORE_LLM_API_KEY",
                format!(
                    "{} needs a key: set {} or LORE_LLM_API_KEY",
                    kind.as_str(),
                    key_var(kind)
                ),
            ));
        }
        Ok(Self {
            kind,
            model: var("LORE_LLM_MODEL")
                .unwrap_or_else(|| default_model(kind, via_openrouter).to_owned()),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            timeout: timeout(&var)?,
            retry: RetryPolicy::default(),
        })
    }
}

/// The provider seed 000's keys select, and the variable that selected it.
fn implied_provider(
    var: &impl Fn(&str) -> Option<String>,
    has_base_url: bool,
) -> (ProviderKind, Option<&'static str>) {
    if var("OPENROUTER_API_KEY").is_some() {
        (ProviderKind::OpenAi, Some("OPENROUTER_API_KEY"))
    } else if var("ANTHROPIC_API_KEY").is_some() {
        (ProviderKind::Anthropic, Some("ANTHROPIC_API_KEY"))
    } else if var("OPENAI_API_KEY").is_some() {
        (ProviderKind::OpenAi, Some("OPENAI_API_KEY"))
    } else if has_base_url || var("LORE_LLM_API_KEY").is_some() {
        (ProviderKind::OpenAi, None)
    } else {
        (ProviderKind::Offline, None)
    }
}

fn key_var(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    }
}

fn default_url(kind: ProviderKind, via_openrouter: bool) -> &'static str {
    match (kind, via_openrouter) {
        (ProviderKind::Anthropic, _) => ANTHROPIC_URL,
        (_, true) => OPENROUTER_URL,
        _ => OPENAI_URL,
    }
}

fn default_model(kind: ProviderKind, via_openrouter: bool) -> &'static str {
    match (kind, via_openrouter) {
        (ProviderKind::Anthropic, _) => "claude-haiku-4-5",
        (_, true) => "anthropic/claude-haiku-4.5",
        _ => "gpt-4o-mini",
    }
}

fn check_url(url: &str) -> Result<()> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(Error::invalid(
            "LORE_LLM_BASE_URL",
            format!("{url:?} is not an http:// or https:// URL"),
        ))
    }
}

fn timeout(var: &impl Fn(&str) -> Option<String>) -> Result<Duration> {
    let Some(raw) = var("LORE_LLM_TIMEOUT_SECS") else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match raw.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(Error::invalid(
            "LORE_LLM_TIMEOUT_SECS",
            format!("{raw:?} is not a positive number of seconds"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<LlmConfig> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LlmConfig::from_vars(|name| map.get(name).cloned())
    }

    #[test]
    fn nothing_set_is_offline() {
        assert_eq!(config(&[]).unwrap().kind, ProviderKind::Offline);
    }

    #[test]
    fn seed_keys_pick_a_provider_in_a_fixed_order() {
        let c = config(&[("OPENAI_API_KEY", "sk-o"), ("ANTHROPIC_API_KEY", "sk-a")]).unwrap();
        assert_eq!(
            (c.kind, c.base_url.as_str()),
            (ProviderKind::Anthropic, ANTHROPIC_URL)
        );
        assert_eq!(c.api_key.unwrap().expose(), "sk-a");
        let c = config(&[("OPENROUTER_API_KEY", "sk-r"), ("OPENAI_API_KEY", "sk-o")]).unwrap();
        assert_eq!(
            (c.kind, c.base_url.as_str()),
            (ProviderKind::OpenAi, OPENROUTER_URL)
        );
        assert_eq!(c.api_key.unwrap().expose(), "sk-r");
        assert_eq!(c.model, "anthropic/claude-haiku-4.5");
        let c = config(&[("OPENAI_API_KEY", "sk-o")]).unwrap();
        assert_eq!(
            (c.base_url.as_str(), c.model.as_str()),
            (OPENAI_URL, "gpt-4o-mini")
        );
    }

    #[test]
    fn lore_variables_override_and_a_local_server_needs_no_key() {
        let c = config(&[
            ("ANTHROPIC_API_KEY", "sk-a"),
            ("LORE_LLM_PROVIDER", "openai"),
            ("LORE_LLM_BASE_URL", "http://localhost:11434/v1/"),
            ("LORE_LLM_MODEL", "llama3.2"),
            ("LORE_LLM_TIMEOUT_SECS", "2.5"),
        ])
        .unwrap();
        assert_eq!(c.kind, ProviderKind::OpenAi);
        assert_eq!(c.base_url, "http://localhost:11434/v1");
        assert_eq!(c.model, "llama3.2");
        assert!(c.api_key.is_none());
        assert_eq!(c.timeout, Duration::from_millis(2500));
        let offline = config(&[("OPENAI_API_KEY", "k"), ("LORE_LLM_PROVIDER", "offline")]);
        assert_eq!(offline.unwrap().kind, ProviderKind::Offline);
    }

    #[test]
    fn bad_settings_are_refused_with_the_variable_named() {
        for (vars, needle) in [
            (vec![("LORE_LLM_PROVIDER", "gemini")], "LORE_LLM_PROVIDER"),
            (
                vec![("LORE_LLM_PROVIDER", "anthropic")],
                "ANTHROPIC_API_KEY",
            ),
            (vec![("LORE_LLM_BASE_URL", "ftp://x")], "LORE_LLM_BASE_URL"),
            (
                vec![("OPENAI_API_KEY", "k"), ("LORE_LLM_TIMEOUT_SECS", "-1")],
                "LORE_LLM_TIMEOUT_SECS",
            ),
        ] {
            let err = config(&vars).unwrap_err().to_string();
            assert!(err.contains(needle), "{vars:?}: {err}");
        }
    }

    #[test]
    fn debug_never_shows_the_key() {
        let c = config(&[("OPENAI_API_KEY", "sk-secret-123")]).unwrap();
        let shown = format!("{c:?} {:?}", c.api_key);
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
