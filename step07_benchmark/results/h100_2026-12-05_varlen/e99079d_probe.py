# The one-off probe behind e99079d_probe.txt, run from the repository root on that commit:
#   FA2_TORCH_OPS=build/sm90/python/libfa2_torch_ops.so python3 e99079d_probe.py
# v6's packed forward on a batch of one 16,384-token sequence against the dense operator on the same
# sequence, contiguous and read in place from the packed rows, causal and without a mask; 3 rounds.
import statistics, sys, torch
sys.path.insert(0, "python")
import fa2_attention
torch.manual_seed(0)
H, HK, D, n = 32, 8, 128, 16384
def t(fn, reps=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ms.append(a.elapsed_time(b))
    return statistics.median(ms)
q = torch.randn(n, H, D, device="cuda", dtype=torch.bfloat16)
k = torch.randn(n, HK, D, device="cuda", dtype=torch.bfloat16)
v = torch.randn(n, HK, D, device="cuda", dtype=torch.bfloat16)
cu = torch.tensor([0, n], dtype=torch.int32, device="cuda")
qc, kc, vc = (x.transpose(0, 1).unsqueeze(0).contiguous() for x in (q, k, v))
qs, ks, vs = (x.transpose(0, 1).unsqueeze(0) for x in (q, k, v))
calls = {
 "packed op, one sequence of 16384": lambda: torch.ops.fa2.varlen_packed(q, k, v, cu, cu, None, n, n, None, -1, 0),
 "dense op, contiguous (1,H,N,D)": lambda: torch.ops.fa2.forward(qc, kc, vc, True, None, "fast", -1, -1, True),
 "dense op, the packed rows in place": lambda: torch.ops.fa2.forward(qs, ks, vs, True, None, "fast", -1, -1, True),
 "packed op, no mask": lambda: torch.ops.fa2.varlen_packed(q, k, v, cu, cu, None, n, n, None, -1, -1),
 "dense op, no mask, contiguous": lambda: torch.ops.fa2.forward(qc, kc, vc, False, None, "fast", -1, -1, True),
}
for r in range(3):
    print(r, "  ".join(f"{name}: {t(fn):.3f}" for name, fn in calls.items()))
