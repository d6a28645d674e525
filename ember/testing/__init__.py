"""Testing utilities: ``assert_close``, ``make_tensor``, the OpInfo machinery and the
device-generic test framework (``instantiate_device_type_tests``, the test device)."""

from __future__ import annotations

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._device_type import (  # noqa: F401  (the device-generic test framework)
    device_types, dtypes, instantiate_device_type_tests, onlyCPU, onlyCUDA, onlyOn,
)
from ._test_device import TEST_DEVICE, register_test_device  # noqa: F401
from ._file_check import FileCheck  # noqa: F401  (torch.testing.FileCheck)

__all__ = ["assert_close", "make_tensor", "device_types", "dtypes",
           "instantiate_device_type_tests", "onlyCPU", "onlyCUDA", "onlyOn", "TEST_DEVICE",
           "register_test_device"]

_TOL = {  # (rtol, atol) by dtype, as torch.testing.assert_close uses
    _dt.float16: (1e-3, 1e-5), _dt.bfloat16: (1.6e-2, 1e-5), _dt.float32: (1.3e-6, 1e-5),
    _dt.float64: (1e-7, 1e-7), _dt.complex64: (1.3e-6, 1e-5), _dt.complex128: (1e-7, 1e-7),
}


def _to_numpy(x):
    if isinstance(x, Tensor):
        a = x.detach()._data
        a = a if type(a) is np.ndarray else a.get()
        return a.astype(np.float32) if a.dtype == _dt.bfloat16.np else a
    if type(x).__module__.startswith("torch"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


def _dtype_name(x):
    if isinstance(x, Tensor):
        return x.dtype.name
    if type(x).__module__.startswith("torch"):
        return str(x.dtype).replace("torch.", "")
    return None


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
        msg (str, optional): added to the error message.

    Returns:
        None; raises AssertionError naming the greatest difference and where it is.

    Example:
        >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
        >>> try:
        ...     ember.testing.assert_close(ember.tensor([1.0]), ember.tensor([1.1]))
        ... except AssertionError as e:
        ...     print(str(e).splitlines()[0][:22])
        tensors are not close
    """
    if isinstance(actual, (list, tuple)) and not isinstance(expected, (Tensor, np.ndarray)):
        if len(actual) != len(expected):
            raise AssertionError(f"length mismatch: {len(actual)} vs {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    a, e = _to_numpy(actual), _to_numpy(expected)
    if check_dtype:
        da, de = _dtype_name(actual), _dtype_name(expected)
        if da is not None and de is not None and da != de:
            raise AssertionError(f"dtype mismatch: {da} vs {de}" + (f" ({msg})" if msg else ""))
    if a.shape != e.shape:
        raise AssertionError(f"shape mismatch: {a.shape} vs {e.shape}" +
                             (f" ({msg})" if msg else ""))
    if rtol is None or atol is None:
        d = actual.dtype if isinstance(actual, Tensor) else (
            _dt.from_np.get(np.dtype(a.dtype)) if a.dtype != object else None)
        if type(expected).__module__.startswith("torch") and str(expected.dtype) in (
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
        with np.errstate(all="ignore"):
            diff = np.abs(a.astype(np.complex128) - e.astype(np.complex128))
        worst = np.unravel_index(np.nanargmax(diff), diff.shape) if diff.size else ()
        raise AssertionError(
            f"tensors are not close (rtol={rtol}, atol={atol}): greatest difference "
            f"{diff[worst] if diff.size else 0} at index {worst}: {a[worst] if diff.size else ''}"
            f" vs {e[worst] if diff.size else ''}" + (f" ({msg})" if msg else "") +
            f"\nactual:\n{a}\nexpected:\n{e}")


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, rng=None):
    """A tensor of ``shape`` with values drawn uniformly (ints in [low, high), floats in
    [low, high), defaults -9..9), optionally non-contiguous or with zeros replaced.

    Args:
        *shape (int): the shape (integers, or one tuple).
        dtype (ember.dtype): the dtype. Keyword-only, as the rest.
        device (ember.device, optional): the device. Default: the CPU.
        low (Number, optional): the lowest value. Default: -9.
        high (Number, optional): the bound of the values. Default: 9.
        requires_grad (bool): whether the result requires grad. Default: False.
        noncontiguous (bool): return a non-contiguous view with the same values.
        exclude_zero (bool): replace zeros by a small non-zero value.
        rng (numpy.random.Generator, optional): the source of the values. Default: seeded
            with 0, so calls are reproducible.

    Returns:
        Tensor: the new tensor.

    Example:
        >>> t = ember.testing.make_tensor(2, 3, dtype=ember.int64, low=0, high=5)
        >>> t.shape, t.dtype, bool(((t >= 0) & (t < 5)).all())
        (ember.Size([2, 3]), ember.int64, True)
    """
    from .. import _ops  # noqa: F401
    from .._ops.from_data import from_numpy

    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    d = _dt.lookup(dtype)
    rng = rng if rng is not None else np.random.default_rng(0)
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
