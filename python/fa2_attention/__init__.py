"""FlashAttention-2 from this repository's CUDA kernels, as a PyTorch function with autograd.

    from fa2_attention import flash_attention
    out = flash_attention(q, k, v, is_causal=True)      # q, k, v: (B, H, N, D) or (B, N, D)

The operators torch.ops.fa2.forward / torch.ops.fa2.backward live in the shared library
libfa2_torch_ops.so, which the repository's CMake builds (python/README.md). Either install the
package with the library inside it, against the PyTorch already installed:

    python3 -m pip install --no-build-isolation ./python

or, working on the repository, build the library with a preset and point PYTHONPATH here:

    cmake --preset sm90 && cmake --build --preset sm90 --target fa2_torch_ops
    export PYTHONPATH=$PWD/python

Importing this package loads the first library found: the path in the environment variable
FA2_TORCH_OPS, else the one installed inside the package, else
build/<preset>/python/libfa2_torch_ops.so for the presets sm90, default, debug and cpu-only, in
that order. When none is found the import raises ImportError saying what to build.
"""

import numbers
import os
from pathlib import Path

import torch

__all__ = ["flash_attention", "varlen_attn", "AuxRequest", "library_path", "has_cuda_kernels"]

_LIBRARY_NAME = "libfa2_torch_ops.so"
_PRESETS = ("sm90", "default", "debug", "cpu-only")
_PACKAGE = Path(__file__).resolve().parent
_REPOSITORY = _PACKAGE.parents[1]


def _find_library():
    from_env = os.environ.get("FA2_TORCH_OPS")
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise ImportError(
                f"fa2_attention: FA2_TORCH_OPS={from_env} is not a file; point it at a built "
                f"{_LIBRARY_NAME} or unset it to use the build folders of the presets"
            )
        return path
    installed = _PACKAGE / _LIBRARY_NAME  # pip install puts it beside this file
    if installed.is_file():
        return installed
    looked = [str(installed)]
    for preset in _PRESETS:
        path = _REPOSITORY / "build" / preset / "python" / _LIBRARY_NAME
        if path.is_file():
            return path
        looked.append(str(path))
    raise ImportError(
        f"fa2_attention: the operator library {_LIBRARY_NAME} is not built (FA2_TORCH_OPS is not set, "
        f"and none of these exists: {', '.join(looked)}). Install the package from the repository "
        f"root with\n"
        f"    python3 -m pip install --no-build-isolation ./python\n"
        f"or build the library with the preset of your choice (sm90, default, debug or cpu-only):\n"
        f"    cmake --preset sm90\n"
        f"    cmake --build --preset sm90 --target fa2_torch_ops\n"
        f"The configure step prints one line starting with 'fa2_torch_ops' that says whether the "
        f"operators are built and, if not, why (see python/README.md)."
    )


library_path = _find_library()
"""The libfa2_torch_ops.so this package loaded."""

try:
    torch.ops.load_library(str(library_path))
except OSError as error:
    raise ImportError(
        f"fa2_attention: {library_path} exists but cannot be loaded ({error}). It was probably "
        f"built against another PyTorch than this one ({torch.__version__}): configure again "
        f"with this Python's torch.utils.cmake_prefix_path and rebuild the target fa2_torch_ops."
    ) from error


def has_cuda_kernels():
    """True when the loaded library has the CUDA implementations (a build with nvcc)."""
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key("fa2::forward", "CUDA")
    except (AttributeError, RuntimeError):  # a private API: if it moves, assume a CUDA build
        return True


# ---- fake (meta) implementations: shapes and dtypes without running anything, for torch.compile ----
# They mirror what the C++ operators return: fresh contiguous tensors.


@torch.library.register_fake("fa2::forward")
def _forward_fake(q, k, v, is_causal, scale, kernel, window_left=-1, window_right=-1, allow_tf32=True):
    out = q.new_empty(q.shape)
    lse = q.new_empty(q.shape[:-1], dtype=torch.float32)
    return out, lse


@torch.library.register_fake("fa2::backward")
def _backward_fake(dout, q, k, v, out, lse, is_causal, scale, kernel, deterministic=False, window_left=-1,
                   window_right=-1, allow_tf32=True):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


# ---- autograd ---------------------------------------------------------------------------------------


class _FlashAttentionFunction(torch.autograd.Function):
    """out = softmax(q k^T * scale, masked) v, with the forward's lse saved for the backward.

    Saved for backward: (q, k, v, out, lse). For (B, N, D) inputs lse is the one saved tensor of
    shape (B, N_q), which is how a test can read it from out.grad_fn.saved_tensors.
    """

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale, kernel, deterministic, window, allow_tf32):
        out, lse = torch.ops.fa2.forward(q, k, v, is_causal, scale, kernel, window[0], window[1], allow_tf32)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.is_causal = is_causal
        ctx.scale = scale
        ctx.kernel = kernel
        ctx.deterministic = deterministic
        ctx.window = window
        ctx.allow_tf32 = allow_tf32
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = torch.ops.fa2.backward(
            dout, q, k, v, out, lse, ctx.is_causal, ctx.scale, ctx.kernel, ctx.deterministic, *ctx.window,
            ctx.allow_tf32,
        )
        return dq, dk, dv, None, None, None, None, None, None


