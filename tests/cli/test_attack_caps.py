"""The inputs that once exhausted memory, hung or crashed the process, run as a user runs them: the real
``flightcheck`` console script in a fresh process under an address-space cap and a time limit. Each must
end at once with exit 2 and one line: no MemoryError, no kill by the cap, no segfault, no hang.

(The in-process tests name each field; these hold the promise the in-process ones cannot: that nothing
is allocated from a number before it is checked.)"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess

import pytest

MEMORY_CAP = 3 << 30   # the address space one run may take; an unchecked 1e10-token arrival asked far more
TIME_LIMIT = 90        # seconds; each case ends in about two (the imports)
FLIGHTCHECK = shutil.which("flightcheck")


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    assert FLIGHTCHECK, "flightcheck is not installed (scripts/setup.sh installs it)"
    env = {**os.environ, "FLIGHTCHECK_CRASH_DIR": str(cwd or ".")}
    return subprocess.run([FLIGHTCHECK, *args], capture_output=True, text=True, timeout=TIME_LIMIT,
                          preexec_fn=_cap, env=env, cwd=cwd)


def one_error_line(p: subprocess.CompletedProcess, fragment: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr + p.stdout


ARRIVE = {"seq": 0, "action": "arrive", "request": 0, "role": "leader", "flight": 0, "input": "k"}


@pytest.mark.parametrize("tokens", [10_000_000_000, 1e15], ids=["1e10", "1e15-float"])
def test_a_huge_token_count_in_an_event_log(tmp_path, tokens):
    log = tmp_path / "run.events.jsonl"
    log.write_text(json.dumps({**ARRIVE, "num_tokens": tokens}) + "\n")
    one_error_line(run("workload", "--from-events", str(log), cwd=tmp_path), "num_tokens")


def test_a_100_mb_trace_line(tmp_path):
    trace = tmp_path / "trace.jsonl"
    with trace.open("w") as f:  # one valid request of 15 M hash ids (123 s and 4.3 GB before)
        f.write('{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [')
        f.write(",".join(["1234567"] * 15_000_000))
        f.write("]}\n")
    assert trace.stat().st_size > 100 * 10**6
    one_error_line(run("workload", str(trace), cwd=tmp_path), "trace.jsonl")


def program(**config) -> dict:
    return {"setup": {"config": {"max_running": 2, "num_pages": 8, **config},
                      "templates": [{"tokens": [1] * 20, "max_tokens": 2, "label": "A"}]},
            "ops": [["arrive", 0, 0.0, 0], ["step", 2]]}


@pytest.mark.parametrize("change, fragment", [
    (lambda p: p["setup"]["config"].__setitem__("num_pages", 10**8), "num_pages"),
    (lambda p: p["ops"].append(["step", 1_000_000_000]), "ops[2][1]"),
], ids=["10**8-pages", "a-billion-steps"])
def test_a_program_that_would_segfault_or_hang(tmp_path, change, fragment):
    p = program()
    change(p)
    path = tmp_path / "program.json"
    path.write_text(json.dumps(p))
    one_error_line(run("conform", "--replay", str(path), cwd=tmp_path), fragment)


@pytest.mark.parametrize("args", [("conform", "--replay"), ("mutate", "--from-results")], ids=["replay", "results"])
def test_whole_file_readers_refuse_a_fifo_and_dev_zero(tmp_path, args):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_error_line(run(*args, str(fifo), cwd=tmp_path), "pipe")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    one_error_line(run(*args, "/dev/zero", cwd=tmp_path), "/dev/zero")
