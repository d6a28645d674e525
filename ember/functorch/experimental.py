"""``ember.functorch.experimental``: the names ``functorch.experimental`` kept (the
transforms are ``ember.func``'s)."""

from __future__ import annotations

from .. import func as _func

__all__ = ["functionalize", "hessian", "jacfwd", "jvp", "chunk_vmap",
           "replace_all_batch_norm_modules_"]

functionalize = _func.functionalize
hessian = _func.hessian
jacfwd = _func.jacfwd
jvp = _func.jvp


def chunk_vmap(func, in_dims=0, out_dims=0, randomness="error", chunks=2):
    """``vmap`` run over ``chunks`` slices of the batch at a time (less memory).

    Args:
        func: the function to vectorise.
        in_dims, out_dims, randomness: as for ``ember.func.vmap``.
        chunks (int): how many pieces to split the batch into. Default: 2.

    Returns:
        The vectorised function.

    Example:
        >>> import ember
        >>> from ember.functorch.experimental import chunk_vmap
        >>> chunk_vmap(ember.sin, chunks=3)(ember.zeros(7, 2)).shape
        ember.Size([7, 2])
    """
    if chunks == 1:
        return _func.vmap(func, in_dims, out_dims, randomness=randomness)

    def run(*args, **kwargs):
        from ..utils import _pytree as pytree

        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        size = None
        for a, d in zip(args, dims):
            leaves = pytree.tree_flatten(a)[0]
            leaf_dims = pytree.tree_flatten(d)[0] if isinstance(d, (tuple, list, dict)) \
                else [d] * len(leaves)
            for t, ld in zip(leaves, leaf_dims):
                if ld is not None and size is None:
                    size = t.shape[ld]
        chunk = max(1, -(-size // chunks)) if size else None
        return _func.vmap(func, in_dims, out_dims, randomness=randomness,
                          chunk_size=chunk)(*args, **kwargs)

    return run


replace_all_batch_norm_modules_ = _func.replace_all_batch_norm_modules_
