"""float32 as PyTorch means it: flash_attention follows torch.backends.cuda.matmul.allow_tf32, as
torch.matmul does. Off (PyTorch's default) the float32 products run in 3xTF32 and the results
are accurate to float32; on, in TF32 (11 significant bits per operand), as Triton's tl.dot does
by default. On the CPU (the same kernel bodies, which emulate the tensor cores' rounding) and on
CUDA, step05's kernel (the fast kernels take no float32).

    python3 -m pytest python/tests/test_float32.py -q -rs
"""

import pytest
from fa2_test_support import attention_inputs, flash_attention, reference_attention, reference_gradients, torch

# The C++ tests' float32 bounds (step05_fa2_kernel/tests): out and lse within 2e-5, the gradients
# within 5e-5 of the largest reference gradient. 3xTF32 measured ~1e-6 and ~1e-6 of the scale;
# TF32 ~1e-3 for both, so each bound fails in TF32.
OUT_TOL = 2e-5
GRADIENT_TOL = 5e-5

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture
def allow_tf32():
    """Sets torch.backends.cuda.matmul.allow_tf32 for one test and restores it after."""
    saved = torch.backends.cuda.matmul.allow_tf32

    def set_flag(value):
        torch.backends.cuda.matmul.allow_tf32 = value

    yield set_flag
    torch.backends.cuda.matmul.allow_tf32 = saved


def largest_error(got, expected):
    return (got.double() - expected).abs().max().item()


def run(q, k, v, dout, is_causal):
    out = flash_attention(q, k, v, is_causal=is_causal)
    return (out,) + torch.autograd.grad(out, (q, k, v), dout)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_without_tf32_float32_results_are_accurate_to_float32(device, is_causal, allow_tf32):
    allow_tf32(False)
    q, k, v, dout = attention_inputs((2, 2, 70, 64), (2, 2, 90, 64), torch.float32, device=device)
    out, dq, dk, dv = run(q, k, v, dout, is_causal)
    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), is_causal)
    grads_ref = reference_gradients(q, k, v, dout, is_causal)
    scale = max(g.abs().max().item() for g in grads_ref)
    assert largest_error(out, out_ref) <= OUT_TOL * (1 + out_ref.abs().max().item())
    for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), grads_ref):
        assert largest_error(got, ref) <= GRADIENT_TOL * scale, name

    allow_tf32(True)  # the same inputs in TF32: outside the float32 bound
    out_tf32 = flash_attention(q, k, v, is_causal=is_causal)
    assert largest_error(out_tf32, out_ref) > OUT_TOL * (1 + out_ref.abs().max().item())


@pytest.mark.parametrize("device", DEVICES)
def test_one_key_gives_zero_dq_without_tf32(device, allow_tf32):
    """With one key, P = 1 and the exact dq is 0; what a kernel returns is its rounding of
    dO V^T against rowsum(dO * out). TF32 leaves ~1e-4 of the scale there (about 2e-3 here)."""
    q, k, v, dout = attention_inputs((1, 2, 40, 64), (1, 2, 1, 64), torch.float32, device=device)
    largest = {}
    for flag in (False, True):
        allow_tf32(flag)
        _, dq, _, dv = run(q, k, v, dout, False)
        largest[flag] = dq.abs().max().item() / dv.abs().max().item()
    assert largest[False] <= 1e-5
    assert largest[True] > 10 * largest[False]


@pytest.mark.parametrize("device", DEVICES)
def test_the_backward_uses_the_forwards_setting(device, allow_tf32):
    """The flag is read at the forward and saved: switching it before backward() changes nothing."""
    q, k, v, dout = attention_inputs((1, 2, 40, 64), (1, 2, 1, 64), torch.float32, device=device)
    allow_tf32(False)
    out = flash_attention(q, k, v)
    allow_tf32(True)
    dq, _, dv = torch.autograd.grad(out, (q, k, v), dout)
    assert dq.abs().max().item() <= 1e-5 * dv.abs().max().item()
