"""The client's wire layer against the server's OpenAPI document: every call it can make is an
operation the document describes, with parameters and body fields the document names. Sends
nothing to a server; it keeps the client from drifting when the API changes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from lore_client import _wire

# The document a server serves (its catalogue's operations are written in at start), saved by the
# test harness; the hand-kept source file when run alone.
DOC = json.loads(
    Path(
        os.environ.get("LORE_OPENAPI")
        or Path(__file__).resolve().parents[3] / "crates/lore-server/src/openapi.json"
    ).read_text()
)


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        node = DOC
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def operation(method: str, path: str) -> dict:
    for template, item in DOC["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, path) and method.lower() in item:
            return item[method.lower()]
    raise AssertionError(f"{method} {path} is not in the OpenAPI document")


CALLS = [
    _wire.status(),
    _wire.record("a/b", {}, {}, "rejected", 0.1, 5.0, "m", "s", ["REFL-1"]),
    _wire.execution("EXEC-1"),
    _wire.executions("a/b", 10, 0),
    _wire.correct("a/b", "EXEC-1", "Do this instead."),
    _wire.signal("EXEC-1", "progress", "m", 0.5, "act", ["t"]),
    _wire.recall("q", "a/b", 100, 3, "fp", ["t"], True, "run-1"),
    _wire.prompt("a/b"),
    _wire.search("q", "a/b", 5),
    _wire.lessons("a/b", ["approved"], 10, 0),
    _wire.lesson("REFL-1"),
    _wire.review_queue("a/b", ["needs_review"], 10, 0),
    _wire.review("approve", ["REFL-1"], "why", None),
    _wire.archival_write("a/b", "text", ["t"]),
    _wire.archival_search("q", "a/b", 5),
    _wire.archival_search(None, "a/b", 5),
    _wire.org_members(),
    _wire.propagate("REFL-1", "role"),
    _wire.propagate("REFL-1", None),
    _wire.org_pool(True),
    _wire.active_embedder(),
    _wire.tuning_preflight({"epochs": 5, "held_out_by": "task_type"}),
    _wire.tuning_preflight(None),
    _wire.start_tuning({"seed": 3}, "ops"),
    _wire.tuning_runs(10, 0),
    _wire.tuning_run("TUNE-1"),
    _wire.resume_tuning("TUNE-1"),
    _wire.cancel_tuning("TUNE-1", "ops", True, "why"),
    _wire.cancel_tuning(None, "ops", True, "why"),
    _wire.checkpoints(),
    _wire.activate_checkpoint("CKPT-1", "ops", True, "why"),
    _wire.rollback_embedder("base", "ops", True, "why"),
    _wire.delete_checkpoint("CKPT-1", "ops", True, "why"),
]


def test_a_plan_sends_only_fields_the_document_names() -> None:
    plan = resolve(DOC["components"]["schemas"]["TunePlan"])
    for call in CALLS:
        sent = (call.body or {}).get("plan")
        if sent:
            unknown = set(sent) - set(plan["properties"])
            assert not unknown, f"{call.path}: plan {unknown} not in the document"


def test_every_call_is_an_operation_of_the_document_with_known_fields() -> None:
    for call in CALLS:
        op = operation(call.method, call.path)
        names = set()
        for param in op.get("parameters", []):
            param = resolve(param)
            if param.get("in") == "query":
                names.add(param["name"])
        unknown = set(call.params) - names
        assert not unknown, f"{call.method} {call.path}: query {unknown} not in the document"
        if call.body is not None:
            schema = resolve(op["requestBody"]["content"]["application/json"]["schema"])
            fields = set(schema.get("properties", {}))
            unknown = set(call.body) - fields
            assert not unknown, f"{call.method} {call.path}: body {unknown} not in the document"
            missing = set(schema.get("required", [])) - set(call.body)
            assert not missing, f"{call.method} {call.path}: required {missing} not sent"
