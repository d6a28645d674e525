"""``ember._dynamo.explain``: the graphs, graph breaks and ops a compiled function would have.

NOTE [ Explain by recording ]
TorchDynamo reads a function's bytecode, puts the tensor operations it can follow into fx
graphs, and *breaks* the graph where it cannot follow: a Python branch on a tensor's value
(``if x.sum() > 0``), ``Tensor.item()``, ``print``, ``torch._dynamo.graph_break()``. After a
break it runs that instruction in Python and starts a new graph for the rest of the frame (a
"resume" function). ``explain(f)(*args)`` runs ``f`` once that way and reports what came out.

ember has no bytecode compiler, so ``explain`` runs ``f`` eagerly, once, and *records* what
the compiler would have seen:

- every public call (``TorchFunctionMode``) is an op of the current graph: a Python operator
  (read off the caller's instruction: ``a + b`` is ``operator.add``), a Tensor method
  (``call_method``, not counted among the ops, as in PyTorch) or a function;
- a profile hook (``sys.setprofile``, this thread only) sees the breaks PyTorch makes: a
  user frame calling ``Tensor.__bool__`` (a data-dependent jump), ``__float__``/``__int__``/
  ``__index__``/``item()`` (a scalar read), ``tolist()`` of a non-integer tensor,
  ``graph_break()``, and ``print`` (whose arguments' types are read by replaying the loads
  the caller's bytecode made for them: a profile hook sees a builtin's call, not its
  arguments);
- a break closes the current graph with its reason. TorchDynamo inlines the functions a frame
  calls; a break inside one makes the *calling* frame break at that call (reason with the
  whole user stack) and compiles the called frame on its own, so the ops recorded since the
  call moved to a graph of the inner frame; when a frame that broke returns, its caller
  resumes in a new graph. A graph with no ops is not compiled, so its reason is not listed
  (PyTorch's ``explain`` of a function that only prints reports no graph and -1 breaks).

Each graph is an ``ember.fx.GraphModule`` that recomputes its ops from placeholders (tensors
from outside the graph, named ``L_<local>_`` after the variable holding them, as TorchDynamo
names its inputs) and returns what later code used. Guards are the ones TorchDynamo installs
for every graph plus a ``TENSOR_MATCH`` per tensor input; nothing is guarded at run time.
"""

from __future__ import annotations

import bisect
import builtins
import dis
import operator
import os
import sys
import threading
import time
import traceback
import types
import warnings

from ..overrides import TorchFunctionMode
from ._explain_output import ExplainOutput, GraphCompileReason, Guard, _guards, _times_table

__all__ = ["ExplainOutput", "GraphCompileReason", "Guard", "explain", "record_graphs"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# -- reasons ------------------------------------------------------------------------------------

def _reason(kind: str, detail=None, nested: bool = False) -> str:
    """The message of a break of ``kind`` (PyTorch's headline, explanation and hints)."""
    if kind == "jump":
        return "Data-dependent branching" if nested else "generic_jump TensorVariable()"
    if kind == "item":
        return ("Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
                "  Explanation: Dynamo does not support tracing `Tensor.item()` with "
                "config.capture_scalar_outputs=False.\n"
                "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
                "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the "
                "captured graph.\n")
    if kind == "tolist":
        return ("Tensor.tolist() with non-integer tensor\n"
                "  Explanation: Dynamo currently does not support tracing `tolist()` on "
                "non-integer tensors.\n"
                "  Hint: Ensure the input tensor to `tolist()` is an integer type (e.g., int8, "
                "int16, int32, int64).\n")
    if kind == "graph_break":
        return ("Call to `torch._dynamo.graph_break()`\n"
                f"  Explanation: User-inserted graph break. Message: {detail}\n"
                "  Hint: Remove the `torch._dynamo.graph_break()` call.\n")
    # a builtin the compiler cannot put in a graph (``print``)
    name, arg_types, has_kwargs = detail
    return ("Failed to trace builtin operator\n"
            f"  Explanation: Dynamo does not know how to trace builtin operator `{name}` with "
            f"argument types {arg_types} (has_kwargs {has_kwargs})\n"
            f"  Hint: Avoid calling builtin `{name}` with argument types {arg_types}. Consider "
            f"using an equivalent alternative function/method to `{name}`.\n"
            "  Hint: If you are attempting to call a logging function (e.g. `print`), you can "
            "try adding it to `torch._dynamo.config.reorderable_logging_functions`.\n")


# -- what a call is, read off the caller's instruction -------------------------------------------

_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
           "@": operator.matmul, "&": operator.and_, "|": operator.or_, "^": operator.xor,
           "<<": operator.lshift, ">>": operator.rshift,
           "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul,
           "/=": operator.itruediv, "//=": operator.ifloordiv, "%=": operator.imod,
           "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand,
           "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
           ">>=": operator.irshift}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}
