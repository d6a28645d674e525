"""Random sorting, searching, counting and scattering programs for
tests/differential/programs.py.

NOTE [ Differential sorting programs ]
The OpInfo samples of sort, unique, searchsorted, topk, scatter and the rest draw random
values, so ties are rare and duplicate indices rarer; here the values come from a handful
(duplicates on purpose), with NaN, infinities and signed zeros among floats, and indices
repeat. A program calls one op with random keywords (``stable``, ``descending``,
``return_inverse``/``return_counts``/``dim``, ``side``/``right``/``sorter``/``out_int32``,
``interpolation``, ``reduce``/``include_self``, ``accumulate``, ``minlength``, ``bins`` and
``range``, ``weight``/``density``) and leaves every output in ``out``: values and, where
torch documents them, indices. Indices of tied values that torch leaves unspecified (topk,
sort without ``stable``, kthvalue, mode, median and the ``scatter`` of duplicate indices
without a reduction) are compared only where the values are all distinct.
"""

from __future__ import annotations

import numpy as np

_FLOATS = ("0.0", "-0.0", "1.0", "2.0", "-1.5", "float('nan')", "float('inf')",
           "-float('inf')", "3.0", "1.0")


def _pick(rng, *options):
    return options[int(rng.integers(len(options)))]


def _shape(rng, lo=0, hi=4, nd=None):
    nd = int(rng.integers(1, 3)) if nd is None else nd
    return tuple(int(v) for v in rng.integers(lo, hi + 1, size=nd))


