"""Issue 22, helper h22a: the row kernels on threads and softmax's fused backward.

- ember's pool hands pieces to workers of its own (NOTE [ A relay for split work ] in
  ember/_parallel.py): pieces run, errors reach the caller, a split inside a split runs
  whole instead of waiting on itself.
- softmax, log-softmax, cross entropy and layer norm cut their rows over threads (NOTE
  [ Row kernels on threads ] in ember/_kernels/__init__.py): the split happens for large
  calls only, and gives one call's bits (layer norm's weight and bias gradients: the float64
  partial sums are added in another order, so within float32 rounding).
- softmax's and log-softmax's backward run one compiled pass per row where numba is
  installed (``ember._kernels.softmax_backward``), and the op-by-op formula otherwise or
  under ``create_graph``: both compared with each other and with PyTorch.
"""

import threading

import numpy as np
import pytest

import ember
from ember import _kernels, _parallel
from tests.conftest import spy_thread_splits


def _one_call(monkeypatch, fn):
    """``fn()`` with every split declined (the one-thread path)."""
    with monkeypatch.context() as m:
        m.setattr(_parallel, "split_on_threads", lambda *a, **k: False)
        return fn()


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------------------------
# the relay


def test_relay_runs_every_piece_once(threads):
    hits = np.zeros(1001, np.int64)
    callers = set()

    def fill(lo, hi):
        hits[lo:hi] += 1
        callers.add(threading.get_ident())

    assert _parallel.split_on_threads(fill, hits.size, min_size=1)
    assert (hits == 1).all()
    assert len(callers) == 2 and threading.get_ident() in callers
    assert threads == [True]


def test_relay_raises_a_pieces_error_and_stays_usable(threads):
    def bad(lo, hi):
        if lo == 0:  # the worker's piece
            raise ValueError("piece failed")

    with pytest.raises(ValueError, match="piece failed"):
        _parallel.split_on_threads(bad, 10, min_size=1)
    out = np.zeros(10)

    def fill(lo, hi):
        out[lo:hi] = 1

    assert _parallel.split_on_threads(fill, 10, min_size=1)  # no stale error raised here
    assert out.sum() == 10


def test_a_split_inside_a_split_runs_whole(threads):
    inner = []

    def outer(lo, hi):
        inner.append(_parallel.split_on_threads(lambda a, b: None, 10, min_size=1))

    assert _parallel.split_on_threads(outer, 2, min_size=1)
    assert inner == [False, False]  # the workers are taken: declined, not deadlocked


def test_relay_pieces_take_the_callers_numpy_error_settings(threads):
    def divide(lo, hi):
        np.ones(1) / np.zeros(1)

    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            _parallel.split_on_threads(divide, 2, min_size=1)
    with np.errstate(divide="ignore"):
        assert _parallel.split_on_threads(divide, 2, min_size=1)


# ------------------------------------------------------------------------------------------------
# row kernels on threads: one call's bits, and the split taken only when large


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_on_threads_give_one_calls_bits(numba_backend, threads, monkeypatch,
                                                     log):
    x = _rand(np.random.default_rng(0), 301, 1000)
    got = _kernels.softmax(x, 1, log)
    assert threads[-1] is True
    want = _one_call(monkeypatch, lambda: _kernels.softmax(x, 1, log))
    np.testing.assert_array_equal(got, want)


def test_small_softmax_stays_on_one_thread(numba_backend, threads):
    x = _rand(np.random.default_rng(0), 64, 1000)  # 64k elements: below _ROWS_SPLIT_EXP
    assert _kernels.softmax(x, 1) is not None
    assert True not in threads


def test_cross_entropy_rows_on_threads_give_one_calls_bits(numba_backend, threads,
                                                           monkeypatch):
    rng = np.random.default_rng(1)
    x = _rand(rng, 257, 1000)
    t = rng.integers(0, 1000, 257)
    w = rng.random(257).astype(np.float32)
    probs, losses = _kernels.cross_entropy(x, t, w)
    gx = _kernels.cross_entropy_backward(probs, t, w)
    assert threads == [True]  # the backward's cheaper rows split from _ROWS_SPLIT only
    p1, l1 = _one_call(monkeypatch, lambda: _kernels.cross_entropy(x, t, w))
    np.testing.assert_array_equal(probs, p1)
    np.testing.assert_array_equal(losses, l1)
    g1 = _one_call(monkeypatch, lambda: _kernels.cross_entropy_backward(p1, t, w))
    np.testing.assert_array_equal(gx, g1)