_UNARY = {"UNARY_NEGATIVE": operator.neg, "UNARY_INVERT": operator.invert,
          "UNARY_POSITIVE": operator.pos}
_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rdiv__", "__rfloordiv__",
              "__rmod__", "__rpow__", "__rmatmul__", "__rand__", "__ror__", "__rxor__",
              "__rlshift__", "__rrshift__"}
_instructions: dict = {}


def _instruction(frame):
    code = frame.f_code
    table = _instructions.get(code)
    if table is None:
        table = _instructions[code] = list(dis.get_instructions(code))
    at = bisect.bisect_right([i.offset for i in table], frame.f_lasti) - 1
    return table[at] if at >= 0 else None


def _call_form(func, args, caller):
    """``(op, target, args)`` for a public call made by ``caller``: a Python operator
    (``call_function`` of ``operator.*``), a Tensor method (``call_method``) or a function."""
    from .._core.tensor import Tensor
    from ..fx._recorded_calls import _callee_name, _owner_value

    name = getattr(func, "__name__", "")
    ins = _instruction(caller) if caller is not None else None
    if ins is not None:
        op = ins.opname
        target = None
        if op == "BINARY_OP":
            target = _BINARY.get(ins.argrepr)
        elif op == "COMPARE_OP":
            target = _COMPARE.get(ins.argval)
        elif op in _UNARY:
            target = _UNARY[op]
        elif op == "BINARY_SUBSCR":
            target = operator.getitem
        elif op == "STORE_SUBSCR":
            target = operator.setitem
        if target is not None:
            if name in _REFLECTED:
                args = (args[1], args[0]) + tuple(args[2:])
            return "call_function", target, args
        if op.startswith("CALL"):
            callee = _callee_name(caller)
            if callee is not None:
                written, owner = callee
                value = _owner_value(caller, owner)
                if isinstance(value, Tensor) and args and args[0] is value:
                    return "call_method", written, args
                if owner is None and written in ("abs", "pow", "round", "divmod"):
                    return "call_function", getattr(builtins, written), args
    if isinstance(func, types.MethodType) or "." in getattr(func, "__qualname__", ""):
        if args and isinstance(args[0], Tensor):
            return "call_method", name, args
    return "call_function", func, args


# -- the recording --------------------------------------------------------------------------------

class _Op:
    __slots__ = ("kind", "target", "args", "kwargs", "result", "stack", "name")

    def __init__(self, kind, target, args, kwargs, result, stack, name=None):
        self.kind, self.target, self.args, self.kwargs = kind, target, args, kwargs
        self.result, self.stack, self.name = result, stack, name


class _Graph:
    __slots__ = ("home", "ops", "reason", "seconds", "made", "names", "uses")

    def __init__(self, home, ops=None):
        self.home, self.ops, self.reason, self.seconds = home, ops or [], None, 0.0
        self.made = {id(op.result) for op in self.ops}  # ids of the tensors ops made
        self.uses = []  # the tensors the break that ended the graph read
        self.names = {}  # id(tensor) -> the home frame's local holding it when first read

    def read(self, tensors):
        """Name the graph's inputs among ``tensors`` after the home frame's locals."""
        for t in tensors:
            key = id(t)
            if key in self.made or key in self.names or self.home is None:
                continue
            self.names[key] = next((f"L_{name}_" for name, v in self.home.f_locals.items()
                                    if v is t), None) or _state_name(self.home, t)

    def add(self, op):
        self.read(_flat_tensors((op.args, op.kwargs), []))
        self.ops.append(op)
        for t in _flat_tensors(op.result, []):
            self.made.add(id(t))


