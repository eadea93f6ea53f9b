//! Organization memory (seed 002): members' own lessons, propagation, and the org pool.
//!
//! The rules are in [`lore_core::org`]; this service applies them to the store. Three things
//! here are safety rails rather than features, and each is enforced at one point every door
//! passes through:
//!
//! - **Visibility.** What a handle lists, reads, searches, recalls or exports passes
//!   [`lore_core::org::visible`]; another agent's own lesson is not found.
//! - **Never back to the source.** Propagation targets come from [`lore_core::org::targets`],
//!   which leaves the source agent out and stops at the cap.
//! - **A person approves the org pool.** [`Engine::org_pool`] writes proposals in
//!   `needs_review` whatever the curation mode, and the one function that changes a status
//!   ([`Engine::transition_many`] and [`Engine::approve`]) refuses to make an org lesson
//!   retrievable unless it is a review decision by a person. No setting reaches this: the
//!   configuration has no field for it.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};
use tracing::instrument;

use crate::curate::LIVE;
use crate::engine::{Engine, audit};
use crate::review::Attribution;
use lore_core::error::{Error, Result};
use lore_core::id::LessonId;
use lore_core::model::{AuditAction, AuthorKind, Lesson, LessonStatus, LinkKind, RecordKind};
use lore_core::org::{self, Marked, Member, OrgMark, Propagation, Reach};
use lore_core::ports::store::{ListFilter, OnDuplicate, Record, StoreCounts};
use lore_core::supersession::{Profile, Verdict};

/// What one propagation did.
#[derive(Clone, Debug, Serialize)]
pub struct Propagated {
    /// The lesson, as stored now.
    pub lesson: LessonId,
    /// The strategy used.
    pub strategy: Propagation,
    /// The agents it now reaches besides its owner.
    pub targets: BTreeSet<String>,
    /// Agents that matched but were left out by the cap.
    pub capped: usize,
}

/// What the org pool did with a pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolOutcome {
    /// Proposed as an org lesson, waiting for a person (or would be, on a dry run).
    Proposed,
    /// An org lesson already says it (proposed, approved or rejected).
    AlreadyProposed,
    /// It contradicts a live org lesson: not proposed, left for a person.
    Conflict,
    /// Its confidence is below `org.min_confidence`.
    BelowConfidence,
    /// The cycle had made `org.max_proposals` proposals already.
    OverCycleCap,
}

impl PoolOutcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proposed => "proposed",
            Self::AlreadyProposed => "already_proposed",
            Self::Conflict => "conflict",
            Self::BelowConfidence => "below_confidence",
            Self::OverCycleCap => "over_cycle_cap",
        }
    }
}

/// One rule the org pool found, and what it did with it.
#[derive(Clone, Debug, Serialize)]
pub struct PoolPattern {
    /// The skill.
    pub skill: lore_core::scope::SkillPath,
    /// The rule, as the most confident agent wrote it.
    pub rule: String,
    /// The distinct agents that learned it.
    pub agents: BTreeSet<String>,
    /// The members' lessons behind it.
    pub lessons: Vec<LessonId>,
    /// The proposal written, waiting for a person (none on a dry run, a conflict or a repeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal: Option<LessonId>,
    /// What happened.
    pub outcome: PoolOutcome,
    /// Older org lessons the proposal will supersede once approved (FULL verdicts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<LessonId>,
    /// Older org lessons it contradicts (CONFLICT verdicts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<LessonId>,
}

/// What one org pool cycle did.
#[derive(Clone, Debug, Serialize)]
pub struct PoolReport {
    /// Whether anything was written.
    pub dry_run: bool,
    /// Distinct agents needed for a pattern.
    pub min_agents: usize,
    /// Patterns seen by enough agents.
    pub patterns: Vec<PoolPattern>,
    /// Proposals written.
    pub proposed: usize,
}

impl Engine {
    /// A handle that acts as `kind`: a server says whether its caller is a person or an agent,
    /// from the credential. Without one, a handle that names an agent acts as that agent and
    /// any other (the local CLI) as a person.
    pub fn as_author(&self, kind: AuthorKind) -> Self {
        Self {
            author: Some(kind),
            ..self.clone()
        }
    }

