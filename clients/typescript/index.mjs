// Lore's TypeScript client: plain ES modules with types beside them (index.d.mts), no
// dependencies beyond `fetch` (Node 18+, Deno, Bun, browsers), so there is no build step.

/** Any error from Lore: `code` is the server's stable code (`not_found`, `invalid`, ...). */
export class LoreError extends Error {
  constructor(code, message, status) {
    super(`${code}: ${message}`);
    this.name = "LoreError";
    this.code = code;
    this.status = status;
    this.detail = message;
  }
}

const DEFAULT_URL = "http://127.0.0.1:7077";

function env(name) {
  return typeof process !== "undefined" ? process.env?.[name] : undefined;
}

function dropUndefined(values) {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined && v !== null));
}

const seg = (value) => encodeURIComponent(value);

export class Lore {
  /**
   * @param {{ baseUrl?: string, token?: string, timeoutMs?: number, fetch?: typeof fetch }} [options]
   */
  constructor(options = {}) {
    this.baseUrl = (options.baseUrl ?? env("LORE_URL") ?? DEFAULT_URL).replace(/\/+$/, "");
    this.token = options.token ?? env("LORE_TOKEN");
    this.timeoutMs = options.timeoutMs ?? 30000;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async request(method, path, { query, body } = {}) {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(dropUndefined(query ?? {}))) url.searchParams.set(k, String(v));
    const headers = { accept: "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let response;
    try {
      response = await this.fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw new LoreError(
        "unreachable",
        `no answer from Lore at ${this.baseUrl} (${err?.cause?.code ?? err?.message ?? err}); is \`lore serve\` running there?`,
        undefined,
      );
    }
    const text = await response.text();
    let parsed;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    if (!response.ok) {
      const error = parsed && typeof parsed === "object" ? parsed.error : undefined;
      throw new LoreError(
        error?.code ?? "http_error",
        error?.message ?? (typeof parsed === "string" && parsed ? parsed.slice(0, 500) : `HTTP ${response.status}`),
        response.status,
      );
    }
    return parsed;
  }

  status() {
    return this.request("GET", "/v1/status");
  }

  record(run) {
    const body = dropUndefined({
      skill: run.skill,
      input: run.input,
      output: run.output,
      outcome: run.outcome,
      cost_usd: run.costUsd,
      latency_ms: run.latencyMs,
      model: run.model,
      session: run.session,
      lessons_shown: run.lessonsShown,
    });
    return this.request("POST", "/v1/executions", { body });
  }

  execution(id) {
    return this.request("GET", `/v1/executions/${seg(id)}`);
  }

  executions(options = {}) {
    return this.request("GET", "/v1/executions", { query: options });
  }

  correct(skill, executionId, correction) {
    return this.request("POST", "/v1/corrections", {
      body: { skill, execution_id: executionId, correction },
    });
  }

  signal(executionId, channel, options = {}) {
    const body = dropUndefined({
      channel,
      message: options.message ?? "",
      value: options.value,
      action: options.action,
      tags: options.tags ?? [],
    });
    return this.request("POST", `/v1/executions/${seg(executionId)}/signals`, { body });
  }

  recall(query, options = {}) {
    const body = dropUndefined({
      query,
      skill: options.skill,
      budget: options.budget,
      limit: options.limit,
      fingerprint: options.fingerprint,
      tags: options.tags ?? [],
      explain: options.explain ?? false,
      run: options.run,
    });
    return this.request("POST", "/v1/recall", { body });
  }

  prompt(skill) {
    const [domain, name] = skill.split("/");
    return this.request("GET", `/v1/skills/${seg(domain)}/${seg(name ?? "")}/prompt`);
  }

  async search(query, options = {}) {
    return (await this.request("GET", "/v1/search", { query: { query, ...options } })).hits;
  }

  lessons(options = {}) {
    const { status, ...rest } = options;
    return this.request("GET", "/v1/lessons", { query: { ...rest, status: status?.join(",") } });
  }

  async lesson(id) {
    return (await this.request("GET", `/v1/lessons/${seg(id)}`)).lesson;
  }

  reviewQueue(options = {}) {
    const { status, ...rest } = options;
    return this.request("GET", "/v1/review", { query: { ...rest, status: status?.join(",") } });
  }

  async review(decision, ids, options = {}) {
    const body = dropUndefined({ ids, reason: options.reason ?? "", superseded_by: options.supersededBy });
    return (await this.request("POST", `/v1/review/${seg(decision)}`, { body })).lessons;
  }

  remember(skill, text, tags = []) {
    return this.request("POST", "/v1/memory/archival", { body: { skill, text, tags } });
  }

  async memories(query, options = {}) {
    return (await this.request("GET", "/v1/memory/archival", { query: { query, ...options } })).hits;
  }

  async listMemories(options = {}) {
    return (await this.request("GET", "/v1/memory/archival", { query: options })).hits;
  }

  // Organization memory (docs/organization.md).

  async orgMembers() {
    return (await this.request("GET", "/v1/org/members")).members;
  }

  async propagate(id, strategy) {
    return this.request("POST", `/v1/lessons/${seg(id)}/propagate`, { body: dropUndefined({ strategy }) });
  }

  async orgPool({ dryRun = false } = {}) {
    return this.request("POST", "/v1/org/pool", { body: { dry_run: dryRun } });
  }

  // The embedder's lifecycle (docs/embedders.md). Destructive calls take the guard: who asks,
  // confirm: true, and why.

  async activeEmbedder() {
    return this.request("GET", "/v1/embedder");
  }

  async tuningPreflight(plan) {
    return this.request("POST", "/v1/embedder/preflight", { body: dropUndefined({ plan }) });
  }

  async startTuning(plan, { actor } = {}) {
    return this.request("POST", "/v1/embedder/runs", { body: dropUndefined({ plan, actor }) });
  }

  async tuningRuns(options = {}) {
    return this.request("GET", "/v1/embedder/runs", { query: options });
  }

  async tuningRun(id) {
    return this.request("GET", `/v1/embedder/runs/${seg(id)}`);
  }

  async resumeTuning(id) {
    return this.request("POST", `/v1/embedder/runs/${seg(id)}/resume`);
  }

  async cancelTuning({ run, actor, confirm = false, reason }) {
    return this.request("POST", "/v1/embedder/cancel", { body: dropUndefined({ run, actor, confirm, reason }) });
  }

  async checkpoints() {
    return (await this.request("GET", "/v1/embedder/checkpoints")).checkpoints;
  }

  async activateCheckpoint(id, { actor, confirm = false, reason }) {
    return this.request("POST", `/v1/embedder/checkpoints/${seg(id)}/activate`, { body: { actor, confirm, reason } });
  }

  async rollbackEmbedder(to, { actor, confirm = false, reason }) {
    return this.request("POST", "/v1/embedder/rollback", { body: { to, actor, confirm, reason } });
  }

  async deleteCheckpoint(id, { actor, confirm = false, reason }) {
    return this.request("POST", `/v1/embedder/checkpoints/${seg(id)}/delete`, { body: { actor, confirm, reason } });
  }
}
