"""Discrete Fourier transforms (``ember.fft``): complex, real and Hermitian, 1-D to n-D.

Three ops carry every transform -- complex-to-complex, real-to-complex (the one-sided half
spectrum) and complex-to-real -- plus a zero-pad/crop op. The public functions only
normalise ``n``/``s``, ``dim`` and ``norm``, as PyTorch does.

NOTE [ FFT gradients ]
A DFT is linear, so its vjp is the adjoint transform: the transform in the other direction
with the dual normalisation ('backward' <-> 'forward', 'ortho' stays). Padding or cropping
of the input (``n``/``s``) is the adjoint of cropping or padding the gradient. For the real
transforms PyTorch's conventions hold: the vjp of rfft zero-fills the missing half of the
spectrum and keeps the real part of the adjoint; the vjp of irfft is an rfft of the gradient
with the entries that stand for two conjugate bins doubled.

Result dtypes follow PyTorch: float32 (and integer/bool inputs) -> complex64, float64 ->
complex128; float16/bfloat16 are not supported on the CPU.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import wrap_dim
from .._core.tensor import Tensor, wrap
from ._registry import Op, quiet_kernel
from .linalg import check_tensor

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# ------------------------------------------------------------------------------------------------
# kernels and ops


def _resize_kernel(xp, a, *, sizes, dims):
    """Crop or zero-pad ``a`` to ``sizes`` along ``dims`` (at the end of each dim)."""
    crop = [slice(None)] * a.ndim
    pad = [(0, 0)] * a.ndim
    for n, d in zip(sizes, dims):
        m = a.shape[d]
        if n < m:
            crop[d] = slice(0, n)
        elif n > m:
            pad[d] = (0, n - m)
    r = a[tuple(crop)]
    if any(p != (0, 0) for p in pad):
        r = xp.pad(r, pad)
    else:  # a fresh array, never a view of the input; in the input's layout, as the view
        r = r.copy(order="K")  # PyTorch transforms (NOTE [ Meta FFT layouts ])
    return r


def _resize_vjp(g, a, *, sizes, dims):
    return resize(g, [a.shape[d] for d in dims], dims)


resize_op = Op("_fft_resize", _resize_kernel, vjp=_resize_vjp, linear=True)


def resize(x, sizes, dims):
    """``x`` cropped or zero-padded to ``sizes`` along ``dims`` (no-op when equal)."""
    sizes, dims = tuple(sizes), tuple(dims)
    if all(x.shape[d] == n for n, d in zip(sizes, dims)):
        return x
    return _dispatch.apply(resize_op, (x,), {"sizes": sizes, "dims": dims})


def _complex_np(a):
    return np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64


# NOTE [ FFT of non-finite input ]
# PyTorch's CPU transforms are MKL's (DFTI), not pocketfft (NumPy's). Where an input holds
# NaN or infinity, which outputs come out NaN and which infinite depends on how the
# transform combines terms. Checked against torch on random inputs, MKL's codelets for the
# lengths in ``_exact_length`` combine them as exact arithmetic would: a non-finite input
# component reaches an output component only where its twiddle factor's component is
# non-zero (so ``inf`` at ``x[1]`` of a length-4 transform gives ``X[0] = inf + 0j``, not
# ``inf + nanj``), NaN poisons every component it reaches, and infinities of both signs
# meeting give NaN. Along such an axis ember computes the finite part from the input with
# its non-finite components zeroed and overlays that rule; multi-dimensional transforms
# apply it axis by axis (the order does not change the pattern). The double-precision
# complex length-8 codelet is the one exception found: two exact 4-point halves, the odd
# half multiplied by its twiddles in full complex arithmetic (so there ``inf * 0`` is NaN),
# then a butterfly. Other lengths, and near-overflow finite inputs, keep NumPy's order,
# which can differ. Checked on random inputs against torch 2.13's MKL: every op of
# ember.fft, lengths 1 to 8, both precisions, every norm.

_EXACT_MAX = 1024  # the rule's sign matrices are (n, n): longer axes keep NumPy's order


def _is_prime(n):
    return n > 1 and all(n % p for p in range(2, int(n**0.5) + 1))


def _exact_length(n, real):
    """Whether MKL's transform of length ``n`` follows the exact-arithmetic rule."""
    if n > _EXACT_MAX:
        return False
    if real:  # real-to-complex and complex-to-real codelets
        return (n <= 16 and n not in (9, 15)) or _is_prime(n)
    return n <= 8 or n in (10, 14) or _is_prime(n)


