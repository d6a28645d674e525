"""Operator schemas: torch's schema language, parsed, printed, inferred and bound to calls.

NOTE [ Schemas ]
A custom operator states its signature once, as a schema string in torch's language::

    myadd(Tensor a, Tensor b, *, float alpha=1.0) -> Tensor
    fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)
    split(Tensor x, int[] sizes) -> Tensor[]

or lets ember infer it from the Python function's type annotations (``infer``), as
``torch.library.custom_op`` does. The parsed ``FunctionSchema`` is the single source for:
binding a call's arguments (``bind``: defaults filled, values type-checked and converted,
torch's error messages), the normalised form a dispatch mode receives (``call_form``), which
arguments an op mutates (``Tensor(a!)``) and which results alias an input (``Tensor(a)``).

Types are ``Tensor``, ``int``/``SymInt``, ``float``, ``bool``, ``str``, ``Scalar``,
``ScalarType``, ``Device``, ``Layout``, ``MemoryFormat``, ``Generator``, ``complex`` and
``Any``, each optionally ``?`` (may be None) and ``[]``/``[N]`` (a list); ``Tensor?[]`` is a
list whose entries may be None. ``SymInt`` is ``int`` here: ember has no symbolic shapes.
"""

from __future__ import annotations

import collections.abc
import inspect
import re
import typing

import numpy as np

from .._core import dtype as _dt
from .._core.device import device as _device
from .._core.tensor import Tensor

__all__ = ["FunctionSchema", "Argument", "SchemaType", "parse_schema", "infer"]

#: the base types the schema language knows (torch's, less those ember has no use for)
_BASE_TYPES = ("Tensor", "int", "SymInt", "float", "SymFloat", "bool", "SymBool", "str",
               "Scalar", "ScalarType", "Device", "Layout", "MemoryFormat", "Generator",
               "complex", "Any", "Storage", "Stream")
_INT = ("int", "SymInt")
_NO_DEFAULT = inspect.Parameter.empty


class SchemaType:
    """A parsed type: ``base`` with an alias annotation (``Tensor(a!)``) and suffixes.

    ``suffix`` is what follows the base and alias: ``""``, ``"?"``, ``"[]"``, ``"[2]"``,
    ``"?[]"`` (a list of optionals) or ``"[]?"`` (an optional list).
    """

    __slots__ = ("base", "alias", "suffix")

    def __init__(self, base: str, alias: str | None = None, suffix: str = ""):
        self.base = base
        self.alias = alias
        self.suffix = suffix

    @property
    def optional(self) -> bool:
        """True when the value may be None."""
        return self.suffix.endswith("?")

    @property
    def is_list(self) -> bool:
        return "[" in self.suffix

    @property
    def elem_optional(self) -> bool:
        """True for ``Tensor?[]``: list entries may be None."""
        return self.suffix.startswith("?[")

    @property
    def size(self) -> int | None:
        """N for a fixed-size list ``int[N]``, else None."""
        m = re.search(r"\[(\d+)\]", self.suffix)
        return int(m.group(1)) if m else None

    @property
    def is_tensor(self) -> bool:
        """True for Tensor, Tensor?, Tensor[] and Tensor?[]."""
        return self.base == "Tensor"

    @property
    def is_write(self) -> bool:
        """True when the annotation says the value is written to (``Tensor(a!)``)."""
        return self.alias is not None and "!" in self.alias

    @property
    def alias_set(self) -> str | None:
        """The alias set's name, ``a`` for ``Tensor(a!)`` or ``Tensor(a)``."""
        if self.alias is None:
            return None
        return re.split(r"[!\s-]", self.alias, maxsplit=1)[0]

    def py_name(self) -> str:
        """The type as torch's error messages spell it: ``List[int]``, ``Optional[Tensor]``."""
        elem = "int" if self.base in _INT else self.base
        if self.elem_optional:
            elem = f"Optional[{elem}]"
        if self.is_list:
            elem = f"List[{elem}]"
        if self.optional:
            elem = f"Optional[{elem}]"
        return elem

    def __str__(self):
        alias = f"({self.alias})" if self.alias is not None else ""
        return f"{self.base}{alias}{self.suffix}"

    def __repr__(self):
        return f"SchemaType({str(self)!r})"


