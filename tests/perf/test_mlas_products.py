"""Large float32 products on onnxruntime's MLAS (NOTE [ Products past a pinned OpenBLAS ] in
ember/_kernels/_mlas.py): the choice of engine, the values against NumPy's, the layouts and
shapes MLAS takes and the ones it leaves to NumPy, and equal rows of a medium product."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember._kernels import _blas, _mlas

ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def mlas_on(monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [ort])


@pytest.fixture
def mlas_off(monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [False])


def _close(got, a, b):
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    scale = np.matmul(np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.all(np.abs(got - want) <= 1e-5 * scale + 1e-30)


@pytest.mark.parametrize("seed", range(6))
def test_random_products_match_numpy(mlas_on, seed):
    rng = np.random.default_rng(seed)
    m, k, n = (int(rng.integers(64, 400)) for _ in range(3))
    k = max(k, (_mlas.MIN_WORK // (m * n)) + 1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for x, y in ((a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b)),
                 (np.asfortranarray(a), np.asfortranarray(b))):
        got = _mlas.matmul(x, y)
        assert got is not None
        _close(got, a, b)
        # through the BLAS entry the conv and linear kernels call
        np.testing.assert_array_equal(_blas.matmul(x, y), got)


def test_transposed_views_and_out(mlas_on):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 512)).astype(np.float32)
    b = rng.standard_normal((256, 300)).astype(np.float32)
    out = np.full((512, 256), np.nan, np.float32)
    r = _mlas.matmul(a.T, b.T, out=out)
    assert r is out
    _close(out, a.T, b.T)


def test_stacks(mlas_on):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 128, 300)).astype(np.float32)
    b = rng.standard_normal((16, 300, 256)).astype(np.float32)
    w = rng.standard_normal((300, 200)).astype(np.float32)
    r = _mlas.matmul(a, b)
    assert r.shape == (16, 128, 256)
    _close(r, a, b)
    r = _mlas.matmul(a, w)
    assert r.shape == (16, 128, 200)
    _close(r, a, w)
    # a stack of another count: NumPy's
    assert _mlas.matmul(a, b[:8]) is None
    # strided stacks are copied where the product does enough work per element copied
    at, bt = a.transpose(0, 2, 1)[:, :128], b[:, :128]
    r = _mlas.matmul(at, bt)
    assert r is not None and not at.flags.c_contiguous and not bt.flags.c_contiguous
    _close(r, at, bt)
    assert _mlas.matmul(at, bt[:, :, :32]) is None     # 32 columns: the copy would not pay


def test_left_to_numpy(mlas_on):
    a = np.ones((256, 256), np.float32)
    assert _mlas.matmul(a.astype(np.float64), a.astype(np.float64)) is None   # float64
    assert _mlas.matmul(a[:1], a) is None                                       # one row
    assert _mlas.matmul(a[:8], a[:, :64]) is None                               # small
    assert _mlas.matmul(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32)) is None
    assert _mlas.matmul(a[:, ::2], a[::2]) is None                              # strided
    assert _mlas.matmul(a, a, out=np.empty((256, 256), np.float64)) is None    # out dtype
    assert _mlas.matmul(a, a, out=np.empty((256, 256), np.float32).T) is None  # out layout


def test_off_leaves_products_to_numpy(mlas_off, monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 384)).astype(np.float32)
    b = rng.standard_normal((384, 256)).astype(np.float32)
    assert _mlas.matmul(a, b) is None
    calls = []
    real = np.matmul

    def spy(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(_blas.np, "matmul", spy)
    r = _blas.matmul(a, b)
    assert calls == [1]
    _close(r, a, b)


def test_thread_count_does_not_change_bits(mlas_on):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((512, 300)).astype(np.float32)
    b = rng.standard_normal((300, 700)).astype(np.float32)
    one = _mlas._session(ort, "gemm", 0, 0, 1)
    two = _mlas._session(ort, "gemm", 0, 0, 2)
    r1 = one.run(None, {"A": a, "B": b})[0]
    r2 = two.run(None, {"A": a, "B": b})[0]
    np.testing.assert_array_equal(r1, r2)


def test_one_thread_configured(mlas_on):
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert _mlas._threads(512, 512, 512) == 1
    finally:
        ember.set_num_threads(old)


def test_linear_layer_close_either_way(monkeypatch):
    """A linear layer's forward and both gradients agree with MLAS and with NumPy's BLAS."""
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((256, 512)).astype(np.float32)
    w0 = rng.standard_normal((384, 512)).astype(np.float32) / 20
    results = []
    for state in ([ort], [False]):
        monkeypatch.setattr(_mlas, "_state", state)
        x = ember.tensor(x0, requires_grad=True)
        w = ember.tensor(w0, requires_grad=True)
        y = ember.nn.functional.linear(x, w)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _engine_in_child(env):
    code = "from ember._kernels import _mlas; print(_mlas.engine())"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                          capture_output=True, text=True, check=True).stdout.strip()


def test_engine_switch():
    assert _engine_in_child({"EMBER_GEMM": "openblas"}) == "numpy"
    assert _engine_in_child({"EMBER_GEMM": "numpy"}) == "numpy"
    assert _engine_in_child({"EMBER_GEMM": "mlas"}) == "mlas"
    auto = "mlas" if _mlas.blas_below_cpu() else "numpy"
    assert _engine_in_child({"EMBER_GEMM": ""}) == auto
    assert _engine_in_child({"EMBER_GEMM": "auto"}) == auto


def test_engine_default_follows_the_blas(monkeypatch):
    """Unset, MLAS is chosen exactly where NumPy's OpenBLAS runs kernels below the CPU."""
    monkeypatch.delenv("EMBER_GEMM", raising=False)
    monkeypatch.setattr(_mlas, "blas_below_cpu", lambda: False)
    assert _mlas._decide() is False
    monkeypatch.setattr(_mlas, "blas_below_cpu", lambda: True)
    assert _mlas._decide() is (ort if _mlas._libc() is not None else False)
    monkeypatch.setenv("EMBER_GEMM", "MLAS")
    monkeypatch.setattr(_mlas, "blas_below_cpu", lambda: False)
    assert _mlas._decide() is ort
    monkeypatch.setenv("EMBER_GEMM", "numpy")
    monkeypatch.setattr(_mlas, "blas_below_cpu", lambda: True)
    assert _mlas._decide() is False


