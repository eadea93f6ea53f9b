//! Approved lessons written out as portable SKILL.md folders ([`LearnedSkills`]), kept in step
//! with each lesson's status by the Engine's decisions.
//!
//! The store is the record and the folder a copy of it: a decision is never undone because its
//! file could not be written. A failure is logged, and the next decision on the lesson writes
//! it again.

use std::sync::Arc;

use lore_core::model::Lesson;
use lore_workspace::learned::{LearnedSkills, Synced};

use crate::engine::Engine;

impl Engine {
    /// Writes approved lessons with at least the configured confidence to `skills` as
    /// SKILL.md folders, and removes them when they leave the approved state (off by default).
    pub fn with_learned_skills(mut self, skills: LearnedSkills) -> Self {
        self.learned = Some(Arc::new(skills));
        self
    }

    /// Brings the files of `lessons` in line with their status.
    pub(crate) fn materialize(&self, lessons: &[Lesson]) {
        let Some(learned) = &self.learned else {
            return;
        };
        // A SKILL.md is read by every agent of the skill, so an agent's own lesson stays out.
        for lesson in lessons
            .iter()
            .filter(|l| lore_core::org::owner(l).is_none())
        {
            match learned.sync(lesson) {
                Ok(Synced::Written(path)) => {
                    tracing::debug!(path = %path.display(), "skill written")
                }
                Ok(Synced::Removed(path)) => {
                    tracing::debug!(path = %path.display(), "skill removed")
                }
                Ok(Synced::Untouched) => {}
                Err(err) => {
                    tracing::warn!(%err, lesson = %lesson.id, "cannot write the lesson's skill")
                }
            }
        }
    }
}
