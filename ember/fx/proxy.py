"""``Proxy``: the stand-in value symbolic tracing passes through a program, recording every
operation on it as a graph node; and ``TracerBase``, the part of a tracer that makes nodes.

NOTE [ How a Proxy records ]
A ``Proxy`` wraps a ``Node``. Three doors lead from an operation on a proxy to a new node:

- Python operators (``p + 1``, ``-p``, ``p[0]``, ``2 * p``) are the magic methods defined
  below and become ``call_function`` nodes on ``operator.add`` and friends.
- Attribute access (``p.shape``, ``p.relu``) gives an ``Attribute`` proxy; calling it
  (``p.relu()``) records ``call_method``, using it otherwise records
  ``getattr(p, 'shape')``.
- ember's functions (``ember.relu(p)``, ``F.linear(p, w)``, ``ember.cat([p, q])``) and
  Tensor operators given a proxy (``t + p``) reach ``Proxy.__torch_function__`` through the
  ``__torch_function__`` protocol of ember/_overrides.py, where a Proxy is a tensor-like:
  the call becomes ``call_function`` on the public function (or ``call_method`` when it is a
  Tensor method). While a tracer runs, a function mode sends every call with a proxy among
  its arguments there first (see NOTE [ Tracing ] in ember/fx/_symbolic_trace.py).

The arguments of such a node are those torch records for the same call (NOTE [ Recorded
call forms ] in ember/fx/_recorded_calls.py): as the caller wrote them for what torch writes
in C (``ember.cat([a, b], dim=1)`` records ``([a, b],)`` with ``{'dim': 1}``), torch's fixed
form for its Python functions (``F.relu(x)`` records ``(x,)`` with ``{'inplace': False}``).

Using a proxy where Python needs a concrete value -- ``if p:``, ``for _ in p``, ``len(p)``
-- cannot be recorded and raises ``TraceError`` (``RuntimeError`` for ``len``), as in torch.
"""

from __future__ import annotations

import collections
import copy
import dis
import inspect
import operator
from typing import Any
from collections.abc import Callable

from ._codegen import _MAGIC
from .graph import Graph
from .node import Node, map_aggregate

__all__ = ["TraceError", "TracerBase", "GraphAppendingTracer", "Proxy", "Attribute",
           "ParameterProxy"]


class TraceError(ValueError):
    """Raised when a program uses a traced value in a way tracing cannot record (control
    flow on it, iterating it).

    Example::

        >>> from ember.fx.proxy import TraceError
        >>> issubclass(TraceError, ValueError)
        True
    """


_BASE_TYPES = (str, int, float, bool, complex, type(None), type(...))


def _is_constant_type(a) -> bool:
    import ember

    return isinstance(a, _BASE_TYPES) or isinstance(
        a, (ember.dtype, ember.device, ember.memory_format, ember.layout, range)) or \
        isinstance(a, type) or callable(a) and not isinstance(a, ember.nn.Module)


