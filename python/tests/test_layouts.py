"""What the operators read in place and what they copy (flash_attention's docstring, python/README.md):
every layout below gives the numbers of attention written out in float64, output and gradients,
on the CPU and (marked cuda) on the GPU.

  read in place: a contiguous (B, H, N, D) tensor; 3-D tensors with padded rows; a batch stride of 0
  copied:        (B, N, H, D).transpose(1, 2) and one head range of a wider tensor (B and H do not
                 merge); a head dim with stride 2; the dout of out.sum() (stride 0 everywhere)

    python3 -m pytest python/tests/test_layouts.py -q -rs
"""

import pytest
from fa2_test_support import assert_forward_close, assert_gradients_close, flash_attention, reference_attention
from fa2_test_support import reference_gradients, torch

B, H, NQ, NK, D = 2, 2, 24, 19, 16
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


def leaf(*shape, device):
    return torch.randn(*shape, device=device, dtype=torch.float32, requires_grad=True)


# Each layout: (q, k, v) as views of fresh random tensors.
LAYOUTS = {
    "bhnd-contiguous": lambda dev: tuple(leaf(B, H, n, D, device=dev) for n in (NQ, NK, NK)),
    "bnhd-transposed": lambda dev: tuple(leaf(B, n, H, D, device=dev).transpose(1, 2) for n in (NQ, NK, NK)),
    "heads-1-to-H-of-H+1": lambda dev: tuple(leaf(B, H + 1, n, D, device=dev)[:, 1:] for n in (NQ, NK, NK)),
    "head-dim-stride-2": lambda dev: tuple(leaf(B, H, n, 2 * D, device=dev)[..., ::2] for n in (NQ, NK, NK)),
    "3d-padded-rows": lambda dev: tuple(leaf(B * H, n + 3, D, device=dev)[:, 1 : n + 1] for n in (NQ, NK, NK)),
    "3d-kv-batch-stride-0": lambda dev: (
        leaf(B * H, NQ, D, device=dev),
        leaf(1, NK, D, device=dev).expand(B * H, NK, D),
        leaf(1, NK, D, device=dev).expand(B * H, NK, D),
    ),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("device", DEVICES)
def test_every_layout_gives_the_float64_numbers(device, layout):
    torch.manual_seed(0)
    q, k, v = LAYOUTS[layout](device)
    dout = torch.randn(q.shape, device=device, dtype=torch.float32)

    out = flash_attention(q, k, v, is_causal=True)
    assert out.shape == q.shape and out.is_contiguous()
    grads = torch.autograd.grad(out, (q, k, v), dout)

    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), True)
    assert_forward_close("out", out.detach(), out_ref, "float32")
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, True), "float32")


@pytest.mark.parametrize("device", DEVICES)
def test_the_expanded_dout_of_a_sum_is_copied_and_gives_the_float64_gradients(device):
    torch.manual_seed(0)
    q, k, v = (leaf(B, H, n, D, device=device) for n in (NQ, NK, NK))
    flash_attention(q, k, v, is_causal=False).sum().backward()  # dout: ones, expanded, stride 0

    ones = torch.ones(B, H, NQ, D, device=device)
    assert_gradients_close((q.grad, k.grad, v.grad), reference_gradients(q, k, v, ones, False), "float32")



# kernel="fast" loads rows in 16-byte chunks: a tensor whose rows do not all start on a 16-byte
# boundary is copied first (python/README.md). Each layout misaligns every tensor one way.
def misaligned(layout, b, h, n, d):
    new = dict(device="cuda", dtype=torch.bfloat16)
    if layout == "data-pointer-off-by-one-element":
        t = torch.randn(b, h, n, d + 1, **new)[..., 1:]
    elif layout == "row-stride-not-a-multiple-of-16-bytes":
        t = torch.randn(b, h, n, d + 3, **new)[..., :d]
    else:  # 3-D, (B * H, N, D) with a batch stride of N * D + 1 elements
        t = torch.randn(b * h * (n * d + 1), **new).as_strided((b * h, n, d), (n * d + 1, d, 1))
    assert t.data_ptr() % 16 != 0 or t.stride(-2) % 8 != 0 or t.stride(0) % 8 != 0
    return t.requires_grad_(True)


@pytest.mark.cuda
@pytest.mark.parametrize(
    "layout",
    ["data-pointer-off-by-one-element", "row-stride-not-a-multiple-of-16-bytes", "3d-batch-stride-odd"],
)
def test_the_fast_kernel_copies_rows_that_are_not_16_byte_aligned(layout):
    torch.manual_seed(0)
    q, k, v = (misaligned(layout, 2, 2, n, 64) for n in (77, 45, 45))
    dout = torch.randn(q.shape, device="cuda", dtype=torch.bfloat16)

    out = flash_attention(q, k, v, is_causal=True, kernel="fast")
    grads = torch.autograd.grad(out, (q, k, v), dout)

    out_ref, _ = reference_attention(q.detach(), k.detach(), v.detach(), True)
    assert_forward_close("out", out.detach(), out_ref, "bfloat16")
    assert_gradients_close(grads, reference_gradients(q, k, v, dout, True), "bfloat16")
