"""What ``ember._dynamo.explain`` returns: ``ExplainOutput`` with its ``GraphCompileReason``
and ``Guard`` entries, printed as PyTorch prints them (NOTE [ Explain by recording ] in
_explain.py)."""

from __future__ import annotations

__all__ = ["ExplainOutput", "GraphCompileReason", "Guard"]


class GraphCompileReason:
    """Why a graph ended: a graph break (with the user stack at the break) or the frame's
    return.

    Args:
        reason (str): the message, first line the kind of break.
        user_stack (list[traceback.FrameSummary]): the user frames, outermost first.
        graph_break (bool): whether the graph ended at a break.

    Example::

        >>> r = GraphCompileReason("return_value", [], graph_break=False)
        >>> r.graph_break
        False
    """

    def __init__(self, reason: str, user_stack: list, graph_break: bool = True):
        self.reason = reason
        self.user_stack = user_stack
        self.graph_break = graph_break

    def __repr__(self) -> str:
        return (f"GraphCompileReason(reason={self.reason!r}, user_stack={self.user_stack!r}, "
                f"graph_break={self.graph_break})")

    def __eq__(self, other):
        return (isinstance(other, GraphCompileReason) and other.reason == self.reason
                and other.graph_break == self.graph_break)

    __hash__ = None


class Guard:
    """A condition a compiled graph is reused under, as ``explain`` lists it.

    Args:
        name (str): what is guarded (``"L['x']"``, or ``''`` for global state).
        source (str): ``'local'``, ``'global'`` or ``'shape_env'``.
        create_fn (str): the kind of guard (``'TENSOR_MATCH'``, ``'GRAD_MODE'``, ...).
        guard_types (list[str] or None): the checks made.
        code_list (list[str] or None): the checks as code.

    Example::

        >>> print(Guard("", "global", "GRAD_MODE"))  # doctest: +NORMALIZE_WHITESPACE
        Name: ''
            Source: global
            Create Function: GRAD_MODE
            Guard Types: None
            Code List: None
            Object Weakref: None
            Guarded Class Weakref: None
    """

    def __init__(self, name: str, source: str, create_fn: str, guard_types=None,
                 code_list=None):
        self.name = name
        self.source = source
        self._create_fn = create_fn
        self.guard_types = guard_types
        self.code_list = code_list
        self.obj_weakref = None
        self.guarded_class_weakref = None

    def create_fn_name(self) -> str:
        """The kind of guard (``'TENSOR_MATCH'``, ...).

        Returns:
            str

        Example::

            >>> Guard("", "global", "GRAD_MODE").create_fn_name()
            'GRAD_MODE'
        """
        return self._create_fn

    def __str__(self) -> str:
        return (f"Name: {self.name!r}\n    Source: {self.source}\n"
                f"    Create Function: {self._create_fn}\n"
                f"    Guard Types: {self.guard_types}\n    Code List: {self.code_list}\n"
                f"    Object Weakref: {self.obj_weakref}\n"
                f"    Guarded Class Weakref: {self.guarded_class_weakref}\n")

    def __repr__(self) -> str:
        return f"Guard(name={self.name!r}, source={self.source!r}, create_fn={self._create_fn})"


class ExplainOutput:
    """What ``explain(f)(*args)`` found: the graphs, the breaks between them and their ops.

    Args:
        graphs (list[GraphModule]): the captured graphs, in run order.
        graph_count (int): ``len(graphs)``.
        graph_break_count (int): ``graph_count - 1``.
        break_reasons (list[GraphCompileReason]): why each graph that broke ended.
        op_count (int): function calls over all graphs (methods not counted).
        ops_per_graph (list[list]): each graph's function-call targets.
        out_guards (list[Guard]): the guards of all graphs.
        compile_times (str): the capture's timings, as a table.

    Example::

        >>> out = ember._dynamo.explain(lambda x: x + 1)(ember.ones(2))
        >>> out.graph_count, out.graph_break_count, out.op_count
        (1, 0, 1)
    """

    def __init__(self, graphs, graph_count, graph_break_count, break_reasons, op_count,
                 ops_per_graph=None, out_guards=None, compile_times=None):
        self.graphs = graphs
        self.graph_count = graph_count
        self.graph_break_count = graph_break_count
        self.break_reasons = break_reasons
        self.op_count = op_count
        self.ops_per_graph = ops_per_graph
        self.out_guards = out_guards
        self.compile_times = compile_times

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {r.reason}", "    User Stack:"]
            lines += [f"      {frame}" for frame in r.user_stack]
        if self.ops_per_graph is not None:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Ops {i}:")
                lines += [f"    {op}" for op in ops]
        text = "\n".join(lines) + "\n"
        if self.out_guards is not None:
            text += "Out Guards:\n"
            for i, guard in enumerate(self.out_guards, 1):
                text += f"  Guard {i}:\n    {guard}"
        if self.compile_times is not None:
            text += f"Compile Times: {self.compile_times}\n"
        return text

    __repr__ = __str__


_GLOBAL_GUARDS = (
    ("SHAPE_ENV", "shape_env", None, None),
    ("DETERMINISTIC_ALGORITHMS", "global", None, None),
    ("GRAD_MODE", "global", None, None),
    ("DEFAULT_DEVICE", "global", ["DEFAULT_DEVICE"], ["utils_device.CURRENT_DEVICE == None"]),
    ("GLOBAL_STATE", "global", None, None),
    ("TORCH_FUNCTION_STATE", "global", None, None),
    ("AUTOGRAD_SAVED_TENSORS_HOOKS", "global", ["AUTOGRAD_SAVED_TENSORS_HOOKS"],
     ["torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None"]),
)


def _guards(inputs) -> list:
    out = [Guard("", source, fn, kinds, code) for fn, source, kinds, code in _GLOBAL_GUARDS]
    for name in inputs:
        if name.startswith("L_"):
            local = f"L[{name[2:-1]!r}]"
            checks = [f"hasattr({local}, '_dynamo_{k}_indices') == False"
                      for k in ("dynamic", "weak_dynamic", "unbacked", "strict_unbacked",
                                "static")]
            out.append(Guard(local, "local", "TENSOR_MATCH", ["TENSOR_MATCH"], checks))
    return out


def _times_table(seconds) -> str:
    rows = [("Function", "Runtimes (s)"),
            ("_compile.compile_inner", ", ".join(f"{s:.4f}" for s in seconds))]
    width = max(len(r[0]) for r in rows)
    right = max(len(r[1]) for r in rows)
    lines = [f"{rows[0][0]:<{width}}  {rows[0][1]}", f"{'-' * width}  {'-' * right}"]
    lines += [f"{a:<{width}}  {b}" for a, b in rows[1:]]
    return "TorchDynamo compilation metrics:\n" + "\n".join(lines) + "\n"
