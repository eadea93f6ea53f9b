// The TypeScript client against a real `lore serve` on loopback, started by the Rust test
// `clients::the_typescript_client_passes_its_suite_against_a_real_server` (LORE_URL and three
// tokens in the environment). Run by hand: `node --test clients/typescript/test/`.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Lore, LoreError } from "../index.mjs";
import { Memory } from "../mem0.mjs";

const URL = process.env.LORE_URL;
const agent = new Lore({ baseUrl: URL, token: process.env.LORE_TEST_AGENT_TOKEN });
const reviewer = new Lore({ baseUrl: URL, token: process.env.LORE_TEST_REVIEWER_TOKEN });
const SKILL = "support/summarize-ticket";

async function rejects(promise, code, status) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof LoreError, String(err));
    assert.equal(err.code, code);
    assert.equal(err.status, status);
    return true;
  });
}

test("the loop: record, correct, review, recall, prompt, signal", async () => {
  const run = await agent.record({
    skill: SKILL,
    input: { ticket: "Checkout returns 500 for every EU customer" },
    output: { priority: "normal" },
    outcome: "rejected",
    latencyMs: 640,
  });
  assert.match(run.id, /^EXEC-/);
  const made = await agent.correct(SKILL, run.id, "When a ticket reports errors for many customers, priority must be urgent.");
  assert.equal(made.correction.author_kind, "agent");
  const lesson = made.lesson;
  assert.ok(lesson);

  const queue = await reviewer.reviewQueue({ skill: SKILL, status: ["trial", "needs_review"] });
  assert.ok(queue.items.some((item) => item.lesson.id === lesson.id));
  const [approved] = await reviewer.review("approve", [lesson.id], { reason: "checked" });
  assert.equal(approved.status, "approved");

  const recalled = await agent.recall("many customers report checkout errors", { skill: SKILL, budget: 400 });
  assert.deepEqual(recalled.lessons.map((l) => l.id), [lesson.id]);
  assert.ok(recalled.text.includes("priority must be urgent"));
  assert.ok(recalled.tokens <= 400);

  const prompt = await agent.prompt(SKILL);
  assert.ok(prompt.lessons.includes(lesson.id));

  const next = await agent.record({ skill: SKILL, input: {}, output: { priority: "urgent" }, outcome: "accepted", lessonsShown: [lesson.id] });
  const signal = await agent.signal(next.id, "progress", { message: "closed", value: 1 });
  assert.equal(signal.channel, "progress");
  assert.equal((await agent.lesson(lesson.id)).status, "approved");
  assert.ok((await agent.search("urgent priority", { skill: SKILL })).some((h) => h.id === lesson.id));
});

test("errors are LoreErrors carrying the server's code and status", async () => {
  await rejects(agent.execution("EXEC-20200101000000-AAAAAAAA"), "not_found", 404);
  await rejects(agent.record({ skill: "not a skill", input: {}, output: {} }), "invalid", 422);
  await rejects(agent.record({ skill: "billing/refund", input: {}, output: {} }), "forbidden", 403);
  await rejects(agent.reviewQueue(), "forbidden", 403);
  await rejects(new Lore({ baseUrl: URL, token: "nope" }).status(), "unauthenticated", 401);
  const nowhere = new Lore({ baseUrl: "http://127.0.0.1:9", token: "x", timeoutMs: 2000 });
  await assert.rejects(nowhere.status(), (err) => err instanceof LoreError && err.code === "unreachable" && err.status === undefined);
});

test("archival memory is written, searched and listed", async () => {
  const entry = await agent.remember("support/notes", "The EU checkout runs on the blue cluster", ["infra"]);
  const hits = await agent.memories("which cluster runs checkout", { skill: "support/notes" });
  assert.equal(hits[0].entry.id, entry.id);
  const listed = await agent.listMemories({ skill: "support/notes" });
  assert.deepEqual(listed.map((h) => h.entry.id), [entry.id]);
});

test("a mem0-shaped Memory keeps users apart and finds words by their stems", async () => {
  const m = new Memory({ client: agent, skill: "support/mem0" });
  const added = await m.add("Alice prefers green tea in the morning", { userId: "alice" });
  assert.equal(added.results[0].event, "ADD");
  await m.add([{ role: "user", content: "Bob drinks black coffee" }], { userId: "Bob@example.com" });
  await m.add("Alice is allergic to peanuts", { userId: "alice", agentId: "concierge" });

  const found = (await m.search("what does she drink tea coffee", { userId: "alice" })).results;
  assert.deepEqual(found.map((r) => r.memory), ["Alice prefers green tea in the morning"]);
  assert.ok(found[0].user_id === "alice" && found[0].score > 0 && found[0].score <= 1);
  const bob = (await m.search("drink", { userId: "Bob@example.com" })).results;
  assert.deepEqual(bob.map((r) => r.memory), ["Bob drinks black coffee"], "drink finds drinks");

  const alice = (await m.getAll({ userId: "alice" })).results.map((r) => r.memory);
  assert.deepEqual(alice, ["Alice prefers green tea in the morning", "Alice is allergic to peanuts"]);
  assert.deepEqual((await m.getAll({ agentId: "concierge" })).results.map((r) => r.memory), ["Alice is allergic to peanuts"]);
  const first = added.results[0].id;
  assert.equal((await m.history(first))[0].event, "ADD");
  assert.deepEqual(await m.history("MEM-20200101000000-AAAAAAAA"), []);
  await assert.rejects(m.delete(first), (err) => err instanceof LoreError && err.code === "unsupported");
  await assert.rejects(m.getAll(), TypeError);

  const imported = await m.importMem0({ results: [{ id: "a1", memory: "Carol works night shifts", user_id: "carol" }, { id: "a3", memory: "" }] });
  assert.equal(imported.results.length, 1);
  assert.deepEqual((await m.getAll({ userId: "carol" })).results.map((r) => r.memory), ["Carol works night shifts"]);
});