def _is_user(frame) -> bool:
    name = frame.f_code.co_filename
    return not (name.startswith(_EMBER_DIR) or name.startswith("<ember wrapper"))


class _Recorder(TorchFunctionMode):
    """Runs one call of the explained function and splits what it does into graphs (NOTE
    [ Explain by recording ])."""

    def __init__(self):
        super().__init__()
        self.thread = threading.get_ident()
        self.base = None  # the frame that calls the explained function
        self.homes: list = []  # frames compiled on their own, outermost first
        self.current = _Graph(None)
        self.done: list[_Graph] = []
        self.resumed: dict = {}  # frame -> the resume function's name
        self.break_uses: list = []  # tensors a break read (their graph outputs them)
        self.started = time.perf_counter()
        from .._core.tensor import Tensor

        hooks = {Tensor.__bool__: "jump", Tensor.__float__: "item", Tensor.__int__: "item",
                 Tensor.__index__: "item"}
        from . import graph_break

        hooks[graph_break] = "graph_break"
        self.hooks = {fn.__code__: kind for fn, kind in hooks.items()}

    # frames
    def _stack(self, frame) -> list:
        """The user frames from the explained function down to ``frame``."""
        out = []
        while frame is not None and frame is not self.base:
            if _is_user(frame):
                out.append(frame)
            frame = frame.f_back
        return out[::-1]

    def _summary(self, frames) -> list:
        out = []
        for fr in frames:
            name = self.resumed.get(fr, fr.f_code.co_name)
            out.append(traceback.FrameSummary(fr.f_code.co_filename, fr.f_lineno, name,
                                              lookup_line=False))
        return out

    def _flush(self, graph, reason):
        if reason is None:  # the home frame returned
            home = [graph.home] if graph.home is not None else []
            reason = GraphCompileReason("return_value", self._summary(home), graph_break=False)
        graph.reason = reason
        graph.seconds = time.perf_counter() - self.started
        self.started = time.perf_counter()
        if graph.ops:
            self.done.append(graph)

    def _sync(self, stack):
        """Close the graphs of frames that have returned; the caller resumes in a new one."""
        while self.homes and self.homes[-1] not in stack:
            self.homes.pop()
            self._flush(self.current, None)
            self.current = _Graph(self.homes[-1] if self.homes else None)
        if not self.homes and stack:
            self.homes.append(stack[0])
            self.current.home = stack[0]

    def brk(self, kind, frame, detail=None, uses=()):
        """A graph break of ``kind`` made by user frame ``frame``."""
        stack = self._stack(frame)
        self._sync(stack)
        self.break_uses.extend(uses)
        j = stack.index(self.homes[-1]) if self.homes and self.homes[-1] in stack else 0
        while j < len(stack) - 1:
            # a break inside a function the home frame inlined: the home frame breaks at the
            # call, and the called frame is compiled on its own from its first op
            inner = stack[j + 1]
            cut = next((i for i, op in enumerate(self.current.ops) if inner in op.stack),
                       len(self.current.ops))
            before, after = self.current.ops[:cut], self.current.ops[cut:]
            self.current.ops = before
            self._flush(self.current, GraphCompileReason(
                _reason(kind, detail, nested=True), self._summary(stack[j:])))
            self._resume(stack[j])
            self.homes.append(inner)
            self.current = _Graph(inner)
            for op in after:
                self.current.add(op)
            j += 1
        top = stack[-1] if stack else None
        self.current.uses = [t for t in uses if t is not None]
        self._flush(self.current, GraphCompileReason(_reason(kind, detail),
                                                     self._summary(stack[-1:])))
        if top is not None:
            self._resume(top)
        self.current = _Graph(top)

    def _resume(self, frame):
        if frame not in self.resumed:
            self.resumed[frame] = (f"torch_dynamo_resume_in_{frame.f_code.co_name}_at_"
                                   f"{frame.f_lineno}")

    # the hooks
    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        if threading.get_ident() != self.thread:
            return func(*args, **kwargs)
        caller = _caller_of_public(sys._getframe(1))
        name = getattr(func, "__name__", "")
        from .._core.tensor import Tensor

        if name in ("item", "tolist"):
            if caller is not None and _is_user(caller) and args and isinstance(args[0], Tensor):
                if name == "item" or args[0].dtype.is_floating_point or \
                        args[0].dtype.is_complex:
                    self.brk(name, caller, uses=(args[0],))
            return func(*args, **kwargs)
        result = func(*args, **kwargs)
        if not _holds_tensor(result):
            return result  # sizes, numbers, arrays: not graph values
        kind, target, call_args = _call_form(func, args, caller)
        stack = self._stack(caller) if caller is not None else []
        self._sync(stack)
        self.current.add(_Op(kind, target, tuple(call_args), dict(kwargs), result, stack,
                             _stored_name(caller)))
        return result

    def profile(self, frame, event, arg):
        if event == "c_call" and arg is print and _is_user(frame):
            self.printed(frame)
            return
        if event != "call":
            return
        kind = self.hooks.get(frame.f_code)
        if kind is None or frame.f_back is None or not _is_user(frame.f_back):
            return
        if kind == "graph_break":
            self.brk(kind, frame.f_back, detail=frame.f_locals.get("msg"))
        else:
            self.brk(kind, frame.f_back, uses=(frame.f_locals.get("self"),))

    def printed(self, frame):
        """``print`` called by user frame ``frame``: a break naming the arguments' types."""
        self.brk("builtin", frame, detail=("print",) + _call_argument_types(frame))


