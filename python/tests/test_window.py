"""A sliding window (local attention): window=(left, right), query i sees key j only when
i - left <= j <= i + right (-1: no bound on that side), on top of is_causal when both are given.
Checked against SDPA given the same mask as a boolean attn_mask and against attention written
out in float64, for windows from 0 to past N, with N_q != N_k both ways; a query that sees no key
(N_q > N_k + left) gets out = 0, lse = +inf and zero gradients. The CPU tests need torch and the
library; the CUDA ones a GPU.

    python3 -m pytest python/tests/test_window.py -q -rs
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
    window_keep,
)

CAUSAL = pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
# Each side alone, both, zero (each query sees its own key), one key back, and past every key.
WINDOWS = [(16, -1), (-1, 7), (3, 20), (0, 0), (1, 0), (40, 40), (5000, 5000)]
WINDOW_IDS = [f"w{left}_{right}" for left, right in WINDOWS]
SHAPES = [(2, 70, 45), (1, 45, 70)]  # (H, N_q, N_k), B = 1: N_q > N_k, then N_q < N_k


def check_window(q, k, v, dout, is_causal, window, dtype_name, **kwargs):
    out = flash_attention(q, k, v, is_causal=is_causal, window=window, **kwargs)
    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), is_causal, window=window)
    assert_forward_close("out vs float64", out.detach(), out_ref, dtype_name)
    keep = window_keep(q.shape[-2], k.shape[-2], is_causal, window, q.device)
    sees = keep.any(dim=-1)
    if not sees.all():
        assert out.detach()[..., ~sees, :].abs().max().item() == 0, "a query that sees no key must give 0"
    with torch.no_grad():
        out_sdpa = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=keep, enable_gqa=q.shape[-3] != k.shape[-3]
        )
    # SDPA's rows that see no key follow its own convention: compared where a key is seen.
    assert_forward_close("out vs SDPA with the mask", out.detach()[..., sees, :], out_sdpa[..., sees, :], dtype_name)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, is_causal, window=window), dtype_name)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("window", WINDOWS, ids=WINDOW_IDS)
@CAUSAL
@pytest.mark.parametrize("H,Nq,Nk", SHAPES, ids=[f"H{h}-Nq{nq}-Nk{nk}" for h, nq, nk in SHAPES])
def test_cpu_window_matches_sdpa_and_float64(H, Nq, Nk, is_causal, window, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((1, H, Nq, 16), (1, H, Nk, 16), dtype)
    check_window(q, k, v, dout, is_causal, window, dtype_name)


@pytest.mark.cuda
@pytest.mark.parametrize("kernel,dtype_name", [("step05", "float32"), ("step05", "bfloat16"), ("step05", "float16"), ("fast", "bfloat16"), ("fast", "float16")])
@pytest.mark.parametrize("window", WINDOWS, ids=WINDOW_IDS)
@CAUSAL
@pytest.mark.parametrize("D", [64, 128])
def test_cuda_window_matches_sdpa_and_float64(D, is_causal, window, kernel, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((2, 4, 300, D), (2, 2, 257, D), dtype, device="cuda")  # grouped too
    check_window(q, k, v, dout, is_causal, window, dtype_name, kernel=kernel)


@pytest.mark.cuda
@pytest.mark.parametrize("kernel", ["step05", "fast"])
def test_deterministic_window_gradients_are_the_same_bits_on_every_run(kernel):
    q, k, v, dout = attention_inputs((2, 4, 700, 64), (2, 4, 650, 64), torch.bfloat16, device="cuda")
    runs = []
    for _ in range(4):
        out = flash_attention(q, k, v, kernel=kernel, deterministic=True, window=(100, 30))
        runs.append(torch.autograd.grad(out, (q, k, v), dout))
    for run in runs[1:]:
        for name, a, b in zip(("dq", "dk", "dv"), runs[0], run):
            assert torch.equal(a, b), f"{name} differs between runs"


def test_window_past_every_key_is_no_window():
    q, k, v, _ = attention_inputs((1, 2, 33, 16), (1, 2, 20, 16), torch.float32)
    with torch.no_grad():
        a = flash_attention(q, k, v, window=(33, 20))
        b = flash_attention(q, k, v)
    assert torch.equal(a, b)


@pytest.mark.parametrize("window,message", [((-2, 0), "window.left: got -2"), ((0, -3), "window.right: got -3")])
def test_a_window_bound_below_minus_one_is_refused(window, message):
    q = torch.randn(1, 2, 17, 16)
    with pytest.raises(RuntimeError, match=message):
        flash_attention(q, q, q, window=window)


def test_a_window_that_is_not_a_pair_is_refused():
    q = torch.randn(1, 2, 17, 16)
    with pytest.raises(TypeError, match="window must be a pair of ints"):
        flash_attention(q, q, q, window=3)


@pytest.mark.parametrize("window,message", [((1.5, 0), r"window\[0\] \(left\) must be an int, got 1.5"),
                                            ((0, "2"), r"window\[1\] \(right\) must be an int, got '2'"),
                                            ((True, 0), r"window\[0\] \(left\) must be an int, got True"),
                                            ((1, 2, 3), "window must be a pair of ints")])
def test_a_window_of_anything_but_two_ints_is_refused_not_rounded(window, message):
    q = torch.randn(1, 2, 17, 16)
    with pytest.raises(TypeError, match=message):
        flash_attention(q, q, q, window=window)
