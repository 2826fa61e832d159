"""The article's forward test, for our operator: flash_attention's output, and the L its autograd node
saved, against PyTorch's SDPA and a float32 logsumexp, on the article's five shapes, in float32 and
bfloat16, causal and not. The article compares causal runs on square shapes only; here the
non-square ones too, against SDPA given the top-left mask itself. Needs a CUDA GPU.

    python3 -m pytest python/tests/test_article_forward.py -q -rs
"""

import math

import pytest
from fa2_test_support import (
    FORWARD_TOL,
    SHAPE_IDS,
    SHAPES,
    assert_finite,
    attention_inputs,
    flash_attention,
    top_left_keep,
    torch,
)

pytestmark = pytest.mark.cuda

# step05's kernel takes all three dtypes; the fast kernel bfloat16 and float16 (D = 32, 64, 128: all
# five shapes).
KERNEL_DTYPES = [
    ("step05", "float32"),
    ("step05", "bfloat16"),
    ("step05", "float16"),
    ("fast", "bfloat16"),
    ("fast", "float16"),
]


def sdpa_and_logsumexp(q, k, v, is_causal):
    """The article's reference: SDPA's output, and L from the scores in float32."""
    with torch.no_grad():
        # The top-left mask itself, the operator's convention for non-square shapes too, rather than
        # is_causal=True: the reference states the convention instead of relying on SDPA's.
        keep = top_left_keep(q.shape[-2], k.shape[-2], q.device) if is_causal else None
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        scores = torch.einsum("bqd,bkd->bqk", q.float(), k.float()) / math.sqrt(q.shape[-1])
        if keep is not None:
            scores = scores.masked_fill(keep.logical_not(), -math.inf)
        return out, scores.logsumexp(dim=-1)


def saved_row_statistic(out, rows):
    """L, which flash_attention does not return: the one tensor of shape `rows` = (B, N_q) that the
    autograd node of `out` keeps for the backward."""
    candidates = [kept for kept in out.grad_fn.saved_tensors if tuple(kept.shape) == rows]
    shapes = [tuple(kept.shape) for kept in out.grad_fn.saved_tensors]
    assert len(candidates) == 1, f"the autograd node should keep one tensor of shape {rows}; it keeps {shapes}"
    return candidates[0]


@pytest.mark.parametrize("kernel,dtype_name", KERNEL_DTYPES, ids=[f"{k}-{d}" for k, d in KERNEL_DTYPES])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B,Nq,Nk,D", SHAPES, ids=SHAPE_IDS)
def test_forward_matches_sdpa_and_its_lse_a_float32_logsumexp(B, Nq, Nk, D, is_causal, kernel, dtype_name):
    dtype = getattr(torch, dtype_name)
    q, k, v, _ = attention_inputs((B, Nq, D), (B, Nk, D), dtype, device="cuda")

    o = flash_attention(q, k, v, is_causal=is_causal, kernel=kernel)
    L = saved_row_statistic(o, (B, Nq))

    o_ref, L_ref = sdpa_and_logsumexp(q, k, v, is_causal)
    assert o.shape == q.shape and o.dtype == dtype, f"o is {tuple(o.shape)} {o.dtype}"
    assert L.dtype == torch.float32, f"L is {L.dtype}"
    assert_finite("o", o)
    assert_finite("L", L)
    torch.testing.assert_close(o, o_ref, **FORWARD_TOL[dtype_name])
    torch.testing.assert_close(L, L_ref, **FORWARD_TOL[dtype_name])