@functools.lru_cache(maxsize=64)
def _twiddle_signs(n_in, n_out, n):
    """Signs (-1, 0, +1) of cos and sin of ``2 pi j k / n`` for j < n_in, k < n_out, with
    the exact zeros of the quarter turns, as float32 matrices for counting products."""
    m = np.outer(np.arange(n_in), np.arange(n_out)) % n
    q = 4 * m
    cos = np.where((q < n) | (q > 3 * n), 1, np.where((q == n) | (q == 3 * n), 0, -1))
    sin = np.where((m == 0) | (2 * m == n), 0, np.where(2 * m < n, 1, -1))
    return cos.astype(np.float32), sin.astype(np.float32)


def _overlay(finite, terms):
    """``finite`` with the exact-arithmetic non-finite rule applied: ``terms`` are pairs
    (input component along the last axis, sign matrix), the output being their sum of
    products."""
    pos = neg = nan = 0
    for x, m in terms:
        p = (x == np.inf).astype(np.float32)
        q = (x == -np.inf).astype(np.float32)
        z = np.isnan(x).astype(np.float32)
        mp, mn = (m > 0).astype(np.float32), (m < 0).astype(np.float32)
        pos = pos + p @ mp + q @ mn
        neg = neg + p @ mn + q @ mp
        nan = nan + z @ (m != 0).astype(np.float32)
    r = np.where(pos > 0, np.inf, finite)
    r = np.where(neg > 0, -np.inf, r)
    return np.where((nan > 0) | ((pos > 0) & (neg > 0)), np.nan, r).astype(finite.dtype)


def _complex_of(re, im, ct):
    r = np.empty(np.broadcast_shapes(re.shape, im.shape), ct)
    r.real, r.imag = re, im  # never ``re + 1j * im``: 1j * inf is nan + inf j
    return r


def _zero_nonfinite(x):
    return np.where(np.isfinite(x), x, 0)


def _exact_c2c_axis(a, axis, forward, real):
    """The unnormalised 1-D transform of complex ``a`` along ``axis``
    (NOTE [ FFT of non-finite input ])."""
    n = a.shape[axis]
    f = np.fft.fft if forward else np.fft.ifft
    if not _exact_length(n, real):
        return f(a, axis=axis, norm="backward" if forward else "forward")
    a = np.moveaxis(a, axis, -1)
    if n == 8 and not real and a.dtype == np.complex128:
        return np.moveaxis(_radix2_of_exact_halves(a, forward), -1, axis)
    re, im = a.real, a.imag
    fin = f(_complex_of(_zero_nonfinite(re), _zero_nonfinite(im), a.dtype), axis=-1,
            norm="backward" if forward else "forward")
    cos, sin = _twiddle_signs(n, n, n)
    if forward:  # the twiddle is cos - i sin
        sin = -sin
    # (re + i im)(cos + i sin) = (re cos - im sin) + i (re sin + im cos)
    r = _complex_of(_overlay(fin.real, [(re, cos), (im, -sin)]),
                    _overlay(fin.imag, [(re, sin), (im, cos)]), a.dtype)
    return np.moveaxis(r, -1, axis)


def _radix2_of_exact_halves(a, forward):
    """MKL's complex length-8 transform along the last axis: exact 4-point transforms of
    the even and odd entries, the odd one times the twiddles ``w**k`` in IEEE complex
    arithmetic (``1 + 0j`` and ``-1j`` included), then the radix-2 butterfly."""
    even = _exact_c2c_axis(a[..., 0::2], -1, forward, False)
    odd = _exact_c2c_axis(a[..., 1::2], -1, forward, False)
    h = 0.5**0.5
    c = np.array([1.0, h, 0.0, -h])
    d = np.array([0.0, h, 1.0, h]) * (-1 if forward else 1)
    with np.errstate(invalid="ignore", over="ignore"):
        t = _complex_of(odd.real * c - odd.imag * d, odd.real * d + odd.imag * c, a.dtype)
        return np.concatenate([even + t, even - t], axis=-1)


