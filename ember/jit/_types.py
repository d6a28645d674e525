"""TorchScript's type objects, as ``torch.IntType``, ``torch.ListType``, ``torch.TensorType``
and their siblings present them to Python: what operator schemas (``torch.parse_schema``)
and type-inspecting code read.

NOTE [ JIT types ]
ember has no TorchScript compiler (NOTE [ Eager TorchScript ]), but schemas and tools that
inspect them speak in these types. Each type is an immutable value: ``str`` is its annotation
(``List[int]``, ``Optional[Tensor]``), ``kind()`` its class name, ``==`` compares structure.
Subtyping follows TorchScript's rules: ``int``, ``float`` and ``complex`` are numbers,
``NoneType`` fits every ``Optional``, everything fits ``Any``, tuples and futures are
covariant while lists and dicts are invariant. A union is flattened, loses duplicates and
subtypes of its other members, and is ordered by TorchScript's kind order (``_KIND_ORDER``);
a union of one type and ``NoneType`` is an Optional (``kind()`` says ``OptionalType``).
"""

from __future__ import annotations

__all__ = [
    "AnyType", "AwaitType", "BoolType", "ComplexType", "DeviceObjType", "DictType", "EnumType",
    "FloatType", "FutureType", "InferredType", "IntType", "ListType", "NoneType", "NumberType",
    "OptionalType", "PyObjectType", "RRefType", "StreamObjType", "StringType", "SymBoolType",
    "SymIntType", "TensorType", "TupleType", "Type", "UnionType", "unify_type_list",
]

# TorchScript's order of type kinds (unions list their members in it)
_KIND_ORDER = {k: i for i, k in enumerate((
    "AnyType", "EnumType", "AnyEnumType", "TensorType", "StorageType", "TupleType", "ListType",
    "DictType", "NumberType", "FloatType", "ComplexType", "FutureType", "AwaitType", "RRefType",
    "IntType", "NoneType", "StringType", "GeneratorType", "QuantizerType", "BoolType",
    "OptionalType", "VarType", "DeviceObjType", "StreamObjType", "FunctionType", "ClassType",
    "PyObjectType", "CapsuleType", "InterfaceType", "QSchemeType", "ScalarTypeType",
    "LayoutType", "MemoryFormatType", "AnyListType", "AnyTupleType", "AnyClassType",
    "SymIntType", "SymFloatType", "SymBoolType", "UnionType", "DynamicType"))}


def _no_constructor(cls):
    return TypeError(f"ember._C.{cls.__name__}: No constructor defined!")


def _check_type(owner: str, t) -> None:
    if not isinstance(t, Type):
        raise TypeError(f"{owner}(): incompatible constructor arguments: expected a "
                        f"ember._C.Type, got {type(t).__name__}")


