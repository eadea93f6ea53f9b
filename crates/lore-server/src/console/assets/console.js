// Lore console: one script over the REST API under /v1, with the token the user typed.
// The page is built with DOM calls and textContent only: stored text never becomes markup.
"use strict";

const TOKEN_KEY = "lore.console.token";
const state = { token: null, who: null, queue: [], skills: {}, skill: "", selected: new Set(), current: 0, page: null, live: null, decisionsShown: null };

// ---------- small helpers ----------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    // Through the CSSOM: the policy refuses style attributes.
    else if (k === "style") el.style.cssText = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "style") el.style.cssText = v; else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function main() { return document.getElementById("main"); }

function show(...children) {
  const m = main();
  m.replaceChildren();
  append(m, children);
}

function toast(text, bad) {
  const t = document.getElementById("toast");
  t.textContent = text;
  t.className = "show" + (bad ? " bad" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = ""; }, 4000);
}

function ago(iso) {
  if (!iso) return "";
  const secs = (Date.now() - new Date(iso).getTime()) / 1000;
  if (secs < 60) return "just now";
  if (secs < 3600) return Math.round(secs / 60) + " min ago";
  if (secs < 86400) return Math.round(secs / 3600) + " h ago";
  return Math.round(secs / 86400) + " days ago";
}

function when(iso) {
  return iso ? h("time", { datetime: iso, title: iso }, ago(iso)) : "";
}

const pct = (x) => (x === null || x === undefined ? "–" : Math.round(x * 100) + "%");
const pill = (status) => h("span", { class: "pill " + status }, status.replace(/_/g, " "));
const chips = (items) => (items || []).map((t) => h("span", { class: "chip" }, t));
const isReviewer = () => state.who && (state.who.role === "reviewer" || state.who.role === "admin");

// ---------- the API ----------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch (_) { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.code || "http_" + res.status, err.message || res.statusText);
  }
  return data;
}
const get = (path) => api("GET", path);
const post = (path, body) => api("POST", path, body);

function failure(err) {
  return h("p", { class: "error", role: "alert" }, describe(err));
}

function describe(err) {
  if (err instanceof ApiError) return `${err.status} ${err.code}: ${err.message}`;
  return String(err && err.message ? err.message : err);
}

// ---------- sign-in ----------

function signIn(message) {
  document.getElementById("top").hidden = true;
  document.getElementById("feed").hidden = true;
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", placeholder: "lore_…" });
  const error = h("div", { "aria-live": "assertive" }, message ? h("p", { class: "error" }, message) : null);
  const form = h("form", { class: "login", "aria-labelledby": "login-title", onsubmit: async (e) => {
    e.preventDefault();
    state.token = input.value.trim() || null;
    try {
      state.who = await get("/v1/whoami");
    } catch (err) {
      state.token = null;
      error.replaceChildren(h("p", { class: "error", role: "alert" },
        err.status === 401 ? "That token was not accepted: check it, or ask an admin for a new one." : describe(err)));
      input.focus();
      return;
    }
    if (state.token) sessionStorage.setItem(TOKEN_KEY, state.token);
    start();
  } },
    h("h1", { id: "login-title" }, h("img", { src: "/console/icon.svg", alt: "", width: 28, height: 28 }), "Lore console"),
    h("p", { class: "lede" }, "Review what your agents learned, browse memory and see whether it helps."),
    h("div", { class: "field" },
      h("label", { for: "token" }, "API token"),
      input,
      h("p", { class: "muted", style: "font-size:12px" },
        "From ", h("code", {}, "lore tokens create"), ". Kept in this tab only. Leave empty on a server without tokens.")),
    error,
    h("button", { class: "primary", type: "submit" }, "Sign in"));
  show(form);
  input.focus();
}

async function boot() {
  state.token = sessionStorage.getItem(TOKEN_KEY);
  try {
    state.who = await get("/v1/whoami");
  } catch (err) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    signIn(err.status === 401 ? null : describe(err));
    return;
  }
  start();
}

function start() {
  document.getElementById("top").hidden = false;
  document.getElementById("feed").hidden = false;
  const who = document.getElementById("who");
  who.replaceChildren(
    state.who.token_id ? h("span", { class: "mono" }, state.who.token_id) : h("span", {}, "no token (loopback)"),
    " ", h("span", { class: "role", id: "role" }, state.who.role));
  document.getElementById("signout").onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    state.who = null;
    if (state.live) state.live.abort();
    location.hash = "";
    signIn();
  };
  // Agents review nothing: no queue in their navigation (the page explains, if opened).
  document.querySelector('.top nav a[data-page="queue"]').hidden = !isReviewer();
  follow();
  route();
}

// ---------- routing ----------

const pages = {
  queue: queuePage,
  memory: memoryPage,
  lesson: lessonPage,
  health: healthPage,
  episodes: episodesPage,
  episode: episodePage,
  decisions: decisionsPage,
  knowledge: knowledgePage,
  digests: digestsPage,
  digest: digestPage,
  decision: decisionPage,
  document: documentPage,
  evals: evalsPage,
  eval: evalPage,
};

