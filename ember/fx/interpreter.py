"""``Interpreter`` runs a ``GraphModule`` node by node; ``Transformer`` runs it on proxies
to build a new graph. Override one opcode method (``call_function``, ``call_module``...) or
``run_node`` to change what each node does.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Any
from collections.abc import Iterator

from . import traceback as fx_traceback
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg  # noqa: F401
from .proxy import Proxy
from ._symbolic_trace import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a ``GraphModule``'s graph one node at a time, calling the method named after
    each node's opcode. Subclass it to observe or change execution.

    Args:
        module: the module to run.
        garbage_collect_values: free each value after its last use.
        graph: run this graph instead of ``module.graph`` (its attributes still come from
            ``module``).

    Example::

        >>> import ember, ember.fx as fx
        >>> gm = fx.symbolic_trace(lambda x: ember.relu(x) + 1)
        >>> class NegRelu(fx.Interpreter):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is ember.relu:
        ...             return ember.neg(*args)
        ...         return super().call_function(target, args, kwargs)
        >>> NegRelu(gm).run(ember.tensor([1.0]))
        tensor([0.])
    """

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env: dict = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if self.garbage_collect_values:
            # the node after which each value is no longer needed
            node_to_last_use: dict = {}
            self.user_to_last_uses: dict = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in node_to_last_use:
                        node_to_last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``.

        Args:
            args: the inputs, in placeholder order.
            initial_env: node -> value to use without running those nodes.
            enable_io_processing: pass inputs and output through the graph's
                ``CodeGen.process_inputs``/``process_outputs``.

        Returns:
            The output value.
        """
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    # the failing node joins the message, as in torch
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg,) + e.args[1:]
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                out = self.env[node]
                return self.graph.process_outputs(out) if enable_io_processing \
                    else out
        return None

    def boxed_run(self, args_list: list) -> Any:
        """``run`` taking its inputs as a list it empties (so the caller holds no
        references to them).

        Args:
            args_list: the inputs; cleared.

        Returns:
            The output value.
        """
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    @contextlib.contextmanager
    def _set_current_node(self, node: Node):
        with fx_traceback.set_current_meta(node):
            yield

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its argument values, then call the opcode's method.

        Args:
            n: the node.

        Returns:
            Its value.
        """
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return getattr(self, n.op)(n.target, args, kwargs)

    # -- the opcodes ----------------------------------------------------------------------------

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The next input (all remaining ones for ``*args``; the default when none is
        left)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from si

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The module attribute at path ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Call the submodule at path ``target``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The graph's return value."""
        return args[0]

    # -- helpers --------------------------------------------------------------------------------

    def fetch_attr(self, target: str) -> Any:
        """The attribute of ``self.module`` at dotted path ``target``.

        Args:
            target: the path.

        Returns:
            The attribute.

        Raises:
            RuntimeError: if the path does not exist.
        """
        atoms = target.split(".")
        attr = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(attr, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            attr = getattr(attr, atom)
        return attr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        """The values of ``n``'s arguments, its nodes replaced by their computed values.

        Args:
            n: the node.

        Returns:
            ``(args, kwargs)``.
        """
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return tuple(args), dict(kwargs)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        """Replace the nodes in ``args`` with their values.

        Args:
            args: an argument structure.
            n: the node whose arguments these are (for the error message).

        Returns:
            The structure with values.
        """
        def load(n_arg: Node):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]

        return map_arg(args, load)


class Transformer(Interpreter):
    """Builds a new graph by running the old one on proxies: each opcode method returns a
    ``Proxy``, so an override can emit different nodes. ``transform()`` returns the new
    ``GraphModule``.

    Args:
        module: the module to transform.

    Example::

        >>> import operator, ember, ember.fx as fx
        >>> gm = fx.symbolic_trace(lambda x: x + 1)
        >>> class AddToMul(fx.Transformer):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is operator.add:
        ...             target = operator.mul
        ...         return super().call_function(target, args, kwargs)
        >>> AddToMul(gm).transform()(ember.tensor([3.0]))
        tensor([3.])
    """

    def __init__(self, module: GraphModule):
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph):
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, _, __) -> bool:
                return True

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A placeholder of the new graph (with the old one's default)."""
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A ``get_attr`` node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """A ``call_module`` node of the new graph."""
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        """A ``call_function`` node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """A ``call_method`` node of the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if isinstance(result, Proxy) and not isinstance(result.node, type(None)):
            for k, v in n.meta.items():
                result.node.meta.setdefault(k, copy.copy(v))
        return result

    def transform(self) -> GraphModule:
        """Run the transformation.

        Returns:
            A ``GraphModule`` on ``self.module`` with the new graph.
        """
        with fx_traceback.preserve_node_meta():
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a

            out = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_out = [n for n in self.graph.nodes if n.op == "output"]
            if old_out:
                out.meta = copy.copy(old_out[0].meta)
        return GraphModule(self.module, self.new_graph)
