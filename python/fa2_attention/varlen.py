"""varlen_attn: packed batches of sequences of different lengths, and a paged key/value cache, with
PyTorch's torch.nn.attention.varlen.varlen_attn interface on this repository's kernels.

With kernel="fast" on CUDA, when no sequence has more than 16 queries (decoding: the next token,
or a few drafted ones), bfloat16 or float16 and head dim 32, 64 or 128, the forward is one launch
of the decoding kernel (fa2::varlen_decode, step07_benchmark/kernels/sm80/decode.cuh) over every
sequence, reading the packed or paged keys where they lie, the query heads of a kv head together,
each long cache cut into parts (split-KV) that a second launch merges. Longer sequences on an
sm_90 GPU (bfloat16 or float16, head dim 64 or 128, keys packed) run forward in one launch of v6's
packed twin (fa2::varlen_packed): every sequence's query tiles, the longest first, read and written
where they lie. Their backward (any query lengths; keys packed, no seqused_k; deterministic or not)
is one launch of v6b's packed twin (fa2::varlen_packed_backward) over every sequence's key tiles.
Otherwise every sequence runs through the dense operators (fa2::forward, fa2::backward) on its own rows of the packed
tensors. The masks are aligned bottom-right, as FlashAttention's varlen and kv-cache
functions align them: the last query of a sequence sits at its last key, so a query of a sequence
with N_q queries and N_k keys stands at offset N_k - N_q, and query i sees key j when

    i + (N_k - N_q) - left <= j <= i + (N_k - N_q) + right     (-1: no bound on that side).

The dense operators align top-left (query i at key i). The bottom-right rule becomes theirs by
leaving out the queries that see no key (with a right bound, the first ones when the offset
plus the bound is negative) and the keys that no query sees (with a left bound, the first ones),
and by moving the window's bounds by what is left of the offset (_dense_call).
"""

import functools
import math
from typing import NamedTuple, Optional

import torch

__all__ = ["AuxRequest", "varlen_attn"]


class AuxRequest(NamedTuple):
    """Which auxiliary outputs varlen_attn returns besides out (PyTorch's AuxRequest)."""

    lse: bool = False


def _dense_call(n_q, n_k, left, right):
    """How sequence (n_q queries, n_k keys) runs on the dense, top-left operators under the
    bottom-right window (left, right): (first query, first key, dense left, dense right), the dense
    bounds -1 when unbounded, or None when no query sees any key."""
    if n_q == 0 or n_k == 0:
        return None
    offset = n_k - n_q
    # Queries before q_skip see no key: j <= i + offset + right needs i >= -(offset + right).
    q_skip = max(0, -(offset + right)) if right >= 0 else 0
    # Keys before k_skip are seen by no query: j >= i + offset - left for i >= q_skip.
    k_skip = max(0, offset - left + q_skip) if left >= 0 else 0
    if q_skip >= n_q or k_skip >= n_k:
        return None
    # Relative to the rows that remain, query i' = i - q_skip sees key j' = j - k_skip when
    # i' + (offset + q_skip - k_skip) - left <= j' <= i' + (offset + q_skip - k_skip) + right.
    shift = offset + q_skip - k_skip
    dense_left = left - shift if left >= 0 else -1
    dense_right = right + shift if right >= 0 else -1
    assert dense_left >= -1 and dense_right >= -1, (n_q, n_k, left, right)
    return q_skip, k_skip, dense_left, dense_right


def _as_dense(t):
    """A (n, H, D) slice as the dense operators' (1, H, n, D)."""
    return t.transpose(0, 1).unsqueeze(0)


