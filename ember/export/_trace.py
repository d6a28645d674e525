"""Capturing a module's ops as an ``ember.fx`` graph, through the dispatcher.

NOTE [ Export trace ]
``torch.export`` captures a program as a graph of ATen ops. Ember captures the same way its
ONNX exporter does (NOTE [ ONNX export ] in ember/onnx/_exporter.py): the module runs once on
the example inputs under a dispatch mode that sees every op after the public functions have
normalised their arguments, and each op call becomes a ``call_function`` node whose target
is the op's ``OpOverload`` (``ember.ops.aten.linear.default``) with the arguments the kernel
received -- tensors replaced by the nodes that made them. So the graph is in ember's own op
set, and running it calls the same kernels eager mode calls.

- Placeholders come in PyTorch's order and names: parameters (``p_fc_weight``), buffers
  (``b_bn_running_mean``), tensors the forward used that are neither (lifted constants,
  ``c_lifted_tensor_0``), then the user's inputs by the forward's parameter names.
- An op with several results gets one ``getitem`` node per result used.
- An in-place op stays in place (the graph is not functionalised): running the graph writes
  the same tensors eager mode writes.
- Shapes and Python numbers read from tensors are fixed at their traced values; dimensions
  marked dynamic are handled by re-capturing for each new size
  (ember/export/exported_program.py).
- Control flow on a tensor's value cannot be fixed: a user frame calling ``Tensor.__bool__``
  on a graph value (``if x.sum() > 0:``; seen by a profile hook on this thread) makes
  ``export`` raise ``GuardOnDataDependentSymNode`` once the run ends, as PyTorch does.
  ``ember.cond(pred, true_fn, false_fn, operands)`` is the way to keep both branches: each
  branch is traced with ``ember.fx.symbolic_trace`` into a ``GraphModule``
  (``true_graph_0``/``false_graph_0``, read by ``get_attr`` nodes and kept in
  ``graph._subgraphs``), and one ``call_function`` node calls ``ember.cond`` with them, so
  the exported program picks its branch at run time.
"""

from __future__ import annotations

import inspect
import operator

from .._core.tensor import Tensor
from ..fx.experimental.symbolic_shapes import _BranchWatch
from ..overrides import TorchFunctionMode
from ..utils._python_dispatch import TorchDispatchMode
from ..utils._pytree import tensor_leaves




def _meta(t):
    """A meta tensor of ``t``'s shape and dtype: the node's ``meta['val']``."""
    from .. import empty

    return empty(tuple(t.shape), dtype=t.dtype, device="meta")


class _Capture(TorchDispatchMode):
    """Records each op call as a graph node (NOTE [ Export trace ])."""

    def __init__(self, graph, nodes, keep, lift):
        super().__init__()
        self.graph = graph
        self.nodes = nodes  # id(tensor) -> Node
        self.keep = keep    # tensors whose ids are in ``nodes``
        self.lift = lift    # callable(tensor) -> Node for a tensor seen first as an argument

    def _arg(self, x):
        if isinstance(x, Tensor):
            node = self.nodes.get(id(x))
            return node if node is not None else self.lift(x)
        if isinstance(x, tuple):
            return tuple(self._arg(a) for a in x)
        if isinstance(x, list):
            return [self._arg(a) for a in x]
        return x

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        nargs = self._arg(args)
        nkwargs = {k: self._arg(v) for k, v in kwargs.items()}
        out = func(*args, **kwargs)
        name = _node_name(func)
        node = self.graph.create_node("call_function", func, nargs, nkwargs, name=name)
        results = tensor_leaves(out)
        if not results and name.endswith("_") and args and isinstance(args[0], Tensor):
            results = [args[0]]  # an in-place op returning nothing wrote its first argument
            out = args[0]
        self.keep.extend(results)
        if isinstance(out, Tensor):
            node.meta["val"] = _meta(out)
            self.nodes[id(out)] = node
        elif isinstance(out, (tuple, list)):
            node.meta["val"] = tuple(_meta(t) if isinstance(t, Tensor) else t for t in out)
            for i, t in enumerate(out):
                if isinstance(t, Tensor):
                    item = self.graph.create_node("call_function", operator.getitem, (node, i),
                                                  {}, name="getitem")
                    try:
                        item.meta["val"] = _meta(t)
                    except KeyError:  # an op's internal saved state (object arrays)
                        pass
                    self.nodes[id(t)] = item
        return out