def test_cross_entropy_backward_splits_when_large(numba_backend, threads):
    rng = np.random.default_rng(2)
    probs = rng.random((300, 1000)).astype(np.float32)
    _kernels.cross_entropy_backward(probs, rng.integers(0, 1000, 300),
                                    np.ones(300, np.float32))
    assert threads == [True]


def test_layer_norm_rows_on_threads(numba_backend, threads, monkeypatch):
    rng = np.random.default_rng(3)
    x = _rand(rng, 8, 131, 256)   # 1048 rows: pieces of whole 64-row blocks, a short tail
    w, b, g = _rand(rng, 256), _rand(rng, 256), _rand(rng, 8, 131, 256)
    y, mean, rstd = _kernels.layer_norm(x, w, b, 1, 1e-5)
    gx, gw, gb = _kernels.layer_norm_backward(g, x, w, mean, rstd, 1)
    assert threads == [True, True]
    y1, m1, r1 = _one_call(monkeypatch, lambda: _kernels.layer_norm(x, w, b, 1, 1e-5))
    for got, want in ((y, y1), (mean, m1), (rstd, r1)):
        np.testing.assert_array_equal(got, want)
    gx1, gw1, gb1 = _one_call(monkeypatch,
                              lambda: _kernels.layer_norm_backward(g, x, w, m1, r1, 1))
    np.testing.assert_array_equal(gx, gx1)
    # the partial sums meet in another order: float64 reassociation, then float32 rounding
    np.testing.assert_allclose(gw, gw1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gb, gb1, rtol=1e-6, atol=1e-6)


def test_layer_norm_backward_without_weight_on_threads(numba_backend, threads, monkeypatch):
    rng = np.random.default_rng(4)
    x, g = _rand(rng, 1100, 256), _rand(rng, 1100, 256)
    _, mean, rstd = _kernels.layer_norm(x, None, None, 1, 1e-5)
    gx, gw, gb = _kernels.layer_norm_backward(g, x, None, mean, rstd, 1)
    assert gw is None and threads[-1] is True
    gx1, _, gb1 = _one_call(monkeypatch,
                            lambda: _kernels.layer_norm_backward(g, x, None, mean, rstd, 1))
    np.testing.assert_array_equal(gx, gx1)
    np.testing.assert_allclose(gb, gb1, rtol=1e-6, atol=1e-6)


def test_one_thread_runs_the_rows_whole(numba_backend, monkeypatch):
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        seen = spy_thread_splits(monkeypatch)
        x = _rand(np.random.default_rng(5), 300, 1000)
        _kernels.softmax(x, 1)
        assert seen == [False]
    finally:
        ember.set_num_threads(before)


# ------------------------------------------------------------------------------------------------
# softmax's and log-softmax's fused backward


def _grad(fn, x, g, dim):
    xe = ember.tensor(x, requires_grad=True)
    getattr(ember, fn)(xe, dim).backward(ember.tensor(g))
    return xe.grad.numpy()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(256, 1000), (3, 5, 17), (7,)])
