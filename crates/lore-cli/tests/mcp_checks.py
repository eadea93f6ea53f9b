"""Drive `lore mcp` over stdio with the official MCP SDK for the CLI's end-to-end checks.

Usage: mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR approve LESSON_ID
       mcp_checks.py LORE_BINARY LORE_HOME SKILLS_DIR extract LOG_FILE SKILL

Without a mode it reports what lore.toml changed: how many lessons recall_memory returned,
whether the prompt carries the learned rules, the error core_memory_write answered (or null),
and whether an archival write went through.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SKILL = "support/summarize-ticket"


def text_of(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


async def approve(binary, home, skills, lesson):
    """Approves one lesson through review_lessons; prints the statuses it answered."""
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp"])
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
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp"])
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


async def main(binary, home, skills):
    params = StdioServerParameters(command=binary, args=["--home", home, "--skills", skills, "mcp"])
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
    elif len(sys.argv) > 4 and sys.argv[4] == "extract":
        asyncio.run(extract(*sys.argv[1:4], sys.argv[5], sys.argv[6]))
    else:
        asyncio.run(main(*sys.argv[1:4]))
