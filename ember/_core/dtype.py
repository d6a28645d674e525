"""ember dtypes, PyTorch's type-promotion lattice, finfo/iinfo and the default dtype.

Every ember dtype wraps one NumPy dtype (bfloat16 and the float8 dtypes come from
``ml_dtypes``; the opaque bits/sub-byte/float4 dtypes are one-field structured dtypes, see
NOTE [ Opaque dtypes ]). Kernels work on NumPy dtypes; the public API speaks ember dtypes. The
two maps ``to_np`` / ``from_np`` convert, and both are plain dict look-ups so the hot path can
use them freely.

NOTE [ Type promotion ]
PyTorch, not NumPy, decides result dtypes. Operands fall in three priority groups:
tensors with dimensions, zero-dim tensors, and Python scalars ("wrapped numbers"). Each group
is promoted on its own; a lower-priority group only matters when its *category*
(bool < integer < floating < complex) is higher than the groups above it. A Python float
counts as the default dtype and a Python complex as the matching complex dtype. So
``int_tensor + 1.5`` is float32, ``float16_tensor + 1.5`` stays float16, and
``int32_tensor + int64_zero_dim`` stays int32. ``result_type`` implements it.
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "finfo", "iinfo", "get_default_dtype", "set_default_dtype", "promote_types",
    "can_cast", "result_type",
]

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3


# NOTE [ Printed module name ]
# dtypes, sizes and the Tensor class print with their module's name: ``ember.float32``,
# ``ember.Size([2, 3])``, ``<class 'ember.Tensor'>``. A program run as PyTorch (``python -m
# ember.compat.run``, or after ``ember.compat.install()``) prints ``torch.float32``,
# ``torch.Size([2, 3])`` and ``<class 'torch.Tensor'>`` instead, so its output reads exactly
# as under PyTorch.
printed_module = ["ember"]


class dtype:
    """A tensor element type (``ember.float32``, ``ember.int64``, ...).

    The instances are made once, here; use them rather than this constructor. Each has
    ``is_floating_point``, ``is_complex``, ``is_signed`` and ``itemsize``, and converts
    with ``to_real()``/``to_complex()``.

    Args:
        name (str): the name (``"float32"``).
        np_dtype: the NumPy dtype that stores it.
        category (int): 0 bool, 1 integer, 2 floating point, 3 complex.
        scalar_name (str): PyTorch's C++ name (``"Float"``), used in error messages.
        aliases (tuple of str): other names (``"float"``).

    Differences from PyTorch:
        Printing: a dtype prints with ember's module name (``ember.float32``) where PyTorch's prints
        ``torch.float32``; programs run with ``python -m ember.compat.run`` (or after
        ``ember.compat.install()``) print PyTorch's names.

    Example:
        >>> ember.float32.is_floating_point, ember.float32.itemsize
        (True, 4)
        >>> ember.tensor([1, 2]).dtype is ember.int64
        True
        >>> ember.complex64.to_real()
        ember.float32
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "category", "scalar_name", "_aliases")

    def __init__(self, name, np_dtype, category, scalar_name, aliases=()):
        self.name = name
        self.scalar_name = scalar_name  # PyTorch's C++ name, used in error messages
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_floating_point = category == FLOAT
        self.is_complex = category == COMPLEX
        self.is_signed = name not in ("bool", "uint8", "uint16", "uint32", "uint64")
        self._aliases = aliases

    def __repr__(self):
        return printed_module[0] + "." + self.name

    __str__ = __repr__

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self):
        return {complex32: float16, complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        return {float32: complex64, float64: complex128, float16: complex64,
                bfloat16: complex64}.get(self, self)

    @property
    def is_quantized(self):
        return self.name in _QUANTIZED_NAMES


bool_ = dtype("bool", np.bool_, BOOL, "Bool")
uint8 = dtype("uint8", np.uint8, INT, "Byte")
int8 = dtype("int8", np.int8, INT, "Char")
int16 = dtype("int16", np.int16, INT, "Short", ("short",))
int32 = dtype("int32", np.int32, INT, "Int", ("int",))
int64 = dtype("int64", np.int64, INT, "Long", ("long",))
float16 = dtype("float16", np.float16, FLOAT, "Half", ("half",))
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOAT, "BFloat16")
float32 = dtype("float32", np.float32, FLOAT, "Float", ("float",))
float64 = dtype("float64", np.float64, FLOAT, "Double", ("double",))
complex64 = dtype("complex64", np.complex64, COMPLEX, "ComplexFloat", ("cfloat",))
complex128 = dtype("complex128", np.complex128, COMPLEX, "ComplexDouble", ("cdouble",))

