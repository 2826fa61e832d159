"""Packed batches and decoding through the installed package: fa2_attention.varlen_attn beside
PyTorch's torch.nn.attention.varlen.varlen_attn (where the installed PyTorch has it), FlashAttention-4's
flash_attn_varlen_func (where flash_attn.cute imports) and this project's dense operator, all timed
in the same rotating passes (timing.interleaved_ms), each round with fresh inputs.

Training (--mode train): one packed batch of sequences of the given lengths (default 16384, 8192 x 2,
4096 x 4, 2048 x 6, 2304, 1536, 256: 65,536 tokens), H 32 query and 8 kv heads, D 128, causal,
bf16; the forward and forward+backward of
  varlen        fa2_attention.varlen_attn(kernel="fast") on the packed tensors
  varlen-det    the same with deterministic=True (forward+backward only)
  dense-each    fa2_attention.flash_attention on each sequence's own contiguous tensor, one after
                another (the sum of our dense times for each sequence alone)
  dense-padded  fa2_attention.flash_attention on one (B, H, longest, D) batch, every sequence padded
                to the longest (the padding made before the timing; under the causal mask no real
                query sees a padded key)
  torch-varlen  PyTorch's varlen_attn (its own backend choice; key and value repeated to H heads
                when it cannot take grouped-query attention)
  fa4-varlen    flash_attn_varlen_func(causal=True)

Decoding (--mode decode): one query per sequence against a cache, H 32/8, D 128, bf16, at the
(B, cache) points of --points; the forward of
  varlen        fa2_attention.varlen_attn(kernel="fast") with the cache packed (seqused_k = cache)
  paged-P       the same cache in pages of P keys (block_table), for each page size of --page-sizes
  varlen-unchecked, paged-P-unchecked   the same calls with check_invariants=False (no copy of the
                index values to the host, so no wait for the GPU)
  decode, decode-paged-P   the decoding kernel's operator (torch.ops.fa2.varlen_decode) on the same
                packed and paged caches, its parts chosen by its plan
  sdpa          F.scaled_dot_product_attention(q, k, v, enable_gqa=True), (B, H, 1, D) against
                (B, H_kv, cache, D)
  fa4, fa4-paged-P   flash_attn_varlen_func on the dense cache, and with page_table
and, as bandwidth, the bytes of K and V each reads per second beside what a device-to-device
copy of 4 GiB reaches in the same run (its read and write bytes per second).

Without one of the optional baselines its column is left out and the first lines say why.

    python3 python/benchmarks/varlen.py --mode train
    python3 python/benchmarks/varlen.py --mode decode --csv decode.csv
"""

import argparse
import inspect
import statistics

import torch

import fa2_attention
from timing import first_output, interleaved_ms, paired_ratio, sm_clock_mhz, write_csv

TRAIN_LENGTHS = [16384, 8192, 8192] + [4096] * 4 + [2048] * 6 + [2304, 1536, 256]
DECODE_POINTS = [(1, 131072), (8, 32768), (64, 16384), (128, 4096)]


def optional_baselines():
    """{name: callable or None} and {name: why it is missing}."""
    found, missing = {}, {}
    try:
        from torch.nn.attention.varlen import varlen_attn
        found["torch-varlen"] = varlen_attn
    except ImportError as e:
        missing["torch-varlen"] = f"torch {torch.__version__} has no torch.nn.attention.varlen ({e})"
    try:
        from flash_attn.cute import flash_attn_varlen_func
        found["fa4"] = flash_attn_varlen_func
    except Exception as e:  # not installed, or installed without what it needs
        missing["fa4"] = f"flash_attn.cute does not import ({type(e).__name__}: {e})"
    return found, missing


def cumulative(lengths, device):
    out = [0]
    for n in lengths:
        out.append(out[-1] + n)
    return torch.tensor(out, dtype=torch.int32, device=device)


