//! What the web console reads besides the records themselves: who the caller is, the health of
//! learning as day-by-day series, and where a lesson was shown.
//!
//! Every figure is counted from the records inside the caller's scope (executions, lessons,
//! error events and the audit), so a scoped token sees the health of its own part of memory and
//! nothing of the rest. The answers hold counts, IDs, statuses and fingerprints, never a
//! lesson's or an execution's text, so any role may read them.

use std::collections::{BTreeMap, HashMap};

use super::Path;
use axum::Json;
use chrono::{DateTime, Days, NaiveDate, Utc};
use lore_core::id::LessonId;
use lore_core::model::{
    AuditAction, AuditEntry, Execution, Lesson, LessonStatus, Outcome, RecordKind,
};
use lore_core::ports::store::Record;
use serde::{Deserialize, Serialize};

use super::{Caller, Params};
use crate::auth::Role;
use crate::error::ApiError;

/// The most days a series may cover.
const MAX_DAYS: usize = 366;
/// How many fingerprints the recurrence figure keeps, the most frequent first.
const RECURRENCE_TOP: usize = 8;

/// `GET /v1/whoami`: the caller's role, so a client can hide what the server would refuse.
#[derive(Debug, Serialize)]
pub struct WhoAmI {
    /// `agent`, `reviewer` or `admin`.
    role: Role,
    /// The credential's public ID; none on a server without tokens.
    token_id: Option<String>,
    /// Whether the server asks for a credential at all.
    authenticated: bool,
    /// The agent the credential acts for, and its role and department in the organization.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    org_role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    department: Option<String>,
}

