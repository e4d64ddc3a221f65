"""Where the independent items of a job run: Dask's distributed scheduler, never a home-made pool.

A :class:`Cluster` maps a pure, module-level function over a list of items and returns the results in
the items' order. It is one of three things:

- ``Cluster(address="tcp://HOST:PORT")``: a client of an existing Dask scheduler (``dask scheduler``
  and ``dask worker`` processes on any machines that have flightcheck installed); ``check
  --scheduler`` or the ``DASK_SCHEDULER_ADDRESS`` variable name it;
- ``Cluster(workers=N)`` with ``N > 1``: an embedded ``LocalCluster`` of ``N`` worker processes, one
  thread each, started on the first :meth:`Cluster.map` that has more than one item (a job with
  nothing to spread pays nothing) and closed with the cluster;
- ``Cluster(workers=1)``: no Dask at all, every item in this process.

:meth:`Cluster.map` returns every result at once; :meth:`Cluster.as_completed` yields each as it
finishes (progress, an incremental log).

Every task carries what it needs (a scenario, a policy, a program), so a worker needs only the
installed package, and the results do not depend on where the tasks ran: a worker that dies mid-run
has its tasks re-run on another (Dask's own retry), and the verdict is the same. A scheduler that
cannot be reached, or that goes away during the run, raises :class:`ClusterError` (exit 2 at the
command line): never a partial result.

For example::

    >>> with Cluster(workers=1) as c:
    ...     c.map(abs, [-2, 3])
    [2, 3]
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, Sequence

from flightcheck.checks.inputs import InputError

CONNECT_TIMEOUT = 10  # seconds to reach a scheduler given by address


class ClusterError(InputError):
    """The Dask scheduler named cannot be reached or went away (the argument is wrong: exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("--scheduler", None, None, message)


class Cluster:
    """Runs ``map`` on a Dask scheduler given by ``address``, an embedded local cluster of ``workers``
    processes, or in this process (``workers <= 1`` and no address). A context manager."""

    def __init__(self, address: str | None = None, workers: int = 1, *, processes: bool = True) -> None:
        if address is not None and not address.strip():
            raise ClusterError("--scheduler must name a Dask scheduler, e.g. tcp://127.0.0.1:8786; got an empty string")
        self.address = address
        self.workers = max(1, workers)
        self.processes = processes  # the embedded cluster's workers: processes, or threads of this one
        # Called as ``on_progress(done, total, running)`` after each item of a map (a progress display).
        self.on_progress: Callable[[int, int, int], None] | None = None
        self._client: Any = None
        self._local: Any = None

    def __enter__(self) -> "Cluster":
        if self.address is not None:
            self._connect()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def parts(self) -> int:
        """How many parts a job should be split into: one per worker."""
        if self._client is not None:
            return max(1, len(self._client.scheduler_info().get("workers", {})))
        return self.workers

    @property
    def dashboard(self) -> str | None:
        """The Dask dashboard's link, when the scheduler serves one."""
        return getattr(self._client, "dashboard_link", None) if self._client is not None else None

    def _connect(self) -> None:
        from distributed import Client

        try:
            self._client = Client(self.address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as error:
            raise ClusterError(f"cannot reach the Dask scheduler at {self.address}: {error}") from None

    def _start_local(self) -> None:
        from distributed import Client, LocalCluster

        # One thread per process: the checkers hold the GIL (the explorer, z3) and MLX keeps one
        # engine per process. No memory limit (the nanny would kill a large exploration that a plain
        # process finishes) and the dashboard on a free port (8787 may be taken on a shared machine).
        # Threads instead (processes=False) for tasks that only launch and wait on processes of their
        # own, as mutate's do: the launcher's state (the live processes to kill on Ctrl-C) stays here.
        if self.processes:
            self._local = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                       memory_limit=0, dashboard_address=":0", silence_logs=logging.ERROR)
        else:
            self._local = LocalCluster(n_workers=1, threads_per_worker=self.workers, processes=False,
                                       memory_limit=0, dashboard_address=":0", silence_logs=logging.ERROR)
        self._client = Client(self._local)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, spread over the cluster's workers, in the items' order."""
        out: list[Any] = [None] * len(items)
        for k, result in self.as_completed(fn, items):
            out[k] = result
        return out

    def _progress(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(done, total, min(self.parts, total - done))

    def as_completed(self, fn: Callable[..., Any], items: Sequence[Any], shared: Any = None) -> Iterator[tuple[int, Any]]:
        """``(index, fn(items[index]))`` for every item, as each finishes (in this process: in order), with
        ``on_progress`` told after each.

        With ``shared`` (data every item needs, e.g. the traces of a sweep), each call is
        ``fn(shared, item)`` and ``shared`` goes to each worker once (Dask's scatter), not with every item.
        """
        items = list(items)
        if self._client is None and (self.workers <= 1 or len(items) <= 1):
            for k, x in enumerate(items):
                result = fn(x) if shared is None else fn(shared, x)
                self._progress(k + 1, len(items))
                yield k, result
            return
        if self._client is None:
            self._start_local()
        from distributed import CancelledError, as_completed

        try:
            if shared is None:
                futures = self._client.map(fn, items, pure=False)
            else:
                data = self._client.scatter(shared, broadcast=True)
                futures = self._client.map(fn, [data] * len(items), items, pure=False)
            index = {f.key: k for k, f in enumerate(futures)}
            for done, (future, result) in enumerate(as_completed(futures, with_results=True), 1):
                if future.status == "cancelled":  # yielded, not raised, when the scheduler goes away
                    raise CancelledError(f"{future.key}: {result}")
                self._progress(done, len(items))
                yield index[future.key], result
        except (OSError, CancelledError, TimeoutError) as error:
            raise self._gone(error) from None

    def _gone(self, error: BaseException) -> ClusterError:
        where = self.address or "the embedded local cluster"
        return ClusterError(f"the Dask scheduler at {where} went away during the run: {type(error).__name__}: {error}")

    def actors(self, cls: type, args: Callable[[int, int], tuple]) -> list[Any]:
        """One instance of ``cls`` per worker, built from ``args(k, n)`` (the k-th of n) and held there as a
        Dask actor; calling a method returns a future (``.result()``). In this process (one worker, no
        address): one plain instance whose calls return finished futures."""
        if self._client is None and self.workers <= 1:
            return [_Here(cls(*args(0, 1)))]
        if self._client is None:
            self._start_local()
        try:
            addresses = sorted(self._client.scheduler_info().get("workers", {}))
            futures = [self._client.submit(cls, *args(k, len(addresses)), actor=True, workers=[a], pure=False,
                                           allow_other_workers=False)
                       for k, a in enumerate(addresses)]
            return [f.result() for f in futures]
        except (OSError, TimeoutError) as error:
            raise self._gone(error) from None

    def close(self) -> None:
        """Disconnect, and stop the embedded cluster if one was started."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._local is not None:
            self._local.close()
            self._local = None


class _Done:
    """A finished future: what a call on an actor held in this process returns."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Here:
    """An object in this process with an actor's calling convention (each call returns a future)."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, name: str) -> Callable[..., _Done]:
        method = getattr(self._obj, name)
        return lambda *a, **k: _Done(method(*a, **k))


__all__ = ["CONNECT_TIMEOUT", "Cluster", "ClusterError"]
