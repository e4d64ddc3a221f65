"""`probe --url` against other engines: llama-cpp-python's OpenAI-compatible server over the same
SmolLM2 GGUF, started in a subprocess from its own virtual environment (scripts/setup_bench_peer.sh), and
mlx-lm's server over the same weights (scripts/setup_mlxlm_peer.sh).

What that server offers the probe (llama-cpp-python 0.3.36): no token-id prompts (a 500 validation
error, so the probe falls back to text), no usage in a stream, no ``timings`` (those are llama.cpp's
own C++ server's), no /metrics. So every verdict is the TTFT estimate, read per request: the server
serves one request at a time, and the probe reads each request's own time to its first token. What it does: one ``Llama``
object behind a lock serves one request at a time, and each request reuses the longest common prefix
with the tokens the previous request left in the KV cache. Its verbose log says so per request
(``Llama.generate: N prefix-match hit, remaining M prompt tokens to eval``), which is the ground truth
the test holds the estimate against: every shared page is computed once per shape.

``--interrupt_requests False`` is required: by default a request arriving while another streams stops
that stream (measured: 3 of 4 streams of a burst ended after one empty chunk, with no error).

mlx-lm (0.32.2) reports ``usage.prompt_tokens_details.cached_tokens`` per request, so its readings are
per request; what it does with a cold burst is a race (requests queued before the first prefill starts
are batched and all compute; later ones find all but the last prompt token cached), so the probe names
the outcome per repeat. Its test needs the model folder scripts/gguf_to_hf.py writes
(``$FLIGHTCHECK_MLXLM_MODEL`` or ``.peer-models/smollm2-hf``) and mlx-lm's venv
(``$FLIGHTCHECK_MLXLM_PYTHON``, ``.venv-mlxlm`` or /work/venvs/mlxlm).

Skipped, with the reason, when the peer's Python (``$FLIGHTCHECK_PEER_PYTHON``, ``.venv-peer`` beside
the repository, or /work/venvs/peer) or the model file is missing. Short by default (one repeat);
FLIGHTCHECK_SLOW=1 runs three.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from flightcheck.checks.outside.probe import Options
from flightcheck.checks.outside.run import probe_url
from flightcheck.checks.outside.verdict import SOURCE_TIMING
from switches import SLOW  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120
SHARED_TOKENS = 64          # the probe's 4 shared pages of 16 (text prompts: about a token per word)


def peer_python() -> Path | None:
    """The peer venv's Python: $FLIGHTCHECK_PEER_PYTHON, else .venv-peer beside the repo, else /work/venvs/peer."""
    chosen = os.environ.get("FLIGHTCHECK_PEER_PYTHON")
    candidates = [Path(chosen)] if chosen else [REPO / ".venv-peer/bin/python", Path("/work/venvs/peer/bin/python")]
    return next((p for p in candidates if p.exists()), None)


