"""Arithmetic, comparison, bitwise and logical operators, and the Python operator dunders."""

from __future__ import annotations

import sys

import numpy as np

from .._core import dtype as _dt
from .. import _dispatch
from .. import _kernels
from .._core.tensor import Tensor, wrap
from .._dispatch import slow as _slow
from ._elementwise import (
    ElementwiseOp, _broadcast_error, _scalar_types, _with_number, binary, binary_fast,
    elementwise, elementwise_inplace, rbinary, rbinary_fast, unary,
)
from . import _fma
from ._memory_format import follow as _follow
from .pointwise import reciprocal_op
from ._registry import public
from .._overrides import NOT_HANDLED as _NOT_HANDLED
from .._overrides import _active as _tf_active
from .._overrides import handle as _tf_handle
from .._overrides import handle_failed as _tf_handle_failed
from .._overrides import operator as _tf_operator


_ndarray = np.ndarray
_new = object.__new__


def _conj(x):
    return x.conj() if x._data.dtype.kind == "c" else x


# ------------------------------------------------------------------------------------------------
# add / sub / mul / div


def _add_vjp(g, _a, _b, *, alpha=1):
    # ``alpha`` arrives only for complex results (NOTE [ Complex add and sub ])
    return g, (g if alpha == 1 else g * alpha.conjugate())


def _sub_vjp(g, _a, _b, *, needs_input_grad, alpha=1):
    # (no negation for an operand that takes no gradient: PyTorch's formula runs none)
    if not needs_input_grad[1]:
        return g, None
    return g, (-g if alpha == 1 else -(g * alpha.conjugate()))


# NOTE [ Complex add and sub ]
# PyTorch's add and sub kernels compute ``a + alpha * b`` and ``a - alpha * b`` for every call,
# ``a + b`` included (alpha defaults to 1), and for complex operands ``alpha * b`` is a complex
# product: its real part is ``b.real * 1 - b.imag * 0``, NaN wherever ``b.imag`` is infinite,
# and likewise for the imaginary part. So ``[1+0j] + [1+infj]`` is ``[nan+infj]``, not NumPy's
# ``[2+infj]``. The second operand is the scaled one: ``2 + t`` is ``t.add(2)`` (the number is
# scaled), ``2 - t`` is ``t.rsub(2)`` (the tensor is). ``add_op``'s complex kernel does the
# product (NumPy's complex multiply is the same naive formula), and with an ``alpha`` other
# than 1 on a complex result the kernel takes ``alpha`` as a parameter rather than scaling
# twice. Real dtypes keep the plain ufunc: ``x * 1`` is ``x`` there, and ``a + b`` stays on
# the direct path (NOTE [ Hot path ]).


def _scaled_complex(xp, x, alpha, like):
    """``alpha * x`` as PyTorch's complex kernels compute it: a Python number is first cast
    to the array operand ``like``'s complex dtype, as PyTorch casts a scalar operand."""
    if not hasattr(x, "dtype"):
        x = xp.asarray(x, dtype=like.dtype)
    return x * alpha


_FUSED = (np.dtype(np.float32), np.dtype(np.float64))


def _fused_dtype(a, b):
    """The float32/float64 dtype ``a + alpha * b`` is fused in, or None."""
    d = getattr(a, "dtype", None)
    if d is None:
        d = getattr(b, "dtype", None)
    return d if d in _FUSED else None


_HALF = (np.dtype(np.float16), _dt.bfloat16.np)


def _half_dtype(a, b):
    """The float16/bfloat16 dtype of the array operand of ``a + alpha * b``, or None."""
    d = getattr(a, "dtype", None)
    if d is None:
        d = getattr(b, "dtype", None)
    return d if d in _HALF else None


def _half_scaled_sum(xp, alpha, b, a, half):
    """``a + alpha * b`` for float16/bfloat16 operands as PyTorch's add kernel computes it
    (NOTE [ Half-precision alpha ])."""
    f32 = np.float32
    a = xp.asarray(a, dtype=half)
    b = xp.asarray(b, dtype=half)
    al = half.type(alpha)
    r = (a.astype(f32) + b.astype(f32) * f32(al)).astype(half)
    if b.size == 1 or not r.ndim:
        return r
    # the scalar loop finishing each row rounds ``alpha * b`` to half on its own
    row = r.shape[-1] if a.shape != b.shape or not r.flags.c_contiguous else r.size
    tail = row % _vector_step(r.dtype)
    if tail:
        rows = r.reshape(-1, row)  # a view: ``r`` is a fresh array
        ends = (slice(None), slice(row - tail, None))
        product = (b.astype(f32) * f32(al)).astype(half)
        a_rows = xp.broadcast_to(a, r.shape).reshape(rows.shape)
        p_rows = xp.broadcast_to(product, r.shape).reshape(rows.shape)
        rows[ends] = (a_rows[ends].astype(f32) + p_rows[ends].astype(f32)).astype(half)
    return r


# NOTE [ Half-precision alpha ]
# For float16/bfloat16 operands PyTorch's add and sub kernels cast ``alpha`` and a number
# operand to the tensor's dtype (unlike mul's number: NOTE [ A number in half-precision
# opmath ] in _elementwise.py), then compute ``a + alpha * b`` in float32 and round once:
# scaling ``b`` in half first would round twice (``x.add_(g, alpha=-lr)`` on a float16
# parameter differs in a few values in a hundred). Where ``b`` has more than one value, the
# scalar loop that finishes each row after the vector loop's steps (two vectors: 32 values
# with AVX2) does round ``alpha * b`` to half first, and so does ember there. ``_scaled``
# hands such calls ``alpha`` as a parameter, as it does for complex results.


def _add_complex(xp, a, b, alpha=1):
    dt = _fused_dtype(a, b)
    if dt is not None:  # ``a + alpha * b`` in float32/float64
        return _scaled_sum(alpha, b, a, dt)
    half = _half_dtype(a, b)
    if half is not None:  # NOTE [ Half-precision alpha ]
        return _half_scaled_sum(xp, alpha, b, a, half)
    return xp.add(a, _scaled_complex(xp, b, alpha, a))


def _sub_complex(xp, a, b, alpha=1):
    dt = _fused_dtype(a, b)
    if dt is not None:
        return _scaled_sum(-alpha, b, a, dt)
    half = _half_dtype(a, b)
    if half is not None:
        return _half_scaled_sum(xp, -alpha, b, a, half)
    # ``a + (-alpha) * b``, as torch's sub (its sign of a zero imaginary part: ``-0j - 1``)
    return xp.add(a, _scaled_complex(xp, b, -alpha, a))


