"""The fused LSTM layer's loops split by hidden units over two threads (NOTE [ LSTM steps
split by hidden units ] in ember/_ops/_lstm_units.py): values and every gradient those of the
one-core loop, the split taken only where it is meant to be, and a worker that fails
stopping the others instead of leaving them waiting."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._ops import _lstm_mlas, _lstm_units


@pytest.fixture(autouse=True)
def steps_on_numpy(monkeypatch):
    """The per-step products on NumPy's BLAS, as these tests' paths run them, even where
    MLAS is ember's float32 engine (NOTE [ LSTM step products on MLAS ] in _lstm_mlas.py)."""
    monkeypatch.setattr(_lstm_mlas, "STEP_ON_MLAS", [False])


@pytest.fixture
def split(numba_backend, monkeypatch):
    """Two threads, an idle machine as far as ember can tell, and no size threshold, so
    that even the tests' small layers take the split; yields the calls it made."""
    pytest.importorskip("threadpoolctl")
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    from ember._kernels import _numba_rnn_split

    if not _numba_rnn_split.blas_addresses(np.dtype(np.float32))[0]:
        pytest.skip("NumPy's BLAS has no 64-bit cblas_sgemm entry point")
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_lstm_units, "UNIT_SPLIT_MIN_WORK", 0)
    calls = []
    for name in ("forward", "backward"):
        real = getattr(_lstm_units, name)

        def spy(*args, _real=real, _name=name):
            ran = _real(*args)
            calls.append((_name, ran))
            return ran
        monkeypatch.setattr(_lstm_units, name, spy)
    yield calls
    ember.set_num_threads(before)


def _run(dtype=ember.float64, batch=5, steps=6, hidden=40, **kw):
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(24, hidden, num_layers=2, **kw).to(dtype)
    x = ember.randn(steps, batch, 24, dtype=dtype, requires_grad=True)
    h0 = ember.randn(lstm.num_layers * (2 if lstm.bidirectional else 1), batch,
                     kw.get("proj_size") or hidden, dtype=dtype, requires_grad=True)
    c0 = ember.randn(h0.shape[0], batch, hidden, dtype=dtype, requires_grad=True)
    out, (h, c) = lstm(x, (h0, c0))
    (out.sum() + (h * h).sum() + (c * c * c).sum()).backward()
    return [out.detach().numpy(), h.detach().numpy(), c.detach().numpy(), x.grad.numpy(),
            h0.grad.numpy(), c0.grad.numpy()] + [p.grad.numpy() for p in lstm.parameters()]


def _one_core(monkeypatch, **kw):
    monkeypatch.setattr(_lstm_units, "plan", lambda *a: None)
    try:
        return _run(**kw)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("kw", [{}, {"proj_size": 14}, {"bidirectional": True},
                                {"batch": 1}, {"batch": 3, "hidden": 37},
                                {"bias": False}])
def test_lstm_split_by_units_equals_one_core(split, monkeypatch, dtype, kw):
    kw = dict(kw, dtype=dtype)
    two = _run(**kw)
    assert split and all(ran for _, ran in split)
    assert {name for name, _ in split} == {"forward", "backward"}
    one = _one_core(monkeypatch, **kw)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == ember.float32 else dict(rtol=1e-12,
                                                                          atol=1e-13)
    for a, b in zip(two, one):
        np.testing.assert_allclose(a, b, **tol)


def test_lstm_split_float32_bit_for_bit(split, monkeypatch):
    # every product element is summed as in the whole product, and the step's arithmetic is
    # the one-core kernel's: the same bits (batch > 1; one row may take a GEMV path)
    two = _run(dtype=ember.float32, batch=4, hidden=64)
    assert split
    one = _one_core(monkeypatch, dtype=ember.float32, batch=4, hidden=64)
    for a, b in zip(two, one):
        np.testing.assert_array_equal(a, b)


def test_lstm_split_off_at_one_thread(split):
    ember.set_num_threads(1)
    _run()
    assert not split


def test_lstm_split_off_for_few_units(split):
    _run(hidden=2 * _lstm_units.UNIT_SPLIT_MIN_UNITS - 1)
    assert not split


def test_lstm_split_off_when_contended(split, monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: True)
    _run()
    assert not split


def test_lstm_split_off_below_its_work(split, monkeypatch):
    monkeypatch.setattr(_lstm_units, "UNIT_SPLIT_MIN_WORK", 5 * 4 * 40 * 40 + 1)
    _run()
    assert not split


def test_lstm_split_worker_failure_stops_the_others(split, monkeypatch):
    from ember._kernels import _numba_rnn_split

    real = _numba_rnn_split.forward_units

    def failing(gemm, yld, sync, k, *rest):
        if k == 0:
            raise MemoryError("worker 0")
        return real(gemm, yld, sync, k, *rest)

    monkeypatch.setattr(_numba_rnn_split, "forward_units", failing)
    with pytest.raises(MemoryError, match="worker 0"):
        _run()