def _window_bounds(window):
    """(left, right) from `window`, a pair of ints; anything else is refused here, naming the
    argument (a float such as 1.5 is not rounded). Their range (-1 or >= 0) is the kernels' check."""
    try:
        left, right = window
    except (TypeError, ValueError):
        raise TypeError(f"flash_attention: window must be a pair of ints (left, right), got {window!r}") from None
    for side, bound in (("left", left), ("right", right)):
        if isinstance(bound, bool) or not isinstance(bound, numbers.Integral):
            raise TypeError(f"flash_attention: window[{0 if side == 'left' else 1}] ({side}) must be an int, "
                            f"got {bound!r} in window={window!r}")
    return int(left), int(right)


def flash_attention(q, k, v, is_causal=False, scale=None, kernel="step05", deterministic=False, window=(-1, -1)):
    """Scaled dot-product attention with this repository's FlashAttention-2 kernels.

    Computes softmax(q @ k^T * scale + mask) @ v, like
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale),
    and is differentiable with respect to q, k and v.

    Shapes: q is (B, H, N_q, D) or (B, N_q, D); k and v are (B, H_kv, N_k, D) or (B, N_k, D), with
    q's B and D. H_kv divides H: equal for multi-head attention, fewer for grouped-query attention
    (1 for multi-query), where query head h reads kv head h // (H / H_kv), as
    scaled_dot_product_attention(..., enable_gqa=True) does; dk and dv then sum over the query heads
    of each group. N_q and N_k may differ; D is 16, 32, 64 or 128; B * H is at most 65535; every
    length is at least 1. Returns out, shaped and typed like q.

    Dtypes: float32, bfloat16 or float16, the same for q, k and v. Accumulation is float32 in every
    case. float32 products follow torch.backends.cuda.matmul.allow_tf32, as torch.matmul does:
    False (PyTorch's default) runs them in 3xTF32 (each operand split into two TF32 parts, three
    tensor-core products: about float32's accuracy, three times the product work); True in TF32,
    as Triton's tl.dot does by default (11 significant bits per operand). The flag is read at the
    forward, and the backward uses the same. float16 keeps 3 more mantissa bits than bfloat16 but
    overflows past 65504: inputs, out and the gradients must fit in that range, as in every
    float16 kernel.

    Devices: CUDA tensors run the CUDA kernels on PyTorch's current stream; CPU tensors run the
    same kernel bodies on the host, one program after another (for checking, not for speed).
    q, k and v must be on one device.

    is_causal: top-left aligned, like torch's is_causal: query i sees key j when j <= i, also when
        N_q != N_k (with N_q < N_k the last N_k - N_q keys are seen by no query).
    scale: the softmax scale; None means 1 / sqrt(D).
    window: (left, right), a sliding window (local attention): query i sees key j only when
        i - left <= j <= i + right; -1 leaves a side unbounded, so (-1, -1), the default, is no
        window and (-1, 0) alone is the causal mask. With is_causal=True both masks apply. Key
        tiles wholly outside every query's window are skipped, not computed and masked. A query
        that sees no key (possible when N_q > N_k + left) gets out = 0, lse = +inf and zero
        gradients. With a window kernel="fast" runs the windowed twins of v6's forward and v6b's
        backward on an sm_90 GPU, and v5's elsewhere.
    kernel: "step05" (step 5's kernel; forward and backward, float32, bfloat16 and float16, CPU and
        CUDA) or "fast" (step 7's fast forward and backward: CUDA, bfloat16 and float16, D in 32/64/128; on an
        sm_90 GPU at D 64 and 128 the forward is v6 and the backward v6b,
        elsewhere both are v5's). An input that the chosen kernel cannot run raises RuntimeError saying why; no
        other kernel is tried in its place.
    deterministic: True makes dq, dk and dv the same bits on every run of the same inputs. dk
        and dv always are; dq is a sum of one share per key tile, which the CUDA kernels add with
        float32 atomics in whatever order the blocks reach it. Deterministic, step05's CUDA
        backward runs its key tiles one launch after another (slow: for checking), and the fast
        one makes them take turns, the last key tile first (measured cost: step07_benchmark's
        README). The CPU path is deterministic either way.

    What is copied: a tensor whose head dim is not contiguous (stride(-1) != 1), and a 4-D tensor
    whose B and H cannot be merged into one batch axis (stride(0) != H * stride(1), e.g.
    x.transpose(1, 2) of a (B, N, H, D) tensor) is copied into a contiguous one first, and so,
    for kernel="fast", is a tensor whose rows do not all start on a 16-byte boundary; every other
    input is read in place. out, lse and the gradients are new contiguous tensors.

    Errors (RuntimeError, naming the argument): another dtype (float64, integers), dtypes
    or devices that differ, a rank other than 3 or 4, shapes that do not fit, a length of 0, an
    unsupported head dim, an unknown kernel name, a non-finite scale. A window that is not a pair
    of ints (1.5 is not rounded) raises TypeError naming it.
    """
    if scale is not None:
        scale = float(scale)
    left, right = _window_bounds(window)
    allow_tf32 = bool(torch.backends.cuda.matmul.allow_tf32)
    return _FlashAttentionFunction.apply(q, k, v, is_causal, scale, kernel, bool(deterministic), (left, right),
                                         allow_tf32)


# Packed batches and the paged cache (varlen.py): its operators call the ones loaded above.
from .varlen import AuxRequest, varlen_attn  # noqa: E402
