"""Random calls of every public engine method with well- and ill-typed arguments: only ``EngineError``.

Hypothesis drives a small tiny-model engine (16 pages, two running, one page a chunk) through random
calls: add_request, generate, abort, notify_termination, forget, expire, inject_fault, hold, resume,
stream, result, phase, run and step, each argument drawn from values the call takes (live, terminated
and unknown request IDs, prompts that share pages so that flights form) and values it must refuse
(bools and floats as IDs, bytes, dicts and sets as prompts, ill-typed sampling fields, huge integers).
After every call:

- nothing but an ``EngineError`` came out;
- a refused call changed nothing (``engine.snapshot()``), logged at most its refused notice, and left
  the invariants intact (``NoProgressError`` alone comes after work was done: the invariants still hold);
- at the end, once every held request is resumed and the engine has run dry, every page is back (no
  reference held, every page free or cached) and the run's event log validates against the spec, as
  ``flightcheck validate`` would read it.

The constructors take the same care: ``EngineConfig`` raises only ``InvalidConfigError`` and
``SamplingParams`` only ``InvalidSamplingError``, whatever the values.
"""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flightcheck.checks.conform.eventlog import read_events, validate_events
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.errors import (EngineError, InvalidConfigError, InvalidSamplingError, NoProgressError,
                                     UnknownRequestError)
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.scenario import Policy

from switches import SLOW

EXAMPLES = 1000 if SLOW else 60
CALLS = 40 if SLOW else 25
CONFIG = EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1)
# The same small engine under the other policies, so that promotions, bounded waits and prefix waits
# (and the logs they write) meet the same calls.
CONFIGS = [CONFIG, replace(CONFIG, leader_loss="promote", follower_wait_bound=2),
           replace(CONFIG, coordination="prefix", release="on-completion"),
           replace(CONFIG, coordination="none", publication="on-completion")]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

# Prompts that share whole pages, so that identical requests follow a leader and others hit the cache.
DOC = [(7 * i + 3) % 256 for i in range(40)]
PROMPTS = [DOC, DOC[:17], DOC[:33] + [1, 2], [5] * 20, [9]]

# --- values no call may take -------------------------------------------------------------------------------
HUGE = st.sampled_from([2**63, -(2**63) - 1, 10**30, 10**5000])
JUNK = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                 st.binary(max_size=4), st.lists(st.integers(0, 3), max_size=2),
                 st.dictionaries(st.integers(0, 3), st.integers(0, 3), max_size=2),
                 st.sets(st.integers(0, 3), max_size=2), st.complex_numbers(), HUGE)


def request_ids(engine: Engine, well: bool, name: str) -> st.SearchStrategy:
    """Live IDs (blocked ones for expire), IDs the engine issued (terminated ones too) and unknown ones;
    or ill-typed values."""
    if not well:
        return JUNK
    issued = max(engine._next_request_id, 1)
    live = [i for i, r in engine.scheduler.requests.items()
            if r.phase.is_live and (name != "expire" or r.phase.value == "blocked")]
    known = [st.sampled_from(live)] * 2 if live else []
    return st.one_of(*known, st.integers(0, issued - 1), st.integers(-2, issued + 2))


GOOD_PROMPTS = st.one_of(st.sampled_from(PROMPTS), st.sampled_from(PROMPTS), st.sampled_from(PROMPTS).map(tuple),
                         st.lists(st.integers(0, 255), min_size=1, max_size=60))
BAD_PROMPTS = st.one_of(JUNK, st.just(""), st.just("text without a tokenizer"), st.just([]),
                        st.lists(st.one_of(st.integers(-3, 300), st.booleans(), st.floats(), st.none()), min_size=1,
                                 max_size=3),
                        st.just(list(range(256)) * 9), st.just(range(10**12)), st.sampled_from(PROMPTS).map(bytes),
                        st.sampled_from(PROMPTS).map(set), st.just({1: 2}), st.integers())