def _check_cu(name, cu, device, batch):
    """cu_seq_q or cu_seq_k before its values are read: a tensor, int32, 1-D, on the inputs' device,
    batch + 1 entries (batch None: any number from 1)."""
    if not isinstance(cu, torch.Tensor):
        raise RuntimeError(f"varlen_attn: {name} must be a tensor, got {type(cu).__name__}")
    if cu.dtype != torch.int32:
        raise RuntimeError(f"varlen_attn: {name} must be int32, got {cu.dtype}")
    if cu.dim() != 1:
        raise RuntimeError(f"varlen_attn: {name} must be 1-D (batch + 1,), got shape {tuple(cu.shape)}")
    if cu.device != device:
        raise RuntimeError(f"varlen_attn: {name} must be on the inputs' device {device}, got {cu.device}")
    if batch is not None and cu.numel() != batch + 1:
        raise RuntimeError(f"varlen_attn: {name} has {cu.numel()} entries, expected {batch + 1} (batch + 1)")
    if cu.numel() < 1:
        raise RuntimeError(f"varlen_attn: {name} must hold at least one entry (0)")


def _check_cu_values(name, values, total):
    """cu_seq_q's or cu_seq_k's values: from 0, never decreasing, ending within the packed tensor
    (total rows)."""
    if values[0] != 0:
        raise RuntimeError(f"varlen_attn: {name} must start at 0, got {values[0]}")
    if any(b < a for a, b in zip(values, values[1:])):
        b = next(i for i in range(len(values) - 1) if values[i + 1] < values[i])
        raise RuntimeError(f"varlen_attn: {name} decreases at entry {b + 1} ({values[b]} then {values[b + 1]})")
    if values[-1] > total:
        raise RuntimeError(f"varlen_attn: {name} ends at {values[-1]}, past the {total} rows of its tensor")


def _first_over(counts, bound):
    """The first index whose count is above bound, or None (one pass in C when none is)."""
    if not counts or max(counts) <= bound:
        return None
    return next(b for b, n in enumerate(counts) if n > bound)


def _window_pair(window_size):
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise RuntimeError(f"varlen_attn: window_size must be a pair (left, right), got {window_size!r}") from None
    for i, bound in enumerate((left, right)):
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < -1:
            raise RuntimeError(f"varlen_attn: window_size[{i}] must be an int >= -1 (-1: no bound), got {bound!r}")
    return left, right


def _check_index_tensors(query, cu_seq_q, cu_seq_k, max_q, max_k, seqused_k, block_table):
    """The checks of the packing arguments that need none of their values (no copy to the host):
    types, dtypes, shapes, devices, and which of them go together. Returns the batch."""
    device = query.device
    _check_cu("cu_seq_q", cu_seq_q, device, None)
    batch = cu_seq_q.numel() - 1
    if isinstance(max_q, bool) or isinstance(max_k, bool) or not isinstance(max_q, int) or not isinstance(max_k, int):
        raise RuntimeError(f"varlen_attn: max_q and max_k must be ints, got {max_q!r} and {max_k!r}")
    if max_q < 0 or max_k < 0:
        raise RuntimeError(f"varlen_attn: max_q and max_k must not be negative, got {max_q} and {max_k}")
    if seqused_k is not None:
        if not isinstance(seqused_k, torch.Tensor) or seqused_k.dtype != torch.int32 or seqused_k.dim() != 1:
            raise RuntimeError("varlen_attn: seqused_k must be a 1-D int32 tensor (one length per sequence)")
        if seqused_k.device != device:
            raise RuntimeError(f"varlen_attn: seqused_k must be on the inputs' device {device}, got {seqused_k.device}")
        if seqused_k.numel() != batch:
            raise RuntimeError(f"varlen_attn: seqused_k has {seqused_k.numel()} entries, expected {batch} (batch)")
    if block_table is not None:
        if not isinstance(block_table, torch.Tensor) or block_table.dtype != torch.int32 or block_table.dim() != 2:
            raise RuntimeError("varlen_attn: block_table must be a 2-D int32 tensor (batch, pages per sequence)")
        if block_table.device != device:
            raise RuntimeError(f"varlen_attn: block_table must be on the inputs' device {device}, "
                               f"got {block_table.device}")
        if block_table.shape[0] != batch:
            raise RuntimeError(f"varlen_attn: block_table has {block_table.shape[0]} rows, expected {batch} (batch)")
        if seqused_k is None:
            raise RuntimeError("varlen_attn: block_table needs seqused_k (the cache length of each sequence)")
    else:
        if cu_seq_k is None:
            raise RuntimeError("varlen_attn: cu_seq_k may be None only with a block_table")
        _check_cu("cu_seq_k", cu_seq_k, device, batch)
    return batch


