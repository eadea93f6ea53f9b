//! Fresh stores and private records for each conformance test, and the helpers they share.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Deref;
use std::path::Path;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use serde_json::{Map, json};

use lore_core::Error;
use lore_core::id::{AuditId, CorrectionId, ErrorEventId, ExecutionId, LessonId, MemoryId};
use lore_core::model::{
    AuditAction, AuditEntry, AuthorKind, Correction, ErrorEvent, Execution, Lesson, LessonLink,
    LessonSource, LessonStatus, LinkKind, MemoryCategory, MemoryEntry, Outcome, RecordKind,
    SignalChannel, Tiers, UtilityStats,
};
use lore_core::ports::store::{
    LessonVector, ListFilter, OnDuplicate, Record, SearchHit, Store, WriteReport,
};
use lore_core::scope::{Scope, SkillPath};
use lore_recall::EmbedderId;

/// A store in a temporary folder that is deleted when the guard drops.
///
/// It dereferences to the store, so `TempStore::new(…)` is a ready argument for
/// [`conformance_tests!`](crate::conformance_tests).
pub struct TempStore<S> {
    // Declared first so that it is dropped, and its files closed, before the folder goes.
    store: S,
    dir: tempfile::TempDir,
}

impl<S> TempStore<S> {
    /// Opens a store with `open`, given a fresh, empty temporary folder.
    ///
    /// # Panics
    /// When the folder cannot be created or `open` fails: this is test support.
    pub fn new<E: fmt::Debug>(open: impl FnOnce(&Path) -> Result<S, E>) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = open(dir.path()).expect("the store opens in a temporary folder");
        Self { store, dir }
    }

    /// The temporary folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl<S> Deref for TempStore<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.store
    }
}

