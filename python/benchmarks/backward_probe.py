"""Where the packed batch's backward spends its time when every sequence runs through the dense
operator (varlen_attn's backward today): the whole varlen backward against its parts, timed in
turns (timing.interleaved_ms) on the training batch of varlen.py --mode train.

  varlen-bwd       torch.ops.fa2.varlen_backward (what autograd runs: on an sm_90 GPU the packed
                   backward, one launch of v6b's packed twin)
  seq-by-seq       the sequence-by-sequence path (varlen.py's _backward: fa2::backward per sequence,
                   gradients copied into the packed ones)
  dense-slices     fa2::backward on each sequence's rows of the packed tensors, nothing copied back
  dense-contig     fa2::backward on each sequence as its own contiguous (1, H, N, D) tensors
  dense-contig-ws  the same, with the per-sequence lse also contiguous (as the forward returned it)
  bookkeeping      the varlen backward's own tensors: poisoned gradients, the written-row masks and
                   the copies of each sequence's gradients into them, without the kernels

Run: FA2_TORCH_OPS=... PYTHONPATH=python python3 python/benchmarks/backward_probe.py
"""

import argparse
import statistics

import torch

import fa2_attention
from fa2_attention import varlen as vl
from timing import interleaved_ms, paired_ratio

LENGTHS = [16384, 8192, 8192] + [4096] * 4 + [2048] * 6 + [2304, 1536, 256]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    total, max_len = sum(LENGTHS), max(LENGTHS)
    starts = [0]
    for n in LENGTHS:
        starts.append(starts[-1] + n)
    cu = torch.tensor(starts, dtype=torch.int32, device="cuda")

    def draw(*shape):
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)

    q, k, v, dout = (draw(total, args.heads, args.dim), draw(total, args.kv_heads, args.dim),
                     draw(total, args.kv_heads, args.dim), draw(total, args.heads, args.dim))
    out, lse = fa2_attention.varlen_attn(q, k, v, cu, cu, max_len, max_len, window_size=(-1, 0), enable_gqa=True,
                                         kernel="fast", return_aux=fa2_attention.AuxRequest(lse=True))
    scale = args.dim ** -0.5
    seqs = [(starts[i], starts[i + 1]) for i in range(len(LENGTHS))]
    slices = [tuple(vl._as_dense(t[a:b]) for t in (dout, q, k, v, out)) + (lse[:, a:b].unsqueeze(0),)
              for a, b in seqs]
    contig = [tuple(t.contiguous() for t in s[:5]) + (s[5],) for s in slices]
    contig_ws = [tuple(t.contiguous() for t in s) for s in slices]

    def varlen_bwd():
        torch.ops.fa2.varlen_backward(dout, q, k, v, out, lse, cu, cu, max_len, max_len, scale, -1, 0, None, "fast",
                                      False, False)

    sequences = [(a, b - a, a, b - a, (0, 0, -1, 0)) for a, b in seqs]

    def seq_by_seq():
        vl._backward(dout, q, k, v, out, lse, sequences, scale, "fast", False, False)

    def dense(parts):
        for d, qq, kk, vv, oo, ll in parts:
            torch.ops.fa2.backward(d, qq, kk, vv, oo, ll, True, scale, "fast", False, -1, -1, False)

    grads = [torch.ops.fa2.backward(*s[:6], True, scale, "fast", False, -1, -1, False) for s in contig_ws]

    def bookkeeping():
        dq, dk, dv = vl._poisoned(q.shape, q), vl._poisoned(k.shape, k), vl._poisoned(v.shape, v)
        wq, wk = vl._written_rows(sequences, q.shape[0], k.shape[0], q.device)
        dq[~wq] = 0
        dk[~wk] = 0
        dv[~wk] = 0
        for (a, b), g in zip(seqs, grads):
            dq[a:b] = g[0][0].transpose(0, 1)
            dk[a:b] = g[1][0].transpose(0, 1)
            dv[a:b] = g[2][0].transpose(0, 1)

    variants = {"varlen-bwd": (varlen_bwd, [()]), "seq-by-seq": (seq_by_seq, [()]), "dense-slices": (dense, [(slices,)]),
                "dense-contig": (dense, [(contig,)]), "dense-contig-ws": (dense, [(contig_ws,)]),
                "bookkeeping": (bookkeeping, [()])}
    times = interleaved_ms(variants, args.reps, warmup=2, per_timing=1)
    base = times["dense-contig-ws"]
    print(f"{'variant':<16} {'median ms':>10} {'vs dense-contig-ws':>20}")
    for name, t in times.items():
        print(f"{name:<16} {statistics.median(t):>10.3f} {paired_ratio(t, base):>20.3f}")


if __name__ == "__main__":
    main()
