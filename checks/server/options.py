"""Every ``flightcheck serve`` option, what it changes and how the server stage checks it: a row each.

:data:`ROWS` holds, per option that changes what the server does, one row per value worth telling apart
(every value of the policy options), each a probe (:mod:`.option_probes`, :mod:`.policy_probes`) run
against the real server started by ``serve``'s own assembly with that option set and every other at
serve's default (:class:`~.probe_server.ProbeServer`). A few rows set a second option the first needs
to be seen (``--release on-completion`` keeps a flight open while its leader decodes); the row's name
says so. :data:`NOT_BEHAVIOUR` lists the options that change nothing a client could observe, each with
its reason. tests/server/test_server_options.py derives the options from the command's declaration: an
option in neither fails it, and so does a row that still passes when the server ignores its option.

For example::

    >>> by_item = {r.item: r for r in ROWS}
    >>> by_item["serve --api-key KEY: missing 401, wrong 401, right 200 (/v1/models, completions, chat)"].option
    'api_key'
    >>> from flightcheck.spec.knobs import KNOB
    >>> {r.settings["coordination"] for r in ROWS if r.option == "coordination"} == set(KNOB["coordination"].choices)
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flightcheck.checks.server import option_probes as http
from flightcheck.checks.server import policy_probes as policy
from flightcheck.checks.server.probe_server import EVENTS_FILE, ProbeFailed, ProbeServer

# How a row's name shows a value that is not worth printing.
_SHOWN = {"api_key": "KEY", "events": "FILE"}


def flags(settings: dict[str, Any]) -> str:
    """``{"leader_loss": "promote", "monitor": True}`` -> ``--leader-loss promote --monitor``."""
    out = []
    for name, value in settings.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        else:
            out.append(f"{flag} {_SHOWN.get(name, value)}")
    return " ".join(out)


@dataclass(frozen=True)
class OptionRow:
    """One row of the server stage: ``option`` set as ``settings`` say (it first, then any option it needs
    to be seen), and the probe checking what it changes, said in ``checks``."""

    option: str
    settings: dict[str, Any]
    checks: str
    probe: Callable[[ProbeServer], str] = field(compare=False)
    chat: bool = False  # served with a tokenizer, so that chat can be (the tiny model takes token ids)

    @property
    def item(self) -> str:
        """The row's name: ``serve FLAGS: what it checks``."""
        return f"serve {flags(self.settings)}: {self.checks}"


def _row(option: str, value: Any, checks: str, probe: Callable[[ProbeServer], str], *, chat: bool = False,
         **needs: Any) -> OptionRow:
    return OptionRow(option, {option: value, **needs}, checks, probe, chat)


