//! The reliability suite's bounded fuzzing of the parsers (docs/reliability.md):
//! error fingerprints, skill paths, markdown episode extraction, the seed format and JSONL
//! import. Inputs are both arbitrary and made by mutating valid documents (bytes flipped, cut,
//! spliced), which reaches deeper than noise. The only property is the one an attacker cares
//! about: a parser answers `Ok` or `Err`, it never panics, and what it accepts holds its
//! invariants.
//!
//! Bounded: `LORE_RELIABILITY=long` runs 20 000 cases per target, CI's short form 200. A case
//! that fails is shrunk and its seed kept in `fuzz.proptest-regressions` (proptest replays it
//! first on every later run); a crash found is also pinned below as a plain test.

use lore_core::SkillPath;
use lore_core::fingerprint;
use lore_engine::extract::from_markdown;
use lore_engine::interchange::{AgenturaBundle, read_jsonl};
use proptest::prelude::*;

fn cases() -> u32 {
    if std::env::var("LORE_RELIABILITY").as_deref() == Ok("long") {
        20_000
    } else {
        200
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        max_shrink_iters: 2_000,
        ..ProptestConfig::default()
    }
}

const LOG: &str = "# Session 2026-01-01-session-126
Skill: dev/router
Agent: claude
Date: 2026-01-01T17:00:00Z
Outcome: success
Task: Implement the MemoryRouter module

## Decisions
### d001 [design] Choosing the routing strategy
- Options: Forgetful-first | Serena-first | Parallel
- Chosen: Serena-first
- Rationale: Lower latency, no network dependency
- Outcome: success
- Effects: e001

## Events
- e001 [tool_call] Created MemoryRouter.psm1 (caused by: d001; leads to: e002)
- e002 [error] Pre-commit failed on unrelated files

## Metrics
- duration_minutes: 45
- tool_calls: 87

## Lessons
- Pre-commit hooks check all markdown, not just staged files
";

/// The seed files of the real fixture, as the mutations' starting points.
const SEED: &str = include_str!("fixtures/agentura/seed/episodic_memory.json");
const CORRECTIONS: &str = include_str!("fixtures/agentura/seed/corrections.json");
const REFLEXIONS: &str = include_str!("fixtures/agentura/seed/reflexion_entries.json");

const JSONL: &str = r#"{"type":"execution","record":{"id":"EXEC-20261124105352-MDRY6XJ7","skill":"support/summarize-ticket","timestamp":"2026-11-24T10:53:52.115720971Z","input":{"a":1},"output":{},"outcome":"pending_review"}}
"#;

/// `text` changed by a few random edits: a byte replaced, a range cut, a range repeated.
fn mutated(text: &'static str) -> impl Strategy<Value = String> {
    let len = text.len();
    prop::collection::vec((0..3u8, 0..len.max(1), 0..len.max(1), any::<u8>()), 1..6).prop_map(
        move |edits| {
            let mut bytes = text.as_bytes().to_vec();
            for (kind, a, b, byte) in edits {
                if bytes.is_empty() {
                    break;
                }
                let (a, b) = (a % bytes.len(), b % bytes.len());
                let (lo, hi) = (a.min(b), a.max(b));
                match kind {
                    0 => bytes[a] = byte,
                    1 => {
                        bytes.drain(lo..hi);
                    }
                    _ => {
                        let piece = bytes[lo..hi].to_vec();
                        bytes.splice(lo..lo, piece);
                    }
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        },
    )
}

/// Markdown-ish lines in the log format's vocabulary, shuffled into a log.
fn log_like() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("# Session s1".to_owned()),
        Just("## Decisions".to_owned()),
        Just("## Events".to_owned()),
        Just("## Metrics".to_owned()),
        Just("## Lessons".to_owned()),
        "### d[0-9]{1,3} \\[(design|test|oops)\\] [a-z ]{0,20}",
        "- (Options|Chosen|Rationale|Outcome|Effects): [a-zA-Z0-9|,; ]{0,30}",
        "- e[0-9]{1,3} \\[(error|tool_call|x)\\] [a-z ]{0,10}( \\(caused by: [de][0-9]; leads to: [de][0-9]\\))?",
        "- [a-z_]{1,12}: -?[0-9]{1,25}",
        "(Skill|Date|Outcome|Task|Agent): .{0,30}",
        ".{0,40}",
    ];
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fingerprints_never_panic_and_are_stable(error in ".{0,400}") {
        let once = fingerprint(&error);
        prop_assert_eq!(fingerprint(&error), once);
    }

    #[test]
    fn skill_paths_accepted_are_two_safe_lowercase_parts(raw in "[a-zA-Z0-9./\\\\ _%-]{0,40}") {
        if let Ok(path) = SkillPath::parse(&raw) {
            let text = path.to_string();
            let parts: Vec<&str> = text.split('/').collect();
            prop_assert_eq!(parts.len(), 2, "{}", text);
            for part in parts {
                prop_assert!(!part.is_empty() && part != "." && part != "..", "{}", text);
                prop_assert!(!part.chars().any(|c| c.is_uppercase() || c == '\\'), "{}", text);
            }
        }
    }

    #[test]
    fn markdown_extraction_never_panics(log in prop_oneof![log_like(), mutated(LOG), ".{0,300}"]) {
        let _ = from_markdown(&log);
    }

    #[test]
    fn seed_files_never_panic(
        episodic in prop_oneof![mutated(SEED), ".{0,200}"],
        corrections in prop_oneof![mutated(CORRECTIONS), ".{0,200}"],
        reflexions in prop_oneof![mutated(REFLEXIONS), ".{0,200}"],
    ) {
        let _ = AgenturaBundle::parse(Some(&episodic), Some(&corrections), Some(&reflexions));
    }

    #[test]
    fn jsonl_import_never_panics(text in prop_oneof![mutated(JSONL), ".{0,300}"]) {
        let _ = read_jsonl(text.as_bytes());
    }
}

#[test]
fn the_valid_documents_the_mutations_start_from_parse() {
    from_markdown(LOG).unwrap();
    AgenturaBundle::parse(Some(SEED), Some(CORRECTIONS), Some(REFLEXIONS)).unwrap();
    assert_eq!(read_jsonl(JSONL.as_bytes()).unwrap().len(), 1);
}
