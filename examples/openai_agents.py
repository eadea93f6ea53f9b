"""The OpenAI Agents SDK + Lore: the agent's instructions carry what Lore recalls for the task.

    lore serve &                               # Lore on 127.0.0.1:7077 (or set LORE_URL)
    pip install ./clients/python openai-agents
    python examples/openai_agents.py           # offline: a fake OpenAI-compatible model

Instructions are a function, so every run recalls afresh; the run is recorded with the lessons
it was shown, and a person's correction of the first run changes the second.
"""

from __future__ import annotations

import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunContextWrapper, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from _common import CORRECTION, FIRST_TICKET, INSTRUCTIONS, SECOND_TICKET, api_key, finish, model_name, model_url, needs_correction, skill
from lore_client import AsyncLore

SKILL = skill("openai-agents")

# Tracing uploads runs to OpenAI; this example stays on the machine.
set_tracing_disabled(True)


async def main() -> None:
    async with AsyncLore() as lore:
        shown: list = []
        held: list = []

        async def instructions(ctx: RunContextWrapper, agent: Agent) -> str:
            found = await lore.recall(ctx.context["ticket"], skill=SKILL, budget=800)
            shown[:] = [lesson["id"] for lesson in found["lessons"]]
            held[:] = found.get("held_out", [])
            return INSTRUCTIONS + ("\n\nLearned rules:\n" + found["text"] if found["text"] else "")

        model = OpenAIChatCompletionsModel(model=model_name(), openai_client=AsyncOpenAI(base_url=model_url(), api_key=api_key()))
        agent = Agent(name="triage", instructions=instructions, model=model)

        async def triage(ticket: str) -> tuple:
            result = await Runner.run(agent, ticket, context={"ticket": ticket})
            answer = json.loads(result.final_output)
            run = await lore.record(SKILL, {"ticket": ticket}, answer, lessons_shown=shown)
            return answer, run["id"]

        first, first_id = await triage(FIRST_TICKET)
        if needs_correction(first):
            await lore.correct(SKILL, first_id, CORRECTION)  # a person read it and said so
        second, _ = await triage(SECOND_TICKET)
        finish(first, second, held)


if __name__ == "__main__":
    asyncio.run(main())