ON_COMPLETION = "on-completion"
ROWS: tuple[OptionRow, ...] = (
    _row("api_key", "sk-flightcheck-probe", "missing 401, wrong 401, right 200 (/v1/models, completions, chat)",
         http.api_key, chat=True),
    _row("max_body_bytes", 2048, "2048 B served, 2049 B refused 413, in one write and chunked", http.max_body_bytes),
    _row("body_timeout", 0.5, "a body stalled mid-way gets 408 in time", http.body_timeout),
    _row("header_timeout", 0.5, "unfinished or no headers: the connection closed in time", http.header_timeout),
    _row("keep_alive", 0.5, "an idle keep-alive connection closed in time", http.keep_alive),
    _row("max_connections", 4, "the longest idle connection gives way to a new one", http.max_connections),
    _row("max_connections_per_client", 3, "one address's longest idle connection gives way to its new one",
         http.max_connections_per_client),
    _row("shutdown_timeout", 0.5, "a reply still open at shutdown cut in time", http.shutdown_timeout),
    _row("default_max_tokens", 5, "a chat naming no max_tokens generates 5", http.default_max_tokens, chat=True),
    _row("history", 2, "2 finished requests' records kept", http.history),
    _row("event_history", 10, "10 events kept in memory", http.event_history),
    _row("events", EVENTS_FILE, "the log written and flightcheck validate accepts it", http.events),
    _row("monitor", True, "a planted departure counted in /metrics, /health degraded", http.monitor),
    _row("coordination", "none", "a burst of 3 identical requests each computes its prompt", policy.coordination),
    _row("coordination", "single-flight", "a burst of 3 identical requests: one leader, 2 followers",
         policy.coordination),
    _row("coordination", "prefix", "a request sharing 4 pages waits via the burst's flight", policy.coordination),
    _row("min_shared_pages", 3, "a 4-page overlap waited for, a 2-page one not", policy.min_shared_pages,
         coordination="prefix"),
    _row("release", "after-prefill", "followers released before the leader finishes", policy.release,
         events=EVENTS_FILE),
    _row("release", ON_COMPLETION, "followers released after the leader finishes", policy.release,
         events=EVENTS_FILE),
    _row("publication", "incremental", "a decoding leader's pages are in the cache", policy.publication,
         release=ON_COMPLETION),
    _row("publication", ON_COMPLETION, "a decoding leader's pages are not in the cache yet", policy.publication,
         release=ON_COMPLETION),
    _row("leader_loss", "release-all", "a lost leader's 2 followers released", policy.leader_loss,
         release=ON_COMPLETION),
    _row("leader_loss", "promote", "a lost leader's first follower promoted", policy.leader_loss,
         release=ON_COMPLETION),
    _row("follower_wait_bound", 2, "a blocked follower expires and computes", policy.follower_wait_bound,
         release=ON_COMPLETION),
    _row("prefix_caching", False, "a repeated prompt recovers nothing", policy.prefix_caching, coordination="none"),
    _row("max_running", 1, "a burst of 3 different prompts runs one at a time", policy.max_running,
         events=EVENTS_FILE),
    _row("prefill_chunk_pages", 1, "a 69-token prompt prefilled a page a pass", policy.prefill_chunk_pages,
         events=EVENTS_FILE),
    _row("num_pages", 16, "16 pages in /metrics, a prompt needing more refused", policy.num_pages),
    _row("max_context", 128, "/v1/models says 128, a request past it refused", policy.max_context),
    _row("seed", 7, "an unseeded sampled request draws seed 7's tokens", policy.seed),
)

# The options the rows check, each once, in the rows' order.
OPTIONS: tuple[str, ...] = tuple(dict.fromkeys(row.option for row in ROWS))

# The options that change nothing a client of the server could observe, and why.
NOT_BEHAVIOUR: dict[str, str] = {
    "model": "which weights answer (smollm2 or tiny), not how the server behaves: every row serves the tiny model "
             "(the real one is the smollm2 stage's), and the server, limits and engine around it are the same",
    "host": "the address the socket binds (127.0.0.1 by default, as every row binds it); a request is served "
            "alike on any address",
    "port": "the TCP port the socket binds (every row binds 0, any free port); a request is served alike on any port",
}


def run_row(row: OptionRow) -> Any:
    """The stage's row of ``row``: the server started under its settings, its probe's verdict."""
    from flightcheck.checks.suite.job import Row, crashed_row
    from flightcheck.impl.server.launch import LaunchError

    started = time.perf_counter()
    evidence = {"option": row.option, "settings": {k: _SHOWN.get(k, v) for k, v in row.settings.items()}}
    try:
        server = ProbeServer(row.settings, chat=row.chat)
    except LaunchError as error:  # serve itself would exit 2 on these options: the row's settings are wrong
        return Row("server", row.item, False, f"serve refuses these options: {error}",
                   time.perf_counter() - started, evidence)
    except Exception as error:
        return crashed_row("server", row.item, error, time.perf_counter() - started)
    try:
        ok, detail = True, row.probe(server)
    except ProbeFailed as failure:
        ok, detail = False, str(failure)
    except (OSError, TimeoutError) as error:  # the server reset, closed or did not answer a plain request
        ok, detail = False, f"the server did not answer as HTTP: {type(error).__name__}: {error}"
    except Exception as error:
        return crashed_row("server", row.item, error, time.perf_counter() - started)
    finally:
        server.close()
    evidence["checked"] = detail
    return Row("server", row.item, ok, detail, time.perf_counter() - started, evidence)


def option_rows(options: list[str] | None = None, *, first_failure: bool = False) -> list[Any]:
    """A stage row per row of :data:`ROWS` (those of the serve options named in ``options``: all by default);
    with ``first_failure`` it stops at the first failing row."""
    rows = []
    for row in ROWS:
        if options is not None and row.option not in options:
            continue
        rows.append(run_row(row))
        if first_failure and not rows[-1].ok:
            break
    return rows


__all__ = ["NOT_BEHAVIOUR", "OPTIONS", "ROWS", "OptionRow", "flags", "option_rows", "run_row"]
