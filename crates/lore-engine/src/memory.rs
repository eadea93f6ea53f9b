//! An agent's own memory (seed 002's self-editing strategy): core blocks that are always in the
//! skill's prompt, archival passages searched on demand, and a recall log of conversations.
//!
//! Agents write these through tools, so every write is checked like any other input: inside
//! the handle's scope, allowed by the [`MemoryPolicy`] for its category (a locked-down
//! deployment turns core writes off), within size limits, and free of secrets — memory text
//! reaches prompts, so a write holding an API key or an e-mail address is refused rather than
//! stored. Entries are append-only (see [`lore_core::model::MemoryEntry`]). Memory belongs to a
//! skill and is shared by the agents allowed on it; each entry names the agent that wrote it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::config::InjectionStrategy;
use crate::engine::Engine;
use crate::memory_search::LogSearch;
use lore_core::error::{Error, Result};
use lore_core::id::MemoryId;
use lore_core::model::{MemoryCategory, MemoryEntry};
use lore_core::ports::store::{ListFilter, OnDuplicate, Record};
use lore_core::scope::SkillPath;
use lore_core::sensitive;
use lore_recall::RecallConfig;

/// Longest entry text, in bytes.
const MAX_TEXT: usize = 16 * 1024;

/// How many times a core write is computed again when other writers store a version of its
/// block first; each lost attempt means another writer's version was stored, so only a block
/// under that many simultaneous writes ever answers a conflict.
pub const CORE_WRITE_ATTEMPTS: usize = 64;
pub use lore_core::limits::MAX_RESULTS;

/// How a core write changes its block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreEdit {
    /// The block becomes the text (empty clears it).
    Replace,
    /// The text is added as a new line at the end of the block.
    Append,
}

/// One core block as it stands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreBlock {
    /// The block's name.
    pub name: String,
    /// Its current text.
    pub text: String,
    /// The entry holding this version.
    pub id: MemoryId,
    /// When this version was written.
    pub updated_at: DateTime<Utc>,
    /// How many versions the block has had.
    pub versions: usize,
}

/// A skill's core memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreMemory {
    /// The skill.
    pub skill: SkillPath,
    /// The non-empty blocks, by name.
    pub blocks: Vec<CoreBlock>,
    /// Tokens the blocks hold together.
    pub tokens: usize,
    /// The most they may hold.
    pub budget: usize,
}

/// A memory entry found by a search.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryHit {
    /// The entry.
    pub entry: MemoryEntry,
    /// Its score, higher is better.
    pub score: f64,
}

impl Engine {
    /// The skill's core blocks, newest version of each, empty ones left out.
    ///
    /// # Errors
    /// [`Error::Forbidden`] outside the scope; store failures.
    pub fn core_memory(&self, skill: &SkillPath) -> Result<CoreMemory> {
        self.check_read(skill)?;
        let blocks: Vec<CoreBlock> = self
            .core_versions(skill)?
            .into_values()
            .filter(|b| !b.text.is_empty())
            .collect();
        let tokens = self.core_tokens(&blocks);
        Ok(CoreMemory {
            skill: skill.clone(),
            blocks,
            tokens,
            budget: self.config.memory.core_budget,
        })
    }

    /// Every core block of the skill by name, newest version of each, empty ones included.
    fn core_versions(&self, skill: &SkillPath) -> Result<BTreeMap<String, CoreBlock>> {
        let versions = self
            .store
            .memories(&ListFilter::skill(&self.scope, skill), MemoryCategory::Core)?;
        let mut by_name: BTreeMap<String, CoreBlock> = BTreeMap::new();
        for e in versions {
            let name = e.block.clone().unwrap_or_default();
            let versions = by_name.get(&name).map_or(0, |b| b.versions) + 1;
            let block = CoreBlock {
                name: name.clone(),
                text: e.text,
                id: e.id,
                updated_at: e.timestamp,
                versions,
            };
            by_name.insert(name, block);
        }
        Ok(by_name)
    }

