"""Random sampling: ``rand``/``randn``/``randint``/``randperm``, ``normal``, ``bernoulli``,
``multinomial``, ``poisson``, the ``*_like`` forms and the in-place fills (``uniform_``,
``normal_``, ``random_``, ...).

Numbers come from an ``ember.Generator`` (see NOTE [ Random number generation ] in
ember/_core/generator.py): the ``generator=`` argument, else ``ember.default_generator``.
They are drawn on the host and moved to the target device. Random ops are not
differentiable (their results never require grad), except ``normal`` with tensor ``mean`` /
``std``, which is written as ``mean + std * eps`` so gradients reach both, as in PyTorch.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import _dispatch, _kernels
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core import rng_math as _rm
from .._core.generator import numpy_generator, resolve
from .._core.tensor import Tensor
from ._registry import method, public
from .creation import (
    check_inplace, finish, host, like, overwrite_op, resolve_dtype, size_arg, xp_for,
)

# bits of precision (implicit bit included) of the float dtypes: ``rand`` draws integers of
# that many bits and scales them, so results are exactly representable and never reach 1
_MANTISSA = {_dt.float16: 11, _dt.bfloat16: 8, _dt.float32: 24, _dt.float64: 53}

# PyTorch's C++ type names in randint's bound errors
_BOUND_NAMES = {_dt.uint8: "unsigned char", _dt.int8: "signed char", _dt.int16: "short",
                _dt.int32: "int", _dt.int64: "long int", _dt.bool_: "bool"}


def _not_implemented(kernel, d):
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


def _require_float(kernel, d, allow_complex=True, empty=False):
    # ``empty``: nothing will be drawn, and PyTorch's sampling kernels (those that check
    # nothing before their loop) then run for any dtype: ``randn(0, dtype=int16)`` is fine
    if empty:
        return
    if d.category < 2 or (d.category == 3 and not allow_complex) or d.np in _dt._NO_MATH_NP:
        raise _not_implemented(kernel, d)


def _num(x):
    """A number as PyTorch prints it in messages (``-1``, ``1.5``)."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _number(x, op_name, name):
    if type(x) is float or type(x) is int:
        return x
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise RuntimeError(f"{op_name}(): expected a number for '{name}', got a tensor of "
                               f"shape {list(x.shape)}")
        return x.item()
    if isinstance(x, (builtins.int, builtins.float, np.number, np.bool_)):
        return x.item() if isinstance(x, (np.number, np.bool_)) else x
    raise TypeError(f"{op_name}(): argument '{name}' must be Number, not {type(x).__name__}")


# ------------------------------------------------------------------------------------------------
# array samplers (host NumPy arrays of the target dtype), drawing PyTorch's words in PyTorch's
# order (NOTE [ Random number generation ] in ember/_core/generator.py)


def _uniform_flat(g, n, d, low=0.0, high=1.0):
    """``n`` uniforms on [low, high) of real float dtype ``d``: float64 from a 64-bit draw
    each, the others from one word each, ``x * (to - from) + from`` in float64 or float32;
    a value that rounds up to ``to`` (in ``d``) becomes ``from``, as in PyTorch."""
    fuse = _rm.fused()
    if d is _dt.float64:
        u = g._uniform64(n)
        if (low, high) != (0.0, 1.0):
            u = _rm.affine64(u, high - low, low, fuse)
    elif (low, high) != (0.0, 1.0) and fuse and _kernels.backend() != "numba" and \
            _exact_in_double(np.float32(high) - np.float32(low), np.float32(low)):
        # NOTE [ Uniform floats fused without the halfway check ]: PyTorch's
        # ``u * (to - from) + from`` is one FMA. With u = k * 2**-24 (k a 24-bit word) the
        # product k * (span * 2**-24) is exact in float64, and so is the sum when ``from``
        # and the span are within a few binades of each other (``_exact_in_double``): the
        # float64 value is the exact one, and its cast to float32 the FMA's one rounding
        # (numba's compiled FMA is as fast, and used where it is there)
        lo32 = np.float32(low)
        h = g._words(n)
        h &= np.uint64((1 << 24) - 1)
        h = h.astype(np.float64)
        h *= float(np.float32(high) - lo32) * 2.0 ** -24
        h += float(lo32)
        u = h.astype(np.float32).astype(d.np, copy=False)
    else:
        u = g._uniform_bits(n, 24)
        if (low, high) != (0.0, 1.0):
            lo32, hi32 = np.float32(low), np.float32(high)
            u = _rm.affine32(u, hi32 - lo32, lo32, fuse)
        u = u.astype(d.np, copy=False)
    lo, hi = np.array([low, high]).astype(d.np)
    u[u >= hi] = lo
    return u


def _exact_in_double(span, low):
    """Whether ``k * 2**-24 * span + low`` is exact in float64 for every 24-bit k: both
    float32 numbers normal (or zero) and ``low``'s binade from 24 below the span's to 4
    above it (the sum's bits then fit in float64's 53)."""
    if not (np.isfinite(span) and np.isfinite(low)):
        return False
    if span == 0 or low == 0:
        return True
    tiny = np.finfo(np.float32).tiny
    if abs(span) < tiny or abs(low) < tiny:
        return False
    e_span, e_low = math.frexp(float(span))[1], math.frexp(float(low))[1]
    return e_span - 24 <= e_low <= e_span + 4


