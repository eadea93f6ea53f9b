"""What the three recipes share: the task, the person's correction, and the model's address."""

from __future__ import annotations

import os

INSTRUCTIONS = 'You triage support tickets. Answer only JSON: {"summary": "...", "priority": "normal" | "urgent"}.'
FIRST_TICKET = "Checkout returns 500 for every EU customer since the 14:00 deploy."
SECOND_TICKET = "Many customers report errors when paying with a card since this morning."
# What a person says after reading the first answer.
CORRECTION = "When a ticket reports errors for many customers, priority must be urgent."


def skill(framework: str) -> str:
    """Each recipe files its runs under its own skill, so running one after another on the same
    server shows each learning from scratch."""
    return f"support/triage-{framework}"


def model_url() -> str:
    """OPENAI_BASE_URL when set (a real or local model), else the offline fake on loopback."""
    url = os.environ.get("OPENAI_BASE_URL")
    if url:
        return url
    from fake_openai import start

    return start()


def model_name() -> str:
    return os.environ.get("OPENAI_MODEL", "fake-model")


def api_key() -> str:
    return os.environ.get("OPENAI_API_KEY", "not-needed-for-the-fake-model")


def needs_correction(answer: dict) -> bool:
    """Whether the person corrects the first answer. Run again against the same server, the
    recipe finds the rule learned the first time already in its prompt: the answer is right and
    there is nothing to correct."""
    return answer.get("priority") != "urgent"


def finish(first: dict, second: dict, held_out: list | tuple = ()) -> None:
    """Prints both answers and exits non-zero unless the second follows the rule: learned from
    this run's correction, or from an earlier run's against the same server. `held_out` is what
    the second run's recall left out to measure: until Lore knows a lesson helps, it keeps it out
    of some runs (never the first after the correction), and the answer then shows what the model
    does without it."""
    print(f"first answer:  {first}")
    print(f"second answer: {second}")
    follows = second.get("priority") == "urgent"
    if not follows and held_out:
        print(f"Lore held {', '.join(held_out)} out of this run to measure what it changes; run again")
        raise SystemExit(0)
    if not follows:
        print("did NOT learn from the correction")
    elif needs_correction(first):
        print("learned from the correction")
    else:
        print("already learned from an earlier run's correction; nothing to correct")
    raise SystemExit(0 if follows else 1)
