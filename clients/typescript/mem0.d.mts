// Types for mem0.mjs: mem0's `Memory` shapes over Lore's archival memory.
import type { Lore } from "./index.mjs";

export interface Ids { userId?: string; agentId?: string; runId?: string }
export interface MemoryItem {
  id: string;
  memory: string;
  created_at: string | null;
  metadata: null;
  user_id?: string;
  agent_id?: string;
  run_id?: string;
  /** Present on search results: the passage's own relevance, between 0 and 1. */
  score?: number;
}
export type Message = { role?: string; content: string };

export class Memory {
  constructor(options?: { client?: Lore; skill?: string });
  readonly client: Lore;
  readonly skill: string;
  add(messages: string | Message | Message[], ids: Ids): Promise<{ results: { id: string; memory: string; event: "ADD" }[] }>;
  search(query: string, options: Ids & { limit?: number }): Promise<{ results: MemoryItem[] }>;
  getAll(options: Ids & { limit?: number }): Promise<{ results: MemoryItem[] }>;
  get(memoryId: string): Promise<MemoryItem | null>;
  history(memoryId: string): Promise<{ id: string; memory_id: string; old_memory: null; new_memory: string; event: "ADD"; created_at: string | null }[]>;
  importMem0(exported: { results: Record<string, unknown>[] } | Record<string, unknown>[]): Promise<{ results: { id: string; memory: string; event: "ADD" }[] }>;
  /** Always throws a LoreError `unsupported`: memory is append-only. */
  update(memoryId: string, data: string): Promise<never>;
  /** Always throws a LoreError `unsupported`. */
  delete(memoryId: string): Promise<never>;
  /** Always throws a LoreError `unsupported`. */
  deleteAll(ids?: Ids): Promise<never>;
}
