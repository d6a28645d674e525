"""Gradient clipping."""

from __future__ import annotations

import math
import warnings

from ..._ops._registry import recorded_as
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


def _groups(tensors):
    """``tensors`` grouped by device and dtype, in order of first appearance."""
    groups = {}
    for t in tensors:
        groups.setdefault((str(t.device), t.dtype), []).append(t)
    return list(groups.values())


def _grads(parameters):
    from ..._core.tensor import Tensor

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

    from ..._core.tensor import Tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = []
        for group in _groups(tensors):   # NOTE [ Clipping as PyTorch's foreach ops ]
            norms.extend(_foreach_norm(group, norm_type) if foreach is not False else
                         [linalg.vector_norm(t, norm_type) for t in group])
        total = linalg.vector_norm(stack([n.to(norms[0].dtype) for n in norms]), norm_type)
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
    from ..._core.tensor import Tensor

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
    from ..._core.tensor import Tensor

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
