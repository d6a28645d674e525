"""Module helpers of ``torch.func``: ``functional_call`` (shared with
``nn.utils.stateless``), ``stack_module_state``, ``replace_all_batch_norm_modules_``,
``functionalize`` and ``debug_unwrap``."""

from __future__ import annotations

import functools

from .. import _C_functorch
from ..nn.utils.stateless import functional_call

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_",
           "functionalize", "debug_unwrap"]


def _stacked_leaf(tensors, name):
    from .. import stack

    requires_grad = tensors[0].requires_grad
    if any(t.requires_grad != requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    return stack([t.detach() for t in tensors]).requires_grad_(requires_grad)


def stack_module_state(models):
    """Stack the parameters and buffers of models of one class, for ensembling with
    ``vmap`` and ``functional_call``.

    Args:
        models (sequence of Module): models of the same class, all in training or all in
            eval mode.

    Returns:
        ``(params, buffers)``: dicts from names to tensors with a new leading dimension of
        size ``len(models)``. Stacked parameters are new leaves requiring grad as the
        originals do.

    Example:
        >>> import ember
        >>> params, buffers = stack_module_state([ember.nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape
        ember.Size([4, 2, 3])
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode.")
    cls = type(models[0])
    if not all(type(m) is cls for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module under ``root`` (included) stop tracking running
    statistics, in place, so that it can run under ``vmap``.

    Args:
        root (Module): the module to update.

    Returns:
        ``root``.

    Example:
        >>> import ember
        >>> bn = replace_all_batch_norm_modules_(ember.nn.BatchNorm1d(3))
        >>> bn.running_mean is None, bn.track_running_stats
        (True, False)
    """
    from ..nn.modules.normalization import _BatchNorm

    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """Return ``func`` with mutations removed. In eager execution a function and its
    functionalized form compute the same outputs and leave the same inputs mutated, which
    is all ember runs; the rewrite matters only to graph capture, so ``func`` is called as is.

    Args:
        func (callable): the function.
        remove (str): ``"mutations"`` or ``"mutations_and_views"``. Default: ``"mutations"``.

    Returns:
        A function computing what ``func`` computes.

    Example:
        >>> import ember
        >>> functionalize(lambda x: x.add_(1))(ember.zeros(2))
        tensor([1., 1.])
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the "
            "program, and replaced with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing "
            "operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        with _C_functorch.layer("functionalize"):  # NOTE [ Transform layers ]
            return func(*args, **kwargs)

    return wrapped


def debug_unwrap(tensor, *, recurse=True):
    """The plain tensor under a transform's wrapper. ember's transforms do not wrap tensors
    (see NOTE [ Transforms on reverse mode ]), so this returns ``tensor``.

    Args:
        tensor (Tensor): the tensor.
        recurse (bool): unwrap every level. Default: True.

    Returns:
        ``tensor``.

    Example:
        >>> import ember
        >>> x = ember.ones(2)
        >>> debug_unwrap(x) is x
        True
    """
    return tensor
