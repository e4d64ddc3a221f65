"""The output oracle: a request's tokens must be what the model gives its own sequence, uncached.

Each test breaks the engine's sampling in a way the spec, the K/V witness and every book keeps quiet
about (the request's own tokens are fed back consistently, so every page holds the K/V of its own
sequence), and asserts the oracle names the first wrong output; the same program passes unbroken."""

import numpy as np

from flightcheck.checks.conform.engines import load_model
from flightcheck.checks.conform.outputs import output_problems, reference_logits
from flightcheck.checks.conform.program import Program, Setup, Template
from flightcheck.checks.conform.runner import run_program
from flightcheck.impl.sampling import Sampler, SamplingParams
from flightcheck.impl.scheduler import Scheduler

A = Template((3,) * 40, 4, "A")
B = Template((4,) * 40, 4, "B")


def program(ops):
    return Program(Setup({"max_running": 2, "num_pages": 16, "prefill_chunk_pages": 2}, (A, B)), tuple(ops))


def test_a_greedy_request_given_its_second_best_token_is_named(monkeypatch):
    ops = [("arrive", 0, 0.0, 0), ("step", 8)]
    assert run_program(program(ops)).ok
    greedy = Sampler.sample
    monkeypatch.setattr(Sampler, "sample", lambda self, logits: int(np.argsort(logits)[-2])
                        if self.params.temperature == 0 else greedy(self, logits))
    out = run_program(program(ops))
    assert out.diagnosis is not None and out.diagnosis.kind == "output"
    assert out.diagnosis.properties == ["outputs_as_uncached"]
    assert out.diagnosis.reasons[0].startswith("r0's output 1 is token ")


def test_a_sampled_request_that_skips_a_draw_is_named(monkeypatch):
    # Hot enough that the tiny model's draws vary (at the campaigns' 0.8 its distribution is peaked).
    ops = [("arrive", 0, 4.0, 5), ("step", 8)]
    assert run_program(program(ops)).ok
    sample = Sampler.sample

    def skips(self, logits):  # the generator advanced twice a token: a token drawn from the wrong draw
        self.rng.random()
        return sample(self, logits)
    monkeypatch.setattr(Sampler, "sample", skips)
    out = run_program(program(ops))
    assert out.diagnosis is not None
    assert any("sampler (seed 5, temperature 4.0) draws" in r for r in out.diagnosis.reasons)


def test_logits_of_another_request_are_named(monkeypatch):
    """Two requests decode in one pass; each samples the other's row (a batch index off by one)."""
    ops = [("arrive", 0, 0.0, 0), ("arrive", 1, 0.0, 0), ("step", 10)]
    assert run_program(program(ops)).ok
    forward = Scheduler.forward
    monkeypatch.setattr(Scheduler, "forward", lambda self, work: forward(self, work)[::-1].copy())
    out = run_program(program(ops))
    assert out.diagnosis is not None
    assert any("computed uncached" in r for r in out.diagnosis.reasons)


def test_the_replayed_draw_is_numpys_own():
    """The oracle replays Generator.choice as one uniform draw and a search of the cumulative sum."""
    model = load_model("tiny")[0]
    prompt = list(range(7, 40))
    params = SamplingParams(temperature=4.0, seed=11, max_tokens=6)
    sampler, outputs = Sampler(params, 0), []
    for _ in range(6):
        outputs.append(sampler.sample(reference_logits(model, prompt + outputs)[-1]))
    # The head of the rows asked for is the head of the whole sequence's rows, up to BLAS rounding (a
    # product of another shape may block its sums differently: 3e-6 apart on one CI run).
    assert np.allclose(reference_logits(model, prompt + outputs, len(prompt)),
                       reference_logits(model, prompt + outputs)[len(prompt):], rtol=1e-5, atol=1e-4)
    assert output_problems(model, prompt, outputs, params) == []
    assert output_problems(model, prompt, outputs, SamplingParams(temperature=4.0, seed=12, max_tokens=6)) != []
