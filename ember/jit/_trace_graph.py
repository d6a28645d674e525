"""The graph ``jit.trace`` records: what a traced module's ``.graph`` and ``.code`` print.

NOTE [ Trace graphs ]
``jit.trace`` runs its argument once on the example inputs (NOTE [ Eager TorchScript ] in
ember/jit/__init__.py). While it runs, a ``TorchFunctionMode`` and module hooks write down
what happened, one graph per module call, the way PyTorch's tracer keeps one graph per
module: a call of a direct submodule is one ``prim::CallMethod`` node in its parent's graph
(the submodule's own operations go into the submodule's graph), and every public operation
on tensors (``torch.tanh``, ``a + b``, ``x.view(3, 4)``, ``F.linear`` inside ``Linear``) is
one ``aten::`` node whose inputs are earlier values, the graph's inputs, or constants.
Values are tensors, known by identity: an operation that returns one of its inputs (an
in-place op, a module whose taken branch returns ``x``) gives back that input's value, as
PyTorch's trace does. Calls that return no tensor (``x.size(0)``, ``x.item()``) are not
nodes: their results are constants of the trace (``TracerWarning`` says so at ``bool()``,
``int()``, ``.item()``; see ``ember.jit._PythonValues``).

``Graph.graph_text()`` prints the graph in TorchScript's IR syntax (``%x.1 : Float(3, 4,
strides=[4, 1], requires_grad=0, device=cpu)``, ``prim::GetAttr``, ``aten::add(%1, %h, %2)
# file.py:14:0``) and ``Graph.code_text()`` as TorchScript's Python-like code: submodules
fetched first (``linear = self.linear``), module calls and values used more than once
named ``_0, _1, ...``, values used once written inside their user. The operations are the
public calls ember saw, not PyTorch's lowered ATen ops (``F.linear`` stays ``linear``;
default arguments PyTorch would spell out are left out), and values are numbered in order,
so the text is PyTorch's in form, not character for character. A submodule returning a
tuple gives a tuple value unpacked by ``prim::TupleUnpack`` (``_0, _1, = (cell).forward(x,
h, )``). ``Graph.inlined`` splices each submodule's graph in place of its call, for
``inlined_graph``.
"""

from __future__ import annotations

import builtins
import os
import sys

from .._core.tensor import Tensor

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# operator methods -> (name, operands swapped) as a trace writes them
_OPERATORS = {
    "__add__": ("add", False), "__radd__": ("add", True), "__sub__": ("sub", False),
    "__rsub__": ("rsub", False), "__mul__": ("mul", False), "__rmul__": ("mul", True),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True),
    "__floordiv__": ("floor_divide", False), "__mod__": ("remainder", False),
    "__pow__": ("pow", False), "__rpow__": ("pow", True), "__matmul__": ("matmul", False),
    "__rmatmul__": ("matmul", True), "__neg__": ("neg", False), "__abs__": ("abs", False),
    "__invert__": ("bitwise_not", False), "__and__": ("__and__", False),
    "__or__": ("__or__", False), "__xor__": ("__xor__", False), "__eq__": ("eq", False),
    "__ne__": ("ne", False), "__lt__": ("lt", False), "__le__": ("le", False),
    "__gt__": ("gt", False), "__ge__": ("ge", False), "_getitem": ("__getitem__", False),
    "__getitem__": ("__getitem__", False), "T": ("numpy_T", False), "mT": ("mT", False),
}
# methods taking sizes as varargs, written with one list argument
_SIZE_LISTS = frozenset({"view", "reshape", "expand", "permute", "repeat", "tile",
                         "new_zeros", "new_ones", "new_empty"})
_SCALAR_TYPES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}


class Value:
    """One value of a trace graph: a graph input, a node's result or a constant."""

    __slots__ = ("name", "type", "uses", "node", "const", "rg")

    def __init__(self, name, type_text, node=None, const=None, rg=False):
        self.name = name
        self.type = type_text
        self.uses = 0
        self.node = node
        self.const = const
        self.rg = rg  # whether the value requires grad (the trace itself runs without grad)


