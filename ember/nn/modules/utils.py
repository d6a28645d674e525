"""Helpers layer authors import: argument tuples (``_pair``...), factory keyword arguments,
and stripping a ``module.`` prefix from a (Distributed)DataParallel checkpoint."""

from __future__ import annotations

import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present", "factory_kwargs"]


def _ntuple(n, name="parse"):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """Reverse ``t`` and repeat each element ``n`` times: F.pad's order for conv padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """``out_size`` with each None replaced by the matching trailing size of ``defaults``."""
    if isinstance(out_size, (int, float)):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d
            for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` (and its ``_metadata``) in place.

    A checkpoint saved from a ``DataParallel``/``DistributedDataParallel`` wrapper names
    every entry ``module.<name>``; stripping ``"module."`` lets the bare model load it.

    Args:
        state_dict (dict): the state dict to edit.
        prefix (str): the prefix to remove, e.g. ``"module."``.

    Returns:
        None.

    Example:
        >>> import ember
        >>> sd = {"module.weight": ember.ones(1), "bias": ember.zeros(1)}
        >>> consume_prefix_in_state_dict_if_present(sd, "module.")
        >>> sorted(sd)
        ['bias', 'weight']
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # metadata keys name modules: "" for the root, "module" for a DDP wrapper
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)


def factory_kwargs(kwargs):
    """Check and normalise the tensor-factory keyword arguments a layer received.

    Accepts ``device``, ``dtype`` and ``memory_format``, plus a ``factory_kwargs`` dict for
    names that clash with the layer's own arguments; anything else is a TypeError.

    Args:
        kwargs (dict or None): the keyword arguments.

    Returns:
        dict: the factory arguments, ready for ``ember.empty(..., **result)``.

    Example:
        >>> import ember
        >>> ember.nn.factory_kwargs({"dtype": ember.float64})
        {'dtype': ember.float64}
    """
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    allowed = simple | {"factory_kwargs"}
    if not kwargs.keys() <= allowed:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - allowed}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in simple:
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
