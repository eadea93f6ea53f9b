// Drives the web console in headless Chromium for the server's tests (tests/it/console.rs).
// Usage: node drive.mjs SCENARIO, with LORE_URL, the tokens, LORE_SHOTS (a folder for
// screenshots), LORE_CHROMIUM and LORE_PLAYWRIGHT_DIR in the environment. Prints one JSON object
// (what the page showed) on its last line; any failed expectation exits non-zero with the reason.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require(path.join(process.env.LORE_PLAYWRIGHT_DIR, "node_modules", "playwright-core"));

const url = process.env.LORE_URL;
const shots = process.env.LORE_SHOTS;
const scenario = process.argv[2];
const out = {};

function expect(ok, why) {
  if (!ok) throw new Error("expectation failed: " + why);
}

async function rest(token, method, route, body) {
  const res = await fetch(url + route, {
    method,
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function shot(page, name) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: true });
}

// Form controls with no accessible name on the page as it stands (should be none).
async function unlabelled(page) {
  return page.evaluate(() => [...document.querySelectorAll("input, select, textarea, button")]
    .filter((el) => !el.closest("[hidden]"))
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !(el.textContent || "").trim())
    .map((el) => el.outerHTML.slice(0, 80)));
}

// Elements stored text could have become had it been read as markup (the page itself draws
// only the header's icon): none may exist in the page's main part.
async function markup(page) {
  return page.locator("#main img, #main script, #main iframe, #main [onerror]").count();
}

