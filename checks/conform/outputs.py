"""The output oracle: a finished request's tokens are the ones the model gives its own sequence, uncached.

Prefix caching, single-flight and batching exist to save work; none of them may change what a request
generates. The spec cannot say so (it has no tokens), and the KV witness only sees which tokens' K/V were
written where, not which logits a token was drawn from: a sampler fed another request's row, a token
drawn from a stale row, or an output recorded out of order leaves every page right and the output wrong.

So at each finish the request's whole sequence (prompt, then outputs but the last) goes through the
model once, on its plain contiguous cache, with nothing shared and nothing paged (teacher forcing: row k
holds the logits output k was drawn from). Each output must be one the request's own sampler could have
drawn from that row: for a greedy request a token whose logit is the row's largest, within
:data:`LOGIT_TOLERANCE`; for a sampled one the token whose interval of the cumulative distribution holds
the sampler's uniform draw (replayed from the request's seed, one draw per token, as NumPy's
``Generator.choice`` takes it), within :data:`PROBABILITY_TOLERANCE`. The tolerances absorb the float
differences between the paged, batched forward pass and the contiguous one (measured on 2026-12-02:
at most 1.1e-5 in a logit and 4.3e-7 in the cumulative distribution at temperature 0.8 on the tiny
model, 3.6e-5 and 1.5e-6 on SmolLM2-135M, so both tolerances leave a margin of about 100); a wrong
token is almost always far outside them.

For example::

    >>> from flightcheck.checks.conform.engines import load_model
    >>> from flightcheck.impl.sampling import SamplingParams
    >>> model = load_model("tiny")[0]
    >>> prompt = list(range(1, 20))
    >>> first = int(reference_logits(model, prompt, len(prompt) - 1)[0].argmax())  # the greedy first output
    >>> output_problems(model, prompt, [first], SamplingParams(max_tokens=4))
    []
    >>> output_problems(model, prompt, [(first + 1) % 256], SamplingParams(max_tokens=4))[0][:17]
    'output 1 is token'
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # numpy is imported where the logits are read: `validate` of a log without a model needs none
    import numpy as np

LOGIT_TOLERANCE = 1e-3        # how far below the row's largest logit a greedy token may be
PROBABILITY_TOLERANCE = 1e-4  # how far outside a sampled token's interval the draw may fall
_CACHE_SIZE = 256

_ROWS: OrderedDict[tuple[int, tuple[int, ...]], np.ndarray] = OrderedDict()


def reference_logits(model: Any, tokens: Sequence[int], start: int = 0) -> np.ndarray:
    """The model's logits after each token of ``tokens[start:]`` ([len - start, vocab], float64), from one
    pass over all of ``tokens`` on a fresh contiguous cache (the output head only on the rows asked for:
    SmolLM2's has 49,152 of them); remembered for the last few sequences, since runs repeat them."""
    import numpy as np

    from flightcheck.impl.blas import mx

    key = (id(model), tuple(int(t) for t in tokens), start)
    rows = _ROWS.get(key)
    if rows is None:
        hidden = model.hidden(mx.array([list(key[1])]), model.make_cache())
        logits = model.head(hidden[:, start:])[0]
        rows = np.array(logits.astype(mx.float32), dtype=np.float64)
        _ROWS[key] = rows
        if len(_ROWS) > _CACHE_SIZE:
            _ROWS.popitem(last=False)
    else:
        _ROWS.move_to_end(key)
    return rows


def output_problems(model: Any, prompt: Sequence[int], outputs: Sequence[int], params: Any) -> list[str]:
    """What is wrong with ``outputs`` as the model's answer to ``prompt`` under ``params`` (a
    :class:`~flightcheck.impl.sampling.SamplingParams`): one sentence at the first wrong output, or none.

    A sampled request without a seed of its own (its draws depend on the engine's seed) and one with
    ``top_p`` below 1 are checked only where greedy (never): the draws cannot be replayed here."""
    if not outputs:
        return []
    sampled = params.temperature != 0
    if sampled and (params.seed is None or params.top_p < 1.0):
        return []
    import numpy as np

    rows = reference_logits(model, list(prompt) + list(outputs[:-1]), len(prompt) - 1)
    rng = np.random.default_rng(params.seed) if sampled else None
    for k, (token, row) in enumerate(zip(outputs, rows)):
        token = int(token)
        if not 0 <= token < len(row):
            return [f"output {k + 1} is token {token}, outside the vocabulary of {len(row)}"]
        if not sampled:
            best = int(row.argmax())
            if row[token] < row[best] - LOGIT_TOLERANCE * max(1.0, abs(row[best])):
                return [f"output {k + 1} is token {token} (logit {row[token]:.4f}), but the model's greedy "
                        f"choice for its sequence is {best} (logit {row[best]:.4f}), computed uncached"]
            continue
        scaled = row / params.temperature
        probs = np.exp(scaled - scaled.max())
        cdf = np.cumsum(probs / probs.sum())
        u = float(rng.random())
        low = float(cdf[token - 1]) if token else 0.0
        if not low - PROBABILITY_TOLERANCE <= u < float(cdf[token]) + PROBABILITY_TOLERANCE:
            drawn = int(np.searchsorted(cdf / cdf[-1], u, side="right"))
            return [f"output {k + 1} is token {token}, but the request's sampler (seed {params.seed}, temperature "
                    f"{params.temperature}) draws {drawn} from the model's logits for its sequence, computed uncached"]
    return []


def request_output_problems(engine: Any, engine_id: int) -> list[str]:
    """:func:`output_problems` for the engine's request ``engine_id`` (the engine's own model)."""
    request = engine.scheduler.requests.get(engine_id)
    if request is None:
        return []
    problems = output_problems(engine.scheduler.runner.model, request.token_ids, request.output_token_ids,
                               request.sampling)
    return [f"r{engine_id}'s {p}" for p in problems]
