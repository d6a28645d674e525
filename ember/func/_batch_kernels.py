"""Kernels that the batching rules call on physical arrays directly.

NOTE [ Batched outer products ]
The weight gradient of a per-example ``linear`` is a batch of outer products
(``g[b, :, None] * x[b, None, :]``), and in per-sample gradients it is the largest thing
computed: for a 784-128-10 MLP over 64 examples, 6.4 million products written to 25 MB.
It is bound by memory, yet NumPy's ``einsum`` takes ~1.8x as long as filling the same array
and its broadcasting multiply ~2.4x; a compiled loop (``outer_rows`` in _batch_numba.py)
writes each row of the result once, at about the cost of the fill, as PyTorch's kernel does.
It runs for float32 NumPy arrays when the fused kernels' backend is numba (NOTE [ Fused
kernels ] in ember/_kernels/__init__.py), and only where nothing would record the call
(no mode left on the stack, no operand requiring grad): the caller then wraps the array as
a plain result. Otherwise, and without numba, ``einsum`` computes the same products. A result
larger than the caches is written with streaming stores (NOTE [ Streaming stores for large
products ] in _batch_numba.py).
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch, _kernels, _parallel
from .._lazy_import import keep_warnings_seen, prepare_numba

_impl = None  # the _batch_numba module once loaded, False when it fails to import


def _numba():
    global _impl
    if _impl is None:
        try:
            with keep_warnings_seen():  # NOTE [ First-use imports keep the warnings seen ]
                from . import _batch_numba

                prepare_numba()
        except Exception:  # numba missing or broken: _kernels warned once already
            _impl = False
        else:
            _impl = _batch_numba
    return _impl


def outer_rows(a, b):
    """The array ``out[..., i, j] = a[..., i] * b[..., j]`` for Tensors ``a``, ``b`` with
    the same leading shape, or None when the compiled kernel does not take them (the caller
    falls back to ``einsum``).

    Args:
        a: a Tensor of shape ``(*B, N)``.
        b: a Tensor of shape ``(*B, M)``, same dtype as ``a``.

    Returns:
        numpy.ndarray or None: the products, shape ``(*B, N, M)``, C-contiguous.

    Example::

        >>> import ember
        >>> r = outer_rows(ember.ones(2, 3), ember.ones(2, 4))
        >>> r is None or r.shape == (2, 3, 4)
        True
    """
    if _dispatch.state.modes:
        return None
    if _dispatch.state.grad_enabled and (a.requires_grad or b.requires_grad):
        return None
    x, y = a._data, b._data
    if _kernels._fast(x, y) is None:
        return None
    impl = _numba()
    if not impl:
        return None
    lead = x.shape[:-1]
    x2 = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    y2 = np.ascontiguousarray(y.reshape(-1, y.shape[-1]))
    out = np.empty(x2.shape + (y2.shape[-1],), dtype=x.dtype)
    # NOTE [ Streaming stores for large products ] in _batch_numba.py
    kernel = impl.outer_rows_stream if impl.HAS_STREAM and \
        out.nbytes >= impl.STREAM_MIN_BYTES else impl.outer_rows

    def run(lo, hi):  # the examples lo..hi
        kernel(x2[lo:hi], y2[lo:hi], out[lo:hi])

    # the halves of a large batch on two threads where that pays (NOTE [ Threaded
    # element-wise ops ] in ember/_parallel.py), cut between examples
    rows, per_row = len(out), out[0].size
    if not _parallel.split_on_threads(run, rows,
                                      min_size=max(2, -(-_parallel.MIN_ELEMENTS // per_row))):
        run(0, rows)
    return out.reshape(lead + out.shape[1:])
