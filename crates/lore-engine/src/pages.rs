//! Listings a page at a time, for callers that cannot hold a whole table (the REST API).
//!
//! Pages are offset-based over the store's stable oldest-first order: a record written while a
//! client pages through lands at the end, so no page skips or repeats an older record. One extra
//! row is read to learn whether another page follows, which costs less than a count.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::engine::Engine;
use lore_core::error::{Error, Result};
use lore_core::id::ExecutionId;
use lore_core::model::{ErrorEvent, Execution, Lesson, LessonStatus};
use lore_core::ports::store::ListFilter;
use lore_core::scope::SkillPath;

pub use lore_core::limits::MAX_PAGE;

/// One page of a listing, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Page<T> {
    /// The records on this page.
    pub items: Vec<T>,
    /// The offset of the next page, `None` on the last one.
    pub next_offset: Option<usize>,
}

/// Which page to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// At most this many records, `1..=MAX_PAGE`.
    pub limit: usize,
    /// Skip this many first.
    pub offset: usize,
}

impl PageRequest {
    pub(super) fn check(self) -> Result<Self> {
        if self.limit == 0 || self.limit > MAX_PAGE {
            return Err(Error::invalid(
                "limit",
                format!("{} is outside 1 to {MAX_PAGE}", self.limit),
            ));
        }
        Ok(self)
    }

    fn filter(self, base: ListFilter) -> ListFilter {
        ListFilter {
            limit: Some(self.limit + 1),
            offset: self.offset,
            ..base
        }
    }

    pub(super) fn cut<T>(self, mut items: Vec<T>) -> Page<T> {
        let more = items.len() > self.limit;
        items.truncate(self.limit);
        Page {
            next_offset: more.then_some(self.offset + self.limit),
            items,
        }
    }
}

impl Engine {
    /// One page of the executions inside the scope, optionally of one skill.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a limit outside `1..=MAX_PAGE`; store failures.
    pub fn executions_page(
        &self,
        skill: Option<&SkillPath>,
        page: PageRequest,
    ) -> Result<Page<Execution>> {
        let page = page.check()?;
        let filter = page.filter(ListFilter {
            skill: skill.cloned(),
            ..self.filter()
        });
        Ok(page.cut(self.store.executions(&filter)?))
    }

    /// One page of the lessons inside the scope, optionally of one skill and some statuses.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a limit outside `1..=MAX_PAGE`; store failures.
    pub fn lessons_page(
        &self,
        skill: Option<&SkillPath>,
        statuses: Option<BTreeSet<LessonStatus>>,
        page: PageRequest,
    ) -> Result<Page<Lesson>> {
        let page = page.check()?;
        let filter = page.filter(ListFilter {
            skill: skill.cloned(),
            statuses,
            ..self.filter()
        });
        // Another member's own lessons leave the page short rather than reach this caller.
        let (lessons, _) = self.visible_lessons(&filter)?;
        Ok(page.cut(lessons))
    }

    /// One page of the signals reported on an execution, oldest first.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an execution outside the scope or unknown; [`Error::Invalid`] for
    /// a limit outside `1..=MAX_PAGE`; store failures.
    pub fn signals_page(
        &self,
        execution_id: &ExecutionId,
        page: PageRequest,
    ) -> Result<Page<ErrorEvent>> {
        let page = page.check()?;
        let filter = page.filter(self.signal_filter(execution_id)?);
        Ok(page.cut(self.store.error_events(&filter)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reports_whether_another_follows() {
        let req = PageRequest {
            limit: 2,
            offset: 4,
        };
        assert_eq!(
            req.cut(vec![1, 2, 3]),
            Page {
                items: vec![1, 2],
                next_offset: Some(6)
            }
        );
        assert_eq!(req.cut(vec![1, 2]).next_offset, None);
    }

    #[test]
    fn limits_outside_the_range_are_refused() {
        for limit in [0, MAX_PAGE + 1] {
            let err = PageRequest { limit, offset: 0 }.check().unwrap_err();
            assert!(matches!(err, Error::Invalid { .. }), "{limit}: {err}");
        }
    }
}