pub async fn whoami(caller: Caller) -> Json<WhoAmI> {
    let token_id = caller.engine.principal().map(str::to_owned);
    let authenticated = caller.authenticated;
    let scope = caller.engine.scope().clone();
    Json(WhoAmI {
        role: caller.role(),
        token_id: token_id.filter(|_| authenticated),
        authenticated,
        agent: scope.agent,
        org_role: scope.role,
        department: scope.department,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsQuery {
    /// How many days back from today, today included; 30 when absent.
    days: Option<usize>,
}

/// The health of learning, as series over the same days.
#[derive(Debug, Serialize)]
pub struct Stats {
    /// Each day of the series (UTC), oldest first.
    days: Vec<NaiveDate>,
    /// Per status, how many lessons were in it at the end of each day.
    lessons_by_state: BTreeMap<LessonStatus, Vec<u64>>,
    /// Executions recorded per day.
    executions_per_day: Vec<u64>,
    /// Lessons shown per day (one per lesson per execution that listed it).
    activations_per_day: Vec<u64>,
    /// Lessons moved to approved from trial or suppressed, per day (the utility gate's or a
    /// person's promotion).
    promotions_per_day: Vec<u64>,
    /// Lessons moved to suppressed, per day.
    suppressions_per_day: Vec<u64>,
    /// Every lesson's measured utility, where one was measured.
    utility: Vec<LessonUtility>,
    /// The most frequent error fingerprints, each with how often it happened before and after
    /// the first lesson it triggers existed.
    recurrence: Vec<Recurrence>,
}

/// One lesson's utility.
#[derive(Debug, Serialize)]
pub struct LessonUtility {
    id: LessonId,
    status: LessonStatus,
    utility: f64,
    activations: u64,
}

/// One fingerprint's errors split at the first lesson that it triggers.
#[derive(Debug, Serialize)]
pub struct Recurrence {
    fingerprint: String,
    /// The first lesson triggered by it, if any.
    lesson_id: Option<LessonId>,
    /// When that lesson was created.
    lesson_at: Option<DateTime<Utc>>,
    /// Errors before the lesson existed (all of them when there is none).
    before: u64,
    /// Errors since.
    after: u64,
    /// Days from the first error to the lesson (at least one), so rates compare.
    before_days: f64,
    /// Days from the lesson to now (at least one).
    after_days: f64,
}

pub async fn stats(caller: Caller, Params(q): Params<StatsQuery>) -> Result<Json<Stats>, ApiError> {
    let days = q.days.unwrap_or(30);
    if days == 0 || days > MAX_DAYS {
        let why = format!("{days} is outside 1 to {MAX_DAYS}");
        return Err(lore_core::Error::invalid("days", why).into());
    }
    let records = caller.run(|e| e.export_records()).await?;
    Ok(Json(Stats::count(&records, days, Utc::now())))
}

impl Stats {
    fn count(records: &[Record], days: usize, now: DateTime<Utc>) -> Self {
        let today = now.date_naive();
        let first = today - Days::new(days as u64 - 1);
        let axis: Vec<NaiveDate> = first.iter_days().take(days).collect();
        let slot = |at: &DateTime<Utc>| -> Option<usize> {
            let day = at.date_naive();
            (day >= first && day <= today).then(|| (day - first).num_days() as usize)
        };
        let mut lessons = Vec::new();
        let mut audit: HashMap<&str, Vec<&AuditEntry>> = HashMap::new();
        let mut executions_per_day = vec![0; days];
        let mut activations_per_day = vec![0; days];
        let mut promotions_per_day = vec![0; days];
        let mut suppressions_per_day = vec![0; days];
        let mut errors: BTreeMap<&str, Vec<DateTime<Utc>>> = BTreeMap::new();
        for record in records {
            match record {
                Record::Lesson(lesson) => lessons.push(lesson),
                Record::Execution(execution) => {
                    if let Some(i) = slot(&execution.timestamp) {
                        executions_per_day[i] += 1;
                        activations_per_day[i] += execution.lessons_shown.len() as u64;
                    }
                }
                Record::ErrorEvent(event) => {
                    errors
                        .entry(&event.fingerprint)
                        .or_default()
                        .push(event.timestamp);
                }
                Record::Audit(entry) if entry.subject_kind == RecordKind::Lesson => {
                    audit.entry(&entry.subject).or_default().push(entry);
                    if entry.action != AuditAction::Transition {
                        continue;
                    }
                    let Some(i) = slot(&entry.at) else { continue };
                    match (entry.from, entry.to) {
                        (
                            Some(LessonStatus::Trial | LessonStatus::Suppressed),
                            Some(LessonStatus::Approved),
                        ) => promotions_per_day[i] += 1,
                        (_, Some(LessonStatus::Suppressed)) => suppressions_per_day[i] += 1,
                        _ => {}
                    }
                }
                _ => {}
            }
        }

        let mut lessons_by_state: BTreeMap<LessonStatus, Vec<u64>> = BTreeMap::new();
        for lesson in &lessons {
            let history = status_history(lesson, audit.get(lesson.id.as_str()));
            for (i, day) in axis.iter().enumerate() {
                let end = day.and_hms_opt(23, 59, 59).expect("a valid time").and_utc();
                if let Some(status) = status_at(&history, end) {
                    lessons_by_state
                        .entry(status)
                        .or_insert_with(|| vec![0; days])[i] += 1;
                }
            }
        }

        let utility = lessons
            .iter()
            .filter_map(|l| {
                Some(LessonUtility {
                    id: l.id.clone(),
                    status: l.status,
                    utility: l.utility.utility?,
                    activations: l.utility.activations,
                })
            })
            .collect();

        let mut recurrence: Vec<Recurrence> = errors
            .into_iter()
            .map(|(fingerprint, times)| recurrence_of(fingerprint, &times, &lessons, now))
            .collect();
        recurrence.sort_by(|a, b| {
            (b.before + b.after)
                .cmp(&(a.before + a.after))
                .then_with(|| a.fingerprint.cmp(&b.fingerprint))
        });
        recurrence.truncate(RECURRENCE_TOP);

        Self {
            days: axis,
            lessons_by_state,
            executions_per_day,
            activations_per_day,
            promotions_per_day,
            suppressions_per_day,
            utility,
            recurrence,
        }
    }
}

/// A lesson's statuses over time, oldest first: where it started, then each audited move.
fn status_history(
    lesson: &Lesson,
    audit: Option<&Vec<&AuditEntry>>,
) -> Vec<(DateTime<Utc>, LessonStatus)> {
    let mut moves: Vec<&AuditEntry> = audit
        .map(|entries| {
            entries
                .iter()
                .copied()
                .filter(|e| e.action == AuditAction::Transition && e.to.is_some())
                .collect()
        })
        .unwrap_or_default();
    moves.sort_by_key(|e| e.at);
    // The status it was created in is the first move's origin; with no move, it never left it.
    let start = moves.first().and_then(|e| e.from).unwrap_or(lesson.status);
    let mut history = vec![(lesson.created_at, start)];
    history.extend(moves.iter().filter_map(|e| Some((e.at, e.to?))));
    history
}

fn status_at(history: &[(DateTime<Utc>, LessonStatus)], at: DateTime<Utc>) -> Option<LessonStatus> {
    history
        .iter()
        .take_while(|(when, _)| *when <= at)
        .last()
        .map(|(_, status)| *status)
}

fn recurrence_of(
    fingerprint: &str,
    times: &[DateTime<Utc>],
    lessons: &[&Lesson],
    now: DateTime<Utc>,
) -> Recurrence {
    let lesson = lessons
        .iter()
        .filter(|l| l.triggers.iter().any(|t| t == fingerprint))
        .min_by_key(|l| l.created_at);
    let split = lesson.map_or(now, |l| l.created_at);
    let before = times.iter().filter(|t| **t < split).count() as u64;
    let first = times.iter().min().copied().unwrap_or(split);
    let span = |from: DateTime<Utc>, to: DateTime<Utc>| {
        ((to - from).num_seconds() as f64 / 86_400.0).max(1.0)
    };
    Recurrence {
        fingerprint: fingerprint.to_owned(),
        lesson_id: lesson.map(|l| l.id.clone()),
        lesson_at: lesson.map(|l| l.created_at),
        before,
        after: times.len() as u64 - before,
        before_days: span(first, split),
        after_days: span(split, now),
    }
}

/// Where a lesson was shown, newest first, and what came of it.
#[derive(Debug, Serialize)]
pub struct Activations {
    /// How many executions listed it in all.
    total: usize,
    /// The newest of them, at most [`lore_engine::MAX_PAGE`].
    items: Vec<Activation>,
}

/// One execution that listed the lesson among those it was shown.
#[derive(Debug, Serialize)]
pub struct Activation {
    execution_id: String,
    at: DateTime<Utc>,
    outcome: Outcome,
}

/// `GET /v1/lessons/{id}/activations`.
pub async fn activations(
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Activations>, ApiError> {
    let id = LessonId::parse(&id)?;
    let mut items = caller
        .run(move |e| {
            // The lesson must be visible to the caller, or its activations are not either.
            e.lesson(&id)?;
            let mut shown: Vec<Activation> = e
                .export_records()?
                .into_iter()
                .filter_map(|r| match r {
                    Record::Execution(x) if x.lessons_shown.contains(&id) => Some(activation(&x)),
                    _ => None,
                })
                .collect();
            shown.sort_by_key(|a| std::cmp::Reverse(a.at));
            Ok(shown)
        })
        .await?;
    let total = items.len();
    items.truncate(lore_engine::MAX_PAGE);
    Ok(Json(Activations { total, items }))
}

fn activation(execution: &Execution) -> Activation {
    Activation {
        execution_id: execution.id.to_string(),
        at: execution.timestamp,
        outcome: execution.outcome,
    }
}

/// `GET /v1/reports/{name}`: the latest benchmark report kept with the records (`learning`:
/// errors per run with and without memory, from `lore bench learning`); 404 when none was
/// kept. Figures only, so any role may read it.
pub async fn report(
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let lookup = name.clone();
    caller
        .run(move |e| e.report(&lookup))
        .await?
        .map(Json)
        .ok_or_else(|| lore_core::Error::not_found("report", name).into())
}