class Type:
    """The base of TorchScript's types; its subclasses are the types themselves.

    Types compare by structure (``ListType(IntType.get()) == ListType(IntType.get())``),
    print as annotations, and answer ``isSubtypeOf``.

    Args:
        none: the base class has no constructor.

    Returns:
        Type: made only through a subclass (``IntType.get()``, ``ListType(t)`` ...).

    Example::

        >>> t = ember.ListType(ember.IntType.get())
        >>> str(t), t.kind(), isinstance(t, ember.Type)
        ('List[int]', 'ListType', True)
    """

    __hash__ = None  # as torch's: types are compared, not hashed

    def __init__(self, *args, **kwargs):
        raise _no_constructor(type(self))

    # -- what every type answers -------------------------------------------------------------

    def kind(self) -> str:
        """The type's kind, its class name (``'IntType'``)."""
        return type(self).__name__

    def _key(self):
        return (self.kind(),)

    def __eq__(self, other):
        return isinstance(other, Type) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def str(self) -> str:  # noqa: A003  (torch's method name)
        """The type as an annotation string (``'Optional[Tensor]'``)."""
        return self.annotation_str

    @property
    def annotation_str(self) -> str:
        """The type as Python annotation text."""
        return self._name

    def __str__(self):
        return self.annotation_str

    __repr__ = __str__

    def containedTypes(self) -> list:  # noqa: N802  (torch's name)
        """The types inside this one (a list's element, a dict's key and value ...)."""
        return []

    def is_interface_type(self) -> bool:
        """False: ember has no TorchScript interfaces."""
        return False

    def isSubtypeOf(self, other: Type) -> bool:  # noqa: N802
        """Whether a value of this type may stand where ``other`` is expected.

        Args:
            other (Type): the expected type.

        Returns:
            bool: by TorchScript's rules (NOTE [ JIT types ]).
        """
        _check_type("isSubtypeOf", other)
        if self == other or isinstance(other, AnyType):
            return True
        if isinstance(other, _UnionBase):
            return any(self.isSubtypeOf(m) for m in other._members)
        return self._sub(other)

    def _sub(self, other) -> bool:
        return False

    # -- tensor queries (only TensorType has answers) ----------------------------------------

    def _not_tensor(self, what):
        raise RuntimeError(f"{what}() is only defined for TensorType, not {self.kind()} "
                           f"({self})")

    def dtype(self):
        """The dtype of a TensorType (RuntimeError for other types)."""
        self._not_tensor("dtype")

    def scalarType(self):  # noqa: N802
        """The scalar type name of a TensorType (RuntimeError for other types)."""
        self._not_tensor("scalarType")

    def sizes(self):
        """The sizes of a TensorType (RuntimeError for other types)."""
        self._not_tensor("sizes")

    def symbolic_sizes(self):
        """The sizes of a TensorType (RuntimeError for other types)."""
        self._not_tensor("symbolic_sizes")

    def varyingSizes(self):  # noqa: N802
        """The sizes of a TensorType (RuntimeError for other types)."""
        self._not_tensor("varyingSizes")

    def strides(self):
        """The strides of a TensorType (RuntimeError for other types)."""
        self._not_tensor("strides")

    def dim(self):
        """The number of dims of a TensorType (RuntimeError for other types)."""
        self._not_tensor("dim")

    def device(self):
        """The device of a TensorType (RuntimeError for other types)."""
        self._not_tensor("device")

    def requires_grad(self):
        """Whether a TensorType requires grad (RuntimeError for other types)."""
        self._not_tensor("requires_grad")

    def undefined(self):
        """Whether a TensorType is of an undefined tensor (RuntimeError for other types)."""
        self._not_tensor("undefined")

    def contiguous(self):
        """A TensorType with contiguous strides (RuntimeError for other types)."""
        self._not_tensor("contiguous")

    def with_dtype(self, dtype):
        """A TensorType with another dtype (RuntimeError for other types)."""
        self._not_tensor("with_dtype")

    def with_sizes(self, sizes):
        """A TensorType with other sizes (RuntimeError for other types)."""
        self._not_tensor("with_sizes")

    def with_device(self, device):
        """A TensorType on another device (RuntimeError for other types)."""
        self._not_tensor("with_device")


def _singleton(name: str, annotation: str, doc_example: str, sub=()):
    """A type with one value, reached by ``get()`` (``IntType.get()``); ``sub`` names the
    kinds it is a subtype of beside itself and Any."""

    def get(cls):
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = object.__new__(cls)
            cls._instance = inst
        return inst

    def _sub(self, other):
        return other.kind() in sub

    get.__doc__ = f"""The one ``{annotation}`` type.

        Returns:
            {name}: the same object on every call.
        """
    doc = (f"TorchScript's ``{annotation}`` type (one value, from ``{name}.get()``).\n\n"
           f"Args:\n    none: the class has no constructor; ``get()`` takes no arguments.\n\n"
           f"Returns:\n    {name}: through ``get()``; the class has no constructor.\n\n"
           f"Example::\n\n    {doc_example}\n")
    return type(name, (Type,), {"__doc__": doc, "__module__": "ember", "_name": annotation,
                                "get": classmethod(get), "_sub": _sub})


