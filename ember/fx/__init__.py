"""``ember.fx``: capture a program as a graph, transform it, and run it again -- PyTorch's
``torch.fx``.

``symbolic_trace(model)`` runs ``model.forward`` on ``Proxy`` values and records each
operation as a ``Node`` of a ``Graph`` (NOTE [ Tracing ] in ember/fx/_symbolic_trace.py);
the result is a ``GraphModule`` whose ``forward`` is Python code generated from the graph
(NOTE [ GraphModule code and pickling ] in ember/fx/graph_module.py). Graphs are edited
directly (``Graph``/``Node``), by re-running them (``Interpreter``/``Transformer``) or by
pattern (``replace_pattern``). Printed graphs and code spell ember as ``torch``, the way a
program written for PyTorch reads (NOTE [ fx spells ember as torch ] in ember/fx/graph.py).

Example::

    >>> import ember, ember.fx as fx
    >>> gm = fx.symbolic_trace(lambda x: ember.relu(x) * 2)
    >>> print(gm.graph)
    graph():
        %x : [num_users=1] = placeholder[target=x]
        %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})
        %mul : [num_users=1] = call_function[target=operator.mul](args = (%relu, 2), kwargs = {})
        return mul
"""

from . import config, immutable_collections, node, graph, proxy  # noqa: F401
from .graph import CodeGen, Graph  # noqa: F401
from .node import Node, has_side_effect, map_arg  # noqa: F401
from . import graph_module  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from ._symbolic_trace import PH, ProxyableClassMeta, Tracer, symbolic_trace, wrap  # noqa: F401
from .proxy import Proxy  # noqa: F401
from . import traceback, interpreter  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "has_side_effect", "map_arg",
           "CodeGen", "PH", "ProxyableClassMeta"]
from . import subgraph_rewriter  # noqa: E402,F401
from .subgraph_rewriter import replace_pattern  # noqa: E402,F401
from . import operator_schemas, tensor_type, passes, experimental  # noqa: E402,F401
