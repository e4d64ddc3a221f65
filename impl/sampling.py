"""Per-request sampling: temperature, top-p, a seed per request, max tokens, EOS and stop strings.

Sampling runs on the host (NumPy) on the one row of logits that each request gets per step, so each
request draws from its own generator: a follower samples its own output with its own settings even
though it shares the leader's prompt pages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flightcheck.impl.config import MAX_SEED
from flightcheck.impl.errors import InvalidSamplingError, shown

# Sampling divides the logits by the temperature: below this the draw is greedy to float precision, and
# near 0 the scaled logits overflow (5e-324 turns them into NaN probabilities and the step fails).
MIN_TEMPERATURE = 1e-6

if TYPE_CHECKING:  # numpy is imported by the sampler itself, so that `validate` (which reads Phase) needs none
    import numpy as np

# Far past any useful value (OpenAI's API stops at 2); beyond it a value is a typo, and 10**400 is not
# even a float.
MAX_TEMPERATURE = 100.0
# The runner's positions are int32: no sequence, and so no output, is longer.
MAX_TOKENS_LIMIT = 2**31 - 1
# Every decoded step searches the output for each stop string (the server allows 4).
MAX_STOP_STRINGS = 16
MAX_STOP_CHARS = 1024


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How one request picks its tokens. ``temperature=0`` is greedy (argmax).

    ``seed=None`` derives the seed from the engine seed and the request id, so runs are repeatable.
    ``stop`` strings end the output when its decoded text contains one (the text is cut before it).
    ``ignore_eos`` keeps generating past an end-of-sequence token (benchmarks use it for fixed lengths).
    """

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    max_tokens: int = 16
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            raise InvalidSamplingError(f"sampling.stop must be a list of strings, got the string {shown(self.stop)}")
        if not isinstance(self.stop, (list, tuple)):
            raise InvalidSamplingError(f"sampling.stop must be a list of strings, got {shown(self.stop)}")
        object.__setattr__(self, "stop", tuple(self.stop))
        self.validate()

    def validate(self) -> None:
        """Raises ``InvalidSamplingError`` naming the first field out of range (every field has a type and
        a finite range, so a value accepted here cannot fail a step later)."""
        t = self.temperature
        # Why no float(t): an int such as 10**400 does not convert; comparisons with ints are exact.
        if isinstance(t, bool) or not isinstance(t, (int, float)) or (isinstance(t, float) and not math.isfinite(t)) \
                or t < 0:
            raise InvalidSamplingError(f"sampling.temperature must be a finite number >= 0, got {shown(t)}")
        if 0 < t < MIN_TEMPERATURE:
            raise InvalidSamplingError(f"sampling.temperature is {shown(t)}: use 0 for greedy, or at least "
                                       f"{MIN_TEMPERATURE:g} (closer to 0 the scaled logits overflow)")
        if t > MAX_TEMPERATURE:
            raise InvalidSamplingError(f"sampling.temperature is {shown(t)}, above its limit of {MAX_TEMPERATURE:g}")
        p = self.top_p
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 < p <= 1):
            raise InvalidSamplingError(f"sampling.top_p must be in (0, 1], got {shown(p)}")
        seed = self.seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
            raise InvalidSamplingError(f"sampling.seed must be None or an integer in [0, {MAX_SEED}] "
                                       f"(a signed 64-bit integer), got {shown(seed)}")
        m = self.max_tokens
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidSamplingError(f"sampling.max_tokens must be an integer >= 1, got {shown(m)}")
        if m > MAX_TOKENS_LIMIT:
            raise InvalidSamplingError(f"sampling.max_tokens is {shown(m)}, above its limit of {MAX_TOKENS_LIMIT} "
                                       "(positions are int32)")
        if len(self.stop) > MAX_STOP_STRINGS:
            raise InvalidSamplingError(f"sampling.stop holds {len(self.stop)} strings, above its limit of {MAX_STOP_STRINGS}")
        for s in self.stop:
            if not isinstance(s, str) or not s:
                raise InvalidSamplingError(f"sampling.stop entries must be non-empty strings, got {shown(s)}")
            if len(s) > MAX_STOP_CHARS:
                raise InvalidSamplingError(f"sampling.stop entry of {len(s)} characters is above its limit of "
                                           f"{MAX_STOP_CHARS}")
        if not isinstance(self.ignore_eos, bool):
            raise InvalidSamplingError(f"sampling.ignore_eos must be true or false, got {shown(self.ignore_eos)}")


class Sampler:
    """One request's token picker, holding its own random generator."""

    def __init__(self, params: SamplingParams, default_seed: int | tuple[int, ...]) -> None:
        import numpy as np

        self.params = params
        self.rng = np.random.default_rng(params.seed if params.seed is not None else default_seed)

    def sample(self, logits: np.ndarray) -> int:
        """Picks the next token from one row of logits [vocab]."""
        import numpy as np

        if self.params.temperature == 0:
            return int(np.argmax(logits))
        scaled = logits.astype(np.float64) / self.params.temperature
        probs = np.exp(scaled - scaled.max())
        probs /= probs.sum()
        if self.params.top_p < 1.0:
            order = np.argsort(-probs, kind="stable")
            cumulative = np.cumsum(probs[order])
            # Keep the smallest head of the distribution whose mass reaches top_p (at least one token).
            num_kept = int(np.searchsorted(cumulative, self.params.top_p)) + 1
            kept = order[:num_kept]
            kept_probs = probs[kept] / probs[kept].sum()
            return int(kept[self.rng.choice(num_kept, p=kept_probs)])
        return int(self.rng.choice(len(probs), p=probs))


def find_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Index where the earliest stop string starts in ``text``, or None."""
    hits = [i for i in (text.find(s) for s in stop) if i >= 0]
    return min(hits) if hits else None
