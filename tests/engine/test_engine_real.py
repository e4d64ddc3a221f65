"""The engine on the real SmolLM2-135M: two identical requests give the same greedy text with and
without prefix caching / single-flight, and the follower recovers the leader's shareable pages."""

import pytest

from flightcheck.impl import model_file
from flightcheck.impl.engine import Engine, EngineConfig
from flightcheck.impl.sampling import SamplingParams
from switches import SLOW  # noqa: E402

pytestmark = pytest.mark.skipif(not model_file.default_path().exists(),
                                reason="SmolLM2 model file not fetched (run scripts/setup.sh)")


@pytest.fixture(scope="module")
def engine():
    # Why dequantize=True: the loader's own choice depends on a timed BLAS probe, which a busy machine
    # can tip to the (much slower) quantized path; float32 is the fast path either way on CPU.
    return Engine.smollm2(EngineConfig(num_pages=128, coordination="none", prefix_caching=False), dequantize=True)


def test_cached_and_uncached_greedy_outputs_are_equal(engine):
    tokenizer = engine.tokenizer
    prompt = tokenizer.encode_chat("Explain in one sentence why the sky is blue. " * 3)
    num_shareable = (len(prompt) - 1) // 16
    uncached = engine.generate([prompt, prompt], SamplingParams(max_tokens=12))
    cached_engine = Engine(engine.runner, tokenizer, EngineConfig(num_pages=128, release="after-prefill"),
                           eos_token_ids=[tokenizer.eos_id])
    cached = cached_engine.generate([prompt, prompt], SamplingParams(max_tokens=12))
    assert [r.output_token_ids for r in cached] == [r.output_token_ids for r in uncached]
    assert uncached[0].output_token_ids == uncached[1].output_token_ids
    assert "blue" in cached[0].text.lower() or "sky" in cached[0].text.lower()
    assert [r.recovered_tokens for r in cached] == [0, 16 * num_shareable] and num_shareable >= 3


@pytest.mark.slow
def test_greedy_outputs_equal_across_configs_with_chunking_and_batching(engine):
    """Identical, partially overlapping and unrelated prompts, batched, with 4-page prefill chunks."""
    is_slow = SLOW
    tokenizer = engine.tokenizer
    doc = tokenizer.encode("Prefix caching reuses the attention key-value cache of repeated prompt prefixes. "
                           * (12 if is_slow else 4))
    prompts = [doc] * (4 if is_slow else 2) + [doc[:40] + tokenizer.encode(" What is the main point?"),
                                               tokenizer.encode_chat("What is 2+2?")]
    params = SamplingParams(max_tokens=24 if is_slow else 6)
    baseline = [r.output_token_ids for r in engine.generate(prompts, params)]
    for overrides in (dict(coordination="none"), dict(release="after-prefill"),
                      dict(release="on-completion", publication="on-completion")):
        config = EngineConfig(num_pages=128, max_running=4, prefill_chunk_pages=4, **overrides)
        other = Engine(engine.runner, tokenizer, config, eos_token_ids=[tokenizer.eos_id])
        assert [r.output_token_ids for r in other.generate(prompts, params)] == baseline, overrides
        if overrides.get("coordination") != "none":
            assert other.counters["num_followers_released"] == len(prompts) - 3
