"""The notebook example of python/README.md as a program: flash_attention on a (2, 8, 1024, 64)
bfloat16 problem, causal, forward and backward, compared with PyTorch's SDPA.

    PYTHONPATH=$PWD/python python3 python/example.py [--device cuda|cpu]
"""

import argparse
import sys


def main(argv):
    parser = argparse.ArgumentParser(
        description="flash_attention forward and backward on a (2, 8, 1024, 64) bfloat16 causal problem, "
        "compared with PyTorch's SDPA (the example of python/README.md)"
    )
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="where to run (default: cuda)")
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as F

    import fa2_attention
    from fa2_attention import flash_attention

    if args.device == "cuda" and not torch.cuda.is_available():
        print("example.py: no CUDA GPU visible to torch; try --device cpu", file=sys.stderr)
        return 1
    where = torch.cuda.get_device_name() if args.device == "cuda" else "CPU (the kernel bodies on the host)"
    print(f"{where}, torch {torch.__version__}, {fa2_attention.library_path}")

    # The README's three lines.
    q, k, v = (torch.randn(2, 8, 1024, 64, device=args.device, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    out = flash_attention(q, k, v, is_causal=True)
    out.sum().backward()

    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    ref.sum().backward()
    print(f"out    {tuple(out.shape)} {out.dtype}, max |out - SDPA| = {(out - ref).abs().max().item():.2e}")
    for name, mine, theirs in (("q.grad", q.grad, q2.grad), ("k.grad", k.grad, k2.grad), ("v.grad", v.grad, v2.grad)):
        print(f"{name} {tuple(mine.shape)} {mine.dtype}, max |{name} - SDPA's| = {(mine - theirs).abs().max().item():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
