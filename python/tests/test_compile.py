"""torch.compile(fullgraph=True) of a small attention block that calls flash_attention: it compiles
without a graph break (the fake implementations give the shapes, the autograd.Function is traced)
and computes what eager mode computes, forward and backward. On the GPU with the default backend
(Inductor); on the CPU with aot_eager, which traces the same graphs without generating code.

    python3 -m pytest python/tests/test_compile.py -q -rs
"""

import pytest
from fa2_test_support import DTYPES, assert_finite, flash_attention, torch

# Compiled and eager run the same kernels on the same inputs; what may differ is how Inductor
# computes the linear layers around them (fusions, another GEMM), and dQ's float32 atomics on the
# GPU (last bits, about 2e-7 of the gradients). float32: 1e-4. bfloat16: Inductor may round a
# fused bias and residual once where eager rounds twice, and a one-ulp change of q, k or v moves
# the rest; the bf16 forward tolerance of the article, 2e-2, covers a few such roundings, and the
# fp16 one, 1e-2, the same few at fp16's finer steps.
COMPILE_TOL = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 1e-2}


def attention_block(dim, heads, is_causal, kernel="step05"):
    """x (B, N, dim) -> x + proj(attention(q, k, v)), q, k, v (B, H, N, dim / H) from one linear layer.
    q, k and v are transposed views whose B and H do not merge: the operator copies them."""

    class AttentionBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)

        def forward(self, x):
            B, N, _ = x.shape
            qkv = self.qkv(x).view(B, N, 3, heads, dim // heads)
            q = qkv[:, :, 0].transpose(1, 2)  # (B, H, N, D)
            k = qkv[:, :, 1].transpose(1, 2)
            v = qkv[:, :, 2].transpose(1, 2)
            o = flash_attention(q, k, v, is_causal=is_causal, kernel=kernel)
            return x + self.proj(o.transpose(1, 2).reshape(B, N, dim))

    return AttentionBlock()


def check_compiled_matches_eager(device, dtype_name, backend, B, N, dim, heads):
    dtype = getattr(torch, dtype_name)
    torch._dynamo.reset()
    torch.manual_seed(0)
    block = attention_block(dim, heads, is_causal=True).to(device=device, dtype=dtype)
    x = torch.randn(B, N, dim, device=device, dtype=dtype, requires_grad=True)
    dy = torch.randn(B, N, dim, device=device, dtype=dtype)
    inputs = (x, *block.parameters())

    y_eager = block(x)
    grads_eager = torch.autograd.grad(y_eager, inputs, dy)
    compiled = torch.compile(block, backend=backend, fullgraph=True)
    y = compiled(x)
    grads = torch.autograd.grad(y, inputs, dy)

    tol = COMPILE_TOL[dtype_name]
    assert_finite("compiled output", y.detach())
    torch.testing.assert_close(y, y_eager, atol=tol, rtol=tol)
    names = ["x"] + [name for name, _ in block.named_parameters()]
    for name, g, g_eager in zip(names, grads, grads_eager):
        assert_finite(f"grad of {name}", g)
        scale = g_eager.abs().max().item()
        assert scale > 0, f"the eager gradient of {name} is zero: the comparison would prove nothing"
        torch.testing.assert_close(
            g, g_eager, atol=tol * scale, rtol=tol, msg=lambda m, name=name: f"gradient of {name}: {m}"
        )


@pytest.mark.cuda
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_compiled_block_matches_eager_on_the_gpu(dtype_name):
    check_compiled_matches_eager("cuda", dtype_name, "inductor", B=2, N=100, dim=128, heads=2)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_compiled_block_matches_eager_on_the_cpu(dtype_name):
    check_compiled_matches_eager("cpu", dtype_name, "aot_eager", B=1, N=33, dim=64, heads=2)