AnyType = _singleton("AnyType", "Any", ">>> str(ember.AnyType.get())\n    'Any'")
BoolType = _singleton("BoolType", "bool",
                      ">>> ember.BoolType.get().isSubtypeOf(ember.IntType.get())\n    False")
ComplexType = _singleton("ComplexType", "complex",
                         ">>> ember.ComplexType.get().isSubtypeOf(ember.NumberType.get())\n"
                         "    True", sub=("NumberType",))
DeviceObjType = _singleton("DeviceObjType", "Device",
                           ">>> str(ember.DeviceObjType.get())\n    'Device'")
FloatType = _singleton("FloatType", "float",
                       ">>> ember.FloatType.get().isSubtypeOf(ember.NumberType.get())\n"
                       "    True", sub=("NumberType",))
IntType = _singleton("IntType", "int",
                     ">>> ember.IntType.get().isSubtypeOf(ember.FloatType.get())\n    False",
                     sub=("NumberType",))
NoneType = _singleton("NoneType", "NoneType",
                      ">>> str(ember.NoneType.get())\n    'NoneType'")
NumberType = _singleton("NumberType", "number",
                        ">>> str(ember.NumberType.get())  # a schema's Scalar\n    'number'")
PyObjectType = _singleton("PyObjectType", "PyObject",
                          ">>> str(ember.PyObjectType.get())\n    'PyObject'")
StreamObjType = _singleton("StreamObjType", "Stream",
                           ">>> str(ember.StreamObjType.get())\n    'Stream'")
StringType = _singleton("StringType", "str", ">>> str(ember.StringType.get())\n    'str'")
SymIntType = _singleton("SymIntType", "int",
                        ">>> ember.SymIntType.get().kind(), str(ember.SymIntType.get())\n"
                        "    ('SymIntType', 'int')")
SymBoolType = _singleton("SymBoolType", "bool",
                         ">>> ember.SymBoolType.get().kind()\n    'SymBoolType'")


class _NamedType(Type):
    """A type ember names but has no class for (``Layout``, ``Generator``, ``Storage`` ...):
    torch shows these as plain ``Type`` objects."""

    def __init__(self, name: str):
        self._name = name

    def kind(self) -> str:
        return self._name + "Type"

    def _key(self):
        return ("_NamedType", self._name)


