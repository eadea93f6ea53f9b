// Every request the client can send is an operation of the server's OpenAPI document, with query
// parameters and body fields the document names. Needs no server: `fetch` is a stub that records
// each request, so the client cannot drift from the API unnoticed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Lore } from "../index.mjs";

// The document a server serves (its catalogue's operations are written in at start), saved by the
// test harness; the hand-kept source file when run alone.
const doc = JSON.parse(
  readFileSync(process.env.LORE_OPENAPI ?? new URL("../../../crates/lore-server/src/openapi.json", import.meta.url)),
);

function resolve(schema) {
  while (schema?.$ref) schema = schema.$ref.slice(2).split("/").reduce((node, key) => node[key], doc);
  return schema;
}

function operation(method, path) {
  for (const [template, item] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    if (pattern.test(path) && item[method.toLowerCase()]) return item[method.toLowerCase()];
  }
  assert.fail(`${method} ${path} is not in the OpenAPI document`);
}

test("every call is an operation of the document with known fields", async () => {
  const sent = [];
  const fetch = async (url, init) => {
    sent.push({ url, init });
    return new Response(JSON.stringify({ hits: [], lessons: [], lesson: {} }), { status: 200 });
  };
  const lore = new Lore({ baseUrl: "http://lore.test", fetch });
  await lore.status();
  await lore.record({ skill: "a/b", input: {}, output: {}, outcome: "rejected", costUsd: 0.1, latencyMs: 5, model: "m", session: "s", lessonsShown: ["REFL-1"] });
  await lore.execution("EXEC-1");
  await lore.executions({ skill: "a/b", limit: 10, offset: 0 });
  await lore.correct("a/b", "EXEC-1", "Do this instead.");
  await lore.signal("EXEC-1", "progress", { message: "m", value: 0.5, action: "act", tags: ["t"] });
  await lore.recall("q", { skill: "a/b", budget: 100, limit: 3, fingerprint: "fp", tags: ["t"], explain: true, run: "r" });
  await lore.prompt("a/b");
  await lore.search("q", { skill: "a/b", limit: 5 });
  await lore.lessons({ skill: "a/b", status: ["approved"], limit: 10, offset: 0 });
  await lore.lesson("REFL-1");
  await lore.reviewQueue({ skill: "a/b", status: ["needs_review"], limit: 10 });
  await lore.review("approve", ["REFL-1"], { reason: "why" });
  await lore.remember("a/b", "text", ["t"]);
  await lore.memories("q", { skill: "a/b", limit: 5 });
  await lore.listMemories({ skill: "a/b", limit: 5 });
  await lore.orgMembers();
  await lore.propagate("REFL-1", "role");
  await lore.orgPool({ dryRun: true });
  await lore.activeEmbedder();
  await lore.tuningPreflight({ epochs: 5, held_out_by: "task_type" });
  await lore.startTuning({ seed: 3 }, { actor: "ops" });
  await lore.tuningRuns({ limit: 10, offset: 0 });
  await lore.tuningRun("TUNE-1");
  await lore.resumeTuning("TUNE-1");
  await lore.cancelTuning({ run: "TUNE-1", actor: "ops", confirm: true, reason: "why" });
  await lore.checkpoints();
  await lore.activateCheckpoint("CKPT-1", { actor: "ops", confirm: true, reason: "why" });
  await lore.rollbackEmbedder("base", { actor: "ops", confirm: true, reason: "why" });
  await lore.deleteCheckpoint("CKPT-1", { actor: "ops", confirm: true, reason: "why" });
  assert.equal(sent.length, 30);
  const plan = resolve(doc.components.schemas.TunePlan);
  for (const { init } of sent) {
    const sentPlan = init.body === undefined ? undefined : JSON.parse(init.body).plan;
    for (const key of Object.keys(sentPlan ?? {})) assert.ok(key in plan.properties, `plan.${key}`);
  }
  for (const { url, init } of sent) {
    const op = operation(init.method, url.pathname);
    const names = new Set((op.parameters ?? []).map(resolve).filter((p) => p.in === "query").map((p) => p.name));
    for (const key of url.searchParams.keys()) assert.ok(names.has(key), `${init.method} ${url.pathname}: query ${key}`);
    if (init.body !== undefined) {
      const schema = resolve(op.requestBody.content["application/json"].schema);
      const body = JSON.parse(init.body);
      for (const key of Object.keys(body)) assert.ok(key in schema.properties, `${init.method} ${url.pathname}: body ${key}`);
      for (const key of schema.required ?? []) assert.ok(key in body, `${init.method} ${url.pathname}: ${key} not sent`);
    }
  }
});