class TracerBase:
    """The node-making half of a tracer: ``create_proxy``/``create_node``/``create_arg``
    and the answers to control flow on proxies (``to_bool``, ``iter``, ``keys``).

    Example::

        >>> import ember.fx as fx
        >>> from ember.fx.proxy import GraphAppendingTracer
        >>> t = GraphAppendingTracer(fx.Graph())
        >>> p = t.create_proxy("placeholder", "x", (), {})
        >>> (p + 1).node.name
        'add'
    """

    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Insert a node into ``self.graph`` (the hook subclasses override to see every
        node as it is made).

        Args:
            kind: the opcode.
            target: the target.
            args: positional arguments (already made into node arguments).
            kwargs: keyword arguments.
            name: a name hint.
            type_expr: an optional annotation.

        Returns:
            The node.
        """
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        from . import traceback as fx_traceback

        if fx_traceback.has_preserved_node_meta():
            current = fx_traceback.get_current_meta()
            for field in fx_traceback._COPY_META_FIELDS:
                if field in current:
                    node.meta[field] = copy.copy(current[field])
        stack = getattr(self, "module_stack", None)
        if stack and "nn_module_stack" not in node.meta:
            node.meta["nn_module_stack"] = collections.OrderedDict(stack)
        if self.record_stack_traces and "stack_trace" not in node.meta and \
                kind not in ("placeholder", "output"):
            node.meta["stack_trace"] = _user_stack()
        return node

    def proxy(self, node: Node) -> Proxy:
        """Wrap ``node`` in a ``Proxy`` of this tracer.

        Args:
            node: the node.

        Returns:
            The proxy.
        """
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Make a node from values (proxies become their nodes, other values through
        ``create_arg``) and return a proxy for it.

        Args:
            kind: the opcode.
            target: the target.
            args: positional arguments.
            kwargs: keyword arguments.
            name: a name hint.
            type_expr: an optional annotation.
            proxy_factory_fn: makes the proxy from the node instead of ``self.proxy``.

        Returns:
            The proxy.
        """
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple) or not isinstance(kwargs_, dict):
            raise AssertionError("create_arg must keep tuples and dicts")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """Turn a value into a node argument: proxies into their nodes, containers item by
        item; constants stay. A value that cannot be an argument raises NotImplementedError.

        Args:
            a: the value.

        Returns:
            The node argument.
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            items = [self.create_arg(e) for e in a]
            return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if _is_constant_type(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called when a proxy is used in a condition: tracing cannot decide it.

        Raises:
            TraceError: always.
        """
        raise TraceError("symbolically traced variables cannot be used as inputs to "
                         "control flow")

    def iter(self, obj: Proxy):
        """Called when a proxy is iterated: tracing cannot know its length.

        Raises:
            TraceError: always.
        """
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Any:
        """Called for ``**proxy``: records a ``keys()`` method call.

        Returns:
            A proxy for the keys.
        """
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (for building graphs with proxies by
    hand, outside a trace).

    Args:
        graph: the graph to append to.

    Example::

        >>> import ember.fx as fx
        >>> g = fx.Graph()
        >>> x = fx.Proxy(g.placeholder("x"))
        >>> _ = g.output((x * 2).node)
        >>> len(g.nodes)
        3
    """

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.scope = None
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope: dict = {}


def _user_stack() -> str:
    """The innermost frame of the program being traced (ember's own frames skipped), in
    torch's form: ``File "f.py", line 8, in forward\n    y = self.l(x)``."""
    import os
    import traceback

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_stack()[:-2]
              if not os.path.abspath(f.filename).startswith(here + os.sep)
              and not f.filename.startswith("<ember wrapper")]
    return "".join(traceback.format_list(frames[-1:])).lstrip()


def _find_tracer(args, kwargs):
    tracers: dict = {}

    def find(x):
        if isinstance(x, Proxy):
            tracers[x.tracer] = None

    map_aggregate(args, find)
    map_aggregate(kwargs, find)
    if len(tracers) > 1:
        raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying "
                           "to trace operations")
    return next(iter(tracers))


def _functional():
    import ember.nn.functional

    return ember.nn.functional


def _tensor_method_name(func) -> str | None:
    """The Tensor method name of ``func`` when it is a method of ember.Tensor (``add`` for
    ``Tensor.add`` and for the operator ``Tensor.__add__``)."""
    import ember

    name = getattr(func, "__name__", None)
    if name is None:
        return None
    cls_attr = ember.Tensor.__dict__.get(name)
    if cls_attr is None or not (cls_attr is func or getattr(cls_attr, "fget", None) is func):
        if getattr(ember.Tensor, name, None) is not func:
            return None
    if name.startswith("__") and name.endswith("__"):
        plain = name[2:-2]
        if callable(getattr(ember.Tensor, plain, None)):
            return plain
    return name


