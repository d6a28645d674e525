"""``ember.jit``: TorchScript's Python surface, with eager meanings.

NOTE [ Eager TorchScript ]
TorchScript compiles a module or function to its own graph language, which ember does not
have. What programs do with ``torch.jit`` splits in two:

- Most use it in passing: ``@torch.jit.ignore``/``unused``/``export`` on methods,
  ``torch.jit.is_scripting()`` branches, ``Final`` annotations, ``model =
  torch.jit.script(model)`` or ``torch.jit.trace(model, x)`` before training or inference.
  TorchScript promises that a scripted or traced program computes what the Python one
  computes, so running the Python one is a faithful eager meaning. ``script`` and ``trace``
  of a module return what PyTorch's return -- a ``RecursiveScriptModule`` or
  ``TopLevelTracedModule`` sharing the module's parameters, with ``save()`` and PyTorch's
  printed form -- built as a view that runs the module's own Python code (NOTE [ Script
  modules as views ] in ember/jit/_script_module.py). ``trace`` first runs its argument
  once on the example inputs, as PyTorch does, so wrong inputs fail at the same place.
  ``script`` of a plain function returns a ``ScriptFunction`` that checks its arguments
  against the schema and runs the Python function (NOTE [ Script functions ] in
  ember/jit/_script_function.py).
- A few need the compiled form itself: ``.graph``, ``.code`` of a module,
  ``CompilationUnit`` source. A traced module's are the graph its example run recorded
  (NOTE [ Trace graphs ] in ember/jit/_trace_graph.py); a scripted module's would need the
  compiler and raise NotImplementedError naming TorchScript, rather than pretending.
  ``torch.jit.save``/``load`` work within ember: the archive holds the module itself
  (NOTE [ Script archives ] in ember/jit/_archive.py); a TorchScript archive written by
  PyTorch cannot be run.

Example::

    >>> net = ember.jit.script(ember.nn.Linear(2, 2))
    >>> ember.jit.is_scripting(), type(net).__name__
    (False, 'RecursiveScriptModule')
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import typing
import warnings

from ._future import Future

__all__ = [
    "Attribute", "CompilationUnit", "Error", "Final", "Future", "RecursiveScriptClass",
    "RecursiveScriptModule", "ScriptFunction", "ScriptModule", "ScriptWarning",
    "TopLevelTracedModule", "TracedModule", "TracerWarning", "TracingCheckError", "annotate",
    "enable_onednn_fusion", "export", "export_opnames", "fork", "freeze", "fuser", "ignore",
    "interface", "is_scripting", "is_tracing", "isinstance", "load", "onednn_fusion_enabled",
    "optimize_for_inference", "optimized_execution", "run_frozen_optimizations", "save",
    "script", "script_if_tracing", "script_method", "set_fusion_strategy", "set_module",
    "strict_fusion", "trace", "trace_module", "unused", "wait",
]

Final = typing.Final

_NO_TORCHSCRIPT = ("ember has no TorchScript compiler (see NOTE [ Eager TorchScript ]); "
                   "save the model with ember.save(model.state_dict(), path) instead")


class Error(RuntimeError):
    """An error raised by TorchScript.

    Example::

        >>> issubclass(ember.jit.Error, RuntimeError)
        True
    """


class TracerWarning(Warning):
    """A warning about tracing (e.g. a Python value that the trace would freeze).

    Example::

        >>> issubclass(ember.jit.TracerWarning, Warning)
        True
    """


class ScriptWarning(Warning):
    """A warning raised by TorchScript code (``warnings.warn`` inside a script).

    Example::

        >>> issubclass(ember.jit.ScriptWarning, Warning)
        True
    """


class TracingCheckError(Exception):
    """A traced function disagreed with the Python one when checked.

    Example::

        >>> issubclass(ember.jit.TracingCheckError, Exception)
        True
    """


# -- modifiers and annotations ----------------------------------------------------------------

class _Modifier(str):
    """How TorchScript treats a function (recorded on it as ``_torchscript_modifier``)."""


EXPORT = _Modifier("export (compile this function even if nothing calls it)")
DEFAULT = _Modifier("default (compile if called from a exported function / forward)")
IGNORE = _Modifier("ignore (leave as a call to Python, cannot be torch.jit.save'd)")
UNUSED = _Modifier("unused (ignored and replaced with raising of an exception)")


def is_scripting() -> bool:
    """Whether the caller runs as compiled TorchScript: always False in ember.

    Returns:
        False

    Example::

        >>> ember.jit.is_scripting()
        False
    """
    return False


def is_tracing() -> bool:
    """Whether the caller is being traced by ``trace``: always False in ember (tracing runs
    the function as plain Python).

    Returns:
        False

    Example::

        >>> ember.jit.is_tracing()
        False
    """
    return False


def _mark(fn, modifier):
    if isinstance(fn, property):
        for f in (fn.fget, fn.fset):
            if f is not None:
                f._torchscript_modifier = modifier
        return fn
    fn._torchscript_modifier = modifier
    return fn


def export(fn):
    """Mark a method to be compiled even if ``forward`` does not call it; returns ``fn``.

    Args:
        fn: a method.

    Returns:
        ``fn``, marked.

    Example::

        >>> class M(ember.nn.Module):
        ...     @ember.jit.export
        ...     def helper(self, x):
        ...         return x + 1
        >>> M().helper(1)
        2
    """
    return _mark(fn, EXPORT)


def unused(fn):
    """Mark a method the compiler should replace with a raise; it runs normally in eager.

    Args:
        fn: a method or property.

    Returns:
        ``fn``, marked.

    Example::

        >>> @ember.jit.unused
        ... def debug_only(x):
        ...     return x
        >>> debug_only(3)
        3
    """
    return _mark(fn, UNUSED)


def ignore(drop=False, **kwargs):
    """Mark a function the compiler should leave as a Python call; it runs normally.

    Usable bare (``@ignore``) or with arguments (``@ignore(drop=True)``, deprecated: use
    ``unused``).

    Args:
        drop: the function itself when used bare; else True to mark it unused.
        **kwargs: ``drop_on_export``, accepted.

    Returns:
        The marked function, or a decorator.

    Example::

        >>> @ember.jit.ignore
        ... def python_only(x):
        ...     return [x]
        >>> python_only(1)
        [1]
    """
    if callable(drop):
        return _mark(drop, IGNORE)
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but "
                           f"got {drop}")
    if drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now. {}", FutureWarning,
                      stacklevel=2)
    return lambda fn: _mark(fn, UNUSED if drop else IGNORE)


def annotate(the_type, the_value):
    """Tell the compiler the type of ``the_value``; returns ``the_value``.

    Args:
        the_type: the type.
        the_value: the value.

    Returns:
        ``the_value``

    Example::

        >>> ember.jit.annotate(list, [])
        []
    """
    return the_value


def interface(obj):
    """Declare a class as a TorchScript interface; the class is returned unchanged.

    Args:
        obj: a class.

    Returns:
        ``obj``

    Raises:
        RuntimeError: ``obj`` is not a class.

    Example::

        >>> @ember.jit.interface
        ... class Doubler:
        ...     def forward(self, x: int) -> int:
        ...         pass
        >>> Doubler.__name__
        'Doubler'
    """
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    obj.__torch_script_interface__ = True
    return obj


class Attribute(typing.NamedTuple):
    """A module attribute's value with its TorchScript type; a ``ScriptModule`` stores just
    the value.

    Args:
        value: the value.
        type: its type.

    Example::

        >>> ember.jit.Attribute(3, int).value
        3
    """

    value: typing.Any
    type: typing.Any


def _check_container(value, target) -> bool:
    origin = typing.get_origin(target)
    args = typing.get_args(target)
    if target is typing.Any:
        return True
    if origin is None:
        if target in (list, dict, tuple, typing.List, typing.Dict, typing.Tuple):  # noqa: UP006
            name = getattr(target, "__name__", str(target)).lower()
            raise RuntimeError(f"Attempted to use {name} without a contained type. Please add "
                               f"a contained type, e.g. {name}[int]")
        if target is float:
            return type(value) is float
        return builtins_isinstance(value, target)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_check_container(value, a) for a in args)
    if origin is list:
        return builtins_isinstance(value, list) and all(_check_container(v, args[0])
                                                        for v in value)
    if origin is dict:
        return builtins_isinstance(value, dict) and all(
            _check_container(k, args[0]) and _check_container(v, args[1])
            for k, v in value.items())
    if origin is tuple:
        return (builtins_isinstance(value, tuple) and len(value) == len(args)
                and all(_check_container(v, a) for v, a in zip(value, args, strict=True)))
    return builtins_isinstance(value, origin)


builtins_isinstance = builtins.isinstance


def isinstance(obj, target_type) -> bool:  # noqa: A001  (PyTorch's name)
    """``isinstance`` that also checks the element types of containers (``list[int]``,
    ``dict[str, Tensor]``, ``Optional[...]``).

    Args:
        obj: the value.
        target_type: a type or a parameterised container type.

    Returns:
        bool

    Raises:
        RuntimeError: a container type without its element type (``list``).

    Example::

        >>> ember.jit.isinstance([1, 2], list[int]), ember.jit.isinstance([1, "a"], list[int])
        (True, False)
    """
    return _check_container(obj, target_type)


# -- script and trace: eager (NOTE [ Eager TorchScript ]) ---------------------------------------

def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a module, function or class with TorchScript -- in ember, eagerly (NOTE
    [ Eager TorchScript ]): the result computes what the compiled form would.

    Args:
        obj: an ``nn.Module``, function or class; or a list or dict.
        optimize: deprecated, accepted.
        example_inputs: accepted for PyTorch's signature.

    Returns:
        For a module, a ``RecursiveScriptModule`` that shares its parameters and buffers
        (NOTE [ Script modules as views ]); a script module itself; a list or dict becomes a
        typed copy, a ``ScriptList`` or ``ScriptDict``, as in PyTorch; a function defined
        with ``def`` becomes a ``ScriptFunction`` (NOTE [ Script functions ]); a class or
        lambda is returned as it is.

    Example::

        >>> @ember.jit.script
        ... def add_one(x):
        ...     return x + 1
        >>> add_one(ember.zeros(2)).tolist()
        [1.0, 1.0]
    """
    # as PyTorch 2.13 warns, from its own module (so hidden unless the user asks for it)
    warnings.warn("`torch.jit.script` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning, stacklevel=1)
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if type(obj) in (list, dict):  # typed containers (NOTE [ JIT types ])
        from ._containers import ScriptDict, ScriptList

        return ScriptList(obj) if type(obj) is list else ScriptDict(obj)
    if builtins_isinstance(obj, _module_type()):
        from ._script_module import make_view

        return make_view(obj, RecursiveScriptModule)
    if inspect.isfunction(obj) and obj.__name__ != "<lambda>":
        return _make_script_function(obj)  # NOTE [ Script functions ]
    return obj


def _module_type():
    from ..nn.modules.module import Module

    return Module


def _as_args(example_inputs):
    return example_inputs if builtins_isinstance(example_inputs, tuple) else (example_inputs,)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-05, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Trace a module or function on example inputs -- in ember, run it once on them (as
    PyTorch does while tracing) and return its eager form (NOTE [ Eager TorchScript ]).

    Args:
        func: an ``nn.Module`` or function.
        example_inputs: a tensor or a tuple of arguments.
        example_kwarg_inputs: keyword arguments, instead of or beside ``example_inputs``.
        optimize, check_trace, check_inputs, check_tolerance, strict: accepted.

    Returns:
        For a module, a ``TopLevelTracedModule`` that shares its parameters and buffers
        (NOTE [ Script modules as views ]); a function defined with ``def`` becomes a
        ``ScriptFunction`` whose arguments are tensors (NOTE [ Script functions ]); a
        lambda is returned as it is.

    Raises:
        RuntimeError: neither ``example_inputs`` nor ``example_kwarg_inputs`` given.

    Example::

        >>> net = ember.nn.Linear(2, 1)
        >>> traced = ember.jit.trace(net, ember.ones(1, 2))
        >>> type(traced).__name__, traced.weight is net.weight
        ('TopLevelTracedModule', True)
    """
    warnings.warn("`torch.jit.trace` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning, stacklevel=1)
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided to trace")
    from ..autograd.grad_mode import no_grad

    args = () if example_inputs is None else _as_args(example_inputs)
    from ._trace_graph import record

    with no_grad(), _PythonValues():
        result, recorded = record(func, args, example_kwarg_inputs or {})
    if inspect.isfunction(func) and func.__name__ != "<lambda>":
        from ._script_function import make_traced_function

        return make_traced_function(func, result)  # NOTE [ Script functions ]
    return _traced(func, recorded)


def _warn_python_value(kind: str, file: str, line: int) -> None:
    """PyTorch's TracerWarning for user code at ``file:line`` turning a traced tensor into a
    Python ``kind`` (boolean, integer, float, number, list): the trace keeps that value as a
    constant."""
    warnings.warn_explicit(
        f"Converting a tensor to a Python {kind} might cause the trace to be incorrect. We "
        "can't record the data flow of Python values, so this value will be treated as a "
        "constant in the future. This means that the trace might not generalize to other "
        "inputs!", TracerWarning, file, line)


def _PythonValues():
    """A watcher, for the example run of ``trace``, of user code turning a tensor into a
    Python value (``if x.sum() > 0``, ``int(n)``, ``x.item()``, ``x.tolist()``): each such
    call warns as PyTorch's tracer does, at the user's line."""
    from .._core.tensor import Tensor
    from ..fx.experimental.symbolic_shapes import _BranchWatch

    # by identity: ember's wrappers of ``item`` and ``tolist`` have equal code objects
    kinds = {id(f.__code__): kind for f, kind in (
        (Tensor.__bool__, "boolean"), (Tensor.__int__, "integer"), (Tensor.__float__, "float"),
        (Tensor.item, "number"), (Tensor.tolist, "list"))}

    class Watch(_BranchWatch):
        def _profile(self, frame, event, arg):
            if event != "call":
                return
            kind = kinds.get(id(frame.f_code))
            if kind is None:
                return
            caller = self.user_caller(frame)
            if caller is not None and not builtins_isinstance(caller.f_locals.get("self"),
                                                              ScriptModule):
                # (code of a module that is scripted or traced already is compiled code
                # for PyTorch's tracer: its Python values are not the trace's to warn of)
                _warn_python_value(kind, caller.f_code.co_filename, caller.f_lineno)

    return Watch({})


def _traced(obj, recorded=None):
    if builtins_isinstance(obj, _module_type()):
        from ._script_module import make_view

        memo: dict = {}
        view = make_view(obj, TopLevelTracedModule, TracedModule, memo)
        for traced_view in view.modules():  # NOTE [ Traced training flags ]
            traced_view.__dict__["_ember_traced_training"] = traced_view.training
        for key, graph in (recorded.graphs.items() if recorded is not None else ()):
            if key in memo:  # NOTE [ Trace graphs ]
                memo[key].__dict__["_ember_trace_graph"] = graph
        return view
    return obj


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-05, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """Trace several methods of a module -- in ember, run each once on its inputs and return
    the module as it is.

    Args:
        mod: the module.
        inputs: method name -> example inputs.

    Returns:
        A ``TopLevelTracedModule`` that shares the module's parameters and buffers.

    Example::

        >>> net = ember.nn.Linear(2, 1)
        >>> type(ember.jit.trace_module(net, {"forward": ember.ones(1, 2)})).__name__
        'TopLevelTracedModule'
    """
    if not builtins_isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    from ..autograd.grad_mode import no_grad

    with no_grad(), _PythonValues():
        for name, example in inputs.items():
            if example_inputs_is_kwarg:
                getattr(mod, name)(**example)
            else:
                getattr(mod, name)(*_as_args(example))
    return _traced(mod)


def script_if_tracing(fn):
    """Compile ``fn`` only when it is called during tracing; returns ``fn``.

    Args:
        fn: a function.

    Returns:
        ``fn``

    Example::

        >>> ember.jit.script_if_tracing(abs)(-1)
        1
    """
    return fn


_script_if_tracing = script_if_tracing  # torch's older private name (torchvision's box ops)


def _overload(fn):
    """Mark ``fn`` as a TorchScript type overload (a signature followed by the real
    definition, which replaces it): returns ``fn``; ember runs the real definition.

    Example::

        >>> ember.jit._overload(abs) is abs
        True
    """
    return fn


_overload_method = _overload  # the same, for methods (torchvision's densenet)


def script_method(fn):
    """Deprecated: mark a ``ScriptModule`` method to compile; returns ``fn``.

    Args:
        fn: a method.

    Returns:
        ``fn``

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     f = ember.jit.script_method(abs)
    """
    warnings.warn("`torch.jit.script_method` is deprecated. Please switch to `torch.compile` "
                  "or `torch.export`.", DeprecationWarning, stacklevel=2)
    return fn


from ._script_module import (  # noqa: E402  (after Attribute, which ScriptModule uses)
    RecursiveScriptModule,
    ScriptModule,
    TopLevelTracedModule,
    TracedModule,
)
from . import frontend  # noqa: E402, F401  (torch.jit.frontend's errors)
from ._script_function import ScriptFunction  # noqa: E402
from ._script_function import make_script_function as _make_script_function  # noqa: E402


class RecursiveScriptClass:
    """A scripted class instance in PyTorch; ember scripts nothing, so none exist.

    Args:
        *args: refused (NotImplementedError).
        **kwargs: refused.

    Example::

        >>> ember.jit.RecursiveScriptClass.__name__
        'RecursiveScriptClass'
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"RecursiveScriptClass: {_NO_TORCHSCRIPT}")


