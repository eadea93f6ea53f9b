//! The decision corpus (seed 004): what people decided when an agent had to ask, curated like
//! lessons and recalled by similarity, top 5.
//!
//! A decision is written by the person who resolved it, through any door, and who that was
//! comes from the handle's credential. It enters `needs_review` (or `sensitive`, alone, when it
//! holds personal or secret data) and moves only along the lessons' lifecycle table, each move
//! written with its audit entry; only `approved` decisions are ever recalled.

use serde::Serialize;
use serde_json::Value;
use tracing::instrument;

use crate::engine::{Engine, audit};
use crate::knowledge::index::Item;
use lore_core::error::{Error, Result};
use lore_core::id::DecisionId;
use lore_core::model::{AuditAction, AuditEntry, DecisionRecord, LessonStatus, RecordKind};
use lore_core::scope::SkillPath;
use lore_core::{lifecycle, limits, sensitive};
use lore_recall::{EmbedderId, Explanation};

/// How many decisions recall returns unless asked otherwise (seed 004: top 5).
pub const DEFAULT_DECISIONS: usize = 5;

/// A decision a person just made.
#[derive(Clone, Debug, Default)]
pub struct NewDecision {
    /// The skill whose agents meet such situations.
    pub skill: Option<SkillPath>,
    /// The situation that needed a person.
    pub situation: String,
    /// What was decided.
    pub action: String,
    /// Why.
    pub rationale: String,
    /// How it turned out, when known.
    pub outcome: Option<String>,
    /// What it resolved (an execution, a ticket), when named.
    pub resolves: Option<String>,
}

/// What to look up in the decision corpus.
#[derive(Clone, Debug, Default)]
pub struct DecisionQuery {
    /// The situation at hand, in plain words.
    pub text: String,
    /// Only decisions of this skill.
    pub skill: Option<SkillPath>,
    /// At most this many (default 5).
    pub limit: Option<usize>,
    /// A token budget (default: a layer's, 2,000).
    pub budget: Option<usize>,
    /// Return every candidate's explanation.
    pub explain: bool,
}

/// One decision placed in the context.
#[derive(Clone, Debug, Serialize)]
pub struct RecalledDecision {
    /// The decision.
    pub id: DecisionId,
    /// Its skill.
    pub skill: SkillPath,
    /// Its tokens.
    pub tokens: usize,
    /// Its final score.
    pub score: f64,
}

/// Decision recall's context and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct DecisionResult {
    /// The embedder of the dense candidates.
    pub embedder: EmbedderId,
    /// The budget in tokens.
    pub budget: usize,
    /// Tokens used.
    pub tokens: usize,
    /// The context: each decision quoted with its provenance.
    pub text: String,
    /// The decisions in it, in order.
    pub decisions: Vec<RecalledDecision>,
    /// Every candidate, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Explanation>>,
}

impl Engine {
    /// Records a decision a person made, as `needs_review` (`sensitive` when it holds personal
    /// or secret data), with its audit entry.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a missing skill, an empty situation, action or rationale, or text
    /// over the limits; [`Error::Forbidden`] for a skill outside this handle's scope;
    /// [`Error::Unsupported`] from a store without decisions.
    #[instrument(skip_all)]
    pub fn record_decision(&self, new: NewDecision) -> Result<DecisionRecord> {
        let skill = new
            .skill
            .ok_or_else(|| Error::invalid("skill", "a decision needs its skill, `domain/skill`"))?;
        self.scope.check_write(&skill)?;
        let sensitive = check_decision(
            &new.situation,
            &new.action,
            &new.rationale,
            new.outcome.as_deref(),
            new.resolves.as_deref(),
        )?;
        let status = if sensitive {
            LessonStatus::Sensitive
        } else {
            LessonStatus::NeedsReview
        };
        let now = self.now();
        let decision = DecisionRecord {
            id: DecisionId::generate(now),
            skill,
            situation: new.situation,
            action: new.action,
            rationale: new.rationale,
            outcome: new.outcome,
            resolves: new.resolves,
            status,
            decided_by: self.actor(None),
            created_at: now,
            updated_at: now,
        };
        let entry = audit(
            RecordKind::Decision,
            decision.id.as_str(),
            AuditAction::Created,
            (None, Some(status)),
            &decision.decided_by,
            now,
            "decision recorded",
            Value::Null,
        );
        self.store.decisions()?.put_decision(&decision, &entry)?;
        Ok(sensitive::redact_decision(&decision))
    }

