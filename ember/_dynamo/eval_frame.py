"""``ember.compile`` and the module wrapper it returns, ``OptimizedModule``.

NOTE [ Eager compile ]
``torch.compile`` captures a function's tensor operations as a graph and hands it to a
compiler backend. ``ember.compile`` checks its arguments as PyTorch does (a callable, a known
``mode``, a known backend name, not both ``mode`` and ``options``). What it returns depends
on the backend:

- A backend *name* (``"inductor"``, ``"eager"``, ...): the original runs eagerly -- same
  results, same autograd; ember has no code generator to hand a graph to.
- A *callable* backend ``backend(gm, example_inputs)``: on the first call (and again for
  each new set of input shapes and dtypes, up to ``config.recompile_limit``), the function
  or module is captured with ``ember.fx.symbolic_trace`` and the backend receives the
  ``GraphModule`` and the example tensors, as a TorchDynamo backend does; what it returns
  runs the call. Where fx cannot capture the code (control flow on tensor values, ...), the
  first call is recorded as ``explain`` records it (NOTE [ Explain by recording ] in
  _explain.py): the backend is handed each graph between the graph breaks, with its example
  inputs, as TorchDynamo hands them, and that call and later ones run eagerly -- unless
  ``fullgraph=True``, which raises ``ember._dynamo.exc.Unsupported`` as PyTorch does.

What a program can observe of the wrapper is kept: a compiled ``nn.Module`` is an
``OptimizedModule`` whose ``_orig_mod`` is the original, whose attributes read and write
through to it, and whose ``state_dict`` keys carry the ``_orig_mod.`` prefix; a compiled
function keeps its name and docstring and has ``__wrapped__``.
"""

from __future__ import annotations

import functools
import threading

from ..nn.modules.module import Module
from .exc import InvalidBackend

__all__ = ["OptimizedModule", "compile", "list_backends"]

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")

# Backend names PyTorch registers; all run eagerly in ember (NOTE [ Eager compile ]).
_BACKENDS = {
    "inductor": ("default",), "cudagraphs": ("default",), "openxla": ("default",),
    "tvm": ("default",), "eager": ("debug",), "aot_eager": ("debug",),
    "aot_eager_decomp_partition": ("debug",), "aot_eager_default_partitioner": ("debug",),
    "aot_ts": ("debug",), "eager_debug": ("debug",), "eager_noexcept": ("debug",),
    "pre_dispatch_eager": ("debug",), "openxla_eval": ("debug",), "onnxrt": ("default",),
}



