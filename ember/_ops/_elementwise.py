"""Machinery shared by all element-wise ops: promotion, scalars, broadcasting, in-place, out=.

An element-wise op is an ``ElementwiseOp``: an ``Op`` whose kernel maps arrays to an array
of the broadcast shape, plus a dtype rule (``promote``) saying how PyTorch's promoted dtype
(NOTE [ Type promotion ] in ember/_core/dtype.py) becomes the dtype the kernel computes in
and the dtype of the result:

- ``"same"``     compute and return the promoted dtype (add, mul, maximum, ...)
- ``"float"``    integers and bool compute in the default float dtype (div, exp, sin, ...)
- ``"compare"``  compute in the promoted dtype, return bool (eq, lt, isnan, ...)
- ``"int"``      integers and bool only (bitwise ops, shifts, gcd)
- ``"logical"``  any input dtype, return bool (logical_and, ...)
- ``"real"``     like "same" but complex inputs return their real dtype (abs)
- ``"float_real"`` like "float" and complex inputs return their real dtype (angle)

``binary``/``unary`` are the fast paths used by operators and methods; ``elementwise``
handles any arity and every corner (scalars that overflow, bfloat16, zero-dim tensors,
mixed devices). See NOTE [ Hot path ] in ember/_dispatch.py.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor
from ._memory_format import follow as _follow
from ._registry import Op
from .._kernels import ufunc_on_threads  # (the pool first: NOTE [ Large arithmetic on the pool ])
from .._parallel import MIN_ELEMENTS as _PAR_MIN
from .. import _kernels, _parallel

_new = object.__new__
_from_np = _dt.from_np
_BF16 = _dt.bfloat16.np
_scalar_types = (int, float, bool, complex, np.number, np.bool_)

#: a Python number's place among the operands of NOTE [ Result strides ]
_ZERO_DIM = np.empty(())

_CATEGORY_NAMES = {0: "Bool", 1: "integer", 2: "floating point", 3: "complex"}


#: element-wise ops whose ``out=`` must have exactly the result's dtype (NOTE [ out= dtypes ]
#: in ember/_dispatch.py): the ones that keep their input's dtype rather than compute in a
#: promoted one
_EXACT_OUT = frozenset({
    "abs", "absolute", "neg", "negative", "ceil", "floor", "trunc", "fix", "round", "sign",
    "sgn", "clamp", "clamp_min", "clamp_max", "clip", "heaviside", "nan_to_num", "round_decimals",
    "conj_physical", "frac", "bitwise_not", "signbit", "isposinf", "isneginf",
    "special.round",
})


#: element-wise ops with kernels of their own that keep their operands' dtype, so the direct
#: paths may run them below a mode (``ElementwiseOp.direct_under_modes``)
_DIRECT_KERNELS = frozenset({"relu", "sigmoid", "silu", "rsqrt", "reciprocal"})


class ElementwiseOp(Op):
    """An element-wise op; see the module docstring for ``promote``.

    ``allow`` is the set of dtype categories the op accepts (0 bool, 1 int, 2 float,
    3 complex); others raise PyTorch's "not implemented for '<dtype>'" NotImplementedError
    (a RuntimeError subclass, as in PyTorch).
    """

    def __init__(self, name, kernel=None, *, promote="same", allow=(0, 1, 2, 3), check=None,
                 complex_kernel=None, opmath_number=False, **kw):
        super().__init__(name, kernel, **kw)
        self.promote = promote
        # a number as the second operand of a float16/bfloat16 tensor meets it in float32
        # (NOTE [ A number in half-precision opmath ])
        self.opmath_number = opmath_number
        # the kernel takes a Python number as it is, also beside bfloat16 (pow: NOTE [ Powers
        # by products ] tells ``x ** 0.5`` from ``x ** zero_dim_tensor``)
        self.number_as_is = False
        # ``complex_kernel(xp, *arrays, **params)`` runs in place of the ufunc when the
        # compute dtype is complex (NOTE [ Complex add and sub ] in ember/_ops/arithmetic.py)
        # or the call has params (add/sub's fused ``alpha``); such calls take the general
        # path, never the direct ones
        self.complex_kernel = complex_kernel
        # ``check(args)`` raises PyTorch's error for operands the op refuses before any
        # promotion (sub of bools); the direct paths never see such operands
        self.check = check
        self.allow = frozenset(allow)
        self.exact_out = name in _EXACT_OUT
        # the direct paths may serve this op's calls below a mode: a NumPy ufunc keeps the
        # dtype of same-dtype operands (and NumPy's weak Python scalars), as do these kernels
        self.direct_under_modes = self.ufunc is not None or name in _DIRECT_KERNELS
        # NumPy's own ufunc, when that is the CPU kernel: the direct paths may split it over
        # threads (NOTE [ Threaded element-wise ops ] in ember/_parallel.py)
        self.ufunc_np = getattr(np, self.ufunc, None) if self.ufunc else None
        if not isinstance(self.ufunc_np, np.ufunc):
            self.ufunc_np = None
        # dtypes for which same-dtype tensor inputs go straight to the kernel and the result
        # keeps that dtype (see ``binary``)
        if promote in ("same", "int", "real"):
            direct = [d for d in _dt.all_dtypes if d.category in self.allow]
            if promote == "int":
                direct = [d for d in direct if d.category <= 1]
            if promote == "real":
                direct = [d for d in direct if d.category <= 2]
        elif promote in ("float", "float_real"):
            direct = [d for d in _dt.all_dtypes if d.category == 2 and 2 in self.allow]
            if promote == "float":
                direct += [d for d in _dt.all_dtypes if d.category == 3 and 3 in self.allow]
        else:
            direct = []
        self.direct = frozenset(d.np for d in direct if d is not _dt.bfloat16 and
                                not (complex_kernel is not None and d.category == 3))
        # the dtypes a tensor with a number as the second operand goes straight to the
        # kernel in: float16 leaves them where the number joins in float32
        self.direct_number = self.direct - _HALF if opmath_number else self.direct
        # NOTE [ Direct CPU kernels ]
        # dtype -> the CPU kernel, for the dtypes of ``direct``, filled by the inlined
        # operators on their first call in a dtype (``_fill_direct_cpu``) and emptied with
        # ``impl`` whenever a kernel is registered. The operators read it only while
        # ``_dispatch.slow`` is off, which a replaced built-in CPU kernel turns on for good,
        # so what it holds is always the kernel ``impl`` would give.
        self.direct_cpu = {}
        self._rules = {}
        self._inplace_handle = None
        self._scalar_handles = None

    def register_kernel(self, backend_name, fn):
        """``Op.register_kernel``, forgetting the kernels the operators kept (NOTE [ Direct
        CPU kernels ])."""
        super().register_kernel(backend_name, fn)
        self.direct_cpu.clear()

    def handle(self, has_out=False, nargs=1):
        """The OpOverload for ``ember.<name>`` (``out=`` form when ``has_out``); a binary op's
        functional form is named ``Tensor``, as PyTorch names ``add.Tensor``."""
        h = self._handles[has_out] if self._handles is not None else None
        if h is None:
            if self._handles is None:
                self._handles = [None, None]
            op = self

            def run(*args, out=None, **params):
                return elementwise(op, args, params or None, out)

            names = _OVERLOAD_NAMES.get(self.name, _TENSOR_OVERLOADS)
            overload = "out" if has_out else names[0] if nargs >= 2 else "default"
            h = self._handles[has_out] = _dispatch.overload("aten", self.name, overload, run,
                                                            self)
        return h

    def handle_for(self, args, has_out):
        """The OpOverload a call with ``args`` shows dispatch modes: PyTorch names some binary
        ops' forms by whether an operand is a Python number (``gt.Scalar`` for ``x > 0``,
        ``pow.Tensor_Scalar`` for ``x ** 2``; ``add`` keeps ``add.Tensor``)."""
        names = _OVERLOAD_NAMES.get(self.name)
        if names is None or has_out or len(args) != 2:
            return self.handle(has_out, len(args))
        a, b = args
        which = 0 if isinstance(b, Tensor) and isinstance(a, Tensor) else \
            1 if isinstance(a, Tensor) else 2
        if which == 0 or names[which] is None:
            return self.handle(False, 2)
        h = self._scalar_handles.get(which) if self._scalar_handles else None
        if h is None:
            op = self

            def run(*args, out=None, **params):
                return elementwise(op, args, params or None, out)

            if self._scalar_handles is None:
                self._scalar_handles = {}
            self.handle(False, 2)  # the Tensor form first: ember.ops.aten.<name>'s own
            h = self._scalar_handles[which] = _dispatch.overload(
                "aten", self.name, names[which], run, self)
        return h

    def inplace_handle(self):
        """The OpOverload for ``Tensor.<name>_``."""
        h = self._inplace_handle
        if h is None:
            op = self

            def run(self_, *args, **params):
                return elementwise_inplace(op, self_, args, params or None)

            h = self._inplace_handle = _dispatch.overload(
                "aten", self.name + "_", "default", run, self, is_inplace=True)
        return h

    def rule(self, common):
        """(compute dtype, result dtype) for the promoted dtype ``common``."""
        # integers may promote to the default float dtype, which set_default_dtype changes
        key = common if common.category >= 2 else (common, _dt._default[0])
        r = self._rules.get(key)
        if r is None:
            r = self._rules[key] = self._make_rule(common)
        return r

    def _make_rule(self, c):
        cat = c.category
        p = self.promote
        if p == "float" or p == "float_real":
            if cat < 2:
                c = _dt.get_default_dtype()
        elif p == "int" and cat > 1:
            raise NotImplementedError(
                f'"{_KERNEL_NAMES.get(self.name) or self.name + "_cpu"}" not implemented '
                f'for \'{c.scalar_name}\'')
        if cat == 3 and self.name in ("maximum", "minimum", "fmax", "fmin"):
            # torch refuses these before any kernel (RuntimeError, not a dtype dispatch)
            raise RuntimeError(f"{self.name} not implemented for complex tensors.")
        if c.category not in self.allow or c.np in _dt._OPAQUE_NP or (
                c.np in _dt._FLOAT8_NP and not _dt.float8_op_allowed(self.name)):
            kernel = _KERNEL_NAMES.get(self.name) or self.name + "_cpu"
            raise NotImplementedError(f'"{kernel}" not implemented for \'{c.scalar_name}\'')
        if p in ("compare", "logical"):
            return c, _dt.bool_
        if (p == "real" or p == "float_real") and c.category == 3:
            return c, c.to_real()
        return c, c


#: the CPU kernel names torch's "not implemented for" errors give, where not ``<op>_cpu``
_KERNEL_NAMES = {"add": "add_stub", "sub": "add_stub", "floor_divide": "div_floor_cpu",
                 "bitwise_left_shift": "lshift_cpu", "bitwise_right_shift": "rshift_cpu"}


# ------------------------------------------------------------------------------------------------
# the general path


def _type_error(op, x):
    return TypeError(
        f"{op.name}(): expected a Tensor or a number as argument, but got {type(x).__name__}")


def promote(op, args):
    """(compute dtype, result dtype, first array) for ``args`` (Tensors and scalars)."""
    dims, zeros, scal = [], [], []
    first = None
    for x in args:
        if isinstance(x, Tensor):
            d = x._data
            if first is None or (first.ndim == 0 and d.ndim):
                first = d
            (dims if d.ndim else zeros).append(_from_np[d.dtype])
        elif isinstance(x, _scalar_types):
            scal.append(_dt.scalar_dtype(x))
        else:
            raise _type_error(op, x)
    common = _dt.result_type_of(tuple(dims), tuple(zeros), tuple(scal))
    try:
        compute, result = op.rule(common)
    except NotImplementedError as e:
        e.common = common  # for the cast to an output that torch checks first (_cast_first)
        raise
    return compute, result, first


def _cast_first(op, err, out_np):
    """Raise torch's refusal to cast the result into an output of NumPy dtype ``out_np``
    (self of an in-place op, or ``out=``) where ``op`` has no kernel for the promoted dtype
    (``err`` from ``promote``): torch's TensorIterator computes the result dtype and checks
    that cast before it looks for a kernel (``x_int.bitwise_and_(1.5)`` is a cast error, not
    "not implemented for 'Double'")."""
    common = getattr(err, "common", None)
    if common is None:
        return
    result = common
    if op.promote in ("float", "float_real") and common.category < 2:
        result = _dt.get_default_dtype()
    if op.promote in ("real", "float_real") and result.category == 3:
        result = result.to_real()
    elif op.promote in ("compare", "logical"):
        result = _dt.bool_
    sdt = _from_np[out_np]
    if result is not sdt and not _dt.can_cast(result, sdt):
        raise RuntimeError(f"result type {result.scalar_name} can't be cast to the desired "
                           f"output type {sdt.scalar_name}") from None


# NOTE [ A number in half-precision opmath ]
# PyTorch's mul and div kernels (true, trunc and floor division) read a second operand that
# is one value -- a Python number, a zero-dim tensor, a wrapped number in a derivative
# formula -- in float32 when the tensor is float16 or bfloat16: ``x * 0.1`` is
# ``float32(x) * float32(0.1)`` rounded once to half, not ``x * half(0.1)``, which differs
# in about a third of the values. The number as the first operand (``0.3 // x``, a zero-dim
# tensor times ``x``) is cast to half first, and so is every other op's number (add, sub
# and their ``alpha``, remainder, pow, comparisons): those keep NumPy's weak-scalar
# behaviour. ``_number_dtype`` is where the dtype the number meets the tensor in is chosen;
# the direct paths leave float16 to the general one for these ops
# (``ElementwiseOp.direct_number``), so float32's hot path pays nothing for it.

_HALF = frozenset({np.dtype(np.float16), _BF16})
_F32 = np.dtype(np.float32)


def _number_dtype(op, cnp, other):
    """The NumPy dtype ``op`` computes in when ``other`` is its second operand and ``cnp``
    the promoted compute dtype: float32 where ``other`` is one value (a number or a
    zero-dim tensor of another dtype) that PyTorch reads in half's opmath type (NOTE [ A
    number in half-precision opmath ]), else ``cnp``."""
    if not op.opmath_number or cnp not in _HALF:
        return cnp
    if isinstance(other, Tensor):
        d = other._data
        return _F32 if d.ndim == 0 and d.dtype != cnp else cnp
    return _F32 if isinstance(other, _scalar_types) else cnp


def _int_out_of_range(x, cnp):
    """Whether the Python int ``x`` lies outside the integer dtype ``cnp``: a comparison
    then sees it wrapped into ``cnp`` as PyTorch casts it (``uint8_tensor == -1`` is True
    at 255), where NumPy would compare the true values."""
    if cnp.kind not in "iu":
        return False
    info = np.iinfo(cnp)
    return not info.min <= x <= info.max


def _scalar_array(x, cnp, at):
    """A Python int out of ``cnp``'s range wraps around, as PyTorch's casts do."""
    xp = _dispatch.backends_by_type[at].xp
    return xp.asarray(np.asarray(x).astype(cnp))


#: PyTorch's overload names of binary ops whose forms with a Python number are overloads of
#: their own: (tensor and tensor, tensor and number, number and tensor; None: no such form)
_OVERLOAD_NAMES = {
    **{n: ("Tensor", "Scalar", None) for n in ("eq", "ne", "lt", "le", "gt", "ge", "fmod",
                                              "copysign")},
    "remainder": ("Tensor", "Scalar", "Scalar_Tensor"),
    "pow": ("Tensor_Tensor", "Tensor_Scalar", "Scalar"),
    "xlogy": ("Tensor", "Scalar_Other", "Scalar_Self"),
}
_TENSOR_OVERLOADS = ("Tensor", None, None)


def elementwise(op, args, params=None, out=None):
    """Run element-wise ``op`` on ``args`` (Tensors and Python scalars): promotion, device
    checks, broadcasting (by the kernel), autograd, and ``out=``."""
    if _dispatch.intercept and _dispatch.state.modes and _dispatch.routes(op):
        kwargs = dict(params) if params else {}
        if out is not None:
            kwargs["out"] = out
        return _dispatch.through_modes(op.handle_for(args, out is not None), tuple(args),
                                       kwargs)
    if params is None and out is None and op.direct_under_modes:
        # below the last mode (an op handle called by a mode): the operators' direct paths
        # apply as they do with no mode on (NOTE [ Hot path ])
        n = len(args)
        if n == 2:
            a, b = args
            if isinstance(a, Tensor):
                if isinstance(b, Tensor):
                    t = _direct_binary(op, a, b)
                    if t is not None:
                        return t
                elif b.__class__ is float or b.__class__ is int:
                    t = _with_number(op, a, b, False)
                    if t is not None:
                        return t
        elif n == 1 and isinstance(args[0], Tensor):
            t = _direct_unary(op, args[0])
            if t is not None:
                return t
    if op.check is not None:
        op.check(args)
    try:
        compute, result, first = promote(op, args)
    except NotImplementedError as e:
        if isinstance(out, Tensor):
            _cast_first(op, e, out._data.dtype)
        raise
    if first is None:
        raise _type_error(op, args[0])
    at = type(first)
    cnp = compute.np
    if len(args) == 2:
        cnp = _number_dtype(op, cnp, args[1])
    arrays = []
    for x in args:
        if isinstance(x, Tensor):
            a = x._data
            if type(a) is not at:
                if a.ndim == 0 and type(a) is np.ndarray:  # a CPU scalar joins any device
                    a = _dispatch.backends_by_type[at].xp.asarray(a)
                else:
                    raise _dispatch.device_mismatch(op.name, first, a)
            arrays.append(a if a.dtype == cnp else a.astype(cnp))
        elif cnp == _BF16 and not op.number_as_is or not isinstance(x, (int, float, complex)) \
                or type(x) is int and op.promote == "compare" and _int_out_of_range(x, cnp):
            arrays.append(_scalar_array(x, cnp, at))
        else:
            arrays.append(x)
    f = op.impl.get(at) or op.resolve(at)
    if op.complex_kernel is not None and (compute.category == 3 or params):
        f = _complex_impl(op, at, f)
    try:
        r = f(*arrays, **params) if params else f(*arrays)
    except OverflowError:
        arrays = [_scalar_array(a, cnp, at) if isinstance(a, (int, float, complex)) else a
                  for a in arrays]
        r = f(*arrays, **params) if params else f(*arrays)
    except ValueError as e:
        if "broadcast" in str(e):
            raise _broadcast_error(op, args) from None
        raise
    if type(r) is not at:
        r = _dispatch.backends_by_type[at].xp.asarray(r)
    rnp = result.np
    if r.dtype != rnp:
        r = r.astype(rnp)
    if r.ndim > 1:  # NOTE [ Result strides ] in ember/_ops/_memory_format.py
        r = _follow(r, [x._data if isinstance(x, Tensor) else _ZERO_DIM for x in args])
    t = _new(Tensor)
    t._data = r
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    if _dispatch.record is not None:
        tensors = tuple(x for x in args if isinstance(x, Tensor))
        if _dispatch.needs_grad(tensors):
            _dispatch.record(op, _tensor_args(args), params or {}, t)
    if out is not None:
        return _dispatch.write_out(op.name, out, t, op.exact_out)
    return t


def _complex_impl(op, at, f):
    """``op.complex_kernel`` bound to the namespace of arrays of type ``at``; ``f`` (the op's
    resolved kernel) where a kernel registered for that backend or an adapting namespace (the
    meta device) must run instead."""
    backend = _dispatch.backends_by_type[at]
    if backend.name in op.overrides or hasattr(backend.xp, "__ember_kernel__"):
        return f
    return functools.partial(op.complex_kernel, backend.xp)


def _tensor_args(args):
    """Autograd sees tensors only: scalars become zero-dim constants the formulas can use."""
    return tuple(x if isinstance(x, Tensor) else _const(x) for x in args)


def _const(x):
    """A Python number as the zero-dim tensor a backward formula reads. It is marked as a
    wrapped number (PyTorch's term): a node saves it without calling saved-tensor hooks, as
    torch's nodes do (``_nodes.record``)."""
    t = _new(Tensor)
    t._data = np.asarray(x)
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    t._wrapped_number = True
    return t


def _clash_message(shapes):
    """torch's message for shapes that do not broadcast, or None: operands are broadcast one
    by one into the shape so far ("tensor a"), and the first clash from the right is named by
    its dimension in the result."""
    acc = tuple(shapes[0]) if shapes else ()
    for shape in shapes[1:]:
        n = max(len(acc), len(shape))
        a = (1,) * (n - len(acc)) + acc
        b = (1,) * (n - len(shape)) + tuple(shape)
        for i in range(n - 1, -1, -1):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return (f"The size of tensor a ({a[i]}) must match the size of tensor b "
                        f"({b[i]}) at non-singleton dimension {i}")
        acc = tuple(y if x == 1 else x for x, y in zip(a, b))
    return None


def _broadcast_error(op, args):
    shapes = [list(x._data.shape) for x in args if isinstance(x, Tensor)]
    message = _clash_message(shapes)
    if message is not None:
        return RuntimeError(message)
    return RuntimeError(
        f"{op.name}: the shapes of the operands {shapes} cannot be broadcast together "
        "(sizes must match or be 1 in each dimension, aligned from the right)")


def elementwise_inplace(op, self, args, params=None):
    """``self.op_(*args)``: compute in the promoted dtype and write into ``self``.

    PyTorch's rules: the result dtype must cast to self's dtype within its category, and the
    broadcast shape must equal self's shape.
    """
    if not isinstance(self, Tensor):
        raise _type_error(op, self)
    if _dispatch.intercept and _dispatch.state.modes and _dispatch.routes(op):
        return _dispatch.through_modes(op.inplace_handle(), (self,) + tuple(args),
                                       dict(params) if params else {})
    if op.check is not None:
        op.check((self,) + tuple(args))
    # with grad mode off nothing is recorded, so requires_grad operands (an optimizer's
    # parameters) take the direct path too
    if (self._rg or _any_rg(args)) and _dispatch.state.grad_enabled:
        if _dispatch.check_inplace is not None:
            _dispatch.check_inplace(self, op.name + "_")
        try:
            return _dispatch.commit_inplace_result(
                op.name + "_", self, lambda: elementwise(op, (self,) + tuple(args), params))
        except RuntimeError:
            _broadcast_first(op, self, args)
            raise
    _dispatch.check_overlap(op.name + "_", self)
    try:
        compute, result, first = promote(op, (self,) + tuple(args))
    except RuntimeError as e:
        _broadcast_first(op, self, args)
        _cast_first(op, e, self._data.dtype)
        raise
    sd = self._data
    sdt = _from_np[sd.dtype]
    if result is not sdt and not _dt.can_cast(result, sdt):
        _broadcast_first(op, self, args)
        raise RuntimeError(
            f"result type {result.scalar_name} can't be cast to the desired "
            f"output type {sdt.scalar_name}")
    at = type(sd)
    cnp = compute.np
    if len(args) == 1:
        cnp = _number_dtype(op, cnp, args[0])
    arrays = [sd if sd.dtype == cnp else sd.astype(cnp)]
    for x in args:
        if isinstance(x, Tensor):
            a = x._data
            if type(a) is not at:
                if a.ndim == 0 and type(a) is np.ndarray:  # a CPU scalar joins any device
                    a = _dispatch.backends_by_type[at].xp.asarray(a)
                else:
                    raise _dispatch.device_mismatch(op.name + "_", sd, a)
            if a.shape != sd.shape:
                _check_inplace_broadcast(op, sd.shape, a.shape)
            arrays.append(a if a.dtype == cnp else a.astype(cnp))
        elif cnp == _BF16 and not op.number_as_is or not isinstance(x, (int, float, complex)):
            arrays.append(_scalar_array(x, cnp, at))
        else:
            arrays.append(x)
    f = op.impl.get(at) or op.resolve(at)
    direct = arrays[0] is sd and op.ufunc is not None and result.np == sd.dtype
    if op.complex_kernel is not None and (compute.category == 3 or params):
        f = _complex_impl(op, at, f)
        direct = False
    try:
        if direct:
            f(*arrays, out=sd, **(params or {}))
        else:
            r = f(*arrays, **params) if params else f(*arrays)
            sd[...] = r
    except OverflowError:
        arrays = [_scalar_array(a, cnp, at) if isinstance(a, (int, float, complex)) else a
                  for a in arrays]
        r = f(*arrays, **params) if params else f(*arrays)
        sd[...] = r
    self._bump()
    return self


def _broadcast_first(op, self, args):
    """On an in-place op's dtype error: torch checks that the operands broadcast to self's
    shape first, so that error is raised instead where it applies (checked only once a
    dtype error is on its way, off the hot path)."""
    sshape = self._data.shape
    for x in args:
        if isinstance(x, Tensor) and x._data.shape != sshape:
            _check_inplace_broadcast(op, sshape, x._data.shape)


def _any_rg(args):
    for x in args:
        if isinstance(x, Tensor) and x._rg:
            return True
    return False


def _check_inplace_broadcast(op, shape, other):
    try:
        b = np.broadcast_shapes(shape, other)
    except ValueError:
        b = None
    if b != tuple(shape):
        if b is None:
            raise RuntimeError(_clash_message([shape, other]))
        raise RuntimeError(
            f"output with shape {list(shape)} doesn't match the broadcast shape {list(b)}")


# ------------------------------------------------------------------------------------------------
# fast paths


# NOTE [ Broadcast arithmetic in one loop ]
# NumPy's ``+ - * /`` with one operand broadcast -- a bias added to every row, a row of
# scales, an (N, C, 1, 1) factor over (N, C, H, W) -- runs about half the speed of the
# same-shape loop (its inner loops over a stride-0 operand do not vectorise as well):
# (1024, 1024) + (1024,) 141 us against 75 on one core, (1024, 1024) + (1024, 1) 179,
# (32768, 32) + (32,) 216, where PyTorch takes 75-90 us for all of them. For float32
# operands where the smaller one's non-1 axes are one contiguous block of the larger's
# axes, ``_broadcast_arith`` views the larger as (p, m, q) and the smaller as (m,), and
# runs one compiled loop (``arith_rows_into`` for q = 1, ``arith_planes_into`` otherwise;
# ``ember/_kernels/_numba.py``): one IEEE operation per element as NumPy makes it, so the
# same bits, at the same-shape loop's speed. From ``MIN_ELEMENTS`` the outer axis is cut
# over the threads (NOTE [ The caller's head start ] in ember/_parallel.py: every element
# is computed alone). Below ``_BCAST_MIN`` elements, short inner runs (2 <= q < 16, where
# neither loop vectorises) and a single-element operand, NumPy keeps the call.
_BCAST_MIN = 1 << 14
_BCAST_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}
_BCAST_FLIPPED = (0, 4, 2, 5)  # the op with the operands' roles swapped (b - a is 4, b / a 5)
_F32 = np.dtype(np.float32)


