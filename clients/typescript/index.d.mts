// Types for index.mjs. Only the fields a caller usually reads are listed; the server may add
// more, and they are kept.

export type Outcome = "accepted" | "rejected" | "pending_review" | "success" | "failure";
export type Channel = "hard_failure" | "constraint_failure" | "progress" | "efficiency" | "referee";
export type LessonStatus =
  | "needs_review" | "trial" | "approved" | "rejected" | "suppressed" | "expired"
  | "one_time_exception" | "sensitive" | "superseded" | "archived";
export type Decision = "approve" | "reject" | "one_time_exception" | "sensitive" | "supersede";

/** The server's stable error codes, and `unreachable` when no server answered. */
export type ErrorCode =
  | "invalid" | "bad_request" | "not_found" | "conflict" | "unauthenticated" | "forbidden"
  | "unsupported" | "internal" | "timeout" | "payload_too_large" | "unsupported_media_type"
  | "method_not_allowed" | "unreachable" | (string & {});

export class LoreError extends Error {
  readonly code: ErrorCode;
  /** The HTTP status; undefined when no server answered. */
  readonly status: number | undefined;
  /** The server's message, meant for people. */
  readonly detail: string;
  constructor(code: ErrorCode, message: string, status: number | undefined);
}

export interface Execution {
  id: string;
  skill: string;
  timestamp: string;
  input: unknown;
  output: unknown;
  outcome: Outcome;
  cost_usd?: number;
  latency_ms?: number;
  model?: string;
  session?: string;
}

export interface Lesson {
  id: string;
  skill: string;
  rule: string;
  applies_when: string;
  mistake: string;
  root_cause: string;
  tags: string[];
  tiers: { summary?: string; condition?: string; action?: string; rationale?: string; steps?: string[] };
  confidence: number;
  source: string;
  status: LessonStatus;
  created_at: string;
  updated_at: string;
}

export interface Correction {
  id: string;
  execution_id: string;
  skill: string;
  timestamp: string;
  text: string;
  author_kind: "human" | "agent" | string;
  author: string;
}

export interface CorrectionResult {
  correction: Correction;
  lesson: Lesson | null;
  guardrail: string | null;
  regression_test: Record<string, unknown> | null;
  curation: Record<string, unknown>;
}

export interface Signal {
  id: string;
  skill: string;
  execution_id: string;
  timestamp: string;
  channel: Channel;
  fingerprint: string;
  tags: string[];
  message: string;
}

export interface RecallResult {
  /** Ready to put in a prompt: the lessons, quoted, with their provenance. */
  text: string;
  tokens: number;
  budget: number;
  tokenizer: string;
  lessons: { id: string; skill: string; status: LessonStatus; tier: number; tokens: number; score: number }[];
  explain?: Record<string, unknown>[];
}

export interface Prompt {
  text: string;
  layers: Record<string, unknown>[];
  lessons: string[];
}

export interface SearchHit { kind: "lesson" | "execution"; id: string; skill: string; score: number; snippet: string }
export interface Page<T> { items: T[]; next_offset: number | null }
export interface ReviewItem { lesson: Lesson; correction?: string | null; findings?: string[]; related?: unknown[]; flagged?: string | null }
export interface MemoryEntry { id: string; skill: string; category: string; text: string; tags: string[]; timestamp: string }
export interface MemoryHit { entry: MemoryEntry; score: number }
export interface Status { store: Record<string, unknown>; counts: Record<string, number>; curation: "auto" | "review" }

