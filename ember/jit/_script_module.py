"""Scripted and traced modules: what ``jit.script``/``jit.trace`` make of an ``nn.Module``.

NOTE [ Script modules as views ]
PyTorch's ``script(module)`` and ``trace(module, x)`` return a new module object -- a
``RecursiveScriptModule`` or ``TopLevelTracedModule`` -- whose submodules are script/traced
modules too, that shares the original's parameters and buffers but has its own training flag
and hooks, prints as ``Net(original_name=Net ...)``, and has ``save()``. Programs rely on all
of that (``scripted.save(path)`` is the tutorials' way to export; ``type(m).__name__`` and
``print(m)`` show in their output), so ember builds the same object, eagerly
(NOTE [ Eager TorchScript ] in ember/jit/__init__.py): a *view* of the module.

A view is an instance of a class made for the pair (script kind, module class): its bases
are the kind's class (``RecursiveScriptModule``, ``TracedModule`` or
``TopLevelTracedModule``) and then the module's own class, so the view runs the module's own
Python ``forward`` and helper methods (``super()`` and ``isinstance(self, Net)`` inside them
keep working), while the kind's class comes first for the names TorchScript defines
(``save``, ``code``, ``graph``, ``original_name``, the printed form). The class is named as
the kind's class, so ``type(view).__name__`` is PyTorch's. The view's attribute dictionary
is a copy of the module's: the same parameter and buffer tensors, copies of the registries
that hold them (so ``view.eval()`` or a hook on the view leaves the module alone), and views
of the submodules (a submodule used twice gets one view). It pickles as (kind, module class,
state), so ``jit.save`` stores it and ``copy.deepcopy`` copies it.

Differences from PyTorch: the view is also an instance of the module's class (PyTorch's
script module is not), and a traced view keeps the module's Python methods (PyTorch's keeps
only ``forward``).
"""

from __future__ import annotations

from ..nn.modules.module import Module


class _CompiledForm:
    """``graph``/``code`` of a script module: what ``jit.trace`` recorded for it (NOTE
    [ Trace graphs ] in ember/jit/_trace_graph.py), kept through ``save``/``load``; for a
    module ``jit.script`` made, its ``forward`` lowered from the source (NOTE [ Script IR ]
    in ember/jit/_script_ir.py), which raises NotImplementedError for source that lowering
    does not understand. A non-data descriptor, so a module's own attribute of that
    name (``self.graph`` of a graph network) still wins on its view."""

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        graph = obj.__dict__.get("_ember_trace_graph")
        if graph is not None:
            if self.name == "inlined_graph":
                return GraphText(graph.inlined(obj).graph_text())
            return graph.code_text() if self.name == "code" else \
                GraphText(graph.graph_text())
        if isinstance(obj, TracedModule) and self.name != "inlined_graph":
            raise RuntimeError(
                f"'{obj.original_name}' was not called while the module was traced: it has "
                f"no traced forward, so no {self.name}")
        from . import _script_ir  # (ember.jit imports this module: not at load)

        try:  # the forward's source, lowered as TorchScript would (NOTE [ Script IR ])
            lowered = _script_ir.compile_module_forward(obj)
        except _script_ir.Unsupported as err:
            from . import _NO_TORCHSCRIPT

            raise NotImplementedError(
                f"ScriptModule.{self.name}: the forward of {obj.original_name} uses {err}, "
                f"which ember's printer of TorchScript does not know; {_NO_TORCHSCRIPT}"
            ) from None
        if self.name == "code":
            return _script_ir.code_text(lowered, lowered.signature)
        if self.name == "inlined_graph":
            lowered = _script_ir.inline_calls(lowered)
        return GraphText(_script_ir.graph_text(lowered))


class GraphText(str):
    """A traced graph's IR text (what ``print(traced.graph)`` shows).

    Example::

        >>> traced = ember.jit.trace(ember.nn.ReLU(), ember.ones(2))
        >>> print(traced.graph)  # doctest: +ELLIPSIS
        graph(%self : __torch__.torch.nn.modules.activation.ReLU,
              %input : Float(2, strides=[1], requires_grad=0, device=cpu)):
          %1 : Float(2, strides=[1], requires_grad=0, device=cpu) = aten::relu(%input) # ...
          return (%1)
        <BLANKLINE>
    """

    def __repr__(self):
        return str(self)