class Node:
    """``outputs = kind[attrs](inputs)`` at ``where`` (file, line) of the user's code."""

    __slots__ = ("kind", "inputs", "kwargs", "outputs", "attr", "where")

    def __init__(self, kind, inputs, kwargs, outputs, attr=None, where=None):
        self.kind = kind
        self.inputs = inputs
        self.kwargs = kwargs
        self.outputs = outputs
        self.attr = attr
        self.where = where


class Graph:
    """The trace of one module call (or of a function): inputs, nodes, outputs."""

    def __init__(self, owner_type: str):
        self.inputs: list = []
        self.nodes: list = []
        self.outputs: list = []
        self.submodules: dict = {}  # attribute name -> Value of prim::GetAttr
        self.self_value = Value("self", owner_type) if owner_type else None
        self.result_shape = None  # "tuple" / "list" / None: how the outputs were returned

    # -- printing ---------------------------------------------------------------------------

    def graph_text(self) -> str:
        """The graph in TorchScript's IR syntax."""
        heads = ([self.self_value] if self.self_value is not None else []) + self.inputs
        pad = " " * len("graph(")
        args = (",\n" + pad).join(f"%{v.name} : {v.type}" for v in heads)
        lines = [f"graph({args}):"]
        for node in self.nodes:
            outs = ", ".join(f"%{o.name} : {o.type}" for o in node.outputs)
            ins = ", ".join(_ir_arg(v) for v in node.inputs)
            if node.kwargs:
                ins = ", ".join(filter(None, [ins] + [f"%{v.name}" for v in
                                                      node.kwargs.values()]))
            attr = f"[{node.attr}]" if node.attr else ""
            where = f" # {node.where[0]}:{node.where[1]}:0" if node.where else ""
            lines.append(f"  {outs} = {node.kind}{attr}({ins}){where}")
        if len(self.outputs) == 1 and self.result_shape is None:
            lines.append(f"  return (%{self.outputs[0].name})")
        else:
            kind = "prim::ListConstruct" if self.result_shape == "list" else \
                "prim::TupleConstruct"
            types = ", ".join(v.type for v in self.outputs)
            n = _next_number(self)
            lines.append(f"  %{n} : ({types}) = {kind}("
                         + ", ".join(f"%{v.name}" for v in self.outputs) + ")")
            lines.append(f"  return (%{n})")
        return "\n".join(lines) + "\n"

    def inlined(self, module) -> Graph:
        """A copy of the graph with each ``prim::CallMethod`` of a submodule replaced by
        the submodule's own graph (what ``inlined_graph`` prints); ``module`` is the module
        this graph belongs to. Values copied out of a submodule's graph get fresh names."""
        out = Graph("")
        out.self_value, out.inputs = self.self_value, list(self.inputs)
        out.result_shape = self.result_shape
        values: dict = {}
        _splice(self, module, out, values, [_next_number(self)], top=True)
        out.outputs = [values.get(id(v), v) for v in self.outputs]
        return out

    def code_text(self) -> str:
        """The graph as TorchScript's Python-like code."""
        heads = ["self"] + [f"{v.name}: Tensor" for v in self.inputs]
        if len(self.outputs) == 1 and self.result_shape is None:
            ret_type = "Tensor"
        else:
            inner = ", ".join("Tensor" for _ in self.outputs)
            ret_type = "List[Tensor]" if self.result_shape == "list" else f"Tuple[{inner}]"
        lines = ["def forward(" + ",\n    ".join(heads) + f") -> {ret_type}:"]
        names: dict = {id(v): v.name for v in self.inputs}
        taken = set()
        for attr, v in self.submodules.items():
            if attr.isidentifier():
                names[id(v)] = attr
                lines.append(f"  {attr} = self.{attr}")
            else:  # ``Sequential``'s "0", "1": not names in Python
                names[id(v)] = f"_{attr}"
                taken.add(f"_{attr}")
                lines.append(f'  _{attr} = getattr(self, "{attr}")')
        returned = {id(v) for v in self.outputs}
        counter = 0
        for node in self.nodes:
            if node.kind in ("prim::GetAttr", "prim::Constant"):
                continue
            if node.kind == "prim::TupleUnpack":
                parts = []
                for part in node.outputs:
                    while f"_{counter}" in taken:
                        counter += 1
                    names[id(part)] = f"_{counter}"
                    parts.append(f"_{counter}, ")
                    counter += 1
                source = node.inputs[0]
                lines.append(f"  {''.join(parts).rstrip()} = {names.get(id(source))}")
                continue
            expr = _code_expr(node, names)
            out = node.outputs[0]
            if out.uses != 1 or node.kind == "prim::CallMethod" and id(out) in returned:
                while f"_{counter}" in taken:
                    counter += 1
                name = f"_{counter}"
                counter += 1
                names[id(out)] = name
                lines.append(f"  {name} = {expr}")
            else:
                names[id(out)] = expr  # written inside its one user
        outs = [names.get(id(v), v.name) for v in self.outputs]
        if len(outs) == 1 and self.result_shape is None:
            lines.append(f"  return {outs[0]}")
        elif self.result_shape == "list":
            lines.append(f"  return [{', '.join(outs)}]")
        else:
            lines.append(f"  return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        return "\n".join(lines) + "\n"


def _splice(graph, module, out, values, counter, top=False) -> None:
    """Copy ``graph``'s nodes into ``out``, inlining calls of submodules that have graphs
    of their own (see ``Graph.inlined``); ``values`` maps ``graph``'s values to ``out``'s."""
    def fresh(v):
        if top:
            return v
        taken = {o.name for n in out.nodes for o in n.outputs}
        if v.name.isidentifier() and v.name not in taken:
            name = v.name  # (an attribute's name, kept while it is the only one)
        else:
            counter[0] += 1
            name = str(counter[0]) if not v.name.isidentifier() else f"{v.name}.{counter[0]}"
        copy = Value(name, v.type, const=v.const, rg=v.rg)
        copy.uses = v.uses
        return copy

    producers = {id(n.outputs[0]): n for n in graph.nodes if n.kind == "prim::GetAttr"}
    for node in graph.nodes:
        ins = [values.get(id(v), v) for v in node.inputs]
        if node.kind == "prim::TupleUnpack" and isinstance(ins[0], tuple):
            for o, v in zip(node.outputs, ins[0], strict=True):
                values[id(o)] = v
            continue
        if node.kind == "prim::CallMethod":
            getter = producers.get(id(node.inputs[0]))
            attr = getter.attr.split('"')[1] if getter is not None else None
            child = module.__dict__.get("_modules", {}).get(attr) if attr else None
            sub = child.__dict__.get("_ember_trace_graph") if child is not None else None
            if sub is not None:
                inner = {id(sub.self_value): ins[0]}
                inner.update({id(p): a for p, a in zip(sub.inputs, ins[1:], strict=False)})
                _splice(sub, child, out, inner, counter)
                results = [inner.get(id(v), v) for v in sub.outputs]
                if node.outputs and results:
                    is_tuple = node.outputs[0].type.startswith("(")
                    values[id(node.outputs[0])] = tuple(results) if is_tuple else results[0]
                continue
        outs = [fresh(o) for o in node.outputs]
        for o, c in zip(node.outputs, outs, strict=True):
            values[id(o)] = c
        kwargs = {k: values.get(id(v), v) for k, v in node.kwargs.items()}
        out.nodes.append(Node(node.kind, ins, kwargs, outs, attr=node.attr, where=node.where))


def _has_params(module) -> bool:
    return any(p.requires_grad for p in module.parameters())


def _order_attributes(module, graph) -> None:
    """Put the ``prim::GetAttr`` nodes first, the last-used attribute first: PyTorch's tracer
    inserts each attribute's lookup at the head of the graph when it is first used, so its
    graphs list them in reverse order of use (``bias`` before ``weight`` for ``F.linear(x,
    self.weight, self.bias)``)."""
    if module is None or not graph.submodules:
        return
    order = list(reversed(graph.submodules))
    graph.submodules = {n: graph.submodules[n] for n in order}
    gets = {id(n.outputs[0]): n for n in graph.nodes if n.kind == "prim::GetAttr"}
    rest = [n for n in graph.nodes if n.kind != "prim::GetAttr"]
    graph.nodes = [gets[id(graph.submodules[n])] for n in order] + rest


def _next_number(graph) -> int:
    n = 0
    for node in graph.nodes:
        for o in node.outputs:
            if o.name.isdigit():
                n = max(n, int(o.name))
    return n + 1


def _ir_arg(v) -> str:
    return f"%{v.name}"


def _literal(x) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_literal(a) for a in x) + "]"
    if x is None:
        return "None"
    return repr(x)