/// Records and names private to one test: two domains, three skills and a search word.
pub(crate) struct Fixture {
    pub(crate) tag: String,
    pub(crate) hr: SkillPath,
    pub(crate) hr_other: SkillPath,
    pub(crate) finance: SkillPath,
    pub(crate) word: String,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let tag = format!("{:08x}", rand::random::<u32>());
        let skill = |raw: String| SkillPath::parse(&raw).expect("a valid skill path");
        Self {
            hr: skill(format!("hr-{tag}/resume-screen")),
            hr_other: skill(format!("hr-{tag}/interview")),
            finance: skill(format!("finance-{tag}/invoice-audit")),
            word: format!("w{tag}"),
            tag,
        }
    }

    /// A moment `minutes` after a fixed base, with nanoseconds, to catch truncated times.
    pub(crate) fn at(&self, minutes: i64) -> DateTime<Utc> {
        let base = Utc.with_ymd_and_hms(2026, 2, 20, 12, 43, 41).unwrap()
            + TimeDelta::nanoseconds(123_456_789);
        base + TimeDelta::minutes(minutes)
    }

    pub(crate) fn hr_scope(&self) -> Scope {
        Scope::domains([self.hr.domain()])
    }

    pub(crate) fn both_scope(&self) -> Scope {
        Scope::domains([self.hr.domain(), self.finance.domain()])
    }

    /// A filter for everything of this fixture's `skill`.
    pub(crate) fn of(&self, skill: &SkillPath) -> ListFilter {
        ListFilter::skill(&Scope::unrestricted(), skill)
    }

    pub(crate) fn execution(&self, skill: &SkillPath, minutes: i64) -> Execution {
        let at = self.at(minutes);
        let mut extra = Map::new();
        extra.insert("trace_id".into(), json!("abc-123"));
        extra.insert("nested".into(), json!({"k": [1, 2.5, null, "ß"]}));
        Execution {
            id: ExecutionId::generate(at),
            skill: skill.clone(),
            timestamp: at,
            input: json!({"candidate": "Zoë Ünal", "role": "数据工程师", "years": 7}),
            output: json!({"overall_score": 72, "notes": ["strong coder", "🚀"]}),
            outcome: Outcome::Accepted,
            cost_usd: Some(0.009_312_345_678_901_2),
            latency_ms: Some(1062.5),
            model: Some("anthropic/claude-haiku-4-5".into()),
            agent: Some("screener-1".into()),
            session: Some(format!("s-{}", self.tag)),
            lessons_shown: vec![LessonId::generate(at)],
            extra,
        }
    }

    pub(crate) fn correction(&self, execution: &Execution, minutes: i64) -> Correction {
        let at = self.at(minutes);
        let mut extra = Map::new();
        extra.insert("ticket".into(), json!("HR-42"));
        Correction {
            id: CorrectionId::generate(at),
            execution_id: execution.id.clone(),
            skill: execution.skill.clone(),
            timestamp: at,
            original_output: execution.output.clone(),
            text: "Score below 60 without system design — «обязательно».".into(),
            author_kind: AuthorKind::Human,
            author: Some("mike".into()),
            extra,
        }
    }

    pub(crate) fn lesson(&self, skill: &SkillPath, status: LessonStatus, minutes: i64) -> Lesson {
        let at = self.at(minutes);
        let id = LessonId::generate(at);
        let mut extra = Map::new();
        extra.insert(
            "origin".into(),
            json!({"tool": "agentura", "ñ": [1, 2.5, null]}),
        );
        extra.insert("imported_from".into(), json!("seed-000"));
        Lesson {
            generated_test_ids: vec![format!("TEST-{id}")],
            merged_from: vec![CorrectionId::generate(at)],
            id,
            skill: skill.clone(),
            agent: Some("screener-1".into()),
            correction_id: Some(CorrectionId::generate(at)),
            execution_id: Some(ExecutionId::generate(at)),
            mistake: "Scored a candidate too high: 72 instead of 55.".into(),
            root_cause: "Mis-weighted criteria".into(),
            rule: "Always weigh system design separately; coding ≠ design.".into(),
            applies_when: "Senior backend roles, 数据工程师 included.".into(),
            triggers: vec!["score too high".into()],
            tags: vec!["scoring".into(), "hiring".into()],
            tiers: Tiers {
                summary: "Weigh system design separately".into(),
                condition: "senior roles".into(),
                action: "weigh separately".into(),
                rationale: "coding ≠ design".into(),
                steps: vec!["check design".into(), "cap the score".into()],
            },
            confidence: 0.876_543_210_987_654_3,
            source: LessonSource::Correction,
            status,
            utility: UtilityStats {
                activations: 3,
                helped: 2,
                hurt: 1,
                baseline_runs: 5,
                utility: Some(1.0 / 3.0),
                last_applied_at: Some(at),
                bounds: Some([-0.125, 0.5]),
                overall_bounds: Some([-0.25, 0.375]),
                stratum_bounds: vec![lore_core::model::StratumBounds {
                    task_type: "design roles senior".into(),
                    runs: 3,
                    baseline_runs: 5,
                    bounds: [-0.125, 0.5],
                    overall_bounds: [-0.5, 0.25],
                }],
            },
            links: vec![LessonLink {
                kind: LinkKind::Conflicts,
                target: LessonId::parse("REFL-001").unwrap(),
            }],
            validated_by_test: true,
            created_at: at,
            updated_at: at,
            extra,
        }
    }

    /// A lesson whose rule holds this fixture's search word.
    pub(crate) fn findable_lesson(
        &self,
        skill: &SkillPath,
        status: LessonStatus,
        minutes: i64,
    ) -> Lesson {
        let mut lesson = self.lesson(skill, status, minutes);
        lesson.rule = format!("Always check the {} field before scoring.", self.word);
        lesson
    }

    pub(crate) fn error_event(&self, skill: &SkillPath, minutes: i64) -> ErrorEvent {
        let at = self.at(minutes);
        ErrorEvent {
            id: ErrorEventId::generate(at),
            skill: skill.clone(),
            execution_id: Some(ExecutionId::generate(at)),
            timestamp: at,
            channel: SignalChannel::HardFailure,
            fingerprint: "unknown column '<str>' at line <n>".into(),
            tags: vec!["unknown_symbol".into()],
            action: Some("SELECT foo".into()),
            message: "unknown column 'foo' at line 3 — «ошибка»".into(),
            value: Some(0.25),
        }
    }

    pub(crate) fn audit(&self, kind: RecordKind, subject: &str, minutes: i64) -> AuditEntry {
        let at = self.at(minutes);
        AuditEntry {
            id: AuditId::generate(at),
            subject_kind: kind,
            subject: subject.to_owned(),
            action: AuditAction::Transition,
            from: Some(LessonStatus::NeedsReview),
            to: Some(LessonStatus::Approved),
            actor: "mike".into(),
            at,
            reason: "looks right — ✓".into(),
            evidence: json!({"execution": "EXEC-1", "score": 0.5}),
        }
    }
}