def _plan(query, key, cu_seq_q, cu_seq_k, max_q, max_k, window, seqused_k, block_table, dense=True):
    """Checks the packing arguments and lays out each sequence's rows. Returns a list of
    (q0, n_q, key_index, n_k, dense) per sequence, key_index a (start) int or, for a paged cache,
    (block_table, its row, page_size), dense from _dense_call (None everywhere when dense is False:
    the kernels that take the whole batch at once do not need it). The index tensors' values come
    to the host in one copy."""
    device = query.device
    total_q = query.shape[0]
    batch = _check_index_tensors(query, cu_seq_q, cu_seq_k, max_q, max_k, seqused_k, block_table)
    fetch = [cu_seq_q]
    if block_table is not None:
        pages, page_size = key.shape[0], key.shape[1]
        # Every page a sequence uses must be one of the cache's: one check over the whole table, whose
        # answer comes to the host with the other values.
        need = (seqused_k.long() + page_size - 1) // page_size
        in_use = torch.arange(block_table.shape[1], device=device).unsqueeze(0) < need.unsqueeze(1)
        outside = in_use & ((block_table < 0) | (block_table >= pages))
        fetch.append(outside.any().to(torch.int32).reshape(1))
    else:
        fetch.append(cu_seq_k)
    if seqused_k is not None:
        fetch.append(seqused_k)
    values = torch.cat(fetch).tolist()  # the one copy to the host
    q_starts, rest = values[:batch + 1], values[batch + 1:]
    _check_cu_values("cu_seq_q", q_starts, total_q)
    n_qs = [b - a for a, b in zip(q_starts, q_starts[1:])]
    b = _first_over(n_qs, max_q)
    if b is not None:
        raise RuntimeError(f"varlen_attn: max_q ({max_q}) is smaller than sequence {b}'s {n_qs[b]} queries")
    used = rest[-batch:] if seqused_k is not None and batch > 0 else ([] if seqused_k is not None else None)
    if used is not None and any(u < 0 for u in used):
        raise RuntimeError(f"varlen_attn: seqused_k must not be negative, got {used}")

    if block_table is not None:
        for b in range(batch):
            need_b = (used[b] + page_size - 1) // page_size
            if need_b > block_table.shape[1]:
                raise RuntimeError(f"varlen_attn: seqused_k[{b}] = {used[b]} needs {need_b} pages of {page_size}, "
                                   f"more than block_table's {block_table.shape[1]} per sequence")
        b = _first_over(used, max_k)
        if b is not None:
            raise RuntimeError(f"varlen_attn: max_k ({max_k}) is smaller than sequence {b}'s {used[b]} keys")
        if rest[0]:
            b, column = (int(x) for x in outside.nonzero()[0])
            raise RuntimeError(f"varlen_attn: block_table[{b}] holds page {int(block_table[b, column])}, outside the "
                               f"cache's {pages} pages")
        # The sequence's keys: the table, its row and the page size (_keys gathers them).
        return [(q_starts[b], n_qs[b], (block_table, b, page_size), used[b],
                 _dense_call(n_qs[b], used[b], *window) if dense else None) for b in range(batch)]

    k_starts = rest[:batch + 1]
    _check_cu_values("cu_seq_k", k_starts, key.shape[0])
    n_ks = [b - a for a, b in zip(k_starts, k_starts[1:])]
    if used is not None:
        b = next((b for b in range(batch) if used[b] > n_ks[b]), None)
        if b is not None:
            raise RuntimeError(f"varlen_attn: seqused_k[{b}] = {used[b]} is longer than sequence {b}'s "
                               f"{n_ks[b]} keys in cu_seq_k")
    b = _first_over(n_ks, max_k)
    if b is not None:
        raise RuntimeError(f"varlen_attn: max_k ({max_k}) is smaller than sequence {b}'s {n_ks[b]} keys")
    keys = used if used is not None else n_ks
    return [(q_starts[b], n_qs[b], k_starts[b], keys[b], _dense_call(n_qs[b], keys[b], *window) if dense else None)
            for b in range(batch)]