def _code_expr(node, names) -> str:
    def arg(v):
        if v.const is not None:
            return _literal(v.const[0])
        return names.get(id(v), v.name)

    if node.kind == "prim::CallMethod":
        target, *rest = node.inputs
        return f"({names[id(target)]}).forward(" + "".join(f"{arg(v)}, " for v in rest) + ")"
    op = node.kind.split("::", 1)[1]
    parts = [arg(v) for v in node.inputs] + [f"{k}={arg(v)}" for k, v in node.kwargs.items()]
    return f"torch.{op}({', '.join(parts)})"


def tensor_type(t: Tensor, requires_grad=None) -> str:
    """TorchScript's complete tensor type of ``t``: ``Float(3, 4, strides=[4, 1],
    requires_grad=0, device=cpu)``."""
    st = _SCALAR_TYPES.get(t.dtype.name if hasattr(t.dtype, "name") else str(t.dtype),
                           "Tensor")
    dims = ", ".join(str(s) for s in t.shape)
    strides = ", ".join(str(s) for s in t.stride())
    rg = int(t.requires_grad if requires_grad is None else requires_grad)
    sep = ", " if dims else ""
    return f"{st}({dims}{sep}strides=[{strides}], requires_grad={rg}, device={t.device})"


def _qualified(module) -> str:
    cls = type(module).__dict__.get("_original_class") or type(module)
    mod = cls.__module__
    if mod.startswith("ember."):
        mod = "torch." + mod[len("ember."):]
    elif mod in ("__main__", "__mp_main__"):
        return f"__torch__.{cls.__qualname__}"
    return f"__torch__.{mod}.{cls.__qualname__}"