# NOTE [ A broadcast number in add's scalar loop ]
# PyTorch's add kernel fuses ``a + alpha * b`` in its vector loop and in the scalar loop
# that finishes a row, except where ``b`` is one value broadcast over the row (a number, a
# zero-dim or a one-element tensor, or a size-1 last dim): the scalar loop then takes
# ``alpha * b`` out of the loop, rounded on its own, and adds it. A row shorter than the
# vector loop's step (two vectors: 16 float32 or 8 float64 values with AVX2) is all scalar
# loop, so there the sum is ``a + round(alpha * b)`` (``inf + 2 * -max`` is NaN, where the
# fused value is inf); longer rows and same-shape operands are fused (NOTE [ Fused
# multiply-add as PyTorch's kernels ]). The tails of longer rows with a broadcast value are
# left fused: there PyTorch's bits vary from element to element in ways not pinned down.


def _scaled_sum(alpha, b, a, dt, out=None):
    """``a + alpha * b`` in the float32/float64 dtype ``dt`` as PyTorch's add kernel rounds
    it (NOTE [ A broadcast number in add's scalar loop ])."""
    if np.size(b) == 1:  # one value over the whole (coalesced) output
        row = np.size(a)
    elif np.ndim(b) and np.shape(b)[-1] == 1:  # one value per row
        row = np.shape(a)[-1] if np.ndim(a) else 1
    else:
        row = 0
    if 1 < row < _vector_step(dt):
        product = np.multiply(np.asarray(b, dt), dt.type(alpha))
        return np.add(a, product, out=out)
    return _fma.fma(alpha, b, a, dt, out=out)


def _vector_step(dt):
    """The values of one step of PyTorch's vector loop: two vectors of ``dt``."""
    from .ranges import _vector_bytes_and_fma

    return 2 * _vector_bytes_and_fma()[0] // dt.itemsize


def _mul_vjp(g, a, b, *, needs_input_grad):
    # ``a`` is saved only for ``b``'s gradient and the other way round (``mul_op.saved_for``)
    need_a, need_b = needs_input_grad
    return (g * _conj(b) if need_a else None), (g * _conj(a) if need_b else None)


def _div_vjp(g, a, b, *, needs_input_grad):
    # the formulas read the inputs, never the result (``div_op.saved_for``: ``a`` is kept
    # for ``b``'s gradient only), so writing into the quotient in place
    # (``y = x / 2; y += x``) leaves the backward pass valid, as in PyTorch
    need_a, need_b = needs_input_grad
    cb = _conj(b)
    ga = g / cb if need_a else None
    return ga, (-g * _conj(a / b / b) if need_b else None)


def _check_sub(args):
    bools = [isinstance(x, Tensor) and x._data.dtype == np.bool_ or type(x) is bool
             for x in args]
    if all(bools):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


add_op = ElementwiseOp("add", ufunc="add", vjp=_add_vjp, linear=True,
                       complex_kernel=_add_complex)
sub_op = ElementwiseOp("sub", ufunc="subtract", vjp=_sub_vjp, linear=True, allow=(1, 2, 3),
                       check=_check_sub, complex_kernel=_sub_complex)
def _check_mul(args):
    """PyTorch multiplies float8 tensors only by tensors with dimensions: a number or a
    zero-dim tensor as the second operand takes a kernel float8 lacks (NOTE [ Float8 dtypes ])."""
    if len(args) != 2:
        return
    a, b = args
    if not isinstance(a, Tensor):  # ``2 * x`` is ``x * 2``
        a, b = b, a
    d = getattr(a, "_data", None)
    if d is not None and d.dtype in _dt._FLOAT8_NP and getattr(b, "ndim", 0) == 0:
        raise NotImplementedError(f'"mul_cpu_reduced_float" not implemented for '
                                  f"'{_dt.from_np[d.dtype].scalar_name}'")


# (``opmath_number``: NOTE [ A number in half-precision opmath ] in _elementwise.py)
mul_op = ElementwiseOp("mul", ufunc="multiply", vjp=_mul_vjp, check=_check_mul,
                       opmath_number=True)
mul_op.saved_for = {0: (1,), 1: (0,)}
div_op = ElementwiseOp("div", ufunc="true_divide", promote="float", vjp=_div_vjp,
                       opmath_number=True)
div_op.saved_for = {0: (1,)}


def _scaled(name, other, alpha, input_):
    """(``other`` scaled by ``alpha``, the kernel's params): a complex result leaves the
    scaling to the kernel (NOTE [ Complex add and sub ])."""
    if alpha == 1 and type(alpha) is not bool:
        return other, None
    kinds = [x._data.dtype.kind if isinstance(x, Tensor) else type(x).__name__[0]
             for x in (input_, other)]
    if isinstance(alpha, float) and all(k in "iub" for k in kinds):
        raise RuntimeError(
            f"{name}: for integral input tensors, argument alpha must not be a floating point "
            "number.")
    is_bool_result = all(k == "b" for k in kinds)
    if isinstance(alpha, bool) and not is_bool_result:
        raise RuntimeError(f"{name}: boolean alpha only supported for Boolean results.")
    if "c" in kinds:
        return other, {"alpha": alpha}
    common = _dt.result_type(input_, other).np
    if _on_numpy(input_) and _on_numpy(other) and common in _FUSED:
        return other, {"alpha": alpha}  # NOTE [ Fused multiply-add as PyTorch's kernels ]
    if common in _HALF:
        return other, {"alpha": alpha}  # NOTE [ Half-precision alpha ]
    if not isinstance(other, Tensor):
        return other * alpha, None
    if is_bool_result:  # a truthy alpha keeps ``other``, as PyTorch's bool kernel does
        return (other if alpha else other & False), None
    # scale in the result dtype: ``bool_or_int_tensor * 2`` alone would promote to int64
    common = _dt.result_type(input_, other)
    return (other if other.dtype == common else other.to(common)) * alpha, None


def _on_numpy(x):
    """A number, or a tensor on NumPy arrays (CPU)."""
    return type(x._data) is np.ndarray if isinstance(x, Tensor) else \
        isinstance(x, (int, float, np.number))


def _observed(alpha):
    """The profiler's session when it alone watches this thread's ops and ``alpha`` makes
    ember run two ops (a ``mul`` and the add) where PyTorch runs one kernel: the profiler
    then records the call as PyTorch's one op (``_Session.as_one_op``); else None."""
    if alpha == 1 or not _dispatch.intercept or not _dispatch.state.modes:
        return None
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder.observing_session() if recorder is not None else None


