"""Regressions for bug classes a random differential run found with the compiled (numba)
kernels on: log-softmax and cross entropy folding ``(x - max) - log(sum)`` into ``x - (max +
log(sum))`` (NOTE [ Log-softmax subtracts twice ]), layer norm's mean through a rounded
``1/n``, float16/bfloat16 softmax and NLL losses accumulated in their own precision (NOTE
[ Half-precision rows in float32 ]), an ignored target's loss taking its row's nan or inf,
and class weights of another dtype than the scores. Each case runs on both kernel backends
(the numba one skips without numba) and agrees with torch; the expressions run with ``T =
ember`` and ``T = torch``."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.differential.expressions import agree as _agree

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


@pytest.fixture(params=["numba", "numpy"])
def backend(request, monkeypatch):
    """Each kernel backend in turn, on two threads of a machine taken as quiet (so the
    row kernels' split runs where a call is large enough), restored afterwards."""
    if request.param == "numba":
        pytest.importorskip("numba")
    from ember import _kernels, _parallel

    monkeypatch.setattr(_parallel, "contended", lambda: False)
    threads = ember.get_num_threads()
    ember.set_num_threads(2)
    old = _kernels.set_backend(request.param)
    yield request.param
    _kernels.set_backend(old)
    ember.set_num_threads(threads)


def _both(fn, *arrays, dtype="float32"):
    """``fn(T, *tensors)`` for ember and torch from the same float64 arrays in ``dtype``;
    returns the two results (tensors or tuples of them) as float64 NumPy arrays."""
    import torch

    out = []
    for T in (ember, torch):
        ts = [T.tensor(a, dtype=T.float64).to(getattr(T, dtype)) for a in arrays]
        r = fn(T, *ts)
        rs = r if isinstance(r, tuple) else (r,)
        out.append([x.detach().to(T.float64).numpy() for x in rs])
    return out


def _close(e, t, rtol, atol=0.0):
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _grad_of(fn):
    """``fn``'s output and its input's gradient for ``sum(out * w)`` with a fixed ``w``."""
    def run(T, x, *rest):
        x = x.detach().requires_grad_()
        y = fn(T, x, *rest)
        w = T.arange(y.numel(), dtype=y.dtype).reshape(y.shape) % 5 - 2
        (y * w).sum().backward()
        return y, x.grad
    return run


# -- log-softmax and cross entropy of rows with a large maximum ------------------------------

def _big_max_rows(m, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n)) * 3
    x[::3, :2] = 1e30   # two tied maxima far from the rest: log(sum) = log 2 must survive
    x[1::3, 0] = -2e35
    x[2::3, 1] = 3e4
    return x


@pytest.mark.parametrize("shape", [(6, 3), (9, 40), (4000, 40)])  # last: split over threads
def test_log_softmax_keeps_log_sum_beside_a_large_max(backend, shape):
    x = _big_max_rows(*shape)
    e, t = _both(_grad_of(lambda T, a: T.log_softmax(a, 1)), x)
    _close(e, t, rtol=1e-5, atol=1e-5)
    assert np.allclose(e[0][0, :2], -np.log(2), rtol=1e-6)


@pytest.mark.parametrize("shape", [(6, 3), (4000, 40)])
@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_cross_entropy_loss_beside_a_large_max(backend, shape, reduction):
    x = _big_max_rows(*shape)
    target = np.arange(shape[0]) % 2   # the tied maximum's class on every third row

    def ce(T, a, tg):
        return T.nn.functional.cross_entropy(a, tg.long(), reduction=reduction)

    e, t = _both(_grad_of(ce), x, target)
    _close(e, t, rtol=2e-5, atol=1e-5)
    if reduction == "none":
        assert np.allclose(e[0][::3], np.log(2), rtol=1e-6)


def test_cross_entropy_probabilities_and_smoothing_beside_a_large_max(backend):
    x = _big_max_rows(300, 20)
    p = np.random.default_rng(1).random((300, 20))
    p /= p.sum(1, keepdims=True)
    e, t = _both(_grad_of(lambda T, a, q: T.nn.functional.cross_entropy(a, q)), x, p)
    _close(e, t, rtol=2e-5, atol=1e-5)
    target = np.arange(300) % 20

    def smoothed(T, a, tg):
        return T.nn.functional.cross_entropy(a, tg.long(), label_smoothing=1.0, reduction="sum")

    e, t = _both(_grad_of(smoothed), x, target)
    _close(e, t, rtol=2e-5, atol=1e-4)


