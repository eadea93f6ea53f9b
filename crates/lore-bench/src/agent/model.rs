//! The executor: any OpenAI-compatible Chat Completions endpoint, asked for one command at a time.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

/// A client for `{base}/chat/completions`.
pub struct Model {
    agent: ureq::Agent,
    url: String,
    name: String,
    key: Option<String>,
    pub temperature: f64,
    pub max_tokens: u32,
}

/// One answer.
pub struct Reply {
    pub command: String,
    pub prompt_tokens: u64,
    pub elapsed: Duration,
}

impl Model {
    /// `base` is the endpoint's `/v1` URL, e.g. `http://127.0.0.1:8080/v1`.
    pub fn new(base: &str, name: &str, key: Option<String>, timeout: Duration) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            agent,
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            name: name.to_string(),
            key,
            temperature: 0.0,
            max_tokens: 64,
        }
    }

    /// Asks for the command that does the task; `seed` makes the sampling repeat where the
    /// server honours it.
    pub fn command(&self, system: &str, user: &str, seed: u64) -> Result<Reply> {
        let body = json!({
            "model": self.name,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": seed,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "command", "strict": true, "schema": {
                    "type": "object",
                    "properties": {"command": {"type": "string"}},
                    "required": ["command"],
                    "additionalProperties": false,
                }},
            },
        });
        let started = Instant::now();
        let mut request = self
            .agent
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(key) = &self.key {
            request = request.header("authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send(body.to_string())
            .with_context(|| format!("the model at {} did not answer", self.url))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .context("reading the model's answer")?;
        if !(200..300).contains(&status) {
            bail!(
                "the model at {} answered {status}: {}",
                self.url,
                text.chars().take(300).collect::<String>()
            );
        }
        let answer: Value = serde_json::from_str(&text)
            .with_context(|| format!("the model's answer is not JSON: {text:.300}"))?;
        let content = answer["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| anyhow!("the model's answer has no message content: {text:.300}"))?;
        Ok(Reply {
            command: extract_command(content),
            prompt_tokens: answer["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
            elapsed: started.elapsed(),
        })
    }
}

/// The command in a message: the `command` of a JSON object when it is one, else the first line
/// of the text with code fences, backticks and a shell prompt taken off (models that ignore the
/// schema write it that way).
pub fn extract_command(content: &str) -> String {
    let content = content.trim();
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(content)
        && let Some(Value::String(c)) = map.get("command")
    {
        return clean(c);
    }
    let line = content
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("```"))
        .unwrap_or("");
    clean(line)
}

fn clean(line: &str) -> String {
    let line = line.trim().trim_matches('`').trim();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::extract_command;

    #[test]
    fn the_command_is_found_however_the_model_wrote_it() {
        assert_eq!(
            extract_command(r#"{"command": "gridtool sort a.csv"}"#),
            "gridtool sort a.csv"
        );
        assert_eq!(
            extract_command("`gridtool sort a.csv`"),
            "gridtool sort a.csv"
        );
        assert_eq!(
            extract_command("```sh\n$ gridtool  sort a.csv\n```"),
            "gridtool sort a.csv"
        );
        assert_eq!(extract_command(""), "");
    }
}
