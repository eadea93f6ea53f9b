//! Turning a [`ListFilter`] into a `WHERE` clause with numbered parameters.
//!
//! Every query aliases the record table as `t`. Column names are constants of this crate;
//! everything a caller supplies is bound as a parameter. Lists bind as one array (`= ANY($n)`),
//! so a statement's text does not change with their length and its plan is cached.

use lore_core::Scope;
use lore_core::ports::store::ListFilter;
use tokio_postgres::types::ToSql;

/// A bound parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Conditions joined by `AND`, and the parameters they bind, in order.
#[derive(Default)]
pub(crate) struct Where {
    conditions: Vec<String>,
    params: Vec<Param>,
}

/// Which listing a filter is for: the lesson statuses and the execution filter apply to some
/// kinds only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Lessons,
    Corrections,
    ErrorEvents,
    Other,
}

impl Where {
    /// The rows inside `scope`.
    pub(crate) fn scope(scope: &Scope) -> Self {
        let mut w = Self::default();
        if let Some(domains) = scope.domains.as_ref().filter(|d| !d.contains("*")) {
            w.any_of("t.domain", domains.iter().cloned().collect());
        }
        if let Some(skills) = &scope.skills {
            w.any_of(
                "t.skill",
                skills.iter().map(|s| s.as_str().to_owned()).collect(),
            );
        }
        w
    }

    /// The rows of `kind` that `filter` selects, apart from its limit and offset.
    pub(crate) fn listing(kind: Kind, filter: &ListFilter) -> Self {
        let mut w = Self::scope(&filter.scope);
        if let Some(skill) = &filter.skill {
            w.push("t.skill = $?", skill.as_str().to_owned());
        }
        match (kind, &filter.statuses, &filter.execution_id) {
            (Kind::Lessons, Some(statuses), _) => {
                w.any_of(
                    "t.status",
                    statuses.iter().map(|s| s.as_str().to_owned()).collect(),
                );
            }
            (Kind::Corrections | Kind::ErrorEvents, _, Some(execution)) => {
                w.push("t.execution_id = $?", execution.as_str().to_owned());
            }
            _ => {}
        }
        w
    }

    /// Adds a condition binding one parameter at its `$?`; `condition` must come from this
    /// crate.
    pub(crate) fn push(&mut self, condition: &str, value: impl ToSql + Sync + Send + 'static) {
        self.params.push(Box::new(value));
        let n = self.params.len();
        self.conditions
            .push(condition.replacen("$?", &format!("${n}"), 1));
    }

    /// Binds a value for a clause the caller writes after the conditions; returns its `$n`.
    pub(crate) fn bind(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.params.push(Box::new(value));
        format!("${}", self.params.len())
    }

    /// Rows whose `column` is one of `values`; none at all when `values` is empty.
    fn any_of(&mut self, column: &str, values: Vec<String>) {
        if values.is_empty() {
            self.conditions.push("false".into());
            return;
        }
        self.push(&format!("{column} = ANY($?)"), values);
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

    /// The parameters, as the driver takes them.
    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
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
        assert_eq!(w.sql(), " WHERE false");
    }

    #[test]
    fn values_are_bound_and_numbered() {
        let filter = ListFilter::skill(
            &Scope::domains(["hr' OR 1=1 --"]),
            &SkillPath::parse("hr/screen").unwrap(),
        );
        let mut w = Where::listing(Kind::Other, &filter);
        assert_eq!(w.sql(), " WHERE t.domain = ANY($1) AND t.skill = $2");
        assert_eq!(w.bind(3_i64), "$3");
        assert_eq!(w.params().len(), 3);
    }
}