function route() {
  if (!state.who) return;
  const [, name, arg, extra] = (location.hash || "#/").split("/");
  const page = pages[name] ? name : isReviewer() ? "queue" : "memory";
  state.page = page;
  for (const a of document.querySelectorAll(".top nav a")) {
    const here = a.dataset.page === page || (page === "lesson" && a.dataset.page === "memory") ||
      (page === "episode" && a.dataset.page === "episodes") || (page === "digest" && a.dataset.page === "digests") ||
      (page === "decision" && a.dataset.page === "decisions") || (page === "eval" && a.dataset.page === "evals") ||
      (page === "document" && a.dataset.page === "knowledge");
    if (here) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  show(h("p", { class: "muted" }, "Loading…"));
  pages[page](arg ? decodeURIComponent(arg) : undefined, extra)
    .then(() => {
      // Keyboard users start where the work is: the first lesson of the queue, else the page.
      if (page === "queue" && state.queue.length && isReviewer()) focusCard(0);
      else main().focus({ preventScroll: true });
    })
    .catch((err) => show(failure(err)));
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", boot);

// ---------- the review queue ----------

const DECISIONS = {
  approve: { label: "Approve", key: "a", cls: "approve", verb: "approved" },
  reject: { label: "Reject", key: "r", cls: "reject", verb: "rejected" },
  exception: { label: "One-time exception", key: "e", cls: "", verb: "marked as one-time exceptions" },
  sensitive: { label: "Sensitive", key: "s", cls: "", verb: "marked sensitive" },
  supersede: { label: "Supersede…", key: "u", cls: "", verb: "superseded" },
};

async function queuePage() {
  document.title = "Review queue · Lore";
  if (!isReviewer()) {
    show(h("h1", {}, "Review queue"),
      h("p", { class: "notice", id: "no-review" },
        "This token has the agent role. Reviewing lessons needs a reviewer or admin token; the API refuses review decisions from agents (403)."),
      h("p", {}, h("a", { href: "#/memory" }, "Browse memory"), " instead."));
    return;
  }
  await loadQueue();
  renderQueue();
}

async function loadQueue() {
  const page = await get("/v1/review?limit=500");
  // The skill filter narrows the cards; the badge still counts everything waiting.
  state.skills = {};
  for (const i of page.items) state.skills[i.lesson.skill] = (state.skills[i.lesson.skill] || 0) + 1;
  if (state.skill && !state.skills[state.skill]) state.skill = "";
  state.queue = page.items.filter((i) => !state.skill || i.lesson.skill === state.skill);
  badge(page.items.length);
  const ids = new Set(state.queue.map((i) => i.lesson.id));
  for (const id of [...state.selected]) if (!ids.has(id)) state.selected.delete(id);
  state.current = Math.min(state.current, Math.max(0, state.queue.length - 1));
}

function badge(n) {
  document.getElementById("queue-count").textContent = n ? String(n) : "";
}

function renderQueue() {
  if (state.page !== "queue") return;
  const selected = state.selected.size;
  const count = h("span", { class: "count", id: "selection" },
    selected ? `${selected} selected` : `${state.queue.length} waiting`);
  const skills = Object.keys(state.skills).sort();
  const filter = skills.length > 1 ? h("span", {}, h("label", { for: "queue-skill", class: "inline" }, "Skill "),
    h("select", { id: "queue-skill", onchange: async (e) => {
      state.skill = e.target.value;
      state.selected.clear();
      state.current = 0;
      await loadQueue();
      renderQueue();
    } }, h("option", { value: "" }, `all (${Object.values(state.skills).reduce((a, b) => a + b, 0)})`),
      skills.map((k) => h("option", { value: k, selected: k === state.skill }, `${k} (${state.skills[k]})`)))) : null;
  const bar = h("div", { class: "bar", role: "toolbar", "aria-label": "Decide on the selected lessons" }, count, filter,
    h("button", { type: "button", onclick: toggleAll, id: "select-all" }, selected === state.queue.length && selected ? "Select none" : "Select all"),
    Object.entries(DECISIONS).map(([name, d]) => h("button", {
      type: "button", class: d.cls, disabled: !selected, "data-decision": name,
      onclick: () => decide(name, [...state.selected]),
    }, d.label, h("kbd", {}, d.key.toUpperCase()))));
  const cards = state.queue.map((item, i) => card(item, i));
  show(
    h("h1", {}, "Review queue"),
    h("p", { class: "lede" }, "Lessons proposed from corrections and failures wait here for a person. Every decision needs a reason and is written to the audit."),
    state.queue.length ? bar : null,
    state.queue.length ? h("p", { class: "keys" },
      "Keys: ", h("kbd", {}, "J"), "/", h("kbd", {}, "K"), " move, ", h("kbd", {}, "X"), " select, ",
      h("kbd", {}, "A"), " approve, ", h("kbd", {}, "R"), " reject, ", h("kbd", {}, "E"), " exception, ",
      h("kbd", {}, "S"), " sensitive, ", h("kbd", {}, "U"), " supersede — the selection, or the lesson in focus.") : null,
    state.queue.length ? h("div", { id: "queue", role: "list" }, cards)
      : h("div", { class: "empty", id: "queue-empty" }, h("h2", {}, "Nothing waits for review"), h("p", {}, "New proposals appear here as they are made.")));
}

function card(item, i) {
  const l = item.lesson;
  const check = h("input", { type: "checkbox", id: "sel-" + l.id, "aria-label": "Select " + l.id, onchange: (e) => {
    if (e.target.checked) state.selected.add(l.id); else state.selected.delete(l.id);
    renderQueue();
    focusCard(i);
  } });
  check.checked = state.selected.has(l.id);
  const rows = [
    ["Applies when", l.applies_when],
    ["Mistake", l.mistake],
    ["Root cause", l.root_cause],
    ["Correction", item.correction],
    ["Why it waits", item.flagged],
    ["Fingerprints", l.triggers && l.triggers.length ? chips(l.triggers) : null],
    ["Tags", l.tags && l.tags.length ? chips(l.tags) : null],
    ["Shown", l.utility.activations ? `${l.utility.activations} times · helped ${l.utility.helped} · hurt ${l.utility.hurt} · utility ${l.utility.utility === null || l.utility.utility === undefined ? "not measured" : l.utility.utility.toFixed(2)}` : null],
  ].filter(([, v]) => v !== null && v !== undefined && v !== "");
  // Duplicates and conflicts side by side with this lesson, each with its state.
  const related = item.related && item.related.length ? h("div", { class: "side" },
    h("div", {}, h("h4", {}, "This lesson"), l.rule),
    h("div", {}, item.related.map((r) => h("div", { class: "related" },
      h("h4", {}, String(r.kind).replace(/_/g, " "), " · ", h("a", { href: "#/lesson/" + encodeURIComponent(r.id) }, r.id), r.status ? [" ", pill(r.status)] : ""),
      r.rule || h("span", { class: "muted" }, "no longer readable"))))) : null;
  const evidence = h("details", { class: "evidence", ontoggle: async (e) => {
    const d = e.target;
    if (!d.open || d.dataset.loaded) return;
    d.dataset.loaded = "1";
    try {
      const shown = await get(`/v1/lessons/${encodeURIComponent(l.id)}/activations`);
      const tally = {};
      for (const a of shown.items) tally[a.outcome] = (tally[a.outcome] || 0) + 1;
      append(d, h("p", { class: "meta" }, shown.items.length
        ? [`Shown in ${shown.total} run${shown.total === 1 ? "" : "s"}${shown.total > shown.items.length ? `, the latest ${shown.items.length}` : ""}: `, Object.entries(tally).map(([o, n]) => [pill(o), ` ${n} `])]
        : "Not shown to an agent yet."));
      if (l.execution_id) {
        const x = await get("/v1/executions/" + encodeURIComponent(l.execution_id));
        const signals = await get(`/v1/executions/${encodeURIComponent(l.execution_id)}/signals`).catch(() => ({ items: [] }));
        append(d, h("p", { class: "meta" }, "From ", h("span", { class: "mono" }, x.id), " · outcome ", pill(x.outcome), " · ", x.model || "", " ", when(x.timestamp)),
          h("pre", {}, JSON.stringify({ input: x.input, output: x.output }, null, 2)),
          signals.items.length ? h("p", {}, "Failures: ", signals.items.map((e) => h("span", { class: "chip" }, e.fingerprint))) : null);
      }
    } catch (err) { append(d, failure(err)); }
  } }, h("summary", {}, l.execution_id ? "Evidence: the execution it came from, and where it was shown" : "Evidence: where it was shown"));
  const actions = h("div", { class: "actions" }, Object.entries(DECISIONS).map(([name, d]) =>
    h("button", { type: "button", class: d.cls, "data-decision": name, onclick: () => decide(name, [l.id]) }, d.label)));
  return h("article", {
    class: "card" + (i === state.current ? " current" : "") + (state.selected.has(l.id) ? " selected" : ""),
    role: "listitem", tabindex: i === state.current ? "0" : "-1", "data-id": l.id, "aria-labelledby": "rule-" + l.id,
    onfocus: () => { state.current = i; markCurrent(); },
  },
    check,
    h("div", {},
      h("p", { class: "rule", id: "rule-" + l.id }, l.rule),
      h("div", { class: "meta" }, h("a", { href: "#/lesson/" + encodeURIComponent(l.id), class: "mono" }, l.id), pill(l.status),
        h("span", {}, l.skill), h("span", {}, "source: " + l.source), h("span", {}, "confidence " + pct(l.confidence)), when(l.created_at),
        [...(item.findings || [])].map((f) => h("span", { class: "pill finding" }, "holds " + f))),
      h("dl", {}, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      related, evidence, actions));
}

function markCurrent() {
  document.querySelectorAll("#queue .card").forEach((c, j) => {
    c.classList.toggle("current", j === state.current);
    c.tabIndex = j === state.current ? 0 : -1;
  });
}

function focusCard(i) {
  const cards = document.querySelectorAll("#queue .card");
  if (!cards.length) return;
  state.current = Math.max(0, Math.min(i, cards.length - 1));
  markCurrent();
  cards[state.current].focus();
}

function toggleAll() {
  if (state.selected.size === state.queue.length) state.selected.clear();
  else state.queue.forEach((i) => state.selected.add(i.lesson.id));
  renderQueue();
}

// One dialog for every decision: what, on which lessons, and a reason that cannot be left out.
function decide(name, ids) {
  if (!ids.length) return;
  const d = DECISIONS[name];
  const reason = h("textarea", { id: "reason", name: "reason", "aria-required": "true", "aria-describedby": "reason-help" });
  const by = name === "supersede" ? h("input", { id: "superseded-by", "aria-required": "true", list: "successors", placeholder: "REFL-…" }) : null;
  const successors = name === "supersede" ? h("datalist", { id: "successors" },
    state.queue.filter((i) => !ids.includes(i.lesson.id)).map((i) => h("option", { value: i.lesson.id }, i.lesson.rule))) : null;
  const error = h("div", { "aria-live": "assertive" });
  const confirm = h("button", { type: "submit", class: d.cls || "primary", id: "confirm" }, d.label.replace("…", ""));
  const dialog = h("dialog", { "aria-labelledby": "decide-title" },
    h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      if (!reason.value.trim()) { error.replaceChildren(h("p", { class: "error" }, "Say why: the reason goes to the audit.")); reason.focus(); return; }
      const body = { ids, reason: reason.value.trim() };
      if (by) body.superseded_by = by.value.trim();
      confirm.disabled = true;
      try {
        const done = await post("/v1/review/" + name, body);
        toast(`${done.lessons.length} lesson${done.lessons.length === 1 ? "" : "s"} ${d.verb}.`);
        ids.forEach((id) => state.selected.delete(id));
        dialog.close();
      } catch (err) {
        confirm.disabled = false;
        error.replaceChildren(h("p", { class: "error", role: "alert", id: "decision-error" },
          describe(err), ids.length > 1 ? " — nothing was changed: a batch is decided whole or not at all." : ""));
      }
    } },
      h("h2", { id: "decide-title" }, `${d.label.replace("…", "")} ${ids.length} lesson${ids.length === 1 ? "" : "s"}`),
      h("ul", {}, ids.map((id) => {
        const item = state.queue.find((i) => i.lesson.id === id);
        return h("li", {}, h("span", { class: "mono" }, id), " — ", item ? item.lesson.rule : "");
      })),
      by ? h("div", { class: "field" }, h("label", { for: "superseded-by" }, "Replaced by (lesson ID)"), by, successors) : null,
      h("div", { class: "field" }, h("label", { for: "reason" }, "Reason"), reason,
        h("p", { id: "reason-help", class: "muted", style: "font-size:12px" }, "Required. Recorded in the audit with your token's ID.")),
      error,
      h("div", { class: "buttons" },
        h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"), confirm)));
  reason.addEventListener("input", () => error.replaceChildren());
  // Enter confirms from the reason too (Shift+Enter for a new line).
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); dialog.querySelector("form").requestSubmit(); }
  });
  document.body.append(dialog);
  // Changes that arrived while the dialog was open (another reviewer's decision) show on close.
  dialog.addEventListener("close", async () => {
    dialog.remove();
    const at = state.current;
    await loadQueue().catch(() => {});
    renderQueue();
    focusCard(at);
  });
  dialog.showModal();
  (by || reason).focus();
}

document.addEventListener("keydown", (e) => {
  if (state.page !== "queue" || !isReviewer() || e.ctrlKey || e.metaKey || e.altKey) return;
  if (document.querySelector("dialog[open]")) return;
  const t = e.target;
  if (t && (t.tagName === "INPUT" && t.type !== "checkbox" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
  const key = e.key.toLowerCase();
  const item = state.queue[state.current];
  if (key === "j") { focusCard(state.current + 1); e.preventDefault(); return; }
  if (key === "k") { focusCard(state.current - 1); e.preventDefault(); return; }
  if (key === "x" && item) {
    const id = item.lesson.id;
    if (state.selected.has(id)) state.selected.delete(id); else state.selected.add(id);
    const at = state.current;
    renderQueue();
    focusCard(at);
    e.preventDefault();
    return;
  }
  for (const [name, d] of Object.entries(DECISIONS)) {
    if (key === d.key) {
      const ids = state.selected.size ? [...state.selected] : item ? [item.lesson.id] : [];
      e.preventDefault();
      decide(name, ids);
      return;
    }
  }
});

// ---------- live updates ----------

// EventSource cannot send a bearer token, so the stream is read with fetch.
async function follow() {
  const live = document.getElementById("live");
  const controller = new AbortController();
  state.live = controller;
  let lastId = null;
  let backoff = 1000;
  while (!controller.signal.aborted) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (state.token) headers.Authorization = "Bearer " + state.token;
      if (lastId) headers["Last-Event-ID"] = lastId;
      const res = await fetch("/v1/events", { headers, signal: controller.signal });
      if (!res.ok) throw new Error("events: " + res.status);
      live.textContent = "live";
      live.classList.add("on");
      backoff = 1000;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event = { data: "" };
          for (const line of block.split("\n")) {
            if (line.startsWith("id:")) event.id = line.slice(3).trim();
            else if (line.startsWith("event:")) event.name = line.slice(6).trim();
            else if (line.startsWith("data:")) event.data += line.slice(5).trim();
          }
          if (event.id) lastId = event.id;
          if (event.data) changed(event.name, JSON.parse(event.data));
        }
      }
    } catch (err) {
      if (controller.signal.aborted) return;
    }
    live.textContent = "reconnecting";
    live.classList.remove("on");
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 15000);
  }
}