def _flat_sample(shape, d, flat):
    """``flat(n, real_dtype)`` reshaped to ``shape``; complex dtypes fill their real view
    (real and imaginary parts interleaved, as PyTorch's kernels see them)."""
    n = math.prod(shape)
    if d.category == 3:
        real = d.to_real()
        parts = flat(2 * n, real).astype(real.np, copy=False)
        return parts.view(d.np).reshape(shape)
    return flat(n, d).astype(d.np, copy=False).reshape(shape)


def uniform_array(g, shape, d, low=0.0, high=1.0):
    """Uniform samples on [low, high) of float or complex dtype ``d``."""
    return _flat_sample(shape, d, lambda n, r: _uniform_flat(g, n, r, low, high))


def _box_muller(g, n):
    """``n`` standard normals by PyTorch's scalar path, float64: a pair of uniforms gives
    ``r cos t`` now and ``r sin t`` for the next call (the generator keeps it)."""
    out = np.empty(n, np.float64)
    k = 0
    cached = g._take_normal() if n else None
    if cached is not None:
        out[0] = cached
        k = 1
    pairs = (n - k + 1) // 2
    if pairs:
        u = g._uniform64(2 * pairs)
        radius = np.sqrt(-2.0 * _rm.c_math("log1p", -u[1::2]))
        theta = 2.0 * np.pi * u[0::2]
        both = np.empty(2 * pairs, np.float64)
        both[0::2] = radius * np.cos(theta)
        both[1::2] = radius * np.sin(theta)
        out[k:] = both[:n - k]
        if (n - k) % 2:
            g._put_normal(both[-1])
    return out


