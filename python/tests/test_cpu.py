"""The CPU operators (the kernel bodies run on the host) on small shapes, against PyTorch's SDPA and
attention written out in float64: output, the saved lse, and the gradients, float32, bfloat16 and float16,
causal and not. Needs torch and the library, no GPU.

    python3 -m pytest python/tests/test_cpu.py -q -rs
"""

import pytest
from fa2_test_support import (
    DTYPES,
    assert_finite,
    assert_forward_close,
    assert_gradients_close,
    attention_inputs,
    flash_attention,
    reference_attention,
    reference_gradients,
    torch,
)

# (B, H, N_q, N_k, D): ragged tiles (16 x 16), one head or two, N_q != N_k both ways.
CPU_SHAPES = [(1, 2, 33, 33, 16), (2, 1, 17, 17, 32), (1, 2, 20, 29, 16), (2, 1, 40, 17, 32)]
CPU_SHAPE_IDS = [f"B{b}-H{h}-Nq{nq}-Nk{nk}-D{d}" for b, h, nq, nk, d in CPU_SHAPES]


def random_inputs(B, H, Nq, Nk, D, dtype):
    """q, k, v and dout of (B, H, N, D) on the CPU (attention_inputs)."""
    return attention_inputs((B, H, Nq, D), (B, H, Nk, D), dtype)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B,H,Nq,Nk,D", CPU_SHAPES, ids=CPU_SHAPE_IDS)
def test_cpu_forward_matches_sdpa_and_float64(B, H, Nq, Nk, D, is_causal, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, _ = random_inputs(B, H, Nq, Nk, D, dtype)

    out = flash_attention(q, k, v, is_causal=is_causal)
    assert out.device.type == "cpu" and out.dtype == dtype and out.shape == q.shape
    lse = [t for t in out.grad_fn.saved_tensors if t.shape == (B, H, Nq)]
    assert len(lse) == 1 and lse[0].dtype == torch.float32, "the node must save one float32 lse of shape (B, H, N_q)"

    out_ref, lse_ref = reference_attention(q.detach(), k.detach(), v.detach(), is_causal)
    assert_forward_close("out vs float64", out.detach(), out_ref, dtype_name)
    assert_forward_close("lse vs float64", lse[0], lse_ref, dtype_name)
    with torch.no_grad():
        out_sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert_forward_close("out vs SDPA", out.detach(), out_sdpa, dtype_name)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B,H,Nq,Nk,D", CPU_SHAPES, ids=CPU_SHAPE_IDS)
def test_cpu_gradients_match_float64(B, H, Nq, Nk, D, is_causal, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, dout = random_inputs(B, H, Nq, Nk, D, dtype)

    out = flash_attention(q, k, v, is_causal=is_causal)
    assert_finite("out", out.detach())
    grads = torch.autograd.grad(out, (q, k, v), dout)

    assert all(g.device.type == "cpu" and g.dtype == dtype for g in grads)
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, is_causal), dtype_name)
