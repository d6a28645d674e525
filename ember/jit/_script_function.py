"""``jit.script`` of a plain function: a ``ScriptFunction`` that runs the Python function.

NOTE [ Script functions ]
PyTorch compiles ``@torch.jit.script def f(x, n: int)`` into a ``ScriptFunction``: a callable
with a schema (``f(Tensor x, int n) -> Tensor``), a printed form of the compiled code
(``.code``), ``save()`` and argument checking at the call (an unannotated argument is a
Tensor; passing something else raises RuntimeError with the declaration). Programs and
tutorials rely on those parts (printing ``.code``, ``.schema``, saving the function, the
type errors), so ember builds the same object around the Python function, eagerly (NOTE
[ Eager TorchScript ] in ember/jit/__init__.py):

- the schema comes from the signature: annotations in TorchScript's types, an unannotated
  argument a Tensor, an unannotated result inferred from the ``return`` statements by a
  small pass over the source (``_ReturnTypes``) -- a tuple of arguments, numbers, a
  ``.item()`` (``number``) -- and otherwise a Tensor;
- a call binds its arguments against that schema and checks each as TorchScript does
  (``int`` takes a bool or a 0-dim tensor, ``float`` takes an int), with PyTorch's messages;
  then the Python function runs;
- ``.code`` prints the signature exactly as PyTorch does and the body lowered and printed
  as TorchScript does (NOTE [ Script IR ] in ember/jit/_script_ir.py); for source the
  lowering does not know, the body is the source rewritten (operators and tensor methods as
  ``torch.*`` calls, reassigned variables renamed in straight-line code);
- ``save`` writes a ``jit.load``-able archive holding a module whose ``forward`` calls the
  function (PyTorch stores the function as ``PlaceholderModule.forward`` too), which loads
  as a ``RecursiveScriptModule(original_name=PlaceholderModule)``.

``.graph`` prints the lowered function in TorchScript's IR syntax (NotImplementedError
where the lowering does not know the source).
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import typing

from . import _types as T
from ._schema import Argument, FunctionSchema

__all__ = ["ScriptFunction", "PlaceholderModule", "make_script_function"]

# Python's operators as TorchScript prints them
_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.MatMult: "matmul", ast.Pow: "pow", ast.Mod: "remainder",
           ast.FloorDiv: "floor_divide", ast.BitAnd: "__and__", ast.BitOr: "__or__",
           ast.BitXor: "__xor__", ast.LShift: "__lshift__", ast.RShift: "__rshift__"}
_CMPOPS = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq",
           ast.NotEq: "ne"}
# names whose attributes are functions, not tensor methods (``torch.relu(x)``, ``F.relu(x)``)
_NAMESPACES = {"torch", "F", "nn", "math", "np", "numpy", "functional", "ember", "self"}


def _pybind_cast(value) -> str:
    return (f"Unable to cast Python instance of type {type(value)} to C++ type '?' "
            "(#define PYBIND11_DETAILED_ERROR_MESSAGES or compile in debug mode for details)")


# -- types: annotations to TorchScript types, and checking a value against one ------------------

def _type_of_annotation(ann) -> T.Type:
    """The TorchScript type of a Python annotation (NOTE [ JIT types ])."""
    from .._core.tensor import Tensor

    if ann is inspect.Parameter.empty or ann is Tensor:
        return T.TensorType.get()
    simple = {int: T.IntType.get(), float: T.FloatType.get(), bool: T.BoolType.get(),
              str: T.StringType.get(), complex: T.ComplexType.get(), type(None):
              T.NoneType.get(), None: T.NoneType.get(), typing.Any: T.AnyType.get()}
    if ann in simple:
        return simple[ann]
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (list, typing.List):  # noqa: UP006
        return T.ListType(_type_of_annotation(args[0]) if args else T.TensorType.get())
    if origin in (dict, typing.Dict):  # noqa: UP006
        return T.DictType(_type_of_annotation(args[0]), _type_of_annotation(args[1]))
    if origin in (tuple, typing.Tuple):  # noqa: UP006
        return T.TupleType([_type_of_annotation(a) for a in args if a is not Ellipsis])
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        members = [a for a in args if a is not type(None)]
        if len(members) == 1 and len(args) == 2:
            return T.OptionalType(_type_of_annotation(members[0]))
        return T.UnionType([_type_of_annotation(a) for a in args])
    name = getattr(ann, "__name__", None) or str(ann)
    return T._NamedType(name)


def _schema_text(t: T.Type) -> str:
    """A type as a schema writes it (``int[]``, ``Tensor?``, ``Dict(str, int)``)."""
    kind = t.kind()
    if kind == "ListType":
        return _schema_text(t.getElementType()) + "[]"
    if kind == "OptionalType":
        return _schema_text(t.getElementType()) + "?"
    if kind == "DictType":
        return f"Dict({_schema_text(t.getKeyType())}, {_schema_text(t.getValueType())})"
    if kind == "TupleType":
        return "(" + ", ".join(_schema_text(e) for e in t.elements()) + ")"
    if kind == "NumberType":
        return "Scalar"
    return str(t)


def _accepts(t: T.Type, value):
    """``(ok, value)``: whether ``value`` fits ``t`` as TorchScript converts arguments, and
    the value the function receives (a 0-dim tensor for a number becomes the number)."""
    from .._core.tensor import Tensor

    kind = t.kind()
    if kind == "TensorType":
        return isinstance(value, Tensor), value
    if kind in ("IntType", "FloatType", "NumberType", "ComplexType", "BoolType"):
        if isinstance(value, Tensor):
            if value.dim() != 0:
                return False, value
            value = value.item()
        if kind == "BoolType":
            return isinstance(value, bool), value
        if kind == "IntType":
            return isinstance(value, int), value
        if kind == "FloatType":
            ok = isinstance(value, (int, float))
            return ok, float(value) if ok else value
        return isinstance(value, (int, float, complex)), value
    if kind == "StringType":
        return isinstance(value, str), value
    if kind == "NoneType":
        return value is None, value
    if kind == "AnyType":
        return True, value
    if kind == "OptionalType":
        return (True, None) if value is None else _accepts(t.getElementType(), value)
    if kind == "UnionType":
        for member in t.containedTypes():
            ok, out = _accepts(member, value)
            if ok:
                return True, out
        return False, value
    if kind == "ListType":
        if not isinstance(value, (list, tuple)):
            return False, value
        items = [_accepts(t.getElementType(), v) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if kind == "TupleType":
        elems = t.elements()
        if not isinstance(value, tuple) or len(value) != len(elems):
            return False, value
        items = [_accepts(e, v) for e, v in zip(elems, value, strict=True)]
        return all(ok for ok, _ in items), tuple(v for _, v in items)
    if kind == "DictType":
        if not isinstance(value, dict):
            return False, value
        ok = all(_accepts(t.getKeyType(), k)[0] and _accepts(t.getValueType(), v)[0]
                 for k, v in value.items())
        return ok, value
    return True, value  # a class or other named type: the function's own business


# -- return types: a small pass over the source ----------------------------------------------

class _ReturnTypes(ast.NodeVisitor):
    """The types of a function's ``return`` values, from argument types and simple local
    assignments (NOTE [ Script functions ]); what it cannot tell is a Tensor."""

    def __init__(self, arg_types: dict):
        self.env = dict(arg_types)
        self.returns: list[T.Type] = []

    def visit_FunctionDef(self, node):  # nested functions return their own values
        if self.returns is not None and node is not self._root:
            return
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        return

    def visit_Assign(self, node):
        t = self.type_of(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.env[target.id] = t

    def visit_AnnAssign(self, node):
        if isinstance(node.target, ast.Name) and node.value is not None:
            self.env[node.target.id] = self.type_of(node.value)

    def visit_Return(self, node):
        self.returns.append(T.NoneType.get() if node.value is None
                            else self.type_of(node.value))

    def run(self, root) -> T.Type:
        self._root = root
        self.visit(root)
        if not self.returns:
            return T.NoneType.get()
        first = self.returns[0]
        return first if all(r == first for r in self.returns) else T.TensorType.get()

    def type_of(self, node) -> T.Type:
        tensor = T.TensorType.get()
        if isinstance(node, ast.Constant):
            v = node.value
            if v is None:
                return T.NoneType.get()
            return {bool: T.BoolType, int: T.IntType, float: T.FloatType,
                    str: T.StringType}.get(type(v), T.AnyType).get()
        if isinstance(node, ast.Name):
            return self.env.get(node.id, tensor)
        if isinstance(node, ast.Tuple):
            return T.TupleType([self.type_of(e) for e in node.elts])
        if isinstance(node, ast.BinOp):
            a, b = self.type_of(node.left), self.type_of(node.right)
            numbers = ("IntType", "FloatType", "BoolType")
            if a.kind() in numbers and b.kind() in numbers:
                if isinstance(node.op, ast.Div) or "FloatType" in (a.kind(), b.kind()):
                    return T.FloatType.get()
                return T.IntType.get()
            return tensor
        if isinstance(node, ast.Compare) and all(
                self.type_of(n).kind() in ("IntType", "FloatType", "BoolType", "StringType")
                for n in [node.left, *node.comparators]):
            return T.BoolType.get()
        if isinstance(node, ast.BoolOp | ast.UnaryOp) and isinstance(
                getattr(node, "op", None), ast.And | ast.Or | ast.Not):
            return T.BoolType.get()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method == "item":
                return T.NumberType.get()
            if method in ("size", "dim", "numel") and node.args or method in ("dim", "numel"):
                return T.IntType.get()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("int", "len"):
                return T.IntType.get()
            if node.func.id == "float":
                return T.FloatType.get()
            if node.func.id == "bool":
                return T.BoolType.get()
        return tensor


# -- the printed body ----------------------------------------------------------------------

class _AsTorchCalls(ast.NodeTransformer):
    """Operators and tensor methods as ``torch.*`` calls, as TorchScript prints them. With
    ``types`` (a ``_ReturnTypes`` holding the variables' types), a number on the left of a
    tensor goes where the tensor method puts it (``1. + x`` prints as ``torch.add(x, 1.)``).
    """

    def __init__(self, types=None):
        self.types = types

    def _number_then_tensor(self, node) -> bool:
        if self.types is None or not isinstance(node.left, ast.Constant):
            return False
        if not isinstance(node.left.value, int | float) or isinstance(node.left.value, bool):
            return False
        return self.types.type_of(node.right).kind() == "TensorType"

    @staticmethod
    def _call(name, args, keywords=()):
        return ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr=name,
                                           ctx=ast.Load()), args=args, keywords=list(keywords))

    def visit_BinOp(self, node):
        swap = self._number_then_tensor(node)  # (asked before the operands are rewritten)
        self.generic_visit(node)
        name = _BINOPS.get(type(node.op))
        if swap and name in ("add", "mul"):
            return self._call(name, [node.right, node.left])
        if swap and name == "sub":
            return self._call("add", [self._call("neg", [node.right]), node.left])
        return node if name is None else self._call(name, [node.left, node.right])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return ast.Constant(-node.operand.value)  # a negative number, not a negation
        if isinstance(node.op, ast.USub):
            return self._call("neg", [node.operand])
        if isinstance(node.op, ast.Invert):
            return self._call("bitwise_not", [node.operand])
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            return self._call(_CMPOPS[type(node.ops[0])], [node.left, node.comparators[0]])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if (isinstance(f, ast.Attribute) and not (
                isinstance(f.value, ast.Name) and f.value.id in _NAMESPACES)
                and not isinstance(f.value, ast.Attribute)):
            return self._call(f.attr, [f.value, *node.args], node.keywords)
        return node


_LONG = 40  # an inlined expression this long is printed as a temporary (``_0 = ...``)


class _StraightLine:
    """TorchScript's printed body of a function without control flow (NOTE [ Script
    functions ]): statements whose results are never used are dropped, a variable assigned
    again gets a fresh name (``y`` then ``y0``), operators become ``torch.*`` calls, and an
    argument expression of 40 characters or more becomes a temporary ``_0``, ``_1``...
    together with the arguments before it (so they are still evaluated first)."""

    def __init__(self, arg_names, arg_types: dict):
        self.names = {n: n for n in arg_names}   # variable -> its current printed name
        self.fresh: dict[str, int] = {}
        self.temps = 0
        self.lines: list[str] = []
        self.types = _ReturnTypes(dict(arg_types))

    @staticmethod
    def accepts(body) -> bool:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                    return False
            elif not isinstance(stmt, ast.Return | ast.Expr):
                return False
        return True

    @staticmethod
    def _live(body):
        """The statements whose results are used (or that may write to a tensor)."""
        live, kept = set(), []
        for stmt in reversed(body):
            used = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)} \
                if stmt.value is not None else set()
            writes = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                         and n.func.attr.endswith("_") for n in ast.walk(stmt.value or
                                                                         ast.Pass()))
            if isinstance(stmt, ast.Assign):
                target = stmt.targets[0].id
                if target not in live and not writes:
                    continue
                live.discard(target)
            live |= used
            kept.append(stmt)
        return kept[::-1]

    def _rename(self, node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.names:
                n.id = self.names[n.id]
        return node

    def _temp(self, text: str) -> str:
        name = f"_{self.temps}"
        self.temps += 1
        self.lines.append(f"{name} = {text}")
        return name

    def _args(self, nodes) -> list[str]:
        texts = [self.expr(n) for n in nodes]
        long = [i for i, (t, inl) in enumerate(texts) if inl and len(t) >= _LONG]
        out = [t for t, _ in texts]
        if long:
            for j in range(long[-1] + 1):
                if texts[j][1]:
                    out[j] = self._temp(out[j])
        return out

    def expr(self, node) -> tuple[str, bool]:
        """``(text, inlined)``: how ``node`` prints, and whether it is a computed value
        printed in place (rather than a name or a constant)."""
        if isinstance(node, ast.Name):
            return node.id, False
        if isinstance(node, ast.Constant):
            return _default_code(node.value), False
        if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args):
            values = [*node.args, *(k.value for k in node.keywords)]
            texts = self._args(values)
            n = len(node.args)
            parts = texts[:n] + [f"{k.arg}={t}" for k, t in zip(node.keywords, texts[n:],
                                                                 strict=True)]
            return f"{ast.unparse(node.func)}({', '.join(parts)})", True
        if isinstance(node, ast.Tuple | ast.List):
            texts = self._args(node.elts)
            if isinstance(node, ast.List):
                return "[" + ", ".join(texts) + "]", True
            return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")", True
        return ast.unparse(node), True

    def statement(self, stmt) -> None:
        value = self._rename(_copy(stmt.value)) if stmt.value is not None else None
        original = stmt.value
        if value is not None:
            value = _AsTorchCalls(self.types).visit(value)
            if isinstance(stmt, ast.Assign):  # (the types see the source's own names)
                self.types.visit_Assign(stmt)
        if isinstance(stmt, ast.Assign):
            text, _ = self.expr(value)
            target = stmt.targets[0].id
            if target in self.names:
                k = self.fresh.get(target, 0)
                self.fresh[target] = k + 1
                self.names[target] = f"{target}{k}"
            else:
                self.names[target] = target
            self.lines.append(f"{self.names[target]} = {text}")
        elif isinstance(stmt, ast.Return):
            if value is None:
                self.lines.append("return None")
                return
            text, inlined = self.expr(value)
            if inlined and len(text) >= _LONG:
                text = self._temp(text)
            self.lines.append(f"return {text}")
        else:
            self.lines.append(self.expr(value)[0])
        del original

    def print(self, body) -> list[str]:
        body = self._live(body)
        # ``y = ...; return y``, with y used nowhere else, prints as ``return ...``
        if (len(body) >= 2 and isinstance(body[-1], ast.Return)
                and isinstance(body[-1].value, ast.Name) and isinstance(body[-2], ast.Assign)
                and body[-2].targets[0].id == body[-1].value.id
                and not any(isinstance(n, ast.Name) and n.id == body[-1].value.id
                            for stmt in body[:-2] for n in ast.walk(stmt))):
            body = [*body[:-2], ast.Return(value=body[-2].value)]
        for stmt in body:
            self.statement(stmt)
        return self.lines


def _signature_code(name, params, types, ret: T.Type) -> str:
    parts = []
    for p, t in zip(params, types, strict=True):
        text = f"{p.name}: {t.annotation_str}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default_code(p.default)
        parts.append(text)
    return f"def {name}(" + ",\n    ".join(parts) + f") -> {ret.annotation_str}:"


def _default_code(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):  # C's %.17g, with a point where it has none (``1.``)
        text = f"{value:.17g}"
        return text if any(c in text for c in ".ein") else text + "."
    return repr(value)


def _default_schema(value) -> str:
    if isinstance(value, str):
        return _default_code(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return _default_code(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_default_schema(v) for v in value) + "]"
    return repr(value)


_NOT_TRACED = object()


def _traced_type(value) -> T.Type:
    """The type a trace gives its result: a Tensor, or tuples and lists of them."""
    if isinstance(value, tuple):
        return T.TupleType([_traced_type(v) for v in value])
    if isinstance(value, list):
        return T.ListType(_traced_type(value[0]) if value else T.TensorType.get())
    return T.TensorType.get()


class ScriptFunction:
    """What ``jit.script`` makes of a plain function (NOTE [ Script functions ]): it calls
    the function after checking its arguments against the schema, and has ``name``,
    ``qualified_name``, ``schema``, ``code``, ``save`` and ``save_to_buffer``. It cannot be
    constructed directly (TypeError, as in PyTorch).

    Args:
        *args: refused (TypeError, as in PyTorch).
        **kwargs: refused.

    Example::

        >>> @ember.jit.script
        ... def scale(x, k: int = 2):
        ...     return x * k
        >>> scale.schema, scale(ember.ones(2)).tolist()
        (scale(Tensor x, int k=2) -> Tensor, [2.0, 2.0])
    """

    __name__ = "ScriptFunction"  # what PyTorch's instances answer, not the function's name

    def __init__(self, *args, **kwargs):
        raise TypeError("ScriptFunction: No constructor defined!")

    @classmethod
    def _make(cls, fn, tree=None, traced_result=_NOT_TRACED):
        self = object.__new__(cls)
        self._fn = fn
        self._tree = tree
        sig = inspect.signature(fn)
        self._params = list(sig.parameters.values())
        if traced_result is not _NOT_TRACED:
            # a trace sees tensors only: every argument and the result's structure
            self._types = [T.TensorType.get() for _ in self._params]
            self._inferred = [False] * len(self._params)
            self._return = _traced_type(traced_result)
            self._ir = None  # a trace's code is not the source lowered (NOTE [ Script IR ])
            self.__doc__, self.__wrapped__ = fn.__doc__, fn
            return self
        for p in self._params:
            if isinstance(p.default, list | dict | set):
                raise RuntimeError(
                    "Mutable default parameters are not supported because Python binds them "
                    "to the function and they persist across function calls.\n As a "
                    "workaround, make the default None and instantiate the default parameter "
                    "within the body of the function. Found "
                    f"{type(p.default)} on parameter {p.name}")
        hints = _hints(fn)
        self._types = [_type_of_annotation(hints.get(p.name, p.annotation))
                       for p in self._params]
        self._inferred = [p.name not in hints and p.annotation is inspect.Parameter.empty
                          for p in self._params]
        ret = hints.get("return", sig.return_annotation)
        self._return_annotated = ret is not inspect.Signature.empty
        if ret is not inspect.Signature.empty:
            self._return = _type_of_annotation(ret)
        elif tree is not None:
            env = {p.name: t for p, t in zip(self._params, self._types, strict=True)}
            self._return = _ReturnTypes(env).run(tree)
        else:
            self._return = T.TensorType.get()
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        return self

    @property
    def name(self) -> str:
        """The function's name."""
        return self._fn.__name__

    @property
    def qualified_name(self) -> str:
        """``__torch__.<module>.<name>`` (the module left out for ``__main__``)."""
        module = getattr(self._fn, "__module__", None) or "__main__"
        prefix = "__torch__." if module == "__main__" else f"__torch__.{module}."
        return prefix + self.name

    @property
    def schema(self) -> FunctionSchema:
        """The function's schema: ``name(Tensor x, int n=2) -> Tensor``."""
        args = []
        for p, t in zip(self._params, self._types, strict=True):
            has_default = p.default is not inspect.Parameter.empty
            a = Argument(p.name, t, None, p.default if has_default else None)
            a._has_default = has_default
            a._text = f"{_schema_text(t)} {p.name}" + (
                f"={_default_schema(p.default)}" if has_default else "")
            args.append(a)
        ret = Argument("", self._return)
        ret._text = _schema_text(self._return)
        if self._return.kind() == "TupleType":
            ret._text = f"({ret._text})"
        s = FunctionSchema(self.name, "", args, [ret])
        s._text = f"{self.name}({', '.join(a._text for a in args)}) -> {ret._text}"
        return s

    def _declaration(self) -> str:
        return str(self.schema)

    @property
    def code(self) -> str:
        """The function as TorchScript prints it: PyTorch's signature, and the body with
        operators and tensor methods as ``torch.*`` calls (NOTE [ Script functions ])."""
        head = _signature_code(self.name, self._params, self._types, self._return)
        if self._tree is None:
            return head + "\n"
        body = [s for s in self._tree.body]
        if body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(
                body[0].value.value, str):
            body = body[1:]  # the docstring
        lowered = self._lowered()
        if lowered is not None:
            from . import _script_ir

            head = _signature_code(self.name, self._params, self._types,
                                   lowered.return_type)
            return _script_ir.code_text(lowered, head)
        if _StraightLine.accepts(body):
            names = [p.name for p in self._params]
            printer = _StraightLine(names, dict(zip(names, self._types, strict=True)))
            return head + "\n" + "\n".join("  " + line for line in printer.print(body)) + "\n"
        module = ast.Module(body=[_AsTorchCalls().visit(s) for s in _copy(body)],
                            type_ignores=[])
        text = ast.unparse(ast.fix_missing_locations(module))
        lines = []
        for line in text.splitlines():
            stripped = line.lstrip(" ")
            depth = (len(line) - len(stripped)) // 4
            lines.append("  " * (depth + 1) + stripped)
        return head + "\n" + "\n".join(lines) + "\n"

    def _lowered(self):
        """The function lowered as TorchScript would (NOTE [ Script IR ]), or None when its
        source uses something the lowering does not know; cached."""
        from . import _script_ir

        if "_ir" not in self.__dict__:
            self.__dict__["_ir"] = None
            if self._tree is not None:
                names = [p.name for p in self._params]
                try:
                    annotated = self._return if self.__dict__.get("_return_annotated") \
                        else None
                    self.__dict__["_ir"] = _script_ir.compile_function(
                        self._fn, names, self._types, annotated)
                except (_script_ir.Unsupported, SyntaxError):
                    pass
        return self.__dict__["_ir"]

    @property
    def graph(self):
        """TorchScript's IR of the function (NOTE [ Script IR ]): PyTorch's structure, kinds,
        types and source places, with ember's own value numbers. NotImplementedError for
        source the lowering does not know."""
        from . import _NO_TORCHSCRIPT, _script_ir
        from ._script_module import GraphText

        lowered = self._lowered()
        if lowered is None:
            raise NotImplementedError(
                f"ScriptFunction.graph: the source of {self.name} uses something ember's "
                f"printer of TorchScript does not know; {_NO_TORCHSCRIPT}")
        return GraphText(_script_ir.graph_text(lowered))

    @property
    def inlined_graph(self):
        """``graph``: a function's calls of other script functions are not lowered as calls,
        so there is nothing to inline."""
        return self.graph

    def graph_for(self, *args, **kwargs):
        """TorchScript's IR specialised for inputs: needs the compiler ember lacks.

        Args:
            *args: example inputs.
            **kwargs: example keyword inputs.
        """
        from . import _NO_TORCHSCRIPT

        raise NotImplementedError(f"ScriptFunction.graph_for: {_NO_TORCHSCRIPT}")

    def _bind(self, args, kwargs) -> list:
        n = len(self._params)
        if len(args) > n:
            raise RuntimeError(
                f"{self.name}() expected at most {n} argument(s) but received "
                f"{len(args) + len(kwargs)} argument(s). Declaration: {self._declaration()}")
        names = [p.name for p in self._params]
        for key in kwargs:
            if key not in names:
                raise RuntimeError(f"Unknown keyword argument '{key}' for operator "
                                   f"'{self.name}'. Schema: {self._declaration()}")
            if names.index(key) < len(args):
                raise RuntimeError(f"Argument '{key}' specified both as positional and "
                                   f"keyword argument. Schema: {self._declaration()}")
        values = []
        for i, p in enumerate(self._params):
            if i < len(args):
                value = args[i]
            elif p.name in kwargs:
                value = kwargs[p.name]
            elif p.default is not inspect.Parameter.empty:
                values.append(p.default)
                continue
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument '{p.name}'. "
                                   f"Declaration: {self._declaration()}")
            ok, converted = _accepts(self._types[i], value)
            if not ok:
                raise RuntimeError(self._type_error(i, value))
            values.append(converted)
        return values

    def _type_error(self, i, value) -> str:
        t, p = self._types[i], self._params[i]
        want = "Tensor (inferred)" if self._inferred[i] else t.annotation_str
        lines = [f"{self.name}() Expected a value of type '{want}' for argument '{p.name}' "
                 f"but instead found type '{type(value).__name__}'."]
        if self._inferred[i]:
            lines.append(f"Inferred '{p.name}' to be of type 'Tensor' because it was not "
                         "annotated with an explicit type.")
        tensor_like = t.kind() == "TensorType" or (
            t.kind() == "OptionalType" and t.getElementType().kind() == "TensorType")
        detail = f"Unable to cast {value} to Tensor" if tensor_like else _pybind_cast(value)
        lines += [f"Position: {i}", f"Value: {value!r}",
                  f"Declaration: {self._declaration()}", f"Cast error details: {detail}"]
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        values = self._bind(args, kwargs)
        return self._fn(*values)

    def save(self, f, _extra_files=None) -> None:
        """Save the function as a ``jit.load``-able archive (NOTE [ Script functions ]).

        Args:
            f: a path or a binary file object.
            _extra_files: ``{name: str or bytes}`` stored beside it.
        """
        from ._archive import save_archive

        if self._tree is None:
            raise RuntimeError(f"ScriptFunction.save: the source of {self.name} cannot be "
                               "read, so it cannot be stored")
        tree = _copy(self._tree)
        tree.decorator_list = []
        source = ast.unparse(ast.fix_missing_locations(ast.Module([tree], type_ignores=[])))
        module = getattr(self._fn, "__module__", None) or "__main__"
        save_archive(PlaceholderModule(source + "\n", self.name, module), f, _extra_files)

    def save_to_buffer(self, _extra_files=None) -> bytes:
        """The archive ``save`` writes, as bytes.

        Args:
            _extra_files: ``{name: str or bytes}`` stored beside it.

        Returns:
            bytes
        """
        buf = io.BytesIO()
        self.save(buf, _extra_files)
        return buf.getvalue()

    def __reduce__(self):
        return (make_script_function, (self._fn,))

    def __repr__(self):
        return f"<torch.jit.torch.jit.ScriptFunction object at {hex(id(self))}>"