def test_blas_below_cpu_reads_the_kernel_set(monkeypatch):
    import threadpoolctl

    from ember._core import rng_math

    flags = frozenset({"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"})
    monkeypatch.setattr(rng_math, "_cpu_flags", lambda: flags)

    def pools(arch, api="openblas"):
        return lambda: [{"user_api": "blas", "internal_api": api, "architecture": arch,
                         "filepath": "/x/numpy.libs/libscipy_openblas64_.so"}]

    for arch, below in (("Haswell", True), ("Zen", True), ("SkylakeX", False),
                        ("SapphireRapids", False), ("Cooperlake", False)):
        monkeypatch.setattr(threadpoolctl, "threadpool_info", pools(arch))
        assert _mlas.blas_below_cpu() is below, arch
    monkeypatch.setattr(threadpoolctl, "threadpool_info", pools(None, "mkl"))
    assert _mlas.blas_below_cpu() is False
    monkeypatch.setattr(threadpoolctl, "threadpool_info", pools("Haswell"))
    monkeypatch.setattr(rng_math, "_cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert _mlas.blas_below_cpu() is False          # an AVX2 CPU: Haswell kernels are its own


def test_models_are_onnx_files():
    """The hand-written one-node models are the bytes the onnx package writes for them."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    for kind, ta, tb in (("gemm", 0, 0), ("gemm", 1, 0), ("gemm", 0, 1), ("gemm", 1, 1),
                         ("matmul", 0, 0), ("fused", 1, 0), ("fused", 0, 1), ("fused", 1, 1)):
        opsets = [helper.make_opsetid("", 13)]
        if kind == "gemm":
            node = helper.make_node("Gemm", ["A", "B"], ["C"], transA=ta, transB=tb)
        elif kind == "fused":
            node = helper.make_node("FusedMatMul", ["A", "B"], ["C"], domain="com.microsoft",
                                    transA=ta, transB=tb)
            opsets.append(helper.make_opsetid("com.microsoft", 1))
        else:
            node = helper.make_node("MatMul", ["A", "B"], ["C"])
        graph = helper.make_graph([node], "ember_product",
                                  [value("A", TensorProto.FLOAT, None),
                                   value("B", TensorProto.FLOAT, None)],
                                  [value("C", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = 7
        assert _mlas._model(kind, ta, tb) == model.SerializeToString()


def test_engine_does_not_import_onnx():
    code = ("import sys, numpy as np; from ember._kernels import _mlas; "
            "_mlas._state[0] = __import__('onnxruntime'); a = np.ones((512, 512), np.float32); "
            "assert _mlas.matmul(a, a)[0, 0] == 512; print('onnx' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


_FORK_PROBE = """
import os, sys
import numpy as np
from ember._kernels import _mlas
_mlas._state[0] = __import__("onnxruntime")
a = np.ones((512, 512), np.float32)
assert _mlas.matmul(a, a)[0, 0] == 512           # the parent's sessions, with threads
pid = os.fork()
if pid == 0:
    ok = _mlas.matmul(a, a)[0, 0] == 512          # the child's own sessions
    sys.stdout.write("child ok\\n" if ok else "child wrong\\n")
    sys.stdout.flush()
    os._exit(0)                                    # as multiprocessing's children leave
os.waitpid(pid, 0)
print("parent", _mlas.matmul(a, a)[0, 0])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_makes_its_own_sessions():
    r = subprocess.run([sys.executable, "-c", _FORK_PROBE], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["child", "ok", "parent", "512.0"]


_EXIT_PROBE = """
import os, sys, threading
import numpy as np
import ember
from ember._kernels import _mlas
assert _mlas.engine() == "mlas"
a = ember.ones(512, 512)
assert (a @ a)[0, 0].item() == 512
how = sys.argv[1]
pid = os.fork()
if pid == 0:
    assert (a @ a)[0, 0].item() == 512              # the child's own sessions
    print("child", how, flush=True)
    if how == "exit":
        sys.exit(7)
    if how == "raise":
        raise ValueError("from the child")
    if how == "thread":                              # a non-daemon thread still to join
        threading.Thread(target=lambda: print("thread done", flush=True)).start()
    # "end": leave by the end of the script
else:
    _, status = os.waitpid(pid, 0)
    print("parent", os.waitstatus_to_exitcode(status), (a @ a)[0, 0].item())
"""


@pytest.mark.skipif(not hasattr(os, "fork") or _mlas._libc() is None,
                    reason="needs fork and glibc")
@pytest.mark.parametrize("how,status", [("exit", 7), ("raise", 1), ("end", 0), ("thread", 0)])
def test_forked_child_exits_normally(how, status):
    """NOTE [ Forked children and onnxruntime's exit handlers ]: a child forked after MLAS
    ran leaves through ``sys.exit``, an exception or the end of its script with its status,
    and Python's own finalisation (stdout, threads) done."""
    r = subprocess.run([sys.executable, "-c", _EXIT_PROBE, how], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "EMBER_GEMM": "mlas"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert f"child {how}" in lines
    assert f"parent {status} 512.0" in lines
    if how == "thread":
        assert "thread done" in lines
    if how == "raise":
        assert "ValueError: from the child" in r.stderr


@pytest.mark.parametrize("shape", [(8, 64, 32, 32, 64), (4, 128, 16, 16, 128),
                                   (16, 256, 4, 4, 256), (8, 32, 24, 24, 64)])
def test_convolutions_close_either_way(monkeypatch, shape):
    """3x3 convolutions (the Winograd paths' per-position and stacked products, where the
    chosen path runs them through NumPy) forward and both gradients agree with MLAS and with
    NumPy's BLAS. (Which path a layer takes depends on the machine's load, so whether MLAS
    got a product is not asserted here; ``test_winograd_products_on_mlas`` does that.)"""
    n, c, h, w, o = shape
    rng = np.random.default_rng(6)
    x0 = rng.standard_normal((n, c, h, w)).astype(np.float32)
    w0 = (rng.standard_normal((o, c, 3, 3)) / (3 * c ** 0.5)).astype(np.float32)
    results = []
    for state in ([ort], [False]):
        monkeypatch.setattr(_mlas, "_state", state)
        x = ember.tensor(x0, requires_grad=True)
        wt = ember.tensor(w0, requires_grad=True)
        y = ember.nn.functional.conv2d(x, wt, padding=1)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), wt.grad.numpy()))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * float(np.abs(want).max()))