def test_fused_softmax_backward_matches_the_formula(numba_backend, monkeypatch, fn, shape):
    rng = np.random.default_rng(6)
    x, g = _rand(rng, *shape), _rand(rng, *shape)
    calls = []
    real = _kernels.softmax_backward
    monkeypatch.setattr(_kernels, "softmax_backward",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    got = _grad(fn, x, g, -1)
    assert calls, "the fused backward was not taken"
    _kernels.set_backend("numpy")
    want = _grad(fn, x, g, -1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_fused_softmax_backward_matches_torch(numba_backend, fn):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x, g = _rand(rng, 300, 1000), _rand(rng, 300, 1000)
    got = _grad(fn, x, g, 1)
    xt = torch.tensor(x, requires_grad=True)
    getattr(torch, fn)(xt, 1).backward(torch.tensor(g))
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-5, atol=2e-6)


def test_softmax_backward_on_threads_gives_one_calls_bits(numba_backend, threads,
                                                          monkeypatch):
    rng = np.random.default_rng(8)
    y = _kernels.softmax(_rand(rng, 300, 1000), 1)
    g = _rand(rng, 300, 1000)
    for log in (False, True):
        yy = np.log(y) if log else y
        got = _kernels.softmax_backward(g, yy, 1, log)
        assert threads[-1] is True
        want = _one_call(monkeypatch, lambda: _kernels.softmax_backward(g, yy, 1, log))
        np.testing.assert_array_equal(got, want)


def test_softmax_backward_not_covered_gives_none(numba_backend):
    y = np.full((2, 4), 0.25, np.float32)
    assert _kernels.softmax_backward(np.ones((2, 4)), y, 1) is None           # float64 g
    assert _kernels.softmax_backward(np.ones((2, 4), np.float32), y, 0) is None  # not last
    assert _kernels.softmax_backward(np.ones((4,), np.float32), y, 1) is None  # shapes


def test_softmax_backward_other_dims_and_dtypes_keep_the_formula(numba_backend, monkeypatch):
    calls = []
    monkeypatch.setattr(_kernels, "softmax_backward", lambda *a, **k: calls.append(1))
    rng = np.random.default_rng(9)
    _grad("softmax", _rand(rng, 4, 6), _rand(rng, 4, 6), 0)              # not the last dim
    _grad("softmax", rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), 1)  # float64
    assert calls == []


