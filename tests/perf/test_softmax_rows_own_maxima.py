"""Issue 22, helper h22 (session 17): row maxima on integer keys inside the row kernels.

- ``_row_max`` takes the maximum of a float32 row as a vector maximum of ordered int32 keys
  (NOTE [ Row maxima on integer keys ] in ember/_kernels/_numba.py): NumPy's maximum for
  every row, NaN where the row holds one.
- softmax, log-softmax and cross entropy take every row's maximum in their compiled pass
  (NOTE [ Row maxima in the kernel ] in ember/_kernels/__init__.py): the same bits as the
  kernels fed NumPy's maxima (the path before), which ``_OWN_MAX_ROW = 0`` still runs.
"""

import numpy as np
import pytest

import ember
from ember import _kernels

_SPECIALS = (np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4028235e38, -3.4028235e38,
             1e-45, -1e-45, 1.1754942e-38)


def _nan_with_payload(sign, payload):
    bits = np.array([(0xFF800000 if sign else 0x7F800000) | payload], np.uint32)
    return bits.view(np.float32)[0]


def _rows_of(rng, n):
    """Rows of ``n`` float32 values: random ones, and ones with each special value at the
    start, the middle and the end, among random values or among -inf."""
    rows = [(rng.standard_normal(n) * 4).astype(np.float32) for _ in range(3)]
    rows += [np.full(n, v, np.float32) for v in (-np.inf, np.inf, 0.0, -0.0)]
    for k in sorted({0, n // 2, n - 1}):
        for v in _SPECIALS + (_nan_with_payload(0, 1), _nan_with_payload(1, 0x3FFFFF)):
            r = (rng.standard_normal(n) * 4).astype(np.float32)
            r[k] = v
            rows.append(r)
            r = np.full(n, -np.inf, np.float32)
            r[k] = v
            rows.append(r)
    return rows


@pytest.mark.parametrize("n", list(range(1, 34)) + [98, 257, 1000, 4099])
def test_row_max_on_keys_is_numpys_maximum(numba_backend, n):
    from numba import njit

    # compiled with the kernels' fast-math flags, which it is inlined under
    row_max = njit(fastmath=numba_backend._FM)(lambda x: numba_backend._row_max(x))
    for r in _rows_of(np.random.default_rng(n), n):
        got, want = row_max(r), np.maximum.reduce(r)
        if np.isnan(want):
            assert np.isnan(got)
        else:
            # the same value (of +0.0 and -0.0, either: NOTE [ Row maxima on integer keys ])
            assert got == want


def _inputs(c, m=64):
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((m, c)) * 4).astype(np.float32)
    x[1, 0] = np.inf
    x[2, -1] = -np.inf
    x[3, c // 2] = np.nan
    x[4] = -np.inf
    x[5] = 1e30
    x[6, ::2] = -np.inf
    x[7] = np.inf
    x[8, -1] = -np.nan
    x[9] = 0.0
    x[9, 0] = -0.0
    x[10, ::3] = 3.4028235e38
    return x


def _same(p, q):
    """The same bits, NaN's payload aside."""
    assert p.dtype == q.dtype and p.shape == q.shape
    nan = np.isnan(q)
    assert np.array_equal(np.isnan(p), nan)
    assert p[~nan].tobytes() == q[~nan].tobytes()


def _given_maxima(monkeypatch, f):
    """``f()`` with the kernels fed NumPy's row maxima (the path before)."""
    with monkeypatch.context() as m:
        m.setattr(_kernels, "_OWN_MAX_ROW", 0)
        return f()


@pytest.mark.parametrize("c", [1, 2, 7, 10, 16, 32, 98, 1000, 3001])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_own_maxima_give_the_given_maxima_bits(numba_backend, monkeypatch, c,
                                                            log):
    x = _inputs(c)
    with np.errstate(all="ignore"):
        own = _kernels.softmax(x, 1, log)
        given = _given_maxima(monkeypatch, lambda: _kernels.softmax(x, 1, log))
    _same(own, given)


@pytest.mark.parametrize("c", [1, 10, 98, 300, 1000])
def test_weighted_cross_entropy_own_maxima_give_the_given_maxima_bits(numba_backend,
                                                                      monkeypatch, c):
    # rows longer than 256 classes took NumPy's maxima before
    x = _inputs(c)
    rng = np.random.default_rng(c + 1)
    target = rng.integers(0, c, x.shape[0])
    weight = rng.random(x.shape[0]).astype(np.float32)
    with np.errstate(all="ignore"):
        own = _kernels.cross_entropy(x, target, weight)
        given = _given_maxima(monkeypatch, lambda: _kernels.cross_entropy(x, target, weight))
    for p, q in zip(own, given):
        _same(p, q)
    assert np.isnan(own[1][3]) and np.isnan(own[0][3]).all()


@pytest.mark.parametrize("c", [10, 98, 1000])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_rows_match_torch_where_the_path_before_did(numba_backend, monkeypatch, c,
                                                            name):
    torch = pytest.importorskip("torch")
    x = _inputs(c, m=200)
    x[11:] = (np.random.default_rng(0).standard_normal((189, c)) * 30).astype(np.float32)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)

    def ember_run():
        xe = ember.tensor(x, requires_grad=True)
        y = getattr(ember, name)(xe, -1)
        y.backward(ember.tensor(g))
        return y.detach().numpy(), xe.grad.numpy()

    xt = torch.tensor(x, requires_grad=True)
    yt = getattr(torch, name)(xt, -1)
    yt.backward(torch.tensor(g))
    want = (yt.detach().numpy(), xt.grad.numpy())
    with np.errstate(all="ignore"):
        got = ember_run()
        before = _given_maxima(monkeypatch, ember_run)
    # (the gradient's ``g - exp(y) sum(g)`` cancels: its tolerance follows sum(g)'s size)
    for p, q, t, atol in zip(got, before, want, (1e-6, 1e-4)):
        _same(p, q)
        np.testing.assert_array_equal(np.isnan(p), np.isnan(t))
        # every value torch's where the path before gave torch's, and close elsewhere
        ok = ~np.isnan(t)
        assert np.array_equal(p[ok] == t[ok], q[ok] == t[ok])
        np.testing.assert_allclose(p[11:], t[11:], rtol=2e-5, atol=atol)


def test_softmax_rows_without_numba_take_numpys_path(numpy_backend):
    torch = pytest.importorskip("torch")
    x = _inputs(98)
    assert _kernels.softmax(x, 1) is None
    with np.errstate(all="ignore"):
        got = ember.log_softmax(ember.tensor(x), -1).numpy()
    want = torch.log_softmax(torch.tensor(x), -1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6, atol=1e-6)
