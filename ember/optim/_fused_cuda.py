"""Optimizer steps on CuPy arrays as one CUDA kernel each.

NOTE [ Fused optimizer kernels on CUDA ]
On a GPU the per-parameter update of Adam is about ten array ops, ten kernel launches and
ten passes over memory; PyTorch's ``fused=True`` runs it as one. Here, when a parameter's
arrays are CuPy arrays, ``adam`` and ``sgd`` below run the whole update as one
``cupy.ElementwiseKernel`` launch that reads the parameter, gradient and state once and
writes them back in place. This is the path for every CuPy step, whatever ``foreach`` and
``fused`` say; CuPy parameters are never concatenated first (NOTE [ Flat optimizer step ]):
on a ResNet-50 step the concatenations and copies back cost ~10 ms of host time and two
extra passes over the parameters, where one launch per parameter costs ~2 ms.

- The hyper-parameters and the step's scalars (``-lr / bias1``, ``sqrt(bias2)``...) are
  kernel arguments, computed in Python in float64 as the unfused path computes them, so a
  new learning rate or step count never recompiles.
- The arithmetic is in float32 for float16, bfloat16 and float32 arrays (float64 for
  float64): a low-precision parameter is widened once and rounded once, as PyTorch's
  fused kernels do. For float32 the operations are the unfused path's, in its order, and
  the kernels are compiled with ``--fmad=false`` (no multiply-add contraction) with an
  explicit ``fma`` exactly where the unfused path's ops fuse (``add(alpha=)``, ``lerp``,
  ``addcmul``; NOTE [ Fused multiply-add as PyTorch's kernels ] in ``ember/_ops/_fma.py``),
  so each value is rounded where the unfused path rounds it (checked bit for bit against
  the unfused path with the kernel bodies compiled as C on the CPU; on a GPU the tests
  allow float32 rounding).
- Kernels are compiled on first use and kept in ``_kernels`` (CuPy also caches the binary
  on disk). CuPy is imported only when a CuPy array is seen; NumPy arrays never come here.

Covered: parameter, gradient and state arrays of one shape and one dtype among float16,
bfloat16, float32 and float64. Anything else returns False and the caller runs the unfused
path.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adam", "sgd", "is_cupy"]

from .._core import dtype as _dt

# array dtype -> (computation type, scalar argument type); CuPy 14 takes ml_dtypes' bfloat16
_DTYPES = {np.dtype(np.float16): ("float", "float32"),
           np.dtype(_dt.bfloat16.np): ("float", "float32"),
           np.dtype(np.float32): ("float", "float32"),
           np.dtype(np.float64): ("double", "float64")}
_kernels = {}

_ADAM = """
acc_t gv = (acc_t)g;
if (maximize) gv = -gv;
acc_t pv = (acc_t)p;
if (wd != 0) {
    if (decoupled) pv = pv * decay;
    else gv = fma(wd, pv, gv);
}
acc_t mv = (acc_t)m;
acc_t d = gv - mv;
mv = (w1 < (acc_t)0.5) ? fma(w1, d, mv) : fma(w1m1, d, gv);
acc_t vv = fma(w2 * gv, gv, (acc_t)v * beta2);
m = (T)mv;
v = (T)vv;
%(amsgrad)s
acc_t denom = sqrt(vv) / bias2_sqrt + eps;
p = (T)(pv + step_size * mv / denom);
"""

_AMSGRAD = """
vv = max((acc_t)vmax, vv);
vmax = (T)vv;
"""

_SGD = """
acc_t gv = (acc_t)g;
if (maximize) gv = -gv;
acc_t pv = (acc_t)p;
if (wd != 0) gv = fma(wd, pv, gv);
%(momentum)s
p = (T)fma(neg_lr, gv, pv);
"""

_MOMENTUM = """
acc_t bv = first ? gv : fma(keep, gv, (acc_t)buf * momentum);
buf = (T)bv;
gv = nesterov ? fma(momentum, bv, gv) : bv;
"""


def is_cupy(a) -> bool:
    """Whether ``a`` is a CuPy array (tested without importing CuPy)."""
    return type(a).__module__.startswith("cupy")


def _cupy():
    from ..cuda._runtime import cupy

    return cupy()


def _signature(kind, stype):
    """(in_params, out_params, body) of the kernel ``kind`` with scalars of type ``stype``."""
    S = stype
    if kind.startswith("adam"):
        ams = kind == "adam_amsgrad"
        ins = (f"T g, {S} w1, {S} w1m1, {S} beta2, {S} w2, {S} wd, {S} decay, {S} eps, "
               f"{S} step_size, {S} bias2_sqrt, int32 maximize, int32 decoupled")
        outs = "T p, T m, T v" + (", T vmax" if ams else "")
        return ins, outs, _ADAM % {"amsgrad": _AMSGRAD if ams else ""}
    mom = kind == "sgd_momentum"
    ins = f"T g, {S} neg_lr, {S} wd, int32 maximize"
    if mom:
        ins += f", {S} momentum, {S} keep, int32 nesterov, int32 first"
    outs = "T p" + (", T buf" if mom else "")
    return ins, outs, _SGD % {"momentum": _MOMENTUM if mom else ""}


def _kernel(kind, ctype, stype):
    """The ElementwiseKernel of ``kind`` computing in ``ctype`` (NOTE [ Fused optimizer
    kernels on CUDA ]), compiled once."""
    key = (kind, ctype)
    k = _kernels.get(key)
    if k is None:
        ins, outs, body = _signature(kind, stype)
        k = _kernels[key] = _cupy().ElementwiseKernel(
            ins, outs, body, f"ember_{kind}_{ctype}", preamble=f"typedef {ctype} acc_t;",
            options=("--fmad=false",))
    return k


def _covered(*arrays):
    """(ctype, stype) when the arrays are CuPy arrays of one shape and one covered dtype."""
    first = arrays[0]
    if not is_cupy(first) or first.dtype not in _DTYPES:
        return None
    for a in arrays[1:]:
        if not is_cupy(a) or a.dtype != first.dtype or a.shape != first.shape:
            return None
    return _DTYPES[first.dtype]


def adam(p, g, m, v, vmax, *, beta1, beta2, lr, weight_decay, eps, step, decoupled,
         maximize) -> bool:
    """One Adam/AdamW step in place on the CuPy arrays ``p``, ``m``, ``v`` (and ``vmax``
    for amsgrad, else None), as one kernel launch; False, having changed nothing, where not
    covered (NOTE [ Fused optimizer kernels on CUDA ]).

    Args:
        p, g, m, v, vmax: the parameter, gradient, moments and running maximum arrays.
        beta1, beta2, lr, weight_decay, eps (float): the hyper-parameters.
        step (int or float): the step count, already incremented.
        decoupled (bool): AdamW's weight decay. maximize (bool): ascend.

    Returns:
        bool: whether the step ran.

    Example::

        >>> import numpy as np
        >>> adam(np.ones(2), np.ones(2), np.zeros(2), np.zeros(2), None, beta1=0.9,
        ...      beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8, step=1, decoupled=False,
        ...      maximize=False)  # NumPy arrays: not this path
        False
    """
    arrays = (p, g, m, v) + ((vmax,) if vmax is not None else ())
    types = _covered(*arrays)
    if types is None:
        return False
    w1 = 1 - beta1
    bias1 = 1 - beta1 ** step
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    k = _kernel("adam_amsgrad" if vmax is not None else "adam", *types)
    # lerp's other form multiplies by -(1 - w1) with w1 already rounded to the scalar type
    w1m1 = float(np.float32(w1) - np.float32(1)) if types[1] == "float32" else w1 - 1
    k(g, w1, w1m1, beta2, 1 - beta2, weight_decay, 1 - lr * weight_decay, eps, -lr / bias1,
      bias2_sqrt, int(bool(maximize)), int(bool(decoupled)), *arrays[:1], *arrays[2:])
    return True


def sgd(p, g, buf, *, lr, weight_decay, momentum, dampening, nesterov, maximize):
    """One SGD step in place on the CuPy array ``p`` as one kernel launch. With momentum,
    ``buf`` is the momentum buffer (updated in place) or None on the first step.

    Args:
        p, g: the parameter and gradient arrays.
        buf: the momentum buffer array, or None.
        lr, weight_decay, momentum, dampening (float), nesterov, maximize (bool): as
            ``ember.optim.SGD``.

    Returns:
        False where not covered (nothing changed); else True without momentum, or the
        momentum buffer array (the new one on the first step).

    Example::

        >>> import numpy as np
        >>> sgd(np.ones(2), np.ones(2), None, lr=0.1, weight_decay=0.0, momentum=0.0,
        ...     dampening=0.0, nesterov=False, maximize=False)  # NumPy arrays: not this path
        False
    """
    if momentum == 0:
        types = _covered(p, g)
        if types is None:
            return False
        _kernel("sgd", *types)(g, -lr, weight_decay, int(bool(maximize)), p)
        return True
    first = buf is None
    types = _covered(p, g) if first else _covered(p, g, buf)
    if types is None:
        return False
    if first:
        buf = _cupy().empty_like(p)  # written by the kernel
    _kernel("sgd_momentum", *types)(g, -lr, weight_decay, int(bool(maximize)), momentum,
                                    1 - dampening, int(bool(nesterov)), int(first), p, buf)
    return buf


# -- many parameters in one launch ----------------------------------------------------------------
#
# NOTE [ Multi-tensor optimizer steps on CUDA ]
# One fused launch per parameter still costs each parameter ~30 us of host time (CuPy's
# ElementwiseKernel call with a dozen arguments, the step counter, the checks): 4.5 ms of a
# GPT-2 step's 149 parameters. ``adam_multi`` and ``sgd_multi`` update a whole group of
# float32 parameters in one launch, as PyTorch's ``_foreach``/``fused`` kernels do: the
# arrays' device pointers, their sizes and a table of chunks (which tensor, which offset)
# travel in one small int64 array, copied to the device per step (reused while nothing
# moved); each block takes chunks and runs the same arithmetic as the per-parameter kernels
# above -- the same element code, compiled the same way (``--fmad=false``) -- so results are
# bit for bit theirs (checked on the CPU with the source compiled as C++, one block of one
# thread; tests/optim/test_fused_cuda.py).

# The per-element arithmetic is the per-parameter kernels' own text (``_ADAM``, ``_SGD``,
# ``_MOMENTUM``) with the element bound by reference, so the two paths cannot drift apart.
_MULTI_TEMPLATE = r"""
typedef float acc_t;
typedef float T;
#define CHUNK_LOOP                                                                        \
    const long long* sizes = table + 4 * n_t;                                           \
    const long long* chunks = table + 5 * n_t;                                          \
    for (long long c = blockIdx.x; c < n_chunks; c += gridDim.x) {                      \
        int t = (int)chunks[2 * c];                                                     \
        long long start = chunks[2 * c + 1], end = start + chunk;                        \
        if (end > sizes[t]) end = sizes[t];                                              \
        float* P = (float*)table[t];                                                     \
        const float* G = (const float*)table[n_t + t];
extern "C" __global__ void ember_adam_multi(const long long* table, int n_t,
        long long n_chunks, long long chunk, float w1, float w1m1, float beta2, float w2,
        float wd, float decay, float eps, float step_size, float bias2_sqrt, int maximize,
        int decoupled) {
    CHUNK_LOOP
        float* M = (float*)table[2 * n_t + t];
        float* V = (float*)table[3 * n_t + t];
        for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
            float& p = P[j];
            const float g = G[j];
            float& m = M[j];
            float& v = V[j];
%(adam)s
        }
    }
}
extern "C" __global__ void ember_sgd_multi(const long long* table, int n_t,
        long long n_chunks, long long chunk, float neg_lr, float wd, int maximize,
        float momentum, float keep, int nesterov) {
    CHUNK_LOOP
        float* B = (float*)table[2 * n_t + t];
        for (long long j = start + threadIdx.x; j < end; j += blockDim.x) {
            float& p = P[j];
            const float g = G[j];
%(sgd)s
        }
    }
}
"""
_MULTI_SOURCE = _MULTI_TEMPLATE % {
    "adam": _ADAM % {"amsgrad": ""},
    # every buffer exists in a multi-tensor step (the first step makes them one by one)
    "sgd": _SGD % {"momentum": "if (B) {\nfloat& buf = B[j];\nconst int first = 0;\n"
                   + _MOMENTUM + "}"}}
_CHUNK = 1 << 16
_multi = {}  # "module": the compiled RawModule (False: refused); kernel name -> function
_tables = {}  # kernel name -> (host table, device table): the last one sent


def _multi_function(name):
    f = _multi.get(name)
    if f is None:
        mod = _multi.get("module")
        if mod is None:
            try:
                mod = _cupy().RawModule(code=_MULTI_SOURCE, options=("--fmad=false",))
                mod.get_function("ember_adam_multi")
            except Exception:  # noqa: BLE001 - a toolkit refusing it: one launch per parameter
                mod = False
            _multi["module"] = mod
        if mod is False:
            return None
        f = _multi[name] = mod.get_function(name)
    return f


def _multi_covered(columns):
    """Whether every array of ``columns`` (lists of equal length, the first the parameters)
    is a contiguous float32 CuPy array of its parameter's size, on one device."""
    first = columns[0][0]
    dev = first.device.id
    f32 = np.dtype(np.float32)
    for col in columns:
        for a, p in zip(col, columns[0]):
            if a is None or not is_cupy(a) or a.dtype != f32 or a.size != p.size or \
                    not a.flags.c_contiguous or a.device.id != dev:
                return False
    return True


