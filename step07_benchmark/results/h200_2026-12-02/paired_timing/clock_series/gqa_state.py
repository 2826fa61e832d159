"""gqa.py's slow point (H_kv 8 forward, D 128, N 4096, no mask, timed right after H_kv 32) looked
at up close. It imports gqa.py and timing.py as they were at commit ee104e6, when gqa.py timed the
kv-head counts one block after another (`git show ee104e6:python/benchmarks/gqa.py > gqa.py` and
the same for timing.py, beside this file; run it from here with the package installed):

    python3 gqa_state.py > state.txt
    python3 gqa_state.py --empty-cache > state_empty.txt
    ncu --profile-from-start off --clock-control none --kernel-name regex:hopper_ws_fwd \
        --metrics gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sectors_srcunit_tex_op_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second \
        python3 gqa_state.py --profile > ncu.txt

Two rounds of gqa.py's problems in the order 32, 8, 1. In round 1 at the slow point, for H_kv 32
then 8: fresh input sets, then 8 forward timings in a row on them (each as gqa.py's, median of
20), with the SM clock read after each; a slow state that comes and goes with the clock is the
clock's, one that stays with the inputs would be their placement's. Then the inputs' addresses,
and (--profile) one forward between cudaProfilerStart and Stop for ncu. --empty-cache frees the
allocator's cache before every problem."""
import sys
import time
import torch
sys.path.insert(0, ".")  # gqa.py and timing.py of ee104e6 beside this file
import gqa  # noqa: E402
from timing import median_ms, sm_clock_mhz  # noqa: E402

empty = "--empty-cache" in sys.argv
profile = "--profile" in sys.argv
B, H = 2, 32
g = torch.Generator(device="cuda").manual_seed(0)
problems = [(N, D, c) for D in (64, 128) for N in (4096, 8192) for c in (False, True)]
fwd = lambda q, k, v, *rest: torch.ops.fa2.forward(q, k, v, False, None, "fast")  # noqa: E731
for r in range(2):
    for N, D, causal in problems:
        for hkv in (32, 8, 1):
            if empty:
                torch.cuda.empty_cache()
            point = (r == 1 and D == 128 and N == 4096 and not causal)
            if point and hkv in (32, 8):
                t0 = time.time()
                sets = [gqa.inputs(B, H, hkv, N, D, causal, g) for _ in range(3)]
                series = []
                for i in range(8):
                    ms = median_ms(fwd, sets, 20, 5)
                    series.append(f"{ms:.3f}@{sm_clock_mhz()}")
                print(f"round {r} H_kv {hkv} (empty_cache {empty}): fast fwd series ms@MHz: {' '.join(series)}"
                      f"  [{time.time() - t0:.2f} s]")
                for i, s in enumerate(sets):
                    print("  set", i, " ".join(f"{n}@{t.data_ptr():#x}+{t.numel() * t.element_size() >> 20}MiB"
                                              for n, t in zip("q k v dout out lse".split(), s)))
                if profile:
                    torch.cuda.synchronize()
                    torch.cuda.profiler.start()
                    fwd(*sets[0])
                    torch.cuda.synchronize()
                    torch.cuda.profiler.stop()
                del sets
            t = gqa.time_problem(B, H, hkv, N, D, causal, 20, 5, g)
            if point:
                print(f"  then gqa.time_problem H_kv {hkv}: " + " ".join(f"{k} {v:.3f}" for k, v in t.items())
                      + f" clock {sm_clock_mhz()}")