def _fused_direct(a, b, alpha, sub, inplace):
    """``a + alpha * b`` (``-alpha`` for sub) straight on the arrays of two plain float32 or
    float64 CPU tensors of one dtype, with a number ``alpha`` other than 1, no mode watching
    and no graph to record -- the optimizers' ``p.add_(g, alpha=-lr)`` -- one fused
    multiply-add (NOTE [ Fused multiply-add as PyTorch's kernels ]); None where the general
    path must run."""
    if _dispatch.intercept or type(a) is not Tensor or type(b) is not Tensor or \
            type(alpha) is not float and type(alpha) is not int or alpha == 1:
        return None
    ad, bd = a._data, b._data
    dt = ad.dtype
    if type(ad) is not _ndarray or type(bd) is not _ndarray or bd.dtype is not dt or \
            dt not in _FUSED or not ad.ndim or \
            _dispatch.state.grad_enabled and (a._rg or b._rg):
        return None
    if inplace:
        if bd.shape != ad.shape and np.broadcast_shapes(ad.shape, bd.shape) != ad.shape:
            return None
        _dispatch.check_overlap("sub_" if sub else "add_", a)
        _scaled_sum(-alpha if sub else alpha, bd, ad, dt, out=ad)
        a._bump()
        return a
    if sub:
        _check_sub((a, b))
    try:
        return wrap(_scaled_sum(-alpha if sub else alpha, bd, ad, dt))
    except ValueError:  # shapes that do not broadcast: the general path's error
        return None


@public(dunders=())
def add(input, other, *old, alpha=1, out=None):
    """``input + alpha * other``, with broadcasting and PyTorch's type promotion."""
    if old:  # PyTorch's deprecated order (alpha, other)
        alpha, other = other, old[0]
    session = _observed(alpha)
    if session is not None:
        return session.as_one_op("aten::add", lambda: (input, other, alpha), add,
                                 (input, other), {"alpha": alpha, "out": out})
    if out is None:
        r = _fused_direct(input, other, alpha, False, False)
        if r is not None:
            return r
    other, params = _scaled("add", other, alpha, input)
    if out is None and params is None:
        return binary(add_op, input, other)
    return elementwise(add_op, (input, other), params, out=out)


def _add_(self, other, *old, alpha=1):
    if old:  # PyTorch's deprecated order (alpha, other)
        alpha, other = other, old[0]
    session = _observed(alpha)
    if session is not None:
        return session.as_one_op("aten::add_", lambda: (self, other, alpha), _add_,
                                 (self, other), {"alpha": alpha})
    if _fused_direct(self, other, alpha, False, True) is not None:
        return self
    other, params = _scaled("add_", other, alpha, self)
    return elementwise_inplace(add_op, self, (other,), params)


Tensor.add_ = _add_


@public
def sub(input, other, *old, alpha=1, out=None):
    """``input - alpha * other``."""
    if old:  # PyTorch's deprecated order (alpha, other)
        alpha, other = other, old[0]
    session = _observed(alpha)
    if session is not None:
        return session.as_one_op("aten::sub", lambda: (input, other, alpha), sub,
                                 (input, other), {"alpha": alpha, "out": out})
    if out is None:
        r = _fused_direct(input, other, alpha, True, False)
        if r is not None:
            return r
    _check_sub((input, other))
    other, params = _scaled("sub", other, alpha, input)
    if out is None and params is None:
        return binary(sub_op, input, other)
    return elementwise(sub_op, (input, other), params, out=out)


def _sub_(self, other, *old, alpha=1):
    if old:  # PyTorch's deprecated order (alpha, other)
        alpha, other = other, old[0]
    session = _observed(alpha)
    if session is not None:
        return session.as_one_op("aten::sub_", lambda: (self, other, alpha), _sub_,
                                 (self, other), {"alpha": alpha})
    if _fused_direct(self, other, alpha, True, True) is not None:
        return self
    _check_sub((self, other))
    other, params = _scaled("sub_", other, alpha, self)
    return elementwise_inplace(sub_op, self, (other,), params)


Tensor.sub_ = _sub_
public(sub, name="subtract", method=True)
Tensor.subtract_ = _sub_


@public(alias=("multiply",))
def mul(input, other, *, out=None):
    """Element-wise product."""
    if out is None:
        return binary(mul_op, input, other)
    return elementwise(mul_op, (input, other), out=out)


def _mul_(self, other):
    return elementwise_inplace(mul_op, self, (other,))


Tensor.mul_ = Tensor.multiply_ = _mul_


def _is_int(x):
    """An integer array, or a Python int as the left operand of ``7 // t`` arrives."""
    # (a Python bool divisor of an integer tensor is the integer 0 or 1 to torch)
    kind = x.dtype.kind if hasattr(x, "dtype") else "i" if type(x) in (int, bool) else "f"
    return kind in "iu"


def _check_int_zero(xp, a, b):
    # integer division by zero has no value to give; PyTorch raises
    if _is_int(a) and _is_int(b) and (xp.asarray(b) == 0).any() and \
            0 not in np.broadcast_shapes(np.shape(a), np.shape(b)):
        raise RuntimeError("ZeroDivisionError")


def _div_trunc_kernel(xp, a, b):
    if _is_int(a):
        _check_int_zero(xp, a, b)
        q = xp.floor_divide(a, b)
        fix = (xp.remainder(a, b) != 0) & ((xp.asarray(a) < 0) != (xp.asarray(b) < 0))
        return q + fix.astype(q.dtype)
    return xp.trunc(xp.true_divide(a, b))


def _floordiv_kernel(xp, a, b):
    _check_int_zero(xp, a, b)
    return xp.floor_divide(a, b)


def _remainder_kernel(xp, a, b):
    _check_int_zero(xp, a, b)
    r = xp.remainder(a, b)
    if r.dtype.kind == "f" or r.dtype in _HALF:
        # PyTorch's remainder is ``fmod`` moved into the divisor's sign where nonzero, so a
        # zero keeps the dividend's sign (``-0.6 % 0.3`` is -0.0); NumPy's takes the divisor's
        r = xp.where(r == 0, xp.copysign(r, a), r)
    return r


def _fmod_kernel(xp, a, b):
    _check_int_zero(xp, a, b)
    return xp.fmod(a, b)


def _zero_vjp(g, _a, _b):
    return g * 0, g * 0


def _remainder_vjp(g, a, b):
    if a is None:  # (saved only for the divisor's gradient: ``saved_for`` below)
        return g, None
    # torch's floor division (fmod-based, so 1 // 0.1 is 9 where floor(1 / 0.1) is 10, and
    # inf // 4 is NaN where floor(inf / 4) is inf)
    return g, -g * a.div(b, rounding_mode="floor")


