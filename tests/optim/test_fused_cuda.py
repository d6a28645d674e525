"""Fused optimizer steps (NOTE [ Fused optimizer kernels on CUDA ] in
ember/optim/_fused_cuda.py): ``fused=True``/``foreach=True`` on the CPU as torch, the CUDA
kernel bodies compiled as C on the CPU against the unfused path, and on a GPU the CuPy
kernels against the unfused path and torch.cuda's fused optimizers."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import ember
from ember.optim import _fused_cuda

torch = pytest.importorskip("torch")

needs_gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")

CASES = [
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, betas=(0.3, 0.9), maximize=True)),
    ("AdamW", dict(lr=0.1, weight_decay=0.1)),
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, maximize=True)),
]
_IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CASES]


def _train(lib, name, kw, device="cpu", dtype="float32", steps=3, n_params=2):
    rng = np.random.default_rng(0)
    ps = [lib.nn.Parameter(lib.tensor(rng.standard_normal((3, 4)).astype(np.float32),
                                      device=device).to(getattr(lib, dtype)))
          for _ in range(n_params)]
    opt = getattr(lib.optim, name)(ps, **kw)
    for _ in range(steps):
        for p in ps:
            p.grad = lib.tensor(rng.standard_normal((3, 4)).astype(np.float32),
                                device=device).to(getattr(lib, dtype))
        opt.step()
    return [p.detach().float().cpu().numpy() for p in ps]


# ---- CPU: the flags as torch 2.13 takes them --------------------------------------------


@pytest.mark.parametrize("flag", ["fused", "foreach"])
@pytest.mark.parametrize("name,kw", [CASES[0], CASES[3], CASES[5]], ids=["Adam", "AdamW", "SGD"])
def test_fused_and_foreach_on_cpu_match_torch(flag, name, kw):
    e = _train(ember, name, {**kw, flag: True})
    t = _train(torch, name, {**kw, flag: True})
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
def test_fused_with_foreach_raises_as_torch(name):
    msgs = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        with pytest.raises(RuntimeError) as info:
            getattr(lib.optim, name)([p], lr=0.1, fused=True, foreach=True)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_cuda_kernels_decline_numpy_arrays():
    p, g = np.ones(3, np.float32), np.ones(3, np.float32)
    m, v = np.zeros(3, np.float32), np.zeros(3, np.float32)
    assert _fused_cuda.adam(p, g, m, v, None, beta1=0.9, beta2=0.999, lr=0.1,
                            weight_decay=0.0, eps=1e-8, step=1, decoupled=False,
                            maximize=False) is False
    assert _fused_cuda.sgd(p, g, None, lr=0.1, weight_decay=0.0, momentum=0.9,
                           dampening=0.0, nesterov=False, maximize=False) is False
    assert p.tolist() == [1.0, 1.0, 1.0] and m.tolist() == [0.0, 0.0, 0.0]


# ---- CPU: the CUDA kernel bodies, compiled as C, against the unfused path ----------------

_C_TYPES = {"T": "float", "float32": "float", "int32": "int"}


def _c_function(kind, body, ins, outs):
    """The kernel body as a C function of one element: inputs by value, outputs by
    pointer (as ElementwiseKernel binds them)."""
    params = [d.split() for d in ins.split(",")]
    out_names = [d.split()[1] for d in outs.split(",")]
    sig = [f"{_C_TYPES[t]} {n}" for t, n in params] + [f"float* {n}_p" for n in out_names]
    refs = "".join(f"float& {n} = *{n}_p;\n" for n in out_names)
    return f'extern "C" void {kind}({", ".join(sig)}) {{\n{refs}{body}\n}}\n', params


@pytest.fixture(scope="module")
def c_kernels(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    src = ["#include <cmath>\n#include <algorithm>\n"
           "using std::max; using std::sqrt; using std::fma;\n"
           "typedef float acc_t; typedef float T;\n"]
    signatures = {}
    for kind in ("adam", "adam_amsgrad", "sgd", "sgd_momentum"):
        ins, outs, body = _fused_cuda._signature(kind, "float32")
        code, params = _c_function(kind, body, ins, outs)
        src.append(code)
        signatures[kind] = (params, len(outs.split(",")))
    d = tmp_path_factory.mktemp("fused_c")
    (d / "k.cpp").write_text("".join(src))
    subprocess.run([cxx, "-O1", "-ffp-contract=off", "-shared", "-fPIC", str(d / "k.cpp"),
                    "-o", str(d / "k.so")], check=True)
    return ctypes.CDLL(str(d / "k.so")), signatures


def _emulated_kernel(lib, signatures):
    """A stand-in for ``_fused_cuda._kernel`` running the compiled C per element."""
    def make(kind, ctype, stype):
        params, n_out = signatures[kind]
        fn = getattr(lib, kind)
        fn.argtypes = [ctypes.c_int if t == "int32" else ctypes.c_float for t, _ in params] + \
            [ctypes.POINTER(ctypes.c_float)] * n_out

        def call(*args):
            ins, outs = args[:-n_out], args[-n_out:]
            for idx in np.ndindex(ins[0].shape):
                cells = [(ctypes.c_float * 1)(o[idx]) for o in outs]
                fn(float(ins[0][idx]), *ins[1:], *cells)
                for o, c in zip(outs, cells):
                    o[idx] = c[0]
        return call
    return make


@pytest.mark.parametrize("name,kw", CASES, ids=_IDS)
def test_kernel_bodies_match_unfused_path_bit_for_bit(c_kernels, monkeypatch, name, kw):
    from ember import _kernels

    old = _kernels.set_backend("numpy")  # the NumPy ops, not the numba Adam (to rounding)
    try:
        unfused = _train(ember, name, kw, n_params=1)
    finally:
        _kernels.set_backend(old)
    monkeypatch.setattr(_fused_cuda, "_kernel", _emulated_kernel(*c_kernels))
    # NumPy float32 arrays stand in for CuPy arrays, np.empty_like for cupy.empty_like
    monkeypatch.setattr(_fused_cuda, "is_cupy", lambda a: isinstance(a, np.ndarray))
    monkeypatch.setattr(_fused_cuda, "_cupy", lambda: np)
    calls = []
    real = _fused_cuda._covered
    monkeypatch.setattr(_fused_cuda, "_covered", lambda *a: calls.append(real(*a)) or calls[-1])
    fused = _train(ember, name, kw, n_params=1)
    assert len(calls) == 3 and None not in calls  # every step ran the kernel
    np.testing.assert_array_equal(fused[0], unfused[0])


_GRID_PRELUDE = """#include <cmath>
using std::sqrt; using std::fma;
#define __global__
struct Dim3 { long long x; };
static const Dim3 blockIdx = {0}, gridDim = {1}, threadIdx = {0}, blockDim = {1};
"""


@pytest.fixture(scope="module")
def c_multi(tmp_path_factory):
    """The multi-tensor CUDA source compiled as C++, one block of one thread walking every
    chunk and element (the kernels loop over blocks and threads themselves)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    d = tmp_path_factory.mktemp("fused_multi_c")
    (d / "m.cpp").write_text(_GRID_PRELUDE + _fused_cuda._MULTI_SOURCE)
    subprocess.run([cxx, "-O1", "-ffp-contract=off", "-shared", "-fPIC", str(d / "m.cpp"),
                    "-o", str(d / "m.so")], check=True)
    return ctypes.CDLL(str(d / "m.so"))


