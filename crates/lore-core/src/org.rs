//! Organization memory (seed 002): whose a lesson is, who else may see it, and the org pool.
//!
//! A lesson learned by an organization member (a handle whose scope names an agent and a role
//! or a department) starts as that agent's own. Propagation adds named agents of the same role
//! or department to it, at most a set number and never the source agent; the org pool lifts a
//! rule that several distinct agents learned into one organization-wide lesson, which a person
//! must approve. Lessons without a mark are shared inside their scope as they always were.
//!
//! The mark lives in the lesson's `extra` map under [`KEY`], not in a column, so both stores
//! keep it without a migration and an older Lore still reads the lesson. Reading it fails
//! closed: a mark that does not parse hides the lesson from every agent.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::Lesson;
use crate::scope::Scope;

/// The key of the mark in [`Lesson::extra`].
pub const KEY: &str = "org";

/// The tag a propagated lesson carries, `propagated:{source agent}` (seed 002).
pub fn propagated_tag(source: &str) -> String {
    format!("propagated:{source}")
}

/// How far a lesson reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// The source agent, and the agents it was propagated to.
    Agent,
    /// Propagated to agents of the source agent's role.
    Role,
    /// Propagated to agents of the source agent's department.
    Department,
    /// The organization's shared pool: every handle of the scope.
    Org,
}

/// Whom a lesson reaches, stored in [`Lesson::extra`] under [`KEY`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrgMark {
    /// How far.
    pub reach: Reach,
    /// The agent that learned it; `None` for the org pool's own lessons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The source agent's role when it learned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The source agent's department when it learned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub department: Option<String>,
    /// The agents it was propagated to; never the owner.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub targets: BTreeSet<String>,
    /// For an org lesson: the distinct agents whose lessons made the pattern.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub seen_by: BTreeSet<String>,
}

impl OrgMark {
    /// The mark of a lesson `scope`'s agent learned: its own, not yet propagated.
    pub fn personal(scope: &Scope) -> Self {
        Self {
            reach: Reach::Agent,
            owner: scope.agent.clone(),
            role: scope.role.clone(),
            department: scope.department.clone(),
            targets: BTreeSet::new(),
            seen_by: BTreeSet::new(),
        }
    }

    /// The mark of an org-pool lesson made from the lessons of `seen_by`.
    pub fn org(seen_by: BTreeSet<String>) -> Self {
        Self {
            reach: Reach::Org,
            owner: None,
            role: None,
            department: None,
            targets: BTreeSet::new(),
            seen_by,
        }
    }
}

/// What a lesson's mark says, if it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marked {
    /// No mark: shared inside the scope.
    Shared,
    /// A valid mark.
    Mark(OrgMark),
    /// A mark that does not parse: treated as nobody's (fails closed).
    Broken,
}

/// Reads `lesson`'s mark.
pub fn mark(lesson: &Lesson) -> Marked {
    match lesson.extra.get(KEY) {
        None => Marked::Shared,
        Some(v) => serde_json::from_value(v.clone()).map_or(Marked::Broken, Marked::Mark),
    }
}

/// Writes `mark` into `lesson`.
pub fn set_mark(lesson: &mut Lesson, mark: &OrgMark) {
    let value = serde_json::to_value(mark).unwrap_or(Value::Null);
    lesson.extra.insert(KEY.to_owned(), value);
}

/// Whether `lesson` belongs to the organization's shared pool.
pub fn is_org(lesson: &Lesson) -> bool {
    matches!(mark(lesson), Marked::Mark(m) if m.reach == Reach::Org)
}

/// The agent whose own lesson this is, if it is someone's.
pub fn owner(lesson: &Lesson) -> Option<String> {
    match mark(lesson) {
        Marked::Mark(m) if m.reach != Reach::Org => m.owner,
        _ => None,
    }
}

/// Whether a handle of `scope` may see `lesson`, beyond the scope's domains and skills.
///
/// Shared and org lessons: yes. A personal or propagated lesson: its owner sees it; an agent it
/// was propagated to sees it while it still holds the role (or department) it was propagated
/// by; a handle with no agent, role or department (a person curating, the local CLI) sees
/// everything of its scope; a handle with a role or department but no agent sees what was
/// propagated to that role or department. A broken mark: only the unrestricted person.
pub fn visible(lesson: &Lesson, scope: &Scope) -> bool {
    visible_marked(&mark(lesson), scope)
}

