"""The outside probe's reading of what a server did, on hand-made replies: a server that serves one
request at a time is not read as recomputing, a race between repeats is named as one, and a burst whose
streams were cut short gets no verdict. (Each case was met on a real server: llama-cpp-python and mlx-lm,
BENCHMARKS.md, "The outside probe against other engines".)"""

import pytest

from flightcheck.checks.outside.client import Endpoint, Exchange, ProbeError
from flightcheck.checks.outside.probe import Instance, Server, _check
from flightcheck.checks.outside.verdict import SOURCE_TIMING, SOURCE_USAGE, analyse

PAGE = 16


def server(token_prompts: bool = True) -> Server:
    return Server(Endpoint.parse("http://127.0.0.1:9/v1"), "m", PAGE, "assumed", token_prompts, 0, True, False)


def burst(times: list[tuple[float, float]], cached: list[int] | None = None, control_ttft: float = 0.05) -> Instance:
    """An identical burst: (TTFT, completion) per request, the cache's tokens per request if it says."""
    exchanges = []
    for k, (ttft, end) in enumerate(times):
        usage = None if cached is None else {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": cached[k]}}
        exchanges.append(Exchange(k, 100, status=200, ttft_s=ttft, completion_s=end, num_chunks=5, num_outputs=4,
                                  usage=usage))
    control = Exchange(99, 100, status=200, ttft_s=control_ttft, completion_s=control_ttft + 0.1, num_chunks=5,
                       num_outputs=4, usage=None if cached is None else {"prompt_tokens": 100,
                                                                         "prompt_tokens_details": {"cached_tokens": 96}})
    return Instance(f"identical-{len(times)}", 0, exchanges, control, None, [100] * len(times), [1, 2, 3, 4])


def test_a_server_that_serves_one_request_at_a_time_is_not_read_as_recomputing():
    # Each first token comes after the previous reply ended, 50 ms later: only the first was cold.
    ladder = [(0.30, 0.40), (0.45, 0.55), (0.60, 0.70), (0.75, 0.85)]
    r = analyse("identical-4", [burst(ladder)], server(False), cold_s=0.30)
    assert r.source == SOURCE_TIMING and r.computations_per_page == [1, 1, 1, 1] and r.kind == "coalesces"
    assert any("one request at a time" in line and "[300.0, 50.0, 50.0, 50.0]" in line for line in r.evidence)
    # The old reading (the last first token against a cold one) would have said 3 of 4.
    recompute = [(0.30, 0.40), (0.70, 0.80), (1.10, 1.20), (1.50, 1.60)]
    r = analyse("identical-4", [burst(recompute)], server(False), cold_s=0.30)
    assert r.computations_per_page == [4, 4, 4, 4] and r.kind == "recomputes"
    # The cold reference is the burst's own first request: a cold prompt timed in another shape, under
    # a lighter load, does not turn a follower's tail into a recomputation.
    loaded = [(1.33, 1.40), (1.75, 1.80), (1.97, 2.00), (2.13, 2.20)]  # own 1330, 350, 170, 130 ms
    assert analyse("identical-4", [burst(loaded)], server(False), cold_s=0.49).computations_per_page == [1, 1, 1, 1]
    # A shared-prefix follower computes its own tail: on a loaded machine more than half the cold time
    # (measured: 594 ms against 1,080), still short of three quarters of it.
    tails = [(1.08, 1.10), (1.70, 1.72), (2.30, 2.32)]  # own 1080, 600, 580 ms; a warm first token 50 ms
    assert analyse("shared-prefix-3", [burst(tails)], server(False), cold_s=0.66).computations_per_page == [1, 1, 1, 1]


def test_a_batching_server_is_read_by_its_last_first_token():
    together = [(1.10, 1.20), (1.12, 1.22), (1.15, 1.25), (1.15, 1.25)]  # prefilled together: 4 cold prompts' time
    r = analyse("identical-4", [burst(together)], server(False), cold_s=0.30)
    assert r.computations_per_page == [4, 4, 4, 4]
    assert not any("one request at a time" in line for line in r.evidence)


def test_repeats_that_disagree_are_named_a_race_not_a_median():
    fast = [(0.3, 0.4)] * 4
    once, every = burst(fast, cached=[0, 99, 99, 99]), burst(fast, cached=[0, 0, 0, 0])
    r = analyse("identical-4", [once, once, every], server(), cold_s=0.3)
    assert r.source == SOURCE_USAGE and r.exact
    assert r.kind == "varies" and r.computations_per_page == [1, 1, 1, 1]  # the median alone would say coalesces
    assert r.verdict.startswith("varies between repeats: coalesces in 2, recomputes in 1 of 3"), r.verdict
    assert analyse("identical-4", [once, once], server(), cold_s=0.3).kind == "coalesces"


def test_a_burst_with_streams_cut_short_gets_no_verdict():
    inst = burst([(0.3, 0.4)] * 4)
    _check(inst.exchanges, "identical-4", server())  # ended alike (their words are not compared)
    for e in inst.exchanges[1:]:
        e.num_outputs = 1  # one chunk, then [DONE]: what an interrupted stream carries
    with pytest.raises(ProbeError, match=r"identical greedy requests ended after \[4, 1, 1, 1\] output chunks: "
                                         r"the server cut some short"):
        _check(inst.exchanges, "identical-4", server())
    _check(inst.exchanges, "shared-prefix-4", server())  # prompts with tails of their own may answer differently


def test_the_late_arrival_is_never_read_as_a_serial_burst():
    # Its two requests were sent at different times, so their clocks do not line up.
    late = burst([(0.24, 0.5), (0.73, 0.8)])
    late.shape = "late-arrival"
    r = analyse("late-arrival", [late], server(False), cold_s=1.0)
    assert not any("one request at a time" in line for line in r.evidence)


def test_a_race_is_named_from_per_request_readings_of_text_prompts_too():
    fast = [(0.3, 0.4)] * 4
    r = analyse("identical-4", [burst(fast, cached=[0, 99, 99, 99]), burst(fast, cached=[0, 0, 99, 99])],
                server(token_prompts=False), cold_s=0.3)
    assert not r.exact and r.kind == "varies"
    assert r.verdict.startswith("varies between repeats: coalesces in 1, partial in 1 of 2")
    assert r.verdict.endswith("(page counts approximate: text prompts)")
