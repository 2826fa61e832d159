"""varlen_attn: packed batches of sequences of different lengths (0 and 1 among them), the causal
mask and windows aligned bottom-right, grouped-query attention, seqused_k and a paged key/value
cache, against attention written out in float64 sequence by sequence with the bottom-right mask
built here; out, lse and the gradients of query, key and value; torch.compile; every bad input.
The CPU tests need torch and the library; the CUDA ones a GPU.

    python3 -m pytest python/tests/test_varlen.py -q -rs
"""

import math
import random
import re

import pytest
from fa2_test_support import DTYPES, assert_finite, assert_forward_close, assert_gradients_close, dtype_of, torch

if torch is not None:
    from fa2_test_support import fa2_attention

# (queries, keys) per sequence: empty ones, single ones, N_q below and above N_k, ragged tiles.
LENGTHS = [(5, 7), (0, 3), (1, 1), (37, 20), (1, 40), (0, 0), (64, 64), (20, 37), (3, 0)]
# (-1, -1) full, (-1, 0) causal, (W, 0) causal under a window, and windows of both sides.
WINDOWS = [(-1, -1), (-1, 0), (4, 0), (0, 0), (3, 5), (-1, 6), (10, -1)]
WINDOW_IDS = [f"w{left}_{right}" for left, right in WINDOWS]


def bottom_right_keep(n_q, n_k, window):
    """(n_q, n_k) boolean: query i sees key j when i + n_k - n_q - left <= j <= i + n_k - n_q + right."""
    left, right = window
    i = torch.arange(n_q).unsqueeze(-1) + (n_k - n_q)
    j = torch.arange(n_k).unsqueeze(0)
    keep = torch.ones(n_q, n_k, dtype=torch.bool)
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def packed(lengths, heads, kv_heads, dim, dtype, device="cpu", seed=0, spare=3):
    """query (T_q, H, D), key and value (T_k, H_kv, D) with `spare` rows past the last sequence,
    dout like query, and cu_seq_q, cu_seq_k (int32)."""
    generator = torch.Generator().manual_seed(seed)
    t_q = sum(n_q for n_q, _ in lengths) + spare
    t_k = sum(n_k for _, n_k in lengths) + spare

    def draw(*shape):
        return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype).to(device)

    query, key, value = draw(t_q, heads, dim), draw(t_k, kv_heads, dim), draw(t_k, kv_heads, dim)
    dout = draw(t_q, heads, dim)
    cu_q = torch.tensor([0] + list(accumulate(n_q for n_q, _ in lengths)), dtype=torch.int32, device=device)
    cu_k = torch.tensor([0] + list(accumulate(n_k for _, n_k in lengths)), dtype=torch.int32, device=device)
    return query, key, value, dout, cu_q, cu_k


def accumulate(values):
    total = 0
    for v in values:
        total += v
        yield total