def _values(rng, shape, dtype, distinct=False):
    """Source of a tensor of ``shape``: few distinct values (ties) or all distinct."""
    n = int(np.prod(shape)) if shape else 1
    if distinct:
        vals = [repr(float(v)) for v in rng.permutation(n) - n // 2]
    elif dtype in ("float32", "float64", "float16", "bfloat16"):
        vals = [_FLOATS[int(i)] for i in rng.integers(0, len(_FLOATS) if rng.random() < 0.5
                                                      else 5, size=n)]
    else:
        vals = [str(int(v)) for v in rng.integers(-2 if dtype != "uint8" else 0, 3, size=n)]
    flat = "[" + ", ".join(vals) + "]"
    return f"T.tensor({flat}, dtype=T.{dtype}).reshape({shape!r})"


def _dim(rng, shape):
    return int(rng.integers(-len(shape), len(shape))) if shape else 0


def _sort(rng):
    dtype = _pick(rng, "float32", "float64", "int64", "int32", "uint8", "bool", "float16")
    shape = _shape(rng)
    distinct = rng.random() < 0.3
    x = _values(rng, shape, dtype, distinct) if dtype != "bool" else \
        f"({_values(rng, shape, 'int64')} > 0)"
    d = _dim(rng, shape)
    r = int(rng.integers(6))
    desc = bool(rng.random() < 0.5)
    if r == 0:
        stable = _pick(rng, True, None) if not distinct else _pick(rng, True, False, None)
        if stable is None and not distinct:
            return f"out = T.sort({x}, dim={d}, descending={desc}).values"
        return f"out = tuple(T.sort({x}, dim={d}, descending={desc}, stable={stable}))"
    if r == 1:
        if distinct or rng.random() < 0.5:
            return f"out = T.argsort({x}, dim={d}, descending={desc}, stable=True)"
        return f"out = T.msort({x})"
    if r == 2:
        k = int(rng.integers(0, (shape[d] if shape else 1) + 2))
        largest = bool(rng.random() < 0.5)
        res = f"T.topk({x}, {k}, dim={d}, largest={largest}, sorted=True)"
        return f"out = tuple({res})" if distinct else f"out = {res}.values"
    if r == 3:
        k = int(rng.integers(0, (shape[d] if shape else 1) + 2))
        res = f"T.kthvalue({x}, {k}, dim={d}, keepdim={bool(rng.random() < 0.5)})"
        return f"out = tuple({res})" if distinct else f"out = {res}.values"
    if r == 4:
        op = _pick(rng, "median", "nanmedian", "mode")
        if rng.random() < 0.3 and op != "mode":
            return f"out = T.{op}({x})"
        res = f"T.{op}({x}, dim={d}, keepdim={bool(rng.random() < 0.5)})"
        return f"out = tuple({res})" if distinct else f"out = {res}.values"
    # unique and unique_consecutive
    kw = (f"return_inverse={bool(rng.random() < 0.5)}, "
          f"return_counts={bool(rng.random() < 0.5)}")
    if rng.random() < 0.4:
        kw += f", dim={d}"
    if rng.random() < 0.5:
        return f"out = T.unique_consecutive({x}, {kw})"
    return f"out = T.unique({x}, sorted={bool(rng.random() < 0.8)}, {kw})"


def _searchsorted(rng):
    dtype = _pick(rng, "float32", "float64", "int64", "int32")
    n = int(rng.integers(0, 6))
    batched = rng.random() < 0.3
    seq_vals = np.sort(rng.integers(-2, 3, size=(2, n) if batched else n), axis=-1)
    seq = f"T.tensor({seq_vals.tolist()!r}, dtype=T.{dtype})"
    sorter = ""
    if rng.random() < 0.3 and n:
        perm = np.stack([rng.permutation(n) for _ in range(2)]) if batched else \
            rng.permutation(n)
        seq = f"T.gather({seq}, -1, T.argsort(T.tensor({perm.tolist()!r})))"
        sorter = f", sorter=T.tensor({perm.tolist()!r})"
    vshape = (2, int(rng.integers(0, 4))) if batched else _shape(rng, 0, 3, int(rng.integers(0, 3)))
    vals = _values(rng, vshape, _pick(rng, dtype, "float64", "int64"))
    if rng.random() < 0.2 and not batched:
        vals = _pick(rng, "2", "0.5", "-3")
    side = _pick(rng, "", ", right=True", ", side='right'", ", side='left'",
                 ", right=True, side='left'")
    op = _pick(rng, "searchsorted", "searchsorted", "bucketize")
    if op == "bucketize" and not batched and not sorter and not vals.isdigit():
        bound = seq
        return (f"out = T.bucketize({vals}, {bound}, out_int32={bool(rng.random() < 0.3)}, "
                f"right={bool(rng.random() < 0.5)})")
    return (f"out = T.searchsorted({seq}, {vals}{side}{sorter}, "
            f"out_int32={bool(rng.random() < 0.3)})")


def _counting(rng):
    r = int(rng.integers(5))
    if r == 0:
        n = int(rng.integers(0, 8))
        idx = rng.integers(0, 5, size=n).tolist()
        if rng.random() < 0.1 and n:
            idx[0] = -1
        w = ""
        if rng.random() < 0.5:
            w = f", weights=T.tensor({rng.integers(-2, 3, size=n).tolist()!r}, " \
                f"dtype=T.{_pick(rng, 'float32', 'float64', 'int64')})"
        return (f"out = T.bincount(T.tensor({idx!r}, dtype=T.{_pick(rng, 'int64', 'uint8')})"
                f"{w}, minlength={int(rng.integers(0, 7))})")
    dtype = _pick(rng, "float32", "float64")
    x = _values(rng, _shape(rng, 0, 5), dtype)
    if r == 1:
        lo, hi = _pick(rng, (0, 0), (-1, 2), (0, 3), (2, -1), (1, 1))
        return f"out = T.histc({x}, bins={int(rng.integers(1, 6))}, min={lo}, max={hi})"
    if r == 2:
        bins = _pick(rng, "3", "1", f"T.tensor([-1.0, 0.0, 2.0, 2.0], dtype=T.{dtype})",
                     f"T.tensor([0.0, 1.0], dtype=T.{dtype})")
        kw = ""
        if bins.isdigit() and rng.random() < 0.5:
            kw += f", range={_pick(rng, (0.0, 2.0), (-1.0, 1.0), (1.0, 1.0))!r}"
        if rng.random() < 0.3:
            kw += f", density={bool(rng.random() < 0.5)}"
        return f"x = {x}\nout = tuple(T.histogram(x[x.isfinite()], {bins}{kw}))"
    q = _pick(rng, "0.5", "0.25", "1.0", "0.0", f"T.tensor([0.1, 0.5, 0.9], dtype=T.{dtype})",
              "1.5")
    interp = _pick(rng, "linear", "lower", "higher", "nearest", "midpoint")
    op = _pick(rng, "quantile", "nanquantile")
    dim = _pick(rng, "None", "0", "-1")
    return (f"out = T.{op}({x}, {q}, dim={dim}, keepdim={bool(rng.random() < 0.4)}, "
            f"interpolation={interp!r})")


def _scatter(rng):
    dtype = _pick(rng, "float32", "float64", "int64", "int32")
    rows, cols = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    base = _values(rng, (rows, cols), dtype)
    n = int(rng.integers(0, 6))
    src = _values(rng, (n, cols), dtype)
    idx = rng.integers(0, rows, size=n)
    if rng.random() < 0.1 and n:
        idx[0] = rows  # out of range
    ids = f"T.tensor({idx.tolist()!r})"
    unique_idx = len(set(idx.tolist())) == n
    r = int(rng.integers(6))
    if r == 0:
        red = _pick(rng, "sum", "prod", "mean", "amax", "amin")
        return (f"out = T.scatter_reduce({base}, 0, {ids}.unsqueeze(1).expand({n}, {cols}), "
                f"{src}, {red!r}, include_self={bool(rng.random() < 0.5)})")
    if r == 1:
        red = _pick(rng, "prod", "mean", "amax", "amin")
        return (f"out = {base}.index_reduce_(0, {ids}, {src}, {red!r}, "
                f"include_self={bool(rng.random() < 0.5)})")
    if r == 2:
        alpha = _pick(rng, "1", "2", "-1")
        return f"out = T.index_add({base}, 0, {ids}, {src}, alpha={alpha})"
    if r == 3:
        if not unique_idx:
            red = _pick(rng, "add", "multiply")
            return (f"out = T.scatter({base}, 0, {ids}.unsqueeze(1).expand({n}, {cols}), "
                    f"{src}, reduce={red!r})")
        return f"out = T.index_copy({base}, 0, {ids}, {src})"
    if r == 4:
        flat = rng.integers(-rows * cols, rows * cols, size=n).tolist()
        acc = bool(rng.random() < 0.5 or len(set(flat)) < n)
        vals = _values(rng, (n,), dtype)
        return (f"x = {base}\nr = x.put_(T.tensor({flat!r}), {vals}, accumulate={acc})\n"
                f"out = (r is x, x)")
    acc = bool(rng.random() < 0.5 or not unique_idx)
    return (f"x = {base}\nx.index_put_(({ids},), {src}, accumulate={acc})\nout = x")


def sorting(rng):
    """One sorting, searching, counting or scattering call on values with ties and NaN,
    with random keywords."""
    return _pick(rng, _sort, _sort, _searchsorted, _counting, _scatter, _scatter)(rng)