    /// Writes a new version of one core block and returns the core memory after it.
    ///
    /// The new version is computed from the newest one and stored only while that is still
    /// the newest ([`lore_core::Store::write_core_version`]); when another writer came first,
    /// it is computed again from theirs, so an acknowledged append is never overwritten.
    ///
    /// # Errors
    /// [`Error::Forbidden`] outside the scope or when core writes are off; [`Error::Invalid`]
    /// for a malformed block name, an oversized or secret-holding text, an empty append, or a
    /// write that would take the blocks past the core budget; [`Error::Conflict`] when other
    /// writers won every one of [`CORE_WRITE_ATTEMPTS`] attempts. Nothing is stored then.
    pub fn write_core_memory(
        &self,
        skill: &SkillPath,
        block: &str,
        text: &str,
        edit: CoreEdit,
    ) -> Result<CoreMemory> {
        self.check_memory_write(skill, MemoryCategory::Core)?;
        check_name("block", block)?;
        let text = text.trim();
        if edit == CoreEdit::Append && text.is_empty() {
            return Err(Error::invalid("text", "nothing to append"));
        }
        check_text(text)?;
        for _ in 0..CORE_WRITE_ATTEMPTS {
            if self.try_write_core(skill, block, text, edit)? {
                return self.core_memory(skill);
            }
        }
        Err(Error::Conflict(format!(
            "core block {block:?} of {skill} changed under each of {CORE_WRITE_ATTEMPTS} \
             attempts; try again"
        )))
    }

    /// One attempt of [`Engine::write_core_memory`]: `false` when another version came first.
    fn try_write_core(
        &self,
        skill: &SkillPath,
        block: &str,
        text: &str,
        edit: CoreEdit,
    ) -> Result<bool> {
        self.check_read(skill)?;
        let mut blocks = self.core_versions(skill)?;
        let current = blocks.remove(block);
        let new_text = match (edit, &current) {
            (CoreEdit::Append, Some(b)) if !b.text.is_empty() => format!("{}\n{text}", b.text),
            _ => text.to_owned(),
        };
        check_text(&new_text)?;
        // Never older than the version it follows, so it sorts after it whatever the clocks
        // of the writers sharing the store say.
        let at = current
            .as_ref()
            .map_or(self.now(), |b| b.updated_at.max(self.now()));
        let entry = MemoryEntry {
            id: MemoryId::generate(at),
            skill: skill.clone(),
            category: MemoryCategory::Core,
            block: Some(block.to_owned()),
            text: new_text.clone(),
            tags: Vec::new(),
            session: None,
            author: self.scope.agent.clone(),
            timestamp: at,
            extra: Map::new(),
        };
        let mut kept: Vec<CoreBlock> = blocks
            .into_values()
            .filter(|b| !b.text.is_empty())
            .collect();
        if !new_text.is_empty() {
            kept.push(CoreBlock {
                name: block.to_owned(),
                text: new_text,
                id: entry.id.clone(),
                updated_at: at,
                versions: 0,
            });
        }
        let tokens = self.core_tokens(&kept);
        let budget = self.config.memory.core_budget;
        if tokens > budget {
            return Err(Error::invalid(
                "text",
                format!(
                    "core memory would hold {tokens} tokens; its budget is {budget}: shorten or \
                     clear a block first"
                ),
            ));
        }
        let after = current.as_ref().map(|b| &b.id);
        self.store.write_core_version(&entry, after)
    }

    /// Stores an archival passage.
    ///
    /// # Errors
    /// As [`Engine::write_core_memory`] for the archival category; an empty text or a
    /// malformed tag is [`Error::Invalid`].
    pub fn archival_write(
        &self,
        skill: &SkillPath,
        text: &str,
        tags: &[String],
    ) -> Result<MemoryEntry> {
        self.add_entry(skill, MemoryCategory::Archival, text, tags, None, None)
    }

