"""One description per endpoint, shared by the sync and async clients, so the two never differ
in what they send. Each function returns the call; the clients only send it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Optional, Sequence
from urllib.parse import quote

import httpx

from .errors import error_for

Json = Dict[str, Any]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: Json = field(default_factory=dict)
    body: Optional[Json] = None


def _drop_none(values: Json) -> Json:
    return {k: v for k, v in values.items() if v is not None}


def _id(value: str) -> str:
    return quote(value, safe="")


def _skill(skill: str) -> str:
    domain, _, name = skill.partition("/")
    return f"{_id(domain)}/{_id(name)}"


def decode(response: httpx.Response) -> Any:
    """The answer's JSON, or the exception its error code names."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    if response.status_code >= 400:
        raise error_for(response.status_code, body)
    return body


def status() -> Call:
    return Call("GET", "/v1/status")


def record(
    skill: str,
    input: Any,
    output: Any,
    outcome: str,
    cost_usd: Optional[float],
    latency_ms: Optional[float],
    model: Optional[str],
    session: Optional[str],
    lessons_shown: Sequence[str],
) -> Call:
    body = _drop_none(
        {
            "skill": skill,
            "input": input,
            "output": output,
            "outcome": outcome,
            "cost_usd": cost_usd,
            "latency_ms": latency_ms,
            "model": model,
            "session": session,
        }
    )
    if lessons_shown:
        body["lessons_shown"] = list(lessons_shown)
    return Call("POST", "/v1/executions", body=body)


def execution(execution_id: str) -> Call:
    return Call("GET", f"/v1/executions/{_id(execution_id)}")


def executions(skill: Optional[str], limit: Optional[int], offset: Optional[int]) -> Call:
    return Call("GET", "/v1/executions", params=_drop_none({"skill": skill, "limit": limit, "offset": offset}))


def correct(skill: str, execution_id: str, correction: str) -> Call:
    return Call(
        "POST",
        "/v1/corrections",
        body={"skill": skill, "execution_id": execution_id, "correction": correction},
    )


def signal(
    execution_id: str,
    channel: str,
    message: str,
    value: Optional[float],
    action: Optional[str],
    tags: Iterable[str],
) -> Call:
    body = _drop_none({"channel": channel, "message": message, "value": value, "action": action})
    body["tags"] = list(tags)
    return Call("POST", f"/v1/executions/{_id(execution_id)}/signals", body=body)


def recall(
    query: str,
    skill: Optional[str],
    budget: Optional[int],
    limit: Optional[int],
    fingerprint: Optional[str],
    tags: Iterable[str],
    explain: bool,
    run: Optional[str],
) -> Call:
    body = _drop_none(
        {
            "query": query,
            "skill": skill,
            "budget": budget,
            "limit": limit,
            "fingerprint": fingerprint,
            "run": run,
        }
    )
    body["tags"] = list(tags)
    body["explain"] = explain
    return Call("POST", "/v1/recall", body=body)


def prompt(skill: str) -> Call:
    return Call("GET", f"/v1/skills/{_skill(skill)}/prompt")


def search(query: str, skill: Optional[str], limit: int) -> Call:
    return Call("GET", "/v1/search", params=_drop_none({"query": query, "skill": skill, "limit": limit}))


def lessons(skill: Optional[str], status: Optional[Sequence[str]], limit: Optional[int], offset: Optional[int]) -> Call:
    statuses = ",".join(status) if status else None
    return Call(
        "GET",
        "/v1/lessons",
        params=_drop_none({"skill": skill, "status": statuses, "limit": limit, "offset": offset}),
    )


def lesson(lesson_id: str) -> Call:
    return Call("GET", f"/v1/lessons/{_id(lesson_id)}")


def review_queue(skill: Optional[str], status: Optional[Sequence[str]], limit: Optional[int], offset: Optional[int]) -> Call:
    statuses = ",".join(status) if status else None
    return Call(
        "GET",
        "/v1/review",
        params=_drop_none({"skill": skill, "status": statuses, "limit": limit, "offset": offset}),
    )


def review(decision: str, ids: Sequence[str], reason: str, superseded_by: Optional[str]) -> Call:
    body = _drop_none({"ids": list(ids), "reason": reason, "superseded_by": superseded_by})
    return Call("POST", f"/v1/review/{_id(decision)}", body=body)


def archival_write(skill: str, text: str, tags: Iterable[str]) -> Call:
    return Call("POST", "/v1/memory/archival", body={"skill": skill, "text": text, "tags": list(tags)})


def archival_search(query: Optional[str], skill: Optional[str], limit: int) -> Call:
    return Call("GET", "/v1/memory/archival", params=_drop_none({"query": query, "skill": skill, "limit": limit}))


def org_members() -> Call:
    return Call("GET", "/v1/org/members")


def propagate(lesson_id: str, strategy: Optional[str]) -> Call:
    return Call("POST", f"/v1/lessons/{_id(lesson_id)}/propagate", body=_drop_none({"strategy": strategy}))


def org_pool(dry_run: bool) -> Call:
    return Call("POST", "/v1/org/pool", body={"dry_run": dry_run})


def active_embedder() -> Call:
    return Call("GET", "/v1/embedder")


def tuning_preflight(plan: Optional[Json]) -> Call:
    return Call("POST", "/v1/embedder/preflight", body=_drop_none({"plan": plan}))


def start_tuning(plan: Optional[Json], actor: Optional[str]) -> Call:
    return Call("POST", "/v1/embedder/runs", body=_drop_none({"plan": plan, "actor": actor}))


def tuning_runs(limit: Optional[int], offset: Optional[int]) -> Call:
    return Call("GET", "/v1/embedder/runs", params=_drop_none({"limit": limit, "offset": offset}))


def tuning_run(run_id: str) -> Call:
    return Call("GET", f"/v1/embedder/runs/{_id(run_id)}")


def resume_tuning(run_id: str) -> Call:
    return Call("POST", f"/v1/embedder/runs/{_id(run_id)}/resume")


def _guard(actor: str, confirm: bool, reason: str) -> Json:
    return {"actor": actor, "confirm": confirm, "reason": reason}


def cancel_tuning(run_id: Optional[str], actor: str, confirm: bool, reason: str) -> Call:
    body = _drop_none({"run": run_id, **_guard(actor, confirm, reason)})
    return Call("POST", "/v1/embedder/cancel", body=body)


def checkpoints() -> Call:
    return Call("GET", "/v1/embedder/checkpoints")


def activate_checkpoint(checkpoint: str, actor: str, confirm: bool, reason: str) -> Call:
    path = f"/v1/embedder/checkpoints/{_id(checkpoint)}/activate"
    return Call("POST", path, body=_guard(actor, confirm, reason))


def delete_checkpoint(checkpoint: str, actor: str, confirm: bool, reason: str) -> Call:
    path = f"/v1/embedder/checkpoints/{_id(checkpoint)}/delete"
    return Call("POST", path, body=_guard(actor, confirm, reason))


def rollback_embedder(to: str, actor: str, confirm: bool, reason: str) -> Call:
    return Call("POST", "/v1/embedder/rollback", body={"to": to, **_guard(actor, confirm, reason)})
