//! Running a skill on a model (seed 000's `run`): prompt, call, parse, record.
//!
//! The prompt is the one `lore memory prompt SKILL --task TEXT` shows for the input's text: the
//! skill's files around the layered context for the task (lessons, decisions, digest,
//! knowledge), so what a person inspects is what the model gets. When SKILL.md's front matter declares an `output_schema`, the answer must
//! be JSON matching it (checked, with one repair, by [`complete_json`]). Every run that reached
//! the model is recorded, including the ones that failed: a timeout or an answer that does not
//! match the schema becomes an execution with outcome `failure` and the error in its `extra`, so
//! nothing a model did is lost and `watch` shows it. Only "no model configured" records nothing,
//! because nothing ran.

use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tracing::instrument;

use super::{Engine, NewExecution};
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{Execution, Outcome};
use lore_core::ports::llm::{Llm, LlmError, LlmRequest, PriceTable, Usage, complete_json};
use lore_core::scope::SkillPath;
use lore_workspace::front_matter::FrontMatter;

/// A skill run to make.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The skill, `domain/skill`.
    pub skill: SkillPath,
    /// Its input.
    pub input: Value,
    /// The session it belongs to.
    pub session: Option<String>,
}

/// A model's answer to a skill, before it is recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkillAnswer {
    /// The parsed output: the schema-checked JSON, else the text as JSON when it parses, else the
    /// text as a string.
    pub output: Value,
    /// Tokens consumed.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
    /// Wall-clock milliseconds spent waiting for the model.
    pub latency_ms: f64,
    /// The lessons that were in the prompt.
    pub lessons: Vec<LessonId>,
    /// The prompt's warnings: the memory layers whose read failed and were left empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What a recorded run produced.
#[derive(Clone, Debug, Serialize)]
pub struct RunOutcome {
    /// The recorded execution (outcome `failure` when the model call failed).
    pub execution: Execution,
    /// The model's error, when the call failed; the execution holds it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The prompt's warnings, as [`SkillAnswer::warnings`]; the execution's `extra` holds them
    /// too, as `prompt_warnings`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Engine {
    /// Sends `input` through `skill` on `llm` without recording anything (`lore test` uses it).
    ///
    /// # Errors
    /// [`Error::Llm`] when the model call fails; as [`Engine::prompt`] for the skill;
    /// [`Error::Invalid`] for a malformed `output_schema`.
    pub fn execute(&self, skill: &SkillPath, input: &Value, llm: &dyn Llm) -> Result<SkillAnswer> {
        let task = self.run_task(skill, input);
        let prompt = self.prompt_for(skill, Some(&task))?;
        let mut request = LlmRequest::new(prompt.text, input_message(input));
        request.schema = self.output_schema(skill)?;
        let started = Instant::now();
        let response = complete_json(llm, &request)?;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        let output = response.json.unwrap_or_else(|| text_output(&response.text));
        Ok(SkillAnswer {
            output,
            usage: response.usage,
            model: response.model,
            latency_ms,
            lessons: prompt.lessons,
            warnings: prompt.warnings,
        })
    }

    /// Runs a skill on `llm` and records the execution with its cost, latency and model.
    ///
    /// # Errors
    /// [`Error::Llm`] with [`LlmError::NotConfigured`] when there is no model (nothing is
    /// recorded); as [`Engine::execute`] for a skill that cannot be loaded; store failures. A model
    /// call that fails after reaching the provider is not an error here: it is recorded as a
    /// failed execution and reported in [`RunOutcome::error`].
    #[instrument(skip_all, fields(skill = %request.skill))]
    pub fn run(
        &self,
        request: RunRequest,
        llm: &dyn Llm,
        prices: &PriceTable,
    ) -> Result<RunOutcome> {
        self.scope.check_write(&request.skill)?;
        let started = Instant::now();
        let (answer, error) = match self.execute(&request.skill, &request.input, llm) {
            Ok(answer) => (answer, None),
            Err(Error::Llm(err)) if !matches!(err, LlmError::NotConfigured(_)) => {
                (failed_answer(&err, llm, started), Some(err))
            }
            Err(other) => return Err(other),
        };
        let cost_usd = prices
            .cost(&answer.model, answer.usage)
            .or_else(|| prices.cost(llm.model(), answer.usage));
        let extra = run_details(llm, &answer, error.as_ref());
        let warnings = answer.warnings.clone();
        let execution = self.record_execution_with(
            NewExecution {
                skill: request.skill,
                input: request.input,
                output: answer.output.clone(),
                outcome: if error.is_some() {
                    Outcome::Failure
                } else {
                    Outcome::PendingReview
                },
                cost_usd,
                latency_ms: Some(answer.latency_ms),
                model: Some(answer.model.clone()),
                session: request.session,
                lessons_shown: answer.lessons.clone(),
            },
            extra,
        )?;
        Ok(RunOutcome {
            execution,
            error: error.map(|e| e.to_string()),
            warnings,
        })
    }