def _normal_flat(g, n, d, mean, std, contiguous):
    """``n`` normal samples of real float dtype ``d`` (see NOTE [ Random number generation ])."""
    cap = _rm.cpu_capability()
    fuse = cap != "default"
    if n < 16 or not contiguous:
        return _rm.affine64(_box_muller(g, n), std, mean, fuse)
    if d is _dt.float64:
        u = g._uniform64(n)
        blocks = _rm.normal16_blocks
    else:
        u = g._uniform_bits(n if d is _dt.float32 else -(-n // 16) * 16, 24)
        # PyTorch registers no AVX-512 normal kernel: AVX-512 machines run the AVX2 one
        blocks = _rm.normal16_avx2 if cap in ("avx2", "avx512") else _rm.normal16_blocks
    full = n - n % 16
    if full == n:
        return blocks(u, mean, std)
    # the last 16 are redone from fresh uniforms; float16 and bfloat16 drew them with the
    # blocks (one block of 16 uniforms at a time), float32/64 draw them now (one call
    # computes both: blocks are independent)
    tail = u[full:] if d not in (_dt.float32, _dt.float64) else (
        g._uniform64(16) if d is _dt.float64 else g._uniform_bits(16, 24))
    z = blocks(np.concatenate((u[:full], tail)), mean, std)
    out = np.empty(n, u.dtype)
    out[:full] = z[:full]
    out[n - 16:] = z[full:]
    return out


def normal_array(g, shape, d, mean=0.0, std=1.0, contiguous=True):
    """Normal samples of float or complex dtype ``d`` (complex: each part has variance
    std**2 / 2, as PyTorch's complex randn). ``contiguous`` False: PyTorch's path for
    strided outputs (never the blocks of 16)."""
    if d.category == 3:
        s = std / math.sqrt(2.0)
        z = _flat_sample(shape, d, lambda n, r: _normal_flat(g, n, r, 0.0, s, contiguous))
        return z + np.asarray(mean, d.np) if mean != 0.0 else z
    return _flat_sample(shape, d, lambda n, r: _normal_flat(g, n, r, mean, std, contiguous))


def _integers(g, low, high, shape, d):
    """Integers on [low, high) as dtype ``d``: a word modulo the range, or a 64-bit draw for
    ranges of 2**28 and up (a range of 2**64 takes the draw as it is)."""
    n = math.prod(shape)
    span = high - low
    if span >= 1 << 28:
        r = g._words64(n)
        if span < 1 << 64:
            r %= np.uint64(span)
    else:
        r = g._words(n)
        r %= np.uint64(span)
    r += np.uint64(low % (1 << 64))  # two's-complement wrap gives low + r as int64
    return r.view(np.int64).astype(d.np).reshape(shape)


def _fill_order(a):
    """``a`` viewed with its axes in memory order (largest stride first): PyTorch fills a
    strided tensor in the order its elements lie in memory."""
    if a.flags.c_contiguous or a.ndim < 2:
        return a
    order = sorted(range(a.ndim), key=lambda i: -abs(a.strides[i]))
    return a.transpose(order)


def _in_memory_order(a, draw, axes=False):
    """Samples for the array ``a``, drawn in the order its elements lie in memory:
    ``draw(shape)`` (``axes``: ``draw(shape, order)``) makes them for ``a``'s axes permuted
    into memory order, and they come back in ``a``'s own axis order."""
    if a.flags.c_contiguous or a.ndim < 2:
        order = tuple(range(a.ndim))
    else:
        order = tuple(sorted(range(a.ndim), key=lambda i: -abs(a.strides[i])))
    shape = tuple(a.shape[i] for i in order)
    vals = draw(shape, order) if axes else draw(shape)
    return vals if order == tuple(range(a.ndim)) else vals.transpose(np.argsort(order))


def _permutation(g, n):
    """PyTorch's randperm: from 0..n-1, swap element i with one of i..n-1 picked by a word
    modulo n - i, for i = 0 .. n-2."""
    r = np.arange(n, dtype=np.int64)
    if n < 2:
        return r
    picks = g._words(n - 1)
    picks %= np.arange(n, 1, -1, dtype=np.uint64)
    if n > 64 and _kernels.backend() == "numba":
        from .._kernels import _numba_random

        _numba_random.swap_forward(r, picks.view(np.int64))
        return r
    if n > 2048:  # (below, the loop is as fast)
        return _swaps_at_once(picks, n)
    out = r.tolist()
    for i, z in enumerate(picks.tolist()):
        j = i + z
        out[i], out[j] = out[j], out[i]
    return np.array(out, dtype=np.int64)


def _swaps_at_once(picks, n):
    """The permutation that swapping ``r[i]`` with ``r[i + picks[i]]`` for i = 0, 1, ...
    in turn makes of ``0 .. n-1``, without a loop over the swaps.

    NOTE [ randperm's swaps at once ]
    Step i moves two values: the one at position i right before the step (call it w[i])
    goes to position j_i = i + picks[i], and the one at j_i becomes the result's r[i]
    (positions below i are final). The value at a position p >= i, right before step i,
    is the one the last earlier step that targeted p moved there -- w[k] for the last
    k < i with j_k == p -- or p itself if no step has targeted it. So

    - w[k] = w[k'] for the last step k' < k with j_k' == k (else k): a chain through
      smaller steps, resolved by pointer jumping (chains are a few steps long);
    - r[i] = w[k] for the last step k < i with j_k == j_i (else j_i), and the last
      position gets w[n-1].

    Both "last earlier step with the same target" questions are answered at once by
    sorting the steps by (target, step): an event's predecessor in the sorted order, if it
    has the same target, is the step asked for. One sort and a few gathers replace a
    million sequential swaps in Python (1 s) with ~0.1 s of NumPy; the numbers are the
    loop's, being the same positions' same values.
    """
    m = n - 1
    it = np.int32 if n < 1 << 31 else np.int64
    shift = m.bit_length()
    kt = np.uint32 if 2 * shift <= 32 else np.uint64
    keys = picks.astype(kt)
    keys += np.arange(m, dtype=kt)             # the targets j_i = i + picks[i]
    keys <<= kt(shift)
    keys |= np.arange(m, dtype=kt)             # (target, step)
    keys.sort()
    xs = (keys >> kt(shift)).astype(it)        # targets, each group's steps in order
    ks = (keys & kt((1 << shift) - 1)).astype(it)
    same = np.empty(m, bool)                   # the step before in the order shares its target
    same[0] = False
    np.equal(xs[1:], xs[:-1], out=same[1:])
    # w by pointer jumping; ptr[k] starts as the last step before k targeting position k:
    # the group's last step, or the one before it when that is step k itself (j_k == k)
    ends = np.flatnonzero(np.append(~same[1:], True))
    gx, gk = xs[ends], ks[ends]
    self_swap = gk == gx
    keep = ~self_swap
    keep |= same[ends]
    ends = ends[keep]
    ptr = np.arange(n, dtype=it)
    todo = gx[keep]
    ptr[todo] = ks[ends - self_swap[keep]]
    while todo.size:
        p = ptr[todo]
        pp = ptr[p]
        ptr[todo] = pp
        todo = todo[pp != p]                  # not yet at a chain's root
    r = np.empty(n, it)
    r[ks] = xs
    s = np.flatnonzero(same)
    r[ks[s]] = ptr[ks[s - 1]]
    r[m] = ptr[m]
    return r.astype(np.int64)


def _exponential(g, shape, d, lambd):
    """-log(1 - u) / lambd from float64 uniforms, computed as PyTorch does it (multiplying
    by -1 / lambd), rounded to ``d`` at the end."""
    u = g._uniform64(math.prod(shape)).reshape(shape)
    return ((-1.0 / lambd) * _rm.c_math("log1p", -u)).astype(d.np)


def _check_int_bounds(d, low, high):
    """randint / random_: PyTorch's range checks for the target dtype."""
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if d.category <= 1:
        if d is _dt.bool_:
            lo, hi = 0, 1
        else:
            info = np.iinfo(d.np)
            lo, hi = int(info.min), int(info.max)
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {_BOUND_NAMES[d]}")
        if not lo <= high - 1 <= hi:
            raise RuntimeError(f"to - 1 is out of bounds for {_BOUND_NAMES[d]}")
    elif d.np in _dt._NO_MATH_NP:
        raise _not_implemented("random_update_from_to", d)
    elif d.category == 2:
        limit = 1 << _MANTISSA[d]
        if not -limit <= low <= limit:
            raise RuntimeError(f"from is out of bounds for {d.scalar_name}")
        if not -limit <= high - 1 <= limit:
            raise RuntimeError(f"to - 1 is out of bounds for {d.scalar_name}")
    else:
        raise _not_implemented("random_from_to", d)


def _sample(device, shape, d, draw):
    """``draw()``, host samples of ``shape`` and dtype ``d`` for ``device``; on a device
    without data (meta) nothing is drawn -- the generator does not move -- and the result is
    the device's placeholder (NOTE [ Meta device ] in ember/backends/meta.py)."""
    if device is None or device == "cpu":
        return draw()
    empty = xp_for(device).empty(shape, d.np)
    return draw() if holds_values(empty) else empty


def _result(arr, requires_grad, device, out, op_name):
    t = finish(arr, requires_grad, device)
    return t if out is None else _dispatch.write_out(op_name, out, t)


# ------------------------------------------------------------------------------------------------
# rand / randn / randint / randperm


@public(method=False)
@_dispatch.entrance("rand")
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kwargs) -> Tensor:
    """Samples from the uniform distribution on [0, 1), of shape ``size``.

    Example::

        >>> g = ember.Generator().manual_seed(0)
        >>> ember.rand(2, 3, generator=g).shape
        ember.Size([2, 3])
    """
    shape = size_arg("rand", size, kwargs)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    _require_float("check_uniform_bounds", d)
    g = resolve(generator, device)
    return _result(_sample(device, shape, d, lambda: uniform_array(g, shape, d)),
                   requires_grad, device, out, "rand")


@public(method=False)
@_dispatch.entrance("randn")
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kwargs) -> Tensor:
    """Samples from the standard normal distribution, of shape ``size``.

    Example::

        >>> ember.randn(4, dtype=ember.float64).dtype
        ember.float64
    """
    shape = size_arg("randn", size, kwargs)
    d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
    _require_float("normal_kernel_cpu", d, empty=0 in shape)
    g = resolve(generator, device)
    return _result(_sample(device, shape, d, lambda: normal_array(g, shape, d)),
                   requires_grad, device, out, "randn")


