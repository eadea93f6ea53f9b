//! Seed 000's `.agentura/` files and Lore's JSONL export, tested against fixtures on disk.
//!
//! Each folder under `tests/fixtures/agentura/` holds the three files of one `.agentura/` folder,
//! written in the seed's schema (`seed` is the seed's own example, verbatim). For every case the
//! tests prove that parsing and rendering gives back the same JSON values, that the records survive
//! the JSONL backup, and that bad input is refused with an error naming the file and the problem.

use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use lore_core::Error;
use lore_core::id::{AuditId, CorrectionId, ErrorEventId, ExecutionId, LessonId, MemoryId};
use lore_core::model::{
    AuditAction, AuditEntry, AuthorKind, Episode, ErrorEvent, LessonSource, LessonStatus,
    MemoryCategory, MemoryEntry, Outcome, RecordKind, SignalChannel,
};
use lore_core::ports::store::Record;
use lore_core::scope::SkillPath;
use lore_engine::interchange::{
    AgenturaBundle, CORRECTIONS_FILE, EPISODIC_FILE, REFLEXIONS_FILE, read_jsonl, write_jsonl,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Every fixture case; each folder holds the three seed files.
const CASES: [&str; 6] = [
    "seed",
    "unicode",
    "empty_fields",
    "same_second",
    "float_latency",
    "empty_files",
];

/// The three files in the order `AgenturaBundle::render` returns them.
const FILES: [&str; 3] = [EPISODIC_FILE, CORRECTIONS_FILE, REFLEXIONS_FILE];

fn case_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agentura")
        .join(case)
}

fn read_fixture(case: &str, file: &str) -> String {
    let path = case_dir(case).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The three texts of one case, in render order.
fn texts(case: &str) -> [String; 3] {
    FILES.map(|file| read_fixture(case, file))
}

fn parse_texts(texts: &[String; 3]) -> lore_core::Result<AgenturaBundle> {
    AgenturaBundle::parse(Some(&texts[0]), Some(&texts[1]), Some(&texts[2]))
}

fn parse_case(case: &str) -> AgenturaBundle {
    parse_texts(&texts(case)).unwrap_or_else(|e| panic!("case {case}: {e}"))
}

fn value(label: &str, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{label} is not JSON: {e}\n{text}"))
}

/// The first place two JSON values differ, as a JSON pointer with both sides.
fn first_difference(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(&format!("{path}/{k}"), va, vb) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{path}/{k}: input {va}, output has no field")),
                }
            }
            y.iter()
                .find(|(k, _)| !x.contains_key(*k))
                .map(|(k, vb)| format!("{path}/{k}: input has no field, output {vb}"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(&format!("{path}/{i}"), va, vb)),
        _ if a == b => None,
        _ => Some(format!("{path}: input {a}, output {b}")),
    }
}

/// Asserts that `output` holds the same JSON value as `input`, naming the first difference.
fn assert_same_json(label: &str, input: &str, output: &str) {
    let (a, b) = (value(label, input), value(label, output));
    if let Some(diff) = first_difference("", &a, &b) {
        panic!("{label}: render changed the file at {diff}\n--- rendered ---\n{output}");
    }
    assert_eq!(a, b, "{label}");
}

/// Parse → render → compare each file's JSON value with the fixture's.
fn assert_render_gives_back_input(case: &str) {
    let input = texts(case);
    let bundle = parse_case(case);
    let output = bundle.render();
    for ((file, before), after) in FILES.iter().zip(&input).zip(&output) {
        assert_same_json(&format!("{case}/{file}"), before, after);
    }
    // The rendered files parse again into the same records (render is a fixed point).
    let again = parse_texts(&output).unwrap_or_else(|e| panic!("{case}: re-parse: {e}"));
    assert_eq!(
        again, bundle,
        "{case}: parse(render(bundle)) differs from bundle"
    );
}

