"""A long prompt's time to first token under load, against the same prompt alone (issue 43, fault 8).

In-process, on the real SmolLM2 engine with the server's defaults (a 1,024-page pool, capacity 8, a
32-page prefill budget a step). Four runs on one set of loaded weights, one after the other, each on a
fresh engine: the long prompt alone; the same prompt under load (``--clients`` closed-loop clients,
each submitting a short prompt of its own the moment its last one finished, the long prompt arriving
once the load is steady) with admission in arrival order only (the engine before issue 43's fix,
patched in here); the same load on today's engine; the long prompt alone again. Every time is the engine's own
(``Result.ttft_s``: from ``add_request`` to the first token), and the load run splits it into the
queue (arrival to the step that admits it) and the prefill (that step to the first token), in seconds and
engine steps, and gives each in CPU seconds too (this process's, less moved by other jobs).
The tokenizer's time for the long prompt's text is measured apart (the server tokenizes before the
engine sees the request).

    python scripts/bench_long_prompt.py --prompt-tokens 8000 --json docs/bench/long_prompt_8000.json
"""

from __future__ import annotations

import argparse
import json
import time

WARMUP_FINISHED = 8  # client requests that finish before the long prompt arrives: the load is steady


def texts(tokenizer, num_tokens: int, tag: str) -> list[int]:
    """Token ids of an English-like text of exactly ``num_tokens`` tokens, distinct per ``tag`` (so that
    no two prompts share a cached page)."""
    words = f"{tag}: the lighthouse keeper wrote in the log about the storm and the ships that passed. "
    ids: list[int] = []
    while len(ids) < num_tokens:
        ids.extend(tokenizer.encode(words))
    return ids[:num_tokens]


def first_token(engine, request_id: int, on_step=None) -> dict:
    """Steps the engine until the request has its first token: its TTFT in wall and CPU seconds (CPU:
    this process's, every thread's; less moved by other jobs on a shared machine), split into the queue
    (arrival to the start of the step that admits it) and the prefill (that step to the first token)."""
    request = engine.scheduler.requests[request_id]
    cpu_arrival = time.process_time()  # the caller added the request just before
    steps = {"queue": 0, "prefill": 0}
    admitted_at = admitted_cpu = None
    step_cpu: list[float] = []  # CPU seconds of each step from its admission on (its prefill's chunks)
    while request.first_token_time is None:
        was_waiting = request.phase.value in ("waiting", "blocked")
        started, started_cpu = time.perf_counter(), time.process_time()
        engine.step()
        if was_waiting and request.phase.value not in ("waiting", "blocked"):
            admitted_at, admitted_cpu = started, started_cpu
        steps["queue" if admitted_at is None else "prefill"] += 1
        if admitted_at is not None:
            step_cpu.append(round(time.process_time() - started_cpu, 2))
        if on_step is not None:
            on_step()
    ttft, cpu = request.first_token_time - request.arrival_time, time.process_time() - cpu_arrival
    queue_s, queue_cpu = admitted_at - request.arrival_time, admitted_cpu - cpu_arrival
    return {"ttft_s": round(ttft, 2), "queue_s": round(queue_s, 2), "prefill_s": round(ttft - queue_s, 2),
            "ttft_cpu_s": round(cpu, 2), "queue_cpu_s": round(queue_cpu, 2),
            "queue_steps": steps["queue"], "prefill_steps": steps["prefill"], "prefill_step_cpu_s": step_cpu}


def alone(model, config, prompt: list[int]) -> dict:
    from flightcheck.impl.engine import Engine

    engine = Engine.smollm2(config, model=model)
    rid = engine.add_request(prompt, {"max_tokens": 1, "temperature": 0})
    figures = first_token(engine, rid)
    engine.close()
    return figures


def under_load(model, config, prompt: list[int], args, *, arrival_order: bool = False) -> dict:
    from flightcheck.impl.engine import Engine

    engine = Engine.smollm2(config, model=model)
    if arrival_order:  # the engine before issue 43's fix: admission in arrival order only
        engine.scheduler.admission_order = lambda: list(engine.scheduler.waiting)
    tokenizer = model[1]
    submitted = [0]
    clients: dict[int, int] = {}  # client -> its request in flight
    num_finished = [0]

    def submit(client: int) -> None:
        submitted[0] += 1
        # Why lengths that differ by client: equal ones finish in lockstep, freeing every slot at once.
        max_tokens = args.client_max_tokens // 2 + client % 8 * args.client_max_tokens // 8
        clients[client] = engine.add_request(texts(tokenizer, args.client_prompt_tokens, f"c{client}r{submitted[0]}"),
                                             {"max_tokens": max_tokens, "temperature": 0, "ignore_eos": True})

    def resubmit() -> None:  # the closed loop: a client whose request ended sends its next at once
        for client, rid in list(clients.items()):
            if not engine.scheduler.requests[rid].phase.is_live:
                num_finished[0] += 1
                submit(client)

    for client in range(args.clients):
        submit(client)
    while num_finished[0] < WARMUP_FINISHED:
        engine.step()
        resubmit()
    waiting = len(engine.scheduler.waiting)
    rid = engine.add_request(prompt, {"max_tokens": 1, "temperature": 0})
    t, decoded = time.perf_counter(), engine.counters["num_decode_tokens"]
    finished_before = num_finished[0]
    figures = first_token(engine, rid, on_step=resubmit)
    figures.update(queued_ahead=waiting, client_requests_finished=num_finished[0] - finished_before,
                   client_tokens_per_s=round((engine.counters["num_decode_tokens"] - decoded)
                                             / (time.perf_counter() - t), 1))
    engine.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt-tokens", type=int, default=2048, help="the long prompt (8,192 is the fault's)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--client-prompt-tokens", type=int, default=64)
    parser.add_argument("--client-max-tokens", type=int, default=32,
                        help="the clients' mean max_tokens (client k asks for half of it + (k mod 8) eighths)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()

    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.gguf import load_smollm2

    model = load_smollm2(None, None)
    config = EngineConfig(num_pages=1024)  # `flightcheck serve`'s pool (checks/cli/cmd_engine.py SERVE_DEFAULTS)
    long_ids = texts(model[1], args.prompt_tokens, "long")
    text = model[1].decode(long_ids)
    t = time.perf_counter()
    num_encoded = len(model[1].encode(text))
    tokenize_s = time.perf_counter() - t
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "args": vars(args),
           "tokenize": {"tokens": num_encoded, "seconds": round(tokenize_s, 3)}}
    runs = (("alone_before", lambda: alone(model, config, long_ids)),
            ("load_arrival_order", lambda: under_load(model, config, long_ids, args, arrival_order=True)),
            ("load", lambda: under_load(model, config, long_ids, args)),
            ("alone_after", lambda: alone(model, config, long_ids)))
    for name, run in runs:
        out[name] = run()
        print(name, out[name], flush=True)
    for unit in ("ttft_s", "ttft_cpu_s"):
        reference = (out["alone_before"][unit] + out["alone_after"][unit]) / 2
        out[f"ratio_{unit}"] = {k: round(out[k][unit] / reference, 2) for k in ("load_arrival_order", "load")}
        print(f"{unit}: alone {reference:.2f} (mean of two); under load in arrival order "
              f"{out['load_arrival_order'][unit]:.2f} ({out[f'ratio_{unit}']['load_arrival_order']:.2f}x), with the "
              f"longest-prompt lane {out['load'][unit]:.2f} ({out[f'ratio_{unit}']['load']:.2f}x)", flush=True)
    print(f"tokenizer: {tokenize_s:.3f} s for {num_encoded} tokens", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