class _Cond(TorchFunctionMode):
    """Captures ``ember.cond`` calls with both branches (NOTE [ Export trace ])."""

    def __init__(self, capture: _Capture):
        super().__init__()
        self.capture = capture
        self.subgraphs: dict = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        import ember

        kwargs = kwargs or {}
        if func is not ember.cond:
            return func(*args, **kwargs)
        bound = inspect.signature(ember._ops.surface_numeric.cond).bind(*args, **kwargs)
        bound.apply_defaults()
        pred, true_fn, false_fn, operands = bound.args
        if not isinstance(pred, Tensor):  # a Python bool: the branch taken is all there is
            return func(*args, **kwargs)
        from ..utils._python_dispatch import _disable_current_modes

        graph, k = self.capture.graph, len(self.subgraphs) // 2
        pred_node = self.capture._arg(pred)
        operand_nodes = self.capture._arg(tuple(operands))
        branches = []
        with _disable_current_modes():
            for kind, fn in (("true", true_fn), ("false", false_fn)):
                name = f"{kind}_graph_{k}"
                self.subgraphs[name] = _branch_module(fn, tuple(operands))
                branches.append(graph.get_attr(name))
            out = func(*args, **kwargs)
        # the branch graphs return flat tuples: one getitem per tensor of the result
        node = graph.create_node("call_function", func,
                                 (pred_node, *branches, operand_nodes), {}, name="cond")
        nodes, keep = self.capture.nodes, self.capture.keep
        for i, t in enumerate(_flatten(out)[0]):
            if isinstance(t, Tensor):
                item = graph.create_node("call_function", operator.getitem, (node, i), {},
                                         name="getitem")
                item.meta["val"] = _meta(t)
                nodes[id(t)] = item
                keep.append(t)
        return out


def _branch_module(fn, operands):
    """A ``cond`` branch as a ``GraphModule`` of ops, captured as ``export`` captures (the
    tensors it reads besides its operands held as its attributes)."""
    from .. import fx, nn
    from .graph_signature import InputKind

    graph, input_specs, _, constants, _ = capture(fn, operands, {})
    root = nn.Module()
    for name, sub in graph._subgraphs.items():
        root.add_module(name, sub)
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    for spec in input_specs:
        if spec.kind == InputKind.CONSTANT_TENSOR:
            node = placeholders[spec.arg.name]
            root.register_buffer(spec.target, constants[spec.target])
            with graph.inserting_before(node):
                attr = graph.get_attr(spec.target)
            attr.meta.update(node.meta)
            node.replace_all_uses_with(attr)
            graph.erase_node(node)
    return fx.GraphModule(root, graph)


def _reads_inputs(node) -> bool:
    """Whether ``node``'s value depends on an input or the state (a constant made inside
    the forward does not: branching on it is fine)."""
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder" and not n.name.startswith("c_lifted_tensor"):
            return True
        todo.extend(n.all_input_nodes)
    return False


class _DataDependentBranch(_BranchWatch):
    """Watches, on this thread, for user code branching on a graph value (NOTE [ Export
    trace ]); ``check()`` raises PyTorch's error for the first one."""

    def watched(self, node) -> bool:
        return _reads_inputs(node)

    def check(self):
        if self.found is None:
            return
        from ..fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        file, line, name = self.found
        raise GuardOnDataDependentSymNode(
            "Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  "
            "(Size-like symbols: none)\n\n"
            "The exported code branches on a value computed from its inputs, so the graph "
            "could hold only one branch; write the branch with torch.cond(pred, true_fn, "
            "false_fn, operands) to keep both.\n\n"
            f"The following call raised this error:\n  File \"{file}\", line {line}, in "
            f"{name}\n")


def _node_name(func) -> str:
    name = func.overloadpacket.__name__
    return name.split(".")[0]


