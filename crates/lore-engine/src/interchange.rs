//! Moving memory in and out: seed 000's `.agentura/` files and Lore's own JSONL.
//!
//! The agentura files (`episodic_memory.json`, `corrections.json`, `reflexion_entries.json`)
//! round-trip losslessly: fields Lore has no name for are kept in each record's `extra`, integer
//! latencies stay integers, and timestamps are written back in the seed's
//! `2026-02-20T12:43:41.681444+00:00` form (an input in another offset or with `Z` comes back as
//! the same instant in UTC). Optional fields are always written, as `null` when empty, as the
//! seed's writer does; numbers keep their value, with an integral latency written as an integer.
//! The JSONL form holds every Lore record, one per line, and is the
//! full-fidelity backup.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use lore_core::error::{Error, Result};
use lore_core::id::{CorrectionId, ExecutionId, LessonId};
use lore_core::model::{
    AuditEntry, AuthorKind, Correction, Episode, ErrorEvent, Execution, Lesson, LessonSource,
    LessonStatus, MemoryEntry, Outcome, Tiers, UtilityStats,
};
use lore_core::ports::store::Record;
use lore_core::scope::SkillPath;
use lore_core::wording::{self, Place};

/// The file names of seed 000's memory folder.
pub const EPISODIC_FILE: &str = "episodic_memory.json";
/// Corrections file.
pub const CORRECTIONS_FILE: &str = "corrections.json";
/// Reflexions file.
pub const REFLEXIONS_FILE: &str = "reflexion_entries.json";

/// Python's `isoformat()`, which wrote the seed's files: no fraction for whole seconds, else six
/// digits (nine only when the time really has nanoseconds).
fn timestamp_text(at: &DateTime<Utc>) -> String {
    let format = match at.timestamp_subsec_nanos() {
        0 => SecondsFormat::Secs,
        n if n % 1000 == 0 => SecondsFormat::Micros,
        _ => SecondsFormat::Nanos,
    };
    at.to_rfc3339_opts(format, false)
}

fn parse_timestamp(field: &str, raw: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| Error::invalid(field, format!("{raw:?} is not an ISO 8601 timestamp ({e})")))
}

/// A number written back as an integer when it is one, as the seed files do for latencies.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Number::from_f64(value)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

#[derive(Serialize, Deserialize)]
struct AgenturaExecution {
    execution_id: String,
    skill: String,
    timestamp: String,
    #[serde(default)]
    input_summary: Value,
    #[serde(default)]
    output_summary: Value,
    outcome: String,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    latency_ms: Option<Value>,
    #[serde(default)]
    model_used: Option<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct AgenturaCorrection {
    correction_id: String,
    execution_id: String,
    skill: String,
    timestamp: String,
    #[serde(default)]
    original_output: Value,
    user_correction: String,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct AgenturaReflexion {
    reflexion_id: String,
    skill: String,
    created_at: String,
    #[serde(default)]
    correction_id: Option<String>,
    #[serde(default)]
    mistake: String,
    #[serde(default)]
    root_cause: String,
    rule: String,
    #[serde(default)]
    applies_when: String,
    confidence: f64,
    #[serde(default)]
    validated_by_test: bool,
    #[serde(default)]
    generated_test_ids: Vec<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct EntriesFile<T> {
    entries: Vec<T>,
}

#[derive(Serialize, Deserialize)]
struct CorrectionsFile<T> {
    corrections: Vec<T>,
}

/// The contents of one `.agentura/` folder, parsed into Lore records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgenturaBundle {
    /// From `episodic_memory.json`.
    pub executions: Vec<Execution>,
    /// From `corrections.json`.
    pub corrections: Vec<Correction>,
    /// From `reflexion_entries.json`.
    pub lessons: Vec<Lesson>,
}

fn context(file: &str, index: usize, err: Error) -> Error {
    match err {
        Error::Invalid { what, why } => {
            Error::invalid(format!("{file} entry {index}: {what}"), why)
        }
        other => other,
    }
}

fn parse_file<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::invalid(file, format!("malformed JSON: {e}")))
}