class CompilationUnit:
    """A unit of TorchScript source: needs the TorchScript compiler, which ember lacks.

    Args:
        lang: TorchScript source.

    Raises:
        NotImplementedError: always.

    Example::

        >>> ember.jit.CompilationUnit("def f(x): return x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: CompilationUnit: ember has no TorchScript compiler ...
    """

    def __init__(self, lang=None, _frames_up=0):
        raise NotImplementedError(f"CompilationUnit: {_NO_TORCHSCRIPT}")


# -- archives (NOTE [ Script archives ] in ember/jit/_archive.py) -------------------------------

def save(m, f, _extra_files=None) -> None:
    """Save a module (scripted, traced or plain) so that ``jit.load`` gives it back.

    Ember compiles nothing, so the archive holds the module itself, pickled in ember's
    checkpoint format (NOTE [ Script archives ]): its class must be importable where it is
    loaded, as for ``torch.save(model)``.

    Args:
        m: the module.
        f: a path or a binary file object.
        _extra_files: ``{name: str or bytes}`` stored beside the module.

    Returns:
        None

    Example::

        >>> import io
        >>> buf = io.BytesIO()
        >>> ember.jit.save(ember.jit.script(ember.nn.Linear(2, 1)), buf)
        >>> _ = buf.seek(0)
        >>> type(ember.jit.load(buf)).__name__
        'RecursiveScriptModule'
    """
    from ._archive import save_archive

    save_archive(m, f, _extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False, **kwargs):
    """Load a module saved with ``jit.save`` (NOTE [ Script archives ]).

    Args:
        f: a path or a binary file object.
        map_location: where to put the tensors (as ``ember.load`` takes it).
        _extra_files: a dict naming extra files to read; their contents (bytes) are filled
            in place.

    Returns:
        The module, as a ``RecursiveScriptModule`` (what PyTorch's ``jit.load`` gives,
        whether it was scripted or traced).

    Raises:
        ValueError: the path does not exist or is a directory (as PyTorch checks first).
        RuntimeError: a TorchScript archive written by PyTorch (compiled code ember cannot
            run), or not an archive at all.

    Example::

        >>> ember.jit.load("no/such/file.pt")
        Traceback (most recent call last):
        ...
        ValueError: The provided filename no/such/file.pt does not exist
    """
    from ._archive import load_archive

    if builtins_isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    loaded = load_archive(f, map_location, _extra_files)
    if builtins_isinstance(loaded, _module_type()):
        from ._script_module import as_loaded

        return as_loaded(loaded)
    return loaded