export interface LoreOptions {
  /** Default: LORE_URL, else http://127.0.0.1:7077. */
  baseUrl?: string;
  /** Default: LORE_TOKEN; a server without tokens needs none. */
  token?: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface NewExecution {
  skill: string;
  input: unknown;
  output: unknown;
  outcome?: Outcome;
  costUsd?: number;
  latencyMs?: number;
  model?: string;
  session?: string;
  /** The lesson IDs recall gave this run, so their effect can be measured. */
  lessonsShown?: string[];
}

export interface RecallOptions {
  skill?: string;
  budget?: number;
  limit?: number;
  fingerprint?: string;
  tags?: string[];
  explain?: boolean;
  run?: string;
}

export interface ListOptions { skill?: string; status?: LessonStatus[]; limit?: number; offset?: number }

export class Lore {
  readonly baseUrl: string;
  constructor(options?: LoreOptions);
  status(): Promise<Status>;
  record(run: NewExecution): Promise<Execution>;
  execution(id: string): Promise<Execution>;
  executions(options?: { skill?: string; limit?: number; offset?: number }): Promise<Page<Execution>>;
  /** Who wrote the correction comes from the token, never from the call. */
  correct(skill: string, executionId: string, correction: string): Promise<CorrectionResult>;
  signal(
    executionId: string,
    channel: Channel,
    options?: { message?: string; value?: number; action?: string; tags?: string[] },
  ): Promise<Signal>;
  recall(query: string, options?: RecallOptions): Promise<RecallResult>;
  prompt(skill: string): Promise<Prompt>;
  search(query: string, options?: { skill?: string; limit?: number }): Promise<SearchHit[]>;
  lessons(options?: ListOptions): Promise<Page<Lesson>>;
  lesson(id: string): Promise<Lesson>;
  reviewQueue(options?: ListOptions): Promise<Page<ReviewItem>>;
  review(decision: Decision, ids: string[], options?: { reason?: string; supersededBy?: string }): Promise<Lesson[]>;
  remember(skill: string, text: string, tags?: string[]): Promise<MemoryEntry>;
  memories(query: string, options?: { skill?: string; limit?: number }): Promise<MemoryHit[]>;
  listMemories(options?: { skill?: string; limit?: number }): Promise<MemoryHit[]>;
  /** The organization's agents as Lore has seen them (reviewers). */
  orgMembers(): Promise<Member[]>;
  /** Propagates a member's own lesson to its role or department, never back to its owner. */
  propagate(id: string, strategy?: "role" | "department"): Promise<Record<string, unknown>>;
  /** One org pool cycle; its proposals wait for a person's approval. */
  orgPool(options?: { dryRun?: boolean }): Promise<Record<string, unknown>>;
  activeEmbedder(): Promise<Record<string, unknown>>;
  tuningPreflight(plan?: TunePlan): Promise<Record<string, unknown>>;
  /** Trains an adapter (seconds) and answers the finished run. */
  startTuning(plan?: TunePlan, options?: { actor?: string }): Promise<TuneRun>;
  tuningRuns(options?: { limit?: number; offset?: number }): Promise<{ runs: TuneRun[]; total: number }>;
  tuningRun(id: string): Promise<TuneRun>;
  /** Resumes a failed, cancelled or interrupted run after its last recorded epoch. */
  resumeTuning(id: string): Promise<TuneRun>;
  cancelTuning(guard: AdminGuard & { run?: string }): Promise<Record<string, unknown>>;
  checkpoints(): Promise<Record<string, unknown>[]>;
  activateCheckpoint(id: string, guard: AdminGuard): Promise<Record<string, unknown>>;
  /** `to` is a checkpoint, or `base` for the base embedder alone. */
  rollbackEmbedder(to: string, guard: AdminGuard): Promise<Record<string, unknown>>;
  /** Deletes a checkpoint recall does not use, with its weights; its run keeps its figures. */
  deleteCheckpoint(id: string, guard: AdminGuard): Promise<{ deleted: string }>;
}

/** An agent of the organization. */
export interface Member { agent: string; role?: string; department?: string }

/** How an adapter is trained; every field has a default. */
export interface TunePlan {
  epochs?: number;
  learning_rate?: number;
  margin?: number;
  regularization?: number;
  negatives?: number;
  held_out?: number;
  seed?: number;
  held_out_by?: "query" | "task_type";
}

/** A tuning run; `interrupted` when its process died (no heartbeat for over 120 s). */
export interface TuneRun {
  id: string;
  status: "running" | "finished" | "failed" | "cancelled" | "interrupted";
  plan: TunePlan;
  epochs_done: number;
  loss?: number;
  heartbeat_at?: string;
  checkpoint?: string;
  error?: string;
  evaluation?: Record<string, unknown>;
}

/** The guard of a destructive operation. */
export interface AdminGuard { actor: string; confirm: boolean; reason: string }
