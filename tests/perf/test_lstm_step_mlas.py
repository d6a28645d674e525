"""An LSTM layer's per-step products on MLAS (NOTE [ LSTM step products on MLAS ] in
ember/_ops/_lstm_mlas.py): values and gradients against the NumPy path's and PyTorch's, with
and without a projection, a reverse direction, given states, and the path taken only where
MLAS is chosen; one packing per layer serving its forward and its backward."""

import numpy as np
import pytest

import ember
from ember._kernels import _mlas
from ember._ops import _lstm_mlas, nn_rnn

ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def mlas_on(monkeypatch):
    # MLAS chosen, and the small layers below take its step products whatever their size
    # (NOTE [ Small LSTMs keep NumPy's step products ]: test_small_layers_keep_numpy)
    monkeypatch.setattr(_mlas, "_state", [ort])
    monkeypatch.setattr(_lstm_mlas, "STEP_MIN_WORK", [0])
    monkeypatch.setattr(_lstm_mlas, "STEP_PACK_MIN_WORK", [0])


def _grads(fw, lstm, x, h0c0):
    x = fw.tensor(x, requires_grad=True)
    state = None if h0c0 is None else tuple(fw.tensor(s, requires_grad=True) for s in h0c0)
    out, (h, c) = lstm(x, state)
    (out.sum() + (out * out).sum() + (h * h).sum() + (c * c).sum()).backward()
    got = [out, h, c, x.grad] + [p.grad for p in lstm.parameters()]
    if state is not None:
        got += [s.grad for s in state]
    return [t.detach().numpy().astype(np.float64) for t in got]


def _make(fw, kw, seed=0):
    lstm = fw.nn.LSTM(48, 64, **kw)
    rng = np.random.default_rng(seed)
    with fw.no_grad():
        for p in lstm.parameters():
            p.copy_(fw.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return lstm


CASES = [dict(num_layers=2), dict(num_layers=1, bidirectional=True),
         dict(num_layers=1, proj_size=24), dict(num_layers=2, batch_first=True, bias=False)]


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("given_state", [False, True])
@pytest.mark.parametrize("packed", [True, False])
def test_step_products_on_mlas_match_numpy_path(mlas_on, monkeypatch, kw, given_state, packed):
    # the weight packed in a session per loop, or bound to the shared session per product
    monkeypatch.setattr(_lstm_mlas, "STEP_PACK_MIN", [0 if packed else 1 << 30])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 12, 48)).astype(np.float32)
    dirs = 2 if kw.get("bidirectional") else 1
    p = kw.get("proj_size", 64)
    steps, batch = (12, 7) if kw.get("batch_first") else (7, 12)
    h0c0 = None
    if given_state:
        h0c0 = (rng.standard_normal((kw["num_layers"] * dirs, batch, p)).astype(np.float32),
                rng.standard_normal((kw["num_layers"] * dirs, batch, 64)).astype(np.float32))
    calls, made = [], []
    real = _lstm_mlas.StepProduct.__call__
    monkeypatch.setattr(_lstm_mlas.StepProduct, "__call__",
                        lambda self, a: calls.append(1) or real(self, a))
    real_init = _lstm_mlas.RecurrentWeights.__init__
    monkeypatch.setattr(_lstm_mlas.RecurrentWeights, "__init__",
                        lambda self, *a: made.append(1) or real_init(self, *a))
    got = _grads(ember, _make(ember, kw), x, h0c0)
    # every step of every layer and direction, forward and backward, went through MLAS
    assert len(calls) == 2 * steps * kw["num_layers"] * dirs
    # one weight packing per layer and direction, its backward's included (the shared
    # sessions' weight bindings: one per loop)
    assert len(made) == kw["num_layers"] * dirs * (1 if packed else 2)
    monkeypatch.setattr(_lstm_mlas, "STEP_ON_MLAS", [False])
    want = _grads(ember, _make(ember, kw), x, h0c0)
    assert len(calls) == 2 * steps * kw["num_layers"] * dirs
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    torch = pytest.importorskip("torch")
    ref = _grads(torch, _make(torch, kw), x, h0c0)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)


def test_step_products_stay_on_numpy_without_mlas(monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [False])
    assert _lstm_mlas.recurrent_weights(np, np.dtype(np.float32),
                                        np.ones((8, 4), np.float32), 64) is None


def test_step_products_only_for_float32_numpy(mlas_on):
    assert _lstm_mlas.recurrent_weights(np, np.dtype(np.float64), np.ones((8, 4)), 64) is None


