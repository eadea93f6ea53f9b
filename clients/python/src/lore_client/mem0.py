"""A mem0-shaped entry point over Lore's archival memory, so code written for mem0's
``Memory`` moves with a changed import::

    from lore_client.mem0 import Memory      # was: from mem0 import Memory
    m = Memory()                             # Lore at LORE_URL / 127.0.0.1:7077
    m.add("Alice prefers tea", user_id="alice")
    m.search("what does alice drink", user_id="alice")["results"]

Memories are Lore archival passages of one skill (``mem0/memories`` unless told otherwise);
``user_id``, ``agent_id`` and ``run_id`` become tags, so a search or listing for a user sees that
user's memories only. Differences from mem0, by design:

- ``add`` stores what it is given; it does not ask a model to extract facts from a conversation
  (each message's text becomes one memory). Lore's learning happens on corrections instead.
- ``delete`` and ``update`` raise :class:`~lore_client.errors.UnsupportedError`: Lore keeps
  memory append-only, and erases only through an audited purge.
- ``history`` answers the memory's one ``ADD`` event, since a memory never changes.

``import_mem0`` takes a mem0 export (what mem0's ``get_all`` returns) and adds its memories.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Dict, List, Optional, Sequence, Union

from .client import Lore
from .errors import UnsupportedError
from .types import MemoryHit

Messages = Union[str, Dict[str, Any], Sequence[Dict[str, Any]]]

_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")
# The most passages one search or listing reads before filtering by user, agent and run.
_READ = 50


def _tag(kind: str, value: str) -> str:
    """A tag for an identifier; tags are short lowercase names, so others are hashed."""
    if not _NAME.match(value):
        value = "h" + hashlib.sha256(value.encode()).hexdigest()[:30]
    return f"{kind}-{value}"


def _texts(messages: Messages) -> List[str]:
    if isinstance(messages, str):
        return [messages]
    if isinstance(messages, dict):
        messages = [messages]
    return [str(m.get("content", "")) for m in messages if str(m.get("content", "")).strip()]


class Memory:
    """mem0's ``Memory`` methods, answered by a Lore server."""

    def __init__(self, client: Optional[Lore] = None, *, skill: str = "mem0/memories") -> None:
        self.client = client or Lore()
        self.skill = skill

    def _ids(self, user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> Dict[str, str]:
        ids = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}
        if not ids:
            raise ValueError("give at least one of user_id, agent_id or run_id (as mem0 does)")
        return ids

    def _shape(self, hit: MemoryHit, ids: Dict[str, str], score: bool) -> Dict[str, Any]:
        entry = hit["entry"]
        item: Dict[str, Any] = {
            "id": entry["id"],
            "memory": entry["text"],
            "created_at": entry.get("timestamp"),
            "metadata": None,
            **ids,
        }
        if score:
            item["score"] = hit.get("score", 0.0)
        return item

    def _mine(self, hits: List[MemoryHit], ids: Dict[str, str]) -> List[MemoryHit]:
        wanted = {_tag(k.split("_")[0], v) for k, v in ids.items()}
        return [h for h in hits if wanted <= set(h["entry"].get("tags", []))]

    def add(
        self,
        messages: Messages,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        infer: bool = False,
    ) -> Dict[str, Any]:
        """Stores each message's text as one memory; ``{"results": [{"id", "memory", "event"}]}``."""
        ids = self._ids(user_id, agent_id, run_id)
        tags = [_tag(k.split("_")[0], v) for k, v in ids.items()]
        results = []
        for text in _texts(messages):
            entry = self.client.remember(self.skill, text, tags)
            results.append({"id": entry["id"], "memory": entry["text"], "event": "ADD"})
        return {"results": results}

    def search(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: int = 100,
    ) -> Dict[str, Any]:
        """The memories of that user (agent, run) that match ``query``, best first."""
        ids = self._ids(user_id, agent_id, run_id)
        hits = self._mine(self.client.memories(query, skill=self.skill, limit=_READ), ids)
        return {"results": [self._shape(h, ids, True) for h in hits[:limit]]}

    def get_all(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: int = 100,
    ) -> Dict[str, Any]:
        """The newest memories of that user (agent, run), oldest first."""
        ids = self._ids(user_id, agent_id, run_id)
        hits = self._mine(self.client.list_memories(skill=self.skill, limit=_READ), ids)
        return {"results": [self._shape(h, ids, False) for h in hits[-limit:]]}

    def get(self, memory_id: str) -> Optional[Dict[str, Any]]:
        """One memory by ID among the newest ones, or ``None``."""
        for hit in self.client.list_memories(skill=self.skill, limit=_READ):
            if hit["entry"]["id"] == memory_id:
                return self._shape(hit, {}, False)
        return None

    def history(self, memory_id: str) -> List[Dict[str, Any]]:
        """A memory's events: its ``ADD`` (memories never change), or ``[]`` when unknown."""
        found = self.get(memory_id)
        if found is None:
            return []
        return [
            {
                "id": memory_id,
                "memory_id": memory_id,
                "old_memory": None,
                "new_memory": found["memory"],
                "event": "ADD",
                "created_at": found["created_at"],
            }
        ]

    def update(self, memory_id: str, data: str) -> Dict[str, Any]:
        raise UnsupportedError(
            "unsupported",
            "Lore's memory is append-only: add the new fact with add(); the old one stays on record",
        )

    def import_mem0(self, exported: Union[Dict[str, Any], Sequence[Dict[str, Any]]]) -> Dict[str, Any]:
        """Adds the memories of a mem0 export (``get_all``'s answer, ``{"results": [...]}``, or its
        list) with their ``user_id``, ``agent_id`` and ``run_id``; answers what ``add`` does."""
        items = exported.get("results", []) if isinstance(exported, dict) else exported
        results: List[Dict[str, Any]] = []
        for item in items:
            text = str(item.get("memory") or item.get("text") or "").strip()
            if not text:
                continue
            added = self.add(
                text,
                user_id=item.get("user_id"),
                agent_id=item.get("agent_id"),
                run_id=item.get("run_id"),
            )
            results.extend(added["results"])
        return {"results": results}

    def delete(self, memory_id: str) -> Dict[str, Any]:
        raise UnsupportedError(
            "unsupported",
            "Lore's memory is append-only; content is erased only by an audited purge "
            "(see docs/clients.md)",
        )

    def delete_all(self, **ids: Optional[str]) -> Dict[str, Any]:
        return self.delete("*")
