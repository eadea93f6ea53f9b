//! The `conversation_log` row: LoCoMo through Lore's own conversation log, as an agent uses it.
//!
//! Each conversation is one skill of a SQLite store in a temporary folder, each LoCoMo session
//! one session of its log, each turn written with [`Engine::recall_write`] (the speaker as
//! speaker, lowercased to a name) and each question asked with [`Engine::recall_read`] for the
//! top 25. An entry's date is when it was written, so the Engine writes a session under a clock
//! set to the session's date: the log then holds the dates a live agent's log would, and its
//! search puts them in each document as the other rows do.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use chrono::{DateTime, NaiveDateTime, Utc};
use lore_core::ports::clock::Clock;
use lore_core::{Error, SkillPath};
use lore_engine::{Engine, EngineConfig};
use lore_recall::Embedder;
use lore_sqlite::{OpenMode, SqliteStore};

use super::{Conversation, KS};

/// LoCoMo's session dates: `1:56 pm on 8 May, 2023`.
const LOCOMO_DATE: &str = "%I:%M %p on %d %B, %Y";

/// An Engine over a store of its own, writing under the clock the benchmark sets.
pub(super) struct ConversationLog {
    engine: Engine,
    clock: Arc<SessionClock>,
    _dir: tempfile::TempDir,
}

/// One conversation as written: its skill and the LoCoMo turn behind each entry.
pub(super) struct Logged {
    skill: SkillPath,
    turns: HashMap<String, String>,
    /// Turns the log refused (they hold what looks like sensitive data).
    pub(super) refused: usize,
}

/// The time the benchmark says it is.
struct SessionClock(Mutex<DateTime<Utc>>);

impl Clock for SessionClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ConversationLog {
    /// A new store in a temporary folder, searched with `embedder`.
    pub(super) fn open(embedder: Arc<dyn Embedder>) -> Result<Self> {
        let dir = tempfile::tempdir().context("a folder for the conversation log")?;
        let store = SqliteStore::open(dir.path().join("lore.db"), OpenMode::Create)?;
        let clock = Arc::new(SessionClock(Mutex::new(DateTime::UNIX_EPOCH)));
        let engine = Engine::new(Arc::new(store), EngineConfig::default())
            .with_clock(clock.clone())
            .with_embedder(embedder);
        Ok(Self {
            engine,
            clock,
            _dir: dir,
        })
    }

    /// Writes conversation `n` into its own skill, session by session.
    pub(super) fn write(&self, n: usize, conv: &Conversation) -> Result<Logged> {
        let skill = SkillPath::parse(&format!("locomo/conversation-{n}"))?;
        let mut logged = Logged {
            skill,
            turns: HashMap::new(),
            refused: 0,
        };
        for turn in &conv.said {
            *self
                .clock
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = session_date(&turn.date)?;
            let session = format!("session-{}", turn.session);
            let speaker = speaker_name(&turn.speaker);
            match self
                .engine
                .recall_write(&logged.skill, &session, Some(&speaker), &turn.text)
            {
                Ok(entry) => {
                    if let Some(dia_id) = &turn.dia_id {
                        logged.turns.insert(entry.id.to_string(), dia_id.clone());
                    }
                }
                Err(Error::Invalid { .. }) => logged.refused += 1,
                Err(other) => return Err(other.into()),
            }
        }
        Ok(logged)
    }

    /// The turns the log returns for `question`, best first, as LoCoMo IDs.
    pub(super) fn ranking(&self, logged: &Logged, question: &str) -> Result<Vec<String>> {
        let hits = self
            .engine
            .recall_read(&logged.skill, None, Some(question), KS[2])?;
        Ok(hits
            .iter()
            .filter_map(|h| logged.turns.get(h.entry.id.as_str()).cloned())
            .collect())
    }
}

/// A LoCoMo session date as UTC.
fn session_date(date: &str) -> Result<DateTime<Utc>> {
    let parsed = NaiveDateTime::parse_from_str(date.trim(), LOCOMO_DATE)
        .with_context(|| format!("session date {date:?}"))?;
    Ok(parsed.and_utc())
}

/// A speaker as the log's names go: lowercase, anything else a hyphen.
fn speaker_name(speaker: &str) -> String {
    let name: String = speaker
        .trim()
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '-',
        })
        .take(40)
        .collect();
    if name.is_empty() {
        "someone".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_date_reads_back_as_locomo_writes_it() {
        for date in ["1:56 pm on 8 May, 2023", "10:37 am on 27 June, 2023"] {
            let parsed = session_date(date).unwrap();
            assert_eq!(parsed.format("%-I:%M %P on %-d %B, %Y").to_string(), date);
        }
        assert!(session_date("someday").is_err());
        assert_eq!(speaker_name("Caroline"), "caroline");
        assert_eq!(speaker_name("Mary Ann"), "mary-ann");
    }
}
