//! An agent's own memory, which it reads and writes itself: core blocks always placed in a
//! skill's prompt, archival passages it searches, and the conversation log. The MCP tools'
//! names and read-only flags are the Engine's ([`lore_engine::memory_tools`]); a test keeps the
//! two lists equal.

use axum::http::StatusCode;
use lore_core::SkillPath;
use lore_core::model::MemoryEntry;
use lore_engine::{CoreEdit, CoreMemory, Engine, MemoryHit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{Component, Described, Documented};
use super::{Each, Effect, Operation, Rest, Tool, Verb};
use crate::auth::Role;

/// The memory family's operations.
pub(crate) fn each(each: &mut impl Each) {
    each.one::<ReadCore>();
    each.one::<WriteCore>();
    each.one::<SearchArchival>();
    each.one::<WriteArchival>();
    each.one::<ReadLog>();
    each.one::<WriteLog>();
}

impl Component for CoreMemory {
    const NAME: &'static str = "CoreMemory";
}

impl Component for MemoryEntry {
    const NAME: &'static str = "MemoryEntry";
}

impl Component for Hits {
    const NAME: &'static str = "MemoryHits";
}

/// Entries found or read, each with its score.
#[derive(Debug, Serialize)]
pub struct Hits {
    hits: Vec<MemoryHit>,
}

const fn tool(name: &'static str, title: &'static str) -> Option<Tool> {
    Some(Tool {
        name,
        group: "memory",
        title,
    })
}

const fn rest(verb: Verb, path: &'static str, status: StatusCode) -> Option<Rest> {
    Some(Rest { verb, path, status })
}

/// One skill's memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillInput {
    /// The skill, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
}

/// `core_memory_read`, `GET /v1/memory/core`.
pub struct ReadCore;

impl Operation for ReadCore {
    type Input = SkillInput;
    type Output = Described<CoreMemory>;
    const NAME: &'static str = "read_core_memory";
    const SUMMARY: &'static str = "Read your core memory for a skill: the short named blocks \
        (who the user is, standing facts of the task) always placed in the skill's prompt.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/memory/core", StatusCode::OK);
    const TOOL: Option<Tool> = tool("core_memory_read", "Read core memory");
    const ANSWER: &'static str = "The blocks.";

    fn run(engine: &Engine, q: SkillInput) -> lore_core::Result<Self::Output> {
        engine.core_memory(&q.skill).map(Described)
    }
}

/// How a write changes a block.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The text becomes the block; an empty one clears it.
    #[default]
    Replace,
    /// The text is added as a new line.
    Append,
}

/// A core block's new version.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoreWriteInput {
    /// The skill, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    /// The block's name: lowercase letters, digits, `_` or `-` (for example `user`, `task`).
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,40}$"))]
    block: String,
    /// The text. With `replace` it becomes the block (empty clears it); with `append` it is
    /// added as a new line.
    #[schemars(length(max = 16384))]
    text: String,
    /// `replace` (the default) or `append`.
    #[serde(default)]
    mode: Option<Mode>,
}

/// `core_memory_write`, `PUT /v1/memory/core`.
pub struct WriteCore;

impl Operation for WriteCore {
    type Input = CoreWriteInput;
    type Output = Described<CoreMemory>;
    const NAME: &'static str = "write_core_memory";
    const SUMMARY: &'static str = "Edit a core memory block: replace it (an empty text clears \
        it) or append a line. Core blocks are in every prompt of the skill and share a small \
        token budget, so keep them to durable facts; put long material in archival memory.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = rest(Verb::Put, "/v1/memory/core", StatusCode::OK);
    const TOOL: Option<Tool> = tool("core_memory_write", "Write core memory");
    const ANSWER: &'static str = "The core memory after the write.";

    fn run(engine: &Engine, w: CoreWriteInput) -> lore_core::Result<Self::Output> {
        let edit = match w.mode.unwrap_or_default() {
            Mode::Replace => CoreEdit::Replace,
            Mode::Append => CoreEdit::Append,
        };
        (engine.write_core_memory(&w.skill, &w.block, &w.text, edit)).map(Described)
    }
}

/// What to look for in archival memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchivalQuery {
    /// Plain words to look for; omit to list the newest passages.
    #[serde(alias = "q")]
    query: Option<String>,
    /// Only this skill, `domain/skill`; omit for every skill you may read.
    #[schemars(with = "Option<Documented<SkillPath>>")]
    skill: Option<SkillPath>,
    /// How many passages, 1 to 50 (5 when omitted).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<usize>,
}

/// `archival_memory_search`, `GET /v1/memory/archival`.
pub struct SearchArchival;

