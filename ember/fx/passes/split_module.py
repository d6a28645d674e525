"""``split_module``: cut a ``GraphModule`` into submodules, one per partition of its nodes.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any
from collections.abc import Callable

from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node, map_arg

__all__ = ["split_module", "Partition"]


class Partition:
    """The nodes of one part of ``split_module``, with the values it takes and gives.

    Args:
        name: the submodule name (``submod_<id>``).
    """

    def __init__(self, name: str):
        self.name = name
        self.submod_name = name
        self.node_names: list = []
        self.inputs: dict = {}
        self.outputs: dict = {}
        self.dependencies: dict = {}
        self.dependents: dict = {}
        self.graph = Graph()
        self.environment: dict = {}
        self.targets: dict = {}

    def __repr__(self) -> str:
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: {self.inputs},\n"
                f" outputs: {self.outputs},\n partitions depended on: {self.dependencies},\n"
                f" partition dependents: {self.dependents}")


def split_module(m: GraphModule, root_m, split_callback: Callable[[Node], int],
                 qualname_map: dict | None = None, keep_original_order: bool = False,
                 keep_original_node_name: bool = False, partition_affix: str | None = None
                 ) -> GraphModule:
    """Split ``m`` into submodules ``submod_<p>``, node by node as ``split_callback`` says,
    and return a module calling them in dependency order.

    Args:
        m: the traced module.
        root_m: the module ``m`` was traced from (accepted for torch's signature; the
            attributes come from ``m``).
        split_callback: node -> partition id, for each call node (placeholders and
            ``get_attr`` nodes stay in the base module, handed to the parts as inputs).
        qualname_map: filled with ``"submod_<p>.<target>" -> "<target>"`` for the module
            attributes each submodule took.
        keep_original_order: accepted for torch's signature (partitions run in the order
            their first node appears).
        keep_original_node_name: keep the original nodes' names in the submodules.
        partition_affix: text inserted in the submodule names, ``submod_<affix>_<p>``.

    Returns:
        The split ``GraphModule``.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.passes.split_module import split_module
        >>> gm = fx.symbolic_trace(lambda x: ember.relu(x + 1) * 2)
        >>> parts = split_module(gm, None, lambda n: 0 if n.name == "add" else 1)
        >>> [name for name, _ in parts.named_children()]
        ['submod_0', 'submod_1']
        >>> parts(ember.tensor([1.0]))
        tensor([4.])
    """
    prefix = f"submod_{partition_affix}_" if partition_affix else "submod_"
    partitions: dict = {}
    order: list = []
    node_part: dict = {}
    for node in m.graph.nodes:
        # inputs and attributes stay in the base module; the parts take them as inputs
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        pid = str(split_callback(node))
        if pid not in partitions:
            partitions[pid] = Partition(prefix + pid)
            order.append(pid)
        partitions[pid].node_names.append(node.name)
        node_part[node] = pid
    # the values each partition takes and gives
    for node in m.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        user_pid = node_part.get(node)
        for inp in node.all_input_nodes:
            def_pid = node_part.get(inp)
            if def_pid == user_pid:
                continue
            if user_pid is not None:
                partitions[user_pid].inputs.setdefault(inp.name)
                if def_pid is not None:
                    partitions[user_pid].dependencies.setdefault(def_pid)
                    partitions[def_pid].dependents.setdefault(user_pid)
            if def_pid is not None:
                partitions[def_pid].outputs.setdefault(inp.name)
    # dependency order (a cycle between partitions cannot be split)
    ready = [p for p in order if not partitions[p].dependencies]
    sorted_ids: list = []
    pending = {p: set(partitions[p].dependencies) for p in order}
    while ready:
        p = ready.pop(0)
        sorted_ids.append(p)
        for d in partitions[p].dependents:
            pending[d].discard(p)
            if not pending[d] and d not in sorted_ids and d not in ready:
                ready.append(d)
    if len(sorted_ids) != len(order):
        raise RuntimeError("cycle exists between partitions!")
    by_name = {n.name: n for n in m.graph.nodes}
    base = Graph()
    base_env: dict = {}
    for node in m.graph.nodes:
        if node.op == "placeholder":
            default = node.args[0] if node.args else inspect.Signature.empty
            base_env[node] = base.placeholder(node.target, node.type, default_value=default)
            base_env[node].meta = dict(node.meta)
    attrs: dict = {}
    for node in m.graph.nodes:
        if node.op == "get_attr":
            obj: Any = m
            for atom in node.target.split("."):
                obj = getattr(obj, atom)
            attrs[node.target] = obj
            base_env[node] = base.get_attr(node.target)
    for pid in sorted_ids:
        part = partitions[pid]
        env: dict = {}
        for name in part.inputs:
            env[by_name[name]] = part.graph.placeholder(name)
        targets: dict = {}
        for name in part.node_names:
            node = by_name[name]
            new = part.graph.node_copy(node, env.__getitem__)
            if node.op == "call_module":
                obj = m
                for atom in node.target.split("."):
                    obj = getattr(obj, atom)
                targets[node.target] = obj
                if qualname_map is not None:
                    qualname_map[f"{part.name}.{node.target}"] = node.target
            env[node] = new
        outs = [env[by_name[n]] for n in part.outputs]
        part.graph.output(outs[0] if len(outs) == 1 else tuple(outs))
        sub = GraphModule(targets, part.graph, class_name=part.name)
        attrs[part.name] = sub
        call = base.call_module(part.name, tuple(base_env[by_name[n]] for n in part.inputs))
        if len(outs) == 1:
            base_env[by_name[next(iter(part.outputs))]] = call
        else:
            for i, name in enumerate(part.outputs):
                base_env[by_name[name]] = base.call_function(operator.getitem, (call, i))
    for node in m.graph.nodes:
        if node.op == "output":
            base.output(map_arg(node.args[0], lambda n: base_env[n]))
    return GraphModule(attrs, base, class_name=type(m).__name__)