def _broadcast_arith(f, ad, bd):
    """``f(ad, bd)`` for float32 NumPy arrays where one operand broadcasts against the other
    along one block of axes (NOTE [ Broadcast arithmetic in one loop ]), or None when that
    does not apply (NumPy then runs the call, and raises for shapes that do not broadcast).
    """
    if ad.size < _BCAST_MIN and bd.size < _BCAST_MIN:
        return None
    op = _BCAST_OPS.get(f)
    if op is None or ad.dtype is not _F32 or bd.dtype is not _F32:
        return None
    if ad.size >= bd.size:
        big, small = ad, bd
    else:
        big, small, op = bd, ad, _BCAST_FLIPPED[op]
    n = big.size
    if n < _BCAST_MIN or small.size < 2 or big.ndim < small.ndim or \
            type(big) is not np.ndarray or type(small) is not np.ndarray or \
            not big.flags.c_contiguous or not small.flags.c_contiguous:
        return None
    shape = big.shape
    lead = big.ndim - small.ndim
    first = last = -1  # the block of axes where ``small`` is not 1
    for d, s in enumerate(small.shape, lead):
        if s != 1:
            if s != shape[d] or (last >= 0 and last != d):
                return None
            if first < 0:
                first = d
            last = d + 1
    m = small.size
    q = 1
    for s in shape[last:]:
        q *= s
    if m == n or 1 < q < 16:
        return None
    impl = _kernels._fast(big, small)
    if impl is None:
        return None
    p = n // (m * q)
    out = np.empty(shape, np.float32)
    b = small.reshape(-1)
    if q == 1:
        a3, o3 = big.reshape(p, m), out.reshape(p, m)
        kernel = impl.arith_rows_into
    else:
        a3, o3 = big.reshape(p, m, q), out.reshape(p, m, q)
        kernel = impl.arith_planes_into
    if p == 1:  # one plane (q > 1: m < n): cut along m instead
        def run(lo, hi):
            kernel(a3[:, lo:hi], b[lo:hi], o3[:, lo:hi], op)

        units = m
    else:
        def run(lo, hi):
            kernel(a3[lo:hi], b, o3[lo:hi], op)

        units = p
    if n < _PAR_MIN or not _parallel.split_on_threads(run, units, min_size=2, even=False):
        run(0, units)
    return out