impl AgenturaBundle {
    /// Parses the three files' texts; a missing file is `None`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the file, the entry and the field at fault.
    pub fn parse(
        episodic: Option<&str>,
        corrections: Option<&str>,
        reflexions: Option<&str>,
    ) -> Result<Self> {
        let mut bundle = Self::default();
        if let Some(text) = episodic {
            let file: EntriesFile<AgenturaExecution> = parse_file(EPISODIC_FILE, text)?;
            for (i, e) in file.entries.into_iter().enumerate() {
                bundle
                    .executions
                    .push(execution_in(e).map_err(|err| context(EPISODIC_FILE, i, err))?);
            }
        }
        if let Some(text) = corrections {
            let file: CorrectionsFile<AgenturaCorrection> = parse_file(CORRECTIONS_FILE, text)?;
            for (i, c) in file.corrections.into_iter().enumerate() {
                bundle
                    .corrections
                    .push(correction_in(c).map_err(|err| context(CORRECTIONS_FILE, i, err))?);
            }
        }
        if let Some(text) = reflexions {
            let by_correction: HashMap<&CorrectionId, &ExecutionId> = bundle
                .corrections
                .iter()
                .map(|c| (&c.id, &c.execution_id))
                .collect();
            let file: EntriesFile<AgenturaReflexion> = parse_file(REFLEXIONS_FILE, text)?;
            let mut lessons = Vec::new();
            for (i, r) in file.entries.into_iter().enumerate() {
                let mut lesson = lesson_in(r).map_err(|err| context(REFLEXIONS_FILE, i, err))?;
                lesson.execution_id = lesson
                    .correction_id
                    .as_ref()
                    .and_then(|c| by_correction.get(c))
                    .map(|e| (*e).clone());
                lessons.push(lesson);
            }
            bundle.lessons = lessons;
        }
        Ok(bundle)
    }

    /// Renders the three files as pretty JSON, in the order executions, corrections, reflexions.
    pub fn render(&self) -> [String; 3] {
        let pretty =
            |v: Value| serde_json::to_string_pretty(&v).expect("JSON values serialize") + "\n";
        let entries: Vec<Value> = self.executions.iter().map(execution_out).collect();
        let corrections: Vec<Value> = self.corrections.iter().map(correction_out).collect();
        let reflexions: Vec<Value> = self.lessons.iter().map(lesson_out).collect();
        [
            pretty(serde_json::json!({ "entries": entries })),
            pretty(serde_json::json!({ "corrections": corrections })),
            pretty(serde_json::json!({ "entries": reflexions })),
        ]
    }

    /// The bundle as Lore records (executions, corrections, lessons).
    pub fn into_records(self) -> Vec<Record> {
        let mut out =
            Vec::with_capacity(self.executions.len() + self.corrections.len() + self.lessons.len());
        out.extend(self.executions.into_iter().map(Record::Execution));
        out.extend(self.corrections.into_iter().map(Record::Correction));
        out.extend(self.lessons.into_iter().map(Record::Lesson));
        out
    }
}

/// The extra field that keeps the ID a record had in the seed's files when it was given another.
pub const ORIGINAL_EXECUTION_ID: &str = "original_execution_id";

/// An execution given a new ID on import, because an earlier, different execution of the same
/// files held its ID.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Renamed {
    /// The ID in the files.
    pub id: String,
    /// The ID it is stored under.
    pub new_id: String,
}

impl AgenturaBundle {
    /// Makes execution IDs unique without losing a record.
    ///
    /// Seed 000 names executions `EXEC-{YYYYMMDDHHMMSS}`, so two executions of one second share
    /// an ID. The first (in file order) keeps it; each later, different one becomes `{ID}-2`,
    /// `{ID}-3`, … (the first such ID no execution of the files has), with the original ID kept in
    /// its extra field `original_execution_id`. An exact copy of an execution keeps its ID and is
    /// stored once. Each correction naming a shared ID is attached to the execution whose output
    /// is the correction's `original_output` (any of them when none is), and among those to the
    /// latest one not after the correction (else the closest in time); lessons follow their
    /// correction. The result depends only on the files, so importing them again changes nothing.
    pub fn disambiguate(&mut self) -> Vec<Renamed> {
        let mut taken: std::collections::HashSet<String> = self
            .executions
            .iter()
            .map(|e| e.id.as_str().to_owned())
            .collect();
        // Every distinct execution under each ID of the files: (ID stored under, index).
        let mut holders: HashMap<ExecutionId, Vec<usize>> = HashMap::new();
        let mut renamed = Vec::new();
        for i in 0..self.executions.len() {
            let original = self.executions[i].id.clone();
            let known = holders.entry(original.clone()).or_default();
            if known
                .iter()
                .any(|&k| self.executions[k] == self.executions[i])
            {
                continue;
            }
            if !known.is_empty() {
                let new_id = (2..)
                    .map(|n| format!("{original}-{n}"))
                    .find(|id| !taken.contains(id) && ExecutionId::parse(id).is_ok());
                let Some(new_id) = new_id else { continue };
                let e = &mut self.executions[i];
                e.extra.insert(
                    ORIGINAL_EXECUTION_ID.into(),
                    Value::String(original.to_string()),
                );
                e.id = ExecutionId::parse(&new_id).expect("checked above");
                taken.insert(new_id.clone());
                renamed.push(Renamed {
                    id: original.to_string(),
                    new_id,
                });
            }
            known.push(i);
        }
        if renamed.is_empty() {
            return renamed;
        }
        for c in &mut self.corrections {
            let Some(candidates) = holders.get(&c.execution_id).filter(|h| h.len() > 1) else {
                continue;
            };
            let executions = &self.executions;
            let same_output: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&k| executions[k].output == c.original_output)
                .collect();
            let pool = if same_output.is_empty() {
                candidates.clone()
            } else {
                same_output
            };
            let before = pool
                .iter()
                .copied()
                .filter(|&k| executions[k].timestamp <= c.timestamp)
                .max_by_key(|&k| executions[k].timestamp);
            let chosen = before.or_else(|| {
                pool.iter()
                    .copied()
                    .min_by_key(|&k| (executions[k].timestamp - c.timestamp).abs())
            });
            if let Some(k) = chosen
                && executions[k].id != c.execution_id
            {
                c.extra.insert(
                    ORIGINAL_EXECUTION_ID.into(),
                    Value::String(c.execution_id.to_string()),
                );
                c.execution_id = executions[k].id.clone();
            }
        }
        let by_correction: HashMap<&CorrectionId, &ExecutionId> = self
            .corrections
            .iter()
            .map(|c| (&c.id, &c.execution_id))
            .collect();
        for lesson in &mut self.lessons {
            if let Some(e) = lesson
                .correction_id
                .as_ref()
                .and_then(|c| by_correction.get(c))
            {
                lesson.execution_id = Some((*e).clone());
            }
        }
        renamed
    }
}

