"""Inference-time rewrites of traced models: fold BatchNorm into the preceding convolution
or linear layer (``fuse``), drop ``Dropout`` (``remove_dropout``), cut out a subgraph as its
own module (``extract_subgraph``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable


import ember.nn as nn
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from ..graph import Graph
from ..graph_module import GraphModule
from ..node import Node
from .._symbolic_trace import symbolic_trace

__all__ = ["fuse", "remove_dropout", "extract_subgraph", "matches_module_pattern",
           "replace_node_module", "fuse_conv_bn_eval", "fuse_linear_bn_eval"]


def _parent_name(target: str) -> tuple:
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def matches_module_pattern(pattern: Iterable[type], node: Node, modules: dict) -> bool:
    """Whether ``node`` and its first argument call modules of the types of ``pattern``
    (``(nn.Conv2d, nn.BatchNorm2d)``: ``node`` is a BatchNorm call on a Conv2d call).

    Args:
        pattern: two module types, producer first.
        node: the consumer node.
        modules: qualified name -> module (``dict(model.named_modules())``).

    Returns:
        bool.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.experimental.optimization import matches_module_pattern
        >>> m = ember.nn.Sequential(ember.nn.Conv2d(1, 1, 1), ember.nn.BatchNorm2d(1))
        >>> gm = fx.symbolic_trace(m)
        >>> mods = dict(gm.named_modules())
        >>> any(matches_module_pattern((ember.nn.Conv2d, ember.nn.BatchNorm2d), n, mods)
        ...     for n in gm.graph.nodes)
        True
    """
    if len(node.args) == 0:
        return False
    nodes = (node.args[0], node)
    for expected, current in zip(pattern, nodes):
        if not isinstance(current, Node) or current.op != "call_module" or \
                not isinstance(current.target, str) or current.target not in modules:
            return False
        if type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict, new_module) -> None:
    """Install ``new_module`` where ``node``'s ``call_module`` target lives.

    Args:
        node: a ``call_module`` node.
        modules: qualified name -> module; updated.
        new_module: the replacement.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.experimental.optimization import replace_node_module
        >>> gm = fx.symbolic_trace(ember.nn.Sequential(ember.nn.ReLU()))
        >>> mods = dict(gm.named_modules())
        >>> n = [n for n in gm.graph.nodes if n.op == "call_module"][0]
        >>> replace_node_module(n, mods, ember.nn.Tanh())
        >>> type(gm.get_submodule("0")).__name__
        'Tanh'
    """
    parent, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model, inplace: bool = False, no_trace: bool = False):
    """Fold each BatchNorm that follows a convolution (or linear layer) and is its only
    user into that layer's weights, for inference.

    Args:
        model: the module (in eval mode).
        inplace: change ``model``'s submodules rather than a copy's.
        no_trace: ``model`` is already a ``GraphModule``.

    Returns:
        The fused ``GraphModule``.

    Example::

        >>> import ember
        >>> from ember.fx.experimental.optimization import fuse
        >>> m = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 3), ember.nn.BatchNorm2d(3)).eval()
        >>> x = ember.randn(1, 2, 5, 5)
        >>> ember.allclose(fuse(m)(x), m(x), atol=1e-5)
        True
    """
    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d),
                (nn.Conv3d, nn.BatchNorm3d), (nn.Linear, nn.BatchNorm1d)]
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if no_trace and isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in patterns:
        for node in new_graph.nodes:
            if not matches_module_pattern(pattern, node, modules):
                continue
            if len(node.args[0].users) > 1:
                continue
            first = modules[node.args[0].target]
            bn = modules[node.target]
            if not bn.track_running_stats:
                continue
            if isinstance(first, nn.Linear):
                fused = fuse_linear_bn_eval(first, bn)
            else:
                fused = fuse_conv_bn_eval(first, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)


def remove_dropout(model):
    """Remove every ``nn.Dropout`` call (the identity at inference).

    Args:
        model: the module.

    Returns:
        A ``GraphModule`` without them.

    Example::

        >>> import ember
        >>> from ember.fx.experimental.optimization import remove_dropout
        >>> m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Dropout(0.5))
        >>> [n.op for n in remove_dropout(m).graph.nodes]
        ['placeholder', 'call_module', 'output']
    """
    fx_model = symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    graph = fx_model.graph
    for node in list(graph.nodes):
        if node.op == "call_module" and isinstance(modules.get(node.target), nn.Dropout):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    graph.lint()
    fx_model.delete_all_unused_submodules()
    fx_model.recompile()
    return fx_model


def extract_subgraph(orig_module: nn.Module, nodes: list, inputs: list, outputs: list):
    """A module computing ``outputs`` from ``inputs`` with ``nodes`` (nodes of a traced
    ``orig_module``), copied into a new graph.

    Args:
        orig_module: the module the nodes' targets refer to.
        nodes: the nodes to copy, in order.
        inputs: the nodes that become placeholders.
        outputs: the nodes returned.

    Returns:
        A ``GraphModule``.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.experimental.optimization import extract_subgraph
        >>> gm = fx.symbolic_trace(lambda x: (x + 1) * 2)
        >>> x, add, mul, _ = gm.graph.nodes
        >>> extract_subgraph(gm, [add], [x], [add])(ember.tensor([1.0]))
        tensor([2.])
    """
    new_graph = Graph()
    env: dict = {}
    for inp in inputs:
        env[inp] = new_graph.placeholder(inp.name)
    for node in nodes:
        env[node] = new_graph.node_copy(node, lambda x: env[x])
    new_graph.output([env[o] for o in outputs] if len(outputs) > 1 else env[outputs[0]])
    new_graph.lint()
    return GraphModule(orig_module, new_graph)



