"""The numba kernels behind ``ember._kernels`` (imported only when numba is installed and
the ``numba`` backend is chosen; see NOTE [ Fused kernels ] in ``__init__.py``).

Every kernel takes C-contiguous float32 arrays and writes into preallocated outputs. They
are compiled with ``cache=True`` (the machine code is kept on disk next to this file, or in
numba's cache directory when that is read-only), so only the first call on a machine pays
the compilation. They release the GIL (``nogil=True``), so Python threads running steps
side by side (Hogwild-style training, data loading) are not serialised by them.

NOTE [ Vectorisable exp ]
numba calls the C library's scalar ``expf`` for ``np.exp``, 5 ns an element, ten times
NumPy's SIMD exp, so a loop fusing exp with anything else lost to NumPy's separate passes.
``_expf`` below is the classic Cody-Waite reduction ``x = n ln2 + r`` with a degree-6
polynomial for ``exp(r)`` on ``|r| <= ln2 / 2``, and ``2**n`` built from exponent bits;
written with selects only, LLVM vectorises it for the machine's SIMD width. ``2**n`` is
applied in two steps, ``2**k1`` added to the polynomial's exponent bits (exact) and a
multiplication by ``2**k2`` (``n = k1 + k2``, the one rounding), so that n = 128 (just
below the overflow threshold) and n down to -150 (denormal results) come out right with no
special cases: inputs are clamped to [-104, 89], where exp underflows to 0 and overflows to
inf, and NaN comes back as NaN. Over every 61st float32 bit pattern it is within 1 ulp of
the correctly rounded exp (0.4% of values 1 ulp off), as PyTorch's SLEEF kernels are;
denormal results included (tests/perf/test_exp_kernels.py).

``_expf`` is compiled with contraction only (``_EXP_FM``) and is not inlined by numba:
LLVM inlines it into each loop and keeps its instructions' own flags. Under the
loops' ``reassoc`` flag, LLVM folds the two-constant reduction ``(x - n c1) - n c2`` into
``x - n (c1 + c2)``, which rounds ln 2 to float32 and costs 5 ulps near the overflow
threshold.

The fast-math flags allow reassociation (vectorised sums) and contraction (FMA), but not
``nnan``/``ninf`` (NaN and inf must propagate as in the NumPy path) nor ``arcp``/``afn``,
with which LLVM turns ``1 / sqrt(v)`` into an approximate reciprocal square root (2 ulps
off in layer norm's rstd, where PyTorch's is exact).
``error_model="numpy"`` lets a division by zero give inf/NaN instead of raising; the check
it removes also kept LLVM from vectorising any loop with a division. Row maxima come from
``_row_max``, a vector maximum over integer keys of the floats (NOTE [ Row maxima on integer
keys ]; a float compare-and-select loop does not vectorise without ``nnan``), or, where a
caller passes them in as ``mx``, from NumPy's ``maximum.reduce``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir

_FM = {"reassoc", "contract", "nsz"}
_EXP_FM = {"contract"}

_f32 = np.float32
_i32 = np.int32
_LO = _f32(-104.0)
_HI = _f32(89.0)
_LOG2E = _f32(1.44269504)
_LN2_HI = _f32(0.693359375)
_LN2_LO = _f32(-2.12194440e-4)
_P0 = _f32(1.9875691500e-4)
_P1 = _f32(1.3981999507e-3)
_P2 = _f32(8.3334519073e-3)
_P3 = _f32(4.1665795894e-2)
_P4 = _f32(1.6666665459e-1)
_P5 = _f32(5.0000001201e-1)
_ZERO = _f32(0.0)
_ONE = _f32(1.0)
_HALF = _f32(0.5)
_LN_BLOCK = 64


@intrinsic
def _fused(typingctx, a, b, c):
    """``a * b + c`` rounded once: LLVM's ``llvm.fma`` on the operands' float type (one
    instruction with FMA hardware, the C library's exact ``fma`` without); NOTE [ Fused
    multiply-add as PyTorch's kernels ] in ``ember/_ops/_fma.py``."""
    sig = a(a, a, a)

    def codegen(context, builder, signature, args):
        ty = args[0].type
        bits = 32 if isinstance(ty, ir.FloatType) else 64
        fnty = ir.FunctionType(ty, [ty, ty, ty])
        fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.fma.f{bits}")
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def _bits_to_f32(typingctx, i):
    """The float32 whose bit pattern is the int32 ``i`` (an LLVM bitcast)."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return sig, codegen


@intrinsic
def _f32_to_bits(typingctx, x):
    """The int32 bit pattern of the float32 ``x`` (an LLVM bitcast)."""
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int32))

    return sig, codegen


@njit(fastmath=_EXP_FM, error_model="numpy", inline="always", cache=True)
def _exp_reduced(xc):
    """``(p, n)`` with exp(xc) = p 2**n, p in [0.7, 1.42], for a float32 ``xc`` clamped to
    [_LO, _HI] (NOTE [ Vectorisable exp ]): the reduction and the polynomial that every exp
    here shares. Inlined by numba into its callers, under their flags (contraction only)."""
    n = np.floor(xc * _LOG2E + _HALF)
    r = xc - n * _LN2_HI
    r = r - n * _LN2_LO
    p = _P0 * r + _P1
    p = p * r + _P2
    p = p * r + _P3
    p = p * r + _P4
    p = p * r + _P5
    return p * r * r + r + _ONE, n


@njit(fastmath=_EXP_FM, error_model="numpy", inline="always", cache=True)
def _exp_clamped(xc):
    """exp of a float32 already clamped to [_LO, _HI] (NOTE [ Vectorisable exp ]): the
    reduction, the polynomial and the scaling that ``_expf`` and ``_expf_shifted`` share.
    Inlined into them by numba, so it is compiled under their flags (contraction only)."""
    p, n = _exp_reduced(xc)
    k = _i32(n)
    k1 = k >> _i32(1)                    # 2**n = 2**k1 * 2**k2, both normal numbers
    k2 = k - k1
    p = _bits_to_f32(_f32_to_bits(p) + (k1 << _i32(23)))     # exact: stays normal
    return p * _bits_to_f32((k2 + _i32(127)) << _i32(23))    # the one rounding


@njit(fastmath=_EXP_FM, error_model="numpy", cache=True)
def _expf(x):
    """exp of a float32 (NOTE [ Vectorisable exp ])."""
    xc = x if x > _LO else _LO           # (NaN becomes _LO here; answered at the end)
    xc = xc if xc < _HI else _HI
    res = _exp_clamped(xc)
    return x if x != x else res


@njit(fastmath=_EXP_FM, error_model="numpy", nogil=True, cache=True)
def exp_into(x, out):
    """``out = exp(x)`` over flat arrays."""
    for j in range(x.size):
        out[j] = _expf(x[j])


@njit(fastmath=_EXP_FM, error_model="numpy", nogil=True, cache=True)
def sigmoid_into(x, out):
    """``out = 1 / (1 + exp(-x))`` over flat arrays (exp as SiLU takes it: NOTE [ SiLU's
    exp ]; a NaN ``-x``, which ``_expf_quiet`` leaves to its caller, goes into the sum as
    ``_expf`` would return it, so NaN payloads come out as before)."""
    for j in range(x.size):
        nx = -x[j]
        e = _expf_quiet(nx)
        out[j] = _ONE / (_ONE + (e if nx == nx else nx))


@njit(fastmath=_EXP_FM, error_model="numpy", cache=True)
def _expf_shifted(t):
    """exp of ``t = x - max`` for a row with a finite max: t is in [-inf, 0] and never NaN,
    so ``_expf``'s upper clamp and NaN test drop out (NOTE [ Shifted exp ]): the same bits,
    five vector instructions fewer in a loop of about thirty."""
    return _exp_clamped(t if t > _LO else _LO)


#: the least argument ``_expf_quiet`` takes as it is: 2**(n - 1) stays normal above it
_LO_QUIET = _f32(-86.0)
_TWO = _f32(2.0)


@njit(fastmath=_EXP_FM, error_model="numpy", cache=True)
def _expf_quiet(x):
    """exp of a float32 for SiLU's ``1 + exp(-x)`` (NOTE [ SiLU's exp ]): NaN for a NaN
    ``x`` is left to the caller's own arithmetic, and below ``_LO_QUIET`` it returns
    exp(_LO_QUIET), which ``1 +`` rounds away as it does the true value; the same bits as
    ``_expf`` for every other input."""
    xc = x if x > _LO_QUIET else _LO_QUIET
    p, n = _exp_reduced(xc if xc < _HI else _HI)
    # 2**n as 2**(n - 1) * 2: one scaling step, exact while normal, inf past the top
    return _bits_to_f32(_f32_to_bits(p) + ((_i32(n) - _i32(1)) << _i32(23))) * _TWO


# NOTE [ SiLU's exp ]
# ``_expf`` scales the polynomial by 2**n in two steps (2**k1 * 2**k2) so that results down
# in the denormals round once. SiLU and its backward use exp(-x) only in ``1 + exp(-x)``,
# where anything below 2**-25 rounds away: so ``_expf_quiet`` clamps its argument at -86
# (n - 1 >= -126: 2**(n - 1) is a normal number made by one integer add to the exponent bits)
# and doubles once, which overflows to inf exactly where the true exp does. Five vector
# instructions fewer in a loop of about thirty; every float32 input gives the same bits as
# before (checked over all 2**32 inputs, ``silu_into`` and ``silu_backward_into``), and the
# 1M-element SiLU took 226 against 235 us on one thread (2-CPU EPYC, ``chrt -f 10``).
# ``sigmoid_into`` takes it too, with a select for NaN inputs (``1 + exp(-x)`` is its only
# use of exp): the same bits over all 2**32 inputs, NaN payloads included, and 1M elements
# 266 -> 240 us (one thread, process CPU time, load 12; PyTorch 224).


# NOTE [ Shifted exp ]
# Softmax, log-softmax and cross entropy take exp of ``x - max(row)``. When the row's max is
# finite (NumPy's max propagates NaN, so no element is NaN either), every shifted value is
# at most 0 or -inf: the row runs ``_expf_shifted``, which skips the clamp at the top and
# the NaN blend; a row whose max is NaN or +-inf runs the general ``_expf``, so non-finite
# rows come out exactly as before.


@njit(fastmath=_FM, error_model="numpy", inline="always", cache=True)
def _exp_shift_into(xi, m, oi):
    """oi = exp(xi - m); returns the sum of oi."""
    s = _ZERO
    if m - m == _ZERO:  # a finite max (NOTE [ Shifted exp ])
        for j in range(xi.size):
            e = _expf_shifted(xi[j] - m)
            oi[j] = e
            s += e
        return s
    for j in range(xi.size):
        e = _expf(xi[j] - m)
        oi[j] = e
        s += e
    return s


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def softmax_rows(x, mx, out):
    """Softmax of each row of the 2-d ``x`` (row maxima ``mx``, or an empty ``mx``: the
    kernel's own, NOTE [ Row maxima in the kernel ]) into ``out``."""
    own = mx.size == 0
    for i in range(x.shape[0]):
        xi = x[i]
        oi = out[i]
        r = _ONE / _exp_shift_into(xi, _row_max(xi) if own else mx[i], oi)
        for j in range(oi.size):
            oi[j] *= r


# NOTE [ Log-softmax subtracts twice ]
# Log-softmax is ``(x - max) - log(sum)``, in that order, as PyTorch and the NumPy path
# compute it: folding the two into ``x - (max + log(sum))`` loses ``log(sum)`` whenever the
# max is large (a row [1e30, 1e30, 0] gave [0, 0, -1e30] instead of [-0.69, -0.69, -1e30],
# and backward's ``exp(y)`` then summed to 2; cross entropy's loss of that row was 0, not
# log 2). These helpers are compiled without ``reassoc``, which would let LLVM fold the two
# subtractions (and hoist ``max + log(sum)`` out of the loop).


@njit(fastmath=_EXP_FM, error_model="numpy", cache=True)
def _nll_of(x, m, ls, w):
    """``-((x - m) - ls) * w``, written ``(ls - (x - m)) * w`` (the same bits): a negation
    left in the caller, which has ``reassoc``, let LLVM fold it with these subtractions
    into ``((ls + m) - x) * w`` (NOTE [ Log-softmax subtracts twice ])."""
    return (ls - (x - m)) * w


@njit(fastmath=_EXP_FM, error_model="numpy", cache=True)
def _sub_twice_into(xi, m, ls, oi):
    """oi = (xi - m) - ls, rounded twice (NOTE [ Log-softmax subtracts twice ])."""
    for j in range(xi.size):
        oi[j] = (xi[j] - m) - ls


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def log_softmax_rows(x, mx, out):
    """Log-softmax of each row of the 2-d ``x`` (row maxima ``mx``, or an empty ``mx``: the
    kernel's own, NOTE [ Row maxima in the kernel ]) into ``out``."""
    own = mx.size == 0
    for i in range(x.shape[0]):
        xi = x[i]
        oi = out[i]
        m = _row_max(xi) if own else mx[i]
        s = _ZERO
        if m - m == _ZERO:  # a finite max (NOTE [ Shifted exp ])
            for j in range(xi.size):
                s += _expf_shifted(xi[j] - m)
        else:
            for j in range(xi.size):
                s += _expf(xi[j] - m)
        _sub_twice_into(xi, m, np.log(s), oi)


# NOTE [ Row maxima on integer keys ]
# A float compare-and-select maximum ``m = v if v > m else m`` does not vectorise (LLVM wants
# ``nnan`` to turn it into a vector max): eight such chains side by side (the first version
# of this note, "Row maxima in eight lanes") still ran scalar, ~0.35 ns an element, slower
# than NumPy's SIMD ``maximum.reduce`` on long rows. ``_row_max`` maps each float32 to an
# int32 key that orders as the floats do: the bits, with the 31 low bits flipped for
# negative numbers (so -0.0 sorts just below +0.0, and NaNs land above +inf's key, or
# below -inf's for a NaN with its sign bit set). Integer maxima and minima vectorise (16
# lanes of AVX-512, several accumulators); the key maximum turned back into bits is the
# row's maximum, exactly, infinities included. A key above +inf's or below -inf's means a
# NaN: such a row takes the select loop, which keeps a NaN as NumPy's maximum does (the
# kernels' exp gives 0, not NaN, for a NaN, so a row's NaN shows only through its maximum).
# Of +0.0 and -0.0 the keys pick +0.0 where NumPy may give either; ``x - m``, exp and the
# losses do not see the difference (a log-softmax output is a signed zero only where the
# row's sum is 1, so its maximum is one element, taken as it is). One thread, rows of 1000:
# 0.07 ns an element, NumPy's ``maximum.reduce`` 0.15, the eight float chains 0.35.


_LOW31 = _i32(0x7FFFFFFF)
_KEY_POS_INF = _i32(0x7F800000)                  # +inf's key: its bits
_KEY_NEG_INF = _i32(-0x00800000 ^ 0x7FFFFFFF)    # -inf's key: bits 0xff800000, low 31 flipped


@njit(fastmath=_FM, error_model="numpy", inline="always", cache=True)
def _flip_negative(b):
    """``b`` with its 31 low bits flipped when it is negative: float32 bits to an ordered
    int32 key and back (NOTE [ Row maxima on integer keys ]). Every step is cast back to
    int32, which numba would otherwise widen to int64 (half the lanes)."""
    return _i32(b ^ _i32(_i32(b >> _i32(31)) & _LOW31))


@njit(fastmath=_FM, error_model="numpy", inline="always", cache=True)
def _row_max(xi):
    """The maximum of the non-empty 1-d float32 ``xi``, NaN when one of its values is NaN
    (NOTE [ Row maxima on integer keys ])."""
    hi = lo = _flip_negative(_f32_to_bits(xi[0]))
    for j in range(1, xi.size):
        k = _flip_negative(_f32_to_bits(xi[j]))
        hi = k if k > hi else hi
        lo = k if k < lo else lo
    if hi <= _KEY_POS_INF and lo >= _KEY_NEG_INF:  # no NaN
        return _bits_to_f32(_flip_negative(hi))
    m = xi[0]  # the select loop, NaN kept as NumPy's maximum keeps it
    for j in range(1, xi.size):
        v = xi[j]
        m = v if v > m or v != v else m
    return m


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def cross_entropy_rows(x, mx, target, weight, probs, losses):
    """Softmax of each row of ``x`` (row maxima ``mx``, or an empty ``mx``: NOTE [ Row
    maxima in the kernel ]) into ``probs`` and ``losses[i] = -weight[i] *
    log_softmax(x[i])[target[i]]``; targets are valid class indices."""
    own = mx.size == 0
    for i in range(x.shape[0]):
        xi = x[i]
        pi = probs[i]
        m = _row_max(xi) if own else mx[i]
        s = _exp_shift_into(xi, m, pi)
        losses[i] = _nll_of(xi[target[i]], m, np.log(s), weight[i])
        r = _ONE / s
        for j in range(pi.size):
            pi[j] *= r


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def cross_entropy_class_rows(x, target, ignore_index, probs, losses, valid):
    """Cross entropy over class indices with no class weights, the target checks in the
    same pass (NOTE [ Cross entropy's checks in the kernel ], ``ember/_ops/nn_ops.py``):
    each row's softmax into ``probs``, ``losses[i] = -log_softmax(x[i])[target[i]]`` (0
    where ``target[i] == ignore_index``), ``valid[i]`` 1 or 0 by the same test. Returns -1,
    or the first row whose target is outside ``[0, C)`` (nothing is written from it on)."""
    c = x.shape[1]
    for i in range(x.shape[0]):
        t = target[i]
        keep = t != ignore_index
        if keep and (t < 0 or t >= c):
            return i
        xi = x[i]
        pi = probs[i]
        m = _row_max(xi)
        s = _exp_shift_into(xi, m, pi)
        if keep:
            losses[i] = _nll_of(xi[t], m, np.log(s), _ONE)
            valid[i] = _ONE
        else:
            losses[i] = _ZERO
            valid[i] = _ZERO
        r = _ONE / s
        for j in range(pi.size):
            pi[j] *= r
    return -1


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def cross_entropy_backward_rows(probs, target, scale, out):
    """``out[i] = scale[i] * (probs[i] - onehot(target[i]))``."""
    for i in range(probs.shape[0]):
        pi = probs[i]
        oi = out[i]
        sc = scale[i]
        for j in range(pi.size):
            oi[j] = pi[j] * sc
        oi[target[i]] -= sc


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def layer_norm_rows(x, w, b, has_w, has_b, eps, y, mean, rstd, big_mean, small_rstd):
    """Layer norm of each row of ``x``: ``y = (x - mean) * rstd * w + b`` with the biased
    variance, two passes over each row (the row stays in cache). Returns how many rows have
    ``|mean| >= big_mean`` or ``rstd <= small_rstd`` (a NaN row is not counted): the rows
    whose values may come near the top of float32 (NOTE [ Welford lanes of torch's norms ]
    in ``ember/_ops/nn_norm.py``)."""
    n = x.shape[1]
    nf = _f32(n)
    near = 0
    for i in range(x.shape[0]):
        xi = x[i]
        yi = y[i]
        s = _ZERO
        for j in range(n):
            s += xi[j]
        # divided, not multiplied by a rounded 1/n: on a row far from 0 ([1000.2, 1000.7,
        # 1001.1]) that reciprocal's error moved the mean by 1e-4 and the output by 1e-3
        mu = s / nf
        v = _ZERO
        for j in range(n):
            d = xi[j] - mu
            v += d * d
        r = _ONE / np.sqrt(v / nf + eps)
        mean[i] = mu
        rstd[i] = r
        if abs(mu) >= big_mean or r <= small_rstd:
            near += 1
        if has_w and has_b:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r * w[j] + b[j]
        elif has_w:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r * w[j]
        elif has_b:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r + b[j]
        else:
            for j in range(n):
                yi[j] = (xi[j] - mu) * r
    return near


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def layer_norm_backward_rows(g, x, w, has_w, mean, rstd, gx, gw, gb):
    """Layer norm's backward, one pass over the rows: ``gx`` (rows), and the sums over rows
    of ``g * xhat`` and ``g`` into the float64 ``gw`` and ``gb``, accumulated in float32
    over blocks of ``_LN_BLOCK`` rows (vectorised) and in float64 across blocks; empty
    ``gw`` and ``gb`` leave the sums out (no parameter wants a gradient)."""
    n = x.shape[1]
    inv_n = _ONE / _f32(n)
    sums = gw.size > 0
    gw32 = np.zeros(n, np.float32)
    gb32 = np.zeros(n, np.float32)
    xh = np.empty(n, np.float32)
    for i in range(x.shape[0]):
        gi = g[i]
        xi = x[i]
        oi = gx[i]
        mu = mean[i]
        r = rstd[i]
        s1 = _ZERO
        s2 = _ZERO
        if sums:
            for j in range(n):
                h = (xi[j] - mu) * r
                xh[j] = h
                gh = gi[j] * w[j] if has_w else gi[j]
                s1 += gh
                s2 += gh * h
                gw32[j] += gi[j] * h
                gb32[j] += gi[j]
        else:
            for j in range(n):
                h = (xi[j] - mu) * r
                xh[j] = h
                gh = gi[j] * w[j] if has_w else gi[j]
                s1 += gh
                s2 += gh * h
        s1 *= inv_n
        s2 *= inv_n
        for j in range(n):
            gh = gi[j] * w[j] if has_w else gi[j]
            oi[j] = (gh - s1 - xh[j] * s2) * r
        if sums and ((i + 1) % _LN_BLOCK == 0 or i + 1 == x.shape[0]):
            for j in range(n):
                gw[j] += gw32[j]
                gb[j] += gb32[j]
                gw32[j] = _ZERO
                gb32[j] = _ZERO


_PHI_P = _f32(0.21)
_R0 = _f32(-0.07203398644924164)
_R1 = _f32(0.28545339772976497)
_R2 = _f32(-0.33418966564920916)
_R3 = _f32(0.3540336703647422)
_R4 = _f32(-0.09724572856084622)
_R5 = _f32(0.12635515628960997)
_R6 = _f32(0.06879003786431213)
_R7 = _f32(0.08512940843242275)
_R8 = _f32(0.08370770289418125)
_INV_SQRT_2PI = _f32(0.3989422804014327)
_MINUS_HALF = _f32(-0.5)


@njit(fastmath=_FM, error_model="numpy", inline="always", cache=True)
def _phi_and_gauss(xs):
    """``(Phi(xs), exp(-xs**2 / 2))`` of a float32, Phi from the polynomial of NOTE
    [ Float32 normal CDF ] (ember/_ops/nn_ops.py): the part ``gelu_out_into`` and
    ``gelu_backward_into`` share. Inlined by numba, so it runs under each caller's flags."""
    t = _ONE / (abs(xs) * _PHI_P + _ONE)
    q = _R0 * t
    q = (q + _R1) * t
    q = (q + _R2) * t
    q = (q + _R3) * t
    q = (q + _R4) * t
    q = (q + _R5) * t
    q = (q + _R6) * t
    q = (q + _R7) * t
    q = (q + _R8) * t
    # exp of -x**2/2, which is at most 0 and NaN only for a NaN x, whose t, q and result
    # are NaN from the polynomial anyway: ``_expf_shifted`` skips the upper clamp and the
    # NaN blend for the same bits (NOTE [ Shifted exp ])
    e = _expf_shifted(xs * xs * _MINUS_HALF)
    q = q * e                                  # Phi(-|x|)
    pos = _ONE if xs > _ZERO else _ZERO
    return abs(pos - q), e                     # Phi(x)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def gelu_out_into(x, out):
    """``out = x Phi(x)`` over flat arrays, Phi from the polynomial of NOTE [ Float32 normal
    CDF ] (ember/_ops/nn_ops.py)."""
    for j in range(x.size):
        xs = x[j]
        out[j] = xs * _phi_and_gauss(xs)[0]


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def gelu_backward_into(g, x, out):
    """``out = g (Phi(x) + x phi(x))`` over flat arrays, Phi as ``gelu_out_into`` computes it
    (NOTE [ GELU saves only its input ] in ``ember/_ops/nn_ops.py``)."""
    for j in range(x.size):
        xs = x[j]
        d, e = _phi_and_gauss(xs)
        out[j] = g[j] * (d + e * xs * _INV_SQRT_2PI)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def silu_into(x, out):
    """``out = x / (1 + exp(-x))`` over flat arrays."""
    for j in range(x.size):
        xs = x[j]
        out[j] = xs / (_ONE + _expf_quiet(-xs))     # (NaN / 1 for a NaN x)


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def silu_backward_into(g, x, out):
    """``out = g * s (1 + x (1 - s))`` with ``s = sigmoid(x)``, over flat arrays."""
    for j in range(x.size):
        xs = x[j]
        s = _ONE / (_ONE + _expf_quiet(-xs))      # (1 for a NaN x: xs makes the NaN)
        out[j] = g[j] * (s * (_ONE + xs * (_ONE - s)))


@njit(fastmath=_FM, error_model="numpy", nogil=True, cache=True)
def threshold_backward_into(g, y, threshold, out):
    """``out = 0 where y <= threshold else g`` over flat arrays, in one pass (a NaN in ``y``
    is not ``<= threshold``: its gradient passes)."""
    for j in range(y.size):
        out[j] = _ZERO if y[j] <= threshold else g[j]


@njit(error_model="numpy", nogil=True, cache=True)
def relu_into(x, out):
    """``out = 0 where x < 0 else x`` over flat arrays (NaN and -0.0 kept, as ``maximum(0,
    x)`` and PyTorch's relu keep them: no fast-math flags, which would let LLVM treat -0.0
    as 0.0), one compare and blend per SIMD lane."""
    for j in range(x.size):
        v = x[j]
        out[j] = _ZERO if v < _ZERO else v


@njit(error_model="numpy", nogil=True, cache=True)
def adam_into(p, g, m, v, w1, low_w1, beta2, w2, shrink, weight_decay, step, bias2_sqrt,
              eps, decoupled, maximize):
    """One Adam/AdamW step over flat float32 arrays, in place on ``p``, ``m`` and ``v``, in
    the order of ``ember.optim.adam``'s ops; the scalars come rounded to float32 as those
    ops round them (``w1 = 1 - beta1``, ``shrink = 1 - lr * weight_decay``, ``step =
    -lr / bias1``); ``low_w1`` picks lerp's form for ``w1 < 0.5``. No fast-math: the
    multiply-adds PyTorch's kernels fuse (``add(alpha=)``, ``lerp``, ``addcmul``) are
    ``_fused`` here and nothing else is contracted or reassociated (NOTE [ Fused
    multiply-add as PyTorch's kernels ] in ``ember/_ops/_fma.py``)."""
    for j in range(p.size):
        gj = -g[j] if maximize else g[j]
        pj = p[j]
        if weight_decay != _ZERO:
            if decoupled:
                pj = pj * shrink
            else:
                gj = _fused(weight_decay, pj, gj)
        d = gj - m[j]
        mj = _fused(w1, d, m[j]) if low_w1 else _fused(-(_ONE - w1), d, gj)
        vj = _fused(w2 * gj, gj, v[j] * beta2)
        m[j] = mj
        v[j] = vj
        p[j] = pj + step * mj / (np.sqrt(vj) / bias2_sqrt + eps)


# -- where: a selection without a branch per element (NOTE [ Selecting without branches ]) ------


@njit(error_model="numpy", nogil=True, cache=True)
def select_into(mask, x, y, out):
    """``out = x where mask else y`` over flat arrays of one length (values copied, so
    exact for NaN payloads and -0.0); LLVM turns the loop into vector blends."""
    for j in range(out.size):
        out[j] = x[j] if mask[j] else y[j]


@njit(error_model="numpy", nogil=True, cache=True)
def select_x_scalar_into(mask, x, y, out):
    """``select_into`` with ``x`` one value (a scalar of the arrays' type)."""
    for j in range(out.size):
        out[j] = x if mask[j] else y[j]


@njit(error_model="numpy", nogil=True, cache=True)
def select_y_scalar_into(mask, x, y, out):
    """``select_into`` with ``y`` one value (a scalar of the arrays' type)."""
    for j in range(out.size):
        out[j] = x[j] if mask[j] else y


@njit(error_model="numpy", nogil=True, cache=True)
def reciprocal_times_into(x, c, out):  # pragma: no cover - compiled
    """``out = (1 / x) * c`` element by element (flat arrays of one float dtype, ``c`` a
    scalar of it): the reciprocal rounded, then the product rounded, as PyTorch's two ops
    (NOTE [ A number over a tensor ] in ``ember/_ops/arithmetic.py``); no fast-math flags,
    which would let LLVM fold the two steps into one division."""
    one = x.dtype.type(1)
    for i in range(x.size):
        out[i] = (one / x[i]) * c


# -- arithmetic with one operand broadcast (NOTE [ Broadcast arithmetic in one loop ] in
# ``ember/_ops/_elementwise.py``). ``op``: 0 a + b, 1 a - b, 2 a * b, 3 a / b, 4 b - a,
# 5 b / a. No fast-math: one IEEE operation per element, as NumPy's loops make it.


@njit(error_model="numpy", nogil=True, cache=True)
def arith_rows_into(a, b, out, op):  # pragma: no cover - compiled
    """``out[i, j] = a[i, j] <op> b[j]`` over C-contiguous 2-D ``a`` and ``out``."""
    p, m = a.shape
    for i in range(p):
        if op == 0:
            for j in range(m):
                out[i, j] = a[i, j] + b[j]
        elif op == 1:
            for j in range(m):
                out[i, j] = a[i, j] - b[j]
        elif op == 2:
            for j in range(m):
                out[i, j] = a[i, j] * b[j]
        elif op == 3:
            for j in range(m):
                out[i, j] = a[i, j] / b[j]
        elif op == 4:
            for j in range(m):
                out[i, j] = b[j] - a[i, j]
        else:
            for j in range(m):
                out[i, j] = b[j] / a[i, j]


@njit(error_model="numpy", nogil=True, cache=True)
def arith_planes_into(a, b, out, op):  # pragma: no cover - compiled
    """``out[i, j, k] = a[i, j, k] <op> b[j]`` over C-contiguous 3-D ``a`` and ``out``."""
    p, m, q = a.shape
    for i in range(p):
        for j in range(m):
            c = b[j]
            if op == 0:
                for k in range(q):
                    out[i, j, k] = a[i, j, k] + c
            elif op == 1:
                for k in range(q):
                    out[i, j, k] = a[i, j, k] - c
            elif op == 2:
                for k in range(q):
                    out[i, j, k] = a[i, j, k] * c
            elif op == 3:
                for k in range(q):
                    out[i, j, k] = a[i, j, k] / c
            elif op == 4:
                for k in range(q):
                    out[i, j, k] = c - a[i, j, k]
            else:
                for k in range(q):
                    out[i, j, k] = c / a[i, j, k]


# -- tanh's and sigmoid's backward from their output (NOTE [ Fused tanh and sigmoid backward ]
# in ``ember/_ops/pointwise.py``): the formula's roundings in its order, no fast-math (no
# contraction into a multiply-add), so the bits of NumPy's three passes, in one.


@njit(error_model="numpy", nogil=True, cache=True)
def sigmoid_backward_into(g, y, out):  # pragma: no cover - compiled
    """``out = (g * (1 - y)) * y`` over flat arrays of one float dtype."""
    one = y.dtype.type(1)
    for j in range(y.size):
        out[j] = (g[j] * (one - y[j])) * y[j]


@njit(error_model="numpy", nogil=True, cache=True)
def tanh_backward_into(g, y, out):  # pragma: no cover - compiled
    """``out = (1 - y * y) * g`` over flat arrays of one float dtype."""
    one = y.dtype.type(1)
    for j in range(y.size):
        out[j] = (one - y[j] * y[j]) * g[j]
