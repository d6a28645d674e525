"""``ember.export``: capture a module's forward as a graph (``torch.export``).

``ember.export.export(model, args)`` runs the model once and records every op as an
``ember.fx`` graph (NOTE [ Export trace ] in ember/export/_trace.py); the
``ExportedProgram`` it returns prints as PyTorch's does, runs through ``.module()``, and
saves to and loads from a file with ``ember.export.save``/``load``.

Example::

    >>> ep = ember.export.export(ember.nn.Linear(3, 2), (ember.randn(4, 3),))
    >>> ep.module()(ember.randn(4, 3)).shape
    ember.Size([4, 2])
"""

from __future__ import annotations

import collections
import dataclasses
import io
import logging
import os
import pickle
from typing import Any

from .._core.tensor import Tensor
from . import graph_signature
from .exported_program import ExportedProgram
from .graph_signature import ExportBackwardSignature, ExportGraphSignature
from .dynamic_shapes import Dim, ShapesCollection, _arg_names, dims

__all__ = ["AdditionalInputs", "Constraint", "CustomDecompTable", "DEFAULT_PICKLE_PROTOCOL",
           "Dim", "ExportBackwardSignature", "ExportGraphSignature", "ExportedProgram",
           "FlatArgsAdapter", "ModuleCallEntry", "ModuleCallSignature", "PassResult",
           "ShapesCollection", "UnflattenedModule", "default_decompositions", "dims",
           "draft_export", "dynamic_shapes", "export", "graph_signature", "load",
           "register_dataclass", "save", "unflatten"]

DEFAULT_PICKLE_PROTOCOL = 2
"""The pickle protocol ``save`` writes with unless told otherwise."""

log = logging.getLogger("ember.export")


class PassResult(collections.namedtuple("PassResult", ["graph_module", "modified"])):
    """What a graph pass returns: the (possibly new) graph module and whether it changed.

    Args:
        graph_module: the module after the pass.
        modified: whether the pass changed anything.

    Example::

        >>> ember.export.PassResult(ember.nn.Module(), True).modified
        True
    """

    __slots__ = ()


@dataclasses.dataclass
class ModuleCallSignature:
    """How a preserved submodule call looks in a graph: its inputs and outputs (graph
    arguments), their structures, and the forward's argument names.

    Args:
        inputs (list): the graph arguments the submodule call takes, in order.
        outputs (list): the graph arguments it returns, in order.
        in_spec: the pytree structure of the call's ``(args, kwargs)``.
        out_spec: the pytree structure of its result.
        forward_arg_names (list of str, optional): the names of ``forward``'s parameters.

    Example::

        >>> sig = ember.export.ModuleCallSignature([], [], None, None)
        >>> sig.inputs, sig.forward_arg_names
        ([], None)
    """

    inputs: list
    outputs: list
    in_spec: Any
    out_spec: Any
    forward_arg_names: list | None = None


@dataclasses.dataclass
class ModuleCallEntry:
    """One entry of ``ExportedProgram.module_call_graph``: a submodule's path and, when
    its calls were preserved, their ``ModuleCallSignature``.

    Args:
        fqn (str): the submodule's dotted path in the root module (``""`` for the root).
        signature (ModuleCallSignature, optional): how its calls look in the graph; ``None``
            when they were inlined.

    Example::

        >>> ember.export.ModuleCallEntry(fqn="a")
        ModuleCallEntry(fqn='a', signature=None)
    """

    fqn: str
    signature: ModuleCallSignature | None = None