def _fmod_vjp(g, a, b):
    if a is None:  # (saved only for the divisor's gradient: ``saved_for`` below)
        return g, None
    return g, -g * (a / b).trunc()


div_trunc_op = ElementwiseOp("div_trunc", _div_trunc_kernel, allow=(1, 2), vjp=_zero_vjp,
                             opmath_number=True)
floor_divide_op = ElementwiseOp("floor_divide", _floordiv_kernel, allow=(1, 2),
                                vjp=_zero_vjp, opmath_number=True)
remainder_op = ElementwiseOp("remainder", _remainder_kernel, allow=(1, 2), vjp=_remainder_vjp)
fmod_op = ElementwiseOp("fmod", _fmod_kernel, allow=(1, 2), vjp=_fmod_vjp)
# both gradients pass ``g`` through for the dividend: the operands are read only for the
# divisor's gradient
remainder_op.saved_for = fmod_op.saved_for = {0: (1,), 1: (1,)}


def _div_op_for(rounding_mode, name):
    if rounding_mode is None:
        return div_op
    if rounding_mode == "trunc":
        return div_trunc_op
    if rounding_mode == "floor":
        return floor_divide_op
    raise ValueError(
        f"{name} expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'")


@public(alias=("divide",))
def div(input, other, *, rounding_mode=None, out=None):
    """``input / other``; ``rounding_mode`` 'trunc' or 'floor' rounds the quotient."""
    op = _div_op_for(rounding_mode, "div")
    if out is None:
        return binary(op, input, other)
    return elementwise(op, (input, other), out=out)


def _div_(self, other, *, rounding_mode=None):
    return elementwise_inplace(_div_op_for(rounding_mode, "div_"), self, (other,))


Tensor.div_ = Tensor.divide_ = _div_


@public
def true_divide(input, other, *, out=None):
    """``input / other`` with integers promoted to the default float dtype."""
    return elementwise(div_op, (input, other), out=out)


Tensor.true_divide_ = lambda self, other: elementwise_inplace(div_op, self, (other,))


def _tensor_operand(name, x, arg, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _plain_binary(op, doc, name=None, tensors_only=False):
    """The public binary op (function, method, in-place method) of ``op``; ``tensors_only``:
    both operands must be tensors, as PyTorch's signature ``(Tensor, Tensor)`` says (the
    logical ops take no Python number)."""
    def fn(input, other, *, out=None):
        if tensors_only:
            _tensor_operand(op.name, input, "input", 1)
            _tensor_operand(op.name, other, "other", 2)
        if out is None:
            return binary(op, input, other)
        return elementwise(op, (input, other), out=out)

    def fn_(self, other):
        if tensors_only:
            _tensor_operand(op.name + "_", other, "other", 1)
        return elementwise_inplace(op, self, (other,))

    fn.__name__ = name or op.name
    fn.__doc__ = doc
    fn_.__name__ = fn.__name__ + "_"
    public(fn, inplace=fn_)
    return fn


floor_divide = _plain_binary(floor_divide_op, "``input // other``, rounding toward -inf.")
remainder = _plain_binary(remainder_op, "Python's modulus: the result has the divisor's sign.")
fmod = _plain_binary(fmod_op, "C's fmod: the result has the dividend's sign.")


# ------------------------------------------------------------------------------------------------
# pow


def _pow_kernel(xp, a, b):
    if not hasattr(a, "dtype") and b.dtype == _dt.bfloat16.np:
        a = xp.asarray(np.asarray(a).astype(b.dtype))  # ``pow_op.number_as_is``
    if not hasattr(a, "dtype"):  # a Python number to a tensor's powers: ``2 ** t``
        bk = xp.asarray(b)
        if bk.dtype.kind in "iu" and type(a) is int and (bk < 0).any():
            # PyTorch's integer powers: 1 and -1 stay units, other bases truncate to 0
            return xp.trunc(xp.power(float(a), bk)).astype(bk.dtype)
        return xp.power(a, b)
    if a.dtype == np.bool_:  # NOTE [ A bool tensor to a bool power ]
        return a.copy() if b else xp.ones_like(a)
    if a.dtype.kind in "iu" and (xp.asarray(b) < 0).any():
        if not hasattr(b, "dtype"):  # only a Python exponent is refused, as in PyTorch
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return _int_pow(xp, a, b)
    if a.dtype.kind == "c":
        return _complex_pow(xp, a, b)
    if b.__class__ is float or b.__class__ is int:
        r = None
        if a.dtype.kind == "f" and a.itemsize >= 4:
            r = _pow_by_products(xp, a, b)
        elif a.dtype == _dt.bfloat16.np:
            r = _bf16_pow_by_products(xp, a, b)
            if r is None:
                b = xp.asarray(np.asarray(b).astype(a.dtype))
        if r is not None:
            return r
    r = xp.power(a, b)
    if getattr(b, "size", 0) == 1 and getattr(a, "size", 0) > 1 and b.dtype.kind == "f" \
            and a.dtype.kind == "f" and bool((b == 0.5).all()):
        # NumPy answers one exponent of 0.5 for many bases with sqrt (-inf ** 0.5 is NaN,
        # -0.0 ** 0.5 is -0.0); a tensor exponent is C's pow in torch (inf, +0.0)
        r = xp.where(xp.isneginf(a), xp.asarray(np.inf, r.dtype), r)
        r = xp.where(a == 0, xp.zeros((), r.dtype), r)
    return r


# NOTE [ Powers by products ]
# PyTorch's CPU kernel for a float32/float64 tensor to a Python-number power spells a few
# exponents as products, not pow: ``x ** 3`` is ``x * x * x`` (rounded after each product),
# ``x ** -2`` is ``1 / (x * x)``, ``x ** -0.5`` is ``1 / sqrt(x)`` and ``x ** 0.5`` is
# ``sqrt(x)`` (``-inf ** 0.5`` is NaN and ``-0.0 ** 0.5`` is -0.0 there, not pow's inf, 0).
# A correctly rounded pow differs from these in the last bit in about a quarter of the
# elements, enough to move a seeded program's printed digits (examples/regression's
# ``x ** i`` features). The forms apply to a Python-number exponent only: a 0-dim tensor
# exponent takes the general pow in PyTorch too. (2 and -1 already agree: NumPy squares and
# divides; other exponents go through PyTorch's vectorised pow, which is not reproduced.)
# bfloat16 has the same forms rounded in bfloat16 (``_bf16_pow_by_products``); float16 has
# none.
def _pow_by_products(xp, a, b):
    if b == 3:
        return a * a * a
    if b == -2:
        return 1 / (a * a)
    if b == -0.5:
        return 1 / xp.sqrt(a)
    if b == 0.5:
        return xp.sqrt(a)
    return None


def _bf16_pow_by_products(xp, a, b):
    """The forms of NOTE [ Powers by products ] for a bfloat16 tensor: products and quotients
    round to bfloat16 after each step, square roots are taken in float32 and rounded once
    (float16 takes the general pow in PyTorch, so it has no such forms)."""
    if b == 3:
        return ((a * a).astype(a.dtype) * a).astype(a.dtype)
    if b == -2:
        return (1 / (a * a).astype(a.dtype)).astype(a.dtype)
    if b == 0.5 or b == -0.5:
        r = xp.sqrt(a.astype(np.float32))
        return (r if b == 0.5 else 1 / r).astype(a.dtype)
    return None


# NOTE [ Complex powers ]
# PyTorch's complex pow is C's ``cpow``, ``exp(b * log(a))``, not NumPy's power (which
# multiplies out integer exponents and returns NaN where ``cpow`` has a signed zero or an
# infinity). A Python-number exponent of 0.5, -0.5, -1, -2, 2 or 3 is sqrt, 1 / sqrt,
# reciprocal, 1 / (a * a), a * a and a * a * a instead, and 1 copies the base; a tensor
# exponent, even a zero-dim one, always takes ``cpow``.
def _complex_pow(xp, a, b):
    if b.__class__ in (bool, int, float, complex):
        if b == 0:
            return xp.ones_like(a)
        if b == 1:
            return a.copy()
        if b == 0.5 or b == -0.5:
            r = xp.sqrt(a)
            return r if b == 0.5 else 1 / r
        if b == 2 or b == -2 or b == 3:
            r = a * a
            return r * a if b == 3 else r if b == 2 else 1 / r
        if b == -1:
            return 1 / a
        b = xp.asarray(b, dtype=a.dtype)
    elif b.dtype != a.dtype:
        b = b.astype(a.dtype)
    return xp.exp(b * xp.log(a))


def _int_pow(xp, a, b):
    """Integer powers with negative integer exponents: 1 stays 1, -1 alternates in sign,
    every other base truncates to 0 (PyTorch's values)."""
    a, b = xp.broadcast_arrays(a, xp.asarray(b))
    neg = b < 0
    r = xp.power(a, xp.where(neg, 0, b).astype(b.dtype))
    odd = (b % 2) != 0
    unit = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0)).astype(r.dtype)
    return xp.where(neg, unit, r)