    /// Searches archival passages by plain words, inside one skill or the whole scope.
    ///
    /// # Errors
    /// [`Error::Forbidden`] for a skill outside the scope; [`Error::Invalid`] for an empty
    /// query or a limit outside `1..=50`.
    pub fn archival_search(
        &self,
        skill: Option<&SkillPath>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryHit>> {
        self.search_category(skill, MemoryCategory::Archival, query, limit)
    }

    /// The newest `limit` archival passages of `skill` (or of every skill in scope), oldest
    /// first: what a memory holds, without a query to search it by.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a `limit` outside 1 to the maximum; a skill outside the scope is
    /// [`Error::Forbidden`]; store failures.
    pub fn archival_list(&self, skill: Option<&SkillPath>, limit: usize) -> Result<Vec<MemoryHit>> {
        check_limit(limit)?;
        if let Some(skill) = skill {
            self.check_read(skill)?;
        }
        let filter = ListFilter {
            skill: skill.cloned(),
            ..self.filter()
        };
        let entries = self.store.memories(&filter, MemoryCategory::Archival)?;
        Ok(newest(entries, |e| self.scope.allows(&e.skill), limit))
    }

    /// Appends an entry to a conversation's recall log.
    ///
    /// # Errors
    /// As [`Engine::archival_write`]; a missing or overlong session is [`Error::Invalid`].
    pub fn recall_write(
        &self,
        skill: &SkillPath,
        session: &str,
        speaker: Option<&str>,
        text: &str,
    ) -> Result<MemoryEntry> {
        let session = session.trim();
        if session.is_empty() || session.len() > 128 {
            return Err(Error::invalid(
                "session",
                "give the conversation's ID (1 to 128 bytes)",
            ));
        }
        // An empty speaker is refused rather than read as "none": the two are different
        // requests, and guessing would file the entry under the wrong name.
        if let Some(s) = speaker {
            check_name("speaker", s)?;
        }
        self.add_entry(
            skill,
            MemoryCategory::Recall,
            text,
            &[],
            Some(session.to_owned()),
            speaker.map(str::to_owned),
        )
    }

    /// Reads the recall log: the last `limit` entries of a session (oldest first), or, with a
    /// query, the best matches across the skill's conversations (or in `session` alone), each
    /// found by its own words and those of the entry before it in its session
    /// (see the `memory_search` module).
    ///
    /// # Errors
    /// As [`Engine::archival_search`].
    pub fn recall_read(
        &self,
        skill: &SkillPath,
        session: Option<&str>,
        query: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryHit>> {
        check_limit(limit)?;
        self.check_read(skill)?;
        if let Some(q) = query.filter(|q| !q.trim().is_empty()) {
            return self.search_log((Some(skill), MemoryCategory::Recall), session, q, limit);
        }
        let entries = self.store.memories(
            &ListFilter::skill(&self.scope, skill),
            MemoryCategory::Recall,
        )?;
        let of_session = |e: &MemoryEntry| session.is_none_or(|s| e.session.as_deref() == Some(s));
        Ok(newest(entries, of_session, limit))
    }

    fn add_entry(
        &self,
        skill: &SkillPath,
        category: MemoryCategory,
        text: &str,
        tags: &[String],
        session: Option<String>,
        author: Option<String>,
    ) -> Result<MemoryEntry> {
        self.check_memory_write(skill, category)?;
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::invalid("text", "is empty"));
        }
        check_text(text)?;
        for tag in tags {
            check_name("tags", tag)?;
        }
        let at = self.now();
        let entry = MemoryEntry {
            id: MemoryId::generate(at),
            skill: skill.clone(),
            category,
            block: None,
            text: text.to_owned(),
            tags: tags.to_vec(),
            session,
            author: author.or_else(|| self.scope.agent.clone()),
            timestamp: at,
            extra: Map::new(),
        };
        self.store
            .write(&[Record::Memory(entry.clone())], OnDuplicate::Fail)?;
        Ok(entry)
    }