    /// The skill's `output_schema`, from its SKILL.md front matter: inline JSON, or a `.json`
    /// file inside the skill's folder.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a schema that is not JSON or a path that leaves the skill's folder;
    /// [`Error::Io`] when the file cannot be read.
    pub fn output_schema(&self, skill: &SkillPath) -> Result<Option<Value>> {
        let Some(skills) = &self.skills else {
            return Ok(None);
        };
        let text = skills.skill_md(skill)?;
        let front = FrontMatter::parse(&text);
        let Some(raw) = front.get("output_schema") else {
            return Ok(None);
        };
        if front.is_nested("output_schema") {
            return Err(Error::invalid(
                "output_schema",
                format!(
                    "{skill}: written as a YAML map; write the JSON schema inline \
                     (`output_schema: {{\"type\": \"object\"}}`), as JSON in a `|` block, or as \
                     the path of a .json file in the skill's folder"
                ),
            ));
        }
        let raw = raw.trim();
        if raw.is_empty() {
            return Err(Error::invalid(
                "output_schema",
                format!("{skill}: empty; remove the key or give a JSON schema"),
            ));
        }
        let json = if raw.starts_with('{') {
            raw.to_owned()
        } else {
            skills.skill_file(skill, "output_schema", raw)?
        };
        let schema: Value = serde_json::from_str(&json)
            .map_err(|e| Error::invalid("output_schema", format!("{skill}: not JSON: {e}")))?;
        if !schema.is_object() {
            return Err(Error::invalid(
                "output_schema",
                format!("{skill}: not a JSON object"),
            ));
        }
        Ok(Some(schema))
    }
}

impl Engine {
    /// What a run of `skill` on `input` is about, for recalling its memory: the skill's name,
    /// the `description` of its SKILL.md when it has one, then the input's text.
    ///
    /// An input alone often names only the case at hand ("Jane Smith, Senior Backend Engineer,
    /// 5 years Python"), while the skill's lessons name the situation it is a case of
    /// ("screening senior backend candidates"): the skill's own words say which situation it is.
    pub(crate) fn run_task(&self, skill: &SkillPath, input: &Value) -> String {
        let mut parts = vec![skill.as_str().replace(['/', '-', '_'], " ")];
        // A SKILL.md that cannot be read is the prompt's to report, by name.
        if let Some(text) = self.skills.as_ref().and_then(|s| s.skill_md(skill).ok())
            && let Some(description) = FrontMatter::parse(&text).get("description")
        {
            parts.push(description.trim().to_owned());
        }
        parts.push(input_text(input));
        parts
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The input's text for recall: the input when it is text, else the text of its string values
/// (field names and numbers say little about the task).
pub(crate) fn input_text(input: &Value) -> String {
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::String(text) => out.push(text),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    strings(input, &mut out);
    out.join("\n")
}

/// The user message: the input as JSON, or as is when it is a string.
fn input_message(input: &Value) -> String {
    match input {
        Value::String(text) => text.clone(),
        other => format!(
            "Input (JSON):\n{}",
            serde_json::to_string_pretty(other).unwrap_or_default()
        ),
    }
}

fn text_output(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn failed_answer(err: &LlmError, llm: &dyn Llm, started: Instant) -> SkillAnswer {
    let (output, usage, model) = match err {
        LlmError::InvalidOutput {
            text, usage, model, ..
        } => (Value::String(text.clone()), *usage, model.clone()),
        _ => (Value::Null, Usage::default(), llm.model().to_owned()),
    };
    SkillAnswer {
        output,
        usage,
        model,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        lessons: Vec::new(),
        warnings: Vec::new(),
    }
}

fn run_details(
    llm: &dyn Llm,
    answer: &SkillAnswer,
    error: Option<&LlmError>,
) -> Map<String, Value> {
    let mut extra = Map::new();
    extra.insert("provider".into(), json!(llm.provider()));
    extra.insert("usage".into(), json!(answer.usage));
    if let Some(err) = error {
        extra.insert("error".into(), json!(err.to_string()));
    }
    // A run whose prompt lacked a layer is kept with why, so its outcome is not read as the
    // whole memory's.
    if !answer.warnings.is_empty() {
        extra.insert("prompt_warnings".into(), json!(answer.warnings));
    }
    extra
}
