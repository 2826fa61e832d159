"""Gradients through flash_attention (step05's backward kernel, and step07's fast one in bf16 and fp16)
against attention written out in float64: the article's shapes, float32, bfloat16 and float16, causal and
not (causal also with N_q != N_k, both ways: the mask is top-left, like torch's is_causal). The first test checks that float64
reference against PyTorch's own math backend. The GPU tests need a CUDA GPU.

    python3 -m pytest python/tests/test_backward.py -q -rs
"""

import pytest
from fa2_test_support import (
    DTYPES,
    SHAPE_IDS,
    SHAPES,
    assert_gradients_close,
    attention_inputs,
    flash_attention,
    reference_attention,
    reference_gradients,
    torch,
)

CAUSAL = pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])


@CAUSAL
@pytest.mark.parametrize("B,Nq,Nk,D", SHAPES, ids=SHAPE_IDS)
def test_the_float64_reference_is_pytorchs_math_attention(B, Nq, Nk, D, is_causal):
    """The reference masks top-left as SDPA's is_causal does, also when N_q != N_k (runs on the CPU)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v, dout = attention_inputs((B, Nq, D), (B, Nk, D), torch.float64)
    with sdpa_kernel(SDPBackend.MATH):
        out_math = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    grads_math = torch.autograd.grad(out_math, (q, k, v), dout)

    out_ref, _ = reference_attention(q, k, v, is_causal)
    torch.testing.assert_close(out_ref, out_math, atol=1e-10, rtol=1e-10)
    for name, got, want in zip(("dq", "dk", "dv"), reference_gradients(q, k, v, dout, is_causal), grads_math):
        torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", DTYPES)
@CAUSAL
@pytest.mark.parametrize("B,Nq,Nk,D", SHAPES, ids=SHAPE_IDS)
def test_gradients_match_float64_attention(B, Nq, Nk, D, is_causal, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((B, Nq, D), (B, Nk, D), dtype, device="cuda")

    out = flash_attention(q, k, v, is_causal=is_causal)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)

    for name, g, x in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v)):
        assert g.dtype == dtype and g.shape == x.shape, f"{name} is {tuple(g.shape)} {g.dtype}"
    assert_gradients_close((dq, dk, dv), reference_gradients(q, k, v, dout, is_causal), dtype_name)
    if is_causal and Nk > Nq:
        # Keys after the last query are seen by no query (top-left mask): their gradients are exactly 0.
        assert dk[:, Nq:].abs().max().item() == 0 and dv[:, Nq:].abs().max().item() == 0


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_gradients_of_multi_head_inputs_with_an_explicit_scale(dtype_name):
    """(B, H, N, D) inputs, N_q > N_k, causal, scale 0.3: the scale reaches both passes."""
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = attention_inputs((2, 3, 77, 64), (2, 3, 45, 64), dtype, device="cuda")

    out = flash_attention(q, k, v, is_causal=True, scale=0.3)
    grads = torch.autograd.grad(out, (q, k, v), dout)

    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), True, scale=0.3)
    torch.testing.assert_close(out.double(), out_ref, atol=2e-2, rtol=2e-2)
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, True, scale=0.3), dtype_name)


@pytest.mark.cuda
@CAUSAL
@pytest.mark.parametrize("B,Nq,Nk,D", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
def test_fast_kernel_gradients_match_float64_attention(B, Nq, Nk, D, is_causal, dtype_name):
    """kernel="fast": step07's forward and backward, bf16 and fp16, (B, H, N, D) inputs with H = 2."""
    q, k, v, dout = attention_inputs((B, 2, Nq, D), (B, 2, Nk, D), getattr(torch, dtype_name), device="cuda")

    out = flash_attention(q, k, v, is_causal=is_causal, kernel="fast")
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)

    assert_gradients_close((dq, dk, dv), reference_gradients(q, k, v, dout, is_causal), dtype_name)
    if is_causal and Nk > Nq:
        assert dk[..., Nq:, :].abs().max().item() == 0 and dv[..., Nq:, :].abs().max().item() == 0


@pytest.mark.cuda
@pytest.mark.parametrize("kernel,D", [("step05", 64), ("fast", 64), ("fast", 128)])
@CAUSAL
def test_deterministic_gradients_are_the_same_bits_on_every_run(kernel, D, is_causal):
    """deterministic=True: dq, dk and dv are bitwise equal over repeated backwards, also while
    matrix products on another stream hold part of the GPU, and still match float64."""
    q, k, v, dout = attention_inputs((2, 4, 700, D), (2, 4, 900, D), torch.bfloat16, device="cuda")
    out = flash_attention(q, k, v, is_causal=is_causal, kernel=kernel, deterministic=True)
    first = torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    busy = torch.randn(2048, 2048, device="cuda")
    for run in range(2, 7):
        with torch.cuda.stream(side):
            for _ in range(run):
                busy = (busy @ busy).tanh_()
        again = torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        for name, a, b in zip(("dq", "dk", "dv"), first, again):
            assert torch.equal(a.view(torch.int16), b.view(torch.int16)), f"{name} differs in run {run}"
    torch.cuda.current_stream().wait_stream(side)
    assert_gradients_close(first, reference_gradients(q, k, v, dout, is_causal), "bfloat16")


@CAUSAL
def test_deterministic_on_the_cpu_gives_the_default_bits(is_causal):
    """The CPU path runs the programs one after another either way: the flag changes nothing there."""
    q, k, v, dout = attention_inputs((2, 50, 32), (2, 37, 32), torch.float32)
    grads = [
        torch.autograd.grad(flash_attention(q, k, v, is_causal=is_causal, deterministic=flag), (q, k, v), dout)
        for flag in (False, True)
    ]
    for name, a, b in zip(("dq", "dk", "dv"), *grads):
        assert torch.equal(a, b), name
