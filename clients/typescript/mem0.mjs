// A mem0-shaped entry point over Lore's archival memory, so code written for mem0's `Memory`
// moves with a changed import:
//
//   import { Memory } from "@lore-memory/client/mem0";   // was: import { Memory } from "mem0ai/oss"
//   const m = new Memory();                              // Lore at LORE_URL / 127.0.0.1:7077
//   await m.add("Alice prefers tea", { userId: "alice" });
//   (await m.search("what does alice drink", { userId: "alice" })).results;
//
// The same shapes and differences as the Python client's `lore_client.mem0` (docs/clients.md):
// memories are archival passages of one skill; userId, agentId and runId become tags, so a
// search or listing for a user sees that user's memories only; `add` stores each message's
// text (no model extracts facts); `delete`, `deleteAll` and `update` throw a LoreError
// `unsupported`, since Lore's memory is append-only.
import { createHash } from "node:crypto";

import { Lore, LoreError } from "./index.mjs";

const NAME = /^[a-z0-9_-]{1,32}$/;
// The most passages one search or listing reads before filtering by user, agent and run.
const READ = 50;
const KINDS = [["userId", "user"], ["agentId", "agent"], ["runId", "run"]];

/** A tag for an identifier; tags are short lowercase names, so others are hashed (as in Python). */
function tag(kind, value) {
  const name = NAME.test(value) ? value : "h" + createHash("sha256").update(value).digest("hex").slice(0, 30);
  return `${kind}-${name}`;
}

function texts(messages) {
  if (typeof messages === "string") return [messages];
  const list = Array.isArray(messages) ? messages : [messages];
  return list.map((m) => String(m?.content ?? "")).filter((t) => t.trim() !== "");
}

function idsOf(options = {}) {
  const ids = {};
  for (const [key] of KINDS) if (options[key]) ids[key] = options[key];
  if (Object.keys(ids).length === 0) {
    throw new TypeError("give at least one of userId, agentId or runId (as mem0 does)");
  }
  return ids;
}

function tagsOf(ids) {
  return KINDS.filter(([key]) => ids[key]).map(([key, kind]) => tag(kind, ids[key]));
}

const SNAKE = { userId: "user_id", agentId: "agent_id", runId: "run_id" };

function shape(hit, ids, withScore) {
  const entry = hit.entry;
  const item = { id: entry.id, memory: entry.text, created_at: entry.timestamp ?? null, metadata: null };
  for (const [key, value] of Object.entries(ids)) item[SNAKE[key]] = value;
  if (withScore) item.score = hit.score ?? 0;
  return item;
}

function unsupported(message) {
  return new LoreError("unsupported", message, undefined);
}

export class Memory {
  constructor({ client, skill = "mem0/memories" } = {}) {
    this.client = client ?? new Lore();
    this.skill = skill;
  }

  mine(hits, ids) {
    const wanted = tagsOf(ids);
    return hits.filter((h) => wanted.every((t) => (h.entry.tags ?? []).includes(t)));
  }

  async add(messages, options = {}) {
    const ids = idsOf(options);
    const tags = tagsOf(ids);
    const results = [];
    for (const text of texts(messages)) {
      const entry = await this.client.remember(this.skill, text, tags);
      results.push({ id: entry.id, memory: entry.text, event: "ADD" });
    }
    return { results };
  }

  async search(query, options = {}) {
    const ids = idsOf(options);
    const hits = this.mine(await this.client.memories(query, { skill: this.skill, limit: READ }), ids);
    return { results: hits.slice(0, options.limit ?? 100).map((h) => shape(h, ids, true)) };
  }

  async getAll(options = {}) {
    const ids = idsOf(options);
    const hits = this.mine(await this.client.listMemories({ skill: this.skill, limit: READ }), ids);
    return { results: hits.slice(-(options.limit ?? 100)).map((h) => shape(h, ids, false)) };
  }

  async get(memoryId) {
    const hits = await this.client.listMemories({ skill: this.skill, limit: READ });
    const hit = hits.find((h) => h.entry.id === memoryId);
    return hit ? shape(hit, {}, false) : null;
  }

  async history(memoryId) {
    const found = await this.get(memoryId);
    if (!found) return [];
    return [{ id: memoryId, memory_id: memoryId, old_memory: null, new_memory: found.memory, event: "ADD", created_at: found.created_at }];
  }

  async importMem0(exported) {
    const items = Array.isArray(exported) ? exported : (exported?.results ?? []);
    const results = [];
    for (const item of items) {
      const text = String(item.memory ?? item.text ?? "").trim();
      if (!text) continue;
      const added = await this.add(text, { userId: item.user_id, agentId: item.agent_id, runId: item.run_id });
      results.push(...added.results);
    }
    return { results };
  }

  async update() {
    throw unsupported("Lore's memory is append-only: add the new fact with add(); the old one stays on record");
  }

  async delete() {
    throw unsupported("Lore's memory is append-only; content is erased only by an audited purge (see docs/clients.md)");
  }

  async deleteAll() {
    return this.delete();
  }
}