function changed(name, data) {
  const list = document.getElementById("feed-list");
  let text;
  if (name === "execution.recorded") {
    const x = data.execution;
    text = [`Execution `, h("span", { class: "mono" }, x.id), ` of ${x.skill}: `, pill(x.outcome),
      x.lessons_shown && x.lessons_shown.length ? ` · ${x.lessons_shown.length} lesson(s) shown` : ""];
  } else if (name && name.startsWith("lesson.")) {
    const link = h("a", { href: "#/lesson/" + encodeURIComponent(data.lesson_id), class: "mono" }, data.lesson_id);
    if (name === "lesson.status_changed") text = [link, " ", data.from ? pill(data.from) : "", " → ", data.to ? pill(data.to) : "", data.actor ? ` by ${data.actor}` : "", data.reason ? `: ${data.reason}` : ""];
    else text = [link, " ", name.slice(7).replace("_", " "), data.to ? [" as ", pill(data.to)] : ""];
  } else if (name && name.startsWith("decision.")) {
    const link = h("a", { href: "#/decision/" + encodeURIComponent(data.decision_id), class: "mono" }, data.decision_id);
    text = name === "decision.status_changed"
      ? [link, " ", data.from ? pill(data.from) : "", " → ", data.to ? pill(data.to) : "", data.actor ? ` by ${data.actor}` : "", data.reason ? `: ${data.reason}` : ""]
      : [link, " recorded", data.to ? [" as ", pill(data.to)] : ""];
  } else {
    text = [name || "change"];
  }
  const at = data.at || (data.execution && data.execution.timestamp);
  list.prepend(h("li", { class: "fresh" }, when(at), text));
  while (list.children.length > 60) list.lastChild.remove();
  if (name && name.startsWith("decision.")) followDecision(data.decision);
  if (name && name.startsWith("lesson.") && isReviewer()) {
    clearTimeout(changed.timer);
    changed.timer = setTimeout(async () => {
      if (document.querySelector("dialog[open]")) return;
      await loadQueue().catch(() => {});
      // A decision begun while the queue was loading keeps its page and its focus; the dialog
      // shows what changed when it closes.
      if (document.querySelector("dialog[open]")) return;
      if (state.page === "queue") { const at = state.current; renderQueue(); if (document.activeElement === document.body || !document.activeElement) return; focusCard(at); }
    }, 300);
  }
}

// A decision recorded or moved by someone else shows on the decisions list, and on its own page,
// without a reload. The page is drawn again only when the change alters what it shows (this
// tab's own move has redrawn it already), and never under a reason being typed.
function followDecision(d) {
  if (!d) return;
  clearTimeout(followDecision.timer);
  followDecision.timer = setTimeout(() => {
    const shown = state.decisionsShown;
    if (!shown || shown.page !== state.page) return;
    if (state.page === "decision" && (shown.id !== d.id || shown.rows.get(d.id) === d.updated_at)) return;
    if (state.page === "decisions") {
      const known = shown.rows.get(d.id);
      if (known === d.updated_at) return;
      if (known === undefined && ((shown.status && d.status !== shown.status) || (shown.skill && d.skill !== shown.skill))) return;
    }
    const reason = document.getElementById("decision-reason");
    if (reason && reason.value.trim()) return;
    route();
  }, 300);
}

// ---------- plots (hand-drawn SVG) ----------

const PALETTE = {
  needs_review: "#b45309", trial: "#ca8a04", approved: "#15803d", rejected: "#b91c1c", suppressed: "#7f1d1d",
  expired: "#6b7280", one_time_exception: "#7c3aed", sensitive: "#db2777", superseded: "#0e7490", archived: "#9ca3af",
};

// The top of an axis with four even steps: whole numbers for counts, a round step otherwise.
function niceMax(v, whole = true) {
  if (v <= 0) return whole ? 4 : 1;
  const raw = v / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    const step = m * p;
    if (step >= raw && (!whole || Number.isInteger(step))) return step * 4;
  }
  return Math.ceil(raw) * 4;
}

// Axes and horizontal grid for a plot over `n` slots; returns the frame's geometry.
function frame(svg, { w, h: ht, max, min = 0, labels, left = 36 }) {
  const g = { x0: left, x1: w - 8, y0: ht - 22, y1: 8 };
  const y = (v) => g.y0 - ((v - min) / (max - min || 1)) * (g.y0 - g.y1);
  for (let i = 0; i <= 4; i++) {
    const v = min + ((max - min) * i) / 4;
    svg.append(s("line", { class: "grid", x1: g.x0, x2: g.x1, y1: y(v), y2: y(v) }),
      s("text", { x: g.x0 - 6, y: y(v) + 4, "text-anchor": "end" }, Number.isInteger(v) ? v : +v.toFixed(2)));
  }
  svg.append(s("line", { class: "axis", x1: g.x0, x2: g.x1, y1: g.y0, y2: g.y0 }));
  if (labels) {
    const step = Math.max(1, Math.ceil(labels.length / 8));
    labels.forEach((l, i) => {
      if ((labels.length - 1 - i) % step) return;
      const x = g.x0 + ((i + 0.5) * (g.x1 - g.x0)) / labels.length;
      svg.append(s("text", { x, y: ht - 6, "text-anchor": "middle" }, l));
    });
  }
  return { ...g, y };
}

function chart(title, desc, w, ht) {
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${w} ${ht}`, role: "img", "aria-label": title + ". " + desc });
  svg.append(s("title", {}, title));
  return svg;
}

function lines(title, labels, series, ht = 220, range, w = 560) {
  const max = range ? range[1] : niceMax(Math.max(0, ...series.flatMap((s) => s.values)), series.every((s) => s.values.every(Number.isInteger)));
  const svg = chart(title, series.map((s) => `${s.name}: ${s.values[s.values.length - 1]} at the end`).join(", "), w, ht);
  const g = frame(svg, { w, h: ht, max, min: range ? range[0] : 0, labels });
  const x = (i) => g.x0 + ((i + 0.5) * (g.x1 - g.x0)) / labels.length;
  for (const se of series) {
    const d = se.values.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${g.y(v).toFixed(1)}`).join("");
    svg.append(s("path", { d, fill: "none", stroke: se.color, "stroke-width": 2.2, "data-series": se.name }));
    const last = se.values.length - 1;
    svg.append(s("circle", { cx: x(last), cy: g.y(se.values[last]), r: 3, fill: se.color }));
  }
  return figure(svg, series);
}

function bars(title, labels, series, ht = 220, { signed = false, w = 560, whole = true } = {}) {
  const top = niceMax(Math.max(0, ...series.filter((s) => !s.down).flatMap((s) => s.values)), whole);
  const bottom = signed ? -niceMax(Math.max(0, ...series.filter((s) => s.down).flatMap((s) => s.values)), whole) : 0;
  const svg = chart(title, series.map((s) => `${s.name}: ${s.values.reduce((a, b) => a + b, 0)} in all`).join(", "), w, ht);
  const g = frame(svg, { w, h: ht, max: top, min: bottom, labels });
  const slot = (g.x1 - g.x0) / labels.length;
  const up = series.filter((s) => !s.down);
  const bw = Math.max(2, (slot * 0.8) / up.length);
  series.forEach((se) => {
    const k = se.down ? 0 : up.indexOf(se);
    const width = se.down ? slot * 0.8 : bw;
    se.values.forEach((v, i) => {
      if (!v) return;
      const xa = g.x0 + i * slot + slot * 0.1 + k * width;
      const ya = g.y(se.down ? -v : v), yb = g.y(0);
      svg.append(s("rect", { x: xa, y: Math.min(ya, yb), width, height: Math.abs(yb - ya), fill: se.color, "data-series": se.name },
        s("title", {}, `${labels[i]}: ${v} ${se.name}`)));
    });
  });
  return figure(svg, series);
}

function figure(svg, series) {
  return h("figure", { class: "plot" }, svg,
    h("figcaption", { class: "legend" }, series.map((se) => h("span", { style: `--c:${se.color}` }, se.name))));
}

// ---------- health ----------

async function healthPage(period) {
  document.title = "Health · Lore";
  const days = ["7", "30", "90", "365"].includes(period) ? Number(period) : 30;
  const [stats, status, bench] = await Promise.all([get(`/v1/stats?days=${days}`), get("/v1/status"),
    get("/v1/reports/learning").catch((e) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e)))]);
  const labels = stats.days.map((d) => d.slice(5));
  const states = Object.entries(stats.lessons_by_state)
    .map(([name, values]) => ({ name: name.replace(/_/g, " "), values, color: PALETTE[name] || "#555" }));
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  const tiles = [
    ["lessons", status.counts.lessons], ["executions", status.counts.executions],
    [`activations (${days} days)`, sum(stats.activations_per_day)], ["promotions", sum(stats.promotions_per_day)],
    ["suppressions", sum(stats.suppressions_per_day)], ["curation", status.curation],
  ];
  const utilities = stats.utility.map((u) => u.utility);
  const edges = [-1, -0.6, -0.2, 0.2, 0.6, 1.0001];
  const hist = edges.slice(0, -1).map((lo, i) => utilities.filter((u) => u >= lo && u < edges[i + 1]).length);
  const rec = stats.recurrence;
  const perDay = (n, d) => Math.round((n / d) * 100) / 100;
  show(
    h("h1", {}, "Health of learning"),
    h("div", { class: "row" },
      h("p", { class: "lede" }, `Is memory helping? Every figure is counted from the records your token can read, over the last ${days} days.`),
      h("nav", { "aria-label": "Period", class: "periods" }, [7, 30, 90, 365].map((d) =>
        h("a", { href: `#/health/${d}`, "aria-current": d === days ? "page" : null }, d === 365 ? "1 year" : `${d} days`)))),
    h("div", { class: "tiles" }, tiles.map(([l, n]) => h("div", { class: "tile" }, h("div", { class: "n" }, String(n)), h("div", { class: "l" }, l)))),
    h("div", { class: "grid2" },
      h("section", { class: "panel", id: "plot-states", "aria-labelledby": "t-states" }, h("h2", { id: "t-states" }, "Lessons by state"),
        states.length ? lines("Lessons by state over time", labels, states) : h("p", { class: "muted" }, "No lessons yet.")),
      h("section", { class: "panel", id: "plot-activations", "aria-labelledby": "t-act" }, h("h2", { id: "t-act" }, "Activations and executions per day"),
        bars("Activations and executions per day", labels, [
          { name: "lessons shown", values: stats.activations_per_day, color: "#1d4ed8" },
          { name: "executions", values: stats.executions_per_day, color: "#94a3b8" }])),
      h("section", { class: "panel", id: "plot-utility", "aria-labelledby": "t-util" }, h("h2", { id: "t-util" }, "Distribution of measured utility"),
        utilities.length ? bars("Lessons per utility band", ["−1 to −0.6", "−0.6 to −0.2", "−0.2 to 0.2", "0.2 to 0.6", "0.6 to 1"],
          [{ name: "lessons", values: hist, color: "#15803d" }])
          : h("p", { class: "muted" }, "No lesson has been measured yet: utility needs activations and `lore maintain`.")),
      h("section", { class: "panel", id: "plot-gates", "aria-labelledby": "t-gates" }, h("h2", { id: "t-gates" }, "Promotions and suppressions"),
        sum(stats.promotions_per_day) + sum(stats.suppressions_per_day)
          ? bars("Promotions (up) and suppressions (down) per day", labels, [
            { name: "promoted", values: stats.promotions_per_day, color: "#15803d" },
            { name: "suppressed", values: stats.suppressions_per_day, color: "#b91c1c", down: true }], 220, { signed: true })
          : h("p", { class: "muted" }, status.curation === "review"
            ? "None in this period. In review curation people decide; the utility gates promote and suppress lessons on trial (auto curation)."
            : "None in this period: no lesson on trial has crossed a utility gate yet.")),
    ),
    h("section", { class: "panel", id: "plot-recurrence", style: "margin-top:18px", "aria-labelledby": "t-rec" },
      h("h2", { id: "t-rec" }, "Error recurrence per fingerprint, before and after its lesson"),
      rec.length ? [bars("Errors per day before and after the lesson", rec.map((r) => r.fingerprint.length > 34 ? r.fingerprint.slice(0, 33) + "…" : r.fingerprint), [
        { name: "per day before", values: rec.map((r) => perDay(r.before, r.before_days)), color: "#b91c1c" },
        { name: "per day after", values: rec.map((r) => perDay(r.after, r.after_days)), color: "#15803d" }], 220, { w: 1120, whole: false }),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Fingerprint"), h("th", {}, "Lesson"), h("th", { class: "num" }, "Before"), h("th", { class: "num" }, "After"))),
        h("tbody", {}, rec.map((r) => h("tr", {}, h("td", { class: "mono" }, r.fingerprint),
          h("td", {}, r.lesson_id ? h("a", { href: "#/lesson/" + encodeURIComponent(r.lesson_id), class: "mono" }, r.lesson_id) : h("span", { class: "muted" }, "none yet")),
          h("td", { class: "num" }, r.before), h("td", { class: "num" }, r.after)))))]
        : h("p", { class: "muted" }, "No failures with fingerprints were reported.")),
    benchPanel(bench),
  );
}