def _int_bound(x, name, position):
    if type(x) is int:
        return x
    if isinstance(x, Tensor) and x.numel() == 1 and x.dtype.category <= 1:
        return x.item()
    if isinstance(x, builtins.bool) or not isinstance(x, (builtins.int, np.integer)):
        raise TypeError(f"randint(): argument '{name}' (position {position}) must be int, not "
                        f"{type(x).__name__}")
    return operator.index(x)


def _parse_randint(op_name, args, kwargs, first_position=1):
    """(low, high, rest) from PyTorch's overloads ``(high, ...)`` and ``(low, high, ...)``."""
    low = kwargs.pop("low", None)
    high = kwargs.pop("high", None)
    args = list(args)
    if high is None:
        if not args:
            raise TypeError(f"{op_name}() missing required argument 'high'")
        second_is_size = len(args) >= 2 and (isinstance(args[1], (tuple, list)) or (
            isinstance(args[1], Tensor) and args[1].dim() > 0))
        if low is None and len(args) >= 2 and not second_is_size:
            low, high = args[0], args[1]  # (low, high, ...): the second one is not a size
            args = args[2:]
        else:
            high = args.pop(0)
    low = 0 if low is None else _int_bound(low, "low", first_position)
    high = _int_bound(high, "high", first_position + (1 if low else 0))
    return low, high, args


@public(method=False)
@_dispatch.entrance("randint")
def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, **kwargs) -> Tensor:
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or
    ``randint(low, high, size)``; int64 unless ``dtype`` says otherwise.

    Example::

        >>> t = ember.randint(3, 10, (5,))
        >>> bool(((t >= 3) & (t < 10)).all()), t.dtype
        (True, ember.int64)
    """
    kwargs = dict(kwargs)
    size = kwargs.pop("size", None)
    low, high, rest = _parse_randint("randint", args, kwargs)
    if kwargs:
        raise TypeError(f"randint() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if size is None:
        if len(rest) != 1:
            raise TypeError("randint() missing required argument 'size' (a tuple of ints)")
        size = rest[0]
    elif rest:
        raise TypeError("randint() got multiple values for argument 'size'")
    if isinstance(size, (builtins.int, np.integer)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not "
                        f"{type(size).__name__}")
    shape = size_arg("randint", (size,), {})
    d = resolve_dtype(dtype, _dt.int64, out=out)
    _check_int_bounds(d, low, high)
    g = resolve(generator, device)
    arr = _sample(device, shape, d, lambda: _integers(g, low, high, shape, d))
    return _result(arr, requires_grad, device, out, "randint")


@public(method=False)
@_dispatch.entrance("randperm")
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise).

    Example::

        >>> sorted(ember.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    if isinstance(n, builtins.bool) or not isinstance(n, (builtins.int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    d = resolve_dtype(dtype, _dt.int64, out=out)
    if d.category <= 1 and d is not _dt.bool_ and n > 0 and n - 1 > np.iinfo(d.np).max:
        raise RuntimeError(
            f"value cannot be converted to type {_dt.from_np[d.np].name}_t without overflow")
    if d.category == 3 or d is _dt.bool_:  # no kernel, whatever n (torch checks first)
        raise _not_implemented("randperm", d)
    g = resolve(generator, device)
    arr = _sample(device, (n,), d, lambda: _permutation(g, n).astype(d.np))
    return _result(arr, requires_grad, device, out, "randperm")


# -- *_like ---------------------------------------------------------------------------------------


def _like_fill(op_name, input, dtype, layout, device, requires_grad, memory_format, sample):
    t = like(op_name, input, None, dtype, device, False, memory_format)
    a = t._data
    if not holds_values(a):  # meta: nothing to draw
        return t.requires_grad_(True) if requires_grad else t
    arr = sample(a, _dt.from_np[a.dtype])
    if type(a) is np.ndarray:
        a[...] = arr
    else:
        a[...] = _dispatch.backends_by_type[type(a)].to_device(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


@public(method=False)
@_dispatch.entrance("rand_like")
def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """``rand`` with the shape (and, unless overridden, dtype and device) of ``input``."""
    d = resolve_dtype(dtype, getattr(input, "dtype", None))
    if d is not None:
        _require_float("check_uniform_bounds", d)
    g = resolve(generator, getattr(input, "device", None) if device is None else device)
    return _like_fill("rand_like", input, dtype, layout, device, requires_grad, memory_format,
                      lambda a, dt: _in_memory_order(a, lambda shape: uniform_array(g, shape, dt)))


@public(method=False)
@_dispatch.entrance("randn_like")
def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """``randn`` with the shape (and, unless overridden, dtype and device) of ``input``."""
    d = resolve_dtype(dtype, getattr(input, "dtype", None))
    if d is not None:
        _require_float("normal_kernel_cpu", d,
                       empty=isinstance(input, Tensor) and 0 in input._data.shape)
    g = resolve(generator, getattr(input, "device", None) if device is None else device)
    return _like_fill("randn_like", input, dtype, layout, device, requires_grad, memory_format,
                      lambda a, dt: _in_memory_order(a, lambda shape: normal_array(
                          g, shape, dt, contiguous=a.flags.c_contiguous)))


@public(method=False)
@_dispatch.entrance("randint_like")
def randint_like(input, *args, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None, **kwargs) -> Tensor:
    """``randint`` with the shape (and dtype and device) of ``input``:
    ``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    kwargs = dict(kwargs)
    low, high, rest = _parse_randint("randint_like", args, kwargs, first_position=2)
    if rest or kwargs:
        raise TypeError("randint_like() takes (input, high) or (input, low, high)")
    d = resolve_dtype(dtype, getattr(input, "dtype", None))
    if d is not None:
        _check_int_bounds(d, low, high)
    g = resolve(generator, getattr(input, "device", None) if device is None else device)
    return _like_fill("randint_like", input, dtype, layout, device, requires_grad, memory_format,
                      lambda a, dt: _in_memory_order(a, lambda shape: _integers(
                          g, low, high, shape, dt)))