def train_variants(lengths, heads, kv_heads, dim, found, generator):
    """{name: (fn, input_sets)} for the forward and for forward+backward."""
    total, max_len = sum(lengths), max(lengths)
    cu = cumulative(lengths, "cuda")

    def draw(*shape):
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=generator)

    q, k, v, dout = draw(total, heads, dim), draw(total, kv_heads, dim), draw(total, kv_heads, dim), draw(total, heads, dim)
    # Each sequence as its own contiguous (1, H, N, D) tensors, for the dense operator.
    starts = cu.tolist()
    each = [tuple(t[starts[i]:starts[i + 1]].transpose(0, 1).unsqueeze(0).contiguous() for t in (q, k, v, dout))
            for i in range(len(lengths))]
    group = heads // kv_heads
    # Every sequence padded to the longest, as one dense batch.
    padded = []
    for t in (q, k, v, dout):
        batch_t = torch.zeros(len(lengths), t.shape[1], max_len, dim, device="cuda", dtype=t.dtype)
        for i in range(len(lengths)):
            batch_t[i, :, :lengths[i]] = t[starts[i]:starts[i + 1]].transpose(0, 1)
        padded.append(batch_t)

    def ours(q, k, v, deterministic=False):
        return fa2_attention.varlen_attn(q, k, v, cu, cu, max_len, max_len, window_size=(-1, 0), enable_gqa=True,
                                         kernel="fast", deterministic=deterministic)

    def dense_each(parts):
        return [fa2_attention.flash_attention(pq, pk, pv, is_causal=True, kernel="fast") for pq, pk, pv, _ in parts]

    calls = {"varlen": ours}
    if "torch-varlen" in found:
        # PyTorch's signature has changed between releases: window_size or is_causal for the mask, and
        # enable_gqa only in some (without it, k and v are repeated to every query head).
        params = inspect.signature(found["torch-varlen"]).parameters
        mask = dict(window_size=(-1, 0)) if "window_size" in params else dict(is_causal=True)
        takes_gqa = "enable_gqa" in params

        def torch_varlen(q, k, v):
            if takes_gqa:
                return found["torch-varlen"](q, k, v, cu, cu, max_len, max_len, enable_gqa=True, **mask)
            return found["torch-varlen"](q, k.repeat_interleave(group, 1), v.repeat_interleave(group, 1), cu, cu,
                                         max_len, max_len, **mask)

        calls["torch-varlen"] = torch_varlen
    if "fa4" in found:
        def fa4(q, k, v):
            return first_output(found["fa4"](q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max_len,
                                      max_seqlen_k=max_len, causal=True))

        calls["fa4-varlen"] = fa4

    def fwd_bwd_of(call):
        def fwd_bwd(q, k, v, dout):
            leaves = tuple(t.detach().requires_grad_() for t in (q, k, v))
            torch.autograd.grad(call(*leaves), leaves, dout)

        return fwd_bwd

    forward, both = {}, {}
    for name, call in calls.items():
        forward[name] = ((lambda call: lambda q, k, v, dout: call(q, k, v))(call), [(q, k, v, dout)])
        both[name] = (fwd_bwd_of(call), [(q, k, v, dout)])
    both["varlen-det"] = (fwd_bwd_of(lambda q, k, v: ours(q, k, v, deterministic=True)), [(q, k, v, dout)])
    forward["dense-each"] = (lambda parts: dense_each(parts), [(each,)])

    def dense_each_both(parts):
        for pq, pk, pv, pd in parts:
            leaves = tuple(t.detach().requires_grad_() for t in (pq, pk, pv))
            out = fa2_attention.flash_attention(*leaves, is_causal=True, kernel="fast")
            torch.autograd.grad(out, leaves, pd)

    both["dense-each"] = (dense_each_both, [(each,)])
    forward["dense-padded"] = (
        lambda pq, pk, pv, pd: fa2_attention.flash_attention(pq, pk, pv, is_causal=True, kernel="fast"), [padded])

    def dense_padded_both(pq, pk, pv, pd):
        leaves = tuple(t.detach().requires_grad_() for t in (pq, pk, pv))
        torch.autograd.grad(fa2_attention.flash_attention(*leaves, is_causal=True, kernel="fast"), leaves, pd)

    both["dense-padded"] = (dense_padded_both, [padded])
    return forward, both