all_dtypes = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)

# PyTorch's "shell" unsigned dtypes: tensors of them can be made, cast and printed, but they
# do not promote with other integer dtypes. They stay out of ``all_dtypes`` (the dtypes every
# op supports).
uint16 = dtype("uint16", np.uint16, INT, "UInt16")
uint32 = dtype("uint32", np.uint32, INT, "UInt32")
uint64 = dtype("uint64", np.uint64, INT, "UInt64")
shell_dtypes = (uint16, uint32, uint64)

# The 8-bit floats (NOTE [ Float8 dtypes ]), stored as ``ml_dtypes`` arrays like bfloat16. They
# stay out of ``all_dtypes``: few ops accept them.
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOAT, "Float8_e4m3fn")
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOAT, "Float8_e4m3fnuz")
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, FLOAT, "Float8_e5m2")
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOAT, "Float8_e5m2fnuz")
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOAT, "Float8_e8m0fnu")
float8_e8m0fnu.is_signed = False  # exponent bits only: no sign, no zero
float8_dtypes = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
_FLOAT8_NP = {d.np: d for d in float8_dtypes}

# NOTE [ Float8 dtypes ]
# PyTorch's float8 dtypes are storage formats: tensors of them can be made, copied, viewed,
# indexed, concatenated, saved and cast, but almost no arithmetic runs on them on the CPU
# (``float8_op_allowed`` lists what does) and they promote with no other dtype. Casting *to*
# them follows PyTorch, which differs from ml_dtypes' casts in three places (``to_float8``):
# float8_e4m3fn saturates out-of-range values and infinities to +-448 instead of NaN;
# float8_e5m2 writes NaN as 0x7f / 0xff; float8_e8m0fnu ignores the sign and sends zero to
# its smallest value 2**-127. Casting *from* them is exact.


def to_float8(a, np_dtype):
    """``a`` (a NumPy array) cast to the float8 NumPy dtype ``np_dtype`` by PyTorch's rules
    (NOTE [ Float8 dtypes ])."""
    if a.dtype.kind not in "fc" or a.dtype in _FLOAT8_NP:
        a = a.astype(np.float32)
    elif a.dtype.kind == "c":
        a = a.real
    name = _FLOAT8_NP[np_dtype].name
    with np.errstate(invalid="ignore", over="ignore"):
        if name == "float8_e8m0fnu":
            out = np.abs(a).astype(np_dtype)
            out[a == 0] = np.uint8(0).view(np_dtype)
            return out
        out = a.astype(np_dtype)
    if name == "float8_e4m3fn":
        overflow = np.isnan(out) & ~np.isnan(a)
        if overflow.any():
            out[overflow] = np.copysign(np.float32(448.0), a[overflow]).astype(np_dtype)
    elif name == "float8_e5m2":
        nan = np.isnan(a)
        if nan.any():
            out.view(np.uint8)[nan] |= 0x7F
    return out


def refuse_no_kernel(t, kernel):
    """Raise PyTorch's NotImplementedError when tensor ``t`` is float8 or opaque: the op
    (PyTorch's kernel name ``kernel``) has no kernel for it (NOTE [ Float8 dtypes ], NOTE
    [ Opaque dtypes ])."""
    d = _NO_MATH_NP.get(t._data.dtype)
    if d is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


def float8_op_allowed(op_name):
    """Whether PyTorch runs the op ``op_name`` on float8 CPU tensors."""
    return op_name in _FLOAT8_OPS


#: ops PyTorch runs on float8 CPU tensors (the storage-only ops aside, which run on any dtype)
_FLOAT8_OPS = frozenset({"mul", "abs", "absolute", "eq", "ne", "isnan", "any", "all",
                         "where", "mm"})

