//! A person's word on a linked pair of lessons.
//!
//! Curation links a conflict (or a near-duplicate) so that a person looks at both; recall then
//! shows only the better of a conflicting pair. Once a person has looked, their decision
//! stands over the machine's guess:
//!
//! - approving a lesson whose conflicting partner is approved too (or approved in the same
//!   batch) says both apply, so the `conflicts` link between them is dropped and both are
//!   recalled — keeping the link would let recall drop one of two rules a person chose to keep;
//! - [`Engine::unlink`] drops the links between two lessons outright, whatever their states.
//!
//! Each change lands in the same batch as the decision, with an `edited` audit entry on each
//! lesson naming the other.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::review::Attribution;
use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{Lesson, LessonStatus, LinkKind};
use lore_core::ports::store::LessonUpdate;

/// The kinds of link a person may take off: the ones curation makes for review. A
/// supersession is undone by a status change, not by dropping its link.
const UNLINKABLE: [LinkKind; 2] = [LinkKind::Conflicts, LinkKind::NearDuplicate];

impl Engine {
    /// Drops the conflict and near-duplicate links between `a` and `b`, both ways, in one
    /// audited batch; both lessons keep their states. Returns them as stored.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `a` and `b` are the same lesson; [`Error::NotFound`] for a lesson
    /// that does not exist or is outside the scope; [`Error::Forbidden`] for a lesson the scope
    /// may not write; [`Error::Conflict`] when the two are not linked.
    pub fn unlink(&self, a: &LessonId, b: &LessonId, why: &Attribution) -> Result<[Lesson; 2]> {
        if a == b {
            return Err(Error::invalid("lesson IDs", format!("{a} is named twice")));
        }
        let (first, second) = (self.lesson(a)?, self.lesson(b)?);
        for lesson in [&first, &second] {
            self.scope.check_write(&lesson.skill)?;
        }
        let linked = |x: &Lesson, y: &Lesson| {
            x.links
                .iter()
                .any(|l| l.target == y.id && UNLINKABLE.contains(&l.kind))
        };
        if !linked(&first, &second) && !linked(&second, &first) {
            return Err(Error::Conflict(format!(
                "{a} and {b} are not linked as a conflict or near-duplicate"
            )));
        }
        let reason = |other: &LessonId| {
            let said = why.reason();
            if said.is_empty() {
                format!("unlinked from {other}")
            } else {
                format!("unlinked from {other}: {said}")
            }
        };
        let updates = vec![
            self.unlinked(first, b, &reason(b), why),
            self.unlinked(second, a, &reason(a), why),
        ];
        let stored = self.apply(updates)?;
        Ok([stored[0].clone(), stored[1].clone()])
    }

    fn unlinked(
        &self,
        lesson: Lesson,
        other: &LessonId,
        reason: &str,
        why: &Attribution,
    ) -> LessonUpdate {
        let mut after = lesson.clone();
        after
            .links
            .retain(|l| !(l.target == *other && UNLINKABLE.contains(&l.kind)));
        let why = Attribution {
            reason: reason.to_owned(),
            evidence: json!({ "unlinked_from": other }),
            ..why.clone()
        };
        self.planned_edit(lesson, after, &why)
    }

    /// Settles the conflicts of lessons being approved: a conflict with a lesson that is
    /// approved, or approved in this batch, is dropped on both sides. `updates` are the
    /// approvals (their lessons already `approved`); the edits to partners outside the batch
    /// are appended, one per partner.
    pub(super) fn settle_conflicts(
        &self,
        updates: &mut Vec<LessonUpdate>,
        why: &Attribution,
    ) -> Result<()> {
        let batch: BTreeSet<LessonId> = updates.iter().map(|u| u.lesson.id.clone()).collect();
        let mut partners: BTreeMap<LessonId, (Lesson, Vec<LessonId>)> = BTreeMap::new();
        for update in updates.iter_mut() {
            let conflicts: Vec<LessonId> = update
                .lesson
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Conflicts)
                .map(|l| l.target.clone())
                .collect();
            let mut settled = Vec::new();
            for target in conflicts {
                if !batch.contains(&target) {
                    let Some(partner) = self.approved_partner(&target, &mut partners)? else {
                        continue;
                    };
                    partner.1.push(update.lesson.id.clone());
                }
                settled.push(target);
            }
            if settled.is_empty() {
                continue;
            }
            update
                .lesson
                .links
                .retain(|l| !(l.kind == LinkKind::Conflicts && settled.contains(&l.target)));
            update.audit.evidence["conflicts_settled"] = json!(settled);
        }
        for (_, (partner, approved)) in partners {
            if approved.is_empty() {
                continue;
            }
            let mut after = partner.clone();
            after
                .links
                .retain(|l| !(l.kind == LinkKind::Conflicts && approved.contains(&l.target)));
            let names: Vec<&str> = approved.iter().map(LessonId::as_str).collect();
            let why = Attribution {
                reason: format!(
                    "conflict settled: a person approved {} beside it, so both apply",
                    names.join(", ")
                ),
                evidence: json!({ "conflicts_settled": approved }),
                ..why.clone()
            };
            updates.push(self.planned_edit(partner, after, &why));
        }
        Ok(())
    }

    /// The approved lesson `id`, read once per batch; `None` when it is not approved (or gone).
    fn approved_partner<'p>(
        &self,
        id: &LessonId,
        partners: &'p mut BTreeMap<LessonId, (Lesson, Vec<LessonId>)>,
    ) -> Result<Option<&'p mut (Lesson, Vec<LessonId>)>> {
        if !partners.contains_key(id) {
            let lesson = match self.store.lesson(id)? {
                Some(l) if l.status == LessonStatus::Approved => l,
                _ => return Ok(None),
            };
            partners.insert(id.clone(), (lesson, Vec::new()));
        }
        Ok(partners.get_mut(id))
    }
}