def export_opnames(m):
    """The operator names a scripted module uses: needs TorchScript, which ember lacks.

    Args:
        m: a scripted module.

    Returns:
        Never returns in ember.

    Example::

        >>> ember.jit.export_opnames(ember.nn.Linear(1, 1))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: torch.jit.export_opnames: ember has no TorchScript compiler ...
    """
    raise NotImplementedError(f"torch.jit.export_opnames: {_NO_TORCHSCRIPT}")


# -- inference helpers -------------------------------------------------------------------------

def _script_module_only(mod, name):
    if not builtins_isinstance(mod, ScriptModule):
        raise RuntimeError(f"{name} expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")


def freeze(mod, preserved_attrs=None, optimize_numerics: bool = True):
    """Freeze a scripted or traced module for inference (fold its weights into constants).
    Eagerly the module already computes the frozen result, so this returns it as
    ``jit.load`` would, a ``RecursiveScriptModule`` (NOTE [ Script modules as views ]).

    Args:
        mod: a script module in eval mode.
        preserved_attrs: attributes to keep (all are kept).
        optimize_numerics: accepted.

    Returns:
        A ``RecursiveScriptModule`` sharing ``mod``'s parameters.

    Raises:
        RuntimeError: ``mod`` is not a script module, or is in training mode, as in PyTorch.

    Example::

        >>> net = ember.jit.script(ember.nn.Linear(2, 2).eval())
        >>> type(ember.jit.freeze(net)).__name__
        'RecursiveScriptModule'
    """
    from ._script_module import as_loaded

    _script_module_only(mod, "Freezing")
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return as_loaded(mod)


