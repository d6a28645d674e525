"""The fused LSTM layer's steps: the BLAS held at one thread once for each whole loop of
per-step products on an oversubscribed machine (NOTE [ GEMM threads by shape ] in
ember/_kernels/_blas.py), and the numba step kernels (NOTE [ Fused LSTM layer steps ] in
ember/_ops/nn_rnn.py); results equal the plain path's bit for bit (float32 steps, which
run a tanh of their own: to float32 rounding)."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._ops import _lstm_mlas, nn_rnn


@pytest.fixture(autouse=True)
def steps_on_numpy(monkeypatch):
    """The per-step products on NumPy's BLAS, as these tests' paths run them, even where
    MLAS is ember's float32 engine (NOTE [ LSTM step products on MLAS ] in _lstm_mlas.py)."""
    monkeypatch.setattr(_lstm_mlas, "STEP_ON_MLAS", [False])



def _blas_count():
    return _parallel._blas_controllers()[0].get_num_threads()


@pytest.fixture
def two_threads(monkeypatch):
    pytest.importorskip("threadpoolctl")
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    # the holds counted here are NumPy's BLAS's: products on MLAS (NOTE [ Products past a
    # pinned OpenBLAS ]) need none
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _run(dtype=ember.float32, **kw):
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(64, 128, num_layers=1, **kw).to(dtype)
    x = ember.randn(5, 16, 64, dtype=dtype, requires_grad=True)
    out, (h, c) = lstm(x)
    (out.sum() + (c * c).sum()).backward()
    return [out.detach().numpy(), h.detach().numpy(), c.detach().numpy(), x.grad.numpy()] + \
        [p.grad.numpy() for p in lstm.parameters()]


def test_lstm_layer_one_hold_per_loop_when_contended(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: True)
    # every product on NumPy's BLAS, whose holds are counted (none on MLAS)
    from ember._kernels import _mlas

    monkeypatch.setattr(_mlas, "_state", [False])
    seen = []
    real = np.matmul

    def spy(a, b, **kw):
        if a.shape == (16, 128) or a.shape == (16, 512):  # the per-step products
            seen.append(_blas_count())
        return real(a, b, **kw)

    holds = []
    real_hold = _parallel._hold_blas
    monkeypatch.setattr(_parallel, "_hold_blas", lambda: holds.append(1) or real_hold())
    monkeypatch.setattr(nn_rnn.np, "matmul", spy)
    _run()
    assert seen and set(seen) == {1}
    # one for the forward loop and one for the backward loop (not one per step), and one for
    # each whole-sequence product _blas.matmul holds itself when contended: the input
    # projection, the input's gradient and the two weight gradients
    assert len(holds) == 2 + 4
    assert _blas_count() == 2


def test_lstm_layer_same_results_held_or_not(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    free = _run()
    monkeypatch.setattr(_parallel, "contended", lambda: True)
    held = _run()
    # (same values up to rounding: OpenBLAS may round a product differently at one thread
    # and at two, as its Haswell kernels on AMD EPYC do)
    for a, b in zip(free, held):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"dtype": ember.float64}, {"proj_size": 32},
                                {"bidirectional": True}])
def test_lstm_numba_steps_equal_numpy_steps(numba_backend, monkeypatch, kw):
    taken = []
    real = nn_rnn._step_kernels
    monkeypatch.setattr(nn_rnn, "_step_kernels", lambda xp, dt: taken.append(1) or real(xp, dt))
    fused = _run(**kw)
    assert taken and real(np, np.dtype(np.float32)) is not None
    monkeypatch.setattr(nn_rnn, "_step_kernels", lambda xp, dt: None)
    plain = _run(**kw)
    for a, b in zip(fused, plain):
        if kw.get("dtype") == ember.float64:
            np.testing.assert_array_equal(a, b)
        else:  # float32 steps run a tanh of their own (NOTE [ A float32 tanh for the LSTM
            # steps ]): within 1 ulp of NumPy's, carried through the recurrence
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_lstm_numpy_backend_takes_no_step_kernels():
    from ember import _kernels

    old = _kernels.set_backend("numpy")
    try:
        assert nn_rnn._step_kernels(np, np.dtype(np.float32)) is None
    finally:
        _kernels.set_backend(old)
    assert nn_rnn._step_kernels(np, np.dtype(np.float16)) is None
