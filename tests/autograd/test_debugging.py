"""gradcheck / gradgradcheck and anomaly detection."""

import warnings

import pytest

import ember
from ember import autograd
from ember._dispatch import apply
from ember._ops._registry import Op
from ember.autograd.gradcheck import GradcheckError

# an op with a deliberately wrong derivative (2x instead of 3x^2 for x^3)
_cube_wrong = Op("_test_cube_wrong", lambda xp, a: a ** 3, vjp=lambda g, a: g * 2 * a)
# an op whose backward raises
_boom = Op("_test_boom", lambda xp, a: a * 1,
           vjp=lambda g, _a: (_ for _ in ()).throw(ValueError("boom in backward")))


def leaf(data, dtype=ember.float64):
    return ember.tensor(data, dtype=dtype, requires_grad=True)


def test_gradcheck_passes_for_correct_formulas():
    x, y = leaf([0.5, -1.0, 2.0]), leaf([1.5, 0.25, -3.0])
    assert autograd.gradcheck(lambda a, b: a * b / (b + 4.0) - a, (x, y))
    assert autograd.gradgradcheck(lambda a, b: a * b / (b + 4.0) - a, (x, y))


def test_gradcheck_complex_inputs():
    z = ember.tensor([1 + 2j, -0.5 + 0.5j], dtype=ember.complex128, requires_grad=True)
    w = ember.tensor([0.3 - 1j, 2 + 1j], dtype=ember.complex128, requires_grad=True)
    assert autograd.gradcheck(lambda a, b: a * b / (a + 3), (z, w))
    assert autograd.gradgradcheck(lambda a, b: a * b, (z, w))


def test_gradcheck_reports_input_and_worst_element():
    x = leaf([1.0, 2.0])
    with pytest.raises(GradcheckError) as e:
        autograd.gradcheck(lambda a: apply(_cube_wrong, (a,), {}), (x,))
    msg = str(e.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in msg
    assert "worst element: input element 1, output element 1" in msg
    assert isinstance(e.value, RuntimeError)
    assert autograd.gradcheck(lambda a: apply(_cube_wrong, (a,), {}), (x,),
                              raise_exception=False) is False


def test_gradcheck_tolerances_and_eps():
    x = leaf([1.0])
    assert autograd.gradcheck(lambda a: apply(_cube_wrong, (a,), {}), (x,), atol=2.0,
                              raise_exception=False)


def test_gradcheck_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        autograd.gradcheck(lambda a: a * 2, (ember.ones(2, dtype=ember.float64),))


def test_gradcheck_warns_on_single_precision():
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision"):
        autograd.gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_gradgradcheck_detects_wrong_second_derivative():
    # first derivative correct, its own derivative wrong
    def _sq_vjp(g, a):
        return g * 2 * apply(_sq_grad_wrong, (a,), {})

    sq = Op("_test_sq_wrong2", lambda xp, a: a * a, vjp=_sq_vjp)
    _sq_grad_wrong = Op("_test_sq_grad_wrong", lambda xp, a: a * 1, vjp=lambda g, a: g * 5)
    x = leaf([1.0, 2.0])
    assert autograd.gradcheck(lambda a: apply(sq, (a,), {}), (x,))
    with pytest.raises(GradcheckError, match="Gradgradcheck"):
        autograd.gradgradcheck(lambda a: apply(sq, (a,), {}), (x,))


def test_detect_anomaly_reports_forward_trace():
    x = leaf([1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            y = apply(_boom, (x,), {})
            with pytest.warns(UserWarning, match="Error detected in TestBoomBackward0. Traceback "
                                                 "of forward call that caused the error"):
                with pytest.raises(ValueError, match="boom in backward"):
                    y.backward(ember.ones(1, dtype=ember.float64))


def test_detect_anomaly_nan_check():
    x = leaf([0.0])
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = autograd.detect_anomaly()
    with ctx:
        y = x * ember.tensor([float("nan")], dtype=ember.float64)
        with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values in "
                                               "its 0th output."):
            y.backward(ember.ones(1, dtype=ember.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly(check_nan=False):
            y = x * ember.tensor([float("nan")], dtype=ember.float64)
            y.backward(ember.ones(1, dtype=ember.float64))


def test_set_detect_anomaly():
    from ember.autograd import anomaly_mode

    with autograd.set_detect_anomaly(True):
        assert anomaly_mode.is_anomaly_enabled()
    assert not anomaly_mode.is_anomaly_enabled()
