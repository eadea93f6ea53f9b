// Compiled by `tsc --noEmit --strict` in the tests (never run): the declarations in index.d.mts
// must be valid and must describe what the client is used for, so a type error here is a
// broken promise to TypeScript users.
import { Lore, LoreError, type CorrectionResult, type RecallResult, type TuneRun } from "../index.mjs";
import { Memory, type MemoryItem } from "../mem0.mjs";

export async function loop(lore: Lore): Promise<string[]> {
  const run = await lore.record({ skill: "support/triage", input: { t: 1 }, output: {}, outcome: "rejected", latencyMs: 5 });
  const made: CorrectionResult = await lore.correct("support/triage", run.id, "Say what to do instead.");
  const rule: string | undefined = made.lesson?.rule;
  const recalled: RecallResult = await lore.recall("checkout errors", { skill: "support/triage", budget: 800 });
  await lore.signal(run.id, "progress", { value: 1 });
  const [lesson] = await lore.review("approve", [made.lesson?.id ?? ""], { reason: "checked" });
  const status: string = lesson.status;
  try {
    await lore.execution("EXEC-1");
  } catch (err) {
    if (err instanceof LoreError) {
      const code: string = err.code;
      const http: number | undefined = err.status;
      return [code, String(http), rule ?? "", status];
    }
  }
  return recalled.lessons.map((l) => l.id);
}

export async function tune(lore: Lore): Promise<number> {
  const run: TuneRun = await lore.startTuning({ held_out_by: "task_type" }, { actor: "ops" });
  const members = await lore.orgMembers();
  const guard = { actor: "ops", confirm: true, reason: "it beat the base" };
  if (run.checkpoint) await lore.activateCheckpoint(run.checkpoint, guard);
  return run.epochs_done + members.length;
}

export async function memories(lore: Lore): Promise<number> {
  const m = new Memory({ client: lore, skill: "support/mem0" });
  await m.add([{ role: "user", content: "Alice prefers tea" }], { userId: "alice" });
  const found: MemoryItem[] = (await m.search("tea", { userId: "alice", limit: 5 })).results;
  return found.reduce((sum, item) => sum + (item.score ?? 0), 0);
}
