//! `GET /v1/events`: a server-sent-event stream of executions recorded, lessons changed,
//! episodes recorded, replaced or purged and decisions recorded or moved, narrowed to the
//! caller's scope.
//!
//! Each subscriber follows the store itself, from a cursor ([`lore_core::ports::store::ChangeCursor`]),
//! rather than listening to this process's writes: that is what makes writes by other processes
//! on the same store (`lore record`, another server) appear, and what makes resuming cheap. An
//! event's ID is the cursor just past it (`EXECUTIONS-AUDIT`, two sequence numbers), so a client
//! reconnecting with `Last-Event-ID` continues exactly where it stopped. Without one, the stream
//! starts at the newest write. An idle stream waits for the store to announce a write (its
//! [`lore_core::ports::bell::ChangeBell`]: this process's commits, and with PostgreSQL every
//! server's, through LISTEN/NOTIFY), reading the store at least every [`POLL`] (two indexed
//! lookups) for writers it cannot hear, and sends a keep-alive comment every [`KEEP_ALIVE`]; streams end when the server
//! shuts down, so they never hold up a graceful shutdown.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use lore_core::SkillPath;
use lore_core::model::AuditAction;
use lore_core::ports::store::ChangeCursor;
use lore_engine::Change;
use lore_engine::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{AppState, Caller, Params};
use crate::error::ApiError;

/// The longest an idle stream goes without reading the store.
pub const POLL: Duration = Duration::from_millis(250);
/// How often an idle stream sends a comment, so proxies keep the connection open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The most changes of each kind read from the store at once.
const BATCH: usize = 256;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    skill: Option<SkillPath>,
}

pub async fn events(
    caller: Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    Params(q): Params<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let resume = match headers.get("last-event-id") {
        Some(raw) => Some(parse_id(raw.to_str().unwrap_or(""))?),
        None => None,
    };
    let engine = caller.engine;
    let start = engine.clone();
    let cursor = match resume {
        Some(cursor) => cursor,
        None => tokio::task::spawn_blocking(move || start.change_cursor()).await??,
    };
    let follow = Follow {
        engine,
        skill: q.skill,
        cursor,
        pending: VecDeque::new(),
        shutdown: state.shutdown.clone(),
        wait: false,
        mark: 0,
    };
    let stream = futures_util::stream::unfold(follow, Follow::next);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// Parses an event ID back into the cursor it names.
fn parse_id(raw: &str) -> Result<ChangeCursor, ApiError> {
    let parsed = raw
        .split_once('-')
        .and_then(|(e, a)| Some((e.parse().ok()?, a.parse().ok()?)));
    let Some((executions, audit)) = parsed else {
        return Err(lore_core::Error::invalid(
            "Last-Event-ID",
            format!("{raw:?}; expected the ID of an event from this stream, like \"12-40\""),
        )
        .into());
    };
    Ok(ChangeCursor { executions, audit })
}

struct Follow {
    engine: Engine,
    skill: Option<SkillPath>,
    cursor: ChangeCursor,
    pending: VecDeque<Event>,
    shutdown: CancellationToken,
    /// Whether to wait for a write (or a poll interval) before reading the store again.
    wait: bool,
    /// The store's change mark taken before the last read.
    mark: u64,
}

impl Follow {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            if self.wait {
                let (engine, mark) = (self.engine.clone(), self.mark);
                // The blocking wait ends by itself within POLL, so shutdown need not cancel it.
                let rung = tokio::task::spawn_blocking(move || engine.wait_for_change(mark, POLL));
                tokio::select! {
                    () = self.shutdown.cancelled() => return None,
                    _ = rung => {}
                }
            }
            if self.shutdown.is_cancelled() {
                return None;
            }
            let (engine, cursor, skill) = (self.engine.clone(), self.cursor, self.skill.clone());
            let read = tokio::task::spawn_blocking(move || {
                let mark = engine.change_mark();
                engine
                    .changes_after(cursor, skill.as_ref(), BATCH)
                    .map(|followed| (mark, followed))
            })
            .await;
            let followed = match read {
                Ok(Ok((mark, followed))) => {
                    self.mark = mark;
                    followed
                }
                // The client reconnects with its Last-Event-ID and loses nothing.
                Ok(Err(err)) => {
                    tracing::error!(error = %err, "the event stream cannot read the store");
                    return None;
                }
                Err(err) => {
                    tracing::error!(error = %err, "the event stream's store read panicked");
                    return None;
                }
            };
            // A full batch means more is waiting: read again at once.
            let moved = followed.cursor != self.cursor;
            self.wait = !moved;
            self.cursor = followed.cursor;
            self.pending.extend(
                followed
                    .changes
                    .into_iter()
                    .map(|(c, change)| event(c, change)),
            );
        }
    }
}

