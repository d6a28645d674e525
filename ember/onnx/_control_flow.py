"""Control flow in ONNX export: ``ember.cond`` written as an ONNX ``If``, and Python branches
on values computed from the inputs caught (NOTE [ ONNX export ] in ember/onnx/_exporter.py)."""

from __future__ import annotations

import inspect

from .._core.tensor import Tensor
from ..fx.experimental.symbolic_shapes import _BranchWatch
from ..overrides import TorchFunctionMode
from ..utils._pytree import tensor_leaves
from ._builder import Value, onnx_type


class _Cond(TorchFunctionMode):
    """Writes ``ember.cond`` on a written predicate as an ONNX ``If`` (NOTE [ ONNX
    export ])."""

    def __init__(self, tracer):
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        import ember

        kwargs = kwargs or {}
        if func is not ember.cond:
            return func(*args, **kwargs)
        bound = inspect.signature(ember._ops.surface_numeric.cond).bind(*args, **kwargs)
        bound.apply_defaults()
        pred, true_fn, false_fn, operands = bound.args
        tracer, ctx = self.tracer, self.tracer.ctx
        if not isinstance(pred, Tensor) or tracer.value_of(pred).is_constant:
            return func(*args, **kwargs)
        from onnx import helper

        builder = ctx.g
        outer, known = builder.nodes, set(tracer.values)
        branches, outs = [], []
        try:
            for kind, fn in (("then", true_fn), ("else", false_fn)):
                builder.nodes = []
                out = fn(*operands)
                flat = tensor_leaves(out)
                names = [builder.node("Identity", [ctx.name(tracer.value_of(t))],
                                      name_hint=f"{kind}_out") for t in flat]
                info = [helper.make_tensor_value_info(n, onnx_type(t.dtype), list(t.shape))
                        for n, t in zip(names, flat)]
                branches.append(helper.make_graph(builder.nodes, f"{kind}_graph", [], info))
                outs.append((out, flat))
        finally:
            builder.nodes = outer
        out, flat = outs[0] if bool(pred) else outs[1]
        if not flat:
            return out
        if any(id(t) in known for t in flat):
            # a branch handing back a tensor it was given: the result is a new value
            from ..utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():
                copies = {id(t): t.clone() for t in flat if id(t) in known}
            out = _replace_leaves(out, copies)
            flat = tensor_leaves(out)
        names = builder.node("If", [ctx.name(tracer.value_of(pred))], outputs=len(flat),
                             name_hint="cond", then_branch=branches[0],
                             else_branch=branches[1])
        names = [names] if isinstance(names, str) else names
        for t, name in zip(flat, names):
            tracer.values[id(t)] = Value(name, t.shape, t.dtype)
            tracer.keep.append(t)
        return out


def _replace_leaves(x, copies: dict):
    if isinstance(x, Tensor):
        return copies.get(id(x), x)
    if isinstance(x, (tuple, list)):
        return type(x)(_replace_leaves(a, copies) for a in x)
    return x


class _PythonBranches(_BranchWatch):
    """Notes, on this thread, user code branching on a written value (NOTE [ ONNX
    export ])."""

    def watched(self, value) -> bool:
        return not value.is_constant

    def report(self, strict: bool):
        if self.found is None:
            return
        file, line, name = self.found
        where = f'File "{file}", line {line}, in {name}'
        if strict:
            from ._exporter import _error

            raise _error(
                "Failed to export the model with torch.export: the model branches in Python "
                f"on a value computed from its inputs ({where}), so the graph could hold only "
                "one branch. Write the branch with torch.cond(pred, true_fn, false_fn, "
                "operands), or export with dynamo=False to keep the branch the example "
                "inputs take.")
        from ..jit import _warn_python_value

        _warn_python_value("boolean", file, line)
