//! Following the store: what was recorded or changed after a cursor (executions, lessons,
//! episodes, decisions), narrowed to this handle's scope. The server's event stream is built on it; because
//! it reads the store, it sees writes from every process that shares the store, not only this
//! one.

use std::cmp::Ordering;
use std::time::Duration;

use super::{Engine, PURGED};
use lore_core::error::Result;
use lore_core::id::{DecisionId, EpisodeId, LessonId};
use lore_core::model::{
    AuditAction, AuditEntry, DecisionRecord, Episode, Execution, Lesson, RecordKind,
};
use lore_core::ports::bell::ChangeBell;
use lore_core::ports::store::ChangeCursor;
use lore_core::scope::SkillPath;
use lore_core::sensitive;

/// One thing a follower is told about.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// An execution was recorded.
    Execution(Execution),
    /// A lesson was created, changed status, was edited or purged (`entry.action` says which).
    Lesson {
        /// The audit entry of the change.
        entry: AuditEntry,
        /// The lesson's skill.
        skill: SkillPath,
        /// The lesson as it is now; `None` once it has been purged, so no stream repeats
        /// erased content.
        lesson: Option<Box<Lesson>>,
    },
    /// An episode was recorded, replaced or purged (`entry.action` says which).
    Episode {
        /// The audit entry of the change.
        entry: AuditEntry,
        /// The episode's skill.
        skill: SkillPath,
        /// The episode as it is now; `None` once it has been purged.
        episode: Option<Box<Episode>>,
    },
    /// A decision was recorded or moved (`entry.action` says which).
    Decision {
        /// The audit entry of the change, its reason redacted.
        entry: AuditEntry,
        /// The decision as it is now, redacted.
        decision: Box<DecisionRecord>,
    },
}

/// The changes after a cursor, each with the cursor just past it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Followed {
    /// The changes inside the scope, oldest first.
    pub changes: Vec<(ChangeCursor, Change)>,
    /// Where to continue from: past everything read, including what the scope filtered out.
    pub cursor: ChangeCursor,
}

impl Engine {
    /// The cursor of the newest write: following from here sees only what comes next.
    ///
    /// # Errors
    /// Store failures; [`crate::Error::Unsupported`] from a store that cannot follow writes.
    pub fn change_cursor(&self) -> Result<ChangeCursor> {
        self.store.change_cursor()
    }

    /// Whether the store takes writes now (see [`lore_core::Store::check_writable`]).
    ///
    /// # Errors
    /// [`crate::Error::StorageFull`] while the store has no room; store failures.
    pub fn check_writable(&self) -> Result<()> {
        self.store.check_writable()
    }

    /// The mark to pass to [`Engine::wait_for_change`], taken before reading the changes so
    /// that a write landing between the read and the wait is not slept through.
    pub fn change_mark(&self) -> u64 {
        self.store.change_bell().map_or(0, ChangeBell::rung)
    }

    /// Blocks until the store announces a write after `mark`, or `timeout` passes. A store
    /// that announces nothing makes this a plain sleep, so followers poll.
    pub fn wait_for_change(&self, mark: u64, timeout: Duration) {
        match self.store.change_bell() {
            Some(bell) => {
                bell.wait(mark, timeout);
            }
            None => std::thread::sleep(timeout),
        }
    }

    /// Up to `limit` executions and `limit` lesson and episode changes after `after`, inside the
    /// scope (and of `skill` when given), in the order they were written.
    ///
    /// # Errors
    /// As [`Engine::change_cursor`].
    pub fn changes_after(
        &self,
        after: ChangeCursor,
        skill: Option<&SkillPath>,
        limit: usize,
    ) -> Result<Followed> {
        let raw = self.store.changes(after, limit)?;
        let wanted = |s: &SkillPath| self.scope.allows(s) && skill.is_none_or(|k| k == s);
        let mut cursor = after;
        let mut changes = Vec::new();
        let mut executions = raw.executions.into_iter().peekable();
        let mut audit = raw.audit.into_iter().peekable();
        // Each list is in commit order; interleaving them by time keeps both cursors moving
        // forward, so an event's cursor resumes exactly after it.
        loop {
            let take_execution = match (executions.peek(), audit.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((_, e)), Some((_, a))) => e.timestamp.cmp(&a.at) != Ordering::Greater,
            };
            if take_execution {
                let (seq, execution) = executions.next().expect("peeked");
                cursor.executions = seq;
                if wanted(&execution.skill) {
                    changes.push((cursor, Change::Execution(execution)));
                }
            } else {
                let (seq, entry) = audit.next().expect("peeked");
                cursor.audit = seq;
                if let Some(change) = self.lesson_change(entry, &wanted)? {
                    changes.push((cursor, change));
                }
            }
        }
        Ok(Followed { changes, cursor })
    }

    fn lesson_change(
        &self,
        entry: AuditEntry,
        wanted: &impl Fn(&SkillPath) -> bool,
    ) -> Result<Option<Change>> {
        // A raw read changes nothing, so it is no event.
        if entry.action == AuditAction::Disclosed {
            return Ok(None);
        }
        if entry.subject_kind == RecordKind::Episode {
            return self.episode_change(entry, wanted);
        }
        if entry.subject_kind == RecordKind::Decision {
            return self.decision_change(entry, wanted);
        }
        if entry.subject_kind != RecordKind::Lesson {
            return Ok(None);
        }
        let Ok(id) = LessonId::parse(&entry.subject) else {
            return Ok(None);
        };
        let Some(lesson) = self.store.lesson(&id)? else {
            return Ok(None);
        };
        // Another member's own lesson is not this subscriber's news.
        if !wanted(&lesson.skill) || !lore_core::org::visible(&lesson, &self.view()) {
            return Ok(None);
        }
        let purged = entry.action == AuditAction::Purged || lesson.rule == PURGED;
        Ok(Some(Change::Lesson {
            skill: lesson.skill.clone(),
            lesson: (!purged).then(|| Box::new(lesson)),
            entry,
        }))
    }

    /// A decision's change, told only inside the scope, with the decision as it is now (a
    /// replayed entry shows today's state beside the move it names).
    fn decision_change(
        &self,
        entry: AuditEntry,
        wanted: &impl Fn(&SkillPath) -> bool,
    ) -> Result<Option<Change>> {
        let Ok(id) = DecisionId::parse(&entry.subject) else {
            return Ok(None);
        };
        let Some(decision) = self.store.decisions()?.decision(&id)? else {
            return Ok(None);
        };
        if !wanted(&decision.skill) {
            return Ok(None);
        }
        Ok(Some(Change::Decision {
            entry: sensitive::redact_audit(&entry),
            decision: Box::new(sensitive::redact_decision(&decision)),
        }))
    }

    /// An episode's change, told only inside the scope. A purged episode is named, never shown,
    /// and so is every earlier change to it: a replay must not bring erased text back.
    fn episode_change(
        &self,
        entry: AuditEntry,
        wanted: &impl Fn(&SkillPath) -> bool,
    ) -> Result<Option<Change>> {
        let Ok(id) = EpisodeId::parse(&entry.subject) else {
            return Ok(None);
        };
        let Some(episode) = self.store.episode(&id)? else {
            return Ok(None);
        };
        if !wanted(&episode.skill) {
            return Ok(None);
        }
        let purged = entry.action == AuditAction::Purged || episode.is_purged();
        Ok(Some(Change::Episode {
            skill: episode.skill.clone(),
            episode: (!purged).then(|| Box::new(episode)),
            entry,
        }))
    }
}