class AliasInfo:
    """What an alias annotation says: ``is_write`` and the alias set (``before_set``)."""

    __slots__ = ("is_write", "before_set")

    def __init__(self, is_write, before_set):
        self.is_write = is_write
        self.before_set = before_set

    def __repr__(self):
        return f"AliasInfo(is_write={self.is_write}, before_set={self.before_set})"


class Argument:
    """One argument (or result) of a schema: ``name``, ``type``, ``default_value``,
    ``kwarg_only``; results have no default and may have no name."""

    __slots__ = ("name", "type", "default_value", "kwarg_only")

    def __init__(self, name, type, default_value=_NO_DEFAULT, kwarg_only=False):
        self.name = name
        self.type = type
        self.default_value = default_value
        self.kwarg_only = kwarg_only

    def has_default_value(self) -> bool:
        return self.default_value is not _NO_DEFAULT

    @property
    def is_write(self) -> bool:
        return self.type.is_write

    @property
    def alias_info(self) -> AliasInfo | None:
        t = self.type
        if t.alias is None:
            return None
        return AliasInfo(t.is_write, {t.alias_set} if t.alias_set not in (None, "") else set())

    def __str__(self):
        s = str(self.type)
        if self.name:
            s += " " + self.name
        if self.has_default_value():
            s += "=" + format_default(self.default_value)
        return s

    def __repr__(self):
        return f"Argument({str(self)!r})"