// The latest `lore bench learning` run kept with the records: errors per run of the simulated
// agent with and without memory, so a team sees the learning loop itself work.
function benchPanel(bench) {
  const body = [];
  if (bench && Array.isArray(bench.with_memory) && bench.with_memory.length) {
    const phases = bench.phases || [];
    const phaseOf = (i) => (phases.filter(([, start]) => start <= i).pop() || ["", 0])[0];
    const labels = bench.with_memory.map((_, i) => `${phaseOf(i)} ${i + 1}`);
    const pct = (v) => `${Math.round(v * 100)}%`;
    body.push(
      lines(`Errors per run over ${bench.seeds} seeds, with and without memory`, labels, [
        { name: "without memory", values: bench.without_memory, color: "#94a3b8" },
        { name: "with memory", values: bench.with_memory, color: "#1d4ed8" }], 240, undefined, 1120),
      h("p", { class: "muted" },
        `Phases: ${phases.map(([name, start]) => `${name} from run ${start + 1}`).join(", ")}. ` +
        `Recurrence on the new tool ${pct(-bench.recurrence_reduction)}, retention regression ` +
        `${bench.retention_regression >= 0 ? "+" : ""}${bench.retention_regression.toFixed(3)} errors per run, ` +
        `retrieval precision ${bench.retrieval_precision.toFixed(2)}, good lessons suppressed ${bench.good_lessons_suppressed}.`));
  } else {
    body.push(h("p", { class: "muted" }, "No benchmark was kept here. Run `lore bench learning` in this project to see the learning loop's curve."));
  }
  return h("section", { class: "panel", id: "plot-bench", style: "margin-top:18px", "aria-labelledby": "t-bench" },
    h("h2", { id: "t-bench" }, "The latest learning benchmark"), ...body);
}

// ---------- memory browser ----------

const STATUSES = ["needs_review", "trial", "approved", "rejected", "suppressed", "expired", "one_time_exception", "sensitive", "superseded", "archived"];

async function memoryPage() {
  document.title = "Memory · Lore";
  const q = h("input", { id: "q", type: "search", placeholder: "What is the agent about to do?", style: "width:340px" });
  const skill = h("input", { id: "skill", placeholder: "domain/skill", style: "width:200px" });
  const source = h("select", { id: "source" }, ["any", "correction", "error_events", "success", "import", "manual", "llm"].map((v) => h("option", { value: v }, v)));
  const age = h("select", { id: "age" }, [["any", ""], ["1 day", "1"], ["7 days", "7"], ["30 days", "30"], ["90 days", "90"]].map(([l, v]) => h("option", { value: v }, l)));
  const minUtility = h("input", { id: "min-utility", type: "number", step: "0.1", min: "-1", max: "1", style: "width:90px" });
  const checks = STATUSES.map((st) => {
    const box = h("input", { type: "checkbox", value: st, id: "st-" + st });
    box.checked = ["approved", "trial"].includes(st);
    return h("label", { for: "st-" + st }, box, st.replace(/_/g, " "));
  });
  const results = h("div", { id: "results" });
  const run = async (e) => {
    if (e) e.preventDefault();
    results.replaceChildren(h("p", { class: "muted" }, "Searching…"));
    const statuses = [...document.querySelectorAll(".checks input:checked")].map((b) => b.value);
    try {
      const parts = [];
      if (q.value.trim()) {
        const body = { query: q.value.trim(), explain: true, limit: 10 };
        if (skill.value.trim()) body.skill = skill.value.trim();
        parts.push(explained(await post("/v1/recall", body)));
      }
      const params = new URLSearchParams({ limit: "500" });
      if (statuses.length) params.set("status", statuses.join(","));
      if (skill.value.trim()) params.set("skill", skill.value.trim());
      const page = await get("/v1/lessons?" + params);
      const days = Number(age.value || 0);
      const min = minUtility.value === "" ? null : Number(minUtility.value);
      const rows = page.items.filter((l) => (source.value === "any" || l.source === source.value) &&
        (!days || Date.now() - new Date(l.created_at).getTime() <= days * 86400000) &&
        (min === null || (l.utility.utility !== null && l.utility.utility !== undefined && l.utility.utility >= min)));
      parts.push(lessonTable(rows));
      results.replaceChildren(...parts);
    } catch (err) { results.replaceChildren(failure(err)); }
  };
  show(
    h("h1", {}, "Memory"),
    h("p", { class: "lede" }, "Search the way recall does, and see why each lesson was kept or dropped; filter what is stored."),
    h("form", { class: "filters", onsubmit: run, role: "search" },
      h("div", { class: "row" },
        h("div", {}, h("label", { for: "q" }, "Search (recall)"), q),
        h("div", {}, h("label", { for: "skill" }, "Skill"), skill),
        h("div", {}, h("label", { for: "source" }, "Source"), source),
        h("div", {}, h("label", { for: "age" }, "Newer than"), age),
        h("div", {}, h("label", { for: "min-utility" }, "Utility at least"), minUtility),
        h("button", { class: "primary", type: "submit" }, "Search")),
      h("fieldset", { class: "checks", style: "margin-top:10px" }, h("legend", {}, "States"), checks)),
    results);
  await run();
}

function explained(result) {
  const rows = (result.explain || []).map((x) => h("tr", {},
    h("td", {}, h("a", { href: "#/lesson/" + encodeURIComponent(x.id), class: "mono" }, x.id)),
    h("td", {}, x.decision === "kept" ? h("span", { class: "kept" }, `kept #${x.position + 1}`) : h("span", { class: "dropped" }, "dropped")),
    h("td", {}, x.decision === "kept" ? `tier ${x.tier}, ${x.tokens} tokens` : [String(x.reason || "").replace(/_/g, " "), x.detail ? ": " + (typeof x.detail === "string" ? x.detail : JSON.stringify(x.detail)) : ""]),
    h("td", {}, (x.sources || []).map((src) => h("span", { class: "chip" }, `${src.source || src.name || "?"} #${src.rank}`))),
    h("td", { class: "num" }, x.score.toFixed(3))));
  return h("section", { class: "recalled", id: "recall", "aria-labelledby": "t-recall" },
    h("h2", { id: "t-recall" }, `Recall: ${result.lessons.length} kept, ${result.tokens} of ${result.budget} tokens`),
    rows.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Lesson"), h("th", {}, "Decision"), h("th", {}, "Why"), h("th", {}, "Found by"), h("th", { class: "num" }, "Score"))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No candidate matched."),
    result.text ? h("details", {}, h("summary", {}, "The packed context"), h("pre", {}, result.text)) : null);
}

function lessonTable(rows) {
  return h("section", { "aria-labelledby": "t-lessons" },
    h("h2", { id: "t-lessons" }, `${rows.length} lesson${rows.length === 1 ? "" : "s"}`),
    rows.length ? h("table", { id: "lessons" },
      h("thead", {}, h("tr", {}, h("th", {}, "Rule"), h("th", {}, "State"), h("th", {}, "Skill"), h("th", {}, "Source"), h("th", { class: "num" }, "Shown"), h("th", { class: "num" }, "Utility"), h("th", {}, "Created"))),
      h("tbody", {}, rows.map((l) => h("tr", {},
        h("td", {}, h("a", { href: "#/lesson/" + encodeURIComponent(l.id) }, l.rule)),
        h("td", {}, pill(l.status)), h("td", {}, l.skill), h("td", {}, l.source),
        h("td", { class: "num" }, l.utility.activations), h("td", { class: "num" }, l.utility.utility === null || l.utility.utility === undefined ? "–" : l.utility.utility.toFixed(2)),
        h("td", {}, when(l.created_at))))))
      : h("p", { class: "empty" }, "No lesson matches these filters."));
}