def input_names(fn, args, kwargs):
    """The names of the user inputs: the forward's parameter names (``x``, ``x_1`` ... for
    the tensors of one nested argument), then the keyword inputs."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"args_{i}"
        ts = tensor_leaves(a)
        names.extend([base] if len(ts) == 1 else [f"{base}_{j}" for j in range(len(ts))])
    for k, a in (kwargs or {}).items():
        ts = tensor_leaves(a)
        names.extend([k] if len(ts) == 1 else [f"{k}_{j}" for j in range(len(ts))])
    return names


def capture(mod, args, kwargs):
    """Run ``mod(*args, **kwargs)`` once and return its graph and signature pieces.

    Args:
        mod: an ``nn.Module``.
        args: the example positional inputs (a tuple).
        kwargs: the example keyword inputs.

    Returns:
        tuple: ``(graph, input_specs, output_specs, constants, out_spec)`` where
        ``constants`` maps lifted constant names to tensors and ``out_spec`` rebuilds the
        forward's output structure from the flat outputs.
    """
    from .. import fx
    from ..autograd.grad_mode import no_grad
    from .graph_signature import (InputKind, InputSpec, OutputKind, OutputSpec,
                                  TensorArgument, ConstantArgument)

    graph = fx.Graph()
    nodes, keep, specs, constants = {}, [], [], {}
    persistent = set(mod.state_dict(keep_vars=True)) if hasattr(mod, "state_dict") else set()

    def placeholder(name, t):
        node = graph.placeholder(name)
        node.meta["val"] = _meta(t)
        nodes[id(t)] = node
        keep.append(t)
        return node

    for key, p in (mod.named_parameters() if hasattr(mod, "named_parameters") else []):
        node = placeholder("p_" + key.replace(".", "_"), p)
        specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node.name), key))
    for key, b in (mod.named_buffers() if hasattr(mod, "named_buffers") else []):
        node = placeholder("b_" + key.replace(".", "_"), b)
        specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node.name), key,
                               persistent=key in persistent))
    n_state = len(specs)
    user = [t for a in list(args) + list((kwargs or {}).values()) for t in tensor_leaves(a)]
    names = input_names(mod.forward if hasattr(mod, "forward") else mod, args, kwargs)
    # user inputs come after the lifted constants, which are only known after the run:
    # make them now and move them to the end of the placeholders afterwards
    user_nodes = []
    for t, name in zip(user, names):
        node = placeholder(name, t)
        user_nodes.append(node)

    lifted = []

    def lift(t):
        name = f"c_lifted_tensor_{len(lifted)}"
        node = graph.placeholder(name)
        node.meta["val"] = _meta(t)
        nodes[id(t)] = node
        keep.append(t)
        constants[f"lifted_tensor_{len(lifted)}"] = t.detach()
        lifted.append(node)
        return node

    tracer = _Capture(graph, nodes, keep, lift)
    conds = _Cond(tracer)
    with no_grad(), tracer, conds, _DataDependentBranch(nodes) as branches:
        out = mod(*args, **(kwargs or {}))
    branches.check()
    graph._subgraphs = conds.subgraphs

    # placeholders in PyTorch's order: state, lifted constants, user inputs
    first_non_placeholder = next((n for n in graph.nodes if n.op != "placeholder"), None)
    for node in user_nodes:
        if first_non_placeholder is not None:
            first_non_placeholder.prepend(node)
    constant_specs = [InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(n.name),
                                f"lifted_tensor_{i}") for i, n in enumerate(lifted)]
    user_specs = [InputSpec(InputKind.USER_INPUT, TensorArgument(n.name), None)
                  for n in user_nodes]
    input_specs = specs[:n_state] + constant_specs + user_specs

    flat, rebuild = _flatten(out)
    outs, output_specs = [], []
    for item in flat:
        if isinstance(item, Tensor):
            node = nodes.get(id(item))
            if node is None:
                node = lift(item)
                first_non_placeholder = next((n for n in graph.nodes
                                              if n.op != "placeholder"), None)
                constant_specs.append(InputSpec(InputKind.CONSTANT_TENSOR,
                                                TensorArgument(node.name),
                                                f"lifted_tensor_{len(lifted) - 1}"))
            outs.append(node)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT,
                                           TensorArgument(node.name), None))
        else:
            outs.append(item)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT,
                                           ConstantArgument("", item), None))
    input_specs = specs[:n_state] + constant_specs + user_specs
    graph.output(tuple(outs))
    _drop_dead(graph)
    return graph, input_specs, output_specs, constants, rebuild


def _drop_dead(graph):
    """Remove op nodes whose results nothing uses, unless the op writes in place."""
    for node in reversed(list(graph.nodes)):
        if node.op != "call_function" or node.users:
            continue
        target = node.target
        name = getattr(getattr(target, "overloadpacket", None), "__name__", "")
        if name.endswith("_") or name in ("copy_", "setitem_"):
            continue
        graph.erase_node(node)


def _flatten(out):
    """``out`` as a flat list, and its structure as plain data (``unflatten`` rebuilds)."""
    if isinstance(out, dict):
        keys = list(out)
        parts = [_flatten(out[k]) for k in keys]
        return [x for f, _ in parts for x in f], ("dict", keys, [sp for _, sp in parts])
    if isinstance(out, (tuple, list)):
        parts = [_flatten(v) for v in out]
        kind = "list" if isinstance(out, list) else "tuple"
        return [x for f, _ in parts for x in f], (kind, None, [sp for _, sp in parts])
    return [out], ("leaf", None, [])


def _count(spec):
    kind, _, children = spec
    return 1 if kind == "leaf" else sum(_count(c) for c in children)


def unflatten(spec, items):
    """Rebuild the structure ``spec`` (from ``_flatten``) from the flat ``items``.

    Args:
        spec: the structure.
        items: the flat values.

    Returns:
        The nested value.
    """
    kind, keys, children = spec
    if kind == "leaf":
        return items[0]
    vals, i = [], 0
    for c in children:
        n = _count(c)
        vals.append(unflatten(c, items[i:i + n]))
        i += n
    if kind == "dict":
        return dict(zip(keys, vals))
    return list(vals) if kind == "list" else tuple(vals)