_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")


def _stored_name(frame):
    """The variable the result of the call ``frame`` is making goes into, when the next
    instruction stores it (TorchDynamo names such a node after it), else None."""
    if frame is None:
        return None
    ins = _instruction(frame)
    table = _instructions[frame.f_code]
    at = table.index(ins) if ins is not None else -1
    for nxt in table[at + 1:at + 4]:
        if nxt.opname in ("CACHE", "PRECALL", "EXTENDED_ARG"):
            continue
        if nxt.opname in _STORES and isinstance(nxt.argval, str):
            return nxt.argval
        break
    return None


def _state_name(frame, tensor):
    """``L_self_modules_fc_parameters_weight_`` for ``self.fc.weight`` (a parameter or buffer
    of a module in ``frame``'s locals), TorchDynamo's name for such an input; else None."""
    from ..nn.modules.module import Module

    for local, value in frame.f_locals.items():
        if not isinstance(value, Module):
            continue
        for kind, named in (("parameters", value.named_parameters),
                            ("buffers", value.named_buffers)):
            for path, t in named():
                if t is tensor:
                    *mods, leaf = path.split(".")
                    parts = [f"modules_{m}" for m in mods] + [f"{kind}_{leaf}"]
                    return f"L_{local}_" + "_".join(parts) + "_"
    return None


def _caller_of_public(frame):
    """The frame that called the public function whose ``__torch_function__`` handling
    ``frame`` is in (the frame above the public function's own)."""
    handler = os.path.join(_EMBER_DIR, "_overrides.py")
    while frame is not None and not (frame.f_code.co_filename == handler
                                     and frame.f_code.co_name == "handle"):
        frame = frame.f_back
    public = frame.f_back if frame is not None else None
    return public.f_back if public is not None else None


