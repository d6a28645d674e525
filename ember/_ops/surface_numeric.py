"""Numerical helpers of the ``torch`` namespace composed from other ops: ``gradient`` (finite
differences), ``histogramdd`` and ``cond`` (eager control flow).

``gradient`` is written with differentiable ops (slices, arithmetic, ``cat``), so autograd
and create_graph come for free; ``histogramdd`` counts with NumPy (no gradient, as in
PyTorch); ``cond`` calls the chosen branch.
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

from .. import _dispatch, return_types
from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from ._registry import public

return_types.make("histogramdd", ("hist", "bin_edges"))


def _fn(name):
    from ._registry import functions

    return functions[name]


# ------------------------------------------------------------------------------------------------
# gradient


def _along(x, dim, start, stop):
    return x.narrow(dim, start, stop - start)


def _shaped(c, dim, ndim):
    """A 1-D coefficient tensor shaped to broadcast along ``dim`` of an ``ndim``-D tensor."""
    shape = [1] * ndim
    shape[dim] = -1
    return c.reshape(shape)


def _uniform(f, dim, h, edge_order):
    n = f.shape[dim]
    inner = (_along(f, dim, 2, n) - _along(f, dim, 0, n - 2)) / (2 * h)
    f0, f1, f2 = (_along(f, dim, i, i + 1) for i in range(3)) if n > 2 else \
        (_along(f, dim, 0, 1), _along(f, dim, 1, 2), None)
    g0, g1, g2 = (_along(f, dim, n - i, n - i + 1) for i in (1, 2, 3)) if n > 2 else \
        (_along(f, dim, n - 1, n), _along(f, dim, n - 2, n - 1), None)
    if edge_order == 1:
        first, last = (f1 - f0) / h, (g0 - g1) / h
    else:
        first = (-3 * f0 + 4 * f1 - f2) / (2 * h)
        last = (3 * g0 - 4 * g1 + g2) / (2 * h)
    return _fn("cat")([first, inner, last], dim)


def _coordinates(f, dim, x, edge_order):
    n, nd = f.shape[dim], f.dim()
    dx = x[1:] - x[:-1]
    hl, hr = dx[:-1], dx[1:]
    a = _shaped(-hr / (hl * (hl + hr)), dim, nd)
    b = _shaped((hr - hl) / (hl * hr), dim, nd)
    c = _shaped(hl / (hr * (hl + hr)), dim, nd)
    inner = a * _along(f, dim, 0, n - 2) + b * _along(f, dim, 1, n - 1) + c * _along(f, dim, 2, n)
    f0, f1 = _along(f, dim, 0, 1), _along(f, dim, 1, 2)
    g0, g1 = _along(f, dim, n - 1, n), _along(f, dim, n - 2, n - 1)
    if edge_order == 1:
        first, last = (f1 - f0) / dx[0], (g0 - g1) / dx[-1]
    else:
        f2, g2 = _along(f, dim, 2, 3), _along(f, dim, n - 3, n - 2)
        d1, d2 = dx[0], dx[1]
        first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * f0 + (d1 + d2) / (d1 * d2) * f1
                 - d1 / (d2 * (d1 + d2)) * f2)
        d1, d2 = dx[-2], dx[-1]
        last = (d2 / (d1 * (d1 + d2)) * g2 - (d2 + d1) / (d1 * d2) * g1
                + (2 * d2 + d1) / (d2 * (d1 + d2)) * g0)
    return _fn("cat")([first, inner, last], dim)


@public(method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the gradient of a sampled function by central differences in the interior
    and one-sided differences (of order ``edge_order``) at the boundaries.

    Args:
        input (Tensor): the sampled values.
        spacing (scalar, list of scalars, or list of 1-D Tensors): the sample spacing -- one
            scalar for every dim, one per dim, or the sample coordinates along each dim.
        dim (int or list of ints, optional): the dims to differentiate along (all by
            default).
        edge_order (int): 1 or 2, the accuracy order at the boundaries.

    Returns:
        tuple of Tensors: one derivative per dim, each of ``input``'s shape.

    Example::

        >>> ember.gradient(ember.tensor([1., 4., 9., 16., 25.]))
        (tensor([3., 4., 6., 8., 9.]),)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    nd = input.dim()
    dims = list(range(nd)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [d % nd if nd else d for d in dims]
    if isinstance(spacing, (numbers.Number, Tensor)) and not (
            isinstance(spacing, Tensor) and spacing.dim() == 1):
        spacing = [spacing] * len(dims)
    else:
        spacing = list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(spacing)} and a dim argument "
                           f"of length {len(dims)}.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input
    if not (f.is_floating_point() or f.is_complex()):
        f = f.to(_dt.get_default_dtype())
    out = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor) and h.dim() == 1:
            if h.shape[0] != f.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and to have as many elements as input.size({d})")
            out.append(_coordinates(f, d, h.to(f.dtype), edge_order))
        else:
            out.append(_uniform(f, d, h.item() if isinstance(h, Tensor) else h, edge_order))
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# histogramdd


@public(method=False)
def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """A D-dimensional histogram of the points in the rows of ``input``.

    Args:
        input (Tensor): (N, D) points (or (..., D), flattened to rows).
        bins (int, list of ints, or list of 1-D Tensors): the bin count for every dim, one
            count per dim, or the increasing bin edges per dim.
        range (list of floats, optional): ``[lo0, hi0, lo1, hi1, ...]``, the outer edges
            (the data's min and max by default).
        weight (Tensor, optional): one weight per point.
        density (bool): normalise to a probability density.

    Returns:
        (Tensor, tuple of Tensors): ``(hist, bin_edges)``.

    Example::

        >>> pts = ember.tensor([[0., 0.], [1., 1.], [2., 2.]])
        >>> ember.histogramdd(pts, bins=2).hist
        tensor([[1., 0.],
                [0., 2.]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"histogramdd(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"\"histogramdd\" not implemented for "
                           f"'{input.dtype.scalar_name}'")
    a = input.detach().numpy()
    if a.ndim < 2:
        raise RuntimeError("torch.histogramdd: input should have at least 2 dimensions, but "
                           f"got {a.ndim}")
    pts = a.reshape(-1, a.shape[-1])
    n_dims = pts.shape[1]
    if isinstance(bins, int):
        bins = [bins] * n_dims
    bins = list(bins)
    if len(bins) != n_dims:
        raise RuntimeError(f"histogramdd: expected {n_dims} sequences of bin edges for each "
                           f"dimension of the input tensor, but got {len(bins)}")
    edges = []
    for k, b in enumerate(bins):
        if isinstance(b, Tensor):
            edges.append(b.detach().numpy().astype(a.dtype))
            continue
        if range is not None:
            lo, hi = float(range[2 * k]), float(range[2 * k + 1])
        elif pts.shape[0]:
            lo, hi = float(pts[:, k].min()), float(pts[:, k].max())
        else:
            lo, hi = 0.0, 0.0
        if lo > hi:
            raise RuntimeError(f"histogramdd: min should not exceed max, but got min {lo} "
                               f"max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(np.linspace(lo, hi, int(b) + 1).astype(a.dtype))
    w = None if weight is None else weight.detach().numpy().reshape(-1)
    hist, _ = np.histogramdd(pts.astype(np.float64), bins=[e.astype(np.float64) for e in edges],
                             weights=w, density=density)
    r = (wrap(np.ascontiguousarray(hist.astype(a.dtype))),
         builtins.tuple(wrap(np.ascontiguousarray(e)) for e in edges))
    return return_types.make("histogramdd", ("hist", "bin_edges"))(*r)


# ------------------------------------------------------------------------------------------------
# cond


@public(method=False)
def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``: data-dependent control
    flow, run eagerly (ember's ``compile`` runs eagerly too, so no graph is captured).

    Args:
        pred (bool or one-element Tensor): the condition.
        true_fn, false_fn (callable): the branches, taking the operands.
        operands (tuple or list of Tensors): the branches' inputs.

    Returns:
        what the chosen branch returns.

    Example::

        >>> ember.cond(ember.tensor(True), lambda x: x + 1, lambda x: x - 1, (ember.ones(2),))
        tensor([2., 2.])
    """
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    return true_fn(*operands) if pred else false_fn(*operands)


# ------------------------------------------------------------------------------------------------
# lobpcg


@public(method=False)
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenpairs of the symmetric (generalized) problem
    ``A x = lambda B x``.

    ember solves the problem exactly with a dense symmetric eigendecomposition (``eigh``,
    after a Cholesky transform when ``B`` is given) instead of iterating: the result is what
    LOBPCG converges to, gradients flow through ``eigh``, and the iteration controls
    (``X``'s values, ``iK``, ``niter``, ``tol``, ``method``, ``tracker``, ``ortho_*``) are
    accepted and have no effect.

    Args:
        A (Tensor): (m, m) symmetric positive-definite matrix (dense or sparse).
        k (int, optional): the number of eigenpairs (default 1, or ``X``'s column count).
        B (Tensor, optional): (m, m) symmetric positive-definite matrix of the generalized
            problem.
        X (Tensor, optional): (m, n) initial vectors; set ``n``.
        n (int, optional): the size of the search subspace (at least ``k``; ``m >= 3n``).
        largest (bool, optional): the largest eigenvalues (default) or the smallest.

    Returns:
        (Tensor, Tensor): eigenvalues ``E`` (k,) -- descending for the largest, ascending
        for the smallest -- and eigenvectors ``X`` (m, k).

    Example::

        >>> E, X = ember.lobpcg(ember.diag(ember.arange(1., 7.)), k=1)
        >>> E
        tensor([6.])
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.layout.name != "strided":
        A = A.to_dense()
    if B is not None and B.layout.name != "strided":
        B = B.to_dense()
    m = A.shape[-1]
    if A.dim() != 2 or A.shape[0] != m:
        raise ValueError(f"A must be a square matrix, got shape {tuple(A.shape)}")
    if k is None:
        k = 1 if X is None else X.shape[-1]
    if n is None:
        n = k if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest
    from .. import linalg as _linalg  # upward (linalg namespace), called only here

    sym = (A + A.mT) / 2
    if B is None:
        evals, evecs = _linalg.eigh(sym)
    else:
        L = _linalg.cholesky((B + B.mT) / 2)
        left = _linalg.solve_triangular(L, sym, upper=False)
        C = _linalg.solve_triangular(L, left.mT, upper=False)
        evals, V = _linalg.eigh((C + C.mT) / 2)
        evecs = _linalg.solve_triangular(L.mT, V, upper=True)
    if largest:
        pick = list(range(m - 1, m - 1 - k, -1))
    else:
        pick = list(range(k))
    index = wrap(np.asarray(pick, dtype=np.int64))
    return evals[index], evecs[:, index]


# ------------------------------------------------------------------------------------------------
# binomial


@public(method=False)
def binomial(count, prob, generator=None):
    """Samples from binomial distributions: the number of successes in ``count`` trials of
    success probability ``prob`` (element-wise, broadcast).

    Args:
        count (Tensor): floating-point trial counts.
        prob (Tensor): success probabilities in [0, 1].
        generator (ember.Generator, optional): the random source.

    Returns:
        Tensor: ``count``'s dtype, the broadcast shape.

    Example::

        >>> ember.binomial(ember.tensor([4., 0.]), ember.tensor([1., 0.5]))
        tensor([4., 0.])
    """
    from .._core.generator import resolve
    from .._core.rng_sequential import binomial_array

    for name, x in (("count", count), ("prob", prob)):
        if not isinstance(x, Tensor):
            raise TypeError(f"binomial(): argument '{name}' must be Tensor, not "
                            f"{type(x).__name__}")
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype.scalar_name}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype.scalar_name} but expected "
                           f"{count.dtype.scalar_name}")
    if count.dtype.itemsize < 4:
        raise NotImplementedError(
            f'"binomial_cpu" not implemented for \'{count.dtype.scalar_name}\'')
    n = count.detach().numpy().astype(np.float64)
    p = prob.detach().numpy().astype(np.float64)
    n, p = np.broadcast_arrays(n, p)
    if n.shape != count.shape:
        _dispatch.warn_resized(count.shape, n.shape)
    # PyTorch's numbers from the same seed (NOTE [ Binomial draws on the generator's stream ])
    draws = binomial_array(resolve(generator), n, p)
    return wrap(np.ascontiguousarray(np.asarray(draws).astype(count.dtype.np)))
