"""The soak benchmark: 32 concurrent streaming ``openai`` clients for a minute against
``flightcheck serve`` on SmolLM2-135M, and the same load against a peer server on the same GGUF file.

Each client loops until the time is up: a streaming chat completion of one of eight questions
(several clients ask the same one, as real traffic repeats itself), ``max_tokens`` fixed, greedy.
A request that errors is *lost*; one not finished a generous bound after the end is *hung*. After
the load, flightcheck's /metrics must show every page back in the pool (none in use, free + cached =
the pool) and no live request. Figures: requests/s, output tokens/s, p50/p99 TTFT, p50 completion,
for both servers, and flightcheck's as a ratio to the peer's (the peer runs right after, alone).

    python scripts/bench_soak.py                                   # flightcheck, then the peer if installed
    python scripts/bench_soak.py --clients 32 --seconds 60 --peer-python .venv-peer/bin/python
    python scripts/bench_soak.py --no-peer --seconds 20
    python scripts/bench_soak.py --no-peer --monitor                # and again under --monitor, then validate

With ``--monitor`` flightcheck runs the same load a second time with ``serve --monitor --events FILE``
(every event checked against the spec as it happens): the figures are compared as a ratio to the
plain run, the monitor must have found nothing (/metrics' conformance failures 0), and the event log
is then validated offline with ``flightcheck validate``, timed.

The peer is llama-cpp-python's OpenAI-compatible server (``bash scripts/setup_bench_peer.sh`` builds
it into .venv-peer); it serves one request at a time (``--interrupt_requests False`` so that a new
request queues instead of cutting the running one).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

QUESTIONS = ["What is the capital of France?", "Why is the sky blue?", "Name three primary colours.",
             "What is 12 times 12?", "Who wrote Hamlet?", "What does a CPU do?",
             "Give me a synonym for happy.", "How many legs does a spider have?"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5) as reply:
                return json.loads(reply.read())["data"][0]["id"]
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"{url} not ready within {timeout} s")


def soak(url: str, model: str, clients: int, seconds: float, max_tokens: int) -> dict:
    from openai import OpenAI

    records: list[dict] = []
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client(k: int) -> None:
        api = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=600)
        n = 0
        while time.monotonic() < end:
            question = QUESTIONS[(k + n) % len(QUESTIONS)]
            n += 1
            record = {"client": k, "question": question, "tokens": 0, "error": None}
            sent = time.perf_counter()
            try:
                stream = api.chat.completions.create(model=model, messages=[{"role": "user", "content": question}],
                                                     max_tokens=max_tokens, temperature=0, stream=True)
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        record.setdefault("ttft_s", time.perf_counter() - sent)
                        ids = getattr(chunk.choices[0], "token_ids", None)
                        record["tokens"] += len(ids) if ids else 1
                record["completion_s"] = time.perf_counter() - sent
            except Exception as error:  # counted as lost
                record["error"] = f"{type(error).__name__}: {error}"
            with lock:
                records.append(record)

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, end - time.monotonic()) + 600)  # in-flight requests finish; 10 minutes more is "hung"
    wall = time.perf_counter() - started
    hung = sum(t.is_alive() for t in threads)
    done = [r for r in records if r["error"] is None and "ttft_s" in r]
    lost = [r for r in records if r["error"] is not None]
    ttfts = sorted(r["ttft_s"] for r in done)

    def pct(values, q):
        return values[min(len(values) - 1, int(q * len(values)))] if values else None

    return {"clients": clients, "seconds": seconds, "wall_s": wall, "requests": len(done), "lost": len(lost),
            "hung_clients": hung, "first_error": lost[0]["error"] if lost else None,
            "requests_per_s": len(done) / wall, "tokens_per_s": sum(r["tokens"] for r in done) / wall,
            "ttft_p50_s": pct(ttfts, 0.5), "ttft_p99_s": pct(ttfts, 0.99),
            "completion_p50_s": statistics.median(r["completion_s"] for r in done) if done else None}


def page_check(url: str) -> dict:
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    pages = {s: samples[f'flightcheck_pages{{state="{s}"}}'] for s in ("free", "cached", "in_use")}
    live = sum(v for k, v in samples.items() if k.startswith("flightcheck_live_requests"))
    reasons = {k.split('"')[1]: v for k, v in samples.items() if k.startswith("flightcheck_requests_total")}
    return {"pages": pages, "live_requests": live, "finish_reasons": reasons,
            "followers_released": samples.get("flightcheck_engine_followers_released_total"),
            "conformance_failures": samples.get('flightcheck_engine_failures_total{kind="conformance"}'),
            "recovered_tokens": samples.get("flightcheck_engine_recovered_tokens_total")}


def run_server(cmd: list[str], port: int, args, *, flightcheck: bool) -> dict:
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        model = wait_ready(url, proc)
        warm = soak(url, model, 2, 1, 4)  # warm-up, not counted
        assert warm["lost"] == 0, warm
        result = soak(url, model, args.clients, args.seconds, args.max_tokens)
        if flightcheck:
            result["after"] = page_check(url)
        return result
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--max-running", type=int, default=8, help="flightcheck's capacity (its default)")
    parser.add_argument("--peer-python", default=str(Path(__file__).resolve().parent.parent / ".venv-peer/bin/python"))
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--json", default="runs/soak.json")
    parser.add_argument("--monitor", action="store_true", help="flightcheck again under serve --monitor, then validate")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.seconds <= 0 or args.max_tokens < 1:
        parser.error("--clients >= 1, --seconds > 0 and --max-tokens >= 1 are required")
    from flightcheck.impl.model_file import locate

    gguf = str(locate())
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gguf": gguf, "args": vars(args)}
    port = free_port()
    results["flightcheck"] = run_server(
        [sys.executable, "-m", "flightcheck.checks.cli.app", "serve", "--model", "smollm2", "--port", str(port),
         "--max-running", str(args.max_running)], port, args, flightcheck=True)
    print("flightcheck:", json.dumps(results["flightcheck"], indent=1))
    if args.monitor:
        events = Path(args.json).with_suffix(".events.jsonl")
        events.parent.mkdir(parents=True, exist_ok=True)
        port = free_port()
        monitored = run_server(
            [sys.executable, "-m", "flightcheck.checks.cli.app", "serve", "--model", "smollm2", "--port", str(port),
             "--max-running", str(args.max_running), "--monitor", "--events", str(events)], port, args, flightcheck=True)
        started = time.perf_counter()
        checked = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "validate", str(events)],
                                 capture_output=True, text=True)
        monitored["validate"] = {"exit": checked.returncode, "seconds": time.perf_counter() - started,
                                 "events": sum(1 for line in events.open() if '"action"' in line),
                                 "said": (checked.stdout or checked.stderr).strip().splitlines()[-1:]}
        plain = results["flightcheck"]
        monitored["ratio_to_plain"] = {k: monitored[k] / plain[k] for k in ("requests_per_s", "tokens_per_s")
                                       if plain.get(k)}
        results["flightcheck --monitor"] = monitored
        print("flightcheck --monitor:", json.dumps(monitored, indent=1))
    if not args.no_peer and os.path.exists(args.peer_python):
        port = free_port()
        results["llama-cpp-python"] = run_server(
            [args.peer_python, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "8192", "--n_threads", "2", "--n_threads_batch", "2", "--interrupt_requests", "False",
             "--verbose", "False", "--model_alias", "smollm2"], port, args, flightcheck=False)
        print("llama-cpp-python:", json.dumps(results["llama-cpp-python"], indent=1))
    elif not args.no_peer:
        print(f"no peer at {args.peer_python}; run scripts/setup_bench_peer.sh (or pass --peer-python)")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(table(results))
    ours = results["flightcheck"]
    after = ours["after"]
    ok = (ours["lost"] == 0 and ours["hung_clients"] == 0 and after["pages"]["in_use"] == 0 and after["live_requests"] == 0)
    if args.monitor:
        watched = results["flightcheck --monitor"]
        ok = ok and watched["lost"] == 0 and watched["hung_clients"] == 0 and not watched["after"]["conformance_failures"] \
            and watched["validate"]["exit"] == 0
    print("soak:", "passed" if ok else "FAILED", "(none lost or hung, every page back in the pool)" if ok else "")
    return 0 if ok else 1


def table(results: dict) -> str:
    rows = [("requests completed", "requests", "{:.0f}"), ("lost / hung clients", None, None),
            ("requests/s", "requests_per_s", "{:.2f}"), ("output tokens/s", "tokens_per_s", "{:.1f}"),
            ("TTFT p50 s", "ttft_p50_s", "{:.2f}"), ("TTFT p99 s", "ttft_p99_s", "{:.2f}"),
            ("completion p50 s", "completion_p50_s", "{:.2f}")]
    names = [n for n in ("flightcheck", "llama-cpp-python") if n in results]
    lines = ["| measure | " + " | ".join(names) + (" | flightcheck / peer |" if len(names) == 2 else " |"),
             "|---|" + "---|" * (len(names) + (len(names) == 2))]
    for label, key, fmt in rows:
        if key is None:
            cells = [f"{results[n]['lost']} / {results[n]['hung_clients']}" for n in names]
            lines.append(f"| {label} | " + " | ".join(cells) + (" | |" if len(names) == 2 else " |"))
            continue
        values = [results[n][key] for n in names]
        cells = [fmt.format(v) if v is not None else "-" for v in values]
        ratio = f"{values[0] / values[1]:.2f}x" if len(values) == 2 and values[1] else ""
        lines.append(f"| {label} | " + " | ".join(cells) + (f" | {ratio} |" if len(names) == 2 else " |"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