class TensorType(Type):
    """TorchScript's ``Tensor`` type: any tensor (``TensorType.get()``), or one whose dtype,
    sizes, strides, device and requires_grad are known (``TensorType.create_from_tensor``).

    Args:
        none: made by the class methods below, not by a constructor.

    Returns:
        TensorType: through ``get()``, ``getInferred()`` or ``create_from_tensor(t)``.

    Example::

        >>> t = ember.TensorType.create_from_tensor(ember.zeros(2, 3))
        >>> t.dtype(), t.sizes(), t.isSubtypeOf(ember.TensorType.get())
        (ember.float32, [2, 3], True)
    """

    _name = "Tensor"
    _fields = ("_dtype", "_sizes", "_strides", "_device", "_requires_grad", "_undefined",
               "_inferred")

    def __init__(self, *args, **kwargs):
        raise _no_constructor(TensorType)

    @classmethod
    def _make(cls, dtype=None, sizes=None, strides=None, device=None, requires_grad=None,
              undefined=None, inferred=False):
        t = object.__new__(cls)
        t._dtype, t._sizes, t._strides, t._device = dtype, sizes, strides, device
        t._requires_grad, t._undefined, t._inferred = requires_grad, undefined, inferred
        return t

    @classmethod
    def get(cls) -> TensorType:
        """The type of any tensor.

        Returns:
            TensorType: nothing about the tensor known.
        """
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = cls._instance = cls._make()
        return inst

    @classmethod
    def getInferred(cls) -> TensorType:  # noqa: N802
        """The type given to a value whose type was inferred as a tensor.

        Returns:
            TensorType: equal to ``get()`` and marked as inferred.
        """
        return cls._make(inferred=True)

    @classmethod
    def create_from_tensor(cls, t) -> TensorType:
        """The complete type of tensor ``t``.

        Args:
            t (Tensor): the tensor.

        Returns:
            TensorType: with ``t``'s dtype, sizes, strides, device and requires_grad.
        """
        from .._core.tensor import Tensor

        if not isinstance(t, Tensor):
            raise TypeError("create_from_tensor(): incompatible function arguments: expected "
                            f"a Tensor, got {type(t).__name__}")
        return cls._make(t.dtype, list(t.shape), list(t.stride()), t.device,
                         bool(t.requires_grad), False)

    def _key(self):
        return ("TensorType",) + tuple(
            tuple(v) if isinstance(v, list) else v
            for v in (self._dtype, self._sizes, self._strides, self._device,
                      self._requires_grad, self._undefined))

    def _sub(self, other):
        if not isinstance(other, TensorType):
            return False
        mine = self._key()
        return all(o is None or o == m for m, o in zip(mine[1:], other._key()[1:]))

    def dtype(self):
        """The dtype, or None when unknown."""
        return self._dtype

    def scalarType(self):  # noqa: N802
        """The dtype's scalar type name (``'Float'``), or None when unknown."""
        return None if self._dtype is None else self._dtype.scalar_name

    def sizes(self):
        """The sizes as a list, or None unless every size is known."""
        if self._sizes is None or any(s is None for s in self._sizes):
            return None
        return list(self._sizes)

    def varyingSizes(self):  # noqa: N802
        """The sizes (None for each unknown one), or None when the rank is unknown."""
        return None if self._sizes is None else list(self._sizes)

    symbolic_sizes = sizes

    def strides(self):
        """The strides as a list, or None when unknown."""
        return None if self._strides is None else list(self._strides)

    def dim(self):
        """The number of dims, or None when unknown."""
        return None if self._sizes is None else len(self._sizes)

    def device(self):
        """The device, or None when unknown."""
        return self._device

    def requires_grad(self):
        """Whether the tensor may require grad (True when unknown, as TorchScript assumes)."""
        return True if self._requires_grad is None else self._requires_grad

    def undefined(self):
        """Whether the tensor is known to be undefined."""
        return bool(self._undefined)

    def contiguous(self):
        """The same type with contiguous strides (RuntimeError when the sizes are unknown)."""
        if self._sizes is None or any(s is None for s in self._sizes):
            raise RuntimeError("contiguous(): the sizes of the tensor type are not known")
        strides, acc = [], 1
        for s in reversed(self._sizes):
            strides.append(acc)
            acc *= max(s, 1)
        return self._replace(_strides=strides[::-1])

    def _replace(self, **changes):
        t = TensorType._make()
        for f in self._fields:
            setattr(t, f, changes.get(f, getattr(self, f)))
        return t

    def with_dtype(self, dtype):
        """The same type with ``dtype``."""
        return self._replace(_dtype=dtype)

    def with_sizes(self, sizes):
        """The same type with ``sizes`` (None for an unknown size); strides become unknown."""
        return self._replace(_sizes=None if sizes is None else list(sizes), _strides=None)

    def with_device(self, device):
        """The same type on ``device``."""
        from .._core.device import device as _device

        return self._replace(_device=None if device is None else _device(device))


class EnumType(Type):
    """TorchScript's type of a Python ``enum.Enum`` class: named by its qualified name, its
    members' values all of one type.

    Args:
        qualified_name (str): the enum's name (``"__torch__.Color"``).
        value_type (Type): the type of the members' values (int, float or str).
        enum_values (list of enum.Enum): the members.

    Returns:
        EnumType: the type; RuntimeError when a value is not of ``value_type``.

    Example::

        >>> import enum
        >>> class Color(enum.Enum):
        ...     RED = 1
        >>> t = ember.EnumType("__torch__.Color", ember.IntType.get(), list(Color))
        >>> str(t), t.kind(), [str(c) for c in t.containedTypes()]
        ('__torch__.Color', 'EnumType', ['int'])
    """

    def __init__(self, qualified_name: str, value_type: Type, enum_values):
        _check_type("EnumType", value_type)
        members = []
        for v in enum_values:
            name, value = v.name, v.value  # AttributeError for non-members, as torch
            from ._containers import infer_type

            try:
                fits = infer_type(value).isSubtypeOf(value_type)
            except Exception:  # noqa: BLE001  (a value without a type fits nothing)
                fits = False
            if not fits:
                raise RuntimeError(f"Unable to cast {value!r} to {value_type}")
            members.append((name, value))
        self._name = str(qualified_name)
        self._value_type = value_type
        self._members = tuple(members)

    def containedTypes(self) -> list:  # noqa: N802
        return [self._value_type]

    def _key(self):
        return ("EnumType", self._name, self._value_type._key(), self._members)


