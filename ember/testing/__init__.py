"""Testing utilities: ``assert_close``, ``make_tensor``, the OpInfo machinery and the
device-generic test framework (``instantiate_device_type_tests``, the test device)."""

from __future__ import annotations

import sys

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._device_type import (  # noqa: F401  (the device-generic test framework)
    device_types, dtypes, instantiate_device_type_tests, onlyCPU, onlyCUDA, onlyOn,
)
from ._test_device import TEST_DEVICE, register_test_device  # noqa: F401
from ._file_check import FileCheck  # noqa: F401  (torch.testing.FileCheck)

__all__ = ["assert_close", "assert_allclose", "make_tensor", "device_types", "dtypes",
           "instantiate_device_type_tests", "onlyCPU", "onlyCUDA", "onlyOn", "TEST_DEVICE",
           "register_test_device"]

_TOL = {  # (rtol, atol) by dtype, as torch.testing.assert_close uses
    _dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7), _dt.complex64: (1.3e-6, 1e-5), _dt.complex128: (1e-7, 1e-7),
}


def _real_torch(x):
    """Whether ``x`` is an object of PyTorch itself (a tensor to compare against): its class
    is named ``torch.*`` and ``torch`` is the real package, not ember under the alias, whose
    classes take torch's names too (NOTE [ Class names under the alias ])."""
    return type(x).__module__.startswith("torch") and \
        getattr(sys.modules.get("torch"), "__name__", None) == "torch"


def _to_numpy(x):
    if isinstance(x, Tensor):
        a = x.detach()._data
        a = a if type(a) is np.ndarray else a.get()
        return a.astype(np.float32) if a.dtype == _dt.bfloat16.np else a
    if _real_torch(x):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def _dtype_name(x):
    if isinstance(x, Tensor):
        return x.dtype.name
    if _real_torch(x):
        return str(x.dtype).replace("torch.", "")
    return None