# Quantized dtypes (NOTE [ Quantized tensors ] in ember/ao/_qtensor.py): names and storage
# types only. They stay out of ``to_np`` and ``all_dtypes``, so no ordinary op accepts them;
# ``from_np`` learns them from ember/ao/_qtensor.py, keyed by the tags its arrays report.
_QUANTIZED_NAMES = frozenset({"qint8", "quint8", "qint32", "quint4x2", "quint2x4"})
qint8 = dtype("qint8", np.int8, INT, "QInt8")
quint8 = dtype("quint8", np.uint8, INT, "QUInt8")
qint32 = dtype("qint32", np.int32, INT, "QInt32")
quint4x2 = dtype("quint4x2", np.uint8, INT, "QUInt4x2")
quint2x4 = dtype("quint2x4", np.uint8, INT, "QUInt2x4")
quantized_dtypes = (qint8, quint8, qint32, quint4x2, quint2x4)
quint8.is_signed = quint4x2.is_signed = quint2x4.is_signed = False

# NOTE [ Opaque dtypes ]
# PyTorch's bit containers (bits8, bits16, bits1x8, bits2x4, bits4x2), sub-byte integers
# (int1..int7, uint1..uint7) and packed float4_e2m1fn_x2 are names for bytes no CPU kernel
# reads: tensors of them can be made empty or zero, reshaped, sliced, concatenated and viewed
# to and from uint8, and every op that reads a value raises. Their arrays hold a one-field
# NumPy structured dtype named after the dtype, so each has a NumPy dtype of its own.


def _opaque(name, scalar_name, itemsize=1, category=INT, is_signed=False):
    d = dtype(name, np.dtype([(name, f"<u{itemsize}")]), category, scalar_name)
    d.is_signed = is_signed
    return d


bits8 = _opaque("bits8", "Bits8")
bits16 = _opaque("bits16", "Bits16", 2)
bits1x8 = _opaque("bits1x8", "Bits1x8")
bits2x4 = _opaque("bits2x4", "Bits2x4")
bits4x2 = _opaque("bits4x2", "Bits4x2")
_SUB_BYTE = tuple(_opaque(f"int{i}", f"Int{i}", is_signed=True) for i in range(1, 8)) + \
    tuple(_opaque(f"uint{i}", f"UInt{i}") for i in range(1, 8))
int1, int2, int3, int4, int5, int6, int7, uint1, uint2, uint3, uint4, uint5, uint6, uint7 = \
    _SUB_BYTE
float4_e2m1fn_x2 = _opaque("float4_e2m1fn_x2", "Float4_e2m1fn_x2", category=FLOAT,
                           is_signed=True)
# complex32 (chalf, two float16 halves): NumPy has no such type, so ember only names it and
# holds its bytes; libraries list it among the complex dtypes they accept
complex32 = _opaque("complex32", "ComplexHalf", 4, category=COMPLEX, is_signed=True)
complex32._aliases = ("chalf",)
opaque_dtypes = (bits8, bits16, bits1x8, bits2x4, bits4x2) + _SUB_BYTE + \
    (float4_e2m1fn_x2, complex32)
_BITS = frozenset((bits8, bits16, bits1x8, bits2x4, bits4x2))
_OPAQUE_NP = {d.np: d for d in opaque_dtypes}
#: the NumPy dtypes of the float8 and opaque dtypes: few or no ops read them
_NO_MATH_NP = {**_FLOAT8_NP, **_OPAQUE_NP}


def refuse_opaque(t, kernel):
    """Raise PyTorch's NotImplementedError when tensor ``t`` holds an opaque dtype (NOTE
    [ Opaque dtypes ]): the op (PyTorch's kernel name ``kernel``) reads values."""
    d = _OPAQUE_NP.get(t._data.dtype)
    if d is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


#: ember dtype -> NumPy dtype, and back. NumPy dtypes hash by value, so any equal dtype hits.
to_np = {d: d.np for d in all_dtypes + shell_dtypes + float8_dtypes + opaque_dtypes}
from_np = {d.np: d for d in all_dtypes + shell_dtypes + float8_dtypes + opaque_dtypes}

_by_name = {}
for _d in all_dtypes + shell_dtypes + float8_dtypes + opaque_dtypes:
    _by_name[_d.name] = _d
    for _a in _d._aliases:
        _by_name[_a] = _d
for _d in quantized_dtypes:
    _by_name[_d.name] = _d


def _dtype_by_name(name):
    return _by_name[name]


