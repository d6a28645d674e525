"""The two kernels of loss scaling: unscale-and-check the gradients, and adapt the scale.

NOTE [ Fused inf checks ]
``GradScaler`` asks two things of each iteration's gradients: divide them by the scale, and
say whether any of them holds inf or NaN. Done as two tensor ops per gradient (``isfinite``
then ``mul_``) that is two passes over memory, a temporary bool array, and on a GPU a host
synchronisation per gradient to read the answer. PyTorch has one private op for each step,
which ember provides under the same names:

- ``_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``: one pass over
  each gradient that reads a value, notes a non-finite one in ``found_inf`` and writes the
  value times ``inv_scale`` back, in float32 for float16/bfloat16/float32 gradients (float64
  for float64), rounded once to the gradient's dtype. On CuPy arrays it is one
  ``ElementwiseKernel`` launch per gradient and ``found_inf`` stays on the device (no
  synchronisation); on NumPy arrays a finite check and an in-place multiply per gradient.
- ``_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
  growth_interval)``: the rule that halves the scale after an overflow and doubles it after
  ``growth_interval`` clean steps, as one single-thread kernel on the device values (CuPy) or
  a few scalar reads (NumPy).

The CuPy kernels are compiled on first use and cached by CuPy (``_kernel`` keeps one per
computation type); CuPy is imported only when a CuPy array is seen.
"""

from __future__ import annotations

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor

__all__ = ["_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"]

# CuPy 14 takes ml_dtypes' bfloat16 (ember's bfloat16 array dtype)
_FLOAT_KINDS = {np.dtype(np.float16), np.dtype(_dt.bfloat16.np), np.dtype(np.float32),
                np.dtype(np.float64)}
_kernels = {}


def _is_cupy(a) -> bool:
    return type(a).__module__.startswith("cupy")


def _kernel(name):
    """The CuPy kernel ``name``, compiled once (NOTE [ Fused inf checks ])."""
    k = _kernels.get(name)
    if k is not None:
        return k
    from ..cuda._runtime import cupy

    cp = cupy()
    if name in ("unscale_float", "unscale_double"):
        ct = name.split("_")[1]
        k = cp.ElementwiseKernel(
            "raw float32 inv_scale", "T g, raw float32 found_inf",
            f"{ct} v = ({ct})g;\n"
            "if (!isfinite(v)) found_inf[0] = 1.0f;\n"
            f"g = (T)(v * ({ct})inv_scale[0]);",
            f"ember_amp_unscale_{ct}")
    elif name == "update_scale":
        k = cp.ElementwiseKernel(
            "raw float32 found_inf, float64 growth, float64 backoff, int32 interval",
            "float32 scale, int32 tracker",
            "if (found_inf[0] != 0.0f) {\n"
            "  scale = (float)((double)scale * backoff);\n"
            "  tracker = 0;\n"
            "} else {\n"
            "  int done = tracker + 1;\n"
            "  if (done == interval) {\n"
            "    float grown = (float)((double)scale * growth);\n"
            "    if (isfinite(grown)) scale = grown;\n"
            "    tracker = 0;\n"
            "  } else {\n"
            "    tracker = done;\n"
            "  }\n"
            "}",
            "ember_amp_update_scale")
    else:  # pragma: no cover - internal names only
        raise KeyError(name)
    _kernels[name] = k
    return k


