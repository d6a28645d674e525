"""``ember._C._functorch``: the stack of function transforms active on this thread, which
``ember._C._are_functorch_transforms_active`` reports, and the few queries of PyTorch's
``torch._C._functorch`` that libraries make.

NOTE [ Transform layers ]
Every ``ember.func`` transform pushes one *layer* on a per-thread stack while it runs the
user's function, and pops it when that function returns or raises: ``vmap`` (one per level),
``grad``/``grad_and_value``/``jacrev`` (for the forward pass and the backward pass they run
themselves), ``vjp`` (its forward pass only: ``vjp_fn`` runs after the transform returned),
``jvp``/``jacfwd``/``linearize`` (the pass inside a dual level) and ``functionalize``.
Libraries ask whether the stack is empty to choose code that transforms can follow (kornia
skips its in-place custom functions under a transform).

A custom ``autograd.Function``'s ``forward`` runs with the stack emptied, and its ``vmap``
rule with the layers from its vmap level upwards removed, as in PyTorch, where each
transform handles the function by running it one layer further down; ``backward`` and
``jvp`` run where autograd calls them, so inside ``grad``'s backward pass the layer is
active.

The stack is a plain per-thread list: this module imports nothing of ember, so the
autograd floor can use it.
"""

from __future__ import annotations

import contextlib
import itertools
import threading

__all__ = ["_add_batch_dim", "_remove_batch_dim", "get_dynamic_layer_stack_depth",
           "get_unwrapped", "is_batchedtensor", "is_legacy_batchedtensor"]


class _Layers(threading.local):
    def __init__(self):
        # (kind, level): kind is "vmap", "grad", "jvp" or "functionalize"; level is the vmap
        # level id for "vmap", else a fresh number
        self.stack: list = []


_layers = _Layers()
_numbers = itertools.count(1)


def transforms_active() -> bool:
    """Whether a function transform runs on this thread (NOTE [ Transform layers ])."""
    return bool(_layers.stack)


@contextlib.contextmanager
def layer(kind, level=None):
    """Push the layer of one transform while the ``with`` body runs (NOTE [ Transform
    layers ]); ``level`` names a vmap level (its id)."""
    stack = _layers.stack
    entry = (kind, next(_numbers) if level is None else level)
    stack.append(entry)
    try:
        yield entry
    finally:
        # a transform's layer is the top one when its body ends, unless the body escaped
        # through a generator left open; remove this very entry in any case
        if stack and stack[-1] is entry:
            stack.pop()
        else:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is entry:
                    del stack[i]
                    break


@contextlib.contextmanager
def below(kind=None, level=None):
    """Run the ``with`` body with the layers from ``(kind, level)`` upwards removed, or with
    none at all when ``kind`` is None: where a custom ``autograd.Function`` runs (NOTE
    [ Transform layers ])."""
    stack = _layers.stack
    cut = 0
    if kind is not None:
        cut = next((i for i, e in enumerate(stack) if e == (kind, level)), len(stack))
    saved = stack[cut:]
    del stack[cut:]
    try:
        yield
    finally:
        stack[cut:] = saved


def get_dynamic_layer_stack_depth() -> int:
    """How many function transforms are active on this thread
    (``torch._C._functorch.get_dynamic_layer_stack_depth``).

    Returns:
        int: the number of active ``vmap``/``grad``/``jvp``/``functionalize`` layers.

    Example::

        >>> import ember
        >>> from ember.func import vmap
        >>> ember._C._functorch.get_dynamic_layer_stack_depth()
        0
        >>> vmap(lambda x: x + ember._C._functorch.get_dynamic_layer_stack_depth())(
        ...     ember.zeros(2))
        tensor([1., 1.])
    """
    return len(_layers.stack)