FIELD_VALUES = {
    "temperature": st.one_of(st.sampled_from([0, 0.0, 0.7, 1.0, 2]), st.floats(), st.integers(-3, 10**400), JUNK),
    "top_p": st.one_of(st.sampled_from([1.0, 0.9, 0.5]), st.floats(), JUNK),
    "seed": st.one_of(st.none(), st.integers(0, 2**63 - 1), st.integers(-5, 2**70), JUNK),
    "max_tokens": st.one_of(st.integers(1, 6), st.integers(-2, 2**40), JUNK),
    "stop": st.one_of(st.just(()), st.lists(st.text(max_size=3), max_size=3), st.text(max_size=3), JUNK),
    "ignore_eos": st.one_of(st.booleans(), JUNK),
}
GOOD_FIELDS = {"temperature": st.sampled_from([0.0, 0.7]), "top_p": st.sampled_from([1.0, 0.9]),
               "seed": st.one_of(st.none(), st.integers(0, 99)), "max_tokens": st.integers(1, 6),
               "ignore_eos": st.booleans()}
GOOD_SAMPLINGS = st.one_of(st.none(), st.fixed_dictionaries({}, optional=GOOD_FIELDS),
                           st.fixed_dictionaries({}, optional=GOOD_FIELDS).map(lambda d: SamplingParams(**d)))
BAD_SAMPLINGS = st.one_of(JUNK, st.dictionaries(st.one_of(st.sampled_from(sorted(FIELD_VALUES)),
                                                          st.sampled_from(["temprature", "n"]), st.integers(0, 2)),
                                                st.one_of(*FIELD_VALUES.values()), min_size=1, max_size=3))
GOOD_STEPS = st.one_of(st.integers(0, 4), st.integers(0, 4), st.none())  # None runs dry (or stalls)
BAD_STEPS = st.one_of(st.integers(-3, -1), JUNK)


ID_CALLS = ("abort", "notify_termination", "forget", "expire", "inject_fault", "hold", "resume", "result", "phase",
            "stream")
# Arrivals, steps and holds more often than the calls that run everything dry (generate, stream, run).
CALL_NAMES = ID_CALLS + ("add_request",) * 5 + ("step",) * 3 + ("hold", "expire", "expire", "abort", "generate", "run")


def draw_calls(data: st.DataObject, engine: Engine) -> list[tuple[str, tuple]]:
    """One call and its arguments, each argument well-typed two times in three (so that requests arrive
    and IDs hit live requests), ill-typed otherwise; or a burst: the same prompt added two or three
    times at once, so that flights form and followers block (to be held, expired, aborted)."""
    name = data.draw(st.sampled_from(CALL_NAMES + ("burst",) * 2), label="call")
    if name == "burst":
        prompt = data.draw(st.sampled_from(PROMPTS[:3]), label="burst prompt")
        return [("add_request", (prompt, data.draw(GOOD_SAMPLINGS, label="sampling")))] * data.draw(st.integers(2, 3))
    return [draw_call(data, engine, name)]


def draw_call(data: st.DataObject, engine: Engine, name: str) -> tuple[str, tuple]:
    def pick(good: st.SearchStrategy, bad: st.SearchStrategy, label: str):
        well = data.draw(st.integers(0, 2), label=f"{label} well-typed") > 0
        return data.draw(good if well else bad, label=label)

    if name in ID_CALLS:
        return name, (pick(request_ids(engine, True, name), request_ids(engine, False, name), "request_id"),)
    if name == "add_request":
        return name, (pick(GOOD_PROMPTS, BAD_PROMPTS, "prompt"), pick(GOOD_SAMPLINGS, BAD_SAMPLINGS, "sampling"))
    if name == "generate":
        batch = pick(st.lists(GOOD_PROMPTS, max_size=3), st.one_of(st.lists(BAD_PROMPTS, min_size=1, max_size=2),
                                                                   JUNK, st.just("abc")), "prompts")
        sampling = pick(GOOD_SAMPLINGS, st.one_of(BAD_SAMPLINGS, st.lists(GOOD_SAMPLINGS, max_size=3)), "sampling")
        return name, (batch, sampling)
    if name == "run":
        return name, (pick(GOOD_STEPS, BAD_STEPS, "max_steps"),)
    return name, ()


def call(engine: Engine, name: str, args: tuple) -> object:
    value = getattr(engine, name)(*args)
    if name == "stream":
        return list(value)  # steps the engine until the request ends
    return value


def short(args: tuple) -> str:
    text = ", ".join(repr(a) if not (isinstance(a, int) and a.bit_length() > 64) else "<huge int>" for a in args)
    return text if len(text) < 200 else text[:200] + "..."


