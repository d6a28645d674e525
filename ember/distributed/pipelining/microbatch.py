"""Cutting a batch into microbatches and joining the microbatches' outputs again."""

from __future__ import annotations

from typing import Any

import ember
from ember.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["TensorChunkSpec", "split_args_kwargs_into_chunks", "merge_chunks", "sum_reducer"]

DEFAULT_CHUNK_DIM = 0


class TensorChunkSpec:
    """Says along which dimension a tensor argument (or output) is cut into microbatches.

    Args:
        split_dim (int): the dimension to cut along.

    Example::

        >>> from ember.distributed.pipelining import TensorChunkSpec
        >>> TensorChunkSpec(1).split_dim
        1
        >>> [s.split_dim for s in TensorChunkSpec.from_tuple((0, 1))]
        [0, 1]
    """

    def __init__(self, split_dim: int):
        self.split_dim = split_dim

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__name__}({self.split_dim})"

    def __str__(self) -> str:
        return f"TensorChunkSpec({self.split_dim})"

    @staticmethod
    def from_tuple(chunk_dims: tuple) -> tuple:
        """One spec per positional argument from their dimensions.

        Args:
            chunk_dims (tuple of int): the dimension of each argument.

        Returns:
            tuple of TensorChunkSpec.

        Example::

            >>> TensorChunkSpec.from_tuple((0,))[0].split_dim
            0
        """
        return tuple(TensorChunkSpec(d) for d in chunk_dims)

    @staticmethod
    def from_dict(chunk_dims: dict) -> dict:
        """One spec per keyword argument from their dimensions.

        Args:
            chunk_dims (dict of str to int): the dimension of each keyword argument.

        Returns:
            dict of str to TensorChunkSpec.

        Example::

            >>> TensorChunkSpec.from_dict({"mask": 1})["mask"].split_dim
            1
        """
        return {k: TensorChunkSpec(d) for k, d in chunk_dims.items()}


class _Replicate:
    """Marks an argument that every microbatch receives whole."""


class _CustomReducer:
    """Merges the microbatches' values of one output with ``reduce_fn`` from ``init_value``."""

    def __init__(self, init_value, reduce_fn):
        self.init_value = init_value
        self.reduce_fn = reduce_fn


class _LossReducer(_CustomReducer):
    pass


sum_reducer = _LossReducer(0.0, lambda a, b: a + b)


def _is_replicate(spec) -> bool:
    return spec is _Replicate or isinstance(spec, _Replicate)


def _cut(t, spec: TensorChunkSpec, chunks: int) -> list:
    size = t.size(spec.split_dim)
    if size < chunks:
        raise ValueError(f"split_args_kwargs_into_chunks: a tensor of size {size} along "
                         f"dimension {spec.split_dim} cannot be cut into {chunks} chunks")
    return list(ember.tensor_split(t, chunks, dim=spec.split_dim))


def _shard(values: dict, specs: dict, chunks: int) -> list:
    """``values`` (name -> value) cut into a list of ``chunks`` dicts, as ``specs`` say."""
    flat = {}
    for name, value in values.items():
        leaves, tree = tree_flatten(value)
        spec = specs.get(name) if specs is not None else None
        spec_leaves = [spec] * len(leaves) if spec is None or _is_replicate(spec) or \
            isinstance(spec, TensorChunkSpec) else tree_flatten(spec)[0]
        if len(spec_leaves) != len(leaves):
            raise ValueError(f"split_args_kwargs_into_chunks: argument {name!r} has "
                             f"{len(leaves)} leaves but its chunk spec has {len(spec_leaves)}")
        flat[name] = (leaves, tree, spec_leaves)
    # a tensor shorter than ``chunks`` lowers the count for every argument (as torch does)
    for leaves, _, spec_leaves in flat.values():
        for leaf, spec in zip(leaves, spec_leaves):
            if isinstance(leaf, ember.Tensor) and not _is_replicate(spec):
                dim = spec.split_dim if isinstance(spec, TensorChunkSpec) else DEFAULT_CHUNK_DIM
                chunks = min(chunks, leaf.size(dim))
    out = [{} for _ in range(chunks)]
    for name, (leaves, tree, spec_leaves) in flat.items():
        per_chunk = [[] for _ in range(chunks)]
        for leaf, spec in zip(leaves, spec_leaves):
            if isinstance(leaf, ember.Tensor) and not _is_replicate(spec):
                if spec is None:
                    spec = TensorChunkSpec(DEFAULT_CHUNK_DIM)
                if not isinstance(spec, TensorChunkSpec):
                    raise TypeError(f"split_args_kwargs_into_chunks: expected a TensorChunkSpec "
                                    f"for a tensor argument, got {type(spec).__name__}")
                pieces = _cut(leaf, spec, chunks)
            else:
                pieces = [leaf] * chunks
            for i in range(chunks):
                per_chunk[i].append(pieces[i])
        for i in range(chunks):
            out[i][name] = tree_unflatten(per_chunk[i], tree)
    return out


