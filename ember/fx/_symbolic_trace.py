"""Symbolic tracing: ``Tracer``, ``symbolic_trace`` and ``wrap``.

NOTE [ Tracing ]
``Tracer.trace(root)`` calls ``root.forward`` once with a ``Proxy`` for each parameter and
records what happens to them (NOTE [ How a Proxy records ] in ember/fx/proxy.py). For the
length of the call it patches, and restores afterwards:

- ``nn.Module.__call__``: a submodule call goes to ``Tracer.call_module``, which records a
  ``call_module`` node for a *leaf* module (``is_leaf_module``: ember's own ``nn`` layers
  but ``Sequential``) and otherwise traces through its ``forward``;
- ``nn.Module.__getattr__``: reading a parameter (or buffer) gives a ``get_attr`` proxy;
- the functions registered with ``wrap`` and those of the ``autowrap_modules`` (``math``):
  called with a proxy they record a ``call_function`` node instead of running;
- a ``TorchFunctionMode``: every ember function or Tensor operator called with a proxy
  anywhere in its arguments is recorded through ``Proxy.__torch_function__``, however
  deep in a list, tuple or dict the proxy sits. Calls without proxies run as usual.

Tensors the code reaches that are not parameters or buffers (``self.c = ember.ones(2)``, a
tensor created in ``forward``) become ``get_attr`` nodes too: attributes under their own
name, others as ``_tensor_constant0``, ``_tensor_constant1``... stored on the root.
"""

from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import types
from typing import Any
from collections.abc import Callable

from .graph import Graph
from .graph_module import GraphModule
from .node import has_side_effect, map_aggregate
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "PHWithMeta",
           "ProxyableClassMeta", "is_fx_tracing"]

_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """True while a ``Tracer`` is tracing.

    Returns:
        bool.

    Example::

        >>> from ember.fx._symbolic_trace import is_fx_tracing
        >>> is_fx_tracing()
        False
    """
    return _is_fx_tracing_flag


@has_side_effect
def _assert(condition, message: str = "") -> None:
    """``assert condition, message`` as a function, for graphs (kept by dead-code
    elimination); given a proxy while tracing it records itself."""
    if isinstance(condition, Proxy):
        return condition.tracer.create_proxy("call_function", _assert, (condition, message), {})
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, message: str = "") -> None:
    if isinstance(value, Proxy):
        return value.tracer.create_proxy("call_function", _assert_is_none, (value, message), {})
    if value is not None:
        raise AssertionError(message)


has_side_effect(_assert_is_none)