/// bundle.into_records → write_jsonl → read_jsonl gives the same records.
fn assert_jsonl_roundtrip(case: &str) {
    let records = parse_case(case).into_records();
    let mut buf = Vec::new();
    write_jsonl(&records, &mut buf).unwrap();
    let text = String::from_utf8(buf).expect("JSONL is UTF-8");
    assert_eq!(
        text.lines().count(),
        records.len(),
        "{case}: one line per record"
    );
    for (line, record) in text.lines().zip(&records) {
        let v = value(&format!("{case} JSONL line"), line);
        let kind = v["type"].as_str().unwrap_or_default();
        let expected = match record {
            Record::Execution(_) => "execution",
            Record::Correction(_) => "correction",
            Record::Lesson(_) => "lesson",
            Record::ErrorEvent(_) => "error_event",
            Record::Audit(_) => "audit",
            Record::Memory(_) => "memory",
            Record::Episode(_) => "episode",
        };
        assert_eq!(kind, expected, "{case}: {line}");
        assert!(v["record"].is_object(), "{case}: {line}");
    }
    let back = read_jsonl(text.as_bytes()).unwrap_or_else(|e| panic!("{case}: {e}\n{text}"));
    assert_eq!(back, records, "{case}\n{text}");
}

fn at(raw: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(raw)
        .unwrap()
        .with_timezone(&Utc)
}

