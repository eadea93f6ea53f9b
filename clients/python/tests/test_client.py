"""The Python client against a real `lore serve` on loopback.

The server is started by the Rust test `clients::python_client_against_a_real_server`, which
passes LORE_URL and three tokens (admin, agent scoped to `support`, reviewer). Run by hand:
start `lore serve`, create the tokens, export the variables, then `pytest clients/python/tests`.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from lore_client import (
    AsyncLore,
    AuthenticationError,
    ConnectionFailedError,
    InvalidRequestError,
    Lore,
    LoreError,
    NotFoundError,
    PermissionDeniedError,
)
from lore_client.errors import UnsupportedError
from lore_client.mem0 import Memory

URL = os.environ["LORE_URL"]
ADMIN = os.environ["LORE_TEST_ADMIN_TOKEN"]
AGENT = os.environ["LORE_TEST_AGENT_TOKEN"]
REVIEWER = os.environ["LORE_TEST_REVIEWER_TOKEN"]
SKILL = "support/summarize-ticket"
CORRECTION = "When a ticket reports errors for many customers, priority must be urgent."


@pytest.fixture()
def agent():
    with Lore(URL, token=AGENT) as client:
        yield client


def test_the_loop_record_correct_recall_prompt(agent: Lore) -> None:
    run = agent.record(
        SKILL,
        {"ticket": "Checkout returns 500 for every EU customer"},
        {"priority": "normal"},
        "rejected",
        model="gpt-test",
        latency_ms=812.0,
    )
    assert run["id"].startswith("EXEC-")
    assert run["outcome"] == "rejected"
    assert agent.execution(run["id"])["model"] == "gpt-test"

    made = agent.correct(SKILL, run["id"], CORRECTION)
    lesson = made["lesson"]
    assert lesson is not None and lesson["rule"] == CORRECTION
    # Who wrote it comes from the token: an agent's correction is an agent's.
    assert made["correction"]["author_kind"] == "agent"

    with Lore(URL, token=REVIEWER) as reviewer:
        waiting = [item["lesson"]["id"] for item in reviewer.review_queue(skill=SKILL, status=["trial", "needs_review"])["items"]]
        assert lesson["id"] in waiting
        approved = reviewer.review("approve", [lesson["id"]], "checked by a person")
        assert approved[0]["status"] == "approved"

    recalled = agent.recall("many customers report checkout errors", skill=SKILL, budget=500)
    assert [l["id"] for l in recalled["lessons"]] == [lesson["id"]]
    assert "priority must be urgent" in recalled["text"]
    assert recalled["tokens"] <= 500

    prompt = agent.prompt(SKILL)
    assert lesson["id"] in prompt["lessons"]
    assert "priority must be urgent" in prompt["text"]

    shown = agent.record(SKILL, {"ticket": "EU checkout down"}, {"priority": "urgent"}, "accepted", lessons_shown=[lesson["id"]])
    signal = agent.signal(shown["id"], "progress", "closed in one step", value=1.0)
    assert signal["channel"] == "progress"

    hits = agent.search("urgent priority", skill=SKILL)
    assert any(h["id"] == lesson["id"] for h in hits)
    assert agent.lesson(lesson["id"])["status"] == "approved"


def test_errors_are_exceptions_that_carry_the_server_code(agent: Lore) -> None:
    with pytest.raises(NotFoundError) as missing:
        agent.execution("EXEC-20200101000000-AAAAAAAA")
    assert missing.value.code == "not_found" and missing.value.status == 404

    with pytest.raises(InvalidRequestError) as bad:
        agent.record("not a skill", {}, {}, "rejected")
    assert bad.value.code == "invalid" and bad.value.status == 422
    assert "skill" in bad.value.message

    with pytest.raises(InvalidRequestError):
        agent.record(SKILL, {}, {}, "sort-of")

    # The agent token is scoped to `support`: another domain is refused, by the engine.
    with pytest.raises(PermissionDeniedError) as outside:
        agent.record("billing/refund", {}, {}, "rejected")
    assert outside.value.code == "forbidden"
    # And an agent may not review.
    with pytest.raises(PermissionDeniedError):
        agent.review_queue()

    with Lore(URL, token="not-a-token") as stranger:
        with pytest.raises(AuthenticationError) as denied:
            stranger.status()
    assert denied.value.code == "unauthenticated"

    with Lore("http://127.0.0.1:9", token=AGENT, timeout=2) as nowhere:
        with pytest.raises(ConnectionFailedError) as down:
            nowhere.status()
    assert isinstance(down.value, LoreError) and "lore serve" in down.value.message


def test_nothing_is_stored_when_a_request_is_refused(agent: Lore) -> None:
    with Lore(URL, token=ADMIN) as admin:
        before = admin.status()["counts"]
        with pytest.raises(InvalidRequestError):
            admin.correct(SKILL, "EXEC-20200101000000-AAAAAAAA", "   ")
        with pytest.raises(LoreError):
            admin.correct(SKILL, "EXEC-20200101000000-AAAAAAAA", CORRECTION)
        assert admin.status()["counts"] == before


def test_the_async_client_runs_the_same_loop_concurrently() -> None:
    async def main() -> None:
        async with AsyncLore(URL, token=AGENT) as lore:
            runs = await asyncio.gather(
                *(lore.record("support/async-skill", {"n": i}, {"ok": False}, "rejected") for i in range(5))
            )
            assert len({r["id"] for r in runs}) == 5
            made = await lore.correct("support/async-skill", runs[0]["id"], "Always include the order number in the reply.")
            assert made["lesson"] is not None
            page = await lore.executions(skill="support/async-skill", limit=10)
            assert len(page["items"]) == 5
            with pytest.raises(NotFoundError):
                await lore.lesson("REFL-20200101000000-AAAAAAAA")

    asyncio.run(main())


def test_mem0_shaped_memory_keeps_users_apart() -> None:
    with Lore(URL, token=ADMIN) as client:
        m = Memory(client)
        added = m.add("Alice prefers green tea in the morning", user_id="alice")
        assert added["results"][0]["event"] == "ADD"
        m.add([{"role": "user", "content": "Bob drinks black coffee"}], user_id="Bob@example.com")
        m.add("Alice is allergic to peanuts", user_id="alice", agent_id="concierge")

        found = m.search("what does she drink tea coffee", user_id="alice")["results"]
        assert [r["memory"] for r in found] == ["Alice prefers green tea in the morning"]
        assert found[0]["user_id"] == "alice" and found[0]["score"] > 0

        alice = [r["memory"] for r in m.get_all(user_id="alice")["results"]]
        assert alice == ["Alice prefers green tea in the morning", "Alice is allergic to peanuts"]
        assert [r["memory"] for r in m.get_all(agent_id="concierge")["results"]] == ["Alice is allergic to peanuts"]
        assert [r["memory"] for r in m.get_all(user_id="Bob@example.com")["results"]] == ["Bob drinks black coffee"]

        first = added["results"][0]["id"]
        assert m.history(first)[0]["event"] == "ADD"
        assert m.history("MEM-20200101000000-AAAAAAAA") == []
        with pytest.raises(UnsupportedError):
            m.delete(first)
        with pytest.raises(ValueError):
            m.get_all()


def test_a_mem0_export_is_imported_with_its_identifiers() -> None:
    exported = {
        "results": [
            {"id": "a1", "memory": "Carol works night shifts", "user_id": "carol", "created_at": "2026-01-01T00:00:00Z"},
            {"id": "a2", "memory": "Carol's team is payments", "user_id": "carol", "agent_id": "helper"},
            {"id": "a3", "memory": "", "user_id": "carol"},
        ]
    }
    with Lore(URL, token=ADMIN) as client:
        m = Memory(client, skill="mem0/imported")
        added = m.import_mem0(exported)
        assert [r["memory"] for r in added["results"]] == ["Carol works night shifts", "Carol's team is payments"]
        assert [r["memory"] for r in m.get_all(user_id="carol")["results"]] == [
            "Carol works night shifts",
            "Carol's team is payments",
        ]
        assert [r["memory"] for r in m.get_all(agent_id="helper")["results"]] == ["Carol's team is payments"]


def test_organization_and_embedder_operations_reach_the_server_with_their_guards() -> None:
    with Lore(URL, token=ADMIN) as admin, Lore(URL, token=REVIEWER) as reviewer:
        assert isinstance(reviewer.org_members(), list)
        assert reviewer.org_pool(dry_run=True)["dry_run"] is True
        preflight = reviewer.tuning_preflight({"held_out_by": "task_type"})
        assert "task_types" in preflight and preflight["problems"], preflight
        with pytest.raises(InvalidRequestError):
            reviewer.tuning_preflight({"held_out_by": "skill"})
        with pytest.raises(PermissionDeniedError):
            reviewer.start_tuning(actor="ops")
        # No confirmation: refused before anything changes.
        with pytest.raises(InvalidRequestError):
            admin.cancel_tuning(actor="ops", reason="test")
        assert admin.tuning_runs()["total"] == 0
        with pytest.raises(NotFoundError):
            admin.tuning_run("TUNE-20260101000000-AAAAAAAA")
        # A blank reason is refused before the store is asked; an unknown checkpoint is not found.
        with pytest.raises(InvalidRequestError):
            admin.delete_checkpoint("CKPT-20260101000000-AAAAAAAA", actor="ops", reason=" ", confirm=True)
        with pytest.raises(NotFoundError):
            admin.delete_checkpoint("CKPT-20260101000000-AAAAAAAA", actor="ops", reason="old", confirm=True)
