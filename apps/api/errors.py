"""The REST API's own refusals: an HTTP status, a stable code and a plain message."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def not_found(what: str) -> ApiError:
    """What a missing resource and one the caller cannot read both give."""
    return ApiError(404, "not_found", f"No such {what}.")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "forbidden", message)
