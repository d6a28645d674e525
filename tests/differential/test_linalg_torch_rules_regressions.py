"""Regressions for linear-algebra classes the differential runner found (issue 16): the
inverse-based condition numbers read a NaN product as infinite, logdet's NaN (a negative
determinant) takes no gradient, and which pivot dtypes lu_unpack and ldl_solve take. Each
case runs with ember and with torch on the same input."""

import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

INF, NAN = float("inf"), float("nan")


def _libs():
    import torch

    return (ember, torch)


@pytest.mark.parametrize("p", [1, -1, INF, -INF, "fro"])
def test_cond_nan_product_reads_as_infinite(p):
    rows = [[[3.2, -0.6, 0.12], [NAN, NAN, 3.4e38], [0.25, 0.12, -INF]],
            [[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
            [[2.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 1.0]]]
    e, t = (T.linalg.cond(T.tensor(rows), p).tolist() for T in _libs())
    assert e == pytest.approx(t, rel=1e-5)
    assert e[0] == INF


def test_logdet_negative_determinant_has_zero_gradient():
    grads = []
    for T in _libs():
        A = T.tensor([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]]], dtype=T.float64,
                     requires_grad=True)
        T.logdet(A).sum().backward()
        grads.append(A.grad.reshape(-1).tolist())
    assert grads[0] == pytest.approx(grads[1])
    assert grads[0][4:] == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("dt", ["int16", "int64", "uint8"])
def test_lu_unpack_refuses_pivots_other_than_int32(dt):
    for T in _libs():
        with pytest.raises(RuntimeError, match="int32"):
            T.lu_unpack(T.eye(3), T.tensor([1, 2, 3], dtype=getattr(T, dt)))


@pytest.mark.parametrize("dt", ["int16", "int64", "uint8"])
def test_ldl_solve_takes_any_integer_pivots(dt):
    res = []
    for T in _libs():
        A = T.tensor([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], dtype=T.float64)
        LD, piv = T.linalg.ldl_factor(A)
        res.append(T.linalg.ldl_solve(LD, piv.to(getattr(T, dt)),
                                      T.ones(3, 1, dtype=T.float64)).ravel().tolist())
    assert res[0] == pytest.approx(res[1])


@pytest.mark.parametrize("dt", ["float64", "bool"])
def test_ldl_solve_refuses_non_integer_pivots(dt):
    for T in _libs():
        LD = T.eye(3, dtype=T.float64)
        with pytest.raises(RuntimeError, match="Expected pivots to be integers"):
            T.linalg.ldl_solve(LD, T.ones(3, dtype=getattr(T, dt)),
                               T.ones(3, 1, dtype=T.float64))


def test_pinv_hermitian_failure_is_torchs_linalg_error():
    rows = [[1.0, -1.5, -2.0], [-1.5, NAN, 2.0], [-2.0, 2.0, 6.0]]
    for T in _libs():
        with pytest.raises(RuntimeError, match="linalg.eigh: The algorithm failed"):
            T.linalg.pinv(T.tensor(rows, dtype=T.float64), hermitian=True)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_eigvals_of_nonfinite_input_raises_only_when_differentiable(requires_grad):
    for T in _libs():
        A = T.tensor([[INF, 0.35], [1.5, 2.0]], dtype=T.float64, requires_grad=requires_grad)
        if requires_grad:
            with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
                T.linalg.eigvals(A)
        else:
            assert T.linalg.eigvals(A).isnan().all()