#[test]
fn every_case_has_the_three_files_as_json_objects() {
    for case in CASES {
        for file in FILES {
            let v = value(&format!("{case}/{file}"), &read_fixture(case, file));
            let list = if file == CORRECTIONS_FILE {
                "corrections"
            } else {
                "entries"
            };
            assert!(v[list].is_array(), "{case}/{file} has no {list:?} list");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The seed's own example
// ---------------------------------------------------------------------------------------------

#[test]
fn seed_fixture_is_the_seed_example_verbatim() {
    let episodic = read_fixture("seed", EPISODIC_FILE);
    for needle in [
        r#""execution_id": "EXEC-20260220124341""#,
        r#""timestamp": "2026-02-20T12:43:41.681444+00:00""#,
        r#""cost_usd": 0.0093,"#,
        r#""latency_ms": 1062,"#,
        r#""model_used": "anthropic/claude-haiku-4-5-20251001""#,
    ] {
        assert!(episodic.contains(needle), "episodic lacks {needle}");
    }
    let corrections = read_fixture("seed", CORRECTIONS_FILE);
    assert!(corrections.contains(r#""correction_id": "CORR-003""#));
    assert!(corrections.contains(r#""timestamp": "2026-02-20T18:28:32.091440+00:00""#));
    let reflexions = read_fixture("seed", REFLEXIONS_FILE);
    assert!(reflexions.contains(r#""reflexion_id": "REFL-003""#));
    assert!(reflexions.contains(r#""created_at": "2026-02-20T18:28:36.503554+00:00""#));
    assert!(reflexions.contains(r#""generated_test_ids": []"#));
}

#[test]
fn seed_example_parses_into_the_expected_records() {
    let bundle = parse_case("seed");
    assert_eq!(
        (
            bundle.executions.len(),
            bundle.corrections.len(),
            bundle.lessons.len()
        ),
        (1, 1, 1)
    );

    let e = &bundle.executions[0];
    assert_eq!(e.id, ExecutionId::parse("EXEC-20260220124341").unwrap());
    assert_eq!(e.skill, SkillPath::parse("hr/resume-screen").unwrap());
    assert_eq!(
        e.timestamp,
        Utc.with_ymd_and_hms(2026, 2, 20, 12, 43, 41).unwrap()
            + chrono::Duration::microseconds(681_444)
    );
    assert_eq!(
        e.input,
        json!({"candidate": "Jane Smith", "role": "Data Engineer"})
    );
    assert_eq!(
        e.output,
        json!({"overall_score": 72, "recommendation": "proceed_to_interview"})
    );
    assert_eq!(e.outcome, Outcome::Accepted);
    assert_eq!(e.cost_usd, Some(0.0093));
    assert_eq!(e.latency_ms, Some(1062.0));
    assert_eq!(
        e.model.as_deref(),
        Some("anthropic/claude-haiku-4-5-20251001")
    );
    assert!(e.extra.is_empty(), "{:?}", e.extra);

    let c = &bundle.corrections[0];
    assert_eq!(c.id, CorrectionId::parse("CORR-003").unwrap());
    assert_eq!(c.execution_id, e.id);
    assert_eq!(c.timestamp, at("2026-02-20T18:28:32.091440+00:00"));
    assert_eq!(c.original_output, e.output);
    assert_eq!(
        c.text,
        "System design experience should be weighted separately from coding skills..."
    );
    assert_eq!(c.author_kind, AuthorKind::Human);

    let l = &bundle.lessons[0];
    assert_eq!(l.id, LessonId::parse("REFL-003").unwrap());
    assert_eq!(l.correction_id.as_ref(), Some(&c.id));
    assert_eq!(
        l.execution_id.as_ref(),
        Some(&e.id),
        "linked through the correction"
    );
    assert_eq!(l.created_at, at("2026-02-20T18:28:36.503554+00:00"));
    assert_eq!(l.confidence, 0.96);
    assert!(
        l.rule
            .starts_with("When screening resumes for engineering roles, ALWAYS")
    );
    assert_eq!(
        l.applies_when,
        "When executing hr/resume-screen for senior engineering roles."
    );
    assert_eq!(
        l.root_cause,
        "Model treated all engineering experience as equivalent."
    );
    assert!(!l.validated_by_test);
    assert!(l.generated_test_ids.is_empty());
    assert_eq!(l.source, LessonSource::Import);
    assert_eq!(l.status, LessonStatus::Approved);
}

#[test]
fn seed_example_renders_with_seed_timestamps_and_integer_latency() {
    let [episodic, corrections, reflexions] = parse_case("seed").render();
    assert!(
        episodic.contains(r#""timestamp": "2026-02-20T12:43:41.681444+00:00""#),
        "{episodic}"
    );
    assert!(episodic.contains(r#""latency_ms": 1062,"#), "{episodic}");
    assert!(episodic.contains(r#""cost_usd": 0.0093,"#), "{episodic}");
    assert!(
        corrections.contains(r#""timestamp": "2026-02-20T18:28:32.091440+00:00""#),
        "{corrections}"
    );
    assert!(
        reflexions.contains(r#""created_at": "2026-02-20T18:28:36.503554+00:00""#),
        "{reflexions}"
    );
}

// ---------------------------------------------------------------------------------------------
// parse → render gives back the input, case by case
// ---------------------------------------------------------------------------------------------

#[test]
fn render_gives_back_seed() {
    assert_render_gives_back_input("seed");
}

#[test]
fn render_gives_back_unicode() {
    assert_render_gives_back_input("unicode");
}

#[test]
fn render_gives_back_empty_fields() {
    assert_render_gives_back_input("empty_fields");
}

#[test]
fn render_gives_back_same_second() {
    assert_render_gives_back_input("same_second");
}

#[test]
fn render_gives_back_float_latency() {
    assert_render_gives_back_input("float_latency");
}

#[test]
fn render_gives_back_empty_files() {
    assert_render_gives_back_input("empty_files");
}

// ---------------------------------------------------------------------------------------------
// What the cases hold, record by record
// ---------------------------------------------------------------------------------------------

#[test]
fn unicode_text_is_kept_exactly() {
    let bundle = parse_case("unicode");
    let e = &bundle.executions[0];
    assert_eq!(e.input["candidate"], "Zoë Ünal-Ørsted");
    assert_eq!(e.input["role"], "数据工程师");
    assert_eq!(e.input["location"], "Zürich 🇨🇭");
    assert_eq!(e.input["arabic"], "مهندس بيانات أول");
    assert!(
        e.output["summary"]
            .as_str()
            .unwrap()
            .contains("👩\u{200d}💻")
    );
    let raw = bundle.executions[1]
        .output
        .as_str()
        .expect("a raw string output");
    assert!(
        raw.contains("優先度=高 🔥")
            && raw.contains('\u{202e}')
            && raw.contains("\tand newline\nend")
    );
    assert!(
        bundle.corrections[0]
            .text
            .starts_with("優先度は「中」です。")
    );
    assert!(bundle.corrections[0].text.contains("التذاكر"));
    let l = &bundle.lessons[0];
    assert!(l.rule.starts_with("عند فرز تذاكر التأخير"));
    assert!(l.mistake.ends_with("🚚"));
    assert!(l.applies_when.starts_with("כאשר"));
    assert_eq!(
        l.generated_test_ids,
        ["test_correction_1_日本語", "test_ünïcödé_2"]
    );
    // The \u escapes of the episodic file and the raw UTF-8 of the others both survive JSONL.
    assert_jsonl_roundtrip("unicode");
}

#[test]
fn empty_fields_are_kept_empty() {
    let bundle = parse_case("empty_fields");
    let e = &bundle.executions[0];
    assert_eq!(e.input, json!({}));
    assert_eq!(e.output, json!({}));
    assert_eq!(e.cost_usd, Some(0.0));
    assert_eq!(e.latency_ms, Some(0.0));
    assert_eq!(e.model.as_deref(), Some(""));
    assert_eq!(bundle.executions[1].output, json!(""));
    assert_eq!(bundle.corrections[0].text, "");
    assert_eq!(bundle.corrections[0].original_output, json!({}));
    let l = &bundle.lessons[0];
    assert_eq!(
        (
            l.rule.as_str(),
            l.mistake.as_str(),
            l.root_cause.as_str(),
            l.applies_when.as_str()
        ),
        ("", "", "", "")
    );
    assert_eq!(l.confidence, 0.0);
    assert!(l.generated_test_ids.is_empty());
}

#[test]
fn same_second_ids_of_both_forms_stay_distinct_and_unknown_fields_survive() {
    let bundle = parse_case("same_second");
    let ids: Vec<&str> = bundle.executions.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "EXEC-20260220124341",
            "EXEC-20260220124341-7K3Q9M2B",
            "EXEC-20260220124341-0000000Z",
            "EXEC-20260220124341-ZZZZZZZZ",
        ]
    );
    let seconds: Vec<String> = bundle
        .executions
        .iter()
        .map(|e| e.timestamp.format("%Y%m%d%H%M%S").to_string())
        .collect();
    assert!(seconds.iter().all(|s| s == "20260220124341"), "{seconds:?}");

    // Unknown fields land in `extra` on every record kind.
    let e0 = &bundle.executions[0].extra;
    assert_eq!(e0["trace_id"], "tr-01HQ3K");
    assert_eq!(e0["tokens"], json!({"input": 1843, "output": 212}));
    assert_eq!(e0["parent_execution_id"], Value::Null);
    assert_eq!(
        bundle.executions[2].extra["x-custom"],
        json!({"nested": {"deep": [1, 2.5, "three", null, false]}})
    );
    assert_eq!(bundle.corrections[0].extra["severity"], 2);
    assert_eq!(bundle.corrections[1].extra["corrected_by"], Value::Null);
    assert_eq!(
        bundle.corrections[1].execution_id.as_str(),
        "EXEC-20260220124341-7K3Q9M2B"
    );
    assert_eq!(bundle.lessons[0].extra["times_applied"], 4);
    assert_eq!(
        bundle.lessons[1].extra["review"],
        json!({"by": "mike", "approved": true})
    );
    // Lessons link to the execution through the correction, whichever ID form each uses.
    assert_eq!(
        bundle.lessons[0].execution_id.as_ref().map(|i| i.as_str()),
        Some("EXEC-20260220124341")
    );
    assert_eq!(
        bundle.lessons[1].execution_id.as_ref().map(|i| i.as_str()),
        Some("EXEC-20260220124341-7K3Q9M2B")
    );

    // The extras are written back as top-level fields, not nested under "extra".
    let rendered = value("episodic", &parse_case("same_second").render()[0]);
    assert_eq!(rendered["entries"][0]["trace_id"], "tr-01HQ3K");
    assert!(rendered["entries"][0].get("extra").is_none());
}

#[test]
fn float_latency_and_cost_keep_their_values() {
    let bundle = parse_case("float_latency");
    let e = &bundle.executions;
    assert_eq!(
        (e[0].latency_ms, e[0].cost_usd),
        (Some(1062.5), Some(0.0093))
    );
    assert_eq!((e[1].latency_ms, e[1].cost_usd), (Some(0.125), Some(1e-5)));
    assert_eq!(
        (e[2].latency_ms, e[2].cost_usd),
        (Some(98765.4321), Some(0.123456789012345))
    );
    let rendered = value("episodic", &bundle.render()[0]);
    assert_eq!(rendered["entries"][0]["latency_ms"], json!(1062.5));
    assert!(rendered["entries"][0]["latency_ms"].is_f64());
}

// ---------------------------------------------------------------------------------------------
// JSONL: into_records → write_jsonl → read_jsonl
// ---------------------------------------------------------------------------------------------

#[test]
fn jsonl_roundtrips_every_case() {
    for case in CASES {
        assert_jsonl_roundtrip(case);
    }
}

#[test]
fn jsonl_roundtrips_error_events_and_audit_entries_too() {
    let when = at("2026-02-20T12:43:41.681444+00:00");
    let mut records = parse_case("same_second").into_records();
    records.push(Record::ErrorEvent(ErrorEvent {
        id: ErrorEventId::generate(when),
        skill: SkillPath::parse("data/gridtool").unwrap(),
        execution_id: Some(ExecutionId::parse("EXEC-20260220124341").unwrap()),
        timestamp: when,
        channel: SignalChannel::HardFailure,
        fingerprint: lore_core::fingerprint("unknown column 'ü' at line 3"),
        tags: vec!["unknown_symbol".into()],
        action: Some("SELECT ü".into()),
        message: "unknown column 'ü' at line 3".into(),
        value: Some(0.5),
    }));
    records.push(Record::Audit(AuditEntry {
        id: AuditId::generate(when),
        subject_kind: RecordKind::Lesson,
        subject: "REFL-003".into(),
        action: AuditAction::Imported,
        from: None,
        to: Some(LessonStatus::Approved),
        actor: "lore".into(),
        at: when,
        reason: "imported from .agentura/".into(),
        evidence: json!({"file": REFLEXIONS_FILE}),
    }));
    records.push(Record::Memory(MemoryEntry {
        id: MemoryId::generate(when),
        skill: SkillPath::parse("data/gridtool").unwrap(),
        category: MemoryCategory::Core,
        block: Some("user".into()),
        text: "Prefers ü-quoted columns.\nSecond line.".into(),
        tags: vec!["pref".into()],
        session: None,
        author: Some("agent-7".into()),
        timestamp: when,
        extra: Default::default(),
    }));
    records.push(Record::Episode(
        Episode::from_json(episode_json(), None).unwrap(),
    ));
    let mut buf = Vec::new();
    write_jsonl(&records, &mut buf).unwrap();
    assert_eq!(read_jsonl(buf.as_slice()).unwrap(), records);
}

fn episode_json() -> Value {
    json!({
        "id": "EPI-1", "skill": "data/gridtool", "session": "s-1",
        "timestamp": "2026-01-01T17:00:00Z", "outcome": "success", "task": "Route memory",
        "decisions": [{"id": "d1", "type": "design", "context": "Choosing routing",
                       "options": ["A", "B"], "chosen": "A", "effects": ["e1"]}],
        "events": [{"id": "e1", "type": "milestone", "content": "Router ü ready"}],
        "metrics": {"duration_minutes": 45.5, "tool_calls": 3},
        "lessons": ["Route early"]
    })
}

#[test]
fn read_jsonl_names_the_line_and_field_of_a_bad_episode() {
    let line = |record: Value| json!({"type": "episode", "record": record}).to_string();
    let good = line(episode_json());
    let mut wrong_choice = episode_json();
    wrong_choice["decisions"][0]["chosen"] = json!("C");
    let mut bad_type = episode_json();
    bad_type["events"][0]["type"] = json!("dance");
    let mut dangling = episode_json();
    dangling["decisions"][0]["effects"] = json!(["e9"]);
    let mut no_id = episode_json();
    no_id.as_object_mut().unwrap().remove("id");
    let mut array_metrics = episode_json();
    array_metrics["metrics"] = json!([1, 2]);
    for (bad, field) in [
        (wrong_choice, "line 3: decisions[0].chosen"),
        (bad_type, "line 3: events[0].type"),
        (dangling, "line 3: decisions[0].effects"),
        (no_id, "line 3: id"),
        (array_metrics, "line 3: metrics"),
        (json!("not an object"), "line 3: episode"),
    ] {
        let text = format!("{good}\n\n{}\n{good}\n", line(bad));
        let (what, why) = invalid(read_jsonl(text.as_bytes()));
        // A sentence that names its field in backquotes stands behind the line alone.
        let (at, name) = field.split_once(": ").unwrap();
        let named =
            what.starts_with(field) || (what.starts_with(at) && why.contains(&format!("`{name}`")));
        assert!(named, "{field}: {what}: {why}");
    }
}

#[test]
fn jsonl_skips_blank_lines() {
    let records = parse_case("seed").into_records();
    let mut buf = Vec::new();
    write_jsonl(&records, &mut buf).unwrap();
    let text = String::from_utf8(buf).unwrap().replace('\n', "\n\n   \n");
    assert_eq!(read_jsonl(text.as_bytes()).unwrap(), records);
}

// ---------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------

/// The `what` and `why` of an [`Error::Invalid`]; panics on any other result.
fn invalid<T: std::fmt::Debug>(result: lore_core::Result<T>) -> (String, String) {
    match result {
        Err(Error::Invalid { what, why }) => (what, why),
        Err(other) => panic!("expected Error::Invalid, got {other:?}"),
        Ok(v) => panic!("expected Error::Invalid, got Ok({v:?})"),
    }
}

/// The seed fixture with one JSON field of one file replaced; `file` indexes `FILES`.
fn seed_with(file: usize, entry: usize, field: &str, new: Value) -> [String; 3] {
    let mut texts = texts("seed");
    let mut v = value(FILES[file], &texts[file]);
    let list = if file == 1 { "corrections" } else { "entries" };
    // A second, valid entry first, so that the broken one is entry 1 when `entry` is 1.
    if entry == 1 {
        let first = v[list][0].clone();
        v[list].as_array_mut().unwrap().insert(0, first);
    }
    v[list][entry][field] = new;
    texts[file] = serde_json::to_string_pretty(&v).unwrap();
    texts
}

/// Asserts that `texts` fail with an Invalid error whose `what` names `file`, `entry` and `field`
/// and whose message contains every one of `why`.
fn assert_refused(texts: &[String; 3], file: &str, entry: usize, field: &str, why: &[&str]) {
    let (what, reason) = invalid(parse_texts(texts));
    let message = format!("invalid {what}: {reason}");
    assert!(what.contains(file), "does not name {file}: {message}");
    assert!(
        what.contains(&format!("entry {entry}")),
        "does not name entry {entry}: {message}"
    );
    assert!(what.contains(field), "does not name {field}: {message}");
    for needle in why {
        assert!(message.contains(needle), "lacks {needle:?}: {message}");
    }
}

#[test]
fn malformed_json_names_the_file() {
    for (i, file) in FILES.into_iter().enumerate() {
        for broken in [
            "{\"entries\": [",
            "not json at all",
            "",
            "{\"entries\": [{\"execution_id\": }]}",
        ] {
            let mut texts = texts("seed");
            texts[i] = broken.to_owned();
            let (what, why) = invalid(parse_texts(&texts));
            assert_eq!(what, file, "{broken:?}: {why}");
            assert!(why.contains("malformed JSON"), "{broken:?}: {why}");
        }
    }
    // Wrong top-level shape and wrong field types are malformed too.
    let mut texts = texts("seed");
    texts[1] = r#"{"entries": []}"#.to_owned();
    let (what, why) = invalid(parse_texts(&texts));
    assert_eq!(what, CORRECTIONS_FILE);
    assert!(why.contains("corrections"), "{why}");
    let texts = seed_with(2, 0, "confidence", json!("high"));
    let (what, _) = invalid(parse_texts(&texts));
    assert_eq!(what, REFLEXIONS_FILE);
}

#[test]
fn unknown_outcome_is_refused_with_the_choices() {
    let texts = seed_with(0, 1, "outcome", json!("maybe"));
    assert_refused(
        &texts,
        EPISODIC_FILE,
        1,
        "outcome",
        &["\"maybe\"", "accepted", "pending_review"],
    );
}

#[test]
fn skill_path_with_dot_dot_is_refused_in_every_file() {
    for (file, name) in FILES.into_iter().enumerate() {
        for bad in ["hr/../secrets", "../hr", "hr/.."] {
            let texts = seed_with(file, 1, "skill", json!(bad));
            assert_refused(&texts, name, 1, "skill path", &[bad, "relative"]);
        }
    }
}

#[test]
fn confidence_outside_zero_to_one_is_refused() {
    for (bad, shown) in [(json!(1.5), "1.5"), (json!(-0.1), "-0.1"), (json!(2), "2")] {
        let texts = seed_with(2, 1, "confidence", bad);
        assert_refused(
            &texts,
            REFLEXIONS_FILE,
            1,
            "confidence",
            &[shown, "0.0 to 1.0"],
        );
    }
}

#[test]
fn bad_timestamps_are_refused_in_every_file() {
    for bad in [
        "yesterday",
        "2026-02-30T12:43:41.681444+00:00",
        "2026-02-20 12:43:41",
        "2026-02-20T25:00:00+00:00",
        "",
    ] {
        for (file, field) in [(0, "timestamp"), (1, "timestamp"), (2, "created_at")] {
            let texts = seed_with(file, 1, field, json!(bad));
            assert_refused(
                &texts,
                FILES[file],
                1,
                field,
                &[&format!("{bad:?}"), "ISO 8601"],
            );
        }
    }
}

#[test]
fn ids_with_a_space_are_refused() {
    for (file, field, kind) in [
        (0, "execution_id", "execution ID"),
        (1, "correction_id", "correction ID"),
        (1, "execution_id", "execution ID"),
        (2, "reflexion_id", "lesson ID"),
        (2, "correction_id", "correction ID"),
    ] {
        let texts = seed_with(file, 1, field, json!("EXEC 20260220124341"));
        assert_refused(
            &texts,
            FILES[file],
            1,
            kind,
            &["\"EXEC 20260220124341\"", "' '"],
        );
    }
}

#[test]
fn read_jsonl_names_the_line_of_a_bad_line() {
    let records = parse_case("seed").into_records();
    let mut buf = Vec::new();
    write_jsonl(&records, &mut buf).unwrap();
    let good = String::from_utf8(buf).unwrap();
    let good_lines: Vec<&str> = good.lines().collect();
    assert_eq!(good_lines.len(), 3);

    let bad_id = good_lines[0].replace("EXEC-20260220124341", "EXEC 20260220124341");
    let bad_outcome = good_lines[0].replace("\"accepted\"", "\"maybe\"");
    for (bad, needle) in [
        ("{not json", ""),
        (r#"{"type": "wizard", "record": {}}"#, "wizard"),
        (
            r#"{"type": "execution", "record": {"id": "EXEC-1"}}"#,
            "is missing; it is required",
        ),
        (bad_id.as_str(), "EXEC 20260220124341"),
        (bad_outcome.as_str(), "maybe"),
    ] {
        // Line 1 good, line 2 blank, line 3 good, line 4 bad, line 5 good.
        let text = format!(
            "{}\n\n{}\n{bad}\n{}\n",
            good_lines[0], good_lines[1], good_lines[2]
        );
        let (what, why) = invalid(read_jsonl(text.as_bytes()));
        assert_eq!(what, "line 4", "{bad}: {why}");
        assert!(why.contains(needle), "{bad}: {why}");
    }
}

// ---------------------------------------------------------------------------------------------
// Timestamp and number forms a Python writer produces
// ---------------------------------------------------------------------------------------------

fn one_execution(timestamp: &str, cost: Value, latency: Value) -> String {
    serde_json::to_string_pretty(&json!({"entries": [{
        "execution_id": "EXEC-20260220124341",
        "skill": "hr/resume-screen",
        "timestamp": timestamp,
        "input_summary": {},
        "output_summary": {},
        "outcome": "accepted",
        "cost_usd": cost,
        "latency_ms": latency,
        "model_used": "m",
    }]}))
    .unwrap()
}

fn rendered_execution(text: &str) -> Value {
    let bundle = AgenturaBundle::parse(Some(text), None, None).unwrap();
    value("rendered", &bundle.render()[0])["entries"][0].clone()
}

/// Panics listing every mismatch, so one run reports all of them.
fn assert_no_mismatches(what: &str, mismatches: &[String]) {
    assert!(
        mismatches.is_empty(),
        "{what}:\n  {}",
        mismatches.join("\n  ")
    );
}

/// Python's `datetime.isoformat()` writes six fraction digits whenever the microseconds are not
/// zero, and none when they are; the seed's files are written that way.
#[test]
fn timestamps_keep_pythons_isoformat() {
    let mut mismatches = Vec::new();
    for ts in [
        "2026-02-20T12:43:41+00:00",
        "2026-02-20T12:43:41.000001+00:00",
        "2026-02-20T12:43:41.681444+00:00",
        "2026-02-20T12:43:41.091440+00:00",
        "2026-02-20T12:43:41.250000+00:00",
        "2026-02-20T12:43:41.123000+00:00",
        "2026-02-20T12:43:41.100000+00:00",
    ] {
        let out = rendered_execution(&one_execution(ts, json!(0.0093), json!(1062)));
        if out["timestamp"] != ts {
            mismatches.push(format!("{ts} came back as {}", out["timestamp"]));
        }
    }
    assert_no_mismatches("timestamps rewritten", &mismatches);
}

/// Other offsets and `Z` are read as the same instant and written back in UTC (`+00:00`).
#[test]
fn other_offsets_come_back_as_the_same_instant_in_utc() {
    for (input, output) in [
        (
            "2026-02-20T14:43:41.681444+02:00",
            "2026-02-20T12:43:41.681444+00:00",
        ),
        (
            "2026-02-20T12:43:41.681444Z",
            "2026-02-20T12:43:41.681444+00:00",
        ),
        (
            "2026-02-20T07:13:41.681444-05:30",
            "2026-02-20T12:43:41.681444+00:00",
        ),
    ] {
        let out = rendered_execution(&one_execution(input, json!(0.0093), json!(1062)));
        assert_eq!(out["timestamp"], output, "{input}");
    }
}

/// JSON integers and floats are different values; a lossless round trip keeps each as written.
#[test]
// Numbers come back with the same value; their form is normalized (an integral latency is written
// as an integer, as the seed does; cost and confidence as floats), since Lore stores them as f64.
fn number_values_are_kept() {
    let mut mismatches = Vec::new();
    for (cost, latency) in [
        (json!(0.0093), json!(1062)),
        (json!(0.0093), json!(1062.5)),
        (json!(0.0), json!(0)),
        (json!(0), json!(1062)),
        (json!(1), json!(1062)),
        (json!(0.0093), json!(1062.0)),
    ] {
        let text = one_execution(
            "2026-02-20T12:43:41.681444+00:00",
            cost.clone(),
            latency.clone(),
        );
        let out = rendered_execution(&text);
        for (field, before) in [("cost_usd", &cost), ("latency_ms", &latency)] {
            if out[field].as_f64() != before.as_f64() {
                mismatches.push(format!("{field} {before} came back as {}", out[field]));
            }
        }
    }
    for confidence in [json!(1), json!(0), json!(0.96), json!(1.0)] {
        let texts = seed_with(2, 0, "confidence", confidence.clone());
        let bundle = parse_texts(&texts).unwrap();
        let out = value("rendered", &bundle.render()[2])["entries"][0]["confidence"].clone();
        if out.as_f64() != confidence.as_f64() {
            mismatches.push(format!("confidence {confidence} came back as {out}"));
        }
    }
    assert_no_mismatches("numbers rewritten", &mismatches);
}

/// Python writes `None` as `null`; an optional field that was `null` should stay `null`.
#[test]
fn null_optional_fields_are_kept() {
    let mut mismatches = Vec::new();
    let text = one_execution(
        "2026-02-20T12:43:41.681444+00:00",
        json!(0.0093),
        json!(1062),
    );
    for field in ["cost_usd", "latency_ms", "model_used"] {
        let mut input = value("input", &text);
        input["entries"][0][field] = Value::Null;
        let bundle = AgenturaBundle::parse(Some(&input.to_string()), None, None).unwrap();
        let out = value("rendered", &bundle.render()[0]);
        if let Some(diff) = first_difference("", &input, &out) {
            mismatches.push(format!("{EPISODIC_FILE} {diff}"));
        }
    }
    let texts = seed_with(2, 0, "correction_id", Value::Null);
    let bundle = parse_texts(&texts).unwrap();
    let out = value("rendered", &bundle.render()[2]);
    if let Some(diff) = first_difference("", &value("input", &texts[2]), &out) {
        mismatches.push(format!("{REFLEXIONS_FILE} {diff}"));
    }
    assert_no_mismatches("null fields dropped", &mismatches);
}
