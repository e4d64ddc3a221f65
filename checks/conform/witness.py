"""The KV witness: which tokens' K/V the model runner actually wrote into each page slot.

Whether a cached page's KV was really computed is not a field of the engine, so :class:`KVWitness` sits
between the scheduler and the model runner and records, for every page slot the runner is asked to
write, a chained tag of the tokens that produced it; the abstraction calls a cached page whose slots do
not carry the tags of its own prefix ``RESERVED`` (visible but not computed), which the spec's
``visible_after_compute`` forbids.

For example::

    >>> tags = chain_tags([5, 6, 7])
    >>> len(tags), tags == chain_tags([5, 6, 7]), tags[:2] == chain_tags([5, 6])
    (3, True, True)
"""

from __future__ import annotations

from typing import Any, Sequence

_ROOT_TAG = 0x5EED


def chain_tags(token_ids: Sequence[int], after: int = _ROOT_TAG) -> list[int]:
    """The KV identity of every position of a sequence: tag(p) = hash(tag(p - 1), token p).

    Two positions carry the same tag exactly when their whole prefixes agree (up to hash collisions),
    which is what makes their K/V equal. ``after`` is the tag before the first token (a sequence's
    continuation: ``chain_tags(a + b) == chain_tags(a) + chain_tags(b, chain_tags(a)[-1])``).
    """
    tags, prev = [], after
    for t in token_ids:
        prev = hash((prev, int(t)))
        tags.append(prev)
    return tags


class KVWitness:
    """A transparent proxy of a ``ModelRunner`` that records which page slots each forward pass wrote.

    ``tags[page_id][slot]`` is the chain tag (see :func:`chain_tags`) of the token whose K/V was last
    written into that slot. Everything else is forwarded to the real runner, so the engine runs exactly
    as before. :meth:`attach` installs it on an engine.
    """

    def __init__(self, runner: Any) -> None:
        self._runner = runner
        self.tags: dict[int, list[int | None]] = {}
        self.passes: list[int] = []  # rows (chunks) of each forward pass, in order

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    @classmethod
    def attach(cls, engine: Any) -> "KVWitness":
        """Put a witness between ``engine``'s scheduler and its runner; returns the witness."""
        runner = engine.scheduler.runner
        if isinstance(runner, KVWitness):
            return runner
        witness = cls(runner)
        engine.runner = engine.scheduler.runner = witness
        return witness

    def forward(self, chunks: list) -> Any:
        """Record the slots each chunk writes, then run the real forward pass."""
        self.passes.append(len(chunks))
        size = self._runner.page_size
        for chunk in chunks:
            table, pos = chunk.block_table, chunk.start_pos
            prev = _ROOT_TAG if pos == 0 else self._tag(table, pos - 1, size)
            for token in chunk.token_ids:
                prev = hash((prev, int(token)))
                self.tags.setdefault(table[pos // size], [None] * size)[pos % size] = prev
                pos += 1
        return self._runner.forward(chunks)

    def rows_since(self, first: int) -> list[int]:
        """The row counts of the forward passes from the ``first``-th on."""
        return self.passes[first:]

    def _tag(self, table: list[int], pos: int, size: int) -> int | None:
        slots = self.tags.get(table[pos // size])
        return None if slots is None else slots[pos % size]

    def holds(self, page_id: int, expected: Sequence[int]) -> bool:
        """True when every slot of ``page_id`` carries the expected tags (the page's KV was computed)."""
        return self.tags.get(page_id) == list(expected)
