//! Imports and exports: seed 000's `.agentura/` files and Lore's JSONL.

pub mod layers;

use crate::engine::Engine;
use crate::engine::audit;
use crate::episodes;
use crate::interchange::{AgenturaBundle, Renamed};
use lore_core::error::Error;
use lore_core::error::Result;
use lore_core::model::AuditAction;
use lore_core::model::Lesson;
use lore_core::model::LessonStatus;
use lore_core::model::MemoryCategory;
use lore_core::model::RecordKind;
use lore_core::ports::store::EpisodeFilter;
use lore_core::ports::store::ListFilter;
use lore_core::ports::store::OnDuplicate;
use lore_core::ports::store::Record;
use lore_core::ports::store::WriteReport;
use lore_core::scope::Scope;
use lore_core::scope::SkillPath;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

use layers::LayerItem;
use tracing::instrument;

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
    /// Layer items read (knowledge documents, decisions, digests, evaluation sets and runs,
    /// the embedder's tuning), per kind.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub layers: BTreeMap<&'static str, usize>,
    /// Newly stored and skipped-as-identical counts over all of them, layer items included.
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

    /// Restores a whole JSONL export: its layer items, then its records, each as they are.
    ///
    /// Everything is checked before anything is written: the scope of every record and item
    /// (the embedder's tuning is the whole store's, so it needs an unrestricted scope), the
    /// records' limits, and that no item is stored with other content.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for anything outside the scope, [`Error::Conflict`] for a record or
    /// item stored otherwise, [`Error::Invalid`] for a malformed one; nothing is written then.
    #[instrument(skip_all, fields(records = records.len(), items = items.len()))]
    pub fn import_export(
        &self,
        records: Vec<Record>,
        items: Vec<LayerItem>,
    ) -> Result<ImportReport> {
        let items = items
            .into_iter()
            .map(|item| self.checked(item))
            .collect::<Result<Vec<_>>>()?;
        self.check_tuning(&items)?;
        for item in &items {
            match item.skill() {
                Some(skill) => self.scope.check_write(skill)?,
                None if self.scope != Scope::unrestricted() => {
                    return Err(Error::Forbidden(format!(
                        "a {} is the whole store's: importing it needs an unrestricted scope",
                        item.kind().replace('_', " ")
                    )));
                }
                None => {}
            }
        }
        for record in &records {
            if let Some(skill) = record_skill(record) {
                self.scope.check_write(skill)?;
            }
            lore_core::limits::record(record)?;
        }
        let audits: Vec<_> = records
            .iter()
            .filter_map(|r| match r {
                Record::Audit(a) => Some(a.clone()),
                _ => None,
            })
            .collect();
        let actor = self.actor(None);
        let by = layers::Writer {
            actor: &actor,
            at: self.now(),
            audits: &audits,
        };
        let written = layers::write_layers(self.store.as_ref(), &items, &by)?;
        let mut report = self.import_jsonl(records)?;
        for item in &items {
            *report.layers.entry(item.kind()).or_default() += 1;
        }
        report.write.written += written.written;
        report.write.skipped += written.skipped;
        Ok(report)
    }

    /// An imported item held to the rules its own door applies: a decision's texts as
    /// recording one (one holding personal or secret data arrives `sensitive`), an evaluation
    /// set's questions as defining one, and a chunk's text free of what an ingest redacts.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the item and the field at fault.
    fn checked(&self, item: LayerItem) -> Result<LayerItem> {
        let named = |err: Error| match err {
            Error::Invalid { what, why } => Error::invalid(
                format!("{} {}: {what}", item.kind().replace('_', " "), item.name()),
                why,
            ),
            other => other,
        };
        match &item {
            LayerItem::Decision(d) => {
                let sensitive = crate::decisions::check_decision(
                    &d.situation,
                    &d.action,
                    &d.rationale,
                    d.outcome.as_deref(),
                    d.resolves.as_deref(),
                )
                .map_err(named)?;
                if sensitive && d.status != LessonStatus::Sensitive {
                    let mut quarantined = d.clone();
                    quarantined.status = LessonStatus::Sensitive;
                    return Ok(LayerItem::Decision(quarantined));
                }
            }
            LayerItem::EvalSet(s) => {
                crate::evals::check_eval_set(&s.name, &s.questions, self.proposer.is_some())
                    .map_err(named)?;
            }
            LayerItem::KnowledgeDocument(d) => {
                for c in &d.chunks {
                    lore_core::limits::text("text", &c.chunk.text).map_err(named)?;
                    if lore_core::sensitive::redact(&c.chunk.text) != c.chunk.text {
                        return Err(named(Error::invalid(
                            format!("chunk {}", c.chunk.id),
                            "it holds personal or secret data, which an ingest redacts; \
                             ingest the document instead",
                        )));
                    }
                }
            }
            _ => {}
        }
        Ok(item)
    }

    /// Imported tuning held to activation's rules: a checkpoint's weights fit its base
    /// embedder, and only a checkpoint that beat the base on held-out pairs becomes active.
    ///
    /// # Errors
    /// [`Error::Invalid`] for weights of the wrong size; [`Error::Conflict`] for an active
    /// checkpoint that did not beat the base; [`Error::NotFound`] for one neither imported nor
    /// stored.
    fn check_tuning(&self, items: &[LayerItem]) -> Result<()> {
        for item in items {
            match item {
                LayerItem::Checkpoint(c) => {
                    lore_recall::adapter::Adapter::new(
                        c.id.to_string(),
                        c.base.clone(),
                        c.weights.clone(),
                    )
                    .map_err(|e| Error::invalid(format!("checkpoint {}: weights", c.id), e))?;
                }
                LayerItem::ActiveCheckpoint(id) => {
                    let imported = items.iter().find_map(|i| match i {
                        LayerItem::Checkpoint(c) if &c.id == id => Some(c.clone()),
                        _ => None,
                    });
                    let checkpoint = match imported {
                        Some(c) => c,
                        None => self
                            .store
                            .tuning()?
                            .checkpoint(id)?
                            .ok_or_else(|| Error::not_found("checkpoint", id))?,
                    };
                    if !checkpoint.evaluation.better {
                        return Err(Error::Conflict(format!(
                            "checkpoint {id} did not beat the base embedder on its held-out \
                             pairs; it cannot become active"
                        )));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Every layer item inside the scope, for export (the embedder's tuning only for an
    /// unrestricted scope).
    ///
    /// # Errors
    /// Store failures.
    pub fn export_layers(&self) -> Result<Vec<LayerItem>> {
        layers::read_layers(self.store.as_ref(), &self.scope)
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

impl Engine {
    /// Writes already-formed records (an import), checking scope; identical copies are skipped.
    ///
    /// # Errors
    /// [`Error::Forbidden`] when any record lies outside the scope, [`Error::Conflict`] when a
    /// stored record with the same ID differs. Nothing is written in either case.
    #[instrument(skip_all, fields(records = records.len()))]
    pub fn import_records(&self, records: &[Record]) -> Result<WriteReport> {
        for record in records {
            if let Some(skill) = record_skill(record) {
                self.scope.check_write(skill)?;
            }
            lore_core::limits::record(record)?;
        }
        let records = self.quarantine_imported_secrets(records)?;
        let report = self.store.write(&records, OnDuplicate::SkipIdentical)?;
        let lessons: Vec<&Lesson> = records
            .iter()
            .filter_map(|r| match r {
                Record::Lesson(l) => Some(l),
                _ => None,
            })
            .collect();
        self.embed_written(&lessons);
        Ok(report)
    }

    /// Imported lessons were never seen by the detector: a live one that holds personal data or
    /// a secret arrives `sensitive` instead, with an audit entry saying why (written once, so
    /// importing the same files again changes nothing). Imported episodes are checked as
    /// recorded ones are, and their texts redacted.
    fn quarantine_imported_secrets(&self, records: &[Record]) -> Result<Vec<Record>> {
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            if let Record::Episode(episode) = record {
                if episode.has_unset_id() {
                    return Err(Error::invalid("id", "an imported episode needs its ID"));
                }
                episode.validate()?;
                let mut clean = episode.clone();
                episodes::redact(&mut clean);
                out.push(Record::Episode(clean));
                continue;
            }
            let Record::Lesson(lesson) = record else {
                out.push(record.clone());
                continue;
            };
            let kinds = lore_core::sensitive::scan_lesson(lesson);
            if kinds.is_empty() || lesson.status == LessonStatus::Sensitive {
                out.push(self.org_lesson_waits(lesson)?);
                continue;
            }
            let mut quarantined = lesson.clone();
            quarantined.status = LessonStatus::Sensitive;
            out.push(Record::Lesson(quarantined));
            if self.store.lesson(&lesson.id)?.is_none() {
                let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                out.push(Record::Audit(audit(
                    RecordKind::Lesson,
                    lesson.id.as_str(),
                    AuditAction::Transition,
                    (Some(lesson.status), Some(LessonStatus::Sensitive)),
                    &self.actor(None),
                    self.now(),
                    &format!("sensitive data found on import ({})", names.join(", ")),
                    Value::Null,
                )));
            }
        }
        Ok(out)
    }

    /// An org lesson arrives waiting for review whatever status the file gives it: an import
    /// is a request like any other, and none may approve an org lesson but a person's review.
    fn org_lesson_waits(&self, lesson: &Lesson) -> Result<Record> {
        if lore_core::org::is_org(lesson)
            && matches!(lesson.status, LessonStatus::Approved | LessonStatus::Trial)
        {
            let mut waiting = lesson.clone();
            waiting.status = LessonStatus::NeedsReview;
            if let Some(stored) = self.store.lesson(&lesson.id)?
                && stored.status == LessonStatus::Approved
            {
                // Already approved here by a person: importing it again changes nothing.
                return Ok(Record::Lesson(stored));
            }
            return Ok(Record::Lesson(waiting));
        }
        Ok(Record::Lesson(lesson.clone()))
    }

    /// Every record inside the scope, for export.
    ///
    /// # Errors
    /// Store failures.
    pub fn export_records(&self) -> Result<Vec<Record>> {
        let filter = self.filter();
        let mut out: Vec<Record> = Vec::new();
        out.extend(
            self.store
                .executions(&filter)?
                .into_iter()
                .map(Record::Execution),
        );
        out.extend(
            self.store
                .corrections(&filter)?
                .into_iter()
                .map(Record::Correction),
        );
        out.extend(
            self.store
                .lessons(&filter)?
                .into_iter()
                .filter(|l| lore_core::org::visible(l, &self.view()))
                .map(Record::Lesson),
        );
        out.extend(
            self.store
                .episodes(&EpisodeFilter {
                    scope: self.scope.clone(),
                    ..EpisodeFilter::default()
                })?
                .into_iter()
                .map(Record::Episode),
        );
        let subjects: BTreeSet<String> = out.iter().map(|r| r.id().to_owned()).collect();
        out.extend(
            self.store
                .error_events(&filter)?
                .into_iter()
                .map(Record::ErrorEvent),
        );
        for category in MemoryCategory::ALL {
            out.extend(
                self.store
                    .memories(&filter, category)?
                    .into_iter()
                    .map(Record::Memory),
            );
        }
        out.extend(
            self.store
                .audit(None)?
                .into_iter()
                .filter(|a| self.scope == Scope::unrestricted() || subjects.contains(&a.subject))
                .map(Record::Audit),
        );
        Ok(out)
    }
}

fn record_skill(record: &Record) -> Option<&SkillPath> {
    match record {
        Record::Execution(r) => Some(&r.skill),
        Record::Correction(r) => Some(&r.skill),
        Record::Lesson(r) => Some(&r.skill),
        Record::ErrorEvent(r) => Some(&r.skill),
        Record::Audit(_) => None,
        Record::Memory(r) => Some(&r.skill),
        Record::Episode(r) => Some(&r.skill),
    }
}