def _dynamic_dims(mod, args, kwargs, dynamic_shapes):
    """``{flat user tensor index: {dim: (min, max)}}`` and the range constraints."""
    if hasattr(dynamic_shapes, "dynamic_shapes"):  # ShapesCollection, AdditionalInputs
        dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, args, kwargs)
    if not dynamic_shapes:
        return {}, {}
    names = _arg_names(mod, len(args))
    if isinstance(dynamic_shapes, dict):
        per_arg = [dynamic_shapes.get(n) for n in names]
        per_arg += [dynamic_shapes.get(k) for k in (kwargs or {})]
    else:
        per_arg = list(dynamic_shapes) + [None] * (len(args) - len(dynamic_shapes))
    dynamic, ranges, index = {}, {}, 0
    values = list(args) + list((kwargs or {}).values())
    for value, spec in zip(values, per_arg):
        for t, s in _pair(value, spec):
            if s:
                items = s.items() if isinstance(s, dict) else enumerate(s)
                for d, dim in items:
                    if dim is None or dim is Dim.STATIC:
                        continue
                    lo = getattr(dim, "min", 0) or 0
                    user_hi = getattr(dim, "max", None)
                    hi = user_hi if user_hi is not None else (1 << 63) - 2
                    if not lo <= t.shape[d] <= hi:
                        raise ValueError(f"Received user-specified [{lo}, {hi}] for "
                                         f"{getattr(dim, '__name__', dim)}, which does not "
                                         f"contain the example size {t.shape[d]}")
                    dynamic.setdefault(index, {})[int(d)] = (max(lo, 0), hi)
                    sym = getattr(dim, "__name__", None) or f"s{len(ranges)}"
                    ranges[sym] = (lo, user_hi)
            index += 1
    return dynamic, ranges


def _pair(value, spec):
    if isinstance(value, Tensor):
        return [(value, spec)]
    if isinstance(value, (list, tuple)):
        specs = spec if isinstance(spec, (list, tuple)) else [None] * len(value)
        return [p for v, s in zip(value, specs) for p in _pair(v, s)]
    if isinstance(value, dict):
        specs = spec if isinstance(spec, dict) else {}
        return [p for k, v in value.items() for p in _pair(v, specs.get(k))]
    return []


def export(mod, args=(), kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """Capture ``mod``'s forward on ``args`` as an ``ExportedProgram``.

    Args:
        mod: an ``nn.Module``.
        args: the example positional inputs (a tuple).
        kwargs: the example keyword inputs.
        dynamic_shapes: per input, ``{dim: Dim}`` (or a list) for sizes that may change;
            the program's ``module()`` re-captures for each new size.
        strict: accepted (ember always captures through the dispatcher).
        preserve_module_call_signature: accepted.
        prefer_deferred_runtime_asserts_over_guards: accepted.

    Returns:
        ExportedProgram: the captured program.

    Raises:
        ValueError: ``args`` is not a tuple, or a ``Dim``'s range excludes the example size.

    Example::

        >>> class M(ember.nn.Module):
        ...     def forward(self, x):
        ...         return ember.relu(x) + 1
        >>> ep = ember.export.export(M(), (ember.randn(3),))
        >>> [n.name for n in ep.graph.nodes]
        ['x', 'relu', 'add', 'output']
    """
    from ._trace import capture

    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args)}")
    kwargs = dict(kwargs or {})
    dynamic, ranges = _dynamic_dims(mod, args, kwargs, dynamic_shapes)
    graph, input_specs, output_specs, constants, out_spec = capture(mod, args, kwargs)
    state = {}
    for spec in input_specs:
        if spec.target is not None and spec.kind.name in ("PARAMETER", "BUFFER"):
            state[spec.target] = _lookup(mod, spec.target)
    sig = ExportGraphSignature(input_specs, output_specs)
    return ExportedProgram(graph, sig, state, constants, ranges, (args, kwargs), out_spec,
                           dynamic, source=mod)


def _lookup(mod, key):
    *path, leaf = key.split(".")
    owner = mod
    for part in path:
        owner = owner._modules[part]
    return owner._parameters[leaf] if leaf in owner._parameters else owner._buffers[leaf]


