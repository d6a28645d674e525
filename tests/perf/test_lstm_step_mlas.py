"""An LSTM layer's per-step products on MLAS (NOTE [ LSTM step products on MLAS ] in
ember/_ops/nn_rnn.py): values and gradients against the NumPy path's and PyTorch's, with and
without a projection, a reverse direction, given states, and the path taken only where MLAS
is chosen."""

import numpy as np
import pytest

import ember
from ember._kernels import _mlas
from ember._ops import nn_rnn

ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def mlas_on(monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [ort])


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
    monkeypatch.setattr(nn_rnn, "_STEP_PACK_MIN", [0 if packed else 1 << 30])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 12, 48)).astype(np.float32)
    dirs = 2 if kw.get("bidirectional") else 1
    p = kw.get("proj_size", 64)
    steps, batch = (12, 7) if kw.get("batch_first") else (7, 12)
    h0c0 = None
    if given_state:
        h0c0 = (rng.standard_normal((kw["num_layers"] * dirs, batch, p)).astype(np.float32),
                rng.standard_normal((kw["num_layers"] * dirs, batch, 64)).astype(np.float32))
    calls = []
    real = nn_rnn._StepProduct.__call__
    monkeypatch.setattr(nn_rnn._StepProduct, "__call__",
                        lambda self, a: calls.append(1) or real(self, a))
    got = _grads(ember, _make(ember, kw), x, h0c0)
    # every step of every layer and direction, forward and backward, went through MLAS
    assert len(calls) == 2 * steps * kw["num_layers"] * dirs
    monkeypatch.setattr(nn_rnn, "_STEP_ON_MLAS", [False])
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
    assert nn_rnn._step_product(np, np.dtype(np.float32), np.ones((4, 8), np.float32),
                                np.empty((2, 8), np.float32)) is None


def test_step_products_only_for_float32_numpy(mlas_on):
    w, out = np.ones((4, 8)), np.empty((2, 8))
    assert nn_rnn._step_product(np, np.dtype(np.float64), w, out) is None


@pytest.mark.parametrize("steps", [64, 2])
def test_step_product_writes_bound_result(mlas_on, steps):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((256, 1024)).astype(np.float32)
    out = np.full((32, 1024), np.nan, np.float32)
    prod = nn_rnn._step_product(np, np.dtype(np.float32), w.T.T, out, steps)
    for _ in range(3):  # each call rebinds only the left operand
        a = rng.standard_normal((32, 256)).astype(np.float32)
        prod(a)
        np.testing.assert_allclose(out, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    # a transposed (Fortran-ordered) weight is made contiguous once
    prod = nn_rnn._step_product(np, np.dtype(np.float32), np.asfortranarray(w), out, steps)
    prod(a)
    np.testing.assert_allclose(out, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