def binary(op, a, b):
    """``a <op> b`` for the methods and functions: through the modes when any is on, else
    ``binary_fast``."""
    if _dispatch.intercept:
        return elementwise(op, (a, b))
    return binary_fast(op, a, b)


def binary_fast(op, a, b):
    """``a <op> b`` when no mode is on anywhere. See NOTE [ Hot path ]: the operators call it
    straight after their one test of ``_dispatch.slow``."""
    if isinstance(b, Tensor) and isinstance(a, Tensor):
        # ``_direct_binary`` inlined: this is the hottest path there is (NOTE [ Hot path ])
        ad = a._data
        bd = b._data
        at = ad.__class__
        if ad.dtype is bd.dtype and at is bd.__class__ and ad.dtype in op.direct:
            f = op.impl.get(at) or op.resolve(at)
            try:
                # 1048576 is _PAR_MIN as a literal: a global costs a look-up here
                if ad.shape != bd.shape and f is op.ufunc_np and \
                        (r := _broadcast_arith(f, ad, bd)) is not None:
                    pass  # NOTE [ Broadcast arithmetic in one loop ]
                elif ad.size < 1048576 or f is not op.ufunc_np or \
                        (r := ufunc_on_threads(f, ad, bd)) is None:
                    r = f(ad, bd)
            except ValueError:
                raise _broadcast_error(op, (a, b)) from None
            if r.__class__ is not at:
                r = _dispatch.backends_by_type[at].xp.asarray(r)
            if r.ndim > 1 and r.strides != ad.strides:
                r = _follow(r, (ad, bd))  # NOTE [ Result strides ]
            t = _new(Tensor)
            t._data = r
            t._rg = False
            t._grad_fn = None
            t._base = None
            t._vc = None
            if (a._rg or b._rg) and _dispatch.record is not None and _dispatch.state.grad_enabled:
                _dispatch.record_binary(op, a, b, t)
            return t
        if op.complex_kernel is not None and ad.dtype is bd.dtype and ad.dtype.kind == "c" \
                and at is np.ndarray and bd.__class__ is np.ndarray:
            # NOTE [ Complex add and sub ] in ember/_ops/arithmetic.py
            try:
                r = op.complex_kernel(np, ad, bd)
            except ValueError:
                raise _broadcast_error(op, (a, b)) from None
            return _binary_result(op, a, b, r, at)
        t = _with_zero_dim(op, a, b, ad, bd)
        if t is not None:
            return t
    elif isinstance(a, Tensor) and (b.__class__ is float or b.__class__ is int):
        t = _with_number(op, a, b, False)
        if t is not None:
            return t
    return elementwise(op, (a, b))