def _call_argument_types(frame) -> tuple:
    """``(type names, has_kwargs)`` of the positional arguments of the call ``frame`` is
    making, found by replaying the simple loads (constants, variables, attributes, f-strings)
    between the callable's load and the call; ``object`` where a value cannot be told."""
    table = _instructions.get(frame.f_code) or []
    if not table:
        _instruction(frame)
        table = _instructions[frame.f_code]
    at = bisect.bisect_right([i.offset for i in table], frame.f_lasti) - 1
    call = table[at]
    count = call.arg or 0
    start = at - 1
    while start >= 0 and not (table[start].opname in ("LOAD_GLOBAL", "LOAD_NAME")
                              and table[start].argval == "print"):
        start -= 1
    missing = object()
    stack, kw_names = [], ()
    for ins in table[start + 1:at]:
        op = ins.opname
        if op == "LOAD_CONST":
            stack.append(ins.argval)
        elif op in ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE"):
            stack.append(frame.f_locals.get(ins.argval, missing))
        elif op in ("LOAD_GLOBAL", "LOAD_NAME"):
            stack.append(frame.f_locals.get(ins.argval, frame.f_globals.get(
                ins.argval, getattr(builtins, ins.argval, missing))))
        elif op in ("LOAD_ATTR", "LOAD_METHOD") and stack:
            stack[-1] = getattr(stack[-1], ins.argval, missing) \
                if stack[-1] is not missing else missing
        elif op == "FORMAT_VALUE":
            has_spec = bool((ins.arg or 0) & 0x04)
            del stack[len(stack) - 1 - has_spec:]
            stack.append("")
        elif op == "BUILD_STRING":
            del stack[len(stack) - ins.arg:]
            stack.append("")
        elif op == "KW_NAMES":
            kw_names = frame.f_code.co_consts[ins.arg]
        elif op in ("PRECALL", "CACHE", "NOP", "EXTENDED_ARG", "PUSH_NULL", "RESUME"):
            continue
        elif op in ("CALL", "CALL_FUNCTION", "CALL_METHOD"):
            del stack[len(stack) - (ins.arg or 0) - 1:]
            stack.append(missing)
        else:  # anything else computes one value from what it pops: not replayed
            try:
                effect = dis.stack_effect(ins.opcode, ins.arg, jump=False) \
                    if ins.opcode >= dis.HAVE_ARGUMENT else dis.stack_effect(ins.opcode)
            except ValueError:
                effect = 0
            del stack[len(stack) - max(1 - effect, 0):]
            stack.append(missing)
    positional = max(count - len(kw_names), 0)
    values = stack[-count:][:positional] if count else []
    if len(values) != positional:
        values = [missing] * positional
    return ([("object" if v is missing else type(v).__name__) for v in values],
            bool(kw_names))


