//! Reading and curating lessons by hand: list, show, edit, retire.
//!
//! Seed 000's only way to fix a wrong rule was editing JSON by hand. Here every change goes
//! through the Engine, is checked, and leaves an audit entry with the fields before and after.

use std::collections::BTreeSet;

use serde_json::json;

use crate::engine::{Engine, audit};
use crate::review::Attribution;
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{AuditAction, Lesson, LessonStatus, RecordKind};
use lore_core::ports::store::ListFilter;
use lore_core::scope::SkillPath;

/// Changes to a lesson's text or numbers; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct LessonEdit {
    /// A new rule.
    pub rule: Option<String>,
    /// New conditions.
    pub applies_when: Option<String>,
    /// A new mistake description.
    pub mistake: Option<String>,
    /// A new root cause.
    pub root_cause: Option<String>,
    /// A new confidence, `0.0..=1.0`.
    pub confidence: Option<f64>,
    /// New tags, replacing the old ones.
    pub tags: Option<Vec<String>>,
}

impl LessonEdit {
    fn is_empty(&self) -> bool {
        self.rule.is_none()
            && self.applies_when.is_none()
            && self.mistake.is_none()
            && self.root_cause.is_none()
            && self.confidence.is_none()
            && self.tags.is_none()
    }
}