class FunctionSchema:
    """A parsed schema: ``name`` (``ns::op`` or ``op``, empty when nameless),
    ``overload_name``, ``arguments`` and ``returns`` (lists of ``Argument``)."""

    def __init__(self, name, overload_name, arguments, returns):
        self.name = name
        self.overload_name = overload_name
        self.arguments = list(arguments)
        self.returns = list(returns)
        self.positional = [a for a in self.arguments if not a.kwarg_only]
        self.kwarg_only = [a for a in self.arguments if a.kwarg_only]
        self._index = {a.name: i for i, a in enumerate(self.arguments)}

    @property
    def is_mutable(self) -> bool:
        """True when some argument is written to."""
        return any(a.is_write for a in self.arguments)

    def mutated_names(self) -> set:
        """The names of the arguments the op writes to."""
        return {a.name for a in self.arguments if a.is_write}

    def with_name(self, name, overload_name=""):
        """This schema under another name."""
        return FunctionSchema(name, overload_name, self.arguments, self.returns)

    def signature(self) -> str:
        """The schema without its name: ``(Tensor x) -> Tensor``."""
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = self.returns
        if len(rets) == 1:
            out = str(rets[0])
        else:
            out = "(" + ", ".join(str(r) for r in rets) + ")"
        return f"({', '.join(parts)}) -> {out}"

    def __str__(self):
        name = self.name
        if name and self.overload_name:
            name += "." + self.overload_name
        return name + self.signature()

    def __repr__(self):
        return f"FunctionSchema({str(self)!r})"

    # -- calls --------------------------------------------------------------------------------

    def bind(self, qualname, args, kwargs):
        """Match a call's ``args``/``kwargs`` to the arguments: a list with one converted
        value per argument, defaults filled in. Raises torch's RuntimeErrors for a wrong
        count, an unknown or repeated keyword, a missing value or a value of the wrong
        type."""
        arguments = self.arguments
        positional = self.positional
        if len(args) > len(positional):
            if self.kwarg_only:
                raise RuntimeError(
                    f"{qualname}() takes {len(positional)} positional argument(s) but "
                    f"{len(args)} was/were given.  Declaration: {qualname}{self.signature()}")
            raise RuntimeError(
                f"{qualname}() expected at most {len(positional)} argument(s) but received "
                f"{len(args)} argument(s). Declaration: {qualname}{self.signature()}")
        values = list(args) + [_NO_DEFAULT] * (len(arguments) - len(args))
        for k, v in kwargs.items():
            i = self._index.get(k)
            if i is None:
                raise RuntimeError(
                    f"Unknown keyword argument '{k}' for operator '{qualname}'. Schema: "
                    f"{qualname}{self.signature()}")
            if values[i] is not _NO_DEFAULT:
                raise RuntimeError(
                    f"{qualname}() got multiple values for argument '{k}'. Declaration: "
                    f"{qualname}{self.signature()}")
            values[i] = v
        for i, a in enumerate(arguments):
            v = values[i]
            if v is _NO_DEFAULT:
                if not a.has_default_value():
                    raise RuntimeError(
                        f"{qualname}() is missing value for argument '{a.name}'. "
                        f"Declaration: {qualname}{self.signature()}")
                d = a.default_value
                values[i] = list(d) if isinstance(d, list) else d
                continue
            try:
                values[i] = convert(v, a.type)
            except _Mismatch:
                raise RuntimeError(
                    f"{qualname}() Expected a value of type '{a.type.py_name()}' for argument "
                    f"'{a.name}' but instead found type '{type(v).__name__}'.\nPosition: {i}\n"
                    f"Value: {v!r}\nDeclaration: {qualname}{self.signature()}") from None
        return values

    def split(self, values):
        """``(positional values, {keyword-only name: value})`` of bound values."""
        n = len(self.positional)
        return values[:n], {a.name: values[n + j] for j, a in enumerate(self.kwarg_only)}

    def call_form(self, values):
        """The arguments as torch hands them to a dispatch mode: positional values without
        trailing defaults, keyword-only values that differ from their defaults."""
        n = len(self.positional)
        args = list(values[:n])
        while args and _is_default(args[-1], self.positional[len(args) - 1]):
            args.pop()
        kwargs = {a.name: v for a, v in zip(self.kwarg_only, values[n:])
                  if not _is_default(v, a)}
        return tuple(args), kwargs


def _is_default(v, arg):
    if not arg.has_default_value():
        return False
    d = arg.default_value
    if d is None or v is None:
        return v is d
    if isinstance(v, Tensor) or type(v) is not type(d):
        return False
    return v == d


class _Mismatch(Exception):
    pass


def _convert_one(v, base):
    """One value of base type ``base``, converted as torch converts it (a 0-dim tensor is
    accepted for a float or a Scalar; NumPy scalars become Python numbers)."""
    if base == "Tensor":
        if isinstance(v, Tensor):
            return v
    elif base in _INT:
        if isinstance(v, (bool, int, np.integer)):
            return int(v)
    elif base in ("float", "SymFloat"):
        if isinstance(v, (bool, int, float, np.integer, np.floating)):
            return float(v)
        if isinstance(v, Tensor) and v.dim() == 0 and not v.is_complex():
            return float(v.item())
    elif base in ("bool", "SymBool"):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
    elif base == "str":
        if isinstance(v, str):
            return v
    elif base == "complex":
        if isinstance(v, (bool, int, float, complex, np.number)):
            return complex(v)
    elif base == "Scalar":
        if isinstance(v, (bool, int, float, complex)):
            return v
        if isinstance(v, (np.number, np.bool_)):
            return v.item()
        if isinstance(v, Tensor) and v.dim() == 0:
            return v.item()
    elif base == "ScalarType":
        if isinstance(v, _dt.dtype):
            return v
    elif base == "Device":
        if isinstance(v, (str, int, _device)):
            return _device(v) if not isinstance(v, int) else _device("cpu" if v < 0 else
                                                                       f"cuda:{v}")
    else:  # Layout, MemoryFormat, Generator, Storage, Stream, Any: passed through
        return v
    raise _Mismatch


