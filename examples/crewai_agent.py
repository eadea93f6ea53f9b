"""CrewAI + Lore: the task's description carries what Lore recalls; the crew's answer is recorded.

    lore serve &                               # Lore on 127.0.0.1:7077 (or set LORE_URL)
    pip install ./clients/python crewai
    python examples/crewai_agent.py            # offline: a fake OpenAI-compatible model

Not run by Lore's tests: crewai pulls in hundreds of megabytes (litellm, chromadb, onnxruntime);
see examples/README.md.
"""

from __future__ import annotations

import json

from crewai import LLM, Agent, Crew, Task

from _common import CORRECTION, FIRST_TICKET, INSTRUCTIONS, SECOND_TICKET, api_key, finish, model_name, model_url, needs_correction, skill
from lore_client import Lore

SKILL = skill("crewai")

lore = Lore()
llm = LLM(model=f"openai/{model_name()}", base_url=model_url(), api_key=api_key(), temperature=0)
agent = Agent(role="Support triager", goal="Triage support tickets", backstory=INSTRUCTIONS, llm=llm)


def triage(ticket: str) -> tuple:
    """The answer, the run's ID and the lessons recall held out of it to measure them."""
    found = lore.recall(ticket, skill=SKILL, budget=800)
    rules = "\n\nLearned rules:\n" + found["text"] if found["text"] else ""
    task = Task(description=f"{INSTRUCTIONS}{rules}\n\nTicket: {ticket}", expected_output="JSON", agent=agent)
    answer = json.loads(str(Crew(agents=[agent], tasks=[task]).kickoff()))
    run = lore.record(SKILL, {"ticket": ticket}, answer, lessons_shown=[l["id"] for l in found["lessons"]])
    return answer, run["id"], found.get("held_out", [])


if __name__ == "__main__":
    first, first_id, _ = triage(FIRST_TICKET)
    if needs_correction(first):
        lore.correct(SKILL, first_id, CORRECTION)  # a person read it and said so
    second, _, held = triage(SECOND_TICKET)
    finish(first, second, held)
