"""Grouped-query and multi-query attention: k and v with H_kv heads, H_kv dividing q's H, as
torch.nn.functional.scaled_dot_product_attention takes them with enable_gqa=True. Query head h
reads kv head h // (H / H_kv); dk and dv sum over the query heads of each group. Checked against
SDPA with enable_gqa=True and against attention written out in float64, for groups of 1, 2, 4 and
8 query heads per kv head (H_kv = 1 with H = 8). The CPU tests need torch and the library; the
CUDA ones a GPU.

    python3 -m pytest python/tests/test_gqa.py -q -rs
"""

import pytest
from fa2_test_support import (
    DTYPES,
    assert_forward_close,
    assert_gradients_close,
    attention_inputs,
    flash_attention,
    reference_attention,
    reference_gradients,
    torch,
)

CAUSAL = pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
H = 8  # query heads; H_kv = H / group
GROUPS = pytest.mark.parametrize("group", [1, 2, 4, 8], ids=lambda g: f"group{g}")


def sdpa_gqa(q, k, v, is_causal):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=True)


@CAUSAL
@GROUPS
def test_the_float64_reference_is_sdpa_with_enable_gqa(group, is_causal):
    """The reference repeats each kv head over its group as SDPA's enable_gqa does (on the CPU)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, dout = attention_inputs((2, H, 29, 16), (2, H // group, 37, 16), torch.float64)
    with sdpa_kernel(SDPBackend.MATH):
        out_sdpa = sdpa_gqa(q, k, v, is_causal)
    grads_sdpa = torch.autograd.grad(out_sdpa, (q, k, v), dout)
    out_ref, _ = reference_attention(q, k, v, is_causal)
    torch.testing.assert_close(out_ref, out_sdpa, atol=1e-10, rtol=1e-10)
    for name, got, want in zip(("dq", "dk", "dv"), reference_gradients(q, k, v, dout, is_causal), grads_sdpa):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10, msg=lambda m, name=name: f"{name}: {m}")


def check_gqa(q, k, v, dout, is_causal, dtype_name, **kwargs):
    out = flash_attention(q, k, v, is_causal=is_causal, **kwargs)
    assert out.shape == q.shape and out.dtype == q.dtype
    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), is_causal)
    assert_forward_close("out vs float64", out.detach(), out_ref, dtype_name)
    with torch.no_grad():
        out_sdpa = sdpa_gqa(q, k, v, is_causal)
    assert_forward_close("out vs SDPA enable_gqa", out.detach(), out_sdpa, dtype_name)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    for name, g, x in zip(("dq", "dk", "dv"), grads, (q, k, v)):
        assert g.shape == x.shape and g.dtype == x.dtype, f"{name} is {tuple(g.shape)} {g.dtype}"
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, is_causal), dtype_name)


@pytest.mark.parametrize("dtype_name", DTYPES)
@CAUSAL
@GROUPS
def test_cpu_grouped_query_attention_matches_sdpa_and_float64(group, is_causal, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((1, H, 33, 16), (1, H // group, 20, 16), dtype)
    check_gqa(q, k, v, dout, is_causal, dtype_name)


@pytest.mark.cuda
@pytest.mark.parametrize("kernel,dtype_name", [("step05", "float32"), ("step05", "bfloat16"), ("step05", "float16"), ("fast", "bfloat16"), ("fast", "float16")])
@pytest.mark.parametrize("D", [64, 128])
@CAUSAL
@GROUPS
def test_cuda_grouped_query_attention_matches_sdpa_and_float64(group, is_causal, D, kernel, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((2, H, 300, D), (2, H // group, 257, D), dtype, device="cuda")
    check_gqa(q, k, v, dout, is_causal, dtype_name, kernel=kernel)


@pytest.mark.cuda
@pytest.mark.parametrize("kernel", ["step05", "fast"])
@CAUSAL
def test_deterministic_grouped_query_gradients_are_the_same_bits_on_every_run(kernel, is_causal):
    q, k, v, dout = attention_inputs((2, H, 500, 64), (2, 2, 500, 64), torch.bfloat16, device="cuda")
    runs = []
    for _ in range(4):
        out = flash_attention(q, k, v, is_causal=is_causal, kernel=kernel, deterministic=True)
        runs.append(torch.autograd.grad(out, (q, k, v), dout))
    for run in runs[1:]:
        for name, a, b in zip(("dq", "dk", "dv"), runs[0], run):
            assert torch.equal(a, b), f"{name} differs between runs"
    assert_gradients_close(runs[0], reference_gradients(q, k, v, dout, is_causal), "bfloat16")


def test_kv_heads_that_do_not_divide_the_query_heads_are_refused():
    q = torch.randn(1, 6, 17, 16)
    k = torch.randn(1, 4, 17, 16)
    with pytest.raises(RuntimeError, match=r"dim 1 \(H\) of k must divide q's"):
        flash_attention(q, k, k)