def _exact_c2r_last(a, n):
    """The unnormalised complex-to-real transform of the one-sided ``a`` (``n // 2 + 1``
    long) along its last axis (NOTE [ FFT of non-finite input ]); the imaginary parts of
    the zero and Nyquist bins are ignored, as their sines are zero."""
    if not _exact_length(n, True):
        return np.fft.irfft(a, n, axis=-1, norm="forward")
    re, im = a.real, a.imag
    fin = np.fft.irfft(_complex_of(_zero_nonfinite(re), _zero_nonfinite(im), a.dtype), n,
                       axis=-1, norm="forward")
    cos, sin = _twiddle_signs(a.shape[-1], n, n)
    return _overlay(fin, [(re, cos), (im, -sin)])


def _scale(r, norm, n, forward):
    """Apply the normalisation to each component (a complex times a real scale would turn
    ``inf + 0j`` into ``inf + nanj``)."""
    scale = {"backward": not forward, "forward": forward}.get(norm)
    if scale is None:  # ortho
        f = 1 / np.sqrt(n)
    elif scale:
        f = 1 / n
    else:
        return r
    if np.iscomplexobj(r):
        r.real *= f
        r.imag *= f
    else:
        r *= f
    return r


def _exact_wanted(xp, a, dims, real):
    """Whether the transform takes the exact path: CPU arrays holding non-finite values
    with some transform axis of a length the rule covers."""
    return (xp is np and a.size and any(_exact_length(a.shape[d], real) for d in dims)
            and not np.isfinite(a).all())


@quiet_kernel
def _c2c_kernel(xp, a, *, dims, norm, forward, real_input=False):
    f = xp.fft.fftn if forward else xp.fft.ifftn
    if a.size == 0:
        return a.astype(_complex_np(a))
    if _exact_wanted(xp, a, dims, real_input):
        r = a.astype(_complex_np(a))
        for d in reversed(dims):
            r = _exact_c2c_axis(r, d, forward, real_input)
        return _scale(r, norm, math.prod(a.shape[d] for d in dims), forward)
    return f(a, axes=dims, norm=norm).astype(_complex_np(a), copy=False)


def _c2c_vjp(g, _a, *, dims, norm, forward, real_input=False):
    return c2c(g, dims, _DUAL[norm], not forward)


c2c_op = Op("_fft_c2c", _c2c_kernel, vjp=_c2c_vjp, linear=True)


def c2c(x, dims, norm, forward, real_input=False):
    params = {"dims": tuple(dims), "norm": norm, "forward": forward}
    if real_input:  # a 1-D transform of a real signal: MKL's real codelets (torch's r2c)
        params["real_input"] = True
    return _dispatch.apply(c2c_op, (x,), params)


