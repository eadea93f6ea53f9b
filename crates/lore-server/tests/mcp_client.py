"""Drive Lore's MCP server with the official Python SDK, as Claude Desktop or Cursor would.

Usage:
    mcp_client.py stdio LORE_BINARY LORE_HOME SKILLS_DIR
    mcp_client.py http URL [TOKEN]
    mcp_client.py subset-stdio LORE_BINARY LORE_HOME SKILLS_DIR
    mcp_client.py subset-http URL
    mcp_client.py list-stdio LORE_BINARY LORE_HOME SKILLS_DIR
    mcp_client.py list-http URL [TOKEN]

`stdio` and `http` ask for every tool (`--tools all`, `?tools=all`). With a TOKEN (an agent's,
scoped to the `support` domain), it also checks isolation: nothing outside `support/` is listed
or found, recording into `finance/audit` is refused, and no reviewer or admin tool is listed.
The `list` modes print the `tools/list` result exactly as the client holds it, for counting.

Lists the tools, checks their annotations, then calls every tool: record an execution, correct
it, find the learned lesson by search and by listing, read it, assemble the prompt that carries
it, and read the status. Also checks that a bad argument comes back as a tool error the model
can act on. Prints one JSON line of findings; any failed check exits non-zero with a message.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SKILL = "support/summarize-ticket"
READ_ONLY = {
    "search_memory", "recall_memory", "list_lessons", "get_lesson", "memory_prompt",
    "memory_status", "review_queue", "core_memory_read", "archival_memory_search",
    "conversation_log_read", "get_episode", "session_episodes", "decision_sequence", "list_episodes", "causal_path",
    "export_causal_graph", "what_if", "similar_decisions", "find_patterns", "find_anti_patterns",
    "layered_context", "recall_knowledge", "list_knowledge", "knowledge_chunks", "recall_decisions",
    "get_decision",
    "read_digest", "eval_trends",
    "embedder_status", "embedder_runs", "embedder_run", "embedder_checkpoints",
    "embedder_preflight",
}
WRITES = {
    "record_execution", "correct", "review_lessons", "unlink_lessons", "report_signal",
    "core_memory_write",
    "archival_memory_write", "conversation_log_write", "record_episode", "learn_lessons",
    "ingest_knowledge", "record_decision", "review_decisions", "org_pool", "propagate_lesson",
    "build_digests", "define_eval_set", "run_evals",
    "ingest_knowledge", "record_decision", "review_decisions",
    "embedder_train", "embedder_resume", "embedder_activate", "embedder_rollback", "embedder_cancel",
    "embedder_delete_checkpoint",
}
# What an agent's token may not call, so is not listed to it.
PRIVILEGED = {
    "review_queue", "review_lessons", "unlink_lessons", "org_pool", "ingest_knowledge",
    "record_decision", "review_decisions", "build_digests", "define_eval_set", "run_evals",
    "embedder_status", "embedder_runs", "embedder_run", "embedder_checkpoints",
    "embedder_preflight",
    "embedder_train", "embedder_resume", "embedder_activate", "embedder_rollback", "embedder_cancel",
    "embedder_delete_checkpoint",
}


def attr(obj, *names):
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def check(condition, message):
    if not condition:
        raise AssertionError(message)


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    check(not attr(result, "is_error", "isError"), f"{name} failed: {result.content}")
    structured = attr(result, "structured_content", "structuredContent")
    check(isinstance(structured, dict), f"{name} returned no structured result: {result}")
    return structured


async def isolation(session):
    """Run with a token for domain `support` over a store that also holds `finance` records."""
    listed = await call(session, "list_lessons", {"limit": 100})
    check(all(l["skill"].startswith("support/") for l in listed["items"]), f"leak: {listed}")
    hits = (await call(session, "search_memory", {"query": "ledger totals", "limit": 50}))["hits"]
    check(all(h["skill"].startswith("support/") for h in hits), f"search leaked: {hits}")
    refused = await session.call_tool("record_execution", {
        "skill": "finance/audit", "input": {}, "output": {},
    })
    check(attr(refused, "is_error", "isError"), "a write outside the token's scope was accepted")
    text = " ".join(getattr(c, "text", "") for c in refused.content)
    check("scope" in text, f"the refusal does not say why: {text}")
    recalled = await call(session, "recall_memory", {"query": "ledger totals urgent priority"})
    check(all(l["skill"].startswith("support/") for l in recalled["lessons"]), f"recall leaked: {recalled}")
    refused = await session.call_tool("archival_memory_write", {"skill": "finance/audit", "text": "x"})
    check(attr(refused, "is_error", "isError"), "an archival write outside the token's scope was accepted")
    found = await call(session, "archival_memory_search", {"query": "ledger totals closes"})
    check(all(e["skill"].startswith("support/") for e in (h["entry"] for h in found["hits"])), f"archival leaked: {found}")
    listed = await call(session, "list_episodes", {"limit": 100})
    check(all(e["skill"].startswith("support/") for e in listed["items"]), f"episodes leaked: {listed}")
    similar = await call(session, "similar_decisions", {"context": "ledger export format"})
    check("ledger" not in similar["text"], f"similar_decisions leaked: {similar}")
    refused = await session.call_tool("what_if", {"episode": "fin-1", "decision": "d1", "alternative": "CSV"})
    check(attr(refused, "is_error", "isError"), "a finance episode was visible")
    refused = await session.call_tool("record_episode", {"episode": episode("fin-2", "finance/audit", "CSV", "success")})
    check(attr(refused, "is_error", "isError"), "an episode outside the token's scope was recorded")
    refused = await session.call_tool("recall_memory", {"query": "totals", "skill": "finance/audit"})
    check(attr(refused, "is_error", "isError"), "a recall outside the token's scope was answered")
    # The token is an agent's: review tools need the reviewer role.
    for name, args in [("review_queue", {}), ("review_lessons", {"decision": "approve", "ids": ["REFL-1"], "reason": "x"})]:
        refused = await session.call_tool(name, args)
        check(attr(refused, "is_error", "isError"), f"{name} accepted an agent token")
        text = " ".join(getattr(c, "text", "") for c in refused.content)
        check("reviewer" in text, f"the refusal does not name the role: {text}")
    return {"isolated": True}


def episode(id, skill, chosen, outcome):
    return {
        "id": id, "skill": skill, "timestamp": "2026-01-01T17:00:00Z", "outcome": outcome,
        "task": "Export the ledger totals" if skill.startswith("finance") else "Triage the EU outage",
        "decisions": [{
            "id": "d1", "type": "design",
            "context": "Choosing the ledger export format" if skill.startswith("finance") else "Choosing who to page for the outage",
            "options": ["CSV", "Parquet"] if skill.startswith("finance") else ["on-call", "team lead"],
            "chosen": chosen, "effects": ["e1"],
        }],
        "events": [{"id": "e1", "type": "milestone", "content": "Handled"}],
    }


async def episodes(session):
    """Seed 001 through MCP: record two episodes, then every query, then a bad one."""
    first = await call(session, "record_episode", {"episode": episode("mcp-ep-1", SKILL, "on-call", "success")})
    check(first["episode"]["id"] == "mcp-ep-1" and len(first["episode"]["decisions"]) == 1,
          f"record_episode: {first}")
    await call(session, "record_episode", {"episode": episode("mcp-ep-2", SKILL, "team lead", "failure")})
    again = await session.call_tool("record_episode", {"episode": episode("mcp-ep-2", SKILL, "team lead", "failure")})
    check(attr(again, "is_error", "isError"), "a taken episode ID was accepted")
    shown = await call(session, "get_episode", {"id": "mcp-ep-1"})
    check("> Triage the EU outage" in shown["text"] and shown["tokens"] <= 500, f"get_episode: {shown}")
    seq = await call(session, "decision_sequence", {"id": "mcp-ep-2"})
    check("> team lead" in seq["text"], f"decision_sequence: {seq}")
    listed = await call(session, "list_episodes", {"outcome": "failure"})
    check([e["id"] for e in listed["items"]] == ["mcp-ep-2"], f"list_episodes: {listed}")
    path = await call(session, "causal_path", {"from": "decision:team lead", "to": "outcome:failure"})
    # "Handled" follows both choices and led to failure in one of its two episodes.
    check(path["steps"] and path["strength"] == 0.5, f"causal_path: {path}")
    exported = await call(session, "export_causal_graph", {})
    graph = json.loads(exported["graph"])
    check(exported["format"] == "json" and not exported["truncated"], f"export_causal_graph: {exported}")
    check(any(n["type"] == "decision" and "team lead" in n["label"] for n in graph["nodes"]),
          f"export_causal_graph nodes: {graph['nodes']}")
    dot = await call(session, "export_causal_graph", {"format": "dot"})
    check(dot["graph"].startswith("digraph causal {"), f"export_causal_graph dot: {dot}")
    what_if = await call(session, "what_if", {"episode": "mcp-ep-2", "decision": "d1", "alternative": "on-call"})
    check(what_if["evidence"] and what_if["alternative_stats"]["success_rate"] == 1.0, f"what_if: {what_if}")
    similar = await call(session, "similar_decisions", {"context": "who to page for an outage"})
    check("mcp-ep-1" in similar["text"], f"similar_decisions: {similar}")
    good = await call(session, "find_patterns", {"min_occurrences": 1})
    check("on-call" in good["text"] and good["tokens"] <= 100, f"find_patterns: {good}")
    bad = await call(session, "find_anti_patterns", {"min_occurrences": 1})
    check("team lead" in bad["text"], f"find_anti_patterns: {bad}")
    broken = episode("mcp-ep-3", SKILL, "nobody", "success")
    refused = await session.call_tool("record_episode", {"episode": broken})
    check(attr(refused, "is_error", "isError"), "a chosen option outside the options was accepted")
    text = " ".join(getattr(c, "text", "") for c in refused.content)
    check("decisions[0].chosen" in text and "Fix that argument" in text, f"the error does not name the field: {text}")
    missing = await session.call_tool("get_episode", {"id": "mcp-ep-3"})
    check(attr(missing, "is_error", "isError"), "a refused episode was stored")


async def review(session, lesson_id):
    """As the machine's user (no token): the learned lesson on trial is in the queue and can be
    approved."""
    queue = await call(session, "review_queue", {"status": "trial"})
    check([i["lesson"]["id"] for i in queue["items"]] == [lesson_id], f"review_queue: {queue}")
    bad = await session.call_tool("review_lessons", {"decision": "bless", "ids": [lesson_id], "reason": "x"})
    check(attr(bad, "is_error", "isError"), "an unknown decision was accepted")
    done = await call(session, "review_lessons", {
        "decision": "approve", "ids": [lesson_id], "reason": "checked",
    })
    check([l["status"] for l in done["lessons"]] == ["approved"], f"review_lessons: {done}")


async def self_editing(session):
    """Core, archival and recall memory through the six self-editing tools."""
    core = await call(session, "core_memory_write", {
        "skill": SKILL, "block": "user", "text": "Ana leads the EU checkout team.",
    })
    core = await call(session, "core_memory_write", {
        "skill": SKILL, "block": "user", "text": "She wants outages marked urgent.", "mode": "append",
    })
    check(core["blocks"][0]["versions"] == 2 and "urgent" in core["blocks"][0]["text"], f"core: {core}")
    read = await call(session, "core_memory_read", {"skill": SKILL})
    check(read["blocks"] == core["blocks"] and read["tokens"] <= read["budget"], f"core read: {read}")
    prompt = await call(session, "memory_prompt", {"skill": SKILL})
    check("She wants outages marked urgent." in prompt["prompt"], "core memory is not in the prompt")
    secret = await session.call_tool("core_memory_write", {
        "skill": SKILL, "block": "user", "text": "token sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
    })
    check(attr(secret, "is_error", "isError"), "a secret was written to core memory")

    await call(session, "archival_memory_write", {
        "skill": SKILL, "text": "The EU checkout runs on the payments-eu cluster.", "tags": ["infra"],
    })
    found = await call(session, "archival_memory_search", {"query": "which cluster runs checkout"})
    check("payments-eu" in found["hits"][0]["entry"]["text"], f"archival search: {found}")

    for speaker, text in [("user", "refund 600 euros please"), ("agent", "I will ask an approver")]:
        await call(session, "conversation_log_write", {
            "skill": SKILL, "session": "chat-1", "speaker": speaker, "text": text,
        })
    log = await call(session, "conversation_log_read", {"skill": SKILL, "session": "chat-1"})
    check([h["entry"]["text"] for h in log["hits"]][-2:] == ["refund 600 euros please", "I will ask an approver"], f"log: {log}")
    hit = await call(session, "conversation_log_read", {"skill": SKILL, "query": "refund euros"})
    check(hit["hits"][0]["entry"]["author"] == "user", f"log search: {hit}")


async def layers(session, reviewer):
    """Knowledge, decisions and the layered context: written by a reviewer, read by anyone."""
    runbook = {"skill": SKILL, "documents": [{"source": "docs/refunds.md", "text":
               "# Refunds\n\n## Late orders\n\nRefund late orders in full and apologise.\n"}]}
    decision = {"skill": SKILL, "situation": "A customer wants a refund for a late order",
                "action": "Refund in full", "rationale": "The order was a week late"}
    if not reviewer:
        for name, arguments in [("ingest_knowledge", runbook), ("record_decision", decision),
                                ("build_digests", {}), ("run_evals", {})]:
            refused = await session.call_tool(name, arguments)
            check(attr(refused, "is_error", "isError"), f"an agent's {name} was accepted")
        return
    ingested = await call(session, "ingest_knowledge", runbook)
    check(ingested["added"] == 1 and ingested["chunks_written"] == 1, f"ingest_knowledge: {ingested}")
    listed = await call(session, "list_knowledge", {"skill": SKILL})
    check([d["source"] for d in listed["documents"]] == ["docs/refunds.md"], f"list_knowledge: {listed}")
    found = await call(session, "recall_knowledge", {"query": "refund a late order"})
    check(found["chunks"] and [found["chunks"][0][k] for k in ("line_start", "line_end")] == [3, 5],
          f"recall_knowledge: {found}")
    made = await call(session, "record_decision", decision)
    check(made["status"] == "needs_review", f"record_decision: {made}")
    none = await call(session, "recall_decisions", {"query": "refund for a late order"})
    check(none["decisions"] == [], f"an unreviewed decision was recalled: {none}")
    moved = await call(session, "review_decisions", {"ids": [made["id"]], "status": "approved", "reason": "fair"})
    check(moved["decisions"][0]["status"] == "approved", f"review_decisions: {moved}")
    some = await call(session, "recall_decisions", {"query": "refund for a late order"})
    check([d["id"] for d in some["decisions"]] == [made["id"]], f"recall_decisions: {some}")
    context = await call(session, "layered_context", {"query": "refund for a late order", "layer_budget": 400})
    names = [l["layer"] for l in context["layers"]]
    check(names == ["lessons", "decisions", "digest", "knowledge"], f"layered_context layers: {names}")
    check(all(l["tokens"] <= 400 for l in context["layers"]), f"layered_context budgets: {context}")
    check("> Refund late orders in full" in context["text"], f"layered_context: {context['text']}")
    await digests_and_evals(session, made["id"])


async def digests_and_evals(session, decision_id):
    """A digest of the approved decision, then a question set graded against the memory."""
    built = await call(session, "build_digests", {"skill": SKILL})
    check(len(built["built"]) == 1 and decision_id in built["built"][0]["markdown"], f"build_digests: {built}")
    # A model reads a digest quoted under its provenance line.
    check(all(l.startswith(">") for l in built["built"][0]["markdown"].splitlines()[1:]), f"build_digests: {built}")
    again = await call(session, "build_digests", {"skill": SKILL})
    check(again["built"] == [] and again["unchanged"] == [SKILL], f"build_digests again: {again}")
    read = await call(session, "read_digest", {"skill": SKILL})
    check("Refund in full" in read["digests"][0]["markdown"], f"read_digest: {read}")
    context = await call(session, "layered_context", {"query": "refund for a late order", "skill": SKILL})
    digest = [l for l in context["layers"] if l["layer"] == "digest"][0]
    check(digest["status"] == "filled", f"digest layer: {digest}")
    question = {"question": "A late order: what do we refund?", "expected": "refund in full"}
    bad = await session.call_tool("define_eval_set", {"skill": SKILL, "name": "late", "questions": [dict(question, grader="judge")]})
    check(attr(bad, "is_error", "isError"), "a judged question was accepted without a model")
    text = " ".join(getattr(c, "text", "") for c in bad.content)
    check("grader" in text, f"the refusal does not name the field: {text}")
    await call(session, "define_eval_set", {"skill": SKILL, "name": "late", "questions": [question]})
    ran = await call(session, "run_evals", {"skill": SKILL})
    check(ran["runs"][0]["passed"] == 1 and all(g["passed"] for g in ran["runs"][0]["grades"]), f"run_evals: {ran}")
    trends = await call(session, "eval_trends", {"skill": SKILL})
    check([p["score"] for p in trends["trends"][0]["points"]] == [1.0], f"eval_trends: {trends}")


async def embedder(session, reviewer):
    """The embedder's lifecycle: read it, refuse an unguarded switch, switch to the base."""
    if not reviewer:
        refused = await session.call_tool("embedder_status", {})
        check(attr(refused, "is_error", "isError"), "an agent's token read the embedder's tuning")
        return
    # Each tool answers what its REST operation answers, field for field.
    status = await call(session, "embedder_status", {})
    check(status["checkpoint"] is None, f"embedder_status: {status}")
    preflight = await call(session, "embedder_preflight", {"plan": {"epochs": 3}})
    check(preflight["problems"], f"one execution is not enough to train on: {preflight}")
    refused = await session.call_tool("embedder_rollback", {
        "to": "base", "actor": "client", "confirm": False, "reason": "test",
    })
    check(attr(refused, "is_error", "isError"), "an unconfirmed rollback was accepted")
    text = " ".join(getattr(c, "text", "") for c in refused.content)
    check("confirm" in text, f"the refusal does not name the confirmation: {text}")
    switched = await call(session, "embedder_rollback", {
        "to": "base", "actor": "client", "confirm": True, "reason": "test",
    })
    check(switched["to"] is None, f"embedder_rollback: {switched}")
    runs = await call(session, "embedder_runs", {})
    check(runs["total"] == 0, f"embedder_runs: {runs}")
    failed = await session.call_tool("embedder_train", {})
    check(attr(failed, "is_error", "isError"), "training without pairs succeeded")
    runs = await call(session, "embedder_runs", {"limit": 1})
    check(runs["runs"][0]["status"] == "failed", f"a failed run is kept: {runs}")
    one = await call(session, "embedder_run", {"id": runs["runs"][0]["id"]})
    check(one["id"] == runs["runs"][0]["id"], f"embedder_run: {one}")
    checkpoints = await call(session, "embedder_checkpoints", {})
    check(checkpoints["checkpoints"] == [], f"embedder_checkpoints: {checkpoints}")
    unreasoned = await session.call_tool("embedder_delete_checkpoint", {
        "id": "CKPT-none", "actor": "client", "confirm": True, "reason": " ",
    })
    text = " ".join(getattr(c, "text", "") for c in unreasoned.content)
    check(attr(unreasoned, "is_error", "isError") and "reason" in text,
          f"a blank reason was accepted: {text}")
    missing = await session.call_tool("embedder_delete_checkpoint", {
        "id": "CKPT-none", "actor": "client", "confirm": True, "reason": "test",
    })
    text = " ".join(getattr(c, "text", "") for c in missing.content)
    check(attr(missing, "is_error", "isError") and "not found" in text,
          f"an unknown checkpoint was deleted: {text}")