    /// Moves decisions to `to` along the lessons' lifecycle, all or none, each with an audit
    /// entry naming who and why.
    ///
    /// # Errors
    /// [`Error::Invalid`] for an empty reason or a move the lifecycle forbids;
    /// [`Error::NotFound`] for an ID that is not stored or lies outside this handle's scope;
    /// [`Error::Conflict`] when one changed meanwhile. Nothing changes then.
    #[instrument(skip_all)]
    pub fn review_decisions(
        &self,
        ids: &[DecisionId],
        to: LessonStatus,
        reason: &str,
    ) -> Result<Vec<DecisionRecord>> {
        if reason.trim().is_empty() {
            return Err(Error::invalid("reason", "say why; the audit log keeps it"));
        }
        limits::text("reason", reason)?;
        if ids.is_empty() {
            return Err(Error::invalid("ids", "name at least one decision"));
        }
        let store = self.store.decisions()?;
        let now = self.now();
        let actor = self.actor(None);
        let mut updates = Vec::new();
        for id in ids {
            let stored = store
                .decision(id)?
                .filter(|d| self.scope.allows(&d.skill))
                .ok_or_else(|| Error::not_found("decision", id))?;
            lifecycle::check(stored.status, to)?;
            let entry = audit(
                RecordKind::Decision,
                id.as_str(),
                AuditAction::Transition,
                (Some(stored.status), Some(to)),
                &actor,
                now,
                reason,
                Value::Null,
            );
            let expected = stored.updated_at;
            let changed = DecisionRecord {
                status: to,
                updated_at: now,
                ..stored
            };
            updates.push((changed, expected, entry));
        }
        store.update_decisions(&updates)?;
        Ok(updates
            .iter()
            .map(|(d, ..)| sensitive::redact_decision(d))
            .collect())
    }

    /// The decisions inside this handle's scope (of `skill`, in `status`, when given), their
    /// text redacted: a decision flagged `sensitive` holds what no reader may see.
    ///
    /// # Errors
    /// [`Error::Unsupported`] from a store without decisions; store failures.
    pub fn list_decisions(
        &self,
        skill: Option<&SkillPath>,
        status: Option<LessonStatus>,
    ) -> Result<Vec<DecisionRecord>> {
        let mut all = self.store.decisions()?.decisions(&self.scope, skill)?;
        all.retain(|d| status.is_none_or(|s| d.status == s));
        Ok(all.iter().map(sensitive::redact_decision).collect())
    }

    /// One decision inside this handle's scope, its text redacted. A decision outside the
    /// scope is answered as unknown: saying it exists would tell a reader more than its scope.
    ///
    /// # Errors
    /// [`Error::NotFound`] for an ID not stored or outside the scope; [`Error::Unsupported`]
    /// from a store without decisions; store failures.
    pub fn decision(&self, id: &DecisionId) -> Result<DecisionRecord> {
        self.store
            .decisions()?
            .decision(id)?
            .filter(|d| self.scope.allows(&d.skill))
            .map(|d| sensitive::redact_decision(&d))
            .ok_or_else(|| Error::not_found("decision", id))
    }

    /// One decision's audit trail inside this handle's scope, oldest first, reasons redacted
    /// like the decision's text.
    ///
    /// # Errors
    /// As [`Engine::decision`].
    pub fn decision_audit(&self, id: &DecisionId) -> Result<Vec<AuditEntry>> {
        self.decision(id)?;
        Ok(self
            .store
            .audit(Some(id.as_str()))?
            .iter()
            .filter(|e| e.subject_kind == RecordKind::Decision)
            .map(sensitive::redact_audit)
            .collect())
    }

