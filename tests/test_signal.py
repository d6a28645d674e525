"""ember.signal.windows, compared with torch.signal.windows."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import ember
import ember.signal
import ember.signal.windows.windows

torch = pytest.importorskip("torch")

# (window, extra keyword arguments)
CASES = [
    ("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}),
    ("exponential", {"tau": 2.5}), ("gaussian", {}), ("gaussian", {"std": 0.7}),
    ("general_cosine", {"a": [0.3, 0.5, 0.2]}), ("general_hamming", {}),
    ("general_hamming", {"alpha": 0.3}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
    ("kaiser", {"beta": 0.0}), ("kaiser", {"beta": 3.3}), ("nuttall", {}),
]
TOL = {"float32": 2e-6, "float64": 1e-13}


def _both(name, *args, **kwargs):
    dtype = kwargs.pop("dtype", None)
    t = getattr(torch.signal.windows, name)(
        *args, dtype=getattr(torch, dtype) if dtype else None, **kwargs)
    e = getattr(ember.signal.windows, name)(
        *args, dtype=getattr(ember, dtype) if dtype else None, **kwargs)
    return t, e


@pytest.mark.parametrize("name,kwargs", CASES)
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_window_matches_torch(name, kwargs, sym, dtype):
    for M in (0, 1, 2, 5, 8, 33):
        t, e = _both(name, M, sym=sym, dtype=dtype, **kwargs)
        assert e.dtype == getattr(ember, dtype) and tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=0, atol=TOL[dtype])


def test_window_default_dtype_is_used(monkeypatch):
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.signal.windows.hann(4).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


def test_exponential_periodic_center_matches_torch():
    t, e = _both("exponential", 6, sym=False, center=1.5, tau=0.5)
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=2e-6)


@pytest.mark.parametrize("name", ember.signal.windows.__all__)
def test_window_negative_length_raises_value_error(name):
    kwargs = {"a": [1.0]} if name == "general_cosine" else {}
    with pytest.raises(ValueError, match="non-negative window length, got M=-1"):
        getattr(ember.signal.windows, name)(-1, **kwargs)


@pytest.mark.parametrize("dtype", ["int64", "float16", "complex64"])
def test_window_non_float_dtype_raises_value_error(dtype):
    with pytest.raises(ValueError):
        torch.signal.windows.hann(4, dtype=getattr(torch, dtype))
    with pytest.raises(ValueError, match="expects float32 or float64 dtypes"):
        ember.signal.windows.hann(4, dtype=getattr(ember, dtype))


def test_window_sparse_layout_raises_value_error():
    with pytest.raises(ValueError, match="strided tensors only"):
        ember.signal.windows.kaiser(4, layout=ember.sparse_coo)


@pytest.mark.parametrize("name,kwargs,error", [
    ("exponential", {"tau": 0.0}, ValueError),
    ("exponential", {"center": 1.0}, ValueError),
    ("gaussian", {"std": -1.0}, ValueError),
    ("kaiser", {"beta": -0.5}, ValueError),
    ("general_cosine", {"a": 3}, TypeError),
    ("general_cosine", {"a": []}, ValueError),
])
def test_window_bad_parameter_raises_like_torch(name, kwargs, error):
    with pytest.raises(error):
        getattr(torch.signal.windows, name)(5, **kwargs)
    with pytest.raises(error):
        getattr(ember.signal.windows, name)(5, **kwargs)


def test_general_cosine_accepts_a_generator():
    t = torch.signal.windows.general_cosine(5, a=(c for c in (0.5, 0.5)))
    e = ember.signal.windows.general_cosine(5, a=(c for c in (0.5, 0.5)))
    np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-7)


@pytest.mark.parametrize("M,is_leaf", [(1, True), (6, False)])
def test_window_requires_grad_records_history_as_torch(M, is_leaf):
    w = ember.signal.windows.hann(M, requires_grad=True)
    assert w.requires_grad and w.is_leaf == is_leaf
    assert torch.signal.windows.hann(M, requires_grad=True).is_leaf == is_leaf


def test_windows_reachable_as_torch_names():
    import ember.signal.windows as windows

    assert ember.signal.windows is windows
    assert ember.windows is windows


def test_signal_docstring_examples_pass():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for mod in (ember.signal, ember.signal.windows.windows):
        for test in finder.find(mod):
            test.globs["ember"] = ember
            assert not runner.run(test, out=lambda s: None).failed, test.name
