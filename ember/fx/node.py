"""``Node``: one operation of an fx ``Graph``, and the helpers that walk node arguments.

NOTE [ fx nodes ]
A node is one of six opcodes -- ``placeholder`` (a function input), ``get_attr`` (a
parameter, buffer or constant fetched from the root module), ``call_function``,
``call_method``, ``call_module`` and ``output`` (the return value) -- with a ``target``
(a callable for ``call_function``, a string otherwise), ``args`` and ``kwargs`` in which
other nodes stand for the values they compute. The graph keeps use-def chains both ways:
``node.all_input_nodes`` (the nodes its arguments name, in order) and ``node.users`` (the
nodes naming it). Setting ``node.args``/``node.kwargs`` is the only way to change arguments
and updates both chains; the containers inside are immutable for that reason. Nodes form a
doubly linked list through the graph's sentinel root, so inserting and erasing are O(1).
"""

from __future__ import annotations

import builtins
import operator
import re
import types
from typing import Any
from collections.abc import Callable

from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

#: what a node's ``target`` is: a callable for ``call_function``, a string otherwise
Target = Any
#: what may appear in a node's ``args``/``kwargs``: nodes, constants and containers of them
Argument = Any

_OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr",
            "output", "root")

#: functions whose calls are kept by dead-code elimination (see ``has_side_effect``)
_side_effectful_functions: set = {operator.setitem}


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as having a side effect: its ``call_function`` nodes are never removed by
    ``Graph.eliminate_dead_code``, even when nothing uses their result.

    Args:
        fn: the function (usable as a decorator).

    Returns:
        ``fn`` itself.

    Example::

        >>> from ember.fx import has_side_effect
        >>> @has_side_effect
        ... def log(x):
        ...     print(x)
    """
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every leaf of ``a``, rebuilding tuples (named ones too), lists (as
    ``immutable_list``), dicts (as ``immutable_dict``) and slices around the results.

    Args:
        a: the argument structure.
        fn: called on each leaf.

    Returns:
        The rebuilt structure.

    Example::

        >>> from ember.fx.node import map_aggregate
        >>> map_aggregate((1, [2, 3]), lambda v: v * 10)
        (10, [20, 30])
    """
    if isinstance(a, tuple):
        items = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply ``fn`` to every ``Node`` inside ``a`` (leaving other leaves as they are).

    Args:
        a: a node argument structure (tuples, lists, dicts, slices, nodes, constants).
        fn: called on each node.

    Returns:
        The rebuilt structure.

    Example::

        >>> import ember.fx as fx
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> fx.node.map_arg((x, 1), lambda n: n.name)
        ('x', 1)
    """
    if not callable(fn):
        raise TypeError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _collect_nodes(a, out: dict) -> None:
    """The nodes of an argument structure, in order, into the keys of ``out``."""
    if isinstance(a, Node):
        out.setdefault(a)
    elif isinstance(a, (tuple, list)):
        for e in a:
            _collect_nodes(e, out)
    elif isinstance(a, dict):
        for e in a.values():
            _collect_nodes(e, out)
    elif isinstance(a, slice):
        _collect_nodes((a.start, a.stop, a.step), out)


def _type_repr(t) -> str:
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        mod = t.__module__
        if mod.startswith("ember"):
            mod = "torch" + mod[len("ember"):]
        return f"{mod}.{t.__qualname__}"
    if t is ...:
        return "..."
    if isinstance(t, types.FunctionType):
        return t.__name__
    return re.sub(r"\bember\.", "torch.", repr(t))


def _spell(x) -> str:
    """How a constant argument prints: ember's dtypes and formats as torch spells them
    (NOTE [ fx spells ember as torch ] in ember/fx/graph.py)."""
    r = repr(x)
    if r.startswith("ember.") and not isinstance(x, (str, Node)):
        return "torch." + r[len("ember."):]
    return r


class Node:
    """One operation of a ``Graph`` (see NOTE [ fx nodes ]). Nodes are made by the graph's
    ``create_node`` and its opcode helpers, not directly.

    Args:
        graph: the graph the node belongs to.
        name: its unique name (the variable it becomes in generated code).
        op: the opcode.
        target: what it calls or names.
        args: positional arguments.
        kwargs: keyword arguments.
        return_type: an optional type annotation.

    Example::

        >>> import ember.fx as fx
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> y = g.call_method("relu", (x,))
        >>> y.op, y.target, y.args
        ('call_method', 'relu', (x,))
    """

    def __init__(self, graph, name: str, op: str, target: Any, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in _OPCODES:
            raise ValueError(f"Node: unknown opcode {op!r}; expected one of {_OPCODES[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = immutable_dict()
        self._update_args_kwargs(args, kwargs)

    # -- the linked list ---------------------------------------------------------------------

    @property
    def next(self) -> Node:
        """The node after this one in the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert ``x`` before this node (moving it if it is already in the graph).

        Args:
            x: a node of the same graph.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> a = g.placeholder("a")
            >>> b = g.placeholder("b")
            >>> a.prepend(b)
            >>> [n.name for n in g.nodes]
            ['b', 'a']
        """
        if x.graph is not self.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Insert ``x`` after this node (moving it if it is already in the graph).

        Args:
            x: a node of the same graph.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> a = g.placeholder("a")
            >>> b = g.placeholder("b")
            >>> b.append(a)
            >>> [n.name for n in g.nodes]
            ['b', 'a']
        """
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        # the node keeps its own links, so an iteration standing on it (it was just erased)
        # goes on to the node that followed it
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # -- arguments and use-def chains --------------------------------------------------------

    @property
    def args(self) -> tuple:
        """The positional arguments; assigning them updates the use-def chains."""
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning them updates the use-def chains."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        """The nodes this node's arguments name, each once, in order."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Any) -> None:
        """Replace positional argument ``idx`` with ``arg``.

        Args:
            idx: the position.
            arg: the new argument.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> n = g.call_function(max, (x, 1))
            >>> n.update_arg(1, 2)
            >>> n.args
            (x, 2)
        """
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Any) -> None:
        """Insert ``arg`` at position ``idx`` of the positional arguments.

        Args:
            idx: the position (0 to ``len(args)``).
            arg: the new argument.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> n = g.call_function(max, (x,))
            >>> n.insert_arg(1, 3)
            >>> n.args
            (x, 3)
        """
        if not 0 <= idx <= len(self._args):
            raise AssertionError("insert_args index must be between 0 and len(self.args)")
        self.args = self._args[:idx] + (arg,) + self._args[idx:]

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Set keyword argument ``key`` to ``arg``.

        Args:
            key: the keyword.
            arg: the new argument.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> n = g.call_method("sum", (x,))
            >>> n.update_kwarg("dim", 0)
            >>> n.kwargs
            {'dim': 0}
        """
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args = map_aggregate(tuple(new_args), lambda x: x)
        self._kwargs = map_aggregate(dict(new_kwargs), lambda x: x)
        found: dict = {}
        _collect_nodes(self._args, found)
        _collect_nodes(self._kwargs, found)
        self._input_nodes = found
        for n in found:
            n.users.setdefault(self)

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list:
        """Make every user of this node use ``replace_with`` instead.

        Args:
            replace_with: the node to use instead.
            delete_user_cb: called on each user; only users for which it returns True are
                changed.
            propagate_meta: copy this node's ``meta`` onto ``replace_with`` (which must have
                none of its own).

        Returns:
            The users that were changed.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> a = g.call_method("relu", (x,))
            >>> b = g.call_method("sigmoid", (x,))
            >>> out = g.output(a)
            >>> a.replace_all_uses_with(b)
            [output]
        """
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     "meta keys")
            replace_with.meta.update(self.meta)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user._replace_input(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace every use of ``old_input`` in this node's arguments with ``new_input``.

        Args:
            old_input: the node to replace.
            new_input: the node to use instead.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> x, y = g.placeholder("x"), g.placeholder("y")
            >>> n = g.call_method("relu", (x,))
            >>> n.replace_input_with(x, y)
            >>> n.args
            (y,)
        """
        self._replace_input(old_input, new_input)

    def _replace_input(self, old, new) -> None:
        def swap(n):
            return new if n is old else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def normalized_arguments(self, root, arg_types: tuple | None = None,
                             kwarg_types: dict | None = None,
                             normalize_to_only_use_kwargs: bool = False):
        """This node's arguments matched to its target's signature, defaults filled in
        (see ``ember.fx.operator_schemas.normalize_function``).

        Args:
            root: the module holding ``call_module`` targets.
            arg_types: accepted for torch's signature.
            kwarg_types: accepted for torch's signature.
            normalize_to_only_use_kwargs: return every argument as a keyword.

        Returns:
            An ``ArgsKwargsPair``, or None (other opcodes, or no signature fits).

        Example::

            >>> import ember, ember.fx as fx
            >>> g = fx.Graph()
            >>> x = g.placeholder("x")
            >>> n = g.call_function(ember.nn.functional.relu, (x,))
            >>> n.normalized_arguments(None, normalize_to_only_use_kwargs=True).kwargs
            {'input': x, 'inplace': False}
        """
        from .operator_schemas import normalize_function, normalize_module

        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types,
                                      kwarg_types, normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs)
        return None

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)

    # -- properties ---------------------------------------------------------------------------

    @property
    def stack_trace(self):
        """The Python stack trace recorded when the node was traced, or None."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self) -> bool:
        """True when dead-code elimination must keep this node although nothing uses it:
        inputs and outputs, calls of functions marked ``has_side_effect``, of the
        ``ops.profiler`` record-function ops and of modules marked ``_is_impure``. Everything
        else counts as pure, as in torch -- in-place methods (``x.add_(1)``) and random
        functions included, so a graph relying on such an unused call must mark it.

        Returns:
            bool.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> g.placeholder("x").is_impure()
            True
        """
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            # the record_function ops (``ember.ops.profiler.*``) open and close blocks
            from .._dispatch import OpOverload, OpOverloadPacket

            t = self.target
            packet = t.overloadpacket if isinstance(t, OpOverload) else t
            return isinstance(packet, OpOverloadPacket) and packet._ns == "profiler"
        if self.op == "call_module":
            root = self.graph.owning_module
            if root is None:
                return False
            try:
                mod = root.get_submodule(self.target)
            except AttributeError:
                return False
            return bool(getattr(mod, "_is_impure", False))
        return False

    # -- printing ---------------------------------------------------------------------------------

    def __repr__(self) -> str:
        return self.name

    def _pretty_target(self) -> str:
        t = self.target
        if isinstance(t, str):
            return t
        from ._codegen import _qualified_name

        mod = getattr(t, "__module__", None)
        name = getattr(t, "__name__", None)
        if name is not None and getattr(builtins, name, None) is t:
            return f"builtins.{name}"
        if mod in ("_operator", "operator"):
            return f"operator.{name}"
        return _qualified_name(t)

    def format_node(self, placeholder_names: list | None = None,
                    maybe_return_typename: list | None = None) -> str | None:
        """The node as ``print(graph)`` shows it, e.g.
        ``%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), ...)``.

        Args:
            placeholder_names: when given, placeholders append their names here and return
                None (the caller prints them in the signature).
            maybe_return_typename: when given, the output node's type annotation goes here.

        Returns:
            The line, or None.

        Example::

            >>> import ember.fx as fx
            >>> g = fx.Graph()
            >>> print(g.placeholder("x").format_node())
            %x : [num_users=0] = placeholder[target=x]
        """
        if self.op == "placeholder":
            if placeholder_names is not None:
                default = f"={self.args[0]!r}" if self.args else ""
                placeholder_names.append(f"{self.target}{default}")
                return None
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = " \
               f"{self.op}[target={self._pretty_target()}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"


def _format_arg(arg, max_list_len: float = float("inf")) -> str:
    if isinstance(arg, Node):
        return "%" + str(arg)
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{more}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        trailing = "," if len(arg) == 1 else ""
        return f"({items}{trailing}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, str):
        return arg
    return _spell(arg)