class PHBase:
    """The type of ``PH``: a placeholder marker inside ``concrete_args``.

    Example::

        >>> from ember.fx import PH
        >>> repr(PH)
        'PH'
    """

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A ``PH`` that carries a key: the attributes set on it are copied onto the
    placeholder node it becomes.

    Args:
        ph_key: an identifying string.

    Example::

        >>> from ember.fx._symbolic_trace import PHWithMeta
        >>> PHWithMeta(ph_key="a").ph_key
        'a'
    """

    def __init__(self, ph_key: str | None = None):
        super().__init__()
        self.ph_key = ph_key


_proxyable_classes: dict = {}


class ProxyableClassMeta(type):
    """A metaclass whose classes are recorded, not run, when constructed from proxies while
    tracing: ``MyType(x, y)`` becomes a ``call_function`` node on ``MyType``.

    Args:
        name: the class's name (as for ``type``).
        bases: its base classes.
        namespace: its attributes.

    Returns:
        type: the new class; constructing it from proxies records a node.

    Example::

        >>> import ember.fx as fx
        >>> class Pair(metaclass=fx.ProxyableClassMeta):
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> Pair(1, 2).b
        2
    """

    def __init__(cls, name, bases, attrs):
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        found: list = []

        def check(a):
            if isinstance(a, Proxy):
                found.append(a)

        map_aggregate(args, check)
        map_aggregate(kwargs, check)
        if found:
            return found[0].tracer.create_proxy("call_function", cls, args, kwargs)
        instance = cls.__new__(cls)
        cls.__init__(instance, *args, **kwargs)
        return instance


# -- wrap -----------------------------------------------------------------------------------------

#: (globals dict, name) pairs registered by ``wrap``
_wrapped_fns_to_patch: dict = {}


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls to a module-level function as ``call_function`` nodes instead of tracing
    into it (for functions that use Python control flow, ``len`` ...). Call it at the top
    level of the module that defines (or uses, for a builtin) the function.

    Args:
        fn_or_name: the function, or its global name as a string.

    Returns:
        ``fn_or_name`` unchanged (usable as a decorator).

    Example::

        >>> import ember.fx as fx
        >>> def my_len(x):
        ...     return len(x)
        >>> wrapped = fx.wrap(my_len)  # doctest: +SKIP
    """
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable "
                           "or string name")
    if callable(fn_or_name):
        name = fn_or_name.__name__
        if name == "<lambda>":
            raise AssertionError("wrap(): a lambda cannot be wrapped; define a named function")
    else:
        name = fn_or_name
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _find_proxy(args, kwargs):
    found: list = []

    def check(a):
        if isinstance(a, Proxy) and not found:
            found.append(a)

    map_aggregate(args, check)
    map_aggregate(kwargs, check)
    return found[0] if found else None


def _wrapped_function(orig: Callable) -> Callable:
    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
            out.node.meta["is_wrapped"] = True
            return out
        return orig(*args, **kwargs)

    wrapped.__fx_already_patched = True
    return wrapped


class _Patcher:
    """Sets attributes and dict entries for a trace and undoes them in reverse order."""

    def __init__(self):
        self._undo: list = []
        self._visited: set = set()

    def patch_dict(self, d: dict, name: str, new) -> None:
        if name in d:
            old = d[name]
            self._undo.append(lambda: d.__setitem__(name, old))
        else:
            self._undo.append(lambda: d.pop(name, None))
        d[name] = new

    def patch_attr(self, obj, name: str, new) -> None:
        old = obj.__dict__[name] if name in obj.__dict__ else None
        had = name in obj.__dict__
        self._undo.append(lambda: setattr(obj, name, old) if had else delattr(obj, name))
        setattr(obj, name, new)

    def visit_once(self, thing) -> bool:
        key = id(thing)
        if key in self._visited:
            return False
        self._visited.add(key)
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()
        return False


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set) -> None:
    """Wrap, in ``frame_dict``, the functions whose ids are in ``function_ids``."""
    if not patcher.visit_once(frame_dict):
        return
    for name, value in list(frame_dict.items()):
        if not name.startswith("_") and callable(value) and id(value) in function_ids:
            patcher.patch_dict(frame_dict, name, _wrapped_function(value))


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    for (_, name), globals_ in _wrapped_fns_to_patch.items():
        if name in globals_:
            orig = globals_[name]
        elif hasattr(builtins, name):
            orig = getattr(builtins, name)
        else:
            continue
        if getattr(orig, "__fx_already_patched", False):
            continue
        patcher.patch_dict(globals_, name, _wrapped_function(orig))


def _positional_function(fn: Callable, nargs: int) -> Callable:
    """``fn`` with its keyword-only, ``*args`` and ``**kwargs`` parameters turned into
    ordinary positional ones, in that order (CPython keeps them so in ``co_varnames``)."""
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    new_co = co.replace(co_flags=flags, co_argcount=nargs, co_posonlyargcount=0,
                        co_kwonlyargcount=0)
    new = types.FunctionType(new_co, fn.__globals__, fn.__name__, None, fn.__closure__)
    new.__annotations__ = getattr(fn, "__annotations__", {})
    return new


_mode_cls: list = []