def test_softmax_backward_without_numba_uses_the_formula(numpy_backend, monkeypatch):
    calls = []
    monkeypatch.setattr(_kernels, "softmax_backward", lambda *a, **k: calls.append(1))
    rng = np.random.default_rng(10)
    _grad("log_softmax", _rand(rng, 4, 6), _rand(rng, 4, 6), 1)
    assert calls == []


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_create_graph_keeps_the_differentiable_formula(numba_backend, fn):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = _rand(rng, 3, 7)
    xe = ember.tensor(x, requires_grad=True)
    y = getattr(ember, fn)(xe, 1)
    (gx,) = ember.autograd.grad((y * y).sum(), xe, create_graph=True)
    assert gx.grad_fn is not None
    (gg,) = ember.autograd.grad(gx.sum(), xe)
    xt = torch.tensor(x, requires_grad=True)
    yt = getattr(torch, fn)(xt, 1)
    (gxt,) = torch.autograd.grad((yt * yt).sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad(gxt.sum(), xt)
    np.testing.assert_allclose(gx.detach().numpy(), gxt.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# the shifted exp of the softmax rows (NOTE [ Shifted exp ] in ember/_kernels/_numba.py)


def test_shifted_exp_gives_the_general_exps_bits(numba_backend):
    numba = pytest.importorskip("numba")
    from ember._kernels import _numba as kernels

    @numba.njit
    def both(t, a, b):
        for j in range(t.size):
            a[j] = kernels._expf_shifted(t[j])
            b[j] = kernels._expf(t[j])

    # every 997th float32 bit pattern from -0.0 down to -inf: normal, denormal and
    # underflowing results
    t = np.arange(0x80000000, 0xFF800001, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
    t = np.concatenate([t, np.array([0.0, -0.0, -np.inf, -103.97, -104.0, -1e30], np.float32)])
    a, b = np.empty_like(t), np.empty_like(t)
    both(t, a, b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_with_non_finite_values_match_the_numpy_path(numba_backend, log):
    inf, nan = np.inf, np.nan
    x = np.array([[1, 2, 3, -inf], [inf, 1, 2, 3], [nan, 1, 2, 3], [-inf, -inf, -inf, -inf],
                  [inf, inf, 1, 2], [-inf, inf, 0, 1], [-1e30, 0, 1e30, 5],
                  [-200, 0, -150, -90]], np.float32)
    got = _kernels.softmax(x, 1, log)
    fn = ember.log_softmax if log else ember.softmax
    _kernels.set_backend("numpy")
    want = fn(ember.tensor(x), 1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    torch = pytest.importorskip("torch")
    t = (torch.log_softmax if log else torch.softmax)(torch.tensor(x), 1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(t))
    np.testing.assert_allclose(got, t, rtol=1e-6, atol=0)


def test_cross_entropy_rows_with_an_infinite_logit(numba_backend):
    x = np.array([[np.inf, 0, 1], [0, 1, 2], [-np.inf, 0, 1]], np.float32)
    t = np.array([1, 2, 0])
    probs, losses = _kernels.cross_entropy(x, t, np.ones(3, np.float32))
    assert np.isnan(probs[0]).all() and np.isnan(losses[0])
    assert losses[2] == np.inf and probs[2, 0] == 0
    torch = pytest.importorskip("torch")
    want = torch.nn.functional.cross_entropy(torch.tensor(x[1:]), torch.tensor(t[1:]),
                                             reduction="none").numpy()
    np.testing.assert_allclose(losses[1:], want, rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# the float32 tanh of the LSTM steps (NOTE [ A float32 tanh for the LSTM steps ] in
# ember/_kernels/_numba_rnn.py)


def test_lstm_tanh_within_one_ulp_over_the_float32_range(numba_backend):
    from ember._kernels import _numba_rnn

    x = np.arange(0, 1 << 32, 61, dtype=np.uint64).astype(np.uint32).view(np.float32)
    nan = np.isnan(x)
    out = np.empty_like(x)
    _numba_rnn.tanh_into(x, out)
    assert np.isnan(out[nan]).all()
    want = np.tanh(x[~nan].astype(np.float64)).astype(np.float32)
    d = np.abs(out[~nan].view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert d.max() <= 1
    assert (d > 0).mean() < 0.01
    special = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-40, 44.0, -9.0], np.float32)
    got = np.empty_like(special)
    _numba_rnn.tanh_into(special, got)
    np.testing.assert_array_equal(got, np.tanh(special))
    assert np.signbit(got[3])


def test_lstm_fused_forward_step_matches_the_numpy_ops(numba_backend):
    from ember._kernels import _numba_rnn

    rng = np.random.default_rng(12)
    b, h = 8, 32
    a0, rec = _rand(rng, b, 4 * h) * 3, _rand(rng, b, 4 * h)
    s = np.full((b, 4 * h), 0.5, np.float32)
    s[:, 2 * h:3 * h] = 1
    shift = np.where(s == 0.5, np.float32(0.5), np.float32(0))
    c_in = _rand(rng, b, h)
    a, c, tc, hh = a0.copy(), np.empty_like(c_in), np.empty_like(c_in), np.empty_like(c_in)
    _numba_rnn.lstm_step_forward(a, rec, s, shift, c_in, c, tc, hh)
    ref = np.tanh(a0 + rec) * s + shift
    i, f, g, o = ref[:, :h], ref[:, h:2 * h], ref[:, 2 * h:3 * h], ref[:, 3 * h:]
    c_want = f * c_in + i * g
    np.testing.assert_allclose(a, ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c, c_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tc, np.tanh(c_want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hh, o * np.tanh(c_want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("proj", [0, 16])
def test_lstm_float32_layer_with_fused_steps_matches_torch(numba_backend, proj):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    x = _rand(rng, 4, 12, 24)
    ember.manual_seed(0)
    le = ember.nn.LSTM(24, 32, num_layers=2, batch_first=True, proj_size=proj)
    lt = torch.nn.LSTM(24, 32, num_layers=2, batch_first=True, proj_size=proj)
    with torch.no_grad():
        for pe, pt in zip(le.parameters(), lt.parameters()):
            pt.copy_(torch.from_numpy(pe.detach().numpy()))
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    oe, (he, ce) = le(xe)
    ot, (ht, ct) = lt(xt)
    (oe.square().sum() + ce.sum()).backward()
    (ot.square().sum() + ct.sum()).backward()
    for got, want in ((oe, ot), (he, ht), (ce, ct), (xe.grad, xt.grad)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
    for pe, pt in zip(le.parameters(), lt.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-4)