impl Engine {
    /// Lessons inside the scope, optionally of one skill and some statuses, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub fn lessons(
        &self,
        skill: Option<&SkillPath>,
        statuses: Option<BTreeSet<LessonStatus>>,
    ) -> Result<Vec<Lesson>> {
        let filter = ListFilter {
            skill: skill.cloned(),
            statuses,
            ..self.filter()
        };
        Ok(self.visible_lessons(&filter)?.0)
    }

    /// One lesson inside the scope.
    ///
    /// # Errors
    /// [`Error::NotFound`] when it does not exist or lies outside the scope.
    pub fn lesson(&self, id: &LessonId) -> Result<Lesson> {
        self.store
            .lesson(id)?
            .filter(|l| self.sees(l))
            .ok_or_else(|| Error::not_found("lesson", id))
    }

    /// Edits a lesson's text or numbers, with an audit entry holding the fields before and after.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty edit, an empty rule or a confidence outside `0..=1`;
    /// [`Error::NotFound`] for an unknown lesson; [`Error::Conflict`] when it changed meanwhile.
    pub fn edit_lesson(
        &self,
        id: &LessonId,
        edit: LessonEdit,
        actor: Option<&str>,
        reason: &str,
    ) -> Result<Lesson> {
        if edit.is_empty() {
            return Err(Error::invalid(
                "edit",
                "nothing to change; name at least one field",
            ));
        }
        if let Some(rule) = &edit.rule
            && rule.trim().is_empty()
        {
            return Err(Error::invalid("rule", "a rule cannot be empty"));
        }
        if let Some(c) = edit.confidence
            && !(0.0..=1.0).contains(&c)
        {
            return Err(Error::invalid(
                "confidence",
                format!("{c} is outside 0.0 to 1.0"),
            ));
        }
        let before = self.lesson(id)?;
        let mut after = before.clone();
        let mut changed = serde_json::Map::new();
        let mut set = |field: &str, old: serde_json::Value, new: serde_json::Value| {
            changed.insert(field.to_owned(), json!({ "before": old, "after": new }));
        };
        if let Some(rule) = edit.rule {
            set("rule", json!(after.rule), json!(rule.trim()));
            after.rule = rule.trim().to_owned();
            after.tiers.action = after.rule.clone();
            // The steps are the rule's own sentences, as the distiller makes them; kept, they
            // would go on showing the old rule under the new one.
            after.tiers.steps = lore_core::text::sentences(&after.rule);
            after.tiers.summary = after.tiers.steps.first().cloned().unwrap_or_default();
        }
        if let Some(v) = edit.applies_when {
            set("applies_when", json!(after.applies_when), json!(v));
            after.tiers.condition = v.clone();
            after.applies_when = v;
        }
        if let Some(v) = edit.mistake {
            set("mistake", json!(after.mistake), json!(v));
            after.mistake = v;
        }
        if let Some(v) = edit.root_cause {
            set("root_cause", json!(after.root_cause), json!(v));
            after.root_cause = v;
        }
        if let Some(v) = edit.confidence {
            set("confidence", json!(after.confidence), json!(v));
            after.confidence = v;
        }
        if let Some(v) = edit.tags {
            set("tags", json!(after.tags), json!(v));
            after.tags = v;
        }
        // An edit is a write like any other: whoever makes it, a secret in the new text takes the
        // lesson out of retrieval, in the same write, so no reader ever sees it approved.
        let kinds = lore_core::sensitive::scan_lesson(&after);
        if !kinds.is_empty() && after.status != LessonStatus::Sensitive {
            let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            set(
                "status",
                json!(after.status.as_str()),
                json!(LessonStatus::Sensitive.as_str()),
            );
            changed.insert("sensitive".to_owned(), json!(names));
            after.status = LessonStatus::Sensitive;
        }
        self.save(
            before,
            after,
            AuditAction::Edited,
            actor,
            reason,
            changed.into(),
        )
    }

    /// Retires a lesson: it moves to `archived`, stays on record, and never reaches a prompt.
    ///
    /// # Errors
    /// [`Error::Conflict`] when it is already archived or the lifecycle table forbids the move;
    /// [`Error::NotFound`] for an unknown lesson.
    pub fn retire_lesson(
        &self,
        id: &LessonId,
        actor: Option<&str>,
        reason: &str,
    ) -> Result<Lesson> {
        self.transition(id, LessonStatus::Archived, &Attribution::new(actor, reason))
    }

    fn save(
        &self,
        before: Lesson,
        mut after: Lesson,
        action: AuditAction,
        actor: Option<&str>,
        reason: &str,
        evidence: serde_json::Value,
    ) -> Result<Lesson> {
        self.scope.check_write(&after.skill)?;
        let at = self.now();
        after.updated_at = at.max(before.updated_at);
        let statuses = if action == AuditAction::Transition || before.status != after.status {
            (Some(before.status), Some(after.status))
        } else {
            (None, None)
        };
        let reason = if reason.trim().is_empty() {
            "no reason given"
        } else {
            reason.trim()
        };
        let entry = audit(
            RecordKind::Lesson,
            after.id.as_str(),
            action,
            statuses,
            &self.actor(actor),
            at,
            reason,
            evidence,
        );
        self.store
            .update_lesson(&after, before.updated_at, &entry)?;
        Ok(after)
    }
}

impl Engine {
    /// Records that this handle's actor read `subject`'s text unredacted (a `disclosed` audit
    /// entry). Every path that hands out raw text calls it first: text is redacted for everyone
    /// by default, and who saw a secret is on record.
    ///
    /// # Errors
    /// Store failures; the caller must then not disclose.
    pub fn record_disclosure(&self, kind: RecordKind, subject: &str, reason: &str) -> Result<()> {
        let entry = audit(
            kind,
            subject,
            AuditAction::Disclosed,
            (None, None),
            &self.actor(None),
            self.now(),
            reason,
            serde_json::Value::Null,
        );
        self.store.write(
            &[lore_core::ports::store::Record::Audit(entry)],
            lore_core::ports::store::OnDuplicate::Fail,
        )?;
        Ok(())
    }

    /// The audit trail of one lesson inside the scope, oldest first.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the lesson does not exist or lies outside the scope.
    pub fn lesson_audit(&self, id: &LessonId) -> Result<Vec<lore_core::model::AuditEntry>> {
        self.lesson(id)?;
        self.store.audit(Some(id.as_str()))
    }
}
