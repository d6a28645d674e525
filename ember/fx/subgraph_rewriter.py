"""``replace_pattern``: find every occurrence of a pattern graph in a ``GraphModule`` and
replace it with another graph.

NOTE [ Subgraph matching ]
The pattern and the replacement are traced (functions or modules). The pattern's
placeholders match any value of the graph, a node or a constant argument (each one
consistently; a constant is handed to the replacement as it is); every other pattern node
must match a graph node with the same opcode and target, arguments matching position by
position (nodes recursively, constants by equality). Matching starts at each graph node
that could be the pattern's returned node (its *anchor*) and walks backwards through the
arguments. A match is kept only if no value computed inside it, except those the pattern
returns, is used outside it -- replacing it would otherwise lose that value -- and if it
shares no node with an earlier match. Matches are replaced in graph order: the
replacement's nodes go right before the first user of the values the match returns (right
after the last returned node when none is used), bound to the matched inputs, the uses of the
returned values move to the replacement's outputs, and the matched nodes are erased.
"""

from __future__ import annotations


from typing import NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "ReplacedPatterns", "replace_pattern", "replace_pattern_with_filters"]


class Match(NamedTuple):
    """One replaced occurrence: the pattern's anchor and pattern node -> graph node.

    Args:
        anchor: the pattern node matching was started from (its returned node).
        nodes_map: pattern node -> matched graph node.

    Returns:
        The named tuple; ``replace_pattern`` returns a list of them.

    Example:
        >>> import ember
        >>> from ember.fx import symbolic_trace
        >>> from ember.fx.subgraph_rewriter import replace_pattern
        >>> class M(ember.nn.Module):
        ...     def forward(self, x):
        ...         return ember.relu(x) + 1
        >>> gm = symbolic_trace(M())
        >>> matches = replace_pattern(gm, lambda x: ember.relu(x), lambda x: ember.sigmoid(x))
        >>> [type(m).__name__ for m in matches], len(matches[0].nodes_map) > 0
        (['Match'], True)
    """

    anchor: Node
    nodes_map: dict


class ReplacedPatterns(NamedTuple):
    """A ``Match`` plus the nodes the replacement inserted.

    Args:
        anchor: as in ``Match``.
        nodes_map: as in ``Match``.
        replacements: the graph nodes inserted for this match.

    Returns:
        The named tuple; ``replace_pattern_with_filters`` returns a list of them.

    Example:
        >>> import ember
        >>> from ember.fx import symbolic_trace
        >>> from ember.fx.subgraph_rewriter import replace_pattern_with_filters
        >>> class M(ember.nn.Module):
        ...     def forward(self, x):
        ...         return ember.relu(x) + 1
        >>> gm = symbolic_trace(M())
        >>> found = replace_pattern_with_filters(gm, lambda x: ember.relu(x),
        ...                                      lambda x: ember.sigmoid(x))
        >>> [n.name for n in found[0].replacements]
        ['sigmoid']
    """

    anchor: Node
    nodes_map: dict
    replacements: list


def _trace(obj) -> GraphModule:
    from ._symbolic_trace import symbolic_trace

    return obj if isinstance(obj, GraphModule) else symbolic_trace(obj)