class _ContainerType(Type):
    """A type built from other types (lists, dicts, tuples, futures ...)."""

    def __init__(self, *elems):
        for e in elems:
            _check_type(type(self).__name__, e)
        self._elems = tuple(elems)

    def containedTypes(self) -> list:  # noqa: N802
        return list(self._elems)

    def _key(self):
        return (self.kind(),) + tuple(e._key() for e in self._elems)

    @property
    def annotation_str(self) -> str:
        return f"{self._name}[{', '.join(e.annotation_str for e in self._elems)}]"

    def getElementType(self) -> Type:  # noqa: N802
        """The element type."""
        return self._elems[0]


def _container_doc(annotation, example):
    return (f"TorchScript's ``{annotation}`` type.\n\nArgs:\n    elem (Type): the element "
            f"type.\n\nReturns:\n    the type.\n\nExample::\n\n    {example}\n")


class ListType(_ContainerType):
    __doc__ = _container_doc("List[T]", ">>> str(ember.ListType(ember.IntType.get()))\n"
                                        "    'List[int]'")
    _name = "List"

    def __init__(self, elem: Type):
        super().__init__(elem)

    # a list is invariant: List[int] is not a List[number] (NOTE [ JIT types ])

    @classmethod
    def ofInts(cls):  # noqa: N802
        """``List[int]``."""
        return cls(IntType.get())

    @classmethod
    def ofFloats(cls):  # noqa: N802
        """``List[float]``."""
        return cls(FloatType.get())

    @classmethod
    def ofBools(cls):  # noqa: N802
        """``List[bool]``."""
        return cls(BoolType.get())

    @classmethod
    def ofStrings(cls):  # noqa: N802
        """``List[str]``."""
        return cls(StringType.get())

    @classmethod
    def ofTensors(cls):  # noqa: N802
        """``List[Tensor]``."""
        return cls(TensorType.get())

    @classmethod
    def ofComplexDoubles(cls):  # noqa: N802
        """``List[complex]``."""
        return cls(ComplexType.get())


class DictType(_ContainerType):
    """TorchScript's ``Dict[K, V]`` type (invariant in both).

    Args:
        key (Type): the key type.
        value (Type): the value type.

    Returns:
        DictType: the type.

    Example::

        >>> str(ember.DictType(ember.StringType.get(), ember.TensorType.get()))
        'Dict[str, Tensor]'
    """

    _name = "Dict"

    def __init__(self, key: Type, value: Type):
        super().__init__(key, value)

    def getKeyType(self) -> Type:  # noqa: N802
        """The key type."""
        return self._elems[0]

    def getValueType(self) -> Type:  # noqa: N802
        """The value type."""
        return self._elems[1]


class TupleType(_ContainerType):
    """TorchScript's ``Tuple[T1, T2, ...]`` type (covariant in each element).

    Args:
        elements (list of Type): the element types.

    Returns:
        TupleType: the type.

    Example::

        >>> str(ember.TupleType([ember.IntType.get(), ember.FloatType.get()]))
        'Tuple[int, float]'
    """

    _name = "Tuple"

    def __init__(self, elements):
        super().__init__(*elements)

    @property
    def annotation_str(self) -> str:
        return "Tuple[()]" if not self._elems else super().annotation_str

    def elements(self) -> list:
        """The element types."""
        return list(self._elems)

    def _sub(self, other):
        return isinstance(other, TupleType) and len(other._elems) == len(self._elems) and all(
            a.isSubtypeOf(b) for a, b in zip(self._elems, other._elems))