def draft_export(mod, args, kwargs=None, *, dynamic_shapes=None, **options):
    """``export`` that reports problems instead of failing on them; ember's capture has no
    soft failures, so this is ``export``.

    Args:
        mod: the module.
        args: example inputs.
        kwargs: example keyword inputs.
        dynamic_shapes: as for ``export``.
        **options: accepted.

    Returns:
        ExportedProgram: the captured program.

    Example::

        >>> ep = ember.export.draft_export(ember.nn.ReLU(), (ember.randn(2),))
        >>> type(ep).__name__
        'ExportedProgram'
    """
    return export(mod, args, kwargs, dynamic_shapes=dynamic_shapes)


def default_decompositions() -> dict:
    """The decomposition table ``run_decompositions`` uses by default: empty, since ember's
    graphs already hold the ops its kernels implement.

    Returns:
        dict: op -> decomposition.

    Example::

        >>> ember.export.default_decompositions()
        {}
    """
    return {}


_dataclasses = set()


def register_dataclass(cls, *, serialized_type_name=None):
    """Allow instances of the dataclass ``cls`` as exported inputs and outputs.

    Args:
        cls: a dataclass.
        serialized_type_name: its name in saved programs.

    Returns:
        None

    Raises:
        TypeError: ``cls`` is not a dataclass.

    Example::

        >>> import dataclasses
        >>> @dataclasses.dataclass
        ... class Pair:
        ...     a: object
        ...     b: object
        >>> ember.export.register_dataclass(Pair)
    """
    import dataclasses

    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls} is not a dataclass")
    _dataclasses.add(cls)


# -- files ---------------------------------------------------------------------------------

def _node_ref(x, index):
    from ..fx import Node

    if isinstance(x, Node):
        return ("__node__", index[x])
    if isinstance(x, tuple):
        return tuple(_node_ref(a, index) for a in x)
    if isinstance(x, list):
        return [_node_ref(a, index) for a in x]
    if isinstance(x, dict):
        return {k: _node_ref(v, index) for k, v in x.items()}
    return x


def _target_ref(target):
    import operator

    if target is operator.getitem:
        return ("getitem",)
    import ember

    if target is ember.cond:
        return ("cond",)
    if hasattr(target, "overloadpacket"):
        return ("op", target.overloadpacket.__name__, target._overloadname)
    return ("attr", target)


def save(ep, f, *, extra_files=None, opset_version=None,
         pickle_protocol=DEFAULT_PICKLE_PROTOCOL):
    """Write an exported program to ``f`` (a path or binary file): its graph (ops by name),
    signature, state and constants, in ember's checkpoint format.

    Args:
        ep: the ``ExportedProgram``.
        f: where to write.
        extra_files: ``{name: str}`` stored beside it.
        opset_version: accepted.
        pickle_protocol: accepted.

    Returns:
        None

    Example::

        >>> buf = io.BytesIO()
        >>> ember.export.save(ember.export.export(ember.nn.ReLU(), (ember.randn(2),)), buf)
    """
    from .. import save as _save

    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    payload = {"format": "ember.export/1", "nodes": _graph_record(ep.graph),
               "signature": pickle.dumps(ep.graph_signature),
               "state_dict": dict(ep.state_dict), "constants": dict(ep.constants),
               "range_constraints": dict(ep.range_constraints),
               "example_inputs": ep.example_inputs, "out_spec": ep._out_spec,
               "dynamic": ep._dynamic, "extra_files": dict(extra_files or {}),
               "subgraphs": _subgraph_records(ep.graph)}
    _save(payload, f)


def _graph_record(graph) -> list:
    """A graph's nodes as plain data (ops by name, arguments by node index)."""
    index = {}
    nodes = []
    for i, node in enumerate(graph.nodes):
        index[node] = i
        meta = node.meta.get("val")
        val = (tuple(meta.shape), str(meta.dtype)) if isinstance(meta, Tensor) else None
        nodes.append({"op": node.op, "name": node.name, "target": _target_ref(node.target),
                      "args": _node_ref(node.args, index),
                      "kwargs": _node_ref(dict(node.kwargs), index), "val": val})
    return nodes


