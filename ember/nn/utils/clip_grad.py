"""Gradient clipping."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dispatch
from ..._core.tensor import Tensor
from ..._core.tensor import wrap as _wrap
from ..._ops._registry import recorded_as
from ..._ops.arithmetic import mul_op
from ..._ops.linalg_norm import _vnorm_kernel
from ...autograd.grad_mode import no_grad

# NOTE [ Clipping as PyTorch's foreach ops ]
# PyTorch clips CPU and CUDA gradients with its foreach ops unless ``foreach=False``: one
# ``_foreach_norm`` and one ``_foreach_mul_`` per group of gradients of one device and
# dtype. ember runs the per-tensor ops those ops stand for, in the same groups and order
# (so the total norm sums in PyTorch's order), and a profile lists each group's work under
# the foreach op's event as PyTorch's does (``recorded_as``: nothing is added while no
# profiler records). The coefficient is ``(total + 1e-6).reciprocal() * max_norm``, the
# ops and bits of PyTorch's ``max_norm / (total + 1e-6)``.


@recorded_as("aten::_foreach_norm", ("tensors", "ord", None))
def _foreach_norm(tensors, ord):
    from ... import linalg

    return [linalg.vector_norm(t, ord) for t in tensors]


@recorded_as("aten::_foreach_mul_", ("tensors", "scalar"))
def _foreach_mul_(tensors, scalar):
    for t in tensors:
        t.mul_(scalar)


# NOTE [ Clipping straight on the arrays ]
# Through dispatch, clipping char_gpt's 41 gradients ran 41 ``vector_norm`` and 41 ``mul_``
# calls: ~2.7 ms where PyTorch's two foreach ops take ~1.2 ms and the kernels ~0.3 ms. When
# nothing can see the ops -- no mode (profiler, vmap, user modes), no __torch_function__, no
# replaced CPU kernel: ``_dispatch.slow`` -- and every gradient is a plain CPU tensor of one
# float32/float64 dtype, writable and with no element shared by two indices, the norms run
# ``vector_norm``'s own kernel on the arrays (a one-element gradient its ``abs``, as
# ``vector_norm`` does) and the scaling runs ``mul_``'s own kernel into each array, bumping
# its version counter: the same kernels on the same arrays as the per-tensor ops, so the same
# bits. Anything else takes the ops, which also give the errors. With the norms in PyTorch's
# lanes (NOTE [ A 2-norm in PyTorch's lanes ]) char_gpt's clip took ~1.2 ms, as PyTorch's.


def _plain_arrays(tensors):
    """The arrays of ``tensors`` when NOTE [ Clipping straight on the arrays ] applies to them,
    else None."""
    if _dispatch.slow[0] or not tensors:
        return None
    arrays = []
    dt = None
    for t in tensors:
        if type(t) is not Tensor:
            return None
        a = t._data
        if type(a) is not np.ndarray or not a.size or not a.flags.writeable:
            return None
        if dt is None:
            dt = a.dtype
            if dt != np.float32 and dt != np.float64:
                return None
        elif a.dtype != dt:
            return None
        if 0 in a.strides and a.size > 1:
            return None
        arrays.append(a)
    return arrays


def _array_norm(a, ord):
    """``vector_norm(a, ord)`` of a non-empty float array, by ``vector_norm``'s own route."""
    if a.size == 1 and a.ndim and ord != 0:
        return np.abs(a).reshape(())
    return _vnorm_kernel(np, a, ord=ord, dim=None, keepdim=False)