# NOTE [ Integer zero-dim operands ]
# ``x * 2`` saves the 2 as a wrapped int64 zero-dim tensor, so its backward is ``g * int64
# zero-dim``; ``x * ember.tensor(3)`` meets one directly. PyTorch's promotion keeps the
# float32/float64 dtype of the dimensioned operand and casts the integer (or bool) to it,
# which is what the general path's promotion does too: ``_with_zero_dim`` takes that cast
# itself for the four arithmetic ops, where the general path cost several times the
# kernel of a small gradient. Half-precision dtypes keep the general path (a number meets
# them in float32 opmath: NOTE [ A number in half-precision opmath ]), as do the other ops.
_INTEGER_CAST = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_ARITH = frozenset({"add", "sub", "mul", "div"})


def _with_zero_dim(op, a, b, ad, bd):
    """``a <op> b`` where one operand is a zero-dim tensor of the other's kind (float32
    values times a float64 zero-dim constant, as derivative formulas make from Python
    numbers): PyTorch's promotion keeps the dimensioned operand's dtype, so the zero-dim one
    is cast to it and the kernel runs directly, as the general path would after promoting.
    An integer or bool zero-dim operand beside float32/float64 values is cast the same way
    for the arithmetic ops (NOTE [ Integer zero-dim operands ]). None when that does not
    apply."""
    if ad.ndim:
        if bd.ndim or ad.dtype.kind not in "fc" or bd.dtype.kind != ad.dtype.kind and not (
                bd.dtype.kind in "iub" and ad.dtype in _INTEGER_CAST and op.name in _ARITH):
            return None
        dt = ad.dtype
        direct = op.direct_number  # NOTE [ A number in half-precision opmath ]
    elif bd.ndim and bd.dtype.kind in "fc" and (ad.dtype.kind == bd.dtype.kind or (
            ad.dtype.kind in "iub" and bd.dtype in _INTEGER_CAST and op.name in _ARITH)):
        dt = bd.dtype
        direct = op.direct
    else:
        return None
    at = ad.__class__
    if at is not np.ndarray or bd.__class__ is not np.ndarray or dt not in direct or \
            ad.size >= _PAR_MIN or bd.size >= _PAR_MIN:
        return None
    if op.check is not None:
        op.check((a, b))
    f = op.impl.get(at) or op.resolve(at)
    try:
        r = f(ad if ad.dtype is dt else ad.astype(dt), bd if bd.dtype is dt else bd.astype(dt))
    except ValueError:
        raise _broadcast_error(op, (a, b)) from None
    return _binary_result(op, a, b, r, at)


