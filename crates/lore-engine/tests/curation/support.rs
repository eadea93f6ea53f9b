//! A Lore project for curation tests: a SQLite store in a temporary folder, a skills folder,
//! and a clock the test moves by hand.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use lore_core::id::LessonId;
use lore_core::model::{
    AuditAction, AuthorKind, CurationMode, Lesson, LessonSource, LessonStatus, Outcome, Tiers,
    UtilityStats,
};
use lore_core::ports::clock::Clock;
use lore_core::ports::store::Record;
use lore_core::{SkillPath, Store};
use lore_engine::{CorrectionOutcome, HumanCorrections, NewCorrection, NewExecution};
use lore_engine::{Engine, EngineConfig};
use lore_sqlite::{OpenMode, SqliteStore};
use lore_workspace::skills::SkillLibrary;
use serde_json::{Map, json};

/// A clock that moves only when told.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    pub fn advance(&self, by: TimeDelta) {
        *self.0.lock().unwrap() += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

pub const SKILL: &str = "support/summarize-ticket";

pub struct Project {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub clock: Arc<ManualClock>,
    pub engine: Engine,
}

impl Project {
    pub fn new(curation: CurationMode) -> Self {
        Self::with(EngineConfig {
            curation,
            ..EngineConfig::default()
        })
    }

    pub fn with(config: EngineConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store =
            Arc::new(SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create).unwrap());
        let clock = Arc::new(ManualClock(Mutex::new(
            Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap(),
        )));
        let skills = dir.path().join("skills");
        let engine = Engine::new(store.clone(), config)
            .with_clock(clock.clone())
            .with_skills(SkillLibrary::new(&skills, dir.path()));
        let p = Self {
            dir,
            store,
            clock,
            engine,
        };
        p.skill_folder(SKILL);
        p
    }

    pub fn review_mode(human: HumanCorrections) -> Self {
        Self::with(EngineConfig {
            curation: CurationMode::Review,
            human_corrections: human,
            ..EngineConfig::default()
        })
    }

    pub fn skill_folder(&self, skill: &str) {
        let dir = self.dir.path().join("skills").join(skill);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), "# Summarize a ticket\n").unwrap();
    }

    /// Records an execution of `skill` and corrects it with `text`.
    pub fn correct_as(&self, skill: &str, text: &str, author: AuthorKind) -> CorrectionOutcome {
        let skill = SkillPath::parse(skill).unwrap();
        let execution = self
            .engine
            .record_execution(NewExecution {
                skill: skill.clone(),
                input: json!({"ticket": "Checkout fails"}),
                output: json!({"priority": "normal"}),
                outcome: Outcome::Rejected,
                cost_usd: None,
                latency_ms: None,
                model: None,
                session: None,
                lessons_shown: Vec::new(),
            })
            .unwrap();
        self.engine
            .correct(NewCorrection {
                skill,
                execution_id: execution.id,
                text: text.to_owned(),
                author_kind: author,
                author: Some("ana".into()),
            })
            .unwrap()
    }

    pub fn correct(&self, text: &str) -> CorrectionOutcome {
        self.correct_as(SKILL, text, AuthorKind::Human)
    }

    /// Stores a lesson directly in `status`, as an import would.
    pub fn seed(&self, rule: &str, status: LessonStatus) -> Lesson {
        let lesson = lesson(SKILL, rule, status, self.clock.now());
        self.engine
            .import_records(&[Record::Lesson(lesson.clone())])
            .unwrap();
        lesson
    }

    pub fn clock_now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub fn status(&self, id: &LessonId) -> LessonStatus {
        self.engine.lesson(id).unwrap().status
    }

    /// The lessons the prompt of `skill` carries.
    pub fn prompt_ids(&self, skill: &str) -> Vec<LessonId> {
        self.engine
            .prompt(&SkillPath::parse(skill).unwrap())
            .unwrap()
            .lessons
    }

    /// Checks that the audit trail of every lesson explains its status: the chain of
    /// transitions starts at the status it was created or imported with and ends at the
    /// current one, each entry starting where the previous one ended.
    pub fn assert_audit_explains_every_status(&self) {
        for lesson in self.engine.lessons(None, None).unwrap() {
            let trail = self.store.audit(Some(lesson.id.as_str())).unwrap();
            let mut status: Option<LessonStatus> = None;
            for entry in &trail {
                match entry.action {
                    AuditAction::Created | AuditAction::Imported => status = entry.to,
                    AuditAction::Transition | AuditAction::Purged => {
                        if status.is_some() {
                            assert_eq!(entry.from, status, "{}: {trail:#?}", lesson.id);
                        }
                        status = entry.to;
                    }
                    _ => {}
                }
            }
            if let Some(status) = status {
                assert_eq!(status, lesson.status, "{}: {trail:#?}", lesson.id);
            }
        }
    }
}

/// A plain lesson of `skill`.
pub fn lesson(skill: &str, rule: &str, status: LessonStatus, at: DateTime<Utc>) -> Lesson {
    Lesson {
        id: LessonId::generate(at),
        skill: SkillPath::parse(skill).unwrap(),
        agent: None,
        correction_id: None,
        execution_id: None,
        mistake: "The summary missed it.".into(),
        root_cause: "guidance".into(),
        rule: rule.into(),
        applies_when: format!("When executing {skill}."),
        triggers: Vec::new(),
        tags: Vec::new(),
        tiers: Tiers {
            summary: rule.into(),
            ..Tiers::default()
        },
        confidence: 0.8,
        source: LessonSource::Import,
        status,
        utility: UtilityStats::default(),
        links: Vec::new(),
        validated_by_test: false,
        generated_test_ids: Vec::new(),
        merged_from: Vec::new(),
        created_at: at,
        updated_at: at,
        extra: Map::new(),
    }
}