    fn search_category(
        &self,
        skill: Option<&SkillPath>,
        category: MemoryCategory,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryHit>> {
        check_limit(limit)?;
        if query.trim().is_empty() {
            return Err(Error::invalid("query", "give words to search for"));
        }
        if let Some(skill) = skill {
            self.check_read(skill)?;
        }
        let filter = ListFilter {
            skill: skill.cloned(),
            ..self.filter()
        };
        if category == MemoryCategory::Archival {
            // Stems and the configured embedder, as lessons are recalled: a passage is found
            // by "what does bob drink" as well as by its own words.
            return self.search_log((skill, category), None, query, limit);
        }
        Ok(self
            .store
            .search_memories(query, &filter, category, limit)?
            .into_iter()
            .filter(|(e, _)| self.scope.allows(&e.skill))
            .map(|(entry, score)| MemoryHit { entry, score })
            .collect())
    }

    fn check_read(&self, skill: &SkillPath) -> Result<()> {
        if self.scope.allows(skill) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{skill} is outside this handle's scope"
            )))
        }
    }

    fn check_memory_write(&self, skill: &SkillPath, category: MemoryCategory) -> Result<()> {
        self.scope.check_write(skill)?;
        if self.config.memory.allows(category) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{} memory writes are turned off here",
                category.as_str()
            )))
        }
    }

    fn core_tokens(&self, blocks: &[CoreBlock]) -> usize {
        let tokenizer = self.tokenizer();
        blocks
            .iter()
            .map(|b| tokenizer.count(&b.name) + tokenizer.count(&b.text))
            .sum()
    }
}

/// Names of blocks, tags and speakers: lowercase letters, digits, `_` and `-`, 1 to 40.
/// The last `limit` of the `entries` that `keep` keeps, in their order, as unscored hits.
fn newest(
    entries: Vec<MemoryEntry>,
    keep: impl Fn(&MemoryEntry) -> bool,
    limit: usize,
) -> Vec<MemoryHit> {
    let mut kept: Vec<MemoryEntry> = entries.into_iter().filter(|e| keep(e)).collect();
    let skip = kept.len().saturating_sub(limit);
    kept.drain(skip..)
        .map(|entry| MemoryHit { entry, score: 0.0 })
        .collect()
}

fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            what,
            format!("{name:?} is not a name (lowercase letters, digits, _ and -, at most 40)"),
        ))
    }
}

fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_TEXT {
        return Err(Error::invalid(
            "text",
            format!("is {} bytes; the limit is {MAX_TEXT}", text.len()),
        ));
    }
    let kinds = sensitive::kinds(text);
    if !kinds.is_empty() {
        let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        return Err(Error::invalid(
            "text",
            format!(
                "holds sensitive data ({}); memory text reaches prompts, so it is not stored",
                names.join(", ")
            ),
        ));
    }
    Ok(())
}

fn check_limit(limit: usize) -> Result<()> {
    if (1..=MAX_RESULTS).contains(&limit) {
        Ok(())
    } else {
        Err(Error::invalid(
            "limit",
            format!("must be 1 to {MAX_RESULTS}"),
        ))
    }
}

/// A tool an agent can be given, for a server or an agent loop to publish.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: &'static str,
    /// What it does, written for the model that reads it.
    pub description: &'static str,
    /// Its parameters, as JSON Schema.
    pub input_schema: Value,
    /// Whether it only reads.
    pub read_only: bool,
}

/// The heading of the prompt's note on the memory tools.
pub const MEMORY_TOOLS_HEADING: &str = "## Memory tools";