def _binary_result(op, a, b, r, at):
    """The Tensor of a binary kernel's result ``r`` (an array of type ``at``), recorded for
    autograd where ``a`` or ``b`` requires grad (``binary_fast`` inlines the same steps)."""
    if r.__class__ is not at:
        r = _dispatch.backends_by_type[at].xp.asarray(r)
    if r.ndim > 1:  # NOTE [ Result strides ] in ember/_ops/_memory_format.py
        r = _follow(r, (a._data, b._data))
    t = _new(Tensor)
    t._data = r
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    if (a._rg or b._rg) and _dispatch.record is not None and _dispatch.state.grad_enabled:
        _dispatch.record_binary(op, a, b, t)
    return t


def _direct_binary(op, a, b):
    """``a <op> b`` for two tensors of one dtype the op runs on directly (same device), or
    None when promotion or checks are needed."""
    ad = a._data
    bd = b._data
    at = ad.__class__
    if ad.dtype is bd.dtype and at is bd.__class__ and ad.dtype in op.direct:
        f = op.impl.get(at) or op.resolve(at)
        r = None
        if f is op.ufunc_np:
            if ad.shape != bd.shape:  # NOTE [ Broadcast arithmetic in one loop ]
                r = _broadcast_arith(f, ad, bd)
            elif ad.size >= _PAR_MIN:  # NOTE [ Threaded element-wise ops ]
                r = ufunc_on_threads(f, ad, bd)
        try:
            if r is None:
                r = f(ad, bd)
        except ValueError:
            raise _broadcast_error(op, (a, b)) from None
        return _binary_result(op, a, b, r, at)
    return None


