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


def finish(first: dict, second: dict) -> None:
    """Prints both answers and exits non-zero unless the correction changed the second."""
    print(f"first answer:  {first}")
    print(f"second answer: {second}")
    learned = first.get("priority") != "urgent" and second.get("priority") == "urgent"
    print("learned from the correction" if learned else "did NOT learn from the correction")
    raise SystemExit(0 if learned else 1)