def convert(v, t: SchemaType):
    """``v`` checked against type ``t`` and converted; raises ``_Mismatch``."""
    if v is None and (t.optional or (t.base == "Tensor" and not t.is_list)):
        return None
    if not t.is_list:
        return _convert_one(v, t.base)
    if t.base in _INT and t.size is not None and isinstance(v, (bool, int, np.integer)):
        return [int(v)] * t.size  # an int stands for int[N] of that int
    if not isinstance(v, (list, tuple)):
        raise _Mismatch
    elem_opt = t.elem_optional
    return [None if (e is None and elem_opt) else _convert_one(e, t.base) for e in v]


# ------------------------------------------------------------------------------------------------
# printing


class _PythonFloat(float):
    """A float default that prints as Python writes it (``infer(python_text=True)``)."""

    __slots__ = ()


def _format_float(v: float) -> str:
    """A float as torch's schemas print it: 17 significant digits, a point kept on whole
    numbers (``1.``, ``0.5``, ``1.0000000000000001e-05``), no sign on zero."""
    if v == 0:
        return "0."
    text = f"{v:.17g}"
    if not any(c in text for c in ".eEn"):
        text += "."
    return text


def format_default(v) -> str:
    """A default value as the schema language writes it."""
    if v is None or isinstance(v, bool):
        return str(v)
    if type(v) is _PythonFloat:
        return repr(float(v))
    if isinstance(v, float):
        return _format_float(v)
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_default(e) for e in v) + "]"
    if isinstance(v, _dt.dtype):
        return str(v).rsplit(".", 1)[-1]
    if isinstance(v, _device):
        return f'"{v}"'
    return str(v)


# ------------------------------------------------------------------------------------------------
# parsing

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)j?")
_TYPE_HELP = ("unknown type specifier. Common valid schema types include Tensor, SymInt, int, "
              "float, bool, Scalar; the full list: " + ", ".join(_BASE_TYPES))
_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                "int": "int32", "short": "int16", "char": "int8", "byte": "uint8",
                "bool": "bool", "cfloat": "complex64", "cdouble": "complex128",
                "Float": "float32", "Double": "float64", "Half": "float16", "Long": "int64",
                "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
                "Bool": "bool", "BFloat16": "bfloat16", "ComplexFloat": "complex64",
                "ComplexDouble": "complex128"}


