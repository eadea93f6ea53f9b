//! Imports and exports: seed 000's `.agentura/` files and Lore's JSONL.

use serde::Serialize;

use super::Engine;
use crate::error::Result;
use crate::interchange::{AgenturaBundle, Renamed};
use crate::model::{AuditAction, RecordKind};
use crate::store::{ListFilter, Record, WriteReport};

/// What an import did, per kind.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportReport {
    /// Executions read.
    pub executions: usize,
    /// Corrections read.
    pub corrections: usize,
    /// Lessons read.
    pub lessons: usize,
    /// Episodes read.
    pub episodes: usize,
    /// Other records read (error events, audit entries).
    pub other: usize,
    /// Newly stored and skipped-as-identical counts over all of them.
    pub write: WriteReport,
    /// Executions stored under a new ID because another execution of the files held theirs
    /// (seed 000's IDs have one-second resolution).
    pub renamed: Vec<Renamed>,
}

impl ImportReport {
    fn count(records: &[Record]) -> Self {
        let mut report = Self::default();
        for r in records {
            match r {
                Record::Execution(_) => report.executions += 1,
                Record::Correction(_) => report.corrections += 1,
                Record::Lesson(_) => report.lessons += 1,
                Record::Episode(_) => report.episodes += 1,
                _ => report.other += 1,
            }
        }
        report
    }
}

impl Engine {
    /// Imports seed 000's files, with an `imported` audit entry for each lesson not yet stored.
    ///
    /// Executions that share an ID are all kept ([`AgenturaBundle::disambiguate`]). Importing
    /// the same files twice changes nothing the second time.
    ///
    /// # Errors
    /// As [`Engine::import_records`]; nothing is written on error.
    pub fn import_agentura(&self, mut bundle: AgenturaBundle) -> Result<ImportReport> {
        let renamed = bundle.disambiguate();
        let mut records = bundle.into_records();
        let mut report = ImportReport::count(&records);
        report.renamed = renamed;
        let mut audits = Vec::new();
        for record in &records {
            if let Record::Lesson(lesson) = record
                && self.store.lesson(&lesson.id)?.is_none()
            {
                audits.push(Record::Audit(self.audit_entry(
                    RecordKind::Lesson,
                    lesson.id.as_str(),
                    AuditAction::Imported,
                    Some(lesson.status),
                    "imported from reflexion_entries.json",
                )));
            }
        }
        records.extend(audits);
        report.write = self.import_records(&records)?;
        Ok(report)
    }

    /// Restores records from a JSONL export as they are.
    ///
    /// # Errors
    /// As [`Engine::import_records`]; nothing is written on error.
    pub fn import_jsonl(&self, records: Vec<Record>) -> Result<ImportReport> {
        let mut report = ImportReport::count(&records);
        report.write = self.import_records(&records)?;
        Ok(report)
    }

    /// Seed 000's three files: executions and corrections in scope, and the lessons that may
    /// reach a prompt (a retired or rejected lesson must not come back to life in a tool that
    /// injects everything it reads).
    ///
    /// # Errors
    /// Store failures.
    pub fn export_agentura(&self) -> Result<AgenturaBundle> {
        let filter = self.filter();
        Ok(AgenturaBundle {
            executions: self.store.executions(&filter)?,
            corrections: self.store.corrections(&filter)?,
            lessons: self.store.lessons(&ListFilter {
                statuses: Some(self.retrievable_statuses()),
                ..filter
            })?,
        })
    }
}
