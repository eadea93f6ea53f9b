//! Where a record belongs, and what a caller may see and write.
//!
//! Every record names a skill as `domain/skill`. The path is validated once, here, because it
//! becomes a folder under `skills/`: `..`, backslashes and absolute paths would let a caller
//! write outside it. A [`Scope`] narrows an Engine handle to some domains and skills (seed 000's
//! `DomainScopedStore`): reads outside it return nothing, writes outside it are refused.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A validated `domain/skill` path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SkillPath {
    full: String,
    slash: usize,
}

/// Checks one plain name: a segment of a skill path (`field` "skill path") or a name a scope
/// gives alone (a domain, a role, a department: `field` is that name), so the error names what
/// the caller wrote.
fn check_segment(raw: &str, segment: &str, which: &str, field: &str) -> Result<()> {
    let bad = |why: String| Err(Error::invalid(field, format!("{raw:?}: {why}")));
    if segment.is_empty() {
        let hint = if field == "skill path" {
            "; use `domain/skill`"
        } else {
            ""
        };
        return bad(format!("the {which} is empty{hint}"));
    }
    if segment == "." || segment == ".." {
        return bad(format!(
            "the {which} is {segment:?}; relative segments are not allowed"
        ));
    }
    if segment.starts_with('.') {
        return bad(format!("the {which} starts with '.'"));
    }
    if segment.len() > 64 {
        return bad(format!("the {which} is longer than 64 characters"));
    }
    // Lowercase only: a skill is a folder, and `Support/X` and `support/x` would be one folder on
    // a case-insensitive file system but two skills in the store.
    if let Some(c) = segment
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.')))
    {
        return bad(format!(
            "the {which} has the character {c:?}; use lowercase letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

/// Checks a domain name as a scope names it: one segment of a skill path.
///
/// # Errors
/// [`Error::Invalid`] naming what is wrong.
pub fn check_domain(domain: &str) -> Result<()> {
    check_name("domain", domain)
}

/// Checks an organization name (a role or a department) as a scope names it: one plain
/// lowercase segment, like a domain, so it reads the same in a token, a JWT and a flag.
///
/// # Errors
/// [`Error::Invalid`] naming `what` and the problem.
pub fn check_org_name(what: &str, name: &str) -> Result<()> {
    check_name(what, name)
}

fn check_name(what: &str, domain: &str) -> Result<()> {
    if domain.contains('/') || domain.contains('\\') {
        return Err(Error::invalid(
            what,
            format!("{domain:?}: a {what} is one name, without '/' or '\\'"),
        ));
    }
    check_segment(domain, domain, what, what)
}

impl SkillPath {
    /// Parses `domain/skill`.
    ///
    /// # Errors
    /// [`Error::Invalid`] for anything but two plain segments: an absolute path, a backslash,
    /// `..`, an empty segment, or characters outside letters, digits, `-`, `_` and `.`.
    pub fn parse(raw: &str) -> Result<Self> {
        let bad = |why: &str| Err(Error::invalid("skill path", format!("{raw:?}: {why}")));
        if raw.contains('\\') {
            return bad("backslashes are not allowed; use `domain/skill`");
        }
        if raw.starts_with('/') {
            return bad("absolute paths are not allowed; use `domain/skill`");
        }
        let Some((domain, skill)) = raw.split_once('/') else {
            return bad("expected `domain/skill`");
        };
        if skill.contains('/') {
            if raw.split('/').any(|s| s == "..") {
                return bad("relative segments ('..') are not allowed");
            }
            return bad("expected exactly two segments, `domain/skill`");
        }
        check_segment(raw, domain, "domain", "skill path")?;
        check_segment(raw, skill, "skill name", "skill path")?;
        Ok(Self {
            full: raw.to_owned(),
            slash: domain.len(),
        })
    }

    /// The domain, the part before the slash.
    pub fn domain(&self) -> &str {
        &self.full[..self.slash]
    }

    /// The skill name, the part after the slash.
    pub fn name(&self) -> &str {
        &self.full[self.slash + 1..]
    }

    /// The whole path, `domain/skill`.
    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl fmt::Display for SkillPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl TryFrom<String> for SkillPath {
    type Error = Error;
    fn try_from(raw: String) -> Result<Self> {
        Self::parse(&raw)
    }
}

impl From<SkillPath> for String {
    fn from(path: SkillPath) -> String {
        path.full
    }
}

impl std::str::FromStr for SkillPath {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self> {
        Self::parse(raw)
    }
}

/// The part of memory a handle may read and write.
///
/// `domains` and `skills` are allow-lists; `None` means unrestricted. A skill is inside the scope
/// when its domain is allowed (or domains are unrestricted) and, if skills are listed, it is one
/// of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// The tenant whose memory this is; `None` for the single-tenant embedded default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Allowed domains; `None` allows all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<BTreeSet<String>>,
    /// Allowed skills; `None` allows every skill of the allowed domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<BTreeSet<SkillPath>>,
    /// The agent acting through this handle, recorded on what it writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The agent's role in the organization (`screener`, `triage`), not a permission: with it,
    /// the handle sees lessons propagated to that role ([`crate::org`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The agent's department (`hr`, `support`), likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub department: Option<String>,
}

impl Scope {
    /// A scope that allows everything.
    pub fn unrestricted() -> Self {
        Self::default()
    }

    /// A scope limited to the given domains.
    pub fn domains<I, S>(domains: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            domains: Some(domains.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }

    /// Whether records of `skill` are inside this scope.
    pub fn allows(&self, skill: &SkillPath) -> bool {
        let domain_ok = self
            .domains
            .as_ref()
            .is_none_or(|d| d.contains(skill.domain()) || d.contains("*"));
        let skill_ok = self.skills.as_ref().is_none_or(|s| s.contains(skill));
        domain_ok && skill_ok
    }

    /// Whether the handle belongs to an organization: it names a role or a department. Lessons
    /// such an agent learns are its own until propagated ([`crate::org`]).
    pub fn is_member(&self) -> bool {
        self.agent.is_some() && (self.role.is_some() || self.department.is_some())
    }

    /// Refuses a write to `skill` when it lies outside this scope.
    ///
    /// # Errors
    /// [`Error::Forbidden`] naming the skill.
    pub fn check_write(&self, skill: &SkillPath) -> Result<()> {
        if self.allows(skill) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{skill} is outside this handle's scope"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_role_department_or_domain_is_refused_under_its_own_name() {
        for (what, name) in [("role", "Ops Team"), ("department", ".."), ("domain", "")] {
            let err = if what == "domain" {
                check_domain(name)
            } else {
                check_org_name(what, name)
            }
            .unwrap_err()
            .to_string();
            assert!(err.contains(what), "{err}");
            assert!(!err.contains("skill path"), "{err}");
        }
        let err = SkillPath::parse("hr/").unwrap_err().to_string();
        assert!(
            err.contains("skill path") && err.contains("domain/skill"),
            "{err}"
        );
    }

    #[test]
    fn parses_domain_and_skill() {
        let p = SkillPath::parse("hr/resume-screen").unwrap();
        assert_eq!((p.domain(), p.name()), ("hr", "resume-screen"));
    }

    #[test]
    fn refuses_paths_that_escape_the_skills_folder() {
        for (raw, needle) in [
            ("../etc/passwd", "relative"),
            ("hr/..", "relative"),
            ("..\\x", "backslash"),
            ("hr\\x", "backslash"),
            ("/etc/passwd", "absolute"),
            ("hr", "domain/skill"),
            ("hr/", "empty"),
            ("hr/a/b", "two segments"),
            ("hr/a b", "character"),
            ("hr/.hidden", "starts with"),
        ] {
            let err = SkillPath::parse(raw).unwrap_err().to_string();
            assert!(err.contains(needle), "{raw:?} gave {err:?}");
        }
    }

    #[test]
    fn refuses_uppercase_so_one_folder_is_one_skill() {
        let err = SkillPath::parse("Support/X").unwrap_err().to_string();
        assert!(err.contains("lowercase"), "{err}");
        assert!(SkillPath::parse("support/x").is_ok());
    }

    #[test]
    fn a_scope_domain_is_one_safe_segment() {
        for bad in ["../x", "a/b", "", ".hidden", "HR", "a b"] {
            assert!(check_domain(bad).is_err(), "{bad:?}");
        }
        assert!(check_domain("hr").is_ok());
    }

    #[test]
    fn scope_filters_by_domain_and_skill() {
        let hr = SkillPath::parse("hr/screen").unwrap();
        let fin = SkillPath::parse("finance/audit").unwrap();
        let scope = Scope::domains(["hr"]);
        assert!(scope.allows(&hr));
        assert!(!scope.allows(&fin));
        assert!(matches!(scope.check_write(&fin), Err(Error::Forbidden(_))));
        assert!(Scope::unrestricted().allows(&fin));
        let one_skill = Scope {
            skills: Some([hr.clone()].into()),
            ..Scope::default()
        };
        assert!(one_skill.allows(&hr));
        assert!(!one_skill.allows(&SkillPath::parse("hr/other").unwrap()));
    }
}
