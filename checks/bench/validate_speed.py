"""How long ``flightcheck validate`` takes on a server's event log, and what ``serve --monitor`` costs.

Drives ``flightcheck serve --model tiny`` (random weights) as a real process with many concurrent
clients (threads of the ``openai`` client): bursts of identical prompts (flights), prompts sharing a
document (prefix pages), short prompts under a page, and clients that drop their stream after the
first chunk (the server aborts the request). The server writes its event log; then ``flightcheck
validate`` is timed on it, in a fresh process, as a user runs it.

    python -m flightcheck.checks.bench.validate_speed --requests 77 --out /tmp/vs      # ~1,500 events
    python -m flightcheck.checks.bench.validate_speed --requests 230 --out /tmp/vs     # ~4,500 events
    python -m flightcheck.checks.bench.validate_speed --requests 230 --monitor-overhead --out /tmp/vs
    python -m flightcheck.checks.bench.validate_speed --validate-only /tmp/vs/events-230.jsonl

``--monitor-overhead`` serves the same client load twice, without and with ``--monitor``, and prints
both wall times (and the requests per second). Every figure is wall-clock time on this machine.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

APP = [sys.executable, "-m", "flightcheck.checks.cli.app"]
VOCAB = 256


def class_tokens(c: int, num_tokens: int, vocab: int, prefix: list[int] = ()) -> list[int]:
    """Deterministic prompt tokens of class ``c`` (after ``prefix``, a shared document, when given)."""
    rng = random.Random(1_000_003 * (c + 1))
    out = list(prefix)
    while len(out) < num_tokens:
        out.append(rng.randrange(vocab))
    return out


def workload(num_requests: int, seed: int = 0) -> list[tuple[list[int], int, bool]]:
    """(prompt, max_tokens, drop after the first chunk) per request, in submission order."""
    rng = random.Random(seed)
    docs = [class_tokens(100 + d, rng.choice((48, 64, 80)), VOCAB) for d in range(4)]
    out: list[tuple[list[int], int, bool]] = []
    k = 0
    while len(out) < num_requests:
        kind = rng.random()
        if kind < 0.35:  # a burst of identical prompts: one flight, its followers
            prompt = class_tokens(k, rng.choice((40, 56, 72)), VOCAB)
            for _ in range(rng.randint(2, 5)):
                out.append((prompt, rng.randint(6, 30), rng.random() < 0.12))
        elif kind < 0.75:  # a question about a shared document (prefix pages)
            doc = rng.choice(docs)
            prompt = class_tokens(k, len(doc) + rng.choice((5, 21, 37)), VOCAB, prefix=doc)
            out.append((prompt, rng.randint(6, 30), rng.random() < 0.12))
        elif kind < 0.85:  # a short prompt (no shareable page)
            out.append((class_tokens(k, rng.randint(3, 15), VOCAB), rng.randint(3, 10), False))
        else:  # a one-off prompt of a few pages
            out.append((class_tokens(k, rng.randint(20, 90), VOCAB), rng.randint(6, 30), rng.random() < 0.2))
        k += 1
    return out[:num_requests]


def start_server(args: list[str]) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(APP + ["serve", *args], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not match:
        raise SystemExit(f"serve did not start: {line}{proc.stderr.read() if proc.poll() is not None else ''}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # drain the log lines
    return proc, f"http://127.0.0.1:{match.group(1)}"


def stop_server(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def serve_run(path: Path, num_requests: int, clients: int, monitor: bool, extra: list[str], seed: int) -> dict:
    """Serve ``num_requests`` requests from ``clients`` concurrent clients; the event log goes to ``path``."""
    from openai import OpenAI

    args = ["--model", "tiny", "--port", "0", "--events", str(path), "--max-running", "32",
            "--num-pages", "128", *extra] + (["--monitor"] if monitor else [])
    proc, url = start_server(args)
    jobs = workload(num_requests, seed)
    endings: dict[str, int] = {}
    lock = threading.Lock()

    def ask(job: tuple[list[int], int, bool]) -> None:
        prompt, max_tokens, drop = job
        client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
        stream = client.completions.create(model="tiny", prompt=prompt, max_tokens=max_tokens, stream=True)
        if drop:
            next(iter(stream))
            stream.close()
            how = "dropped"
        else:
            how = "".join(c.choices[0].finish_reason or "" for c in stream) or "none"
        with lock:
            endings[how] = endings.get(how, 0) + 1

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(clients) as pool:
            for _ in pool.map(ask, jobs):
                pass
        elapsed = time.monotonic() - started
    finally:
        code = stop_server(proc)
    events = sum(1 for _ in path.open()) - 1
    return {"requests": num_requests, "clients": clients, "monitor": monitor, "seconds": round(elapsed, 2),
            "requests_per_s": round(num_requests / elapsed, 2), "events": events, "endings": endings,
            "exit": code, "log": str(path)}


def time_validate(path: Path) -> dict:
    """``flightcheck validate --json`` on ``path`` in a fresh process: its verdict and wall time."""
    started = time.monotonic()
    done = subprocess.run(APP + ["validate", "--json", str(path)], capture_output=True, text=True)
    elapsed = time.monotonic() - started
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
        verdict, events = report["verdict"], report["events"]
    except (IndexError, ValueError, KeyError):
        verdict, events = f"exit {done.returncode}: {(done.stdout + done.stderr).strip()[-300:]}", None
    return {"log": str(path), "verdict": verdict, "events_checked": events, "seconds": round(elapsed, 2)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=90, help="requests served (at most 256: validate's bound)")
    ap.add_argument("--clients", type=int, default=32, help="concurrent clients")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="validate-speed", help="folder for the event logs")
    ap.add_argument("--monitor-overhead", action="store_true",
                    help="serve the load without and with --monitor and compare wall times")
    ap.add_argument("--no-validate", action="store_true", help="only write the log(s)")
    ap.add_argument("--validate-only", nargs="*", default=None, metavar="LOG", help="only time validate on these logs")
    ap.add_argument("--serve-args", default="", help="extra `flightcheck serve` options, e.g. '--coordination prefix'")
    a = ap.parse_args(argv)
    if a.validate_only is not None:
        for log in a.validate_only:
            print(json.dumps(time_validate(Path(log))), flush=True)
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = a.serve_args.split()
    log = out / f"events-{a.requests}.jsonl"
    plain = serve_run(log, a.requests, a.clients, False, extra, a.seed)
    print(json.dumps({"serve": plain}), flush=True)
    if a.monitor_overhead:
        watched = serve_run(out / f"events-{a.requests}-monitored.jsonl", a.requests, a.clients, True, extra, a.seed)
        print(json.dumps({"serve": watched}), flush=True)
        print(json.dumps({"monitor_overhead": round(watched["seconds"] / plain["seconds"], 2)}), flush=True)
    if not a.no_validate:
        print(json.dumps({"validate": time_validate(log)}), flush=True)


if __name__ == "__main__":
    main()