def _pointer(a) -> int:
    """The device address of CuPy array ``a``'s first element."""
    return a.data.ptr


def _table(columns, chunk):
    """The int64 table a multi-tensor kernel reads (NOTE [ Multi-tensor optimizer steps on
    CUDA ]): four columns of array addresses (parameters, gradients, two state columns, 0
    where unused), the parameters' sizes, then (tensor, start) per chunk of ``chunk``
    elements. Returns (table, number of chunks)."""
    params = columns[0]
    n_t = len(params)
    counts = [-(-p.size // chunk) for p in params]
    n_chunks = sum(counts)
    table = np.empty(5 * n_t + 2 * n_chunks, np.int64)
    for k, col in enumerate(columns):
        table[k * n_t:(k + 1) * n_t] = [_pointer(a) for a in col]
    table[len(columns) * n_t:4 * n_t] = 0  # unused pointer columns
    table[4 * n_t:5 * n_t] = [p.size for p in params]
    tensor = np.repeat(np.arange(n_t, dtype=np.int64), counts)
    start = np.arange(n_chunks, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    table[5 * n_t::2] = tensor
    table[5 * n_t + 1::2] = start * chunk
    return table, n_chunks


def _launch(name, columns, scalars):
    """One launch of multi-tensor kernel ``name`` over ``columns`` (parameters first); the
    pointer-and-chunk table is built on the host and sent unless unchanged."""
    f = _multi_function(name)
    if f is None:
        return False
    table, n_chunks = _table(columns, _CHUNK)
    last = _tables.get(name)
    if last is not None and last[0].shape == table.shape and np.array_equal(last[0], table):
        device_table = last[1]
    else:
        device_table = _cupy().asarray(table)
        _tables[name] = (table, device_table)
    if n_chunks:
        f((int(min(n_chunks, 4096)),), (256,),
          (device_table, np.int32(len(columns[0])), np.int64(n_chunks), np.int64(_CHUNK))
          + scalars)
    return True


def adam_multi(ps, gs, ms, vs, *, beta1, beta2, lr, weight_decay, eps, step, decoupled,
               maximize) -> bool:
    """One Adam/AdamW step (no amsgrad) in place on lists of float32 CuPy arrays -- the
    parameters ``ps``, gradients ``gs`` and moments ``ms``, ``vs`` of one group, all at step
    ``step`` (already incremented) -- as one launch (NOTE [ Multi-tensor optimizer steps on
    CUDA ]); False, having changed nothing, where not covered.

    Args:
        ps, gs, ms, vs: lists of CuPy arrays, one per parameter.
        beta1, beta2, lr, weight_decay, eps (float): the hyper-parameters.
        step (int or float): the step count of every parameter.
        decoupled (bool): AdamW's weight decay. maximize (bool): ascend.

    Returns:
        bool: whether the step ran.

    Example::

        >>> import numpy as np
        >>> adam_multi([np.ones(2)], [np.ones(2)], [np.zeros(2)], [np.zeros(2)], beta1=0.9,
        ...            beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8, step=1,
        ...            decoupled=False, maximize=False)  # NumPy arrays: not this path
        False
    """
    if not ps or not _multi_covered((ps, gs, ms, vs)):
        return False
    w1 = 1 - beta1
    f32 = np.float32
    # lerp's other form multiplies by -(1 - w1) with w1 already rounded to float32, as in adam()
    scalars = (f32(w1), f32(w1) - f32(1), f32(beta2), f32(1 - beta2), f32(weight_decay),
               f32(1 - lr * weight_decay), f32(eps), f32(-lr / (1 - beta1 ** step)),
               f32(math.sqrt(1 - beta2 ** step)), np.int32(bool(maximize)),
               np.int32(bool(decoupled)))
    return _launch("ember_adam_multi", [ps, gs, ms, vs], scalars)


def sgd_multi(ps, gs, bufs, *, lr, weight_decay, momentum, dampening, nesterov,
              maximize) -> bool:
    """One SGD step in place on lists of float32 CuPy arrays as one launch (NOTE
    [ Multi-tensor optimizer steps on CUDA ]); ``bufs`` the momentum buffers (every one
    present) or None without momentum. False, having changed nothing, where not covered.

    Args:
        ps, gs: the parameters and gradients, lists of CuPy arrays.
        bufs: the momentum buffers, or None.
        lr, weight_decay, momentum, dampening (float), nesterov, maximize (bool): as
            ``ember.optim.SGD``.

    Returns:
        bool: whether the step ran.

    Example::

        >>> import numpy as np
        >>> sgd_multi([np.ones(2)], [np.ones(2)], None, lr=0.1, weight_decay=0.0,
        ...           momentum=0.0, dampening=0.0, nesterov=False, maximize=False)
        False
    """
    columns = (ps, gs) if bufs is None else (ps, gs, bufs)
    if not ps or not _multi_covered(columns):
        return False
    f32 = np.float32
    scalars = (f32(-lr), f32(weight_decay), np.int32(bool(maximize)), f32(momentum),
               f32(1 - dampening), np.int32(bool(nesterov)))
    return _launch("ember_sgd_multi", list(columns), scalars)