class _Parser:
    """Recursive descent over one schema string; errors point at the offending text."""

    def __init__(self, text):
        self.s = text
        self.i = 0

    def error(self, msg, start=None, end=None):
        start = self.i if start is None else start
        end = max(start + 1, self.i if end is None else end)
        raise RuntimeError(f"\n{msg}:\n{self.s}\n{' ' * start}{'~' * (end - start)} "
                           f"<--- HERE\n")

    def skip(self):
        s, i = self.s, self.i
        while i < len(s) and s[i].isspace():
            i += 1
        self.i = i

    def at(self, tok):
        self.skip()
        return self.s.startswith(tok, self.i)

    def eat(self, tok):
        if self.at(tok):
            self.i += len(tok)
            return True
        return False

    def _found(self):
        self.skip()
        if self.i >= len(self.s):
            return "end of source"
        m = _IDENT.match(self.s, self.i)
        return "ident" if m else repr(self.s[self.i])

    def expect(self, tok):
        if not self.eat(tok):
            self.error(f"expected {tok} but found {self._found()} here")

    def ident(self):
        self.skip()
        m = _IDENT.match(self.s, self.i)
        if m is None:
            self.error(f"expected ident but found {self._found()} here")
        self.i = m.end()
        return m.group(0)

    # -- grammar ------------------------------------------------------------------------------

    def schema(self, need_name):
        name, overload = "", ""
        if need_name or not self.at("("):
            name = self.ident()
            if self.eat("::"):
                name += "::" + self.ident()
            if self.eat("."):
                overload = self.ident()
        self.expect("(")
        args, kwarg_only = [], False
        if not self.at(")"):
            while True:
                if self.eat("*"):
                    if kwarg_only:
                        self.error("a schema may hold one '*' only")
                    kwarg_only = True
                else:
                    args.append(self.argument(kwarg_only))
                if not self.eat(","):
                    break
        self.expect(")")
        self.expect("->")
        returns = self.returns()
        self.skip()
        if self.i != len(self.s):
            self.error(f"expected end of source but found {self._found()} here")
        names = [a.name for a in args]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise RuntimeError(f"schema {self.s!r}: argument '{dup}' is declared twice")
        return FunctionSchema(name, overload, args, returns)

    def type(self):
        self.skip()
        start = self.i
        base = self.ident()
        if base not in _BASE_TYPES:
            self.error(_TYPE_HELP, start, self.i)
        alias = None
        if self.at("("):
            j = self.s.find(")", self.i)
            if j < 0:
                self.error("expected ) to close the alias annotation")
            alias = self.s[self.i + 1:j].strip()
            self.i = j + 1
        suffix = ""
        while True:
            if self.eat("?"):
                suffix += "?"
            elif self.eat("["):
                self.skip()
                m = re.compile(r"\d*").match(self.s, self.i)
                self.i = m.end()
                self.expect("]")
                suffix += f"[{m.group(0)}]"
            else:
                break
        if suffix not in ("", "?", "[]", "?[]", "[]?") and not re.fullmatch(r"\[\d+\]\??",
                                                                            suffix):
            self.error(f"unsupported type suffix {suffix!r}", start, self.i)
        return SchemaType(base, alias, suffix)

    def argument(self, kwarg_only):
        t = self.type()
        name = self.ident()
        default = _NO_DEFAULT
        if self.eat("="):
            default = self.default(t)
        return Argument(name, t, default, kwarg_only)

    def returns(self):
        if self.eat("("):
            rets = []
            if not self.at(")"):
                while True:
                    rets.append(self.one_return())
                    if not self.eat(","):
                        break
            self.expect(")")
            return rets
        return [self.one_return()]

    def one_return(self):
        t = self.type()
        self.skip()
        name = ""
        m = _IDENT.match(self.s, self.i)
        if m is not None:
            name = self.ident()
        return Argument(name, t)

    def default(self, t):
        self.skip()
        start = self.i
        if self.at("[") and t.base not in _INT + ("float", "bool", "complex"):
            self.error("lists are only supported for float, int and complex types", start)
        if self.eat("["):
            items = []
            if not self.at("]"):
                while True:
                    items.append(self.scalar_default(t))
                    if not self.eat(","):
                        break
            self.expect("]")
            return items
        v = self.scalar_default(t)
        if t.is_list and v is not None:
            if t.base not in _INT + ("float", "bool", "complex") or isinstance(v, str):
                self.error("lists are only supported for float, int and complex types",
                           start, self.i)
            return [v] * (t.size or 1)
        return v

    def scalar_default(self, t):
        self.skip()
        s, i = self.s, self.i
        if i < len(s) and s[i] in "'\"":
            q = s[i]
            j = i + 1
            while j < len(s) and s[j] != q:
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                self.error("unterminated string default")
            self.i = j + 1
            text = s[i + 1:j].encode().decode("unicode_escape")
            return _device(text) if t.base == "Device" else text
        m = _NUMBER.match(s, i)
        if m is not None and m.group(0) not in ("", "+", "-"):
            self.i = m.end()
            text = m.group(0)
            if text.endswith("j"):
                return complex(text)
            if t.base in ("float", "SymFloat", "complex") or re.search(r"[.eEn]", text):
                return float(text)
            return int(text)
        word = self.ident()
        if word in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[word]
        if t.base == "ScalarType":
            try:
                return _dt.lookup(_DTYPE_NAMES.get(word, word))
            except TypeError:
                self.error(f"unknown dtype {word!r}", i, self.i)
        if t.base in ("Layout", "MemoryFormat"):
            from .._core import layout

            return getattr(layout, word, word)
        self.error(f"invalid default value {word!r} for an argument of type {t}", i, self.i)