def _emulated_multi(lib):
    def function(name):
        fn = getattr(lib, name)

        def call(grid, block, args):
            table, n_t, n_chunks, chunk, *scalars = args
            conv = [ctypes.c_int(int(a)) if isinstance(a, np.int32) else ctypes.c_float(a)
                    for a in scalars]
            fn(ctypes.c_void_p(table.ctypes.data), ctypes.c_int(int(n_t)),
               ctypes.c_longlong(int(n_chunks)), ctypes.c_longlong(int(chunk)), *conv)
        return call
    return function


@pytest.mark.parametrize("kind", ["adam", "adamw", "adam_maximize", "sgd", "sgd_momentum",
                                  "sgd_nesterov"])
def test_multi_tensor_kernels_equal_per_parameter_kernels_bit_for_bit(c_kernels, c_multi,
                                                                      monkeypatch, kind):
    # NumPy float32 arrays stand in for CuPy arrays; a chunk of 256 elements makes the
    # parameters below span several chunks each
    monkeypatch.setattr(_fused_cuda, "_kernel", _emulated_kernel(*c_kernels))
    monkeypatch.setattr(_fused_cuda, "_multi_function", _emulated_multi(c_multi))
    monkeypatch.setattr(_fused_cuda, "is_cupy", lambda a: isinstance(a, np.ndarray))
    monkeypatch.setattr(_fused_cuda, "_cupy", lambda: np)
    monkeypatch.setattr(_fused_cuda, "_pointer", lambda a: a.ctypes.data)
    monkeypatch.setattr(_fused_cuda, "_multi_covered", lambda cols: True)
    monkeypatch.setattr(_fused_cuda, "_CHUNK", 256)
    monkeypatch.setattr(_fused_cuda, "_tables", {})
    rng = np.random.default_rng(3)
    shapes = [(700,), (3, 5), (1,), (520,)]
    params = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    n_state = 2 if kind.startswith("adam") else (0 if kind == "sgd" else 1)
    multi = [[p.copy() for p in params]] + [[np.zeros_like(p) for p in params]
                                            for _ in range(n_state)]
    alone = [[p.copy() for p in params]] + [[np.zeros_like(p) for p in params]
                                            for _ in range(n_state)]
    for step in (1, 2, 3):
        grads = [(rng.standard_normal(p.shape) * 0.5).astype(np.float32) for p in params]
        if kind.startswith("adam"):
            kw = dict(beta1=0.9, beta2=0.999, lr=1e-2, weight_decay=0.1, eps=1e-8, step=step,
                      decoupled=kind == "adamw", maximize=kind == "adam_maximize")
            assert _fused_cuda.adam_multi(multi[0], grads, multi[1], multi[2], **kw)
            for p, g, m, v in zip(*alone[:1], grads, *alone[1:]):
                assert _fused_cuda.adam(p, g, m, v, None, **kw)
        else:
            kw = dict(lr=0.1, weight_decay=1e-4, momentum=0.0 if kind == "sgd" else 0.9,
                      dampening=0.0, nesterov=kind == "sgd_nesterov", maximize=False)
            if step == 1 and n_state:  # the first step makes the buffers one by one
                for i, (p, g) in enumerate(zip(multi[0], grads)):
                    multi[1][i] = _fused_cuda.sgd(p, g, None, **kw)
            else:
                assert _fused_cuda.sgd_multi(multi[0], grads, multi[1] if n_state else None,
                                             **kw)
            for i, (p, g) in enumerate(zip(alone[0], grads)):
                buf = alone[1][i] if n_state and step > 1 else None
                out = _fused_cuda.sgd(p, g, buf, **kw)
                if n_state and step == 1:
                    alone[1][i] = out
    for col_m, col_a in zip(multi, alone):
        for a, b in zip(col_m, col_a):
            np.testing.assert_array_equal(a, b)