def _keys(t, key_index, n_k):
    """A sequence's key (or value) rows: a slice of the packed tensor, or gathered from pages
    (key_index: the block table, the sequence's row of it and the page size)."""
    if isinstance(key_index, int):
        return t[key_index:key_index + n_k]
    table, b, page_size = key_index
    pages = table[b]
    k = torch.arange(n_k, dtype=torch.long, device=t.device)
    rows = pages.long()[k // page_size] * page_size + k % page_size
    return t.reshape(-1, *t.shape[2:]).index_select(0, rows)


# The outputs start as NaN and every row is written: a row left out by mistake shows.
def _poisoned(shape, like, dtype=None):
    return torch.full(shape, math.nan, dtype=like.dtype if dtype is None else dtype, device=like.device)


def _written_rows(sequences, query_rows, key_rows, device):
    """Which rows of the packed query and key tensors the dense calls write (gradients and outputs).
    The others take 0 (and lse +inf, the dense operators' value for a query that sees no key): rows
    that no sequence holds, keys past seqused_k, queries that see no key and keys no query sees.
    Sequences' rows never overlap (cu_seq_q and cu_seq_k do not decrease)."""
    queries = torch.zeros(query_rows, dtype=torch.bool, device=device)
    keys = torch.zeros(key_rows, dtype=torch.bool, device=device)
    for q0, n_q, key_index, n_k, dense in sequences:
        if dense is None:
            continue
        queries[q0 + dense[0]:q0 + n_q] = True
        if isinstance(key_index, int):  # a paged cache's keys get no gradient
            keys[key_index + dense[1]:key_index + n_k] = True
    return queries, keys


# The decoding kernel (step07_benchmark/kernels/sm80/decode.cuh) is made for a few queries per
# sequence: the next token, or the few a speculative decoder drafts.
_DECODE_MAX_QUERIES = 16


def _decodes(query, kernel, sequences):
    """Whether kernel="fast" runs these sequences on the decoding kernel (else the dense operators)."""
    return (kernel == "fast" and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16)
            and query.shape[2] in (32, 64, 128) and query.shape[0] > 0
            and all(n_q <= _DECODE_MAX_QUERIES for _, n_q, *_ in sequences))


def _decode(query, key, value, max_q, max_k, cu_seq_q, cu_seq_k, seqused_k, block_table, scale, window, num_splits):
    """All sequences in one launch (two with split-KV): the decoding kernel reads the packed or paged
    keys in place. Rows of query past the last sequence get out 0 and lse +inf."""
    return torch.ops.fa2.varlen_decode(query, key, value, cu_seq_q, None if block_table is not None else cu_seq_k,
                                       seqused_k, block_table, max_q, max_k, scale, window[0], window[1], num_splits)


@torch.library.register_fake("fa2::varlen_decode")
def _varlen_decode_fake(query, key, value, cu_seq_q, cu_seq_k, seqused_k, block_table, max_q, max_k, scale,
                        window_left, window_right, num_splits):
    return query.new_empty(query.shape), query.new_empty((query.shape[1], query.shape[0]), dtype=torch.float32)


def _decodes_unchecked(query, key, value, max_q, kernel):
    """Whether varlen_attn with check_invariants=False calls the decoding kernel itself: no copy of
    the index values to the host, no autograd (its backward would need them)."""
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    return (not needs_grad and kernel == "fast" and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16)
            and query.shape[2] in (32, 64, 128) and query.shape[0] > 0 and max_q <= _DECODE_MAX_QUERIES)


