"""The operator library shares its process with PyTorch and PyTorch's libstdc++.so: it must not
export a definition of its own of anything that libstdc++.so defines. A toolchain that links
libstdc++ statically into shared libraries would otherwise put a second copy of the C++ runtime in
the library's dynamic symbol table; its GNU-unique symbols (the ids of the locale facets) then
bind to PyTorch's copy while the facet tables stay private, and the first std::ostringstream
crashes the interpreter (test_errors.py walks that path). python/CMakeLists.txt links with
--exclude-libs,ALL against that.

    python3 -m pytest python/tests/test_library.py -q -rs
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from fa2_test_support import fa2_attention, torch

# nm's letters for definitions that take part in symbol interposition: text, data, bss, read-only
# data (strong, upper case) and GNU-unique objects. Weak definitions (W, V) of template
# instantiations are normal in any C++ shared library and yield to the first definition loaded.
BINDING_DEFINITIONS = set("TDBRu")


def defined_dynamic_symbols(path, kinds=None):
    """{mangled name} of the dynamic symbols `path` defines (of the nm letters in `kinds`)."""
    listing = subprocess.run(
        ["nm", "-D", "--defined-only", str(path)], check=True, capture_output=True, text=True
    ).stdout
    names = set()
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 3 and (kinds is None or fields[1] in kinds):
            names.add(fields[2].split("@")[0])  # drop the version, e.g. @@GLIBCXX_3.4
    return names


def loaded_libstdcxx():
    """The libstdc++.so mapped into this process (PyTorch's), or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "/libstdc++.so" in path:
                return Path(path)
    return None


def test_library_exports_no_cpp_runtime():
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed: cannot read the library's symbol table")
    torch.zeros(1)  # PyTorch loaded, with its libstdc++
    runtime = loaded_libstdcxx()
    if runtime is None:
        pytest.skip("no libstdc++.so is mapped into this process (a PyTorch linked without it?)")
    ours = defined_dynamic_symbols(fa2_attention.library_path, BINDING_DEFINITIONS)
    clashes = sorted(ours & defined_dynamic_symbols(runtime))
    assert not clashes, (
        f"{fa2_attention.library_path} exports {len(clashes)} symbols that {runtime} also defines, "
        f"e.g. {clashes[:5]}: a copy of the C++ runtime is visible outside the library "
        "(link it with -Wl,--exclude-libs,ALL)"
    )



def test_the_installed_package_loads_the_library_inside_it():
    """FA2_TEST_INSTALLED=1 (after python3 -m pip install --no-build-isolation ./python): the tests
    import the package from site-packages, which loads the library pip put beside it."""
    from fa2_test_support import PYTHON_DIR, TEST_INSTALLED

    if not TEST_INSTALLED:
        pytest.skip("FA2_TEST_INSTALLED is not 1: these tests use python/ of this checkout, not an installed package")
    if fa2_attention is None:
        pytest.skip("fa2_attention did not import")
    package = Path(fa2_attention.__file__).resolve().parent
    assert package != PYTHON_DIR / "fa2_attention", f"imported {package}, the checkout's copy"
    assert Path(fa2_attention.library_path).resolve().parent == package
