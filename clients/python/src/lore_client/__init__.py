"""Lore's Python client: record what an agent did, correct it, and recall what it learned.

    from lore_client import Lore
    lore = Lore()                                      # LORE_URL, LORE_TOKEN
    run = lore.record("support/triage", {"ticket": t}, {"priority": "normal"}, "rejected")
    lore.correct("support/triage", run["id"], "Outages affecting many customers are urgent.")
    lore.recall("checkout errors for many customers")["text"]   # goes into the next prompt
"""

from .client import AsyncLore, Lore
from .errors import (
    AuthenticationError,
    ConflictError,
    ConnectionFailedError,
    InvalidRequestError,
    LoreError,
    NotFoundError,
    PermissionDeniedError,
    ServerError,
    UnsupportedError,
)

__all__ = [
    "AsyncLore",
    "AuthenticationError",
    "ConflictError",
    "ConnectionFailedError",
    "InvalidRequestError",
    "Lore",
    "LoreError",
    "NotFoundError",
    "PermissionDeniedError",
    "ServerError",
    "UnsupportedError",
]
__version__ = "0.1.0"