fn execution_in(e: AgenturaExecution) -> Result<Execution> {
    let latency_ms = match e.latency_ms {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => {
            return Err(Error::invalid(
                "latency_ms",
                format!("{other} is not a number"),
            ));
        }
    };
    Ok(Execution {
        id: ExecutionId::parse(&e.execution_id)?,
        skill: SkillPath::parse(&e.skill)?,
        timestamp: parse_timestamp("timestamp", &e.timestamp)?,
        input: e.input_summary,
        output: e.output_summary,
        outcome: Outcome::parse(&e.outcome)?,
        cost_usd: e.cost_usd,
        latency_ms,
        model: e.model_used,
        agent: None,
        session: None,
        lessons_shown: Vec::new(),
        extra: e.extra,
    })
}

fn execution_out(e: &Execution) -> Value {
    let record = AgenturaExecution {
        execution_id: e.id.to_string(),
        skill: e.skill.to_string(),
        timestamp: timestamp_text(&e.timestamp),
        input_summary: e.input.clone(),
        output_summary: e.output.clone(),
        outcome: e.outcome.as_str().to_owned(),
        cost_usd: e.cost_usd,
        latency_ms: e.latency_ms.map(number),
        model_used: e.model.clone(),
        extra: e.extra.clone(),
    };
    serde_json::to_value(record).expect("records serialize")
}

fn correction_in(c: AgenturaCorrection) -> Result<Correction> {
    Ok(Correction {
        id: CorrectionId::parse(&c.correction_id)?,
        execution_id: ExecutionId::parse(&c.execution_id)?,
        skill: SkillPath::parse(&c.skill)?,
        timestamp: parse_timestamp("timestamp", &c.timestamp)?,
        original_output: c.original_output,
        text: c.user_correction,
        author_kind: AuthorKind::Human,
        author: None,
        extra: c.extra,
    })
}

fn correction_out(c: &Correction) -> Value {
    let record = AgenturaCorrection {
        correction_id: c.id.to_string(),
        execution_id: c.execution_id.to_string(),
        skill: c.skill.to_string(),
        timestamp: timestamp_text(&c.timestamp),
        original_output: c.original_output.clone(),
        user_correction: c.text.clone(),
        extra: c.extra.clone(),
    };
    serde_json::to_value(record).expect("records serialize")
}

fn lesson_in(r: AgenturaReflexion) -> Result<Lesson> {
    if !(0.0..=1.0).contains(&r.confidence) {
        return Err(Error::invalid(
            "confidence",
            format!("{} is outside 0.0 to 1.0", r.confidence),
        ));
    }
    let created_at = parse_timestamp("created_at", &r.created_at)?;
    let correction_id = r
        .correction_id
        .as_deref()
        .map(CorrectionId::parse)
        .transpose()?;
    let summary = lore_core::text::sentences(&r.rule)
        .into_iter()
        .next()
        .unwrap_or_default();
    Ok(Lesson {
        id: LessonId::parse(&r.reflexion_id)?,
        skill: SkillPath::parse(&r.skill)?,
        agent: None,
        correction_id,
        execution_id: None,
        tiers: Tiers {
            summary,
            condition: r.applies_when.clone(),
            action: r.rule.clone(),
            rationale: r.root_cause.clone(),
            steps: Vec::new(),
        },
        mistake: r.mistake,
        root_cause: r.root_cause,
        rule: r.rule,
        applies_when: r.applies_when,
        triggers: Vec::new(),
        tags: Vec::new(),
        confidence: r.confidence,
        source: LessonSource::Import,
        // Seed 000 injected every reflexion it had, so imported ones arrive approved.
        status: LessonStatus::Approved,
        utility: UtilityStats::default(),
        links: Vec::new(),
        validated_by_test: r.validated_by_test,
        generated_test_ids: r.generated_test_ids,
        merged_from: Vec::new(),
        created_at,
        updated_at: created_at,
        extra: r.extra,
    })
}