class ScriptModule(Module):
    """The base of compiled modules. Subclassing it gives an ordinary (eager) module; an
    ``Attribute`` assigned to it is stored as its value.

    Args:
        *args: passed on to ``nn.Module``.
        **kwargs: passed on to ``nn.Module``.

    Example::

        >>> class Counter(ember.jit.ScriptModule):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.count = ember.jit.Attribute(0, int)
        >>> Counter().count
        0
    """

    def __setattr__(self, name, value):
        from . import Attribute  # (ember.jit imports this module: not at load)

        if isinstance(value, Attribute):
            value = value.value
        super().__setattr__(name, value)

    def save(self, f, **kwargs):
        """Save the module so that ``jit.load`` gives it back (see ``ember.jit.save``).

        Args:
            f: a path or a binary file object.
            **kwargs: ``_extra_files``, as ``jit.save`` takes it.

        Returns:
            None

        Example::

            >>> import io
            >>> ember.jit.script(ember.nn.Linear(2, 1)).save(io.BytesIO())
        """
        from . import save

        save(self, f, **kwargs)

    graph = _CompiledForm("graph")
    code = _CompiledForm("code")
    inlined_graph = _CompiledForm("inlined_graph")


class _ViewOf:
    """What the view classes share: the original class's name in the printed form and
    pickling by (kind, module class, state) (NOTE [ Script modules as views ])."""

    _original_class = None

    @property
    def original_name(self):
        """The class name of the module this one was made from."""
        cls = type(self)._original_class
        return (cls or type(self)).__name__

    def extra_repr(self):
        return f"original_name={self.original_name}"

    def __call__(self, *args, **kwargs):
        # NOTE [ Traced training flags ]
        # PyTorch's trace records each submodule's ``training`` as a constant of the graph
        # (batch norm's batch statistics or running ones, dropout on or off), so a module
        # traced in eval mode and then set to ``train()`` -- or traced in train mode and set
        # to ``eval()`` -- still runs as it was traced, through ``save``/``load`` too, while
        # ``module.training`` itself reports the new flag. ember's traced view runs the
        # module's Python forward (NOTE [ Script modules as views ]), so for the length of a
        # call it sets each view's flag back to the one ``trace`` saw (``_ember_traced_
        # training``, kept in the view's state) and restores the set flags afterwards.
        if "_ember_traced_training" not in self.__dict__ or \
                self.__dict__.get("_ember_in_traced_call"):
            return super().__call__(*args, **kwargs)
        views = [m for m in self.modules() if "_ember_traced_training" in m.__dict__]
        flags = [m.__dict__["training"] for m in views]
        for m in views:
            m.__dict__["training"] = m.__dict__["_ember_traced_training"]
            m.__dict__["_ember_in_traced_call"] = True
        try:
            return super().__call__(*args, **kwargs)
        finally:
            for m, flag in zip(views, flags):
                m.__dict__["training"] = flag
                m.__dict__["_ember_in_traced_call"] = False

    def __reduce_ex__(self, protocol):
        if "_original_class" not in type(self).__dict__:  # not a view: pickled as usual
            return super().__reduce_ex__(protocol)
        kind = type(self).__mro__[1]
        return (_rebuild_view, (kind, type(self)._original_class), self.__dict__)


class RecursiveScriptModule(_ViewOf, ScriptModule):
    """What ``jit.script(module)`` and ``jit.load`` return: a view of the module that
    shares its parameters and buffers (NOTE [ Script modules as views ]); its submodules are
    ``RecursiveScriptModule`` too. Prints as ``RecursiveScriptModule(original_name=...)``.

    Args:
        *args: passed on to ``nn.Module`` (a direct instance is an empty module).
        **kwargs: passed on to ``nn.Module``.

    Example::

        >>> net = ember.jit.script(ember.nn.Linear(2, 2))
        >>> isinstance(net, ember.jit.RecursiveScriptModule), net
        (True, RecursiveScriptModule(original_name=Linear))
    """

    def _get_name(self):
        return "RecursiveScriptModule"


class TracedModule(_ViewOf, ScriptModule):
    """A submodule of a traced module: a view of it (NOTE [ Script modules as views ]),
    printed under its original class name.

    Args:
        *args: passed on to ``nn.Module``.
        **kwargs: passed on to ``nn.Module``.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2))
        >>> type(ember.jit.trace(net, ember.ones(1, 2))[0]).__name__
        'TracedModule'
    """

    def _get_name(self):
        return self.original_name