class _Covariant(_ContainerType):
    def __init__(self, elem: Type):
        super().__init__(elem)

    def _sub(self, other):
        return type(other) is type(self) and self._elems[0].isSubtypeOf(other._elems[0])


class FutureType(_Covariant):
    __doc__ = _container_doc("Future[T]", ">>> str(ember.FutureType(ember.IntType.get()))\n"
                                          "    'Future[int]'")
    _name = "Future"


class AwaitType(_Covariant):
    __doc__ = _container_doc("Await[T]", ">>> str(ember.AwaitType(ember.IntType.get()))\n"
                                         "    'Await[int]'")
    _name = "Await"


class RRefType(_Covariant):
    __doc__ = _container_doc("RRef[T]", ">>> str(ember.RRefType(ember.IntType.get()))\n"
                                        "    'RRef[int]'")
    _name = "RRef"


def _flatten_union(types) -> list:
    out = []
    for t in types:
        _check_type("UnionType", t)
        members = t._members if isinstance(t, _UnionBase) else (t,)
        for m in members:
            if not any(m == o for o in out):
                out.append(m)
    # a member that is a subtype of another adds nothing
    out = [m for m in out if not any(o != m and m.isSubtypeOf(o) for o in out)]
    return sorted(out, key=lambda m: (_KIND_ORDER.get(m.kind(), len(_KIND_ORDER)),
                                      m.annotation_str))


class _UnionBase(Type):
    """What unions and optionals share: members, and subtyping member by member."""

    _opt = None

    def isSubtypeOf(self, other: Type) -> bool:  # noqa: N802
        _check_type("isSubtypeOf", other)
        if self == other or isinstance(other, AnyType):
            return True
        if self._opt is not None and isinstance(other, _UnionBase) and other._opt is not None:
            return self._opt.isSubtypeOf(other._opt)
        return all(m.isSubtypeOf(other) for m in self._members)


class UnionType(_UnionBase):
    """TorchScript's ``Union[T1, T2, ...]``: flattened, without repeats or members that are
    subtypes of others, ordered by kind (NOTE [ JIT types ]). A union of one type and
    ``NoneType`` is made as ``OptionalType``.

    Args:
        types (list of Type): the members (at least two different ones).

    Returns:
        UnionType: the type.

    Example::

        >>> str(ember.UnionType([ember.StringType.get(), ember.TensorType.get()]))
        'Union[Tensor, str]'
    """

    def __init__(self, types):
        types = list(types)
        if len(types) < 2:
            raise RuntimeError(f"UnionType: a union needs at least two types, got "
                               f"{[str(t) for t in types]}")
        self._members = tuple(_flatten_union(types))
        others = [m for m in self._members if not isinstance(m, NoneType)]
        # a union of one type and NoneType is TorchScript's Optional
        self._opt = others[0] if len(self._members) == 2 and len(others) == 1 else None

    def kind(self) -> str:
        return "UnionType" if self._opt is None else "OptionalType"

    def containedTypes(self) -> list:  # noqa: N802
        return list(self._members) if self._opt is None else [self._opt]

    def _key(self):
        if self._opt is not None:
            return ("OptionalType", self._opt._key())
        return ("UnionType",) + tuple(m._key() for m in self._members)

    @property
    def annotation_str(self) -> str:
        if self._opt is not None:
            return f"Optional[{self._opt.annotation_str}]"
        return f"Union[{', '.join(m.annotation_str for m in self._members)}]"


