"""The fast forward at B 2, H 32, N 4096, D 128 without a mask, H_kv 32 against 8 (and 1): is the slow
state of gqa.py's H_kv = 8 timings tied to where the inputs sit in memory? Each line: the median
time per call, the SM clock, power and temperature after it, and where q, k and v start (low 32
bits of the address). Run from the repository root, on a build with the PyTorch operators:

    FA2_TORCH_OPS=build/sm90/python/libfa2_torch_ops.so PYTHONPATH=python \
        python3 python/benchmarks/placement_probe.py

Its output on one H200 (2026-12-02): step07_benchmark/results/h200_2026-12-02/kv_head_order/placement_probe/probe.txt
"""
import torch
import fa2_attention  # noqa: F401
from timing import median_ms  # timing.py, beside this file

B, H, N, D = 2, 32, 4096, 128
g = torch.Generator(device="cuda").manual_seed(0)

def draw(*s):
    return torch.randn(s, device="cuda", dtype=torch.bfloat16, generator=g)

def fwd(q, k, v):
    torch.ops.fa2.forward(q, k, v, False, None, "fast")

def sets_for(hkv, kv_from=None):
    out = []
    for i in range(3):
        q = draw(B, H, N, D)
        if kv_from is None:
            k, v = draw(B, hkv, N, D), draw(B, hkv, N, D)
        else:
            k, v = kv_from[i][0][:, :hkv], kv_from[i][1][:, :hkv]
        out.append((q, k, v))
    return out

def gpu_state():
    try:
        return f"clock {torch.cuda.clock_rate()} MHz {torch.cuda.power_draw() // 1000} W {torch.cuda.temperature()} C"
    except Exception as e:  # no NVML binding
        return f"(no clocks: {type(e).__name__})"

def one(label, sets):
    ms = median_ms(fwd, sets, 20, 5)
    print(f"{label:48s} {ms:.3f} ms  {gpu_state()}  q@{sets[0][0].data_ptr() % (1 << 32):#x} k@{sets[0][1].data_ptr() % (1 << 32):#x} v@{sets[0][2].data_ptr() % (1 << 32):#x}", flush=True)
    return ms

print("A: fresh inputs each round, as gqa.py")
for r in range(6):
    for hkv in (32, 8, 1):
        one(f"A round {r} H_kv {hkv}", sets_for(hkv))
print("B: a pad of p MiB allocated before the inputs")
for p in (0, 1, 3, 7, 13, 29, 61):
    pad = torch.empty(p * (1 << 20) + 512, dtype=torch.uint8, device="cuda")
    for hkv in (32, 8):
        one(f"B pad {p} MiB H_kv {hkv}", sets_for(hkv))
    del pad
print("C: H_kv 8 as the first 8 heads of H_kv 32 tensors (strided views, contiguous per head)")
big = [(draw(B, 32, N, D), draw(B, 32, N, D)) for _ in range(3)]
for r in range(3):
    one(f"C round {r} H_kv 32", sets_for(32))
    one(f"C round {r} H_kv 8 in 32's memory", sets_for(8, big))
    one(f"C round {r} H_kv 8 fresh", sets_for(8))
print("D: the same sets timed 5 times in a row")
s8, s32 = sets_for(8), sets_for(32)
for r in range(5):
    one(f"D rep {r} H_kv 8", s8)
    one(f"D rep {r} H_kv 32", s32)

print("E: H_kv 8 with a gap of p MiB between k and v")
for p in (0, 1, 2, 4, 8, 16):
    sets, pads = [], []
    for i in range(3):
        q = draw(B, H, N, D)
        k = draw(B, 8, N, D)
        pads.append(torch.empty(p * (1 << 20) + 512, dtype=torch.uint8, device="cuda"))
        v = draw(B, 8, N, D)
        sets.append((q, k, v))
    one(f"E gap {p} MiB H_kv 8", sets)
    del sets, pads
print("F: k and v of one set reused three times (one set, L2 reuse across calls)")
s8 = sets_for(8)
one("F H_kv 8 one set", [s8[0]] * 3)
s32 = sets_for(32)
one("F H_kv 32 one set", [s32[0]] * 3)
