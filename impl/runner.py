"""The model runner: per-layer paged KV pools and one batched forward pass over many sequences.

The scheduler owns page allocation; the runner owns the pools and turns a list of ``SeqChunk``
(each a sequence's new tokens, its start position and its block table) into the logits of each
chunk's last token. Prefill chunks and single-token decodes of different sequences go through the
model as one packed row of tokens, so every matmul sees the whole batch; only attention is split:

- all single-token decodes form one padded batch (keys gathered from their pages, padding masked);
- each multi-token prefill chunk attends over its own gathered pages with a causal mask.

Why gather rather than a paged kernel: MLX has no paged-attention kernel on CPU, and gathering
a sequence's slots with one ``take`` per layer costs little next to the projections (measured in
BENCHMARKS.md). Why decodes padded together but prefills apart: a decode's query row is cheap, so
padding the batch to the longest sequence costs little, while padding a 512-token prefill to share a
batch with decodes (or vice versa) would multiply the attention work.

All MLX evaluation of the engine happens here, in ``forward`` (one ``mx.eval`` per pass), and in the
numpy hand-overs of ``fastops`` that the model's layers call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flightcheck.impl import fastops
from flightcheck.impl.blas import mx
from flightcheck.impl.llama import Model
from flightcheck.impl.pages import PAGE_SIZE
QUERY_BLOCK = 128  # prefill queries per attention call (see _PrefillGroup.query_blocks)


@dataclass(frozen=True)
class SeqChunk:
    """One sequence's share of a forward pass.

    ``token_ids`` are computed at positions ``start_pos ..``; ``block_table[k]`` is the page holding
    positions ``[16k, 16k + 16)`` and must cover every position up to ``end_pos``.
    """

    token_ids: list[int]
    start_pos: int
    block_table: list[int]

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def end_pos(self) -> int:
        return self.start_pos + len(self.token_ids)


@dataclass
class _PrefillGroup:
    row_start: int
    row_end: int
    start_pos: int
    gather_slots: mx.array  # [end_pos] slot of every position of the sequence
    mask: mx.array | None  # [n, end_pos] bool, lower-right causal; None for one token

    def query_blocks(self, block: int) -> list[tuple[int, int, int]]:
        """(first row, end row, number of keys) per block of at most ``block`` queries.

        Why: a causal query block only sees keys up to its last position, so splitting a long chunk
        skips the masked upper triangle of the scores (a 512-token prefill computes 62% of them).
        """
        n = self.row_end - self.row_start
        return [(r, min(r + block, n), self.start_pos + min(r + block, n)) for r in range(0, n, block)]


@dataclass
class _DecodeGroup:
    num_rows: int  # decodes occupy the first rows of the packed batch
    gather_slots: mx.array  # [Bd, Lmax], padded with slot 0
    mask: mx.array | None  # [Bd, 1, 1, Lmax] bool, False on padding; None when nothing is padded


class _BatchPlan:
    """Index arrays shared by every layer of one forward pass (built once, on the host)."""

    def __init__(self, chunks: list[SeqChunk], page_size: int):
        # Decodes first, then prefills: each group's rows are contiguous in the packed batch.
        order = sorted(range(len(chunks)), key=lambda i: chunks[i].num_tokens > 1)
        token_ids: list[int] = []
        positions: list[int] = []
        write_slots: list[int] = []
        last_rows = [0] * len(chunks)
        decode_slots: list[list[int]] = []
        self.prefills: list[_PrefillGroup] = []
        for i in order:
            chunk = chunks[i]
            slots = _slots(chunk, page_size)
            row_start = len(token_ids)
            token_ids.extend(chunk.token_ids)
            positions.extend(range(chunk.start_pos, chunk.end_pos))
            write_slots.extend(slots[chunk.start_pos:].tolist())
            last_rows[i] = len(token_ids) - 1
            if chunk.num_tokens == 1:
                decode_slots.append(slots)
            else:
                q_pos = mx.arange(chunk.start_pos, chunk.end_pos)[:, None]
                mask = q_pos >= mx.arange(chunk.end_pos)[None, :]
                self.prefills.append(_PrefillGroup(row_start, len(token_ids), chunk.start_pos,
                                                   mx.array(slots), mask))
        self.decode: _DecodeGroup | None = None
        if decode_slots:
            width = max(len(s) for s in decode_slots)
            if all(len(s) == width for s in decode_slots):
                # No padding (one sequence, or all at the same length): no mask, and one op less a layer.
                self.decode = _DecodeGroup(len(decode_slots), mx.array(np.stack(decode_slots)), None)
            else:
                padded = np.zeros((len(decode_slots), width), dtype=np.int32)  # padding reads slot 0, masked
                valid = np.zeros((len(decode_slots), width), dtype=bool)
                for row, s in enumerate(decode_slots):
                    padded[row, : len(s)] = s
                    valid[row, : len(s)] = True
                self.decode = _DecodeGroup(len(decode_slots), mx.array(padded), mx.array(valid)[:, None, None, :])
        self.token_ids = mx.array(token_ids, dtype=mx.int32)[None]
        self.positions = mx.array(positions, dtype=mx.int32)
        self.write_slots = mx.array(write_slots, dtype=mx.int32)
        self.last_rows = mx.array(last_rows, dtype=mx.int32)


def _slots(chunk: SeqChunk, page_size: int) -> np.ndarray:
    """Pool slot of every position [0, end_pos) of a chunk's sequence (vectorised: contexts run to 8k)."""
    pages = np.asarray(chunk.block_table[: -(-chunk.end_pos // page_size)], dtype=np.int32)
    return (pages[:, None] * page_size + np.arange(page_size, dtype=np.int32)).reshape(-1)[: chunk.end_pos]


class _PagedLayerCache:
    """``LayerCache`` over one layer's pools for one forward pass (see llama.LayerCache)."""

    def __init__(self, runner: "ModelRunner", layer: int, plan: _BatchPlan):
        self.runner, self.layer, self.plan = runner, layer, plan

    def rotate(self, x: mx.array, dims: int, base: float) -> mx.array:
        if x.shape[2] == 1:
            # One token (a lone decode): [1, heads, 1, d] is already its per-token layout.
            return mx.fast.rope(x, dims, traditional=True, base=base, scale=1.0, offset=self.plan.positions)
        # [1, heads, T, d] -> [T, heads, 1, d]: every token is its own "batch" row with its own offset.
        per_token = x.transpose(2, 1, 0, 3)
        rotated = mx.fast.rope(per_token, dims, traditional=True, base=base, scale=1.0, offset=self.plan.positions)
        return rotated.transpose(2, 1, 0, 3)

    def attend(self, queries: mx.array, keys: mx.array, values: mx.array, scale: float) -> mx.array:
        plan, runner = self.plan, self.runner
        # Write first: every new token's K/V goes to its slot, so the gathers below see it.
        k_pool = runner.k_pools[self.layer]
        v_pool = runner.v_pools[self.layer]
        k_pool[:, plan.write_slots] = keys[0]  # pools are [Hkv, slots, d]: keys[0] is [Hkv, T, d]
        v_pool[:, plan.write_slots] = values[0]
        runner.k_pools[self.layer] = k_pool
        runner.v_pools[self.layer] = v_pool
        outs = []
        if plan.decode is not None:
            group = plan.decode
            # Decodes alone fill the batch: no slice op needed.
            q = (queries[:, :, : group.num_rows] if plan.prefills else queries).transpose(2, 1, 0, 3)  # [Bd, H, 1, d]
            k = k_pool[:, group.gather_slots]  # [Hkv, Bd, Lmax, d]
            v = v_pool[:, group.gather_slots]
            out = fastops.attention(q, k, v, scale, group.mask)
            outs.append(out.transpose(2, 1, 0, 3))
        for group in plan.prefills:
            k = k_pool[:, group.gather_slots][:, None]  # [Hkv, 1, L, d]
            v = v_pool[:, group.gather_slots][:, None]
            for r0, r1, num_keys in group.query_blocks(runner.query_block):
                q = queries[:, :, group.row_start + r0: group.row_start + r1]
                outs.append(fastops.attention(q, k[:, :, :num_keys], v[:, :, :num_keys], scale,
                                              group.mask[r0:r1, :num_keys]))
        return outs[0] if len(outs) == 1 else mx.concatenate(outs, axis=2)


class ModelRunner:
    """Owns the per-layer KV pools of ``num_pages`` pages and runs batched forward passes.

    For example::

        runner = ModelRunner(tiny_model(), num_pages=64)
        logits = runner.forward([SeqChunk([1, 2, 3], 0, [0]), SeqChunk([7], 20, [5, 6])])
    """

    def __init__(self, model: Model, num_pages: int, page_size: int = PAGE_SIZE, kv_dtype: mx.Dtype = mx.float32):
        if num_pages < 1:
            raise ValueError(f"num_pages must be at least 1, got {num_pages}")
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.model = model
        self.num_pages = num_pages
        self.query_block = QUERY_BLOCK
        self.page_size = page_size
        args = model.args
        self.vocab_size = args.vocab_size
        self.max_positions = args.max_position_embeddings
        # [Hkv, slots, d]: a gather of a sequence's slots is then [Hkv, L, d], the layout attention reads.
        shape = (args.num_key_value_heads, num_pages * page_size, args.head_dim)
        self.k_pools = [mx.zeros(shape, dtype=kv_dtype) for _ in range(args.num_hidden_layers)]
        self.v_pools = [mx.zeros(shape, dtype=kv_dtype) for _ in range(args.num_hidden_layers)]
        mx.eval(self.k_pools, self.v_pools)

    @property
    def kv_bytes(self) -> int:
        return sum(p.nbytes for p in self.k_pools) + sum(p.nbytes for p in self.v_pools)

    def validate(self, chunks: list[SeqChunk]) -> None:
        """Raises ValueError naming the chunk and field at fault; nothing is written on failure."""
        if not chunks:
            raise ValueError("forward needs at least one SeqChunk")
        written: dict[int, int] = {}
        for i, c in enumerate(chunks):
            if not c.token_ids:
                raise ValueError(f"chunk {i}: token_ids is empty")
            if c.start_pos < 0:
                raise ValueError(f"chunk {i}: start_pos {c.start_pos} is negative")
            if c.end_pos > self.max_positions:
                raise ValueError(f"chunk {i}: end position {c.end_pos} exceeds the context ({self.max_positions})")
            bad = [t for t in c.token_ids if not 0 <= t < self.vocab_size]
            if bad:
                raise ValueError(f"chunk {i}: token id {bad[0]} outside the vocabulary [0, {self.vocab_size})")
            needed = -(-c.end_pos // self.page_size)
            if len(c.block_table) < needed:
                raise ValueError(f"chunk {i}: block_table has {len(c.block_table)} pages, positions up to "
                                 f"{c.end_pos} need {needed}")
            bad = [p for p in c.block_table[:needed] if not 0 <= p < self.num_pages]
            if bad:
                raise ValueError(f"chunk {i}: page id {bad[0]} outside the pool [0, {self.num_pages})")
            for pos in range(c.start_pos, c.end_pos):
                slot = c.block_table[pos // self.page_size] * self.page_size + pos % self.page_size
                if slot in written:
                    raise ValueError(f"chunk {i}: position {pos} writes page {slot // self.page_size} slot "
                                     f"{slot % self.page_size}, also written by chunk {written[slot]}")
                written[slot] = i

    def forward(self, chunks: list[SeqChunk]) -> mx.array:
        """Writes the chunks' K/V into their pages and returns float32 logits [len(chunks), vocab]
        of each chunk's last token, evaluated."""
        self.validate(chunks)
        plan = _BatchPlan(chunks, self.page_size)
        caches = [_PagedLayerCache(self, i, plan) for i in range(len(self.k_pools))]
        hidden = self.model.hidden(plan.token_ids, caches)
        logits = self.model.head(hidden[0, plan.last_rows]).astype(mx.float32)
        mx.eval(logits, self.k_pools, self.v_pools)
        return logits

    def page_kv(self, layer: int, page: int) -> tuple[mx.array, mx.array]:
        """Keys and values stored in one page of one layer, each [page_size, Hkv, d] (for inspection)."""
        span = slice(page * self.page_size, (page + 1) * self.page_size)
        return self.k_pools[layer][:, span].transpose(1, 0, 2), self.v_pools[layer][:, span].transpose(1, 0, 2)

    def copy_page(self, src: int, dst: int) -> None:
        """Copies page ``src``'s K/V into page ``dst`` in every layer (copy-on-write helper)."""
        for p in (src, dst):
            if not 0 <= p < self.num_pages:
                raise ValueError(f"page id {p} outside the pool [0, {self.num_pages})")
        s, d = src * self.page_size, dst * self.page_size
        for pools in (self.k_pools, self.v_pools):
            for i, pool in enumerate(pools):
                pool[:, d: d + self.page_size] = pool[:, s: s + self.page_size]
                pools[i] = pool
        mx.eval(self.k_pools, self.v_pools)