class OptionalType(_UnionBase):
    """TorchScript's ``Optional[T]``, the union of ``T`` and ``NoneType``.

    Args:
        elem (Type): the type of the value when it is not None.

    Returns:
        OptionalType: the type.

    Example::

        >>> t = ember.OptionalType(ember.TensorType.get())
        >>> str(t), ember.NoneType.get().isSubtypeOf(t)
        ('Optional[Tensor]', True)
    """

    def __init__(self, elem: Type):
        _check_type("OptionalType", elem)
        self._elem = self._opt = elem
        self._members = tuple(_flatten_union([elem, NoneType.get()]))

    def kind(self) -> str:
        return "OptionalType"

    def _key(self):
        return ("OptionalType", self._elem._key())

    def getElementType(self) -> Type:  # noqa: N802
        """The type of the value when it is not None."""
        return self._elem

    def containedTypes(self) -> list:  # noqa: N802
        return [self._elem]

    @property
    def annotation_str(self) -> str:
        return f"Optional[{self._elem.annotation_str}]"

    @classmethod
    def ofTensor(cls):  # noqa: N802
        """``Optional[Tensor]``."""
        return cls(TensorType.get())


class InferredType:
    """The outcome of inferring a value's TorchScript type: a type, or why there is none.

    Args:
        type_or_reason (Type or str): the inferred type, or the reason inference failed.

    Returns:
        InferredType: ask ``success()``, then ``type()`` or ``reason()``.

    Example::

        >>> r = ember.InferredType(ember.IntType.get())
        >>> r.success(), str(r.type())
        (True, 'int')
    """

    def __init__(self, type_or_reason):
        if isinstance(type_or_reason, Type):
            self._type, self._reason = type_or_reason, None
        elif isinstance(type_or_reason, str):
            self._type, self._reason = None, type_or_reason
        else:
            raise TypeError("InferredType(): incompatible constructor arguments: expected a "
                            f"Type or a str, got {type(type_or_reason).__name__}")

    def success(self) -> bool:
        """Whether a type was inferred."""
        return self._type is not None

    def type(self) -> Type:  # noqa: A003
        """The inferred type (RuntimeError when inference failed)."""
        if self._type is None:
            raise RuntimeError(f"Tried to get the type from a failed inference: {self._reason}")
        return self._type

    def reason(self) -> str:
        """Why inference failed (RuntimeError when it succeeded)."""
        if self._type is not None:
            raise RuntimeError("Tried to get the reason of a successful type inference")
        return self._reason


def _unify(a: Type, b: Type):
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        # differing details of tensors merge to what both share
        keep = [x if x == y else None for x, y in zip(a._key()[1:], b._key()[1:])]
        return a._replace(**dict(zip(TensorType._fields[:6], [
            list(v) if isinstance(v, tuple) else v for v in keep])))
    if a.isSubtypeOf(b):
        return b
    if b.isSubtypeOf(a):
        return a
    if isinstance(a, NoneType):
        return OptionalType(b)
    if isinstance(b, NoneType):
        return OptionalType(a)
    a_opt, b_opt = getattr(a, "_opt", None), getattr(b, "_opt", None)
    if a_opt is not None and b_opt is None:
        inner = _unify(a_opt, b)
        return None if inner is None else OptionalType(inner)
    if b_opt is not None and a_opt is None:
        return _unify(b, a)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a._elems) == len(b._elems):
        elems = [_unify(x, y) for x, y in zip(a._elems, b._elems)]
        return None if any(e is None for e in elems) else TupleType(elems)
    return None


def unify_type_list(types) -> Type:
    """The one type all of ``types`` fit: the widest when each is a subtype of the next,
    ``Optional[T]`` for ``T`` and ``NoneType``, tensors merged, tuples element by element.

    Args:
        types (list of Type): at least one type.

    Returns:
        Type: the unified type; RuntimeError naming the first type that does not fit.

    Example::

        >>> str(ember.unify_type_list([ember.IntType.get(), ember.NoneType.get()]))
        'Optional[int]'
    """
    types = list(types)
    if not types:
        raise RuntimeError("Cannot get unified type from empty list")
    for t in types:
        _check_type("unify_type_list", t)
    out = types[0]
    for i, t in enumerate(types[1:], 1):
        u = _unify(out, t)
        if u is None:
            raise RuntimeError(f"Could not unify type list since element {i} of type {t} did "
                               f"not match the types before it ({out})")
        out = u
    return out
