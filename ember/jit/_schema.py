"""Operator schemas as Python sees them in torch (``torch.parse_schema`` giving a
``torch.FunctionSchema`` of ``torch.Argument`` objects typed with TorchScript's types).

The parsing is ember's own schema parser (``ember/_library/schema.py``, NOTE [ Schemas ]);
this module presents its result in torch's public shape: each argument's ``type`` is a type
object of NOTE [ JIT types ], ``real_type`` keeps ``SymInt``/``Layout``/``ScalarType`` where
``type`` says ``int``, and defaults of enum-like arguments are their integer codes.
"""

from __future__ import annotations

from .._core import dtype as _dt
from .._core import layout as _layout
from .._library import schema as _schema
from . import _types as T

__all__ = ["Argument", "FunctionSchema", "parse_schema"]

# ScalarType codes, in c10's order (defaults such as ``ScalarType dtype=float`` are these)
_SCALAR_CODES = {name: i for i, name in enumerate((
    "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32",
    "complex64", "complex128", "bool", "qint8", "quint8", "qint32", "bfloat16"))}
_LAYOUT_CODES = {"strided": 0, "sparse_coo": 1, "sparse_csr": 2, "sparse_csc": 3,
                 "sparse_bsr": 4, "sparse_bsc": 5}
_MEMORY_FORMAT_CODES = {"contiguous_format": 0, "preserve_format": 1, "channels_last": 2,
                        "channels_last_3d": 3}
# schema bases that TorchScript passes as ints, and those with no class of their own
_AS_INT = ("Layout", "ScalarType", "MemoryFormat")
_SIMPLE = {"Tensor": T.TensorType, "int": T.IntType, "float": T.FloatType, "bool": T.BoolType,
           "str": T.StringType, "Scalar": T.NumberType, "Device": T.DeviceObjType,
           "complex": T.ComplexType, "Any": T.AnyType, "Stream": T.StreamObjType,
           "SymFloat": T.FloatType, "SymBool": T.BoolType}


def _base_types(base: str) -> tuple[T.Type, T.Type]:
    """(type, real_type) of a schema base type."""
    if base == "SymInt":
        return T.IntType.get(), T.SymIntType.get()
    if base in _AS_INT:
        return T.IntType.get(), T._NamedType(base)
    if base in _SIMPLE:
        t = _SIMPLE[base].get()
        return t, t
    named = T._NamedType(base)
    return named, named


def _types_of(st: _schema.SchemaType) -> tuple[T.Type, T.Type]:
    t, real = _base_types(st.base)
    wrap = []
    if st.elem_optional:
        wrap.append(T.OptionalType)
    if st.is_list:
        wrap.append(T.ListType)
    if st.optional:
        wrap.append(T.OptionalType)
    for w in wrap:
        t, real = w(t), w(real)
    return t, real


def _default_of(value, st: _schema.SchemaType):
    """A parsed default in torch's form: enum-like values as their integer codes."""
    if isinstance(value, _dt.dtype):
        return _SCALAR_CODES.get(value.name, value)
    if isinstance(value, _layout.layout):
        return _LAYOUT_CODES.get(str(value).split(".")[-1], value)
    if isinstance(value, _layout.memory_format):
        return _MEMORY_FORMAT_CODES.get(str(value).split(".")[-1], value)
    return value


class AliasInfo:
    """What an alias annotation (``Tensor(a!)``) says about an argument.

    Args:
        is_write (bool): whether the op writes to the value.
        before_set (set of str): the alias sets before the op.
        after_set (set of str): the alias sets after it.

    Returns:
        AliasInfo: the record.

    Example::

        >>> a = ember.parse_schema("f(Tensor(a!) x) -> ()").arguments[0].alias_info
        >>> a.is_write, a.before_set
        (True, {'a'})
    """

    def __init__(self, is_write: bool, before_set, after_set):
        self.is_write = bool(is_write)
        self.before_set = set(before_set)
        self.after_set = set(after_set)

    def __repr__(self):
        return (f"AliasInfo(is_write={self.is_write}, before_set={self.before_set}, "
                f"after_set={self.after_set})")


class Argument:
    """One argument (or result) of an operator schema.

    Args:
        name (str): the argument's name (empty for an unnamed result).
        type (Type): its TorchScript type.
        N (int, optional): the length of a fixed-size list (``int[2]``).
        default_value (optional): the default; None with no default.
        kwarg_only (bool): whether it follows ``*`` in the schema.
        alias_info (AliasInfo, optional): its alias annotation.

    Returns:
        Argument: the record; ``real_type`` is ``type`` unless made by ``parse_schema``.

    Example::

        >>> a = ember.parse_schema("f(int[2] size=1) -> Tensor").arguments[0]
        >>> str(a.type), a.N, a.default_value, a.has_default_value()
        ('List[int]', 2, [1, 1], True)
    """

    def __init__(self, name: str, type: T.Type, N=None, default_value=None,  # noqa: A002, N803
                 kwarg_only: bool = False, alias_info: AliasInfo | None = None):
        if not isinstance(type, T.Type):
            raise TypeError("Argument(): incompatible constructor arguments: type must be an "
                            f"ember Type, got {builtin_type(type).__name__}")
        self.name = name
        self.type = self.real_type = type
        self.N = N
        self.default_value = default_value
        self.kwarg_only = bool(kwarg_only)
        self.alias_info = alias_info
        self._has_default = default_value is not None
        self._text = None

    @classmethod
    def _from_parsed(cls, a: _schema.Argument, is_return: bool = False) -> Argument:
        t, real = _types_of(a.type)
        info = None
        if a.type.alias is not None:
            sets = {a.type.alias_set} if a.type.alias_set not in (None, "") else set()
            info = AliasInfo(a.type.is_write, sets, sets)
        has = a.has_default_value()
        out = cls(a.name, t, a.type.size, _default_of(a.default_value, a.type) if has else None,
                  a.kwarg_only, info)
        out.real_type = real
        out._has_default = has
        out._is_return = is_return
        out._text = str(a)
        return out

    def has_default_value(self) -> bool:
        """Whether the argument has a default value."""
        return self._has_default

    @property
    def is_write(self) -> bool:
        """Whether the op writes to this argument (``Tensor(a!)``)."""
        return self.alias_info is not None and self.alias_info.is_write

    @property
    def is_out(self) -> bool:
        """Whether this is an ``out=`` argument: keyword-only and written to."""
        return self.kwarg_only and self.is_write and not getattr(self, "_is_return", False)

    def __str__(self):
        if self._text is not None:
            return self._text
        return f"{self.type} {self.name}".strip()

    def __repr__(self):
        return f"Argument({str(self)!r})"


