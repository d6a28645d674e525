"""``torch._functorch.vmap``: the helpers of ``vmap`` that libraries build their own
batching on (tensordict imports them): entering and leaving a level, naming the mapped
function, flattening ``in_dims``/``out_dims`` against the inputs' tree. ``vmap`` itself is
``ember.func.vmap`` (NOTE [ vmap levels ] in ember/func/_vmap.py).

Example::

    >>> from ember._functorch.vmap import _maybe_remove_batch_dim
    >>> _maybe_remove_batch_dim("f", ember.ones(2), 5, 3, 0).shape
    ember.Size([3, 2])
"""

from __future__ import annotations

from .._C_functorch import _add_batch_dim, _remove_batch_dim, is_batchedtensor
from .._core.tensor import Tensor
from ..func._vmap import _broadcast_flatten, _name
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["Tensor", "_add_batch_dim", "_broadcast_to_and_flatten", "_get_name",
           "_maybe_remove_batch_dim", "_remove_batch_dim", "tree_flatten", "tree_unflatten"]


def _get_name(func) -> str:
    """The name ``vmap``'s messages give ``func``: its ``__name__``, a description of a
    ``functools.partial``, else its repr.

    Args:
        func (callable): the mapped function.

    Returns:
        str: the name.

    Example::

        >>> import functools
        >>> _get_name(functools.partial(max, 1))
        'functools.partial(max, ...)'
    """
    return _name(func)


def _broadcast_to_and_flatten(tree, treespec, is_leaf=None):
    """``tree`` (an int/None, or a prefix of the tree ``treespec`` describes) repeated down
    to one entry per leaf of ``treespec``: how ``in_dims`` and ``out_dims`` are matched to
    inputs and outputs.

    Args:
        tree: the dims, a leaf or a prefix of ``treespec``'s tree.
        treespec (TreeSpec): the structure to broadcast to.
        is_leaf: accepted for PyTorch's signature; ``tree``'s leaves are its ints and Nones.

    Returns:
        list or None: one entry per leaf, or None when ``tree`` is no prefix of it.

    Example::

        >>> _broadcast_to_and_flatten((0, None), tree_flatten((1, [2, 3]))[1])
        [0, None, None]
    """
    return _broadcast_flatten(tree, treespec)


def _maybe_remove_batch_dim(name: str, batched_output, vmap_level: int, batch_size: int,
                            out_dim):
    """One output of the function mapped at ``vmap_level``, taken out of the level: its
    batch dim at ``out_dim``, or the output unchanged for ``out_dim=None`` (which a batched
    output may not have).

    Args:
        name (str): the mapped function's name, for error messages.
        batched_output: the output.
        vmap_level (int): the level.
        batch_size (int): the level's batch size.
        out_dim (int or None): where the batch dim goes.

    Returns:
        the output outside the level.

    Example::

        >>> _maybe_remove_batch_dim("f", 3, 1, 2, None)
        3
    """
    if out_dim is None:
        if isinstance(batched_output, Tensor) and is_batchedtensor(batched_output):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             "when out_dim is None")
        return batched_output
    if not isinstance(batched_output, Tensor):
        raise ValueError(
            f"vmap({name}, ...): `{name}` must only return Tensors, got type "
            f"{type(batched_output)}. Did you mean to set out_dims= to None for output?")
    return _remove_batch_dim(batched_output, vmap_level, batch_size, out_dim)