@functools.lru_cache(maxsize=None)
def _sm90_ready(device_index):
    """Whether the operators run v6 on this CUDA device (an sm_90 GPU and a build with sm_90a code)."""
    with torch.cuda.device(device_index):
        return torch.ops.fa2.sm90_unavailable() == ""


def _packs(query, kernel, block_table):
    """Whether kernel="fast" runs the forward of every sequence in one launch of v6's packed twin."""
    return (kernel == "fast" and query.is_cuda and block_table is None
            and query.dtype in (torch.bfloat16, torch.float16) and query.shape[2] in (64, 128)
            and query.shape[0] > 0 and _sm90_ready(query.device.index))


def _packed(query, key, value, sequences, cu_seq_q, cu_seq_k, seqused_k, scale, window):
    """All sequences in one launch of v6's packed twin, which reads and writes their rows in place
    (a query that sees no key gets out 0 and lse +inf there). Rows of query past the last sequence
    get the same."""
    max_q = max((n_q for _, n_q, _, _, _ in sequences), default=0)
    max_k = max((n_k for _, _, _, n_k, _ in sequences), default=0)
    out, lse = torch.ops.fa2.varlen_packed(query, key, value, cu_seq_q, cu_seq_k, seqused_k, max_q, max_k, scale,
                                           window[0], window[1])
    end = sequences[-1][0] + sequences[-1][1] if sequences else 0
    out[end:] = 0
    lse[:, end:] = math.inf
    return out, lse


def _packed_backward(dout, query, key, value, out, lse, sequences, cu_seq_q, cu_seq_k, scale, window, deterministic):
    """The gradients of every sequence in one launch of v6b's packed twin (between its row-wise
    first and last kernels), which reads the rows in place. Rows no sequence holds get 0."""
    max_q = max((n_q for _, n_q, _, _, _ in sequences), default=0)
    max_k = max((n_k for _, _, _, n_k, _ in sequences), default=0)
    return torch.ops.fa2.varlen_packed_backward(dout, query, key, value, out, lse, cu_seq_q, cu_seq_k, max_q, max_k,
                                                scale, window[0], window[1], deterministic)


def _forward(query, key, value, sequences, scale, kernel, allow_tf32):
    out = _poisoned(query.shape, query)
    lse = _poisoned((query.shape[1], query.shape[0]), query, torch.float32)
    written, _ = _written_rows(sequences, query.shape[0], 0, query.device)
    out[~written] = 0
    lse[:, ~written] = math.inf
    for q0, n_q, key_index, n_k, dense in sequences:
        if dense is None:
            continue
        q_skip, k_skip, left, right = dense
        q = _as_dense(query[q0 + q_skip:q0 + n_q])
        k = _as_dense(_keys(key, key_index, n_k)[k_skip:])
        v = _as_dense(_keys(value, key_index, n_k)[k_skip:])
        o, l = torch.ops.fa2.forward(q, k, v, False, scale, kernel, left, right, allow_tf32)
        out[q0 + q_skip:q0 + n_q] = o[0].transpose(0, 1)
        lse[:, q0 + q_skip:q0 + n_q] = l[0]
    return out, lse


def _backward(dout, query, key, value, out, lse, sequences, scale, kernel, deterministic, allow_tf32):
    dq, dk, dv = _poisoned(query.shape, query), _poisoned(key.shape, key), _poisoned(value.shape, value)
    written_q, written_k = _written_rows(sequences, query.shape[0], key.shape[0], query.device)
    dq[~written_q] = 0
    dk[~written_k] = 0
    dv[~written_k] = 0
    for q0, n_q, k0, n_k, dense in sequences:
        if dense is None:
            continue
        q_skip, k_skip, left, right = dense
        rows, keys = slice(q0 + q_skip, q0 + n_q), slice(k0 + k_skip, k0 + n_k)
        g = torch.ops.fa2.backward(_as_dense(dout[rows]), _as_dense(query[rows]), _as_dense(key[keys]),
                                   _as_dense(value[keys]), _as_dense(out[rows]), lse[:, rows].unsqueeze(0), False,
                                   scale, kernel, deterministic, left, right, allow_tf32)
        dq[rows] = g[0][0].transpose(0, 1)
        dk[keys] = g[1][0].transpose(0, 1)
        dv[keys] = g[2][0].transpose(0, 1)
    return dq, dk, dv


