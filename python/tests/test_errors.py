"""Every input the operators refuse raises RuntimeError with a message naming the problem: dtypes,
devices, ranks, shapes, lengths of 0, head dims, the scale, kernel names, the fast kernel's limits
and the CPU. Most run on the CPU; the device and fast-kernel cases need a GPU.

    python3 -m pytest python/tests/test_errors.py -q -rs
"""

import re

import pytest
from fa2_test_support import flash_attention, torch


def qkv(q_shape=(1, 2, 17, 16), k_shape=None, dtype="float32", device="cpu"):
    k_shape = q_shape if k_shape is None else k_shape
    make = lambda shape: torch.randn(shape, device=device, dtype=getattr(torch, dtype))  # noqa: E731
    return make(q_shape), make(k_shape), make(k_shape)


def raises(message):
    """pytest.raises for a RuntimeError whose text contains `message` word for word."""
    return pytest.raises(RuntimeError, match=re.escape(message))


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
def test_a_dtype_other_than_float32_bfloat16_or_float16_is_refused(dtype):
    q, k, v = qkv(dtype=dtype)
    with raises(f"fa2::forward: q has dtype {dtype}; the kernels take float32, bfloat16 or float16"):
        flash_attention(q, k, v)


def test_integer_tensors_are_refused():
    q = torch.ones(1, 2, 17, 16, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"q has dtype \w+; the kernels take float32, bfloat16 or float16"):
        torch.ops.fa2.forward(q, q, q, False, None, "step05")


def test_mismatched_dtypes_are_refused():
    q, k, v = qkv()
    with raises("fa2::forward: k has dtype bfloat16 but q has float32; q, k and v must have one dtype"):
        flash_attention(q, k.bfloat16(), v)
    with raises("fa2::forward: v has dtype bfloat16 but q has float32"):
        flash_attention(q, k, v.bfloat16())


@pytest.mark.parametrize(
    "shape,rank", [((17, 16), 2), ((1, 1, 2, 17, 16), 5)], ids=["2-D", "5-D"]
)
def test_a_rank_other_than_3_or_4_is_refused(shape, rank):
    q = torch.randn(shape)
    with raises(f"fa2::forward: q must be 4-D (B, H, N, D) or 3-D (B, N, D), got {rank}-D"):
        flash_attention(q, q, q)


def test_k_of_another_rank_than_q_is_refused():
    q, _, v = qkv()
    with raises("fa2::forward: k is 3-D but q is 4-D; q, k and v must have one rank"):
        flash_attention(q, torch.randn(2, 17, 16), v)


@pytest.mark.parametrize(
    "k_shape,message",
    [
        ((2, 2, 17, 16), "dim 0 (B) must match"),
        ((1, 3, 17, 16), "dim 1 (H) of k must divide q's (equal, or grouped-query attention)"),
        ((1, 2, 17, 32), "the head dim D must match"),
    ],
    ids=["B", "H", "D"],
)
def test_k_that_does_not_fit_q_is_refused(k_shape, message):
    q, _, _ = qkv()
    k = torch.randn(k_shape)
    with raises(f"fa2::forward: k.shape [{', '.join(map(str, k_shape))}] does not fit q.shape [1, 2, 17, 16]: {message}"):
        flash_attention(q, k, k)


def test_v_of_another_shape_than_k_is_refused():
    q, k, _ = qkv()
    with raises("fa2::forward: v.shape [1, 2, 18, 16] must equal k.shape [1, 2, 17, 16]"):
        flash_attention(q, k, torch.randn(1, 2, 18, 16))


@pytest.mark.parametrize(
    "q_shape,k_shape,message",
    [
        ((1, 2, 0, 16), (1, 2, 17, 16), "q.shape [1, 2, 0, 16] has length 0 in dim 2 (N)"),
        ((1, 2, 17, 16), (1, 2, 0, 16), "k.shape [1, 2, 0, 16] has length 0 in dim 2 (N)"),
        ((0, 17, 16), (0, 17, 16), "q.shape [0, 17, 16] has length 0 in dim 0 (B)"),
    ],
    ids=["N_q", "N_k", "B"],
)
def test_a_length_of_0_is_refused(q_shape, k_shape, message):
    q, k, v = qkv(q_shape, k_shape)
    with raises(f"fa2::forward: {message}; every length must be at least 1"):
        flash_attention(q, k, v)