async function lessonPage(id, mode) {
  // The text as written only when a reviewer asks for it; the API records each such read.
  const raw = mode === "raw" && isReviewer();
  const [{ lesson: l, audit }, activations] = await Promise.all([
    get("/v1/lessons/" + encodeURIComponent(id) + (raw ? "?raw=true" : "")),
    get(`/v1/lessons/${encodeURIComponent(id)}/activations`),
  ]);
  document.title = `${l.id} · Lore`;
  // Utility over time: the running share of good outcomes among the runs that showed it.
  const ordered = [...activations.items].reverse();
  // Every utility measurement left its figures in the audit.
  const measured = audit.filter((a) => a.evidence && typeof a.evidence.utility === "number");
  let good = 0;
  const running = ordered.map((a, i) => { if (["success", "accepted"].includes(a.outcome)) good += 1; return good / (i + 1); });
  // A purged lesson's text is gone for good: there is nothing left to change.
  const purged = audit.some((a) => a.action === "purged");
  const tools = !isReviewer() ? null : purged
    ? h("p", { class: "notice", id: "purged" }, "This lesson was purged: its text and its corrections' text were erased. Its ID and history stay.")
    : h("div", { class: "panel", id: "edit" }, h("h2", {}, "Change this lesson"), editForm(l));
  show(
    h("p", {}, h("a", { href: "#/memory" }, "← Memory")),
    h("h1", {}, l.rule),
    h("div", { class: "meta" }, h("span", { class: "mono" }, l.id), " ", pill(l.status), " ", l.skill, " · source ", l.source, " · confidence ", pct(l.confidence), " · created ", when(l.created_at)),
    isReviewer() ? h("p", { class: raw ? "notice" : "muted", id: "raw-note" }, raw
      ? ["Shown as written, secrets included. This read is recorded in the lesson's audit. ", h("a", { href: "#/lesson/" + encodeURIComponent(l.id) }, "Show redacted")]
      : ["Text is shown redacted. ", h("a", { href: `#/lesson/${encodeURIComponent(l.id)}/raw`, id: "show-raw" }, "Show it as written"), " (the read is audited)."]) : null,
    h("div", { class: "grid2", style: "margin-top:16px" },
      h("div", { class: "panel" }, h("h2", {}, "The lesson"),
        h("dl", { class: "card", style: "display:grid;grid-template-columns:120px 1fr;border:none;padding:0;margin:0" },
          [["Applies when", l.applies_when], ["Mistake", l.mistake], ["Root cause", l.root_cause], ["Summary", l.tiers && l.tiers.summary],
            ["Steps", l.tiers && l.tiers.steps && l.tiers.steps.length ? h("ol", {}, l.tiers.steps.map((x) => h("li", {}, x))) : null],
            ["Fingerprints", chips(l.triggers)], ["Tags", chips(l.tags)],
            ["Links", (l.links || []).map((k) => h("span", {}, k.kind.replace(/_/g, " "), " ", h("a", { href: "#/lesson/" + encodeURIComponent(k.target), class: "mono" }, k.target), " "))]]
            .filter(([, v]) => v && (!Array.isArray(v) || v.length)).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))),
      h("div", { class: "panel", id: "utility" }, h("h2", {}, "Utility"),
        h("p", {}, `Shown ${l.utility.activations} times · helped ${l.utility.helped} · hurt ${l.utility.hurt} · measured utility ${l.utility.utility === null || l.utility.utility === undefined ? "not yet" : l.utility.utility.toFixed(2)}`),
        measured.length ? [
          h("p", { id: "measured" }, "Latest measurement: ", measurement(measured[measured.length - 1].evidence)),
          measured.length > 1 ? lines("Measured utility over time", measured.map((a) => a.at.slice(5, 10)),
            [{ name: "measured utility", values: measured.map((a) => a.evidence.utility), color: "#1d4ed8" }], 160, [-1, 1]) : null] : null,
        running.length > 1 ? lines("Share of good outcomes among runs that showed it", ordered.map((a) => a.at.slice(5, 10)),
          [{ name: "good outcomes so far", values: running, color: "#15803d" }], 160, [0, 1])
          : h("p", { class: "muted" }, running.length ? "One activation so far." : "Not shown to an agent yet."))),
    h("div", { class: "grid2", style: "margin-top:18px" },
      h("section", { class: "panel", "aria-labelledby": "t-history" }, h("h2", { id: "t-history" }, "History"),
        timeline("history", audit, (a) => a.evidence && typeof a.evidence.utility === "number" ? h("div", { class: "muted" }, measurement(a.evidence)) : null)),
      h("section", { class: "panel", "aria-labelledby": "t-act" }, h("h2", { id: "t-act" }, `Activations (${activations.total})`),
        activations.total > 50 ? h("p", { class: "muted" }, "The newest 50.") : null,
        activations.items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Execution"), h("th", {}, "Outcome"), h("th", {}, "When"))),
          h("tbody", {}, activations.items.slice(0, 50).map((a) => h("tr", {}, h("td", { class: "mono" }, a.execution_id), h("td", {}, pill(a.outcome)), h("td", {}, when(a.at))))))
          : h("p", { class: "muted" }, "No execution has listed this lesson yet."))),
    tools ? h("div", { style: "margin-top:18px" }, tools) : null);
}

// A record's audit trail, oldest first: each change, who made it (the credential) and why.
// `more` adds a line of the entry's own (a lesson's utility measurement).
const timeline = (id, audit, more = () => null) => h("ol", { class: "timeline", id }, audit.map((a) => h("li", {},
  h("div", {}, h("strong", {}, a.action), a.from || a.to ? [" ", a.from ? pill(a.from) : "", a.to ? [" → ", pill(a.to)] : ""] : "", " by ", h("span", { class: "mono" }, a.actor)),
  a.reason ? h("div", {}, a.reason) : null,
  more(a),
  h("div", { class: "when" }, a.at.replace("T", " ").slice(0, 19), " UTC"))));

// A utility measurement as the audit keeps it: the lesson's runs against matched runs without it.
function measurement(m) {
  return `utility ${m.utility.toFixed(2)} · failure rate ${m.failure_rate.toFixed(2)} over ${m.runs} runs against ` +
    `${m.baseline_failure_rate.toFixed(2)} over ${m.baseline_runs} matched runs`;
}

function editForm(l) {
  const field = (id, label, value, area) => h("div", { class: "field" }, h("label", { for: id }, label),
    area ? h("textarea", { id }, value || "") : h("input", { id, value: value ?? "", style: "width:100%" }));
  const error = h("div", { "aria-live": "assertive" });
  const reason = () => document.getElementById("edit-reason").value.trim();
  const save = async (e) => {
    e.preventDefault();
    if (!reason()) { error.replaceChildren(h("p", { class: "error" }, "Say why: the reason goes to the audit.")); return; }
    const body = { rule: document.getElementById("edit-rule").value, applies_when: document.getElementById("edit-when").value,
      confidence: Number(document.getElementById("edit-confidence").value), reason: reason() };
    try {
      await api("PATCH", "/v1/lessons/" + encodeURIComponent(l.id), body);
      toast("Saved.");
      route();
    } catch (err) { error.replaceChildren(failure(err)); }
  };
  const retire = async () => {
    if (!reason()) { error.replaceChildren(h("p", { class: "error" }, "Say why: the reason goes to the audit.")); return; }
    try {
      await post(`/v1/lessons/${encodeURIComponent(l.id)}/retire`, { reason: reason() });
      toast("Retired.");
      route();
    } catch (err) { error.replaceChildren(failure(err)); }
  };
  return h("form", { onsubmit: save },
    field("edit-rule", "Rule", l.rule, true), field("edit-when", "Applies when", l.applies_when, true),
    field("edit-confidence", "Confidence (0 to 1)", l.confidence),
    field("edit-reason", "Reason (required)", ""),
    error,
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Save changes"), h("button", { type: "button", onclick: retire }, "Retire"),
      state.who.role === "admin" ? purgeButton(l, reason, error) : null));
}

// Purge erases for good, so it asks twice; admins only, as the API requires.
function purgeButton(l, reason, error) {
  const button = h("button", { type: "button", class: "reject", id: "purge", onclick: async () => {
    if (!reason()) { error.replaceChildren(h("p", { class: "error" }, "Say why: the reason goes to the audit.")); return; }
    if (!button.dataset.armed) {
      button.dataset.armed = "1";
      button.textContent = "Purge for good: click again";
      error.replaceChildren(h("p", { class: "error", role: "alert" }, "A purge erases the lesson's text and its corrections' text. It cannot be undone."));
      return;
    }
    try {
      await post(`/v1/lessons/${encodeURIComponent(l.id)}/purge`, { reason: reason() });
      toast("Purged.");
      location.hash = "#/lesson/" + encodeURIComponent(l.id);
      route();
    } catch (err) { error.replaceChildren(failure(err)); }
  } }, "Purge…");
  return button;
}

// ---------- episodes and the causal graph ----------

async function episodesPage() {
  document.title = "Episodes · Lore";
  const page = await get("/v1/episodes?limit=200");
  const from = h("input", { id: "from", placeholder: "decision:parallel", "aria-describedby": "path-help" });
  const to = h("input", { id: "to", placeholder: "outcome:failure", "aria-describedby": "path-help" });
  const mode = h("select", { id: "mode" }, h("option", { value: "shortest" }, "shortest"), h("option", { value: "strongest" }, "strongest"));
  const out = h("div", { id: "path" });
  show(
    h("h1", {}, "Episodes"),
    h("p", { class: "lede" }, "Agents' sessions: the decisions they made, what followed, and the causal graph built from all of them."),
    h("form", { class: "filters", onsubmit: async (e) => {
      e.preventDefault();
      try {
        const p = await get(`/v1/graph/path?from=${encodeURIComponent(from.value)}&to=${encodeURIComponent(to.value)}&mode=${mode.value}`);
        out.replaceChildren(pathGraph(p));
      } catch (err) { out.replaceChildren(failure(err)); }
    } }, h("div", { class: "row" },
      h("div", {}, h("label", { for: "from" }, "Causal path from"), from),
      h("div", {}, h("label", { for: "to" }, "to"), to),
      h("div", {}, h("label", { for: "mode" }, "Path"), mode),
      h("button", { class: "primary", type: "submit" }, "Find the path")),
      h("p", { id: "path-help", class: "muted", style: "font-size:12px;margin:8px 0 0" },
        "Nodes are named kind:label, as in an episode: decision:<chosen option>, event:<content>, outcome:success or outcome:failure. A bare word matches any kind.")),
    out,
    page.items.length ? h("table", { id: "episodes" }, h("thead", {}, h("tr", {}, h("th", {}, "Episode"), h("th", {}, "Task"), h("th", {}, "Skill"), h("th", {}, "Outcome"), h("th", {}, "When"))),
      h("tbody", {}, page.items.map((e) => h("tr", {},
        h("td", {}, h("a", { href: "#/episode/" + encodeURIComponent(e.id), class: "mono" }, e.id)), h("td", {}, e.task || ""), h("td", {}, e.skill),
        h("td", {}, pill(String(e.outcome))), h("td", {}, when(e.timestamp))))))
      : h("p", { class: "empty" }, "No episode was recorded yet."));
}

function nodeLabel(n) {
  if (!n) return "";
  if (typeof n === "string") return n;
  return [n.type, n.label].filter(Boolean).join(": ");
}