fn lesson_out(l: &Lesson) -> Value {
    let record = AgenturaReflexion {
        reflexion_id: l.id.to_string(),
        skill: l.skill.to_string(),
        created_at: timestamp_text(&l.created_at),
        correction_id: l.correction_id.as_ref().map(ToString::to_string),
        mistake: l.mistake.clone(),
        root_cause: l.root_cause.clone(),
        rule: l.rule.clone(),
        applies_when: l.applies_when.clone(),
        confidence: l.confidence,
        validated_by_test: l.validated_by_test,
        generated_test_ids: l.generated_test_ids.clone(),
        extra: l.extra.clone(),
    };
    serde_json::to_value(record).expect("records serialize")
}

/// One line of the JSONL export.
#[allow(clippy::large_enum_variant)] // Lives for one line; see `Record`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", content = "record", rename_all = "snake_case")]
enum Line {
    Execution(Execution),
    Correction(Correction),
    Lesson(Lesson),
    ErrorEvent(ErrorEvent),
    Audit(AuditEntry),
    Memory(MemoryEntry),
    // Kept as JSON here and parsed by `Episode::from_json`, which names the failing field's path
    // (`decisions[2].chosen`) and refuses arrays where seed 001 has objects.
    Episode(Value),
}

/// Writes records as JSON lines, `{"type": "...", "record": {...}}`.
///
/// # Errors
/// [`Error::Io`] when the writer fails.
pub fn write_jsonl(records: &[Record], mut out: impl Write) -> Result<()> {
    for record in records {
        let line = match record.clone() {
            Record::Execution(r) => Line::Execution(r),
            Record::Correction(r) => Line::Correction(r),
            Record::Lesson(r) => Line::Lesson(r),
            Record::ErrorEvent(r) => Line::ErrorEvent(r),
            Record::Audit(r) => Line::Audit(r),
            Record::Memory(r) => Line::Memory(r),
            Record::Episode(r) => {
                Line::Episode(serde_json::to_value(r).map_err(|e| Error::io("export", e.into()))?)
            }
        };
        serde_json::to_writer(&mut out, &line).map_err(|e| Error::io("export", e.into()))?;
        out.write_all(b"\n").map_err(|e| Error::io("export", e))?;
    }
    out.flush().map_err(|e| Error::io("export", e))
}

/// Reads records written by [`write_jsonl`]; blank lines are skipped. Episodes are validated as
/// when they are recorded.
///
/// # Errors
/// [`Error::Invalid`] naming the line number and what is wrong with it (for an episode, also
/// the field: `line 3: decisions[0].chosen`).
pub fn read_jsonl(input: impl BufRead) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for (n, line) in input.lines().enumerate() {
        let line = line.map_err(|e| Error::io("import", e))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(read_jsonl_line(n + 1, &line)?);
    }
    Ok(out)
}

/// Reads line `number` (1-based) of a [`write_jsonl`] file, not blank.
///
/// # Errors
/// As [`read_jsonl`].
pub fn read_jsonl_line(number: usize, line: &str) -> Result<Record> {
    let parsed: Line = wording::parse_json(line.as_bytes(), Place::Line)
        .map_err(|refused| Error::invalid(format!("line {number}"), refused))?;
    Ok(match parsed {
        Line::Execution(r) => Record::Execution(r),
        Line::Correction(r) => Record::Correction(r),
        Line::Lesson(r) => Record::Lesson(r),
        Line::ErrorEvent(r) => Record::ErrorEvent(r),
        Line::Audit(r) => Record::Audit(r),
        Line::Memory(r) => Record::Memory(r),
        Line::Episode(value) => {
            Record::Episode(episode_line(value).map_err(|e| at_line(number, e))?)
        }
    })
}

fn episode_line(value: Value) -> Result<Episode> {
    let episode = Episode::from_json(value, None)?;
    if episode.has_unset_id() {
        // An export always names its episodes; drawing a new ID would make a re-import add a
        // second copy instead of skipping the first.
        return Err(Error::invalid("id", "an exported episode needs its ID"));
    }
    episode.validate()?;
    Ok(episode)
}

/// `err` with the line it came from in front of the field it names.
fn at_line(line: usize, err: Error) -> Error {
    match err {
        Error::Invalid { what, why } => Error::invalid(format!("line {line}: {what}"), why),
        other => other,
    }
}
