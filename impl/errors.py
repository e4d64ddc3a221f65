"""The engine's errors: one class per kind of misuse, each message naming what was wrong.

Every error is raised before any state changes (guards check first, commands mutate after), so a
caller that catches one finds the engine exactly as it was.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class InvalidRequestError(EngineError, ValueError):
    """A request that cannot be served as given (empty prompt, too long for the context or the pool)."""


class InvalidSamplingError(InvalidRequestError):
    """A sampling parameter out of range; the message names the field and the value."""


class InvalidConfigError(EngineError, ValueError):
    """An engine configuration value out of range; the message names the field and the value."""


class UnknownRequestError(EngineError, KeyError):
    """A request ID that was never submitted or has already terminated (abort, termination notice).

    Why an error and not a no-op: the seed's coordinator keeps released IDs precisely so that a
    termination notice for a genuinely invalid ID is caught instead of silently ignored.
    """

    def __init__(self, request_id: object, detail: str) -> None:
        super().__init__(f"unknown request ID {request_id!r}: {detail}")
        self.request_id = request_id
        self.detail = detail

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]