/// The brief instruction about `strategy`'s memory tools that the prompt carries (seed 002's
/// tool-based injection), so an agent knows its memory is there to call even when its client
/// never shows the MCP server's own instructions; `None` for context injection.
pub fn memory_instruction(strategy: InjectionStrategy) -> Option<String> {
    let tools = memory_tools(strategy);
    if tools.is_empty() {
        return None;
    }
    let lead = match strategy {
        InjectionStrategy::SelfEditing => {
            "Your memory is yours to keep: read it before the task, and write what you will \
             need again (a decision, a fact about the user, a fix that worked)."
        }
        _ => {
            "The rules learned from earlier runs of this skill are not in this prompt: call \
             recall_memory with the task before you start, and again with the error when a step \
             fails."
        }
    };
    let mut out = format!("{MEMORY_TOOLS_HEADING}\n\n{lead}\n");
    for tool in tools {
        out.push_str(&format!("\n- `{}`: {}", tool.name, tool.description));
    }
    Some(out)
}

/// The tools of `strategy`.
pub fn memory_tools(strategy: InjectionStrategy) -> Vec<ToolDefinition> {
    let skill = json!({"type": "string", "description": "The skill, `domain/skill`."});
    let tool =
        |name, description, read_only, properties: Value, required: &[&str]| ToolDefinition {
            name,
            description,
            input_schema: json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            }),
            read_only,
        };
    match strategy {
        InjectionStrategy::Context => Vec::new(),
        InjectionStrategy::ToolBased => vec![
            tool(
                "search_memory",
                "Search learned lessons and past executions by plain words.",
                true,
                json!({"query": {"type": "string"}, "skill": skill, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}),
                &["query"],
            ),
            tool(
                "recall_memory",
                "The lessons that fit a task, ranked and packed into a token budget.",
                true,
                json!({"query": {"type": "string"}, "skill": skill, "budget": {"type": "integer", "minimum": 1}}),
                &["query"],
            ),
        ],
        InjectionStrategy::SelfEditing => vec![
            tool(
                "core_memory_read",
                "Read your core memory: the named blocks always placed in this skill's prompt.",
                true,
                json!({"skill": skill}),
                &["skill"],
            ),
            tool(
                "core_memory_write",
                "Replace a core block, or append a line to it; an empty replace clears it. Keep blocks short: they share a token budget.",
                false,
                json!({"skill": skill, "block": {"type": "string", "pattern": "^[a-z0-9_-]{1,40}$"}, "text": {"type": "string"}, "mode": {"type": "string", "enum": ["replace", "append"]}}),
                &["skill", "block", "text"],
            ),
            tool(
                "archival_memory_search",
                "Search your long-term archival memory by plain words.",
                true,
                json!({"query": {"type": "string"}, "skill": skill, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}),
                &["query"],
            ),
            tool(
                "archival_memory_write",
                "Store a passage in archival memory to find later.",
                false,
                json!({"skill": skill, "text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}),
                &["skill", "text"],
            ),
            tool(
                "conversation_log_read",
                "Read the conversation log: a session's last entries, or matches for a query.",
                true,
                json!({"skill": skill, "session": {"type": "string"}, "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 50}}),
                &["skill"],
            ),
            tool(
                "conversation_log_write",
                "Append what was said in a conversation to its log.",
                false,
                json!({"skill": skill, "session": {"type": "string"}, "speaker": {"type": "string"}, "text": {"type": "string"}}),
                &["skill", "session", "text"],
            ),
        ],
    }
}

impl Engine {
    /// The entries of `skill`'s conversation log that best match `query` (of `session` only,
    /// when given), best first, at most `limit`; callers have checked the scope and the limit.
    ///
    /// # Errors
    /// Store and embedder failures.
    fn search_log(
        &self,
        skill: (Option<&SkillPath>, MemoryCategory),
        session: Option<&str>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<MemoryHit>> {
        let mut config = self.recall.config.clone();
        if !self.recall.configured {
            config.fusion = RecallConfig::fusion_for(self.recall.embedder.semantic());
        }
        let with = LogSearch {
            store: &*self.store,
            embedder: &self.recall.embedder,
            config: &config,
            scope: &self.scope,
        };
        Ok(self
            .logs
            .search(&with, skill, session, query, limit)?
            .into_iter()
            .map(|(entry, score)| MemoryHit { entry, score })
            .collect())
    }
}