def reference(query, key, value, dout, cu_q, cu_k, window, scale=None, used=None):
    """out, lse (H, T_q) and the gradients in float64, one sequence at a time; rows no query sees are
    0 (out, gradients) and +inf (lse)."""
    q64, k64, v64 = (t.detach().to(torch.float64).cpu().requires_grad_() for t in (query, key, value))
    heads, kv_heads, dim = q64.shape[1], k64.shape[1], q64.shape[2]
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    outs = [torch.zeros(q64.shape, dtype=torch.float64)]
    lse = torch.full((heads, q64.shape[0]), math.inf, dtype=torch.float64)
    cq, ck = cu_q.tolist(), cu_k.tolist()
    pieces = []
    for b in range(len(cq) - 1):
        q0, k0 = cq[b], ck[b]
        n_q = cq[b + 1] - q0
        n_k = (ck[b + 1] - k0) if used is None else used[b]
        if n_q == 0 or n_k == 0:
            continue
        q = q64[q0:q0 + n_q].transpose(0, 1)
        k = k64[k0:k0 + n_k].transpose(0, 1).repeat_interleave(heads // kv_heads, dim=0)
        v = v64[k0:k0 + n_k].transpose(0, 1).repeat_interleave(heads // kv_heads, dim=0)
        s = (q @ k.transpose(-1, -2)) * scale
        keep = bottom_right_keep(n_q, n_k, window)
        sees = keep.any(dim=-1)
        s = s.masked_fill(~keep, -math.inf)
        lse_b = torch.logsumexp(s.masked_fill(~sees.unsqueeze(-1), 0.0), dim=-1)
        out_b = torch.exp(s - lse_b.unsqueeze(-1)) @ v
        pieces.append((q0, n_q, out_b.transpose(0, 1)))
        lse[:, q0:q0 + n_q] = lse_b.detach().masked_fill(~sees, math.inf)
    out = outs[0].clone()
    for q0, n_q, out_b in pieces:
        out = torch.cat([out[:q0], out_b, out[q0 + n_q:]])
    grads = torch.autograd.grad(out, (q64, k64, v64), dout.detach().to(torch.float64).cpu(), allow_unused=True)
    grads = [torch.zeros_like(t) if g is None else g for g, t in zip(grads, (q64, k64, v64))]
    return out.detach(), lse, grads


def run(query, key, value, dout, cu_q, cu_k, window, lengths, **kwargs):
    leaves = [t.detach().clone().requires_grad_() for t in (query, key, value)]
    max_q = max(n_q for n_q, _ in lengths)
    max_k = max(n_k for _, n_k in lengths)
    out, lse = fa2_attention.varlen_attn(*leaves, cu_q, cu_k, max_q, max_k, window_size=window,
                                         return_aux=fa2_attention.AuxRequest(lse=True), **kwargs)
    grads = torch.autograd.grad(out, leaves, dout)
    return out.detach(), lse, grads


def check_against_reference(dtype_name, window, kv_heads, device="cpu", lengths=LENGTHS, seed=0, dim=32, **kwargs):
    dtype = dtype_of(dtype_name)
    inputs = packed(lengths, 4, kv_heads, dim, dtype, device, seed=seed)
    out, lse, grads = run(*inputs, window, lengths, enable_gqa=kv_heads != 4, **kwargs)
    out_ref, lse_ref, grads_ref = reference(*inputs, window)
    assert_forward_close("out vs float64", out.cpu(), out_ref, dtype_name)
    assert lse.shape == (4, inputs[0].shape[0]) and lse.dtype == torch.float32
    no_key = torch.isinf(lse_ref)
    assert torch.equal(torch.isinf(lse.cpu()), no_key), "lse is +inf exactly where a query sees no key"
    torch.testing.assert_close(lse.cpu()[~no_key].to(torch.float64), lse_ref[~no_key], atol=2e-2, rtol=2e-2)
    if no_key.any():
        assert out.cpu()[no_key.any(dim=0)].abs().max().item() == 0, "a query that sees no key must give 0"
    assert_gradients_close([g.cpu() for g in grads], grads_ref, dtype_name)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("window", WINDOWS, ids=WINDOW_IDS)
@pytest.mark.parametrize("kv_heads", [4, 2, 1], ids=["mha", "gqa2", "mqa"])
def test_cpu_matches_float64_sequence_by_sequence(dtype_name, window, kv_heads):
    check_against_reference(dtype_name, window, kv_heads)


@pytest.mark.parametrize("seed", range(6))
def test_cpu_matches_float64_on_random_length_mixes(seed):
    # 1 to 8 sequences whose query and key counts are drawn apart, 0 and 1 often among them; a
    # window, a group size and a dtype drawn too.
    rng = random.Random(seed)
    pick = [0, 1, 1, 2, 7, 16, 33, 50]
    lengths = [(rng.choice(pick), rng.choice(pick)) for _ in range(rng.randint(0, 7))]
    # One sequence with queries and keys at least: its last query sees its last key under every window.
    lengths.insert(rng.randint(0, len(lengths)), (rng.choice(pick[1:]), rng.choice(pick[1:])))
    window = rng.choice(WINDOWS)
    check_against_reference(rng.choice(DTYPES), window, rng.choice([4, 2, 1]), lengths=lengths, seed=seed)


def test_the_dense_calls_see_exactly_the_bottom_right_mask():
    # Every (N_q, N_k) up to 8 and window up to 9 on each side: the rows and the top-left window
    # that _dense_call gives the dense operators see exactly the keys of the bottom-right mask.
    from fa2_attention.varlen import _dense_call

    for n_q in range(9):
        for n_k in range(9):
            for window in [(left, right) for left in range(-1, 10) for right in range(-1, 10)]:
                want = bottom_right_keep(n_q, n_k, window)
                got = torch.zeros(n_q, n_k, dtype=torch.bool)
                call = _dense_call(n_q, n_k, *window)
                if call is not None:
                    q_skip, k_skip, left, right = call
                    assert left >= -1 and right >= -1
                    i = torch.arange(n_q - q_skip).unsqueeze(-1)
                    j = torch.arange(n_k - k_skip).unsqueeze(0)
                    keep = torch.ones(n_q - q_skip, n_k - k_skip, dtype=torch.bool)
                    if left >= 0:
                        keep &= j >= i - left
                    if right >= 0:
                        keep &= j <= i + right
                    got[q_skip:, k_skip:] = keep
                assert torch.equal(got, want), (n_q, n_k, window, call)


def test_causal_is_bottom_right_unlike_the_dense_top_left():
    # One query against ten keys: under varlen's causal mask it sees all ten (it stands at the last
    # key); under the dense operator's is_causal it sees key 0 alone.
    lengths = [(1, 10)]
    query, key, value, dout, cu_q, cu_k = packed(lengths, 2, 2, 16, torch.float32, spare=0)
    out = fa2_attention.varlen_attn(query, key, value, cu_q, cu_k, 1, 10, window_size=(-1, 0))
    full, _, _ = reference(query, key, value, dout, cu_q, cu_k, (-1, -1))
    torch.testing.assert_close(out.to(torch.float64), full, atol=1e-4, rtol=1e-4)
    dense = fa2_attention.flash_attention(query.transpose(0, 1).unsqueeze(0), key.transpose(0, 1).unsqueeze(0),
                                          value.transpose(0, 1).unsqueeze(0), is_causal=True)
    torch.testing.assert_close(dense[0].transpose(0, 1), value[:1].expand_as(out), atol=1e-6, rtol=0)
    assert (out - dense[0].transpose(0, 1)).abs().max().item() > 0.1


def test_a_long_enough_window_is_full_attention_and_equal_lengths_align_both_ways():
    # With N_q == N_k the two alignments coincide: varlen's causal equals the dense is_causal.
    lengths = [(33, 33), (17, 17)]
    query, key, value, dout, cu_q, cu_k = packed(lengths, 2, 2, 16, torch.float32, spare=0)
    out = fa2_attention.varlen_attn(query, key, value, cu_q, cu_k, 33, 33, window_size=(-1, 0))
    for (q0, n), (k0, _) in zip(((0, 33), (33, 17)), ((0, 33), (33, 17))):
        dense = fa2_attention.flash_attention(*(t[q0:q0 + n].transpose(0, 1).unsqueeze(0) for t in (query, key, value)),
                                              is_causal=True)
        assert torch.equal(out[q0:q0 + n], dense[0].transpose(0, 1))
    wide = fa2_attention.varlen_attn(query, key, value, cu_q, cu_k, 33, 33, window_size=(100, 100))
    assert torch.equal(wide, fa2_attention.varlen_attn(query, key, value, cu_q, cu_k, 33, 33))


@pytest.mark.parametrize("page_size", [16, 64])
def test_paged_cache_and_seqused_k_match_the_packed_keys(page_size):
    # Decoding-like: 1 to 16 queries per sequence against caches of 0 to 150 keys, the cache's
    # pages in a shuffled order; the same keys packed, and the float64 reference.
    generator = torch.Generator().manual_seed(1)
    queries, used = [1, 16, 3, 1], [150, 37, 0, 64]
    heads, kv_heads, dim = 4, 2, 32
    pages_per_seq = max(math.ceil(u / page_size) for u in used)
    n_pages = len(used) * pages_per_seq + 2
    order = torch.randperm(n_pages, generator=generator)
    table = order[:len(used) * pages_per_seq].reshape(len(used), pages_per_seq).to(torch.int32)
    cache_k = torch.randn(n_pages, page_size, kv_heads, dim, generator=generator)
    cache_v = torch.randn(n_pages, page_size, kv_heads, dim, generator=generator)
    query = torch.randn(sum(queries), heads, dim, generator=generator)
    cu_q = torch.tensor([0] + list(accumulate(queries)), dtype=torch.int32)
    seqused = torch.tensor(used, dtype=torch.int32)
    out = fa2_attention.varlen_attn(query, cache_k, cache_v, cu_q, None, 16, 150, window_size=(-1, 0),
                                    enable_gqa=True, seqused_k=seqused, block_table=table)
    # The same keys, gathered and packed, with room past each sequence's used ones (seqused_k).
    key_rows, cu_k = [], [0]
    for b, u in enumerate(used):
        rows = [int(table[b, t // page_size]) * page_size + t % page_size for t in range(u)]
        key_rows += rows + [0, 0]
        cu_k.append(cu_k[-1] + u + 2)
    flat_k, flat_v = cache_k.reshape(-1, kv_heads, dim), cache_v.reshape(-1, kv_heads, dim)
    key, value = flat_k[key_rows], flat_v[key_rows]
    cu_k = torch.tensor(cu_k, dtype=torch.int32)
    packed_out = fa2_attention.varlen_attn(query, key, value, cu_q, cu_k, 16, 152, window_size=(-1, 0),
                                           enable_gqa=True, seqused_k=seqused)
    assert torch.equal(out, packed_out)
    out_ref, _, _ = reference(query, key, value, torch.zeros_like(query), cu_q, cu_k, (-1, 0), used=used)
    assert_forward_close("paged out vs float64", out, out_ref, "float32")


def test_compile_and_opcheck():
    lengths = [(5, 7), (0, 2), (9, 9)]
    query, key, value, dout, cu_q, cu_k = packed(lengths, 2, 1, 16, torch.float32)

    def loss(q, k, v):
        return (fa2_attention.varlen_attn(q, k, v, cu_q, cu_k, 9, 9, window_size=(-1, 0), enable_gqa=True)
                * dout).sum()

    leaves = [t.clone().requires_grad_() for t in (query, key, value)]
    eager = torch.autograd.grad(loss(*leaves), leaves)
    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    got = torch.autograd.grad(compiled(*leaves), leaves)
    for a, b in zip(eager, got):
        assert torch.equal(a, b)
    torch.library.opcheck(torch.ops.fa2.varlen_forward.default,
                          (query, key, value, cu_q, cu_k, 9, 9, None, -1, 0, None, None, "step05", False, False))


def bad_call(**changes):
    lengths = [(4, 4), (3, 5)]
    query, key, value, dout, cu_q, cu_k = packed(lengths, 2, 2, 16, torch.float32, spare=0)
    args = dict(query=query, key=key, value=value, cu_seq_q=cu_q, cu_seq_k=cu_k, max_q=4, max_k=5)
    args.update(changes)
    return lambda: fa2_attention.varlen_attn(**args)


def int32(*values):
    return torch.tensor(values, dtype=torch.int32)


# (argument, its bad value (made when the test runs: collection needs no torch), the message).
BAD_INPUTS = [
    ("cu_seq_q", lambda: torch.tensor([0, 4, 7]), "cu_seq_q must be int32"),
    ("cu_seq_k", lambda: torch.tensor([0.0, 4.0, 9.0]), "cu_seq_k must be int32"),
    ("cu_seq_q", lambda: int32(1, 4, 7), "cu_seq_q must start at 0"),
    ("cu_seq_k", lambda: int32(0, 6, 5), "cu_seq_k decreases at entry 2"),
    ("cu_seq_q", lambda: int32(0, 4, 8), "cu_seq_q ends at 8, past the 7 rows"),
    ("cu_seq_k", lambda: int32(0, 4, 10), "cu_seq_k ends at 10, past the 9 rows"),
    ("cu_seq_k", lambda: int32(0, 4), "cu_seq_k has 2 entries, expected 3"),
    ("cu_seq_q", lambda: int32(0, 4, 7).reshape(1, 3), "cu_seq_q must be 1-D"),
    ("max_q", lambda: 3, "max_q (3) is smaller than sequence 0's 4 queries"),
    ("max_k", lambda: 4, "max_k (4) is smaller than sequence 1's 5 keys"),
    ("seqused_k", lambda: int32(5, 5), "seqused_k[0] = 5 is longer than sequence 0's 4 keys"),
    ("seqused_k", lambda: torch.tensor([4, 5]), "seqused_k must be a 1-D int32 tensor"),
    ("num_splits", lambda: 0, "num_splits must be None or an int >= 1"),
    ("window_size", lambda: (-2, 0), "window_size[0] must be an int >= -1"),
    ("window_size", lambda: (1.5, 0), "window_size[0] must be an int >= -1"),
    ("window_size", lambda: 3, "window_size must be a pair"),
]


@pytest.mark.parametrize("argument, bad, message", BAD_INPUTS, ids=[f"{a}-{i}" for i, (a, _, _) in
                                                                    enumerate(BAD_INPUTS)])
def test_bad_inputs_are_refused_naming_the_argument(argument, bad, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        bad_call(**{argument: bad()})()


def test_bad_paged_inputs_are_refused():
    cache = torch.randn(4, 16, 2, 16)
    query = torch.randn(2, 2, 16)
    cu_q = torch.tensor([0, 1, 2], dtype=torch.int32)
    used = torch.tensor([20, 17], dtype=torch.int32)
    table = torch.tensor([[0, 1], [2, 7]], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"block_table\[1\] holds page 7, outside the cache's 4 pages"):
        fa2_attention.varlen_attn(query, cache, cache, cu_q, None, 1, 32, seqused_k=used, block_table=table)
    with pytest.raises(RuntimeError, match="needs 3 pages of 16, more than block_table's 2"):
        fa2_attention.varlen_attn(query, cache, cache, cu_q, None, 1, 40,
                                  seqused_k=torch.tensor([40, 5], dtype=torch.int32), block_table=table[:, :2] % 4)
    with pytest.raises(RuntimeError, match="block_table needs seqused_k"):
        fa2_attention.varlen_attn(query, cache, cache, cu_q, None, 1, 32, block_table=table % 4)
    with pytest.raises(RuntimeError, match="block_table: a paged key/value cache is forward only"):
        fa2_attention.varlen_attn(query.requires_grad_(), cache, cache, cu_q, None, 1, 32, seqused_k=used,
                                  block_table=table % 4)
    with pytest.raises(ValueError, match="set enable_gqa=True"):
        fa2_attention.varlen_attn(torch.randn(2, 4, 16), cache, cache, cu_q, None, 1, 32, seqused_k=used,
                                  block_table=table % 4)


@pytest.mark.cuda
@pytest.mark.parametrize("kernel, dtype_name", [("step05", "bfloat16"), ("step05", "float32"), ("fast", "bfloat16"),
                                                ("fast", "float16")])
@pytest.mark.parametrize("window", [(-1, -1), (-1, 0), (4, 0), (3, 5)], ids=["full", "causal", "w4_0", "w3_5"])
def test_cuda_matches_float64_sequence_by_sequence(kernel, dtype_name, window):
    # The fast kernels take head dims 32, 64 and 128: D 32 here.
    check_against_reference(dtype_name, window, 2, device="cuda", kernel=kernel)


# Sequences longer than a query tile of v6's packed forward (128 rows), ragged ends, N_q above and
# below N_k, and sequences without queries or keys.
PACKED_LENGTHS = [(300, 300), (0, 3), (1, 1), (129, 129), (200, 450), (450, 200), (3, 0), (40, 40), (1, 333)]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("window", [(-1, -1), (-1, 0), (40, 0), (3, 5)], ids=["full", "causal", "w40_0", "w3_5"])
def test_cuda_packed_forward_matches_float64(dtype_name, dim, window, monkeypatch):
    # On an sm_90 GPU kernel="fast" runs these forwards in one launch of v6's packed twin and their
    # backward in one launch of v6b's; elsewhere through the dense operators.
    from fa2_attention import varlen
    probe = torch.empty(1, 4, dim, dtype=dtype_of(dtype_name), device="cuda")
    sm90 = torch.cuda.get_device_capability() == (9, 0) and torch.ops.fa2.sm90_unavailable() == ""
    calls = []
    packed_backward = varlen._packed_backward
    monkeypatch.setattr(varlen, "_packed_backward", lambda *args: calls.append(1) or packed_backward(*args))
    check_against_reference(dtype_name, window, 2, device="cuda", lengths=PACKED_LENGTHS, dim=dim, kernel="fast")
    if sm90:
        assert varlen._packs(probe, "fast", None), "an sm_90 GPU must run the packed forward"
        assert calls == [1], "an sm_90 GPU must run the packed backward"


@pytest.mark.cuda
@pytest.mark.parametrize("window", [(-1, -1), (-1, 0), (40, 0)], ids=["full", "causal", "w40_0"])
def test_cuda_packed_deterministic_matches_float64_with_the_same_bits(window, monkeypatch):
    # Deterministic gradients of the packed sequences (on an sm_90 GPU one launch of v6b's packed
    # twin, its dQ adds in turns): float64's values, and the same bits on every run.
    from fa2_attention import varlen
    sm90 = torch.cuda.get_device_capability() == (9, 0) and torch.ops.fa2.sm90_unavailable() == ""
    calls = []
    packed_backward = varlen._packed_backward
    monkeypatch.setattr(varlen, "_packed_backward", lambda *args: calls.append(args[-1]) or packed_backward(*args))
    inputs = packed(PACKED_LENGTHS, 4, 2, 128, torch.bfloat16, "cuda", seed=3)
    first = run(*inputs, window, PACKED_LENGTHS, enable_gqa=True, kernel="fast", deterministic=True)
    _, _, grads_ref = reference(*inputs, window)
    assert_gradients_close([g.cpu() for g in first[2]], grads_ref, "bfloat16")
    for _ in range(2):
        again = run(*inputs, window, PACKED_LENGTHS, enable_gqa=True, kernel="fast", deterministic=True)
        for a, b in zip(first[2], again[2]):
            assert torch.equal(a, b)
    if sm90:
        assert calls == [True] * 3, "an sm_90 GPU must run the packed backward, deterministic"


@pytest.mark.cuda
def test_cuda_deterministic_gives_the_same_bits():
    inputs = packed(LENGTHS, 4, 2, 64, torch.bfloat16, "cuda")
    first = run(*inputs, (-1, 0), LENGTHS, enable_gqa=True, kernel="fast", deterministic=True)
    for _ in range(3):
        again = run(*inputs, (-1, 0), LENGTHS, enable_gqa=True, kernel="fast", deterministic=True)
        for a, b in zip(first[2], again[2]):
            assert torch.equal(a, b)
    for g in first[2]:
        assert_finite("gradient", g)



# The decoding kernel on the GPU (torch.ops.fa2.varlen_decode, step07_benchmark/kernels/sm80/decode.cuh):
# sequences of 1 to 16 queries (and an empty one) against caches of 0 to a few thousand keys, packed
# or paged, in one launch (two with parts). Rows past the last sequence get out 0 and lse +inf.
DECODE_QUERIES = [1, 16, 3, 0, 5, 1, 7]
DECODE_CACHE = [2000, 300, 0, 50, 3, 1, 4097]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("dim, heads, kv_heads", [(64, 8, 2), (128, 32, 4), (32, 4, 4)], ids=["d64g4", "d128g8", "d32mha"])
@pytest.mark.parametrize("window", [(-1, 0), (-1, -1), (100, 0)], ids=["causal", "full", "w100"])
@pytest.mark.parametrize("page_size, num_splits", [(0, 0), (0, 1), (16, 5), (96, 0), (256, 64)],
                         ids=["packed", "packed-1part", "p16-5parts", "p96", "p256-64parts"])
def test_cuda_decoding_kernel_matches_float64(dtype_name, dim, heads, kv_heads, window, page_size, num_splits):
    generator = torch.Generator().manual_seed(dim + page_size)
    dtype = dtype_of(dtype_name)
    queries, used = DECODE_QUERIES, DECODE_CACHE
    owned = sum(queries)
    query = torch.randn(owned + 2, heads, dim, generator=generator).to(dtype)
    cu_q = torch.tensor([0] + list(accumulate(queries)), dtype=torch.int32)
    # The packed keys hold 3 rows more than each sequence uses (seqused_k).
    cu_k = torch.tensor([0] + list(accumulate(u + 3 for u in used)), dtype=torch.int32)
    key = torch.randn(int(cu_k[-1]), kv_heads, dim, generator=generator).to(dtype)
    value = torch.randn(int(cu_k[-1]), kv_heads, dim, generator=generator).to(dtype)
    seqused = torch.tensor(used, dtype=torch.int32, device="cuda")
    if page_size == 0:
        out, lse = torch.ops.fa2.varlen_decode(query.cuda(), key.cuda(), value.cuda(), cu_q.cuda(), cu_k.cuda(),
                                               seqused, None, max(queries), max(u + 3 for u in used), None,
                                               window[0], window[1], num_splits)
    else:  # the same keys in pages, shuffled
        pages_per_seq = max(math.ceil(u / page_size) for u in used)
        n_pages = len(used) * pages_per_seq + 1
        table = torch.randperm(n_pages, generator=generator)[:len(used) * pages_per_seq]
        table = table.reshape(len(used), pages_per_seq).to(torch.int32)
        cache_k = torch.zeros(n_pages, page_size, kv_heads, dim, dtype=dtype)
        cache_v = torch.zeros(n_pages, page_size, kv_heads, dim, dtype=dtype)
        for b, u in enumerate(used):
            for t in range(u):
                page, row = int(table[b, t // page_size]), t % page_size
                cache_k[page, row] = key[int(cu_k[b]) + t]
                cache_v[page, row] = value[int(cu_k[b]) + t]
        out, lse = torch.ops.fa2.varlen_decode(query.cuda(), cache_k.cuda(), cache_v.cuda(), cu_q.cuda(), None,
                                               seqused, table.cuda(), max(queries), max(used), None, window[0],
                                               window[1], num_splits)
    out_ref, lse_ref, _ = reference(query, key, value, torch.zeros_like(query), cu_q, cu_k, window, used=used)
    out, lse = out.cpu(), lse.cpu()
    assert out[owned:].abs().max().item() == 0 and torch.isinf(lse[:, owned:]).all(), \
        "rows of no sequence get out 0 and lse +inf"
    out, lse, out_ref, lse_ref = out[:owned], lse[:, :owned], out_ref[:owned], lse_ref[:, :owned]
    assert_forward_close("decoding out vs float64", out, out_ref, dtype_name)
    no_key = torch.isinf(lse_ref)
    assert torch.equal(torch.isinf(lse), no_key), "lse is +inf exactly where a query sees no key"
    torch.testing.assert_close(lse[~no_key].to(torch.float64), lse_ref[~no_key], atol=1e-3, rtol=1e-3)
    assert out[no_key.any(dim=0)].abs().max().item() == 0, "a query that sees no key must give 0"


def decoding_batch(page_size, dtype_name="bfloat16", heads=8, kv_heads=2, dim=64, seed=5):
    """DECODE_QUERIES against DECODE_CACHE on CUDA, packed or in shuffled pages: varlen_attn's
    arguments (query, key, value, cu_seq_q, cu_seq_k, max_q, max_k) and its keywords."""
    dtype = dtype_of(dtype_name)
    generator = torch.Generator().manual_seed(seed)
    queries, used = DECODE_QUERIES, DECODE_CACHE
    query = torch.randn(sum(queries) + 2, heads, dim, generator=generator).to(dtype).cuda()
    cu_q = torch.tensor([0] + list(accumulate(queries)), dtype=torch.int32, device="cuda")
    seqused = torch.tensor(used, dtype=torch.int32, device="cuda")
    if page_size == 0:
        cu_k = torch.tensor([0] + list(accumulate(u + 3 for u in used)), dtype=torch.int32, device="cuda")
        key = torch.randn(int(cu_k[-1]), kv_heads, dim, generator=generator).to(dtype).cuda()
        value = torch.randn(int(cu_k[-1]), kv_heads, dim, generator=generator).to(dtype).cuda()
        return (query, key, value, cu_q, cu_k, max(queries), max(used) + 3), dict(seqused_k=seqused)
    pages_per_seq = max(math.ceil(u / page_size) for u in used)
    n_pages = len(used) * pages_per_seq + 1
    table = torch.randperm(n_pages, generator=generator)[:len(used) * pages_per_seq]
    cache = [torch.randn(n_pages, page_size, kv_heads, dim, generator=generator).to(dtype).cuda() for _ in range(2)]
    return ((query, *cache, cu_q, None, max(queries), max(used)),
            dict(seqused_k=seqused, block_table=table.reshape(len(used), pages_per_seq).to(torch.int32).cuda()))


@pytest.mark.cuda
@pytest.mark.parametrize("page_size", [0, 16])
@pytest.mark.parametrize("window", [(-1, 0), (30, 0)], ids=["causal", "w30"])
def test_cuda_unchecked_decoding_gives_the_checked_bits(page_size, window):
    # check_invariants=False copies nothing to the host and calls the decoding kernel itself, with
    # max_q and max_k as given: the same bits as the checked call, rows of no sequence included.
    args, kwargs = decoding_batch(page_size)
    aux = fa2_attention.AuxRequest(lse=True)
    with torch.no_grad():
        checked = fa2_attention.varlen_attn(*args, **kwargs, window_size=window, enable_gqa=True, kernel="fast",
                                            return_aux=aux)
        unchecked = fa2_attention.varlen_attn(*args, **kwargs, window_size=window, enable_gqa=True, kernel="fast",
                                              return_aux=aux, check_invariants=False)
    for a, b in zip(checked, unchecked):
        assert torch.equal(a, b)
    owned = sum(DECODE_QUERIES)
    assert unchecked[0][owned:].abs().max().item() == 0 and torch.isinf(unchecked[1][:, owned:]).all()


@pytest.mark.cuda
def test_cuda_unchecked_decoding_compiles_without_a_graph_break():
    args, kwargs = decoding_batch(0)
    eager = fa2_attention.varlen_attn(*args, **kwargs, enable_gqa=True, kernel="fast", check_invariants=False)
    compiled = torch.compile(fa2_attention.varlen_attn, fullgraph=True)
    with torch.no_grad():
        out = compiled(*args, **kwargs, enable_gqa=True, kernel="fast", check_invariants=False)
    assert torch.equal(out, eager)


@pytest.mark.cuda
@pytest.mark.parametrize("page_size", [0, 16])
def test_cuda_unchecked_decoding_with_broken_indices_stays_in_bounds(page_size):
    # Index values that break every rule, trusted with check_invariants=False: wrong numbers, but no
    # access outside the tensors (compute-sanitizer's memcheck runs this file's decoding cases) and
    # no error on the stream.
    args, kwargs = decoding_batch(page_size)
    query, key, value, cu_q, cu_k, max_q, max_k = args
    broken = torch.tensor([5, -40, 2**30, 3, 3, -(2**31), 2**31 - 1, 9], dtype=torch.int32, device="cuda")
    kwargs["seqused_k"] = torch.tensor([2**30, -7, 5, 0, 1, 2**31 - 1, 64], dtype=torch.int32, device="cuda")
    if page_size:
        table = kwargs["block_table"]
        kwargs["block_table"] = torch.randint(-2**31, 2**31 - 1, table.shape, dtype=torch.int32, device="cuda")
    else:
        cu_k = broken.flip(0).contiguous()
    # max_k as large as the plan takes: 2^29 keys packed, what a block_table row holds paged.
    widest = kwargs["block_table"].shape[1] * page_size if page_size else 2**29
    with torch.no_grad():
        for max_q_given, max_k_given in [(max_q, max_k), (16, widest)]:
            out = fa2_attention.varlen_attn(query, key, value, broken, cu_k, max_q_given, max_k_given, **kwargs,
                                            enable_gqa=True, kernel="fast", check_invariants=False)
            torch.cuda.synchronize()
            assert out.shape == query.shape
    # Checked, the same values are refused.
    with pytest.raises(RuntimeError, match="cu_seq_q must start at 0"):
        fa2_attention.varlen_attn(query, key, value, broken, cu_k, max_q, max_k, **kwargs, enable_gqa=True,
                                  kernel="fast")


def test_unchecked_calls_that_need_the_values_still_check_them():
    # check_invariants=False trusts the values only where the decoding kernel runs: the CPU path
    # (like the packed and dense ones) reads them anyway and refuses bad ones; the value-free checks
    # always run.
    query = torch.randn(4, 2, 16)
    cu = torch.tensor([0, 3, 1], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="cu_seq_q decreases at entry 2"):
        fa2_attention.varlen_attn(query, query, query, cu, cu, 4, 4, check_invariants=False)
    with pytest.raises(RuntimeError, match="max_q and max_k must not be negative"):
        fa2_attention.varlen_attn(query, query, query, cu, cu, -1, 4, check_invariants=False)
    with pytest.raises(RuntimeError, match="cu_seq_k must be int32"):
        fa2_attention.varlen_attn(query, query, query, cu, cu.long(), 4, 4, check_invariants=False)


@pytest.mark.cuda
def test_cuda_decoding_kernel_refuses_what_it_cannot_run():
    q = torch.randn(2, 4, 48, dtype=torch.bfloat16, device="cuda")
    cu = torch.tensor([0, 1, 2], dtype=torch.int32, device="cuda")
    with pytest.raises(RuntimeError, match="head_dim: the decoding kernel takes 32, 64 or 128, got 48"):
        torch.ops.fa2.varlen_decode(q, q, q, cu, cu, None, None, 1, 1, None, -1, 0, 0)
    with pytest.raises(RuntimeError, match="bfloat16 or float16"):
        torch.ops.fa2.varlen_decode(q.float(), q.float(), q.float(), cu, cu, None, None, 1, 1, None, -1, 0, 0)
    with pytest.raises(RuntimeError, match="num_splits"):
        torch.ops.fa2.varlen_decode(q[..., :32], q[..., :32], q[..., :32], cu, cu, None, None, 1, 1, None, -1, 0, -1)
    # The index tensors' sizes, which the kernel's reads depend on (their values it bounds itself).
    q32 = q[..., :32]
    with pytest.raises(RuntimeError, match="cu_seq_k must be 1-D with cu_seq_q's 3 entries"):
        torch.ops.fa2.varlen_decode(q32, q32, q32, cu, cu[:2], None, None, 1, 1, None, -1, 0, 0)
    with pytest.raises(RuntimeError, match="seqused_k must be 1-D with one entry per sequence"):
        torch.ops.fa2.varlen_decode(q32, q32, q32, cu, cu, cu, None, 1, 1, None, -1, 0, 0)
    pages = q32.reshape(2, 1, 4, 32)
    with pytest.raises(RuntimeError, match="block_table must be 2-D .* with one row per sequence"):
        torch.ops.fa2.varlen_decode(q32, pages, pages, cu, None, cu[:2], cu[:2].reshape(1, 2), 1, 1, None, -1, 0, 0)
