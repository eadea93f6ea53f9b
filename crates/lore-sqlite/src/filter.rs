//! Turning a [`ListFilter`] into a SQL `WHERE` clause with bound parameters.
//!
//! Every query aliases the record table as `t`, so one builder serves listings, counts and
//! search. Column names are constants of this crate; everything a caller supplies is bound as a
//! parameter, never spliced into SQL.

use lore_core::Scope;
use lore_core::ports::store::ListFilter;
use rusqlite::types::Value;

use crate::table::Table;

/// Conditions joined by `AND`, and the parameters they bind, in order.
#[derive(Debug, Default)]
pub(crate) struct Where {
    conditions: Vec<String>,
    params: Vec<Value>,
}

impl Where {
    /// The rows inside `scope`. The tenant is not a column here: an SQLite file holds one
    /// tenant's memory.
    pub(crate) fn scope(scope: &Scope) -> Self {
        let mut w = Self::default();
        if let Some(domains) = scope.domains.as_ref().filter(|d| !d.contains("*")) {
            w.any_of("t.domain", domains.iter().cloned());
        }
        if let Some(skills) = &scope.skills {
            w.any_of("t.skill", skills.iter().map(|s| s.as_str().to_owned()));
        }
        w
    }

    /// The rows of `table` that `filter` selects, apart from its limit and offset.
    pub(crate) fn listing(table: Table, filter: &ListFilter) -> Self {
        let mut w = Self::scope(&filter.scope);
        if let Some(skill) = &filter.skill {
            w.push("t.skill = ?", [Value::Text(skill.as_str().to_owned())]);
        }
        match (table, &filter.statuses, &filter.execution_id) {
            (Table::Lessons, Some(statuses), _) => {
                w.any_of("t.status", statuses.iter().map(|s| s.as_str().to_owned()));
            }
            (Table::Corrections, _, Some(execution)) => {
                w.push(
                    "t.execution_id = ?",
                    [Value::Text(execution.as_str().to_owned())],
                );
            }
            // Error events keep their execution only in the body; the skill's index narrows
            // the scan first, since an execution's signals share its skill.
            (Table::ErrorEvents, _, Some(execution)) => {
                w.push(
                    "json_extract(t.body, '$.execution_id') = ?",
                    [Value::Text(execution.as_str().to_owned())],
                );
            }
            _ => {}
        }
        w
    }

    /// Adds a condition with its parameters; `condition` must come from this crate.
    pub(crate) fn push(&mut self, condition: &str, params: impl IntoIterator<Item = Value>) {
        self.conditions.push(condition.to_owned());
        self.params.extend(params);
    }

    /// Adds every condition of `other`, after those already here.
    pub(crate) fn push_all(&mut self, other: Where) {
        self.conditions.extend(other.conditions);
        self.params.extend(other.params);
    }

    /// Rows whose `column` is one of `values`; none at all when `values` is empty.
    fn any_of(&mut self, column: &str, values: impl IntoIterator<Item = String>) {
        let values: Vec<Value> = values.into_iter().map(Value::Text).collect();
        if values.is_empty() {
            self.push("0", []);
            return;
        }
        let marks = vec!["?"; values.len()].join(", ");
        self.push(&format!("{column} IN ({marks})"), values);
    }

    /// The clause, `" WHERE a AND b"`, or nothing when there is no condition.
    pub(crate) fn sql(&self) -> String {
        if self.conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.conditions.join(" AND "))
        }
    }

    /// Whether no condition was added, so every row matches.
    pub(crate) fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// The bound parameters, in the order of the conditions.
    pub(crate) fn params(&self) -> &[Value] {
        &self.params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lore_core::SkillPath;

    #[test]
    fn wildcard_domain_adds_no_condition() {
        assert!(Where::scope(&Scope::domains(["*", "hr"])).is_empty());
        assert!(Where::scope(&Scope::unrestricted()).is_empty());
    }

    #[test]
    fn empty_allow_list_matches_nothing() {
        let w = Where::scope(&Scope::domains(Vec::<String>::new()));
        assert_eq!(w.sql(), " WHERE 0");
    }

    #[test]
    fn values_are_bound_not_spliced() {
        let filter = ListFilter::skill(
            &Scope::domains(["hr' OR 1=1 --"]),
            &SkillPath::parse("hr/screen").unwrap(),
        );
        let w = Where::listing(Table::Executions, &filter);
        assert_eq!(w.sql(), " WHERE t.domain IN (?) AND t.skill = ?");
        assert_eq!(w.params().len(), 2);
    }
}