/// [`visible`] for a lesson whose mark was read already: what a filter asks of every
/// candidate of a search, so the mark is read once per lesson rather than once per search.
pub fn visible_marked(marked: &Marked, scope: &Scope) -> bool {
    let curator = sees_everything(scope);
    let mark = match marked {
        Marked::Shared => return true,
        Marked::Broken => return curator,
        Marked::Mark(m) => m,
    };
    if mark.reach == Reach::Org || curator {
        return true;
    }
    let holds = match mark.reach {
        Reach::Role => scope.role.is_some() && scope.role == mark.role,
        Reach::Department => scope.department.is_some() && scope.department == mark.department,
        Reach::Agent | Reach::Org => false,
    };
    match &scope.agent {
        Some(agent) => {
            mark.owner.as_ref() == Some(agent) || (holds && mark.targets.contains(agent))
        }
        None => holds,
    }
}

/// The agent of no member. A handle acting for it sees what every member of its scope sees —
/// shared and org lessons — and nothing a member owns or was propagated; what is made once for
/// everyone (a digest, an evaluation run) is made through such a handle, so that it carries no
/// lesson some reader may not see. It is not a valid agent name, so no credential can hold it.
pub const EVERY_MEMBER: &str = "(every member)";

/// `scope` as [`EVERY_MEMBER`] sees it: the same domains and skills, no role, no department.
pub fn every_member(scope: &Scope) -> Scope {
    Scope {
        agent: Some(EVERY_MEMBER.to_owned()),
        role: None,
        department: None,
        ..scope.clone()
    }
}

/// Whether [`visible`] admits every lesson of `scope`'s domains and skills: a handle with no
/// agent, role or department (a person curating, the local CLI). Callers use it to skip
/// reading lessons one by one when nothing can be hidden.
pub fn sees_everything(scope: &Scope) -> bool {
    scope.agent.is_none() && scope.role.is_none() && scope.department.is_none()
}

/// How a lesson is propagated (seed 002's strategies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Propagation {
    /// The source agent's alone (the safe default).
    #[default]
    None,
    /// Agents with the source agent's role.
    Role,
    /// Agents in the source agent's department.
    Department,
}

impl Propagation {
    /// Parses `none`, `role` or `department`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the choices.
    pub fn parse(raw: &str) -> Result<Self> {
        match raw {
            "none" => Ok(Self::None),
            "role" => Ok(Self::Role),
            "department" => Ok(Self::Department),
            _ => Err(Error::invalid(
                "propagation",
                format!("{raw:?}; expected none, role or department"),
            )),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Role => "role",
            Self::Department => "department",
        }
    }
}

/// One agent of the organization as Lore has seen it: its name, role and department.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Member {
    /// The agent.
    pub agent: String,
    /// Its role, if it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Its department, if it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub department: Option<String>,
}

/// The member whose own lesson this is, as its mark names it (none for a shared, org or
/// broken one).
pub fn owner_member(lesson: &Lesson) -> Option<Member> {
    match mark(lesson) {
        Marked::Mark(m) if m.reach != Reach::Org => Some(Member {
            agent: m.owner?,
            role: m.role,
            department: m.department,
        }),
        _ => None,
    }
}

/// The member that recorded a run, from the note under [`KEY`] in its `extra`.
pub fn run_member(extra: &serde_json::Map<String, Value>) -> Option<Member> {
    serde_json::from_value(extra.get(KEY)?.clone()).ok()
}

/// The organization's members from what Lore has seen, by agent name: each owner of a
/// member's lesson, with the role and department of the first of `owners` naming it, then each
/// agent of `runs` (oldest first), the latest run's role and department winning, since a run is
/// the agent's own word about itself now.
pub fn roster(
    owners: impl IntoIterator<Item = Member>,
    runs: impl IntoIterator<Item = Member>,
) -> Vec<Member> {
    let mut by_agent: std::collections::BTreeMap<String, Member> = Default::default();
    for member in owners {
        by_agent.entry(member.agent.clone()).or_insert(member);
    }
    for member in runs {
        by_agent.insert(member.agent.clone(), member);
    }
    by_agent.into_values().collect()
}

