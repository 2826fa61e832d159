"""pytest setup for python/tests. Every test is collected on every machine; one that cannot run is
skipped with the reason: torch is not installed, the operator library is not built (with what to
build), or, for a test marked `cuda`, no GPU is visible or the library was built without CUDA.
FA2_REQUIRE_GPU=1 (as for ctest) turns any of these skips into an error.

    python3 -m pytest python/tests -q -rs
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fa2_test_support, whatever the import mode

import fa2_test_support as support  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU and the library's CUDA kernels (skipped otherwise)")


def _why_no_gpu():
    if not support.torch.cuda.is_available():
        return "no CUDA GPU visible to torch (torch.cuda.is_available() is False)"
    if not support.fa2_attention.has_cuda_kernels():
        return (
            f"{support.fa2_attention.library_path} has no CUDA kernels: it was configured without nvcc; "
            "configure a preset with CUDA and rebuild fa2_torch_ops"
        )
    return None


def pytest_collection_modifyitems(config, items):
    if support.torch is None:
        why_not_any = support.TORCH_MISSING
    else:
        why_not_any = support.OPS_MISSING
    why_not_cuda = None
    needs_gpu = [item for item in items if item.get_closest_marker("cuda") is not None]
    if why_not_any is None and needs_gpu:
        why_not_cuda = _why_no_gpu()
    if support.REQUIRE_GPU and (why_not_any or why_not_cuda):
        raise pytest.UsageError(f"FA2_REQUIRE_GPU=1, but {why_not_any or why_not_cuda}")
    for item in items:
        if why_not_any:
            item.add_marker(pytest.mark.skip(reason=why_not_any))
        elif why_not_cuda and item.get_closest_marker("cuda") is not None:
            item.add_marker(pytest.mark.skip(reason=why_not_cuda))