def is_legacy_batchedtensor(tensor) -> bool:
    """Whether ``tensor`` is one of PyTorch's legacy batched tensors (those of
    ``autograd.grad(..., is_grads_batched=True)``). Ember computes batched gradients one
    vector-Jacobian product at a time and has no such tensors, so the answer is False.

    Args:
        tensor (Tensor): any tensor.

    Returns:
        bool: False.

    Example::

        >>> import ember
        >>> ember._C._functorch.is_legacy_batchedtensor(ember.ones(2))
        False
    """
    return False


def _check_tensor(fn, tensor):
    from ._core.tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"{fn}(): incompatible function arguments. The following argument types are "
            f"supported:\n    1. (arg0: torch.Tensor) -> bool\n\nInvoked with: {tensor!r}")


def is_batchedtensor(tensor) -> bool:
    """Whether ``tensor`` is a tensor inside ``vmap``, batched over one or more levels
    (NOTE [ Batched tensors ] in ember/func/_batch_tensor.py).

    Args:
        tensor (Tensor): any tensor.

    Returns:
        bool: True for a batched tensor.

    Example::

        >>> import ember
        >>> from ember.func import vmap
        >>> ember._C._functorch.is_batchedtensor(ember.ones(2))
        False
        >>> seen = []
        >>> _ = vmap(lambda t: seen.append(ember._C._functorch.is_batchedtensor(t)) or t)(
        ...     ember.ones(3, 2))
        >>> seen
        [True]
    """
    _check_tensor("is_batchedtensor", tensor)
    from .func._batch_tensor import batch_info

    return batch_info(tensor) is not None


def get_unwrapped(tensor):
    """The tensor one vmap level down: the batched ``tensor`` with the batch dim of its
    innermost level in front, still batched over its outer levels.

    Args:
        tensor (Tensor): a batched tensor.

    Returns:
        Tensor: the tensor of the next level out.

    Raises:
        RuntimeError: ``tensor`` is not batched.

    Example::

        >>> import ember
        >>> from ember.func import vmap
        >>> vmap(lambda t: ember.tensor(ember._C._functorch.get_unwrapped(t).shape))(
        ...     ember.ones(3, 2))
        tensor([[3, 2],
                [3, 2],
                [3, 2]])
    """
    from .func._batch_tensor import batch_info, make_batched

    info = batch_info(tensor)
    if info is None:
        raise RuntimeError("No wrappers present!")
    phys, levels = info
    return make_batched(phys, levels[:-1])


def _add_batch_dim(tensor, batch_dim: int, level: int):
    """``tensor`` as a batched tensor of vmap level ``level``, mapped over its dim
    ``batch_dim`` (what ``vmap`` does to each mapped input).

    Args:
        tensor (Tensor): the input, itself batched over outer levels or not.
        batch_dim (int): the dim that becomes the batch dim.
        level (int): the vmap level.

    Returns:
        Tensor: the batched tensor.

    Example::

        >>> import ember
        >>> b = ember._C._functorch._add_batch_dim(ember.ones(3, 2), 0, 99)
        >>> ember._C._functorch._remove_batch_dim(b * 2, 99, 3, 1).shape
        ember.Size([2, 3])
    """
    from .func._vmap import _add_level

    return _add_level(tensor, batch_dim, level)


def _remove_batch_dim(tensor, level: int, batch_size: int, out_dim: int):
    """The output ``tensor`` of vmap level ``level`` with that level's batch dim at
    ``out_dim`` (expanded to ``batch_size`` when the output does not depend on the batch).

    Args:
        tensor (Tensor): an output computed inside the level.
        level (int): the vmap level.
        batch_size (int): the level's batch size.
        out_dim (int): where the batch dim goes.

    Returns:
        Tensor: the tensor outside the level.

    Example::

        >>> import ember
        >>> ember._C._functorch._remove_batch_dim(ember.ones(2), 7, 3, 0).shape
        ember.Size([3, 2])
    """
    from .func._vmap import _remove_level

    return _remove_level("vmap", tensor, level, out_dim, batch_size)
