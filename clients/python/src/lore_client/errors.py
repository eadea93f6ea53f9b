"""Errors raised by the client: one class per error code the server answers with.

The server's body is always ``{"error": {"code": "...", "message": "..."}}``; ``code`` is stable
and meant for programs, ``message`` for people. Every exception carries both, and the HTTP status.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class LoreError(Exception):
    """Any error from Lore. ``code`` is the server's stable code (``not_found``, ``invalid``...)."""

    def __init__(self, code: str, message: str, status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class InvalidRequestError(LoreError):
    """The request was refused as it stands (``invalid``, ``bad_request``...): fix it, do not retry."""


class NotFoundError(LoreError):
    """The record, skill or endpoint does not exist (``not_found``)."""


class ConflictError(LoreError):
    """The record changed or the move is not allowed from its state (``conflict``)."""


class AuthenticationError(LoreError):
    """No valid token (``unauthenticated``): pass ``token=`` or set ``LORE_TOKEN``."""


class PermissionDeniedError(LoreError):
    """The token's role or scope does not allow this (``forbidden``)."""


class UnsupportedError(LoreError):
    """This server or store does not do this (``unsupported``)."""


class ServerError(LoreError):
    """The server failed (``internal``) or ran out of time (``timeout``): the write may have landed."""


class ConnectionFailedError(LoreError):
    """No answer from the server at all (``unreachable``): is ``lore serve`` running at that URL?"""


_BY_CODE: Dict[str, Type[LoreError]] = {
    "invalid": InvalidRequestError,
    "bad_request": InvalidRequestError,
    "payload_too_large": InvalidRequestError,
    "unsupported_media_type": InvalidRequestError,
    "method_not_allowed": InvalidRequestError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "unauthenticated": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "unsupported": UnsupportedError,
    "internal": ServerError,
    "timeout": ServerError,
}


def error_for(status: int, body: object) -> LoreError:
    """The exception for an error answer; a body that is not Lore's shape still yields one."""
    code, message = "http_error", f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code", code))
        message = str(body["error"].get("message", message))
    elif isinstance(body, str) and body:
        message = body[:500]
    cls = _BY_CODE.get(code, ServerError if status >= 500 else LoreError)
    return cls(code, message, status)