def lookup(spec):
    """Turn anything dtype-like (ember dtype, NumPy dtype or type, Python type, name) into an
    ember dtype; raise TypeError for anything else."""
    if spec.__class__ is dtype:
        return spec
    if spec is builtins.float:
        return float64
    if spec is builtins.int:
        return int64
    if spec is builtins.bool:
        return bool_
    if spec is builtins.complex:
        return complex128
    if isinstance(spec, str):
        name = spec[6:] if spec.startswith("torch.") else spec
        name = name[6:] if name.startswith("ember.") else name
        if name in _by_name:
            return _by_name[name]
        raise TypeError(f"invalid dtype name {spec!r}")
    try:
        return from_np[np.dtype(spec)]
    except (TypeError, KeyError):
        raise TypeError(f"expected an ember dtype, got {spec!r} ({type(spec).__name__})") from None


# --------------------------------------------------------------------------------------------
# default dtype

_default = [float32]


def get_default_dtype() -> dtype:
    """The floating dtype used for Python floats and new floating tensors (float32 at start).

    Returns:
        ember.dtype: the current default floating dtype.

    Example:
        >>> ember.get_default_dtype()
        ember.float32
        >>> ember.tensor([1.5]).dtype
        ember.float32
    """
    return _default[0]


def set_default_dtype(d) -> None:
    """Set the floating dtype of Python floats and new floating tensors.

    The complex default follows it: complex128 for float64, complex64 otherwise.

    Args:
        d (ember.dtype): float16, bfloat16, float32 or float64; others raise TypeError.

    Returns:
        None.

    Example:
        >>> ember.set_default_dtype(ember.float64)
        >>> ember.tensor([1.5]).dtype, ember.tensor([1j]).dtype
        (ember.float64, ember.complex128)
        >>> ember.set_default_dtype(ember.float32)
    """
    d = lookup(d)
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d
    _result_cache.clear()


def default_complex():
    return complex128 if _default[0] is float64 else complex64


# --------------------------------------------------------------------------------------------
# promotion

_INT_ORDER = {uint8: 0, int8: 0, int16: 1, int32: 2, int64: 3}
_FLOAT_ORDER = {float16: 0, bfloat16: 0, float32: 1, float64: 2}


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to, by PyTorch's lattice.

    Args:
        a (ember.dtype): the first dtype.
        b (ember.dtype): the second dtype.

    Returns:
        ember.dtype: the promoted dtype (bool < integers < floats < complex; uint8 with a
        signed integer widens to a signed type).

    Example:
        >>> ember.promote_types(ember.int32, ember.float16)
        ember.float16
        >>> ember.promote_types(ember.uint8, ember.int8)
        ember.int16
    """
    a, b = lookup(a), lookup(b)
    if a is b:
        return a
    if a.np in _FLOAT8_NP or b.np in _FLOAT8_NP:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote "
                           f"{a.scalar_name} and {b.scalar_name}")
    if a.np in _OPAQUE_NP or b.np in _OPAQUE_NP:
        raise RuntimeError(f"Promotion from {a.scalar_name} and {b.scalar_name} is unsupported.")
    if a in shell_dtypes or b in shell_dtypes:
        # NOTE [ Shell unsigned promotion ]: PyTorch promotes uint16/32/64 only with a
        # floating dtype (which wins); with bool, complex or another integer it refuses
        if a.category == FLOAT or b.category == FLOAT:
            return a if a.category == FLOAT else b
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {a.scalar_name} and {b.scalar_name}")
    ca, cb = a.category, b.category
    swapped = ca < cb
    if swapped:
        a, b, ca, cb = b, a, cb, ca
    # now a has the higher (or equal) category
    if ca == BOOL:
        return a
    if ca == COMPLEX:
        if cb == COMPLEX:
            return complex128 if complex128 in (a, b) else complex64
        if b is float64:
            return complex128
        return a
    if ca == FLOAT:
        if cb != FLOAT:
            return a
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if _FLOAT_ORDER[a] >= _FLOAT_ORDER[b] else b
    if cb == BOOL:
        return a
    # two integers: uint8 with a signed type needs a wider signed type
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if _INT_ORDER[a] >= _INT_ORDER[b] else b


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether a cast is allowed by PyTorch's same-kind rule: never to a lower category.

    Args:
        from_ (ember.dtype): the source dtype.
        to (ember.dtype): the target dtype.

    Returns:
        bool: False when ``to`` is a lower category (float to integer, complex to float...).

    Example:
        >>> ember.can_cast(ember.int32, ember.float64), ember.can_cast(ember.float64, ember.int32)
        (True, False)
    """
    from_, to = lookup(from_), lookup(to)
    return from_.category <= to.category