def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The names ``ember.compile(backend=...)`` accepts, as PyTorch lists them.

    Args:
        exclude_tags: leave out backends carrying these tags (debug backends by default).

    Returns:
        Sorted list of names.

    Example::

        >>> "inductor" in ember._dynamo.list_backends()
        True
    """
    exclude = set(exclude_tags or ())
    return sorted(n for n, tags in _BACKENDS.items() if not exclude.intersection(tags))


def _check_backend(backend):
    if backend is None or (isinstance(backend, str) and backend in _BACKENDS):
        return
    if isinstance(backend, str) or not callable(backend):
        raise InvalidBackend(backend)


class _Capture:
    """Runs ``fn`` through a callable backend (NOTE [ Eager compile ]): one compiled
    callable per input signature (shapes, dtypes, devices), eager where fx cannot trace."""

    def __init__(self, fn, backend, fullgraph):
        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.compiled = {}
        self.eager = False

    def __call__(self, *args, **kwargs):
        from ..fx.proxy import TraceError

        if self.eager or kwargs:
            return self.fn(*args, **kwargs)
        key = tuple((tuple(a.shape), a.dtype, a.device.type) if hasattr(a, "shape")
                    else (type(a), a) for a in args)
        run = self.compiled.get(key)
        if run is None:
            from . import config
            from .. import fx

            if len(self.compiled) >= config.recompile_limit:
                return self.fn(*args)
            try:
                gm = fx.symbolic_trace(self.fn)
            except (TraceError, TypeError, NotImplementedError) as err:
                if self.fullgraph:
                    from .exc import Unsupported

                    raise Unsupported(f"ember.compile(fullgraph=True) could not capture "
                                      f"{getattr(self.fn, '__name__', self.fn)!r} in one "
                                      f"graph: {err}") from err
                # graph breaks: the backend compiles each graph between them (as recorded
                # by running the call once), and the function runs eagerly from then on
                from ._explain import record_graphs

                self.eager = True
                result, graphs = record_graphs(self.fn, args, {})
                for piece, example, _, _ in graphs:
                    self._compile(piece, example)
                return result
            run = self._compile(gm, [a for a in args if hasattr(a, "shape")])
            self.compiled[key] = run
        return run(*args)

    def _compile(self, gm, example):
        try:
            return self.backend(gm, example)
        except Exception as err:
            from .exc import BackendCompilerFailed

            name = getattr(self.backend, "__name__", repr(self.backend))
            raise BackendCompilerFailed(f"backend={name!r} raised:\n"
                                        f"{type(err).__name__}: {err}") from err


# how many compiled callables the current thread is running inside: what ember's own ops
# consult where PyTorch behaves differently when compiled, as flex_attention's warning that
# it runs unfused outside ``torch.compile`` (``is_compiling`` stays False: nothing traces)
_inside = threading.local()


def running_compiled() -> bool:
    """Whether the current thread is inside a call of a compiled callable or module."""
    return getattr(_inside, "depth", 0) > 0


def _run_compiled(run, args, kwargs):
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        return run(*args, **kwargs)
    finally:
        _inside.depth -= 1


def _compiled_callable(fn, backend=None, fullgraph=False):
    """What ``compile`` returns for a plain callable (NOTE [ Eager compile ])."""
    run = _Capture(fn, backend, fullgraph) if callable(backend) else fn

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        return _run_compiled(run, args, kwargs)

    compiled._torchdynamo_orig_callable = fn
    return compiled


class OptimizedModule(Module):
    """A compiled ``nn.Module``: runs ``_orig_mod`` (eagerly, see NOTE [ Eager compile ]).

    Attribute reads and writes other than its own go to ``_orig_mod``; its
    ``state_dict`` keys start with ``_orig_mod.``, as in PyTorch.

    Args:
        mod: the module compiled.
        dynamo_ctx: the compile settings (kept for graph capture to come).

    Example::

        >>> m = ember.compile(ember.nn.Linear(2, 3))
        >>> type(m).__name__, list(m.state_dict())[0]
        ('OptimizedModule', '_orig_mod.weight')
    """

    _OWN = frozenset({"_orig_mod", "dynamo_ctx", "_compile_kwargs"})

    def __init__(self, mod, dynamo_ctx=None):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["dynamo_ctx"] = dynamo_ctx
        backend = (dynamo_ctx or {}).get("backend")
        if callable(backend):
            self.__dict__["_capture"] = _Capture(mod, backend,
                                                 (dynamo_ctx or {}).get("fullgraph", False))

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        self._orig_mod.training = value

    def forward(self, *args, **kwargs):
        capture = self.__dict__.get("_capture")
        return _run_compiled(capture if capture is not None else self._orig_mod, args, kwargs)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_modules", {}) or name in self._OWN:
            return super().__getattr__(name)
        orig = d.get("_modules", {}).get("_orig_mod")
        if orig is None:
            raise AttributeError(
                f"'OptimizedModule' object has no attribute '{name}'")
        return getattr(orig, name)

    def __setattr__(self, name, value):
        if name in self._OWN or name == "training" or "_modules" not in self.__dict__ \
                or "_orig_mod" not in self.__dict__["_modules"]:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in self._OWN:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self):
        return len(self._orig_mod)


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options=None, disable: bool = False, **kwargs):
    """Compile a function or ``nn.Module``; in ember it runs eagerly (NOTE [ Eager compile ]).

    Usable as ``compile(fn)``, ``@compile`` and ``@compile(mode=...)``.

    Args:
        model: the function or module; None to get a decorator.
        fullgraph: require one graph without breaks (with a callable backend: code fx cannot
            capture raises ``ember._dynamo.exc.Unsupported``).
        dynamic: treat shapes as dynamic (True), static (False) or decide (None).
        backend: a backend name from ``ember._dynamo.list_backends`` (and the debug ones,
            e.g. "eager", "aot_eager"), or a callable ``backend(gm, example_inputs)`` that
            receives the captured ``ember.fx.GraphModule``.
        mode: "default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs" or
            "max-autotune".
        options: backend options (not together with ``mode``).
        disable: return ``model`` unchanged.
        **kwargs: PyTorch's further keywords (``name``, ``recompile_limit``, ...), accepted.

    Returns:
        An ``OptimizedModule`` for a module, a wrapping function for a function, or a
        decorator when ``model`` is None.

    Raises:
        AssertionError: ``model`` is not callable.
        RuntimeError: unknown ``mode``, or both ``mode`` and ``options``.
        ember._dynamo.exc.InvalidBackend: unknown backend.

    Example::

        >>> f = ember.compile(lambda x: x * 2)
        >>> f(ember.ones(2)).tolist()
        [2.0, 2.0]
    """
    if model is None:
        def decorator(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, disable=disable, **kwargs)

        return decorator
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same "
            "time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    _check_backend(backend)
    if disable:
        return model
    if isinstance(model, Module):
        ctx = {"fullgraph": fullgraph, "dynamic": dynamic, "backend": backend, "mode": mode,
               "options": options}
        return OptimizedModule(model, ctx)
    return _compiled_callable(model, backend, fullgraph)