def parse_schema(text: str, *, need_name: bool = True) -> FunctionSchema:
    """Parse a schema string (NOTE [ Schemas ]).

    Args:
        text: ``"name(Tensor x, *, float alpha=1.0) -> Tensor"``.
        need_name: False also accepts the nameless form ``(Tensor x) -> Tensor``.

    Returns:
        The ``FunctionSchema``; a RuntimeError pointing at the fault when ``text`` is wrong.

    Example::

        >>> s = parse_schema("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)")
        >>> s.mutated_names(), [a.name for a in s.arguments]
        ({'self'}, ['self', 'value'])
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a schema string, got {type(text).__name__}")
    return _Parser(text).schema(need_name)


# ------------------------------------------------------------------------------------------------
# inference from type annotations


# the annotations are spelled every way users write them (typing.List and list[...] are
# different keys), hence typing's spellings beside the builtin ones
def _annotation_table():
    """Python annotation -> schema type, for parameters (torch's table, with ember's types)."""
    number = typing.Union[int, float, bool]  # noqa: UP007  (torch.types.Number)
    table = {}
    scalars = [(Tensor, "Tensor"), (int, "SymInt"), (float, "float"), (bool, "bool"),
               (str, "str"), (number, "Scalar"), (_dt.dtype, "ScalarType"),
               (_device, "Device")]
    for ann, name in scalars:
        table[ann] = name
        table[typing.Optional[ann]] = name + "?"  # noqa: UP045
    listable = [(Tensor, "Tensor"), (typing.Optional[Tensor], "Tensor?"),  # noqa: UP045
                (int, "SymInt"), (float, "float"), (bool, "bool"), (number, "Scalar")]
    for ann, name in listable:
        for seq in (typing.Sequence, typing.List, collections.abc.Sequence, list):  # noqa: UP006
            table[seq[ann]] = name + "[]"
            if ann in (int, float, bool):
                table[typing.Optional[seq[ann]]] = name + "[]?"  # noqa: UP045
    return table


def _return_table():
    number = typing.Union[int, float, bool]  # noqa: UP007
    return {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]",  # noqa: UP006
            list[Tensor]: "Tensor[]", int: "SymInt", float: "float", bool: "bool",
            number: "Scalar"}


def _string_namespace():
    import sys

    ember = sys.modules.get("ember")
    ns = {"Tensor": Tensor, "device": _device, "dtype": _dt.dtype, "Optional": typing.Optional,
          "List": typing.List, "Sequence": typing.Sequence,  # noqa: UP006
          "Union": typing.Union,
          "typing": typing}
    if ember is not None:
        ns.update(torch=ember, ember=ember)
    return ns


def _resolve(ann, fn):
    if not isinstance(ann, str):
        return ann
    ns = _string_namespace()
    ns.update(getattr(fn, "__globals__", {}))
    try:
        return eval(ann, ns)  # noqa: S307  (an annotation the user wrote)
    except Exception:
        return ann


def _type_from_string(name, alias):
    # "Tensor?[]" -> SchemaType; alias goes right after the base name
    m = re.fullmatch(r"([A-Za-z]+)(.*)", name)
    return SchemaType(m.group(1), alias, m.group(2))


def infer(fn, mutates_args, op_name: str | None = None,
          python_text: bool = False) -> FunctionSchema:
    """The schema of ``fn`` from its type annotations (torch's ``infer_schema``).

    Args:
        fn: the annotated function.
        mutates_args: the names of the parameters ``fn`` writes to, or ``"unknown"`` (every
            Tensor parameter may be written to).
        op_name: the name the schema gets (none by default).
        python_text: print float defaults as Python writes them (``1.0``), as torch's
            ``infer_schema`` text does; an operator's ``_schema`` prints them as torch's
            parsed schemas do (``1.``).

    Returns:
        The ``FunctionSchema``; ValueError for what the schema language cannot express.

    Example::

        >>> def f(x: Tensor, out: Tensor, k: float = 1.0) -> None: ...
        >>> str(infer(f, mutates_args={"out"}))
        '(Tensor x, Tensor(a1!) out, float k=1.) -> ()'
        >>> str(infer(f, mutates_args={"out"}, python_text=True))
        '(Tensor x, Tensor(a1!) out, float k=1.0) -> ()'
    """
    sig = inspect.signature(fn)

    def fail(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    table = _annotation_table()
    params = list(sig.parameters.values())
    names = [p.name for p in params]
    if mutates_args != "unknown":
        if isinstance(mutates_args, str) or not isinstance(mutates_args,
                                                           collections.abc.Iterable):
            raise ValueError(
                "mutates_args must either be a sequence of the names of the arguments that "
                "are mutated or the string 'unknown'. ")
        mutates = set(mutates_args)
        missing = mutates - set(names)
        if missing:
            fail(f"{missing} in mutates_args were not found in the custom op's signature. "
                 "mutates_args should contain the names of all args that the custom op "
                 "mutates, or just the string 'unknown' if you don't know.")
    args = []
    for idx, p in enumerate(params):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            fail("We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is p.empty:
            fail(f"Parameter {p.name} must have a type annotation.")
        ann = _resolve(p.annotation, fn)
        try:
            tname = table.get(ann)
        except TypeError:  # an unhashable annotation
            tname = None
        if tname is None:
            fail(f"Parameter {p.name} has unsupported type {ann}. The valid types are: "
                 f"{list(table)}.")
        is_tensor = tname.startswith("Tensor")
        writes = (mutates_args == "unknown" and is_tensor) or (
            mutates_args != "unknown" and p.name in mutates)
        if writes and not is_tensor:
            fail(f"Parameter {p.name} is in mutable_args but only Tensors or collections of "
                 "Tensors can be mutated")
        default = _NO_DEFAULT
        if p.default is not p.empty:
            default = p.default
            if not (default is None or isinstance(default, (int, float, bool, str, _dt.dtype,
                                                            _device))):
                fail(f"Parameter {p.name} has an unsupported default value type "
                     f"{type(default)}. Please file an issue on GitHub so we can prioritize "
                     "this.")
            if isinstance(default, str) and tname.startswith("Device"):
                default = _device(default)
        t = _type_from_string(tname, f"a{idx}!" if writes else None)
        if python_text and type(default) is float:
            default = _PythonFloat(default)
        args.append(Argument(p.name, t, default, p.kind == p.KEYWORD_ONLY))
    ret = sig.return_annotation
    if ret is sig.empty:
        fail("No return type annotation was provided. Please add one.")
    ret = _resolve(ret, fn)
    returns = _infer_returns(ret, fail)
    return FunctionSchema(op_name or "", "", args, returns)


def _infer_returns(ann, fail):
    if ann is None or ann is type(None):
        return []
    table = _return_table()
    origin = typing.get_origin(ann)
    if origin is tuple:
        elems = typing.get_args(ann)
        out = []
        for e in elems:
            name = table.get(e) if _hashable(e) else None
            if name is None:
                fail(f"Return has unsupported type {ann}. The valid types are: {table}.")
            out.append(Argument("", _type_from_string(name, None)))
        return out
    name = table.get(ann) if _hashable(ann) else None
    if name is None:
        fail(f"Return has unsupported type {ann}. The valid types are: {table}.")
    return [Argument("", _type_from_string(name, None))]


def _hashable(x):
    try:
        hash(x)
    except TypeError:
        return False
    return True