def _combine(higher, lower):
    """Merge the promotion result of a lower-priority group into a higher one."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool_ or lower.category == FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value):
    """The dtype a Python scalar stands for when it meets tensors (see NOTE [ Type promotion ])."""
    t = type(value)
    if t is builtins.bool or t is np.bool_:
        return bool_
    if t is builtins.int or isinstance(value, np.integer):
        return int64
    if t is builtins.float or isinstance(value, np.floating):
        return _default[0]
    if t is builtins.complex or isinstance(value, np.complexfloating):
        return default_complex()
    raise TypeError(f"expected a Tensor or a number, got {t.__name__}")


_result_cache: dict = {}


def result_type_of(dims, zero_dims, scalars):
    """Promote three priority groups of dtypes (tuples of ember dtypes) PyTorch's way."""
    key = (dims, zero_dims, scalars)
    r = _result_cache.get(key)
    if r is None:
        groups = []
        for group in key:
            acc = None
            for d in group:
                acc = d if acc is None else promote_types(acc, d)
            groups.append(acc)
        r = _combine(groups[0], _combine(groups[1], groups[2]))
        _result_cache[key] = r
    return r


def result_type(*operands) -> dtype:
    """The dtype an element-wise op on ``operands`` produces (PyTorch's type promotion).

    Tensors with dimensions outrank zero-dim tensors, which outrank Python numbers, within
    the same category (NOTE [ Type promotion ]).

    Args:
        *operands (Tensor or Number): the operands.

    Returns:
        ember.dtype: the result dtype.

    Example:
        >>> ember.result_type(ember.tensor([1, 2]), 1.0)
        ember.float32
        >>> ember.result_type(ember.tensor([1], dtype=ember.int8), ember.tensor(1000))
        ember.int8
    """
    dims, zero, scal = [], [], []
    for x in operands:
        d = getattr(x, "_data", None)
        if d is not None:
            (dims if d.ndim else zero).append(from_np[d.dtype])
        else:
            scal.append(scalar_dtype(x))
    return result_type_of(tuple(dims), tuple(zero), tuple(scal))


# --------------------------------------------------------------------------------------------
# finfo / iinfo


class finfo:
    """Machine limits of a floating dtype, as ``torch.finfo``.

    Attributes: ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``),
    ``resolution`` and ``dtype`` (its name). A complex dtype gives its real dtype's limits.

    Args:
        type (ember.dtype, optional): a floating or complex dtype. Default: the default dtype.

    Example:
        >>> ember.finfo(ember.float16).max
        65504.0
        >>> ember.finfo().eps
        1.1920928955078125e-07
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    def __init__(self, type=None):
        d = _default[0] if type is None else lookup(type)
        if d.category == COMPLEX:
            d = d.to_real()
        if d.category != FLOAT or d.np in _OPAQUE_NP:
            raise TypeError(f"finfo: expected a floating point dtype, got {d}")
        is_ml = d is bfloat16 or d.np in _FLOAT8_NP
        info = ml_dtypes.finfo(d.np) if is_ml else np.finfo(d.np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        # 10**-precision as a Python float (NumPy's is rounded to the dtype: 0.0100098)
        self.resolution = 10.0 ** -int(info.precision)
        if d.np in _FLOAT8_NP:
            # PyTorch's figures: resolution 10**-digits with no whole decimal digit, and
            # float8_e5m2fnuz's eps one step finer than ml_dtypes'
            self.resolution = 1.0
            if d is float8_e5m2fnuz:
                self.eps = 0.125
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer (or bool) dtype, as ``torch.iinfo``: ``bits``, ``min``, ``max``,
    ``dtype``.

    Args:
        type (ember.dtype): an integer or bool dtype.

    Example:
        >>> ember.iinfo(ember.int8).min, ember.iinfo(ember.int8).max
        (-128, 127)
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    def __init__(self, type):
        d = lookup(type)
        if d.category > INT or d.np in _OPAQUE_NP:
            raise TypeError(f"iinfo: expected an integer dtype, got {d}")
        if d is bool_:
            self.bits, self.min, self.max = 8, 0, 1
        else:
            info = np.iinfo(d.np)
            self.bits, self.min, self.max = info.bits, int(info.min), int(info.max)
        self.dtype = d.name

    def __repr__(self):
        # printed in the ``%g`` form torch prints (six significant digits), the values
        # themselves stay exact ints
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