builtin_type = type


class FunctionSchema:
    """An operator's schema: its name, overload, arguments and results.

    Args:
        name (str): the qualified name (``aten::add``).
        overload_name (str): the overload (``Tensor``), or ``""``.
        arguments (list of Argument): the arguments.
        returns (list of Argument): the results.
        is_vararg (bool): whether it takes extra arguments.
        is_varret (bool): whether it returns extra results.

    Returns:
        FunctionSchema: the schema; ``str()`` gives the schema text.

    Example::

        >>> s = ember.parse_schema("aten::add.Tensor(Tensor self, Tensor other) -> Tensor")
        >>> s.name, s.overload_name, [a.name for a in s.arguments]
        ('aten::add', 'Tensor', ['self', 'other'])
    """

    __hash__ = object.__hash__

    def __init__(self, name: str, overload_name: str, arguments, returns,
                 is_vararg: bool = False, is_varret: bool = False):
        self.name = name
        self.overload_name = overload_name
        self.arguments = list(arguments)
        self.returns = list(returns)
        self.is_vararg = bool(is_vararg)
        self.is_varret = bool(is_varret)
        self._text = None

    @property
    def is_mutable(self) -> bool:
        """Whether the op writes to any of its arguments."""
        return any(a.is_write for a in self.arguments)

    def __str__(self):
        if self._text is not None:
            return self._text
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = [str(r) for r in self.returns]
        out = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
        return f"{name}({', '.join(parts)}) -> {out}"

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, FunctionSchema) and str(self) == str(other)

    def is_backward_compatible_with(self, old: FunctionSchema) -> bool:
        """Whether callers written against ``old`` still work with this schema: same name,
        overload and results; ``old``'s arguments kept in place with types at least as
        wide; every added argument has a default.

        Args:
            old (FunctionSchema): the earlier schema.

        Returns:
            bool: True when this schema can replace ``old``.
        """
        if not isinstance(old, FunctionSchema):
            raise TypeError("is_backward_compatible_with(): expected a FunctionSchema, got "
                            f"{type(old).__name__}")
        if (self.name, self.overload_name) != (old.name, old.overload_name):
            return False
        if len(self.returns) != len(old.returns) or any(
                a.type != b.type for a, b in zip(self.returns, old.returns)):
            return False
        new_pos = [a for a in self.arguments if not a.kwarg_only]
        old_pos = [a for a in old.arguments if not a.kwarg_only]
        if len(new_pos) < len(old_pos):
            return False
        for n, o in zip(new_pos, old_pos):
            if n.name != o.name or not o.type.isSubtypeOf(n.type):
                return False
        if any(not a.has_default_value() for a in new_pos[len(old_pos):]):
            return False
        new_kw = {a.name: a for a in self.arguments if a.kwarg_only}
        old_kw = {a.name: a for a in old.arguments if a.kwarg_only}
        for name, o in old_kw.items():
            n = new_kw.get(name)
            if n is None or not o.type.isSubtypeOf(n.type):
                return False
        return all(a.has_default_value() for k, a in new_kw.items() if k not in old_kw)


def parse_schema(schema: str) -> FunctionSchema:
    """Parse an operator schema string into a ``FunctionSchema``.

    Args:
        schema (str): ``"ns::name.overload(Type arg, ..., *, Type kwarg=default) -> Type"``.

    Returns:
        FunctionSchema: with arguments typed as TorchScript types (NOTE [ JIT types ]);
        RuntimeError pointing at the fault for a malformed schema.

    Example::

        >>> s = ember.parse_schema("aten::add.Tensor(Tensor self, Tensor other, *, "
        ...                        "Scalar alpha=1) -> Tensor")
        >>> str(s.arguments[2].type), s.arguments[2].kwarg_only, s.arguments[2].default_value
        ('number', True, 1)
    """
    if not isinstance(schema, str):
        raise TypeError("parse_schema(): incompatible function arguments: expected a str, "
                        f"got {type(schema).__name__}")
    parsed = _schema.parse_schema(schema)
    out = FunctionSchema(parsed.name, parsed.overload_name,
                         [Argument._from_parsed(a) for a in parsed.arguments],
                         [Argument._from_parsed(r, True) for r in parsed.returns])
    out._text = str(parsed)
    return out