# ---- the operators: torch.library custom ops, so that torch.compile sees one opaque call ----------


@torch.library.custom_op("fa2::varlen_forward", mutates_args=())
def _varlen_forward_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, cu_seq_q: torch.Tensor,
                       cu_seq_k: Optional[torch.Tensor], max_q: int, max_k: int, scale: Optional[float],
                       window_left: int, window_right: int, seqused_k: Optional[torch.Tensor],
                       block_table: Optional[torch.Tensor], kernel: str, deterministic: bool,
                       allow_tf32: bool, num_splits: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    window = (window_left, window_right)
    # The kernels that take the whole batch need no per-sequence dense calls: they are worked out
    # only for the sequence-by-sequence path.
    sequences = _plan(query, key, cu_seq_q, cu_seq_k, max_q, max_k, window, seqused_k, block_table, dense=False)
    if _decodes(query, kernel, sequences):
        # The planned lengths, not max_q and max_k: no more blocks and parts than the sequences need.
        return _decode(query, key, value, max((n_q for _, n_q, _, _, _ in sequences), default=0),
                       max((n_k for _, _, _, n_k, _ in sequences), default=0), cu_seq_q, cu_seq_k, seqused_k,
                       block_table, scale, window, num_splits)
    if _packs(query, kernel, block_table):
        return _packed(query, key, value, sequences, cu_seq_q, cu_seq_k, seqused_k, scale, window)
    sequences = [(q0, n_q, key_index, n_k, _dense_call(n_q, n_k, *window))
                 for q0, n_q, key_index, n_k, _ in sequences]
    return _forward(query, key, value, sequences, scale, kernel, allow_tf32)


@_varlen_forward_op.register_fake
def _varlen_forward_fake(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, scale, window_left, window_right,
                         seqused_k, block_table, kernel, deterministic, allow_tf32, num_splits=0):
    return query.new_empty(query.shape), query.new_empty((query.shape[1], query.shape[0]), dtype=torch.float32)


@torch.library.custom_op("fa2::varlen_backward", mutates_args=())
def _varlen_backward_op(dout: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                        out: torch.Tensor, lse: torch.Tensor, cu_seq_q: torch.Tensor, cu_seq_k: torch.Tensor,
                        max_q: int, max_k: int, scale: Optional[float], window_left: int, window_right: int,
                        seqused_k: Optional[torch.Tensor], kernel: str, deterministic: bool,
                        allow_tf32: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    window = (window_left, window_right)
    if seqused_k is None and _packs(query, kernel, None):
        sequences = _plan(query, key, cu_seq_q, cu_seq_k, max_q, max_k, window, None, None, dense=False)
        return _packed_backward(dout, query, key, value, out, lse, sequences, cu_seq_q, cu_seq_k, scale, window,
                                deterministic)
    sequences = _plan(query, key, cu_seq_q, cu_seq_k, max_q, max_k, window, seqused_k, None)
    return _backward(dout, query, key, value, out, lse, sequences, scale, kernel, deterministic, allow_tf32)


@_varlen_backward_op.register_fake
def _varlen_backward_fake(dout, query, key, value, out, lse, cu_seq_q, cu_seq_k, max_q, max_k, scale, window_left,
                          window_right, seqused_k, kernel, deterministic, allow_tf32):
    return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape)


