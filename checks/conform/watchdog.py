"""The watchdog: an engine call that never returns is a hung engine, not a check that hangs for ever.

A mutated or refactored engine can loop inside one call (an allocation waiting for pages nothing frees,
an admission loop that admits nothing); the conformance run and the probe run every engine call under
:func:`deadline`, which raises :class:`EngineHang` into it after the model's :data:`CALL_LIMIT_SECONDS`,
and they report the call that hung.

For example::

    >>> import time
    >>> try:
    ...     with deadline(0.05):
    ...         while True:
    ...             time.sleep(0.01)
    ... except EngineHang:
    ...     print("hung")
    hung
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# How long one client operation may keep the engine busy before the run counts it as hung (a loop that
# never ends would otherwise hang the whole check): far beyond any real step on the tiny model (milliseconds)
# or on SmolLM2 (a few seconds for a long prefill on two cores).
CALL_LIMIT_SECONDS = {"tiny": 30.0, "smollm2": 600.0}


class EngineHang(BaseException):
    """Raised into an engine call that ran past its limit (a BaseException: the engine's own ``except
    Exception`` must not swallow it)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`EngineHang` into the code inside after ``seconds`` (SIGALRM; only in the main
    thread, where signals are delivered; elsewhere nothing is watched)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(_signum: int, _frame: Any) -> None:
        raise EngineHang()
    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
