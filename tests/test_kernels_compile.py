"""Every CUDA source in ``kernels/`` compiles with NVRTC, without a GPU, for A100 and H100/H200.

Generic over :func:`icml25.kernels.list_kernels`: a new ``kernels/NAME.cu`` is picked up without
editing this file. The rules checked here are the kernel pattern of the book (see
``kernels/__init__.py``): kernels are ``extern "C"`` (so CuPy finds them by their plain name),
the source includes no CUDA headers (NVRTC built-ins only), and each kernel named in the source
appears as an entry point in the PTX.
"""

from __future__ import annotations

import re

import pytest

from icml25.kernels import compile_ptx, kernel_source, list_kernels

ARCHS = ("compute_80", "compute_90")
KERNELS = list_kernels()

_GLOBAL_FN = re.compile(
    r"(?P<extern>extern\s+\"C\"\s+)?__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?P<name>\w+)\s*\("
)


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


def _extern_c_blocks(source: str) -> list[tuple[int, int]]:
    """Character spans of the ``extern "C" { ... }`` blocks (braces matched)."""
    spans = []
    for m in re.finditer(r"extern\s+\"C\"\s*\{", source):
        depth, pos = 1, m.end()
        while depth and pos < len(source):
            depth += {"{": 1, "}": -1}.get(source[pos], 0)
            pos += 1
        spans.append((m.start(), pos))
    return spans


def _kernels_in(source: str) -> list[tuple[str, bool]]:
    """(name, has C linkage) of every __global__ function: ``extern "C"`` on it or around it."""
    source = _strip_comments(source)
    blocks = _extern_c_blocks(source)
    return [
        (
            m["name"],
            m["extern"] is not None or any(a <= m.start() < b for a, b in blocks),
        )
        for m in _GLOBAL_FN.finditer(source)
    ]


def test_kernel_sources_exist():
    assert KERNELS, "kernels/ holds no .cu file"


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_source_declares_extern_c_kernels(name):
    found = _kernels_in(kernel_source(name))
    assert found, f"{name}.cu declares no __global__ function"
    not_extern = [fn for fn, is_extern in found if not is_extern]
    assert not not_extern, (
        f'{name}.cu: kernels must be extern "C" (CuPy looks them up by name): {not_extern}'
    )


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_source_includes_no_headers(name):
    includes = re.findall(
        r"^\s*#\s*include\s*[<\"]([^>\"]+)",
        _strip_comments(kernel_source(name)),
        flags=re.M,
    )
    assert not includes, (
        f"{name}.cu includes {includes}; use NVRTC built-ins only (no curand etc.)"
    )


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_with_nvrtc(name, arch):
    ptx = compile_ptx(name, arch=arch)
    assert f".target sm_{arch.split('_')[1]}" in ptx
    entries = set(re.findall(r"\.entry\s+(\w+)\s*\(", ptx))
    for fn, _ in _kernels_in(kernel_source(name)):
        assert fn in entries, (
            f"kernel {fn!r} of {name}.cu is not an entry point of the PTX for {arch}"
        )
