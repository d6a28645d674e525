"""Issue 22, session 22 (helper h22): row and block kernels on numba's own thread pool.

Softmax, log-softmax, their backward, cross entropy (forward and backward) and the blocked
float sums run their split on numba's pool where it can take them (NOTE [ A hand-over
without the GIL ] in ember/_parallel.py). These tests check that every such kernel gives the
same bits as the one-thread path and as the relay's split, that gradients through the ops
match, that a forked child falls back instead of launching the pool, and (where PyTorch is
installed) the values against PyTorch's.
"""

import os

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from ember._kernels import _reduce

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _pool(pool_on):
    """Every test here on numba's pool (``pool_on`` in conftest.py)."""
    yield


def _paths(fn, monkeypatch):
    """``fn()`` on numba's pool, through the relay, and on one thread; asserts the pool ran."""
    ran = []
    native = _parallel.native_split

    def counted(f, size, min_size=_parallel.MIN_ELEMENTS):
        done = native(f, size, min_size)
        ran.append(done)
        return done

    with monkeypatch.context() as m:
        m.setattr(_parallel, "native_split", counted)
        pool = fn()
    assert any(ran), "the pool did not take the call"
    with monkeypatch.context() as m:
        m.setattr(_parallel, "native_split", lambda *a, **k: False)
        relay = fn()
        m.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
        one = fn()
    return pool, relay, one


def _same(*results):
    first = results[0]
    for r in results[1:]:
        for a, b in zip(first if isinstance(first, tuple) else (first,),
                        r if isinstance(r, tuple) else (r,)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _logits(m=256, n=1000, seed=0):
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32) * 3
    x[5, 7] = np.inf  # rows with non-finite values take the general exp
    x[9, :] = -np.inf
    x[11, 3] = np.nan
    return x


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_pool_same_bits(two_threads, monkeypatch, log):
    x = _logits()
    _same(*_paths(lambda: _kernels.softmax(x, 1, log=log), monkeypatch))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_pool_same_bits(two_threads, monkeypatch, log):
    y = _kernels.softmax(_logits(300, 1000, 1), 1, log=log)
    g = np.random.default_rng(2).standard_normal(y.shape).astype(np.float32)
    _same(*_paths(lambda: _kernels.softmax_backward(g, y, 1, log=log), monkeypatch))


def test_cross_entropy_pool_same_bits(two_threads, monkeypatch):
    x = _logits(257, 1000, 3)
    t = np.random.default_rng(4).integers(0, 1000, 257)
    w = np.random.default_rng(5).random(257).astype(np.float32)
    _same(*_paths(lambda: _kernels.cross_entropy(x, t, w), monkeypatch))


def test_cross_entropy_classes_pool_same_bits_and_first_bad_row(two_threads, monkeypatch):
    x = _logits(256, 1000, 6)
    t = np.random.default_rng(7).integers(0, 1000, 256)
    t[3] = -100
    _same(*_paths(lambda: _kernels.cross_entropy_classes(x, t, -100), monkeypatch))
    t[200] = 5000  # in the second chunk, then one in the first: the first row is reported
    assert _paths(lambda: _kernels.cross_entropy_classes(x, t, -100), monkeypatch)[0][3] == 200
    t[40] = -7
    results = _paths(lambda: _kernels.cross_entropy_classes(x, t, -100), monkeypatch)
    assert [r[3] for r in results] == [40, 40, 40]


def test_cross_entropy_backward_pool_same_bits(two_threads, monkeypatch):
    p = _kernels.softmax(_logits(512, 1000, 8), 1)
    t = np.random.default_rng(9).integers(0, 1000, 512)
    s = np.random.default_rng(10).random(512).astype(np.float32)
    _same(*_paths(lambda: _kernels.cross_entropy_backward(p, t, s), monkeypatch))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1 << 22, (1 << 22) + 1237])
def test_float_sum_pool_same_bits(two_threads, monkeypatch, dtype, size):
    a = (np.random.default_rng(11).standard_normal(size) + 0.5).astype(dtype)
    pool, relay, one = _paths(lambda: _reduce.float_sum(a), monkeypatch)
    assert pool.dtype == dtype
    _same(pool, relay, one)


def test_row_sums_pool_same_bits(two_threads, monkeypatch):
    a = np.random.default_rng(12).standard_normal((1100, 1000)).astype(np.float32)
    _same(*_paths(lambda: _reduce.row_sums(a), monkeypatch))


def test_pool_off_with_env_zero(monkeypatch):
    # (on by default since session 23: tests/perf/test_session23_kernels.py)
    monkeypatch.setenv("EMBER_NATIVE_SPLIT", "0")
    monkeypatch.setattr(_kernels, "_pool", [])
    assert _kernels._pool_drivers() is None


def test_pool_declined_on_one_thread_and_in_pieces(monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert not _parallel.native_split(lambda n: None, 100, 2)
        ember.set_num_threads(2)
        monkeypatch.setattr(_parallel._piece, "busy", True, raising=False)
        assert not _parallel.native_split(lambda n: None, 100, 2)
        monkeypatch.setattr(_parallel._piece, "busy", False)
        got = []
        assert _parallel.native_split(got.append, 100, 2) and got == [2]
    finally:
        ember.set_num_threads(old)


def test_grads_through_ops_match_one_thread(two_threads, monkeypatch):
    x = _logits(256, 1000, 13)
    x[np.isnan(x) | np.isinf(x)] = 0.0
    t = np.random.default_rng(14).integers(0, 1000, 256)

    def run():
        a = ember.tensor(x, requires_grad=True)
        loss = ember.nn.functional.cross_entropy(a, ember.tensor(t))
        sm = ember.log_softmax(a, 1).exp().sum() + ember.softmax(a, 1)[:, 0].sum()
        (loss + sm).backward()
        return loss.detach().numpy(), a.grad.numpy()

    pool = run()
    with monkeypatch.context() as m:
        m.setattr(_parallel, "native_split", lambda *a, **k: False)
        m.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
        one = run()
    _same(pool, one)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_does_not_launch_the_pool(two_threads, tmp_path):
    x = _logits()
    want = _kernels.softmax(x, 1)  # the parent has launched the pool
    out = tmp_path / "child.npy"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            assert not _parallel.native_split(lambda n: None, 100, 2)
            np.save(out, _kernels.softmax(x, 1))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    np.testing.assert_array_equal(np.load(out), want)


def test_softmax_and_sum_match_torch(two_threads):
    torch = pytest.importorskip("torch")
    x = _logits()
    x[np.isnan(x) | np.isinf(x)] = 0.0
    got = _kernels.softmax(x, 1, log=True)
    np.testing.assert_allclose(got, torch.log_softmax(torch.from_numpy(x), 1).numpy(),
                               rtol=1e-5, atol=1e-5)
    a = np.random.default_rng(15).random(1 << 22).astype(np.float32)
    assert abs(float(_reduce.float_sum(a)) - float(torch.from_numpy(a).sum())) < 1e-5 * a.size