#: ``assert_allclose``'s default tolerances (rtol, atol) by dtype name
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-5),
                        "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated form of :func:`assert_close` (it warns): ``expected`` is converted to a
    tensor of ``actual``'s dtype and the dtypes are not compared.

    Args:
        actual (Tensor or array-like): the value tested.
        expected: the reference value (a tensor, array, number or nested sequence).
        rtol (float, optional): relative tolerance; give ``atol`` too. Default: by dtype
            (float32: 1e-4).
        atol (float, optional): absolute tolerance. Default: by dtype (float32: 1e-5).
        equal_nan (bool): NaNs in the same places compare equal. Default: True.
        msg (str): the error message instead of the generated one. Default: generated.

    Returns:
        None; raises AssertionError when the values differ.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.testing.assert_allclose(ember.ones(2), [1.0, 1.0])
    """
    import warnings

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    import ember

    if not isinstance(actual, Tensor):
        actual = ember.as_tensor(actual)
    if not isinstance(expected, Tensor):
        expected = ember.as_tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        # the looser of the two dtypes' tolerances
        pairs = [_ALLCLOSE_TOLERANCES.get(str(t.dtype).rpartition(".")[2], (0.0, 0.0))
                 for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    elif rtol is None or atol is None:
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"rtol={rtol} and atol={atol} instead.")
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=True, check_dtype=True,
                 msg=None):
    """Assert two tensors (or numbers, arrays, torch tensors, nested sequences) are close.

    Tolerances default by dtype as in ``torch.testing.assert_close``; shapes must match and,
    with ``check_dtype``, dtypes too (compared by name, so ember and torch tensors compare).

    Args:
        actual: the value tested.
        expected: the reference value.
        rtol (float, optional): the relative tolerance (give ``atol`` too). Default: by dtype.
        atol (float, optional): the absolute tolerance (give ``rtol`` too). Default: by dtype.
        equal_nan (bool): NaNs in the same places compare equal. Default: True.
        check_dtype (bool): require the same dtype. Default: True.
        msg (str or callable, optional): the error message instead of the generated one, or a
            function from the generated message to the one raised.

    Returns:
        None; raises AssertionError with PyTorch's message (how many elements differ, the
        greatest absolute and relative differences and where; ``msg`` replaces it).

    Example:
        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
        >>> try:
        ...     ember.testing.assert_close(ember.tensor([1.0]), ember.tensor([1.1]))
        ... except AssertionError as e:
        ...     print(str(e).splitlines()[0])
        Tensor-likes are not close!
    """
    _assert_close(actual, expected, rtol, atol, equal_nan, check_dtype, msg, "")


def _assert_close(actual, expected, rtol, atol, equal_nan, check_dtype, msg, where):
    """``assert_close`` for one pair; ``where`` is the item path (``[1]``) inside the
    sequences first given, which PyTorch's message names."""
    def fail(text):
        if isinstance(msg, str):
            raise AssertionError(msg)
        if where:
            text += f"\n\nThe failure occurred for item {where}"
        raise AssertionError(msg(text) if callable(msg) else text)

    if isinstance(actual, (list, tuple)) and not isinstance(expected, (Tensor, np.ndarray)):
        if len(actual) != len(expected):
            fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_close(a, e, rtol, atol, equal_nan, check_dtype, msg, f"{where}[{i}]")
        return
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        fail(f"The values for attribute 'shape' do not match: {_size_text(a.shape)} != "
             f"{_size_text(e.shape)}.")
    if check_dtype:
        da, de = _dtype_name(actual), _dtype_name(expected)
        if da is not None and de is not None and da != de:
            fail(f"The values for attribute 'dtype' do not match: torch.{da} != torch.{de}.")
    if rtol is None or atol is None:
        d = actual.dtype if isinstance(actual, Tensor) else (
            _dt.from_np.get(np.dtype(a.dtype)) if a.dtype != object else None)
        if _real_torch(expected) and str(expected.dtype) in (
                "torch.bfloat16", "torch.float16"):
            d = _dt.lookup(str(expected.dtype))
        r, t = _TOL.get(d, (0.0, 0.0))
        rtol = r if rtol is None else rtol
        atol = t if atol is None else atol
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        ok = np.array_equal(a, e)
    else:
        with np.errstate(all="ignore"):
            ok = np.allclose(a.astype(np.complex128) if a.dtype.kind == "c" else
                             a.astype(np.float64), e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok:
        fail(_mismatch_text(a, e, rtol, atol, equal_nan, scalar=np.ndim(a) == 0))


def _size_text(shape) -> str:
    return f"torch.Size({list(shape)})"


def _py(x):
    """A NumPy scalar as the Python number PyTorch prints."""
    return x.item() if hasattr(x, "item") else x


def _mismatch_text(a, e, rtol, atol, equal_nan, scalar) -> str:
    """PyTorch's message for values that are not close: what differs, by how much, where."""
    exact = rtol == 0 and atol == 0
    kind = "equal" if exact else "close"
    ints = a.dtype.kind in "biu" and e.dtype.kind in "biu"
    with np.errstate(all="ignore"):
        if ints:
            diff = np.abs(a.astype(np.int64) - e.astype(np.int64))
            rel = (diff / np.abs(e.astype(np.int64))).astype(np.float32)  # as a float tensor
        else:
            common = np.result_type(a.dtype, e.dtype)
            diff = np.abs(a.astype(common) - e.astype(common))
            rel = diff / np.abs(e.astype(common))
        close = (diff <= atol + rtol * np.abs(e.astype(np.float64))) if not ints else diff == 0
        if not ints and equal_nan:
            close = close | (np.isnan(a) & np.isnan(e))
    allowed = lambda tol: "" if exact else f" (up to {tol} allowed)"  # noqa: E731
    if scalar:  # compared as Python numbers, as PyTorch does
        av, ev = _py(a[()]), _py(e[()])
        d = abs(av - ev)
        r = d / abs(ev) if ev != 0 else (float("inf") if d else float("nan"))
        return (f"Scalars are not {kind}!\n\nExpected {ev} but got {av}.\n"
                f"Absolute difference: {d}{allowed(atol)}\n"
                f"Relative difference: {r}{allowed(rtol)}")
    bad = ~close

    def worst(values):
        v = np.where(bad, values, 0)
        nan = np.isnan(v) if v.dtype.kind in "fc" else np.zeros(v.shape, bool)
        flat = int(np.flatnonzero(nan)[0]) if nan.any() else int(np.argmax(v))
        index = np.unravel_index(flat, v.shape)
        return f"{_py(v[index])} at index {tuple(int(i) for i in index)}"

    n, total = int(bad.sum()), bad.size
    return (f"Tensor-likes are not {kind}!\n\nMismatched elements: {n} / {total} "
            f"({round(100 * n / total, 1)}%)\n"
            f"Greatest absolute difference: {worst(diff)}{allowed(atol)}\n"
            f"Greatest relative difference: {worst(rel)}{allowed(rtol)}")


def _make_tensor_bounds(d, low, high):
    """make_tensor's range [low, high) for dtype ``d``: the defaults per kind, checked, and
    clamped to what the dtype represents (integer bounds rounded up)."""
    import math
    import warnings

    from .. import finfo, iinfo

    integral = d is _dt.bool_ or d.category == 1
    if d is _dt.bool_:
        lo_default, hi_default, lo_min, hi_max = 0, 2, 0, 2
    elif integral:
        info = iinfo(d)
        lo_default, hi_default = (0 if d is _dt.uint8 else -9), 10
        lo_min, hi_max = info.min, info.max + 1  # (high is exclusive)
    else:
        info = finfo(d)
        lo_default, hi_default, lo_min, hi_max = -9, 9, float(info.min), float(info.max)
    low = lo_default if low is None else low
    high = hi_default if high is None else high
    if isinstance(low, float) and math.isnan(low) or isinstance(high, float) and math.isnan(high):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and not integral:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    low, high = max(low, lo_min), min(high, hi_max)
    if integral:
        low, high = math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None, rng=None):
    """A tensor of ``shape`` filled with values drawn uniformly from [low, high), as
    PyTorch's ``torch.testing.make_tensor``: values come from the default generator (so
    ``manual_seed`` makes them reproducible and equal to PyTorch's), integers from
    ``randint``, floats from ``uniform_``, complex numbers component by component.

    Defaults of the range: bool [0, 2), uint8 [0, 10), other integers [-9, 10), floating and
    complex [-9, 9). Bounds are clamped to the dtype's finite range; integer bounds are
    rounded up.

    Args:
        *shape (int): the shape (integers, or one tuple or list).
        dtype (ember.dtype): the dtype. Keyword-only, as the rest.
        device (ember.device, optional): the device. Default: the CPU.
        low (Number, optional): the inclusive lower bound.
        high (Number, optional): the exclusive upper bound.
        requires_grad (bool): whether the result requires grad (floating and complex only).
        noncontiguous (bool): a non-contiguous result (every second element of a tensor
            twice as wide in its last dim); ignored below two elements.
        exclude_zero (bool): replace zeros by the dtype's smallest positive normal value
            (1 for integers, True for bool).
        memory_format (ember.memory_format, optional): the result's memory format.
        rng (numpy.random.Generator, optional): ember's own extension for reproducible test
            inputs independent of the default generator (its OpInfo samples): values come
            from this generator, in [-9, 9) unless given, bounds taken as given.

    Returns:
        Tensor: the new tensor.

    Raises:
        ValueError: ``low >= high``, a NaN bound, ``requires_grad`` with an integral dtype, or
            both ``noncontiguous`` and ``memory_format``.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> t = ember.testing.make_tensor(2, 3, dtype=ember.int64, device="cpu", low=0, high=5)
        >>> t.shape, t.dtype, bool(((t >= 0) & (t < 5)).all())
        (ember.Size([2, 3]), ember.int64, True)
    """
    from .. import _ops  # noqa: F401

    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(n) for n in shape)
    d = _dt.lookup(dtype)
    if rng is not None:
        return _make_tensor_from_rng(shape, d, device, low, high, requires_grad,
                                     noncontiguous, exclude_zero, rng)
    integral = d is _dt.bool_ or d.category == 1
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    from .. import empty, finfo, randint, view_as_real

    low, high = _make_tensor_bounds(d, low, high)
    wide = noncontiguous and (int(np.prod(shape)) if shape else 1) > 1
    drawn = shape[:-1] + (shape[-1] * 2,) if wide else shape
    if integral:
        t = randint(low, high, drawn, dtype=dtype)
    else:  # (low == high draws too, as PyTorch's does)
        t = empty(drawn, dtype=dtype)
        (view_as_real(t) if d.category == 3 else t).uniform_(low, high)
    if exclude_zero:
        t = t.masked_fill(t == 0, 1 if integral else float(finfo(d).tiny))
    if wide:
        t = t[..., 1::2]
    if device is not None:
        t = t.to(device)
    if memory_format is not None:
        t = t.contiguous(memory_format=memory_format)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _make_tensor_from_rng(shape, d, device, low, high, requires_grad, noncontiguous,
                          exclude_zero, rng):
    """make_tensor with ember's ``rng=``: the OpInfo samples' own NumPy stream, default range
    [-9, 9) for every kind, bounds taken as given (bool ignores them)."""
    from .._ops.from_data import from_numpy

    lo = -9 if low is None else low
    hi = 9 if high is None else high
    if d is _dt.bool_:
        arr = rng.integers(0, 2, size=shape).astype(bool)
    elif d.category == 1:
        lo = max(lo, 0) if d is _dt.uint8 else lo
        arr = rng.integers(int(lo), int(hi), size=shape).astype(d.np)
    elif d.category == 2:
        arr = rng.uniform(lo, hi, size=shape).astype(d.np)
    else:
        arr = (rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape))
        arr = arr.astype(d.np)
    arr = np.asarray(arr)
    if exclude_zero:
        arr[arr == 0] = 1 if d.category < 3 else 1 + 1j
    if noncontiguous and arr.size > 1:
        wide = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype) \
            if arr.ndim else arr
        if arr.ndim:
            wide[..., ::2] = arr
            arr = wide[..., ::2]
    t = from_numpy(arr)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
