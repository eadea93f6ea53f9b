//! The self-editing memory tools (seed 002): core, archival and recall memory an agent reads
//! and writes itself. Their names and read-only flags are the Engine's
//! ([`lore_engine::memory_tools`]); a test keeps the two lists equal.

use super::{Parameters, ToolError};
use lore_core::SkillPath;
use lore_engine::{CoreEdit, MemoryHit};
use rmcp::service::RequestContext;
use rmcp::{Json, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LoreMcp;

/// Parameters of `core_memory_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoreReadParams {
    /// The skill whose core memory to read, `domain/skill`.
    pub skill: String,
}

/// Parameters of `core_memory_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoreWriteParams {
    /// The skill, `domain/skill`.
    pub skill: String,
    /// The block's name: lowercase letters, digits, `_` or `-` (for example `user`, `task`).
    pub block: String,
    /// The text. With `replace` it becomes the block (empty clears it); with `append` it is
    /// added as a new line.
    pub text: String,
    /// `replace` (the default) or `append`.
    #[serde(default)]
    pub mode: Option<String>,
}

/// Parameters of `archival_memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchivalSearchParams {
    /// Plain words to look for.
    pub query: String,
    /// Only this skill, `domain/skill`; omit to search every skill you may read.
    #[serde(default)]
    pub skill: Option<String>,
    /// How many passages, 1 to 50; 5 when omitted.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Parameters of `archival_memory_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchivalWriteParams {
    /// The skill it belongs to, `domain/skill`.
    pub skill: String,
    /// The passage: a fact, a decision, a finding worth finding again. No secrets: text with
    /// keys, passwords or personal contact data is refused.
    pub text: String,
    /// Words to find it by (lowercase, `_` or `-`).
    #[serde(default)]
    pub tags: Vec<String>,
}

/// Parameters of `conversation_log_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallReadParams {
    /// The skill, `domain/skill`.
    pub skill: String,
    /// Only this conversation.
    #[serde(default)]
    pub session: Option<String>,
    /// Words to look for; omit to get the latest entries.
    #[serde(default)]
    pub query: Option<String>,
    /// How many entries, 1 to 50; 10 when omitted.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Parameters of `conversation_log_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallWriteParams {
    /// The skill, `domain/skill`.
    pub skill: String,
    /// The conversation's ID.
    pub session: String,
    /// Who said it (`user`, `agent`, a name in lowercase).
    #[serde(default)]
    pub speaker: Option<String>,
    /// What was said.
    pub text: String,
}

/// One core block.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CoreBlockView {
    /// The block's name.
    pub block: String,
    /// Its text.
    pub text: String,
    /// How many versions it has had.
    pub versions: usize,
}

/// A skill's core memory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CoreMemoryView {
    /// The blocks that hold text.
    pub blocks: Vec<CoreBlockView>,
    /// Tokens they use, of `budget`.
    pub tokens: usize,
    /// The most tokens the blocks may hold together.
    pub budget: usize,
}

/// A memory entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryEntryView {
    /// Its ID.
    pub id: String,
    /// Its skill.
    pub skill: String,
    /// The text.
    pub text: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The conversation, for recall entries.
    pub session: Option<String>,
    /// Who wrote or said it.
    pub author: Option<String>,
    /// When (UTC, RFC 3339).
    pub at: String,
}

/// Entries found or read.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryEntries {
    /// The entries: best first for a search, oldest first for a log read.
    pub entries: Vec<MemoryEntryView>,
}

impl From<&lore_core::model::MemoryEntry> for MemoryEntryView {
    fn from(e: &lore_core::model::MemoryEntry) -> Self {
        Self {
            id: e.id.to_string(),
            skill: e.skill.to_string(),
            text: e.text.clone(),
            tags: e.tags.clone(),
            session: e.session.clone(),
            author: e.author.clone(),
            at: e.timestamp.to_rfc3339(),
        }
    }
}

impl From<&lore_engine::CoreMemory> for CoreMemoryView {
    fn from(c: &lore_engine::CoreMemory) -> Self {
        Self {
            blocks: c
                .blocks
                .iter()
                .map(|b| CoreBlockView {
                    block: b.name.clone(),
                    text: b.text.clone(),
                    versions: b.versions,
                })
                .collect(),
            tokens: c.tokens,
            budget: c.budget,
        }
    }
}