def _holds_tensor(value) -> bool:
    from .._core.tensor import Tensor

    if isinstance(value, Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(isinstance(v, Tensor) for v in value)
    return False


def _flat_tensors(value, out):
    from .._core.tensor import Tensor

    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _flat_tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat_tensors(v, out)
    return out


# -- building the graphs ---------------------------------------------------------------------------

def _input_name(graph, tensor, used: set) -> str:
    """``L_<name>_`` after the local that held ``tensor`` (TorchDynamo's input names)."""
    name = graph.names.get(id(tensor))
    if name is not None and name not in used:
        return name
    i = 0
    while f"arg{i}" in used:
        i += 1
    return f"arg{i}"


def _build(graph, later_uses: set):
    """The ``GraphModule`` of one recorded graph, its tensor inputs and their names."""
    from .. import fx
    from .._core.tensor import Tensor
    from ..nn.modules.module import Module

    g = fx.Graph()
    made = {}  # id(tensor) -> node
    inputs, examples = [], []
    used_names: set = set()

    def arg(v):
        if isinstance(v, Tensor):
            node = made.get(id(v))
            if node is None:
                name = _input_name(graph, v, used_names)
                used_names.add(name)
                node = made[id(v)] = g.placeholder(name, type_expr=Tensor)
                inputs.append(name)
                examples.append(v)
            return node
        if isinstance(v, (tuple, list)):
            return type(v)(arg(x) for x in v)
        if isinstance(v, dict):
            return {k: arg(x) for k, x in v.items()}
        return v

    made_here = set()
    for op in graph.ops:  # placeholders first, in the order the graph reads its inputs
        for v in _flat_tensors((op.args, op.kwargs), []):
            if id(v) not in made_here:
                arg(v)
        made_here.update(id(t) for t in _flat_tensors(op.result, []))
    results = []
    for op in graph.ops:
        a, k = arg(op.args), arg(op.kwargs)
        if op.name is not None:  # the op's own name is used up, as TorchDynamo renames
            g._graph_namespace.create_name(g._target_to_str(op.target), None)
        node = g.create_node(op.kind, op.target, a, k, name=op.name)
        if isinstance(op.result, Tensor):
            made[id(op.result)] = node
            results.append((op.result, node))
        else:
            for i, v in enumerate(op.result):
                if isinstance(v, Tensor):
                    item = g.call_function(operator.getitem, (node, i))
                    made[id(v)] = item
                    results.append((v, item))
    # what the break read first (it is on the stack at the break), then the live values
    first = [made[id(t)] for t in graph.uses if id(t) in made]
    outs = first + [node for value, node in results
                    if id(value) in later_uses and node not in first]
    if not outs:
        outs = [results[-1][1]]
    g.output(tuple(outs))
    gm = fx.GraphModule(Module(), g)
    gm.compile_subgraph_reason = graph.reason
    return gm, examples, inputs


def record_graphs(f, args, kwargs) -> tuple:
    """Run ``f(*args, **kwargs)`` once, recording the graphs a compiler would capture (NOTE
    [ Explain by recording ]).

    Args:
        f: a function or module.
        args: its positional arguments.
        kwargs: its keyword arguments.

    Returns:
        ``(result, graphs)``: what ``f`` returned, and for each graph a tuple
        ``(GraphModule, example_inputs, input_names, seconds)``.
    """
    rec = _Recorder()
    rec.base = sys._getframe(0)
    old_profile = sys.getprofile()
    sys.setprofile(rec.profile)  # (this thread only)
    try:
        with rec:
            result = f(*args, **kwargs)
    finally:
        sys.setprofile(old_profile)
    rec._flush(rec.current, None)
    # what each graph outputs: the tensors later graphs, breaks or the caller read
    read_later: set = {id(t) for t in _flat_tensors(result, [])}
    read_later.update(id(t) for t in rec.break_uses if t is not None)
    later = []
    for graph in reversed(rec.done):
        later.append(set(read_later))
        for op in graph.ops:
            read_later.update(id(t) for t in _flat_tensors((op.args, op.kwargs), []))
    graphs = [(*_build(graph, uses), graph.seconds)
              for graph, uses in zip(rec.done, reversed(later))]
    rec.current = rec.homes = rec.done = rec.resumed = rec.break_uses = None
    return result, graphs


def _run(f, args, kwargs) -> ExplainOutput:
    from . import reset

    reset()
    _, recorded = record_graphs(f, args, kwargs)
    graphs, ops_per_graph, reasons, guards, seconds = [], [], [], [], []
    for gm, _, inputs, took in recorded:
        graphs.append(gm)
        ops_per_graph.append([n.target for n in gm.graph.nodes if n.op == "call_function"])
        if gm.compile_subgraph_reason.graph_break:
            reasons.append(gm.compile_subgraph_reason)
        guards += _guards(inputs)
        seconds.append(took)
    reset()
    count = len(graphs)
    return ExplainOutput(graphs, count, count - 1, reasons, sum(map(len, ops_per_graph)),
                         ops_per_graph, guards, _times_table(seconds))


def explain(f, *extra_args, **extra_kwargs):
    """Run ``f`` once and report the graphs a compiler would capture from it: how many, the
    graph breaks between them with their reasons and user stacks, and the ops of each (NOTE
    [ Explain by recording ]).

    Args:
        f: a function or ``nn.Module``.
        *extra_args: the arguments, in the old form ``explain(f, *args)`` (deprecated).
        **extra_kwargs: keyword arguments, in the old form.

    Returns:
        A function taking ``f``'s arguments and returning an ``ExplainOutput`` (in the old
        form, the ``ExplainOutput`` itself).

    Example::

        >>> def f(x):
        ...     x = x * 2
        ...     if x.sum() > 0:
        ...         x = x - 1
        ...     return x
        >>> out = ember._dynamo.explain(f)(ember.ones(3))
        >>> out.graph_count, out.graph_break_count
        (2, 1)
        >>> out.break_reasons[0].reason
        'generic_jump TensorVariable()'
    """
    def inner(*args, **kwargs):
        return _run(f, args, kwargs)

    if extra_args or extra_kwargs:
        warnings.warn(
            "explain(f, *args, **kwargs) is deprecated, use explain(f)(*args, **kwargs) "
            "instead.  If you don't migrate, we may break your explain call in the future if "
            "your user defined kwargs conflict with future kwargs added to explain(f).",
            FutureWarning, stacklevel=2)
        return inner(*extra_args, **extra_kwargs)
    return inner
