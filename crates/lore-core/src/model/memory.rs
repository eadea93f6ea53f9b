//! What an agent keeps for itself (seed 002's self-editing strategy): core blocks always in its
//! prompt, archival passages it searches on demand, and the recall log of its conversations.
//!
//! Entries are append-only. Writing a core block stores a new version; reading takes the newest
//! version of each block, so every earlier version stays for review and undo, and a block is
//! cleared by writing it empty.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::MemoryId;
use crate::scope::SkillPath;

/// The three blocks of seed 002's self-editing memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCategory {
    /// Small named blocks (who the user is, the task's standing facts) always placed in the
    /// agent's prompt.
    Core,
    /// Long-term passages the agent writes and searches when it needs them.
    Archival,
    /// The log of what was said in the agent's conversations, read back by session or search.
    Recall,
}

impl MemoryCategory {
    /// Every category, in documentation order.
    pub const ALL: [MemoryCategory; 3] = [
        MemoryCategory::Core,
        MemoryCategory::Archival,
        MemoryCategory::Recall,
    ];

    /// The category's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryCategory::Core => "core",
            MemoryCategory::Archival => "archival",
            MemoryCategory::Recall => "recall",
        }
    }

    /// Parses a wire name.
    ///
    /// # Errors
    /// [`crate::Error::Invalid`] listing the accepted names.
    pub fn parse(raw: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == raw)
            .ok_or_else(|| {
                crate::Error::invalid(
                    "category",
                    format!("{raw:?}; expected core, archival or recall"),
                )
            })
    }
}

/// One entry of an agent's own memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Unique ID.
    pub id: MemoryId,
    /// The skill whose agents share this memory.
    pub skill: SkillPath,
    /// Which block it belongs to.
    pub category: MemoryCategory,
    /// The core block's name (`persona`, `user`, …); `None` for the other categories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// The text; an empty core block version clears the block.
    pub text: String,
    /// Words to find it by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The conversation a recall entry belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Who wrote it: the agent, or the speaker of a recall entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When it was written (UTC).
    pub timestamp: DateTime<Utc>,
    /// Fields from imported records that Lore has no name for.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}