    /// Whether this handle acts for a person.
    pub(crate) fn is_person(&self) -> bool {
        self.author_kind() == AuthorKind::Human
    }

    /// Who this handle writes as (see [`Engine::as_author`]): what a server's doors pass on
    /// when a call stores something a person or an agent wrote.
    pub fn author_kind(&self) -> AuthorKind {
        match self.author {
            Some(kind) => kind,
            None if self.scope.agent.is_none() => AuthorKind::Human,
            None => AuthorKind::Agent,
        }
    }

    /// The scope this handle reads lessons through. An agent's credential that names no member
    /// (an agent token without `agent:`) is no curator: it reads what every member reads —
    /// shared and org lessons — and no member's own. A person, or the local CLI, with no member
    /// named reads everything of its scope.
    pub(crate) fn view(&self) -> std::borrow::Cow<'_, lore_core::Scope> {
        if self.author == Some(AuthorKind::Agent) && org::sees_everything(&self.scope) {
            std::borrow::Cow::Owned(org::every_member(&self.scope))
        } else {
            std::borrow::Cow::Borrowed(&self.scope)
        }
    }

    /// Whether this handle may see `lesson` (scope and organization both).
    pub(crate) fn sees(&self, lesson: &Lesson) -> bool {
        self.scope.allows(&lesson.skill) && org::visible(lesson, &self.view())
    }

    /// The lessons `filter` selects, split into those this handle sees and those another
    /// member owns: listing keeps the first, counting subtracts the second.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn visible_lessons(
        &self,
        filter: &ListFilter,
    ) -> Result<(Vec<Lesson>, Vec<Lesson>)> {
        let view = self.view();
        Ok(self
            .store
            .lessons(filter)?
            .into_iter()
            .partition(|l| org::visible(l, &view)))
    }

    /// The store's counts inside the scope, less what another member's own lessons add: the
    /// lessons themselves, the tests they name and their audit entries. A handle that sees
    /// everything takes the store's counts as they are, without reading a lesson.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn visible_counts(&self) -> Result<StoreCounts> {
        let mut counts = self.store.counts(&self.scope)?;
        if org::sees_everything(&self.view()) {
            return Ok(counts);
        }
        let (seen, hidden) = self.visible_lessons(&self.filter())?;
        counts.lessons = seen.len() as u64;
        let tests: BTreeSet<&String> = seen.iter().flat_map(|l| &l.generated_test_ids).collect();
        counts.tests = tests.len() as u64;
        for lesson in &hidden {
            let entries = self.store.audit(Some(lesson.id.as_str()))?.len() as u64;
            counts.audit_entries = counts.audit_entries.saturating_sub(entries);
        }
        Ok(counts)
    }

    /// Refuses to make an org lesson retrievable by any move but a person's approval.
    pub(crate) fn check_org_move(
        &self,
        lesson: &Lesson,
        to: LessonStatus,
        approval: bool,
    ) -> Result<()> {
        if !org::is_org(lesson) || !matches!(to, LessonStatus::Approved | LessonStatus::Trial) {
            return Ok(());
        }
        if !approval {
            return Err(Error::Forbidden(format!(
                "{} is an org lesson; only a person's approval makes it {}",
                lesson.id,
                to.as_str()
            )));
        }
        if !self.is_person() {
            return Err(Error::Forbidden(format!(
                "{} is an org lesson; a person must approve it, not an agent",
                lesson.id
            )));
        }
        Ok(())
    }

    /// Marks a lesson a member is learning as its own, propagated as configured.
    pub(crate) fn mark_learned(&self, lesson: &mut Lesson) -> Result<()> {
        if !self.scope.is_member() || !matches!(org::mark(lesson), Marked::Shared) {
            return Ok(());
        }
        let mut mark = OrgMark::personal(&self.scope);
        if self.config.org.propagation != Propagation::None {
            let (targets, _) = self.targets_for(&mark, self.config.org.propagation)?;
            spread(lesson, &mut mark, self.config.org.propagation, targets);
        }
        org::set_mark(lesson, &mark);
        Ok(())
    }

    /// The organization's agents as Lore has seen them: each member that recorded a run or
    /// learned a lesson inside this handle's scope, with the role and department it last named.
    ///
    /// # Errors
    /// Store failures.
    pub fn members(&self) -> Result<Vec<Member>> {
        self.store.members(&self.unmarked_filter().scope)
    }

    /// What a run records of the member that made it, so propagation can find it later.
    pub(crate) fn member_note(&self) -> Option<Value> {
        if !self.scope.is_member() {
            return None;
        }
        serde_json::to_value(Member {
            agent: self.scope.agent.clone()?,
            role: self.scope.role.clone(),
            department: self.scope.department.clone(),
        })
        .ok()
    }

    /// Propagates an agent's own lesson to the agents of its role or department (`strategy`,
    /// or the configured one), at most the configured number, never back to its owner.
    /// Propagating again recomputes the targets.
    ///
    /// # Errors
    /// [`Error::NotFound`] for a lesson this handle cannot see; [`Error::Invalid`] for a lesson
    /// no member learned, for `none`, and for a role or department the owner never named;
    /// [`Error::Forbidden`] when an agent other than the owner asks.
    #[instrument(skip_all, fields(lesson = %id))]
    pub fn propagate(&self, id: &LessonId, strategy: Option<Propagation>) -> Result<Propagated> {
        let lesson = self.lesson(id)?;
        let mut mark = match org::mark(&lesson) {
            Marked::Mark(mark) => mark,
            Marked::Shared => {
                return Err(Error::invalid(
                    "lesson",
                    format!("{id} is shared already; only a member's own lesson is propagated"),
                ));
            }
            Marked::Broken => {
                return Err(Error::invalid(
                    "lesson",
                    format!("{id} has an unreadable organization mark (extra.org); fix it first"),
                ));
            }
        };
        let Some(owner) = mark.owner.clone().filter(|_| mark.reach != Reach::Org) else {
            return Err(Error::invalid(
                "lesson",
                format!("{id} is an org lesson; it reaches everyone once approved"),
            ));
        };
        if !self.is_person() && self.scope.agent.as_deref() != Some(owner.as_str()) {
            return Err(Error::Forbidden(format!(
                "{id} is {owner}'s; only its owner or a person propagates it"
            )));
        }
        self.config.org.validate()?;
        let strategy = strategy.unwrap_or(self.config.org.propagation);
        let (targets, capped) = self.targets_for(&mark, strategy)?;
        let mut after = lesson.clone();
        spread(&mut after, &mut mark, strategy, targets.clone());
        org::set_mark(&mut after, &mark);
        let why = Attribution::new(None, format!("propagated by {}", strategy.as_str()))
            .with_evidence(json!({ "targets": targets, "capped": capped }));
        let update = self.planned_edit(lesson, after, &why);
        self.apply(vec![update])?;
        Ok(Propagated {
            lesson: id.clone(),
            strategy,
            targets,
            capped,
        })
    }

    /// The targets of `mark`'s owner under `strategy`, and how many the cap left out.
    fn targets_for(
        &self,
        mark: &OrgMark,
        strategy: Propagation,
    ) -> Result<(BTreeSet<String>, usize)> {
        let named = match strategy {
            Propagation::None => {
                return Err(Error::invalid(
                    "propagation",
                    "none: name role or department, or set org.propagation",
                ));
            }
            Propagation::Role => mark.role.is_some(),
            Propagation::Department => mark.department.is_some(),
        };
        if !named {
            return Err(Error::invalid(
                "propagation",
                format!(
                    "the lesson's owner named no {}; there is no one to propagate to",
                    strategy.as_str()
                ),
            ));
        }
        let source = Member {
            agent: mark.owner.clone().unwrap_or_default(),
            role: mark.role.clone(),
            department: mark.department.clone(),
        };
        let members = self.members()?;
        let all = org::targets(&source, &members, strategy, usize::MAX).len();
        let targets = org::targets(&source, &members, strategy, self.config.org.max_targets);
        Ok((targets.clone(), all - targets.len()))
    }

    /// The store filter of this handle's domains and skills, without its organization: the
    /// pool and the roster look at every member's lessons.
    fn unmarked_filter(&self) -> ListFilter {
        let mut filter = self.filter();
        filter.scope.agent = None;
        filter.scope.role = None;
        filter.scope.department = None;
        filter
    }

    /// One cycle of the org pool: rules that at least `min_agents` distinct agents learned
    /// become org lessons in `needs_review`, for a person to approve. A proposal is checked
    /// against the skill's org lessons first: a CONFLICT is not proposed but reported for a
    /// person; a FULL verdict makes it supersede the older lesson once approved; PARTIAL lets
    /// both stand. With `dry_run`, nothing is written.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for an agent's handle (the pool reads every member's lessons);
    /// [`Error::Invalid`] for an invalid [`crate::OrgConfig`]; store failures.
    #[instrument(skip_all)]
    pub fn org_pool(&self, dry_run: bool) -> Result<PoolReport> {
        if !self.is_person() {
            return Err(Error::Forbidden(
                "the org pool reads every member's lessons; a person runs it".into(),
            ));
        }
        let cfg = self.config.org;
        cfg.validate()?;
        let mut statuses: BTreeSet<LessonStatus> = LIVE.into();
        let live = self.store.lessons(&ListFilter {
            statuses: Some(statuses.clone()),
            ..self.unmarked_filter()
        })?;
        statuses.insert(LessonStatus::Rejected);
        let org_lessons: Vec<Lesson> = self
            .store
            .lessons(&ListFilter {
                statuses: Some(statuses),
                ..self.unmarked_filter()
            })?
            .into_iter()
            .filter(org::is_org)
            .collect();
        let mut report = PoolReport {
            dry_run,
            min_agents: cfg.min_agents,
            patterns: Vec::new(),
            proposed: 0,
        };
        let mut records = Vec::new();
        for cluster in clusters(&live, &self.config.thresholds) {
            let agents: BTreeSet<String> = cluster.iter().filter_map(|l| org::owner(l)).collect();
            if agents.len() < cfg.min_agents {
                continue;
            }
            let mut pattern = self.judge(&cluster, agents, &org_lessons);
            if pattern.0.outcome == PoolOutcome::Proposed && report.proposed >= cfg.max_proposals {
                pattern.0.outcome = PoolOutcome::OverCycleCap;
            }
            if pattern.0.outcome == PoolOutcome::Proposed {
                report.proposed += 1;
                if !dry_run {
                    let proposal = pattern.1.expect("a proposal comes with its lesson");
                    pattern.0.proposal = Some(proposal.id.clone());
                    records.push(Record::Audit(audit(
                        RecordKind::Lesson,
                        proposal.id.as_str(),
                        AuditAction::Created,
                        (None, Some(LessonStatus::NeedsReview)),
                        &self.actor(None),
                        self.now(),
                        &format!(
                            "org pool: learned by {} agents; waits for a person",
                            pattern.0.agents.len()
                        ),
                        json!({ "lessons": pattern.0.lessons, "agents": pattern.0.agents }),
                    )));
                    records.push(Record::Lesson(proposal));
                }
            }
            report.patterns.push(pattern.0);
        }
        if !records.is_empty() {
            self.store.write(&records, OnDuplicate::Fail)?;
            let written: Vec<&Lesson> = records
                .iter()
                .filter_map(|r| match r {
                    Record::Lesson(l) => Some(l),
                    _ => None,
                })
                .collect();
            self.embed_written(&written);
        }
        tracing::info!(
            patterns = report.patterns.len(),
            proposed = report.proposed,
            dry_run,
            "org pool cycle complete; proposals wait for a person"
        );
        Ok(report)
    }

    /// What the pool does with one cluster of members' lessons: the report line and, when it
    /// proposes, the proposal.
    fn judge(
        &self,
        cluster: &[&Lesson],
        agents: BTreeSet<String>,
        org_lessons: &[Lesson],
    ) -> (PoolPattern, Option<Lesson>) {
        let best = cluster
            .iter()
            .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
            .expect("a cluster is never empty");
        let mut pattern = PoolPattern {
            skill: best.skill.clone(),
            rule: best.rule.clone(),
            agents: agents.clone(),
            lessons: cluster.iter().map(|l| l.id.clone()).collect(),
            proposal: None,
            outcome: PoolOutcome::Proposed,
            supersedes: Vec::new(),
            conflicts: Vec::new(),
        };
        let mut proposal = (*best).clone();
        let now = self.now();
        proposal.id = LessonId::generate(now);
        proposal.agent = None;
        proposal.correction_id = None;
        proposal.execution_id = None;
        proposal.merged_from = Vec::new();
        proposal.links = Vec::new();
        proposal.utility = Default::default();
        proposal.tags.retain(|t| !t.starts_with("propagated:"));
        proposal.status = LessonStatus::NeedsReview;
        proposal.created_at = now;
        proposal.updated_at = now;
        proposal.extra.remove(org::KEY);
        org::set_mark(&mut proposal, &OrgMark::org(agents));
        if proposal.confidence < self.config.org.min_confidence {
            pattern.outcome = PoolOutcome::BelowConfidence;
            return (pattern, None);
        }
        let profile = Profile::of(&proposal);
        for old in org_lessons.iter().filter(|o| o.skill == proposal.skill) {
            match profile.verdict(&Profile::of(old), &self.config.thresholds) {
                Verdict::Duplicate | Verdict::NearDuplicate { .. } => {
                    pattern.outcome = PoolOutcome::AlreadyProposed;
                    pattern.proposal = Some(old.id.clone());
                }
                Verdict::Conflict { .. } if old.status != LessonStatus::Rejected => {
                    pattern.conflicts.push(old.id.clone());
                }
                Verdict::Full { .. } if old.status == LessonStatus::Approved => {
                    pattern.supersedes.push(old.id.clone());
                }
                _ => {}
            }
        }
        if pattern.outcome == PoolOutcome::AlreadyProposed {
            return (pattern, None);
        }
        // CONFLICT before FULL (seed 002): a contradiction is never proposed as a replacement.
        if !pattern.conflicts.is_empty() {
            pattern.outcome = PoolOutcome::Conflict;
            pattern.supersedes.clear();
            tracing::warn!(rule = %pattern.rule, conflicts = ?pattern.conflicts,
                "org pool: a pattern contradicts an org lesson; left for a person");
            return (pattern, None);
        }
        for old in &pattern.supersedes {
            crate::review::link(&mut proposal, LinkKind::Supersedes, old);
        }
        (pattern, Some(proposal))
    }
}