def _subgraph_records(graph) -> dict:
    """The branch graphs of ``cond`` nodes: nodes, the tensors they hold, their own
    branches."""
    return {name: {"nodes": _graph_record(sub.graph), "buffers": dict(sub.named_buffers()),
                   "subgraphs": _subgraph_records(sub.graph)}
            for name, sub in getattr(graph, "_subgraphs", {}).items()}


def _subgraphs_from(records: dict) -> dict:
    from .. import fx, nn

    out = {}
    for name, rec in records.items():
        graph = _graph_from(rec["nodes"])
        graph._subgraphs = _subgraphs_from(rec["subgraphs"])
        root = nn.Module()
        for key, sub in graph._subgraphs.items():
            root.add_module(key, sub)
        for key, t in rec["buffers"].items():
            root.register_buffer(key, t)
        out[name] = fx.GraphModule(root, graph)
    return out


def load(f, *, extra_files=None, expected_opset_version=None):
    """Read a program written by ``ember.export.save``.

    Args:
        f: a path or binary file.
        extra_files: a dict naming extra files to read; filled in place.
        expected_opset_version: accepted.

    Returns:
        ExportedProgram: the program (without its source module: new sizes of dynamic
        dimensions cannot be re-captured).

    Example::

        >>> buf = io.BytesIO()
        >>> ember.export.save(ember.export.export(ember.nn.ReLU(), (ember.randn(2),)), buf)
        >>> _ = buf.seek(0)
        >>> ember.export.load(buf).module()(ember.ones(2))
        tensor([1., 1.])
    """
    from .. import load as _load

    payload = _load(f, weights_only=False)
    if not isinstance(payload, dict) or payload.get("format") != "ember.export/1":
        raise RuntimeError("not a program written by ember.export.save")
    graph = _graph_from(payload["nodes"])
    for name in list(extra_files or {}):
        extra_files[name] = payload["extra_files"].get(name, "")
    sig = pickle.loads(payload["signature"])
    graph._subgraphs = _subgraphs_from(payload.get("subgraphs", {}))
    return ExportedProgram(graph, sig, payload["state_dict"], payload["constants"],
                           payload["range_constraints"], payload["example_inputs"],
                           payload["out_spec"], payload["dynamic"], source=None)


def _graph_from(records: list):
    """The graph ``_graph_record`` wrote."""
    import operator

    import ember
    from .. import empty, fx, ops

    graph = fx.Graph()
    made = []

    def resolve(x):
        if isinstance(x, tuple) and len(x) == 2 and x[0] == "__node__":
            return made[x[1]]
        if isinstance(x, tuple):
            return tuple(resolve(a) for a in x)
        if isinstance(x, list):
            return [resolve(a) for a in x]
        if isinstance(x, dict):
            return {k: resolve(v) for k, v in x.items()}
        return x

    for spec in records:
        kind = spec["target"]
        if kind[0] == "getitem":
            target = operator.getitem
        elif kind[0] == "cond":
            target = ember.cond
        elif kind[0] == "op":
            target = getattr(getattr(ops.aten, kind[1]), kind[2])
        else:
            target = kind[1]
        if spec["op"] == "placeholder":
            node = graph.placeholder(spec["name"])
        elif spec["op"] == "output":
            node = graph.output(resolve(spec["args"])[0])
        else:
            node = graph.create_node(spec["op"], target, resolve(spec["args"]),
                                     resolve(spec["kwargs"]), name=spec["name"])
        if spec["val"] is not None:
            shape, dtype = spec["val"]
            node.meta["val"] = empty(shape, dtype=getattr(ember, dtype.split(".")[-1]),
                                     device="meta")
        made.append(node)
    return graph


_ = (io, os)


# the submodules that build on the names above
from . import decomp_utils, dynamic_shapes, unflatten as _unflatten_module  # noqa: E402,F811
from .decomp_utils import CustomDecompTable  # noqa: E402
from .dynamic_shapes import AdditionalInputs, Constraint  # noqa: E402
from .unflatten import FlatArgsAdapter, UnflattenedModule, unflatten  # noqa: E402
