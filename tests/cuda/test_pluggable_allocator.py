"""ember.cuda.CUDAPluggableAllocator and change_current_allocator (NOTE [ Pluggable
allocators ] in ember/cuda/memory.py), on a shared library compiled here whose alloc and
free are the C library's and a stand-in for CuPy's allocator API: CuPy's allocations go
through the library's functions, each block freed once with its size, device and stream."""

import ctypes
import shutil
import subprocess
import types

import pytest

import ember
from ember.cuda import _allocator, _runtime, memory
from tests.cuda.test_allocator import OOM, _fake_cupy

_SOURCE = r"""
#include <stdlib.h>
#include <sys/types.h>
static long live = 0, frees = 0, last_device = -1;
static void* last_stream = 0;
void* my_alloc(ssize_t size, int device, void* stream) {
    if (size > (1 << 20)) return 0;  /* "out of memory" past 1 MiB */
    live += size; last_device = device; last_stream = stream;
    return malloc(size ? size : 1);
}
void my_free(void* ptr, ssize_t size, int device, void* stream) {
    live -= size; frees += 1; free(ptr);
}
long live_bytes(void) { return live; }
long free_calls(void) { return frees; }
long seen_device(void) { return last_device; }
void* seen_stream(void) { return last_stream; }
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler")
    d = tmp_path_factory.mktemp("pluggable")
    (d / "a.c").write_text(_SOURCE)
    subprocess.run([cc, "-shared", "-fPIC", str(d / "a.c"), "-o", str(d / "a.so")], check=True)
    return str(d / "a.so")


@pytest.fixture
def fake_cuda(monkeypatch):
    cp = _fake_cupy()
    installed = []
    cp.cuda.set_allocator = installed.append
    cp.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0x5EED)
    monkeypatch.setattr(_runtime, "cupy", lambda: cp)
    monkeypatch.setattr(ember.cuda, "_lazy_init", lambda: None)
    monkeypatch.setattr(memory, "_allocator", _allocator.CachingAllocator(cp, OOM))
    return installed


def test_allocations_go_through_the_library(library, fake_cuda):
    alloc = ember.cuda.CUDAPluggableAllocator(library, "my_alloc", "my_free")
    lib = ctypes.CDLL(library)
    lib.seen_stream.restype = ctypes.c_void_p
    assert alloc.allocator() is alloc
    ember.cuda.change_current_allocator(alloc)
    (malloc,) = fake_cuda
    a = malloc(4096)
    b = malloc(100)
    assert lib.live_bytes() == 4196
    assert lib.seen_device() == 0 and lib.seen_stream() == 0x5EED
    assert a.ptr != 0 and a.ptr != b.ptr
    del a
    assert lib.live_bytes() == 100 and lib.free_calls() == 1
    del b
    assert lib.live_bytes() == 0 and lib.free_calls() == 2
    with pytest.raises(ember.cuda.OutOfMemoryError, match="pluggable allocator"):
        malloc(2 << 20)


def test_swap_refused_once_the_caching_allocator_was_used(library, fake_cuda):
    block = memory._allocator.malloc(512)
    alloc = ember.cuda.CUDAPluggableAllocator(library, "my_alloc", "my_free")
    with pytest.raises(RuntimeError, match="Can't swap an already initialized allocator"):
        ember.cuda.change_current_allocator(alloc)
    assert fake_cuda == []
    del block


def test_bad_libraries_and_arguments(library, fake_cuda):
    with pytest.raises(OSError):
        ember.cuda.CUDAPluggableAllocator("/nonexistent/alloc.so", "a", "b")
    with pytest.raises(AttributeError):
        ember.cuda.CUDAPluggableAllocator(library, "my_alloc", "no_such_free")
    with pytest.raises(TypeError, match="CUDAPluggableAllocator"):
        ember.cuda.change_current_allocator(object())