_MACHINERY = tuple(os.path.join(_EMBER_DIR, p) for p in (
    "jit" + os.sep, "overrides.py", "_overrides.py", "nn" + os.sep + "modules" + os.sep +
    "module.py"))


def _user_site(func):
    """(file, line) where the call of ``func`` was made: the innermost frame outside the
    tracing machinery and ``func`` itself (a library's own frame counts, as PyTorch's trace
    points into ``linear.py`` for ``F.linear``)."""
    own = getattr(func, "__code__", None)
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not (f.f_code is own or name.startswith(_MACHINERY)
                or name.startswith("<ember wrapper")):
            return name, f.f_lineno
        f = f.f_back
    return None


class Recorder:
    """Records the graphs of a run (NOTE [ Trace graphs ]): ``graphs[id(module)]`` for each
    module called, ``top`` for the traced object itself."""

    def __init__(self, root):
        self.root = root
        self.graphs: dict = {}
        self.stack: list = []  # (module, graph, values by id(tensor))
        self.calls: list = []  # per module call in progress: whether it opened a graph
        self.keep: list = []  # tensors whose ids name values: kept alive while recording
        self.counter = 0

    def _new_name(self) -> str:
        self.counter += 1
        return str(self.counter)

    # -- frames -----------------------------------------------------------------------------

    def open(self, module, args):
        graph = Graph(_qualified(module) if module is not None else "")
        values: dict = {}
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                name = _input_name(module, i)
                v = Value(name, tensor_type(a), rg=a.requires_grad)
                graph.inputs.append(v)
                values[id(a)] = v
                self.keep.append(a)
        self.stack.append((module, graph, values))
        return graph

    def close(self, output):
        module, graph, values = self.stack.pop()
        _order_attributes(module, graph)
        outs = output if isinstance(output, (tuple, list)) else (output,)
        graph.result_shape = ("list" if isinstance(output, list) else
                              "tuple" if isinstance(output, tuple) else None)
        for o in outs:
            if isinstance(o, Tensor):
                v = self._value(graph, values, o)
                v.uses += 1
                graph.outputs.append(v)
        if module is not None:
            self.graphs.setdefault(id(module), graph)
        return graph

    # -- values -----------------------------------------------------------------------------

    def _value(self, graph, values, t):
        v = values.get(id(t))
        if v is None:  # a tensor from outside the call: a parameter, buffer or constant
            attr = _attribute_of(self.stack[-1][0], t)
            if attr is not None:
                v = self._attribute(graph, attr, "Tensor")
                v.rg = t.requires_grad
            else:
                n = sum(1 for node in graph.nodes if node.kind == "prim::Constant"
                        and node.attr == "value=<Tensor>")
                v = Value(self._new_name(), tensor_type(t), rg=t.requires_grad,
                          const=(_Named(f"CONSTANTS.c{n}"),))
                graph.nodes.append(Node("prim::Constant", [], {}, [v],
                                        attr="value=<Tensor>"))
            values[id(t)] = v
            self.keep.append(t)
        return v

    def _attribute(self, graph, name, type_text):
        target = graph.submodules.get(name)
        if target is None:
            target = Value(name, type_text)
            graph.submodules[name] = target
            graph.nodes.append(Node("prim::GetAttr", [graph.self_value], {}, [target],
                                    attr=f'name="{name}"'))
        return target

    def _arg(self, graph, values, a, where):
        if isinstance(a, Tensor):
            return self._value(graph, values, a)
        v = Value(self._new_name(), _const_type(a), const=(a,))
        graph.nodes.append(Node("prim::Constant", [], {}, [v],
                                attr=f"value={_literal(a)}" if a is not None else None,
                                where=where))
        return v

    # -- events -----------------------------------------------------------------------------

    def module_call(self, module, args):
        """Before ``module`` runs. A direct submodule of the module whose graph is open
        becomes a ``prim::CallMethod`` there and gets its own graph; another module (one
        called twice, one kept outside the module tree) is traced inline, as PyTorch
        does."""
        if not self.stack:
            if module is self.root:
                self.open(module, args)
            self.calls.append(False)
            return
        parent, graph, values = self.stack[-1]
        name = _child_name(parent, module)
        if name is None or id(module) in self.graphs or \
                any(m is module for m, _, _ in self.stack):
            self.calls.append(False)
            return
        target = self._attribute(graph, name, _qualified(module))
        ins = [target] + [self._arg(graph, values, a, None) for a in args]
        for v in ins[1:]:
            v.uses += 1
        graph.nodes.append(Node("prim::CallMethod", ins, {}, [], attr='name="forward"'))
        self.calls.append(True)
        self.open(module, args)

    def module_return(self, module, output):
        """After ``module`` ran (see ``module_call``)."""
        if not self.calls.pop() or len(self.stack) < 2:
            return
        self.close(output)
        _, graph, values = self.stack[-1]
        node = graph.nodes[-1] if graph.nodes else None
        for n in reversed(graph.nodes):
            if n.kind == "prim::CallMethod":
                node = n
                break
        outs = output if isinstance(output, (tuple, list)) else (output,)
        tensors = [o for o in outs if isinstance(o, Tensor)]
        if len(tensors) == 1 and tensors[0] is output and id(output) in values:
            # the module gave back a value its caller already had (``return x``): the
            # call's own result goes unused, as in PyTorch's trace
            node.outputs = [Value(self._new_name(), "NoneType", node)]
            return
        rg = _has_params(module) or any(i.rg for i in node.inputs[1:])
        if len(tensors) > 1 and isinstance(output, tuple):
            # a tuple result: the call gives a tuple value, unpacked into one value per
            # element (the same tensor twice is known by its last element, as in PyTorch)
            v = Value(self._new_name(), "(" + ", ".join("Tensor" for _ in tensors) + ")",
                      node, rg=rg)
            node.outputs = [v]
            v.uses += 1
            parts = [Value(self._new_name(), "Tensor", rg=rg) for _ in tensors]
            unpack = Node("prim::TupleUnpack", [v], {}, parts)
            for part in parts:
                part.node = unpack
            graph.nodes.append(unpack)
            for t, part in zip(tensors, parts, strict=True):
                values[id(t)] = part
                self.keep.append(t)
            return
        v = Value(self._new_name(), "Tensor", node, rg=rg)
        node.outputs = [v]
        for t in tensors:
            values[id(t)] = v
            self.keep.append(t)

    def op(self, func, args, kwargs, result):
        """A public call ``func(*args, **kwargs)`` that gave ``result``."""
        if not self.stack:
            return
        tensors = result if isinstance(result, (tuple, list)) else (result,)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            return
        _, graph, values = self.stack[-1]
        name = getattr(func, "__name__", "op")
        name, swapped = _OPERATORS.get(name, (name, False))
        if swapped and len(args) == 2:
            args = (args[1], args[0])
        where = _user_site(func)
        if name in _SIZE_LISTS and len(args) > 2 and all(
                isinstance(a, int) for a in args[1:]):
            args = (args[0], list(args[1:]))  # ``x.view(2, -1)`` is ``view(x, [2, -1])``
        ins = [self._arg(graph, values, a, where) for a in args
               if isinstance(a, (Tensor, int, float, bool, list, tuple)) or a is None]
        kw = {k: self._arg(graph, values, a, where) for k, a in (kwargs or {}).items()}
        for v in (*ins, *kw.values()):
            v.uses += 1
        rg = any(v.rg for v in (*ins, *kw.values())) and all(
            t.dtype.is_floating_point or t.dtype.is_complex for t in tensors)
        outs = [Value(self._new_name(), tensor_type(t, rg), rg=rg) for t in tensors]
        node = Node(f"aten::{name}", ins, kw, outs, where=where)
        for o in outs:
            o.node = node
        graph.nodes.append(node)
        for t, o in zip(tensors, outs):
            values[id(t)] = o
            self.keep.append(t)


