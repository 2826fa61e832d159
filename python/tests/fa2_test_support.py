"""What the tests share: torch and fa2_attention when they import (None otherwise, with the reason
conftest.py skips on), the article's shapes, the float64 references and the tolerances.

Importable without torch, so that pytest collects every test everywhere and skips it with a reason.
"""

import math
import os
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]  # python/, where the package fa2_attention lives
# FA2_TEST_INSTALLED=1: test the package pip installed (site-packages), not python/ of this checkout.
TEST_INSTALLED = os.environ.get("FA2_TEST_INSTALLED") == "1"
if not TEST_INSTALLED and str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

TORCH_MISSING = "torch is not installed: these tests need PyTorch (see python/README.md)"

try:
    import torch
except ImportError:
    torch = None

fa2_attention = None
flash_attention = None
OPS_MISSING = None  # why the operators cannot be used, or None
if torch is not None:
    try:
        import fa2_attention
        from fa2_attention import flash_attention
    except ImportError as error:
        OPS_MISSING = f"the fa2 ops library is not loaded: {error}"

# FA2_REQUIRE_GPU=1 (as for ctest) turns every skip for a missing torch, library or GPU into an error.
REQUIRE_GPU = os.environ.get("FA2_REQUIRE_GPU") == "1"

# The article's shapes, (B, N_q, N_k, D): ragged last tiles, N_q != N_k both ways, D 32/64/128.
SHAPES = [
    (4, 128, 128, 64),
    (2, 1024, 1024, 64),
    (2, 100, 100, 64),
    (1, 37, 53, 32),
    (1, 200, 96, 128),
]
SHAPE_IDS = [f"B{b}-Nq{nq}-Nk{nk}-D{d}" for b, nq, nk, d in SHAPES]

DTYPES = ["float32", "bfloat16", "float16"]  # names, so that parametrisation needs no torch

# Forward tolerances (the article's, and step05's C++ tests'): float32 products run as TF32 (11
# significant bits), bf16 rounds the inputs, P and O to 8 significant bits, fp16 to 11 (as TF32).
FORWARD_TOL = {
    "float32": dict(atol=1e-2, rtol=1e-2),
    "bfloat16": dict(atol=2e-2, rtol=2e-2),
    "float16": dict(atol=1e-2, rtol=1e-2),
}

# Gradient tolerances, as step05's backward tests (step05_fa2_kernel/README.md, "Tolerances"): a
# gradient entry is a sum in which dP and D_i nearly cancel, so it can be far smaller than the
# terms whose rounding sets its error. The absolute part is therefore a fraction of the largest
# entry of the three reference gradients, with a relative part on top. float32: 1e-2 and 1e-2 (TF32
# products, two in a row); bf16: 3e-2 and 2e-2 (P, dS, the forward's O and the results rounded to
# 8 bits); fp16 as float32 (the same roundings as bf16's, at 11 bits). step05 measured worst
# errors of 1.7e-3 (float32) and 4.8e-3 (bf16) of that scale.
GRADIENT_TOL = {"float32": (1e-2, 1e-2), "bfloat16": (3e-2, 2e-2), "float16": (1e-2, 1e-2)}  # (fraction of the scale, rtol)


def dtype_of(name):
    return getattr(torch, name)


