"""The sync client :class:`Lore` and the async client :class:`AsyncLore`.

Both speak to ``lore serve`` over HTTP and send exactly the calls :mod:`lore_client._wire`
describes. Every method returns the server's JSON (typed dictionaries from
:mod:`lore_client.types`) or raises the :class:`~lore_client.errors.LoreError` subclass that the
server's error code names.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, List, Optional, Sequence, cast

import httpx

from . import _wire
from ._wire import Call, Json, decode
from .errors import ConnectionFailedError
from .types import (
    CorrectionResult,
    Execution,
    Lesson,
    MemoryEntry,
    MemoryHit,
    Page,
    Prompt,
    RecallResult,
    SearchHit,
    Signal,
    Status,
)

DEFAULT_URL = "http://127.0.0.1:7077"


def _settings(base_url: Optional[str], token: Optional[str]) -> "tuple[str, dict[str, str]]":
    url = (base_url or os.environ.get("LORE_URL") or DEFAULT_URL).rstrip("/")
    token = token if token is not None else os.environ.get("LORE_TOKEN")
    headers = {"accept": "application/json", "user-agent": "lore-client-python/0.1"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return url, headers


def _unreachable(url: str, err: Exception) -> ConnectionFailedError:
    return ConnectionFailedError(
        "unreachable", f"no answer from Lore at {url} ({err}); is `lore serve` running there?"
    )


class Lore:
    """A synchronous client.

    ``base_url`` defaults to ``LORE_URL`` or ``http://127.0.0.1:7077``; ``token`` to ``LORE_TOKEN``
    (a server without tokens needs none). Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 30.0,
        http: Optional[httpx.Client] = None,
    ) -> None:
        self.base_url, headers = _settings(base_url, token)
        self._http = http or httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def __enter__(self) -> "Lore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: Call) -> Any:
        try:
            response = self._http.request(call.method, call.path, params=call.params, json=call.body)
        except httpx.TransportError as err:
            raise _unreachable(self.base_url, err) from err
        return decode(response)

    def status(self) -> Status:
        """Store identity and counts in the token's scope."""
        return cast(Status, self._send(_wire.status()))

    def record(
        self,
        skill: str,
        input: Any,
        output: Any,
        outcome: str = "pending_review",
        *,
        cost_usd: Optional[float] = None,
        latency_ms: Optional[float] = None,
        model: Optional[str] = None,
        session: Optional[str] = None,
        lessons_shown: Sequence[str] = (),
    ) -> Execution:
        """Records one run of ``skill`` (``domain/skill``). ``outcome``: accepted, rejected,
        pending_review, success or failure. ``lessons_shown``: the IDs recall gave this run, so
        their effect can be measured."""
        call = _wire.record(skill, input, output, outcome, cost_usd, latency_ms, model, session, lessons_shown)
        return cast(Execution, self._send(call))

    def execution(self, execution_id: str) -> Execution:
        return cast(Execution, self._send(_wire.execution(execution_id)))

    def executions(self, skill: Optional[str] = None, limit: Optional[int] = None, offset: Optional[int] = None) -> Page:
        return cast(Page, self._send(_wire.executions(skill, limit, offset)))

    def correct(self, skill: str, execution_id: str, correction: str) -> CorrectionResult:
        """Corrects an execution; Lore stores the correction and learns a lesson from it. Who
        wrote it comes from the token, not from the call."""
        return cast(CorrectionResult, self._send(_wire.correct(skill, execution_id, correction)))

    def signal(
        self,
        execution_id: str,
        channel: str,
        message: str = "",
        *,
        value: Optional[float] = None,
        action: Optional[str] = None,
        tags: Iterable[str] = (),
    ) -> Signal:
        """Feedback on an execution: hard_failure, constraint_failure, progress, efficiency, referee."""
        return cast(Signal, self._send(_wire.signal(execution_id, channel, message, value, action, tags)))

    def recall(
        self,
        query: str,
        *,
        skill: Optional[str] = None,
        budget: Optional[int] = None,
        limit: Optional[int] = None,
        fingerprint: Optional[str] = None,
        tags: Iterable[str] = (),
        explain: bool = False,
        run: Optional[str] = None,
    ) -> RecallResult:
        """The lessons that fit ``query``, packed into ``budget`` tokens; ``text`` goes in a prompt."""
        call = _wire.recall(query, skill, budget, limit, fingerprint, tags, explain, run)
        return cast(RecallResult, self._send(call))

    def prompt(self, skill: str) -> Prompt:
        """The skill's layered prompt (WORKSPACE, DOMAIN, learned rules, SKILL)."""
        return cast(Prompt, self._send(_wire.prompt(skill)))

    def search(self, query: str, *, skill: Optional[str] = None, limit: int = 5) -> List[SearchHit]:
        """Full-text search over retrievable lessons and executions, best first."""
        return cast(List[SearchHit], self._send(_wire.search(query, skill, limit))["hits"])

    def lessons(
        self,
        *,
        skill: Optional[str] = None,
        status: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> Page:
        return cast(Page, self._send(_wire.lessons(skill, status, limit, offset)))

    def lesson(self, lesson_id: str) -> Lesson:
        return cast(Lesson, self._send(_wire.lesson(lesson_id))["lesson"])

    def review_queue(
        self,
        *,
        skill: Optional[str] = None,
        status: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> Page:
        """What waits for a person (reviewer or admin tokens)."""
        return cast(Page, self._send(_wire.review_queue(skill, status, limit, offset)))

    def review(
        self, decision: str, ids: Sequence[str], reason: str = "", *, superseded_by: Optional[str] = None
    ) -> List[Lesson]:
        """approve, reject, one_time_exception, sensitive or supersede the lessons ``ids``."""
        return cast(List[Lesson], self._send(_wire.review(decision, ids, reason, superseded_by))["lessons"])

    def remember(self, skill: str, text: str, tags: Iterable[str] = ()) -> MemoryEntry:
        """Stores a passage in the skill's archival memory."""
        return cast(MemoryEntry, self._send(_wire.archival_write(skill, text, tags)))

    def memories(self, query: str, *, skill: Optional[str] = None, limit: int = 5) -> List[MemoryHit]:
        """Searches archival memory."""
        return cast(List[MemoryHit], self._send(_wire.archival_search(query, skill, limit))["hits"])

    def list_memories(self, *, skill: Optional[str] = None, limit: int = 50) -> List[MemoryHit]:
        """The newest archival passages, oldest first."""
        return cast(List[MemoryHit], self._send(_wire.archival_search(None, skill, limit))["hits"])


    # Organization memory (docs/organization.md).

    def org_members(self) -> List[Json]:
        """The organization's agents as Lore has seen them, with role and department (reviewers)."""
        return cast(List[Json], self._send(_wire.org_members())["members"])

    def propagate(self, lesson_id: str, strategy: Optional[str] = None) -> Json:
        """Propagates a member's own lesson to its role or department (never back to its owner)."""
        return cast(Json, self._send(_wire.propagate(lesson_id, strategy)))

    def org_pool(self, *, dry_run: bool = False) -> Json:
        """One org pool cycle; its proposals wait for a person's approval."""
        return cast(Json, self._send(_wire.org_pool(dry_run)))

    # The embedder's lifecycle (docs/embedders.md). Destructive calls take the guard: who asks,
    # confirm=True, and why.

    def active_embedder(self) -> Json:
        """The embedder recall uses now: the fitted base and the active checkpoint, if any."""
        return cast(Json, self._send(_wire.active_embedder()))

    def tuning_preflight(self, plan: Optional[Json] = None) -> Json:
        """What a training run would learn from, and what stands in its way."""
        return cast(Json, self._send(_wire.tuning_preflight(plan)))

    def start_tuning(self, plan: Optional[Json] = None, *, actor: Optional[str] = None) -> Json:
        """Trains an adapter (seconds) and answers the finished run with its held-out figures."""
        return cast(Json, self._send(_wire.start_tuning(plan, actor)))

    def tuning_runs(self, *, limit: Optional[int] = None, offset: Optional[int] = None) -> Json:
        """Runs newest first, with the total."""
        return cast(Json, self._send(_wire.tuning_runs(limit, offset)))

    def tuning_run(self, run_id: str) -> Json:
        """One run: its status (interrupted when its process died), epoch, loss and heartbeat."""
        return cast(Json, self._send(_wire.tuning_run(run_id)))

    def resume_tuning(self, run_id: str) -> Json:
        """Resumes a failed, cancelled or interrupted run after its last recorded epoch."""
        return cast(Json, self._send(_wire.resume_tuning(run_id)))

    def cancel_tuning(self, *, actor: str, reason: str, confirm: bool = False, run_id: Optional[str] = None) -> Json:
        """Cancels a running run (the newest when none is named); it stops at its next epoch."""
        return cast(Json, self._send(_wire.cancel_tuning(run_id, actor, confirm, reason)))

    def checkpoints(self) -> List[Json]:
        """Checkpoints newest first, with their held-out figures."""
        return cast(List[Json], self._send(_wire.checkpoints())["checkpoints"])

    def activate_checkpoint(self, checkpoint: str, *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Makes a checkpoint the one recall uses; refused unless it beat the base embedder."""
        return cast(Json, self._send(_wire.activate_checkpoint(checkpoint, actor, confirm, reason)))

    def rollback_embedder(self, to: str = "base", *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Rolls recall back to a checkpoint, or to the base embedder alone."""
        return cast(Json, self._send(_wire.rollback_embedder(to, actor, confirm, reason)))

    def delete_checkpoint(self, checkpoint: str, *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Deletes a checkpoint recall does not use, with its weights; its run keeps its figures."""
        return cast(Json, self._send(_wire.delete_checkpoint(checkpoint, actor, confirm, reason)))

class AsyncLore:
    """The asynchronous twin of :class:`Lore`: the same methods, awaited."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        token: Optional[str] = None,
        timeout: float = 30.0,
        http: Optional[httpx.AsyncClient] = None,
    ) -> None:
        self.base_url, headers = _settings(base_url, token)
        self._http = http or httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=timeout)

    async def __aenter__(self) -> "AsyncLore":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call) -> Any:
        try:
            response = await self._http.request(call.method, call.path, params=call.params, json=call.body)
        except httpx.TransportError as err:
            raise _unreachable(self.base_url, err) from err
        return decode(response)

    async def status(self) -> Status:
        return cast(Status, await self._send(_wire.status()))

    async def record(
        self,
        skill: str,
        input: Any,
        output: Any,
        outcome: str = "pending_review",
        *,
        cost_usd: Optional[float] = None,
        latency_ms: Optional[float] = None,
        model: Optional[str] = None,
        session: Optional[str] = None,
        lessons_shown: Sequence[str] = (),
    ) -> Execution:
        call = _wire.record(skill, input, output, outcome, cost_usd, latency_ms, model, session, lessons_shown)
        return cast(Execution, await self._send(call))

    async def execution(self, execution_id: str) -> Execution:
        return cast(Execution, await self._send(_wire.execution(execution_id)))

    async def executions(
        self, skill: Optional[str] = None, limit: Optional[int] = None, offset: Optional[int] = None
    ) -> Page:
        return cast(Page, await self._send(_wire.executions(skill, limit, offset)))

    async def correct(self, skill: str, execution_id: str, correction: str) -> CorrectionResult:
        return cast(CorrectionResult, await self._send(_wire.correct(skill, execution_id, correction)))

    async def signal(
        self,
        execution_id: str,
        channel: str,
        message: str = "",
        *,
        value: Optional[float] = None,
        action: Optional[str] = None,
        tags: Iterable[str] = (),
    ) -> Signal:
        return cast(Signal, await self._send(_wire.signal(execution_id, channel, message, value, action, tags)))

    async def recall(
        self,
        query: str,
        *,
        skill: Optional[str] = None,
        budget: Optional[int] = None,
        limit: Optional[int] = None,
        fingerprint: Optional[str] = None,
        tags: Iterable[str] = (),
        explain: bool = False,
        run: Optional[str] = None,
    ) -> RecallResult:
        call = _wire.recall(query, skill, budget, limit, fingerprint, tags, explain, run)
        return cast(RecallResult, await self._send(call))

    async def prompt(self, skill: str) -> Prompt:
        return cast(Prompt, await self._send(_wire.prompt(skill)))

    async def search(self, query: str, *, skill: Optional[str] = None, limit: int = 5) -> List[SearchHit]:
        return cast(List[SearchHit], (await self._send(_wire.search(query, skill, limit)))["hits"])

    async def lessons(
        self,
        *,
        skill: Optional[str] = None,
        status: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> Page:
        return cast(Page, await self._send(_wire.lessons(skill, status, limit, offset)))

    async def lesson(self, lesson_id: str) -> Lesson:
        return cast(Lesson, (await self._send(_wire.lesson(lesson_id)))["lesson"])

    async def review_queue(
        self,
        *,
        skill: Optional[str] = None,
        status: Optional[Sequence[str]] = None,
        limit: Optional[int] = None,
        offset: Optional[int] = None,
    ) -> Page:
        return cast(Page, await self._send(_wire.review_queue(skill, status, limit, offset)))

    async def review(
        self, decision: str, ids: Sequence[str], reason: str = "", *, superseded_by: Optional[str] = None
    ) -> List[Lesson]:
        return cast(List[Lesson], (await self._send(_wire.review(decision, ids, reason, superseded_by)))["lessons"])

    async def remember(self, skill: str, text: str, tags: Iterable[str] = ()) -> MemoryEntry:
        return cast(MemoryEntry, await self._send(_wire.archival_write(skill, text, tags)))

    async def memories(self, query: str, *, skill: Optional[str] = None, limit: int = 5) -> List[MemoryHit]:
        return cast(List[MemoryHit], (await self._send(_wire.archival_search(query, skill, limit)))["hits"])

    async def list_memories(self, *, skill: Optional[str] = None, limit: int = 50) -> List[MemoryHit]:
        return cast(List[MemoryHit], (await self._send(_wire.archival_search(None, skill, limit)))["hits"])

    # Organization memory (docs/organization.md).

    async def org_members(self) -> List[Json]:
        """The organization's agents as Lore has seen them, with role and department (reviewers)."""
        return cast(List[Json], (await self._send(_wire.org_members()))["members"])

    async def propagate(self, lesson_id: str, strategy: Optional[str] = None) -> Json:
        """Propagates a member's own lesson to its role or department (never back to its owner)."""
        return cast(Json, await self._send(_wire.propagate(lesson_id, strategy)))

    async def org_pool(self, *, dry_run: bool = False) -> Json:
        """One org pool cycle; its proposals wait for a person's approval."""
        return cast(Json, await self._send(_wire.org_pool(dry_run)))

    # The embedder's lifecycle (docs/embedders.md). Destructive calls take the guard: who asks,
    # confirm=True, and why.

    async def active_embedder(self) -> Json:
        """The embedder recall uses now: the fitted base and the active checkpoint, if any."""
        return cast(Json, await self._send(_wire.active_embedder()))

    async def tuning_preflight(self, plan: Optional[Json] = None) -> Json:
        """What a training run would learn from, and what stands in its way."""
        return cast(Json, await self._send(_wire.tuning_preflight(plan)))

    async def start_tuning(self, plan: Optional[Json] = None, *, actor: Optional[str] = None) -> Json:
        """Trains an adapter (seconds) and answers the finished run with its held-out figures."""
        return cast(Json, await self._send(_wire.start_tuning(plan, actor)))

    async def tuning_runs(self, *, limit: Optional[int] = None, offset: Optional[int] = None) -> Json:
        """Runs newest first, with the total."""
        return cast(Json, await self._send(_wire.tuning_runs(limit, offset)))

    async def tuning_run(self, run_id: str) -> Json:
        """One run: its status (interrupted when its process died), epoch, loss and heartbeat."""
        return cast(Json, await self._send(_wire.tuning_run(run_id)))

    async def resume_tuning(self, run_id: str) -> Json:
        """Resumes a failed, cancelled or interrupted run after its last recorded epoch."""
        return cast(Json, await self._send(_wire.resume_tuning(run_id)))

    async def cancel_tuning(self, *, actor: str, reason: str, confirm: bool = False, run_id: Optional[str] = None) -> Json:
        """Cancels a running run (the newest when none is named); it stops at its next epoch."""
        return cast(Json, await self._send(_wire.cancel_tuning(run_id, actor, confirm, reason)))

    async def checkpoints(self) -> List[Json]:
        """Checkpoints newest first, with their held-out figures."""
        return cast(List[Json], (await self._send(_wire.checkpoints()))["checkpoints"])

    async def activate_checkpoint(self, checkpoint: str, *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Makes a checkpoint the one recall uses; refused unless it beat the base embedder."""
        return cast(Json, await self._send(_wire.activate_checkpoint(checkpoint, actor, confirm, reason)))

    async def rollback_embedder(self, to: str = "base", *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Rolls recall back to a checkpoint, or to the base embedder alone."""
        return cast(Json, await self._send(_wire.rollback_embedder(to, actor, confirm, reason)))

    async def delete_checkpoint(self, checkpoint: str, *, actor: str, reason: str, confirm: bool = False) -> Json:
        """Deletes a checkpoint recall does not use, with its weights; its run keeps its figures."""
        return cast(Json, await self._send(_wire.delete_checkpoint(checkpoint, actor, confirm, reason)))