def _tracing_mode():
    """The function mode of NOTE [ Tracing ]: calls with a proxy in their arguments go to
    ``Proxy.__torch_function__``; other calls run. (Its class is made on first use:
    ember.overrides imports the whole of ember.)"""
    if not _mode_cls:
        from ..overrides import TorchFunctionMode

        class _TracingMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if _find_proxy(args, kwargs) is not None:
                    return Proxy.__torch_function__(func, types, args, kwargs)
                return func(*args, **kwargs)

        _mode_cls.append(_TracingMode)
    return _mode_cls[0]()


# -- the tracer -----------------------------------------------------------------------------------


class Tracer(TracerBase):
    """Turns a module's ``forward`` (or a function) into a ``Graph`` (NOTE [ Tracing ]).
    Subclass it to change which modules stay opaque (``is_leaf_module``), how submodule
    calls and values are recorded (``call_module``, ``create_proxy``, ``create_arg``,
    ``getattr``).

    Args:
        autowrap_modules: modules whose public functions are recorded as ``call_function``
            when called with a proxy (default ``(math,)``).
        autowrap_functions: more functions treated so.
        param_shapes_constant: parameters' ``shape``/``size()``/``dim()`` are answered with
            real values during tracing, instead of being recorded.

    Example::

        >>> import ember, ember.fx as fx
        >>> class M(ember.nn.Module):
        ...     def forward(self, x):
        ...         return x.relu()
        >>> g = fx.Tracer().trace(M())
        >>> [n.op for n in g.nodes]
        ['placeholder', 'call_method', 'output']
    """

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for m in autowrap_modules for name, value in m.__dict__.items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.scope = None
        self.module_stack: collections.OrderedDict = collections.OrderedDict()
        self.num_calls: dict = {}
        self.node_name_to_scope: dict = {}
        self.tensor_attrs: dict = {}
        self.proxy_buffer_attributes = True

    # -- values -------------------------------------------------------------------------------

    def create_arg(self, a: Any) -> Any:
        """Like ``TracerBase.create_arg``, and: a parameter becomes a ``get_attr`` of its
        qualified name, a tensor attribute of the root a ``get_attr`` of its path, any other
        tensor a new ``_tensor_constantN`` attribute of the root; a submodule a ``get_attr``
        of its path.

        Args:
            a: the value.

        Returns:
            The node argument.
        """
        import ember

        if isinstance(a, ember.nn.Parameter):
            for n_, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, ember.nn.Module):
            for n_, p in self.root.named_modules():
                if a is p:
                    return self.create_node("get_attr", n_, (), {})
            raise NameError("module is not installed as a submodule")
        if isinstance(a, ember.Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None or qualname[0] is not a:
                i = 0
                while True:
                    name = f"_tensor_constant{i}"
                    if not hasattr(self.root, name):
                        break
                    i += 1
                self.tensor_attrs[id(a)] = (a, name)
                setattr(self.root, name, a)
                qualname = (a, name)
            return self.create_node("get_attr", qualname[1], (), {})
        if type(a) in _proxyable_classes:
            i = 0
            while hasattr(self.root, f"_{type(a).__name__}_constant_{i}"):
                i += 1
            name = f"_{type(a).__name__}_constant_{i}"
            setattr(self.root, name, a)
            return self.create_node("get_attr", name, (), {})
        return super().create_arg(a)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """What reading ``module.attr`` gives while tracing: a ``get_attr`` proxy for a
        parameter (or a buffer), the value itself otherwise.

        Args:
            attr: the attribute name read.
            attr_val: its value.
            parameter_proxy_cache: qualified name -> proxy, so each parameter gets one node.

        Returns:
            A proxy or ``attr_val``.
        """
        import ember

        def lookup(named, val):
            for n, p in named:
                if val is p:
                    if n not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant and isinstance(val, ember.nn.Parameter):
                            def factory(node, n=n, p=p):
                                return ParameterProxy(self, node, n, p)
                        parameter_proxy_cache[n] = self.create_proxy(
                            "get_attr", n, (), {}, proxy_factory_fn=factory)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, ember.nn.Parameter):
            found = lookup(self.root.named_parameters(), attr_val)
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            found = lookup(self.root.named_buffers(), attr_val)
            if found is not None:
                return found
        return attr_val

    # -- modules ------------------------------------------------------------------------------

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node (True) or traced through:
        ember's own ``nn`` modules are leaves, but ``Sequential``.

        Args:
            m: the module.
            module_qualified_name: its path in the root.

        Returns:
            bool.
        """
        import ember

        # ember's modules are named torch's under the alias (NOTE [ Class names under the alias ])
        return m.__module__.startswith(("ember.nn", "ember.ao.nn", "torch.nn", "torch.ao.nn")) \
            and not isinstance(m, ember.nn.Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of ``mod`` in the root module.

        Args:
            mod: a submodule.

        Returns:
            Its path, e.g. ``"layers.0.conv"``.

        Raises:
            NameError: if ``mod`` is not a submodule of the root.
        """
        if self.submodule_paths:
            path = self.submodule_paths.get(id(mod))
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A submodule called while tracing: a ``call_module`` node for a leaf, its
        ``forward`` traced through otherwise.

        Args:
            m: the module.
            forward: calls the module (its ``__call__``, unpatched).
            args: positional arguments.
            kwargs: keyword arguments.

        Returns:
            The result (a proxy for a leaf).
        """
        name = self.path_of_module(m)
        key = name
        self.module_stack[key] = (name, type(m))
        try:
            if not self.is_leaf_module(m, name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    # -- the trace ----------------------------------------------------------------------------

    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict | tuple | None = None):
        """Placeholders for ``root_fn``'s parameters (concrete arguments are bound instead,
        with a check in the graph that later calls pass the same value).

        Args:
            root_fn: the function traced.
            is_module: it is a module's ``forward`` (its ``self`` is the root).
            concrete_args: parameter name -> value to specialise on (``PH`` keeps a
                placeholder).

        Returns:
            ``(fn, args)`` to call.
        """
        fn = inspect.unwrap(root_fn)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        args: list = []
        if is_module:
            if not params:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            params = params[1:]
            args.append(self.root)
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
        if isinstance(concrete_args, tuple):
            if len(names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(names, concrete_args))
        concrete_args = concrete_args or {}
        has_var = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
                      for p in params)
        # CPython's order of parameters in ``co_varnames``, which torch's placeholders follow
        rank = {inspect.Parameter.KEYWORD_ONLY: 1, inspect.Parameter.VAR_POSITIONAL: 2,
                inspect.Parameter.VAR_KEYWORD: 3}
        for p in sorted(params, key=lambda p: rank.get(p.kind, 0)):
            if p.kind is p.VAR_POSITIONAL:
                args.append(self._placeholder_for("*" + p.name, p, concrete_args))
            elif p.kind is p.VAR_KEYWORD:
                args.append(self._placeholder_for("**" + p.name, p, concrete_args))
            else:
                args.append(self._placeholder_for(p.name, p, concrete_args))
        if has_var:
            # keyword-only, *args and **kwargs parameters become plain positional ones, so
            # each can be handed its proxy as a whole (``args[0]`` is then recorded)
            root_fn = _positional_function(fn, len(args))
        return root_fn, args

    def _placeholder_for(self, name: str, param, concrete_args: dict):
        raw = name.lstrip("*")
        if raw in concrete_args:
            value = concrete_args[raw]
            if isinstance(value, PHBase):
                # as torch does, any parameter named in concrete_args gets the suffixed name
                out = self.create_proxy("placeholder", f"{raw}_1", (), {})
                if isinstance(value, PHWithMeta):
                    for k, v in vars(value).items():
                        setattr(out.node, k, v)
                return out
            # a specialised value still takes a parameter slot, checked on every call
            out = self.create_proxy("placeholder", f"{raw}_1", (), {})
            if value is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (out, f"{raw} has been specialized to have value None but "
                                   "got another value"), {})
            elif type(value) in (bool, int, float, str, complex):
                eq = out == value
                self.create_proxy("call_function", _assert,
                                  (eq, f"{raw} has been specialized to have value {value} "
                                   "but got another value"), {})
            return value
        default = () if param.default is inspect.Parameter.empty else (param.default,)
        ann = None if param.annotation is inspect.Parameter.empty else param.annotation
        return self.create_proxy("placeholder", name, default, {}, type_expr=ann)

    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Trace ``root`` (a module or a function) into a graph.

        Args:
            root: the module or function.
            concrete_args: parameters to specialise on (see ``create_args_for_root``).

        Returns:
            The ``Graph``. ``self.root`` is the module the graph's attributes refer to (a
            fresh one when ``root`` is a function).

        Example::

            >>> import ember, ember.fx as fx
            >>> g = fx.Tracer().trace(lambda x: x * 2)
            >>> len(g.nodes)
            3
        """
        import ember

        global _is_fx_tracing_flag
        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            Module = ember.nn.Module
            if isinstance(root, Module):
                self.root = root
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {id(mod): name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            self.tensor_attrs = {}
            self._collect_tensor_attrs(self.root, [])
            fn_globals = getattr(inspect.unwrap(fn), "__globals__", {})
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
            parameter_proxy_cache: dict = {}
            orig_getattr = Module.__getattr__
            orig_call = Module.__call__
            tracer = self

            def module_getattr_wrapper(mod, attr):
                return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*a, **k):
                    return orig_call(mod, *a, **k)

                fwd = getattr(type(mod), "forward", None)
                _autowrap_check(patcher, getattr(fwd, "__globals__", {}),
                                tracer._autowrap_function_ids)
                return tracer.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_attr(Module, "__getattr__", module_getattr_wrapper)
                patcher.patch_attr(Module, "__call__", module_call_wrapper)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for m in self._autowrap_search:
                    _autowrap_check(patcher, m.__dict__, self._autowrap_function_ids)
                with _tracing_mode():
                    result = fn(*args)
                    self.create_node("output", "output", (self.create_arg(result),), {},
                                     type_expr=getattr(fn, "__annotations__", {}).get("return"))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph

    def _collect_tensor_attrs(self, m, prefix: list) -> None:
        import ember

        for k, v in m.__dict__.items():
            if isinstance(v, ember.Tensor):
                self.tensor_attrs[id(v)] = (v, ".".join(prefix + [k]))
        for k, child in m.named_children():
            self._collect_tensor_attrs(child, prefix + [k])

    def __deepcopy__(self, memo):
        import copy

        new = Tracer.__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            setattr(new, k, v if k in ("root", "graph") else copy.deepcopy(v, memo))
        return new


def symbolic_trace(root, concrete_args: dict | None = None) -> GraphModule:
    """Trace a module or function into a ``GraphModule`` (NOTE [ Tracing ]).

    Args:
        root: an ``nn.Module`` or a function.
        concrete_args: parameters to specialise on: name -> value (``PH`` keeps the
            parameter as an input). A specialised parameter stays in the signature and is
            checked on every call.

    Returns:
        A ``GraphModule`` computing the same thing, its ``graph`` and ``code`` readable.

    Example::

        >>> import ember, ember.fx as fx
        >>> class M(ember.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = ember.nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return ember.relu(self.linear(x)) + 1
        >>> gm = fx.symbolic_trace(M())
        >>> print(gm.code.strip())
        def forward(self, x):
            linear = self.linear(x);  x = None
            relu = torch.relu(linear);  linear = None
            add = relu + 1;  relu = None
            return add
    """
    import ember

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, ember.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
