//! Rebuilding the files derived from the store: guardrails and regression cases.
//!
//! The correction pipeline commits to the store first and writes `GUARDRAILS.md` and the
//! skill's test files after, because the store is the source of truth. A process killed between
//! the two leaves a live lesson without its guardrail bullet or its regression case.
//! [`Engine::repair_files`] writes what is missing, found by ID (`**REFL-…**` in the guardrails,
//! the case ID in `tests/lore.jsonl` and `lore_test_id` in `tests/promptfoo.yaml`), so it is
//! idempotent: a second run finds everything and writes nothing. `lore maintain` runs it.
//!
//! What is due is what the pipeline writes: for every live lesson (needs review, trial,
//! approved) that the pipeline created from a correction (its audit trail says `created`, so an
//! imported lesson gets nothing it did not bring), a guardrail bullet, and a regression case for
//! its correction and each correction merged into it. A skill without a folder gets nothing, as
//! at correction time.

use serde::Serialize;

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{AuditAction, LessonStatus};
use lore_core::ports::store::ListFilter;
use lore_workspace::case_files::CaseFiles;
use lore_workspace::cases::test_id;

/// What a repair wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileRepair {
    /// Lessons whose guardrail bullet was missing and was appended.
    pub guardrails: Vec<LessonId>,
    /// Regression cases that were missing from a test file and were appended.
    pub tests: Vec<String>,
}

impl FileRepair {
    /// Whether nothing was missing.
    pub fn is_empty(&self) -> bool {
        self.guardrails.is_empty() && self.tests.is_empty()
    }
}

impl Engine {
    /// Writes the guardrail bullets and regression cases that live lessons should have and the
    /// skill folders lack; idempotent. Without a skills folder there is nothing to repair.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be read or written; store failures.
    pub fn repair_files(&self) -> Result<FileRepair> {
        let mut report = FileRepair::default();
        let Some(skills) = &self.skills else {
            return Ok(report);
        };
        let live = [
            LessonStatus::NeedsReview,
            LessonStatus::Trial,
            LessonStatus::Approved,
        ];
        let lessons = self.store.lessons(&ListFilter {
            statuses: Some(live.into()),
            ..self.filter()
        })?;
        for lesson in lessons {
            let dir = skills.skill_dir(&lesson.skill);
            let Some(correction_id) = &lesson.correction_id else {
                continue;
            };
            if !dir.is_dir() {
                continue;
            }
            let created_here = self
                .store
                .audit(Some(lesson.id.as_str()))?
                .iter()
                .any(|a| a.action == AuditAction::Created);
            if !created_here {
                continue;
            }
            let path = dir.join("GUARDRAILS.md");
            let guardrails = skills.guardrails(&lesson.skill)?;
            if !guardrails.contains(&format!("**{}**", lesson.id))
                && let Some(correction) = self.store.correction(correction_id)?
            {
                if let (None, Some(why)) = self.write_guardrail(&lesson, &correction) {
                    return Err(Error::io(&path, std::io::Error::other(why)));
                }
                report.guardrails.push(lesson.id.clone());
            }
            for id in std::iter::once(correction_id).chain(&lesson.merged_from) {
                let case = test_id(id);
                let files = match self.case_written(&lesson.skill, &case)? {
                    (true, true) => continue,
                    (false, false) => CaseFiles::Both,
                    (false, true) => CaseFiles::Native,
                    (true, false) => CaseFiles::Promptfoo,
                };
                let Some(correction) = self.store.correction(id)? else {
                    continue;
                };
                match self.write_case(&correction, &lesson.id, files) {
                    Ok(_) => report.tests.push(case),
                    // The corrected execution is gone: there is no input to replay.
                    Err(Error::NotFound { .. }) => {}
                    Err(other) => return Err(other),
                }
            }
        }
        if !report.is_empty() {
            tracing::info!(
                guardrails = report.guardrails.len(),
                tests = report.tests.len(),
                "wrote files a correction left unwritten"
            );
        }
        Ok(report)
    }
}