def _check_one_float(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what} must be a Tensor, not {type(t).__name__}")
    if t.numel() != 1:
        raise RuntimeError(f"{what} must be a 1-element tensor.")
    if t._data.dtype != np.float32:
        raise RuntimeError(f"{what} must be a float tensor.")


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf, inv_scale) -> None:
    """Multiply each gradient of ``self`` by ``inv_scale`` in place, and set ``found_inf``
    to 1.0 when any of them held inf or NaN (NOTE [ Fused inf checks ]).

    Args:
        self (list of Tensor): floating-point gradients, on ``found_inf``'s device.
        found_inf (Tensor): a 1-element float32 tensor, set to 1.0 on a non-finite value
            (left as it is otherwise).
        inv_scale (Tensor): a 1-element float32 tensor, the reciprocal of the scale.

    Returns:
        None.

    Example::

        >>> g = [ember.tensor([2.0, float("inf")]), ember.tensor([4.0])]
        >>> found = ember.zeros(())
        >>> ember._amp_foreach_non_finite_check_and_unscale_(g, found, ember.tensor(0.5))
        >>> g[1], found
        (tensor([2.]), tensor(1.))
    """
    _check_one_float(found_inf, "found_inf")
    _check_one_float(inv_scale, "inv_scale")
    grads = list(self)
    kind = type(found_inf._data)
    for g in grads:
        if not isinstance(g, Tensor):
            raise TypeError(f"expected a list of Tensors, got {type(g).__name__}")
        if type(g._data) is not kind or type(inv_scale._data) is not kind:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found the gradients, "
                "found_inf and inv_scale on different devices")
        if g._data.dtype.kind != "f" and g._data.dtype.name != "bfloat16":
            raise NotImplementedError(
                f"\"_amp_foreach_non_finite_check_and_unscale\" not implemented for "
                f"'{g.dtype.scalar_name}'")
    if not grads:
        return
    if _is_cupy(found_inf._data):
        # raw arguments are indexed [0]: give them one dimension
        inv = inv_scale._data.reshape(1)
        found = found_inf._data.reshape(1)
        for g in grads:
            a = g._data
            if a.dtype not in _FLOAT_KINDS:
                raise NotImplementedError(
                    f"_amp_foreach_non_finite_check_and_unscale_: {a.dtype} gradients are "
                    f"not supported on CUDA arrays; use float16, bfloat16, float32 or float64")
            ct = "double" if a.dtype == np.float64 else "float"
            _kernel(f"unscale_{ct}")(inv, a, found)
            g._bump()
        found_inf._bump()
        return
    inv = np.float32(inv_scale._data.reshape(()))
    found = False
    for g in grads:
        a = g._data
        if not found and not np.isfinite(a).all():
            found = True
        if inv != 1.0:
            # float32 arithmetic for the low-precision dtypes, one rounding back to them
            np.multiply(a, inv, out=a, casting="unsafe")
            g._bump()
    if found:
        found_inf._data[...] = 1.0
        found_inf._bump()


def _amp_update_scale_(self, growth_tracker, found_inf, scale_growth_factor: float,
                       scale_backoff_factor: float, growth_interval: int):
    """Adapt the loss scale in place: times ``scale_backoff_factor`` (and the tracker reset)
    when ``found_inf`` is nonzero, else count one clean step in ``growth_tracker`` and, at
    ``growth_interval`` of them, grow the scale by ``scale_growth_factor`` (unless that
    overflows float32) and reset the tracker (NOTE [ Fused inf checks ]).

    Args:
        self (Tensor): the scale, a 1-element float32 tensor.
        growth_tracker (Tensor): clean steps so far, a 1-element int32 tensor.
        found_inf (Tensor): a 1-element float32 tensor, nonzero after an overflow.
        scale_growth_factor (float): the growth factor.
        scale_backoff_factor (float): the backoff factor.
        growth_interval (int): clean steps between two growths.

    Returns:
        Tensor: ``self``.

    Example::

        >>> scale, tracker = ember.tensor(4.0), ember.tensor(1, dtype=ember.int32)
        >>> ember._amp_update_scale_(scale, tracker, ember.zeros(()), 2.0, 0.5, 2)
        tensor(8.)
        >>> tracker
        tensor(0, dtype=ember.int32)
    """
    if not isinstance(self, Tensor) or self.numel() != 1:
        raise RuntimeError("current_scale must be a 1-element tensor.")
    if not isinstance(growth_tracker, Tensor) or growth_tracker.numel() != 1:
        raise RuntimeError("growth_tracker must be a 1-element tensor.")
    if not isinstance(found_inf, Tensor) or found_inf.numel() != 1:
        raise RuntimeError("found_inf must be a 1-element tensor.")
    if self._data.dtype != np.float32:
        raise RuntimeError("current_scale must be a float tensor.")
    if growth_tracker._data.dtype != np.int32:
        raise RuntimeError("growth_tracker must be an int tensor.")
    if found_inf._data.dtype != np.float32:
        raise RuntimeError("found_inf must be a float tensor.")
    kind = type(self._data)
    if type(growth_tracker._data) is not kind or type(found_inf._data) is not kind:
        raise RuntimeError("Expected all tensors to be on the same device, but found "
                           "current_scale, growth_tracker and found_inf on different devices")
    if _is_cupy(self._data):
        _kernel("update_scale")(found_inf._data.reshape(1), float(scale_growth_factor),
                                float(scale_backoff_factor), int(growth_interval),
                                self._data, growth_tracker._data)
    else:
        scale = float(self._data.reshape(()))
        if float(found_inf._data.reshape(())) != 0.0:
            self._data[...] = np.float32(scale * scale_backoff_factor)
            growth_tracker._data[...] = 0
        else:
            done = int(growth_tracker._data.reshape(())) + 1
            if done == growth_interval:
                with np.errstate(over="ignore"):
                    grown = np.float32(scale * scale_growth_factor)
                if np.isfinite(grown):
                    self._data[...] = grown
                growth_tracker._data[...] = 0
            else:
                growth_tracker._data[...] = done
    self._bump()
    growth_tracker._bump()
    return self
