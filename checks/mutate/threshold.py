"""``--min-score``: a record's score against the lowest one accepted.

Nothing to score (no mutant killed or survived) is not a pass: :func:`unscored` says so, and the
command reports it as bad arguments before printing anything; :func:`below` is the verdict (exit 1).

For example::

    >>> record = {"score": {"score": 0.5}}
    >>> below(record, 0.9), below(record, 0.5), below(record, None)
    (True, False, False)
    >>> print(unscored({"score": {"score": None}}, 0.9, "the mutants run"))
    --min-score 0.9: nothing to score (the mutants run hold no mutant that was killed or survived)
"""

from __future__ import annotations

from typing import Any, Optional


def unscored(record: dict[str, Any], min_score: Optional[float], what: str) -> Optional[str]:
    """The message when ``min_score`` is given and ``record`` has no score to compare with it (``what``
    names where the outcomes came from); None otherwise."""
    if min_score is not None and record["score"]["score"] is None:
        return (f"--min-score {min_score:g}: nothing to score ({what} hold no mutant that was killed or "
                "survived)")
    return None


def below(record: dict[str, Any], min_score: Optional[float]) -> bool:
    """True when ``record``'s score is below ``min_score`` (never without one, or without a score)."""
    value = record["score"]["score"]
    return min_score is not None and value is not None and value < min_score
