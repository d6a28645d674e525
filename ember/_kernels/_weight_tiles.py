"""Winograd weight transforms kept from a convolution's forward for its backward.

NOTE [ One weight transform per step ]
A Winograd convolution (NOTE [ Winograd convolution ] in ``ember/_ops/nn_winograd.py``,
NOTE [ Planar Winograd ] in ``ember/_ops/nn_conv_winograd.py``) multiplies by the weight's
transform U = G w G^T, (16, O, C), and its input adjoint multiplies by the same U. A
training step used to compute U twice per layer, once in the forward and once in the
backward: for ResNet-18's 512 -> 512 layers each transform reads 9.4 MB and writes 16.8 MB,
3.4-5 ms on one core -- 12 of them a step at two threads, where every batch piece made its
own (OpenBLAS runs concurrent products one after the other, so they did not even overlap).

So the forward remembers the U it made, keyed on the two arrays the backward will see again:
the input ``x`` and the weight ``w`` (a node keeps both as saved tensors, so its backward
hands the kernel the very same ndarrays). The backward takes the entry out (``take``); an
entry whose input or weight dies goes with it (weak references), so a forward whose graph is
dropped without a backward -- or one that built no graph at all, its activations freed --
leaves nothing behind, and at most one entry per (input, weight) pair is ever kept. What an
entry costs is its U alive from the forward to the backward: 16/9 of the layer's weight
(ResNet-18's training step: peak resident memory 344 -> 377 MB, PyTorch's 413 MB; figures
in bench/RESULTS.md).

The weight's version counter cannot be seen from a kernel, but autograd raises before a
backward whose saved weight was changed in place by an op; what remains is a write that
bypasses the counter (``w.data.copy_(...)``, NumPy writes through ``w.numpy()``). A sample
of the weight's values is kept with U and compared before reuse, so such a write is noticed
unless it leaves all the sampled values as they were; then the input gradient is computed
with the weight of the forward (PyTorch's would use the new one: its result in that case is
the gradient of no function at all).
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import _parallel

#: (id(x), id(w), kind) -> (weakref to x, weakref to w, weight sample, U)
_kept: dict = {}

# weights with fewer elements than this are transformed again (microseconds), not kept
MIN_ELEMENTS = 1 << 14

_SAMPLES = 64


def _sample(w):
    flat = w.reshape(-1)
    step = max(1, flat.size // _SAMPLES)
    return flat[::step].copy()


def _forget(key):
    def drop(ref):
        # only the entry made with this reference: a later one under the same ids (a new
        # array at a freed address) stays
        entry = _kept.get(key)
        if entry is not None and (entry[0] is ref or entry[1] is ref):
            _kept.pop(key, None)
    return drop


def keep(kind, x, w, u):
    """Remember the transform ``u`` that a forward made of weight ``w`` applied to input
    ``x``, for the backward that will see the same two arrays (NOTE [ One weight transform
    per step ]).

    Args:
        kind: which transform (``"f2"``: F(2x2, 3x3)'s (16, O, C)).
        x: the forward's input array.
        w: the weight array.
        u: its transform.

    Returns:
        None

    Example::

        >>> x, w = np.ones((2, 64, 8, 8), np.float32), np.ones((128, 128, 3, 3), np.float32)
        >>> keep("f2", x, w, np.zeros((16, 128, 128), np.float32))
        >>> take("f2", x, w).shape
        (16, 128, 128)
    """
    if type(x) is not np.ndarray or type(w) is not np.ndarray or w.size < MIN_ELEMENTS:
        return
    key = (id(x), id(w), kind)
    drop = _forget(key)
    _kept[key] = (weakref.ref(x, drop), weakref.ref(w, drop), _sample(w), u)


def take(kind, x, w):
    """The transform a forward remembered for ``x`` and ``w`` (removed: the backward is its
    last reader), or None where there is none or the weight's sampled values changed since.

    Args:
        kind: as for ``keep``.
        x: the input array the backward sees.
        w: the weight array.

    Returns:
        ndarray | None: the transform.

    Example::

        >>> x, w = np.ones((2, 64, 8, 8), np.float32), np.ones((128, 128, 3, 3), np.float32)
        >>> take("f2", x, w) is None
        True
    """
    entry = _kept.pop((id(x), id(w), kind), None)
    if entry is None or entry[0]() is not x or entry[1]() is not w:
        return None
    if not np.array_equal(entry[2], _sample(w)):
        return None
    return entry[3]


def clear():
    """Forget every kept transform (tests; memory probes).

    Returns:
        None

    Example::

        >>> clear()
        >>> len(_kept)
        0
    """
    _kept.clear()


# NOTE [ Weight transforms on threads ]
# A weight transform (U = G w G^T of every kernel, a (16, 9) by (9, O*C) product) and the
# weight gradient's inverse (G^T dU G, with the batch pieces' dU added first) are memory
# passes run once per layer between the batch pieces (NOTE [ Batch pieces on threads ] in
# ember/_parallel.py), so the second core idled through them: 6.5 ms each for a 512 -> 512
# layer at two threads. Both are cut into column blocks, the blocks shared between the
# threads, each block a single-thread product written into its slice of the result (the
# same values: every column is its own product); the pieces' dU are added block by block in
# the cache instead of in a separate pass over whole arrays.

# columns of a block: 16 x 8192 float32 values (512 KB) stay in the cache between the sum
# of the pieces and the product
_BLOCK = 8192
# products below this many columns run whole on the calling thread
_SPLIT_COLUMNS = 1 << 15


def _blocks(size, fn):
    """Run ``fn(lo, hi)`` over ``range(size)`` in blocks, on every thread where that pays,
    with the BLAS at one thread."""

    def run(lo, hi):
        for b in range(lo, hi, _BLOCK):
            fn(b, min(b + _BLOCK, hi))

    # (not from inside a batch piece: the pool's threads are all taken, and a block handed
    # to the pool would wait for the piece that waits for it)
    # The BLAS is held at one thread for small transforms too: a product OpenBLAS splits
    # itself leaves its workers polling for ~0.12 s, a core the next convolution's batch
    # pieces wait for (NOTE [ Pieces and the BLAS workers ] in ember/_parallel.py).
    held = not getattr(_parallel._piece, "busy", False) and _parallel._threads() > 1 and \
        bool(_parallel._blas_controllers())
    on = held and size >= _SPLIT_COLUMNS
    if held:
        _parallel._hold_blas()
    try:
        # (whole blocks per thread: split_on_threads cuts into equal pieces of columns)
        blocks = -(-size // _BLOCK)
        if not (on and _parallel.split_on_threads(
                lambda lo, hi: run(lo * _BLOCK, min(hi * _BLOCK, size)), blocks, 2)):
            run(0, size)
    finally:
        if held:
            _parallel._release_blas()


def transform(kw, w):
    """U = G w G^T of every kernel of ``w``: ``kw @ w.reshape(O*C, taps).T`` as an (m, O, C)
    array, its columns in blocks on the threads (NOTE [ Weight transforms on threads ]).

    Args:
        kw: the (m, taps) transform on flattened taps (F(2x2, 3x3): (16, 9)).
        w: the (O, C, kh, kw) NumPy weight, kh * kw = taps.

    Returns:
        ndarray: (m, O, C), w's dtype.

    Example::

        >>> kw = np.ones((16, 9), np.float32)
        >>> transform(kw, np.ones((2, 3, 3, 3), np.float32))[:, 0, 0].tolist() == [9.0] * 16
        True
    """
    o, c = w.shape[:2]
    wt = w.reshape(o * c, -1).T            # (taps, O*C), a view
    u = np.empty((kw.shape[0], o * c), w.dtype)

    def block(lo, hi):
        np.matmul(kw, wt[:, lo:hi], out=u[:, lo:hi])

    _blocks(o * c, block)
    return u.reshape(kw.shape[0], o, c)


def inverse(parts, kw):
    """The (O, C, taps) gradient ``(sum of parts).reshape(m, O*C).T @ kw`` of tile-space
    sums ``parts`` (each (m, O, C), one per batch piece), added and multiplied block by block
    on the threads (NOTE [ Weight transforms on threads ]).

    Args:
        parts: non-empty list of (m, O, C) NumPy arrays of one dtype.
        kw: the (m, taps) transform.

    Returns:
        ndarray: (O, C, taps).

    Example::

        >>> kw = np.ones((16, 9), np.float32)
        >>> inverse([np.ones((16, 2, 3), np.float32)] * 2, kw)[0, 0].tolist() == [32.0] * 9
        True
    """
    m, o, c = parts[0].shape
    flat = [p.reshape(m, o * c) for p in parts]
    gw = np.empty((o * c, kw.shape[1]), parts[0].dtype)

    def block(lo, hi):
        s = flat[0][:, lo:hi]
        if len(flat) > 1:
            s = s + flat[1][:, lo:hi]
            for f in flat[2:]:
                s += f[:, lo:hi]
        np.matmul(s.T, kw, out=gw[lo:hi])

    _blocks(o * c, block)
    return gw.reshape(o, c, kw.shape[1])