class TopLevelTracedModule(TracedModule):
    """What ``jit.trace(module, inputs)`` returns: a view of the module that shares its
    parameters and buffers (NOTE [ Script modules as views ]); its submodules are
    ``TracedModule``.

    Args:
        *args: passed on to ``nn.Module``.
        **kwargs: passed on to ``nn.Module``.

    Example::

        >>> traced = ember.jit.trace(ember.nn.Linear(2, 2), ember.ones(1, 2))
        >>> type(traced).__name__, traced
        ('TopLevelTracedModule', Linear(original_name=Linear))
    """


_VIEW_CLASSES = {}

# the registries a Module keeps in its __dict__: a view gets its own copy of each
_REGISTRIES = None


def _registries():
    global _REGISTRIES
    if _REGISTRIES is None:
        _REGISTRIES = frozenset(k for k, v in Module().__dict__.items()
                                if isinstance(v, (dict, set)))
    return _REGISTRIES


def _view_class(kind, cls):
    """The class of ``kind`` views of ``cls`` modules, made once per pair; None when the two
    cannot be combined (then the module is returned as it is)."""
    key = (kind, cls)
    view_cls = _VIEW_CLASSES.get(key)
    if view_cls is None:
        try:
            view_cls = type(kind.__name__, (kind, cls), {
                "__module__": kind.__module__, "__qualname__": kind.__qualname__,
                "__doc__": kind.__doc__, "_original_class": cls})
        except TypeError:  # an incompatible layout or metaclass
            return None
        _VIEW_CLASSES[key] = view_cls
    return view_cls


def _rebuild_view(kind, cls):
    """Unpickling: an empty view of ``kind`` for ``cls``; pickle then restores its state."""
    view_cls = _view_class(kind, cls)
    return (view_cls or cls).__new__(view_cls or cls)


def make_view(module, kind, child_kind=None, _memo=None):
    """A ``kind`` view of ``module`` whose submodules are ``child_kind`` views (NOTE [ Script
    modules as views ]); a module that already is a script module is returned as it is.

    Args:
        module: the ``nn.Module``.
        kind: ``RecursiveScriptModule`` or ``TopLevelTracedModule``.
        child_kind: the submodules' kind (default: ``kind``).
        _memo: views made so far, by id of their module.

    Returns:
        The view.

    Example::

        >>> view = make_view(ember.nn.Linear(2, 2), RecursiveScriptModule)
        >>> type(view).__name__
        'RecursiveScriptModule'
    """
    if isinstance(module, ScriptModule):
        return module
    memo = {} if _memo is None else _memo
    if id(module) in memo:
        return memo[id(module)]
    view_cls = _view_class(kind, type(module))
    if view_cls is None:
        return module
    view = view_cls.__new__(view_cls)
    memo[id(module)] = view
    state = dict(module.__dict__)
    for name in _registries():
        if name in state:
            state[name] = type(state[name])(state[name])
    child_kind = child_kind or kind
    state["_modules"] = {name: None if child is None else
                         make_view(child, child_kind, child_kind, memo)
                         for name, child in module.__dict__.get("_modules", {}).items()}
    view.__dict__.update(state)
    return view


def as_loaded(module):
    """What ``jit.load`` returns for a stored module: a ``RecursiveScriptModule`` view of
    it, whatever kind was saved (PyTorch's archives keep no trace of how the module was
    compiled); a stored script view becomes a view of the module under it.

    Args:
        module: the unpickled module.

    Returns:
        A ``RecursiveScriptModule``.

    Example::

        >>> traced = ember.jit.trace(ember.nn.Linear(2, 2), ember.ones(1, 2))
        >>> type(as_loaded(traced)).__name__
        'RecursiveScriptModule'
    """
    if isinstance(module, RecursiveScriptModule):
        return module
    return make_view(_unview(module), RecursiveScriptModule)


def _unview(module, _memo=None):
    """A plain module with ``module``'s state: the inverse of ``make_view`` (shares the
    tensors; the registries are copied)."""
    original = type(module).__dict__.get("_original_class")
    if original is None:
        return module
    memo = {} if _memo is None else _memo
    if id(module) in memo:
        return memo[id(module)]
    plain = original.__new__(original)
    memo[id(module)] = plain
    state = dict(module.__dict__)
    for name in _registries():
        if name in state:
            state[name] = type(state[name])(state[name])
    state["_modules"] = {name: None if child is None else _unview(child, memo)
                         for name, child in module.__dict__.get("_modules", {}).items()}
    plain.__dict__.update(state)
    return plain
