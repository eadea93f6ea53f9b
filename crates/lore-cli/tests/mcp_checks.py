"""Drive `lore mcp` over stdio with the official MCP SDK for the CLI's end-to-end checks.

Usage: mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR approve LESSON_ID
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR extract LOG_FILE SKILL
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR org LESSON_ID
       mcp_checks.py - - - org-http URL TOKEN LESSON_ID
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR recall-as SCOPE QUERY
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR layers SKILL

Without a mode it reports what lore.toml changed: how many lessons recall_memory returned,
whether the prompt carries the learned rules, the error core_memory_write answered (or null),
and whether an archival write went through.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SKILL = "support/summarize-ticket"


def text_of(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


async def approve(binary, home, skills, lesson):
    """Approves one lesson through review_lessons; prints the statuses it answered."""
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("review_lessons", {
                "decision": "approve", "ids": [lesson], "reason": "seen it work",
            })
            if result.is_error:
                raise SystemExit(f"review_lessons failed: {text_of(result)}")
            lessons = result.structured_content["lessons"]
    print(json.dumps({"statuses": [l["status"] for l in lessons]}))


async def extract(binary, home, skills, log_file, skill):
    """Records a session log through record_episode; prints its answer, or the refusal of a
    call that gives both forms."""
    with open(log_file, encoding="utf-8") as f:
        log = f.read()
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            both = await session.call_tool("record_episode", {"episode": {}, "log": log})
            result = await session.call_tool("record_episode", {"log": log, "skill": skill})
            if result.is_error:
                raise SystemExit(f"record_episode failed: {text_of(result)}")
    print(json.dumps({
        "recorded": result.structured_content,
        "both_refused": text_of(both) if both.is_error else None,
    }))


def refusal(result):
    return text_of(result) if result.is_error else None


async def org_calls(session, lesson):
    """The org tools as a caller of this session: the pool's cycle (with a forged argument,
    then plainly) and an approval of the org lesson `lesson`; each refusal's text, or null."""
    await session.initialize()
    names = {t.name for t in (await session.list_tools()).tools}
    forged = await session.call_tool("org_pool", {"auto_approve": True})
    pool = await session.call_tool("org_pool", {})
    approve = await session.call_tool("review_lessons", {
        "decision": "approve", "ids": [lesson], "reason": "looks right",
    })
    status = await session.call_tool("get_lesson", {"id": lesson})
    return {
        "listed": sorted(n for n in names if n in ("org_pool", "propagate_lesson")),
        "forged_refused": refusal(forged),
        "pool_refused": refusal(pool),
        "approve_refused": refusal(approve),
        "status": ((status.structured_content or {}).get("lesson") or {}).get("status"),
    }


async def org(binary, home, skills, lesson):
    """Over stdio: no credential, so the caller is a model."""
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            findings = await org_calls(session, lesson)
    print(json.dumps(findings))


async def org_http(url, token, lesson):
    """Over streamable HTTP with `token`: its role decides."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                findings = await org_calls(session, lesson)
    print(json.dumps(findings))


async def recall_as(binary, home, skills, scope, query):
    """recall_memory from `lore --as SCOPE mcp`; prints each lesson's ID and score."""
    args = ["--home", home, "--skills", skills, "--as", scope, "mcp", "--tools", "all"]
    params = StdioServerParameters(command=binary, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("recall_memory", {"query": query})
            if result.is_error:
                raise SystemExit(f"recall_memory failed: {text_of(result)}")
            lessons = result.structured_content["lessons"]
    print(json.dumps({"lessons": [{"id": l["id"], "score": l["score"]} for l in lessons]}))


async def layers(binary, home, skills, skill):
    """A decision recorded and approved, the digests built and read, a set with a judged
    question defined and run, all through `lore mcp` started with this process's environment
    (the SDK passes only a few variables otherwise, and the model's are the point here); prints
    each answer, or the refusal of the set."""
    params = StdioServerParameters(
        command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()

            async def call(name, arguments):
                result = await session.call_tool(name, arguments)
                if result.is_error:
                    return {"error": text_of(result)}
                return result.structured_content

            made = await call("record_decision", {
                "skill": skill, "situation": "A refund asked after the deadline",
                "action": "Refund without a fee", "rationale": "It was the customer's first order",
            })
            decision = made["id"]
            await call("review_decisions", {"ids": [decision], "status": "approved", "reason": "fair"})
            built = await call("build_digests", {})
            digest = await call("read_digest", {"skill": skill})
            defined = await call("define_eval_set", {"skill": skill, "name": "refunds", "questions": [
                {"question": "A refund after the deadline?", "expected": "the money goes back, no fee",
                 "grader": "judge"}]})
            run = await call("run_evals", {}) if "error" not in defined else None
    print(json.dumps({"built": built, "digest": digest, "defined": defined, "run": run}))


async def main(binary, home, skills):
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp", "--tools", "all"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            recall = await session.call_tool("recall_memory", {"query": "checkout ticket", "skill": SKILL})
            recalled = len(recall.structured_content["lessons"])
            prompt = await session.call_tool("memory_prompt", {"skill": SKILL})
            rules = "Learned Rules" in prompt.structured_content["prompt"]
            core = await session.call_tool("core_memory_write", {"skill": SKILL, "block": "user", "text": "Ana leads checkout."})
            archival = await session.call_tool("archival_memory_write", {"skill": SKILL, "text": "Checkout runs on payments-eu."})
    print(json.dumps({
        "recalled": recalled,
        "rules_in_prompt": rules,
        "core_write_error": text_of(core) if core.is_error else None,
        "archival_written": not archival.is_error,
    }))


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[4] == "approve":
        asyncio.run(approve(*sys.argv[1:4], sys.argv[5]))
    elif len(sys.argv) > 4 and sys.argv[4] == "org":
        asyncio.run(org(*sys.argv[1:4], sys.argv[5]))
    elif len(sys.argv) > 4 and sys.argv[4] == "recall-as":
        asyncio.run(recall_as(*sys.argv[1:4], sys.argv[5], sys.argv[6]))
    elif len(sys.argv) > 4 and sys.argv[4] == "org-http":
        asyncio.run(org_http(sys.argv[5], sys.argv[6], sys.argv[7]))
    elif len(sys.argv) > 4 and sys.argv[4] == "layers":
        asyncio.run(layers(*sys.argv[1:4], sys.argv[5]))
    elif len(sys.argv) > 4 and sys.argv[4] == "extract":
        asyncio.run(extract(*sys.argv[1:4], sys.argv[5], sys.argv[6]))
    else:
        asyncio.run(main(*sys.argv[1:4]))