@pytest.mark.parametrize("steps", [64, 2])
def test_step_products_write_bound_results(mlas_on, steps):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((1024, 256)).astype(np.float32)   # w_hh (4H, H)
    weights = _lstm_mlas.recurrent_weights(np, np.dtype(np.float32), w, steps)
    assert weights.packed == (steps >= _lstm_mlas.STEP_PACK_MIN[0])
    rec = np.full((32, 1024), np.nan, np.float32)
    dh = np.full((32, 256), np.nan, np.float32)
    forward, backward = weights.product(False, rec), weights.product(True, dh)
    for _ in range(3):  # each call rebinds only the left operand
        h = rng.standard_normal((32, 256)).astype(np.float32)
        d = rng.standard_normal((32, 1024)).astype(np.float32)
        forward(h)
        backward(d)
        np.testing.assert_allclose(rec, h.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(dh, d.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    # a weight in another layout is made contiguous once
    weights = _lstm_mlas.recurrent_weights(np, np.dtype(np.float32), np.asfortranarray(w),
                                           steps)
    weights.product(False, rec)(h)
    np.testing.assert_allclose(rec, h.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-3)


def test_backward_takes_the_forwards_packing_once(mlas_on):
    w = np.ones((64, 16), np.float32)
    saved = np.empty((3, 2, 64), np.float32)
    weights = _lstm_mlas.recurrent_weights(np, np.dtype(np.float32), w, 64)
    with ember.no_grad():  # no backward can follow: nothing kept
        _lstm_mlas.leave_for_backward(weights, saved)
    assert _lstm_mlas._HANDOFF.take(saved, w) is None
    _lstm_mlas.leave_for_backward(weights, saved)
    assert _lstm_mlas._HANDOFF.take(saved, w.copy()) is None   # made from another weight
    assert _lstm_mlas.recurrent_weights(np, np.dtype(np.float32), w, 64, saved=saved) \
        is weights
    # taken once: a second backward (retained graph) packs again
    assert _lstm_mlas._HANDOFF.take(saved, w) is None


def test_handoff_keeps_the_newest_and_leaves_with_the_saved_array(mlas_on):
    handoff = _lstm_mlas._Handoff(2)
    w = np.ones((64, 16), np.float32)
    weights = _lstm_mlas.RecurrentWeights(ort, w, 1, False)
    saved = [np.empty(4, np.float32) for _ in range(3)]
    for s in saved:
        handoff.put(s, weights)
    assert handoff.take(saved[0], w) is None   # pushed out by the newer two
    assert handoff.take(saved[2], w) is weights
    del saved[1]
    assert not handoff._entries


def test_step_products_on_mlas_without_the_numba_step_kernels(mlas_on, monkeypatch):
    # the NumPy step path scales the unscaled product and adds the bias itself
    monkeypatch.setattr(nn_rnn, "_step_kernels", lambda xp, dt: None)
    monkeypatch.setattr(_lstm_mlas, "STEP_PACK_MIN", [0])
    kw = dict(num_layers=2)
    x = np.random.default_rng(3).standard_normal((7, 12, 48)).astype(np.float32)
    calls = []
    real = _lstm_mlas.StepProduct.__call__
    monkeypatch.setattr(_lstm_mlas.StepProduct, "__call__",
                        lambda self, a: calls.append(1) or real(self, a))
    got = _grads(ember, _make(ember, kw), x, None)
    assert len(calls) == 2 * 7 * 2
    monkeypatch.setattr(_lstm_mlas, "STEP_ON_MLAS", [False])
    want = _grads(ember, _make(ember, kw), x, None)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("batch,hidden,steps,on,packed", [
    (4, 64, 16, False, False),       # 2**16 multiply-adds a product: NumPy's
    (16, 128, 32, True, False),      # 2**20: MLAS, the loop too short to pack
    (32, 256, 64, True, True),       # the bench's: packed
])
def test_small_layers_keep_numpy(monkeypatch, batch, hidden, steps, on, packed):
    monkeypatch.setattr(_mlas, "_state", [ort])
    w = np.ones((4 * hidden, hidden), np.float32)
    assert _lstm_mlas.steps_on_mlas(batch, 4 * hidden, hidden) == on
    weights = _lstm_mlas.recurrent_weights(np, np.dtype(np.float32), w, steps, batch=batch)
    assert (weights is not None) == on
    if on:
        assert weights.packed == packed
    # a small layer's values and gradients are those of the NumPy path
    calls = []
    real = _lstm_mlas.StepProduct.__call__
    monkeypatch.setattr(_lstm_mlas.StepProduct, "__call__",
                        lambda self, a: calls.append(1) or real(self, a))
    lstm = _make(ember, dict(num_layers=2))
    x = np.random.default_rng(0).standard_normal((5, 3, 48)).astype(np.float32)
    got = _grads(ember, lstm, x, None)
    assert not calls
    monkeypatch.setattr(_lstm_mlas, "STEP_ON_MLAS", [False])
    for g, w in zip(got, _grads(ember, _make(ember, dict(num_layers=2)), x, None)):
        np.testing.assert_array_equal(g, w)