impl Fixture {
    pub(crate) fn memory(
        &self,
        skill: &SkillPath,
        category: MemoryCategory,
        text: &str,
        minutes: i64,
    ) -> MemoryEntry {
        let at = self.at(minutes);
        MemoryEntry {
            id: MemoryId::generate(at),
            skill: skill.clone(),
            category,
            block: (category == MemoryCategory::Core).then(|| "user".to_owned()),
            text: text.to_owned(),
            tags: vec!["pref".into()],
            session: (category == MemoryCategory::Recall).then(|| format!("s-{}", self.tag)),
            author: Some("agent-7".into()),
            timestamp: at,
            extra: Map::new(),
        }
    }
}

pub(crate) fn write(store: &dyn Store, records: Vec<Record>) -> WriteReport {
    store
        .write(&records, OnDuplicate::Fail)
        .expect("the store accepts a batch of new records")
}

pub(crate) fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| id(i).to_owned()).collect()
}

pub(crate) fn search(
    store: &dyn Store,
    query: &str,
    filter: &ListFilter,
    limit: usize,
) -> Vec<SearchHit> {
    store
        .search(query, filter, limit)
        .unwrap_or_else(|e| panic!("search for {query:?} failed: {e}"))
}

pub(crate) fn hit_ids(hits: &[SearchHit]) -> BTreeSet<String> {
    hits.iter().map(|h| h.id.clone()).collect()
}

pub(crate) fn expect_conflict<T: fmt::Debug>(result: lore_core::Result<T>, id: &str) {
    match result {
        Err(Error::Conflict(message)) => {
            assert!(
                message.contains(id),
                "the conflict should name {id}: {message}"
            );
        }
        other => panic!("expected a conflict about {id}, got {other:?}"),
    }
}

pub(crate) fn changed_ids(store: &dyn Store, scope: &Scope, since: u64) -> (u64, Vec<String>) {
    let changes = store.lessons_changed(scope, since).unwrap();
    (changes.revision, ids(&changes.lessons, |l| l.id.as_str()))
}

/// Archives `lesson` at minute `minutes` through `update_lesson`, returning it as stored.
pub(crate) fn retire(store: &dyn Store, f: &Fixture, lesson: &Lesson, minutes: i64) -> Lesson {
    let mut retired = lesson.clone();
    retired.status = LessonStatus::Archived;
    retired.updated_at = f.at(minutes);
    let audit = f.audit(RecordKind::Lesson, lesson.id.as_str(), minutes);
    store
        .update_lesson(&retired, lesson.updated_at, &audit)
        .unwrap();
    retired
}

pub(crate) fn vector_of(id: &LessonId, dim: usize, seed: f32) -> LessonVector {
    LessonVector {
        lesson: id.clone(),
        embedder: EmbedderId {
            name: "test-embedder-v1+corpus-00ff".into(),
            dim,
        },
        source_hash: u64::MAX - 7,
        vector: (0..dim).map(|i| seed + i as f32 * 0.1 - 1e-7).collect(),
    }
}

pub(crate) fn memory_ids(entries: &[MemoryEntry]) -> Vec<String> {
    ids(entries, |m| m.id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use lore_core::model::{Lesson, LessonStatus};

    #[test]
    fn fixtures_are_distinct_and_valid() {
        let (a, b) = (Fixture::new(), Fixture::new());
        assert_ne!(a.hr, b.hr);
        assert_ne!(a.word, b.word);
        assert_eq!(a.at(1) - a.at(0), TimeDelta::minutes(1));
        let lesson = a.lesson(&a.hr, LessonStatus::Approved, 0);
        let text = serde_json::to_string(&lesson).unwrap();
        assert_eq!(serde_json::from_str::<Lesson>(&text).unwrap(), lesson);
    }
}