def test_winograd_products_on_mlas(mlas_on, monkeypatch):
    """The per-position products of the F(2x2, 3x3) kernels reach MLAS (transposed weight
    views, results written into the stack)."""
    from ember._ops import nn_winograd

    taken = []
    real = _mlas.matmul

    def counted(a, b, out=None):
        r = real(a, b, out)
        taken.append(r is not None)
        return r

    monkeypatch.setattr(_mlas, "matmul", counted)
    rng = np.random.default_rng(7)
    v = rng.standard_normal((16, 512, 128)).astype(np.float32)
    u = rng.standard_normal((16, 96, 128)).astype(np.float32)
    out = np.empty((16, 512, 96), np.float32)
    nn_winograd._products(np, v, u, out)
    assert taken == [True] * 16
    _close(out, v, u.transpose(0, 2, 1))


def test_stack_counts_its_members_work(mlas_on):
    """A stack of products each below ``MIN_WORK`` but above it together (the F(4x4) Winograd
    position products) runs on MLAS, with NumPy's values."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((36, 64, 64)).astype(np.float32)
    b = rng.standard_normal((36, 64, 192)).astype(np.float32)
    assert 64 * 64 * 192 < _mlas.MIN_WORK <= 36 * 64 * 64 * 192
    r = _mlas.matmul(a, b)
    assert r is not None
    _close(r, a, b)
    assert _mlas.matmul(a[:4], b[:4]) is None        # four members: too little work


def test_transposed_small_first_operand_is_copied(mlas_on, monkeypatch):
    # NOTE [ A transposed first operand ]: the copy changes the layout, not the values
    rng = np.random.default_rng(7)
    w = rng.standard_normal((128, 576)).astype(np.float32)      # a weight, used as w.T
    g = rng.standard_normal((128, 2048)).astype(np.float32)
    copied = _mlas.matmul(w.T, g)
    _close(copied, w.T, g)
    monkeypatch.setattr(_mlas, "_COPY_A_COLUMNS", 1 << 40)
    np.testing.assert_array_equal(_mlas.matmul(w.T, g), copied)
    np.testing.assert_array_equal(_mlas.matmul(np.ascontiguousarray(w.T), g), copied)


# -- medium 2-D products (NOTE [ Medium products on MLAS ]) --------------------------------


@pytest.mark.parametrize("m,k,n", [(16, 1024, 512), (32, 128, 256), (63, 256, 256),
                                   (1024, 32, 32), (17, 300, 700)])
def test_medium_products_go_to_mlas(mlas_on, m, k, n):
    assert m * k * n >= _mlas.MIN_WORK_2D
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    for x, y in ((a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b))):
        got = _mlas.matmul(x, y)
        assert got is not None
        _close(got, a, b)
        np.testing.assert_array_equal(_blas.matmul(x, y), got)


@pytest.mark.parametrize("m,k,n", [(1, 2048, 2048), (64, 64, 64), (8, 256, 256),
                                   (8, 512, 512), (147, 968, 8)])
def test_one_row_and_small_products_stay_on_numpy(mlas_on, m, k, n):
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    assert _mlas.matmul(a, b) is None
    np.testing.assert_array_equal(_blas.matmul(a, b), np.full((m, n), k, np.float32))


def test_stacks_keep_their_own_rule(mlas_on):
    a = np.ones((4, 32, 256), np.float32)     # 2**20 together, members of 32 rows
    b = np.ones((4, 256, 32), np.float32)
    assert _mlas.matmul(a, b) is None


def test_raw_bindings_give_the_public_bindings_values(mlas_on, monkeypatch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 200)).astype(np.float32)
    fast = _mlas.matmul(a, b)
    assert _mlas._raw[0], "this onnxruntime should offer its raw bindings"
    monkeypatch.setattr(_mlas, "_raw", [False])
    np.testing.assert_array_equal(_mlas.matmul(a, b), fast)


def test_unknown_bindings_fall_back_to_the_public_ones(mlas_on, monkeypatch):
    class Strange:
        def __init__(self, sess):
            raise TypeError("not the bindings this code knows")

    monkeypatch.setattr(_mlas, "_raw", [(Strange, None)])
    a = np.ones((40, 300), np.float32)
    b = np.ones((300, 200), np.float32)
    np.testing.assert_array_equal(_mlas.matmul(a, b), np.full((40, 200), 300, np.float32))
    assert _mlas._raw[0] is False


@pytest.mark.parametrize("seed", range(8))
def test_equal_rows_and_columns_stay_equal(mlas_on, seed):
    rng = np.random.default_rng(seed)
    m, k, n = (int(v) for v in rng.integers(16, 300, 3))
    k = max(k, _mlas.MIN_WORK_2D // (m * n) + 1)
    row = rng.standard_normal(k).astype(np.float32)
    x = np.ascontiguousarray(np.broadcast_to(row, (m, k)))
    w = rng.standard_normal((n, k)).astype(np.float32)
    y = _blas.matmul(x, w.T)
    assert (y == y[0]).all()
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = np.ascontiguousarray(np.broadcast_to(row, (n, k)))
    y = _blas.matmul(x, w.T)
    assert (y == y[:, :1]).all()


def test_linear_layer_gives_equal_rows(mlas_on):
    ember.manual_seed(0)
    layer = ember.nn.Linear(256, 256)
    y = layer(ember.randn(256).expand(48, 256).contiguous())
    assert bool((y == y[0]).all())


# -- NOTE [ Stacks of transposed members ] ---------------------------------------------------


def _stack_operands(rng, s, m, k, n, ta, tb):
    a = rng.standard_normal((s, k, m) if ta else (s, m, k)).astype(np.float32)
    b = rng.standard_normal((s, n, k) if tb else (s, k, n)).astype(np.float32)
    return (a.transpose(0, 2, 1) if ta else a), (b.transpose(0, 2, 1) if tb else b)


@pytest.mark.parametrize("ta,tb", [(1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("seed", range(3))
def test_stacks_of_transposed_members_are_one_fused_call(mlas_on, monkeypatch, ta, tb, seed):
    rng = np.random.default_rng(seed)
    s, m, k, n = 16, int(rng.integers(64, 160)), int(rng.integers(32, 600)), \
        int(rng.integers(8, 160))
    k = max(k, _mlas.MIN_WORK // (s * m * n) + 1)
    a, b = _stack_operands(rng, s, m, k, n, ta, tb)
    kinds = []
    real = _mlas._session
    monkeypatch.setattr(_mlas, "_session", lambda ort_, kind, *r: kinds.append(kind) or
                        real(ort_, kind, *r))
    out = np.full((s, m, n), np.nan, np.float32)
    r = _mlas.matmul(a, b, out=out)
    assert r is out and kinds[-1] == "fused"
    _close(out, a, b)
    # nothing copied: the copy path's operands give the same values to rounding
    monkeypatch.setattr(_mlas, "_fused", [False])
    r2 = _mlas.matmul(np.ascontiguousarray(a), np.ascontiguousarray(b))
    np.testing.assert_allclose(out, r2, rtol=1e-5, atol=1e-5 * np.abs(r2).max())


def test_fused_stacks_do_not_depend_on_the_thread_count(mlas_on):
    ort_ = _mlas._state[0]
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 288, 64)).astype(np.float32)
    b = rng.standard_normal((16, 288, 32)).astype(np.float32)
    outs = []
    for threads in (1, 2, 3):
        out = np.empty((16, 64, 32), np.float32)
        _mlas._run(ort_, _mlas._session(ort_, "fused", 1, 0, threads), a, b, out)
        outs.append(out)
    assert all(o.tobytes() == outs[0].tobytes() for o in outs)


def test_without_the_fused_operator_stacks_are_copied(mlas_on, monkeypatch):
    monkeypatch.setattr(_mlas, "_fused", [False])
    kinds = []
    real = _mlas._session
    monkeypatch.setattr(_mlas, "_session", lambda ort_, kind, *r: kinds.append(kind) or
                        real(ort_, kind, *r))
    rng = np.random.default_rng(3)
    a, b = _stack_operands(rng, 8, 128, 300, 128, 1, 1)
    r = _mlas.matmul(a, b)
    assert kinds == ["matmul"]
    _close(r, a, b)
    # a transposed first member with few columns: the copy would not pay, NumPy's
    a, b = _stack_operands(rng, 8, 128, 600, 32, 1, 0)
    assert _mlas.matmul(a, b) is None


def test_fused_availability_is_probed_once(mlas_on, monkeypatch):
    monkeypatch.setattr(_mlas, "_fused", [None])

    def broken(*_a, **_k):
        raise RuntimeError("no such operator")

    monkeypatch.setattr(_mlas, "_session", broken)
    assert _mlas._fused_ok(_mlas._state[0]) is False
    assert _mlas._fused == [False]


def test_strided_members_are_not_fused(mlas_on):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 300, 200)).astype(np.float32)
    assert _mlas._member_layout(a[:, :, :128]) is None
    assert _mlas._member_layout(a.transpose(0, 2, 1))[1] == 1
    assert _mlas._member_layout(a)[1] == 0


@pytest.mark.parametrize("shape", [(8, 32, 64, 26, (0, 0)), (4, 64, 64, 16, (1, 1)),
                                   (4, 128, 128, 8, (1, 1))])
def test_winograd_weight_gradients_on_fused_stacks(mlas_on, shape):
    """The F(2x2) weight adjoints (planar and channels-last) whose tile products are fused
    stacks give torch's weight gradient to float rounding."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("numba")
    from ember._kernels import _winograd_backward
    from ember._ops import nn_conv_winograd as planar

    n, c, o, h, pad = shape
    rng = np.random.default_rng(11)
    x = rng.standard_normal((n, c, h, h)).astype(np.float32)
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    g = rng.standard_normal((n, o, h + 2 * pad[0] - 2, h + 2 * pad[1] - 2)).astype(np.float32)
    tx, tg = torch.from_numpy(x).double(), torch.from_numpy(g).double()
    want_w = torch.nn.grad.conv2d_weight(tx, w.shape, tg, padding=pad).numpy()
    want_x = torch.nn.grad.conv2d_input(x.shape, torch.from_numpy(w).double(), tg,
                                        padding=pad).numpy()
    gx, gw = _winograd_backward.backward_cl(x, g, w, pad)
    np.testing.assert_allclose(gw, want_w, rtol=1e-4, atol=1e-4 * np.abs(want_w).max())
    np.testing.assert_allclose(gx, want_x, rtol=1e-4, atol=1e-4 * np.abs(want_x).max())
    gw2 = planar.weight_grad(x, g, pad)
    np.testing.assert_allclose(gw2, want_w, rtol=1e-4, atol=1e-4 * np.abs(want_w).max())