# -- layer norm far from zero ----------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (7, 33)])
def test_layer_norm_mean_is_divided_not_scaled(backend, shape):
    # rows near 1000 (spacing 6e-5): a mean through a rounded 1/3 moved outputs by 1e-3
    x = np.float32(1000) + np.random.default_rng(2).random(shape).astype(np.float32)
    e, t = _both(lambda T, a: T.native_layer_norm(a, (shape[1],), None, None, 0.1), x)
    _close(e[1:2], t[1:2], rtol=1e-7)           # the mean
    _close(e[2:], t[2:], rtol=1e-4)             # rstd (torch's variance sums otherwise)
    _close(e[:1], t[:1], rtol=2e-4, atol=2e-4)


# -- half precision softmax and losses --------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("log", [False, True])
def test_half_softmax_sums_in_float32(backend, dtype, dim, log):
    x = np.random.default_rng(3).standard_normal((4096, 8)).astype(np.float32)
    fn = (lambda T, a: T.log_softmax(a, dim)) if log else (lambda T, a: T.softmax(a, dim))
    e, t = _both(fn, x, dtype=dtype)
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)
    _close(e, t, rtol=ulp, atol=ulp * (8 if log else 1e-3))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_half_losses_sum_in_float32(backend, dtype, loss):
    rng = np.random.default_rng(4)
    x = -rng.random((13107, 5)) * 4
    target = rng.integers(0, 5, 13107)
    weight = rng.random(5) + 0.5

    def fn(T, a, tg, w):
        return getattr(T.nn.functional, loss)(a, tg.long(), weight=w)

    e, t = _both(fn, x, target, weight, dtype=dtype)
    # torch's own half sums round a little on the way (its float16 sum is 30496, the exact
    # one 30464): a few ulps apart, where sums in the low precision were off by 40x
    _close(e, t, rtol=4 * 2.0 ** (-10 if dtype == "float16" else -7))


# -- ignored targets and weights --------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_an_ignored_row_loses_nothing_whatever_its_values(backend, reduction, smoothing):
    x = "T.tensor([[inf, 1., 0.5], [nan, 2., 0.], [0.5, -inf, 1.], [1., 2., 3.]])"
    tg = "T.tensor([0, 1, -100, 2])"
    if smoothing == 0:
        _agree(f"F.nll_loss({x}, T.tensor([0, -100, 1, 2]), reduction={reduction!r})")
        _agree(f"F.nll_loss({x}, T.tensor([-100, -100, 1, 2]), reduction={reduction!r})")
    _agree(f"F.cross_entropy({x}[2:], {tg}[2:], reduction={reduction!r}, "
           f"label_smoothing={smoothing})", exact=False)
    _agree(f"F.cross_entropy({x}[[3, 1]], T.tensor([2, 5]) * 0 + T.tensor([1, -100]), "
           f"reduction={reduction!r}, label_smoothing={smoothing})", exact=False)


def test_every_target_ignored_with_smoothing_has_zero_gradient(backend):
    import torch

    grads = []
    for T in (ember, torch):
        x = T.tensor([[0.5, -1.0, 2.0]], requires_grad=True)
        loss = T.nn.functional.cross_entropy(x, T.tensor([-100]), label_smoothing=0.1)
        loss.backward()
        grads.append((loss.item(), x.grad.tolist()))
    assert np.isnan(grads[0][0]) and np.isnan(grads[1][0])
    assert grads[0][1] == grads[1][1] == [[0.0, 0.0, 0.0]]


@pytest.mark.parametrize("expr", [
    "F.nll_loss(T.randn(3, 4), T.tensor([0, 1, 2]), weight=T.ones(4, dtype=T.float64))",
    "F.nll_loss(T.randn(3, 4, dtype=T.bfloat16), T.tensor([0, 1, 2]), weight=T.ones(4))",
    "F.nll_loss(T.randn(3), T.tensor(0), weight=T.ones(3, dtype=T.float64))",
    "F.cross_entropy(T.randn(3, 4), T.tensor([0, 1, 2]), weight=T.ones(4, dtype=T.float16))",
    "F.cross_entropy(T.randn(3, 4), T.tensor([0, 1, 2]), weight=T.ones(4, dtype=T.float64), "
    "label_smoothing=0.1)",
])
def test_class_weights_of_another_dtype_are_refused(expr):
    _agree(expr)


@pytest.mark.parametrize("wdtype", ["float64", "bfloat16"])
def test_probability_targets_still_promote_weights(wdtype):
    _agree(f"F.cross_entropy(T.tensor([[1., 2.], [0.5, -1.]]), T.tensor([[0.3, 0.7], [1., 0.]]), "
           f"weight=T.tensor([0.5, 2.], dtype=T.{wdtype}))", exact=False)