fn entries(hits: &[MemoryHit]) -> MemoryEntries {
    MemoryEntries {
        entries: hits
            .iter()
            .map(|h| MemoryEntryView::from(&h.entry))
            .collect(),
    }
}

#[tool_router(router = memory_tool_router, vis = "pub(crate)")]
impl LoreMcp {
    /// Read your core memory for a skill: the short named blocks (who the user is, standing
    /// facts of the task) that are always placed in the skill's prompt.
    #[tool(annotations(
        title = "Read core memory",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn core_memory_read(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<CoreReadParams>,
    ) -> Result<Json<CoreMemoryView>, ToolError> {
        let core = self
            .call(&ctx, move |e| e.core_memory(&SkillPath::parse(&p.skill)?))
            .await?;
        Ok(Json(CoreMemoryView::from(&core)))
    }

    /// Edit a core memory block: replace it (an empty text clears it) or append a line. Core
    /// blocks are in every prompt of the skill and share a small token budget, so keep them to
    /// durable facts; put long material in archival memory.
    #[tool(annotations(
        title = "Write core memory",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn core_memory_write(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<CoreWriteParams>,
    ) -> Result<Json<CoreMemoryView>, ToolError> {
        let core = self
            .call(&ctx, move |e| {
                let edit = match p.mode.as_deref() {
                    None | Some("replace") => CoreEdit::Replace,
                    Some("append") => CoreEdit::Append,
                    Some(other) => {
                        return Err(lore_core::Error::invalid(
                            "mode",
                            format!("{other:?}; expected replace or append"),
                        ));
                    }
                };
                e.write_core_memory(&SkillPath::parse(&p.skill)?, &p.block, &p.text, edit)
            })
            .await?;
        Ok(Json(CoreMemoryView::from(&core)))
    }

    /// Search your archival memory (long-term passages you stored earlier) by plain words.
    #[tool(annotations(
        title = "Search archival memory",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn archival_memory_search(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ArchivalSearchParams>,
    ) -> Result<Json<MemoryEntries>, ToolError> {
        let hits = self
            .call(&ctx, move |e| {
                let skill = p.skill.as_deref().map(SkillPath::parse).transpose()?;
                e.archival_search(skill.as_ref(), &p.query, p.limit.unwrap_or(5))
            })
            .await?;
        Ok(Json(entries(&hits)))
    }

    /// Store a passage in archival memory to find again later with `archival_memory_search`.
    #[tool(annotations(
        title = "Write archival memory",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn archival_memory_write(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<ArchivalWriteParams>,
    ) -> Result<Json<MemoryEntryView>, ToolError> {
        let entry = self
            .call(&ctx, move |e| {
                e.archival_write(&SkillPath::parse(&p.skill)?, &p.text, &p.tags)
            })
            .await?;
        Ok(Json(MemoryEntryView::from(&entry)))
    }

    /// Read the conversation log: the latest entries of a session, or the entries that match
    /// a query across the skill's conversations.
    #[tool(annotations(
        title = "Read the conversation log",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn conversation_log_read(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecallReadParams>,
    ) -> Result<Json<MemoryEntries>, ToolError> {
        let hits = self
            .call(&ctx, move |e| {
                e.recall_read(
                    &SkillPath::parse(&p.skill)?,
                    p.session.as_deref(),
                    p.query.as_deref(),
                    p.limit.unwrap_or(10),
                )
            })
            .await?;
        Ok(Json(entries(&hits)))
    }

    /// Append what was said in a conversation to its log, so it can be read back later.
    #[tool(annotations(
        title = "Write the conversation log",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn conversation_log_write(
        &self,
        ctx: RequestContext<RoleServer>,
        Parameters(p): Parameters<RecallWriteParams>,
    ) -> Result<Json<MemoryEntryView>, ToolError> {
        let entry = self
            .call(&ctx, move |e| {
                e.recall_write(
                    &SkillPath::parse(&p.skill)?,
                    &p.session,
                    p.speaker.as_deref(),
                    &p.text,
                )
            })
            .await?;
        Ok(Json(MemoryEntryView::from(&entry)))
    }
}