function pathGraph(p) {
  if (!p.steps.length) return h("p", { class: "notice" }, "No path between those two.");
  const nodes = [p.steps[0].source, ...p.steps.map((st) => st.target)];
  return h("section", { class: "panel", id: "causal-path" }, h("h2", {}, `Causal path (${p.mode}), strength ${p.strength.toFixed(2)}`),
    graph(nodes.map((n, i) => ({ id: "n" + i, label: nodeLabel(n), col: i, row: 0, kind: n.type })),
      p.steps.map((st, i) => ({ from: "n" + i, to: "n" + (i + 1), label: `${st.type} ×${st.evidence_count}` }))));
}

// A layered drawing: nodes in columns by order, edges as curves with arrowheads.
function graph(nodes, edges) {
  const cols = Math.max(...nodes.map((n) => n.col)) + 1;
  const rows = Math.max(...nodes.map((n) => n.row)) + 1;
  const cw = 240, rh = 84, nw = 160, nh = 46;
  const w = cols * cw + 20, ht = rows * rh + 30;
  const at = Object.fromEntries(nodes.map((n) => [n.id, { x: 10 + n.col * cw, y: 14 + n.row * rh }]));
  const svg = s("svg", { class: "chart graph", viewBox: `0 0 ${w} ${ht}`, role: "img", "aria-label": "Graph: " + nodes.map((n) => n.label).join(", "), style: `max-width:${w}px` });
  svg.append(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#57606a" }))));
  for (const e of edges) {
    const a = at[e.from], b = at[e.to];
    if (!a || !b) continue;
    const x1 = a.x + nw, y1 = a.y + nh / 2, x2 = b.x, y2 = b.y + nh / 2;
    const back = x2 <= x1;
    const d = back ? `M${a.x + nw / 2},${a.y + nh} C${a.x + nw / 2},${a.y + nh + 30} ${b.x + nw / 2},${b.y + nh + 30} ${b.x + nw / 2},${b.y + nh}`
      : `M${x1},${y1} C${x1 + 30},${y1} ${x2 - 30},${y2} ${x2},${y2}`;
    svg.append(s("path", { d, fill: "none", stroke: "#8c959f", "stroke-width": 1.6, "marker-end": "url(#arrow)" }));
    if (e.label) svg.append(s("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 6, "text-anchor": "middle" }, e.label));
  }
  const fill = { decision: "#dbeafe", event: "#f1f5f9", outcome: "#dcfce7" };
  for (const n of nodes) {
    const p = at[n.id];
    const [first, second] = wrap(n.label, 25);
    svg.append(s("g", { "data-node": n.id },
      s("rect", { x: p.x, y: p.y, width: nw, height: nh, rx: 8, fill: fill[n.kind] || "#fff", stroke: "#57606a" }),
      s("title", {}, n.label),
      s("text", { x: p.x + 8, y: p.y + 18 }, first),
      second ? s("text", { x: p.x + 8, y: p.y + 34 }, second) : null));
  }
  return svg;
}

// Two lines of at most `width` characters, broken between words, the rest cut with an ellipsis.
function wrap(text, width) {
  const lines = [""];
  for (const word of text.split(/\s+/)) {
    const line = lines[lines.length - 1];
    if (!line) lines[lines.length - 1] = word;
    else if ((line + " " + word).length <= width) lines[lines.length - 1] = line + " " + word;
    else lines.push(word);
  }
  const cut = (l) => (l.length > width ? l.slice(0, width - 1) + "…" : l);
  return [cut(lines[0]), lines.length > 2 ? cut(lines[1]).replace(/…?$/, "…") : lines[1] ? cut(lines[1]) : ""];
}

async function episodePage(id) {
  const view = await get("/v1/episodes/" + encodeURIComponent(id));
  const ep = view.episode;
  document.title = `${ep.id} · Lore`;
  const items = [
    ...ep.decisions.map((d, i) => ({ id: d.id, kind: "decision", ts: d.timestamp, i, label: `${d.context} → ${d.chosen}`, d })),
    ...ep.events.map((e, i) => ({ id: e.id, kind: "event", ts: e.timestamp, i: i + 0.5, label: e.content, e })),
  ].sort((a, b) => (a.ts && b.ts ? a.ts.localeCompare(b.ts) : a.i - b.i));
  const nodes = items.map((it, i) => ({ id: it.id, label: it.label, kind: it.kind, col: i, row: it.kind === "decision" ? 0 : 1 }));
  const edges = [];
  for (const d of ep.decisions) for (const to of d.effects || []) edges.push({ from: d.id, to });
  for (const e of ep.events) {
    for (const from of e.caused_by || []) edges.push({ from, to: e.id });
    for (const to of e.leads_to || []) edges.push({ from: e.id, to });
  }
  for (const l of ep.links || []) edges.push({ from: l.from, to: l.to, label: l.kind });
  show(
    h("p", {}, h("a", { href: "#/episodes" }, "← Episodes")),
    h("h1", {}, ep.task || ep.id),
    h("div", { class: "meta" }, h("span", { class: "mono" }, ep.id), " ", pill(String(ep.outcome)), " ", ep.skill, " · session ", ep.session, " · ", when(ep.timestamp)),
    h("section", { class: "panel", style: "margin-top:16px;overflow:auto", id: "episode-graph" }, h("h2", {}, "Decisions and events"), nodes.length ? graph(nodes, edges) : h("p", { class: "muted" }, "Empty episode.")),
    h("h2", {}, "In order"),
    h("ol", { class: "order" }, items.map((it) => h("li", {},
      h("div", { class: "kind" }, it.kind, it.ts ? " · " + it.ts : ""),
      it.kind === "decision"
        ? [h("strong", {}, it.d.context), h("div", {}, "Options: ", (it.d.options || []).join(" · "), " → chose ", h("strong", {}, it.d.chosen)), it.d.rationale ? h("div", { class: "muted" }, it.d.rationale) : null]
        : [h("span", {}, it.e.content)]))));
}

// ---------- the other layers: decisions, knowledge, digests, evaluations ----------

// A paged list endpoint, read to its end (each page names the next one's offset), or to its
// first 10,000 items: then the list is marked `cut`, for the page to say it shows only those.
// The first page stays as `head`, for what an answer carries beside its list.
async function all(path, key) {
  const items = [];
  let offset = 0;
  for (let pages = 0; pages < 20; pages++) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await get(`${path}${sep}limit=500&offset=${offset}`);
    if (!pages) items.head = page;
    items.push(...(page[key] || []));
    if (page.next_offset === undefined || page.next_offset === null) return items;
    offset = page.next_offset;
  }
  items.cut = true;
  return items;
}

const cutNotice = (items, what) => (items.cut ? h("p", { class: "notice" }, `Only the first ${items.length} ${what} are shown; narrow the list to see the others.`) : null);

const enc = encodeURIComponent;
// The wide tables scroll inside their own box, so a narrow window never scrolls sideways.
const scroll = (...children) => h("div", { class: "scroll" }, children);
// Facts as a definition list, skipping the empty ones; values are text or elements, never markup.
const facts = (id, rows) => h("dl", { class: "facts", id },
  rows.filter(([, v]) => v !== null && v !== undefined && v !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));

const DECISION_MOVES = {
  approved: "Approve", rejected: "Reject", one_time_exception: "One-time exception",
  superseded: "Supersede", sensitive: "Mark sensitive", archived: "Archive",
};
// The moves a person may make from each state, as the server's lifecycle allows them; the
// states only upkeep reaches (trial, suppressed, expired) are not offered. The server checks
// every move again and refuses any other.
const AFTER_DECIDED = ["archived", "sensitive"];
const DECISION_NEXT = {
  needs_review: ["approved", "rejected", "one_time_exception", "superseded", "archived", "sensitive"],
  trial: ["approved", "rejected", "one_time_exception", "superseded", "archived", "sensitive"],
  approved: ["rejected", "one_time_exception", "superseded", "archived", "sensitive"],
  suppressed: ["approved", "archived", "sensitive"],
  expired: ["approved", "rejected", "archived", "sensitive"],
  rejected: AFTER_DECIDED, one_time_exception: AFTER_DECIDED, superseded: AFTER_DECIDED,
  archived: ["sensitive"],
  sensitive: [],
};

// A reviewer's controls over decisions: one reason field and, per decision, a button for each
// move its state allows. Readers get none of it (the API would refuse them with 403 anyway).
function decisionReview(onMoved) {
  const reason = h("input", { id: "decision-reason", class: "wide", placeholder: "Why (the audit log keeps it)" });
  const error = h("div", { "aria-live": "assertive" });
  const move = (d, to) => async () => {
    const why = reason.value.trim();
    if (!why) {
      error.replaceChildren(h("p", { class: "error", role: "alert" }, "Say why first: a reason is required."));
      reason.focus();
      return;
    }
    try {
      await post("/v1/decisions/review", { ids: [d.id], status: to, reason: why });
      toast(`${d.id}: ${to.replace(/_/g, " ")}.`);
      onMoved();
    } catch (err) { error.replaceChildren(failure(err)); }
  };
  // `only` narrows the moves offered (the list keeps to approve and reject; the page has all).
  const buttons = (d, only) => (DECISION_NEXT[d.status] || []).filter((to) => !only || only.includes(to)).map((to) => h("button", {
    type: "button", class: to === "approved" ? "approve" : to === "rejected" ? "reject" : null, "data-move": to,
    "aria-label": `${DECISION_MOVES[to]} ${d.id}`, onclick: move(d, to),
  }, DECISION_MOVES[to]));
  return { reason, error, buttons };
}

async function decisionsPage(status, skillArg) {
  document.title = "Decisions · Lore";
  const wanted = STATUSES.includes(status) ? status : status === "all" ? "" : isReviewer() ? "needs_review" : "";
  const skillWanted = skillArg ? decodeURIComponent(skillArg) : "";
  const params = new URLSearchParams();
  if (wanted) params.set("status", wanted);
  if (skillWanted) params.set("skill", skillWanted);
  // A filter the API refuses (a skill that is not `domain/skill`) leaves the form to correct it.
  let rows = [], refused = null;
  try {
    rows = await all("/v1/decisions" + (params.toString() ? "?" + params : ""), "decisions");
  } catch (err) { refused = err; }
  const filter = h("select", { id: "decision-status" },
    h("option", { value: "" }, "any state"), STATUSES.map((st) => h("option", { value: st, selected: st === wanted }, st.replace(/_/g, " "))));
  const skill = h("input", { id: "decision-skill", placeholder: "domain/skill", value: skillWanted });
  const review = isReviewer() ? decisionReview(route) : null;
  state.decisionsShown = { page: "decisions", status: wanted, skill: skillWanted, rows: new Map(rows.map((d) => [d.id, d.updated_at])) };
  show(
    h("h1", {}, "Decisions"),
    h("p", { class: "lede" }, "What people decided when agents asked. Only approved decisions are recalled; each move is audited with its reason."),
    h("form", { class: "filters", onsubmit: (e) => {
      e.preventDefault();
      const s = skill.value.trim();
      location.hash = "#/decisions/" + (filter.value || "all") + (s ? "/" + enc(s) : "");
    } }, h("div", { class: "row" },
      h("div", {}, h("label", { for: "decision-status" }, "State"), filter),
      h("div", {}, h("label", { for: "decision-skill" }, "Skill"), skill),
      h("button", { type: "submit" }, "Show"),
      review ? h("div", { class: "grow" }, h("label", { for: "decision-reason" }, "Reason for a move"), review.reason) : null)),
    review ? review.error : null,
    refused ? failure(refused) : cutNotice(rows, "decisions"),
    refused ? null : rows.length ? scroll(h("table", { id: "decisions" },
      h("thead", {}, h("tr", {}, h("th", {}, "Situation"), h("th", {}, "Decided"), h("th", {}, "Why"), h("th", {}, "Skill"), h("th", {}, "State"), h("th", {}, "By"), h("th", {}, "When"),
        review ? h("th", {}, "Review") : null)),
      h("tbody", {}, rows.map((d) => h("tr", { "data-id": d.id },
        h("td", {}, h("a", { href: "#/decision/" + enc(d.id) }, d.situation), h("div", { class: "mono muted" }, d.id)), h("td", {}, d.action), h("td", {}, d.rationale),
        h("td", {}, d.skill), h("td", {}, pill(d.status)), h("td", { class: "mono" }, d.decided_by || ""), h("td", {}, when(d.created_at)),
        review ? h("td", { class: "actions" }, review.buttons(d, ["approved", "rejected"]),
          h("a", { href: "#/decision/" + enc(d.id), "aria-label": `Every move for ${d.id}` }, "More…")) : null)))))
      : h("p", { class: "empty" }, wanted ? `No decision is ${wanted.replace(/_/g, " ")}.` : "No decision was recorded yet."));
}

async function decisionPage(id) {
  // Outside the token's scope the API answers 404, as for an unknown ID.
  const [{ decision: d, audit }, digests] = await Promise.all([get("/v1/decisions/" + enc(id)), all("/v1/digests", "digests")]);
  document.title = `${d.id} · Lore`;
  const citing = digests.filter((g) => (g.sources || []).some((src) => src.id === d.id));
  state.decisionsShown = { page: "decision", id: d.id, rows: new Map([[d.id, d.updated_at]]) };
  const review = isReviewer() ? decisionReview(route) : null;
  const moves = review ? review.buttons(d) : [];
  show(
    h("p", {}, h("a", { href: "#/decisions/all" }, "← Decisions")),
    h("h1", {}, d.situation),
    h("div", { class: "meta" }, h("span", { class: "mono" }, d.id), " ", pill(d.status), " ", d.skill),
    facts("decision", [
      ["Situation", d.situation], ["Decided", d.action], ["Why", d.rationale], ["Outcome", d.outcome],
      ["Resolves", d.resolves], ["Skill", d.skill], ["State", pill(d.status)],
      ["Decided by", h("span", { class: "mono" }, d.decided_by)], ["Recorded", [d.created_at, " (", when(d.created_at), ")"]],
      ["Last changed", [d.updated_at, " (", when(d.updated_at), ")"]],
      ["In digests", citing.length ? citing.map((g) => h("a", { href: `#/digest/${enc(g.skill)}/${enc(g.id)}`, class: "chip" }, g.skill)) : null],
    ]),
    h("section", { class: "panel", "aria-labelledby": "t-decision-history" }, h("h2", { id: "t-decision-history" }, "History"),
      timeline("decision-history", audit)),
    review ? h("section", { class: "panel", id: "decision-review", "aria-labelledby": "t-review" },
      h("h2", { id: "t-review" }, "Review"),
      moves.length ? [
        h("div", { class: "field" }, h("label", { for: "decision-reason" }, "Reason"), review.reason),
        review.error,
        h("div", { class: "actions" }, moves),
        h("p", { class: "muted" }, "Only approved decisions are recalled as precedent; the move and its reason go to the audit with this token's ID.")]
        : h("p", { class: "muted" }, `A ${d.status.replace(/_/g, " ")} decision can move no further.`))
      : h("p", { class: "notice", id: "no-review" }, "Reviewing decisions needs a reviewer or admin token; the API refuses moves from this one (403)."));
}

async function knowledgePage() {
  document.title = "Knowledge · Lore";
  const docs = await all("/v1/knowledge/documents", "documents");
  const skills = [...new Set(docs.map((d) => d.skill))].sort();
  const q = h("input", { id: "kq", type: "search", class: "wide", placeholder: "What does the agent need to know?" });
  const skill = h("select", { id: "kskill" }, h("option", { value: "" }, "every skill"), skills.map((k) => h("option", { value: k }, k)));
  const out = h("div", { id: "knowledge-recall" });
  show(
    h("h1", {}, "Knowledge"),
    h("p", { class: "lede" }, "The team's documents, cut into chunks by heading and recalled with their source and lines."),
    h("form", { class: "filters", role: "search", onsubmit: async (e) => {
      e.preventDefault();
      out.replaceChildren(h("p", { class: "muted" }, "Searching…"));
      try {
        const body = { query: q.value };
        if (skill.value) body.skill = skill.value;
        const r = await post("/v1/knowledge/recall", body);
        out.replaceChildren(r.chunks.length
          ? h("section", { class: "panel", "aria-labelledby": "t-chunks" }, h("h2", { id: "t-chunks" }, `${r.chunks.length} chunk(s), ${r.tokens} of ${r.budget} tokens`),
            h("ol", { class: "chunks" }, r.chunks.map((c) => h("li", { "data-chunk": c.id }, h("strong", {}, c.heading || c.source), " ",
              h("span", { class: "muted" }, `${c.source}${c.page ? `, page ${c.page}` : ""}, lines ${c.line_start}–${c.line_end} · ${c.skill} · ${c.tokens} tokens · score ${c.score.toFixed(2)}`)))),
            h("h3", {}, "As an agent reads it"),
            h("pre", { class: "quoted" }, r.text))
          : h("p", { class: "notice" }, "No chunk is about that."));
      } catch (err) { out.replaceChildren(failure(err)); }
    } }, h("div", { class: "row" }, h("div", {}, h("label", { for: "kq" }, "Search (knowledge recall)"), q),
      h("div", {}, h("label", { for: "kskill" }, "Skill"), skill),
      h("button", { class: "primary", type: "submit" }, "Search knowledge"))),
    out,
    h("h2", {}, `${docs.length} document${docs.length === 1 ? "" : "s"}`), cutNotice(docs, "documents"),
    docs.length ? scroll(h("table", { id: "documents" },
      h("thead", {}, h("tr", {}, h("th", {}, "Source"), h("th", {}, "Skill"), h("th", { class: "num" }, "Chunks"), h("th", {}, "Content hash"), h("th", {}, "Ingested"), h("th", {}, "By"))),
      h("tbody", {}, docs.map((d) => h("tr", {}, h("td", { class: "mono" }, h("a", { href: documentHref(d) }, d.source)), h("td", {}, d.skill),
        h("td", { class: "num" }, d.chunks), h("td", { class: "mono", title: d.hash }, d.hash.slice(0, 12)), h("td", {}, when(d.ingested_at)), h("td", { class: "mono" }, d.ingested_by || ""))))))
      : h("p", { class: "empty" }, "No document was ingested yet: `lore ingest --skill domain/skill docs/`."));
}

const documentHref = (d) => `#/document/${enc(d.skill)}/${enc(d.source)}`;

// One document as the agents' recall cuts it: its chunks in order, each with its heading and
// lines, the text as stored (redacted at ingest) and shown as text.
async function documentPage(skill, sourceArg) {
  const source = decodeURIComponent(sourceArg || "");
  const chunks = await all(`/v1/knowledge/chunks?skill=${enc(skill)}&source=${enc(source)}`, "chunks");
  const d = chunks.head.document;
  document.title = `${d.source} · Lore`;
  show(
    h("p", {}, h("a", { href: "#/knowledge" }, "← Knowledge")),
    h("h1", { class: "mono" }, d.source),
    facts("document", [
      ["Skill", d.skill], ["Chunks", String(d.chunks)], ["Content hash", h("span", { class: "mono" }, d.hash)],
      ["Ingested", [d.ingested_at, " (", when(d.ingested_at), ")"]], ["By", h("span", { class: "mono" }, d.ingested_by)],
    ]),
    cutNotice(chunks, "chunks"),
    h("ol", { class: "chunks", id: "document-chunks" }, chunks.map((c) => h("li", { "data-chunk": c.id },
      h("strong", {}, c.heading || "(before the first heading)"), " ",
      h("span", { class: "muted" }, `${c.page ? `page ${c.page}, ` : ""}lines ${c.line_start}–${c.line_end}`, c.redacted ? " · redacted" : ""),
      h("pre", { class: "quoted" }, c.text)))));
}

// A reviewer's one-click write (rebuild a digest, run a set): readers are not offered it, and
// the API refuses it from them anyway. `done` turns the answer into the toast's words; the page
// then shows `href` (or itself again) with what changed.
function reviewerAction(id, label, path, body, done, href) {
  if (!isReviewer()) return null;
  const error = h("div", { "aria-live": "assertive" });
  const button = h("button", { type: "button", id, onclick: async () => {
    button.disabled = true;
    try {
      toast(done(await post(path, body)));
      if (href && location.hash !== href) location.hash = href; else route();
    } catch (err) {
      error.replaceChildren(failure(err));
      button.disabled = false;
    }
  } }, label);
  return h("div", { class: "actions" }, button, error);
}

const sourceLink = (src) => h("a", { class: "chip", href: (src.kind === "decision" ? "#/decision/" : "#/lesson/") + enc(src.id) }, src.id);
const sourceCounts = (sources) => {
  const n = (kind) => (sources || []).filter((src) => src.kind === kind).length;
  return `${n("lesson")} lesson(s), ${n("decision")} decision(s)`;
};
const methodOf = (d) => (d.method && d.method.kind === "model" ? `model ${d.method.model}` : d.method ? d.method.kind : "");

async function digestsPage() {
  document.title = "Digests · Lore";
  const digests = await all("/v1/digests", "digests");
  show(
    h("h1", {}, "Digests"),
    h("p", { class: "lede" }, "Each skill's one-page summary of its approved lessons and decisions, rebuilt when they change. Open one for its sources and its past versions."),
    digests.length ? scroll(h("table", { id: "digests" },
      h("thead", {}, h("tr", {}, h("th", {}, "Skill"), h("th", {}, "Made from"), h("th", {}, "How"), h("th", {}, "By"), h("th", {}, "When"))),
      h("tbody", {}, digests.map((d) => h("tr", {},
        h("td", {}, h("a", { href: "#/digest/" + enc(d.skill) }, d.skill)), h("td", {}, sourceCounts(d.sources)),
        h("td", {}, methodOf(d)), h("td", { class: "mono" }, d.generated_by), h("td", {}, when(d.generated_at)))))))
      : h("p", { class: "empty" }, "No digest was built yet: `lore digest build` (or `lore maintain`)."));
}

async function digestPage(skill, version) {
  document.title = `Digest of ${skill} · Lore`;
  const history = (await get(`/v1/digests/history?skill=${enc(skill)}&limit=50`)).digests;
  const at = Math.max(0, history.findIndex((d) => d.id === version));
  const shown = history[at];
  if (!shown) {
    show(h("p", {}, h("a", { href: "#/digests" }, "← Digests")), h("h1", {}, "Digest of ", skill), h("p", { class: "empty" }, "No digest of this skill yet."));
    return;
  }
  // What changed from the version before: the sources it gained and lost.
  const before = history[at + 1];
  const had = new Set(before ? before.sources.map((src) => src.id) : []);
  const has = new Set(shown.sources.map((src) => src.id));
  const gained = before ? shown.sources.filter((src) => !had.has(src.id)) : [];
  const lost = before ? before.sources.filter((src) => !has.has(src.id)) : [];
  show(
    h("p", {}, h("a", { href: "#/digests" }, "← Digests")),
    h("h1", {}, "Digest of ", skill),
    h("div", { class: "meta" }, h("span", { class: "mono" }, shown.id), at ? h("span", { class: "pill trial" }, "an older version") : h("span", { class: "pill approved" }, "current")),
    reviewerAction("digest-build", "Rebuild from the approved records", "/v1/digests/build", { skill },
      (r) => (r.built.length ? `A new digest of ${skill}: ${r.built[0].id}.` : "Nothing changed since the current digest: it stays."), "#/digest/" + enc(skill)),
    facts("digest-facts", [
      ["Made", [shown.generated_at, " (", when(shown.generated_at), ")"]], ["By", h("span", { class: "mono" }, shown.generated_by)],
      ["How", methodOf(shown)], ["Model failed", shown.model_error], ["Made from", sourceCounts(shown.sources)],
      ["Sources hash", h("span", { class: "mono", title: shown.source_hash }, shown.source_hash.slice(0, 16))],
      ["Since the version before", before ? [gained.length ? ["gained ", gained.map(sourceLink)] : "gained nothing", "; ", lost.length ? ["lost ", lost.map(sourceLink)] : "lost nothing"] : null],
    ]),
    // Shown as text: a digest is stored text, never markup.
    h("section", { class: "panel", id: "digest-text", "aria-label": "The digest's text" }, h("pre", { class: "quoted" }, shown.markdown)),
    h("h2", {}, "Sources"),
    h("p", { id: "digest-sources" }, shown.sources.map((src) => [h("span", { class: "muted" }, src.kind, " "), sourceLink(src), " "])),
    h("h2", {}, "History"),
    h("ol", { id: "digest-history" }, history.map((d, i) => h("li", {},
      d.id === shown.id ? h("strong", { class: "mono" }, d.id) : h("a", { class: "mono", href: `#/digest/${enc(skill)}/${enc(d.id)}` }, d.id),
      i === 0 ? " (current)" : "", " · ", sourceCounts(d.sources), " · ", methodOf(d), " · by ", h("span", { class: "mono" }, d.generated_by), " · ", when(d.generated_at)))));
}

// A memory item an answer was made from, linked to its page when it has one.
const itemChip = (id) => id.startsWith("DEC-") ? h("a", { class: "chip", href: "#/decision/" + enc(id) }, id)
  : id.startsWith("REFL-") ? h("a", { class: "chip", href: "#/lesson/" + enc(id) }, id) : h("span", { class: "chip" }, id);
const evalHref = (skill, set) => `#/eval/${enc(skill)}/${enc(set)}`;
const runLabel = (iso) => iso.slice(5, 16).replace("T", " ");

async function evalsPage() {
  document.title = "Evaluations · Lore";
  const [trends, runs] = await Promise.all([all("/v1/evals/trends?recent=50", "trends"), all("/v1/evals/runs", "runs")]);
  const latest = runs.slice(-20).reverse();
  show(
    h("h1", {}, "Evaluations"),
    h("p", { class: "lede" }, "Question sets with expected answers, graded over time against what memory gives for each question: is memory making the answers better?"),
    trends.length ? h("div", { class: "grid2", id: "trends" }, trends.map((t) =>
      h("section", { class: "panel trend", "data-set": `${t.skill}/${t.set}` },
        h("h2", {}, h("a", { href: evalHref(t.skill, t.set) }, t.skill, " · ", t.set)),
        lines(`Score of ${t.set} per run`, t.points.map((p) => runLabel(p.at)), [
          { name: "score", values: t.points.map((p) => p.score), color: "#1d4ed8" }], 200, [0, 1]),
        h("p", { class: "muted" }, `${t.runs} run(s)${t.runs > t.points.length ? `, the latest ${t.points.length} drawn` : ""}; best ${pct(t.best)}; change over these runs ${t.change >= 0 ? "+" : ""}${Math.round(t.change * 100)} points.`))))
      : h("p", { class: "empty" }, "No set was run yet: `lore eval define` then `lore eval run`."),
    latest.length ? [h("h2", {}, "Latest runs"), scroll(h("table", { id: "eval-runs" },
      h("thead", {}, h("tr", {}, h("th", {}, "Run"), h("th", {}, "Set"), h("th", { class: "num" }, "Passed"), h("th", { class: "num" }, "Score"), h("th", {}, "Answerer"), h("th", {}, "Trigger"), h("th", {}, "By"), h("th", {}, "When"))),
      h("tbody", {}, latest.map((r) => h("tr", {}, h("td", { class: "mono" }, r.id), h("td", {}, h("a", { href: evalHref(r.skill, r.set) }, `${r.skill} · ${r.set}`)),
        h("td", { class: "num" }, `${r.passed} of ${r.total}`), h("td", { class: "num" }, pct(r.score)), h("td", {}, r.answerer), h("td", {}, r.trigger),
        h("td", { class: "mono" }, r.run_by), h("td", {}, when(r.run_at)))))))] : null);
}

// One set over time: its score and questions passed per run, each question's grade run by run,
// and the latest run's answers beside what was expected.
async function evalPage(skill, rawSet) {
  const set = decodeURIComponent(rawSet || "");
  document.title = `${set} · Evaluations · Lore`;
  const [runs, sets] = await Promise.all([
    all(`/v1/evals/runs?skill=${enc(skill)}&set=${enc(set)}`, "runs"),
    all(`/v1/evals/sets?skill=${enc(skill)}`, "sets")]);
  const def = sets.find((x) => x.name === set);
  if (!runs.length && !def) throw new ApiError(404, "not_found", `no evaluation set ${set} of ${skill} in this token's scope`);
  const labels = runs.map((r) => runLabel(r.run_at));
  const recent = runs.slice(-12);
  const questions = def ? def.questions.map((q) => q.question) : [...new Set(runs.flatMap((r) => r.grades.map((g) => g.question)))];
  const last = runs[runs.length - 1];
  show(
    h("p", {}, h("a", { href: "#/evals" }, "← Evaluations")),
    h("h1", {}, set),
    h("div", { class: "meta" }, skill, " · ", `${runs.length} run(s)`, def ? [" · ", `${def.questions.length} question(s), defined by `, h("span", { class: "mono" }, def.defined_by), " ", when(def.updated_at)] : ""),
    def ? reviewerAction("eval-run", "Run this set now", "/v1/evals/runs", { skill, set },
      (r) => `${set}: ${r.runs[0].passed} of ${r.runs[0].total} passed.`) : null,
    runs.length ? h("div", { class: "grid2", id: "eval-charts", style: "margin-top:16px" },
      h("section", { class: "panel" }, h("h2", {}, "Score"),
        lines(`Score of ${set} per run`, labels, [{ name: "score", values: runs.map((r) => r.score), color: "#1d4ed8" }], 200, [0, 1])),
      h("section", { class: "panel" }, h("h2", {}, "Questions per run"),
        bars(`Questions of ${set} passed and failed per run`, labels, [
          { name: "passed", values: runs.map((r) => r.passed), color: "#116329" },
          { name: "failed", values: runs.map((r) => r.total - r.passed), color: "#a40e26" }], 200)))
      : h("p", { class: "empty" }, "This set was not run yet: `lore eval run`."),
    recent.length ? [h("h2", {}, "Each question, run by run"), scroll(h("table", { id: "eval-grid" },
      h("thead", {}, h("tr", {}, h("th", {}, "Question"), recent.map((r) => h("th", { class: "num", title: r.id }, runLabel(r.run_at))))),
      h("tbody", {}, questions.map((q) => h("tr", {}, h("td", {}, q), recent.map((r) => {
        const g = r.grades.find((x) => x.question === q);
        const mark = !g ? "–" : g.passed ? "✓" : "✗";
        const said = !g ? "not asked" : g.passed ? "passed" : "failed";
        return h("td", { class: "num mark " + (g ? (g.passed ? "kept" : "dropped") : "muted"), "data-grade": g ? said : null, "aria-label": `${said} on ${runLabel(r.run_at)}` }, mark);
      }))))))] : null,
    last ? [h("h2", {}, "The latest run's answers"),
      h("p", { class: "muted" }, h("span", { class: "mono" }, last.id), ` · ${last.passed} of ${last.total} · answered by ${last.answerer} · ${last.trigger} · by `, h("span", { class: "mono" }, last.run_by), " · ", when(last.run_at)),
      h("ol", { class: "order", id: "eval-grades" }, last.grades.map((g) => h("li", {},
        h("div", {}, pill(g.passed ? "success" : "failure"), " ", h("strong", {}, g.question)),
        h("div", { class: "muted" }, `Expected (${g.grader}): `, g.expected),
        g.error ? h("p", { class: "error" }, g.error) : null,
        h("pre", {}, g.answer),
        g.items.length ? h("div", {}, "From ", g.items.map(itemChip)) : null)))] : null);
}
