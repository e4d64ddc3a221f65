"""check's items on Dask: a real `dask scheduler` and two `dask worker` processes on 127.0.0.1.

The results through the cluster are the recorded ones (checks/suite/expectations.json) and the same as
in one process; a worker killed mid-run changes nothing; a scheduler that cannot be reached or goes
away, or an address whose peer is no Dask scheduler, is bad input (exit 2, one line), never a partial
verdict or a hang.
"""

import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
from typer.testing import CliRunner

from flightcheck.checks.cli.app import app
from flightcheck.checks.cluster import Cluster, ClusterError
from flightcheck.checks.suite.expect import Expectations
from flightcheck.checks.suite.context import scenario_key as _key
from flightcheck.checks.suite.stage_explore import explore_one as _explore_one
from flightcheck.spec.scenario import SCENARIOS, policy_grid
from switches import SLOW


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(*args: str) -> subprocess.Popen:
    # A session of its own, so that killing it kills the worker and its nanny together.
    return subprocess.Popen(["dask", *args], start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(30)


@pytest.fixture
def dask_cluster():
    """A scheduler and two single-threaded workers; yields (address, scheduler, workers)."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = _spawn("scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
    workers = [_spawn("worker", address, "--nthreads", "1", "--memory-limit", "0", "--no-dashboard")
               for _ in range(2)]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, scheduler, workers
    finally:
        for p in [*workers, scheduler]:
            _kill(p)


def _items(*names):
    return [s for n in names for s in policy_grid(SCENARIOS[n])]


def _recorded(items):
    explore = Expectations.load().recorded["explore"]
    return [(_key(s), explore[_key(s)]) for s in items]


def test_results_on_the_cluster_are_the_recorded_ones_and_survive_a_killed_worker(dask_cluster):
    address, _scheduler, workers = dask_cluster
    items = _items("burst3-expire", "burst3-abort", "burst2-evict")
    out = {}
    with Cluster(address) as cluster:
        assert cluster.parts == 2
        run = threading.Thread(target=lambda: out.setdefault("rows", cluster.map(_explore_one, items)))
        run.start()
        time.sleep(1.5)  # both workers are busy with the first items
        _kill(workers[0])
        run.join(180)
        assert not run.is_alive()
    assert [(key, states) for key, _ok, states, *_ in out["rows"]] == _recorded(items)
    assert all(ok for _key_, ok, *_ in out["rows"])


def test_check_runs_its_stage_on_the_scheduler_and_every_figure_is_the_recorded_one(dask_cluster):
    from flightcheck.checks.suite.stage_explore import explore_items as _explore_items

    address, _scheduler, _workers = dask_cluster
    r = CliRunner().invoke(app, ["check", "--quick", "--stage", "explore", "--no-report", "--json", "--scheduler", address])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    # Each row compares its state count and fingerprint with the recorded ones: ok means identical.
    assert out["verdict"] == "ok" and all(row["ok"] for row in out["rows"])
    assert [row["item"] for row in out["rows"]] == [_key(s) for s in _explore_items(True)]


def test_a_scheduler_that_goes_away_is_an_error_not_a_partial_result(dask_cluster):
    address, scheduler, _workers = dask_cluster
    items = _items("burst3-expire", "burst3-abort")
    out = {}

    def run(cluster):
        try:
            out["rows"] = cluster.map(_explore_one, items)
        except ClusterError as error:
            out["error"] = str(error)

    with Cluster(address) as cluster:
        t = threading.Thread(target=run, args=(cluster,))
        t.start()
        time.sleep(1.0)
        _kill(scheduler)
        t.join(120)
        assert not t.is_alive()
    assert "rows" not in out and out["error"].startswith(f"--scheduler: the Dask scheduler at {address} went away")


def test_an_unreachable_scheduler_is_bad_input_before_anything_runs(monkeypatch):
    from flightcheck.checks import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2)
    r = CliRunner().invoke(app, ["check", "--stage", "explore", "--no-report", "--scheduler", f"tcp://127.0.0.1:{_free_port()}"])
    assert r.exit_code == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:" in r.output, r.output
    r = CliRunner().invoke(app, ["check", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"])
    assert r.exit_code == 2 and "--workers sizes the embedded cluster" in r.output


def test_one_worker_runs_in_this_process_and_the_embedded_cluster_keeps_the_order():
    items = _items("burst2", "burst2-abort")
    with Cluster(workers=1) as one:
        assert [r[:4] for r in one.map(_explore_one, items)][0][0] == _key(items[0])
        assert one._client is None  # no Dask at all
    with Cluster(workers=2) as two:
        got = two.map(_explore_one, items)
        assert two.parts == 2 and two._client is not None
    assert [(key, states) for key, _ok, states, *_ in got] == _recorded(items)


def test_a_mutation_sample_on_the_cluster_gives_the_local_verdicts_and_survives_a_killed_worker(dask_cluster):
    from flightcheck.checks.mutate.plan import plan, resolve_target
    from flightcheck.checks.mutate.runner import RunOptions, run_mutants

    address, _scheduler, workers = dask_cluster
    p = plan([resolve_target("impl/coordinator.py")], sample=6, seed=3)
    opts = RunOptions(stages=("flightcheck.checks.suite.stage_conform:probe_rows",), quick=True, jobs=2)
    local = run_mutants(p.to_run, p.paths, opts, 300)   # the embedded cluster: threads of this process
    out = {}
    run = threading.Thread(target=lambda: out.setdefault("outcomes", run_mutants(p.to_run, p.paths, opts, 300,
                                                                                   scheduler=address)))
    run.start()
    time.sleep(1.0)  # the workers' first mutants are running
    _kill(workers[0])
    run.join(240)
    assert not run.is_alive()
    assert [(o.id, o.status) for o in out["outcomes"]] == [(o.id, o.status) for o in local]
    assert {o.status for o in local} >= {"failed", "survived"}  # the sample holds both verdicts
    r = CliRunner().invoke(app, ["mutate", "--file", "impl/coordinator.py", "--sample", "2", "--no-baseline",
                                 "--scheduler", f"tcp://127.0.0.1:{_free_port()}", "--stage",
                                 "flightcheck.checks.suite.stage_conform:probe_rows"])
    assert r.exit_code == 2 and "cannot reach the Dask scheduler" in r.output, r.output


def _safety(spec):
    from flightcheck.checks.explore.distributed import KINDS
    from flightcheck.spec.properties import properties_for

    return [p for p in properties_for(spec) if p.kind in KINDS]


def _summary(result):
    return (result.stats.states, result.stats.edges, result.stats.depth,
            [(p.name, p.holds, len(p.counterexample) if p.counterexample else None) for p in result.properties])


@pytest.mark.slow
def test_the_distributed_explorer_matches_one_machine_and_survives_a_killed_worker(dask_cluster):
    from flightcheck.checks.explore.distributed import explore_distributed
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCALE_SCENARIOS
    from flightcheck.spec.variants import VARIANTS

    address, _scheduler, workers = dask_cluster
    burst7 = FlightSpec(SCALE_SCENARIOS["burst7"])
    specs = [FlightSpec(SCALE_SCENARIOS["burst6"]), VARIANTS["stranded-followers"].demo_spec(),
             VARIANTS["forget-at-release"].demo_spec()]
    if SLOW:  # the short version compares burst7 only after the kill below
        specs.insert(1, burst7)
    alone = {id(spec): explore(spec, properties=_safety(spec)) for spec in (specs if SLOW else [*specs, burst7])}
    with Cluster(address) as cluster:
        for spec in specs:
            one = alone[id(spec)]
            two = explore_distributed(spec, cluster)
            assert two.extra["workers"] == 2 and _summary(two) == _summary(one), spec.scenario.name
            assert sum(w["states"] for w in two.extra["per_worker"]) == one.stats.states
            here = explore_distributed(spec, Cluster(workers=1))  # one partition, in this process
            assert [p.counterexample.actions for p in two.violations] == \
                [p.counterexample.actions for p in here.violations]  # the paths do not depend on the workers
        assert _summary(two)[3][6] == ("termination_validated", False, 9)  # forget-at-release's 9-step path
        out = {}
        run = threading.Thread(target=lambda: out.setdefault("r", explore_distributed(burst7, cluster)))
        run.start()
        time.sleep(0.8)  # mid-search
        _kill(workers[0])
        run.join(180)
        assert not run.is_alive()
        assert _summary(out["r"]) == _summary(alone[id(burst7)])
        assert out["r"].extra["workers"] == 1  # started again on the worker that remained


def test_explore_with_workers_gives_the_single_machine_verdict_and_refuses_what_it_cannot_do(tmp_path):
    one = json.loads(CliRunner().invoke(app, ["explore", "--scenario", "burst2-abort", "--safety-only", "--json"]).output)
    r = CliRunner().invoke(app, ["explore", "--scenario", "burst2-abort", "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["engine"] == "distributed" and out["stats"]["states"] == one["stats"]["states"]
    assert [p["name"] for p in out["properties"]] == [p["name"] for p in one["properties"] if p["kind"] != "sometimes"]
    r = CliRunner().invoke(app, ["explore", "--variant", "forget-at-release", "--workers", "1", "--json"])
    assert r.exit_code == 1 and json.loads(r.output)["counterexample"][-1].startswith("finish(")
    assert len(json.loads(r.output)["counterexample"]) == 9
    for extra, message in ((["--render", str(tmp_path / "g.svg")], "leave out --render"),
                           (["--scheduler", "tcp://127.0.0.1:1"], "--workers sizes the embedded cluster")):
        r = CliRunner().invoke(app, ["explore", "--workers", "2", *extra])
        assert r.exit_code == 2 and message in r.output, r.output


def test_progress_is_reported_item_by_item_wherever_the_items_run():
    for workers in (1, 2):
        seen = []
        with Cluster(workers=workers) as cluster:
            cluster.on_progress = lambda *a: seen.append(a)
            assert cluster.map(abs, [-1, -2, -3]) == [1, 2, 3]
        assert [done for done, _total, _running in seen] == [1, 2, 3] and {t for _d, t, _r in seen} == {3}
        assert seen[-1][2] == 0 and all(0 <= running <= workers for _d, _t, running in seen)


def test_every_way_dask_says_an_actor_is_gone_restarts_the_search_and_nothing_else_does():
    from flightcheck.checks.explore.distributed import worker_lost

    assert worker_lost(RuntimeError("Worker holding Actor was lost.  Status: error"))  # a new call
    assert worker_lost(OSError("Unable to contact Actor's worker"))                    # a call in flight
    assert not worker_lost(RuntimeError("a bug in the partition"))
    assert not worker_lost(ValueError("bad"))
    assert not worker_lost(ClusterError("the scheduler went away"))


@pytest.fixture
def stranger():
    """A loopback peer that is not a Dask scheduler: ``stranger(reply)`` listens and, to every connection it
    accepts, writes ``reply`` (``b""``: says nothing) and holds it open; returns its address."""
    servers, conns = [], []

    def start(reply: bytes) -> str:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def serve():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:  # closed at teardown
                    return
                conns.append(conn)
                if reply:
                    conn.sendall(reply)

        threading.Thread(target=serve, daemon=True).start()
        return f"tcp://127.0.0.1:{server.getsockname()[1]}"

    yield start
    for s in [*conns, *servers]:
        s.close()


def test_a_peer_that_accepts_and_stays_silent_is_an_error_naming_it_not_a_hang(stranger, monkeypatch):
    from flightcheck.checks import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1)
    monkeypatch.setattr(cluster, "PROTOCOL_TIMEOUT", 1)
    address = stranger(b"")
    out = {}

    def connect():
        try:
            with Cluster(address):
                out["connected"] = True
        except ClusterError as error:
            out["error"] = str(error)

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(60)  # Dask's own connect waits on this peer's handshake for ever
    assert not t.is_alive() and "connected" not in out
    assert out["error"].startswith(f"--scheduler: {address} accepted the connection but sent no Dask handshake")


@pytest.mark.parametrize("reply", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",  # an HTTP server
                                   b"\x05\x00\x00\x00\x00\x00\x00\x00hello",                  # a short frame of junk
                                   bytes(range(256)) * 4], ids=["http", "junk-frame", "bytes"])
def test_a_peer_that_does_not_speak_dask_is_bad_input_in_one_line(stranger, reply):
    address = stranger(reply)
    r = CliRunner().invoke(app, ["explore", "--scenario", "burst2-abort", "--scheduler", address])
    # Before the probe: exit 3, Dask sizing a buffer from the first 8 bytes ("Unable to allocate 3.07 EiB").
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"error: --scheduler: {address} does not speak Dask's protocol: "
                                             "is it a Dask scheduler's address?"]


def test_a_scheduler_killed_mid_run_is_one_line_on_stderr_and_no_traceback(dask_cluster):
    from distributed import Client

    address, scheduler, workers = dask_cluster
    run = subprocess.Popen(["flightcheck", "check", "--stage", "explore", "--no-report", "--scheduler", address],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with Client(address, timeout=60) as client:
            deadline = time.monotonic() + 120
            while not any(client.processing().values()):  # the run's items have reached the workers
                assert time.monotonic() < deadline and run.poll() is None, run.communicate()
                time.sleep(0.1)
        for w in workers:  # stopped, they finish nothing more: the run is still mid-map when the scheduler dies
            os.killpg(w.pid, signal.SIGSTOP)
        _kill(scheduler)
        _out, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 2, err
    # Before: about 30 lines of Dask's logged tracebacks around (and after) the one line.
    assert "Traceback" not in err and "distributed." not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --scheduler: the Dask scheduler at {address} went away"), err