def _copy(nodes):
    import copy

    return copy.deepcopy(nodes)


def _hints(fn) -> dict:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # an annotation naming something not importable here
        return {}


def _module_class():
    from ..nn.modules.module import Module

    return Module


class PlaceholderModule(_module_class()):
    """The module a saved ``ScriptFunction`` becomes: ``forward`` runs the function, kept as
    its source (as a TorchScript archive keeps code), so loading needs only the modules the
    function's own module imports (NOTE [ Script functions ]).

    Args:
        source (str): the function's ``def``, without decorators.
        name (str): the function's name.
        module (str): the module whose globals the function sees (``__main__`` for a
            script's own functions).

    Example::

        >>> m = PlaceholderModule("def twice(x): return 2 * x", "twice", "__main__")
        >>> m(ember.ones(2)).tolist()
        [2.0, 2.0]
    """

    def __init__(self, source: str, name: str, module: str):
        super().__init__()
        self.source, self.name, self.module_name = source, name, module

    def _function(self):
        fn = self.__dict__.get("_fn")
        if fn is None:
            import importlib
            import sys

            mod = sys.modules.get(self.module_name)
            if mod is None:
                try:
                    mod = importlib.import_module(self.module_name)
                except ImportError:
                    mod = None
            namespace = dict(vars(mod)) if mod is not None else {}
            if "torch" not in namespace:
                namespace["torch"] = sys.modules.get("torch") or importlib.import_module(
                    __name__.split(".")[0])
            exec(compile(self.source, f"<script function {self.name}>", "exec"), namespace)
            fn = namespace[self.name]
            self.__dict__["_fn"] = fn
        return fn

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_fn", None)
        return state

    def forward(self, *args, **kwargs):
        return self._function()(*args, **kwargs)