def optimize_for_inference(mod, other_methods=None):
    """Prepare a scripted or traced module for inference: freeze it (eval mode first).

    Args:
        mod: a script module.
        other_methods: accepted.

    Returns:
        A ``RecursiveScriptModule`` in eval mode.

    Raises:
        RuntimeError: ``mod`` is not a script module, as in PyTorch.

    Example::

        >>> net = ember.jit.script(ember.nn.Linear(1, 1))
        >>> ember.jit.optimize_for_inference(net).training
        False
    """
    from ._script_module import as_loaded

    _script_module_only(mod, "optimize_for_inference")
    if getattr(mod, "training", False):
        mod.eval()
    return as_loaded(mod)


def run_frozen_optimizations(mod, optimize_numerics: bool = True, preserved_methods=None):
    """Run the optimizations of ``freeze`` on a frozen module (none apply eagerly).

    Args:
        mod: the module.
        optimize_numerics, preserved_methods: accepted.

    Returns:
        None

    Example::

        >>> ember.jit.run_frozen_optimizations(ember.nn.Linear(1, 1))
    """


_fusion = {"onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}


def enable_onednn_fusion(enabled: bool) -> None:
    """Turn oneDNN graph fusion on or off (recorded; ember runs no oneDNN).

    Args:
        enabled: the switch.

    Returns:
        None

    Example::

        >>> ember.jit.enable_onednn_fusion(False)
    """
    _fusion["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """Whether oneDNN graph fusion is on (default False).

    Returns:
        bool

    Example::

        >>> ember.jit.onednn_fusion_enabled()
        False
    """
    return _fusion["onednn"]


def set_fusion_strategy(strategy):
    """Set how the TorchScript fuser specializes shapes; returns the previous strategy.

    Args:
        strategy: a list of ``("STATIC" | "DYNAMIC", depth)`` pairs.

    Returns:
        The previous list.

    Example::

        >>> old = ember.jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])
    """
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC") or not builtins_isinstance(depth, int):
            raise RuntimeError(f"Unrecognized fusion strategy entry: ({kind!r}, {depth!r})")
    old, _fusion["strategy"] = _fusion["strategy"], [tuple(s) for s in strategy]
    return old


@contextlib.contextmanager
def optimized_execution(should_optimize: bool):
    """A block with TorchScript's graph optimizations on or off (nothing to switch eagerly).

    Args:
        should_optimize: the switch.

    Returns:
        A context manager.

    Example::

        >>> with ember.jit.optimized_execution(False):
        ...     pass
    """
    yield


@contextlib.contextmanager
def fuser(name: str):
    """A block using TorchScript fuser ``name`` ("fuser0", "fuser1", "fuser2", "fuser3" or
    "none"); nothing to switch eagerly.

    Args:
        name: the fuser.

    Returns:
        A context manager.

    Raises:
        Exception: an unknown name, as in PyTorch.

    Example::

        >>> with ember.jit.fuser("fuser1"):
        ...     pass
    """
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002
    yield


class strict_fusion:
    """A block whose ops must all fuse in TorchScript (a check the compiler makes; nothing
    eagerly).

    Example::

        >>> with ember.jit.strict_fusion():
        ...     pass
    """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_module(obj, mod: str):
    """Set ``obj.__module__`` to ``mod`` (for documentation tools).

    Args:
        obj: a function or class.
        mod: the module name.

    Returns:
        None

    Example::

        >>> def f(): pass
        >>> ember.jit.set_module(f, "demo"); f.__module__
        'demo'
    """
    if not builtins_isinstance(mod, str):
        raise TypeError("The mod argument should be a string")
    obj.__module__ = mod


# -- fork / wait: eager futures ---------------------------------------------------------------

def fork(func, *args, **kwargs) -> Future:
    """Start ``func(*args, **kwargs)`` asynchronously -- in ember, run it now; returns a
    completed ``Future`` (an error ``func`` raises propagates here, as in eager PyTorch).

    Args:
        func: the function.
        *args: its arguments.
        **kwargs: the keyword arguments, likewise.

    Returns:
        Future

    Example::

        >>> ember.jit.wait(ember.jit.fork(lambda a, b: a * b, 3, 4))
        12
    """
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    """The result of a ``fork``.

    Args:
        future: a Future from ``fork``.

    Returns:
        The result.

    Raises:
        TypeError: ``future`` is not a Future.

    Example::

        >>> ember.jit.wait(ember.jit.fork(abs, -5))
        5
    """
    from ..futures import _future_types

    if not builtins_isinstance(future, _future_types()):
        raise TypeError(f"wait(): expected a Future, got {type(future).__name__}")
    return future.wait()
