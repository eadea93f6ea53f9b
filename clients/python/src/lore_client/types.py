"""The shapes the server answers with, as typed dictionaries (plain ``dict`` at run time).

Only the fields a caller usually reads are listed; the server may add more, and they are kept.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover
    from typing_extensions import NotRequired, TypedDict


class Execution(TypedDict):
    id: str
    skill: str
    timestamp: str
    input: Any
    output: Any
    outcome: str
    cost_usd: NotRequired[float]
    latency_ms: NotRequired[float]
    model: NotRequired[str]
    session: NotRequired[str]


class Tiers(TypedDict, total=False):
    summary: str
    condition: str
    action: str
    rationale: str
    steps: List[str]


class Lesson(TypedDict):
    id: str
    skill: str
    rule: str
    applies_when: str
    mistake: str
    root_cause: str
    tags: List[str]
    tiers: Tiers
    confidence: float
    source: str
    status: str
    created_at: str
    updated_at: str


class Correction(TypedDict):
    id: str
    execution_id: str
    skill: str
    timestamp: str
    text: str
    author_kind: str
    author: str


class CorrectionResult(TypedDict):
    """What a correction made: the correction, its lesson, the guardrail and regression test."""

    correction: Correction
    lesson: Optional[Lesson]
    guardrail: Optional[str]
    regression_test: Optional[Dict[str, Any]]
    curation: Dict[str, Any]


class Signal(TypedDict):
    id: str
    skill: str
    execution_id: str
    timestamp: str
    channel: str
    fingerprint: str
    tags: List[str]
    message: str


class RecalledLesson(TypedDict):
    id: str
    skill: str
    status: str
    tier: int
    tokens: int
    score: float


class RecallResult(TypedDict):
    """``text`` is ready to put in a prompt; ``lessons`` says which lessons it holds."""

    text: str
    tokens: int
    budget: int
    tokenizer: str
    lessons: List[RecalledLesson]
    explain: NotRequired[List[Dict[str, Any]]]


class Prompt(TypedDict):
    """A skill's prompt: WORKSPACE, DOMAIN, the learned rules, SKILL; ``lessons`` it carries."""

    text: str
    layers: List[Dict[str, Any]]
    lessons: List[str]


class SearchHit(TypedDict):
    kind: str
    id: str
    skill: str
    score: float
    snippet: str


class ReviewItem(TypedDict, total=False):
    lesson: Lesson
    correction: Optional[str]
    findings: List[str]
    related: List[Dict[str, Any]]
    flagged: Optional[str]


class Page(TypedDict):
    items: List[Any]
    next_offset: Optional[int]


class MemoryEntry(TypedDict, total=False):
    id: str
    skill: str
    category: str
    block: str
    text: str
    tags: List[str]
    session: str
    author: str
    timestamp: str
    extra: Dict[str, Any]


class MemoryHit(TypedDict, total=False):
    entry: MemoryEntry
    score: float


class Status(TypedDict):
    store: Dict[str, Any]
    counts: Dict[str, int]
    curation: str