async def exercise(session, reviewer):
    await session.initialize()
    tools = (await session.list_tools()).tools
    names = {t.name for t in tools}
    expected = READ_ONLY | WRITES if reviewer else (READ_ONLY | WRITES) - PRIVILEGED
    check(names == expected, f"unexpected tools: {sorted(names ^ expected)}")
    for tool in tools:
        hint = attr(tool.annotations, "read_only_hint", "readOnlyHint")
        check(hint is (tool.name in READ_ONLY), f"{tool.name}: read_only_hint is {hint}")
        check(tool.description, f"{tool.name} has no description")

    recorded = await call(session, "record_execution", {
        "skill": SKILL,
        "input": {"ticket": "Checkout returns 500 for every EU customer"},
        "output": {"summary": "A checkout problem.", "priority": "normal"},
        "outcome": "rejected",
    })
    execution_id = recorded["id"]
    signal = await call(session, "report_signal", {
        "execution_id": execution_id,
        "channel": "constraint_failure",
        "message": "priority 'normal' where 'urgent' was required",
    })
    check(signal["fingerprint"] == "priority <str> where <str> was required", f"report_signal: {signal}")
    check("constraint_failed" in signal["tags"], f"report_signal tags: {signal}")
    bad = await session.call_tool("report_signal", {"execution_id": execution_id, "channel": "progress"})
    check(attr(bad, "is_error", "isError"), "a progress signal without a value was accepted")
    corrected = await call(session, "correct", {
        "skill": SKILL,
        "execution_id": execution_id,
        "correction": "When a ticket reports errors for many customers, priority must be urgent.",
    })
    lesson = corrected["lesson"]
    test = corrected.get("regression_test") or {}
    check(test.get("assertions", 0) >= 1, f"correct should write a regression test: {corrected}")
    # Without a token the caller is the machine's user, as with the CLI and REST: approved at
    # once (auto curation). An agent's token puts it on trial.
    status = "approved" if reviewer else "trial"
    check(lesson["status"] == status, f"the correction's lesson should be {status}: {lesson}")

    hits = (await call(session, "search_memory", {"query": "urgent priority customers"}))["hits"]
    check(any(h["id"] == lesson["id"] for h in hits), f"search did not find the lesson: {hits}")
    listed = await call(session, "list_lessons", {"skill": SKILL, "status": [status]})
    check([l["id"] for l in listed["items"]] == [lesson["id"]], f"list_lessons: {listed}")
    got = await call(session, "get_lesson", {"id": lesson["id"]})
    check("urgent" in got["lesson"]["rule"], f"get_lesson: {got}")
    prompt = await call(session, "memory_prompt", {"skill": SKILL})
    check(prompt["lesson_ids"] == [lesson["id"]], f"memory_prompt: {prompt['lesson_ids']}")
    check("urgent" in prompt["prompt"], "the prompt does not carry the rule")
    recalled = await call(session, "recall_memory", {"query": "urgent priority customers", "explain": True})
    check([l["id"] for l in recalled["lessons"]] == [lesson["id"]], f"recall_memory: {recalled}")
    check("urgent" in recalled["context"] and recalled["explain"], f"recall_memory: {recalled}")
    runbook = {"lessons": [{"skill": SKILL.split("/")[0] + "/runbook", "task": "Page the on-call",
                            "lesson": "Always page the on-call engineer for a checkout outage."}]}
    learned = await call(session, "learn_lessons", runbook)
    check(learned["learned"] == 1 and learned["results"][0]["status"] == "trial", f"learn_lessons: {learned}")
    again = await call(session, "learn_lessons", runbook)
    check(again["already"] == 1 and again["learned"] == 0, f"learn_lessons twice: {again}")
    if reviewer:
        await review(session, learned["results"][0]["lesson"])
    await self_editing(session)
    await episodes(session)
    await layers(session, reviewer)
    await embedder(session, reviewer)
    status = await call(session, "memory_status", {})
    check(status["counts"]["executions"] >= 1 and status["counts"]["lessons"] >= 1, f"memory_status: {status}")

    bad = await session.call_tool("record_execution", {
        "skill": "../etc", "input": {}, "output": {},
    })
    check(attr(bad, "is_error", "isError"), "a bad skill path was accepted")
    text = " ".join(getattr(c, "text", "") for c in bad.content)
    check("Fix that argument" in text, f"the error does not say what to do: {text}")
    missing = await session.call_tool("get_lesson", {"id": "REFL-404"})
    check(attr(missing, "is_error", "isError"), "an unknown lesson was found")

    return {"tools": sorted(names), "execution_id": execution_id, "lesson_id": lesson["id"]}