# ------------------------------------------------------------------------------------------------
# normal / bernoulli / multinomial / poisson


def _check_std(std):
    if not std >= 0:  # (NaN is refused too)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")


@public(method=False)
@_dispatch.entrance("normal")
def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False) -> Tensor:
    """Samples from normal distributions with the given ``mean`` and ``std``.

    The four overloads of PyTorch: ``normal(mean_tensor, std_tensor)`` (broadcast),
    ``normal(mean_tensor, std=1.0)``, ``normal(mean, std_tensor)`` and
    ``normal(mean, std, size)``. With tensor arguments that require grad the result is
    differentiable with respect to them.

    Example::

        >>> ember.normal(0.0, 1.0, (2, 3)).shape
        ember.Size([2, 3])
        >>> ember.normal(ember.zeros(4), 2.0).shape
        ember.Size([4])
    """
    g = resolve(generator, device)
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with a "
                            "float mean and std, 'size' is required")
        mean = _number(mean, "normal", "mean")
        std = _number(std, "normal", "std")
        _check_std(std)
        shape = size_arg("normal", (size,), {})
        d = resolve_dtype(dtype, _dt.get_default_dtype(), out=out)
        _require_float("normal_kernel_cpu", d)
        return _result(_sample(device, shape, d, lambda: normal_array(g, shape, d, mean, std)),
                       requires_grad, device, out, "normal")
    if size is not None:
        raise TypeError("normal(): 'size' is only accepted with a float mean and std")
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    # torch's order: a complex std, negative stds, then the result's dtype -- mean's when
    # it is a tensor (a float64 std does not widen a float32 mean), else std's
    if st and std.dtype.is_complex:
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if not st:
        std = _number(std, "normal", "std")
        _check_std(std)
    elif holds_values(std._data):
        sa = host(std._data)
        if sa.size and not (sa >= 0).all():  # (NaN is refused too)
            raise RuntimeError("normal expects all elements of std >= 0.0")
    d = tensors[0].dtype
    if not mt:
        mean = _number(mean, "normal", "mean")
    shapes = [tuple(x.shape) for x in tensors]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({shapes[0][-1]}) must match the size of tensor b "
            f"({shapes[1][-1]}) at non-singleton dimension 0") from None
    _require_float("normal_kernel_cpu", d, empty=0 in shape)
    eps = _sample(tensors[0].device, shape, d, lambda: normal_array(g, shape, d))
    if _dispatch.needs_grad(tensors) or not holds_values(eps):
        # differentiable: d/dmean = 1, d/dstd = eps, exactly PyTorch's formulas
        eps_t = finish(eps, False, tensors[0].device)
        r = mean + std * eps_t
        if r.dtype != d:
            r = r.to(d)
        return r if out is None else _dispatch.write_out("normal", out, r)
    m = host(mean._data) if mt else mean
    s = host(std._data) if st else std
    arr = np.asarray(m + s * eps).astype(d.np, copy=False)
    if arr.ndim:  # NumPy's ascontiguousarray would make a 0-d array 1-d
        arr = np.ascontiguousarray(arr)
    return _result(arr, False, tensors[0].device, out, "normal")