def _pow_vjp(g, a, b, *, out, needs_input_grad):
    from .pointwise import where

    need_a, need_b = needs_input_grad
    ga = gb = None
    if need_a:
        if _nonzero_number(b):  # ``x ** 2``: the exponent's arithmetic stays on the host
            e = b._data.item()
            ga = g * _conj(a ** (e - 1) * e)
        elif _is_host_number(b):
            # ``x ** 0``: zeros outside the graph, as PyTorch's (so ``x ** 2``'s third
            # derivative needs no grad, as torch's)
            from .creation import zeros_like

            ga = zeros_like(a)
        else:
            # a zero exponent has a zero gradient even at a == 0 (not 0 * inf), as in PyTorch
            ga = where(b == 0, 0.0, g * _conj(b * a ** (b - 1)))
    if need_b:
        # d/db a**b = a**b * log(a); define it as 0 where a == 0 and b >= 0, as PyTorch does
        gb = g * _conj(out * a.log())
        if gb._data.dtype.kind != "c" and not _nonzero_number(a):  # (``2 ** x``: torch's
            # product alone)
            gb = where((a == 0) & (b >= 0), 0.0, gb)
    return ga, gb


def _nonzero_number(b):
    """Whether ``b`` is an exponent that came from a nonzero Python number (read on the host,
    no device sync: such operands are 0-dim NumPy arrays)."""
    d = b._data
    # (a batched 0-dim exponent's logical array is a view of its example 0: not a number)
    return not b._rg and type(d) is np.ndarray and d.ndim == 0 and d.base is None and \
        bool(d != 0)


def _is_host_number(b):
    """Whether ``b`` came from a Python number (a 0-dim host array needing no grad)."""
    d = b._data
    return not b._rg and type(d) is np.ndarray and d.ndim == 0 and \
        getattr(b, "_wrapped_number", False)


def _exponent_needs_grad(inputs, params):
    """``Op.out_needed`` of pow: the result is read only for the exponent's gradient."""
    b = inputs[1]
    return b is not None and b._rg


# NOTE [ A bool tensor to a bool power ]
# PyTorch has no pow kernel for bool, but its ``pow(Tensor, Scalar)`` answers an exponent of
# 1 with a copy of the base and an exponent of 0 with ones before it looks for a kernel; a
# bool tensor meets such an exponent only as a Python bool (an int promotes to int64), so
# ``mask.pow(True)`` is a copy of ``mask`` and ``mask ** False`` is all True. Every other
# bool operation (two bool tensors, a Python bool base) is refused with torch's "pow" (the
# kernel name its CPU dispatch reports). The bool category is allowed in the op's rule so
# that this pair reaches the kernel, and kept off the direct paths, so ``_check_pow`` sees
# every bool call first.
def _check_pow(args):
    def is_bool(x):
        return type(x) is bool or isinstance(x, Tensor) and x._data.dtype == np.bool_

    if len(args) == 2 and all(is_bool(x) for x in args) and not (
            isinstance(args[0], Tensor) and type(args[1]) is bool):
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


pow_op = ElementwiseOp("pow", _pow_kernel, vjp=_pow_vjp, check=_check_pow)
pow_op.direct = pow_op.direct - {np.dtype(np.bool_)}
pow_op.direct_number = pow_op.direct_number - {np.dtype(np.bool_)}
pow_op.out_needed = _exponent_needs_grad
# a bfloat16 tensor's Python-number exponent reaches the kernel as a number, which the
# products of NOTE [ Powers by products ] apply to (a zero-dim tensor's does not)
pow_op.number_as_is = True


@public
def pow(input, exponent, *, out=None):
    """``input ** exponent`` element-wise; either may be a Python number."""
    if out is None:
        if isinstance(input, Tensor):
            return binary(pow_op, input, exponent)
        return elementwise(pow_op, (input, exponent))
    return elementwise(pow_op, (input, exponent), out=out)


Tensor.pow_ = lambda self, exponent: elementwise_inplace(pow_op, self, (exponent,))


float_power_op = ElementwiseOp("float_power", ufunc="power", vjp=_pow_vjp)
float_power_op.out_needed = _exponent_needs_grad