def copy_bandwidth(reps, warmup):
    """A device-to-device copy of 4 GiB: read + write bytes per second (GB/s), median of reps."""
    src = torch.empty(1 << 31, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    times = interleaved_ms({"copy": (lambda: dst.copy_(src), [()])}, reps, warmup, per_timing=1)["copy"]
    return 2 * src.numel() * src.element_size() / (statistics.median(times) * 1e-3) / 1e9


def decode_variants(batch, cache, heads, kv_heads, dim, page_sizes, found, generator):
    """{name: (fn, input_sets)} for one decoding point, and the bytes of K and V each reads."""

    def draw(*shape):
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=generator)

    q = draw(batch, heads, dim)
    k, v = draw(batch * cache, kv_heads, dim), draw(batch * cache, kv_heads, dim)
    cu_q = cumulative([1] * batch, "cuda")
    cu_k = cumulative([cache] * batch, "cuda")
    used = torch.full((batch,), cache, dtype=torch.int32, device="cuda")
    variants = {
        "varlen": (lambda: fa2_attention.varlen_attn(q, k, v, cu_q, cu_k, 1, cache, window_size=(-1, 0),
                                                     enable_gqa=True, kernel="fast"), [()]),
        "varlen-unchecked": (lambda: fa2_attention.varlen_attn(q, k, v, cu_q, cu_k, 1, cache, window_size=(-1, 0),
                                                               enable_gqa=True, kernel="fast", check_invariants=False),
                             [()]),
    }
    # The decoding kernel itself (fa2::varlen_decode): one launch over the batch, two with split-KV.
    ops = torch.ops.fa2
    variants["decode"] = (lambda: ops.varlen_decode(q, k, v, cu_q, cu_k, None, None, 1, cache, None, -1, 0, 0)[0],
                          [()])
    # SDPA: (B, H, 1, D) against (B, H_kv, cache, D), views of the same memory.
    q4 = q.unsqueeze(2)
    k4, v4 = (t.view(batch, cache, kv_heads, dim).transpose(1, 2) for t in (k, v))
    variants["sdpa"] = (lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, enable_gqa=True), [()])
    if "fa4" in found:
        variants["fa4"] = (lambda: first_output(found["fa4"](q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=1,
                                                      max_seqlen_k=cache, causal=True)), [()])
    for page_size in page_sizes:
        pages = batch * cache // page_size
        perm = torch.randperm(pages, device="cuda", generator=generator)
        table = perm.reshape(batch, cache // page_size).to(torch.int32)
        # Page p of the pool holds the keys the table maps to it: the same keys as the dense cache.
        pool_k = torch.empty(pages, page_size, kv_heads, dim, device="cuda", dtype=torch.bfloat16)
        pool_v = torch.empty_like(pool_k)
        pool_k[perm] = k.view(pages, page_size, kv_heads, dim)
        pool_v[perm] = v.view(pages, page_size, kv_heads, dim)
        variants[f"paged-{page_size}"] = (
            (lambda pk, pv, tb: lambda: fa2_attention.varlen_attn(q, pk, pv, cu_q, None, 1, cache, window_size=(-1, 0),
                                                                  enable_gqa=True, seqused_k=used, block_table=tb,
                                                                  kernel="fast"))(pool_k, pool_v, table), [()])
        variants[f"paged-{page_size}-unchecked"] = (
            (lambda pk, pv, tb: lambda: fa2_attention.varlen_attn(q, pk, pv, cu_q, None, 1, cache, window_size=(-1, 0),
                                                                  enable_gqa=True, seqused_k=used, block_table=tb,
                                                                  kernel="fast", check_invariants=False))(
                pool_k, pool_v, table), [()])
        variants[f"decode-paged-{page_size}"] = (
            (lambda pk, pv, tb: lambda: ops.varlen_decode(q, pk, pv, cu_q, None, used, tb, 1, cache, None, -1, 0, 0)[0])(
                pool_k, pool_v, table), [()])
        if "fa4" in found:
            variants[f"fa4-paged-{page_size}"] = (
                (lambda pk, pv, tb: lambda: first_output(found["fa4"](q, pk, pv, cu_seqlens_q=cu_q, max_seqlen_q=1,
                                                               seqused_k=used, page_table=tb, causal=True)))(
                    pool_k, pool_v, table), [()])
    kv_bytes = 2 * batch * cache * kv_heads * dim * 2
    return variants, kv_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["train", "decode"], default="train")
    parser.add_argument("--lengths", type=int, nargs="+", default=TRAIN_LENGTHS)
    parser.add_argument("--points", type=str, nargs="+", default=[f"{b}x{c}" for b, c in DECODE_POINTS],
                        help="decoding points BxCACHE")
    parser.add_argument("--page-sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--csv", default=None)
    a = parser.parse_args()
    if a.heads % a.kv_heads != 0:
        parser.error(f"--kv-heads: {a.kv_heads} does not divide --heads {a.heads}")
    if not torch.cuda.is_available():
        raise SystemExit("varlen.py times GPU kernels: torch.cuda.is_available() is False here")
    found, missing = optional_baselines()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {fa2_attention.library_path}")
    for name, why in missing.items():
        print(f"{name}: not timed: {why}")
    generator = torch.Generator(device="cuda")
    generator.manual_seed(0)
    rows = []
    if a.mode == "train":
        for r in range(a.rounds):
            forward, both = train_variants(a.lengths, a.heads, a.kv_heads, a.head_dim, found, generator)
            for pass_, variants in (("fwd", forward), ("fwd+bwd", both)):
                times = interleaved_ms(variants, a.reps, a.warmup)
                for name, ms in times.items():
                    rows.append(dict(round=r, mode="train", pass_=pass_, impl=name, ms=statistics.median(ms),
                                     x_varlen=paired_ratio(ms, times["varlen"]), sm_clock_mhz=sm_clock_mhz()))
        print(f"\n{len(a.lengths)} sequences, {sum(a.lengths)} tokens, H {a.heads}/{a.kv_heads}, D {a.head_dim}, "
              f"causal, bf16; ms: median over {a.rounds} rounds; x: its time / varlen's (median of the rounds)")
        print("| pass | impl | ms | x |")
        print("|---|---|---|---|")
        for pass_ in ("fwd", "fwd+bwd"):
            for name in dict.fromkeys(row["impl"] for row in rows if row["pass_"] == pass_):
                sel = [row for row in rows if row["pass_"] == pass_ and row["impl"] == name]
                print(f"| {pass_} | {name} | {statistics.median(s['ms'] for s in sel):.3f} | "
                      f"{statistics.median(s['x_varlen'] for s in sel):.2f} |")
    else:
        copy_gbs = copy_bandwidth(a.reps, a.warmup)
        print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write)")
        points = [tuple(int(x) for x in p.split("x")) for p in a.points]
        for r in range(a.rounds):
            for batch, cache in points:
                variants, kv_bytes = decode_variants(batch, cache, a.heads, a.kv_heads, a.head_dim, a.page_sizes,
                                                     found, generator)
                times = interleaved_ms(variants, a.reps, a.warmup)
                for name, ms in times.items():
                    med = statistics.median(ms)
                    rows.append(dict(round=r, mode="decode", B=batch, cache=cache, impl=name, ms=med,
                                     gbs=kv_bytes / (med * 1e-3) / 1e9, copy_gbs=copy_gbs,
                                     x_sdpa=paired_ratio(ms, times["sdpa"]), sm_clock_mhz=sm_clock_mhz()))
        print(f"\nOne query per sequence, H {a.heads}/{a.kv_heads}, D {a.head_dim}, bf16; ms and GB/s of K and V: "
              f"median over {a.rounds} rounds; x: its time / SDPA's")
        print("| B | cache | impl | ms | GB/s | x |")
        print("|---|---|---|---|---|---|")
        for batch, cache in points:
            for name in dict.fromkeys(row["impl"] for row in rows if (row["B"], row["cache"]) == (batch, cache)):
                sel = [row for row in rows if (row["B"], row["cache"], row["impl"]) == (batch, cache, name)]
                print(f"| {batch} | {cache} | {name} | {statistics.median(s['ms'] for s in sel):.3f} | "
                      f"{statistics.median(s['gbs'] for s in sel):.0f} | "
                      f"{statistics.median(s['x_sdpa'] for s in sel):.2f} |")
    if a.csv:
        write_csv(a.csv, rows)


if __name__ == "__main__":
    main()