@quiet_kernel
def _r2c_kernel(xp, a, *, dims, norm, forward):
    ct = _complex_np(a)
    if a.size == 0:
        shape = list(a.shape)
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
        return xp.zeros(shape, ct)
    if _exact_wanted(xp, a, dims, True):  # NOTE [ FFT of non-finite input ]
        last = dims[-1]
        r = _exact_c2c_axis(a.astype(ct), last, True, True)
        r = r[(slice(None),) * last + (slice(0, a.shape[last] // 2 + 1),)]
        for d in reversed(dims[:-1]):
            r = _exact_c2c_axis(r, d, True, False)
        r = _scale(r, norm if forward else _DUAL[norm], math.prod(a.shape[d] for d in dims),
                   True)
        return r if forward else np.conj(r)
    if forward:
        r = xp.fft.rfftn(a, axes=dims, norm=norm)
    else:  # ihfft: the conjugate of the forward transform with the dual normalisation
        r = xp.conj(xp.fft.rfftn(a, axes=dims, norm=_DUAL[norm]))
    return r.astype(ct, copy=False)


def _r2c_vjp(g, a, *, dims, norm, forward):
    # zero-fill the missing half, then the adjoint complex transform; keep the real part
    full = resize(g, [a.shape[dims[-1]]], [dims[-1]])
    r = c2c(full, dims, _DUAL[norm], not forward)
    return r.real


r2c_op = Op("_fft_r2c", _r2c_kernel, vjp=_r2c_vjp, linear=True)


@quiet_kernel
def _c2r_kernel(xp, a, *, dims, norm, last_size, forward):
    rt = np.float64 if a.dtype == np.complex128 else np.float32
    s = [a.shape[d] for d in dims[:-1]] + [last_size]
    if a.size == 0:
        shape = list(a.shape)
        shape[dims[-1]] = last_size
        return xp.zeros(shape, rt)
    if _exact_wanted(xp, a, dims, True):  # NOTE [ FFT of non-finite input ]
        # as torch: the leading dims by an inverse complex transform, then the last
        r = a.astype(a.dtype) if not forward else np.conj(a)
        for d in reversed(dims[:-1]):
            r = _exact_c2c_axis(r, d, False, False)
        r = np.moveaxis(_exact_c2r_last(np.moveaxis(r, dims[-1], -1), last_size), -1,
                        dims[-1])
        n = math.prod(s)
        return _scale(r, norm if not forward else _DUAL[norm], n, False).astype(rt, copy=False)
    if not forward:
        r = xp.fft.irfftn(a, s=s, axes=dims, norm=norm)
    else:  # hfft: the forward transform of a Hermitian signal
        r = xp.fft.irfftn(xp.conj(a), s=s, axes=dims, norm=_DUAL[norm])
    return r.astype(rt, copy=False)


def _c2r_vjp(g, a, *, dims, norm, last_size, forward):
    # rfft of the gradient, bins 1 .. n - n//2 - 1 doubled (they stand for two bins)
    half = last_size // 2 + 1
    gi = _dispatch.apply(r2c_op, (g,), {"dims": dims, "norm": _DUAL[norm],
                                         "forward": not forward})
    double = last_size - half
    if double > 0:
        w = np.ones(half, np.float64 if g.dtype == _dt.float64 else np.float32)
        w[1:1 + double] = 2
        shape = [1] * g.dim()
        shape[dims[-1]] = half
        gi = gi * wrap(w.reshape(shape)).to(gi.device)
    return resize(gi, [a.shape[dims[-1]]], [dims[-1]])


c2r_op = Op("_fft_c2r", _c2r_kernel, vjp=_c2r_vjp, linear=True)


# ------------------------------------------------------------------------------------------------
# argument normalisation


def _check_norm(norm):
    if norm is None:
        return "backward"
    if norm not in ("backward", "forward", "ortho"):
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _check_input(op_name, x):
    check_tensor(op_name, x)
    d = x.dtype
    if d in (_dt.float16, _dt.bfloat16):
        raise RuntimeError(f"{op_name}: Unsupported dtype {d.scalar_name}")
    return x


def _to_float(x):
    """Integers and bool transform in the default float dtype."""
    if x.dtype.category < 2:
        return x.to(_dt.get_default_dtype())
    return x


def _to_complex(x):
    x = _to_float(x)
    if not x.is_complex():
        return x.to(x.dtype.to_complex())
    return x


def _n_arg(op_name, n):
    if n is None:
        return None
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{op_name}(): argument 'n' must be int, not {type(n).__name__}")
    n = operator.index(n)
    if n < 1:
        raise RuntimeError(f"{op_name}: Invalid number of data points ({n}) specified")
    return n


def _dims_1d(op_name, x, dim):
    if x.dim() == 0:
        raise IndexError(f"{op_name}: Dimension specified as {dim} but tensor has no dimensions")
    return (wrap_dim(dim, x.dim(), op_name),)


def _dims_nd(op_name, x, s, dim, default_all):
    """PyTorch's rules for (s, dim): s alone picks the last len(s) dims, dim alone keeps the
    sizes, neither is every dim (fftn) or the last two (fft2, where dim is given)."""
    if s is not None:
        s = [operator.index(v) for v in s]
    if dim is not None:
        if isinstance(dim, int):
            dim = (dim,)
        dims = [wrap_dim(d, x.dim(), op_name) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"{op_name}: FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(
                f"{op_name}: When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.dim():
            raise RuntimeError(
                f"{op_name}: Got shape with {len(s)} values but input tensor only has "
                f"{x.dim()} dimensions.")
        dims = list(range(x.dim() - len(s), x.dim()))
    else:
        dims = list(range(x.dim()))
    if s is None:
        s = [x.shape[d] for d in dims]
    else:
        s = [x.shape[d] if v == -1 else v for v, d in zip(s, dims)]
    for v in s:
        if v < 1:
            raise RuntimeError(f"{op_name}: Invalid number of data points ({v}) specified")
    return s, dims


# ------------------------------------------------------------------------------------------------
# transforms


def _check_out(name, out, complex_):
    """torch's refusal of an ``out=`` of the wrong kind (complex for a real result, real
    for a complex one), whatever the input's size."""
    if out is not None and isinstance(out, Tensor) and out.is_complex() != complex_:
        kind = "a complex" if complex_ else "a floating point"
        raise RuntimeError(f"{name} expects {kind} output tensor, but got "
                           f"{out.dtype.scalar_name}")


def _c2c_public(op_name, x, s, dims, norm, forward, out, one_d=False):
    _check_out(op_name[4:], out, True)
    real = one_d and not x.is_complex()  # torch takes its real-to-complex path
    x = _to_complex(x)
    x = resize(x, s, dims)
    r = c2c(x, dims, norm, forward, real_input=real)
    return r if out is None else _dispatch.write_out(op_name, out, r)


def _r2c_public(op_name, x, s, dims, norm, forward, out):
    if x.is_complex():
        raise RuntimeError(f"{op_name} expects a real input tensor, but got "
                           f"{x.dtype.scalar_name}")
    _check_out(op_name, out, True)
    x = _to_float(x)
    x = resize(x, s, dims)
    r = _dispatch.apply(r2c_op, (x,), {"dims": tuple(dims), "norm": norm, "forward": forward})
    return r if out is None else _dispatch.write_out(op_name, out, r)


def _c2r_public(op_name, x, s, dims, norm, forward, out, last_given):
    _check_out(op_name[4:], out, False)
    x = _to_complex(x)
    last = dims[-1]
    n = s[-1] if last_given else 2 * (x.shape[last] - 1)
    if n < 1:
        raise RuntimeError(f"{op_name}: Invalid number of data points ({n}) specified")
    sizes = list(s[:-1]) + [n // 2 + 1]
    x = resize(x, sizes, dims)
    r = _dispatch.apply(c2r_op, (x,), {"dims": tuple(dims), "norm": norm, "last_size": n,
                                        "forward": forward})
    return r if out is None else _dispatch.write_out(op_name, out, r)


def _make_1d(kind, name, forward, doc):
    def fn(input, n=None, dim=-1, norm=None, *, out=None):
        op_name = "fft_" + name
        _check_input(op_name, input)
        dims = _dims_1d(op_name, input, dim)
        n = _n_arg(op_name, n)
        norm = _check_norm(norm)
        s = [input.shape[dims[0]] if n is None else n]
        if s[0] < 1 and kind != "c2r":  # a zero-size dim has nothing to transform
            raise RuntimeError(f"{op_name}: Invalid number of data points ({s[0]}) specified")
        if kind == "c2c":
            return _c2c_public(op_name, input, s, dims, norm, forward, out, one_d=True)
        if kind == "r2c":
            return _r2c_public(name, input, s, dims, norm, forward, out)
        return _c2r_public(op_name, input, s, dims, norm, forward, out, n is not None)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _make_nd(kind, name, forward, doc, two_d):
    def fn(input, s=None, dim=(-2, -1) if two_d else None, norm=None, *, out=None):
        op_name = "fft_" + name
        _check_input(op_name, input)
        norm = _check_norm(norm)
        sizes, dims = _dims_nd(op_name, input, s, dim, not two_d)
        if not dims:
            r = _to_complex(input).clone() if kind != "c2r" else input.clone()
            return r if out is None else _dispatch.write_out(op_name, out, r)
        if kind == "c2c":
            return _c2c_public(op_name, input, sizes, dims, norm, forward, out)
        if kind == "r2c":
            return _r2c_public(name, input, sizes, dims, norm, forward, out)
        return _c2r_public(op_name, input, sizes, dims, norm, forward, out, s is not None)

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# the real-output transforms (NOTE [ Differences from PyTorch ] in ember/_ops/_docs.py)
_C2R_DIFFERS = ("\n\nDifferences from PyTorch:\n    NaN, infinite and near-overflow inputs: which "
                "outputs are NaN and which infinite can differ from PyTorch's (the transforms "
                "combine terms in another order).")
fft = _make_1d("c2c", "fft", True, "The 1-D discrete Fourier transform along ``dim``.")
ifft = _make_1d("c2c", "ifft", False, "The 1-D inverse discrete Fourier transform.")
rfft = _make_1d("r2c", "rfft", True,
                "The 1-D DFT of a real signal: the ``n // 2 + 1`` non-negative frequencies.")
irfft = _make_1d("c2r", "irfft", False,
                 "The inverse of :func:`rfft`: a real signal of length ``n`` (default "
                 "``2 * (m - 1)``) from its one-sided spectrum." + _C2R_DIFFERS)
hfft = _make_1d("c2r", "hfft", True,
                "The DFT of a Hermitian-symmetric signal given by its one-sided half: real."
                + _C2R_DIFFERS)
ihfft = _make_1d("r2c", "ihfft", False,
                 "The inverse of :func:`hfft`: the one-sided half of a real signal's inverse "
                 "DFT.")
fft2 = _make_nd("c2c", "fft2", True, "The 2-D discrete Fourier transform.", True)
ifft2 = _make_nd("c2c", "ifft2", False, "The 2-D inverse discrete Fourier transform.", True)
rfft2 = _make_nd("r2c", "rfft2", True, "The 2-D DFT of a real signal (one-sided).", True)
irfft2 = _make_nd("c2r", "irfft2", False, "The inverse of :func:`rfft2`." + _C2R_DIFFERS, True)
fftn = _make_nd("c2c", "fftn", True, "The n-D discrete Fourier transform.", False)
ifftn = _make_nd("c2c", "ifftn", False, "The n-D inverse discrete Fourier transform.", False)
rfftn = _make_nd("r2c", "rfftn", True, "The n-D DFT of a real signal (one-sided).", False)
irfftn = _make_nd("c2r", "irfftn", False, "The inverse of :func:`rfftn`." + _C2R_DIFFERS,
                  False)
hfft2 = _make_nd("c2r", "hfft2", True, "The 2-D DFT of a Hermitian-symmetric signal given by "
                 "its one-sided half: real." + _C2R_DIFFERS, True)
ihfft2 = _make_nd("r2c", "ihfft2", False, "The inverse of :func:`hfft2`.", True)
hfftn = _make_nd("c2r", "hfftn", True, "The n-D DFT of a Hermitian-symmetric signal given by "
                 "its one-sided half: real." + _C2R_DIFFERS, False)
ihfftn = _make_nd("r2c", "ihfftn", False, "The inverse of :func:`hfftn`.", False)


# ------------------------------------------------------------------------------------------------
# frequencies and shifts


def _freq(op_name, n, d, dtype, device, requires_grad, real):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{op_name}(): argument 'n' must be int, not {type(n).__name__}")
    n = operator.index(n)
    if n < 0:
        raise RuntimeError(f"{op_name}: n must be non-negative, but got {n}")
    dt = _dt.get_default_dtype() if dtype is None else _dt.lookup(dtype)
    f = np.fft.rfftfreq(n, d) if real else np.fft.fftfreq(n, d)
    r = wrap(f.astype(dt.np))
    if device is not None:
        r = r.to(device)
    return r.requires_grad_(True) if requires_grad else r


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point DFT with sample spacing ``d``."""
    r = _freq("fft_fftfreq", n, d, dtype, device, requires_grad, False)
    return r if out is None else _dispatch.write_out("fft_fftfreq", out, r)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The non-negative sample frequencies of an ``n``-point real DFT."""
    r = _freq("fft_rfftfreq", n, d, dtype, device, requires_grad, True)
    return r if out is None else _dispatch.write_out("fft_rfftfreq", out, r)


def _roll_kernel(xp, a, *, shifts, dims):
    return xp.roll(a, shifts, axis=dims)


def _roll_vjp(g, _a, *, shifts, dims):
    return _dispatch.apply(roll_op, (g,), {"shifts": tuple(-s for s in shifts), "dims": dims})


roll_op = Op("_fft_roll", _roll_kernel, vjp=_roll_vjp, linear=True)


def _shift(op_name, input, dim, inverse):
    check_tensor(op_name, input)
    if dim is None:
        dims = tuple(range(input.dim()))
    elif isinstance(dim, int):
        dims = (wrap_dim(dim, input.dim(), op_name),)
    else:
        dims = tuple(wrap_dim(d, input.dim(), op_name) for d in dim)
    if not dims:
        return input.clone()
    # fftshift rolls by n // 2; ifftshift undoes it (they differ for odd n)
    shifts = tuple(-(input.shape[d] // 2) if inverse else input.shape[d] // 2 for d in dims)
    return _dispatch.apply(roll_op, (input,), {"shifts": shifts, "dims": dims})


def fftshift(input, dim=None):
    """Move the zero-frequency term to the centre (``dim``: all dims by default)."""
    return _shift("fft_fftshift", input, dim, False)


def ifftshift(input, dim=None):
    """The inverse of :func:`fftshift`."""
    return _shift("fft_ifftshift", input, dim, True)


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
