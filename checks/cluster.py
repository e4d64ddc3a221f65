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
cannot be reached, an address whose peer is no scheduler (silent past ``PROTOCOL_TIMEOUT``, or not
speaking Dask's protocol), or a scheduler that goes away during the run raises :class:`ClusterError`
(exit 2 at the command line, in one line: Dask's own logging of the loss is silenced): never a
partial result.

For example::

    >>> with Cluster(workers=1) as c:
    ...     c.map(abs, [-2, 3])
    [2, 3]
"""

from __future__ import annotations

import logging
import socket
import struct
from typing import Any, Callable, Iterator, Sequence

from flightcheck.checks.inputs import InputError

CONNECT_TIMEOUT = 10  # seconds to reach a scheduler given by address
PROTOCOL_TIMEOUT = 10  # seconds for a reached scheduler to send its greeting (Dask's handshake)
GREETING_MAX = 1 << 16  # bytes: a scheduler's greeting is about 60; a longer frame is not Dask's framing


class ClusterError(InputError):
    """The Dask scheduler named cannot be reached or went away (the argument is wrong: exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__("--scheduler", None, None, message)


def probe(address: str) -> None:
    """Raise :class:`ClusterError` unless the peer at a ``tcp://`` ``address`` greets as a Dask scheduler
    does: reached within ``CONNECT_TIMEOUT`` seconds, its handshake (one Dask message, a small dict)
    within ``PROTOCOL_TIMEOUT`` more. Other schemes (tls, ucx) are left to Dask's own connect."""
    from distributed.comm import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except ValueError as error:
        raise ClusterError(f"{address} is not a Dask scheduler's address (tcp://HOST:PORT): {error}") from None
    if scheme != "tcp":
        return
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
    except OSError as error:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    with sock:
        sock.settimeout(PROTOCOL_TIMEOUT)
        try:
            (size,) = struct.unpack("Q", _read(sock, 8))
            greeting = _read(sock, size) if 0 < size <= GREETING_MAX else None
        except TimeoutError:
            raise ClusterError(f"{address} accepted the connection but sent no Dask handshake within "
                               f"{PROTOCOL_TIMEOUT} s: it is not a Dask scheduler, or one that does not answer") from None
        except OSError as error:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    if greeting is None or not _is_handshake(greeting):
        raise ClusterError(f"{address} does not speak Dask's protocol: is it a Dask scheduler's address?")


def _read(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock``; fewer when the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _is_handshake(data: bytes) -> bool:
    """Whether ``data`` (one message's frames) decodes as Dask's handshake: a dict naming the peer's Python."""
    from distributed.protocol.core import loads
    from distributed.protocol.utils import unpack_frames

    try:
        message = loads(unpack_frames(data))
    except Exception:  # anything at all may be in a stranger's bytes; none of it is a handshake
        return False
    return isinstance(message, dict) and "python" in message


def silence_dask_logs() -> None:
    """From now on, nothing from the loggers of Dask (``distributed``) and of the tornado loop under it,
    in this process: loggers made later inherit the silence from those two."""
    for name in [*logging.root.manager.loggerDict]:
        if name.split(".")[0] in ("distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


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

        # Dask's own connect waits on the peer's handshake without a limit and sizes a buffer from its
        # first 8 bytes: a peer that accepts and stays silent hangs it, and one that writes anything
        # else (an HTTP server) asks for exabytes. The probe asks the same question with limits first.
        probe(self.address)
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
        # The loss is told once, in the one line returned here: Dask's own account of it (the tracebacks
        # of its reconnect attempts and of closing a client whose scheduler is gone, some printed after
        # this line, at exit) would bury that line, so its loggers say nothing more in this process.
        silence_dask_logs()
        where = self.address or "the embedded local cluster"
        said = " ".join(str(error).split())  # Dask's reason spans lines; the error is one
        return ClusterError(f"the Dask scheduler at {where} went away during the run: {type(error).__name__}: {said}")

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


__all__ = ["CONNECT_TIMEOUT", "PROTOCOL_TIMEOUT", "Cluster", "ClusterError", "probe"]