class _Named:
    """A constant printed by name (``CONSTANTS.c0``: a tensor the trace found outside)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _attribute_of(module, t):
    """The name of ``t`` among ``module``'s own parameters and buffers, or None."""
    if module is None:
        return None
    for reg in (module._parameters, module._buffers):
        for name, p in reg.items():
            if p is t:
                return name
    return None


def _const_type(a) -> str:
    if isinstance(a, bool):
        return "bool"
    if isinstance(a, int):
        return "int"
    if isinstance(a, float):
        return "float"
    if a is None:
        return "NoneType"
    if isinstance(a, (list, tuple)):
        return "int[]"
    return "Any"


def _child_name(parent, module):
    if parent is None:
        return None
    for name, child in parent._modules.items():
        if child is module:
            return name
    return None


def _input_name(module, i) -> str:
    import inspect

    fn = getattr(module, "forward", module) if module is not None else None
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[i] if i < len(params) else f"input{i}"


def record(func, args, kwargs):
    """Run ``func(*args, **kwargs)`` and record its graphs (NOTE [ Trace graphs ]).

    Args:
        func: the module or function being traced.
        args: its positional example inputs.
        kwargs: its keyword example inputs.

    Returns:
        ``(result, recorder)``.
    """
    from ..nn.modules import module as _module
    from ..overrides import TorchFunctionMode

    rec = Recorder(func)

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, f, types, a=(), kw=None):
            r = f(*a, **(kw or {}))
            rec.op(f, a, kw, r)
            return r

    pre = _module.register_module_forward_pre_hook(lambda m, a: rec.module_call(m, a))
    post = _module.register_module_forward_hook(lambda m, a, out: rec.module_return(m, out))
    is_module = builtins.isinstance(func, _module.Module)
    try:
        with _Mode():
            if is_module:
                result = func(*args, **kwargs)
            else:
                rec.open(None, args)
                result = func(*args, **kwargs)
        top = rec.close(result)
    finally:
        pre.remove()
        post.remove()
    rec.top = top
    return result, rec