fn event(cursor: ChangeCursor, change: Change) -> Event {
    let (name, data) = change_event(change);
    Event::default()
        .id(format!("{}-{}", cursor.executions, cursor.audit))
        .event(name)
        .data(data.to_string())
}

/// The event's name and JSON for one change (`lore watch` prints the same for the local store).
/// Purged lessons and episodes are announced by ID and skill only.
pub fn change_event(change: Change) -> (&'static str, Value) {
    match change {
        Change::Execution(execution) => {
            let name = "execution.recorded";
            let execution = lore_core::sensitive::redact_execution(&execution);
            (name, json!({"type": name, "execution": execution}))
        }
        Change::Lesson {
            entry,
            skill,
            lesson,
        } => {
            let name = match entry.action {
                AuditAction::Created | AuditAction::Imported => "lesson.created",
                AuditAction::Transition => "lesson.status_changed",
                AuditAction::Edited | AuditAction::Replaced => "lesson.edited",
                AuditAction::Purged => "lesson.purged",
                // Never a change (the feed leaves raw reads out); named for completeness.
                AuditAction::Disclosed => "lesson.disclosed",
                AuditAction::Administered => "lesson.administered",
            };
            let mut data = json!({
                "type": name, "lesson_id": entry.subject, "skill": skill, "at": entry.at,
            });
            if let (Some(lesson), Value::Object(fields)) = (lesson, &mut data) {
                fields.insert("actor".into(), json!(entry.actor));
                fields.insert(
                    "reason".into(),
                    json!(lore_core::sensitive::redact(&entry.reason)),
                );
                if let Some(from) = entry.from {
                    fields.insert("from".into(), json!(from));
                }
                if let Some(to) = entry.to {
                    fields.insert("to".into(), json!(to));
                }
                fields.insert(
                    "lesson".into(),
                    json!(lore_core::sensitive::redact_lesson(&lesson)),
                );
            }
            (name, data)
        }
        Change::Episode {
            entry,
            skill,
            episode,
        } => {
            let name = match entry.action {
                AuditAction::Replaced | AuditAction::Edited => "episode.replaced",
                AuditAction::Disclosed => "episode.disclosed",
                AuditAction::Purged => "episode.purged",
                AuditAction::Created
                | AuditAction::Imported
                | AuditAction::Transition
                | AuditAction::Administered => "episode.recorded",
            };
            let mut data = json!({
                "type": name, "episode_id": entry.subject, "skill": skill, "at": entry.at,
            });
            if let (Some(episode), Value::Object(fields)) = (episode, &mut data) {
                fields.insert("actor".into(), json!(entry.actor));
                fields.insert("episode".into(), json!(episode));
            }
            (name, data)
        }
        Change::Decision { entry, decision } => {
            let name = match entry.action {
                AuditAction::Transition => "decision.status_changed",
                _ => "decision.recorded",
            };
            let mut data = json!({
                "type": name, "decision_id": entry.subject, "skill": decision.skill,
                "at": entry.at, "actor": entry.actor, "reason": entry.reason,
                "decision": decision,
            });
            if let Value::Object(fields) = &mut data {
                if let Some(from) = entry.from {
                    fields.insert("from".into(), json!(from));
                }
                if let Some(to) = entry.to {
                    fields.insert("to".into(), json!(to));
                }
            }
            (name, data)
        }
    }
}