def _setup_context(ctx, inputs, output):
    (query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, scale, window_left, window_right, seqused_k, block_table,
     kernel, deterministic, allow_tf32, _num_splits) = inputs
    out, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(query, key, value, out, lse, cu_seq_q, cu_seq_k, seqused_k)
    ctx.args = (max_q, max_k, scale, window_left, window_right, kernel, deterministic, allow_tf32)
    ctx.paged = block_table is not None


def _autograd_backward(ctx, dout, dlse):
    if ctx.paged:  # varlen_attn refuses this before the forward; kept for direct calls of the op
        raise RuntimeError("varlen_attn: block_table: a paged key/value cache is forward only (no gradients)")
    query, key, value, out, lse, cu_seq_q, cu_seq_k, seqused_k = ctx.saved_tensors
    max_q, max_k, scale, window_left, window_right, kernel, deterministic, allow_tf32 = ctx.args
    dq, dk, dv = torch.ops.fa2.varlen_backward(dout.contiguous(), query, key, value, out, lse, cu_seq_q, cu_seq_k,
                                               max_q, max_k, scale, window_left, window_right, seqused_k, kernel,
                                               deterministic, allow_tf32)
    return dq, dk, dv, None, None, None, None, None, None, None, None, None, None, None, None, None


_varlen_forward_op.register_autograd(_autograd_backward, setup_context=_setup_context)


