"""``Graph``: the fx intermediate representation -- building, editing, checking and
printing a list of nodes. ``CodeGen`` (ember/fx/_codegen.py) turns it into Python source.

See NOTE [ fx spells ember as torch ] in ember/fx/_codegen.py for how ember objects are
named in printed graphs and generated code.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ._codegen import CodeGen, PythonCode, _Namespace, _snake_case
from .immutable_collections import immutable_dict, immutable_list  # noqa: F401
from .node import Node, map_arg

__all__ = ["Graph", "CodeGen", "PythonCode"]

_LEGAL_OPS = ("call_function", "call_method", "get_attr", "call_module", "placeholder",
              "output")

# -- the graph ------------------------------------------------------------------------------------


class _NodeList:
    """The nodes of a graph in order: ``len``, iteration (safe while erasing the node just
    returned) and ``reversed``."""

    def __init__(self, graph: Graph, direction: str = "_next"):
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        d = self._direction
        cur = getattr(root, d)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, d)

    def __reversed__(self):
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable):
        self.graph = graph
        self.orig, graph._insert = graph._insert, new_insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig
        return False


class Graph:
    """A program as a list of ``Node`` s (see NOTE [ fx nodes ] in ember/fx/node.py): the
    ``placeholder`` inputs, the operations, one ``output``. Build one by tracing
    (``ember.fx.symbolic_trace(model).graph``) or by hand with the opcode helpers.

    Args:
        owning_module: the ``GraphModule`` that holds the graph, if any.
        tracer_cls: the ``Tracer`` class that made it.
        tracer_extras: arguments the tracer was given.

    Example::

        >>> import ember, ember.fx as fx
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> y = g.call_function(ember.relu, (x,))
        >>> _ = g.output(y)
        >>> print(g)
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})
            return relu
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras: dict | None = None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict = {}

    @property
    def owning_module(self):
        """The ``GraphModule`` this graph belongs to (or None)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (``len``, iteration, ``reversed``)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list:
        """The nodes with opcode ``op`` (and ``target``, when given), in graph order.

        Args:
            op: the opcode.
            target: the target to match, or None for any.
            sort: kept for torch's signature; nodes always come in graph order.

        Returns:
            A list of nodes.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.find_nodes(op="placeholder")
            [x]
        """
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- building -------------------------------------------------------------------------------

    def _target_to_str(self, target) -> str:
        if isinstance(target, str):
            op = target[2:-2] if target.startswith("__") and target.endswith("__") else target
        elif hasattr(target, "overloadpacket"):  # an op overload: named by its op (``add``)
            op = target.overloadpacket.__name__.split(".")[0]
        else:
            op = target.__name__
        return _snake_case(op)

    def create_node(self, op: str, target: Any, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Create a node and insert it at the current insert point (the end of the graph, or
        as set by ``inserting_before``/``inserting_after``).

        Args:
            op: the opcode.
            target: the callable or name.
            args: positional arguments (nodes stand for values).
            kwargs: keyword arguments.
            name: a name to start from (made unique); default from the target.
            type_expr: an optional type annotation.

        Returns:
            The new node.

        Example::

            >>> import operator, ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.create_node("placeholder", "x")
            >>> g.create_node("call_function", operator.add, (x, x)).name
            'add'
        """
        if op not in _LEGAL_OPS:
            raise AssertionError(f"op '{op}' is not in _legal_ops")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise AssertionError("args must be a tuple")
        if not isinstance(kwargs, dict):
            raise AssertionError("kwargs must be a dict")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph (a parameter of the generated ``forward``).

        Args:
            name: the parameter's name (``*args``/``**kwargs`` for var-arguments).
            type_expr: an optional annotation.
            default_value: the parameter's default, if it has one.

        Returns:
            The node.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> g.placeholder("x", default_value=2).args
            (2,)
        """
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Fetch a parameter, buffer, constant or submodule of the root module.

        Args:
            qualified_name: its dotted path, e.g. ``"linear.weight"``.
            type_expr: an optional annotation.

        Returns:
            The node.

        Example::

            >>> import ember.fx as fx
            >>> fx.Graph().get_attr("linear.weight").name
            'linear_weight'
        """
        if self.owning_module is not None and not _has_path(self.owning_module, qualified_name):
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference in "
                          "the owning GraphModule! Call GraphModule.add_submodule to add the "
                          "necessary submodule, GraphModule.add_parameter to add the necessary "
                          "Parameter, or nn.Module.register_buffer to add the necessary buffer",
                          stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call a submodule of the root module.

        Args:
            module_name: its dotted path.
            args: positional arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The node.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.call_module("layer.0", (x,)).name
            'layer_0'
        """
        if self.owning_module is not None and \
                not _has_path(self.owning_module, module_name, module=True):
            warnings.warn("Attempted to insert a call_module Node with no underlying reference "
                          "in the owning GraphModule! Call GraphModule.add_submodule to add "
                          "the necessary submodule", stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call a method on ``args[0]``.

        Args:
            method_name: the method's name.
            args: the object, then positional arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The node.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.call_method("sum", (x,)).name
            'sum_1'
        """
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any = None) -> Node:
        """Call a free function (``ember.relu``, ``operator.add``, a user function).

        Args:
            the_function: the callable.
            args: positional arguments.
            kwargs: keyword arguments.
            type_expr: an optional annotation.

        Returns:
            The node.

        Example::

            >>> import operator, ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.call_function(operator.mul, (x, 2)).target is operator.mul
            True
        """
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """The graph's return value.

        Args:
            result: the value (nodes, or structures of them).
            type_expr: an optional return annotation.

        Returns:
            The output node.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.output((x, x)).op
            'output'
        """
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """Copy ``node`` (of any graph) into this one, its node arguments mapped through
        ``arg_transform``.

        Args:
            node: the node to copy.
            arg_transform: maps each node argument to a node of this graph.

        Returns:
            The copy (named after the original where the name is free).

        Example::

            >>> import ember.fx as fx
            >>> g1, g2 = fx.Graph(), fx.Graph()
            >>> x = g1.placeholder("x")
            >>> g2.node_copy(x).name
            'x'
        """
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = copy.copy(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph.

        Args:
            g: the source graph.
            val_map: filled with source node -> copy (entries already there are used as the
                copies of those nodes, e.g. to bind placeholders).
            return_output_node: return the output node itself rather than its value.

        Returns:
            The copied output value (its argument mapped to the copies), or None when ``g``
            has no output.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> _ = g.output(g.placeholder("x"))
            >>> h = fx.Graph()
            >>> h.graph_copy(g, {})
            x
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = g
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            rv, old_out = output_vals
            new_out = g.output(rv, type_expr=getattr(old_out, "type", None))
            new_out.meta = copy.copy(old_out.meta)
        return g

    def erase_node(self, to_erase: Node) -> None:
        """Remove ``to_erase``, which nothing may use any more.

        Args:
            to_erase: the node.

        Raises:
            RuntimeError: if the node still has users.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> g.erase_node(x)
            >>> len(g.nodes)
            0
        """
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None):
        """Context manager: nodes created inside go before ``n`` (at the start of the graph
        when ``n`` is None).

        Args:
            n: the node to insert before.

        Returns:
            The context manager.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> with g.inserting_before(x):
            ...     y = g.placeholder("y")
            >>> [n.name for n in g.nodes]
            ['y', 'x']
        """
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None):
        """Context manager: nodes created inside go right after ``n`` (so several created
        in one block end up in reverse order, as in torch; at the start of the graph when
        ``n`` is None).

        Args:
            n: the node to insert after.

        Returns:
            The context manager.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> with g.inserting_after(x):
            ...     y = g.call_method("relu", (x,))
            >>> [n.name for n in g.nodes]
            ['x', 'relu']
        """
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def set_codegen(self, codegen: CodeGen) -> None:
        """Use ``codegen`` to generate this graph's code.

        Args:
            codegen: a ``CodeGen``.

        Example::

            >>> import ember.fx as fx
            >>> fx.Graph().set_codegen(fx.CodeGen())
        """
        self._codegen = codegen

    def process_inputs(self, *args):
        """The graph's ``CodeGen.process_inputs`` applied to ``args``.

        Args:
            args: the caller's inputs.

        Returns:
            The placeholder values.
        """
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        """The graph's ``CodeGen.process_outputs`` applied to ``out``.

        Args:
            out: the output node's value.

        Returns:
            What the caller gets.
        """
        return self._codegen.process_outputs(out)

    # -- analysis and transformation ------------------------------------------------------------

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Remove the nodes nothing uses (working backwards, so whole dead chains go), except
        impure ones (``Node.is_impure``).

        Args:
            is_impure_node: decides impurity instead of ``Node.is_impure``.

        Returns:
            True if anything was removed.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> _ = g.call_method("relu", (x,))
            >>> _ = g.output(x)
            >>> g.eliminate_dead_code()
            True
        """
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: every argument is a node of this graph defined
        earlier, names are unique, the opcodes and targets are valid and (with an owning
        module) every ``get_attr``/``call_module`` target exists.

        Raises:
            RuntimeError: describing the first problem found.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> _ = g.output(g.placeholder("x"))
            >>> g.lint()
        """
        seen_names: set = set()
        seen_values: set = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.op not in ("placeholder", "call_method", "call_module", "call_function",
                               "get_attr", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument! If you are "
                                       "copying nodes from another graph, make sure to use "
                                       "``arg_transform`` on node_copy() to remap values\n"
                                       f"{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before "
                                       "it has been defined! Please check that Nodes in the "
                                       "graph are topologically ordered\n" f"{self}")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen_values.add(node)
        mod = self.owning_module
        if mod is not None:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    if not _has_path(mod, node.target, module=node.op == "call_module"):
                        kind = "module" if node.op == "call_module" else "attribute"
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent {kind} {node.target}")

    # -- printing and code ----------------------------------------------------------------------

    def python_code(self, root_module: str, *, verbose: bool = False,
                    include_stride: bool = False, include_device: bool = False,
                    colored: bool = False, expanded_def: bool = False) -> PythonCode:
        """The Python source of a ``forward`` computing this graph.

        Args:
            root_module: the name the code uses for the module holding the attributes
                (``"self"``).
            verbose: add a comment with each node's stack trace.
            include_stride: accepted for torch's signature (no effect).
            include_device: accepted for torch's signature (no effect).
            colored: accepted for torch's signature (no effect).
            expanded_def: accepted for torch's signature (no effect).

        Returns:
            A ``PythonCode`` (``src`` and ``globals``).

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> _ = g.output(g.placeholder("x"))
            >>> "def forward(self, x)" in g.python_code("self").src
            True
        """
        namespace = _Namespace()
        for node in self.nodes:
            namespace.create_name(node.name, node)
        return self._codegen._gen_python_code(list(self.nodes), root_module, namespace,
                                              verbose=verbose)

    def __str__(self) -> str:
        lines = []
        for node in self.nodes:
            s = node.format_node()
            if s:
                lines.append("    " + s)
        return "graph():\n" + "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> _ = g.output(g.placeholder("x"))
            >>> g.print_tabular()
            opcode       name    target    args    kwargs
            -----------  ------  --------  ------  --------
            placeholder  x       x         ()      {}
            output       output  output    (x,)    {}
        """
        rows = [[n.op, n.name, _target_str(n.target), str(n.args), str(n.kwargs)]
                for n in self.nodes]
        print(_tabulate(rows, ["opcode", "name", "target", "args", "kwargs"]))


def _target_str(t) -> str:
    return t if isinstance(t, str) else str(t)


def _tabulate(rows: list, headers: list) -> str:
    """A plain text table in tabulate's ``simple`` style (the format torch prints)."""
    widths = [max([len(h) + 2] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def _has_path(mod, target: str, module: bool = False) -> bool:
    import ember

    obj = mod
    for atom in target.split("."):
        if isinstance(obj, ember.nn.Module):
            if atom in obj._modules:
                obj = obj._modules[atom]
                continue
            if module:
                return False
        if not hasattr(obj, atom):
            return False
        obj = getattr(obj, atom)
    return not module or isinstance(obj, ember.nn.Module)
