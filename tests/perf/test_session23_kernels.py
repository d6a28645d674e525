"""Issue 22, session 23 (helper h22k): numba's pool on by default.

Session 22 put the split row and block kernels on numba's OpenMP pool behind
``EMBER_NATIVE_SPLIT=1``, because the LSTM LM step lost 25-30% with it. Two causes were found
(NOTE [ The pool's own OpenMP runtime ] in ember/_kernels/_numba_par.py, NOTE [ The pool and
the polling BLAS workers ] in ember/_parallel.py): the pool ran on PyTorch's GNU OpenMP when
PyTorch was imported first, with that runtime's long spin, and a pool call right after a
two-thread product waited for the core OpenBLAS's polling worker held. These tests check
that the pool is on by default and off with ``EMBER_NATIVE_SPLIT=0``, that it runs on an
OpenMP runtime of its own beside PyTorch's, that it declines while the BLAS workers poll,
and that results stay those of one thread either way.
"""

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel

pytest.importorskip("numba")

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def fresh_pool(monkeypatch, numba_backend):
    """The numba backend, the pool's lookup forgotten (and restored afterwards)."""
    monkeypatch.setattr(_kernels, "_pool", [])
    yield


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads, the load check off, the BLAS workers idle, no batch pieces wanted;
    restored afterwards."""
    old = ember.get_num_threads()
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    monkeypatch.setattr(_parallel, "_pieces_wanted_at", [-1e9])
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(old)


def _usable():
    return _kernels._pool_drivers() is not None


def test_pool_on_by_default(fresh_pool, monkeypatch):
    monkeypatch.delenv("EMBER_NATIVE_SPLIT", raising=False)
    if not _usable():
        pytest.skip("numba's pool cannot take split work here (workqueue layer)")
    assert _kernels._pool_drivers()[0].__name__.endswith("_numba_par")


def test_pool_off_with_env_zero(fresh_pool, monkeypatch):
    monkeypatch.setenv("EMBER_NATIVE_SPLIT", "0")
    assert _kernels._pool_drivers() is None


def test_native_split_declines_while_blas_workers_poll(two_threads):
    got = []
    _parallel._polling_until[0] = time.monotonic() + 60.0
    assert not _parallel.native_split(got.append, 100, 2)
    assert got == []
    _parallel._polling_until[0] = 0.0
    assert _parallel.native_split(got.append, 100, 2) and got == [2]


def _logits(m=256, n=1000, seed=0):
    return np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32) * 3


def test_kernels_same_bits_while_blas_workers_poll(two_threads, numba_backend, monkeypatch):
    x = _logits()
    t = np.random.default_rng(1).integers(0, 1000, 256)
    idle = (_kernels.softmax(x, 1), _kernels.cross_entropy_classes(x, t, -100))
    _parallel._polling_until[0] = time.monotonic() + 60.0
    polling = (_kernels.softmax(x, 1), _kernels.cross_entropy_classes(x, t, -100))
    monkeypatch.setattr(_parallel, "native_split", lambda *a, **k: False)
    monkeypatch.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
    one = (_kernels.softmax(x, 1), _kernels.cross_entropy_classes(x, t, -100))
    for a, b, c in zip(idle, polling, one):
        for u, v, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (a, b, c))):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
            np.testing.assert_array_equal(np.asarray(u), np.asarray(w))


def test_product_then_softmax_leaves_pool_for_one_thread(two_threads, numba_backend,
                                                         monkeypatch):
    from ember._kernels import _blas

    if not _usable() or not _parallel._blas_controllers():
        pytest.skip("no pool or no threadpoolctl here")
    ran = []
    native = _parallel.native_split

    def counted(fn, size, min_size=_parallel.MIN_ELEMENTS):
        done = native(fn, size, min_size)
        ran.append(done)
        return done

    monkeypatch.setattr(_parallel, "native_split", counted)
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])  # the product on NumPy's (polling) BLAS
    monkeypatch.setattr(_parallel, "BLAS_POLL_S", 0.12)  # (a BLAS whose workers poll long)
    a = np.ones((512, 512), np.float32)
    _blas.matmul(a, a)  # large enough for OpenBLAS's two threads: its workers now poll
    x = _logits()
    got = _kernels.softmax(x, 1)
    assert ran == [False]
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    assert np.array_equal(_kernels.softmax(x, 1), got) and ran == [False, True]


_PROBE = """
import os, sys
import torch
torch.set_num_threads(2)
(torch.rand(1 << 22) * 2).exp().sum()  # PyTorch's OpenMP workers exist now
import numpy as np, ember
from ember import _kernels, _parallel
_kernels.set_backend("numba")
if {old!r}:  # session 22's load: numba's default import
    from ember._kernels import _numba_par
    _numba_par._load_omp_module = lambda: None
_parallel.contended = lambda: False
_parallel._polling_until[0] = 0.0
ember.set_num_threads(2)
tasks = lambda: len(os.listdir("/proc/self/task"))
before = tasks()
if _kernels._pool_drivers() is None:  # (loads the pool and launches it once)
    print("skip")
    sys.exit(0)
ran = []
native = _parallel.native_split
def counted(*a, **k):
    ran.append(native(*a, **k))
    return ran[-1]
_parallel.native_split = counted
_kernels.softmax(np.ones((256, 1000), np.float32), 1)
assert ran == [True], ran
print(tasks() - before)
"""


def _new_threads(old):
    pytest.importorskip("torch")
    if not os.path.isdir("/proc/self/task") or not hasattr(os, "RTLD_DEEPBIND"):
        pytest.skip("needs Linux with glibc")
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("EMBER_NATIVE_SPLIT", None)
    env.pop("NUMBA_THREADING_LAYER", None)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(_PROBE.format(old=old))],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout.split()[-1]
    if out == "skip":
        pytest.skip("numba's pool cannot take split work here")
    return int(out)


def test_pool_runs_on_its_own_openmp_beside_torch():
    # PyTorch's GNU OpenMP in the global scope would otherwise take numba's calls: its
    # worker thread would run the pool's piece, and no thread would be started
    assert _new_threads(old=False) == 1


def test_default_import_shares_torchs_openmp():
    # the cause this session found, kept as a check that the test above can tell the two
    # apart: numba imported as usual binds to PyTorch's runtime and starts no thread
    assert _new_threads(old=True) == 0


def test_softmax_matches_torch_on_pool(two_threads, numba_backend):
    torch = pytest.importorskip("torch")
    x = _logits(300, 1000, 5)
    got = _kernels.softmax(x, 1)
    np.testing.assert_allclose(got, torch.softmax(torch.from_numpy(x), 1).numpy(),
                               rtol=1e-5, atol=1e-6)