impl Operation for SearchArchival {
    type Input = ArchivalQuery;
    type Output = Described<Hits>;
    const NAME: &'static str = "search_archival_memory";
    const SUMMARY: &'static str = "Search your archival memory (long-term passages stored \
        earlier) by plain words, best first; without words, the newest passages.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/memory/archival", StatusCode::OK);
    const TOOL: Option<Tool> = tool("archival_memory_search", "Search archival memory");
    const ANSWER: &'static str = "The passages, each with its score.";

    fn run(engine: &Engine, q: ArchivalQuery) -> lore_core::Result<Self::Output> {
        let limit = q.limit.unwrap_or(5);
        let hits = match q.query.as_deref() {
            Some(words) => engine.archival_search(q.skill.as_ref(), words, limit)?,
            None => engine.archival_list(q.skill.as_ref(), limit)?,
        };
        Ok(Described(Hits { hits }))
    }
}

/// A passage to keep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchivalWriteInput {
    /// The skill it belongs to, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    /// The passage: a fact, a decision, a finding worth finding again. Text with keys,
    /// passwords or personal contact data is refused.
    #[schemars(length(min = 1, max = 16384))]
    text: String,
    /// Words to find it by (lowercase, `_` or `-`).
    #[serde(default)]
    tags: Vec<String>,
}

/// `archival_memory_write`, `POST /v1/memory/archival`.
pub struct WriteArchival;

impl Operation for WriteArchival {
    type Input = ArchivalWriteInput;
    type Output = Described<MemoryEntry>;
    const NAME: &'static str = "write_archival_memory";
    const SUMMARY: &'static str = "Store a passage in archival memory, to find again later \
        with archival_memory_search.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/memory/archival", StatusCode::CREATED);
    const TOOL: Option<Tool> = tool("archival_memory_write", "Write archival memory");
    const ANSWER: &'static str = "The stored entry.";

    fn run(engine: &Engine, w: ArchivalWriteInput) -> lore_core::Result<Self::Output> {
        (engine.archival_write(&w.skill, &w.text, &w.tags)).map(Described)
    }
}

/// What to read of the conversation log.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// The skill, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    /// Only this conversation.
    session: Option<String>,
    /// Words to look for; omit for the latest entries.
    #[serde(alias = "q")]
    query: Option<String>,
    /// How many entries, 1 to 50 (10 when omitted).
    #[schemars(range(min = 1, max = 50))]
    limit: Option<usize>,
}

/// `conversation_log_read`, `GET /v1/memory/recall`.
pub struct ReadLog;

impl Operation for ReadLog {
    type Input = LogQuery;
    type Output = Described<Hits>;
    const NAME: &'static str = "read_recall_log";
    const SUMMARY: &'static str = "Read the conversation log: a session's latest entries \
        (oldest first), or the entries that best match a query across the skill's \
        conversations.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Read;
    const REST: Option<Rest> = rest(Verb::Get, "/v1/memory/recall", StatusCode::OK);
    const TOOL: Option<Tool> = tool("conversation_log_read", "Read the conversation log");
    const ANSWER: &'static str = "The entries, each with its score.";

    fn run(engine: &Engine, q: LogQuery) -> lore_core::Result<Self::Output> {
        let limit = q.limit.unwrap_or(10);
        let hits = engine.recall_read(&q.skill, q.session.as_deref(), q.query.as_deref(), limit)?;
        Ok(Described(Hits { hits }))
    }
}

/// What was said.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogWriteInput {
    /// The skill, `domain/skill`.
    #[schemars(with = "Documented<SkillPath>")]
    skill: SkillPath,
    /// The conversation's ID.
    #[schemars(length(min = 1, max = 128))]
    session: String,
    /// Who said it (`user`, `agent`, a name in lowercase); the caller when omitted.
    speaker: Option<String>,
    /// What was said.
    #[schemars(length(min = 1, max = 16384))]
    text: String,
}

/// `conversation_log_write`, `POST /v1/memory/recall`.
pub struct WriteLog;

impl Operation for WriteLog {
    type Input = LogWriteInput;
    type Output = Described<MemoryEntry>;
    const NAME: &'static str = "write_recall_log";
    const SUMMARY: &'static str = "Append what was said in a conversation to its log, so it \
        can be read back later.";
    const ROLE: Role = Role::Agent;
    const EFFECT: Effect = Effect::Write;
    const REST: Option<Rest> = rest(Verb::Post, "/v1/memory/recall", StatusCode::CREATED);
    const TOOL: Option<Tool> = tool("conversation_log_write", "Write the conversation log");
    const ANSWER: &'static str = "The stored entry.";

    fn run(engine: &Engine, w: LogWriteInput) -> lore_core::Result<Self::Output> {
        let speaker = w.speaker.as_deref();
        (engine.recall_write(&w.skill, &w.session, speaker, &w.text)).map(Described)
    }
}