def make_script_function(fn):
    """A ``ScriptFunction`` for the Python function ``fn`` (NOTE [ Script functions ]).

    Args:
        fn: a function defined with ``def`` (its source is read for ``code`` and the result
            type; without source the result type is taken to be a Tensor).

    Returns:
        ScriptFunction

    Example::

        >>> def double(x):
        ...     return x + x
        >>> make_script_function(double).schema
        double(Tensor x) -> Tensor
    """
    tree = None
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        parsed = ast.parse(source)
        if parsed.body and isinstance(parsed.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
            tree = parsed.body[0]
    except (OSError, TypeError, SyntaxError, IndentationError):
        tree = None
    _refuse_variable_arguments(fn)
    return ScriptFunction._make(fn, tree)


def make_traced_function(fn, result):
    """The ``ScriptFunction`` ``jit.trace`` makes of ``fn``, which gave ``result`` on the
    example inputs: every argument a Tensor, the result typed by its structure.

    Args:
        fn: a function defined with ``def``.
        result: what ``fn`` returned on the example inputs.

    Returns:
        ScriptFunction

    Example::

        >>> def both(x, y):
        ...     return x + y, x - y
        >>> make_traced_function(both, (ember.ones(1), ember.ones(1))).schema
        both(Tensor x, Tensor y) -> ((Tensor, Tensor))
    """
    tree = None
    try:
        parsed = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        if parsed.body and isinstance(parsed.body[0], ast.FunctionDef | ast.AsyncFunctionDef):
            tree = parsed.body[0]
    except (OSError, TypeError, SyntaxError, IndentationError):
        tree = None
    return ScriptFunction._make(fn, tree, traced_result=result)


def _refuse_variable_arguments(fn) -> None:
    """TorchScript's NotSupportedError for ``*args``, ``**kwargs`` and keyword-only arguments
    with defaults, naming the place in the source."""
    from .frontend import NotSupportedError

    kinds = inspect.Parameter
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) or (
                p.kind is kinds.KEYWORD_ONLY and p.default is not kinds.empty):
            where = ""
            try:
                lines, start = inspect.getsourcelines(fn)
                for i, line in enumerate(lines):
                    if p.name in line:
                        where = (f"\n  File \"{inspect.getsourcefile(fn)}\", line {start + i}"
                                 f"\n{line.rstrip()}")
                        break
            except (OSError, TypeError):
                pass
            raise NotSupportedError(
                "Compiled functions can't take variable number of arguments or use "
                "keyword-only arguments with defaults:" + where + "\n")
