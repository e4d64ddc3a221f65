"""For the benchmark scripts: a real ``dask scheduler`` and ``dask worker`` processes on 127.0.0.1.

    from local_dask import local_dask_cluster      # scripts/ is on the path of a script run from it
    with local_dask_cluster(workers=2) as address:  # tcp://127.0.0.1:PORT, its workers connected
        ...
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def local_dask_cluster(workers: int = 2) -> Iterator[str]:
    """A scheduler on a free port and ``workers`` single-threaded workers without a memory limit; yields
    the scheduler's address once every worker has joined, and kills them all (each in its own session,
    nanny included) on the way out."""
    from distributed import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"start_new_session": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              **quiet)]
    procs += [subprocess.Popen(["dask", "worker", address, "--nthreads", "1", "--memory-limit", "0", "--no-dashboard"],
                               **quiet) for _ in range(workers)]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