LOOP = ["correct", "get_lesson", "recall_memory", "record_execution", "report_signal", "search_memory"]


async def subset(session):
    """A connection that asks for the `loop` group and memory_prompt: only those are listed, a
    hidden tool cannot be called, and a skill without SKILL.md points the model at recall_memory."""
    await session.initialize()
    listed = await session.list_tools()
    names = sorted(t.name for t in listed.tools)
    check(names == sorted(LOOP + ["memory_prompt"]), f"subset lists {names}")
    try:
        hidden = await session.call_tool("what_if", {"decision": "CSV", "context": "export"})
        refused = attr(hidden, "is_error", "isError")
        text = " ".join(getattr(c, "text", "") for c in hidden.content)
    except Exception as err:  # the SDK raises a JSON-RPC error as McpError
        refused, text = True, str(err)
    check(refused and "not enabled" in text, f"a hidden tool was callable: {text}")
    missing = await session.call_tool("memory_prompt", {"skill": "ops/no-skill-file"})
    text = " ".join(getattr(c, "text", "") for c in missing.content)
    check(attr(missing, "is_error", "isError") and "recall_memory" in text, f"memory_prompt: {text}")
    return {"tools": names}


async def listing(session):
    """The tools listed to a connection that asks for none: their names, and the list as JSON,
    compact as on the wire, for the caller to count its tokens."""
    await session.initialize()
    listed = await session.list_tools()
    tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    return {"names": sorted(t["name"] for t in tools),
            "json": json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)}


async def main(argv):
    mode = argv[1]
    if mode == "subset-stdio":
        binary, home, skills = argv[2], argv[3], argv[4]
        params = StdioServerParameters(
            command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "loop,memory_prompt"]
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                findings = await subset(session)
    elif mode == "subset-http":
        async with create_mcp_http_client() as client:
            async with streamable_http_client(argv[2], http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    findings = await subset(session)
    elif mode == "stdio":
        binary, home, skills = argv[2], argv[3], argv[4]
        params = StdioServerParameters(
            command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"]
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                findings = await exercise(session, reviewer=True)
    elif mode == "list-stdio":
        binary, home, skills = argv[2], argv[3], argv[4]
        params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                findings = await listing(session)
    elif mode == "list-http":
        token = argv[3] if len(argv) > 3 else None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(argv[2], http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    findings = await listing(session)
    elif mode == "http":
        token = argv[3] if len(argv) > 3 else None
        headers = {"Authorization": f"Bearer {token}"} if token else None
        url = argv[2] + ("&" if "?" in argv[2] else "?") + "tools=all"
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    findings = await exercise(session, reviewer=not token)
                    if token:
                        findings.update(await isolation(session))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use stdio or http")
    print(json.dumps({"mode": mode, **findings}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv))
