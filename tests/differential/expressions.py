"""One expression, run with ``T = ember`` and with ``T = torch``, must agree: the regression
files of the bug classes the differential suite found write their cases this way."""

import warnings

import numpy as np

import ember
from tests.differential.harness import _builtin_class

#: names the expressions may use besides ``T`` and ``F``
ENV = "inf = float('inf'); nan = float('nan')"


def run(expr, T):
    """Evaluate ``expr`` with ``T`` (and ``F = T.nn.functional``); (result, None) or
    (None, the exception it raised), warnings silenced."""
    env = {"T": T, "F": T.nn.functional}
    exec(ENV, env)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(expr, env), None
    except Exception as exc:  # compared by the caller
        return None, exc


def as_numpy(t):
    """A tensor's values for comparison: floats as float64, complex resolved."""
    t = t.detach()
    if t.dtype.is_complex:
        return t.resolve_conj().numpy()
    return t.double().numpy() if t.dtype.is_floating_point else t.numpy()


def _same_tensor(e, t, expr, exact, rtol, atol):
    assert e.dtype.name == str(t.dtype).replace("torch.", ""), expr
    assert tuple(e.shape) == tuple(t.shape), expr
    a, b = as_numpy(e), as_numpy(t)
    if exact:
        np.testing.assert_array_equal(a, b, err_msg=expr)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=expr)


def agree(expr, exact=True, rtol=1e-6, atol=None):
    """``expr`` raises the same builtin exception class in ember and torch, or gives tensors
    (or tuples of them) of the same dtype, shape and values (NaN where torch has NaN,
    bit-equal when ``exact``; else within ``rtol`` and ``atol``, which defaults to ``rtol``)."""
    import torch

    atol = rtol if atol is None else atol
    t, t_exc = run(expr, torch)
    e, e_exc = run(expr, ember)
    if t_exc is not None:
        assert e_exc is not None, f"{expr}: torch raises {t_exc!r}, ember returns {e!r}"
        assert isinstance(e_exc, _builtin_class(t_exc)), \
            f"{expr}: ember raises {e_exc!r}, torch {t_exc!r}"
        return
    assert e_exc is None, f"{expr}: ember raises {e_exc!r}, torch returns {t!r}"
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t), expr
        for a, b in zip(e, t):
            _same_tensor(a, b, expr, exact, rtol, atol)
    else:
        _same_tensor(e, t, expr, exact, rtol, atol)
