"""``/metrics``: the engine's counters, the page pool and the request histograms, in Prometheus form.

Built with ``prometheus_client`` on a registry of the server's own (several servers in one process,
as in the tests, do not collide). The engine's counters are read generically: every field of the
scheduler's ``Counters`` becomes ``flightcheck_engine_<field>_total`` (so counters the engine gains
later appear without a change here; ``num_failures`` becomes ``flightcheck_engine_failed_requests_total``,
as the server's own ``flightcheck_engine_failures_total`` counts exceptions by kind), taken from the
loop's last snapshot, so a scrape never waits for a forward pass. Gauges: pages by state (free, cached
and unreferenced, in use; they sum to the pool), live requests by phase, the records kept. Histograms:
time to first token and completion time, by the server's own clock of each request (from its arrival at
the engine). Counters kept here: requests by finish reason, HTTP errors by status, engine failures by
kind (``conformance`` when the online monitor rejected an event).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from flightcheck.impl.engine import Result
from flightcheck.impl.request import FINISH_ABORTED

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: from a few ms (the tiny model) to minutes (long real-model completions on 2 cores).
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)


# Why renamed: ``num_failures`` (requests whose forward pass failed) would be ``flightcheck_engine_failures``,
# the name the server's own counter of engine exceptions by kind already has (documented, scraped), and
# one name must be one family: two HELP/TYPE blocks make the exposition invalid.
_RENAMED = {"num_failures": "failed_requests"}


def engine_metric_name(counter: str) -> str:
    """The /metrics family of one of the scheduler's ``Counters`` fields (without ``_total``)."""
    return f"flightcheck_engine_{_RENAMED.get(counter, counter.removeprefix('num_'))}"


class _EngineCollector(Collector):
    def __init__(self, snapshot: Callable[[], object]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[object]:
        snap = self._snapshot()
        for name, value in snap.counters.items():
            family = CounterMetricFamily(engine_metric_name(name),
                                         f"the engine's counter {name} (impl/scheduler.py Counters)")
            family.add_metric([], value)
            yield family
        pages = GaugeMetricFamily("flightcheck_pages", "KV pages by state: free, cached (unreferenced, "
                                  "reusable until evicted), in_use (referenced by a running request)", labels=["state"])
        for state, value in snap.pages.items():
            pages.add_metric([state], value)
        yield pages
        live = GaugeMetricFamily("flightcheck_live_requests", "live requests by phase", labels=["phase"])
        for phase in ("blocked", "waiting", "prefill", "decode"):
            live.add_metric([phase], snap.phases.get(phase, 0))
        yield live
        kept = GaugeMetricFamily("flightcheck_records_kept", "request records and events held in memory "
                                 "(bounded by the server's history)", labels=["kind"])
        kept.add_metric(["requests"], snap.num_requests_kept)
        kept.add_metric(["events"], snap.num_events_kept)
        yield kept


class ServerMetrics:
    """The server's registry; ``observe`` runs on the engine thread for each terminated request."""

    def __init__(self, snapshot: Callable[[], object]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_EngineCollector(snapshot))
        self.requests = Counter("flightcheck_requests", "terminated requests by finish reason "
                                "(eos, stop, length, abort)", ["finish_reason"], registry=self.registry)
        self.ttft = Histogram("flightcheck_ttft_seconds", "time to first token", buckets=_BUCKETS,
                              registry=self.registry)
        self.completion = Histogram("flightcheck_completion_seconds", "time from arrival to the last token",
                                    buckets=_BUCKETS, registry=self.registry)
        self.http_errors = Counter("flightcheck_http_errors", "error replies by HTTP status", ["status"],
                                   registry=self.registry)
        self.failures = Counter("flightcheck_engine_failures", "exceptions out of the engine by kind "
                                "(conformance: the online monitor rejected an event)", ["kind"], registry=self.registry)
        self.streams = Counter("flightcheck_streams_closed", "streaming replies closed, by how: done, "
                               "error, disconnect", ["how"], registry=self.registry)
        for reason in ("eos", "stop", "length", "abort"):
            self.requests.labels(reason)
        self.failures.labels("conformance")
        self.failures.labels("internal")

    def observe(self, result: Result) -> None:
        self.requests.labels(result.finish_reason or "unknown").inc()
        if result.ttft_s is not None:
            self.ttft.observe(result.ttft_s)
        if result.completion_s is not None and result.finish_reason != FINISH_ABORTED:
            self.completion.observe(result.completion_s)

    def render(self) -> bytes:
        return generate_latest(self.registry)
