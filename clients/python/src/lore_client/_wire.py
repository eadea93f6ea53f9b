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
    return Call("GET", "/v1/search", params=_drop_none({"q": query, "skill": skill, "limit": limit}))


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
    return Call("GET", "/v1/memory/archival", params=_drop_none({"q": query, "skill": skill, "limit": limit}))