class Proxy:
    """A value being traced: every operation on it becomes a node of the tracer's graph
    (NOTE [ How a Proxy records ]). Code that runs under ``symbolic_trace`` sees proxies in
    place of tensors.

    Args:
        node: the node the proxy stands for.
        tracer: the tracer recording operations (default: one appending to the node's
            graph).

    Example::

        >>> import ember, ember.fx as fx
        >>> g = fx.Graph()
        >>> x = fx.Proxy(g.placeholder("x"))
        >>> y = ember.relu(x) + 1
        >>> y
        Proxy(add)
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        new = Proxy.__new__(Proxy)
        new.__dict__ = {"tracer": self.tracer, "node": self.node}
        memo[id(self)] = new
        return new

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        calling = frame.f_code
        for inst in dis.get_instructions(calling):
            if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                return iter([self[i] for i in range(inst.argval)])
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you "
                           "want this call to be recorded, please call torch.fx.wrap('len') "
                           "at module scope")

    def keys(self):
        """``**proxy``: records a ``keys()`` call.

        Returns:
            A proxy for the keys.
        """
        return self.tracer.keys(self)

    def __abs__(self):
        import ember

        return self.tracer.create_proxy("call_function", ember.abs, (self,), {})

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        """The ``__torch_function__`` protocol's entry: an ember function or Tensor method
        called with a proxy among its arguments becomes a node."""
        kwargs = kwargs or {}
        tracer = _find_tracer(args, kwargs)
        # a proxy's own methods never come here (``Proxy.__getattr__`` records them), so a
        # Tensor method arriving with a proxy first was called as a function
        # (``ember.relu(p)``); with a tensor first it was a method of that tensor (``t + p``)
        method = None if args and isinstance(args[0], Proxy) else \
            _tensor_method_name(orig_method)
        if method is not None:
            return tracer.create_proxy("call_method", method, args, kwargs)
        from ._recorded_calls import F_AS_METHOD, recorded_call, recorded_target

        target, space = recorded_target(orig_method)
        # torch's F.tanh / F.sigmoid call the Tensor method (ember's are functions of their own)
        name = getattr(target, "__name__", None)
        if name in F_AS_METHOD and target is getattr(_functional(), name) and \
                len(args) == 1 and not kwargs and isinstance(args[0], Proxy):
            return tracer.create_proxy("call_method", target.__name__, tuple(args), {})
        args, kwargs = recorded_call(orig_method, tuple(args), kwargs, space)
        return tracer.create_proxy("call_function", target, args, kwargs,
                                   name=tracer.graph._target_to_str(target))


class Attribute(Proxy):
    """``proxy.name``: a call records ``call_method``; other uses record
    ``getattr(proxy, name)`` (made on first use).

    Args:
        root: the proxy whose attribute it is.
        attr: the attribute's name.

    Example::

        >>> import ember.fx as fx
        >>> g = fx.Graph()
        >>> x = fx.Proxy(g.placeholder("x"))
        >>> x.sum(0).node.target
        'sum'
    """

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A proxy for a parameter whose shape is known while tracing (``Tracer`` with
    ``param_shapes_constant=True``): ``shape``, ``size()``, ``dim()``, ``ndim``,
    ``numel()`` and ``nelement()`` answer with the parameter's real values.

    Args:
        tracer: the tracer.
        node: the ``get_attr`` node.
        name: the parameter's qualified name.
        param: the parameter.

    Example::

        >>> import ember, ember.fx as fx
        >>> g = fx.Graph()
        >>> w = ember.nn.Parameter(ember.ones(2, 3))
        >>> from ember.fx.proxy import GraphAppendingTracer
        >>> p = fx.proxy.ParameterProxy(GraphAppendingTracer(g), g.get_attr("w"), "w", w)
        >>> p.shape
        ember.Size([2, 3])
    """

    def __init__(self, tracer: TracerBase, node: Node, name: str, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _define_magic(name: str) -> None:
    fn = getattr(operator, name)

    def impl(*args):
        return args[0].tracer.create_proxy("call_function", fn, args, {})

    impl.__name__ = impl.__qualname__ = f"__{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


def _define_reflected(name: str) -> None:
    fn = getattr(operator, name)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", fn, (rhs, self), {})

    impl.__name__ = impl.__qualname__ = f"__r{name.strip('_')}__"
    setattr(Proxy, impl.__name__, impl)


_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul")
for _name in _MAGIC:
    if _name == "div":
        continue
    _define_magic(_name)
for _name in _REFLECTABLE:
    _define_reflected(_name)
# ``__eq__`` records a node, so proxies hash by identity like any object
Proxy.__hash__ = object.__hash__
del _name