def varlen_attn(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, return_aux=None, scale=None,
                window_size=(-1, -1), enable_gqa=False, seqused_k=None, block_table=None, num_splits=None,
                deterministic=False, kernel="step05", check_invariants=True):
    r"""Attention over a packed batch of sequences of different lengths: PyTorch's
    torch.nn.attention.varlen.varlen_attn (2.12's signature) on this repository's kernels, plus
    `deterministic`, `kernel` and `check_invariants`.

    query is (T_q, H, D), the sequences' queries one after another; key and value are (T_k, H_kv, D)
    likewise, or with block_table a paged cache (pages, page_size, H_kv, D). cu_seq_q and cu_seq_k
    (int32, B + 1 entries, on the inputs' device) say where each sequence starts: sequence b has
    queries cu_seq_q[b] .. cu_seq_q[b + 1] - 1 and keys cu_seq_k[b] .. cu_seq_k[b + 1] - 1 (of which
    the first seqused_k[b] only, when given). max_q and max_k bound the lengths. A sequence may be
    empty: it contributes nothing. Returns out (T_q, H, D), and with return_aux=AuxRequest(lse=True)
    also lse, (H, T_q) float32 (+inf for a query that sees no key, whose out is 0).

    window_size=(left, right): (-1, -1) is full attention, (-1, 0) causal, (W, 0) causal under a
    window of W keys back. The masks are aligned bottom-right, as FlashAttention's varlen and
    kv-cache functions and PyTorch's varlen_attn align them: in a sequence of N_q queries and N_k
    keys, query i sees key j when i + N_k - N_q - left <= j <= i + N_k - N_q + right, so that a
    decoding query (N_q = 1) sees its whole cache under the causal mask. The dense
    flash_attention's is_causal aligns top-left instead (query i sees keys 0 .. i): with N_q < N_k
    the two differ.

    enable_gqa: H_kv may divide H (query head h reads kv head h // (H / H_kv)); without it the
    heads must be equal (ValueError, as PyTorch). seqused_k (int32, B entries): only the first
    seqused_k[b] keys of sequence b take part (a cache longer than what it holds). block_table
    (int32, (B, pages per sequence)): sequence b's key t is row t % page_size of page
    block_table[b][t // page_size]; it needs seqused_k and is forward only. num_splits (None or at
    least 1): how many parts each sequence's keys are cut into on the decoding kernel (None: enough
    blocks to fill the GPU once); the other paths run each sequence whole and accept it.
    deterministic and kernel ("step05" or "fast") as flash_attention; scale None is 1 / sqrt(D).

    kernel="fast" on CUDA runs the forward of sequences of at most 16 queries (bfloat16 or float16,
    head dim 32, 64 or 128) on the decoding kernel, all sequences in one launch; on an sm_90 GPU
    the forward of longer ones (head dim 64 or 128, keys not paged) in one launch of v6's packed
    twin, and the backward (the same dtypes and head dims, no seqused_k) in one launch of v6b's.
    Otherwise every sequence runs through the dense operators on its own rows, so the work follows
    the tokens. Gradients flow to query, key and value.

    check_invariants (as torch.sparse's tensors name it): True copies the values of cu_seq_q,
    cu_seq_k, seqused_k and block_table to the host and checks them (the errors below), which waits
    for the GPU to finish what it was given before. False, for a decoding loop that must not wait:
    when the decoding kernel runs (kernel="fast" on CUDA, max_q <= 16, bfloat16 or float16, head dim
    32, 64 or 128, no input that needs a gradient) nothing is copied, the values are trusted, and
    values that break the rules give wrong numbers without an error (the kernel never reads or
    writes outside the tensors); elsewhere the kernels need the values on the host anyway and they
    are checked as with True.

    Errors (RuntimeError naming the argument): cu_seq_q or cu_seq_k not int32, not 1-D, not on the
    inputs' device, not starting at 0, decreasing, or ending past their tensor; max_q or max_k
    negative or smaller than a sequence; seqused_k longer than its sequence; a block_table entry
    outside the cache, or too few pages for seqused_k; block_table with inputs that require grad;
    num_splits below 1; a window_size that is not a pair of ints >= -1.
    """
    if query.dim() != 3:
        raise RuntimeError(f"varlen_attn: query must be (T_q, H, D), got shape {tuple(query.shape)}")
    paged = block_table is not None
    if key.dim() != (4 if paged else 3) or value.shape != key.shape:
        want = "(pages, page_size, H_kv, D) with block_table" if paged else "(T_k, H_kv, D)"
        raise RuntimeError(f"varlen_attn: key and value must both be {want}, got shapes {tuple(key.shape)} and "
                           f"{tuple(value.shape)}")
    heads_q, heads_kv = query.shape[1], key.shape[-2]
    if not enable_gqa and heads_q != heads_kv:
        raise ValueError(f"varlen_attn: query has {heads_q} heads and key/value {heads_kv}; set enable_gqa=True for "
                         f"grouped-query attention")
    if enable_gqa and heads_q % heads_kv != 0:
        raise ValueError(f"varlen_attn: enable_gqa needs the query heads ({heads_q}) to be a multiple of the "
                         f"key/value heads ({heads_kv})")
    if num_splits is not None and (isinstance(num_splits, bool) or not isinstance(num_splits, int)
                                   or num_splits < 1):
        raise RuntimeError(f"varlen_attn: num_splits must be None or an int >= 1, got {num_splits!r}")
    if paged and torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
        raise RuntimeError("varlen_attn: block_table: a paged key/value cache is forward only; call it under "
                           "torch.no_grad() or with inputs that do not require grad")
    left, right = _window_pair(window_size)
    if scale is not None:
        scale = float(scale)
    if not check_invariants:
        max_q, max_k = int(max_q), int(max_k)
        _check_index_tensors(query, cu_seq_q, cu_seq_k, max_q, max_k, seqused_k, block_table)
        if _decodes_unchecked(query, key, value, max_q, kernel):
            out, lse = _decode(query, key, value, max_q, max_k, cu_seq_q, cu_seq_k, seqused_k, block_table, scale,
                               (left, right), 0 if num_splits is None else num_splits)
            return (out, lse) if return_aux is not None and return_aux.lse else out
    allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    out, lse = torch.ops.fa2.varlen_forward(query, key, value, cu_seq_q, cu_seq_k, int(max_q), int(max_k), scale,
                                            left, right, seqused_k, block_table, kernel, bool(deterministic),
                                            allow_tf32, 0 if num_splits is None else num_splits)
    if return_aux is not None and return_aux.lse:
        return out, lse
    return out