def check_call(engine: Engine, name: str, args: tuple) -> None:
    before = engine.snapshot()
    num_events = engine.events.num_emitted
    try:
        call(engine, name, args)
    except NoProgressError:
        engine.check_invariants()  # work was done before it: the steps taken stand
        return
    except EngineError as error:
        assert engine.snapshot() == before, f"{name}({short(args)}) raised {error!r} and changed the engine"
        new = list(engine.events.events)[num_events:]
        if isinstance(error, UnknownRequestError) and name in ("abort", "notify_termination"):
            assert [(e["action"], e["accepted"]) for e in new] == [("notify", False)], new
        else:
            assert new == [], f"{name}({short(args)}) raised {error!r} and logged {new}"
    except Exception as error:  # noqa: BLE001 - the point of the test
        raise AssertionError(f"{name}({short(args)}) raised {type(error).__name__}, not an EngineError: {error}")
    engine.check_invariants()


def drain(engine: Engine) -> None:
    for request in engine.scheduler.requests.values():
        if request.phase.is_live and request.is_held:
            engine.resume(request.request_id)
    engine.run()
    engine.check_invariants()
    pool = engine.scheduler.pool
    assert all(p.ref_count == 0 for p in pool.pages), "a page is still referenced after every request ended"
    assert pool.num_free + len(pool.cached) == pool.num_pages, "a page is neither free nor cached"
    assert engine.scheduler.num_reserved == 0


def validate_log(engine: Engine, path) -> None:
    if engine.events.num_emitted == 0:
        return  # a log with no events is bad input to validate, said so (tests/conform)
    path.write_text(engine.events.to_jsonl())
    events, header = read_events(str(path))
    report = validate_events(events, Policy(**header["policy"]), num_pages=header["pool"]["num_pages"],
                             context=header.get("context"))
    assert report.ok, report.diagnosis.format()


@FUZZ
@given(data=st.data())
def test_random_calls_raise_only_engine_errors_and_change_nothing_when_they_do(data, tmp_path):
    engine = Engine.tiny(CONFIG if data.draw(st.booleans(), label="base config") else
                         data.draw(st.sampled_from(CONFIGS), label="config"))
    for _ in range(data.draw(st.integers(1, CALLS), label="number of calls")):
        for name, args in draw_calls(data, engine):
            check_call(engine, name, args)
    drain(engine)
    validate_log(engine, tmp_path / "fuzz.jsonl")


CONFIG_VALUES = {
    "coordination": st.one_of(st.sampled_from(["none", "single-flight", "prefix"]), JUNK),
    "release": st.one_of(st.sampled_from(["after-prefill", "on-completion"]), JUNK),
    "publication": st.one_of(st.sampled_from(["incremental", "on-completion"]), JUNK),
    "leader_loss": st.one_of(st.sampled_from(["release-all", "promote"]), JUNK),
    "prefix_caching": st.one_of(st.booleans(), JUNK),
    "max_running": st.one_of(st.integers(-2, 5000), JUNK),
    "prefill_chunk_pages": st.one_of(st.integers(-2, 10**6), JUNK),
    "num_pages": st.one_of(st.integers(-2, 10**10), JUNK),
    "max_context": st.one_of(st.none(), st.integers(-2, 10**8), JUNK),
    "follower_wait_bound": st.one_of(st.none(), st.integers(-2, 10**7), JUNK),
    "min_shared_pages": st.one_of(st.integers(-2, 10**6), JUNK),
    "seed": st.one_of(st.integers(-2, 2**70), JUNK),
}


@settings(max_examples=EXAMPLES * 5, deadline=None, database=None)
@given(values=st.fixed_dictionaries({}, optional=CONFIG_VALUES))
def test_a_config_is_valid_or_an_invalid_config_error(values):
    try:
        config = EngineConfig(**values)
    except InvalidConfigError:
        return
    assert config.num_pages * 8192 <= 2**62 and config.seed >= 0  # what was accepted is in range


@settings(max_examples=EXAMPLES * 5, deadline=None, database=None)
@given(values=st.fixed_dictionaries({}, optional=FIELD_VALUES))
def test_sampling_params_are_valid_or_an_invalid_sampling_error(values):
    try:
        params = SamplingParams(**values)
    except InvalidSamplingError:
        return
    t = params.temperature
    assert t == 0 or math.isfinite(float(t)) and isinstance(params.ignore_eos, bool)