def split_args_kwargs_into_chunks(args: tuple, kwargs: dict | None, chunks: int,
                                  args_chunk_spec: tuple | None = None,
                                  kwargs_chunk_spec: dict | None = None) -> tuple[list, list]:
    """Cut positional and keyword arguments into ``chunks`` microbatches.

    Tensors are cut with ``tensor_split`` along their spec's dimension (0 by default);
    other values are given whole to every microbatch. A tensor shorter than ``chunks``
    along its dimension lowers the number of microbatches for all arguments.

    Args:
        args (tuple): positional arguments of the whole batch.
        kwargs (dict, optional): keyword arguments of the whole batch.
        chunks (int): the number of microbatches wanted.
        args_chunk_spec (tuple of TensorChunkSpec, optional): one per positional argument.
        kwargs_chunk_spec (dict of str to TensorChunkSpec, optional): one per keyword argument.

    Returns:
        (list of tuple, list of dict): each microbatch's positional and keyword arguments.

    Example::

        >>> import ember
        >>> from ember.distributed.pipelining.microbatch import split_args_kwargs_into_chunks
        >>> a, k = split_args_kwargs_into_chunks((ember.arange(4.0), 7), None, 2)
        >>> a[1]
        (tensor([2., 3.]), 7)
    """
    kwargs = kwargs or {}
    if args_chunk_spec is not None and len(args_chunk_spec) != len(args):
        raise ValueError(f"split_args_kwargs_into_chunks: {len(args)} positional arguments but "
                         f"{len(args_chunk_spec)} chunk specs")
    arg_specs = None if args_chunk_spec is None else dict(enumerate(args_chunk_spec))
    args_split = _shard(dict(enumerate(args)), arg_specs, chunks)
    n = len(args_split)
    kwargs_split = _shard(kwargs, kwargs_chunk_spec, n) if kwargs else [{} for _ in range(n)]
    if len(kwargs_split) < n:  # the keyword tensors were shorter still
        n = len(kwargs_split)
        args_split = _shard(dict(enumerate(args)), arg_specs, n)
    return [tuple(c[i] for i in range(len(args))) for c in args_split], kwargs_split


def merge_chunks(chunks: list, chunk_spec: Any) -> Any:
    """Join the microbatches' values back into one, the inverse of the split.

    Args:
        chunks (list): one value (a tensor or a nest of them) per microbatch.
        chunk_spec: a nest matching one value: ``TensorChunkSpec`` leaves are concatenated
            along their dimension, reducers (``sum_reducer``) fold the values, other leaves
            must be equal in every microbatch. None concatenates every leaf along dimension 0.

    Returns:
        The merged value.

    Example::

        >>> import ember
        >>> from ember.distributed.pipelining.microbatch import merge_chunks
        >>> merge_chunks([ember.ones(1), ember.zeros(2)], None)
        tensor([1., 0., 0.])
    """
    if chunk_spec is None:
        first, tree = tree_flatten(chunks[0])
        spec_leaves = [TensorChunkSpec(DEFAULT_CHUNK_DIM)] * len(first)
    elif isinstance(chunk_spec, (TensorChunkSpec, _CustomReducer)):
        spec_leaves, tree = [chunk_spec], tree_flatten(chunks[0])[1]
    else:
        spec_leaves, tree = tree_flatten(chunk_spec)
    flat = []
    for c in chunks:
        leaves = tree_flatten(c)[0]
        if len(leaves) != len(spec_leaves):
            raise ValueError(f"merge_chunks: chunk {c} does not match chunk spec {chunk_spec}")
        flat.append(leaves)
    merged = []
    for i, spec in enumerate(spec_leaves):
        values = [leaves[i] for leaves in flat]
        if isinstance(spec, TensorChunkSpec):
            merged.append(ember.cat(values, dim=spec.split_dim))
        elif isinstance(spec, _CustomReducer):
            acc = spec.init_value
            for v in values:
                acc = spec.reduce_fn(acc, v)
            merged.append(acc)
        else:
            for v in values[1:]:
                if not v == values[0]:
                    raise ValueError(f"merge_chunks: a replicated value differs between "
                                     f"microbatches: {values[0]} and {v}")
            merged.append(values[0])
    return tree_unflatten(merged, tree)