def _groups(tensors):
    """``tensors`` grouped by device and dtype, in order of first appearance."""
    groups = {}
    for t in tensors:
        groups.setdefault((str(t.device), t.dtype), []).append(t)
    return list(groups.values())


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of all ``tensors`` together, as if they were concatenated.

    Args:
        tensors (Tensor or iterable of Tensor): the tensors (usually gradients).
        norm_type (float or str): the p of the p-norm; ``inf`` / ``"inf"`` for the max-norm.
            Default: 2.
        error_if_nonfinite (bool): raise RuntimeError if the norm is nan or inf.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        Tensor: the total norm (0-dim).

    Example:
        >>> import ember
        >>> get_total_norm([ember.tensor([3.0]), ember.tensor([4.0])])
        tensor(5.)
    """
    from ... import linalg, stack, tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    arrays = _plain_arrays(tensors)
    if arrays is not None:   # NOTE [ Clipping straight on the arrays ]
        norms = np.stack([_array_norm(a, norm_type) for a in arrays])
        total = _wrap(_array_norm(norms, norm_type))
    else:
        with no_grad():
            norms = []
            for group in _groups(tensors):   # NOTE [ Clipping as PyTorch's foreach ops ]
                norms.extend(_foreach_norm(group, norm_type) if foreach is not False else
                             [linalg.vector_norm(t, norm_type) for t in group])
            total = linalg.vector_norm(stack([n.to(norms[0].dtype) for n in norms]),
                                       norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``max_norm / total_norm`` when that is
    below one, given a total norm computed beforehand (``get_total_norm``).

    Args:
        parameters (Tensor or iterable of Tensor): parameters whose ``.grad`` is scaled.
        max_norm (float): the largest allowed norm.
        total_norm (Tensor or float): the norm of all the gradients.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        None.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w.grad = ember.tensor([3.0, 4.0])
        >>> clip_grads_with_norm_([w], 1.0, ember.tensor(5.0))
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    grads = _grads(parameters)
    if not grads:
        return
    if not isinstance(total_norm, Tensor):
        coef = float(max_norm) / (float(total_norm) + 1e-6)
        if coef < 1:
            with no_grad():
                for g in grads:
                    g.mul_(coef)
        return
    # as PyTorch: the clamped coefficient stays a tensor, so no value is read back (the norm
    # may live on a GPU, or on meta, where there is none)
    with no_grad():
        coef = ((total_norm + 1e-6).reciprocal() * float(max_norm)).clamp(max=1.0)
        arrays = _plain_arrays(grads)
        if arrays is not None and type(coef._data) is np.ndarray:
            # NOTE [ Clipping straight on the arrays ]
            c = coef.to(dtype=grads[0].dtype)._data
            mul = mul_op.impl.get(np.ndarray) or mul_op.resolve(np.ndarray)
            for g, a in zip(grads, arrays):
                mul(a, c, out=a)
                g._bump()
            return
        for group in _groups(grads):   # NOTE [ Clipping as PyTorch's foreach ops ]
            c = coef.to(device=group[0].device, dtype=group[0].dtype)
            if foreach is False:
                for g in group:
                    g.mul_(c)
            else:
                _foreach_mul_(group, c)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale all gradients together so their total ``norm_type`` norm is at most
    ``max_norm``.

    Args:
        parameters (Tensor or iterable of Tensor): parameters whose ``.grad`` is clipped.
        max_norm (float): the largest allowed total norm.
        norm_type (float or str): the p of the p-norm (``inf`` for the max-norm). Default: 2.
        error_if_nonfinite (bool): raise RuntimeError if the total norm is nan or inf.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        Tensor: the total norm before clipping.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w.grad = ember.tensor([3.0, 4.0])
        >>> clip_grad_norm_([w], max_norm=1.0)
        tensor(5.)
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """Deprecated spelling of :func:`clip_grad_norm_` (warns FutureWarning).

    Args:
        parameters, max_norm, norm_type, error_if_nonfinite, foreach: as for
            ``clip_grad_norm_``.

    Returns:
        Tensor: the total norm before clipping.

    Example:
        >>> import ember, warnings
        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w.grad = ember.tensor([3.0, 4.0])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     clip_grad_norm([w], 1.0)
        tensor(5.)
    """
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place.

    Args:
        parameters (Tensor or iterable of Tensor): parameters whose ``.grad`` is clamped.
        clip_value (float): the bound.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        None.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w.grad = ember.tensor([-3.0, 0.5])
        >>> clip_grad_value_([w], 1.0)
        >>> w.grad
        tensor([-1.0000,  0.5000])
    """
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