def model_file() -> Path | None:
    from flightcheck.impl.model_file import ModelFileError, locate

    try:
        return locate()
    except ModelFileError:
        return None


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def wait_ready(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the peer server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/v1/models")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"the peer server did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def served(argv: list[str], port: int, log: Path, env: dict | None = None):
    """A peer server started from ``argv`` (its output in ``log``), its URL while it answers on ``port``,
    and always stopped afterwards."""
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        wait_ready(proc, port, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def evaluations(log_text: str) -> list[tuple[int, int]]:
    """(tokens reused from the previous request's KV, tokens evaluated) per completion, from the verbose log:
    a completion with no prefix-match line evaluated its whole prompt (llama_perf's 'prompt eval ... / N tokens')."""
    out, hit = [], None
    for line in log_text.splitlines():
        found = re.search(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+)", line)
        if found:
            hit = (int(found[1]), int(found[2]))
            continue
        found = re.search(r"prompt eval time = .*/\s*(\d+) tokens", line)
        if found:
            out.append(hit if hit is not None else (0, int(found[1])))
            hit = None
    return out


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    python, model = peer_python(), model_file()
    if python is None:
        pytest.skip("llama-cpp-python's server is not installed: run scripts/setup_bench_peer.sh "
                    "(or set FLIGHTCHECK_PEER_PYTHON to its venv's python)")
    if model is None:
        pytest.skip("the SmolLM2 GGUF is not in flightcheck's cache (nor $FLIGHTCHECK_MODEL)")
    if subprocess.run([str(python), "-c", "import llama_cpp.server"], capture_output=True).returncode != 0:
        pytest.skip(f"{python} cannot import llama_cpp.server")
    port, log = free_port(), tmp_path_factory.mktemp("peer") / "server.log"
    with served([str(python), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port",
                 str(port), "--n_threads", "1", "--n_ctx", "8192", "--interrupt_requests", "False",
                 "--verbose", "True"], port, log) as url:
        yield url, log


def test_llama_cpp_python_serializes_and_reuses_the_previous_prefix(peer):
    url, log = peer
    repeats = 3 if SLOW else 1
    report = probe_url(url, None, Options(repeats=repeats, seed=5, timeout_s=120.0))
    shapes = {s.shape: s for s in report.shapes}

    # What the server offers: text prompts only, no per-request or counter reading, so every verdict is
    # the TTFT estimate and says so.
    assert report.prompts == "text"
    assert "no cache counters at all: computations are estimated from timing alone" in report.sources
    for shape in report.shapes:
        assert shape.source == SOURCE_TIMING and not shape.exact, (shape.shape, shape.source)
        assert shape.verdict.endswith("(estimate)"), shape.verdict
        assert all(c is None for run in shape.cached for c in run)

    # The ground truth, from the server's own log: per round, the five cold prompts (identical-2/4/8,
    # shared-prefix-8, late-arrival's first) are evaluated whole; every other completion (the bursts'
    # followers, the late arrival, each warm control) took at least the shared part from the previous
    # request's KV: one computation per shared page in every shape.
    evals = [e for e in evaluations(log.read_text()) if e[0] + e[1] > SHARED_TOKENS]  # past discovery's short ones
    whole = [e for e in evals if e[0] == 0]
    assert len(whole) == 5 * repeats, evals
    assert all(reused >= SHARED_TOKENS for reused, _ in evals if reused), evals
    assert len(evals) == repeats * (2 + 4 + 8 + 8 + 2 + 5), evals  # every request and control reached the model

    # The estimate reads what the log says: the server served each burst one request at a time (every
    # first token after the previous reply ended), so each request's own time to its first token is read,
    # not its place in the queue: one computation of the shared pages in every shape.
    for name in ("identical-2", "identical-4", "identical-8", "shared-prefix-8"):
        shape = shapes[name]
        assert shape.computations_per_page == [1, 1, 1, 1] and shape.kind == "coalesces", (name, shape.evidence)
        assert any("one request at a time" in line for line in shape.evidence), shape.evidence
    assert shapes["late-arrival"].kind == "recovered", shapes["late-arrival"].evidence


def mlxlm_setup() -> tuple[Path, Path] | None:
    """mlx-lm's venv Python and the model folder, when both are there."""
    py = os.environ.get("FLIGHTCHECK_MLXLM_PYTHON")
    pys = [Path(py)] if py else [REPO / ".venv-mlxlm/bin/python", Path("/work/venvs/mlxlm/bin/python")]
    folder = Path(os.environ.get("FLIGHTCHECK_MLXLM_MODEL", REPO / ".peer-models/smollm2-hf"))
    python = next((p for p in pys if p.exists()), None)
    if python is None or not (folder / "config.json").is_file():
        return None
    return python, folder


@pytest.fixture(scope="module")
def mlxlm(tmp_path_factory):
    found = mlxlm_setup()
    if found is None:
        pytest.skip("mlx-lm's server is not set up: run scripts/setup_mlxlm_peer.sh (or set FLIGHTCHECK_MLXLM_PYTHON "
                    "and FLIGHTCHECK_MLXLM_MODEL)")
    python, folder = found
    port, tmp = free_port(), tmp_path_factory.mktemp("mlxlm")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp), "HF_HUB_OFFLINE": "1", "OPENBLAS_NUM_THREADS": "1"}
    blas = Path("/usr/lib/x86_64-linux-gnu/libopenblas.so.0")
    if blas.exists():  # the fast BLAS, as flightcheck's own engine loads it (impl/blas.py)
        env["LD_PRELOAD"] = str(blas)
    log = tmp / "server.log"
    with served([str(python), "-m", "mlx_lm.server", "--model", str(folder), "--host", "127.0.0.1", "--port",
                 str(port)], port, log, env) as url:
        yield url


def test_mlx_lm_is_read_per_request_and_recovers_a_late_arrival(mlxlm):
    report = probe_url(mlxlm, None, Options(repeats=3 if SLOW else 1, seed=5, timeout_s=300.0))
    shapes = {s.shape: s for s in report.shapes}
    assert report.prompts == "text"
    for shape in report.shapes:  # per request, from the server's own counter; text prompts: pages approximate
        assert shape.source == "usage.prompt_tokens_details.cached_tokens" and not shape.exact, shape.source
        assert all(isinstance(c, int) for run in shape.cached for c in run)
    for name in ("identical-2", "identical-4", "identical-8", "shared-prefix-8"):
        shape = shapes[name]
        for run in shape.per_repeat:  # each repeat one outcome of the race, every page alike
            assert len(set(run)) == 1 and 1 <= run[0] <= shape.num_requests, (name, shape.per_repeat)
        if len({tuple(r) for r in shape.per_repeat}) > 1:
            assert shape.kind == "varies", shape.verdict
    assert shapes["late-arrival"].kind == "recovered", shapes["late-arrival"].evidence
