"""``CodeGen``: the Python source of a ``forward`` computing an fx graph, and how ember's
objects are named in it.

NOTE [ fx spells ember as torch ]
Printed graphs and generated code name ember's functions the way a program written for
PyTorch names them: ``ember.relu`` prints as ``torch.relu``, ``ember.nn.functional.gelu``
as ``torch.nn.functional.gelu``, ``ember.float32`` as ``torch.float32``. A user who wrote
``import ember as torch`` reads back exactly what PyTorch would print, and
``print(gm.code)`` compares line for line with torch's. The generated code runs because its
globals bind the name ``torch`` to the ``ember`` module (``PythonCode.globals``). An ember
object is spelled by the first public namespace holding it (``torch``, then
``torch.nn.functional``, ``torch.linalg``, ``torch.special``, ``torch.fft``,
``torch.nn.init``), else by its defining module's path.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
import sys
from typing import Any

from .node import Node, _spell, _type_repr

__all__ = ["CodeGen", "PythonCode"]

# -- naming ember objects (NOTE [ fx spells ember as torch ]) -----------------------------------

_PUBLIC_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special",
                      "ember.fft", "ember.nn.init", "ember.fx")
_name_cache: dict = {}


def _torch_spelling(path: str) -> str:
    return "torch" + path[len("ember"):] if path.startswith("ember") else path


def _qualified_name(obj) -> str:
    """The dotted name generated code uses for ``obj`` (a function or class)."""
    from .._dispatch import OpOverload, OpOverloadPacket

    if isinstance(obj, (OpOverload, OpOverloadPacket)):
        # ``torch.ops.aten.linear.default``, ``torch.ops.profiler._record_function_enter``
        return f"torch.ops.{obj}"
    name = getattr(obj, "__name__", None)
    if name is not None and getattr(builtins, name, None) is obj:
        return name
    if name == "<lambda>":
        raise RuntimeError("Unable to represent lambda")
    key = id(obj)
    hit = _name_cache.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    module = getattr(obj, "__module__", None) or ""
    if module == "_operator":
        module = "operator"
    found = None
    if module.startswith("ember"):
        for ns in _PUBLIC_NAMESPACES:
            m = sys.modules.get(ns)
            if m is not None and name and getattr(m, name, None) is obj:
                found = f"{_torch_spelling(ns)}.{name}"
                break
        if found is None:
            for ns in _PUBLIC_NAMESPACES:
                m = sys.modules.get(ns)
                for k, v in (vars(m).items() if m is not None else ()):
                    if v is obj and not k.startswith("_"):
                        found = f"{_torch_spelling(ns)}.{k}"
                        break
                if found:
                    break
        if found is None:
            found = f"{_torch_spelling(module)}.{getattr(obj, '__qualname__', name)}"
    else:
        found = f"{module}.{getattr(obj, '__qualname__', name)}"
    _name_cache[key] = (obj, found)
    return found


def _snake_case(s: str) -> str:
    """``'MyModule'`` -> ``'my_module'``: node names from class names."""
    out = []
    for i, c in enumerate(s):
        if c.isupper() and i > 0 and (s[i - 1].islower() or s[i - 1].isdigit()):
            out.append("_")
        out.append(c.lower())
    return "".join(out)


class _Namespace:
    """Unique Python identifiers for nodes and globals: a clash with a used name, a keyword
    or a builtin takes the next free ``_N`` suffix (``sum`` -> ``sum_1``)."""

    _illegal = re.compile(r"[^0-9a-zA-Z_]+")
    _suffix = re.compile(r"(.*)_(\d+)$")

    def __init__(self):
        self._obj_to_name: dict = {}
        self._used: set = set()
        self._base_count: dict = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)][1]
        candidate = self._illegal.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        m = self._suffix.match(candidate)
        if m is None:
            base, num = candidate, None
        else:
            base, num = m.group(1), int(m.group(2))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count.get(base, 0)
        while candidate in self._used or self._is_illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = (obj, candidate)
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[id(obj)] = (obj, name)

    def _rename_object(self, obj: Any, name: str) -> None:
        self._obj_to_name[id(obj)] = (obj, name)

    @staticmethod
    def _is_illegal(name: str, obj: Any) -> bool:
        if keyword.iskeyword(name):
            return True
        if name in builtins.__dict__:
            return builtins.__dict__[name] is not obj
        return False


# -- code generation ------------------------------------------------------------------------------

#: operator functions printed as Python operators in generated code
_MAGIC = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
}
_INPLACE = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


def _format_target(base: str, target: str) -> str:
    """``self`` + ``'layer.0'`` -> ``getattr(self.layer, "0")``: attribute paths whose parts
    are not identifiers use getattr."""
    out = base
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() else f'getattr({out}, "{part}")'
    return out


class PythonCode:
    """The source of a generated ``forward`` and the globals it runs with.

    Args:
        src: the Python source.
        globals: the names the source refers to.
        _lineno_map: generated line number -> index of the node it came from (or None).

    Example::

        >>> from ember.fx.graph import PythonCode
        >>> PythonCode("pass", {}).src
        'pass'
    """

    def __init__(self, src: str, globals: dict, _lineno_map: dict | None = None):
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map


class CodeGen:
    """Turns a graph into Python source. Subclass it and pass it to ``Graph.set_codegen``
    to change how inputs are taken or outputs returned (``process_inputs``,
    ``process_outputs``, ``gen_fn_def``, ``generate_output``).

    Example::

        >>> import ember.fx as fx
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> _ = g.output(g.call_method("relu", (x,)))
        >>> print(g.python_code("self").src.strip())
        def forward(self, x):
            relu = x.relu();  x = None
            return relu
    """

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars: list, maybe_return_annotation: str) -> str:
        """The ``def`` line of the generated function.

        Args:
            free_vars: the parameter strings.
            maybe_return_annotation: `` -> T`` or empty.

        Returns:
            The line.
        """
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars = ["self"] + list(free_vars)
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Any) -> str:
        """The ``return`` statement of the generated function.

        Args:
            output_args: the output node's argument, printed.

        Returns:
            The statement.
        """
        return f"return {output_args!r}"

    def process_inputs(self, *args: Any) -> Any:
        """Turn the caller's inputs into the graph's placeholders' values (identity here).

        Args:
            args: the inputs.

        Returns:
            The values, in placeholder order.
        """
        return args

    def process_outputs(self, outputs: Any) -> Any:
        """Turn the graph's output into what the caller gets (identity here).

        Args:
            outputs: the output node's value.

        Returns:
            The value returned.
        """
        return outputs

    def additional_globals(self) -> list:
        """Extra ``(name, object)`` pairs the generated code needs.

        Returns:
            A list of pairs (empty here).
        """
        return []

    def _gen_python_code(self, nodes, root_module: str, namespace: _Namespace, *,
                         verbose: bool = False) -> PythonCode:
        import ember

        free_vars: list = []
        body: list = []
        globals_: dict = {"torch": ember, "ember": ember, "inf": math.inf, "nan": math.nan,
                          "NoneType": type(None), "device": ember.device}
        for name in globals_:
            namespace.create_name(name, globals_[name])
        wrapped_fns: dict = {}
        return_annotation = [""]

        def add_global(name_hint: str, obj: Any) -> str:
            if getattr(obj, "__name__", None) and \
                    getattr(builtins, obj.__name__, None) is obj:
                return obj.__name__
            if (getattr(obj, "__module__", None) or "").startswith(("ember", "torch")) and \
                    name_hint.startswith("torch."):
                return name_hint
            name = namespace.create_name(name_hint, obj)
            globals_[name] = obj
            return name

        for name, obj in self.additional_globals():
            add_global(name, obj)

        def type_repr(t) -> str:
            if t is None:
                return "None"
            if isinstance(t, type):
                if t.__module__ == "builtins":
                    return t.__qualname__
                return add_global(_qualified_name(t), t)
            if isinstance(t, (int, str)):
                return repr(t)
            origin = getattr(t, "__origin__", None)
            if origin is not None:  # list[int], typing.Optional[X], TensorType[(1, Dyn)]
                args = getattr(t, "__args__", ())
                args = args if isinstance(args, tuple) else (args,)
                inner = ",".join(type_repr(a) for a in args)
                return f"{type_repr(origin)}[{inner}]" if inner else type_repr(origin)
            return add_global(_type_repr(t), t)

        def get_repr(arg) -> str:
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                cls = type(arg)
                return f"{add_global(_qualified_name(cls), cls)}{tuple(arg)!r}"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({get_repr(arg[0])},)"
                return "(" + ", ".join(get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(get_repr(a) for a in arg) + "]"
            if isinstance(arg, dict):
                return "{" + ", ".join(f"{get_repr(k)}: {get_repr(v)}"
                                       for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({get_repr(arg.start)}, {get_repr(arg.stop)}, " \
                       f"{get_repr(arg.step)})"
            if isinstance(arg, ember.Tensor):
                dtype = str(arg.dtype).split(".")[-1]
                return f"torch.Tensor(size={list(arg.size())}, dtype={dtype})"
            import enum

            if isinstance(arg, enum.Enum):
                cls = arg.__class__
                return f"{add_global(cls.__name__, cls)}.{arg.name}"
            import numpy

            if isinstance(arg, numpy.dtype):  # kernel-level arguments of captured ops
                return f"{add_global('numpy', numpy)}.dtype({str(arg)!r})"
            if isinstance(arg, numpy.generic):
                return f"{add_global('numpy', numpy)}.{type(arg).__name__}({arg.item()!r})"
            return _spell(arg)

        def format_args(args, kwargs) -> str:
            parts = [get_repr(a) for a in args]
            parts.extend(f"{k} = {get_repr(v)}" for k, v in kwargs.items())
            return ", ".join(parts)

        # the last use of each value: it is freed (set to None) right after
        node_to_last_use: dict = {}
        user_to_last_uses: dict = {}
        for node in reversed(nodes):
            for inp in node._input_nodes:
                if inp not in node_to_last_use:
                    node_to_last_use[inp] = node
                    user_to_last_uses.setdefault(node, []).append(inp)

        def delete_unused_values(user: Node) -> None:
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:
                to_delete.append(user)
            if to_delete:
                body.append(";  " + " = ".join([repr(n) for n in to_delete] + ["None"]) + "\n")
            else:
                body.append("\n")

        def emit_node(node: Node) -> None:
            ann = f" : {type_repr(node.type)}" if node.type is not None else ""
            if node.op == "placeholder":
                default = "" if not node.args else f" = {get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{ann}{default}")
                raw = node.target.replace("*", "")
                if raw != repr(node):
                    body.append(f"{node!r} = {raw}\n")
                return
            if node.op == "call_method":
                body.append(f"{node!r}{ann} = {_format_target(get_repr(node.args[0]), node.target)}"
                            f"({format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                t = node.target
                if getattr(t, "__module__", "") == "_operator" and t.__name__ in _MAGIC:
                    body.append(f"{node!r}{ann} = "
                                f"{_MAGIC[t.__name__].format(*(get_repr(a) for a in node.args))}")
                    return
                if getattr(t, "__module__", "") == "_operator" and t.__name__ in _INPLACE:
                    body.append(
                        f"{_INPLACE[t.__name__].format(*(get_repr(a) for a in node.args))};  "
                        f"{node!r}{ann} = {get_repr(node.args[0])}")
                    return
                global_name = add_global(_qualified_name(t), t)
                if global_name == "getattr" and len(node.args) == 2 and \
                        isinstance(node.args[1], str) and node.args[1].isidentifier():
                    body.append(f"{node!r}{ann} = "
                                f"{_format_target(get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{node!r}{ann} = {global_name}({format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
                return
            if node.op == "call_module":
                body.append(f"{node!r}{ann} = {_format_target(root_module, node.target)}"
                            f"({format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                body.append(f"{node!r}{ann} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(_Repr(get_repr(node.args[0]))))
                return
            raise RuntimeError(f"node {node.name}: unknown opcode {node.op!r}")

        prev_trace = [None]
        for node in nodes:
            if verbose and node.op not in ("placeholder", "output"):
                trace = node.meta.get("stack_trace")
                if trace and trace != prev_trace[0]:
                    prev_trace[0] = trace
                    body.append(f"\n# {_trace_summary(trace)}\n")
                elif not trace and prev_trace[0] != "":
                    prev_trace[0] = ""
                    body.append("\n# No stacktrace found for following nodes\n")
            emit_node(node)
            delete_unused_values(node)
        if not body:
            body.append("pass\n")
        prologue = self.gen_fn_def(free_vars, return_annotation[0])
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        wrap_stmts = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")'
                               for name in wrapped_fns)
        fn_code = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        return PythonCode(fn_code, globals_, None)


def _trace_summary(trace: str) -> str:
    """``File "f.py", line 8, in forward\n    y = f(x)`` -> ``File: f.py:8 in forward, code:
    y = f(x)``: the comment ``print_readable`` puts above a node."""
    lines = trace.strip().splitlines()
    m = re.match(r'File "(.+)", line (\d+), in (.+)', lines[0].strip())
    if m is None:
        return lines[0].strip()
    code = lines[1].strip() if len(lines) > 1 else ""
    return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {code}"


class _Repr:
    """A string that ``repr`` leaves as it is (for ``generate_output``)."""

    def __init__(self, s: str):
        self.s = s

    def __repr__(self):
        return self.s


