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
    """An engine configuration value out of range; the message names the field, the value and the limit."""


class InvalidArgumentError(EngineError, TypeError, ValueError):
    """An argument of an engine call of the wrong type or out of its range (a bool or a float as a
    request ID, a negative ``max_steps``); the message names the call and the argument.

    Why both TypeError and ValueError: callers that caught what Python raised before (a TypeError for
    a wrong type) keep working, and so do those that catch a bad value.
    """


class NoProgressError(EngineError):
    """``run``, ``stream`` or ``generate`` stopped because only held requests could make progress.

    Unlike the other errors it comes after work was done: the steps taken before it stand (every
    request is still consistent, and ``resume`` lets them go on).
    """


class EventLogError(EngineError, OSError):
    """The event log file cannot be opened or written (an OSError, so callers handling I/O still do)."""


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


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters.

    Why not plain repr: a message must never fail or flood. ``repr`` of an int over 4300 digits raises
    ValueError, a user object's ``__repr__`` may raise anything, and a million-token prompt would
    fill the log.
    """
    try:
        text = repr(value)
    except ValueError:
        if isinstance(value, int):
            return f"an integer of {value.bit_length()} bits"
        text = f"<{type(value).__name__} object>"
    except Exception:  # noqa: BLE001 - a user's __repr__ is not ours to trust
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