// A request the page offers no control for, sent from inside it with the agent's token anyway;
// returns the status the API answered.
async function forced(page, route, body) {
  return page.evaluate(async ({ token, route, body }) => {
    const res = await fetch(route, {
      method: "POST",
      headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    return res.status;
  }, { token: process.env.LORE_AGENT, route, body });
}

async function signIn(page, token) {
  await page.goto(url + "/");
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#role").waitFor();
}

const scenarios = {
  // A reviewer approves the first proposed lesson with a reason; a lesson proposed meanwhile
  // appears in the queue without a reload.
  async approve(page) {
    await page.goto(url + "/");
    await shot(page, "00-sign-in");
    await signIn(page, process.env.LORE_REVIEWER);
    await page.locator("#queue .card").first().waitFor();
    await page.locator("#live.on").waitFor();
    const before = await page.locator("#queue .card").count();
    out.waiting = before;
    await shot(page, "01-review-queue");
    const first = page.locator("#queue .card").first();
    out.approved = await first.getAttribute("data-id");
    await first.locator('button[data-decision="approve"]').click();
    // The reason is required: confirming without one is refused in the page.
    await page.locator("#confirm").click();
    await page.getByText("Say why").waitFor();
    await page.getByLabel("Reason").fill("Checked against the outage runbook");
    await shot(page, "02-decision-dialog");
    await page.locator("#confirm").click();
    await page.locator(`#queue .card[data-id="${out.approved}"]`).waitFor({ state: "detached" });
    out.after_approve = await page.locator("#queue .card").count();
    expect(out.after_approve === before - 1, `one card fewer (${before} → ${out.after_approve})`);

    // Live: a correction recorded elsewhere shows up as a new card.
    const exec = await rest(process.env.LORE_ADMIN, "POST", "/v1/executions",
      { skill: process.env.LORE_SKILL, input: { ticket: "live" }, output: { priority: "low" }, outcome: "rejected" });
    const corr = await rest(process.env.LORE_ADMIN, "POST", "/v1/corrections",
      { skill: process.env.LORE_SKILL, execution_id: exec.body.id, text: "Quote the customer's own words when the ticket is a complaint." });
    expect(corr.status === 201, "the live correction was stored: " + JSON.stringify(corr.body));
    out.live = corr.body.lesson.id;
    await page.locator(`#queue .card[data-id="${out.live}"]`).waitFor({ timeout: 10000 });
    await page.locator("#feed-list li").first().waitFor();
    out.feed = await page.locator("#feed-list li").count();
  },

  // Three lessons selected by keyboard and rejected together, after another reviewer decided
  // one of them: the batch is refused whole; then the rest is rejected whole.
  async batch(page) {
    await signIn(page, process.env.LORE_REVIEWER);
    await page.locator("#queue .card").first().waitFor();
    const ids = await page.locator("#queue .card").evaluateAll((cards) => cards.map((c) => c.dataset.id));
    out.ids = ids;
    await page.locator("#queue .card").first().focus();
    for (let i = 0; i < ids.length; i++) {
      await page.keyboard.press("x");
      await page.keyboard.press("j");
    }
    expect((await page.locator("#selection").textContent()).startsWith(`${ids.length} selected`), "all selected by keyboard");
    await page.keyboard.press("r");
    await page.getByLabel("Reason").fill("Noise from a flaky run");
    // Meanwhile another reviewer, in another window, decides the last one.
    const other = await rest(process.env.LORE_ADMIN, "POST", "/v1/review/exception", { ids: [ids[ids.length - 1]], reason: "a one-off" });
    expect(other.status === 200, "the other decision: " + JSON.stringify(other.body));
    await page.locator("#confirm").click();
    const error = page.locator("#decision-error");
    await error.waitFor();
    out.refused = await error.textContent();
    await shot(page, "03-batch-refused");
    const states = await Promise.all(ids.map((id) => rest(process.env.LORE_ADMIN, "GET", "/v1/lessons/" + id)));
    out.after_refusal = states.map((s) => s.body.lesson.status);
    await page.getByRole("button", { name: "Cancel" }).click();
    // The live feed drops the decided card; select what is left and reject it.
    await page.locator(`#queue .card[data-id="${ids[ids.length - 1]}"]`).waitFor({ state: "detached", timeout: 10000 });
    const left = await page.locator("#queue .card").count();
    expect(left === ids.length - 1, `${left} cards left`);
    // The selection outlives the refusal, less the lesson decided elsewhere.
    expect((await page.locator("#selection").textContent()).startsWith(`${left} selected`), "the rest still selected");
    await page.locator('.bar button[data-decision="reject"]').click();
    await page.getByLabel("Reason").fill("Noise from a flaky run");
    await page.locator("#confirm").click();
    await page.locator("#queue-empty").waitFor();
    await shot(page, "04-queue-empty");
  },

  // An agent token: no reviewer action in the page, and the API refuses one sent anyway.
  async agent(page) {
    await signIn(page, process.env.LORE_AGENT);
    // An agent lands on the memory browser, with no queue in the navigation.
    await page.locator("#lessons, #results .empty").first().waitFor();
    out.queue_link = await page.locator('.top nav a[data-page="queue"]').isVisible();
    await page.goto(url + "/#/queue");
    await page.locator("#no-review").waitFor();
    out.role = await page.locator("#role").textContent();
    out.decision_buttons = await page.locator("[data-decision]").count();
    await shot(page, "05-agent-queue");
    out.forced = await forced(page, "/v1/review/approve", { ids: [process.env.LORE_LESSON], reason: "let me in" });
    await page.goto(url + "/#/lesson/" + process.env.LORE_LESSON);
    await page.locator("#history").waitFor();
    out.edit_forms = await page.locator("#edit").count();
  },

  // A reviewer reads a card's evidence, supersedes it by keyboard, then edits a lesson.
  async curate(page) {
    await signIn(page, process.env.LORE_REVIEWER);
    const card = page.locator(`#queue .card[data-id="${process.env.LORE_OLD}"]`);
    await card.locator("details.evidence summary").click();
    await card.locator("details.evidence pre").waitFor();
    out.evidence = await card.locator("details.evidence").textContent();
    await card.focus();
    await page.keyboard.press("u");
    await page.getByLabel("Replaced by (lesson ID)").fill(process.env.LORE_NEW);
    await page.getByLabel("Reason").fill("The newer rule says the same, better");
    await page.keyboard.press("Enter");
    await card.waitFor({ state: "detached" });

    await page.goto(url + "/#/lesson/" + process.env.LORE_NEW);
    await page.locator("#edit").waitFor();
    out.purge_buttons = await page.locator("#purge").count();
    await page.getByLabel("Rule").fill("When many customers report errors, set priority to urgent.");
    await page.getByLabel("Reason (required)").fill("Shorter");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.locator("#history li", { hasText: "Shorter" }).waitFor();
    await page.locator("#show-raw").click();
    await page.locator("#raw-note.notice").waitFor();
    await shot(page, "11-lesson-raw");
  },

  // An admin purges a lesson from its page: asked twice, then erased.
  async purge(page) {
    await signIn(page, process.env.LORE_ADMIN);
    await page.goto(url + "/#/lesson/" + process.env.LORE_LESSON);
    await page.getByLabel("Reason (required)").fill("Holds a customer's name");
    await page.locator("#purge").click();
    await page.getByText("cannot be undone").waitFor();
    await page.locator("#purge").click();
    await page.locator("#history li", { hasText: "Holds a customer's name" }).waitFor();
    await page.locator("#purged").waitFor();
    out.edit_forms = await page.locator("#edit").count();
    await shot(page, "12-lesson-purged");
  },

  // A server without tokens: no sign-in screen at all.
  async open(page) {
    await page.goto(url + "/");
    await page.locator("#queue .card").first().waitFor();
    out.role = await page.locator("#role").textContent();
    out.who = (await page.locator("#who").textContent()).replace(/\s+/g, " ").trim();
    out.cards = await page.locator("#queue .card").count();
  },

  // Every other page, as a reviewer, over the data the test wrote.
  async pages(page) {
    await signIn(page, process.env.LORE_REVIEWER);
    await page.locator("#queue .card").first().waitFor();
    out.related = await page.locator("#queue .card .side .related").count();
    out.unlabelled = await unlabelled(page);
    const conflicted = page.locator("#queue .card", { has: page.locator(".side") }).first();
    if (await conflicted.count()) {
      await conflicted.locator("details.evidence summary").click();
      await conflicted.locator("details.evidence pre").waitFor();
      await conflicted.scrollIntoViewIfNeeded();
    }
    await page.screenshot({ path: path.join(shots, "01b-review-queue-conflict.png") });
    await page.getByLabel("Skill").selectOption("billing/refunds");
    await page.waitForFunction(() => document.querySelectorAll("#queue .card").length === 1);
    out.billing_cards = await page.locator("#queue .card").count();
    await page.goto(url + "/#/health/7");
    await page.getByText("activations (7 days)").waitFor();
    out.week = await page.getByText("activations (7 days)").count();
    await page.goto(url + "/#/health");
    await page.locator("#plot-states svg path[data-series]").first().waitFor();
    out.state_lines = await page.locator("#plot-states path[data-series]").count();
    out.activation_bars = await page.locator('#plot-activations rect[data-series="lessons shown"]').count();
    out.execution_bars = await page.locator('#plot-activations rect[data-series="executions"]').count();
    out.utility_bars = await page.locator("#plot-utility rect[data-series]").count();
    out.recurrence_bars = await page.locator("#plot-recurrence rect[data-series]").count();
    out.gate_bars = await page.locator("#plot-gates rect[data-series]").count();
    out.bench_lines = await page.locator("#plot-bench path[data-series]").count();
    out.bench_points = (await page.locator('#plot-bench path[data-series="with memory"]').getAttribute("d")).split("L").length;
    await shot(page, "06-health");

    await page.goto(url + "/#/memory");
    await page.locator("#lessons").waitFor();
    await page.getByLabel("Search (recall)").fill(process.env.LORE_QUERY);
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.locator("#recall table").waitFor();
    out.kept = await page.locator("#recall .kept").count();
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "07-memory-search");

    await page.goto(url + "/#/lesson/" + process.env.LORE_LESSON);
    await page.locator("#history li").first().waitFor();
    out.history = await page.locator("#history li").count();
    out.measured = await page.locator("#measured").count();
    out.activation_rows = await page.locator("#utility ~ section tbody tr, section tbody tr").count();
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "08-lesson");

    await page.goto(url + "/#/episodes");
    await page.locator("#episodes").waitFor();
    await page.getByLabel("Causal path from").fill(process.env.LORE_PATH_FROM);
    await page.getByLabel("to", { exact: true }).fill(process.env.LORE_PATH_TO);
    await page.getByRole("button", { name: "Find the path" }).click();
    await page.locator("#causal-path, #path .notice, #path .error").first().waitFor();
    out.path_nodes = await page.locator("#causal-path g[data-node]").count();
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "09-episodes");

    await page.locator("#episodes a").first().click();
    await page.locator("#episode-graph svg").waitFor();
    out.episode_nodes = await page.locator("#episode-graph g[data-node]").count();
    await shot(page, "10-episode");
  },

  // The pages of the other layers, as a reviewer, over the data the test wrote.
  async layers(page) {
    await signIn(page, process.env.LORE_REVIEWER);
    await page.goto(url + "/#/decisions");
    await page.locator("#decisions").waitFor();
    out.waiting_decisions = await page.locator("#decisions tbody tr").count();
    out.markup = { decisions: await markup(page) };
    out.decisions_text = await page.locator("#decisions").textContent();
    out.unlabelled = await unlabelled(page);
    await shot(page, "13-decisions");
    const approve = () => page.locator(`#decisions tr[data-id="${process.env.LORE_DECISION}"]`).getByRole("button", { name: /^Approve / });
    await approve().click();
    await page.getByText("a reason is required").waitFor();
    out.reason_refused = await page.getByText("a reason is required").count();
    await page.getByLabel("Reason for a move").fill("Matches the refund policy");
    await approve().click();
    // A move reloads the page: the old table goes, "Loading…" stands, then the new list comes.
    await page.waitForFunction((id) => document.querySelector("#decisions, #main .empty") &&
      !document.querySelector(`#decisions tr[data-id="${id}"]`), process.env.LORE_DECISION);
    out.left_waiting = await page.locator("#decisions tbody tr").count();
    await page.goto(url + "/#/decisions/approved");
    await page.locator(`#decisions tr[data-id="${process.env.LORE_DECISION}"]`).waitFor();
    out.approved_decisions = await page.locator("#decisions tbody tr").count();

    // A decision's own page, opened from the list, reviewed by keyboard: supersede it. The page
    // reads that one decision, not the whole list.
    const requests = [];
    const log = (r) => { const u = new URL(r.url()); if (u.pathname.startsWith("/v1/decisions")) requests.push(u.pathname + u.search); };
    page.on("request", log);
    await page.locator(`#decisions tr[data-id="${process.env.LORE_SUPERSEDE}"] a`).first().click();
    await page.locator("#decision").waitFor();
    page.off("request", log);
    out.decision_requests = requests;
    out.decision_facts = await page.locator("#decision").textContent();
    out.moves_offered = await page.locator("#decision-review [data-move]").evaluateAll((b) => b.map((x) => x.dataset.move));
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "17-decision");
    await page.getByLabel("Reason", { exact: true }).fill("Replaced by the new refund policy");
    await page.getByLabel("Reason", { exact: true }).press("Tab");
    let focused = "";
    for (let i = 0; i < 8 && focused !== "superseded"; i++) {
      await page.keyboard.press("Tab");
      focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.move || "");
    }
    expect(focused === "superseded", "Tab reaches the Supersede button");
    await page.keyboard.press("Enter");
    await page.locator("#decision .pill.superseded").waitFor();
    out.moves_after = await page.locator("#decision-review [data-move]").evaluateAll((b) => b.map((x) => x.dataset.move));
    out.decision_history = await page.locator("#decision-history li").evaluateAll((li) => li.map((x) => x.textContent));

    await page.goto(url + "/#/knowledge");
    await page.locator("#documents").waitFor();
    out.documents = await page.locator("#documents tbody tr").count();
    out.documents_text = await page.locator("#documents").textContent();
    const search = async (query) => {
      await page.getByLabel("Search (knowledge recall)").fill(query);
      await page.getByRole("button", { name: "Search knowledge" }).click();
      await page.locator("#knowledge-recall pre, #knowledge-recall .notice, #knowledge-recall .error").first().waitFor();
    };
    await search(process.env.LORE_KNOWLEDGE_QUERY);
    out.chunks = await page.locator("#knowledge-recall ol.chunks li").count();
    out.knowledge_text = (await page.locator("#knowledge-recall").textContent()) || "";
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "14-knowledge");
    await search(process.env.LORE_HOSTILE_QUERY);
    out.hostile_knowledge = (await page.locator("#knowledge-recall").textContent()) || "";
    out.markup.knowledge = await markup(page);
    // A document's own page: its chunks in order, the hostile one's text as typed.
    await page.locator("#documents a", { hasText: "docs/refunds.md" }).click();
    await page.locator("#document-chunks li").first().waitFor();
    out.document_chunks = await page.locator("#document-chunks li strong").evaluateAll((s) => s.map((x) => x.textContent));
    out.document_text = await page.locator("#document-chunks").textContent();
    out.document_facts = await page.locator("#document").textContent();
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "19-document");
    await page.goto(url + "/#/knowledge");
    await page.locator("#documents a", { hasText: "docs/pasted.md" }).click();
    await page.locator("#document-chunks li").first().waitFor();
    out.hostile_document = await page.locator("#document-chunks").textContent();
    out.markup.document = await markup(page);

    await page.goto(url + "/#/digests");
    await page.locator("#digests").waitFor();
    out.digests = await page.locator("#digests tbody tr").count();
    await page.locator("#digests a").first().click();
    await page.locator("#digest-history li").first().waitFor();
    out.digest_versions = await page.locator("#digest-history li").count();
    out.digest_text = await page.locator("#digest-text pre").textContent();
    out.digest_facts = await page.locator("#digest-facts").textContent();
    out.digest_sources = await page.locator("#digest-sources a").evaluateAll((a) => a.map((x) => x.textContent));
    out.markup.digest = await markup(page);
    await shot(page, "15-digest");
    const older = page.locator("#digest-history a").first();
    const olderId = await older.textContent();
    await older.click();
    await page.locator("#digest-history strong", { hasText: olderId }).waitFor();
    out.older_text = await page.locator("#digest-text pre").textContent();
    // A digest's source opens the decision it cites.
    await page.locator("#digest-sources a").first().click();
    await page.locator("#decision").waitFor();
    out.source_opened = (await page.locator("#decision").textContent()).includes("Store credit only");
    // The decision superseded above leaves the digest's sources: a rebuild makes a new version
    // without it, shown as the current one.
    await page.goto(url + "/#/digest/" + encodeURIComponent(process.env.LORE_SKILL) + "/" + olderId);
    await page.locator("#digest-build").click();
    await page.waitForFunction(() => document.querySelectorAll("#digest-history li").length === 3);
    out.rebuilt_facts = await page.locator("#digest-facts").textContent();
    out.rebuilt_current = await page.locator("#digest-history li").first().locator("strong").count();

    await page.goto(url + "/#/evals");
    await page.locator("#trends .trend").first().waitFor();
    out.trends = await page.locator("#trends .trend").count();
    out.trend_points = (await page.locator('#trends path[data-series="score"]').first().getAttribute("d")).split("L").length;
    out.eval_runs = await page.locator("#eval-runs tbody tr").count();
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "16-evaluations");
    await page.locator("#trends .trend h2 a").first().click();
    await page.locator("#eval-grid").waitFor();
    out.set_points = (await page.locator('#eval-charts path[data-series="score"]').getAttribute("d")).split("L").length;
    out.passed_bars = await page.locator('#eval-charts rect[data-series="passed"]').count();
    out.failed_bars = await page.locator('#eval-charts rect[data-series="failed"]').count();
    // The grid as drawn: per question, its grade in each run, oldest first.
    out.grid = await page.locator("#eval-grid tbody tr").evaluateAll((rows) => rows.map((r) =>
      [r.cells[0].textContent, [...r.cells].slice(1).map((c) => c.dataset.grade || "")]));
    out.latest_answers = await page.locator("#eval-grades li").count();
    out.markup.eval = await markup(page);
    out.unlabelled.push(...await unlabelled(page));
    await shot(page, "18-evaluation-set");
    await page.getByRole("button", { name: "Run this set now" }).click();
    await page.waitForFunction(() => document.querySelectorAll("#eval-grid thead th").length === 4);
    out.set_points_after = (await page.locator('#eval-charts path[data-series="score"]').getAttribute("d")).split("L").length;

    // Live: another reviewer's move shows on the open decision page, in its history and in the
    // feed; a decision recorded elsewhere joins the open list. No reload.
    const id = process.env.LORE_DECISION;
    await page.goto(url + "/#/decision/" + id);
    await page.locator("#decision .pill.approved").waitFor();
    const before = await page.locator("#decision-history li").count();
    const moved = await rest(process.env.LORE_ADMIN, "POST", "/v1/decisions/review", { ids: [id], status: "archived", reason: "Policy retired upstream" });
    expect(moved.status === 200, "the admin's move: " + JSON.stringify(moved.body));
    await page.locator("#decision .pill.archived").waitFor();
    await page.waitForFunction((n) => document.querySelectorAll("#decision-history li").length === n + 1, before);
    out.live_history = await page.locator("#decision-history li").last().textContent();
    out.live_feed = await page.locator("#feed-list").textContent();
    await page.goto(url + "/#/decisions");
    await page.locator("#decisions").waitFor();
    const rows = await page.locator("#decisions tbody tr").count();
    const made = await rest(process.env.LORE_ADMIN, "POST", "/v1/decisions", {
      skill: process.env.LORE_SKILL, situation: "A refund asked in a chat", action: "Ask for the order number", rationale: "Chats carry no order",
    });
    expect(made.status === 201, "the admin's decision: " + JSON.stringify(made.body));
    await page.locator(`#decisions tr[data-id="${made.body.id}"]`).waitFor();
    out.live_rows = [rows, await page.locator("#decisions tbody tr").count()];
  },

  // An agent reads every layer, sees no review action, is refused when it sends one anyway, and
  // every page fits a phone's width.
  async reader(page) {
    await signIn(page, process.env.LORE_AGENT);
    await page.goto(url + "/#/decisions");
    await page.locator("#decisions").waitFor();
    out.rows = await page.locator("#decisions tbody tr").count();
    out.moves = await page.locator("[data-move]").count();
    out.reason_fields = await page.locator("#decision-reason").count();
    // A filter the API refuses is named, with the form left to correct it.
    await page.getByLabel("Skill").fill("not a skill");
    await page.getByRole("button", { name: "Show" }).click();
    await page.locator("#main .error").waitFor();
    out.bad_filter = await page.locator("#main .error").textContent();
    out.bad_filter_kept = await page.getByLabel("Skill").inputValue();
    await page.goto(url + "/#/decision/" + process.env.LORE_DECISION);
    await page.locator("#decision").waitFor();
    out.notice = await page.locator("#no-review").count();
    out.moves += await page.locator("[data-move]").count();
    out.forced = await forced(page, "/v1/decisions/review", { ids: [process.env.LORE_DECISION], status: "approved", reason: "let me in" });

    await page.setViewportSize({ width: 390, height: 844 });
    out.overflow = {};
    out.markup = {};
    out.unlabelled = [];
    for (const [name, hash, ready] of [
      ["decisions", "#/decisions", "#decisions"],
      ["decision", "#/decision/" + process.env.LORE_DECISION, "#decision"],
      ["knowledge", "#/knowledge", "#documents"],
      ["document", `#/document/${encodeURIComponent(process.env.LORE_SKILL)}/${encodeURIComponent("docs/refunds.md")}`, "#document-chunks"],
      ["digests", "#/digests", "#digests"],
      ["digest", "#/digest/" + encodeURIComponent(process.env.LORE_SKILL), "#digest-text"],
      ["evals", "#/evals", "#trends"],
      ["eval", `#/eval/${encodeURIComponent(process.env.LORE_SKILL)}/refunds`, "#eval-grid"],
      ["memory", "#/memory", "#lessons, #results .empty"],
      ["health", "#/health", "#plot-states"],
      ["episodes", "#/episodes", "#episodes, #main .empty"],
    ]) {
      await page.goto(url + "/" + hash);
      await page.locator(ready).waitFor();
      out.overflow[name] = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      out.markup[name] = await markup(page);
      out.writes = (out.writes || 0) + await page.locator("#digest-build, #eval-run, [data-move]").count();
      out.unlabelled.push(...await unlabelled(page));
      await shot(page, "19-narrow-" + name);
    }
    // The navigation stays reachable by keyboard at that width.
    await page.locator(".top nav a:not([hidden])").first().focus();
    out.nav_tab = [];
    for (let i = 0; i < 8; i++) {
      out.nav_tab.push(await page.evaluate(() => document.activeElement.dataset.page || ""));
      await page.keyboard.press("Tab");
    }
  },
};

const browser = await chromium.launch({
  executablePath: process.env.LORE_CHROMIUM,
  args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
let code = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  out.page_errors = errors;
  page.on("pageerror", (err) => errors.push(String(err)));
  page.on("console", (msg) => { if (msg.type() === "error") errors.push(msg.text()); });
  page.setDefaultTimeout(15000);
  await scenarios[scenario](page);
} catch (err) {
  console.error(String(err && err.stack ? err.stack : err));
  for (const p of browser.contexts().flatMap((c) => c.pages())) await shot(p, `failed-${scenario}`).catch(() => {});
  code = 1;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
process.exit(code);