class _Matcher:
    def __init__(self, pattern: Graph, ignore_literals: bool = False):
        self.pattern = pattern
        self.ignore_literals = ignore_literals
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        out = [n for n in pattern.nodes if n.op == "output"]
        if len(out) != 1:
            raise ValueError("replace_pattern: the pattern must have exactly one output")
        ret = out[0].args[0]
        self.returns = list(ret) if isinstance(ret, (tuple, list)) else [ret]
        if not all(isinstance(r, Node) for r in self.returns):
            raise ValueError("replace_pattern: the pattern must return nodes")

    def _match_arg(self, pa, ga, m: dict) -> bool:
        if isinstance(pa, Node):
            if isinstance(ga, Node):
                return self._match_node(pa, ga, m)
            if pa.op != "placeholder":
                return False
            # a pattern input matches a constant argument too (``sigmoid(a) + b`` finds
            # ``sigmoid(x) + 1``, as in PyTorch), each time the same constant; the
            # replacement then takes the constant
            if pa in m:
                seen = m[pa]
                return not isinstance(seen, Node) and type(seen) is type(ga) and seen == ga
            m[pa] = ga
            return True
        if isinstance(pa, (tuple, list)):
            return isinstance(ga, (tuple, list)) and len(pa) == len(ga) and \
                all(self._match_arg(a, b, m) for a, b in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and \
                all(self._match_arg(pa[k], ga[k], m) for k in pa)
        if isinstance(ga, Node):
            return False
        return self.ignore_literals or type(pa) is type(ga) and pa == ga

    def _match_node(self, pn: Node, gn: Node, m: dict) -> bool:
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if pn.op != gn.op or pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or pn.kwargs.keys() != gn.kwargs.keys():
            return False
        m[pn] = gn
        return all(self._match_arg(a, b, m) for a, b in zip(pn.args, gn.args)) and \
            all(self._match_arg(pn.kwargs[k], gn.kwargs[k], m) for k in pn.kwargs)

    def match(self, graph: Graph) -> list:
        found = []
        anchor = self.returns[-1]
        for gn in graph.nodes:
            m: dict = {}
            if not self._match_node(anchor, gn, m):
                continue
            # the other returned nodes must be matched through the anchor's inputs
            if not all(r in m for r in self.returns):
                continue
            inner = {m[p] for p in m if p.op != "placeholder" and p not in self.returns}
            inside = {m[p] for p in m if p.op != "placeholder"}
            if any(u not in inside for n in inner for u in n.users):
                continue
            found.append(m)
        return found


def _copy_replacement_attrs(gm: GraphModule, replacement: GraphModule, graph: Graph) -> None:
    from .graph import _has_path

    for node in graph.nodes:
        if node.op in ("get_attr", "call_module") and not _has_path(gm, node.target):
            obj = replacement
            for atom in node.target.split("."):
                obj = getattr(obj, atom)
            import ember

            if isinstance(obj, ember.nn.Module):
                gm.add_submodule(node.target, obj)
            else:
                *prefix, field = node.target.split(".")
                owner = gm.get_submodule(".".join(prefix)) if prefix else gm
                if isinstance(obj, ember.Tensor) and not isinstance(obj, ember.nn.Parameter):
                    owner.register_buffer(field, obj)
                else:
                    setattr(owner, field, obj)


def replace_pattern_with_filters(gm: GraphModule, pattern, replacement,
                                 match_filters: list | None = None,
                                 ignore_literals: bool = False) -> list:
    """``replace_pattern`` with a say over each match (NOTE [ Subgraph matching ]).

    Args:
        gm: the module to rewrite (in place; recompiled).
        pattern: a function, module or ``GraphModule`` to find.
        replacement: what to put instead (same inputs, same number of outputs).
        match_filters: functions ``(match, original_graph, pattern_graph) -> bool``; a match
            is replaced only if all return True.
        ignore_literals: constants in the pattern match any constant.

    Returns:
        A list of ``ReplacedPatterns``.

    Example::

        >>> import ember, ember.fx as fx
        >>> from ember.fx.subgraph_rewriter import replace_pattern_with_filters
        >>> gm = fx.symbolic_trace(lambda x: ember.relu(x) + 1)
        >>> len(replace_pattern_with_filters(gm, lambda x: ember.relu(x),
        ...                                  lambda x: ember.sigmoid(x)))
        1
    """
    pattern_gm = _trace(pattern)
    replacement_gm = _trace(replacement)
    pattern_graph = pattern_gm.graph
    repl_graph = replacement_gm.graph
    matcher = _Matcher(pattern_graph, ignore_literals)
    graph = gm.graph
    repl_placeholders = [n for n in repl_graph.nodes if n.op == "placeholder"]
    if len(repl_placeholders) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern: the pattern takes {len(matcher.placeholders)} "
                         f"inputs but the replacement takes {len(repl_placeholders)}")
    results = []
    used: set = set()
    for m in matcher.match(graph):
        matched = {m[p] for p in m if p.op != "placeholder"}
        if matched & used or any(isinstance(n, Node) and n._erased for n in m.values()):
            continue
        match = Match(anchor=matcher.returns[-1], nodes_map=m)
        if match_filters and not all(f(match, graph, pattern_graph) for f in match_filters):
            continue
        used |= matched
        # the replacement goes right before the first user of what the match returns (or,
        # unused, right after the last returned node), as torch places it
        returned = [m[r] for r in matcher.returns]
        order = {n: i for i, n in enumerate(graph.nodes)}
        users = {u for r in returned for u in r.users}
        if users:
            point = min(users, key=lambda n: order[n])
        else:
            point = max(returned, key=lambda n: order[n]).next
        val_map = {rp: m[pp] for rp, pp in zip(repl_placeholders, matcher.placeholders)}
        before = set(graph.nodes)
        with graph.inserting_before(point):
            out = graph.graph_copy(repl_graph, val_map)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(returned):
            raise ValueError(f"replace_pattern: the pattern returns {len(returned)} values "
                             f"but the replacement {len(outs)}")
        for old, new in zip(returned, outs):
            old.replace_all_uses_with(new)
        for n in sorted(matched, key=lambda n: order[n], reverse=True):
            if not n.users:
                graph.erase_node(n)
        replacements = [n for n in graph.nodes if n not in before]
        results.append(ReplacedPatterns(match.anchor, m, replacements))
    if results:
        _copy_replacement_attrs(gm, replacement_gm, graph)
        gm.recompile()
    return results


def replace_pattern(gm: GraphModule, pattern, replacement) -> list:
    """Replace every occurrence of ``pattern`` in ``gm`` with ``replacement``
    (NOTE [ Subgraph matching ]).

    Args:
        gm: the module to rewrite (in place; recompiled).
        pattern: a function, module or ``GraphModule`` to find.
        replacement: what to put instead (same inputs, same number of outputs).

    Returns:
        A list of ``Match`` (pattern anchor and pattern node -> graph node), one per
        replaced occurrence.

    Example::

        >>> import ember, ember.fx as fx
        >>> def f(x, y):
        ...     return ember.add(x, y).relu() * 2
        >>> gm = fx.symbolic_trace(f)
        >>> def pattern(a, b):
        ...     return ember.add(a, b).relu()
        >>> def replacement(a, b):
        ...     return ember.sub(a, b).relu()
        >>> len(fx.replace_pattern(gm, pattern, replacement))
        1
        >>> gm(ember.tensor([3.0]), ember.tensor([1.0]))
        tensor([4.])
    """
    return [Match(r.anchor, r.nodes_map)
            for r in replace_pattern_with_filters(gm, pattern, replacement)]



