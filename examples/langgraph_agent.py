"""LangGraph + Lore: recall before the model, record after it, learn from a person's correction.

    lore serve &                               # Lore on 127.0.0.1:7077 (or set LORE_URL)
    pip install ./clients/python langgraph langchain-openai
    python examples/langgraph_agent.py         # offline: a fake OpenAI-compatible model

The graph is recall -> triage -> record. The first ticket is triaged `normal`; a person corrects
that run; Lore learns a rule, and the second run's recall puts it in the prompt.
"""

from __future__ import annotations

import json
from typing import List, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from _common import CORRECTION, FIRST_TICKET, INSTRUCTIONS, SECOND_TICKET, api_key, finish, model_name, model_url, needs_correction, skill
from lore_client import Lore

SKILL = skill("langgraph")

lore = Lore()
model = ChatOpenAI(model=model_name(), base_url=model_url(), api_key=api_key(), temperature=0)


class State(TypedDict, total=False):
    ticket: str
    context: str
    lessons: List[str]
    held_out: List[str]
    answer: dict
    execution_id: str


def recall(state: State) -> State:
    found = lore.recall(state["ticket"], skill=SKILL, budget=800)
    return {"context": found["text"], "lessons": [lesson["id"] for lesson in found["lessons"]], "held_out": found.get("held_out", [])}


def triage(state: State) -> State:
    system = INSTRUCTIONS + ("\n\nLearned rules:\n" + state["context"] if state["context"] else "")
    reply = model.invoke([SystemMessage(system), HumanMessage(state["ticket"])])
    return {"answer": json.loads(reply.content)}


def record(state: State) -> State:
    run = lore.record(SKILL, {"ticket": state["ticket"]}, state["answer"], lessons_shown=state["lessons"])
    return {"execution_id": run["id"]}


graph = StateGraph(State)
graph.add_node("recall", recall)
graph.add_node("triage", triage)
graph.add_node("record", record)
graph.add_edge(START, "recall")
graph.add_edge("recall", "triage")
graph.add_edge("triage", "record")
graph.add_edge("record", END)
app = graph.compile()

if __name__ == "__main__":
    first = app.invoke({"ticket": FIRST_TICKET})
    if needs_correction(first["answer"]):
        lore.correct(SKILL, first["execution_id"], CORRECTION)  # a person read it and said so
    second = app.invoke({"ticket": SECOND_TICKET})
    finish(first["answer"], second["answer"], second.get("held_out", []))