/// The agents a lesson of `source` reaches under `strategy`: members sharing its role (or
/// department), never `source` itself, in name order, at most `cap`.
pub fn targets(
    source: &Member,
    members: &[Member],
    strategy: Propagation,
    cap: usize,
) -> BTreeSet<String> {
    let same = |m: &Member| match strategy {
        Propagation::None => false,
        Propagation::Role => source.role.is_some() && m.role == source.role,
        Propagation::Department => source.department.is_some() && m.department == source.department,
    };
    let mut names: Vec<&String> = members
        .iter()
        .filter(|m| m.agent != source.agent && same(m))
        .map(|m| &m.agent)
        .collect();
    names.sort();
    names.dedup();
    names.into_iter().take(cap).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::LessonId;
    use crate::model::{LessonSource, LessonStatus, Tiers, UtilityStats};
    use crate::scope::SkillPath;
    use chrono::Utc;

    fn lesson() -> Lesson {
        Lesson {
            id: LessonId::generate(Utc::now()),
            skill: SkillPath::parse("hr/screen").unwrap(),
            agent: None,
            correction_id: None,
            execution_id: None,
            mistake: String::new(),
            root_cause: String::new(),
            rule: "Weigh design".into(),
            applies_when: String::new(),
            triggers: Vec::new(),
            tags: Vec::new(),
            tiers: Tiers::default(),
            confidence: 0.5,
            source: LessonSource::Manual,
            status: LessonStatus::Approved,
            utility: UtilityStats::default(),
            links: Vec::new(),
            validated_by_test: false,
            generated_test_ids: Vec::new(),
            merged_from: Vec::new(),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            extra: serde_json::Map::new(),
        }
    }

    fn member(agent: &str, role: &str, department: &str) -> Member {
        Member {
            agent: agent.into(),
            role: Some(role.into()),
            department: Some(department.into()),
        }
    }

    fn scope(agent: Option<&str>, role: Option<&str>, department: Option<&str>) -> Scope {
        Scope {
            agent: agent.map(Into::into),
            role: role.map(Into::into),
            department: department.map(Into::into),
            ..Scope::default()
        }
    }

    #[test]
    fn targets_share_the_role_exclude_the_source_and_stop_at_the_cap() {
        let source = member("a", "screener", "hr");
        let members = vec![
            source.clone(),
            member("d", "screener", "hr"),
            member("b", "screener", "sales"),
            member("c", "screener", "hr"),
            member("e", "writer", "hr"),
        ];
        let by_role = targets(&source, &members, Propagation::Role, 2);
        assert_eq!(by_role, ["b", "c"].map(String::from).into());
        let by_department = targets(&source, &members, Propagation::Department, 10);
        assert_eq!(by_department, ["c", "d", "e"].map(String::from).into());
        assert!(targets(&source, &members, Propagation::None, 10).is_empty());
    }

    #[test]
    fn a_propagated_lesson_reaches_its_owner_and_targets_of_the_same_role_only() {
        let mut mark = OrgMark::personal(&scope(Some("a"), Some("screener"), None));
        mark.reach = Reach::Role;
        mark.targets = ["b".to_owned()].into();
        let mut lesson = lesson();
        set_mark(&mut lesson, &mark);
        assert!(visible(&lesson, &scope(Some("a"), Some("writer"), None)));
        assert!(visible(&lesson, &scope(Some("b"), Some("screener"), None)));
        assert!(!visible(&lesson, &scope(Some("b"), Some("writer"), None)));
        assert!(!visible(&lesson, &scope(Some("c"), Some("screener"), None)));
        assert!(visible(&lesson, &scope(None, Some("screener"), None)));
        assert!(!visible(&lesson, &scope(None, Some("writer"), None)));
        assert!(visible(&lesson, &Scope::unrestricted()));
    }

    #[test]
    fn a_broken_mark_hides_the_lesson_from_agents() {
        let mut lesson = lesson();
        lesson.extra.insert(KEY.into(), Value::from("garbage"));
        assert_eq!(mark(&lesson), Marked::Broken);
        assert!(!visible(&lesson, &scope(Some("a"), Some("x"), None)));
        assert!(!visible(&lesson, &scope(Some("a"), None, None)));
        assert!(visible(&lesson, &Scope::unrestricted()));
    }

    #[test]
    fn org_and_unmarked_lessons_are_shared() {
        let mut lesson = lesson();
        assert!(visible(&lesson, &scope(Some("z"), Some("y"), None)));
        set_mark(&mut lesson, &OrgMark::org(["a".to_owned()].into()));
        assert!(is_org(&lesson));
        assert!(visible(&lesson, &scope(Some("z"), Some("y"), None)));
        assert_eq!(owner(&lesson), None);
    }
}