def _bernoulli_array(g, shape, d, p, order=None):
    """0/1 samples of dtype ``d``, ``u < p``: ``p`` a number (float64 uniforms) or an array
    broadcastable to ``shape`` (uniforms of its precision: float64 for float64 ``p``, else
    float32); ``order``: the axes of ``p``'s target shape that ``shape`` lists."""
    n = math.prod(shape)
    # (comparisons of 0-d arrays give NumPy scalars: np.asarray keeps 0-d results arrays)
    if not isinstance(p, np.ndarray):
        return g._bernoulli(n, p, d.np).reshape(shape)
    full = np.broadcast_to(p, tuple(shape[i] for i in np.argsort(order))
                           if order is not None else shape)
    if order is not None:
        full = full.transpose(order)
    if p.dtype == np.float64:
        return np.asarray(g._uniform64(n).reshape(shape) < full).astype(d.np)
    return np.asarray(g._uniform_bits(n, 24).reshape(shape) < full.astype(np.float32)).astype(
        d.np)


@public
@_dispatch.entrance("bernoulli")
def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples, 1 with probability ``input`` (elementwise), or ``p`` if given; the result
    has ``input``'s dtype.

    Example::

        >>> ember.bernoulli(ember.tensor([0., 1.]))
        tensor([0., 1.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if p is not None and out is not None:
        # PyTorch has no ``out=`` for the float-``p`` overload
        raise TypeError("bernoulli() received an invalid combination of arguments - got "
                        "(Tensor, float, out=Tensor): out= needs the probabilities in input")
    g = resolve(generator, input.device)
    d = input.dtype
    if not holds_values(input._data):  # meta: validate the arguments, draw nothing
        if p is None:
            _require_float("bernoulli_tensor_cpu_p_", d, allow_complex=False)
        else:
            _number(p, "bernoulli", "p")
        return _result(input._data.copy(), False, input.device, out, "bernoulli")
    if p is None:
        _require_float("bernoulli_tensor_cpu_p_", d, allow_complex=False,
                       empty=0 in input._data.shape)
        pa = host(input._data)
        if pa.size and not ((pa >= 0) & (pa <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        # NumPy's ascontiguousarray would make a 0-d array 1-d
        arr = _bernoulli_array(g, pa.shape, d, np.ascontiguousarray(pa) if pa.ndim else pa)
    else:
        p = _number(p, "bernoulli", "p")
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
        if d.is_complex and 0 not in input._data.shape:  # (any other dtype draws)
            raise _not_implemented("bernoulli_scalar_cpu_", d)
        arr = _bernoulli_array(g, tuple(input.shape), d, p)
    return _result(arr, False, input.device, out, "bernoulli")


@public
@_dispatch.entrance("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None) -> Tensor:
    """Indices sampled from the categorical distribution(s) in the last dimension of
    ``input`` (non-negative weights, 1-D or 2-D), with or without replacement.

    Example::

        >>> ember.multinomial(ember.tensor([0., 1., 0.]), 1)
        tensor([1])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    n = operator.index(num_samples)
    d = input.dtype
    if d.category != 2:
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {d.scalar_name}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if isinstance(out, Tensor) and out.dtype != _dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype.scalar_name}")
    ncat = input.shape[-1]
    if ncat > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > ncat:
        raise RuntimeError(
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not holds_values(input._data):  # meta: the result's shape, nothing drawn
        rows = (input.shape[0],) if input.dim() == 2 else ()
        return _result(xp_for(input.device).empty(rows + (n,), np.int64), False, input.device,
                       out, "multinomial")
    rows = input.shape[0] if input.dim() == 2 else 1
    p = host(input._data).astype(np.float64).reshape(rows, ncat)
    if rows:  # (a row of no categories sums to 0)
        if not (np.isfinite(p) & (p >= 0)).all():
            raise RuntimeError(
                "probability tensor contains either `inf`, `nan` or element < 0")
        if (p.sum(axis=1) <= 0).any():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = resolve(generator, input.device)
    rows = p.shape[0]
    # PyTorch's two algorithms, in its dtype: the weights keep input's precision (float16
    # and bfloat16 computed in float32)
    wd = np.float64 if d is _dt.float64 else np.float32
    w = host(input._data).astype(wd).reshape(rows, ncat)
    if rows == 0:
        idx = np.empty((0, n), np.int64)
    elif replacement and n > 1:
        # inverse CDF per row: a float64 uniform per sample, the first category whose
        # normalised running sum reaches it; rows draw one after another
        cdf = np.cumsum(w, axis=1, dtype=wd)
        cdf /= cdf[:, -1:]
        u = g._uniform64(rows * n).reshape(rows, n)
        idx = np.stack([np.searchsorted(cdf[r].astype(np.float64), u[r], side="left")
                        for r in range(rows)])
        idx = np.minimum(idx, ncat - 1)
    else:
        # one sample, or none twice: the largest w / Exp(1) keys (exponentials drawn in
        # input's dtype over the whole input, as ``exponential_`` draws them)
        q = _exponential(g, (rows, ncat), _dt.from_np[np.dtype(wd)]
                         if d in (_dt.float32, _dt.float64) else d, 1.0).astype(wd)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = w / q
        keys = np.where(np.isnan(keys), -np.inf, keys)
        if n == 1:
            idx = np.argmax(keys, axis=1)[:, None]
        else:
            idx = np.argsort(-keys, axis=1, kind="stable")[:, :n]
    idx = idx.astype(np.int64)
    if input.dim() == 1:
        idx = idx.reshape(n)
    return _result(np.ascontiguousarray(idx), False, input.device, out, "multinomial")


#: the largest rate NumPy's Poisson sampler takes
_POISSON_MAX = float(np.iinfo(np.int64).max) - 10 * float(np.iinfo(np.int64).max) ** 0.5


@public(method=False)
@_dispatch.entrance("poisson")
def poisson(input, generator=None) -> Tensor:
    """Samples from Poisson distributions with rates ``input`` (same dtype as ``input``):
    on the CPU the numbers PyTorch draws from the same seed (NOTE [ Poisson draws on the
    generator's stream ] in ``ember/_core/rng_sequential.py``).

    Example::

        >>> ember.poisson(ember.zeros(3))
        tensor([0., 0., 0.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = input.dtype
    _require_float("poisson_cpu", d, allow_complex=False)
    if not holds_values(input._data):  # meta: nothing to draw
        return finish(input._data.copy(), False, input.device)
    lam = host(input._data).astype(np.float64)
    if lam.size and not (lam >= 0).all():  # (NaN included)
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if input.device.type == "cpu":
        from .._core.rng_sequential import poisson_array

        draws = poisson_array(resolve(generator), lam)
    else:
        # rates beyond int64 (NumPy refuses them): torch's count overflows its int64 to the
        # lowest one, a half dtype then to -inf
        huge = lam > _POISSON_MAX
        draws = numpy_generator(generator, input.device).poisson(np.where(huge, 0.0, lam))
        draws = np.where(huge, float(np.iinfo(np.int64).min), draws)
    with np.errstate(over="ignore"):
        arr = draws.astype(d.np)
    return finish(np.asarray(arr), False, input.device)


# ------------------------------------------------------------------------------------------------
# in-place random fills


# a non-leaf tensor that requires grad and is refilled at random keeps requires_grad but
# passes zeros back to its old history (NOTE [ Overwriting a tensor in a graph ])


def write_inplace(self, op_name, draw):
    """Store the host array ``draw()`` into ``self``: autograd's checks, the overlap check,
    the write and the version bump. A tensor without data (meta) draws nothing."""
    sd = self._data
    if type(sd) is np.ndarray:
        arr = draw()
    elif not holds_values(sd):
        arr = sd
    else:
        arr = draw()
        arr = _dispatch.backends_by_type[type(sd)].to_device(arr)
    if self._rg and _dispatch.state.grad_enabled:
        return _dispatch.commit_inplace_result(
            op_name, self, lambda: _dispatch.apply(overwrite_op, (self,), {"value": arr}))
    check_inplace(self, op_name)
    _dispatch.check_overlap(op_name, self)
    sd[...] = arr
    self._bump()
    return self


def _self_dtype(self, op_name):
    if not isinstance(self, Tensor):
        raise TypeError(f"{op_name}(): 'self' must be Tensor, not {type(self).__name__}")
    d = self.dtype
    if d.np in _dt._NO_MATH_NP:  # no sampler runs on float8 (NOTE [ Float8 dtypes ])
        raise _not_implemented(_FLOAT8_KERNELS.get(op_name, op_name[:-1] + "_cpu"), d)
    return d


#: PyTorch's kernel names in its refusals of float8 tensors
_FLOAT8_KERNELS = {"uniform_": "check_uniform_bounds", "normal_": "normal_kernel_cpu",
                   "bernoulli_": "bernoulli_scalar_cpu_", "random_": "random_update_from_to"}


@method
@_dispatch.entrance("uniform_", inplace=True)
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs) -> Tensor:
    """Fill ``self`` in place with samples from the uniform distribution on [from, to)."""
    low = _number(kwargs.pop("from", from_), "uniform_", "from")
    high = _number(to, "uniform_", "to")
    d = _self_dtype(self, "uniform_")
    _require_float("check_uniform_bounds", d)
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(low)} > to={_num(high)}")
    g = resolve(generator, self.device)
    return write_inplace(self, "uniform_", lambda: _in_memory_order(
        self._data, lambda shape: uniform_array(g, shape, d, low, high)))


@method
@_dispatch.entrance("normal_", inplace=True)
def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fill ``self`` in place with samples from N(mean, std**2)."""
    mean = _number(mean, "normal_", "mean")
    std = _number(std, "normal_", "std")
    d = _self_dtype(self, "normal_")
    _require_float("normal_kernel_cpu", d, empty=0 in self._data.shape)
    _check_std(std)
    g = resolve(generator, self.device)
    return write_inplace(self, "normal_", lambda: _in_memory_order(
        self._data, lambda shape: normal_array(g, shape, d, mean, std,
                                               contiguous=self._data.flags.c_contiguous)))


@method
@_dispatch.entrance("bernoulli_", inplace=True)
def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """Fill ``self`` in place with 0/1 samples, 1 with probability ``p`` (a number or a
    tensor broadcastable to ``self``)."""
    d = _self_dtype(self, "bernoulli_")
    shape = self._data.shape
    if isinstance(p, Tensor):
        pa = p._data if not holds_values(p._data) else host(p._data)
        try:
            ok = np.broadcast_shapes(pa.shape, shape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[-1] if shape else 1}) must match the "
                f"existing size ({pa.shape[-1] if pa.shape else 1}) at non-singleton dimension "
                f"0.  Target sizes: {list(shape)}.  Tensor sizes: {list(pa.shape)}")
        if pa.size and holds_values(pa) and not ((pa >= 0) & (pa <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    else:
        pa = _number(p, "bernoulli_", "p")
        if not 0 <= pa <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(pa)}")
    if d.category == 3:
        raise _not_implemented("bernoulli_scalar_cpu_", d)
    g = resolve(generator, self.device)
    return write_inplace(self, "bernoulli_", lambda: _in_memory_order(
        self._data, lambda shp, order: _bernoulli_array(g, shp, d, pa, order), axes=True))


_MISSING = object()


@method
@_dispatch.entrance("random_", inplace=True)
def random_(self, from_=_MISSING, to=_MISSING, *, generator=None, **kwargs) -> Tensor:
    """Fill ``self`` in place with integers: ``random_()`` over the dtype's whole range
    (floats: integers up to 2**mantissa), ``random_(to)`` over [0, to), and
    ``random_(from, to)`` over [from, to) (``to=None``: up to the dtype's maximum)."""
    d = _self_dtype(self, "random_")
    from_keyword = "from" in kwargs
    if from_keyword:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if d.category == 3:
        raise _not_implemented("random_", d)
    if d is _dt.bool_:
        top = 1
    elif d.category == 1:
        top = int(np.iinfo(d.np).max)
    else:
        top = 1 << _MANTISSA[d]
    full = from_ is _MISSING and to is _MISSING
    if full:
        low, high = 0, top + 1
    else:
        if to is _MISSING and not from_keyword:
            from_, to = 0, from_  # random_(to)
        low = 0 if from_ is _MISSING or from_ is None else _number(from_, "random_", "from")
        high = top + 1 if to is _MISSING or to is None else _number(to, "random_", "to")
        _check_int_bounds(d, low, high)
    g = resolve(generator, self.device)
    if full:  # [0, top]: a 64-bit draw for int64 and float64, else a word, modulo top + 1
        wide = d in (_dt.int64, _dt.float64)

        def draw(shape):
            n = math.prod(shape)
            r = g._words64(n) if wide else g._words(n)
            r %= np.uint64(high)
            return r.astype(d.np).reshape(shape)
    else:
        def draw(shape):
            return _integers(g, low, high, shape, d)
    return write_inplace(self, "random_", lambda: _in_memory_order(self._data, draw))


@method
@_dispatch.entrance("exponential_", inplace=True)
def exponential_(self, lambd=1.0, *, generator=None) -> Tensor:
    """Fill ``self`` in place with samples from the exponential distribution of rate
    ``lambd``."""
    d = _self_dtype(self, "exponential_")
    if d.category != 2:
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be "
            f"a floating point but you specified {d.scalar_name}")
    lambd = _number(lambd, "exponential_", "lambd")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    g = resolve(generator, self.device)
    return write_inplace(self, "exponential_", lambda: _in_memory_order(
        self._data, lambda shape: _exponential(g, shape, d, lambd)))


@method
@_dispatch.entrance("geometric_", inplace=True)
def geometric_(self, p, *, generator=None) -> Tensor:
    """Fill ``self`` in place with samples from the geometric distribution (number of
    Bernoulli(``p``) trials up to and including the first success)."""
    d = _self_dtype(self, "geometric_")
    p = _number(p, "geometric_", "p")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    if d.category == 3 or d is _dt.bool_:
        raise _not_implemented("geometric_cpu", d)
    g = resolve(generator, self.device)

    def draw(shape):  # trials up to the first success: ceil(log(u) / log(1 - p))
        u = g._uniform64(math.prod(shape)).reshape(shape)
        with np.errstate(divide="ignore"):
            return np.ceil(_rm.c_math("log", u) / math.log1p(-p)).astype(d.np)

    return write_inplace(self, "geometric_", lambda: _in_memory_order(self._data, draw))


@method
@_dispatch.entrance("log_normal_", inplace=True)
def log_normal_(self, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill ``self`` in place with ``exp(N(mean, std**2))`` samples."""
    d = _self_dtype(self, "log_normal_")
    if d.category != 2:
        raise _not_implemented("log_normal_cpu", d)
    mean = _number(mean, "log_normal_", "mean")
    std = _number(std, "log_normal_", "std")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    g = resolve(generator, self.device)

    def draw(shape):  # always PyTorch's scalar Box-Muller path, in float64
        z = _rm.affine64(_box_muller(g, math.prod(shape)), std, mean, _rm.fused())
        with np.errstate(over="ignore"):
            return _rm.c_math("exp", z).astype(d.np).reshape(shape)

    return write_inplace(self, "log_normal_", lambda: _in_memory_order(self._data, draw))


@method
@_dispatch.entrance("cauchy_", inplace=True)
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill ``self`` in place with samples from the Cauchy distribution."""
    d = _self_dtype(self, "cauchy_")
    if d.category != 2:
        raise RuntimeError(
            "Cauchy distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {d.scalar_name}")
    median = _number(median, "cauchy_", "median")
    sigma = _number(sigma, "cauchy_", "sigma")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    g = resolve(generator, self.device)

    def draw(shape):  # median + sigma * tan(pi * (u - 1/2))
        u = g._uniform64(math.prod(shape)).reshape(shape)
        return _rm.affine64(_rm.c_math("tan", np.pi * (u - 0.5)), sigma, median,
                            _rm.fused()).astype(d.np)

    return write_inplace(self, "cauchy_", lambda: _in_memory_order(self._data, draw))