# ---- on a GPU: the CuPy kernels ---------------------------------------------------------


@needs_gpu
@pytest.mark.parametrize("name,kw", CASES, ids=_IDS)
def test_cuda_fused_step_matches_unfused_path(monkeypatch, name, kw):
    fused = _train(ember, name, kw, device="cuda")
    # a kernel ran: one per parameter, or one per group (NOTE [ Multi-tensor optimizer
    # steps on CUDA ]) where every array is a float32 one
    prefix = name.lower()[:3]
    assert any(k[0].startswith(prefix) for k in _fused_cuda._kernels) or \
        any(n.startswith(f"ember_{prefix}") for n in _fused_cuda._multi)
    monkeypatch.setattr(_fused_cuda, "is_cupy", lambda a: False)
    unfused = _train(ember, name, kw, device="cuda")
    for a, b in zip(fused, unfused):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@needs_gpu
@pytest.mark.parametrize("name,kw", CASES, ids=_IDS)
def test_cuda_fused_step_matches_torch_fused(name, kw):
    e = _train(ember, name, {**kw, "fused": True}, device="cuda")
    t = _train(torch, name, {**kw, "fused": True},
               device="cuda" if torch.cuda.is_available() else "cpu")
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 2e-2)])
@pytest.mark.parametrize("name,kw", [CASES[0], CASES[3], CASES[5]], ids=["Adam", "AdamW", "SGD"])
def test_cuda_fused_low_precision_computes_in_float32_as_torch(name, kw, dtype, tol):
    e = _train(ember, name, {**kw, "fused": True}, device="cuda", dtype=dtype)
    assert any(k[1] == "float" for k in _fused_cuda._kernels)
    t = _train(torch, name, {**kw, "fused": True}, dtype=dtype,
               device="cuda" if torch.cuda.is_available() else "cpu")
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@needs_gpu
def test_cuda_kernel_compiled_once():
    # float32 parameters take one launch per group (NOTE [ Multi-tensor optimizer steps on
    # CUDA ]); other groups one ElementwiseKernel per parameter: either is compiled once
    def compiled():
        return _fused_cuda._multi.get("ember_adam_multi") or \
            _fused_cuda._kernels.get(("adam", "float"))

    _train(ember, "Adam", dict(lr=0.1), device="cuda")
    k = compiled()
    assert k is not None
    _train(ember, "Adam", dict(lr=0.01, betas=(0.5, 0.9)), device="cuda")
    assert compiled() is k