@public
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64 (complex128 for complex inputs)."""
    def up(x):
        if isinstance(x, Tensor):
            return x.to(_dt.complex128 if x.is_complex() else _dt.float64)
        return complex(x) if isinstance(x, complex) else float(x)

    if out is not None and isinstance(out, Tensor):
        # torch's float_power writes only into an out= of exactly its result's dtype
        want = _dt.complex128 if any(
            isinstance(x, complex) or isinstance(x, Tensor) and x.is_complex()
            for x in (input, exponent)) else _dt.float64
        if out.dtype != want:
            raise RuntimeError(f"the output given to float_power has dtype "
                               f"{out.dtype.scalar_name} but the operation's result requires "
                               f"dtype {want.scalar_name}")
    return elementwise(float_power_op, (up(input), up(exponent)), out=out)


def _float_power_(self, exponent):
    if self.dtype not in (_dt.float64, _dt.complex128):
        raise RuntimeError(
            f"the base given to float_power_ has dtype {self.dtype.scalar_name} but the "
            f"operation's result requires dtype Double")
    return elementwise_inplace(float_power_op, self, (exponent,))


Tensor.float_power_ = _float_power_


# ------------------------------------------------------------------------------------------------
# neg / positive / abs


def _neg_vjp(g, _a):
    return -g


neg_op = ElementwiseOp("neg", ufunc="negative", vjp=_neg_vjp, linear=True, allow=(1, 2, 3))


@public(alias=("negative",), inplace=lambda self: elementwise_inplace(neg_op, self, ()))
def neg(input, *, out=None):
    """``-input``."""
    if isinstance(input, Tensor) and input._data.dtype == np.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead.")
    if out is None:
        return unary(neg_op, input)
    return elementwise(neg_op, (input,), out=out)


@public
def positive(input):
    """Returns ``input`` itself (``+t``); an error for bool tensors, as in PyTorch."""
    if input._data.dtype == np.bool_:
        raise RuntimeError(
            "The `+` operator, on a bool tensor is not supported.")
    return input


def _abs_vjp(g, a):
    return g * a.sgn()


abs_op = ElementwiseOp("abs", ufunc="absolute", promote="real", allow=(1, 2, 3), vjp=_abs_vjp)


def _abs_(self):
    # a magnitude is real: PyTorch refuses to store it back into a complex self
    if isinstance(self, Tensor) and self.is_complex():
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return elementwise_inplace(abs_op, self, ())


@public(alias=("absolute",), inplace=_abs_)
def abs(input, *, out=None):
    """Absolute value (the magnitude for complex inputs).

    Bool inputs raise NotImplementedError, as PyTorch's kernel does.

    Differences from PyTorch:
        ``out=`` a tensor whose storage cannot be resized (one sharing memory with a NumPy
        array) and must grow: PyTorch raises RuntimeError, ember resizes it.
    """
    if out is None:
        return unary(abs_op, input)
    return elementwise(abs_op, (input,), out=out)


# ------------------------------------------------------------------------------------------------
# comparisons


def _compare(name, ufunc, alias=(), allow=(0, 1, 2, 3)):
    op = ElementwiseOp(name, ufunc=ufunc, promote="compare", allow=allow)

    def fn(input, other, *, out=None):
        return elementwise(op, (input, other), out=out)

    def fn_(self, other):
        return elementwise_inplace(op, self, (other,))

    fn.__name__ = name
    fn.__doc__ = f"Element-wise ``{name}`` comparison; returns a bool tensor."
    fn_.__name__ = name + "_"
    public(fn, inplace=fn_, alias=alias)
    return op, fn


eq_op, eq = _compare("eq", "equal")
ne_op, ne = _compare("ne", "not_equal", alias=("not_equal",))
lt_op, lt = _compare("lt", "less", alias=("less",), allow=(0, 1, 2))
le_op, le = _compare("le", "less_equal", alias=("less_equal",), allow=(0, 1, 2))
gt_op, gt = _compare("gt", "greater", alias=("greater",), allow=(0, 1, 2))
ge_op, ge = _compare("ge", "greater_equal", alias=("greater_equal",), allow=(0, 1, 2))


# ------------------------------------------------------------------------------------------------
# bitwise and logical


def _bitwise(name, ufunc, doc):
    op = ElementwiseOp(name, ufunc=ufunc, promote="int", allow=(0, 1))
    return op, _plain_binary(op, doc)


bitwise_and_op, bitwise_and = _bitwise("bitwise_and", "bitwise_and", "Bitwise AND.")
bitwise_or_op, bitwise_or = _bitwise("bitwise_or", "bitwise_or", "Bitwise OR.")
bitwise_xor_op, bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "Bitwise XOR.")


def _shift_kernel(direction):
    def kernel(xp, a, b):
        b = xp.asarray(b)
        if not hasattr(a, "dtype"):  # ``1 << t``: the number takes the tensor's dtype
            a = xp.asarray(a, dtype=b.dtype)
        bits = a.dtype.itemsize * 8
        # PyTorch defines shifts by >= the bit width: left gives 0, right gives the sign fill
        big = (b >= bits) | (b < 0)
        safe = xp.where(big, 0, b).astype(a.dtype)
        r = xp.left_shift(a, safe) if direction == "left" else xp.right_shift(a, safe)
        if big.any():
            fill = 0 if direction == "left" or a.dtype.kind == "u" else xp.where(a < 0, -1, 0)
            r = xp.where(big, fill, r).astype(a.dtype)
        return r

    return kernel


bitwise_left_shift_op = ElementwiseOp("bitwise_left_shift", _shift_kernel("left"),
                                      promote="int", allow=(1,))
bitwise_right_shift_op = ElementwiseOp("bitwise_right_shift", _shift_kernel("right"),
                                       promote="int", allow=(1,))
bitwise_left_shift = _plain_binary(bitwise_left_shift_op, "``input << other``.")
bitwise_right_shift = _plain_binary(bitwise_right_shift_op, "``input >> other``.")

bitwise_not_op = ElementwiseOp("bitwise_not", ufunc="invert", promote="int", allow=(0, 1))


@public(inplace=lambda self: elementwise_inplace(bitwise_not_op, self, ()))
def bitwise_not(input, *, out=None):
    """Bitwise NOT (logical NOT for bool tensors)."""
    if out is None:
        return unary(bitwise_not_op, input)
    return elementwise(bitwise_not_op, (input,), out=out)


def _logical(name, ufunc):
    op = ElementwiseOp(name, ufunc=ufunc, promote="logical")
    return op, _plain_binary(op, f"Element-wise ``{name}``, treating nonzero as True.",
                             tensors_only=True)


logical_and_op, logical_and = _logical("logical_and", "logical_and")
logical_or_op, logical_or = _logical("logical_or", "logical_or")
logical_xor_op, logical_xor = _logical("logical_xor", "logical_xor")
logical_not_op = ElementwiseOp("logical_not", ufunc="logical_not", promote="logical")


@public(inplace=lambda self: elementwise_inplace(logical_not_op, self, ()))
def logical_not(input, *, out=None):
    """Element-wise NOT, treating nonzero as True; returns bool."""
    return elementwise(logical_not_op, (input,), out=out)


# ------------------------------------------------------------------------------------------------
# Python operators. See NOTE [ Hot path ]: each goes straight to the element-wise fast path.


def _install_dunders():
    T = Tensor
    T.__add__ = lambda self, other: binary(add_op, self, other)
    T.__radd__ = lambda self, other: _commuted(add_op, self, other)
    T.__iadd__ = lambda self, other: elementwise_inplace(add_op, self, (other,))

    T.__isub__ = lambda self, other: elementwise_inplace(sub_op, self, (other,))
    T.__mul__ = lambda self, other: binary(mul_op, self, other)
    T.__rmul__ = lambda self, other: _commuted(mul_op, self, other)
    T.__imul__ = lambda self, other: elementwise_inplace(mul_op, self, (other,))
    T.__truediv__ = lambda self, other: binary(div_op, self, other)
    T.__rtruediv__ = lambda self, other: _reciprocal_times(div_op, self, other)
    T.__itruediv__ = lambda self, other: elementwise_inplace(div_op, self, (other,))
    T.__floordiv__ = lambda self, other: binary(floor_divide_op, self, other)
    T.__rfloordiv__ = lambda self, other: rbinary(floor_divide_op, self, other)
    T.__ifloordiv__ = lambda self, other: elementwise_inplace(floor_divide_op, self, (other,))
    T.__mod__ = lambda self, other: binary(remainder_op, self, other)
    T.__rmod__ = lambda self, other: rbinary(remainder_op, self, other)
    T.__imod__ = lambda self, other: elementwise_inplace(remainder_op, self, (other,))
    T.__pow__ = lambda self, other: binary(pow_op, self, other)
    T.__rpow__ = lambda self, other: rbinary(pow_op, self, other)
    T.__ipow__ = lambda self, other: elementwise_inplace(pow_op, self, (other,))
    T.__and__ = lambda self, other: binary(bitwise_and_op, self, other)
    T.__rand__ = lambda self, other: rbinary(bitwise_and_op, self, other)
    T.__iand__ = lambda self, other: elementwise_inplace(bitwise_and_op, self, (other,))
    T.__or__ = lambda self, other: binary(bitwise_or_op, self, other)
    T.__ror__ = lambda self, other: rbinary(bitwise_or_op, self, other)
    T.__ior__ = lambda self, other: elementwise_inplace(bitwise_or_op, self, (other,))
    T.__xor__ = lambda self, other: binary(bitwise_xor_op, self, other)
    T.__rxor__ = lambda self, other: rbinary(bitwise_xor_op, self, other)
    T.__ixor__ = lambda self, other: elementwise_inplace(bitwise_xor_op, self, (other,))
    T.__lshift__ = lambda self, other: binary(bitwise_left_shift_op, self, other)
    T.__rlshift__ = lambda self, other: rbinary(bitwise_left_shift_op, self, other)
    T.__ilshift__ = lambda self, other: elementwise_inplace(bitwise_left_shift_op, self,
                                                            (other,))
    T.__rshift__ = lambda self, other: binary(bitwise_right_shift_op, self, other)
    T.__rrshift__ = lambda self, other: rbinary(bitwise_right_shift_op, self, other)
    T.__irshift__ = lambda self, other: elementwise_inplace(bitwise_right_shift_op, self,
                                                            (other,))
    def __invert__(self):
        # the operator is stricter than bitwise_not(): a TypeError, as for Python's ~1.5
        if self.dtype.category >= 2:
            raise TypeError("~ (operator.invert) is only implemented on integer and "
                            f"Boolean-type tensors, not {self.dtype}")
        return unary(bitwise_not_op, self)

    T.__invert__ = __invert__
    T.__neg__ = neg
    T.__pos__ = positive
    T.__abs__ = abs

    def _cmp(op):
        def f(self, other):
            if isinstance(other, (Tensor, int, float, bool, complex, np.number, np.bool_)):
                return elementwise(op, (self, other))
            return NotImplemented

        return f

    T.__eq__ = _cmp(eq_op)
    T.__ne__ = _cmp(ne_op)
    T.__lt__ = _cmp(lt_op)
    T.__le__ = _cmp(le_op)
    T.__gt__ = _cmp(gt_op)
    T.__ge__ = _cmp(ge_op)



def _commuted(op, a, b):
    """``b <op> a`` for a commutative ``op`` and a Python number ``b``: PyTorch runs it as
    ``a.<op>(b)``, so ``a`` is the first operand (the first of the graph's inputs) and ``b``
    the one alpha scales (NOTE [ Complex add and sub ])."""
    if not isinstance(b, _scalar_types):
        return NotImplemented
    return binary(op, a, b)


def _commuted_fast(op, a, b):
    """``_commuted`` when no mode is on: a Python int or float ``b`` with a floating tensor
    ``a`` goes straight to the kernel (``2 * x``, ``1 + x``), as in ``binary_fast``."""
    if b.__class__ is float or b.__class__ is int:
        t = _with_number(op, a, b, False)
        if t is not None:
            return t
    if not isinstance(b, _scalar_types):
        return NotImplemented
    return binary_fast(op, a, b)


# NOTE [ A number over a tensor ]
# PyTorch runs ``c / t`` (``Tensor.__rtruediv__``) as ``t.reciprocal() * c``, not as one
# division: a profile lists ``aten::reciprocal`` then ``aten::mul``, the graph has
# ``MulBackward0`` over ``ReciprocalBackward0``, and the result is the product of two
# rounded steps, which can differ from the rounded quotient ``c / t`` by one unit in the
# last place. Ember runs the same two ops, so its bits, rows and nodes are PyTorch's.


def _reciprocal_times(op, a, b):
    """``b / a`` for a Python number ``b``, as ``a.reciprocal() * b`` (NOTE [ A number
    over a tensor ]); ``op`` (``div``) is unused."""
    if not isinstance(b, _scalar_types):
        return NotImplemented
    return binary(mul_op, unary(reciprocal_op, a), b)


#: the dtypes ``_reciprocal_times_fast`` computes itself
_RECIPROCAL_FAST = (np.dtype(np.float32), np.dtype(np.float64))
#: the numbers it takes: finite in float32, so that no cast overflows (an integer that large
#: is not exact in float64 either)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _reciprocal_times_fast(op, a, b):
    """``_reciprocal_times`` when no mode is on: a contiguous float32/float64 CPU tensor
    that needs no graph and a Python number run the two steps as one compiled pass
    (``_kernels.reciprocal_times``), or without numba, when small, in place on one array
    (the reciprocal, then the product by the number in the tensor's dtype, as the two ops
    round them), at about the cost of the one division they replace."""
    if not isinstance(b, _scalar_types):
        return NotImplemented
    d = a._data
    if d.__class__ is _ndarray and d.dtype in _RECIPROCAL_FAST and not a._rg and \
            (b.__class__ is float or b.__class__ is int) and -_FLOAT32_MAX <= b <= _FLOAT32_MAX \
            and d.flags.c_contiguous and d.ndim:
        r = _kernels.reciprocal_times(d, b)   # one compiled pass (threads when large)
        if r is not None:
            return wrap(r)
        if d.size < 1048576:
            r = np.reciprocal(d)
            np.multiply(r, d.dtype.type(b), out=r)
            return wrap(r)
    return binary_fast(mul_op, unary(reciprocal_op, a), b)


def _operator_dunder(name, run, op):
    """``Tensor.<name>(self, other) = run(op, self, other)`` making the __torch_function__
    test itself (NOTE [ __torch_function__ ] in ember/_overrides.py): the commonest
    operators save a wrapper's frame that way."""

    fast = {binary: binary_fast, rbinary: rbinary_fast, _commuted: _commuted_fast,
            _reciprocal_times: _reciprocal_times_fast}[run]

    if run is binary:
        f = _inlined_dunder(run, fast, op)
    else:
        def f(self, other):
            if _slow[0]:  # a mode is on, or __torch_function__ may apply
                if _tf_active[0]:
                    r = _tf_handle(f, (self, other), {})
                    if r is not _NOT_HANDLED:
                        return r
                # the protocol alone (a subclass exists, not in this call) keeps the fast path
                fn = run if _dispatch.intercept or _dispatch.cpu_kernel_replaced else fast
            else:
                fn = fast
            try:
                return fn(op, self, other)
            except (TypeError, AttributeError):
                r = _tf_handle_failed(f, (self, other), {})
                if r is _NOT_HANDLED:
                    raise
                return r

    f.__name__ = f.__qualname__ = name
    return _tf_operator(f)


def _fill_direct_cpu(op, dt):
    """Keep ``op``'s CPU kernel for same-dtype ``dt`` operands in ``op.direct_cpu`` (NOTE
    [ Direct CPU kernels ] in ember/_ops/_elementwise.py)."""
    if op.builtin_cpu:
        op.direct_cpu[dt] = op.impl.get(_ndarray) or op.resolve(_ndarray)


def _inlined_dunder(run, fast, op):
    """The operator of a binary ``op`` whose same-dtype CPU case runs in its own body
    (NOTE [ Operators inlined ])."""

    # NOTE [ Operators inlined ]
    # ``a + b`` of two CPU tensors of one dtype is the commonest call there is: the dunder
    # runs ``binary_fast``'s same-dtype case itself, saving a frame and a few tests (about a
    # tenth of the call). It stands where ``binary_fast`` would be called -- after the test
    # of ``_slow``, so modes, __torch_function__ and replaced CPU kernels still see every
    # call -- and anything else (numbers, promotion, other devices, large arrays that
    # ``binary_fast`` splits over threads, broadcasts it may run in one compiled loop) falls
    # through to ``fast``. The case is the first
    # thing the body tests, returning from inside the test, and its kernel comes from
    # ``op.direct_cpu`` (dtype -> CPU kernel, NOTE [ Direct CPU kernels ] in _elementwise.py):
    # one look-up where the dtype's membership in ``op.direct`` and the kernel table were
    # two. Every test and extra local it saves is a few percent of a 10-element add.
    kernels = op.direct_cpu

    def f(self, other):
        if not _slow[0] and other.__class__ is Tensor:
            try:
                ad = self._data
                bd = other._data
                dt = ad.dtype
                # (16384: _BCAST_MIN, NOTE [ Broadcast arithmetic in one loop ]; a global
                # costs a look-up here)
                if dt is bd.dtype and ad.__class__ is _ndarray and \
                        bd.__class__ is _ndarray and (ad.size < 16384 or ad.size < 1048576 and
                                                      ad.shape == bd.shape):
                    k = kernels.get(dt)
                    if k is not None:
                        try:
                            r = k(ad, bd)
                        except ValueError:
                            raise _broadcast_error(op, (self, other)) from None
                        if r.__class__ is not _ndarray:  # a zero-dim result: a NumPy scalar
                            r = np.asarray(r)
                        elif r.ndim > 1 and r.strides != ad.strides:
                            r = _follow(r, (ad, bd))  # NOTE [ Result strides ]
                        t = _new(Tensor)
                        t._data = r
                        t._rg = False
                        t._grad_fn = None
                        t._base = None
                        t._vc = None
                        if (self._rg or other._rg) and _dispatch.record is not None and \
                                _dispatch.state.grad_enabled:
                            _dispatch.record_binary(op, self, other, t)
                        return t
                    if dt in op.direct:  # the first call in this dtype
                        _fill_direct_cpu(op, dt)
                return fast(op, self, other)
            except (TypeError, AttributeError):
                r = _tf_handle_failed(f, (self, other), {})
                if r is _NOT_HANDLED:
                    raise
                return r
        if _slow[0]:  # a mode is on, or __torch_function__ may apply
            if _tf_active[0]:
                r = _tf_handle(f, (self, other), {})
                if r is not _NOT_HANDLED:
                    return r
            # the protocol alone (a subclass exists, not in this call) keeps the fast path
            fn = run if _dispatch.intercept or _dispatch.cpu_kernel_replaced else fast
        else:
            fn = fast
        try:
            return fn(op, self, other)
        except (TypeError, AttributeError):
            r = _tf_handle_failed(f, (self, other), {})
            if r is _NOT_HANDLED:
                raise
            return r

    return f


_install_dunders()
for _name, _run, _op in [("__add__", binary, add_op), ("__radd__", _commuted, add_op),
                         ("__mul__", binary, mul_op), ("__rmul__", _commuted, mul_op),
                         ("__truediv__", binary, div_op),
                         ("__rtruediv__", _reciprocal_times, div_op),
                         ("__sub__", binary, sub_op), ("__rsub__", rbinary, sub_op),
                         ("__pow__", binary, pow_op)]:
    setattr(Tensor, _name, _operator_dunder(_name, _run, _op))