/// Sets `mark` to reach `targets` by `strategy` and tags the lesson as propagated.
fn spread(
    lesson: &mut Lesson,
    mark: &mut OrgMark,
    strategy: Propagation,
    targets: BTreeSet<String>,
) {
    mark.reach = match strategy {
        Propagation::Role => Reach::Role,
        Propagation::Department => Reach::Department,
        Propagation::None => Reach::Agent,
    };
    mark.targets = targets;
    if let Some(owner) = &mark.owner {
        let tag = org::propagated_tag(owner);
        if !lesson.tags.contains(&tag) {
            lesson.tags.push(tag);
        }
    }
}

/// Members' own lessons grouped by skill and by rule: each joins the first group whose first
/// lesson it duplicates or nearly duplicates.
fn clusters<'a>(
    live: &'a [Lesson],
    thresholds: &lore_core::supersession::Thresholds,
) -> Vec<Vec<&'a Lesson>> {
    let mut groups: Vec<(Profile, Vec<&Lesson>)> = Vec::new();
    for lesson in live.iter().filter(|l| org::owner(l).is_some()) {
        let profile = Profile::of(lesson);
        let home = groups.iter_mut().find(|(first, members)| {
            members[0].skill == lesson.skill
                && matches!(
                    profile.verdict(first, thresholds),
                    Verdict::Duplicate | Verdict::NearDuplicate { .. }
                )
        });
        match home {
            Some((_, members)) => members.push(lesson),
            None => groups.push((profile, vec![lesson])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}