def test_an_unsupported_head_dim_is_refused_by_the_kernels_own_check():
    q, k, v = qkv((1, 2, 17, 48))
    with raises("fa2::forward: head_dim: got 48, allowed 16, 32, 64 or 128"):
        flash_attention(q, k, v)


def test_a_non_finite_scale_is_refused():
    q, k, v = qkv()
    with raises("fa2::forward: scale must be a finite number, got inf"):
        flash_attention(q, k, v, scale=float("inf"))


def test_an_unknown_kernel_name_is_refused():
    q, k, v = qkv()
    with raises('fa2::forward: unknown kernel "triton"; choose "step05"'):
        flash_attention(q, k, v, kernel="triton")
    with raises('fa2::backward: unknown kernel "triton"'):
        torch.ops.fa2.backward(q, q, k, v, q, torch.zeros(1, 2, 17), False, None, "triton")


def test_the_fast_kernel_on_the_cpu_is_refused():
    q, k, v = qkv(dtype="bfloat16")
    with raises('fa2::forward: kernel="fast" runs on CUDA only; on the CPU use kernel="step05"'):
        flash_attention(q, k, v, kernel="fast")


def test_the_fast_backward_on_the_cpu_is_refused():
    q, k, v = qkv(dtype="bfloat16")
    out, lse = torch.ops.fa2.forward(q, k, v, False, None, "step05")
    with raises('fa2::backward: kernel="fast" runs on CUDA only; on the CPU use kernel="step05"'):
        torch.ops.fa2.backward(torch.ones_like(out), q, k, v, out, lse, False, None, "fast")


def test_backward_refuses_an_lse_or_dout_that_does_not_fit():
    q, k, v = qkv()
    out, lse = torch.ops.fa2.forward(q, k, v, False, None, "step05")
    dout = torch.ones_like(out)
    with raises("fa2::backward: lse has dtype bfloat16; it must be float32, the forward's lse"):
        torch.ops.fa2.backward(dout, q, k, v, out, lse.bfloat16(), False, None, "step05")
    with raises("fa2::backward: lse.shape [1, 2, 16] must be q.shape without its head dim, [1, 2, 17]"):
        torch.ops.fa2.backward(dout, q, k, v, out, lse[..., :16], False, None, "step05")
    with raises("fa2::backward: dout.shape [1, 2, 16, 16] must equal q.shape [1, 2, 17, 16]"):
        torch.ops.fa2.backward(dout[:, :, :16], q, k, v, out, lse, False, None, "step05")
    with raises("fa2::backward: out has dtype bfloat16 but q has float32"):
        torch.ops.fa2.backward(dout, q, k, v, out.bfloat16(), lse, False, None, "step05")


@pytest.mark.cuda
def test_tensors_on_two_devices_are_refused():
    q, k, v = qkv(device="cuda")
    with pytest.raises(RuntimeError, match=r"fa2::forward: k is on cpu but q is on cuda(:\d+)?; q, k and v must be on one device"):
        flash_attention(q, k.cpu(), v)


@pytest.mark.cuda
def test_the_fast_kernel_refuses_float32_saying_why():
    q, k, v = qkv((1, 2, 17, 64), device="cuda")
    with raises('fa2::forward: kernel="fast" cannot run these inputs: dtype: the fast kernel takes bfloat16 or float16 (float32 runs on step05)'):
        flash_attention(q, k, v, kernel="fast")


@pytest.mark.cuda
def test_the_fast_kernel_refuses_head_dim_16_saying_why():
    q, k, v = qkv(dtype="bfloat16", device="cuda")  # D = 16: step05 takes it, the fast kernel does not
    with raises('fa2::forward: kernel="fast" cannot run these inputs: head_dim: the fast kernel takes 32, 64 or 128'):
        flash_attention(q, k, v, kernel="fast")


@pytest.mark.cuda
def test_the_fast_backward_refuses_float32_saying_why():
    q, k, v = qkv((1, 2, 17, 64), device="cuda")
    out, lse = torch.ops.fa2.forward(q, k, v, False, None, "step05")
    with raises('fa2::backward: kernel="fast" cannot run these inputs: dtype: the fast kernel takes bfloat16 or float16 (float32 runs on step05)'):
        torch.ops.fa2.backward(torch.ones_like(out), q, k, v, out, lse, False, None, "fast")
