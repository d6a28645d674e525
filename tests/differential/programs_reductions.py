"""Random reduction programs with ``dtype=`` and ``out=`` for tests/differential/programs.py.

NOTE [ Differential reduction programs ]
The OpInfo cases call a reduction with its samples' dims and rarely with ``dtype=`` (the
accumulation and result dtype) or ``out=`` (checked against the result's dtype and shape,
resized when empty, written through when it is a view); the promotion programs cover
element-wise ops only. A program here draws a tensor of one of 15 dtypes (small integers, so
sums are exact in every dtype; now and then an empty dim, a transposed or expanded input),
one reduction (``sum``, ``nansum``, ``prod``, ``mean``, ``nanmean``, ``cumsum``,
``cumprod``, ``logsumexp``, ``norm``, ``linalg.vector_norm``, ``var``, ``std``,
``var_mean``, ``std_mean``, ``amax``, ``amin``, ``aminmax``, ``all``, ``any``,
``count_nonzero``, ``logcumsumexp``), its form (function, method, ``out=``), dims (none,
one, several, negative, repeated), ``keepdim`` and ``dtype=``, and leaves the result (or
the ``out`` tensor, its dtype and shape after the call) in ``out``. Refusals compare by
class and message like every program.
"""

from __future__ import annotations

import numpy as np

_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64", "complex128")

#: reduction -> (takes dim as a tuple, takes keepdim, takes dtype=, kind)
_OPS = {
    "sum": (True, True, True, "sum"), "nansum": (True, True, True, "sum"),
    "prod": (False, True, True, "sum"), "mean": (True, True, True, "sum"),
    "nanmean": (True, True, True, "sum"), "cumsum": (False, False, True, "scan"),
    "cumprod": (False, False, True, "scan"), "logsumexp": (True, True, False, "sum"),
    "logcumsumexp": (False, False, False, "scan"), "norm": (True, True, True, "norm"),
    "linalg.vector_norm": (True, True, True, "norm"), "var": (True, True, False, "var"),
    "std": (True, True, False, "var"), "var_mean": (True, True, False, "var2"),
    "std_mean": (True, True, False, "var2"), "amax": (True, True, False, "sum"),
    "amin": (True, True, False, "sum"), "aminmax": (False, True, False, "pair"),
    "all": (True, True, False, "sum"), "any": (True, True, False, "sum"),
    "count_nonzero": (True, False, False, "count"),
}


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _shape(rng):
    nd = int(rng.integers(0, 4))
    shape = [int(v) for v in rng.integers(1, 4, size=nd)]
    if nd and rng.random() < 0.2:
        shape[int(rng.integers(nd))] = 0
    return tuple(shape)


def _input(rng, dtype, shape):
    n = int(np.prod(shape)) if shape else 1
    vals = rng.integers(-3, 4, size=n).tolist()
    src = f"x = T.tensor({vals!r}, dtype=T.float64).reshape({shape!r})"
    if dtype.startswith("uint"):
        src += ".abs()"
    if dtype.startswith("complex"):
        im = rng.integers(-2, 3, size=n).tolist()
        src += (f"\nx = T.complex(x, T.tensor({im!r}, dtype=T.float64)"
                f".reshape({shape!r}))")
    src += f"\nx = x.to(T.{dtype})"
    layout = rng.random()
    if len(shape) >= 2 and layout < 0.2:
        src += "\nx = x.transpose(0, -1).contiguous().transpose(0, -1)"
    elif len(shape) >= 1 and layout < 0.3 and shape[0] == 1:
        src += f"\nx = x.expand({(3,) + shape[1:]!r})"
    return src


def _dims(rng, nd, as_tuple):
    """Source of a dim argument ('' for none) for a tensor of ``nd`` dims."""
    r = rng.random()
    if nd == 0:
        return _pick(rng, ("", "0", "-1")) if r < 0.8 else "1"
    if not as_tuple or r < 0.5:
        return str(int(rng.integers(-nd, nd)) if rng.random() < 0.95 else nd)
    if r < 0.8:
        k = int(rng.integers(1, nd + 1))
        return repr(tuple(int(v) for v in rng.permutation(nd)[:k] - (nd if r < 0.6 else 0)))
    return _pick(rng, ("()", "[]", "(0, 0)", "(0, -nd)".replace("nd", str(nd)), ""))


def reductions(rng):
    """One reduction with random dims, keepdim, dtype= and out=."""
    dtype = _pick(rng, _DTYPES)
    shape = _shape(rng)
    op = _pick(rng, tuple(_OPS))
    as_tuple, has_keep, has_dtype, kind = _OPS[op]
    lines = [_input(rng, dtype, shape)]
    args = []
    dim = _dims(rng, len(shape), as_tuple)
    if kind == "norm":
        args.append(repr(_pick(rng, (2, 1, 0, 3, float("inf"), float("-inf"), 0.5, "fro"))
                         if op == "norm" else _pick(rng, (2, 1, 0, 3, float("inf"),
                                                          float("-inf"), 0.5))))
        args[-1] = args[-1].replace("inf", "float('inf')").replace("-float", "-float")
        if args[-1] == "'fro'" and dim not in ("", "0", "-1"):
            args[-1] = "2"
    if kind == "scan" and dim == "":
        dim = "0"
    if dim:
        args.append(f"dim={dim}" if kind != "norm" or op != "norm" else dim)
    if kind == "var" or kind == "var2":
        corr = _pick(rng, ("", "correction=0", "correction=2", "unbiased=False"))
        if corr:
            args.append(corr)
    if has_keep and rng.random() < 0.5:
        args.append(f"keepdim={bool(rng.random() < 0.5)}")
    if has_dtype and rng.random() < 0.5:
        args.append(f"dtype=T.{_pick(rng, _DTYPES)}")
    form = _pick(rng, ("function", "method", "out"))
    if op == "linalg.vector_norm" and form == "method":
        form = "function"
    fn = f"T.{op}" if form != "method" else f"x.{op}"
    call_args = ", ".join((["x"] if form != "method" else []) + args)
    if form == "out":
        out_dtype = _pick(rng, (dtype, dtype, _pick(rng, _DTYPES)))
        out_shape = _pick(rng, ("(0,)", "()", "(1,)", "(2, 2)"))
        if kind in ("var2", "pair"):
            lines.append(f"o1 = T.empty({out_shape}, dtype=T.{out_dtype})")
            lines.append(f"o2 = T.empty({out_shape}, dtype=T.{out_dtype})")
            lines.append(f"r = {fn}({call_args}, out=(o1, o2))")
            lines.append("out = (r[0] is o1, r[1] is o2, o1, o2)")
        else:
            lines.append(f"o = T.empty({out_shape}, dtype=T.{out_dtype})")
            lines.append(f"r = {fn}({call_args}, out=o)")
            lines.append("out = (r is o, o)")
    else:
        lines.append(f"out = {fn}({call_args})")
    return "\n".join(lines)
