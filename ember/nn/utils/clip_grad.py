"""Gradient clipping."""

from __future__ import annotations

import math
import warnings

from ...autograd.grad_mode import no_grad


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
        norms = [linalg.vector_norm(t, norm_type) for t in tensors]
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
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(device=g.device, dtype=g.dtype))


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
