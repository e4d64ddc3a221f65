"""A cache of finished ``flightcheck explore`` runs, so that the second identical run costs almost nothing.

A run of ``flightcheck explore`` is a pure function of the code that runs it, the command line, and the
terminal its tables are drawn for. So the console script (:func:`flightcheck.checks.cli.app.main`) looks
such a run up here *before* it imports anything heavy: on a hit it writes the stdout the first run wrote,
byte for byte, and exits with its status (0 or 1); on a miss it runs the command, copying what it writes
to stdout, and keeps that with the status. The key (:func:`entry_key`) hashes:

- the text of every ``.py`` file of the installed ``flightcheck``, ``flightcheck.spec`` and
  ``flightcheck.checks`` packages (an edit to the spec, the explorer or the command is a miss);
- the Python version and environment (``sys.prefix``), the ``__init__.py`` of each library whose behaviour reaches the output
  (numpy, networkx, scipy, numba, rich, typer: an upgrade rewrites it);
- the arguments as given, and what the output is drawn for: whether stdout is a terminal, its size,
  its encoding, and the environment variables rich reads (``COLUMNS``, ``NO_COLOR``, ``TERM``, ...).

Runs with side effects or another machine's answer are never cached (``--render``, ``--scheduler``,
``--workers``, ``--help``), nor bad input or faults (exit 2 or 3). ``--no-cache`` or
``FLIGHTCHECK_RESULT_CACHE=0`` runs the command anyway (and does not store it). Entries live under
``$FLIGHTCHECK_CACHE/results`` (default ``~/.cache/flightcheck/results``, beside the compiled kernels
and the model file), one JSON file per key, written atomically; an entry that cannot be read or does
not match its own checksum is ignored and written again, never an error. A replayed run repeats the
first run's timing figures, and a line on stderr always says so.

For example::

    >>> applies(["explore", "--scenario", "burst4"], {})
    True
    >>> applies(["explore", "--scenario", "burst4", "--no-cache"], {}), applies(["check"], {})
    (False, False)
    >>> applies(["explore", "--render", "g.svg"], {}), applies(["explore"], {"FLIGHTCHECK_RESULT_CACHE": "0"})
    (False, False)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

FORMAT = 1
COMMANDS = ("explore",)
# Options whose run writes files, asks another machine, or prints help: never replayed.
UNCACHED_OPTIONS = ("--render", "--scheduler", "--workers", "--help")
NO_CACHE = "--no-cache"
SWITCH = "FLIGHTCHECK_RESULT_CACHE"
LIBRARIES = ("numpy", "networkx", "scipy", "numba", "rich", "typer")
# What rich reads to decide width, colour and terminal handling (rich/console.py), and Python's encoding.
OUTPUT_ENV = ("COLUMNS", "LINES", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE",
              "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "PYTHONIOENCODING", "PYTHONUTF8")
MAX_ENTRIES = 256
CACHED_STATUSES = (0, 1)  # a verdict; bad input (2) and faults (3) are run again


def applies(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the command line ``argv`` (without the program name) may be answered from the cache."""
    if not argv or argv[0] not in COMMANDS or environ.get(SWITCH, "1") == "0":
        return False
    for arg in argv[1:]:
        if arg == NO_CACHE or arg == "-h" or any(arg == o or arg.startswith(o + "=") for o in UNCACHED_OPTIONS):
            return False
    return True


def cache_dir(environ: Mapping[str, str]) -> Path:
    """The folder of the entries: ``$FLIGHTCHECK_CACHE/results``, default ``~/.cache/flightcheck/results``."""
    return Path(environ.get("FLIGHTCHECK_CACHE", Path.home() / ".cache" / "flightcheck")) / "results"


def source_digest() -> str:
    """SHA-256 of the path and text of every ``.py`` file of the flightcheck packages that are imported."""
    import flightcheck
    import flightcheck.checks
    import flightcheck.spec

    h = hashlib.sha256()
    for package in (flightcheck, flightcheck.spec, flightcheck.checks):
        for root in package.__path__:
            for path in sorted(Path(root).rglob("*.py")):
                h.update(f"{package.__name__}/{path.relative_to(root).as_posix()}\0".encode())
                h.update(path.read_bytes())
                h.update(b"\0")
    return h.hexdigest()