def _with_number(op, a, n, reflected):
    """``a <op> n`` (``n <op> a`` when ``reflected``) for a Python int or float ``n``, straight
    to the kernel when ``a`` is floating, which keeps its dtype (NumPy's weak scalars agree);
    None when that path does not apply."""
    ad = a._data
    if ad.dtype.kind != "f" or ad.dtype not in op.direct_number:
        return None
    at = ad.__class__
    f = op.impl.get(at) or op.resolve(at)
    r = None
    if ad.size >= _PAR_MIN and f is op.ufunc_np:  # NOTE [ Threaded element-wise ops ]
        r = ufunc_on_threads(f, n, ad) if reflected else ufunc_on_threads(f, ad, n)
    if r is None:
        r = f(n, ad) if reflected else f(ad, n)
    if r.__class__ is not at:
        r = _dispatch.backends_by_type[at].xp.asarray(r)
    if r.ndim > 1 and r.strides != ad.strides:
        r = _follow(r, (ad, _ZERO_DIM))  # a number is a zero-dim operand to the rule
    t = _new(Tensor)
    t._data = r
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    if a._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
        if reflected:
            _dispatch.record_binary(op, _const(n), a, t)
        else:
            _dispatch.record_binary(op, a, _const(n), t)
    return t


def _direct_unary(op, a):
    """``op(a)`` for a tensor of a dtype the op runs on directly, or None."""
    ad = a._data
    if ad.dtype not in op.direct:
        return None
    at = ad.__class__
    f = op.impl.get(at) or op.resolve(at)
    r = None
    if ad.size >= _PAR_MIN and f is op.ufunc_np:  # NOTE [ Threaded element-wise ops ]
        r = ufunc_on_threads(f, ad)
    if r is None:
        r = f(ad)
    if r.__class__ is not at:
        r = _dispatch.backends_by_type[at].xp.asarray(r)
    if r.ndim > 1 and r.strides != ad.strides:
        r = _follow(r, (ad,))  # NOTE [ Result strides ] in ember/_ops/_memory_format.py
    t = _new(Tensor)
    t._data = r
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    if a._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
        _dispatch.record_unary(op, a, {}, t)
    return t


def rbinary(op, a, b):
    """Reflected operator ``b <op> a`` (``2 - t``)."""
    if not isinstance(b, _scalar_types):
        return NotImplemented
    return elementwise(op, (b, a))


def rbinary_fast(op, a, b):
    """``rbinary`` when no mode is on: a Python int or float ``b`` with a floating tensor
    ``a`` goes straight to the kernel (``1 - x``, ``2 * x``), as in ``binary_fast``."""
    if b.__class__ is float or b.__class__ is int:
        t = _with_number(op, a, b, True)
        if t is not None:
            return t
    return rbinary(op, a, b)


def unary(op, a):
    """``op(a)`` for one tensor input and no params."""
    if _dispatch.intercept and isinstance(a, Tensor):
        return elementwise(op, (a,))
    if isinstance(a, Tensor):
        t = _direct_unary(op, a)
        if t is not None:
            return t
    elif not isinstance(a, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(a).__name__}")
    return elementwise(op, (a,))