    /// What the approved decisions' index holds; `None` before this Engine's first decision
    /// query.
    pub fn decision_index_info(&self) -> Option<crate::knowledge::ItemIndexInfo> {
        self.decisions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|index| index.info())
    }

    /// The approved decisions most similar to a situation (top 5), packed into the budget.
    ///
    /// # Errors
    /// As [`Engine::recall_knowledge`], for decisions.
    #[instrument(skip_all)]
    pub fn recall_decisions(&self, query: &DecisionQuery) -> Result<DecisionResult> {
        let config =
            self.layer_config(&query.text, query.limit, DEFAULT_DECISIONS, query.budget)?;
        if let Some(skill) = &query.skill {
            self.scope.check_write(skill)?;
        }
        let store = self.store.decisions()?;
        let index = self.cached_index(&self.decisions, store.decision_revision()?, || {
            let mut all = store.decisions(&lore_core::Scope::unrestricted(), None)?;
            all.retain(|d| d.status == LessonStatus::Approved);
            Ok(all)
        })?;
        let recalled = self.search_index(&index, &query.text, query.skill.as_ref(), &config)?;
        let decisions = recalled
            .packed
            .items
            .iter()
            .filter_map(|item| {
                let d = index.get(&item.id)?;
                let score = recalled.explain.iter().find(|e| e.id == item.id)?.score;
                Some(RecalledDecision {
                    id: d.id.clone(),
                    skill: d.skill.clone(),
                    tokens: item.tokens,
                    score,
                })
            })
            .collect();
        Ok(DecisionResult {
            embedder: index.embedder.clone(),
            budget: config.budget,
            tokens: recalled.packed.tokens,
            text: recalled.packed.text.clone(),
            decisions,
            explain: query.explain.then_some(recalled.explain),
        })
    }
}

impl Item for DecisionRecord {
    const KIND: &'static str = "decisions";
    const STORED_VECTORS: bool = false;

    fn id(&self) -> &str {
        self.id.as_str()
    }

    fn skill(&self) -> &SkillPath {
        &self.skill
    }

    fn search_text(&self) -> String {
        [self.situation.as_str(), &self.action, &self.rationale].join("\n")
    }

    fn render(&self) -> String {
        let quote = |label: &str, text: &str| {
            lore_core::quote::lines(text)
                .enumerate()
                .map(|(i, l)| {
                    if i == 0 {
                        format!("> {label}: {l}")
                    } else {
                        format!("> {l}")
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut parts = vec![
            format!(
                "- **{}** ({}; decided by {} on {}; {})",
                self.id,
                self.skill,
                lore_core::quote::one_line(&self.decided_by),
                self.created_at.format("%Y-%m-%d"),
                self.status.as_str()
            ),
            quote("Situation", &self.situation),
            quote("Action", &self.action),
            quote("Rationale", &self.rationale),
        ];
        if let Some(outcome) = &self.outcome {
            parts.push(quote("Outcome", outcome));
        }
        parts.join("\n")
    }

    fn retrievable(&self) -> bool {
        self.status == LessonStatus::Approved
    }
}

/// Checks a decision's texts as recording one does (and importing one, through the same rules);
/// returns whether any holds personal or secret data.
///
/// # Errors
/// [`Error::Invalid`] for an empty situation, action or rationale, or text over the limits.
pub(crate) fn check_decision(
    situation: &str,
    action: &str,
    rationale: &str,
    outcome: Option<&str>,
    resolves: Option<&str>,
) -> Result<bool> {
    for (field, text) in [
        ("situation", situation),
        ("action", action),
        ("rationale", rationale),
    ] {
        if text.trim().is_empty() {
            return Err(Error::invalid(field, "it is empty"));
        }
        limits::text(field, text)?;
    }
    if let Some(outcome) = outcome {
        limits::text("outcome", outcome)?;
    }
    if let Some(resolves) = resolves {
        limits::reference("resolves", resolves)?;
    }
    Ok([situation, action, rationale]
        .into_iter()
        .chain(outcome)
        .any(|t| !sensitive::kinds(t).is_empty()))
}