def attention_inputs(q_shape, kv_shape, dtype, device="cpu", seed=0):
    """Standard-normal q of q_shape, k and v of kv_shape, and an upstream gradient dout like q, drawn
    from a generator of their own (`seed`), so that a test's inputs do not depend on which tests
    ran before it. q, k and v are leaves that require grad."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)

    def draw(shape):
        return torch.randn(shape, generator=generator, device=device, dtype=dtype)

    q, k, v = (draw(shape).requires_grad_() for shape in (q_shape, kv_shape, kv_shape))
    return q, k, v, draw(q_shape)


def top_left_keep(n_q, n_k, device):
    """(N_q, N_k) boolean: query i sees key j when j <= i (torch's is_causal convention)."""
    return torch.ones(n_q, n_k, dtype=torch.bool, device=device).tril()


def window_keep(n_q, n_k, is_causal, window, device):
    """(N_q, N_k) boolean: query i sees key j under the causal mask (top-left) and the sliding
    window (left, right): i - left <= j <= i + right, -1 for no bound on a side. What SDPA takes
    as a boolean attn_mask."""
    i = torch.arange(n_q, device=device).unsqueeze(-1)
    j = torch.arange(n_k, device=device).unsqueeze(0)
    keep = torch.ones(n_q, n_k, dtype=torch.bool, device=device)
    left, right = window
    if is_causal:
        keep &= j <= i
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def reference_attention(q, k, v, is_causal, scale=None, dtype=None, window=(-1, -1)):
    """Attention written out in `dtype` (float64 when None): out and L = logsumexp of the scaled
    scores, with the causal mask and a sliding window. A query that sees no key gets out = 0 and
    L = +inf, as the kernels. Differentiable, so it also gives the reference gradients."""
    dtype = torch.float64 if dtype is None else dtype
    q, k, v = (t.to(dtype) for t in (q, k, v))
    if q.dim() == 4 and k.shape[1] != q.shape[1]:
        # Grouped-query attention: query head h reads kv head h // (H / H_kv). Repeated, so that
        # the gradients of k and v sum over the query heads of each group.
        group = q.shape[1] // k.shape[1]
        k, v = (t.repeat_interleave(group, dim=1) for t in (k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (q @ k.transpose(-1, -2)) * scale
    keep = window_keep(s.shape[-2], s.shape[-1], is_causal, window, s.device)
    s = s.masked_fill(~keep, float("-inf"))
    # Rows that see no key take their logsumexp over zeros instead (finite, so that no NaN reaches
    # the gradients); their P = exp(-inf - lse) is 0 either way, and their L is +inf.
    sees = keep.any(dim=-1)
    lse = torch.logsumexp(s.masked_fill(~sees.unsqueeze(-1), 0.0), dim=-1)
    out = torch.exp(s - lse.unsqueeze(-1)) @ v
    return out, lse.masked_fill(~sees, float("inf"))


def reference_gradients(q, k, v, dout, is_causal, scale=None, window=(-1, -1)):
    """dq, dk, dv of sum(out * dout) in float64, from the inputs' own values (bf16 widens exactly)."""
    q64, k64, v64 = (t.detach().to(torch.float64).requires_grad_() for t in (q, k, v))
    out64, _ = reference_attention(q64, k64, v64, is_causal, scale, window=window)
    return torch.autograd.grad(out64, (q64, k64, v64), dout.detach().to(torch.float64))


def assert_finite(name, t):
    bad = (~torch.isfinite(t)).sum().item()
    assert bad == 0, f"{name}: {bad} of {t.numel()} entries are NaN or infinite"


def assert_forward_close(name, got, want, dtype_name):
    assert_finite(name, got)
    torch.testing.assert_close(
        got.to(want.dtype), want, **FORWARD_TOL[dtype_name], msg=lambda m: f"{name} ({dtype_name}): {m}"
    )


def assert_gradients_close(got, want, dtype_name):
    fraction, rtol = GRADIENT_TOL[dtype_name]
    scale = max(w.abs().max().item() for w in want)
    assert scale > 0, "the reference gradients are all zero: the test would prove nothing"
    for name, g, w in zip(("dq", "dk", "dv"), got, want):
        assert g.shape == w.shape, f"{name}: shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        assert_finite(name, g)
        torch.testing.assert_close(
            g.to(torch.float64),
            w,
            atol=fraction * scale,
            rtol=rtol,
            msg=lambda m, name=name: f"{name} ({dtype_name}; atol = {fraction} x largest gradient {scale:.3g}): {m}",
        )