def _library_marks() -> list[Any]:
    """For each library of :data:`LIBRARIES`, its ``__init__``'s size and modification time (found, not
    imported: importing them is what the cache saves), so that an upgrade is a miss."""
    marks: list[Any] = []
    for name in LIBRARIES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            marks.append([name, None])
            continue
        st = os.stat(origin)
        marks.append([name, origin, st.st_size, st.st_mtime_ns])
    return marks


def _terminal(stream: Any) -> list[Any]:
    """Whether ``stream`` is a terminal, and its size when it is."""
    try:
        if not stream.isatty():
            return [False]
        size = os.get_terminal_size(stream.fileno())
        return [True, size.columns, size.lines]
    except (AttributeError, OSError, ValueError):
        return [None]


def entry_key(argv: Sequence[str], environ: Mapping[str, str]) -> str:
    """The key of the run of ``argv``: see the module's docstring for what it covers."""
    facts = {
        "format": FORMAT,
        "argv": list(argv),
        "python": sys.version,
        "prefix": sys.prefix,
        "sources": source_digest(),
        "libraries": _library_marks(),
        "stdout": _terminal(sys.stdout) + [getattr(sys.stdout, "encoding", None)],
        "stdin": _terminal(sys.stdin),
        "env": {name: environ.get(name) for name in OUTPUT_ENV},
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def _checksum(status: int, stdout: str) -> str:
    return hashlib.sha256(f"{status}\0{stdout}".encode("utf-8", "surrogatepass")).hexdigest()


def load(path: Path) -> Optional[tuple[int, str]]:
    """The status and stdout kept at ``path``, or None when there is none or it is damaged in any way."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        status, stdout = entry["status"], entry["stdout"]
        if (not isinstance(entry, dict) or entry.get("format") != FORMAT or type(status) is not int
                or status not in CACHED_STATUSES
                or not isinstance(stdout, str) or entry.get("sha256") != _checksum(status, stdout)):
            return None
        return status, stdout
    except (OSError, ValueError, TypeError, KeyError, UnicodeError):
        return None  # a damaged entry is a miss: the run is done again and the entry rewritten


def store(path: Path, status: int, stdout: str) -> None:
    """Keep ``status`` and ``stdout`` at ``path`` (written to a temporary file, then renamed, so that a reader
    never sees half an entry); a folder that cannot be written leaves the run uncached, not failed."""
    entry = {"format": FORMAT, "status": status, "stdout": stdout, "sha256": _checksum(status, stdout)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except (OSError, ValueError, UnicodeError):
        pass


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` most recently written entries (each code edit makes new keys)."""
    entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)


class _Tee:
    """A text stream that copies what is written to it into ``parts`` and passes everything to ``stream``
    (so rich sees the same terminal, encoding and file number as without it)."""

    def __init__(self, stream: Any, parts: list[str]) -> None:
        self._stream = stream
        self._parts = parts

    def write(self, text: str) -> int:
        self._parts.append(text)
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def run(argv: Sequence[str], command: Callable[[], Any], environ: Mapping[str, str] = os.environ) -> None:
    """Answer ``argv`` from the cache, or run ``command`` (which exits, as a typer app does) and keep its
    stdout and status. Always ends by raising :class:`SystemExit` with the run's status."""
    try:
        path = cache_dir(environ) / f"{entry_key(argv, environ)}.json"
    except (OSError, RuntimeError, ValueError):  # no home folder, an unreadable source file: run it uncached
        command()
        raise SystemExit(0)
    hit = load(path)
    if hit is not None:
        status, stdout = hit
        sys.stdout.write(stdout)
        sys.stdout.flush()
        # Always said (on stderr, so stdout stays the first run's bytes): the replayed figures include the
        # first run's timings, and a reader must not take them for this run's.
        sys.stderr.write("(replayed from flightcheck's result cache, timings included; --no-cache runs it again)\n")
        raise SystemExit(status)
    parts: list[str] = []
    real = sys.stdout
    sys.stdout = _Tee(real, parts)
    ended: Any = None  # stays None when the command raises anything but an exit: nothing is kept
    try:
        command()
        ended = 0
    except SystemExit as done:
        ended = done.code if done.code is not None else 0
        raise
    finally:
        sys.stdout = real
        if type(ended) is int and ended in CACHED_STATUSES:
            store(path, ended, "".join(parts))
    raise SystemExit(0)
